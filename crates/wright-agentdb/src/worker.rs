//! One thread per agent database, owning its [`GuardedConnection`].
//!
//! Why threads of our own: a statement may run for its whole time limit, and SQLite blocks
//! while it does. On the agent's own thread it delays only that agent's next statement —
//! never another agent's, never the async runtime, never the app database (another file,
//! another connection). Hooks are installed once, when the thread opens its connection.
//!
//! Lifecycle: the thread is started by [`crate::AgentDatabases`] on the agent's first call and
//! serves a channel of [`Message`]s in order. It ends when the channel's sender is dropped
//! (the `AgentDatabases` is dropped, or the handle is replaced) or on [`Message::Close`],
//! after the statement it is running, which its deadline bounds. The connection is opened
//! lazily, and only for a call that needs the file: `schema` and `summary` of an agent that
//! has never written report an empty database without creating one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::connection::{GuardedConnection, Watch};
use crate::{AgentDbConfig, AgentDbError};

pub(crate) enum Request {
    Sql {
        sql: String,
        params: Vec<Value>,
    },
    /// One statement SQLite itself says does not write (a check of a case, issue 31).
    Query {
        sql: String,
    },
    Schema,
    Summary,
}

pub(crate) enum Answer {
    Json(Value),
    Text(String),
}

pub(crate) struct Job {
    pub(crate) id: u64,
    pub(crate) request: Request,
    pub(crate) reply: oneshot::Sender<Result<Answer, AgentDbError>>,
}

pub(crate) enum Message {
    Job(Job),
    /// Close the connection, answer, and end the thread.
    Close(oneshot::Sender<()>),
}

/// The handle kept by [`crate::AgentDatabases`]: the channel to the thread and the watch through
/// which a dropped call stops its statement.
pub(crate) struct Worker {
    pub(crate) sender: mpsc::Sender<Message>,
    pub(crate) watch: Arc<Watch>,
}

impl Worker {
    pub(crate) fn spawn(name: &str, path: PathBuf, config: AgentDbConfig) -> Result<Worker, AgentDbError> {
        let (sender, receiver) = mpsc::channel();
        let watch = Arc::new(Watch::new());
        let thread_watch = Arc::clone(&watch);
        std::thread::Builder::new()
            .name(format!("agentdb-{name}"))
            .spawn(move || serve(path, config, thread_watch, receiver))
            .map_err(|error| AgentDbError::Unavailable {
                message: format!("cannot start a database thread: {error}"),
            })?;
        Ok(Worker { sender, watch })
    }
}

fn serve(path: PathBuf, config: AgentDbConfig, watch: Arc<Watch>, receiver: mpsc::Receiver<Message>) {
    let mut connection: Option<GuardedConnection> = None;
    while let Ok(message) = receiver.recv() {
        let job = match message {
            Message::Job(job) => job,
            Message::Close(done) => {
                drop(connection.take());
                if done.send(()).is_err() {
                    tracing::debug!(path = %path.display(), "agent database closed; nobody waited");
                }
                return;
            }
        };
        // The caller stopped waiting before its turn came: don't run it at all.
        if job.reply.is_closed() {
            continue;
        }
        watch.begin_job(job.id);
        let answer = answer(&path, &config, &watch, &mut connection, job.request);
        if job.reply.send(answer).is_err() {
            tracing::debug!(path = %path.display(), "agent database call finished after its caller left");
        }
    }
}

fn answer(
    path: &Path,
    config: &AgentDbConfig,
    watch: &Arc<Watch>,
    connection: &mut Option<GuardedConnection>,
    request: Request,
) -> Result<Answer, AgentDbError> {
    let needs_file = matches!(request, Request::Sql { .. });
    if connection.is_none() && !needs_file && !path.exists() {
        return Ok(match request {
            Request::Summary => Answer::Text(String::new()),
            Request::Query { .. } => Answer::Json(json!({ "columns": [], "rows": [], "row_count": 0 })),
            _ => Answer::Json(json!({ "tables": [] })),
        });
    }
    let connection = match connection {
        Some(connection) => connection,
        // A failed open is reported to this call and tried again on the next.
        None => connection.insert(GuardedConnection::open_with(path, config, Arc::clone(watch), true)?),
    };
    match request {
        Request::Sql { sql, params } => connection.sql(&sql, &params).map(Answer::Json),
        Request::Query { sql } => connection.query(&sql).map(Answer::Json),
        Request::Schema => connection.schema().map(Answer::Json),
        Request::Summary => connection.summary().map(Answer::Text),
    }
}
