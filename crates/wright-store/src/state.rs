//! The agent's key-value state: JSON values under string keys, with limits on the key, the
//! value and the agent's total.
//!
//! Values are stored as their compact JSON text; the limits count bytes of that text, which is
//! what the agent pays in storage and what it would read back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wright_core::AgentId;

use crate::{Store, StoreError};

/// Limits of the KV state; each is a config knob (`[state]` in config.toml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateLimits {
    /// Longest key, in bytes of UTF-8.
    pub max_key_bytes: usize,
    /// Largest value, in bytes of compact JSON.
    pub max_value_bytes: usize,
    /// All keys and values of one agent together.
    pub max_total_bytes: u64,
}

impl Default for StateLimits {
    fn default() -> Self {
        Self { max_key_bytes: 256, max_value_bytes: 1024 * 1024, max_total_bytes: 100 * 1024 * 1024 }
    }
}

impl Store {
    pub async fn get_state(&self, agent: &AgentId, key: &str) -> Result<Option<Value>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT value FROM agent_state WHERE agent_id = ? AND key = ?")
            .bind(agent.as_str())
            .bind(key)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|(text,)| {
            serde_json::from_str(&text).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
        })
        .transpose()
    }

    /// Stores `value` under `key`, replacing what was there, within the limits.
    pub async fn set_state(&self, agent: &AgentId, key: &str, value: &Value) -> Result<(), StoreError> {
        let limits = &self.state_limits;
        if key.is_empty() {
            return Err(StoreError::LimitExceeded("state key must not be empty".into()));
        }
        if key.len() > limits.max_key_bytes {
            return Err(StoreError::LimitExceeded(format!(
                "state key is {} bytes; the limit is {} bytes",
                key.len(),
                limits.max_key_bytes
            )));
        }
        let text = value.to_string();
        if text.len() > limits.max_value_bytes {
            return Err(StoreError::LimitExceeded(format!(
                "state value for {key:?} is {} bytes as JSON; the limit is {} bytes per value",
                text.len(),
                limits.max_value_bytes
            )));
        }
        let size = (key.len() + text.len()) as i64;
        let mut transaction = self.begin_write().await?;
        let agent_exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&mut *transaction)
            .await?;
        if agent_exists.is_none() {
            return Err(StoreError::AgentNotFound(agent.to_string()));
        }
        let (others,): (i64,) =
            sqlx::query_as("SELECT COALESCE(SUM(size), 0) FROM agent_state WHERE agent_id = ? AND key <> ?")
                .bind(agent.as_str())
                .bind(key)
                .fetch_one(&mut *transaction)
                .await?;
        if (others + size) as u64 > limits.max_total_bytes {
            return Err(StoreError::LimitExceeded(format!(
                "state of agent {agent} would grow to {} bytes; the limit is {} bytes per agent \
                 (delete keys you no longer need)",
                others + size,
                limits.max_total_bytes
            )));
        }
        sqlx::query(
            "INSERT INTO agent_state (agent_id, key, value, size) VALUES (?, ?, ?, ?) \
             ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, size = excluded.size, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(agent.as_str())
        .bind(key)
        .bind(&text)
        .bind(size)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Removes `key`; `false` when it did not exist.
    pub async fn delete_state(&self, agent: &AgentId, key: &str) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let result = sqlx::query("DELETE FROM agent_state WHERE agent_id = ? AND key = ?")
            .bind(agent.as_str())
            .bind(key)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(result.rows_affected() > 0)
    }

    /// Keys in byte order, optionally only those starting with `prefix`.
    pub async fn list_state_keys(&self, agent: &AgentId, prefix: Option<&str>) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.unwrap_or("");
        // A prefix comparison rather than LIKE, so `%` and `_` in a prefix mean themselves.
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT key FROM agent_state WHERE agent_id = ? AND substr(key, 1, length(?)) = ? ORDER BY key",
        )
        .bind(agent.as_str())
        .bind(prefix)
        .bind(prefix)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(|(key,)| key).collect())
    }
}
