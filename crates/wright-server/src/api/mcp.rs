//! MCP both ways, as the API sees it: Wright as an MCP server at `/mcp` (streamable HTTP, an
//! agent's tools for any MCP client), and `GET /api/mcp/servers`, how the MCP servers Wright
//! is a client of are doing (for the admin page).
//!
//! Serving `/mcp`:
//!
//! - **Which agent.** `/mcp` serves the default agent and `/mcp/<agent>` any other. An MCP
//!   client is configured with one URL per server, so the agent belongs in the URL: two agents
//!   are two servers in the client's list, and nothing else (a query, a header) has to be kept
//!   in step with it. An unknown agent is a 404 before any MCP is spoken.
//! - **Auth.** The same as every `/api` route (`require_auth`): `Authorization: Bearer
//!   <token>`, or the canvas's session cookie from the app itself. No token: 401.
//! - **What is offered.** The agent's enabled agent-made tools, and the built-ins named in
//!   `[mcp_server] builtins` (never one that waits for the person). Not the tools of the MCP
//!   servers Wright itself is a client of: those are the operator's to reach directly. A tool
//!   whose policy for the agent is `deny` is not listed.
//! - **Calls** go through the registry's one door (`invoke_cancellable`: schema validation, the
//!   sandbox's and the egress's limits, the execution log with caller `mcp`), and the result is
//!   capped at `[agent] max_output_size` like a result the agent's own model gets.
//! - **Policy.** The agent's policy for the tool applies as to the agent's own calls: `allow`
//!   runs (`decided_by: policy`); `deny` is refused. `ask` is refused too, with a message that
//!   says so: approval is the person's answer to a parked call in the canvas, and an MCP call
//!   has no run to park and no one in the canvas waiting on it; the MCP client's own user
//!   approves calls in that client. Both refusals are recorded in the execution log.
//! - **Stateless.** rmcp's stateless mode with JSON responses: each POST is answered by itself,
//!   no session is held in memory between requests (nothing for a client to leak or exhaust,
//!   and a restart loses nothing). GET (a server-to-client stream) is answered 405, which MCP
//!   clients take as "no stream". The request body is capped (`[mcp_server]
//!   max_request_bytes`); the whole request by `[server] request_timeout_secs`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router, middleware};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use wright_core::Invocation;
use wright_core::{AgentId, DecidedBy, ToolKind, ToolPolicy};
use wright_tools::ToolInfo;

use super::agents::existing_agent;
use crate::AppState;

type McpService = StreamableHttpService<WrightMcp, NeverSessionManager>;

/// `/mcp` and `/mcp/{agent}`, behind the token. Empty when `[mcp_server] enabled = false`.
pub(super) fn router(state: &AppState) -> Router<AppState> {
    if !state.config.mcp_server.enabled {
        return Router::new();
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // The app's `check_host` layer already judges `Host` for every route, with the
        // operator's `[server] allowed_hosts`; rmcp's own list would refuse those names.
        .disable_allowed_hosts()
        .with_cancellation_token(state.shutdown.child_token())
        .with_max_request_body_bytes(state.config.mcp_server.max_request_bytes);
    let server = WrightMcp { state: state.clone() };
    let service: Arc<McpService> = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    ));
    Router::new()
        .route("/mcp", axum::routing::any(default_agent))
        .route("/mcp/{agent}", axum::routing::any(named_agent))
        .route_layer(middleware::from_fn_with_state(state.clone(), super::auth::require_auth))
        .layer(Extension(service))
}

async fn default_agent(
    State(state): State<AppState>,
    Extension(service): Extension<Arc<McpService>>,
    request: Request,
) -> Response {
    serve(&state, &service, AgentId::default_agent().as_str(), request).await
}

async fn named_agent(
    State(state): State<AppState>,
    Extension(service): Extension<Arc<McpService>>,
    Path(agent): Path<String>,
    request: Request,
) -> Response {
    serve(&state, &service, &agent, request).await
}

/// The agent a request to `/mcp` is for, handed to the handler in the request's extensions.
#[derive(Debug, Clone)]
struct ServedAgent(AgentId);

async fn serve(state: &AppState, service: &McpService, agent: &str, mut request: Request) -> Response {
    let agent = match existing_agent(state, agent).await {
        Ok(agent) => agent,
        Err(error) => return error.into_response(),
    };
    request.extensions_mut().insert(ServedAgent(agent));
    service.handle(request).await.map(axum::body::Body::new)
}

/// The MCP handler: one per request (stateless), a clone of the app's state.
#[derive(Clone)]
struct WrightMcp {
    state: AppState,
}

/// A tool offered over MCP and the policy the agent's calls of it follow.
struct Offered {
    tool: ToolInfo,
    policy: ToolPolicy,
}

impl WrightMcp {
    /// The agent this request is for (`serve` put it in the HTTP request's extensions, which
    /// rmcp hands on as `http::request::Parts`).
    fn agent(context: &RequestContext<RoleServer>) -> Result<AgentId, ErrorData> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<ServedAgent>())
            .map(|served| served.0.clone())
            .ok_or_else(|| ErrorData::internal_error("the request names no agent", None))
    }

    /// Every tool this agent offers over MCP, deny included (a call of one is refused and
    /// recorded; the list leaves it out).
    async fn offered(&self, agent: &AgentId) -> Result<Vec<Offered>, ErrorData> {
        let tools = &self.state.tools;
        let builtins = &self.state.config.mcp_server.builtins;
        let own: HashMap<String, ToolPolicy> =
            self.state.store.tool_policies(agent).await.map_err(internal)?.into_iter().collect();
        let listed = tools.list(agent).await.map_err(internal)?;
        Ok(listed
            .into_iter()
            .filter(|tool| match tool.kind {
                ToolKind::Agent => true,
                ToolKind::Builtin => builtins.contains(&tool.name),
                ToolKind::Mcp => false,
            })
            .map(|tool| {
                let policy = own.get(&tool.name).copied().unwrap_or_else(|| tools.default_policy(&tool.name));
                Offered { tool, policy }
            })
            .collect())
    }

    async fn call(
        &self,
        agent: AgentId,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        let Some(offered) = self.offered(&agent).await?.into_iter().find(|offered| offered.tool.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{name}` is offered over MCP by agent `{agent}` (tools/list shows what is)"),
                None,
            ));
        };
        let invocation = Invocation {
            agent,
            name,
            args: Value::Object(request.arguments.unwrap_or_default()),
            caller: wright_core::Caller::Mcp,
            conversation_id: None,
            tool_call_id: None,
            decided_by: Some(DecidedBy::Policy),
        };
        let refusal = match offered.policy {
            ToolPolicy::Allow => None,
            ToolPolicy::Deny => {
                Some(format!("the person's policy for `{}` is deny: it does not run for this agent", invocation.name))
            }
            ToolPolicy::Ask => Some(format!(
                "`{}` needs the person's approval in Wright's canvas (its policy is ask), and an MCP call cannot \
                 wait for one; to offer it over MCP, set its policy for agent `{}` to allow",
                invocation.name, invocation.agent
            )),
        };
        if let Some(message) = refusal {
            self.state.tools.record_refusal(invocation, message.clone()).await;
            return Ok(CallToolResult::structured_error(serde_json::json!({ "error": message, "category": "denied" })));
        }
        match self.state.tools.invoke_cancellable(invocation, &context.ct).await {
            Ok(output) => Ok(success(wright_agent::cap_output(output, self.state.config.agent.max_output_size))),
            Err(error) => Ok(CallToolResult::structured_error(error.to_model_output())),
        }
    }
}

/// A tool's JSON result as MCP content: a string as itself, anything else as JSON text, and
/// an object also as `structuredContent` (which MCP requires to be an object).
fn success(output: Value) -> CallToolResult {
    let text = match &output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if output.is_object() {
        result.structured_content = Some(output);
    }
    result
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    tracing::error!(%error, "MCP request failed");
    ErrorData::internal_error("internal error; see the server log", None)
}

impl ServerHandler for WrightMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("wright", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The tools of one Wright agent: the ones it wrote itself and the built-ins its operator offers. \
                 Calls follow the agent's tool policies and are recorded in its execution log.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let agent = Self::agent(&context)?;
        let tools = self
            .offered(&agent)
            .await?
            .into_iter()
            .filter(|offered| offered.policy != ToolPolicy::Deny)
            .filter_map(|offered| {
                let ToolInfo { name, description, parameters, .. } = offered.tool;
                // Every schema the registry accepts is an object; anything else cannot be an
                // MCP inputSchema and is left out rather than sent broken.
                let Value::Object(schema) = parameters else { return None };
                Some(Tool::new(name, description, schema))
            })
            .collect();
        // The list changes whenever the agent writes or enables a tool: not to be cached.
        Ok(ListToolsResult::with_all_items(tools).with_ttl_ms(0))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let agent = Self::agent(&context)?;
        self.call(agent, request, &context).await.map(CallToolResponse::from)
    }
}

/// Where a configured MCP server stands.
#[derive(Serialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum McpServerState {
    /// The first attempt to connect has not finished.
    Starting,
    /// Connected; its tools are offered to the agents.
    Up,
    /// Not connected; tried again at `retry_at`.
    Down,
}

/// One MCP server of `[mcp.servers]`, as the admin page shows it.
#[derive(Serialize, ToSchema)]
pub(super) struct McpServerView {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    pub state: McpServerState,
    /// Tools it offers now (0 unless up).
    pub tools: usize,
    /// Tools it has whose names cannot be model tool names, so are not offered.
    pub skipped_tools: Vec<String>,
    /// Why it is down, or why it last went down (kept after it came back).
    pub last_error: Option<String>,
    /// Failed attempts in a row (0 unless down).
    pub failures: u32,
    /// When the next attempt starts, while down (ISO 8601).
    pub retry_at: Option<String>,
}

impl From<wright_mcp::ServerStatus> for McpServerView {
    fn from(status: wright_mcp::ServerStatus) -> Self {
        let (state, tools, failures, retry_at) = match status.state {
            wright_mcp::ServerState::Starting => (McpServerState::Starting, 0, 0, None),
            wright_mcp::ServerState::Up { tools } => (McpServerState::Up, tools, 0, None),
            wright_mcp::ServerState::Down { failures, retry_at_ms, .. } => {
                let retry_at = i64::try_from(retry_at_ms).ok().map(wright_core::iso_from_ms);
                (McpServerState::Down, 0, failures, retry_at)
            }
        };
        McpServerView {
            name: status.name,
            transport: status.transport.to_owned(),
            state,
            tools,
            skipped_tools: status.skipped_tools,
            last_error: status.last_error,
            failures,
            retry_at,
        }
    }
}

/// The MCP servers of `[mcp.servers]` in config.toml and how each is doing: up with its tool
/// count, or down with the reason and when it is tried again.
#[utoipa::path(get, path = "/api/mcp/servers", tag = "admin", responses((status = 200, body = Vec<McpServerView>)))]
pub(super) async fn servers(State(state): State<AppState>) -> Json<Vec<McpServerView>> {
    Json(state.tools.mcp_status().into_iter().map(McpServerView::from).collect())
}
