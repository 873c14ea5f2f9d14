//! Runs of the agent loop: at most one per conversation, many conversations at once.
//!
//! `Runs` owns the table of active runs (conversation id → cancellation token). A run is
//! claimed before anything is stored for it and released when its task ends, so two messages
//! racing into one conversation cannot start two runs. Pausing tools end a run; answering
//! the last pending call starts the next one — also after a restart, because everything a run
//! needs is in the store. The loop itself (wright-agent) does no IO: [`StoreTranscript`]
//! gives it the store and the live stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_agent::{LoopConfig, Model, ParkedCall, RunContext, RunOutcome, SystemParts, Transcript};
use wright_core::{AgentId, DocumentKind, Event, EventKind};
use wright_store::{PendingResolution, Store};
use wright_tools::ToolRegistry;

use crate::api::ApiError;
use crate::hub::{Hub, Update};
use crate::models::Models;

/// The configured model and how to name it.
#[derive(Clone)]
pub struct ConfiguredModel {
    pub model: Arc<dyn Model>,
    pub kind: String,
    pub name: String,
}

pub struct Runs {
    store: Store,
    hub: Arc<Hub>,
    tools: Arc<ToolRegistry>,
    models: Models,
    config: LoopConfig,
    /// Active runs. Held only to insert, remove or look up, never across an await.
    active: Mutex<HashMap<String, CancellationToken>>,
}

impl Runs {
    pub fn new(store: Store, hub: Arc<Hub>, tools: Arc<ToolRegistry>, models: Models, config: LoopConfig) -> Self {
        Self { store, hub, tools, models, config, active: Mutex::new(HashMap::new()) }
    }

    /// `(kind, model)` of the default provider, if any.
    pub fn provider_info(&self) -> Option<(String, String)> {
        self.models.default_model().map(|configured| (configured.kind.clone(), configured.name.clone()))
    }

    /// How to configure a model, with the reason none is configured when there is one.
    pub fn setup_hint(&self) -> String {
        match self.models.problem() {
            Some(problem) if problem != wright_llm::HOW_TO_CONFIGURE => {
                format!("{problem}\n\n{}", crate::api::SETUP_HINT)
            }
            _ => crate::api::SETUP_HINT.to_owned(),
        }
    }

    /// Marks runs that a stopped server left `running` as interrupted. Called once at start.
    pub async fn recover_interrupted(&self) -> Result<(), ApiError> {
        for conversation in self.store.conversations_with_status("running").await? {
            let notice = "The previous run was interrupted when the server stopped. Send a message to continue.";
            self.store
                .append_events(
                    &conversation.id,
                    &[(EventKind::Notice, notice.to_owned(), json!({"type": "interrupted"}))],
                )
                .await?;
            self.store.set_conversation_status(&conversation.id, "idle").await?;
        }
        Ok(())
    }

    fn no_model(&self) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_provider", self.setup_hint())
    }

    /// Takes the conversation's run slot, or says a run is going.
    fn claim(&self, conversation_id: &str) -> Result<CancellationToken, ApiError> {
        let mut active = self.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if active.contains_key(conversation_id) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "run_in_progress",
                "the agent is still working in this conversation; wait for it or cancel the run",
            ));
        }
        let token = CancellationToken::new();
        active.insert(conversation_id.to_owned(), token.clone());
        Ok(token)
    }

    fn release(&self, conversation_id: &str) {
        self.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(conversation_id);
    }

    /// Stores the person's message and starts a run. Calls still waiting are dismissed first.
    pub async fn send_message(self: &Arc<Self>, conversation_id: &str, text: &str) -> Result<(), ApiError> {
        let conversation = self.store.conversation(conversation_id).await?;
        let agent = AgentId::parse(&conversation.agent_id)?;
        let model = self.models.for_agent(&agent).ok_or_else(|| self.no_model())?;
        let cancel = self.claim(conversation_id)?;
        let prepared = async {
            for call in self.store.pending_calls(conversation_id).await? {
                let dismissed = json!({"action": "dismissed"});
                match self
                    .store
                    .resolve_pending_call(conversation_id, &call.tool_call_id, PendingResolution::Dismissed, &dismissed)
                    .await
                {
                    Ok(_) => {
                        self.store_tool_result(conversation_id, &call.tool_call_id, &call.tool_name, dismissed).await?
                    }
                    // Answered in the meantime from another page: its result is already stored.
                    Err(wright_store::StoreError::AlreadyAnswered(_)) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            self.publish_events(
                conversation_id,
                self.store.append_events(conversation_id, &[(EventKind::User, text.to_owned(), json!({}))]).await?,
            );
            Ok::<(), ApiError>(())
        }
        .await;
        if let Err(error) = prepared {
            self.release(conversation_id);
            return Err(error);
        }
        self.spawn_run(agent, conversation_id.to_owned(), model, cancel);
        Ok(())
    }

    pub fn cancel(&self, conversation_id: &str) {
        let active = self.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(token) = active.get(conversation_id) {
            token.cancel();
        }
    }

    /// Stores the answer of a pending call as its tool result; resumes the run when no call
    /// of the conversation is left waiting.
    pub async fn answer_pending(
        self: &Arc<Self>,
        conversation_id: &str,
        tool_call_id: &str,
        answer: Value,
    ) -> Result<(), ApiError> {
        let conversation = self.store.conversation(conversation_id).await?;
        let call = self
            .store
            .resolve_pending_call(conversation_id, tool_call_id, PendingResolution::Answered, &answer)
            .await?;
        self.store_tool_result(conversation_id, tool_call_id, &call.tool_name, answer).await?;
        if !self.store.pending_calls(conversation_id).await?.is_empty() {
            return Ok(());
        }
        let agent = AgentId::parse(&conversation.agent_id)?;
        let Some(model) = self.models.for_agent(&agent) else {
            self.set_status(conversation_id, "idle", Some(self.setup_hint())).await;
            return Ok(());
        };
        let cancel = self.claim(conversation_id)?;
        self.spawn_run(agent, conversation_id.to_owned(), model, cancel);
        Ok(())
    }

    fn spawn_run(
        self: &Arc<Self>,
        agent: AgentId,
        conversation_id: String,
        model: ConfiguredModel,
        cancel: CancellationToken,
    ) {
        let runs = Arc::clone(self);
        // The task owns its claim on the run slot and releases it when the run ends, however
        // it ends; cancellation reaches it through `cancel`.
        tokio::spawn(async move {
            runs.set_status(&conversation_id, "running", None).await;
            let transcript = StoreTranscript {
                store: runs.store.clone(),
                databases: Arc::clone(runs.tools.services()),
                hub: Arc::clone(&runs.hub),
                agent: agent.clone(),
                conversation_id: conversation_id.clone(),
            };
            let context = RunContext {
                agent: &agent,
                conversation_id: &conversation_id,
                tools: &runs.tools,
                config: &runs.config,
                cancel: &cancel,
            };
            let outcome = wright_agent::run(model.model.as_ref(), &transcript, context).await;
            let (status, error) = match outcome {
                Ok(RunOutcome::Parked) => ("waiting", None),
                Ok(RunOutcome::Completed | RunOutcome::TurnLimit | RunOutcome::Cancelled) => ("idle", None),
                Err(error) => {
                    let message = error.to_string();
                    let stored = runs
                        .store
                        .append_events(
                            &conversation_id,
                            &[(EventKind::Notice, message.clone(), json!({"type": "error"}))],
                        )
                        .await;
                    if let Ok(events) = stored {
                        runs.publish_events(&conversation_id, events);
                    }
                    ("error", Some(message))
                }
            };
            runs.release(&conversation_id);
            runs.set_status(&conversation_id, status, error).await;
        });
    }

    async fn set_status(&self, conversation_id: &str, status: &str, error: Option<String>) {
        if let Err(store_error) = self.store.set_conversation_status(conversation_id, status).await {
            tracing::warn!(%store_error, conversation_id, "could not store the conversation status");
        }
        self.hub.publish(conversation_id, Update::Status { status: status.to_owned(), error });
    }

    fn publish_events(&self, conversation_id: &str, events: Vec<wright_store::StoredEvent>) {
        for event in events {
            self.hub.publish(conversation_id, Update::Event(event));
        }
    }

    async fn store_tool_result(
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        output: Value,
    ) -> Result<(), ApiError> {
        let data = json!({ "tool_call_id": tool_call_id, "name": tool_name, "output": output, "success": true });
        let stored =
            self.store.append_events(conversation_id, &[(EventKind::ToolResult, output.to_string(), data)]).await?;
        self.publish_events(conversation_id, stored);
        Ok(())
    }
}

/// The loop's view of one conversation: the store for what lasts, the hub for what streams.
pub struct StoreTranscript {
    store: Store,
    /// The tools' services, for the agent database's summary in the system message.
    databases: Arc<wright_tools::Services>,
    hub: Arc<Hub>,
    agent: AgentId,
    conversation_id: String,
}

fn message(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl Transcript for StoreTranscript {
    fn system_parts(&self) -> BoxFuture<'_, Result<SystemParts, String>> {
        Box::pin(async move {
            let prompt = self.store.document(&self.agent, DocumentKind::SystemPrompt).await.map_err(message)?;
            let notes = self.store.document(&self.agent, DocumentKind::LearnedNotes).await.map_err(message)?;
            let state_keys = self.store.list_state_keys(&self.agent, None).await.map_err(message)?;
            let database_summary = self.databases.databases.summary(&self.agent).await.unwrap_or_else(|error| {
                tracing::warn!(%error, "could not summarise the agent database");
                String::new()
            });
            Ok(SystemParts {
                prompt: prompt.content,
                notes: notes.content,
                state_keys,
                database_summary,
                earlier_summary: None,
            })
        })
    }

    fn events(&self) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            let stored = self.store.events_after(&self.conversation_id, 0).await.map_err(message)?;
            Ok(stored.into_iter().map(|stored| stored.event).collect())
        })
    }

    fn append(&self, events: Vec<(EventKind, String, Value)>) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            let stored = self.store.append_events(&self.conversation_id, &events).await.map_err(message)?;
            let plain = stored.iter().map(|stored| stored.event.clone()).collect();
            for event in stored {
                self.hub.publish(&self.conversation_id, Update::Event(event));
            }
            Ok(plain)
        })
    }

    fn park<'a>(&'a self, call: &'a ParkedCall) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.store
                .create_pending_call(
                    &self.conversation_id,
                    &call.tool_call_id,
                    &call.tool_name,
                    &call.arguments,
                    &call.render,
                )
                .await
                .map_err(message)
        })
    }

    fn text_delta(&self, text: &str) {
        self.hub.publish(&self.conversation_id, Update::Delta { text: text.to_owned() });
    }
}
