//! [`AgentDbError`]: the one error of this crate. Each variant is something a caller can act on,
//! and each message is written for the model that sent the SQL: it says what happened and what
//! to do instead. After every one of them the database is usable (the failed statement was
//! rolled back by SQLite; nothing else changed).

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentDbError {
    /// The statement ran past its time limit and SQLite stopped it. A write was rolled back
    /// (inside an explicit transaction, the whole transaction was).
    #[error(
        "the statement ran longer than the {:.1} s limit and was stopped (a write was rolled back); \
         add a WHERE or LIMIT, index the columns you filter on, or split the work",
        limit.as_secs_f64()
    )]
    Timeout { limit: Duration },
    /// A write needed more room than the database's size limit allows; reads still work.
    #[error(
        "the agent database is full: its size limit is {limit} bytes ({} MB), so this write was \
         rolled back; delete rows or drop tables you no longer need (reads still work)",
        limit / 1_000_000
    )]
    SizeLimit { limit: u64 },
    /// A string, blob or stored row the statement built would exceed the per-value limit.
    #[error(
        "a string, blob or row would be longer than {limit} bytes, the limit for one value \
         (and for one stored row); store large content in smaller pieces"
    )]
    ValueTooLarge { limit: u64 },
    /// The SQL text is longer than the limit.
    #[error(
        "the SQL text is {length} bytes, over the limit of {limit}; pass data as ? params \
         instead of literals, or split the work into several statements"
    )]
    SqlTooLong { length: usize, limit: usize },
    /// Even the first row of the result is larger than the result's byte limit.
    #[error(
        "one row of the result is larger than {limit} bytes, the limit for a whole result; \
         select fewer or shorter columns (e.g. substr(col, 1, 1000) or length(col))"
    )]
    ResultTooLarge { limit: usize },
    /// The authorizer refused something in the statement (ATTACH, a PRAGMA that changes a
    /// limit, extension loading, …). Nothing ran.
    #[error("{what} is not allowed in the agent database (one file with fixed limits)")]
    Denied { what: String },
    /// The SQL text holds more than one statement. Nothing ran. `first`: the text of the
    /// first statement, quoted back so a model can send it alone (a small model told only
    /// "send them separately" tends to give up).
    #[error("{}", multiple_statements(first.as_deref()))]
    MultipleStatements { first: Option<String> },
    /// A statement that may write where only reading is allowed (a case's check).
    #[error("only a statement that reads is allowed here (SELECT); this one may write")]
    NotReadOnly,
    /// The SQL text holds no statement (empty, or only comments).
    #[error("the SQL text contains no statement")]
    EmptyStatement,
    /// The params do not fit the statement's placeholders, or a value cannot be bound.
    #[error("{message}")]
    Params { message: String },
    /// SQLite refused or failed the statement: syntax, constraint, no such table, a run-time
    /// limit such as expression depth. The message is SQLite's.
    #[error("SQL error: {message}")]
    Sql { message: String },
    /// The caller stopped waiting (its future was dropped) and the statement was stopped.
    #[error("the statement was cancelled")]
    Cancelled,
    /// The database could not be opened or its worker is gone: a problem of the installation,
    /// not of the SQL.
    #[error("the agent database is unavailable: {message}")]
    Unavailable { message: String },
}

/// The message of [`AgentDbError::MultipleStatements`].
fn multiple_statements(first: Option<&str>) -> String {
    let mut message = "only one SQL statement per call is allowed, and nothing ran; send each statement in its own \
                       call, in order (BEGIN and COMMIT work across calls)"
        .to_owned();
    if let Some(first) = first {
        message.push_str(&format!(". Send this one first, alone: {first}"));
    }
    message
}
