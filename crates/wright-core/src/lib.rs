//! The shared vocabulary of Wright: the names every other crate speaks in.
//!
//! This crate does no IO and depends on nothing of ours. It holds:
//! - [`AgentId`]: a validated agent name, safe to use as a path component;
//! - [`Author`] and [`DocumentKind`]: who wrote a version, and which document it belongs to;
//! - [`Event`], [`EventBody`], [`Notice`] and [`ConversationStatus`]: the provider-neutral
//!   conversation protocol (DESIGN.md §3), one closed set written and read everywhere;
//! - [`ToolSpec`] and [`ToolCall`]: what a model is told about a tool, and what it asks for.
//!
//! Invariants: an [`AgentId`] can only be built through [`AgentId::parse`], so code that
//! turns one into a file path (`data/agents/<agent>/…`) never sees `..`, `/` or an empty name.
//! An event body has one serde form: tagged by `kind`, stored as the same object without the
//! tag; a stored row that does not fit is an error, never a default.
//! The OpenAPI schemas of these types are derived here, so the canvas's types are generated
//! from the same definitions.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one error of this crate: a value that does not meet its rules.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CoreError {
    #[error("invalid agent id {0:?}: use 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit")]
    InvalidAgentId(String),
    #[error("unknown {what} {value:?}")]
    Unknown { what: &'static str, value: String },
    #[error("invalid event: {0}")]
    InvalidEvent(String),
}

/// The name of an agent: 1–64 of `[a-z0-9_-]`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct AgentId(String);

impl AgentId {
    /// The agent that exists on every installation from its first start.
    pub const DEFAULT: &'static str = "default";

    pub fn parse(raw: &str) -> Result<Self, CoreError> {
        let valid_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        let first_ok = raw.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if first_ok && raw.len() <= 64 && raw.chars().all(valid_char) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(CoreError::InvalidAgentId(raw.to_owned()))
        }
    }

    pub fn default_agent() -> Self {
        Self(Self::DEFAULT.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        AgentId::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// Declares a string-backed enum with `as_str`, `parse` and serde in snake_case, so the
/// spelling stored in the database and sent over the API is written exactly once.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[derive(utoipa::ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(raw: &str) -> Result<Self, CoreError> {
                match raw {
                    $($text => Ok($name::$variant),)+
                    _ => Err(CoreError::Unknown { what: $what, value: raw.to_owned() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// Who wrote a version of a document, tool or component.
    Author, "author" {
        Agent => "agent",
        Admin => "admin",
        Rollback => "rollback",
        Install => "install",
    }
);

string_enum!(
    /// The versioned text documents every agent has.
    DocumentKind, "document" {
        SystemPrompt => "system_prompt",
        LearnedNotes => "learned_notes",
    }
);

string_enum!(
    /// The kind of a canonical conversation event (DESIGN.md §3).
    EventKind, "event kind" {
        User => "user",
        Assistant => "assistant",
        ToolCall => "tool_call",
        ToolResult => "tool_result",
        Notice => "notice",
    }
);

string_enum!(
    /// Where a tool comes from: built into Wright, written by an agent, or offered by one of
    /// the operator's MCP servers (`mcp__<server>__<tool>`).
    ToolKind, "tool kind" {
        Builtin => "builtin",
        Agent => "agent",
        Mcp => "mcp",
    }
);

/// One event of a conversation in provider-neutral form. `content` is the line a person
/// reads; `body` is what the event is, typed, and all that is needed to rebuild a provider
/// request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: i64,
    pub content: String,
    /// Flattened: an event reads `{seq, content, kind, …the body's fields}`.
    #[serde(flatten)]
    pub body: EventBody,
}

impl Event {
    pub fn kind(&self) -> EventKind {
        self.body.kind()
    }

    /// An event from its stored columns (see [`EventBody::from_stored`]).
    pub fn from_stored(seq: i64, kind: EventKind, content: String, data_json: Value) -> Result<Self, CoreError> {
        Ok(Self { seq, content, body: EventBody::from_stored(kind, data_json)? })
    }
}

/// An event about to be stored: its line for a person and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub content: String,
    pub body: EventBody,
}

impl NewEvent {
    pub fn new(content: impl Into<String>, body: EventBody) -> Self {
        Self { content: content.into(), body }
    }

    /// A notice, whose line for a person is its own sentence.
    pub fn notice(notice: Notice) -> Self {
        Self { content: notice.sentence(), body: EventBody::Notice(notice) }
    }
}

/// What an event is: the one closed set every writer and reader of a conversation uses. Its
/// serde form is tagged by `kind` (the stored `kind` column); the stored `data_json` is the
/// same object without the tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventBody {
    /// A message of the person — or of a component in the canvas speaking for them, which
    /// `component` names (the model is told so; the canvas shows it as the component's).
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        component: Option<String>,
    },
    /// The model's text of one turn.
    Assistant {
        text: String,
        /// Whatever the provider needs sent back with the message (e.g. thinking blocks).
        #[serde(default)]
        provider: Value,
    },
    /// A tool call of the model, with its arguments whole (or the raw text the model sent,
    /// as a string, when it was not JSON).
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
        #[serde(default)]
        provider: Value,
    },
    /// The one result of a tool call.
    ToolResult { tool_call_id: String, name: String, output: Value, success: bool },
    /// Something that happened to the conversation; never sent to a model.
    Notice(Notice),
}

impl EventBody {
    pub fn kind(&self) -> EventKind {
        match self {
            EventBody::User { .. } => EventKind::User,
            EventBody::Assistant { .. } => EventKind::Assistant,
            EventBody::ToolCall { .. } => EventKind::ToolCall,
            EventBody::ToolResult { .. } => EventKind::ToolResult,
            EventBody::Notice(_) => EventKind::Notice,
        }
    }

    /// The stored `data_json`: this body without its `kind` tag.
    pub fn to_data_json(&self) -> Value {
        let mut value = serde_json::to_value(self).expect("an event body always serializes");
        if let Value::Object(map) = &mut value {
            map.remove("kind");
        }
        value
    }

    /// Reads a stored row back: its `kind` column and `data_json`.
    pub fn from_stored(kind: EventKind, data_json: Value) -> Result<Self, CoreError> {
        let Value::Object(mut map) = data_json else {
            return Err(CoreError::InvalidEvent(format!("{kind} data is not a JSON object")));
        };
        map.insert("kind".to_owned(), Value::String(kind.as_str().to_owned()));
        serde_json::from_value(Value::Object(map)).map_err(|error| CoreError::InvalidEvent(format!("{kind}: {error}")))
    }

    /// The result that closes a call which will never run to its end: it names the reason,
    /// so the model knows the call did not happen (or did not finish) and why.
    pub fn unfinished_result(call_id: &str, name: &str, reason: Unfinished) -> Self {
        EventBody::ToolResult {
            tool_call_id: call_id.to_owned(),
            name: name.to_owned(),
            output: serde_json::json!({ "error": reason.message(), "category": reason.as_str() }),
            success: false,
        }
    }
}

string_enum!(
    /// Why a tool call got a result without finishing.
    Unfinished, "unfinished reason" {
        Cancelled => "cancelled",
        Interrupted => "interrupted",
        Failed => "failed",
    }
);

impl Unfinished {
    pub fn message(self) -> &'static str {
        match self {
            Unfinished::Cancelled => {
                "the person cancelled the run before this call finished; it may not have taken effect"
            }
            Unfinished::Interrupted => "the server stopped before this call finished; it may not have taken effect",
            Unfinished::Failed => "the run failed before this call finished; it may not have taken effect",
        }
    }
}

/// What happened to a conversation, shown to the person and never sent to a model (except
/// a compaction's summary, which goes into the system message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Notice {
    /// The person cancelled the run.
    Cancelled,
    /// The process running it stopped (a crash, a kill, a restart).
    Interrupted,
    /// `max_tool_turns` was reached; the last answer was given without tools.
    TurnLimit {
        #[serde(default)]
        max_tool_turns: usize,
    },
    /// Older turns were summarised; later requests send the summary and the events after
    /// `through_seq`.
    Compaction { summary: String, through_seq: i64 },
    /// The run failed in a way the model could not be told about.
    Error { message: String },
}

impl Notice {
    /// The line a person reads.
    pub fn sentence(&self) -> String {
        match self {
            Notice::Cancelled => "Cancelled.".to_owned(),
            Notice::Interrupted => {
                "The previous run was interrupted when the server stopped. Send a message to continue.".to_owned()
            }
            Notice::TurnLimit { max_tool_turns } => format!(
                "Stopped after {max_tool_turns} tool turns (max_tool_turns); the answer above was given without tools."
            ),
            Notice::Compaction { .. } => {
                "Earlier turns were summarised to keep the conversation within the model's context.".to_owned()
            }
            Notice::Error { message } => message.clone(),
        }
    }
}

string_enum!(
    /// Where a conversation's run stands.
    ConversationStatus, "conversation status" {
        Idle => "idle",
        Running => "running",
        Waiting => "waiting",
        Error => "error",
    }
);

/// What a model is told about one tool: its name, a description written for a model, and
/// the JSON Schema of its arguments; and what Wright knows of it besides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// The call waits for the person (ask_user, render_blocks, render_and_wait): the run
    /// parks and the person's answer becomes its result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pauses: bool,
}

/// A model's request to run one tool, with its arguments whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

#[cfg(test)]
mod tests;
