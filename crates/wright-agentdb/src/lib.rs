//! `wright-agentdb`: the agent's own SQLite database, behind a guard (DESIGN.md §2, issue 3).
//!
//! Each agent has one file, `<root>/<agent>/agent_data.db` (`root` is `data/agents`), created
//! on its first write. The app database is another file that no statement here can name.
//!
//! Public surface:
//! - [`AgentDatabases::new`]`(root, `[`AgentDbConfig`]`)` — every agent's database, each on its
//!   own thread; [`AgentDatabases::sql`] (`db_sql`), [`AgentDatabases::schema`] (`db_schema`),
//!   [`AgentDatabases::summary`] (the lines for the system message), [`AgentDatabases::close`].
//! - [`GuardedConnection`] — the same guards on one synchronous connection (used by the
//!   threads above; handy for a CLI or a benchmark).
//! - [`AgentDbError`] — what went wrong, in words a model can act on.
//!
//! Result shapes (seed 002): a statement that returns rows (SELECT, WITH, VALUES, EXPLAIN,
//! PRAGMA table_info, … RETURNING) gives `{columns, rows, row_count, truncated}` with rows as
//! arrays; any other gives `{changes, last_insert_rowid}`. SQLite decides which (a compiled
//! statement with result columns), not a look at the text. Params and values (`value.rs`):
//! `true`/`false` bind as 1/0, arrays and objects as their JSON text; blobs come back as
//! `{"blob_hex": "…"}` (write them with `unhex(?)`).
//!
//! Guarantees (details in `connection.rs` and `policy.rs`):
//! - One statement per call; a text with a second one is refused before anything runs.
//! - Each statement stops at its time limit (5 s) inside SQLite, and a long statement of one
//!   agent never delays another agent or the app (threads of their own).
//! - At most 1,000 rows and 5 MiB per result (`truncated: true` beyond).
//! - The file stays under 100 MB by `max_page_count`, which the agent cannot raise; the temp
//!   database has the same cap and the page size cannot change.
//! - ATTACH, DETACH, `VACUUM INTO`, extension loading and PRAGMAs that change limits or safety
//!   are refused by an authorizer and SQLite's defensive mode, never by scanning SQL text.
//! - SQLite's run-time limits for untrusted input are set low, so no single built-in call can
//!   build a huge value or run long before the progress handler sees it.
//! - After any failure the database answers normally: SQLite rolled the statement back.
//! - SQLite is the bundled build (rusqlite `bundled`, 3.51), never the system library.
//!
//! Invariant: this crate knows nothing of tools, models, HTTP or the app database; it depends
//! only on `wright-core` for [`AgentId`].

mod config;
mod connection;
mod error;
mod policy;
mod value;
mod worker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;
use wright_core::AgentId;

pub use config::AgentDbConfig;
pub use connection::{GuardedConnection, PROGRESS_OPS};
pub use error::AgentDbError;

use connection::Watch;
use worker::{Answer, Job, Message, Request, Worker};

/// The file name of an agent database inside its agent's directory.
pub const FILE_NAME: &str = "agent_data.db";

/// Every agent's database under one root directory. Cheap to share (`Arc` it); all methods
/// take `&self`.
pub struct AgentDatabases {
    root: PathBuf,
    config: AgentDbConfig,
    /// One worker per agent that has been used. The lock is held only to find, start or drop
    /// a handle — never while a statement runs — so agents never wait on each other here.
    workers: Mutex<HashMap<AgentId, Worker>>,
    /// Numbers calls, so that cancelling one can never stop another (see `Watch`).
    next_job: AtomicU64,
}

impl AgentDatabases {
    /// `root` is the directory holding one folder per agent (`data/agents`). Nothing is
    /// created until an agent first writes.
    pub fn new(root: impl Into<PathBuf>, config: AgentDbConfig) -> Self {
        AgentDatabases { root: root.into(), config, workers: Mutex::new(HashMap::new()), next_job: AtomicU64::new(1) }
    }

    pub fn config(&self) -> &AgentDbConfig {
        &self.config
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `agent`'s database lives (it may not exist yet).
    pub fn path(&self, agent: &AgentId) -> PathBuf {
        self.root.join(agent.as_str()).join(FILE_NAME)
    }

    /// `db_sql`: one statement with positional `?` params. Dropping the future stops the
    /// statement at its next progress check.
    pub async fn sql(&self, agent: &AgentId, sql: &str, params: &[Value]) -> Result<Value, AgentDbError> {
        match self.call(agent, Request::Sql { sql: sql.to_owned(), params: params.to_vec() }).await? {
            Answer::Json(value) => Ok(value),
            Answer::Text(text) => Ok(Value::String(text)),
        }
    }

    /// One statement that only reads, as [`sql`](Self::sql) answers it; a statement SQLite
    /// says may write is refused ([`AgentDbError::NotReadOnly`]) before it runs.
    pub async fn query(&self, agent: &AgentId, sql: &str) -> Result<Value, AgentDbError> {
        match self.call(agent, Request::Query { sql: sql.to_owned() }).await? {
            Answer::Json(value) => Ok(value),
            Answer::Text(text) => Ok(Value::String(text)),
        }
    }

    /// `db_schema`: `{tables: [{name, columns: [{name, type, notnull, pk}], row_count}]}`.
    pub async fn schema(&self, agent: &AgentId) -> Result<Value, AgentDbError> {
        match self.call(agent, Request::Schema).await? {
            Answer::Json(value) => Ok(value),
            Answer::Text(text) => Ok(Value::String(text)),
        }
    }

    /// The agent's tables for its system message, one line each (`notes (12 rows): id,
    /// title`); empty when it has none.
    pub async fn summary(&self, agent: &AgentId) -> Result<String, AgentDbError> {
        match self.call(agent, Request::Summary).await? {
            Answer::Text(text) => Ok(text),
            Answer::Json(value) => Ok(value.to_string()),
        }
    }

    /// Closes `agent`'s connection and ends its thread (after the statement it is running),
    /// e.g. before its directory is deleted. The next call opens it again.
    pub async fn close(&self, agent: &AgentId) {
        let worker = self.workers.lock().unwrap_or_else(PoisonError::into_inner).remove(agent);
        if let Some(worker) = worker {
            let (done, closed) = oneshot::channel();
            if worker.sender.send(Message::Close(done)).is_ok() && closed.await.is_err() {
                tracing::warn!(%agent, "agent database thread ended without closing");
            }
        }
    }

    async fn call(&self, agent: &AgentId, request: Request) -> Result<Answer, AgentDbError> {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let watch = self.dispatch(agent, Job { id, request, reply })?;
        let cancel = CancelOnDrop { watch, job: id, done: false };
        let result = answer.await;
        cancel.finish();
        result.unwrap_or_else(|_| {
            // The thread died mid-call (a bug, or a panic in SQLite glue): forget it, so the
            // next call starts a fresh one.
            self.workers.lock().unwrap_or_else(PoisonError::into_inner).remove(agent);
            Err(AgentDbError::Unavailable { message: "the database thread stopped; try again".to_owned() })
        })
    }

    /// Hands `job` to the agent's thread, starting one if there is none or the old one is gone.
    fn dispatch(&self, agent: &AgentId, job: Job) -> Result<Arc<Watch>, AgentDbError> {
        let mut workers = self.workers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut message = Message::Job(job);
        for _attempt in 0..2 {
            let worker = match workers.entry(agent.clone()) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(Worker::spawn(agent.as_str(), self.path(agent), self.config.clone())?)
                }
            };
            match worker.sender.send(message) {
                Ok(()) => return Ok(Arc::clone(&worker.watch)),
                Err(returned) => {
                    message = returned.0;
                    workers.remove(agent);
                }
            }
        }
        Err(AgentDbError::Unavailable { message: "cannot start the database thread".to_owned() })
    }
}

/// Stops the call's statement if the caller drops the future before the answer arrives.
struct CancelOnDrop {
    watch: Arc<Watch>,
    job: u64,
    done: bool,
}

impl CancelOnDrop {
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.done {
            self.watch.cancel(self.job);
        }
    }
}
