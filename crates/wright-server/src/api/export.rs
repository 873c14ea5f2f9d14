//! `GET /api/conversations/{id}/export?format=markdown|json`: a conversation as a file to
//! save ([`crate::export`] renders it; `wright conversation export` writes the same bytes).

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::ApiError;
use crate::AppState;
use crate::export::{ConversationExport, ExportFormat};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ExportQuery {
    /// `markdown` (the default) or `json`.
    pub format: Option<ExportFormat>,
}

/// The conversation as a download: Markdown (what was said; each tool call folded with its
/// result) or JSON (the typed events), with a file name in `Content-Disposition`.
#[utoipa::path(
    get, path = "/api/conversations/{id}/export", tag = "conversations", params(("id" = String, Path), ExportQuery),
    responses(
        (status = 200, description = "The conversation as a file",
         content((String = "text/markdown"), (ConversationExport = "application/json"))),
        (status = 404, body = super::error::ErrorBody),
    ),
)]
pub(super) async fn export(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<ExportQuery>,
) -> Result<Response, ApiError> {
    let exported = crate::export::export(&state.store, &id, query.format.unwrap_or(ExportFormat::Markdown)).await?;
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", exported.filename))
        .map_err(|error| ApiError::internal(&error))?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(exported.content_type)),
            (header::CONTENT_DISPOSITION, disposition),
            // A conversation is private: no cache keeps a copy.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        exported.body,
    )
        .into_response())
}
