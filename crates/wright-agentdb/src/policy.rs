//! The authorizer: what agent SQL may do, decided from what SQLite compiled, never from the SQL
//! text — so comments, case, quoting, whitespace and parameters change nothing.
//!
//! Guarantees:
//! - ATTACH and DETACH are refused, whatever the file name or expression; so is `VACUUM INTO`
//!   (SQLite compiles it into a nested ATTACH while the statement runs). The one ATTACH allowed is
//!   the nameless temporary database plain `VACUUM` attaches for itself, recognised because it
//!   appears while a statement runs (agent SQL is authorized while it is prepared) and has an
//!   empty file name; `SQLITE_LIMIT_ATTACHED = 1` bounds it further.
//! - `load_extension()` is refused (extension loading is also off on the connection).
//! - PRAGMAs are an allow-list: informational ones, a few harmless switches, and read-only
//!   access to the settings that hold the limits (page size, max page count, journal mode,
//!   temp store, …). Anything else — `max_page_count = N`, `writable_schema`, `journal_mode = …`,
//!   `trusted_schema`, `temp_store_directory`, `hard_heap_limit`, unknown pragmas — is refused.
//!   Table-valued pragma functions (`pragma_max_page_count(…)`) reach the same check: SQLite
//!   compiles them into a nested PRAGMA.
//! - Virtual tables only of the full-text and R-tree modules.
//! - Action codes this file does not know are refused, so a newer SQLite cannot widen the
//!   agent's reach without a decision here.

use rusqlite::hooks::{AuthAction, AuthContext};

/// Whether the connection is compiling agent SQL or running it. SQLite also calls the
/// authorizer for SQL it compiles on its own while a statement runs (VACUUM's temporary
/// database, pragma functions, FTS5 and R-tree housekeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Preparing,
    Running,
}

/// Pragmas that only report, or take a table or index name (`table_info(t)`), or check.
const INFORMATIONAL: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
    "collation_list",
    "function_list",
    "module_list",
    "pragma_list",
    "compile_options",
    "optimize",
    "incremental_vacuum",
    "shrink_memory",
];

/// Pragmas the agent may set: they change behaviour of its own statements, no limit.
const SETTABLE: &[&str] =
    &["user_version", "application_id", "foreign_keys", "defer_foreign_keys", "recursive_triggers", "automatic_index"];

/// Pragmas the agent may read but not set: they hold a limit or a safety setting.
const READ_ONLY: &[&str] = &[
    "page_size",
    "page_count",
    "max_page_count",
    "freelist_count",
    "encoding",
    "auto_vacuum",
    "journal_mode",
    "synchronous",
    "schema_version",
    "data_version",
    "cache_size",
    "temp_store",
    "busy_timeout",
    "secure_delete",
    "trusted_schema",
    "cell_size_check",
];

/// Virtual table modules the agent may create: full-text search and spatial indices.
const MODULES: &[&str] = &["fts3", "fts4", "fts5", "fts5vocab", "rtree", "rtree_i32"];

/// `Ok` to allow; `Err(what)` names what was refused, for [`crate::AgentDbError::Denied`].
pub(crate) fn authorize(context: &AuthContext<'_>, phase: Phase) -> Result<(), String> {
    match context.action {
        AuthAction::Attach { filename } => attach(Some(filename), phase),
        // rusqlite reports an ATTACH whose file name is an expression (`'a' || '.db'`) as
        // unknown, for want of a name.
        AuthAction::Unknown { code: rusqlite::ffi::SQLITE_ATTACH, arg1, .. } => attach(arg1, phase),
        AuthAction::Detach { .. } | AuthAction::Unknown { code: rusqlite::ffi::SQLITE_DETACH, .. } => {
            Err("DETACH".to_owned())
        }
        AuthAction::Function { function_name } => {
            if function_name.eq_ignore_ascii_case("load_extension") {
                Err("load_extension() (extension loading)".to_owned())
            } else {
                Ok(())
            }
        }
        AuthAction::Pragma { pragma_name, pragma_value } => pragma(pragma_name, pragma_value),
        AuthAction::CreateVtable { module_name, .. } | AuthAction::DropVtable { module_name, .. } => {
            if MODULES.iter().any(|allowed| module_name.eq_ignore_ascii_case(allowed)) {
                Ok(())
            } else {
                Err(format!("a virtual table of module `{module_name}` (allowed: {})", MODULES.join(", ")))
            }
        }
        AuthAction::Unknown { code, .. } => Err(format!("SQLite operation {code}")),
        AuthAction::CreateIndex { .. }
        | AuthAction::CreateTable { .. }
        | AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateTempTable { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateTempView { .. }
        | AuthAction::CreateTrigger { .. }
        | AuthAction::CreateView { .. }
        | AuthAction::Delete { .. }
        | AuthAction::DropIndex { .. }
        | AuthAction::DropTable { .. }
        | AuthAction::DropTempIndex { .. }
        | AuthAction::DropTempTable { .. }
        | AuthAction::DropTempTrigger { .. }
        | AuthAction::DropTempView { .. }
        | AuthAction::DropTrigger { .. }
        | AuthAction::DropView { .. }
        | AuthAction::Insert { .. }
        | AuthAction::Read { .. }
        | AuthAction::Select
        | AuthAction::Transaction { .. }
        | AuthAction::Update { .. }
        | AuthAction::AlterTable { .. }
        | AuthAction::Reindex { .. }
        | AuthAction::Analyze { .. }
        | AuthAction::Savepoint { .. }
        | AuthAction::Recursive => Ok(()),
        // `AuthAction` is non-exhaustive: a variant added by a newer rusqlite is refused
        // until someone decides about it here.
        _ => Err("this kind of statement".to_owned()),
    }
}

fn attach(filename: Option<&str>, phase: Phase) -> Result<(), String> {
    match (phase, filename) {
        (Phase::Running, Some("")) => Ok(()),
        (Phase::Running, _) => Err("VACUUM INTO".to_owned()),
        (Phase::Preparing, _) => Err("ATTACH".to_owned()),
    }
}

fn pragma(name: &str, value: Option<&str>) -> Result<(), String> {
    let is = |list: &[&str]| list.iter().any(|allowed| name.eq_ignore_ascii_case(allowed));
    if is(INFORMATIONAL) || is(SETTABLE) || (value.is_none() && is(READ_ONLY)) {
        return Ok(());
    }
    let name = name.to_ascii_lowercase();
    Err(match value {
        Some(value) if is(READ_ONLY) => {
            format!("PRAGMA {name} = {value} (it changes a limit or safety setting; reading it is fine)")
        }
        Some(value) => format!("PRAGMA {name} = {value}"),
        None => format!("PRAGMA {name}"),
    })
}

#[cfg(test)]
mod tests;
