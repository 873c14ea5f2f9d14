//! Health, login, logout, and the middleware that guards every other route.
//!
//! - A request is the owner's with `Authorization: Bearer <token>`, or with the cookie of a
//!   live session (a random id whose hash is in the `sessions` table; logout deletes it).
//! - A state-changing request authenticated by the cookie must come from the app itself:
//!   `Sec-Fetch-Site: same-origin` (or `none`), or else an `Origin` naming this host. A form on
//!   another site cannot post with the cookie. Bearer clients send no cookie and are unaffected.
//! - Every request's `Host` must be an IP literal, `localhost` or one of `[server]
//!   allowed_hosts`, so a DNS-rebound name cannot reach the API from a browser.
//! - Login attempts are rate-limited for the whole installation (a token bucket).

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiError, ApiJson};
use crate::AppState;
use crate::config::ServerConfig;
use crate::token::{SESSION_COOKIE, new_session_id, session_id_hash};

#[derive(Serialize, ToSchema)]
pub(super) struct Health {
    pub status: String,
    pub version: String,
}

/// Liveness; needs no token.
#[utoipa::path(get, path = "/api/health", tag = "meta", security(()), responses((status = 200, body = Health)))]
pub(super) async fn health() -> Json<Health> {
    Json(Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() })
}

#[derive(Deserialize, ToSchema)]
pub(super) struct LoginRequest {
    pub token: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct Ok {
    pub ok: bool,
}

/// Login attempts for the whole installation: a bucket of `per_minute` attempts refilled at
/// that rate. One owner, so one bucket; a guesser who drains it delays the owner's login by
/// seconds, while bearer clients and open sessions go on working.
pub struct LoginLimiter {
    per_minute: f64,
    /// (attempts left, when last refilled). Held for a few instructions, never across an await.
    bucket: Mutex<(f64, Instant)>,
}

impl LoginLimiter {
    pub fn new(per_minute: u32) -> Self {
        let per_minute = f64::from(per_minute.max(1));
        Self { per_minute, bucket: Mutex::new((per_minute, Instant::now())) }
    }

    /// Whether an attempt may be made now, or how long until one may.
    fn check(&self) -> Result<(), Duration> {
        let mut bucket = self.bucket.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(bucket.1).as_secs_f64() * self.per_minute / 60.0;
        bucket.0 = (bucket.0 + refill).min(self.per_minute);
        bucket.1 = now;
        if bucket.0 >= 1.0 { Ok(()) } else { Err(Duration::from_secs_f64((1.0 - bucket.0) * 60.0 / self.per_minute)) }
    }

    /// Counts a failed attempt. Only wrong tokens are counted: guessing is what the limit
    /// slows, and a person (or a test suite) signing in many times with the right token is not.
    fn spend(&self) {
        let mut bucket = self.bucket.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        bucket.0 = (bucket.0 - 1.0).max(0.0);
    }

    #[cfg(test)]
    fn try_attempt(&self) -> Result<(), Duration> {
        self.check()?;
        self.spend();
        Ok(())
    }
}

/// Exchanges the token for an HttpOnly, SameSite=Strict cookie of a new session (`Secure`
/// when served over HTTPS). Rate-limited.
#[utoipa::path(
    post, path = "/api/auth/login", tag = "auth", security(()), request_body = LoginRequest,
    responses((status = 200, body = Ok), (status = 401, body = super::error::ErrorBody), (status = 429, body = super::error::ErrorBody)),
)]
pub(super) async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<LoginRequest>,
) -> Result<Response, ApiError> {
    if is_cross_site(&headers) {
        return Err(cross_site_error());
    }
    if let Err(retry_after) = state.login_limiter.check() {
        let seconds = retry_after.as_secs().max(1);
        let mut response = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many login attempts; try again in {seconds} s"),
        )
        .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return Ok(response);
    }
    if !state.auth.accepts_token(request.token.trim()) {
        state.login_limiter.spend();
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "wrong token"));
    }
    let session_id = new_session_id();
    let lifetime = state.config.server.session_lifetime();
    state.store.create_session(&session_id_hash(&session_id), state.auth.token_fingerprint(), lifetime).await?;
    let cookie = session_cookie(&session_id, lifetime.as_secs(), secure(&state.config.server, &headers));
    Ok(([(header::SET_COOKIE, cookie)], Json(Ok { ok: true })).into_response())
}

/// Ends the browser session: deletes it on the server and expires its cookie.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth", responses((status = 200, body = Ok)))]
pub(super) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(session_id) = session_cookie_value(&headers) {
        state.store.delete_session(&session_id_hash(session_id)).await?;
    }
    let cookie = session_cookie("", 0, secure(&state.config.server, &headers));
    Ok(([(header::SET_COOKIE, cookie)], Json(Ok { ok: true })).into_response())
}

fn session_cookie(value: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

/// Whether the browser reached us over HTTPS: configured so, or said so by a trusted proxy.
fn secure(config: &ServerConfig, headers: &HeaderMap) -> bool {
    config.secure_cookies
        || (config.trust_forwarded_proto
            && headers
                .get("x-forwarded-proto")
                .and_then(|value| value.to_str().ok())
                .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https")))
}

/// Lets a request through only with `Authorization: Bearer <token>` or the cookie of a live
/// session; a state-changing request with the cookie must also come from this origin.
pub(super) async fn require_auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|token| state.auth.accepts_token(token.trim()));
    if bearer {
        return next.run(request).await;
    }
    let session = match session_cookie_value(headers) {
        Some(session_id) => {
            match state.store.session_is_valid(&session_id_hash(session_id), state.auth.token_fingerprint()).await {
                Ok(valid) => valid,
                Err(error) => return ApiError::from(error).into_response(),
            }
        }
        None => false,
    };
    if !session {
        let mut response = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this route needs the access token: send `Authorization: Bearer <token>` or log in at POST /api/auth/login",
        )
        .into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && is_cross_site(request.headers()) {
        return cross_site_error().into_response();
    }
    next.run(request).await
}

fn session_cookie_value(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == SESSION_COOKIE && !value.is_empty())
        .map(|(_, value)| value)
}

fn cross_site_error() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "cross_site",
        "a state-changing request with the session cookie must come from the Wright app itself",
    )
}

/// True when a browser says the request comes from another site. `Sec-Fetch-Site` decides
/// when present (every current browser sends it); otherwise an `Origin` must name the host
/// the request was sent to. Neither header: not a browser's cross-site request.
fn is_cross_site(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return !matches!(site.to_str(), Ok("same-origin" | "none"));
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return false };
    let Ok(origin) = origin.to_str() else { return true };
    let origin_host = origin.split_once("://").map(|(_, rest)| rest);
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok());
    match (origin_host, host) {
        (Some(origin_host), Some(host)) => !origin_host.eq_ignore_ascii_case(host),
        _ => true,
    }
}

/// Refuses a `Host` that is not an IP literal, `localhost` or in `[server] allowed_hosts`
/// (DNS rebinding), on every route. Requests without one (HTTP/1.0) pass: a browser always
/// sends it.
pub(super) async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).map(|value| value.to_str().unwrap_or(""));
    if let Some(host) = host
        && !host_allowed(host, &state.config.server.allowed_hosts)
    {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "unknown_host",
            "this server does not answer to that host name; add it to [server] allowed_hosts if a proxy uses it",
        )
        .into_response();
    }
    next.run(request).await
}

fn host_allowed(host: &str, allowed_hosts: &[String]) -> bool {
    let host = host.trim();
    // `name:port`, `[v6]:port`, `[v6]`, `name`.
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(address, _)| address)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        }
    };
    if name.is_empty() {
        return false;
    }
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok()
        || allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ip_literals_localhost_or_configured() {
        let allowed = vec!["wright.example".to_owned()];
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "10.0.0.2", "wright.example:443"] {
            assert!(host_allowed(host, &allowed), "{host}");
        }
        for host in ["evil.example:8080", "127.0.0.1.nip.io", "", ":8080", "localhost.evil.example"] {
            assert!(!host_allowed(host, &allowed), "{host}");
        }
    }

    #[test]
    fn the_login_bucket_empties_and_refills() {
        let limiter = LoginLimiter::new(3);
        assert!((0..3).all(|_| limiter.try_attempt().is_ok()));
        let wait = limiter.try_attempt().unwrap_err();
        assert!(wait > Duration::from_secs(15) && wait <= Duration::from_secs(20), "{wait:?}");
    }
}
