//! The shared vocabulary of Wright: the names every other crate speaks in.
//!
//! This crate does no IO and depends on nothing of ours. It holds:
//! - [`AgentId`]: a validated agent name, safe to use as a path component;
//! - [`Author`] and [`DocumentKind`]: who wrote a version, and which document it belongs to;
//! - [`Event`] and [`EventKind`]: the provider-neutral conversation (DESIGN.md §3);
//! - [`ToolSpec`] and [`ToolCall`]: what a model is told about a tool, and what it asks for.
//!
//! Invariant: an [`AgentId`] can only be built through [`AgentId::parse`], so code that
//! turns one into a file path (`data/agents/<agent>/…`) never sees `..`, `/` or an empty name.

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
        System => "system",
        User => "user",
        Assistant => "assistant",
        ToolCall => "tool_call",
        ToolResult => "tool_result",
        Notice => "notice",
    }
);

string_enum!(
    /// Where a tool comes from: built into Wright, or written by an agent.
    ToolKind, "tool kind" {
        Builtin => "builtin",
        Agent => "agent",
    }
);

/// One event of a conversation in provider-neutral form. `content` is the line a person
/// reads; `data_json` is what is needed to rebuild a provider request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: i64,
    pub kind: EventKind,
    pub content: String,
    pub data_json: Value,
}

/// What a model is told about one tool: its name, a description written for a model, and
/// the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
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
