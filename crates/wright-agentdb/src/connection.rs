//! [`GuardedConnection`]: one agent's SQLite file, opened once with every guard installed, and
//! the synchronous `sql` / `schema` / `summary` that run on it.
//!
//! Guarantees, all set up once in [`GuardedConnection::open`] (per-query hook setup was measured
//! too costly, DEPENDENCIES.md):
//! - **time**: a progress handler, called every [`PROGRESS_OPS`] virtual-machine instructions,
//!   stops a statement once its deadline has passed (or its caller has gone); SQLite then
//!   rolls the statement back and the connection stays usable.
//! - **size**: `max_page_count` of the main and the temporary database is set from
//!   [`AgentDbConfig::max_database_bytes`] on every open — the setting lives in the connection,
//!   not the file — and the authorizer refuses the PRAGMAs that would change it or the page
//!   size (`max_page_count`, `page_size`, `temp_store`, which would reopen temp uncapped).
//! - **authority**: the [`crate::policy`] authorizer plus SQLite's defensive mode, with
//!   `writable_schema`, `trusted_schema` and the two-argument `fts3_tokenizer` off; extension
//!   loading is never enabled on this connection.
//! - **work inside one statement**: SQLite's run-time limits (`sqlite3_limit`) from the config,
//!   so no single built-in call can build a value over [`AgentDbConfig::max_value_bytes`].
//! - **rows and bytes**: a result stops at [`AgentDbConfig::max_rows`] rows or
//!   [`AgentDbConfig::max_result_bytes`] bytes, with `truncated: true`.
//! - **one statement per call**: SQL text with a second statement is refused before any of it
//!   runs.

use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::Authorization;
use rusqlite::limits::Limit;
use rusqlite::{Batch, Connection, ErrorCode, OpenFlags};
use serde_json::{Map, Value, json};

use crate::policy::{self, Phase};
use crate::value::{from_sql, to_sql};
use crate::{AgentDbConfig, AgentDbError};

/// Instructions between two calls of the progress handler. One call reads the clock (~25 ns);
/// 100 instructions take a few microseconds, so the handler costs about 1% of a CPU-bound
/// statement, and even when each instruction is a heavy built-in on a value at the length
/// limit (~1 ms), a statement overruns its deadline by well under 100 ms.
pub const PROGRESS_OPS: i32 = 100;

/// How many tables [`GuardedConnection::summary`] names, and how many columns per table, so
/// the system message stays short whatever the agent builds.
const SUMMARY_TABLES: usize = 50;
const SUMMARY_COLUMNS: usize = 30;
/// The longest first statement quoted back in a refusal of several statements.
const FIRST_STATEMENT_CHARS: usize = 400;

/// The deadline of the statement running now, and whether its caller has gone. Shared between
/// the progress handler (on the connection's thread) and whoever may cancel (a dropped future
/// on another thread), so everything in it is atomic. Jobs are numbered; a cancel names a job,
/// so a late cancel can never stop the next job.
#[derive(Debug)]
pub(crate) struct Watch {
    base: Instant,
    /// Nanoseconds since `base`; `u64::MAX` while no statement runs.
    deadline: AtomicU64,
    running_job: AtomicU64,
    cancelled_job: AtomicU64,
}

impl Watch {
    pub(crate) fn new() -> Self {
        Watch {
            base: Instant::now(),
            deadline: AtomicU64::new(u64::MAX),
            running_job: AtomicU64::new(0),
            cancelled_job: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn arm(&self, limit: Duration) {
        let limit = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        self.deadline.store(self.now().saturating_add(limit), Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.deadline.store(u64::MAX, Ordering::Relaxed);
    }

    pub(crate) fn begin_job(&self, job: u64) {
        self.running_job.store(job, Ordering::Relaxed);
    }

    /// Stops `job` at its next progress check, if it is the one running.
    pub(crate) fn cancel(&self, job: u64) {
        self.cancelled_job.store(job, Ordering::Relaxed);
    }

    fn cancelled(&self) -> bool {
        self.cancelled_job.load(Ordering::Relaxed) == self.running_job.load(Ordering::Relaxed)
            && self.running_job.load(Ordering::Relaxed) != 0
    }

    /// The progress handler's question: stop the statement now?
    fn should_stop(&self) -> bool {
        let deadline = self.deadline.load(Ordering::Relaxed);
        deadline != u64::MAX && (self.now() >= deadline || self.cancelled())
    }
}

/// What the authorizer needs from the connection's owner: the phase (see [`Phase`]) and a
/// place to leave the name of what it refused, for the error message. The phase is an atomic
/// because the authorizer runs for every column a statement reads; the note is written only
/// on a refusal.
#[derive(Debug, Default)]
struct AuthState {
    running: AtomicU8,
    denied: Mutex<Option<String>>,
}

impl AuthState {
    fn set_phase(&self, phase: Phase) {
        self.running.store(u8::from(phase == Phase::Running), Ordering::Relaxed);
    }

    fn phase(&self) -> Phase {
        if self.running.load(Ordering::Relaxed) == 1 { Phase::Running } else { Phase::Preparing }
    }

    fn note_denial(&self, what: String) {
        let mut denied = self.denied.lock().unwrap_or_else(PoisonError::into_inner);
        // Keep the first refusal of a statement: it is the one the agent wrote.
        denied.get_or_insert(what);
    }

    fn take_denial(&self) -> Option<String> {
        self.denied.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// One table as `db_schema` reports it.
struct Table {
    name: String,
    columns: Vec<Column>,
    row_count: i64,
}

struct Column {
    name: String,
    declared_type: String,
    not_null: bool,
    primary_key: bool,
}

/// An open agent database with all guards installed. Not `Sync`: one thread owns it
/// ([`crate::AgentDatabases`] gives each agent its own).
pub struct GuardedConnection {
    connection: Connection,
    config: AgentDbConfig,
    watch: Arc<Watch>,
    auth: Arc<AuthState>,
}

impl GuardedConnection {
    /// Opens (creating it and its directory if needed) the database at `path` with every
    /// guard installed.
    pub fn open(path: &Path, config: &AgentDbConfig) -> Result<Self, AgentDbError> {
        Self::open_with(path, config, Arc::new(Watch::new()), true)
    }

    /// The same connection with no guard at all: no authorizer, progress handler, limits or
    /// size cap. Only for the benchmark that measures what the guard costs.
    #[doc(hidden)]
    pub fn open_unguarded_for_benchmark(path: &Path, config: &AgentDbConfig) -> Result<Self, AgentDbError> {
        Self::open_with(path, config, Arc::new(Watch::new()), false)
    }

    pub(crate) fn open_with(
        path: &Path,
        config: &AgentDbConfig,
        watch: Arc<Watch>,
        guarded: bool,
    ) -> Result<Self, AgentDbError> {
        let unavailable = |message: String| AgentDbError::Unavailable { message };
        if let Some(directory) = path.parent() {
            std::fs::create_dir_all(directory)
                .map_err(|error| unavailable(format!("cannot create {}: {error}", directory.display())))?;
        }
        // No SQLITE_OPEN_URI: the path is ours, and nothing else is ever opened by name.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)
            .map_err(|error| unavailable(format!("cannot open {}: {error}", path.display())))?;
        let auth = Arc::new(AuthState::default());
        if guarded {
            install_guards(&connection, config, &watch, &auth)
                .map_err(|error| unavailable(format!("cannot configure {}: {error}", path.display())))?;
        }
        // Agent SQL repeats (the same lookups turn after turn); a cached statement skips the
        // compile and the authorizer, which is most of a point query's cost.
        connection.set_prepared_statement_cache_capacity(64);
        Ok(GuardedConnection { connection, config: config.clone(), watch, auth })
    }

    pub fn config(&self) -> &AgentDbConfig {
        &self.config
    }

    /// Runs one statement with positional `?` params: `{columns, rows, row_count, truncated}`
    /// for a statement that returns rows, `{changes, last_insert_rowid}` for any other.
    pub fn sql(&mut self, sql: &str, params: &[Value]) -> Result<Value, AgentDbError> {
        let limit = self.config.max_sql_bytes as usize;
        if sql.len() > limit {
            return Err(AgentDbError::SqlTooLong { length: sql.len(), limit });
        }
        self.watch.arm(self.config.statement_timeout());
        let result = self.run(sql, params, false);
        self.watch.disarm();
        result
    }

    /// Like [`sql`](Self::sql) without params, for a statement SQLite's compiler says does not
    /// write (`sqlite3_stmt_readonly`); any other is refused before it runs.
    pub fn query(&mut self, sql: &str) -> Result<Value, AgentDbError> {
        let limit = self.config.max_sql_bytes as usize;
        if sql.len() > limit {
            return Err(AgentDbError::SqlTooLong { length: sql.len(), limit });
        }
        self.watch.arm(self.config.statement_timeout());
        let result = self.run(sql, &[], true);
        self.watch.disarm();
        result
    }

    /// `{tables: [{name, columns: [{name, type, notnull, pk}], row_count}]}` for the agent's
    /// tables (virtual tables included, SQLite's internal and shadow tables left out).
    pub fn schema(&mut self) -> Result<Value, AgentDbError> {
        let tables = self.guarded(Self::tables)?;
        let tables: Vec<Value> = tables
            .into_iter()
            .map(|table| {
                let columns: Vec<Value> = table
                    .columns
                    .into_iter()
                    .map(|column| {
                        json!({
                            "name": column.name,
                            "type": column.declared_type,
                            "notnull": column.not_null,
                            "pk": column.primary_key,
                        })
                    })
                    .collect();
                json!({ "name": table.name, "columns": columns, "row_count": table.row_count })
            })
            .collect();
        Ok(json!({ "tables": tables }))
    }

    /// One line per table — `notes (12 rows): id, title, body` — for the agent's system
    /// message; empty when the database has no tables.
    pub fn summary(&mut self) -> Result<String, AgentDbError> {
        let tables = self.guarded(Self::tables)?;
        let mut lines: Vec<String> = tables
            .iter()
            .take(SUMMARY_TABLES)
            .map(|table| {
                let mut columns: Vec<&str> =
                    table.columns.iter().take(SUMMARY_COLUMNS).map(|column| column.name.as_str()).collect();
                if table.columns.len() > SUMMARY_COLUMNS {
                    columns.push("…");
                }
                let rows = if table.row_count == 1 { "row" } else { "rows" };
                format!("{} ({} {rows}): {}", table.name, table.row_count, columns.join(", "))
            })
            .collect();
        if tables.len() > SUMMARY_TABLES {
            lines.push(format!("… and {} more tables (db_schema lists them all)", tables.len() - SUMMARY_TABLES));
        }
        Ok(lines.join("\n"))
    }

    /// Runs the host's own SQL (schema queries) under the same deadline as agent SQL.
    fn guarded<T>(&mut self, work: impl FnOnce(&Self) -> rusqlite::Result<T>) -> Result<T, AgentDbError> {
        self.watch.arm(self.config.statement_timeout());
        self.auth.set_phase(Phase::Running);
        self.auth.take_denial();
        let result = work(self);
        self.watch.disarm();
        result.map_err(|error| self.classify(error, ""))
    }

    fn run(&self, sql: &str, params: &[Value], read_only: bool) -> Result<Value, AgentDbError> {
        self.auth.set_phase(Phase::Preparing);
        self.auth.take_denial();
        // `prepare_cached` compiles the text after the first statement too, and refuses it
        // with `MultipleStatement` when there is one; but when that second statement fails to
        // compile, its error is reported instead. `first_statement_failed` tells them apart.
        let mut statement = match self.connection.prepare_cached(sql) {
            Ok(statement) => statement,
            Err(rusqlite::Error::MultipleStatement) => {
                return Err(AgentDbError::MultipleStatements { first: self.first_statement(sql) });
            }
            Err(error) => {
                let error = self.classify(error, sql);
                return Err(match self.first_statement(sql) {
                    Some(first) => AgentDbError::MultipleStatements { first: Some(first) },
                    None => error,
                });
            }
        };
        if read_only && !statement.readonly() {
            return Err(AgentDbError::NotReadOnly);
        }
        let expected = statement.parameter_count();
        if expected != params.len() {
            return Err(AgentDbError::Params {
                message: format!(
                    "the statement has {expected} placeholder{} (?) but {} param{} given",
                    if expected == 1 { "" } else { "s" },
                    params.len(),
                    if params.len() == 1 { " was" } else { "s were" },
                ),
            });
        }
        for (index, param) in params.iter().enumerate() {
            let value = to_sql(index + 1, param)?;
            statement.raw_bind_parameter(index + 1, value).map_err(|error| self.classify(error, sql))?;
        }
        self.auth.set_phase(Phase::Running);
        let column_count = statement.column_count();
        if column_count == 0 {
            // An empty text (only comments or semicolons) compiles to no statement at all.
            if statement.expanded_sql().is_none() {
                return Err(AgentDbError::EmptyStatement);
            }
            let before = self.connection.total_changes();
            statement.raw_execute().map_err(|error| self.classify(error, sql))?;
            // `changes()` keeps the count of the last INSERT/UPDATE/DELETE, so a CREATE after
            // an INSERT would report the INSERT's rows; only trust it if something changed.
            let changes = if self.connection.total_changes() == before { 0 } else { self.connection.changes() };
            return Ok(json!({ "changes": changes, "last_insert_rowid": self.connection.last_insert_rowid() }));
        }

        let columns: Vec<Value> =
            statement.column_names().into_iter().map(|name| Value::String(name.to_owned())).collect();
        let max_rows = self.config.max_rows;
        let max_bytes = self.config.max_result_bytes;
        let mut bytes = 64 + columns.iter().map(|name| name.as_str().map_or(0, str::len) + 3).sum::<usize>();
        let mut rows_out: Vec<Value> = Vec::new();
        let mut truncated = false;
        let mut rows = statement.raw_query();
        while let Some(row) = rows.next().map_err(|error| self.classify(error, sql))? {
            if rows_out.len() >= max_rows {
                truncated = true;
                break;
            }
            let mut cells = Vec::with_capacity(column_count);
            let mut row_bytes = 3;
            for index in 0..column_count {
                let (cell, size) = from_sql(row.get_ref(index).map_err(|error| self.classify(error, sql))?);
                row_bytes += size + 1;
                cells.push(cell);
            }
            if bytes + row_bytes > max_bytes {
                if rows_out.is_empty() {
                    return Err(AgentDbError::ResultTooLarge { limit: max_bytes });
                }
                truncated = true;
                break;
            }
            bytes += row_bytes;
            rows_out.push(Value::Array(cells));
        }
        let mut result = Map::with_capacity(4);
        result.insert("columns".to_owned(), Value::Array(columns));
        result.insert("row_count".to_owned(), rows_out.len().into());
        result.insert("rows".to_owned(), Value::Array(rows_out));
        result.insert("truncated".to_owned(), truncated.into());
        Ok(Value::Object(result))
    }

    /// The text of the first statement of `sql` when it compiles on its own (so a compile
    /// error came from a second statement), as SQLite's tokenizer ends it. Only called on the
    /// error path; nothing runs.
    fn first_statement(&self, sql: &str) -> Option<String> {
        let first = match Batch::new(&self.connection, sql).next() {
            Ok(Some(statement)) => Some(statement.expanded_sql().unwrap_or_default()),
            _ => None,
        };
        self.auth.take_denial();
        let first = first?;
        let first = first.trim().trim_end_matches(';').trim_end();
        Some(if first.chars().count() > FIRST_STATEMENT_CHARS {
            format!("{}…", first.chars().take(FIRST_STATEMENT_CHARS).collect::<String>())
        } else {
            first.to_owned()
        })
    }

    fn tables(&self) -> rusqlite::Result<Vec<Table>> {
        let mut names = self.connection.prepare_cached(
            "SELECT name FROM pragma_table_list \
             WHERE schema = 'main' AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
             ORDER BY name",
        )?;
        let names: Vec<String> = names.query_map([], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
        let mut tables = Vec::with_capacity(names.len());
        for name in names {
            let mut info =
                self.connection.prepare_cached("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)")?;
            let columns = info
                .query_map([&name], |row| {
                    Ok(Column {
                        name: row.get(0)?,
                        declared_type: row.get(1)?,
                        not_null: row.get(2)?,
                        primary_key: row.get::<_, i64>(3)? > 0,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            // count(*) walks the smallest b-tree of the table; with the file capped at
            // max_database_bytes that is tens of milliseconds at worst (see the benchmark).
            let count_sql = format!("SELECT count(*) FROM main.\"{}\"", name.replace('"', "\"\""));
            let row_count = self.connection.query_row(&count_sql, [], |row| row.get(0))?;
            tables.push(Table { name, columns, row_count });
        }
        Ok(tables)
    }

    /// Turns a SQLite failure into the error the model can act on. `sql` is the agent's text
    /// (empty for the host's own queries).
    fn classify(&self, error: rusqlite::Error, sql: &str) -> AgentDbError {
        let (code, message) = match &error {
            rusqlite::Error::SqliteFailure(failure, message) => (failure.code, message.clone()),
            rusqlite::Error::SqlInputError { error: failure, msg, .. } => (failure.code, Some(msg.clone())),
            rusqlite::Error::MultipleStatement => return AgentDbError::MultipleStatements { first: None },
            rusqlite::Error::InvalidParameterCount(given, expected) => {
                return AgentDbError::Params {
                    message: format!("the statement has {expected} placeholders (?) but {given} params were given"),
                };
            }
            other => return AgentDbError::Sql { message: other.to_string() },
        };
        // A refusal of the authorizer surfaces as SQLITE_AUTH, or as a plain error for a
        // function ("not authorized to use function"); the note says which it was either way.
        if let Some(what) = self.auth.take_denial() {
            return AgentDbError::Denied { what };
        }
        match code {
            ErrorCode::OperationInterrupted if self.watch.cancelled() => AgentDbError::Cancelled,
            ErrorCode::OperationInterrupted => AgentDbError::Timeout { limit: self.config.statement_timeout() },
            ErrorCode::DiskFull => AgentDbError::SizeLimit { limit: self.config.max_database_bytes },
            ErrorCode::AuthorizationForStatementDenied => AgentDbError::Denied { what: "this statement".to_owned() },
            ErrorCode::TooBig if sql.len() > self.config.max_sql_bytes as usize => {
                AgentDbError::SqlTooLong { length: sql.len(), limit: self.config.max_sql_bytes as usize }
            }
            ErrorCode::TooBig => AgentDbError::ValueTooLarge { limit: u64::from(self.config.max_value_bytes) },
            _ => AgentDbError::Sql { message: message.unwrap_or_else(|| error.to_string()) },
        }
    }
}

/// Limits, defensive configuration, size caps, then the hooks — in that order, because the
/// size caps are set with PRAGMAs the authorizer would refuse.
fn install_guards(
    connection: &Connection,
    config: &AgentDbConfig,
    watch: &Arc<Watch>,
    auth: &Arc<AuthState>,
) -> rusqlite::Result<()> {
    let clamp = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
    let limits = [
        (Limit::SQLITE_LIMIT_LENGTH, clamp(config.max_value_bytes)),
        (Limit::SQLITE_LIMIT_SQL_LENGTH, clamp(config.max_sql_bytes)),
        (Limit::SQLITE_LIMIT_COLUMN, clamp(config.max_columns)),
        (Limit::SQLITE_LIMIT_EXPR_DEPTH, clamp(config.max_expression_depth)),
        (Limit::SQLITE_LIMIT_COMPOUND_SELECT, clamp(config.max_compound_select)),
        (Limit::SQLITE_LIMIT_VDBE_OP, clamp(config.max_program_ops)),
        (Limit::SQLITE_LIMIT_FUNCTION_ARG, clamp(config.max_function_args)),
        // One: the nameless temporary database plain VACUUM attaches (see `policy`).
        (Limit::SQLITE_LIMIT_ATTACHED, 1),
        (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, clamp(config.max_like_pattern_bytes)),
        (Limit::SQLITE_LIMIT_VARIABLE_NUMBER, clamp(config.max_params)),
        (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, clamp(config.max_trigger_depth)),
        // No helper threads: a statement's work stays on the agent's own thread.
        (Limit::SQLITE_LIMIT_WORKER_THREADS, 0),
    ];
    for (limit, value) in limits {
        connection.set_limit(limit, value)?;
    }
    for (option, on) in [
        (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
        (DbConfig::SQLITE_DBCONFIG_WRITABLE_SCHEMA, false),
        (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
        (DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, false),
    ] {
        connection.set_db_config(option, on)?;
    }
    // A busy handler would sleep where the progress handler cannot see it; only another
    // process could hold the file's lock, so give up at the statement's limit.
    connection.busy_timeout(config.statement_timeout())?;
    for schema in ["main", "temp"] {
        let page_size: i64 = connection.pragma_query_value(Some(schema), "page_size", |row| row.get(0))?;
        let page_size = u64::try_from(page_size).unwrap_or(4096).max(512);
        let pages = i64::try_from((config.max_database_bytes / page_size).max(1)).unwrap_or(i64::MAX);
        connection.pragma_update(Some(schema), "max_page_count", pages)?;
    }

    let auth_for_hook = Arc::clone(auth);
    connection.authorizer(Some(move |context: rusqlite::hooks::AuthContext<'_>| {
        match policy::authorize(&context, auth_for_hook.phase()) {
            Ok(()) => Authorization::Allow,
            Err(what) => {
                auth_for_hook.note_denial(what);
                Authorization::Deny
            }
        }
    }))?;
    let watch_for_hook = Arc::clone(watch);
    connection.progress_handler(PROGRESS_OPS, Some(move || watch_for_hook.should_stop()))?;
    Ok(())
}
