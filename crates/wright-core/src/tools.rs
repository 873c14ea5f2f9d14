//! The contract between the agent loop and the tools: the [`ToolPort`] the loop calls, the
//! [`Invocation`] it sends, and what comes back — a value, or a [`ToolFailure`] with its
//! [`ErrorCategory`] — turned into the [`ToolOutcome`] the model reads.
//!
//! The port lives here, below both sides, so that `wright-agent` depends on no tool
//! implementation (no sandbox, browser or egress) and `wright-tools` implements it without
//! knowing the loop. Every producer of an error category (the registry, the loop's own
//! refusals, the sandbox's failure kinds, a run that ends under a call) speaks this one enum,
//! and the canvas reads it from the OpenAPI document.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{AgentId, CoreError, DecidedBy, ToolPolicy, ToolSpec};

/// A boxed future that may be sent between threads: what the port's methods return, so the
/// trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

string_enum!(
    /// Why a tool call failed, for every family of tools: the call itself (`unknown_tool`,
    /// `invalid_arguments`), the host's policy (`denied`, `withheld`), what the tool found
    /// (`not_found`, `rejected`, `limit`, `rate_limited`, `not_configured`), the sandbox's own
    /// kinds (`syntax`, `runtime`, `timeout`, `memory`, `output_too_large`), the egress and MCP
    /// servers (`network`), and a run that ended under a call (`cancelled`, `interrupted`,
    /// `failed`, `dismissed`). Stored with every failed execution and shown in the admin.
    ErrorCategory, "error category" {
        UnknownTool => "unknown_tool",
        InvalidArguments => "invalid_arguments",
        Denied => "denied",
        Withheld => "withheld",
        NotFound => "not_found",
        Rejected => "rejected",
        Limit => "limit",
        RateLimited => "rate_limited",
        NotConfigured => "not_configured",
        Syntax => "syntax",
        Runtime => "runtime",
        Timeout => "timeout",
        Memory => "memory",
        OutputTooLarge => "output_too_large",
        Network => "network",
        Cancelled => "cancelled",
        Interrupted => "interrupted",
        Failed => "failed",
        Dismissed => "dismissed",
        Internal => "internal",
    }
);

string_enum!(
    /// Who made a tool call, as the execution log records it: the agent's model in a run,
    /// the operator's command line, the HTTP API, or an MCP client of Wright's own server.
    Caller, "caller" {
        Agent => "agent",
        Cli => "cli",
        Api => "api",
        Mcp => "mcp",
    }
);

/// One call to make: which agent, which tool, with what, on whose behalf.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub agent: AgentId,
    pub name: String,
    pub args: Value,
    pub caller: Caller,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    /// Who let the call run, when a policy applies (the agent's loop); None for the operator.
    pub decided_by: Option<DecidedBy>,
}

/// A call that did not succeed, as the model will read it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub category: ErrorCategory,
    pub message: String,
    /// The tool's own shape of the failure where it has one (the sandbox's `{error, kind,
    /// logs}`); `None` gives the common `{error, category}`.
    pub output: Option<Value>,
}

impl ToolFailure {
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        Self { category, message: message.into(), output: None }
    }

    /// What the model reads for this failure.
    pub fn to_output(&self) -> Value {
        self.output
            .clone()
            .unwrap_or_else(|| serde_json::json!({ "error": self.message, "category": self.category.as_str() }))
    }
}

/// Something the host adds to a result for the model besides what the tool returned: each
/// kind has one field name in the result, written in one place ([`ToolOutcome::into_output`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    /// What to do next (`note`).
    Note(String),
    /// The tool's parameters, for a call that did not match them (`parameters`).
    Parameters(Value),
    /// Every tool the agent has, by name (`available`).
    Available(Vec<String>),
    /// Tools that fit the person's request, with their descriptions (`for_the_request`).
    ForTheRequest(Value),
    /// The model named a tool that does not exist and this one ran (`name_note`).
    NameNote(String),
    /// The person changed the arguments before approving the call (`arguments_edited_by_person`).
    ArgumentsEditedByPerson(Value),
    /// How a learned error→fix item says the same error was fixed in an earlier run (`learned_fix`).
    LearnedFix(String),
}

impl Hint {
    fn field(&self) -> (&'static str, Value) {
        match self {
            Hint::Note(text) => ("note", Value::String(text.clone())),
            Hint::Parameters(parameters) => ("parameters", parameters.clone()),
            Hint::Available(names) => ("available", serde_json::json!(names)),
            Hint::ForTheRequest(tools) => ("for_the_request", tools.clone()),
            Hint::NameNote(text) => ("name_note", Value::String(text.clone())),
            Hint::ArgumentsEditedByPerson(arguments) => ("arguments_edited_by_person", arguments.clone()),
            Hint::LearnedFix(text) => ("learned_fix", Value::String(text.clone())),
        }
    }
}

/// The result of one call as the loop handles it: what the tool returned (or its failure's
/// output), whether it succeeded, why not, and the host's hints.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub output: Value,
    pub success: bool,
    pub category: Option<ErrorCategory>,
    pub hints: Vec<Hint>,
}

impl ToolOutcome {
    pub fn success(output: Value) -> Self {
        Self { output, success: true, category: None, hints: Vec::new() }
    }

    pub fn failure(failure: &ToolFailure) -> Self {
        Self { output: failure.to_output(), success: false, category: Some(failure.category), hints: Vec::new() }
    }

    /// A result that is not the tool's own (an earlier result repeated): kept as given.
    pub fn answered(output: Value, success: bool) -> Self {
        Self { output, success, category: None, hints: Vec::new() }
    }

    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hints.push(hint);
        self
    }

    /// The output the model reads and the transcript stores: the tool's output with each hint
    /// as a field (a value that is not an object is wrapped as `{"result": …}` first).
    pub fn into_output(self) -> Value {
        if self.hints.is_empty() {
            return self.output;
        }
        let mut fields = match self.output {
            Value::Object(fields) => fields,
            other => {
                let mut fields = serde_json::Map::new();
                fields.insert("result".to_owned(), other);
                fields
            }
        };
        for hint in &self.hints {
            let (name, value) = hint.field();
            fields.insert(name.to_owned(), value);
        }
        Value::Object(fields)
    }
}

/// Tools, as the agent loop sees them: list, describe, check and run. `wright-tools`
/// implements it over the registry; the loop's tests implement it with a few scripted tools.
pub trait ToolPort: Send + Sync {
    /// Every tool `agent` can call now, in a stable order (built-ins, then its own, then MCP).
    fn specs<'a>(&'a self, agent: &'a AgentId) -> BoxFuture<'a, Result<Arc<[ToolSpec]>, ToolFailure>>;
    /// The policy for `agent`'s call of `name` with `args`: its own setting for the tool, else
    /// the tool's default for this call (a write into the agent's own workspace runs, one into
    /// an operator's root asks).
    fn policy<'a>(
        &'a self,
        agent: &'a AgentId,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<ToolPolicy, ToolFailure>>;
    /// Checks arguments against a built-in's schema without running it.
    fn validate(&self, name: &str, args: &Value) -> Result<(), ToolFailure>;
    /// Checks a pausing call and returns what the canvas will render for it (null when the
    /// arguments are all it needs).
    fn prepare_pause<'a>(
        &'a self,
        agent: &'a AgentId,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>>;
    /// Validates, runs and records one call; stopped when `cancel` fires.
    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>>;
    /// Records a call the host refused before it ran, so the execution log shows the decision.
    fn record_refusal(&self, invocation: Invocation, reason: String) -> BoxFuture<'_, ()>;
}

/// How many names [`closest_names`] suggests.
pub const CLOSEST_NAMES: usize = 3;

/// The [`CLOSEST_NAMES`] names of `names` nearest to `wanted`, best first: by edit distance
/// between the names, with a name that contains the other (or shares a word with it) counted
/// nearer — `save_note` should suggest `update_learned_notes`, not `save_tool`.
pub fn closest_names<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let wanted_words: Vec<&str> = wanted.split(['_', '-', '.', ' ']).filter(|word| word.len() > 2).collect();
    let mut scored: Vec<(usize, &str)> = names
        .map(|name| {
            let lower = name.to_lowercase();
            let mut score = edit_distance(&wanted, &lower) * 2;
            if lower.contains(&wanted) || wanted.contains(&lower) {
                score /= 4;
            }
            let shared = wanted_words
                .iter()
                .filter(|word| lower.split('_').any(|part| part.starts_with(&word[..word.len().min(4)])))
                .count();
            score = score.saturating_sub(shared * 6);
            (score, name)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(CLOSEST_NAMES).map(|(_, name)| name.to_owned()).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    for (row, left_char) in left.chars().enumerate() {
        let mut current = vec![row + 1];
        for (column, right_char) in right.iter().enumerate() {
            let substitution = previous[column] + usize::from(left_char != *right_char);
            current.push(substitution.min(previous[column + 1] + 1).min(current[column] + 1));
        }
        previous = current;
    }
    previous[right.len()]
}

string_enum!(
    /// The person's decision on a call its policy asks about: run it once, refuse it, or run
    /// it and allow the tool from now on.
    ApprovalDecision, "approval decision" {
        Approve => "approve",
        Deny => "deny",
        Always => "always",
    }
);

/// The answer to a call that waits for approval: `{"decision", "arguments"?}`, the arguments
/// being the person's edit of the call's (an object), when they changed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub decision: ApprovalDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, Value>>,
}

string_enum!(
    /// How a call of a pausing tool is shown to the person while it waits: a question (its
    /// options as buttons), a form of blocks, or a component. A property of the tool's spec.
    Presentation, "presentation" {
        Question => "question",
        Form => "form",
        Component => "component",
    }
);

/// A waiting call as every channel shows it — the canvas, Telegram, the terminal — built in
/// one place ([`Shown::of`]) from the call and its tool's [`Presentation`], so no channel
/// decides by the tool's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Shown {
    /// Answered with `{answer}`: a choice of `options`, or words when there are none.
    Question { question: String, options: Vec<String> },
    /// Blocks to show (a form among them is filled in): answered `{action: "submit", data}` or
    /// `{action: "dismissed"}`.
    Form {
        title: Option<String>,
        #[schema(value_type = Vec<Object>)]
        blocks: Vec<Value>,
    },
    /// A component, fixed when the call was made: answered with what it passes to `callTool`.
    Component {
        /// The stored component's name; null for inline code.
        name: Option<String>,
        version: Option<i64>,
        title: Option<String>,
        #[schema(value_type = Object)]
        props: Value,
    },
    /// A call its policy asks about: answered with an [`ApprovalAnswer`].
    Approval {
        tool: String,
        #[schema(value_type = Object)]
        arguments: Value,
        /// Why the host asks although the tool's policy would let it run (e.g. "this run read
        /// content from example.com"); null when the tool's policy is to ask.
        reason: Option<String>,
    },
}

impl Shown {
    /// How the call of `tool` with `args` is shown: an approval when its policy asked, else
    /// as its tool's presentation says. `render` is what was prepared when the call parked (a
    /// component's name and version). `None` for a question call of a tool that does not pause.
    pub fn of(
        kind: crate::PendingKind,
        presentation: Option<Presentation>,
        tool: &str,
        args: &Value,
        render: &Value,
    ) -> Option<Self> {
        if kind == crate::PendingKind::Approval {
            let reason = render["reason"].as_str().map(str::to_owned);
            return Some(Shown::Approval { tool: tool.to_owned(), arguments: args.clone(), reason });
        }
        let text = |value: &Value| value.as_str().map(str::to_owned);
        Some(match presentation? {
            Presentation::Question => Shown::Question {
                question: text(&args["question"]).unwrap_or_default(),
                options: args["options"].as_array().into_iter().flatten().filter_map(text).collect(),
            },
            Presentation::Form => Shown::Form {
                title: text(&args["title"]),
                blocks: args["blocks"].as_array().cloned().unwrap_or_default(),
            },
            Presentation::Component => Shown::Component {
                name: text(&render["name"]),
                version: render["version"].as_i64(),
                title: text(&args["title"]),
                props: args.get("props").cloned().unwrap_or(Value::Object(serde_json::Map::new())),
            },
        })
    }
}
