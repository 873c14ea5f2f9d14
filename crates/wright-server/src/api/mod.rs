//! The HTTP API: routes, the one error shape, authentication, the OpenAPI document.
//!
//! Invariant: every answer under `/api` that is an error has the shape
//! `{"error": {"code", "message"}}` — handler errors through [`ApiError`], and everything
//! axum or tower answers on its own (unknown path, wrong method, a query or path that does not
//! parse, a timeout) through the [`json_errors`] layer. The app's HTML is served only outside
//! `/api`.

mod admin;
mod agents;
mod auth;
pub mod canvas;
mod components;
mod conversation_changes;
mod conversations;
mod documents;
mod error;
mod export;
mod images;
mod learning;
mod market;
mod mcp;
mod memory;
pub(crate) mod notifications;
mod push;
mod schedules;
pub(crate) mod sessions;
mod settings;
mod skills;
mod state;
mod tools;
pub(crate) mod usage;

use axum::error_handling::HandleErrorLayer;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{BoxError, Json, Router, middleware};
use tower::{ServiceBuilder, ServiceExt};
use tower_http::services::{ServeDir, ServeFile};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use auth::LoginLimiter;
pub use error::{ApiError, ApiJson};

use crate::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Wright API", description = "The HTTP API of a Wright installation."),
    modifiers(&SecurityAddon),
    security(("bearer" = []), ("session" = [])),
    // Contracts the canvas reads that no route names as a whole body.
    components(schemas(
        wright_core::ApprovalAnswer,
        wright_core::ErrorCategory,
        wright_core::Caller,
        conversations::LiveUpdate,
        crate::export::ExportFormat
    )),
)]
struct ApiDoc;

struct SecurityAddon;

impl Modify for SecurityAddon {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(utoipa::openapi::security::ApiKey::Cookie(
                utoipa::openapi::security::ApiKeyValue::new(crate::token::SESSION_COOKIE),
            )),
        );
    }
}

/// Every route, with its OpenAPI description. Split in two so the auth layer wraps only the
/// protected half; both halves land in one document.
fn routes() -> (OpenApiRouter<AppState>, OpenApiRouter<AppState>) {
    let public = OpenApiRouter::new().routes(routes!(auth::health)).routes(routes!(auth::login));
    let protected = OpenApiRouter::new()
        .routes(routes!(auth::logout))
        .routes(routes!(openapi_document))
        .routes(routes!(agents::list_agents, agents::create_agent))
        .routes(routes!(documents::current, documents::admin_edit))
        .routes(routes!(documents::versions))
        .routes(routes!(documents::version))
        .routes(routes!(documents::diff))
        .routes(routes!(documents::rollback))
        .routes(routes!(skills::list, skills::create))
        .routes(routes!(skills::import))
        .routes(routes!(skills::import_zip))
        .routes(routes!(skills::detail, skills::update, skills::delete))
        .routes(routes!(skills::versions))
        .routes(routes!(skills::version))
        .routes(routes!(skills::diff))
        .routes(routes!(skills::rollback))
        .routes(routes!(skills::export))
        .routes(routes!(memory::list, memory::create))
        .routes(routes!(memory::edit))
        .routes(routes!(memory::forget))
        .routes(routes!(memory::restore))
        .routes(routes!(memory::history))
        .routes(routes!(sessions::list, sessions::create))
        .routes(routes!(state::list_keys))
        .routes(routes!(state::get_value, state::set_value, state::delete_value))
        .routes(routes!(tools::list_tools))
        .routes(routes!(tools::set_policy))
        .routes(routes!(tools::get_tool_settings, tools::set_tool_settings))
        .routes(routes!(tools::invoke_tool))
        .routes(routes!(tools::list_executions))
        .routes(routes!(conversations::status))
        .routes(routes!(settings::list_connections, settings::create_connection))
        .routes(routes!(settings::update_connection, settings::delete_connection))
        .routes(routes!(settings::test_connection))
        .routes(routes!(settings::list_models))
        .routes(routes!(settings::list_choices))
        .routes(routes!(settings::set_default_model, settings::clear_default_model))
        .routes(routes!(settings::set_agent_model, settings::clear_agent_model))
        .routes(routes!(settings::model_profile, settings::set_model_profile, settings::clear_model_profile))
        .routes(routes!(conversations::list, conversations::create))
        .routes(routes!(conversations::detail, conversation_changes::update, conversation_changes::delete))
        .routes(routes!(conversation_changes::archived))
        .routes(routes!(conversations::post_message))
        .routes(routes!(conversations::cancel))
        .routes(routes!(conversations::answer_pending))
        .routes(routes!(conversations::stream))
        .routes(routes!(export::export))
        .routes(routes!(components::list))
        .routes(routes!(components::detail))
        .routes(routes!(images::image))
        .routes(routes!(admin::list_agent_tools))
        .routes(routes!(admin::agent_tool_versions))
        .routes(routes!(admin::agent_tool_diff))
        .routes(routes!(admin::agent_tool_rollback))
        .routes(routes!(admin::agent_tool_enabled))
        .routes(routes!(admin::component_history))
        .routes(routes!(admin::component_diff))
        .routes(routes!(admin::component_rollback))
        .routes(routes!(admin::component_enabled))
        .routes(routes!(admin::stats))
        .routes(routes!(learning::feedback))
        .routes(routes!(learning::outcomes))
        .routes(routes!(learning::list_cases, learning::create_case))
        .routes(routes!(learning::delete_case))
        .routes(routes!(learning::list_rounds, learning::start_round))
        .routes(routes!(learning::round_detail))
        .routes(routes!(learning::list_items))
        .routes(routes!(learning::item_changes))
        .routes(routes!(learning::decide_item))
        .routes(routes!(learning::get_settings, learning::set_settings))
        .routes(routes!(schedules::list))
        .routes(routes!(schedules::set_paused))
        .routes(routes!(schedules::delete))
        .routes(routes!(schedules::runs))
        .routes(routes!(notifications::list))
        .routes(routes!(notifications::mark_read))
        .routes(routes!(notifications::stream))
        .routes(routes!(push::key))
        .routes(routes!(push::devices, push::subscribe))
        .routes(routes!(push::remove))
        .routes(routes!(mcp::servers))
        .routes(routes!(market::search))
        .routes(routes!(market::listing))
        .routes(routes!(market::publish))
        .routes(routes!(market::install))
        .routes(routes!(market::update_preview))
        .routes(routes!(market::update))
        .routes(routes!(market::uninstall))
        .routes(routes!(market::export))
        .routes(routes!(market::import))
        .routes(routes!(usage::report))
        .routes(routes!(usage::export))
        .routes(routes!(usage::conversation))
        .routes(routes!(usage::prices, usage::set_price))
        .routes(routes!(usage::budgets))
        .routes(routes!(usage::set_budget));
    (public, protected)
}

/// The OpenAPI document of every route, as served at `/api/openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (public, protected) = routes();
    let mut openapi = OpenApiRouter::with_openapi(ApiDoc::openapi()).merge(public).merge(protected).into_openapi();
    unique_operation_ids(&mut openapi);
    openapi
}

/// An operation's id is its handler's function name, and several modules have a `list`, a
/// `detail` or a `stream`. A generator that keys types by operation id (openapi-typescript, for
/// the canvas) then gives one path another's parameters and answer, so every id used more than
/// once becomes `<tag>_<id>` (`components_detail`, `conversations_detail`).
fn unique_operation_ids(openapi: &mut utoipa::openapi::OpenApi) {
    fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ]
        .into_iter()
        .filter_map(Option::as_mut)
    }
    let mut uses = std::collections::HashMap::<String, usize>::new();
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            if let Some(id) = &operation.operation_id {
                *uses.entry(id.clone()).or_default() += 1;
            }
        }
    }
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            let Some(id) = &operation.operation_id else { continue };
            if uses.get(id).is_some_and(|count| *count > 1) {
                let tag = operation.tags.as_ref().and_then(|tags| tags.first()).map_or("api", String::as_str);
                operation.operation_id = Some(format!("{}_{id}", tag.replace(['-', ' '], "_")));
            }
        }
    }
}

/// The document, served to the canvas app so it can check its generated types.
#[utoipa::path(get, path = "/api/openapi.json", tag = "meta", responses((status = 200, description = "The OpenAPI document")))]
async fn openapi_document() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}

/// The router for `state`: the API under `/api`, the canvas app at `/`.
pub fn app(state: AppState) -> Router {
    let (public, protected) = routes();
    let protected = protected.route_layer(middleware::from_fn_with_state(state.clone(), auth::require_auth));
    let (api, _) = OpenApiRouter::new().merge(public).merge(protected).split_for_parts();
    let api = api.fallback(unknown_route).layer(
        ServiceBuilder::new()
            .layer(middleware::from_fn(json_errors))
            .layer(HandleErrorLayer::new(timeout_error))
            .timeout(state.config.server.request_timeout()),
    );
    // `/mcp` speaks MCP, not this API: its errors are rmcp's (JSON-RPC), so it is merged
    // after the `/api` layers; it gets the same request timeout.
    let mcp = mcp::router(&state).layer(
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(timeout_error))
            .timeout(state.config.server.request_timeout()),
    );
    let api = api.merge(mcp);
    let frontend_dir = state.config.server.frontend_dir.clone();
    let host_check = middleware::from_fn_with_state(state.clone(), auth::check_host);
    let router = api.with_state(state);
    // Both fallbacks replace the API's, so they send /api paths back to `unknown_route`.
    let router = match frontend_dir {
        // `[server] frontend_dir`: the canvas from a folder on disk (checked at start-up).
        Some(frontend_dir) => {
            // A single-page app: unknown paths outside /api get index.html (with a 404, as
            // ServeDir answers them) and the app routes them.
            let index = ServeFile::new(frontend_dir.join("index.html"));
            let files = ServeDir::new(frontend_dir).not_found_service(index.clone());
            router.fallback_service(tower::service_fn(move |request: axum::extract::Request| {
                let (files, index) = (files.clone(), index.clone());
                async move { Ok::<_, std::convert::Infallible>(frontend(files, index, request).await) }
            }))
        }
        // The canvas embedded in the binary.
        None => router.fallback(|request: axum::extract::Request| async move {
            if is_api_path(request.uri().path()) {
                return unknown_route(request.uri().clone()).await.into_response();
            }
            canvas::serve(request.method(), request.uri().path(), request.headers())
        }),
    };
    router.layer(host_check).layer(middleware::from_fn(security_headers))
}

/// The server's own namespaces: the API and MCP. An unknown path there is a JSON 404 (also
/// `/mcp` when the MCP server is off), never the canvas's page.
fn is_api_path(path: &str) -> bool {
    ["/api", "/mcp"]
        .iter()
        .any(|prefix| path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// The canvas app's files, or its index.html for any other path outside /api. A path the
/// file system cannot even look up (a name over 255 bytes) is just another unknown path.
async fn frontend(
    files: ServeDir<tower_http::set_status::SetStatus<ServeFile>>,
    index: ServeFile,
    request: axum::extract::Request,
) -> axum::response::Response {
    if is_api_path(request.uri().path()) {
        return unknown_route(request.uri().clone()).await.into_response();
    }
    let response = match files.oneshot(request).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    };
    if !response.status().is_server_error() {
        return response;
    }
    // Answered as ServeDir answers any other unknown path: index.html with a 404.
    let index_request = axum::http::Request::builder().uri("/").body(axum::body::Body::empty());
    match index_request {
        Ok(index_request) => match index.oneshot(index_request).await {
            Ok(response) => {
                let mut response = response.map(axum::body::Body::new);
                *response.status_mut() = StatusCode::NOT_FOUND;
                response
            }
            Err(never) => match never {},
        },
        Err(error) => ApiError::internal(&error).into_response(),
    }
}

/// Rewrites any error under `/api` that is not already JSON — axum's own answers for a wrong
/// method (405), a query or path that does not parse (400), a body too large (413) — into the
/// one error shape, keeping the status and the headers a client acts on.
async fn json_errors(request: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        status if status.is_server_error() => "internal",
        _ => "bad_request",
    };
    let message = if status.is_server_error() {
        "internal error; see the server log".to_owned()
    } else {
        // axum's rejection texts are short and say what was wrong; cap what we read anyway.
        let text = axum::body::to_bytes(body, 4096).await.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        match text {
            Ok(text) if !text.trim().is_empty() => text,
            _ => status.canonical_reason().unwrap_or("error").to_owned(),
        }
    };
    let mut error = ApiError::new(status, code, message).into_response();
    for name in [axum::http::header::ALLOW, axum::http::header::WWW_AUTHENTICATE, axum::http::header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            error.headers_mut().insert(name, value.clone());
        }
    }
    error
}

/// The page's own policy, inherited by the component frames it creates from `srcdoc`: no
/// frame may load or navigate to any URL (`frame-src 'none'` still lets a srcdoc frame run,
/// but stops a component from navigating its frame elsewhere to carry data out), no plugins,
/// no form posts off the app, and no one may frame the app. The app's script policy is in its
/// built `index.html` (a meta element pinning the component frame runtime's hash), where the
/// build that knows the hash puts it.
pub const CONTENT_SECURITY_POLICY: &str =
    "frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

async fn security_headers(request: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // A route that sets a stricter policy of its own (an image: `default-src 'none'; sandbox`)
    // keeps it; every other response gets the app's.
    if !headers.contains_key(axum::http::header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            axum::http::header::CONTENT_SECURITY_POLICY,
            axum::http::HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
    }
    headers.insert(axum::http::header::X_CONTENT_TYPE_OPTIONS, axum::http::HeaderValue::from_static("nosniff"));
    headers.insert(axum::http::header::REFERRER_POLICY, axum::http::HeaderValue::from_static("no-referrer"));
    response
}

async fn unknown_route(uri: axum::http::Uri) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no route for {}", uri.path()))
}

async fn timeout_error(error: BoxError) -> impl IntoResponse {
    if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(StatusCode::REQUEST_TIMEOUT, "timeout", "the request took too long and was stopped")
    } else {
        ApiError::internal(&*error)
    }
}
