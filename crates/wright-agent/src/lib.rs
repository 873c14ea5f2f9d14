//! The agent loop (DESIGN.md §4): assemble the system message, send the history and the tool
//! schemas to the model, stream its text out, run the tool calls it makes, append the results,
//! and repeat until it answers without tools, a pausing tool parks the run, `max_tool_turns`
//! is reached, or the run is cancelled.
//!
//! The loop does no IO of its own. It reaches the model through the [`Model`] port, the tools
//! through the [`ToolPort`](wright_core::ToolPort) (which `wright-tools` implements; this crate
//! depends on no tool), and the conversation through the [`Transcript`] port, which the server
//! implements over the store and the live stream. Every event goes to the transcript as it
//! happens, so a run killed mid-way reloads with everything that was stored.
//!
//! Inside, a run is a driver (`engine`: the run's state and the order of a turn's phases)
//! over a policy (`policy`: each small-model behaviour a named rule, a pure function from a
//! view of the transcript and settings to a decision). A new behaviour is a new rule.
//!
//! Invariants:
//! - A model mistake never ends a run: invalid JSON arguments, an unknown tool, a schema
//!   violation or a tool error become an error result the model reads on its next turn.
//! - Tool calls of one response run in the order given; a result longer than
//!   `max_output_size` is cut with a marker that says how much was cut.
//! - Compaction never deletes events: it stores a summary notice, and later turns send the
//!   summary plus the events after it; it cuts only before a user message.
//! - Every way a run ends goes through [`Transcript::finish`], which stores the closing
//!   events with the status; a cancelled or failed run's open calls get their results there
//!   (the pairing invariant). A running tool is stopped through the run's cancellation token.
//! - Small-model robustness lives here, not in a model's template: a call identical to the last
//!   ones (no other call succeeded since) is answered from the earlier result; calls written as
//!   text in a reply without calls are recovered into real calls; an unknown tool's result
//!   names the closest real tools; the last request at the turn limit says `limit_reached`.
//! - The tool surface follows the agent's [`ToolSettings`](wright_core::ToolSettings): toolsets
//!   switched off are neither offered nor run; with on-demand loading the model sees a
//!   catalogue and [`LOAD_TOOLS`] until it loads what it needs (see `surface`).

mod config;
mod context;
mod dispatch;
mod engine;
mod policy;
mod ports;
pub mod profile;
mod provider_model;
mod surface;

pub use config::{
    CHARS_PER_TOKEN, LoopConfig, RESAMPLE_TEMPERATURE, RUN_TOKENS_PER_WINDOW, UntrustedConfig, limit_reached,
};
pub use context::{ContextMemory, ContextSkill, DEFAULT_MEMORY_CHARS, SystemParts, WorkspaceParts, system_message};
pub use dispatch::cap_output;
pub use engine::{RunContext, run};
pub use policy::{ECHO_NOTE, LearnedText, choose_learned, content_words, error_fix_text, item_tokens, mentions};
pub use ports::{
    Finish, Model, ModelError, ModelReply, ModelRequest, ModelToolCall, ParkedCall, RunOutcome, Transcript,
};
pub use provider_model::ProviderModel;
pub use surface::{LOAD_TOOLS, first_request_tools};

/// The one error of a run that the loop cannot turn into a tool result: the model failed in a
/// way retries did not cure, or the transcript could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("model error: {0}")]
    Model(#[from] ModelError),
    #[error("could not store the conversation: {0}")]
    Transcript(String),
}
