//! The versioned documents of an agent: current text, history, one version, diff, rollback
//! and an admin's edit. `{kind}` is `system_prompt`, `learned_notes` or `db_notes` (the agent's
//! notes on what each table of its database is for).

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wright_core::{Author, DocumentKind};
use wright_store::{DocumentEdit, VersionMeta};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct DocumentView {
    pub content: String,
    pub version: i64,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct VersionSummaryView {
    pub version: i64,
    /// agent, admin, rollback or install.
    pub author: String,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
    /// Bytes of content.
    pub size: i64,
}

#[derive(Serialize, ToSchema)]
pub(super) struct VersionView {
    pub version: i64,
    pub content: String,
    pub author: String,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct NewVersion {
    pub version: i64,
}

#[derive(Serialize, ToSchema)]
pub(super) struct DiffView {
    pub from: i64,
    pub to: i64,
    /// A unified diff; empty when the versions are equal.
    pub diff: String,
}

/// An admin's edit: the same operations the agent's edit tools have.
#[derive(Deserialize, ToSchema)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub(super) enum EditRequest {
    Replace {
        content: String,
        reason: Option<String>,
    },
    FindReplace {
        find: String,
        replace: String,
        #[serde(default)]
        replace_all: bool,
        reason: Option<String>,
    },
    Append {
        content: String,
        reason: Option<String>,
    },
    Prepend {
        content: String,
        reason: Option<String>,
    },
    Delete {
        content: String,
        reason: Option<String>,
    },
}

impl EditRequest {
    fn into_edit(self) -> (DocumentEdit, Option<String>) {
        match self {
            EditRequest::Replace { content, reason } => (DocumentEdit::Replace { content }, reason),
            EditRequest::FindReplace { find, replace, replace_all, reason } => {
                (DocumentEdit::FindReplace { find, replace, replace_all }, reason)
            }
            EditRequest::Append { content, reason } => (DocumentEdit::Append { content }, reason),
            EditRequest::Prepend { content, reason } => (DocumentEdit::Prepend { content }, reason),
            EditRequest::Delete { content, reason } => (DocumentEdit::Delete { content }, reason),
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub(super) struct RollbackRequest {
    /// The version whose content becomes current again (as a new version).
    pub version: i64,
    pub reason: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DiffQuery {
    pub from: i64,
    pub to: i64,
}

fn parse_kind(raw: &str) -> Result<DocumentKind, ApiError> {
    Ok(DocumentKind::parse(raw)?)
}

fn parse_version(raw: &str) -> Result<i64, ApiError> {
    raw.parse().map_err(|_| ApiError::bad_request(format!("version must be a whole number, not {raw:?}")))
}

/// The current text and version.
#[utoipa::path(
    get, path = "/api/agents/{agent}/documents/{kind}", tag = "documents",
    params(("agent" = String, Path), ("kind" = String, Path, description = "system_prompt, learned_notes or db_notes")),
    responses((status = 200, body = DocumentView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn current(
    State(state): State<AppState>,
    Path((agent, kind)): Path<(String, String)>,
) -> Result<Json<DocumentView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let document = state.store.document(&agent, parse_kind(&kind)?).await?;
    Ok(Json(DocumentView { content: document.content, version: document.version, updated_at: document.updated_at }))
}

/// An admin's edit; writes a new version authored by `admin`.
#[utoipa::path(
    post, path = "/api/agents/{agent}/documents/{kind}", tag = "documents", request_body = EditRequest,
    params(("agent" = String, Path), ("kind" = String, Path)),
    responses((status = 200, body = NewVersion), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn admin_edit(
    State(state): State<AppState>,
    Path((agent, kind)): Path<(String, String)>,
    ApiJson(request): ApiJson<EditRequest>,
) -> Result<Json<NewVersion>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let (edit, reason) = request.into_edit();
    let meta = VersionMeta::new(Author::Admin).with_reason(reason);
    let version = state.store.edit_document(&agent, parse_kind(&kind)?, &edit, &meta).await?;
    Ok(Json(NewVersion { version }))
}

/// The history, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/documents/{kind}/versions", tag = "documents",
    params(("agent" = String, Path), ("kind" = String, Path)),
    responses((status = 200, body = Vec<VersionSummaryView>)),
)]
pub(super) async fn versions(
    State(state): State<AppState>,
    Path((agent, kind)): Path<(String, String)>,
) -> Result<Json<Vec<VersionSummaryView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let history = state.store.document_versions(&agent, parse_kind(&kind)?).await?;
    Ok(Json(history.into_iter().map(VersionSummaryView::from).collect()))
}

impl From<wright_store::VersionSummary> for VersionSummaryView {
    fn from(entry: wright_store::VersionSummary) -> Self {
        VersionSummaryView {
            version: entry.version,
            author: entry.author.as_str().to_owned(),
            reason: entry.reason,
            conversation_id: entry.conversation_id,
            tool_call_id: entry.tool_call_id,
            created_at: entry.created_at,
            size: entry.size,
        }
    }
}

/// One version in full.
#[utoipa::path(
    get, path = "/api/agents/{agent}/documents/{kind}/versions/{version}", tag = "documents",
    params(("agent" = String, Path), ("kind" = String, Path), ("version" = i64, Path)),
    responses((status = 200, body = VersionView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn version(
    State(state): State<AppState>,
    Path((agent, kind, version)): Path<(String, String, String)>,
) -> Result<Json<VersionView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let stored = state.store.document_version(&agent, parse_kind(&kind)?, parse_version(&version)?).await?;
    Ok(Json(VersionView {
        version: stored.version,
        content: stored.content,
        author: stored.author.as_str().to_owned(),
        reason: stored.reason,
        conversation_id: stored.conversation_id,
        tool_call_id: stored.tool_call_id,
        created_at: stored.created_at,
    }))
}

/// A unified diff between two versions.
#[utoipa::path(
    get, path = "/api/agents/{agent}/documents/{kind}/diff", tag = "documents",
    params(("agent" = String, Path), ("kind" = String, Path), DiffQuery),
    responses((status = 200, body = DiffView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn diff(
    State(state): State<AppState>,
    Path((agent, kind)): Path<(String, String)>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<DiffView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let diff = state.store.document_diff(&agent, parse_kind(&kind)?, query.from, query.to).await?;
    Ok(Json(DiffView { from: query.from, to: query.to, diff }))
}

/// Makes an old version current again by writing it as a new version (author `rollback`).
#[utoipa::path(
    post, path = "/api/agents/{agent}/documents/{kind}/rollback", tag = "documents", request_body = RollbackRequest,
    params(("agent" = String, Path), ("kind" = String, Path)),
    responses((status = 200, body = NewVersion), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn rollback(
    State(state): State<AppState>,
    Path((agent, kind)): Path<(String, String)>,
    ApiJson(request): ApiJson<RollbackRequest>,
) -> Result<Json<NewVersion>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let version = state.store.rollback_document(&agent, parse_kind(&kind)?, request.version, request.reason).await?;
    Ok(Json(NewVersion { version }))
}
