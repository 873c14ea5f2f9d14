//! Conversations, their canonical events and the tool calls that wait for the person.
//!
//! Events are append-only and numbered from 1 per conversation; the number is taken inside
//! the write transaction, so concurrent appends never collide. A pending call is answered at
//! most once: the `UPDATE … WHERE status = 'pending'` that answers it is the only check, so
//! two answers racing from two tabs cannot both win.

use serde::Serialize;
use serde_json::{Value, json};
use wright_core::{AgentId, Event, EventKind};

use crate::{Store, StoreError};

/// A conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conversation {
    pub id: String,
    pub agent_id: String,
    pub title: String,
    /// idle, running, waiting or error.
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A stored event with its time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    #[serde(flatten)]
    pub event: Event,
    pub created_at: String,
}

/// A tool call waiting for the person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    /// What the canvas renders (render_and_wait's compiled component), or null.
    pub render: Value,
    pub created_at: String,
}

/// How a pending call was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingResolution {
    Answered,
    Dismissed,
}

type ConversationRow = (String, String, String, String, String, String);

fn conversation_from_row((id, agent_id, title, status, created_at, updated_at): ConversationRow) -> Conversation {
    Conversation { id, agent_id, title, status, created_at, updated_at }
}

fn decode(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(Box::new(error)))
}

const CONVERSATION_COLUMNS: &str = "id, agent_id, title, status, created_at, updated_at";

impl Store {
    pub async fn create_conversation(
        &self,
        agent: &AgentId,
        id: &str,
        title: &str,
    ) -> Result<Conversation, StoreError> {
        self.require_agent(agent).await?;
        let mut transaction = self.begin_write().await?;
        sqlx::query("INSERT INTO conversations (id, agent_id, title) VALUES (?, ?, ?)")
            .bind(id)
            .bind(agent.as_str())
            .bind(title)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        self.conversation(id).await
    }

    pub async fn conversation(&self, id: &str) -> Result<Conversation, StoreError> {
        let row: Option<ConversationRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(conversation_from_row).ok_or_else(|| StoreError::ConversationNotFound(id.to_owned()))
    }

    /// The agent's conversations, most recently active first.
    pub async fn list_conversations(&self, agent: &AgentId) -> Result<Vec<Conversation>, StoreError> {
        self.require_agent(agent).await?;
        let rows: Vec<ConversationRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE agent_id = ? ORDER BY updated_at DESC, id DESC"
        )))
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(conversation_from_row).collect())
    }

    /// Every conversation in `status` (used at start to find runs a crash left `running`).
    pub async fn conversations_with_status(&self, status: &str) -> Result<Vec<Conversation>, StoreError> {
        let rows: Vec<ConversationRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE status = ? ORDER BY id"
        )))
        .bind(status)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(conversation_from_row).collect())
    }

    pub async fn set_conversation_status(&self, id: &str, status: &str) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        let updated = sqlx::query(
            "UPDATE conversations SET status = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
        )
        .bind(status)
        .bind(id)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::ConversationNotFound(id.to_owned()));
        }
        Ok(())
    }

    /// Appends events in order and returns them with their numbers and times.
    ///
    /// One statement numbers and inserts them all (the MAX is read under the statement's own
    /// write lock), so several events — a reply and its tool calls — land together or not at
    /// all without BEGIN and COMMIT, and any number of them is one round trip to SQLite: the
    /// loop stores a few per tool turn and this is its main cost. The conversation's
    /// `updated_at` follows by trigger.
    pub async fn append_events(
        &self,
        conversation_id: &str,
        events: &[(EventKind, String, Value)],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const INSERT: &str = "WITH base(last) AS (SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = ?1) \
             INSERT INTO events (conversation_id, seq, kind, content, data_json) \
             SELECT ?1, base.last + 1 + batch.key, batch.value ->> '$[0]', batch.value ->> '$[1]', batch.value ->> '$[2]' \
             FROM base, json_each(?2) AS batch ORDER BY batch.key \
             RETURNING seq, created_at";
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let batch = Value::Array(
            events
                .iter()
                .map(|(kind, content, data_json)| json!([kind.as_str(), content, data_json.to_string()]))
                .collect(),
        )
        .to_string();
        let mut connection = self.writer.acquire().await?;
        let mut rows: Vec<(i64, String)> =
            sqlx::query_as(INSERT).bind(conversation_id).bind(batch).fetch_all(&mut *connection).await.map_err(
                |error| match &error {
                    sqlx::Error::Database(database) if database.is_foreign_key_violation() => {
                        StoreError::ConversationNotFound(conversation_id.to_owned())
                    }
                    _ => StoreError::Database(error),
                },
            )?;
        // RETURNING comes in no promised order; seq is the order.
        rows.sort_unstable_by_key(|(seq, _)| *seq);
        if rows.len() != events.len() {
            let message = format!("stored {} of {} events", rows.len(), events.len());
            return Err(StoreError::Database(sqlx::Error::Protocol(message)));
        }
        Ok(rows
            .into_iter()
            .zip(events)
            .map(|((seq, created_at), (kind, content, data_json))| StoredEvent {
                event: Event { seq, kind: *kind, content: content.clone(), data_json: data_json.clone() },
                created_at,
            })
            .collect())
    }

    /// Events with `seq > after`, in order.
    pub async fn events_after(&self, conversation_id: &str, after: i64) -> Result<Vec<StoredEvent>, StoreError> {
        let rows: Vec<(i64, String, String, String, String)> = sqlx::query_as(
            "SELECT seq, kind, content, data_json, created_at FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq",
        )
        .bind(conversation_id)
        .bind(after)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(seq, kind, content, data_json, created_at)| {
                Ok(StoredEvent {
                    event: Event {
                        seq,
                        kind: EventKind::parse(&kind).map_err(decode)?,
                        content,
                        data_json: serde_json::from_str(&data_json).map_err(decode)?,
                    },
                    created_at,
                })
            })
            .collect()
    }

    /// Records a call that waits for the person.
    pub async fn create_pending_call(
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        render: &Value,
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO pending_calls (conversation_id, tool_call_id, tool_name, args, render) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(conversation_id)
        .bind(tool_call_id)
        .bind(tool_name)
        .bind(args.to_string())
        .bind(render.to_string())
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Calls of the conversation still waiting, oldest first.
    pub async fn pending_calls(&self, conversation_id: &str) -> Result<Vec<PendingCall>, StoreError> {
        let rows: Vec<(String, String, String, String, String)> = sqlx::query_as(
            "SELECT tool_call_id, tool_name, args, render, created_at FROM pending_calls \
             WHERE conversation_id = ? AND status = 'pending' ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(tool_call_id, tool_name, args, render, created_at)| {
                Ok(PendingCall {
                    tool_call_id,
                    tool_name,
                    args: serde_json::from_str(&args).map_err(decode)?,
                    render: serde_json::from_str(&render).map_err(decode)?,
                    created_at,
                })
            })
            .collect()
    }

    /// Closes a pending call with `answer`. Fails with [`StoreError::AlreadyAnswered`] if it
    /// was closed before, and [`StoreError::PendingNotFound`] if there is no such call.
    pub async fn resolve_pending_call(
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        resolution: PendingResolution,
        answer: &Value,
    ) -> Result<PendingCall, StoreError> {
        let status = match resolution {
            PendingResolution::Answered => "answered",
            PendingResolution::Dismissed => "dismissed",
        };
        let mut transaction = self.begin_write().await?;
        let row: Option<(String, String, String, String)> = sqlx::query_as(
            "UPDATE pending_calls SET status = ?, answer = ?, answered_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE conversation_id = ? AND tool_call_id = ? AND status = 'pending' RETURNING tool_name, args, render, created_at",
        )
        .bind(status)
        .bind(answer.to_string())
        .bind(conversation_id)
        .bind(tool_call_id)
        .fetch_optional(&mut *transaction)
        .await?;
        let Some((tool_name, args, render, created_at)) = row else {
            let exists: Option<(i64,)> =
                sqlx::query_as("SELECT 1 FROM pending_calls WHERE conversation_id = ? AND tool_call_id = ?")
                    .bind(conversation_id)
                    .bind(tool_call_id)
                    .fetch_optional(&mut *transaction)
                    .await?;
            return Err(if exists.is_some() {
                StoreError::AlreadyAnswered(tool_call_id.to_owned())
            } else {
                StoreError::PendingNotFound(tool_call_id.to_owned())
            });
        };
        transaction.commit().await?;
        Ok(PendingCall {
            tool_call_id: tool_call_id.to_owned(),
            tool_name,
            args: serde_json::from_str(&args).map_err(decode)?,
            render: serde_json::from_str(&render).map_err(decode)?,
            created_at,
        })
    }
}
