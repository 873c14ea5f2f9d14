//! The record of every tool call: who called which tool with what, what came back, how long
//! it took. Written by the tool registry after each call; read by the admin and marketplace.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wright_core::{AgentId, DecidedBy};

use crate::{Store, StoreError};

/// One tool call to record.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRecord {
    pub agent: AgentId,
    pub tool_name: String,
    /// `builtin` or `agent`.
    pub tool_kind: &'static str,
    /// The version of an agent-made tool that ran; None for a built-in.
    pub tool_version: Option<i64>,
    /// Who made the call: `agent` (the loop), `cli`, `api`, `sandbox`…
    pub caller: String,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub args: Value,
    pub outcome: Result<Value, (String, String)>,
    pub duration_us: i64,
    /// Who let the call run or refused it, when a policy was applied (calls of the agent's
    /// loop); None for the operator's own calls (`wright tool call`, the API).
    pub decided_by: Option<DecidedBy>,
    /// Where its result came from when it is outside content (see `EventBody::ToolResult`).
    pub outside_origin: Option<String>,
}

/// One recorded call as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredExecution {
    pub id: i64,
    pub tool_name: String,
    pub tool_kind: String,
    /// The version of an agent-made tool that ran; None for a built-in (and calls recorded
    /// before versions were).
    pub tool_version: Option<i64>,
    pub caller: String,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub args: Value,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub error_category: Option<String>,
    pub success: bool,
    pub duration_us: i64,
    pub decided_by: Option<String>,
    pub created_at: String,
    pub outside_origin: Option<String>,
}

/// Which executions to list; every field narrows the list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExecutionFilter {
    pub tool_name: Option<String>,
    pub success: Option<bool>,
    pub error_category: Option<String>,
    /// Calls made in this conversation.
    pub conversation_id: Option<String>,
    /// Calls made in the conversations of this session.
    pub session_id: Option<i64>,
    /// Calls recorded at or after this time (ISO-8601 UTC, as `created_at` is written; a date
    /// alone means its midnight).
    pub since: Option<String>,
    pub limit: Option<i64>,
}

type ExecutionRow = (
    i64,
    String,
    String,
    Option<i64>,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    String,
    Option<String>,
    Option<String>,
);

impl Store {
    pub async fn record_execution(&self, record: &ExecutionRecord) -> Result<i64, StoreError> {
        let (result, error, category) = match &record.outcome {
            Ok(value) => (Some(value.to_string()), None, None),
            Err((message, category)) => (None, Some(message.as_str()), Some(category.as_str())),
        };
        // One INSERT is atomic on its own: no explicit transaction, one round trip.
        let inserted = sqlx::query(
            "INSERT INTO tool_executions (agent_id, tool_name, tool_kind, tool_version, caller, conversation_id, \
             tool_call_id, args, result, error, error_category, success, duration_us, decided_by, outside_origin) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(record.agent.as_str())
        .bind(&record.tool_name)
        .bind(record.tool_kind)
        .bind(record.tool_version)
        .bind(&record.caller)
        .bind(record.conversation_id.as_deref())
        .bind(record.tool_call_id.as_deref())
        .bind(record.args.to_string())
        .bind(result)
        .bind(error)
        .bind(category)
        .bind(record.outcome.is_ok())
        .bind(record.duration_us)
        .bind(record.decided_by.map(DecidedBy::as_str))
        .bind(record.outside_origin.as_deref())
        .execute(&self.writer)
        .await?;
        Ok(inserted.last_insert_rowid())
    }

    /// Recorded calls of one agent, newest first (at most `limit`, default 100, cap 1,000).
    pub async fn list_executions(
        &self,
        agent: &AgentId,
        filter: &ExecutionFilter,
    ) -> Result<Vec<StoredExecution>, StoreError> {
        let limit = filter.limit.unwrap_or(100).clamp(1, 1000);
        let rows: Vec<ExecutionRow> = sqlx::query_as(
            "SELECT id, tool_name, tool_kind, tool_version, caller, conversation_id, tool_call_id, args, result, error, \
             error_category, success, duration_us, created_at, decided_by, outside_origin FROM tool_executions \
             WHERE agent_id = ?1 AND (?2 IS NULL OR tool_name = ?2) AND (?3 IS NULL OR success = ?3) \
             AND (?4 IS NULL OR error_category = ?4) AND (?6 IS NULL OR conversation_id = ?6) \
             AND (?7 IS NULL OR conversation_id IN (SELECT id FROM conversations WHERE session_id = ?7)) \
             AND (?8 IS NULL OR created_at >= ?8) ORDER BY id DESC LIMIT ?5",
        )
        .bind(agent.as_str())
        .bind(filter.tool_name.as_deref())
        .bind(filter.success)
        .bind(filter.error_category.as_deref())
        .bind(limit)
        .bind(filter.conversation_id.as_deref())
        .bind(filter.session_id)
        .bind(filter.since.as_deref())
        .fetch_all(&self.reader)
        .await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let parse = |text: &str| serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
                StoredExecution {
                    id: row.0,
                    tool_name: row.1,
                    tool_kind: row.2,
                    tool_version: row.3,
                    caller: row.4,
                    conversation_id: row.5,
                    tool_call_id: row.6,
                    args: parse(&row.7),
                    result: row.8.as_deref().map(parse),
                    error: row.9,
                    error_category: row.10,
                    success: row.11 != 0,
                    duration_us: row.12,
                    created_at: row.13,
                    decided_by: row.14,
                    outside_origin: row.15,
                }
            })
            .collect())
    }
}

impl Store {
    /// The session a conversation belongs to, if it is in one.
    pub async fn session_of_conversation(&self, conversation_id: &str) -> Result<Option<i64>, StoreError> {
        let row: Option<(Option<i64>,)> = sqlx::query_as("SELECT session_id FROM conversations WHERE id = ?")
            .bind(conversation_id)
            .fetch_optional(&self.reader)
            .await?;
        let (session,) = row.ok_or_else(|| StoreError::ConversationNotFound(conversation_id.to_owned()))?;
        Ok(session)
    }
}

/// Totals over a window, as seed 001's `/codestats` shows them, plus a line per tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionStats {
    pub days: i64,
    pub total: i64,
    pub successful: i64,
    pub failed: i64,
    pub avg_duration_ms: f64,
    /// `(category, count)`, most frequent first.
    pub top_error_categories: Vec<(String, i64)>,
    /// `(tool, calls, failures, avg_duration_ms)`, most called first.
    pub by_tool: Vec<(String, i64, i64, f64)>,
}

impl Store {
    /// Statistics of the agent's tool calls over the last `days` days.
    pub async fn execution_stats(&self, agent: &AgentId, days: i64) -> Result<ExecutionStats, StoreError> {
        let since = format!("-{} days", days.clamp(1, 3650));
        let window = "agent_id = ?1 AND created_at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2)";
        let (total, successful, avg_us): (i64, i64, f64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*), COALESCE(SUM(success), 0), COALESCE(AVG(duration_us), 0.0) FROM tool_executions WHERE {window}"
        )))
        .bind(agent.as_str())
        .bind(&since)
        .fetch_one(&self.reader)
        .await?;
        let top_error_categories: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT error_category, COUNT(*) AS count FROM tool_executions WHERE {window} AND success = 0 \
             AND error_category IS NOT NULL GROUP BY error_category ORDER BY count DESC, error_category LIMIT 10"
        )))
        .bind(agent.as_str())
        .bind(&since)
        .fetch_all(&self.reader)
        .await?;
        let by_tool: Vec<(String, i64, i64, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT tool_name, COUNT(*) AS calls, COUNT(*) - SUM(success), AVG(duration_us) / 1000.0 FROM tool_executions \
             WHERE {window} GROUP BY tool_name ORDER BY calls DESC, tool_name"
        )))
        .bind(agent.as_str())
        .bind(&since)
        .fetch_all(&self.reader)
        .await?;
        Ok(ExecutionStats {
            days: days.clamp(1, 3650),
            total,
            successful,
            failed: total - successful,
            avg_duration_ms: avg_us / 1000.0,
            top_error_categories,
            by_tool,
        })
    }
}
