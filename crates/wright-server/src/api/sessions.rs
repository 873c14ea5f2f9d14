//! An agent's sessions (seed 001, "Session Division"): the list the canvas groups
//! conversations by, and starting one — from the session list or by typing
//! `/newsession [name]` in a chat (read by [`crate::domain::channel`]), which also opens a new
//! conversation in the new session (`domain::sessions`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wright_core::iso_from_ms;
use wright_store::{Session, SessionStarter};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;
use crate::domain::sessions::{NewSession, start_for_person};

/// Who started a session.
#[derive(Debug, Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SessionStarterView {
    /// The configured daily or weekly division.
    Schedule,
    /// The person (`/newsession` or the session list).
    Person,
    /// The model, through `start_session`.
    Agent,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionView {
    pub id: i64,
    pub name: String,
    pub started_by: SessionStarterView,
    pub started_at: String,
    /// Null while the session is open.
    pub ended_at: Option<String>,
    /// The conversations that began in it, newest first.
    pub conversation_ids: Vec<String>,
}

impl From<Session> for SessionView {
    fn from(session: Session) -> Self {
        Self {
            id: session.id,
            name: session.name,
            started_by: match session.started_by {
                SessionStarter::Schedule => SessionStarterView::Schedule,
                SessionStarter::Person => SessionStarterView::Person,
                SessionStarter::Agent => SessionStarterView::Agent,
            },
            started_at: iso_from_ms(session.started_at),
            ended_at: session.ended_at.map(iso_from_ms),
            conversation_ids: session.conversation_ids,
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct NewSessionRequest {
    /// Defaults to the local date.
    pub name: Option<String>,
}

/// A new session and the conversation opened in it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct NewSessionView {
    pub session: SessionView,
    pub conversation_id: String,
}

impl From<NewSession> for NewSessionView {
    fn from(started: NewSession) -> Self {
        Self { session: started.session.into(), conversation_id: started.conversation_id }
    }
}

/// The agent's sessions, newest first (the open one, divided first if its time is up).
#[utoipa::path(
    get, path = "/api/agents/{agent}/sessions", tag = "sessions", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<SessionView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<SessionView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state.store.current_session(&agent).await?;
    let sessions = state.store.list_sessions(&agent, 200).await?;
    Ok(Json(sessions.into_iter().map(SessionView::from).collect()))
}

/// Starts a new session (the open one ends, with its session memories) and a conversation in it.
#[utoipa::path(
    post, path = "/api/agents/{agent}/sessions", tag = "sessions", params(("agent" = String, Path)),
    request_body = NewSessionRequest,
    responses((status = 201, body = NewSessionView), (status = 404, body = super::error::ErrorBody)),
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(request): ApiJson<NewSessionRequest>,
) -> Result<(StatusCode, Json<NewSessionView>), ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok((StatusCode::CREATED, Json(start_for_person(&state.store, &agent, request.name.as_deref()).await?.into())))
}
