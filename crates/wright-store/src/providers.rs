//! Provider connections added in the canvas and the model each agent talks to.
//!
//! Kinds and tool-call modes are stored as the text the server's types serialize to
//! (`wright_llm::ConnectionKind`, `ToolCallMode`); the server parses them on the way in and
//! out, so this crate does not depend on the model crate. Keys are never here (see the
//! migration): the server keeps them in an owner-only file of the data directory.

use serde::{Deserialize, Serialize};
use wright_core::ToolCallMode;

use crate::{Store, StoreError};

/// A connection as stored, without its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredConnection {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub base_url: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// What a person writes when adding or editing a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionFields<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub base_url: Option<&'a str>,
}

/// The agent id under which the default choice is stored.
const DEFAULT_AGENT: &str = "";

/// Whose model a choice is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChoiceTarget {
    /// Every agent without a choice of its own.
    Default,
    Agent(String),
}

impl ChoiceTarget {
    fn key(&self) -> &str {
        match self {
            ChoiceTarget::Default => DEFAULT_AGENT,
            ChoiceTarget::Agent(agent) => agent,
        }
    }
}

/// A model picked for an agent or as the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub target: ChoiceTarget,
    pub connection_id: String,
    pub model: String,
    pub tool_calls: ToolCallMode,
    /// Tokens, where the provider does not say.
    pub context_window: Option<u32>,
}

/// `agent_id, connection_id, model, tool_calls, context_window`.
type ChoiceRow = (String, String, String, String, Option<i64>);

fn choice((agent_id, connection_id, model, tool_calls, context_window): ChoiceRow) -> Result<ModelChoice, StoreError> {
    let tool_calls = ToolCallMode::parse(&tool_calls).map_err(|error| StoreError::InvalidEdit(error.to_string()))?;
    Ok(ModelChoice {
        target: if agent_id == DEFAULT_AGENT { ChoiceTarget::Default } else { ChoiceTarget::Agent(agent_id) },
        connection_id,
        model,
        tool_calls,
        context_window: context_window.and_then(|window| u32::try_from(window).ok()),
    })
}

/// `id, name, kind, base_url, created_at, updated_at`.
type ConnectionRow = (String, String, String, Option<String>, String, String);

fn connection((id, name, kind, base_url, created_at, updated_at): ConnectionRow) -> StoredConnection {
    StoredConnection { id, name, kind, base_url, created_at, updated_at }
}

fn name_taken(error: sqlx::Error, name: &str) -> StoreError {
    match &error {
        sqlx::Error::Database(database) if database.is_unique_violation() => {
            StoreError::ItemExists { kind: "connection", name: name.to_owned() }
        }
        _ => StoreError::Database(error),
    }
}

impl Store {
    /// Every stored connection, by name.
    pub async fn provider_connections(&self) -> Result<Vec<StoredConnection>, StoreError> {
        let rows: Vec<ConnectionRow> = sqlx::query_as(
            "SELECT id, name, kind, base_url, created_at, updated_at FROM provider_connections ORDER BY name",
        )
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(connection).collect())
    }

    pub async fn provider_connection(&self, id: &str) -> Result<StoredConnection, StoreError> {
        let row: Option<ConnectionRow> = sqlx::query_as(
            "SELECT id, name, kind, base_url, created_at, updated_at FROM provider_connections WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(connection).ok_or_else(|| StoreError::ItemNotFound { kind: "connection", name: id.to_owned() })
    }

    /// Adds a connection; its name must be new.
    pub async fn create_provider_connection(
        &self,
        fields: &ConnectionFields<'_>,
    ) -> Result<StoredConnection, StoreError> {
        let row: ConnectionRow = sqlx::query_as(
            "INSERT INTO provider_connections (name, kind, base_url) VALUES (?, ?, ?) \
             RETURNING id, name, kind, base_url, created_at, updated_at",
        )
        .bind(fields.name)
        .bind(fields.kind)
        .bind(fields.base_url)
        .fetch_one(&self.writer)
        .await
        .map_err(|error| name_taken(error, fields.name))?;
        Ok(connection(row))
    }

    pub async fn update_provider_connection(
        &self,
        id: &str,
        fields: &ConnectionFields<'_>,
    ) -> Result<StoredConnection, StoreError> {
        let row: Option<ConnectionRow> = sqlx::query_as(
            "UPDATE provider_connections SET name = ?, kind = ?, base_url = ?, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ? \
             RETURNING id, name, kind, base_url, created_at, updated_at",
        )
        .bind(fields.name)
        .bind(fields.kind)
        .bind(fields.base_url)
        .bind(id)
        .fetch_optional(&self.writer)
        .await
        .map_err(|error| name_taken(error, fields.name))?;
        row.map(connection).ok_or_else(|| StoreError::ItemNotFound { kind: "connection", name: id.to_owned() })
    }

    /// Deletes a connection and every model choice made on it, in one transaction, so no
    /// agent is left pointing at a connection that is gone.
    pub async fn delete_provider_connection(&self, id: &str) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query("DELETE FROM model_choices WHERE connection_id = ?").bind(id).execute(&mut *transaction).await?;
        let done =
            sqlx::query("DELETE FROM provider_connections WHERE id = ?").bind(id).execute(&mut *transaction).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::ItemNotFound { kind: "connection", name: id.to_owned() });
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Every choice: the default (if any) first, then agents by id.
    pub async fn model_choices(&self) -> Result<Vec<ModelChoice>, StoreError> {
        let rows: Vec<ChoiceRow> = sqlx::query_as(
            "SELECT agent_id, connection_id, model, tool_calls, context_window FROM model_choices ORDER BY agent_id",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(choice).collect()
    }

    /// The agent's own choice, else the default choice, else None. Read on every run, so a
    /// change applies to the next run without a restart.
    pub async fn model_choice_for(&self, agent: &str) -> Result<Option<ModelChoice>, StoreError> {
        let row: Option<ChoiceRow> = sqlx::query_as(
            "SELECT agent_id, connection_id, model, tool_calls, context_window FROM model_choices \
             WHERE agent_id IN (?, '') ORDER BY agent_id = '' LIMIT 1",
        )
        .bind(agent)
        .fetch_optional(&self.reader)
        .await?;
        row.map(choice).transpose()
    }

    /// Sets (or replaces) the choice of its target.
    pub async fn set_model_choice(&self, choice: &ModelChoice) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO model_choices (agent_id, connection_id, model, tool_calls, context_window) \
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET connection_id = excluded.connection_id, \
             model = excluded.model, tool_calls = excluded.tool_calls, context_window = excluded.context_window, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(choice.target.key())
        .bind(&choice.connection_id)
        .bind(&choice.model)
        .bind(choice.tool_calls.as_str())
        .bind(choice.context_window.map(i64::from))
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Removes the target's choice; true if there was one.
    pub async fn clear_model_choice(&self, target: &ChoiceTarget) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM model_choices WHERE agent_id = ?")
            .bind(target.key())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The profile settings the person set for a model (`provider/model`), as JSON; the
    /// server reads them as its profile override.
    pub async fn model_profile_override(&self, model_key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT settings FROM model_profile_overrides WHERE model_key = ?")
            .bind(model_key)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|(settings,)| {
            serde_json::from_str(&settings).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
        })
        .transpose()
    }

    /// Sets a model's profile settings, or removes them (None). True when something changed.
    pub async fn set_model_profile_override(
        &self,
        model_key: &str,
        settings: Option<&serde_json::Value>,
    ) -> Result<bool, StoreError> {
        let done = match settings {
            Some(settings) => {
                sqlx::query(
                    "INSERT INTO model_profile_overrides (model_key, settings, updated_at) VALUES (?, ?, ?) \
                     ON CONFLICT(model_key) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
                )
                .bind(model_key)
                .bind(settings.to_string())
                .bind(self.clock.now_ms())
                .execute(&self.writer)
                .await?
            }
            None => {
                sqlx::query("DELETE FROM model_profile_overrides WHERE model_key = ?")
                    .bind(model_key)
                    .execute(&self.writer)
                    .await?
            }
        };
        Ok(done.rows_affected() > 0)
    }
}
