//! [`AgentDbConfig`]: every limit of the guard, each with the default issue 3 asks for.
//!
//! Deserialised from the operator's config; every field has a default, so an empty table is a
//! valid config. The values are applied once, when an agent's connection is opened; the agent
//! cannot change any of them from SQL (the authorizer refuses the PRAGMAs that would).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Limits of one agent database. Sizes are bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentDbConfig {
    /// Wall-clock limit of one statement, ms, enforced inside SQLite by a progress handler.
    pub statement_timeout_ms: u64,
    /// Rows returned by one statement; more set `truncated: true`.
    pub max_rows: usize,
    /// Bytes of one result (its JSON text, approximately); a result that would grow past this
    /// stops at the last whole row and sets `truncated: true`.
    pub max_result_bytes: usize,
    /// Size of the database file (`PRAGMA max_page_count`, set by the host on every open and
    /// refused to the agent). The temporary database gets the same cap.
    pub max_database_bytes: u64,
    /// Longest string or blob, and largest stored row (`SQLITE_LIMIT_LENGTH`): bounds
    /// `zeroblob`, `randomblob`, `printf` widths, `replace`, `group_concat` and every other
    /// value a statement builds.
    pub max_value_bytes: u32,
    /// Longest SQL text (`SQLITE_LIMIT_SQL_LENGTH`).
    pub max_sql_bytes: u32,
    /// Columns of a table, an index, a result, a GROUP BY or ORDER BY (`SQLITE_LIMIT_COLUMN`).
    pub max_columns: u32,
    /// Depth of an expression tree (`SQLITE_LIMIT_EXPR_DEPTH`).
    pub max_expression_depth: u32,
    /// Terms of a compound SELECT (`SQLITE_LIMIT_COMPOUND_SELECT`); multi-row VALUES is exempt.
    pub max_compound_select: u32,
    /// Length of a LIKE or GLOB pattern (`SQLITE_LIMIT_LIKE_PATTERN_LENGTH`).
    pub max_like_pattern_bytes: u32,
    /// Arguments of one function call (`SQLITE_LIMIT_FUNCTION_ARG`).
    pub max_function_args: u32,
    /// Depth of trigger recursion (`SQLITE_LIMIT_TRIGGER_DEPTH`).
    pub max_trigger_depth: u32,
    /// Highest `?NNN` parameter number (`SQLITE_LIMIT_VARIABLE_NUMBER`).
    pub max_params: u32,
    /// Instructions of one compiled statement (`SQLITE_LIMIT_VDBE_OP`).
    pub max_program_ops: u32,
}

impl Default for AgentDbConfig {
    fn default() -> Self {
        AgentDbConfig {
            statement_timeout_ms: 5_000,
            max_rows: 1_000,
            max_result_bytes: 5 * 1024 * 1024,
            max_database_bytes: 100 * 1000 * 1000,
            max_value_bytes: 1_000_000,
            max_sql_bytes: 100_000,
            max_columns: 100,
            max_expression_depth: 100,
            max_compound_select: 50,
            max_like_pattern_bytes: 50,
            max_function_args: 32,
            max_trigger_depth: 10,
            max_params: 1_000,
            max_program_ops: 100_000,
        }
    }
}

impl AgentDbConfig {
    pub fn statement_timeout(&self) -> Duration {
        Duration::from_millis(self.statement_timeout_ms)
    }
}
