//! Health, login, logout and the middleware that guards every other route.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiError, ApiJson};
use crate::AppState;
use crate::token::SESSION_COOKIE;

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
}

/// Liveness; needs no token.
#[utoipa::path(get, path = "/api/health", tag = "meta", security(()), responses((status = 200, body = Health)))]
pub async fn health() -> Json<Health> {
    Json(Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() })
}

#[derive(Deserialize, ToSchema)]
pub struct LoginRequest {
    pub token: String,
}

#[derive(Serialize, ToSchema)]
pub struct Ok {
    pub ok: bool,
}

/// Exchanges the token for an HttpOnly, SameSite=Strict session cookie.
#[utoipa::path(
    post, path = "/api/auth/login", tag = "auth", security(()), request_body = LoginRequest,
    responses((status = 200, body = Ok), (status = 401, body = super::error::ErrorBody)),
)]
pub async fn login(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<LoginRequest>,
) -> Result<Response, ApiError> {
    if !state.auth.accepts_token(request.token.trim()) {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "wrong token"));
    }
    let cookie =
        format!("{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000", state.auth.session_value());
    Ok(([(header::SET_COOKIE, cookie)], Json(Ok { ok: true })).into_response())
}

/// Ends the browser session by expiring its cookie.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth", responses((status = 200, body = Ok)))]
pub async fn logout() -> Response {
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], Json(Ok { ok: true })).into_response()
}

/// Lets a request through only with `Authorization: Bearer <token>` or the session cookie.
pub async fn require_auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if is_authorized(&state, request.headers()) {
        next.run(request).await
    } else {
        let mut response = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this route needs the access token: send `Authorization: Bearer <token>` or log in at POST /api/auth/login",
        )
        .into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        response
    }
}

fn is_authorized(state: &AppState, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|token| state.auth.accepts_token(token.trim()));
    bearer
        || headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == SESSION_COOKIE && state.auth.accepts_session(value))
}
