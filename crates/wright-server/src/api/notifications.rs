//! The person's notifications (the agent's `notify`, schedules' results): the list, marking one
//! read, and a live stream of new ones from the hub — the same hub topic the delivery loop
//! ([`crate::notifier`]) publishes to.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};
use wright_core::iso_from_ms;
use wright_store::{Notification, NotificationSource};

use super::ApiError;
use super::agents::existing_agent;
use super::conversations::{async_stream, to_sse};
use crate::AppState;
use crate::domain::hub::{Update, notifications_topic};

/// Where a notification came from.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NotificationSourceView {
    /// The agent's `notify`.
    Agent,
    /// A schedule: its run's result, or a time it missed.
    Schedule,
    /// A usage budget: its soft threshold reached, or spent.
    Budget,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct NotificationView {
    pub id: i64,
    pub agent_id: String,
    pub source: NotificationSourceView,
    pub title: String,
    /// Markdown.
    pub text: String,
    /// The conversation to open for more, if any.
    pub conversation_id: Option<String>,
    pub schedule_id: Option<i64>,
    pub created_at: String,
    pub read_at: Option<String>,
}

impl From<Notification> for NotificationView {
    fn from(notification: Notification) -> Self {
        Self {
            id: notification.id,
            agent_id: notification.agent_id,
            source: match notification.source {
                NotificationSource::Agent => NotificationSourceView::Agent,
                NotificationSource::Schedule => NotificationSourceView::Schedule,
                NotificationSource::Budget => NotificationSourceView::Budget,
            },
            title: notification.title,
            text: notification.text,
            conversation_id: notification.conversation_id,
            schedule_id: notification.schedule_id,
            created_at: iso_from_ms(notification.created_at),
            read_at: notification.read_at.map(iso_from_ms),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NotificationsQuery {
    /// Only notifications with a larger id.
    pub after: Option<i64>,
    /// At most this many (default 50).
    pub limit: Option<i64>,
}

/// The agent's notifications, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/notifications", tag = "notifications",
    params(("agent" = String, Path), NotificationsQuery),
    responses((status = 200, body = Vec<NotificationView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<NotificationsQuery>,
) -> Result<Json<Vec<NotificationView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let notifications =
        state.store.list_notifications(&agent, query.after.unwrap_or(0), query.limit.unwrap_or(50)).await?;
    Ok(Json(notifications.into_iter().map(NotificationView::from).collect()))
}

/// Marks a notification read.
#[utoipa::path(
    post, path = "/api/agents/{agent}/notifications/{id}/read", tag = "notifications",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = NotificationView), (status = 404, body = super::error::ErrorBody)),
)]
pub(crate) async fn mark_read(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<NotificationView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.mark_notification_read(&agent, id).await?.into()))
}

/// Server-sent events: `notification` for each one stored after `after` (replayed first), then
/// each new one as it is delivered.
#[utoipa::path(
    get, path = "/api/agents/{agent}/notifications/stream", tag = "notifications",
    params(("agent" = String, Path), NotificationsQuery),
    responses((status = 200, description = "text/event-stream of notification messages")),
)]
pub(crate) async fn stream(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<NotificationsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    // Subscribe before reading the store, so one stored in between arrives on the channel.
    let mut receiver = state.hub.subscribe(&notifications_topic(agent.as_str()));
    let mut replay = state.store.list_notifications(&agent, query.after.unwrap_or(0), 50).await?;
    replay.reverse();
    let shutdown = state.shutdown.clone();
    let stream = async_stream(move |sender| async move {
        let mut last_id = query.after.unwrap_or(0);
        for notification in replay {
            last_id = notification.id;
            if sender.send(to_sse(&Update::Notification(notification))).await.is_err() {
                return;
            }
        }
        loop {
            let received = tokio::select! {
                received = receiver.recv() => received,
                () = sender.closed() => return,
                () = shutdown.cancelled() => return,
            };
            match received {
                Ok(Update::Notification(notification)) if notification.id > last_id => {
                    last_id = notification.id;
                    if sender.send(to_sse(&Update::Notification(notification))).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
