//! Web Push for the canvas: the server's VAPID key to subscribe with, and the person's
//! subscribed browsers — list, add (or renew), remove. Sending is [`crate::push`]'s.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wright_core::iso_from_ms;
use wright_store::{NewPushSubscription, PushSubscription};

use super::{ApiError, ApiJson};
use crate::AppState;
use crate::push::Pusher;

#[derive(Serialize, ToSchema)]
pub(super) struct PushKeyView {
    /// The VAPID public key (an uncompressed P-256 point, base64url): `applicationServerKey`.
    pub public_key: String,
}

/// A subscription as the browser's `PushSubscription.toJSON()` gives it, and a name for it.
#[derive(Deserialize, ToSchema)]
pub(super) struct SubscribeRequest {
    pub endpoint: String,
    pub keys: SubscriptionKeys,
    /// What the person will see in the list of devices (e.g. "Chrome on Android").
    pub label: String,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct SubscriptionKeys {
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
}

/// A subscribed browser. The endpoint is shown only as its host: the rest is a capability.
#[derive(Serialize, ToSchema)]
pub(super) struct DeviceView {
    pub id: i64,
    pub label: String,
    /// The push service's host.
    pub service: String,
    pub created_at: String,
    pub last_sent_at: Option<String>,
    /// Why the last push failed; null after a success.
    pub last_error: Option<String>,
}

impl From<PushSubscription> for DeviceView {
    fn from(subscription: PushSubscription) -> Self {
        Self {
            id: subscription.id,
            label: subscription.label,
            service: reqwest::Url::parse(&subscription.endpoint)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_default(),
            created_at: iso_from_ms(subscription.created_at),
            last_sent_at: subscription.last_sent_at.map(iso_from_ms),
            last_error: subscription.last_error,
        }
    }
}

fn pusher(state: &AppState) -> Result<&Pusher, ApiError> {
    state.push.as_deref().ok_or_else(|| {
        ApiError::new(StatusCode::NOT_FOUND, "push_off", "Web Push is off on this server ([push] enabled = false)")
    })
}

/// The key a browser subscribes with; 404 `push_off` when push is off.
#[utoipa::path(
    get, path = "/api/push/key", tag = "push",
    responses((status = 200, body = PushKeyView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn key(State(state): State<AppState>) -> Result<Json<PushKeyView>, ApiError> {
    Ok(Json(PushKeyView { public_key: pusher(&state)?.public_key().to_owned() }))
}

/// The subscribed browsers, oldest first.
#[utoipa::path(get, path = "/api/push/devices", tag = "push", responses((status = 200, body = Vec<DeviceView>)))]
pub(super) async fn devices(State(state): State<AppState>) -> Result<Json<Vec<DeviceView>>, ApiError> {
    Ok(Json(state.store.push_subscriptions().await?.into_iter().map(DeviceView::from).collect()))
}

/// Subscribes this browser (or renews its keys). 400 for an endpoint that is not an https
/// push service or malformed keys; 422 past `[push] max_subscriptions`.
#[utoipa::path(
    post, path = "/api/push/devices", tag = "push", request_body = SubscribeRequest,
    responses((status = 201, body = DeviceView), (status = 400, body = super::error::ErrorBody)),
)]
pub(super) async fn subscribe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<SubscribeRequest>,
) -> Result<(StatusCode, Json<DeviceView>), ApiError> {
    let pusher = pusher(&state)?;
    pusher
        .check_subscription(&request.endpoint, &request.keys.p256dh, &request.keys.auth)
        .map_err(|error| ApiError::new(StatusCode::BAD_REQUEST, "invalid_subscription", error.to_string()))?;
    let label: String = request.label.trim().chars().take(100).collect();
    let new = NewPushSubscription {
        endpoint: request.endpoint,
        p256dh: request.keys.p256dh,
        auth: request.keys.auth,
        label: if label.is_empty() { "A browser".to_owned() } else { label },
    };
    let stored = state.store.add_push_subscription(&new, pusher.config().max_subscriptions).await?;
    Ok((StatusCode::CREATED, Json(stored.into())))
}

/// Removes a subscribed browser: it gets no more pushes.
#[utoipa::path(
    delete, path = "/api/push/devices/{id}", tag = "push", params(("id" = i64, Path)),
    responses((status = 200, body = super::conversations::Accepted), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn remove(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<super::conversations::Accepted>, ApiError> {
    state.store.delete_push_subscription(id).await?;
    Ok(Json(super::conversations::Accepted { ok: true }))
}
