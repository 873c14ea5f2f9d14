//! The two ports the loop talks through besides the tools port ([`wright_core::ToolPort`]):
//! the [`Model`] and the [`Transcript`], with what travels through them.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_core::{ApprovedCall, Event, NewEvent, PendingKind, ToolSpec};

use crate::context::SystemParts;

/// What one model turn is asked.
pub struct ModelRequest<'a> {
    pub system: String,
    /// Conversation events in order: user, assistant, tool_call and tool_result only.
    pub history: &'a [Event],
    /// Empty when tools are disabled for this turn.
    pub tools: Arc<[ToolSpec]>,
    /// Overrides the configured sampling temperature for this turn: a turn asked again after
    /// a repeated failing call samples wider ([`RESAMPLE_TEMPERATURE`]).
    pub temperature: Option<f32>,
    /// The most tokens the reply may take; `None` leaves the provider's configured limit.
    pub max_output_tokens: Option<u32>,
    /// The reply must call one of `tools` (see [`LoopConfig::require_first_call`]).
    pub require_tool_call: bool,
    /// Said after the history and never stored: the current time and what the policy adds
    /// for this turn. Everything before it (system, tools, history) only grows from one turn
    /// to the next, so a server's prompt cache holds; this changes and comes last. Empty:
    /// nothing to add. Sent with the person's last message when the history ends with it,
    /// else as a message of its own (see [`ProviderModel`](crate::ProviderModel)).
    pub tail: String,
}

/// A tool call as the model made it. Arguments that were not valid JSON keep their raw text,
/// so the model can be told what it sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Result<Value, String>,
    /// Whatever the provider needs sent back with this call (e.g. a thought signature).
    pub data: Value,
}

/// The whole of one model turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReply {
    pub text: String,
    pub tool_calls: Vec<ModelToolCall>,
    /// Whatever the provider needs sent back with the assistant message (e.g. thinking blocks).
    pub data: Value,
}

/// Why a model turn failed after the provider's own retries.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("{kind}: {message}")]
    Failed { kind: String, message: String },
    #[error("cancelled")]
    Cancelled,
    /// The request was not sent: a usage budget or the run's token limit would be passed. The
    /// message names the limit and how to raise it; the run ends with it.
    #[error("{0}")]
    NotSent(String),
}

/// The model, as the loop sees it: one turn, with text streamed to `on_text` as it arrives.
pub trait Model: Send + Sync {
    fn reply<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;

    /// The context window in tokens, when the model's server says it.
    fn context_window(&self) -> BoxFuture<'_, Option<usize>> {
        Box::pin(async { None })
    }

    /// What the model's server says of itself (for choosing the model's profile).
    fn server_facts(&self) -> BoxFuture<'_, wright_llm::ServerFacts> {
        Box::pin(async { wright_llm::ServerFacts::default() })
    }
}

/// The conversation, as the loop sees it; the server implements it over the store and the
/// live stream. Errors are messages: the loop can only report them.
pub trait Transcript: Send + Sync {
    /// The prompt, notes, state keys and database summary, read fresh.
    fn system_parts(&self) -> BoxFuture<'_, Result<SystemParts, String>>;
    /// Every stored event, in order.
    fn events(&self) -> BoxFuture<'_, Result<Vec<Event>, String>>;
    /// When each of the person's messages was sent, as they read it, by the event's `seq`
    /// (`Friday 2026-11-27 16:04, time zone Europe/Berlin (UTC+01:00)`). Each message is sent
    /// to the model with its own time: the model knows the date and time, and a message's text
    /// as sent never changes, so a server's prompt cache holds across runs. None by default.
    fn sent_at(&self) -> BoxFuture<'_, Result<std::collections::BTreeMap<i64, String>, String>> {
        Box::pin(async { Ok(std::collections::BTreeMap::new()) })
    }
    /// The instructions (SKILL.md's body) of one of the agent's enabled skills, for the host to
    /// load into a run's system message; `None` when there is no such skill. None by default.
    fn skill_body<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async { Ok(None) })
    }
    /// Stores events in order and returns them numbered.
    fn append(&self, events: Vec<NewEvent>) -> BoxFuture<'_, Result<Vec<Event>, String>>;
    /// Records a call that waits for the person, with what the canvas will render for it.
    fn park<'a>(&'a self, call: &'a ParkedCall) -> BoxFuture<'a, Result<(), String>>;
    /// Calls the person approved that have not run yet (their results are not stored).
    fn approved_calls(&self) -> BoxFuture<'_, Result<Vec<ApprovedCall>, String>>;
    /// Ends the run: stores `closing` and the status `outcome` leaves, together. When the
    /// outcome is [`RunOutcome::Cancelled`] or [`RunOutcome::Failed`], every call still
    /// without a result gets one that says so in the same write. A run that parks when every
    /// call it parked was already answered gets [`Finish::Continue`] and goes on.
    fn finish(&self, outcome: &RunOutcome, closing: Vec<NewEvent>) -> BoxFuture<'_, Result<Finish, String>>;
    /// Assistant text as it streams (not stored; the assistant event is).
    fn text_delta(&self, text: &str);
}

/// A call that waits for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// An answer to give, or an approval to run it.
    pub kind: PendingKind,
    pub arguments: Value,
    /// render_and_wait's compiled component (name, version, compiled_js); null otherwise.
    pub render: Value,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The model answered without calling tools.
    Completed,
    /// A pausing tool waits for the person.
    Parked,
    /// `max_tool_turns` was reached; the model gave a final answer without tools.
    TurnLimit,
    Cancelled,
    /// The model failed in a way its retries did not cure; the message is stored as a notice.
    Failed {
        message: String,
    },
}

/// What ending a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Ended,
    /// Every parked call was answered while the turn ran: the run keeps the conversation and
    /// goes on from the stored events.
    Continue,
}
