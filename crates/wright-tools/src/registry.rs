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
use wright_core::{
    AgentId, BoxFuture, ErrorCategory, Invocation, Presentation, ToolFailure, ToolKind, ToolPolicy, ToolPort, ToolSpec,
    Toolset, closest_names,
};
use wright_store::{AgentTool, ExecutionRecord};

use crate::builtin::{AskWhen, Tool};
use crate::{Services, ToolContext, ToolError};

/// A tool as listed to a person or a model.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub kind: ToolKind,
    /// The toolset a built-in belongs to; `None` for the agent's own and MCP tools.
    pub toolset: Option<wright_core::Toolset>,
}

/// Every built-in tool, freshly built, each in its toolset (a module's tools share one).
fn all_builtins() -> impl Iterator<Item = Box<dyn Tool>> {
    let groups: [(Toolset, Vec<Box<dyn Tool>>); 15] = [
        (Toolset::SelfModification, crate::self_modification::tools()),
        (Toolset::State, crate::state::tools()),
        (Toolset::Tools, crate::tool_management::tools()),
        (Toolset::Canvas, crate::interaction::tools()),
        (Toolset::Canvas, crate::components::tools()),
        (Toolset::Marketplace, crate::market::tools()),
        (Toolset::Tools, crate::code::tools()),
        (Toolset::Web, crate::web::tools()),
        (Toolset::Database, crate::database::tools()),
        (Toolset::Browser, crate::browser::tools()),
        (Toolset::Memory, crate::memory::tools()),
        (Toolset::Workspace, crate::workspace::tools()),
        (Toolset::Schedules, crate::proactive::tools()),
        (Toolset::Skills, crate::skills::tools()),
        (Toolset::SelfModification, crate::execution_log::tools()),
    ];
    groups.into_iter().flat_map(|(toolset, tools)| {
        tools.into_iter().map(move |mut tool| {
            tool.set_toolset(toolset);
            tool
        })
    })
}

/// The spec of every built-in tool, in name order: what a model is told about them (for
/// checking that every server accepts their schemas, and for measuring their size).
pub fn builtin_specs() -> Vec<ToolSpec> {
    let mut specs: Vec<ToolSpec> = all_builtins().map(|tool| tool.spec().clone()).collect();
    specs.sort_by(|left, right| left.name.cmp(&right.name));
    specs
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
    /// The operator's MCP servers' tools (`mcp__<server>__<tool>`), when any are configured.
    mcp: Option<crate::mcp::McpTools>,
    /// The configured secrets: none reaches a result (the model's context), whatever a tool
    /// read (an environment listing, a file, a page echoing a header).
    redactor: wright_core::Redactor,
    /// Fault injection for the end-to-end tests (debug builds only): this built-in panics
    /// when called, to prove a panicking tool leaves its conversation usable.
    #[cfg(debug_assertions)]
    panic_in: Option<String>,
}

/// An agent's spec list and what it was built from: the (tool id, version) of its enabled
/// tools and the MCP tool lists' generation.
type SpecList = ((Vec<(i64, i64)>, u64), Arc<[ToolSpec]>);

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
            mcp: None,
            redactor: wright_core::Redactor::default(),
            #[cfg(debug_assertions)]
            panic_in: None,
        }
    }

    /// Keeps `redactor`'s secrets out of every result from now on.
    pub fn with_redactor(mut self, redactor: wright_core::Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// `outcome` with every configured secret replaced, in its output or its error.
    fn redacted(&self, outcome: Result<Value, ToolError>) -> Result<Value, ToolError> {
        match outcome {
            Ok(mut value) => {
                redact_value(&self.redactor, &mut value);
                Ok(value)
            }
            Err(ToolError::Code { kind, message, mut outcome }) => {
                redact_value(&self.redactor, &mut outcome);
                Err(ToolError::Code { kind, message: self.redactor.redact(&message), outcome })
            }
            // Rare (an error quoting a secret): the words stay, the category is `rejected`.
            Err(error) if self.redactor.finds_secret_in(&error.to_string()) => {
                Err(ToolError::Rejected(self.redactor.redact(&error.to_string())))
            }
            Err(error) => Err(error),
        }
    }

    /// Adds the tools of the operator's MCP servers: listed after the agent's own, validated
    /// against their servers' schemas, recorded with kind `mcp`. Only the servers that are up
    /// contribute, so a server that dies takes its tools off the model's list.
    pub fn with_mcp(mut self, clients: wright_mcp::McpClients) -> Self {
        self.mcp = Some(crate::mcp::McpTools::new(clients));
        self
    }

    /// How each of the operator's MCP servers is doing (empty when none is configured).
    pub fn mcp_status(&self) -> Vec<wright_mcp::ServerStatus> {
        self.mcp.as_ref().map(|mcp| mcp.clients.status()).unwrap_or_default()
    }

    /// Debug builds only: makes the built-in `name` panic when called (fault injection for
    /// the end-to-end tests of the run lifecycle).
    #[cfg(debug_assertions)]
    pub fn panicking_in(mut self, name: Option<String>) -> Self {
        self.panic_in = name;
        self
    }

    /// The policy that applies to `agent`'s call of `name` with `args`: the agent's own for the
    /// tool, else the tool's default for this call (agent-made and unknown tools: allow).
    pub async fn policy(&self, agent: &AgentId, name: &str, args: &Value) -> Result<ToolPolicy, ToolError> {
        if let Some(policy) = self.services.store.tool_policy(agent, name).await? {
            return Ok(policy);
        }
        let default = self.default_policy(name);
        let asks_outside_own_workspace = self
            .builtins
            .get(name)
            .is_some_and(|registered| registered.tool.ask_when() == AskWhen::WritesOutsideOwnWorkspace);
        if default != ToolPolicy::Allow || !asks_outside_own_workspace {
            return Ok(default);
        }
        // A path that resolves in no root fails in the tool with a clear error: nothing to ask.
        let Some(path) = args.get("path").and_then(Value::as_str).map(str::to_owned) else { return Ok(default) };
        let services = self.services.clone();
        let agent = agent.clone();
        let in_operator_root = tokio::task::spawn_blocking(move || {
            let workspace = services.workspaces.open(&agent)?;
            Ok::<_, wright_workspace::WorkspaceError>(workspace.place(&path) == wright_workspace::Place::OperatorRoot)
        })
        .await
        .map_err(|error| ToolError::Internal(format!("workspace task failed: {error}")))?
        .unwrap_or(false);
        Ok(if in_operator_root { ToolPolicy::Ask } else { default })
    }

    /// The tool's own default policy, before any call's arguments are known.
    pub fn default_policy(&self, name: &str) -> ToolPolicy {
        match self.builtins.get(name) {
            Some(registered) => match registered.tool.ask_when() {
                AskWhen::ShellHasNetwork if self.services.workspaces.shell_network() => ToolPolicy::Ask,
                AskWhen::Never | AskWhen::ShellHasNetwork | AskWhen::WritesOutsideOwnWorkspace => {
                    registered.tool.spec().policy
                }
            },
            // An MCP server's tool has effects Wright cannot see: the person approves it.
            None if name.starts_with(wright_mcp::TOOL_PREFIX) => ToolPolicy::Ask,
            None => ToolPolicy::Allow,
        }
    }

    /// When a tool whose default is `allow` still asks, for the person reading its policy:
    /// `None` when its default holds for every call.
    pub fn asks_when(&self, name: &str) -> Option<&'static str> {
        match self.builtins.get(name)?.tool.ask_when() {
            AskWhen::Never | AskWhen::ShellHasNetwork => None,
            AskWhen::WritesOutsideOwnWorkspace => {
                Some("writes into the operator's roots ask; the agent's own workspace does not")
            }
        }
    }

    /// Records a call that was refused before it ran (a `deny` policy, or the person's
    /// refusal of an approval), so the execution log shows the decision and who made it.
    pub async fn record_refusal(&self, invocation: Invocation, message: String) {
        let kind = if self.builtins.contains_key(&invocation.name) {
            ToolKind::Builtin
        } else if invocation.name.starts_with(wright_mcp::TOOL_PREFIX) {
            ToolKind::Mcp
        } else {
            ToolKind::Agent
        };
        let record = ExecutionRecord {
            agent: invocation.agent,
            tool_name: invocation.name,
            tool_kind: kind.as_str(),
            tool_version: None,
            caller: invocation.caller.as_str().to_owned(),
            conversation_id: invocation.conversation_id,
            tool_call_id: invocation.tool_call_id,
            args: invocation.args,
            outcome: Err((message, ErrorCategory::Denied.as_str().to_owned())),
            duration_us: 0,
            decided_by: invocation.decided_by,
            outside_origin: None,
        };
        if let Err(error) = self.services.store.record_execution(&record).await {
            tracing::warn!(%error, tool = %record.tool_name, "could not record a refused call");
        }
    }

    /// How calls of `name` are shown while they wait for the person; `None` when they do not
    /// wait (a property of the tool's spec).
    pub fn presentation(&self, name: &str) -> Option<Presentation> {
        self.builtins.get(name).and_then(|registered| registered.tool.spec().pauses)
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
                let ToolSpec { name, description, parameters, toolset, .. } = registered.tool.spec().clone();
                ToolInfo { name, description, parameters, kind: ToolKind::Builtin, toolset }
            })
            .collect();
        for tool in self.services.store.list_agent_tools(agent, false).await? {
            tools.push(ToolInfo {
                name: tool.name,
                description: tool.description,
                parameters: tool.parameter_schema,
                kind: ToolKind::Agent,
                toolset: None,
            });
        }
        for tool in self.mcp_tools() {
            tools.push(ToolInfo {
                name: tool.name,
                description: tool.description,
                parameters: tool.input_schema,
                kind: ToolKind::Mcp,
                toolset: None,
            });
        }
        Ok(tools)
    }

    /// The specs to send to a model: the built-ins, then the agent's enabled tools (as
    /// [`list`](Self::list)). Shared, and rebuilt only when the agent's tools changed.
    pub async fn specs(&self, agent: &AgentId) -> Result<Arc<[ToolSpec]>, ToolError> {
        let tools = self.services.store.list_agent_tools(agent, false).await?;
        let key: Vec<(i64, i64)> = tools.iter().map(|tool| (tool.id, tool.version)).collect();
        let key = (key, self.mcp.as_ref().map_or(0, |mcp| mcp.clients.generation()));
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
                pauses: None,
                // An agent-made tool's code may `fetch`: what it sends may be the person's data
                // (which URLs is only known when it runs), and a result that fetched carries
                // outside content.
                effects: wright_core::Effects { sends_out: true, fetches: true, ..wright_core::Effects::default() },
                // An agent-made tool runs in the sandbox under the egress policy; its default is allow.
                policy: ToolPolicy::Allow,
                toolset: None,
            }))
            .chain(self.mcp_tools().into_iter().map(|tool| ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters: tool.input_schema,
                pauses: None,
                // Its results are another program's words, and a call may send anything out
                // unless the server marked the tool read-only.
                effects: wright_core::Effects {
                    reads_outside: true,
                    sends_out: !tool.read_only,
                    ..wright_core::Effects::default()
                },
                // Another program's tool, with whatever effects it has: the person approves it.
                policy: ToolPolicy::Ask,
                toolset: None,
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
            closest: closest_names(name, self.builtins.keys().map(String::as_str)),
        })?;
        check_arguments(name, &registered.tool.spec().parameters, &registered.validator, args)
    }

    /// Checks a pausing call before the loop parks it, and fixes what the canvas will render:
    /// for `render_and_wait` the component's name, version and compiled code (a stored
    /// component must exist and be enabled; inline code must compile). Null for the others.
    pub async fn prepare_pause(&self, agent: &AgentId, name: &str, args: &Value) -> Result<Value, ToolError> {
        self.validate(name, args)?;
        crate::interaction::check_pausing_call(name, args)?;
        // Only a component is prepared: its code is fixed when the call is made.
        if self.presentation(name) != Some(Presentation::Component) {
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
            None if let Some((mcp, tool)) = self.mcp_tool(&invocation.name) => {
                let run = mcp.call(&tool, &invocation.args);
                (ToolKind::Mcp, None, guarded(&invocation.name, run, cancel).await)
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
        let outcome = self.redacted(outcome);
        let duration_us = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
        // Where the result came from, for the execution log (as the loop stores it with the event).
        let effects = match kind {
            ToolKind::Builtin => self.builtins.get(&invocation.name).map(|registered| registered.tool.spec().effects),
            ToolKind::Mcp => Some(wright_core::Effects { reads_outside: true, ..wright_core::Effects::default() }),
            ToolKind::Agent => Some(wright_core::Effects { fetches: true, ..wright_core::Effects::default() }),
        };
        let read = match &outcome {
            Ok(value) | Err(ToolError::Code { outcome: value, .. }) => value,
            Err(_) => &Value::Null,
        };
        let outside_origin = effects
            .and_then(|effects| wright_core::outside_origin(&invocation.name, &effects, Some(&invocation.args), read));
        let record = ExecutionRecord {
            agent: invocation.agent,
            tool_name: invocation.name,
            tool_kind: kind.as_str(),
            tool_version: version,
            caller: invocation.caller.as_str().to_owned(),
            conversation_id: invocation.conversation_id,
            tool_call_id: invocation.tool_call_id,
            args: invocation.args,
            outcome: match &outcome {
                Ok(value) => Ok(value.clone()),
                Err(error) => Err((error.to_string(), error.category().as_str().to_owned())),
            },
            duration_us,
            decided_by: invocation.decided_by,
            outside_origin,
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
        available.extend(self.mcp_tools().into_iter().map(|tool| tool.name));
        let closest = closest_names(&name, available.iter().map(String::as_str));
        ToolError::UnknownTool { name, closest }
    }

    /// The tools of the MCP servers that are up now.
    fn mcp_tools(&self) -> Vec<wright_mcp::McpTool> {
        self.mcp.as_ref().map(|mcp| mcp.clients.tools()).unwrap_or_default()
    }

    /// The MCP tool `name`, if it is an MCP tool's name and its server is up and offers it.
    fn mcp_tool(&self, name: &str) -> Option<(&crate::mcp::McpTools, wright_mcp::McpTool)> {
        let mcp = self.mcp.as_ref()?;
        Some((mcp, mcp.clients.tool(name)?))
    }

    /// Validates the arguments against the agent tool's own schema and runs its code.
    async fn run_agent_tool(&self, tool: AgentTool, invocation: &Invocation) -> Result<Value, ToolError> {
        let validator = self.agent_tool_validator(&tool)?;
        check_arguments(&invocation.name, &tool.parameter_schema, &validator, &invocation.args)?;
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
        check_arguments(&invocation.name, &registered.tool.spec().parameters, &registered.validator, &invocation.args)?;
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
pub(crate) fn check_arguments(
    tool: &str,
    schema: &Value,
    validator: &jsonschema::Validator,
    args: &Value,
) -> Result<(), ToolError> {
    let problems = problems(validator, args);
    if problems.is_empty() {
        return Ok(());
    }
    let problems = tagged_variant_problems(schema, args).unwrap_or(problems);
    Err(ToolError::InvalidArguments { tool: tool.to_owned(), problems })
}

fn problems(validator: &jsonschema::Validator, args: &Value) -> Vec<String> {
    validator
        .iter_errors(args)
        .map(|error| {
            let path = error.instance_path().to_string();
            let at = if path.is_empty() { "(root)".to_owned() } else { path };
            format!("{at}: {error}")
        })
        .collect()
}

/// For a schema whose root is a `oneOf` of object variants told apart by a `const` property
/// (the edit tools' `operation`), the problems of the variant the call names, or that it names
/// none: "not valid under any of the schemas listed in the 'oneOf' keyword" tells a model
/// nothing it can fix. `None` for any other schema.
fn tagged_variant_problems(schema: &Value, args: &Value) -> Option<Vec<String>> {
    let variants = schema.get("oneOf")?.as_array()?;
    let tag = variants
        .first()?
        .get("properties")?
        .as_object()?
        .iter()
        .find_map(|(name, property)| property.get("const").is_some().then_some(name.clone()))?;
    let tag_of = |variant: &Value| variant.pointer(&format!("/properties/{tag}/const")).cloned();
    let allowed: Vec<Value> = variants.iter().map(tag_of).collect::<Option<Vec<_>>>()?;
    let given = args.get(&tag);
    let Some(chosen) = variants.iter().find(|variant| tag_of(variant).as_ref() == given) else {
        let names: Vec<String> =
            allowed.iter().map(|value| value.as_str().map_or(value.to_string(), str::to_owned)).collect();
        let what = given.map_or_else(|| "is missing".to_owned(), |given| format!("is {given}"));
        return Some(vec![format!("/{tag}: {what}; it must be one of: {}", names.join(", "))]);
    };
    let validator = jsonschema::validator_for(chosen).ok()?;
    let tag_value = given.map(Value::to_string).unwrap_or_default();
    Some(problems(&validator, args).into_iter().map(|problem| format!("{problem} (for {tag} {tag_value})")).collect())
}

/// The registry as the agent loop's tools port.
impl ToolPort for ToolRegistry {
    fn specs<'a>(&'a self, agent: &'a AgentId) -> BoxFuture<'a, Result<Arc<[ToolSpec]>, ToolFailure>> {
        Box::pin(async move { ToolRegistry::specs(self, agent).await.map_err(|error| ToolFailure::from(&error)) })
    }

    fn policy<'a>(
        &'a self,
        agent: &'a AgentId,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<ToolPolicy, ToolFailure>> {
        Box::pin(async move {
            ToolRegistry::policy(self, agent, name, args).await.map_err(|error| ToolFailure::from(&error))
        })
    }

    fn validate(&self, name: &str, args: &Value) -> Result<(), ToolFailure> {
        ToolRegistry::validate(self, name, args).map_err(|error| ToolFailure::from(&error))
    }

    fn prepare_pause<'a>(
        &'a self,
        agent: &'a AgentId,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            ToolRegistry::prepare_pause(self, agent, name, args).await.map_err(|error| ToolFailure::from(&error))
        })
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(
            async move { self.invoke_cancellable(invocation, cancel).await.map_err(|error| ToolFailure::from(&error)) },
        )
    }

    fn record_refusal(&self, invocation: Invocation, reason: String) -> BoxFuture<'_, ()> {
        Box::pin(ToolRegistry::record_refusal(self, invocation, reason))
    }
}

/// Replaces every configured secret in the strings (and keys) of `value`.
fn redact_value(redactor: &wright_core::Redactor, value: &mut Value) {
    match value {
        Value::String(text) if redactor.finds_secret_in(text) => *text = redactor.redact(text),
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(redactor, item)),
        Value::Object(fields) if fields.keys().any(|key| redactor.finds_secret_in(key)) => {
            let taken = std::mem::take(fields);
            for (key, mut item) in taken {
                redact_value(redactor, &mut item);
                fields.insert(redactor.redact(&key), item);
            }
        }
        Value::Object(fields) => fields.values_mut().for_each(|item| redact_value(redactor, item)),
        _ => {}
    }
}
