//! The shape of a built-in tool: a typed argument struct and an async handler.
//!
//! [`Builtin`] erases the argument type behind the [`Tool`] trait so the registry can hold
//! every tool in one map, while each handler is written against its own typed arguments.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wright_core::{Effects, Presentation, ToolPolicy, ToolSpec, Toolset};

use crate::{ToolContext, ToolError, schema::schema_for};

pub(crate) type Handler<A> = fn(ToolContext, A) -> BoxFuture<'static, Result<Value, ToolError>>;

/// `tool`, declared with what its calls do beyond answering (see [`Effects`]).
pub(crate) fn with_effects(mut tool: Box<dyn Tool>, effects: Effects) -> Box<dyn Tool> {
    tool.set_effects(effects);
    tool
}

/// A tool with none of the effects (the base the others are written over).
const NO_EFFECTS: Effects = Effects {
    reads_outside: false,
    changes_agent: false,
    sends_out: false,
    schedules: false,
    requests_url: false,
    fetches: false,
    writes_files: false,
    reads_only: false,
};

/// The effects of a tool whose results carry outside content.
pub(crate) const READS_OUTSIDE: Effects = Effects { reads_outside: true, ..NO_EFFECTS };
/// The effects of a tool that reads the page at the URL it is given (and may send a body there).
pub(crate) const REQUESTS_URL: Effects = Effects { reads_outside: true, requests_url: true, ..NO_EFFECTS };
/// The effects of a tool that runs the agent's code: its `fetch` may send data out, and a
/// result that fetched carries outside content.
pub(crate) const RUNS_CODE: Effects = Effects { sends_out: true, fetches: true, ..NO_EFFECTS };
/// The effects of a tool that changes the agent itself.
pub(crate) const CHANGES_AGENT: Effects = Effects { changes_agent: true, ..NO_EFFECTS };
/// The effects of a tool that can send data out of Wright.
pub(crate) const SENDS_OUT: Effects = Effects { sends_out: true, ..NO_EFFECTS };

/// The effects of a tool that sets up later runs.
pub(crate) const SCHEDULES: Effects = Effects { schedules: true, ..NO_EFFECTS };

/// The effects of a tool that writes files.
pub(crate) const WRITES_FILES: Effects = Effects { writes_files: true, ..NO_EFFECTS };

/// The effects of a tool that only reads the agent's own data.
pub(crate) const READS_ONLY: Effects = Effects { reads_only: true, ..NO_EFFECTS };

/// When a built-in's calls ask although its spec's policy is `allow`: a property of the call
/// or of the server's settings, judged by the registry before the call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AskWhen {
    /// Never: the spec's policy holds for every call.
    Never,
    /// The call's `path` is in one of the operator's roots, not the agent's own workspace.
    WritesOutsideOwnWorkspace,
    /// The confined shell has network (`[workspace.shell] network`).
    ShellHasNetwork,
}

/// `tool`, whose calls ask in the case `when` although its spec's policy is `allow`.
pub(crate) fn asking_when(mut tool: Box<dyn Tool>, when: AskWhen) -> Box<dyn Tool> {
    tool.set_ask_when(when);
    tool
}

/// A tool the registry can run. Object-safe so built-in and (later) agent-made tools share it.
pub(crate) trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn set_toolset(&mut self, toolset: Toolset);
    fn set_effects(&mut self, effects: Effects);
    /// When its calls ask beyond the spec's policy.
    fn ask_when(&self) -> AskWhen;
    fn set_ask_when(&mut self, when: AskWhen);
    fn call(&self, context: ToolContext, args: Value) -> BoxFuture<'static, Result<Value, ToolError>>;
}

pub(crate) struct Builtin<A> {
    spec: ToolSpec,
    handler: Handler<A>,
    ask_when: AskWhen,
}

impl<A: DeserializeOwned + JsonSchema + Send + 'static> Builtin<A> {
    /// A tool that runs when called (its default policy is `allow`).
    pub(crate) fn boxed(name: &str, description: &str, handler: Handler<A>) -> Box<dyn Tool> {
        Self::with(name, description, handler, None, ToolPolicy::Allow)
    }

    /// A tool that only reads the agent's own data (see [`READS_ONLY`]); it runs when called.
    pub(crate) fn reading(name: &str, description: &str, handler: Handler<A>) -> Box<dyn Tool> {
        with_effects(Self::boxed(name, description, handler), READS_ONLY)
    }

    /// A tool with effects outside the agent's own data (acting on a web page, publishing):
    /// by default its calls wait for the person's approval.
    pub(crate) fn asking(name: &str, description: &str, handler: Handler<A>) -> Box<dyn Tool> {
        Self::with(name, description, handler, None, ToolPolicy::Ask)
    }

    /// A tool whose calls wait for the person, shown as `presentation`: the loop validates and
    /// parks them instead of running `handler` (which answers only callers outside a
    /// conversation).
    pub(crate) fn pausing(
        name: &str,
        description: &str,
        presentation: Presentation,
        handler: Handler<A>,
    ) -> Box<dyn Tool> {
        Self::with(name, description, handler, Some(presentation), ToolPolicy::Allow)
    }

    fn with(
        name: &str,
        description: &str,
        handler: Handler<A>,
        pauses: Option<Presentation>,
        policy: ToolPolicy,
    ) -> Box<dyn Tool> {
        let parameters = schema_for::<A>();
        let spec = ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
            pauses,
            policy,
            toolset: None,
            effects: Effects::default(),
        };
        Box::new(Builtin { spec, handler, ask_when: AskWhen::Never })
    }
}

impl<A: DeserializeOwned + JsonSchema + Send + 'static> Tool for Builtin<A> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn set_toolset(&mut self, toolset: Toolset) {
        self.spec.toolset = Some(toolset);
    }

    fn set_effects(&mut self, effects: Effects) {
        self.spec.effects = effects;
    }

    fn ask_when(&self) -> AskWhen {
        self.ask_when
    }

    fn set_ask_when(&mut self, when: AskWhen) {
        self.ask_when = when;
    }

    fn call(&self, context: ToolContext, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        // The registry validated `args` against the schema generated from `A`, so this only
        // fails where serde is stricter than the schema; say so in the same error shape.
        match serde_json::from_value::<A>(args) {
            Ok(typed) => (self.handler)(context, typed),
            Err(error) => {
                let tool = self.spec.name.clone();
                Box::pin(async move { Err(ToolError::InvalidArguments { tool, problems: vec![error.to_string()] }) })
            }
        }
    }
}

/// Arguments of a tool that takes none.
#[derive(serde::Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}
