//! The agent's key-value state, for an admin: list keys, read, write, delete.

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct KeysQuery {
    /// Only keys starting with this prefix.
    pub prefix: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct KeysView {
    pub keys: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ValueView {
    /// The stored JSON value; null when the key does not exist.
    pub value: Value,
}

#[derive(Serialize, ToSchema)]
pub(super) struct DeletedView {
    pub deleted: bool,
}

#[derive(Serialize, ToSchema)]
pub(super) struct OkView {
    pub ok: bool,
}

/// The agent's state keys.
#[utoipa::path(
    get, path = "/api/agents/{agent}/state", tag = "state", params(("agent" = String, Path), KeysQuery),
    responses((status = 200, body = KeysView)),
)]
pub(super) async fn list_keys(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<KeysQuery>,
) -> Result<Json<KeysView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(KeysView { keys: state.store.list_state_keys(&agent, query.prefix.as_deref()).await? }))
}

/// One value.
#[utoipa::path(
    get, path = "/api/agents/{agent}/state/{key}", tag = "state",
    params(("agent" = String, Path), ("key" = String, Path)), responses((status = 200, body = ValueView)),
)]
pub(super) async fn get_value(
    State(state): State<AppState>,
    Path((agent, key)): Path<(String, String)>,
) -> Result<Json<ValueView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(ValueView { value: state.store.get_state(&agent, &key).await?.unwrap_or(Value::Null) }))
}

/// Writes the request body (any JSON) as the value of `key`.
#[utoipa::path(
    put, path = "/api/agents/{agent}/state/{key}", tag = "state", request_body = Value,
    params(("agent" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = OkView), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn set_value(
    State(state): State<AppState>,
    Path((agent, key)): Path<(String, String)>,
    ApiJson(value): ApiJson<Value>,
) -> Result<Json<OkView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state.store.set_state(&agent, &key, &value).await?;
    Ok(Json(OkView { ok: true }))
}

/// Deletes `key`.
#[utoipa::path(
    delete, path = "/api/agents/{agent}/state/{key}", tag = "state",
    params(("agent" = String, Path), ("key" = String, Path)), responses((status = 200, body = DeletedView)),
)]
pub(super) async fn delete_value(
    State(state): State<AppState>,
    Path((agent, key)): Path<(String, String)>,
) -> Result<Json<DeletedView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(DeletedView { deleted: state.store.delete_state(&agent, &key).await? }))
}
