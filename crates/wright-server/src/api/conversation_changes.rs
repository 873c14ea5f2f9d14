//! The person's changes to a conversation as a whole: rename, archive or bring back, delete
//! (the canvas asks for a confirmation first), and the list of archived conversations.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::agents::existing_agent;
use super::conversations::ConversationView;
use super::{ApiError, ApiJson};
use crate::AppState;

/// Every field given is applied.
#[derive(Deserialize, ToSchema)]
pub(super) struct ConversationChange {
    pub title: Option<String>,
    /// `true` archives (it leaves the list), `false` brings it back.
    pub archived: Option<bool>,
}

/// Renames, archives or brings back a conversation.
#[utoipa::path(
    patch, path = "/api/conversations/{id}", tag = "conversations", params(("id" = String, Path)),
    request_body = ConversationChange,
    responses((status = 200, body = ConversationView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<ConversationChange>,
) -> Result<Json<ConversationView>, ApiError> {
    let mut conversation = state.store.conversation(&id).await?;
    if let Some(title) = change.title {
        conversation = state.store.rename_conversation(&id, &title).await?;
    }
    if let Some(archived) = change.archived {
        conversation = state.store.set_conversation_archived(&id, archived).await?;
    }
    Ok(Json(conversation.into()))
}

/// Deletes a conversation and its events; refused (422) while its run is going.
#[utoipa::path(
    delete, path = "/api/conversations/{id}", tag = "conversations", params(("id" = String, Path)),
    responses((status = 204), (status = 404, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn delete(State(state): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    // A run whose process died is ended first, so its conversation can go.
    state.store.conversation(&id).await?;
    state.runs.recover_if_orphaned(&id).await?;
    state.store.delete_conversation(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The agent's archived conversations, most recently active first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/conversations/archived", tag = "conversations", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<ConversationView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn archived(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<ConversationView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let conversations = state.store.list_archived_conversations(&agent).await?;
    Ok(Json(conversations.into_iter().map(ConversationView::from).collect()))
}
