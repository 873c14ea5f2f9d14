//! Agents: list and create.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wright_core::AgentId;

use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct AgentView {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

impl From<wright_store::Agent> for AgentView {
    fn from(agent: wright_store::Agent) -> Self {
        Self { id: agent.id, name: agent.name, created_at: agent.created_at }
    }
}

#[derive(Deserialize, ToSchema)]
pub(super) struct CreateAgent {
    /// 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit.
    pub id: String,
    /// A display name; defaults to the id.
    pub name: Option<String>,
}

/// Every agent of this installation.
#[utoipa::path(get, path = "/api/agents", tag = "agents", responses((status = 200, body = Vec<AgentView>)))]
pub(super) async fn list_agents(State(state): State<AppState>) -> Result<Json<Vec<AgentView>>, ApiError> {
    Ok(Json(state.store.list_agents().await?.into_iter().map(AgentView::from).collect()))
}

/// Creates an agent with the default system prompt and empty learned notes.
#[utoipa::path(
    post, path = "/api/agents", tag = "agents", request_body = CreateAgent,
    responses((status = 201, body = AgentView), (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn create_agent(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<CreateAgent>,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    let agent = AgentId::parse(&request.id)?;
    let created = state.store.create_agent(&agent, request.name.as_deref()).await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// The agent named in a path, validated and known to exist.
pub(super) async fn existing_agent(state: &AppState, raw: &str) -> Result<AgentId, ApiError> {
    let agent = AgentId::parse(raw)?;
    state.store.require_agent(&agent).await?;
    Ok(agent)
}
