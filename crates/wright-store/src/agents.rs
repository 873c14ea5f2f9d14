//! Agents: list, create, and the `default` agent seeded on first start.
//!
//! Every agent is created with both documents at version 1: the default system prompt below
//! and empty learned notes, written as ordinary version rows so the history starts complete.

use serde::Serialize;
use wright_core::{AgentId, Author, DocumentKind, ToolSettings};

use crate::{Store, StoreError};

/// One agent as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

/// The system prompt every new agent starts with. It tells the model who it is, that it can
/// change itself and how, and the manners we expect of it; the agent may rewrite all of it.
pub(crate) const DEFAULT_SYSTEM_PROMPT: &str = "\
You are a personal agent running on Wright, on your user's own machine. You work for one person \
and you get better at it over time.

How you improve yourself:
- Your instructions are this system prompt. Read it with read_system_prompt and change it with \
edit_system_prompt when you learn a better way to work (prefer find_replace or append over \
replacing everything). Every edit is versioned and an admin can roll it back, so say why in \
`reason`.
- What you learn about the user and their world (preferences, names, time zone, recurring \
tasks) goes into your learned notes: read_learned_notes and edit_learned_notes. Keep them short, \
current and free of secrets.
- Remember small things with the key-value state (get_state, set_state, list_state_keys).

How you work:
- Act rather than ask when the next step is safe, reversible and clearly what the user wants.
- Ask for confirmation before anything irreversible or with outside effects: deleting data, \
sending messages or requests on the user's behalf, spending money, overwriting their work.
- When something fails, read the error, fix the cause and try again; tell the user plainly if \
you cannot.
- Answer concisely. Lead with the answer, then only the detail that helps.";

impl Store {
    pub async fn list_agents(&self) -> Result<Vec<Agent>, StoreError> {
        let rows: Vec<(String, String, String)> =
            sqlx::query_as("SELECT id, name, created_at FROM agents ORDER BY created_at, id")
                .fetch_all(&self.reader)
                .await?;
        Ok(rows.into_iter().map(|(id, name, created_at)| Agent { id, name, created_at }).collect())
    }

    pub async fn get_agent(&self, agent: &AgentId) -> Result<Agent, StoreError> {
        let row: Option<(String, String, String)> =
            sqlx::query_as("SELECT id, name, created_at FROM agents WHERE id = ?")
                .bind(agent.as_str())
                .fetch_optional(&self.reader)
                .await?;
        row.map(|(id, name, created_at)| Agent { id, name, created_at })
            .ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))
    }

    /// Creates an agent with the default system prompt and empty notes. Refuses an id in use
    /// and a name over [`crate::TextLimits::max_name_bytes`].
    pub async fn create_agent(&self, agent: &AgentId, name: Option<&str>) -> Result<Agent, StoreError> {
        if let Some(name) = name {
            crate::limits::check_name("the agent's name", name, &self.text_limits)?;
        }
        let mut transaction = self.begin_write().await?;
        let exists: Option<(String,)> = sqlx::query_as("SELECT id FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&mut *transaction)
            .await?;
        if exists.is_some() {
            return Err(StoreError::AgentExists(agent.to_string()));
        }
        insert_agent(&mut transaction, agent, name.unwrap_or(agent.as_str())).await?;
        transaction.commit().await?;
        self.get_agent(agent).await
    }

    pub(crate) async fn ensure_default_agent(&self) -> Result<(), StoreError> {
        let default_agent = AgentId::default_agent();
        let mut transaction = self.begin_write().await?;
        let exists: Option<(String,)> = sqlx::query_as("SELECT id FROM agents WHERE id = ?")
            .bind(default_agent.as_str())
            .fetch_optional(&mut *transaction)
            .await?;
        if exists.is_none() {
            insert_agent(&mut transaction, &default_agent, "Default agent").await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Fails with [`StoreError::AgentNotFound`] unless the agent exists.
    pub async fn require_agent(&self, agent: &AgentId) -> Result<(), StoreError> {
        let exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&self.reader)
            .await?;
        exists.map(|_| ()).ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))
    }
}

impl Store {
    /// The agent's tool settings as last set through the API; `None` when never set.
    pub async fn tool_settings(&self, agent: &AgentId) -> Result<Option<ToolSettings>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT settings_json FROM agent_tool_settings WHERE agent_id = ?")
            .bind(agent.as_str())
            .fetch_optional(&self.reader)
            .await?;
        row.map(|(json,)| {
            serde_json::from_str(&json).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
        })
        .transpose()
    }

    /// Replaces the agent's tool settings.
    pub async fn set_tool_settings(&self, agent: &AgentId, settings: &ToolSettings) -> Result<(), StoreError> {
        self.require_agent(agent).await?;
        let json = serde_json::to_string(settings).expect("tool settings always serialize");
        sqlx::query(
            "INSERT INTO agent_tool_settings (agent_id, settings_json) VALUES (?1, ?2) \
             ON CONFLICT(agent_id) DO UPDATE SET settings_json = ?2, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(agent.as_str())
        .bind(json)
        .execute(&self.writer)
        .await?;
        Ok(())
    }
}

async fn insert_agent(transaction: &mut sqlx::SqliteConnection, agent: &AgentId, name: &str) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO agents (id, name) VALUES (?, ?)")
        .bind(agent.as_str())
        .bind(name)
        .execute(&mut *transaction)
        .await?;
    let documents = [
        (DocumentKind::SystemPrompt, DEFAULT_SYSTEM_PROMPT),
        (DocumentKind::LearnedNotes, ""),
        (DocumentKind::DbNotes, ""),
    ];
    for (kind, content) in documents {
        let (table, history) = crate::documents::tables(kind);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {table} (agent_id, kind, content, version) VALUES (?, ?, ?, 1)"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .bind(content)
        .execute(&mut *transaction)
        .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {history} (agent_id, kind, version, content, author, reason) \
             VALUES (?, ?, 1, ?, ?, 'initial version')"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .bind(content)
        .bind(Author::Admin.as_str())
        .execute(&mut *transaction)
        .await?;
    }
    Ok(())
}
