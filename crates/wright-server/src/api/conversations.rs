//! Conversations: list, create, read with events and pending calls, send a message, follow
//! the live stream, cancel a run, answer a pending call. And `/api/status`, which tells the
//! canvas whether a model is configured.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};

use wright_core::{AgentId, ConversationStatus, EventBody, PendingKind};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;
use crate::domain::channel::Reply;
use crate::domain::hub::Update;
use crate::domain::runs::Sender;

#[derive(Serialize, ToSchema)]
pub(super) struct ProviderView {
    pub kind: String,
    pub model: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct StatusView {
    /// The configured model, or null when none is.
    pub provider: Option<ProviderView>,
    /// Why there is no model and how to configure one; empty when there is a model.
    pub setup_hint: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct StatusQuery {
    /// The agent whose model to report; `default` when absent.
    pub agent: Option<String>,
}

/// Whether the agent has a model for its next run, and how to configure one when it has not.
#[utoipa::path(
    get, path = "/api/status", tag = "meta", params(StatusQuery),
    responses((status = 200, body = StatusView), (status = 400, body = super::error::ErrorBody)),
)]
pub(super) async fn status(
    State(state): State<AppState>,
    Query(query): Query<StatusQuery>,
) -> Result<Json<StatusView>, ApiError> {
    let agent = AgentId::parse(query.agent.as_deref().unwrap_or("default"))?;
    Ok(Json(match state.runs.provider_info(&agent).await {
        Ok((kind, model)) => StatusView { provider: Some(ProviderView { kind, model }), setup_hint: String::new() },
        Err(problem) => StatusView { provider: None, setup_hint: problem },
    }))
}

#[derive(Serialize, ToSchema)]
pub(super) struct ConversationView {
    pub id: String,
    pub agent_id: String,
    pub title: String,
    pub status: ConversationStatus,
    pub created_at: String,
    pub updated_at: String,
}

impl From<wright_store::Conversation> for ConversationView {
    fn from(conversation: wright_store::Conversation) -> Self {
        Self {
            id: conversation.id,
            agent_id: conversation.agent_id,
            title: conversation.title,
            status: conversation.status,
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
        }
    }
}

/// One event of a conversation: its number, time and line for a person, and its body — a
/// union tagged by `kind` whose fields are the event's own.
#[derive(Serialize, ToSchema)]
pub(super) struct EventView {
    pub seq: i64,
    pub content: String,
    pub created_at: String,
    #[serde(flatten)]
    pub body: EventBody,
}

impl From<wright_store::StoredEvent> for EventView {
    fn from(stored: wright_store::StoredEvent) -> Self {
        Self {
            seq: stored.event.seq,
            content: stored.event.content,
            created_at: stored.created_at,
            body: stored.event.body,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(super) struct PendingView {
    pub tool_call_id: String,
    pub tool_name: String,
    /// `question`: answer it (ask_user, a form, a component); `approval`: a call its policy
    /// says to ask about — answer `{"decision": "approve" | "deny" | "always", "arguments"?: {…}}`.
    pub kind: PendingKind,
    pub args: Value,
    /// For render_and_wait: the component fixed when the call was made.
    pub component: Option<PendingComponent>,
    /// How the call is shown while it waits (a question, a form, a component, an approval);
    /// null only for a call whose tool no longer pauses.
    pub shown: Option<wright_core::Shown>,
    pub created_at: String,
}

/// The compiled component a render_and_wait call shows.
#[derive(Serialize, ToSchema)]
pub(super) struct PendingComponent {
    /// The stored component's name; null for inline code.
    pub name: Option<String>,
    pub version: Option<i64>,
    /// The compiled ES module the frame runs.
    pub compiled_js: String,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ConversationDetail {
    pub conversation: ConversationView,
    pub events: Vec<EventView>,
    pub pending: Vec<PendingView>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct CreateConversation {
    pub title: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct PostMessage {
    pub text: String,
    /// Set by the canvas when a component sends the message (`sendMessage`): the name of the
    /// component. Such messages are marked as the component's in the transcript and for the
    /// model, and limited per conversation (429 beyond the limit).
    #[serde(default)]
    pub component: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct PendingAnswer {
    /// Any JSON: ask_user `{answer}`, render_blocks `{action: "submit", data}` or
    /// `{action: "dismissed"}`, render_and_wait whatever the component passed to callTool.
    pub answer: Value,
}

#[derive(Serialize, ToSchema)]
pub(super) struct Accepted {
    pub ok: bool,
}

/// A command's answer, as Markdown.
#[derive(Serialize, ToSchema)]
pub(super) struct CommandReply {
    pub reply: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct StreamQuery {
    /// Replay stored events with a larger seq before following live updates.
    pub after: Option<i64>,
}

/// The agent's conversations, most recently active first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/conversations", tag = "conversations", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<ConversationView>)),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<ConversationView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.list_conversations(&agent).await?.into_iter().map(ConversationView::from).collect()))
}

/// Starts a new conversation with the agent.
#[utoipa::path(
    post, path = "/api/agents/{agent}/conversations", tag = "conversations", params(("agent" = String, Path)),
    request_body = CreateConversation, responses((status = 201, body = ConversationView)),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(request): ApiJson<CreateConversation>,
) -> Result<(StatusCode, Json<ConversationView>), ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let id = uuid::Uuid::now_v7().to_string();
    let title = request.title.filter(|title| !title.trim().is_empty()).unwrap_or_else(|| "New conversation".to_owned());
    let conversation = state.store.create_conversation(&agent, &id, &title).await?;
    Ok((StatusCode::CREATED, Json(conversation.into())))
}

/// The conversation with every stored event and the calls waiting for an answer.
#[utoipa::path(
    get, path = "/api/conversations/{id}", tag = "conversations", params(("id" = String, Path)),
    responses((status = 200, body = ConversationDetail), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn detail(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ConversationDetail>, ApiError> {
    state.store.conversation(&id).await?;
    // A run whose process died is ended (its open calls closed) when its conversation is read.
    state.runs.recover_if_orphaned(&id).await?;
    let (conversation, events, pending) = state.store.conversation_snapshot(&id).await?;
    Ok(Json(ConversationDetail {
        conversation: conversation.into(),
        events: events.into_iter().map(EventView::from).collect(),
        pending: pending
            .into_iter()
            .map(|call| PendingView {
                shown: wright_core::Shown::of(
                    call.kind,
                    state.tools.presentation(&call.tool_name),
                    &call.tool_name,
                    &call.args,
                    &call.render,
                ),
                kind: call.kind,
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                component: call.render.get("compiled_js").and_then(Value::as_str).map(|compiled_js| PendingComponent {
                    name: call.render["name"].as_str().map(str::to_owned),
                    version: call.render["version"].as_i64(),
                    compiled_js: compiled_js.to_owned(),
                }),
                args: call.args,
                created_at: call.created_at,
            })
            .collect(),
    }))
}

/// Sends the person's message and starts a run; its progress arrives on the stream. A call
/// still waiting for an answer is dismissed first.
#[utoipa::path(
    post, path = "/api/conversations/{id}/messages", tag = "conversations", params(("id" = String, Path)),
    request_body = PostMessage,
    responses((status = 202, body = Accepted), (status = 201, body = super::sessions::NewSessionView,
               description = "The message was `/newsession [name]`: a new session and a conversation in it"),
               (status = 200, body = CommandReply,
               description = "The message was a command (`/cancel`, `/codestats`, `/codefailures [n] [conversation|session]`, `/help`): its answer"),
               (status = 409, body = super::error::ErrorBody), (status = 503, body = super::error::ErrorBody)),
)]
pub(super) async fn post_message(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<PostMessage>,
) -> Result<axum::response::Response, ApiError> {
    if request.text.trim().is_empty() {
        return Err(ApiError::bad_request("the message is empty"));
    }
    let sender = match request.component {
        None => Sender::Person,
        Some(name) if name.trim().is_empty() || name.len() > 128 => {
            return Err(ApiError::bad_request("component must be a component's name (1-128 characters)"));
        }
        Some(name) => Sender::Component(name),
    };
    // Commands (`/newsession [name]`, `/cancel`, `/codestats`, `/codefailures [n]`, `/help`)
    // are read here as in every channel.
    Ok(
        match crate::domain::channel::send(&state, &id, &request.text, sender, wright_core::UsageCaller::Person).await?
        {
            Reply::RunStarted => (StatusCode::ACCEPTED, Json(Accepted { ok: true })).into_response(),
            Reply::SessionStarted(started) => {
                (StatusCode::CREATED, Json(super::sessions::NewSessionView::from(started))).into_response()
            }
            Reply::Text(texts) => (StatusCode::OK, Json(CommandReply { reply: texts.join("\n\n") })).into_response(),
        },
    )
}

/// Stops the conversation's run, if one is going.
#[utoipa::path(
    post, path = "/api/conversations/{id}/cancel", tag = "conversations", params(("id" = String, Path)),
    responses((status = 200, body = Accepted)),
)]
pub(super) async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<Accepted>, ApiError> {
    state.store.conversation(&id).await?;
    crate::domain::channel::cancel(&state, &id).await?;
    Ok(Json(Accepted { ok: true }))
}

/// Answers a call that waits for the person; accepted once (409 after). The run resumes.
#[utoipa::path(
    post, path = "/api/conversations/{id}/pending/{tool_call_id}", tag = "conversations",
    params(("id" = String, Path), ("tool_call_id" = String, Path)), request_body = PendingAnswer,
    responses((status = 200, body = Accepted), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn answer_pending(
    State(state): State<AppState>,
    Path((id, tool_call_id)): Path<(String, String)>,
    ApiJson(request): ApiJson<PendingAnswer>,
) -> Result<Json<Accepted>, ApiError> {
    crate::domain::channel::answer(&state, &id, &tool_call_id, request.answer).await?;
    Ok(Json(Accepted { ok: true }))
}

/// Server-sent events: `event` (a stored event), `delta` (`{text}`), `status`
/// (`{status, error}`). Stored events after `after` are replayed first.
#[utoipa::path(
    get, path = "/api/conversations/{id}/stream", tag = "conversations", params(("id" = String, Path), StreamQuery),
    responses((status = 200, description = "text/event-stream of event, delta and status messages")),
)]
pub(super) async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let conversation = state.store.conversation(&id).await?;
    // Subscribe before reading the store, so an event stored in between is seen on the channel.
    let mut receiver = state.hub.subscribe(&id);
    let replay = state.store.events_after(&id, query.after.unwrap_or(0)).await?;
    let shutdown = state.shutdown.clone();
    let stream = async_stream(move |sender| async move {
        let mut last_seq = query.after.unwrap_or(0);
        let status = Update::Status { status: conversation.status, error: None };
        if sender.send(to_sse(&status)).await.is_err() {
            return;
        }
        for stored in replay {
            last_seq = stored.event.seq;
            if sender.send(to_sse(&Update::Event(stored))).await.is_err() {
                return;
            }
        }
        loop {
            // Also wait for the page to go away and for shutdown: otherwise a quiet
            // conversation's stream (and its hub channel) would outlive the page, and a
            // shutdown would wait for the browser to close.
            let received = tokio::select! {
                received = receiver.recv() => received,
                () = sender.closed() => return,
                () = shutdown.cancelled() => return,
            };
            match received {
                Ok(Update::Event(stored)) if stored.event.seq <= last_seq => {}
                Ok(update) => {
                    if let Update::Event(stored) = &update {
                        last_seq = stored.event.seq;
                    }
                    if sender.send(to_sse(&update)).await.is_err() {
                        return;
                    }
                }
                // Too far behind: end the stream; the page reconnects with `after` and replays.
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// One live update as the event streams send it: the SSE event's name is `type`, its data is
/// `data`. The canvas's types for the streams come from this (it is in the OpenAPI document).
#[derive(Serialize, ToSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub(super) enum LiveUpdate {
    /// A stored event of the conversation.
    Event(EventView),
    /// Assistant text as it streams; the stored assistant event replaces it.
    Delta { text: String },
    /// The conversation's status changed.
    Status { status: ConversationStatus, error: Option<String> },
    /// A notification for the person (on an agent's notification stream).
    Notification(super::notifications::NotificationView),
}

impl From<&Update> for LiveUpdate {
    fn from(update: &Update) -> Self {
        match update {
            Update::Event(stored) => LiveUpdate::Event(EventView::from(stored.clone())),
            Update::Delta { text } => LiveUpdate::Delta { text: text.clone() },
            Update::Status { status, error } => LiveUpdate::Status { status: *status, error: error.clone() },
            Update::Notification(notification) => LiveUpdate::Notification(notification.clone().into()),
            // Published only on the waiting topic, never a conversation's; said as what it is.
            Update::Waiting { .. } => LiveUpdate::Status { status: ConversationStatus::Waiting, error: None },
        }
    }
}

pub(super) fn to_sse(update: &Update) -> Result<SseEvent, Infallible> {
    let frame = serde_json::to_value(LiveUpdate::from(update)).unwrap_or_default();
    let name = frame["type"].as_str().unwrap_or("update").to_owned();
    Ok(SseEvent::default().event(name).data(frame["data"].to_string()))
}

/// A stream fed by a task through a small channel: the task ends when the page goes away
/// (its sends fail), so an abandoned stream holds nothing.
pub(super) fn async_stream<F, Fut>(producer: F) -> impl Stream<Item = Result<SseEvent, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<SseEvent, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(64);
    tokio::spawn(producer(sender));
    futures::stream::unfold(receiver, |mut receiver| async move { receiver.recv().await.map(|item| (item, receiver)) })
}
