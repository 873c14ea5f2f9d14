//! Helpers shared by the unit tests of the wire modules.

use std::sync::Arc;

use serde_json::{Value, json};
use wright_core::{Event, EventBody, EventKind, ToolSpec};

use crate::canonical::Request;
use crate::config::Settings;

pub(crate) fn settings() -> Settings {
    Settings {
        base_url: "http://127.0.0.1:1".to_owned(),
        api_key: Some("key".to_owned()),
        model: "model-x".to_owned(),
        streaming: true,
        max_output_tokens: None,
        thinking_budget: None,
        temperature: None,
    }
}

/// An event from its stored form; user and assistant text default to `content`.
pub(crate) fn event(kind: EventKind, content: &str, mut data_json: Value) -> Event {
    if matches!(kind, EventKind::User | EventKind::Assistant) && data_json.get("text").is_none() {
        data_json["text"] = Value::String(content.to_owned());
    }
    let body = EventBody::from_stored(kind, data_json).expect("a valid stored event");
    Event { seq: 0, content: content.to_owned(), body }
}

/// A user question, an assistant turn with text and two calls (one with arguments that were
/// not JSON), their results (one failed), and a notice no wire may send.
pub(crate) fn tool_turn(assistant_provider: Value, call_provider: Value) -> Request {
    Request {
        system: "Be brief.".to_owned(),
        history: vec![
            event(EventKind::User, "Weather?", json!({})),
            event(EventKind::Assistant, "Looking.", json!({"text": "Looking.", "provider": assistant_provider})),
            event(
                EventKind::ToolCall,
                "weather(..)",
                json!({"id": "call_1", "name": "weather", "arguments": {"city": "Oslo"}, "provider": call_provider}),
            ),
            event(
                EventKind::ToolCall,
                "weather(..)",
                json!({"id": "call_2", "name": "weather", "arguments": "{\"city\": Lima", "provider": null}),
            ),
            event(
                EventKind::ToolResult,
                "ok",
                json!({"tool_call_id": "call_1", "name": "weather", "output": {"sky": "clear"}, "success": true}),
            ),
            event(
                EventKind::ToolResult,
                "bad",
                json!({"tool_call_id": "call_2", "name": "weather", "output": "invalid JSON arguments", "success": false}),
            ),
            event(EventKind::Notice, "Cancelled.", json!({"type": "cancelled"})),
            event(EventKind::User, "Thanks", json!({})),
        ],
        tools: Arc::from([ToolSpec {
            name: "weather".to_owned(),
            description: "Weather in a city".to_owned(),
            parameters: json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: Default::default(),
            toolset: None,
        }]),
        model: None,
        max_output_tokens: Some(100),
        temperature: None,
        require_tool_call: false,
    }
}
