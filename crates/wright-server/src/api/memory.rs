//! An agent's memories for the person: list by layer, search, store, edit, forget, restore and
//! each memory's history. Every change here is authored `admin`; the agent's own changes come
//! through the `memory` tool. Memories whose time has run out are archived before each list,
//! so the page shows them as expired.

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wright_core::{MemoryAction, MemoryAuthor, MemoryLayer, iso_from_ms};
use wright_store::{ArchivedReason, Memory, MemoryActor, MemoryChange, MemoryFilter, MemoryPatch, NewMemory};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

/// Why a memory is archived.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum ArchiveReasonView {
    /// Forgotten by the agent or the person.
    Forget,
    /// Its layer's lifetime ran out.
    Expire,
}

#[derive(Serialize, ToSchema)]
pub(super) struct MemoryView {
    pub id: i64,
    pub layer: MemoryLayer,
    pub category: Option<String>,
    /// 0 to 1.
    pub certainty: Option<f64>,
    pub content: String,
    /// The session a session-layer memory belongs to, and ends with.
    pub session_id: Option<i64>,
    pub conversation_id: Option<String>,
    pub author: MemoryAuthor,
    pub created_at: String,
    pub updated_at: String,
    /// Null: never expires.
    pub expires_at: Option<String>,
    pub archived_at: Option<String>,
    pub archived_reason: Option<ArchiveReasonView>,
    /// Search results only: BM25 weighted by layer and recency, 0 to 1.
    pub relevance: Option<f64>,
}

impl From<Memory> for MemoryView {
    fn from(memory: Memory) -> Self {
        Self {
            id: memory.id,
            layer: memory.layer,
            category: memory.category,
            certainty: memory.certainty,
            content: memory.content,
            session_id: memory.session_id,
            conversation_id: memory.conversation_id,
            author: memory.author,
            created_at: iso_from_ms(memory.created_at),
            updated_at: iso_from_ms(memory.updated_at),
            expires_at: memory.expires_at.map(iso_from_ms),
            archived_at: memory.archived_at.map(iso_from_ms),
            archived_reason: memory.archived_reason.map(|reason| match reason {
                ArchivedReason::Forget => ArchiveReasonView::Forget,
                ArchivedReason::Expire => ArchiveReasonView::Expire,
            }),
            relevance: memory.relevance,
        }
    }
}

/// One change in a memory's history, with the memory as it was after it.
#[derive(Serialize, ToSchema)]
pub(super) struct MemoryChangeView {
    pub id: i64,
    pub action: MemoryAction,
    pub author: MemoryAuthor,
    pub conversation_id: Option<String>,
    pub layer: MemoryLayer,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: String,
    pub expires_at: Option<String>,
    pub created_at: String,
}

impl From<MemoryChange> for MemoryChangeView {
    fn from(change: MemoryChange) -> Self {
        Self {
            id: change.id,
            action: change.action,
            author: change.author,
            conversation_id: change.conversation_id,
            layer: change.layer,
            category: change.category,
            certainty: change.certainty,
            content: change.content,
            expires_at: change.expires_at.map(iso_from_ms),
            created_at: iso_from_ms(change.created_at),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct MemoryQuery {
    /// Only this layer.
    pub layer: Option<MemoryLayer>,
    /// Archived (forgotten or expired) memories instead of active ones.
    #[serde(default)]
    pub archived: bool,
    /// Words to search for; most relevant first. Without it, newest first.
    pub query: Option<String>,
    /// At most this many (default 100, at most `[memory] max_results`).
    pub limit: Option<u32>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct NewMemoryRequest {
    pub layer: MemoryLayer,
    pub content: String,
    pub category: Option<String>,
    pub certainty: Option<f64>,
}

/// Every field given replaces the stored one; a new layer restarts the memory's lifetime.
#[derive(Deserialize, ToSchema)]
pub(super) struct MemoryEditRequest {
    pub layer: Option<MemoryLayer>,
    pub content: Option<String>,
    /// An empty string removes the category.
    pub category: Option<String>,
    pub certainty: Option<f64>,
}

fn parse_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse().map_err(|_| ApiError::bad_request(format!("a memory id is a whole number, not {raw:?}")))
}

/// Memories of an agent: by layer, active or archived, or matching a search.
#[utoipa::path(
    get, path = "/api/agents/{agent}/memories", tag = "memory",
    params(("agent" = String, Path), MemoryQuery),
    responses((status = 200, body = Vec<MemoryView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<MemoryQuery>,
) -> Result<Json<Vec<MemoryView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state.store.expire_memories().await?;
    let filter = MemoryFilter { layer: query.layer, archived: query.archived, session_id: None };
    let limit = query.limit.map_or(100, |limit| limit as usize);
    let memories = match query.query.as_deref().filter(|text| !text.trim().is_empty()) {
        Some(text) => state.memories.recall(&agent, text, &filter, limit).await?,
        None => state.store.list_memories(&agent, &filter, limit).await?,
    };
    Ok(Json(memories.into_iter().map(MemoryView::from).collect()))
}

/// Stores a memory for the agent, authored by the person.
#[utoipa::path(
    post, path = "/api/agents/{agent}/memories", tag = "memory", request_body = NewMemoryRequest,
    params(("agent" = String, Path)),
    responses((status = 200, body = MemoryView), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(request): ApiJson<NewMemoryRequest>,
) -> Result<Json<MemoryView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let memory = NewMemory {
        layer: request.layer,
        category: request.category.filter(|category| !category.trim().is_empty()),
        certainty: request.certainty,
        content: request.content,
    };
    Ok(Json(state.memories.store_memory(&agent, &memory, &MemoryActor::admin()).await?.into()))
}

/// Edits a memory (active or archived).
#[utoipa::path(
    patch, path = "/api/agents/{agent}/memories/{id}", tag = "memory", request_body = MemoryEditRequest,
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = MemoryView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn edit(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, String)>,
    ApiJson(request): ApiJson<MemoryEditRequest>,
) -> Result<Json<MemoryView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let patch = MemoryPatch {
        layer: request.layer,
        category: request.category,
        certainty: request.certainty,
        content: request.content,
    };
    Ok(Json(state.memories.edit_memory(&agent, parse_id(&id)?, &patch, &MemoryActor::admin()).await?.into()))
}

/// Archives a memory as forgotten; it can be restored.
#[utoipa::path(
    post, path = "/api/agents/{agent}/memories/{id}/forget", tag = "memory",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = MemoryView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn forget(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, String)>,
) -> Result<Json<MemoryView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.forget_memory(&agent, parse_id(&id)?, &MemoryActor::admin()).await?.into()))
}

/// Brings back a forgotten or expired memory; an expired one gets a fresh lifetime.
#[utoipa::path(
    post, path = "/api/agents/{agent}/memories/{id}/restore", tag = "memory",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = MemoryView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn restore(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, String)>,
) -> Result<Json<MemoryView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.memories.restore_memory(&agent, parse_id(&id)?, &MemoryActor::admin()).await?.into()))
}

/// Every change of a memory, oldest first: store, edit, forget, expire, restore.
#[utoipa::path(
    get, path = "/api/agents/{agent}/memories/{id}/history", tag = "memory",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = Vec<MemoryChangeView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn history(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, String)>,
) -> Result<Json<Vec<MemoryChangeView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let history = state.store.memory_history(&agent, parse_id(&id)?).await?;
    Ok(Json(history.into_iter().map(MemoryChangeView::from).collect()))
}
