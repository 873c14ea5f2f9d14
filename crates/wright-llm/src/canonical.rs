//! The provider-neutral side of a model turn: what is asked ([`Request`]), what streams back
//! ([`StreamEvent`]), and the whole turn once the stream is drained ([`Reply`]).
//!
//! History is a slice of `wright_core::Event`s (DESIGN.md §3). Adapters read events through
//! [`HistoryItem::from_event`], which accepts the shapes the loop stores
//! (`tool_call`: `{id, name, arguments, provider}`; `tool_result`:
//! `{tool_call_id, name, output, success}`) and seed 004's (`{id, function: {name, arguments}}`).
//!
//! Invariant: a stream yields complete tool calls only — arguments are whole, ids are never
//! empty — and ends with exactly one [`StreamEvent::Finish`] or one error, never both.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wright_core::{Event, EventKind, ToolSpec};

use crate::LlmError;

/// One model turn, in canonical form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// The system message; empty means none.
    pub system: String,
    /// The conversation: user, assistant, tool_call and tool_result events in order. Other
    /// kinds (system, notice) are skipped by every adapter.
    pub history: Vec<Event>,
    /// Tools the model may call; empty disables tools for this turn. Shared: the loop sends
    /// the same list turn after turn.
    pub tools: Arc<[ToolSpec]>,
    /// Overrides the provider's configured model for this turn.
    pub model: Option<String>,
    /// Overrides the provider's configured output limit for this turn.
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

/// A complete tool call, arguments whole.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    /// The provider's id, or one made up here when the API sent none (Gemini 2.x, text
    /// protocol); tool results reference it.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model produced them (a JSON text, maybe invalid).
    /// Objects the API sent parsed (Gemini, Anthropic non-streaming) are serialized compactly.
    pub arguments_json: String,
    /// What must go back to the provider with this call on the next turn (a Gemini thought
    /// signature, a Responses item id), tagged with the provider; `null` when nothing.
    pub provider_data: Value,
}

impl ToolCallEvent {
    /// The arguments parsed; the raw text when it is not JSON, so the model can be told what
    /// it sent. Empty arguments mean `{}` (a tool without parameters).
    pub fn arguments(&self) -> Result<Value, String> {
        if self.arguments_json.trim().is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_str(&self.arguments_json).map_err(|_| self.arguments_json.clone())
    }
}

/// A reasoning block that the provider needs sent back (Anthropic thinking with its signature
/// or a redacted block; a Gemini thought signature on a text part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// Which wire produced it (`anthropic`, `gemini`); other wires ignore it.
    pub provider: String,
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Anthropic's opaque `redacted_thinking.data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// Token counts, normalized. `output_tokens` excludes reasoning where the provider counts it
/// apart (Gemini `thoughtsTokenCount`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
}

/// Why generation stopped, normalized; the provider's own word is kept in [`Finish::raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer without calling tools.
    Stop,
    /// The reply holds tool calls — decided by the calls themselves, because Gemini and older
    /// Ollama say `STOP`/`stop` after calling tools.
    ToolCalls,
    /// The output limit cut the answer.
    Length,
    ContentFilter,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub reason: FinishReason,
    /// The provider's value (`stop`, `tool_use`, `STOP`, `completed`, …).
    pub raw: String,
}

/// One event of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Assistant text, in order; concatenated it is the reply's text.
    TextDelta(String),
    /// Reasoning text as it streams, for display only.
    ThinkingDelta(String),
    /// A finished reasoning block to keep and send back.
    Thinking(ThinkingBlock),
    /// A tool call whose arguments are whole.
    ToolCall(ToolCallEvent),
    /// Token counts; the last one wins.
    Usage(Usage),
    /// The provider said the reply is complete. Always the last event of a clean stream.
    Finish(Finish),
}

/// A stream of one model turn. Errors end it; a clean stream ends with `Finish`.
pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// The whole of one model turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    /// All reasoning text that streamed, for display.
    pub thinking: String,
    pub thinking_blocks: Vec<ThinkingBlock>,
    pub tool_calls: Vec<ToolCallEvent>,
    pub usage: Option<Usage>,
    pub finish: Finish,
}

impl Reply {
    /// What to store with the assistant event (the loop's `data_json.provider`) so the next
    /// request can send the reasoning blocks back; `null` when there are none.
    pub fn provider_data(&self) -> Value {
        if self.thinking_blocks.is_empty() { Value::Null } else { json!({ "thinking": self.thinking_blocks }) }
    }
}

/// Drains a stream into a [`Reply`], showing every event to `on_event` as it arrives (stream
/// text deltas to the person from there). An error ends the turn: what streamed before it
/// was shown but is not returned as a reply.
pub async fn collect(mut stream: EventStream, mut on_event: impl FnMut(&StreamEvent)) -> Result<Reply, LlmError> {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut thinking_blocks = Vec::new();
    let mut tool_calls = Vec::new();
    let mut usage = None;
    while let Some(item) = stream.next().await {
        let event = item?;
        on_event(&event);
        match event {
            StreamEvent::TextDelta(delta) => text.push_str(&delta),
            StreamEvent::ThinkingDelta(delta) => thinking.push_str(&delta),
            StreamEvent::Thinking(block) => thinking_blocks.push(block),
            StreamEvent::ToolCall(call) => tool_calls.push(call),
            StreamEvent::Usage(latest) => usage = Some(latest),
            StreamEvent::Finish(finish) => {
                return Ok(Reply { text, thinking, thinking_blocks, tool_calls, usage, finish });
            }
        }
    }
    Err(LlmError::Incomplete("the stream ended without a finish".to_owned()))
}

/// A canonical event as the adapters need it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HistoryItem {
    User(String),
    Assistant { text: String, thinking: Vec<ThinkingBlock> },
    ToolCall { id: String, name: String, arguments: Value, provider: Value },
    ToolResult { tool_call_id: String, name: String, output: Value, success: bool },
}

impl HistoryItem {
    /// Reads one stored event; None for kinds a model never sees (system, notice).
    pub(crate) fn from_event(event: &Event) -> Option<HistoryItem> {
        let data = &event.data_json;
        match event.kind {
            EventKind::User => Some(HistoryItem::User(event.content.clone())),
            EventKind::Assistant => {
                let text = data.get("text").and_then(Value::as_str).unwrap_or(&event.content).to_owned();
                let thinking = data
                    .get("provider")
                    .and_then(|provider| provider.get("thinking"))
                    .and_then(|blocks| serde_json::from_value::<Vec<ThinkingBlock>>(blocks.clone()).ok())
                    .unwrap_or_default();
                Some(HistoryItem::Assistant { text, thinking })
            }
            EventKind::ToolCall => {
                let function = data.get("function");
                let name = data
                    .get("name")
                    .or_else(|| function.and_then(|function| function.get("name")))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let raw_arguments = data
                    .get("arguments")
                    .or_else(|| function.and_then(|function| function.get("arguments")))
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                // Seed 004 stores arguments as a JSON text; the loop stores the parsed value,
                // or the raw text when it was not JSON. Either way the wire wants an object.
                let arguments = match raw_arguments {
                    Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
                    other => other,
                };
                Some(HistoryItem::ToolCall {
                    id: data.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    name,
                    arguments,
                    provider: data.get("provider").cloned().unwrap_or(Value::Null),
                })
            }
            EventKind::ToolResult => Some(HistoryItem::ToolResult {
                tool_call_id: data.get("tool_call_id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                name: data.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                output: data.get("output").cloned().unwrap_or_else(|| Value::String(event.content.clone())),
                success: data.get("success").and_then(Value::as_bool).unwrap_or(true),
            }),
            EventKind::System | EventKind::Notice => None,
        }
    }

    pub(crate) fn all(history: &[Event]) -> Vec<HistoryItem> {
        history.iter().filter_map(HistoryItem::from_event).collect()
    }
}

/// A tool output as text, for wires whose tool results are strings: strings as they are,
/// anything else as compact JSON.
pub(crate) fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Arguments as the JSON text OpenAI-style wires want; a raw invalid text stays as it was.
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// A fresh id for a call the API sent without one.
pub(crate) fn made_up_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// The normalized reason for a provider's finish word.
pub(crate) fn finish_reason_of(raw: &str) -> FinishReason {
    match raw {
        "stop" | "end_turn" | "stop_sequence" | "STOP" | "completed" | "pause_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "length" | "max_tokens" | "MAX_TOKENS" | "incomplete" | "model_context_window_exceeded" => FinishReason::Length,
        "content_filter" | "refusal" | "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            FinishReason::ContentFilter
        }
        _ => FinishReason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, content: &str, data_json: Value) -> Event {
        Event { seq: 1, kind, content: content.to_owned(), data_json }
    }

    #[test]
    fn tool_call_events_are_read_in_the_loop_shape_and_the_seed_shape() {
        let loop_shape = event(
            EventKind::ToolCall,
            "f(..)",
            json!({"id": "c1", "name": "f", "arguments": {"a": 1}, "provider": {"provider": "gemini"}}),
        );
        let seed_shape = event(
            EventKind::ToolCall,
            "f(..)",
            json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}),
        );
        let (
            Some(HistoryItem::ToolCall { name, arguments, .. }),
            Some(HistoryItem::ToolCall { name: seed_name, arguments: seed_arguments, .. }),
        ) = (HistoryItem::from_event(&loop_shape), HistoryItem::from_event(&seed_shape))
        else {
            panic!("both are tool calls");
        };
        assert_eq!((name.as_str(), &arguments), ("f", &json!({"a": 1})));
        assert_eq!((seed_name.as_str(), &seed_arguments), ("f", &json!({"a": 1})));
    }

    #[test]
    fn empty_arguments_mean_an_empty_object_and_invalid_ones_keep_their_text() {
        let call = |arguments_json: &str| ToolCallEvent {
            id: "c".into(),
            name: "f".into(),
            arguments_json: arguments_json.into(),
            provider_data: Value::Null,
        };
        assert_eq!(call("").arguments(), Ok(json!({})));
        assert_eq!(call("{\"a\": 1}").arguments(), Ok(json!({"a": 1})));
        assert_eq!(call("{\"a\": ").arguments(), Err("{\"a\": ".to_owned()));
    }
}
