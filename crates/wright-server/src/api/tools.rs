//! Tools: list what an agent can call (with the policy each follows), set an agent's policy
//! for a tool, read and set its toolsets and how their schemas are sent (tool settings), invoke
//! a tool directly, read the execution log.

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use wright_core::ToolPolicy;
use wright_core::{Caller, DecidedBy, ErrorCategory, Invocation, ToolKind};
use wright_store::ExecutionFilter;

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct ToolView {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the tool's arguments.
    pub parameters: Value,
    /// builtin or agent.
    pub kind: String,
    /// The policy the agent's calls of this tool follow: its own, or the tool's default.
    pub policy: ToolPolicy,
    /// The tool's default policy (reads allow; outside effects ask).
    pub default_policy: ToolPolicy,
    /// Whether the agent has a policy of its own for this tool.
    pub overridden: bool,
    /// When calls still ask although the default is `allow` (a write into the operator's roots);
    /// null when the default holds for every call.
    pub asks_when: Option<String>,
    /// The toolset of a built-in (switched on or off per agent in its tool settings); null
    /// for the agent's own and MCP tools, which are always available.
    pub toolset: Option<wright_core::Toolset>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct PolicyUpdate {
    /// The agent's policy for the tool; null removes it, so the tool's default applies.
    pub policy: Option<ToolPolicy>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ExecutionView {
    pub id: i64,
    pub tool_name: String,
    pub tool_kind: ToolKind,
    /// The version of an agent-made tool that ran; null for a built-in.
    pub tool_version: Option<i64>,
    pub caller: Caller,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub args: Value,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub error_category: Option<ErrorCategory>,
    pub success: bool,
    pub duration_us: i64,
    /// Who let the call run or refused it (`policy` or `person`); null for the operator's
    /// own calls, to which no policy applies.
    pub decided_by: Option<DecidedBy>,
    pub created_at: String,
    /// Where the result came from when it is outside content (a page's host, the hosts code
    /// fetched from, the MCP tool or search that answered); null for the agent's own stores.
    pub outside_origin: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ExecutionQuery {
    pub tool: Option<String>,
    pub success: Option<bool>,
    pub error_category: Option<ErrorCategory>,
    /// Only calls made in this conversation.
    pub conversation_id: Option<String>,
    /// Only calls made in the conversations of this session.
    pub session_id: Option<i64>,
    /// Only calls recorded at or after this time (ISO-8601 UTC).
    pub since: Option<String>,
    /// At most this many, newest first (default 100, at most 1,000).
    pub limit: Option<i64>,
}

/// Every tool the agent can call, with its schema.
#[utoipa::path(
    get, path = "/api/agents/{agent}/tools", tag = "tools", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<ToolView>)),
)]
pub(super) async fn list_tools(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<ToolView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let own: std::collections::HashMap<String, ToolPolicy> =
        state.store.tool_policies(&agent).await?.into_iter().collect();
    Ok(Json(
        state
            .tools
            .list(&agent)
            .await?
            .into_iter()
            .map(|tool| {
                let default_policy = state.tools.default_policy(&tool.name);
                let overridden = own.get(&tool.name).copied();
                ToolView {
                    policy: overridden.unwrap_or(default_policy),
                    default_policy,
                    overridden: overridden.is_some(),
                    asks_when: state.tools.asks_when(&tool.name).map(str::to_owned),
                    name: tool.name,
                    description: tool.description,
                    parameters: tool.parameters,
                    kind: tool.kind.as_str().to_owned(),
                    toolset: tool.toolset,
                }
            })
            .collect(),
    ))
}

/// Sets the agent's policy for a tool (`allow`, `ask`: wait for the person's approval, `deny`),
/// or removes it (`null`) so the tool's default applies. Takes effect on the next call.
#[utoipa::path(
    put, path = "/api/agents/{agent}/tools/{name}/policy", tag = "tools", request_body = PolicyUpdate,
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = ToolView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn set_policy(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(update): ApiJson<PolicyUpdate>,
) -> Result<Json<ToolView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let tool = state.tools.list(&agent).await?.into_iter().find(|tool| tool.name == name).ok_or_else(|| {
        ApiError::new(axum::http::StatusCode::NOT_FOUND, "not_found", format!("no tool named {name:?} for this agent"))
    })?;
    state.store.set_tool_policy(&agent, &name, update.policy).await?;
    let default_policy = state.tools.default_policy(&name);
    Ok(Json(ToolView {
        policy: update.policy.unwrap_or(default_policy),
        default_policy,
        overridden: update.policy.is_some(),
        asks_when: state.tools.asks_when(&name).map(str::to_owned),
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        kind: tool.kind.as_str().to_owned(),
        toolset: tool.toolset,
    }))
}

/// Runs a tool for the agent with the JSON body as its arguments and returns its JSON result.
#[utoipa::path(
    post, path = "/api/agents/{agent}/tools/{name}/invoke", tag = "tools", request_body = Value,
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Value), (status = 404, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn invoke_tool(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(args): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let invocation = Invocation {
        agent,
        name,
        args,
        caller: Caller::Api,
        conversation_id: None,
        tool_call_id: None,
        decided_by: None,
    };
    Ok(Json(state.tools.invoke(invocation).await?))
}

/// The tool execution log, newest first, with filters.
#[utoipa::path(
    get, path = "/api/agents/{agent}/executions", tag = "tools", params(("agent" = String, Path), ExecutionQuery),
    responses((status = 200, body = Vec<ExecutionView>)),
)]
pub(super) async fn list_executions(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<ExecutionQuery>,
) -> Result<Json<Vec<ExecutionView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let filter = ExecutionFilter {
        tool_name: query.tool,
        success: query.success,
        error_category: query.error_category.map(|category| category.as_str().to_owned()),
        conversation_id: query.conversation_id,
        session_id: query.session_id,
        since: query.since,
        limit: query.limit,
    };
    let executions = state.store.list_executions(&agent, &filter).await?;
    // The stored spellings are the enums' own; a row that does not fit is a bug, answered as one.
    let stored = |error: wright_core::CoreError| ApiError::internal(&error);
    let views = executions
        .into_iter()
        .map(|execution| {
            Ok(ExecutionView {
                id: execution.id,
                tool_name: execution.tool_name,
                tool_kind: ToolKind::parse(&execution.tool_kind).map_err(stored)?,
                tool_version: execution.tool_version,
                caller: Caller::parse(&execution.caller).map_err(stored)?,
                conversation_id: execution.conversation_id,
                tool_call_id: execution.tool_call_id,
                args: execution.args,
                result: execution.result,
                error: execution.error,
                error_category: execution
                    .error_category
                    .as_deref()
                    .map(ErrorCategory::parse)
                    .transpose()
                    .map_err(stored)?,
                success: execution.success,
                duration_us: execution.duration_us,
                decided_by: execution.decided_by.as_deref().map(DecidedBy::parse).transpose().map_err(stored)?,
                created_at: execution.created_at,
                outside_origin: execution.outside_origin,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Json(views))
}

/// The agent's toolsets and how their schemas reach the model: as last set here, else as
/// `[agents.<id>.tools]` in config.toml says, else the defaults.
#[utoipa::path(
    get, path = "/api/agents/{agent}/tool-settings", tag = "tools", params(("agent" = String, Path)),
    responses((status = 200, body = wright_core::ToolSettings)),
)]
pub(super) async fn get_tool_settings(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<wright_core::ToolSettings>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.runs.tool_settings(&agent).await?))
}

/// Replaces the agent's tool settings; the next run uses them. `always_loaded` must name
/// tools the agent has.
#[utoipa::path(
    put, path = "/api/agents/{agent}/tool-settings", tag = "tools", params(("agent" = String, Path)),
    request_body = wright_core::ToolSettings,
    responses((status = 200, body = wright_core::ToolSettings), (status = 400, body = super::error::ErrorBody)),
)]
pub(super) async fn set_tool_settings(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(settings): ApiJson<wright_core::ToolSettings>,
) -> Result<Json<wright_core::ToolSettings>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let tools = state.tools.list(&agent).await?;
    if let Some(unknown) = settings.always_loaded.iter().find(|name| !tools.iter().any(|tool| &tool.name == *name)) {
        let closest = wright_core::closest_names(unknown, tools.iter().map(|tool| tool.name.as_str()));
        return Err(ApiError::bad_request(format!(
            "always_loaded names `{unknown}`, which is not a tool of this agent (closest: {})",
            closest.join(", ")
        )));
    }
    state.store.set_tool_settings(&agent, &settings).await?;
    Ok(Json(settings))
}
