//! The marketplace over HTTP: search listings, read one with its code, schema, versions and
//! statistics, publish, install, update with a diff, uninstall, export and import bundles.

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use wright_tools::market::{self, OnConflict};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct ListingView {
    /// tool or component.
    pub kind: String,
    pub name: String,
    pub publisher_agent: String,
    pub description: String,
    pub latest_version: i64,
    pub latest_hash: String,
    pub created_at: String,
    /// `local` (published on this installation) or `import` (made from a bundle file).
    pub origin: String,
}

impl From<wright_store::Listing> for ListingView {
    fn from(listing: wright_store::Listing) -> Self {
        Self {
            kind: listing.kind,
            name: listing.name,
            publisher_agent: listing.publisher_agent,
            description: listing.description,
            latest_version: listing.latest_version,
            latest_hash: listing.latest_hash,
            created_at: listing.created_at,
            origin: listing.origin,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(super) struct ListingVersionView {
    pub version: i64,
    pub description: String,
    /// The bundle: {format, kind, name, description, code, parameter_schema | props_schema}.
    pub bundle: Value,
    pub hash: String,
    /// The agent that published it here; empty when imported.
    pub publisher_agent: String,
    /// agent, admin or import.
    pub source: String,
    /// The installation it was published on (this one's id); null when imported from a file,
    /// whose claims about its origin cannot be checked.
    pub source_installation: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ListingStatsView {
    pub calls: i64,
    pub success_rate: f64,
    pub median_duration_us: Option<i64>,
    pub recent_error_categories: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ListingDetail {
    pub listing: ListingView,
    pub versions: Vec<ListingVersionView>,
    pub stats: ListingStatsView,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SearchQuery {
    /// Words to find in names and descriptions.
    pub q: Option<String>,
    /// At most this many listings (default 50, at most 200).
    pub limit: Option<u32>,
    /// Skip this many first (default 0).
    pub offset: Option<u64>,
}

/// A page's size when the client names none, and the most it may ask for.
const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ImportQuery {
    /// Add the bundle as a new version of the listing of the same name published on this
    /// installation. Without it such an import is refused.
    #[serde(default)]
    pub into_local_listing: bool,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct PublishRequest {
    pub agent: String,
    /// tool, component or skill.
    pub kind: String,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct Published {
    pub kind: String,
    pub listing: String,
    pub version: i64,
    pub hash: String,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct InstallRequest {
    pub agent: String,
    pub kind: String,
    pub listing: String,
    /// The version to pin; the latest when absent.
    pub version: Option<i64>,
    /// Install under this name instead of the listing's (when the agent has one already).
    pub rename_to: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct InstalledView {
    pub kind: String,
    pub name: String,
    pub listing: String,
    pub version: i64,
    pub hash: String,
    pub enabled: bool,
}

impl From<market::Installed> for InstalledView {
    fn from(installed: market::Installed) -> Self {
        Self {
            kind: installed.kind,
            name: installed.name,
            listing: installed.listing,
            version: installed.version,
            hash: installed.hash,
            enabled: installed.enabled,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct VersionQuery {
    /// A listing version; the latest when absent.
    pub version: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct UpdatePreviewView {
    pub name: String,
    pub from_version: i64,
    pub to_version: i64,
    pub diff: String,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct UpdateRequest {
    pub version: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ExportedView {
    pub bundle: Value,
    pub hash: String,
    pub listing_version: i64,
    pub publisher_agent: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct Uninstalled {
    pub deleted: bool,
}

/// Listings whose name or description matches `q`, by name, one page at a time; the
/// `X-Total-Count` header says how many match in all.
#[utoipa::path(
    get, path = "/api/market/listings", tag = "market", params(SearchQuery),
    responses((status = 200, body = Vec<ListingView>, headers(("X-Total-Count" = i64, description = "Listings matching in all")))),
)]
pub(super) async fn search(
    State(state): State<AppState>,
    Query(query): Query<SearchQuery>,
) -> Result<axum::response::Response, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::bad_request(format!("limit must be between 1 and {MAX_PAGE}, not {limit}")));
    }
    let page = state.store.list_listings(query.q.as_deref(), limit, query.offset.unwrap_or(0)).await?;
    let listings: Vec<ListingView> = page.listings.into_iter().map(ListingView::from).collect();
    Ok(axum::response::IntoResponse::into_response(([("x-total-count", page.total.to_string())], Json(listings))))
}

/// One listing: every version with its bundle (code and schema), and usage statistics.
#[utoipa::path(
    get, path = "/api/market/listings/{kind}/{name}", tag = "market",
    params(("kind" = String, Path), ("name" = String, Path)), responses((status = 200, body = ListingDetail)),
)]
pub(super) async fn listing(
    State(state): State<AppState>,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Json<ListingDetail>, ApiError> {
    let found = state.store.listing(&kind, &name).await?.ok_or_else(|| {
        ApiError::new(axum::http::StatusCode::NOT_FOUND, "not_found", format!("no {kind} listing named {name:?}"))
    })?;
    let versions = state.store.listing_versions(found.id).await?;
    let stats = state.store.listing_stats(&found).await?;
    Ok(Json(ListingDetail {
        listing: found.into(),
        versions: versions
            .into_iter()
            .map(|version| ListingVersionView {
                version: version.version,
                description: version.description,
                bundle: version.bundle,
                hash: version.hash,
                publisher_agent: version.publisher_agent,
                source: version.source,
                source_installation: version.source_installation,
                created_at: version.created_at,
            })
            .collect(),
        stats: ListingStatsView {
            calls: stats.calls,
            success_rate: stats.success_rate,
            median_duration_us: stats.median_duration_us,
            recent_error_categories: stats.recent_error_categories,
        },
    }))
}

/// Publishes an agent's tool or component (as the admin).
#[utoipa::path(post, path = "/api/market/publish", tag = "market", request_body = PublishRequest, responses((status = 200, body = Published)))]
pub(super) async fn publish(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<PublishRequest>,
) -> Result<Json<Published>, ApiError> {
    let agent = existing_agent(&state, &request.agent).await?;
    let (listing, version, hash) =
        market::publish(state.tools.services(), &agent, &request.kind, &request.name, market::Publisher::Admin).await?;
    Ok(Json(Published { kind: request.kind, listing, version, hash }))
}

/// Installs a pinned listing version into an agent, disabled.
#[utoipa::path(post, path = "/api/market/install", tag = "market", request_body = InstallRequest, responses((status = 200, body = InstalledView)))]
pub(super) async fn install(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<InstallRequest>,
) -> Result<Json<InstalledView>, ApiError> {
    let agent = existing_agent(&state, &request.agent).await?;
    let on_conflict = request.rename_to.map_or(OnConflict::Refuse, OnConflict::Rename);
    let installed =
        market::install(state.tools.services(), &agent, &request.kind, &request.listing, request.version, &on_conflict)
            .await?;
    Ok(Json(installed.into()))
}

/// The diff that updating an installed tool would apply.
#[utoipa::path(
    get, path = "/api/agents/{agent}/agent-tools/{name}/update-preview", tag = "market",
    params(("agent" = String, Path), ("name" = String, Path), VersionQuery), responses((status = 200, body = UpdatePreviewView)),
)]
pub(super) async fn update_preview(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    Query(query): Query<VersionQuery>,
) -> Result<Json<UpdatePreviewView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let preview = market::update_preview(state.tools.services(), &agent, &name, query.version).await?;
    Ok(Json(UpdatePreviewView {
        name: preview.name,
        from_version: preview.from_version,
        to_version: preview.to_version,
        diff: preview.diff,
    }))
}

/// Updates an installed tool to a listing version, as a new version of the tool.
#[utoipa::path(
    post, path = "/api/agents/{agent}/agent-tools/{name}/update", tag = "market", request_body = UpdateRequest,
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = InstalledView)),
)]
pub(super) async fn update(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
    ApiJson(request): ApiJson<UpdateRequest>,
) -> Result<Json<InstalledView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(market::update(state.tools.services(), &agent, &name, request.version).await?.into()))
}

/// Uninstalls a tool installed from the marketplace.
#[utoipa::path(
    delete, path = "/api/agents/{agent}/agent-tools/{name}/installed", tag = "market",
    params(("agent" = String, Path), ("name" = String, Path)), responses((status = 200, body = Uninstalled)),
)]
pub(super) async fn uninstall(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<Uninstalled>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(Uninstalled { deleted: market::uninstall(state.tools.services(), &agent, &name).await? }))
}

/// A listing version as a bundle file for another installation.
#[utoipa::path(
    get, path = "/api/market/listings/{kind}/{name}/export", tag = "market",
    params(("kind" = String, Path), ("name" = String, Path), VersionQuery), responses((status = 200, body = ExportedView)),
)]
pub(super) async fn export(
    State(state): State<AppState>,
    Path((kind, name)): Path<(String, String)>,
    Query(query): Query<VersionQuery>,
) -> Result<Json<ExportedView>, ApiError> {
    let exported = market::export(state.tools.services(), &kind, &name, query.version).await?;
    Ok(Json(ExportedView {
        bundle: exported.bundle,
        hash: exported.hash,
        listing_version: exported.listing_version,
        publisher_agent: exported.publisher_agent,
    }))
}

/// Imports a bundle file as a listing version after checking its hash and content. Nothing
/// is installed. Only the bundle and its hash are read: who published it and where is not
/// taken from the file.
#[utoipa::path(
    post, path = "/api/market/import", tag = "market", request_body = Value, params(ImportQuery),
    responses((status = 200, body = Published), (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn import(
    State(state): State<AppState>,
    Query(query): Query<ImportQuery>,
    ApiJson(file): ApiJson<Value>,
) -> Result<Json<Published>, ApiError> {
    let (kind, listing, version, hash) =
        market::import(state.tools.services(), &file, query.into_local_listing).await?;
    Ok(Json(Published { kind, listing, version, hash }))
}
