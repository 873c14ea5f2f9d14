//! The agent's own database (seed 002 "Database"): `db_sql` and `db_schema` over the guarded
//! per-agent SQLite file of wright-agentdb. The app database is another file and cannot be
//! named from here. `describe_db_table` keeps the agent's notes on what each table is for
//! (seed 000's `update_db_schema`): a versioned document (`db_notes`), one line a table,
//! shown beside the generated schema summary in its context and in `db_schema`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_agentdb::AgentDbError;
use wright_core::{Author, DocumentKind};
use wright_store::{DocumentEdit, VersionMeta};

use crate::builtin::{Builtin, CHANGES_AGENT, NoArgs, Tool, with_effects};
use crate::{ToolContext, ToolError};

/// The longest purpose of one table, in characters.
const MAX_PURPOSE_CHARS: usize = 500;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DescribeArgs {
    /// The table's name.
    table: String,
    /// What the table is for and what a row is, in one line (e.g. "one row per expense the
    /// person reports; amount in euros"). Empty removes the table's note.
    purpose: String,
    /// Why; kept with the version.
    reason: Option<String>,
}

/// The line of the notes that describes `table`.
fn line_prefix(table: &str) -> String {
    format!("- {table}: ")
}

async fn describe(context: ToolContext, args: DescribeArgs) -> Result<Value, ToolError> {
    let table = args.table.trim();
    let valid = !table.is_empty()
        && table.len() <= 128
        && table.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !valid {
        return Err(ToolError::InvalidArguments {
            tool: "describe_db_table".into(),
            problems: vec![format!("{table:?} is not a table name (letters, digits, '_', at most 128)")],
        });
    }
    let purpose = args.purpose.split_whitespace().collect::<Vec<_>>().join(" ");
    if purpose.chars().count() > MAX_PURPOSE_CHARS {
        return Err(ToolError::LimitExceeded(format!(
            "the purpose has {} characters; at most {MAX_PURPOSE_CHARS}: say it in one line",
            purpose.chars().count()
        )));
    }
    if !purpose.is_empty() {
        // A note on a table that does not exist would tell later runs it does (the real 1.5B
        // "created" a table by describing it).
        let schema = context.services.databases.schema(&context.agent).await.map_err(database_error)?;
        let tables: Vec<&str> =
            schema["tables"].as_array().into_iter().flatten().filter_map(|table| table["name"].as_str()).collect();
        if !tables.iter().any(|name| name.eq_ignore_ascii_case(table)) {
            let yours = if tables.is_empty() { "none yet".to_owned() } else { tables.join(", ") };
            return Err(ToolError::NotFound(format!(
                "there is no table {table} in your database (your tables: {yours}), so nothing was noted. Create it \
                 first with db_sql (CREATE TABLE {table} (…)), then note what it is for"
            )));
        }
    }
    let store = &context.services.store;
    let notes = store.document(&context.agent, DocumentKind::DbNotes).await?;
    let prefix = line_prefix(table);
    let old_line = notes.content.lines().find(|line| line.starts_with(&prefix)).map(str::to_owned);
    let new_line = format!("{prefix}{purpose}");
    // An exact find/replace of the line read: if another write changed it meanwhile, the edit
    // fails instead of losing that write.
    let edit = match (old_line, purpose.is_empty()) {
        (Some(old), false) => DocumentEdit::FindReplace { find: old, replace: new_line, replace_all: false },
        (Some(old), true) => {
            // The line with its line break, unless it is the last line.
            let with_break = format!("{old}\n");
            DocumentEdit::Delete { content: if notes.content.contains(&with_break) { with_break } else { old } }
        }
        (None, false) => DocumentEdit::Append { content: new_line },
        (None, true) => return Ok(json!({"table": table, "removed": false, "version": notes.version})),
    };
    let meta = VersionMeta {
        author: Author::Agent,
        reason: args.reason,
        conversation_id: context.conversation_id.clone(),
        tool_call_id: context.tool_call_id.clone(),
    };
    let version = store.edit_document(&context.agent, DocumentKind::DbNotes, &edit, &meta).await?;
    Ok(json!({"table": table, "purpose": purpose, "version": version}))
}

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
        Builtin::<NoArgs>::reading(
            "db_schema",
            "List the tables of your own database with their columns (name, type, notnull, pk) and row counts. \
             Also returns your notes on what each table is for (table_notes).",
            |context, _| {
                Box::pin(async move {
                    let mut schema = context.services.databases.schema(&context.agent).await.map_err(database_error)?;
                    let notes = context.services.store.document(&context.agent, DocumentKind::DbNotes).await?;
                    if let Value::Object(fields) = &mut schema {
                        fields.insert("table_notes".into(), Value::String(notes.content));
                    }
                    Ok(schema)
                })
            },
        ),
        with_effects(
            Builtin::<DescribeArgs>::boxed(
                "describe_db_table",
                "Note what a table is for. The note (one line) on one of your database tables is shown with the table list in \
                 your instructions, so you and later conversations use the table right. Call it after creating a table or changing \
                 what it holds; an empty purpose removes the note. Returns the notes' new version.",
                |context, args| Box::pin(describe(context, args)),
            ),
            CHANGES_AGENT,
        ),
    ]
}
