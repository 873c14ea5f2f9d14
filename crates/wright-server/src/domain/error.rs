//! The one error of the domain services.

use wright_core::CoreError;
use wright_store::StoreError;

/// Why a domain operation failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// No model is configured or reachable for the agent; the message says how to set one up.
    #[error("{0}")]
    NoModel(String),
    /// The agent is working in this conversation: wait, or cancel the run.
    #[error("the agent is still working in this conversation; wait for it or cancel the run")]
    RunInProgress,
    /// Too many messages from one source in a window.
    #[error("{0}")]
    RateLimited(String),
    /// A request that does not fit what the operation takes (an answer of the wrong shape).
    #[error("{0}")]
    Invalid(String),
    /// A name or id that does not parse.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// What the store said: not found, already answered, a limit, or a database failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A schedule that cannot be made or changed, or a `[schedules]` limit.
    #[error(transparent)]
    Schedule(#[from] wright_schedules::ScheduleError),
    /// Something broke that the caller cannot fix (a stored connection of an unknown kind,
    /// the keys file); logged in full where it is answered.
    #[error("{0}")]
    Internal(String),
}
