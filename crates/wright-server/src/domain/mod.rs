//! The server's domain: what a conversation, a run, a channel, a model and a session are and
//! do, below every way in (the HTTP API, Telegram, the scheduler, the MCP server, the CLI).
//!
//! - [`runs`]: the runs of this process — starting one with a message, answering a waiting
//!   call, cancelling, recovering runs whose process died; the loop's `Transcript`.
//! - [`channel`]: the one path every channel shares (commands, messages, answers, cancel).
//! - [`models`]: which model an agent's run uses, from the configured connections.
//! - [`sessions`]: starting a session by the person.
//! - [`usage`]: the usage ledger, budgets and the loop guard, as a decorator of a run's
//!   provider; [`prices`]: what tokens cost.
//! - [`skills`]: skill folders (Agent Skills layout) imported and exported; [`zip`]: reading a
//!   zipped one.
//! - `outcomes`: how a finished run went, from what it stored (issue 31).
//! - [`hub`]: live updates of conversations and notifications; [`owner`]: this process's
//!   claim on its runs.
//!
//! Every service returns [`DomainError`], whose variants say what a caller can act on; only
//! the API's error mapping (`api/error.rs`) turns one into an HTTP status, and the other
//! callers keep its meaning (Telegram tells a busy conversation from a missing model).
//! Invariant: nothing here imports `api`.

pub mod channel;
mod error;
pub mod hub;
pub mod lease;
pub mod models;
pub(crate) mod outcomes;
pub mod owner;
pub mod prices;
pub mod runs;
pub mod sessions;
pub mod skills;
pub mod usage;
pub mod zip;

pub use error::DomainError;
