//! An agent's skills (Agent Skills layout): list, read, create, write, switch on and off,
//! delete; history, one version, diff and rollback as for documents; import from a JSON of a
//! folder's files or a ZIP of the folder, and export to a JSON of files. Every write is a version authored by `admin` (a rollback
//! by `rollback`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wright_core::Author;
use wright_store::{SkillChange, VersionMeta};

use super::agents::existing_agent;
use super::documents::{DiffQuery, DiffView, NewVersion, RollbackRequest, VersionSummaryView};
use super::{ApiError, ApiJson};
use crate::AppState;
use crate::domain::skills;

#[derive(Serialize, ToSchema)]
pub(super) struct SkillSummaryView {
    pub name: String,
    pub description: String,
    /// Only enabled skills are listed to the model.
    pub enabled: bool,
    pub version: i64,
    pub updated_at: String,
    /// Paths of the resource files.
    pub resources: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct SkillView {
    pub name: String,
    pub description: String,
    /// SKILL.md whole: front matter and body.
    pub content: String,
    /// The instructions after the front matter.
    pub body: String,
    /// Resource files, path → text.
    pub resources: BTreeMap<String, String>,
    pub enabled: bool,
    pub version: i64,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct SkillVersionView {
    pub version: i64,
    pub content: String,
    pub resources: BTreeMap<String, String>,
    pub enabled: bool,
    /// This version deleted the skill.
    pub deleted: bool,
    /// agent, admin, rollback or install.
    pub author: String,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

/// A new skill: its SKILL.md (whose front matter names it) and resource files.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateSkill {
    pub content: String,
    #[serde(default)]
    pub resources: BTreeMap<String, String>,
    pub reason: Option<String>,
}

/// A change to a skill: any of SKILL.md (whole), the resource files (all of them), the switch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct UpdateSkill {
    pub content: Option<String>,
    pub resources: Option<BTreeMap<String, String>>,
    pub enabled: Option<bool>,
    pub reason: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ReasonQuery {
    pub reason: Option<String>,
}

/// A skill folder's files, path → text (`SKILL.md` at the root or under one top folder).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ImportRequest {
    pub files: BTreeMap<String, String>,
    pub reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct Imported {
    pub name: String,
    pub version: i64,
    /// Files left out (hidden, or not text), with why.
    pub skipped: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ExportView {
    pub name: String,
    /// path → text, SKILL.md included.
    pub files: BTreeMap<String, String>,
}

fn admin(reason: Option<String>) -> VersionMeta {
    VersionMeta::new(Author::Admin).with_reason(reason)
}

fn parse_version(raw: &str) -> Result<i64, ApiError> {
    raw.parse().map_err(|_| ApiError::bad_request(format!("version must be a whole number, not {raw:?}")))
}

/// The agent's skills, by name.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills", tag = "skills", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<SkillSummaryView>)),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<SkillSummaryView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let skills = state.store.skills(&agent).await?;
    Ok(Json(
        skills
            .into_iter()
            .map(|skill| SkillSummaryView {
                name: skill.name,
                description: skill.description,
                enabled: skill.enabled,
                version: skill.version,
                updated_at: skill.updated_at,
                resources: skill.resources,
            })
            .collect(),
    ))
}

/// Creates a skill from its SKILL.md and files.
#[utoipa::path(
    post, path = "/api/agents/{agent}/skills", tag = "skills", request_body = CreateSkill,
    params(("agent" = String, Path)),
    responses((status = 201, body = Imported), (status = 409, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(request): ApiJson<CreateSkill>,
) -> Result<(StatusCode, Json<Imported>), ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let name = wright_core::SkillFile::parse(&request.content)?.name;
    let change = SkillChange::Create { content: request.content, resources: request.resources, enabled: true };
    let version = state.store.change_skill(&agent, &name, change, &admin(request.reason)).await?;
    Ok((StatusCode::CREATED, Json(Imported { name, version, skipped: Vec::new() })))
}

/// One skill as it is now.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills/{name}", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = SkillView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn detail(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<SkillView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let skill = state.store.skill(&agent, &name).await?;
    Ok(Json(SkillView {
        name: skill.name,
        description: skill.description,
        content: skill.content,
        body: skill.body,
        resources: skill.resources,
        enabled: skill.enabled,
        version: skill.version,
        updated_at: skill.updated_at,
    }))
}

/// Changes a skill: SKILL.md, its files, or its switch (each given part is one version).
#[utoipa::path(
    put, path = "/api/agents/{agent}/skills/{name}", tag = "skills", request_body = UpdateSkill,
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = NewVersion), (status = 404, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn update(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<UpdateSkill>,
) -> Result<Json<NewVersion>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let meta = admin(request.reason);
    let mut version = None;
    if request.content.is_some() || request.resources.is_some() {
        let content = match request.content {
            Some(content) => content,
            None => state.store.skill(&agent, &name).await?.content,
        };
        let change = SkillChange::Write { content, resources: request.resources };
        version = Some(state.store.change_skill(&agent, &name, change, &meta).await?);
    }
    if let Some(enabled) = request.enabled {
        version = Some(state.store.change_skill(&agent, &name, SkillChange::Enable(enabled), &meta).await?);
    }
    let version = version.ok_or_else(|| ApiError::bad_request("give content, resources or enabled"))?;
    Ok(Json(NewVersion { version }))
}

/// Deletes a skill (a version: its history stays and a rollback restores it).
#[utoipa::path(
    delete, path = "/api/agents/{agent}/skills/{name}", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path), ReasonQuery),
    responses((status = 200, body = NewVersion), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    Query(query): Query<ReasonQuery>,
) -> Result<Json<NewVersion>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let version = state.store.change_skill(&agent, &name, SkillChange::Delete, &admin(query.reason)).await?;
    Ok(Json(NewVersion { version }))
}

/// The skill's history, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills/{name}/versions", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Vec<VersionSummaryView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn versions(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<Vec<VersionSummaryView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let history = state.store.skill_versions(&agent, &name).await?;
    Ok(Json(history.into_iter().map(VersionSummaryView::from).collect()))
}

/// One version in full.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills/{name}/versions/{version}", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path), ("version" = i64, Path)),
    responses((status = 200, body = SkillVersionView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn version(
    State(state): State<AppState>,
    Path((agent, name, version)): Path<(String, String, String)>,
) -> Result<Json<SkillVersionView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let stored = state.store.skill_version(&agent, &name, parse_version(&version)?).await?;
    Ok(Json(SkillVersionView {
        version: stored.version,
        content: stored.content,
        resources: stored.resources,
        enabled: stored.enabled,
        deleted: stored.deleted,
        author: stored.author.as_str().to_owned(),
        reason: stored.reason,
        conversation_id: stored.conversation_id,
        tool_call_id: stored.tool_call_id,
        created_at: stored.created_at,
    }))
}

/// A unified diff of the folder between two versions.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills/{name}/diff", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path), DiffQuery),
    responses((status = 200, body = DiffView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn diff(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<DiffView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let diff = state.store.skill_diff(&agent, &name, query.from, query.to).await?;
    Ok(Json(DiffView { from: query.from, to: query.to, diff }))
}

/// Makes an old version current again (folder, switch and deletion), as a new version.
#[utoipa::path(
    post, path = "/api/agents/{agent}/skills/{name}/rollback", tag = "skills", request_body = RollbackRequest,
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = NewVersion), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn rollback(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<RollbackRequest>,
) -> Result<Json<NewVersion>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let version = state.store.rollback_skill(&agent, &name, request.version, request.reason).await?;
    Ok(Json(NewVersion { version }))
}

/// Imports a folder in the Agent Skills layout, given as its files: a new skill, or a new
/// version of the one its SKILL.md names.
#[utoipa::path(
    post, path = "/api/agents/{agent}/skills/import", tag = "skills", request_body = ImportRequest,
    params(("agent" = String, Path)),
    responses((status = 200, body = Imported), (status = 400, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn import(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(request): ApiJson<ImportRequest>,
) -> Result<Json<Imported>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let files = request.files.into_iter().map(|(path, text)| (path, text.into_bytes())).collect();
    let folder = skills::folder(files)?;
    let version = skills::import(&state.store, &agent, &folder, request.reason).await?;
    Ok(Json(Imported { name: folder.name, version, skipped: folder.skipped }))
}

/// Imports a ZIP archive of a folder in the Agent Skills layout (the body is the archive).
#[utoipa::path(
    post, path = "/api/agents/{agent}/skills/import-zip", tag = "skills",
    request_body(content = Vec<u8>, content_type = "application/zip"),
    params(("agent" = String, Path), ReasonQuery),
    responses((status = 200, body = Imported), (status = 400, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn import_zip(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<ReasonQuery>,
    body: axum::body::Bytes,
) -> Result<Json<Imported>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let folder = skills::folder(crate::domain::zip::unzip(&body)?)?;
    let version =
        skills::import(&state.store, &agent, &folder, query.reason.or_else(|| Some("imported from a ZIP".into())))
            .await?;
    Ok(Json(Imported { name: folder.name, version, skipped: folder.skipped }))
}

/// The skill's folder as files, to import elsewhere.
#[utoipa::path(
    get, path = "/api/agents/{agent}/skills/{name}/export", tag = "skills",
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = ExportView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn export(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<ExportView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let files = skills::export(&state.store, &agent, &name).await?;
    Ok(Json(ExportView { name, files }))
}
