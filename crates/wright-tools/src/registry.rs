//! The tool registry: the one place a tool call is looked up, validated, run and recorded.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use futures::FutureExt;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_core::{AgentId, ToolKind, ToolSpec};
use wright_store::{AgentTool, ExecutionRecord};

use crate::builtin::Tool;
use crate::{Services, ToolContext, ToolError};

/// A tool as listed to a person or a model.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub kind: ToolKind,
}

/// One call to make: which agent, which tool, with what, on whose behalf.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub agent: AgentId,
    pub name: String,
    pub args: Value,
    /// Who is calling: `agent`, `cli`, `api`… recorded with the execution.
    pub caller: String,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
}

/// Every built-in tool, freshly built.
fn all_builtins() -> impl Iterator<Item = Box<dyn Tool>> {
    crate::self_modification::tools()
        .into_iter()
        .chain(crate::state::tools())
        .chain(crate::tool_management::tools())
        .chain(crate::interaction::tools())
        .chain(crate::components::tools())
        .chain(crate::market::tools())
        .chain(crate::code::tools())
        .chain(crate::web::tools())
        .chain(crate::database::tools())
        .chain(crate::browser::tools())
        .chain(crate::workspace::tools())
}

/// The names of the built-in tools; an agent's tool may not take one of them.
pub(crate) fn builtin_names() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| all_builtins().map(|tool| tool.spec().name.clone()).collect())
}

struct RegisteredTool {
    tool: Box<dyn Tool>,
    /// Compiled once: compiling a schema costs far more than validating against it.
    validator: jsonschema::Validator,
}

/// Every tool an agent can call. Cheap to share behind an `Arc`; immutable once built.
pub struct ToolRegistry {
    services: Arc<Services>,
    builtins: BTreeMap<String, RegisteredTool>,
    /// Validators of agent tools by (tool id, version). A std Mutex: held only to look up or
    /// insert, never across an await.
    agent_validators: Mutex<HashMap<(i64, i64), Arc<jsonschema::Validator>>>,
    /// Agents known to exist (agents are never deleted). Held only to look up or insert.
    known_agents: Mutex<HashSet<AgentId>>,
    /// The built-ins' specs, in name order, built once.
    builtin_specs: Vec<ToolSpec>,
    /// Each agent's last spec list, with the (tool id, version) of its enabled tools it was
    /// built from: the loop asks every turn, and the list changes only when a tool does.
    agent_specs: Mutex<HashMap<AgentId, SpecList>>,
    /// Fault injection for the end-to-end tests (debug builds only): this built-in panics
    /// when called, to prove a panicking tool leaves its conversation usable.
    #[cfg(debug_assertions)]
    panic_in: Option<String>,
}

/// An agent's spec list and the (tool id, version) of the enabled tools it was built from.
type SpecList = (Vec<(i64, i64)>, Arc<[ToolSpec]>);

impl ToolRegistry {
    /// Builds the registry with every built-in tool.
    ///
    /// Panics if a built-in's generated schema does not compile: that is a bug in this crate,
    /// caught by its tests, never something a user or model can cause.
    pub fn new(services: Arc<Services>) -> Self {
        let mut builtins = BTreeMap::new();
        for tool in all_builtins() {
            let spec = tool.spec();
            let validator = jsonschema::validator_for(&spec.parameters)
                .unwrap_or_else(|error| panic!("schema of built-in tool {} does not compile: {error}", spec.name));
            let previous = builtins.insert(spec.name.clone(), RegisteredTool { tool, validator });
            assert!(previous.is_none(), "two built-in tools share a name");
        }
        let builtin_specs = builtins.values().map(|registered| registered.tool.spec().clone()).collect();
        Self {
            services,
            builtins,
            agent_validators: Mutex::new(HashMap::new()),
            known_agents: Mutex::new(HashSet::new()),
            builtin_specs,
            agent_specs: Mutex::new(HashMap::new()),
            #[cfg(debug_assertions)]
            panic_in: None,
        }
    }

    /// Debug builds only: makes the built-in `name` panic when called (fault injection for
    /// the end-to-end tests of the run lifecycle).
    #[cfg(debug_assertions)]
    pub fn panicking_in(mut self, name: Option<String>) -> Self {
        self.panic_in = name;
        self
    }

    /// Whether calls of `name` wait for the person (a property of the tool's spec).
    pub fn pauses(&self, name: &str) -> bool {
        self.builtins.get(name).is_some_and(|registered| registered.tool.spec().pauses)
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// Every tool available to `agent`: the built-ins, then its enabled agent-made tools.
    pub async fn list(&self, agent: &AgentId) -> Result<Vec<ToolInfo>, ToolError> {
        let mut tools: Vec<ToolInfo> = self
            .builtins
            .values()
            .map(|registered| {
                let ToolSpec { name, description, parameters, .. } = registered.tool.spec().clone();
                ToolInfo { name, description, parameters, kind: ToolKind::Builtin }
            })
            .collect();
        for tool in self.services.store.list_agent_tools(agent, false).await? {
            tools.push(ToolInfo {
                name: tool.name,
                description: tool.description,
                parameters: tool.parameter_schema,
                kind: ToolKind::Agent,
            });
        }
        Ok(tools)
    }

    /// The specs to send to a model: the built-ins, then the agent's enabled tools (as
    /// [`list`](Self::list)). Shared, and rebuilt only when the agent's tools changed.
    pub async fn specs(&self, agent: &AgentId) -> Result<Arc<[ToolSpec]>, ToolError> {
        let tools = self.services.store.list_agent_tools(agent, false).await?;
        let key: Vec<(i64, i64)> = tools.iter().map(|tool| (tool.id, tool.version)).collect();
        if let Some((built_from, specs)) =
            self.agent_specs.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(agent)
            && *built_from == key
        {
            return Ok(Arc::clone(specs));
        }
        let specs: Arc<[ToolSpec]> = self
            .builtin_specs
            .iter()
            .cloned()
            .chain(tools.into_iter().map(|tool| ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters: tool.parameter_schema,
                pauses: false,
            }))
            .collect();
        self.agent_specs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(agent.clone(), (key, Arc::clone(&specs)));
        Ok(specs)
    }

    /// Checks `args` against the schema of tool `name` without running it (the loop does this
    /// for pausing tools, which it parks instead of running).
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), ToolError> {
        let registered = self.builtins.get(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
            available: self.builtins.keys().cloned().collect(),
        })?;
        check_arguments(name, &registered.validator, args)
    }

    /// Checks a pausing call before the loop parks it, and fixes what the canvas will render:
    /// for `render_and_wait` the component's name, version and compiled code (a stored
    /// component must exist and be enabled; inline code must compile). Null for the others.
    pub async fn prepare_pause(&self, agent: &AgentId, name: &str, args: &Value) -> Result<Value, ToolError> {
        self.validate(name, args)?;
        crate::interaction::check_pausing_call(name, args)?;
        if name != "render_and_wait" {
            return Ok(Value::Null);
        }
        if let Some(code) = args.get("code").and_then(Value::as_str) {
            let compiled_js = crate::components::compile(code)?;
            return Ok(serde_json::json!({ "name": null, "version": null, "compiled_js": compiled_js }));
        }
        let component_name = args.get("component").and_then(Value::as_str).unwrap_or_default();
        let component = self.services.store.ui_component(agent, component_name).await?.ok_or_else(|| {
            ToolError::NotFound(format!("no UI component named {component_name:?}; list_ui_components shows yours"))
        })?;
        if !component.enabled {
            return Err(ToolError::Rejected(format!(
                "the component {component_name:?} is disabled: it was installed and waits for a person to review and enable it"
            )));
        }
        Ok(
            serde_json::json!({ "name": component.name, "version": component.version, "compiled_js": component.compiled_js }),
        )
    }

    /// Looks up, validates, runs and records one call.
    pub async fn invoke(&self, invocation: Invocation) -> Result<Value, ToolError> {
        self.invoke_cancellable(invocation, &CancellationToken::new()).await
    }

    /// [`invoke`](Self::invoke), stopped when `cancel` fires: the call's future is dropped,
    /// which kills a sandbox worker mid-call and aborts a fetch or a browser action, and the
    /// call ends as [`ToolError::Cancelled`]. A tool that panics ends as
    /// [`ToolError::Internal`]; neither ends the caller's run.
    pub async fn invoke_cancellable(
        &self,
        invocation: Invocation,
        cancel: &CancellationToken,
    ) -> Result<Value, ToolError> {
        self.require_agent(&invocation.agent).await?;
        let started = Instant::now();
        let (kind, version, outcome) = match self.builtins.get(&invocation.name) {
            Some(registered) => {
                (ToolKind::Builtin, None, guarded(&invocation.name, self.run(registered, &invocation), cancel).await)
            }
            None => match self.services.store.agent_tool(&invocation.agent, &invocation.name).await? {
                Some(tool) if tool.enabled => {
                    let version = tool.version;
                    let run = self.run_agent_tool(tool, &invocation);
                    (ToolKind::Agent, Some(version), guarded(&invocation.name, run, cancel).await)
                }
                Some(_) => {
                    return Err(ToolError::Rejected(format!(
                        "the tool `{}` is disabled; enable_tool turns it on (an installed tool waits for a person to review it)",
                        invocation.name
                    )));
                }
                None => return Err(self.unknown(&invocation.agent, invocation.name).await),
            },
        };
        let duration_us = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
        let record = ExecutionRecord {
            agent: invocation.agent,
            tool_name: invocation.name,
            tool_kind: kind.as_str(),
            tool_version: version,
            caller: invocation.caller,
            conversation_id: invocation.conversation_id,
            tool_call_id: invocation.tool_call_id,
            args: invocation.args,
            outcome: match &outcome {
                Ok(value) => Ok(value.clone()),
                Err(error) => Err((error.to_string(), error.category().to_owned())),
            },
            duration_us,
        };
        if let Err(error) = self.services.store.record_execution(&record).await {
            // The call itself happened; losing its record must not turn it into a failure.
            tracing::warn!(%error, tool = %record.tool_name, "could not record a tool execution");
        }
        outcome
    }

    /// Fails unless the agent exists. Agents are never deleted, so one that was seen is
    /// remembered and not looked up again on every call.
    async fn require_agent(&self, agent: &AgentId) -> Result<(), ToolError> {
        let known = |agents: &HashSet<AgentId>| agents.contains(agent);
        if known(&self.known_agents.lock().unwrap_or_else(|poisoned| poisoned.into_inner())) {
            return Ok(());
        }
        self.services.store.require_agent(agent).await?;
        self.known_agents.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(agent.clone());
        Ok(())
    }

    /// An unknown-tool error that names what the agent can call instead.
    async fn unknown(&self, agent: &AgentId, name: String) -> ToolError {
        let mut available: Vec<String> = self.builtins.keys().cloned().collect();
        if let Ok(tools) = self.services.store.list_agent_tools(agent, false).await {
            available.extend(tools.into_iter().map(|tool| tool.name));
        }
        ToolError::UnknownTool { name, available }
    }

    /// Validates the arguments against the agent tool's own schema and runs its code.
    async fn run_agent_tool(&self, tool: AgentTool, invocation: &Invocation) -> Result<Value, ToolError> {
        let validator = self.agent_tool_validator(&tool)?;
        check_arguments(&invocation.name, &validator, &invocation.args)?;
        // The tool's own deadline when it set one, the sandbox's default otherwise.
        let deadline_ms = tool.limits.get("deadline_ms").and_then(Value::as_u64);
        let limits = wright_sandbox::RunLimits { deadline_ms, ..Default::default() };
        let outcome =
            crate::code::run_code(&self.services, &invocation.agent, tool.code, invocation.args.clone(), limits)
                .await?;
        // A tool's result is what its code returned; its logs stay in the execution record.
        Ok(outcome.get("result").cloned().unwrap_or(Value::Null))
    }

    /// The compiled validator of a tool version, compiled once per (tool, version).
    fn agent_tool_validator(&self, tool: &AgentTool) -> Result<Arc<jsonschema::Validator>, ToolError> {
        let key = (tool.id, tool.version);
        let mut cache = self.agent_validators.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(validator) = cache.get(&key) {
            return Ok(Arc::clone(validator));
        }
        let validator = jsonschema::validator_for(&tool.parameter_schema)
            .map_err(|error| ToolError::Rejected(format!("the tool's parameter_schema cannot be used: {error}")))?;
        let validator = Arc::new(validator);
        if cache.len() > 1024 {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&validator));
        Ok(validator)
    }

    async fn run(&self, registered: &RegisteredTool, invocation: &Invocation) -> Result<Value, ToolError> {
        check_arguments(&invocation.name, &registered.validator, &invocation.args)?;
        #[cfg(debug_assertions)]
        if self.panic_in.as_deref() == Some(invocation.name.as_str()) {
            panic!("fault injection: `{}` panics", invocation.name);
        }
        let context = ToolContext {
            services: Arc::clone(&self.services),
            agent: invocation.agent.clone(),
            conversation_id: invocation.conversation_id.clone(),
            tool_call_id: invocation.tool_call_id.clone(),
        };
        registered.tool.call(context, invocation.args.clone()).await
    }
}

/// Runs one call's future until it ends or `cancel` fires, and turns a panic into an error.
async fn guarded(
    name: &str,
    call: impl Future<Output = Result<Value, ToolError>>,
    cancel: &CancellationToken,
) -> Result<Value, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled(format!(
            "the run was cancelled while `{name}` was running; it was stopped and may not have taken effect"
        ))),
        outcome = AssertUnwindSafe(call).catch_unwind() => outcome.unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            tracing::error!(tool = name, %reason, "a tool panicked");
            Err(ToolError::Internal(format!("`{name}` failed unexpectedly (a bug in Wright: {reason})")))
        }),
    }
}

/// Every way `args` fails `validator`, each with the path that failed and why.
fn check_arguments(tool: &str, validator: &jsonschema::Validator, args: &Value) -> Result<(), ToolError> {
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|error| {
            let path = error.instance_path().to_string();
            let at = if path.is_empty() { "(root)".to_owned() } else { path };
            format!("{at}: {error}")
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(ToolError::InvalidArguments { tool: tool.to_owned(), problems }) }
}
