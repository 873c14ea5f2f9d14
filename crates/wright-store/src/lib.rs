//! The app database: every table of the installation and all of the SQL that touches it.
//!
//! One SQLite file (`data/wright.db`) opened through sqlx in WAL mode with foreign keys on.
//! Migrations from the repository's `migrations/` folder are embedded in the binary and
//! applied by [`Store::open`], which also makes sure the `default` agent exists.
//!
//! What lives here: agents ([`Agent`]), the versioned documents of each agent (system prompt
//! and learned notes, [`documents`]), the agent's key-value state ([`state`]) and the record
//! of every tool call ([`executions`]), layered memory ([`memory`]), schedules
//! ([`schedules`]), notifications ([`notifications`]) and what channels keep ([`channels`]),
//! skills in the Agent Skills layout, versioned like documents ([`skills`]),
//! learning from experience (run outcomes, cases, learned items, rounds: [`learning`]),
//! provider connections and the model each agent talks
//! to ([`StoredConnection`], [`ModelChoice`]; keys are kept outside the database).
//!
//! Invariants:
//! - Document history is append-only. Every successful edit writes one new version row; a
//!   rollback writes a new row whose content equals the old one. Triggers in the schema refuse
//!   UPDATE and DELETE on `document_versions`.
//! - Writes go through one connection and start with `BEGIN IMMEDIATE`, so read-modify-write
//!   edits never lose an update, in this process or against another process (the CLI) that
//!   opens the same file.
//! - Every stored text has a cap ([`TextLimits`]) checked before the work that would build it;
//!   diffs are bounded in input and time and never run on the async threads ([`limits`]).
//! - The agent's own database is not here and cannot be reached from here (wright-agentdb).

mod agent_tools;
mod agents;
mod catalog;
pub mod channels;
mod components;
mod conversation_changes;
pub mod conversation_sessions;
pub mod conversations;
pub mod documents;
pub mod executions;
pub mod learning;
pub mod limits;
mod market;
pub mod memory;
mod migrations;
pub mod notifications;
mod providers;
pub mod push;
pub mod schedules;
mod sessions;
pub mod skills;
pub mod state;
pub mod telegram_outbox;
pub mod usage;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

pub use agent_tools::{AgentTool, ToolContent, ToolPatch, ToolVersion};
pub use agents::Agent;
pub use channels::{ChannelChat, ChannelKind};
pub use components::{ComponentContent, ComponentPatch, ComponentVersion, UiComponent};
pub use conversation_sessions::{AutoDivide, Session, SessionConfig, SessionSchedule, SessionStarter};
pub use conversations::{
    AnswerResult, Answered, Claim, ClaimedRun, Conversation, Finished, Lease, PendingCall, RunEnd, StoredEvent,
    tool_result_event,
};
pub use documents::{Document, DocumentEdit, DocumentVersion, VersionMeta, VersionSummary};
pub use executions::{ExecutionFilter, ExecutionRecord, ExecutionStats, StoredExecution};
pub use learning::{
    Case, ItemChange, LearnedItem, LearningSettings, NewRunOutcome, Replay, Round, RoundCandidate, RunOutcomeRecord,
    RunRef,
};
pub use limits::TextLimits;
pub use market::{Listing, ListingPage, ListingStats, ListingVersion, PublishSource};
pub use memory::{
    ArchivedReason, Memory, MemoryActor, MemoryChange, MemoryConfig, MemoryEmbeddingsConfig, MemoryFilter, MemoryPatch,
    MemoryVector, NewMemory, QueuedMemory, VectorBits, WordMatches,
};
pub use notifications::{NewNotification, Notification, NotificationSource, NotifyConfig, TelegramDelivery};
pub use providers::{ChoiceTarget, ConnectionFields, ModelChoice, StoredConnection};
pub use push::{NewPushSubscription, PushSubscription};
pub use schedules::{
    Due, Firing, FiringPlan, RunOutcome, Schedule, ScheduleAuthor, ScheduleRow, ScheduleRun, ScheduleStatus,
};
pub use skills::{Skill, SkillChange, SkillResources, SkillSummary, SkillVersion};
pub use state::StateLimits;
pub use telegram_outbox::OutboxItem;
pub use usage::{
    BudgetLimit, BudgetMeasure, BudgetPeriod, BudgetScope, BudgetSettings, BudgetStanding, ConversationUsage,
    LeaseAnswer, LeaseHeld, LimitOutside, ModelPrice, Reserved, UsageAmount, UsageGrouping, UsageRecord,
    UsageReservation, UsageRow, UsageTotals,
};

/// The one error of the app store. Variants are what a caller can act on; `Database` is the
/// rest (a bug, a full disk, a corrupt file) and is never shown in detail to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("agent {0:?} does not exist")]
    AgentNotFound(String),
    #[error("agent {0:?} already exists")]
    AgentExists(String),
    #[error("no {kind} named {name:?}")]
    ItemNotFound { kind: &'static str, name: String },
    #[error("a {kind} named {name:?} already exists")]
    ItemExists { kind: &'static str, name: String },
    #[error("conversation {0:?} does not exist")]
    ConversationNotFound(String),
    #[error("no pending call {0:?} in this conversation")]
    PendingNotFound(String),
    #[error("the pending call {0:?} was already answered")]
    AlreadyAnswered(String),
    /// The run of this conversation is not held by the caller (its lease ran out and another
    /// process recovered it).
    #[error("this process no longer owns the run of conversation {0:?}")]
    RunNotOwned(String),
    #[error("{kind} version {version} does not exist")]
    VersionNotFound { kind: &'static str, version: i64 },
    /// An edit that cannot apply: the text to find is absent, or a required field is missing.
    #[error("{0}")]
    InvalidEdit(String),
    /// A configured limit would be exceeded; the message names the limit and its value.
    #[error("{0}")]
    LimitExceeded(String),
    /// Too many in a window (the agent's notifications per hour); the next may go after
    /// `retry_after_secs`.
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: i64 },
    /// A side of a diff is over the diff caps; the message names them.
    #[error("too large to diff: {0}")]
    TooLargeToDiff(String),
    /// The diff's blocking task panicked or could not start: a bug, never the input's fault.
    #[error("the diff failed: {0}")]
    DiffFailed(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
}

/// A handle on the app database; cheap to clone (the pools are shared).
#[derive(Clone, Debug)]
pub struct Store {
    /// Many readers: WAL lets them run beside the writer.
    reader: SqlitePool,
    /// Exactly one connection: every write in this process queues here, which is what makes
    /// read-modify-write edits (append, find_replace) safe without retry loops.
    writer: SqlitePool,
    state_limits: StateLimits,
    text_limits: TextLimits,
    /// How many diffs may run at once on the blocking pool (see [`limits`]); shared by clones.
    diff_permits: std::sync::Arc<tokio::sync::Semaphore>,
    memory_config: MemoryConfig,
    session_schedule: SessionSchedule,
    /// Where time comes from wherever it decides behaviour (memory expiry, schedules, the
    /// notify limit); fixed in tests.
    clock: Arc<dyn wright_core::Clock>,
    notify_config: NotifyConfig,
    /// Woken when a notification is stored, so the server delivers it at once (shared by
    /// clones; a process that does not listen loses nothing: the rows are the outbox).
    notification_signal: Arc<tokio::sync::Notify>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, applies pending migrations and seeds
    /// the `default` agent on first start.
    pub async fn open(path: &Path, state_limits: StateLimits) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            // Another process (the CLI beside a running server) may hold the write lock for a
            // moment; wait for it rather than fail.
            .busy_timeout(Duration::from_secs(10));
        // No ping before each use: the connections are local files owned by these pools, and a
        // ping is one more round trip on every statement.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await?;
        migrations::run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            // Reads map the file instead of copying each page in with a system call: recall
            // touches a few hundred scattered pages (rows, vectors), and on a busy machine the
            // calls were most of its time.
            .connect_with(options.read_only(true).pragma("mmap_size", "1073741824"))
            .await?;
        let text_limits = TextLimits::default();
        let diff_permits = std::sync::Arc::new(tokio::sync::Semaphore::new(text_limits.max_concurrent_diffs));
        let store = Self {
            reader,
            writer,
            state_limits,
            text_limits,
            diff_permits,
            memory_config: MemoryConfig::default(),
            session_schedule: SessionSchedule::default(),
            clock: Arc::new(wright_core::SystemClock),
            notify_config: NotifyConfig::default(),
            notification_signal: Arc::new(tokio::sync::Notify::new()),
        };
        store.ensure_default_agent().await?;
        Ok(store)
    }

    /// The same store with these memory settings and this clock (a fixed one in tests).
    pub fn with_memory(mut self, memory_config: MemoryConfig, clock: Arc<dyn wright_core::Clock>) -> Self {
        self.memory_config = memory_config;
        self.clock = clock;
        self
    }

    /// The same store dividing sessions on this schedule.
    pub fn with_sessions(mut self, session_schedule: SessionSchedule) -> Self {
        self.session_schedule = session_schedule;
        self
    }

    pub fn clock(&self) -> &Arc<dyn wright_core::Clock> {
        &self.clock
    }

    pub fn state_limits(&self) -> &StateLimits {
        &self.state_limits
    }

    /// Writes a consistent copy of the whole database to `path` (`VACUUM INTO`): the scratch
    /// copy a replay of a case works on (issue 31). `path` must not exist.
    pub async fn copy_database_to(&self, path: &Path) -> Result<(), StoreError> {
        let path = path.to_str().ok_or_else(|| StoreError::InvalidEdit("the copy's path is not UTF-8".into()))?;
        sqlx::query("VACUUM INTO ?").bind(path).execute(&self.writer).await?;
        Ok(())
    }

    /// Closes both pools, waiting for queued writes to finish.
    pub async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }
}

#[cfg(test)]
mod tests;
