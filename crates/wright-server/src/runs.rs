//! Runs of the agent loop: at most one per conversation, many conversations at once.
//!
//! `Runs` owns the table of active runs (conversation id → cancellation token). A run is
//! claimed before anything is stored for it and released when its task ends, so two messages
//! racing into one conversation cannot start two runs. Pausing tools end a run; answering
//! the last pending call starts the next one — also after a restart, because everything a run
//! needs is in the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_core::EventKind;
use wright_store::{PendingResolution, Store};

use crate::api::ApiError;
use crate::hub::{Hub, Update};

pub struct Runs {
    store: Store,
    hub: Arc<Hub>,
    /// Active runs. Held only to insert, remove or look up, never across an await.
    active: Mutex<HashMap<String, CancellationToken>>,
}

impl Runs {
    pub fn new(store: Store, hub: Arc<Hub>) -> Self {
        Self { store, hub, active: Mutex::new(HashMap::new()) }
    }

    /// `(kind, model)` of the configured provider, if any.
    pub fn provider_info(&self) -> Option<(String, String)> {
        None
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

    pub async fn send_message(&self, conversation_id: &str, text: &str) -> Result<(), ApiError> {
        self.store.conversation(conversation_id).await?;
        let _ = text;
        Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_provider", crate::api::SETUP_HINT))
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
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        answer: Value,
    ) -> Result<(), ApiError> {
        self.store.conversation(conversation_id).await?;
        let call = self
            .store
            .resolve_pending_call(conversation_id, tool_call_id, PendingResolution::Answered, &answer)
            .await?;
        self.store_tool_result(conversation_id, tool_call_id, &call.tool_name, answer).await?;
        Ok(())
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
        for event in stored {
            self.hub.publish(conversation_id, Update::Event(event));
        }
        Ok(())
    }
}
