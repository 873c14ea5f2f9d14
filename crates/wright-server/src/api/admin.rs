//! What an admin needs to see and undo what an agent wrote about itself: every agent tool
//! and component with its history, diffs, rollback, enabling; tool statistics. (Documents
//! have their own routes in `documents`.)

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct AgentToolView {
    pub name: String,
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
    pub enabled: bool,
    pub version: i64,
    /// Where an installed tool came from: {kind, listing, version, hash}; null if the agent wrote it.
    pub provenance: Option<Value>,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ArtifactVersionView {
    pub version: i64,
    pub author: String,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
    /// The version's content: tools {description, parameter_schema, code}; components
    /// {description, code, props_schema}.
    pub content: Value,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct RollbackTo {
    pub version: i64,
    pub reason: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct SetEnabled {
    pub enabled: bool,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DiffQuery {
    pub from: i64,
    pub to: i64,
}

#[derive(Serialize, ToSchema)]
pub(super) struct DiffText {
    pub diff: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct StatsQuery {
    /// The window, in days (default 7).
    pub days: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct CategoryCount {
    pub category: String,
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ToolStat {
    pub tool: String,
    pub calls: i64,
    pub failures: i64,
    pub avg_duration_ms: f64,
}

#[derive(Serialize, ToSchema)]
pub(super) struct StatsView {
    pub days: i64,
    pub total: i64,
    pub successful: i64,
    pub failed: i64,
    pub avg_duration_ms: f64,
    pub top_error_categories: Vec<CategoryCount>,
    pub by_tool: Vec<ToolStat>,
}

fn tool_view(tool: wright_store::AgentTool) -> AgentToolView {
    AgentToolView {
        name: tool.name,
        description: tool.description,
        parameter_schema: tool.parameter_schema,
        code: tool.code,
        enabled: tool.enabled,
        version: tool.version,
        provenance: tool.provenance,
        updated_at: tool.updated_at,
    }
}

/// Every tool the agent wrote or installed, enabled or not.
#[utoipa::path(
    get, path = "/api/agents/{agent}/agent-tools", tag = "admin", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<AgentToolView>)),
)]
pub(super) async fn list_agent_tools(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<AgentToolView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.list_agent_tools(&agent, true).await?.into_iter().map(tool_view).collect()))
}

async fn tool_versions(state: &AppState, agent: &str, name: &str) -> Result<Vec<ArtifactVersionView>, ApiError> {
    let agent = existing_agent(state, agent).await?;
    Ok(state
        .store
        .agent_tool_versions(&agent, name)
        .await?
        .into_iter()
        .map(|version| ArtifactVersionView {
            version: version.version,
            author: version.author.as_str().to_owned(),
            reason: version.reason,
            conversation_id: version.conversation_id,
            tool_call_id: version.tool_call_id,
            created_at: version.created_at,
            content: serde_json::json!({
                "description": version.description, "parameter_schema": version.parameter_schema, "code": version.code,
            }),
        })
        .collect())
}

async fn component_versions(state: &AppState, agent: &str, name: &str) -> Result<Vec<ArtifactVersionView>, ApiError> {
    let agent = existing_agent(state, agent).await?;
    Ok(state
        .store
        .ui_component_versions(&agent, name)
        .await?
        .into_iter()
        .map(|version| ArtifactVersionView {
            version: version.version,
            author: version.author.as_str().to_owned(),
            reason: version.reason,
            conversation_id: version.conversation_id,
            tool_call_id: version.tool_call_id,
            created_at: version.created_at,
            content: serde_json::json!({
                "description": version.description, "code": version.code, "props_schema": version.props_schema,
            }),
        })
        .collect())
}

/// A readable diff of two versions' content: the code, then the rest as pretty JSON; bounded
/// and off the async threads like every diff (`Store::diff`).
async fn diff_versions(
    store: &wright_store::Store,
    versions: &[ArtifactVersionView],
    from: i64,
    to: i64,
) -> Result<String, ApiError> {
    let find = |wanted: i64| {
        versions.iter().find(|version| version.version == wanted).ok_or_else(|| {
            ApiError::new(axum::http::StatusCode::NOT_FOUND, "not_found", format!("version {wanted} does not exist"))
        })
    };
    let (old, new) = (find(from)?, find(to)?);
    let code = |version: &ArtifactVersionView| version.content["code"].as_str().unwrap_or_default().to_owned();
    let rest = |version: &ArtifactVersionView| {
        let mut content = version.content.clone();
        if let Some(object) = content.as_object_mut() {
            object.remove("code");
        }
        serde_json::to_string_pretty(&content).unwrap_or_default() + "\n"
    };
    let mut diff = store.diff(&code(old), &code(new), &format!("code v{from}"), &format!("code v{to}")).await?;
    diff.push_str(
        &store.diff(&rest(old), &rest(new), &format!("definition v{from}"), &format!("definition v{to}")).await?,
    );
    Ok(diff)
}

/// The history of one agent tool, newest first, with each version's content.
#[utoipa::path(
    get, path = "/api/agents/{agent}/agent-tools/{name}/versions", tag = "admin",
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = Vec<ArtifactVersionView>)),
)]
pub(super) async fn agent_tool_versions(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<Vec<ArtifactVersionView>>, ApiError> {
    Ok(Json(tool_versions(&state, &agent, &name).await?))
}

/// A diff between two versions of an agent tool.
#[utoipa::path(
    get, path = "/api/agents/{agent}/agent-tools/{name}/diff", tag = "admin",
    params(("agent" = String, Path), ("name" = String, Path), DiffQuery), responses((status = 200, body = DiffText)),
)]
pub(super) async fn agent_tool_diff(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<DiffText>, ApiError> {
    let versions = tool_versions(&state, &agent, &name).await?;
    Ok(Json(DiffText { diff: diff_versions(&state.store, &versions, query.from, query.to).await? }))
}

/// Makes an old version of an agent tool current again, as a new version.
#[utoipa::path(
    post, path = "/api/agents/{agent}/agent-tools/{name}/rollback", tag = "admin", request_body = RollbackTo,
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = AgentToolView)),
)]
pub(super) async fn agent_tool_rollback(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<RollbackTo>,
) -> Result<Json<AgentToolView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(tool_view(state.store.rollback_agent_tool(&agent, &name, request.version, request.reason).await?)))
}

/// Enables or disables an agent tool (installed tools start disabled).
#[utoipa::path(
    put, path = "/api/agents/{agent}/agent-tools/{name}/enabled", tag = "admin", request_body = SetEnabled,
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = AgentToolView)),
)]
pub(super) async fn agent_tool_enabled(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<SetEnabled>,
) -> Result<Json<AgentToolView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(tool_view(state.store.set_agent_tool_enabled(&agent, &name, request.enabled).await?)))
}

/// The history of one component, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/components/{name}/versions", tag = "admin",
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = Vec<ArtifactVersionView>)),
)]
pub(super) async fn component_history(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<Vec<ArtifactVersionView>>, ApiError> {
    Ok(Json(component_versions(&state, &agent, &name).await?))
}

/// A diff between two versions of a component.
#[utoipa::path(
    get, path = "/api/agents/{agent}/components/{name}/diff", tag = "admin",
    params(("agent" = String, Path), ("name" = String, Path), DiffQuery), responses((status = 200, body = DiffText)),
)]
pub(super) async fn component_diff(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<DiffText>, ApiError> {
    let versions = component_versions(&state, &agent, &name).await?;
    Ok(Json(DiffText { diff: diff_versions(&state.store, &versions, query.from, query.to).await? }))
}

/// Makes an old version of a component current again, as a new version.
#[utoipa::path(
    post, path = "/api/agents/{agent}/components/{name}/rollback", tag = "admin", request_body = RollbackTo,
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = super::components::ComponentSummary)),
)]
pub(super) async fn component_rollback(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<RollbackTo>,
) -> Result<Json<super::components::ComponentSummary>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let component = state.store.rollback_ui_component(&agent, &name, request.version, request.reason).await?;
    Ok(Json(component.into()))
}

/// Enables or disables a component (installed components start disabled).
#[utoipa::path(
    put, path = "/api/agents/{agent}/components/{name}/enabled", tag = "admin", request_body = SetEnabled,
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = super::components::ComponentSummary)),
)]
pub(super) async fn component_enabled(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<SetEnabled>,
) -> Result<Json<super::components::ComponentSummary>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let component = state.store.set_ui_component_enabled(&agent, &name, request.enabled).await?;
    Ok(Json(component.into()))
}

/// Tool-call statistics over the last `days` days (seed 001's stats).
#[utoipa::path(
    get, path = "/api/agents/{agent}/stats", tag = "admin", params(("agent" = String, Path), StatsQuery),
    responses((status = 200, body = StatsView)),
)]
pub(super) async fn stats(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<StatsQuery>,
) -> Result<Json<StatsView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let stats = state.store.execution_stats(&agent, query.days.unwrap_or(7)).await?;
    Ok(Json(StatsView {
        days: stats.days,
        total: stats.total,
        successful: stats.successful,
        failed: stats.failed,
        avg_duration_ms: stats.avg_duration_ms,
        top_error_categories: stats
            .top_error_categories
            .into_iter()
            .map(|(category, count)| CategoryCount { category, count })
            .collect(),
        by_tool: stats
            .by_tool
            .into_iter()
            .map(|(tool, calls, failures, avg_duration_ms)| ToolStat { tool, calls, failures, avg_duration_ms })
            .collect(),
    }))
}
