//! The agent's own database (seed 002 "Database"): `db_sql` and `db_schema` over the guarded
//! per-agent SQLite file of wright-agentdb. The app database is another file and cannot be
//! named from here.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use wright_agentdb::AgentDbError;

use crate::ToolError;
use crate::builtin::{Builtin, NoArgs, Tool};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SqlArgs {
    /// One SQL statement (SQLite dialect). BEGIN/COMMIT work across calls.
    sql: String,
    /// Positional bind parameters for `?` placeholders: strings, numbers, booleans, null; objects
    /// and arrays are bound as JSON text.
    params: Option<Vec<Value>>,
}

fn database_error(error: AgentDbError) -> ToolError {
    match error {
        AgentDbError::Timeout { .. } => ToolError::Timeout(error.to_string()),
        AgentDbError::SizeLimit { .. }
        | AgentDbError::ValueTooLarge { .. }
        | AgentDbError::SqlTooLong { .. }
        | AgentDbError::ResultTooLarge { .. } => ToolError::LimitExceeded(error.to_string()),
        AgentDbError::Denied { .. } => ToolError::Denied(error.to_string()),
        AgentDbError::Unavailable { .. } => ToolError::Internal(error.to_string()),
        _ => ToolError::Rejected(error.to_string()),
    }
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<SqlArgs>::boxed(
            "db_sql",
            "Run one SQL statement on your own SQLite database: create a table, insert, update or delete rows, or \
             query them (tables you design for structured data: filter, join, aggregate). Queries (SELECT, WITH, VALUES, EXPLAIN, PRAGMA table_info) return {columns, rows, \
             row_count, truncated} with at most 1000 rows; other statements return {changes, last_insert_rowid}. \
             Limits: 5 s per statement, 100 MB per database; ATTACH and extensions are refused.",
            |context, args| {
                Box::pin(async move {
                    let params = args.params.unwrap_or_default();
                    context.services.databases.sql(&context.agent, &args.sql, &params).await.map_err(database_error)
                })
            },
        ),
        Builtin::<NoArgs>::boxed(
            "db_schema",
            "List the tables of your own database with their columns (name, type, notnull, pk) and row counts.",
            |context, _| {
                Box::pin(async move { context.services.databases.schema(&context.agent).await.map_err(database_error) })
            },
        ),
    ]
}
