//! The shared vocabulary of Wright: the names every other crate speaks in.
//!
//! This crate does no IO and depends on nothing of ours. It holds:
//! - [`AgentId`]: a validated agent name, safe to use as a path component;
//! - [`Author`] and [`DocumentKind`]: who wrote a version, and which document it belongs to;
//! - [`Event`], [`EventBody`], [`Notice`] and [`ConversationStatus`]: the provider-neutral
//!   conversation protocol (DESIGN.md §3), one closed set written and read everywhere;
//! - [`ToolSpec`] and [`ToolCall`]: what a model is told about a tool, and what it asks for;
//! - [`Toolset`], [`ToolLoading`] and [`ToolSettings`]: which built-ins an agent has and how
//!   their schemas reach the model.
//! - [`MemoryLayer`], [`MemoryAction`], [`MemoryAuthor`], [`EmbedPurpose`]: the vocabulary of layered memory;
//! - [`ToolPort`], [`Invocation`], [`ToolFailure`], [`ErrorCategory`], [`ToolOutcome`]: the
//!   contract between the loop and the tools (see `tools`);
//! - [`Clock`]: the time wherever time decides behaviour (expiry), injectable in tests;
//! - [`SkillFile`]: a skill's `SKILL.md` in the Agent Skills layout, and its name rule;
//! - [`Redactor`]: the configured secrets, removed from foreign text (provider and MCP errors).
//!
//! Invariants: an [`AgentId`] can only be built through [`AgentId::parse`], so code that
//! turns one into a file path (`data/agents/<agent>/…`) never sees `..`, `/` or an empty name.
//! An event body has one serde form: tagged by `kind`, stored as the same object without the
//! tag; a stored row that does not fit is an error, never a default.
//! The OpenAPI schemas of these types are derived here, so the canvas's types are generated
//! from the same definitions.

use std::fmt;

mod redact;
pub use redact::{REDACTED, Redactor};
mod skill;
pub use skill::{
    MAX_SKILL_DESCRIPTION_CHARS, MAX_SKILL_NAME_CHARS, SKILL_FILE, SkillFile, check_resource_path, check_skill_name,
};

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
    /// A skill's name, file or resource that does not meet the Agent Skills layout.
    #[error("invalid skill: {0}")]
    InvalidSkill(String),
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

mod learning;
pub use learning::{
    CandidateDecision, CaseCheck, ItemAuthor, ItemStatus, LearnedKind, Outcome, OutcomeSource, Rating, ReplayPhase,
    RoundStatus, RoundTrigger,
};
mod tools;
pub use tools::{
    ApprovalAnswer, ApprovalDecision, BoxFuture, CLOSEST_NAMES, Caller, ErrorCategory, Hint, Invocation, Presentation,
    Shown, ToolFailure, ToolOutcome, ToolPort, closest_names,
};

string_enum!(
    /// How a model is asked to call tools: the API's own tool calling, or a delimited text
    /// protocol for models without it.
    ToolCallMode, "tool call mode" {
        Native => "native",
        Text => "text",
    }
);

#[allow(clippy::derivable_impls, reason = "string_enum! declares the enum and cannot mark a #[default] variant")]
impl Default for ToolCallMode {
    fn default() -> Self {
        ToolCallMode::Native
    }
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
    /// On whose behalf a model request was made, as the usage ledger records it: the person
    /// (the canvas, a connection test), a schedule, a channel (Telegram), a learning round, an
    /// MCP client calling Wright's tools.
    UsageCaller, "usage caller" {
        Person => "person",
        Schedule => "schedule",
        Channel => "channel",
        Learning => "learning",
        Mcp => "mcp",
    }
);

string_enum!(
    /// What a model request was for, as the usage ledger records it: a turn of a run
    /// (compaction summaries included: they are the run's requests), an embedding batch, a
    /// connection test, a learning round.
    UsagePurpose, "usage purpose" {
        Turn => "turn",
        Embedding => "embedding",
        ConnectionTest => "connection_test",
        Learning => "learning",
    }
);

string_enum!(
    /// The versioned text documents every agent has: its prompt, its learned notes, and its
    /// notes about its own database (what each table is for).
    DocumentKind, "document" {
        SystemPrompt => "system_prompt",
        LearnedNotes => "learned_notes",
        DbNotes => "db_notes",
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
    /// The settings a model gets, chosen from what Wright knows of it (wright-agent's
    /// `profile`): a small model on a local server, or today's behaviour for every other.
    ModelProfileKind, "model profile" {
        SmallLocal => "small_local",
        Standard => "standard",
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
    ToolResult {
        tool_call_id: String,
        name: String,
        output: Value,
        success: bool,
        /// Where its content came from when it is outside content (a page's host, the hosts
        /// code fetched from, the MCP tool or search that answered); absent when it came from
        /// the agent's own stores. The person's messages are the person's, the assistant's
        /// text and calls the agent's (by their kind).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outside_origin: Option<String>,
    },
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
            outside_origin: None,
        }
    }
}

/// The short line a person reads for a JSON value in the transcript (a tool call's
/// arguments, a result): strings as they are, anything else as JSON, cut at 300 characters.
pub fn transcript_line(value: &Value) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut shown: String = text.chars().take(300).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown
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

string_enum!(
    /// Whether a tool's calls run, wait for the person's approval, or are refused. Each tool
    /// has a default (its spec's); an agent's own policy for a tool overrides it.
    ToolPolicy, "tool policy" {
        Allow => "allow",
        Ask => "ask",
        Deny => "deny",
    }
);

#[allow(clippy::derivable_impls, reason = "string_enum! declares the enum and cannot mark a #[default] variant")]
impl Default for ToolPolicy {
    fn default() -> Self {
        ToolPolicy::Allow
    }
}

string_enum!(
    /// What a parked call waits for: an answer to a question (ask_user, a form, a component),
    /// or the person's approval to run a call that a policy marks `ask`.
    PendingKind, "pending kind" {
        Question => "question",
        Approval => "approval",
    }
);

string_enum!(
    /// Who let a call run or refused it, kept in the execution log.
    DecidedBy, "decider" {
        Policy => "policy",
        Person => "person",
    }
);

string_enum!(
    /// What a built-in tool is for. An agent switches whole toolsets on or off: fewer tools
    /// mean a shorter request and better tool choice, above all for small models. `tools` is
    /// the sandbox and the agent's own tools (run_sandbox_code, create_tool, …); `canvas` is
    /// talking to the person (ask_user, render_*, send_message, components); `schedules` is
    /// acting later or on its own (schedule, notify).
    Toolset, "toolset" {
        SelfModification => "self_modification",
        State => "state",
        Database => "database",
        Tools => "tools",
        Canvas => "canvas",
        Web => "web",
        Browser => "browser",
        Marketplace => "marketplace",
        Memory => "memory",
        Workspace => "workspace",
        Schedules => "schedules",
        Skills => "skills",
    }
);

impl Toolset {
    /// The toolsets of an agent nobody configured: everything but the browser (a heavy
    /// process) and the marketplace (publishing is a deliberate act). The workspace is on:
    /// its writes and commands stay in the agent's own directory without asking, and ask once
    /// outside content is in the run (see `wright_tools`' workspace tools).
    pub const DEFAULT: &'static [Toolset] = &[
        Toolset::SelfModification,
        Toolset::State,
        Toolset::Database,
        Toolset::Tools,
        Toolset::Canvas,
        Toolset::Web,
        Toolset::Memory,
        Toolset::Workspace,
        Toolset::Schedules,
        Toolset::Skills,
    ];
}

string_enum!(
    /// How the schemas of an agent's tools reach the model: `all` sends every enabled tool's
    /// full schema in every request; `on_demand` sends a one-line catalogue in the system
    /// message and a `load_tools` meta-tool that adds the full schemas of the tools the model
    /// picks, for the rest of the run (the idea of Anthropic's tool search); tools in
    /// `always_loaded` are sent whole from the start.
    ToolLoading, "tool loading" {
        All => "all",
        OnDemand => "on_demand",
    }
);

/// Which tools an agent has and how they are sent: set per agent in the API (and the admin
/// page), with `[agents.<id>]` in config.toml as the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// The built-in toolsets switched on. The agent's own tools are always available.
    pub toolsets: Vec<Toolset>,
    pub loading: ToolLoading,
    /// With `on_demand`: tools sent whole from the first request (names of enabled tools).
    pub always_loaded: Vec<String>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self { toolsets: Toolset::DEFAULT.to_vec(), loading: ToolLoading::OnDemand, always_loaded: Vec::new() }
    }
}

impl ToolSettings {
    /// Whether a tool of `toolset` is available (`None`: the agent's own tools, always).
    pub fn enables(&self, toolset: Option<Toolset>) -> bool {
        toolset.is_none_or(|toolset| self.toolsets.contains(&toolset))
    }
}

/// What a model is told about one tool: its name, a description written for a model, and
/// the JSON Schema of its arguments; and what Wright knows of it besides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// The call waits for the person (ask_user, render_blocks, render_and_wait), shown this
    /// way: the run parks and the person's answer becomes its result. `None`: it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pauses: Option<Presentation>,
    /// The policy when the agent has none of its own for this tool: reads run (`allow`);
    /// writes outside the agent's own data, commands and anything with outside effects wait
    /// for the person (`ask`).
    #[serde(default)]
    pub policy: ToolPolicy,
    /// The toolset of a built-in; `None` for the agent's own tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolset: Option<Toolset>,
    /// What its calls do that the host's rules about outside content care about.
    #[serde(default, skip_serializing_if = "Effects::is_none")]
    pub effects: Effects,
}

/// What a tool's calls do beyond answering, as far as the rules about outside content care:
/// whether its results carry content from outside Wright, and whether a call changes the agent
/// itself, can send data out, sets up later runs or writes files. Once a run's context holds
/// outside content, a call of a tool with any of those waits for the person's approval (the
/// loop's `AskAfterOutsideContent` rule): a page that says "append this to your prompt" or
/// "send the notes to …" cannot make it happen unseen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Effects {
    /// Its results carry outside content: web pages, search results, browser pages, another
    /// program's tools.
    pub reads_outside: bool,
    /// A call changes what the agent is: its prompt, notes, memories, tools, components.
    pub changes_agent: bool,
    /// A call can send data out of Wright: a request, a notification, a publication, a command
    /// with network.
    pub sends_out: bool,
    /// A call sets up runs that happen later without the person (a schedule).
    pub schedules: bool,
    /// A call requests the URL of its `url` argument (`fetch_url`, browser navigation): it
    /// sends data out when it carries a `body`, or goes to a host that neither the person's
    /// messages nor the run's earlier reads named (the query string may carry anything).
    pub requests_url: bool,
    /// Its code may `fetch` (the sandbox): a result that lists the hosts it fetched from under
    /// [`FETCHED_FIELD`] carries outside content.
    pub fetches: bool,
    /// A call writes files (the workspace): a file a page dictated may be a script the agent or
    /// the person runs later, so after outside content it asks like a change of the agent.
    pub writes_files: bool,
    /// A call only reads the agent's own data (its state, database schema, notes, files): it
    /// changes nothing and sends nothing. A request that asks for a change is not done by such
    /// calls alone (the loop's `NameUndoneSteps` rule).
    pub reads_only: bool,
}

/// The field of a sandbox result that lists the hosts its code fetched from (set by the host,
/// beside the code's own `result`).
pub const FETCHED_FIELD: &str = "fetched";

impl Effects {
    pub fn is_none(&self) -> bool {
        *self == Effects::default()
    }

    /// Whether a call should wait for the person once outside content is in the run's context.
    pub fn is_sensitive(&self) -> bool {
        self.changes_agent || self.sends_out || self.schedules || self.writes_files
    }

    /// Whether `output`, a result of a tool with these effects, carries outside content.
    pub fn is_outside_result(&self, output: &Value) -> bool {
        self.reads_outside || (self.fetches && !fetched_hosts(output).is_empty())
    }
}

/// Where a result of the tool `name` with these `effects` came from, when it is outside content:
/// the hosts its code fetched from, the host of the URL it was given, or the tool itself (search
/// results, an MCP server's tool). `None` for the agent's own stores.
pub fn outside_origin(name: &str, effects: &Effects, arguments: Option<&Value>, output: &Value) -> Option<String> {
    if !effects.is_outside_result(output) {
        return None;
    }
    let fetched = fetched_hosts(output);
    if !fetched.is_empty() {
        return Some(fetched.join(", ").to_lowercase());
    }
    let host = arguments.and_then(|arguments| arguments.get("url")).and_then(Value::as_str).and_then(host_of);
    Some(host.unwrap_or_else(|| name.to_owned()))
}

/// The host of `url`, without a scheme's parser: `https://example.com:8080/x` → `example.com`.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next()?,
        None => host.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_lowercase())
}

/// The hosts a sandbox result says its code fetched from.
pub fn fetched_hosts(output: &Value) -> Vec<&str> {
    output.get(FETCHED_FIELD).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// A call the person approved that has not run yet: the store finds it, the loop runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// The arguments to run it with: the person's edit, or the model's own.
    pub arguments: Value,
}

/// A model's request to run one tool, with its arguments whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

string_enum!(
    /// The time scale of a memory (seed 001): how long it lasts before it is archived.
    MemoryLayer, "memory layer" {
        Long => "long",
        Mid => "mid",
        Short => "short",
        Session => "session",
    }
);

string_enum!(
    /// A change to a memory, as its history records it.
    MemoryAction, "memory action" {
        Store => "store",
        Edit => "edit",
        Forget => "forget",
        Expire => "expire",
        Restore => "restore",
    }
);

string_enum!(
    /// Who changed a memory: the agent through its tool, the person through the memory page or
    /// the CLI, or the system when a memory's time ran out.
    MemoryAuthor, "memory author" {
        Agent => "agent",
        Admin => "admin",
        System => "system",
    }
);

/// What a text is embedded for: some embedding models embed a search and what it should find
/// differently (Gemini's task types); the others ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbedPurpose {
    /// What is searched with: a recall's query.
    Query,
    /// What is searched: a memory.
    Document,
}

/// The current time in milliseconds since the Unix epoch. Everything whose behaviour depends
/// on the time (memory expiry) asks a `Clock` rather than the system, so tests can fix it.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug, Default)]
pub struct FixedClock(std::sync::atomic::AtomicI64);

impl FixedClock {
    pub fn at(now_ms: i64) -> Self {
        Self(std::sync::atomic::AtomicI64::new(now_ms))
    }

    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn advance_ms(&self, by_ms: i64) {
        self.0.fetch_add(by_ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// `ms` since the epoch as UTC ISO-8601 with milliseconds (`2026-11-24T00:49:50.123Z`), the
/// form every other time in the app database and API has.
pub fn iso_from_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let of_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days: proleptic Gregorian calendar from days since 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_part = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_part + 2) / 5 + 1;
    let month = if month_part < 10 { month_part + 3 } else { month_part - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600_000,
        of_day / 60_000 % 60,
        of_day / 1000 % 60,
        of_day % 1000
    )
}

#[cfg(test)]
mod tests;
