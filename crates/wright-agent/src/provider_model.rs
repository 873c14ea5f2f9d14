//! The loop's [`Model`] port over a [`wright_llm::Provider`]: one streamed turn, text deltas
//! passed on as they arrive, tool calls handed over whole with their raw argument text when it
//! is not JSON, and what the provider needs sent back kept in `data`.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_llm::{LlmError, Provider, StreamEvent};

use crate::ports::{Model, ModelError, ModelReply, ModelRequest, ModelToolCall};

/// A provider as the loop's model.
pub struct ProviderModel(pub Arc<dyn Provider>);

impl Model for ProviderModel {
    fn reply<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            let llm_request = wright_llm::Request {
                system: request.system,
                history: with_tail(request.history, &request.tail),
                tools: request.tools,
                temperature: request.temperature,
                max_output_tokens: request.max_output_tokens,
                require_tool_call: request.require_tool_call,
                ..wright_llm::Request::default()
            };
            let on_event = |event: &StreamEvent| {
                if let StreamEvent::TextDelta(text) = event {
                    on_text(text);
                }
            };
            let reply = match self.0.complete(llm_request, cancel.clone(), &on_event).await {
                Ok(reply) => reply,
                Err(LlmError::Cancelled) => return Err(ModelError::Cancelled),
                Err(LlmError::NotSent(message)) => return Err(ModelError::NotSent(message)),
                Err(error) => {
                    return Err(ModelError::Failed { kind: error.class().to_owned(), message: error.to_string() });
                }
            };
            let data = reply.provider_data();
            let tool_calls = reply
                .tool_calls
                .into_iter()
                .map(|call| {
                    let arguments = if call.arguments_json.trim().is_empty() {
                        Ok(json!({}))
                    } else {
                        serde_json::from_str::<Value>(&call.arguments_json).map_err(|_| call.arguments_json.clone())
                    };
                    ModelToolCall { id: call.id, name: call.name, arguments, data: call.provider_data }
                })
                .collect();
            Ok(ModelReply { text: reply.text, tool_calls, data })
        })
    }

    fn context_window(&self) -> BoxFuture<'_, Option<usize>> {
        Box::pin(async move { self.0.context_window().await.and_then(|tokens| usize::try_from(tokens).ok()) })
    }

    fn server_facts(&self) -> BoxFuture<'_, wright_llm::ServerFacts> {
        self.0.server_facts()
    }
}

/// The history as sent: `tail` joins the person's message when the history ends with one (two
/// user messages in a row break chat templates that want turns to alternate), else it is a
/// message of its own after the tool results. Either way it is the last thing the model reads.
fn with_tail(history: &[wright_core::Event], tail: &str) -> Vec<wright_core::Event> {
    let mut sent = history.to_vec();
    if tail.is_empty() {
        return sent;
    }
    match sent.last_mut().map(|event| &mut event.body) {
        Some(wright_core::EventBody::User { text, .. }) => {
            text.push_str("\n\n");
            text.push_str(tail);
        }
        _ => sent.push(wright_core::Event {
            seq: 0,
            content: String::new(),
            body: wright_core::EventBody::User { text: tail.to_owned(), component: None },
        }),
    }
    sent
}

#[cfg(test)]
mod tests {
    use wright_core::{Event, EventBody};

    use super::*;

    fn user(text: &str) -> Event {
        Event { seq: 1, content: String::new(), body: EventBody::User { text: text.into(), component: None } }
    }

    #[test]
    fn the_tail_joins_the_persons_last_message_or_follows_the_results() {
        assert_eq!(with_tail(&[user("hi")], ""), [user("hi")]);
        assert_eq!(with_tail(&[user("hi")], "[now]"), [user("hi\n\n[now]")]);
        let result = Event {
            seq: 2,
            content: String::new(),
            body: EventBody::ToolResult {
                tool_call_id: "c".into(),
                name: "t".into(),
                output: serde_json::json!(1),
                success: true,
                outside_origin: None,
            },
        };
        let sent = with_tail(&[user("hi"), result.clone()], "[now]");
        assert_eq!(sent[..2], [user("hi"), result]);
        assert!(matches!(&sent[2].body, EventBody::User { text, .. } if text == "[now]"));
    }
}
