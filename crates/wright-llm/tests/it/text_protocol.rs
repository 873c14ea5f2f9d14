//! The text protocol over a real stream from the fake provider: a model without native tool
//! calls writes a delimited block, split across many small deltas.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wright_core::{Event, EventKind, ToolSpec};
use wright_llm::testing::{FakeProvider, Turn};
use wright_llm::{FinishReason, ProviderKind, Request, ToolCallMode, collect};

fn request(history: Vec<Event>) -> Request {
    Request {
        system: "Be brief.".to_owned(),
        history,
        tools: Arc::from([ToolSpec {
            name: "get_time".to_owned(),
            description: "The time in a city".to_owned(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: Default::default(),
            toolset: None,
        }]),
        ..Request::default()
    }
}

#[tokio::test]
async fn a_block_split_across_deltas_becomes_one_call_and_generation_stops_there() {
    let fake = FakeProvider::start(vec![Turn::text(
        "Let me check.<||TOOL.CALL>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo <|im_end|>\"}}<TOOL.CALL||>\
         And again <||TOOL.CALL>{\"name\": \"get_time\", \"arguments\": {}}<TOOL.CALL||>",
    )])
    .await;
    let mut config = fake.config(ProviderKind::OpenaiCompatible);
    config.tool_calls = ToolCallMode::Text;
    let provider = config.build().expect("provider");
    let history = vec![ev(1, EventKind::User, "Time in Oslo?".to_owned(), json!({}))];
    let reply = collect(provider.stream(request(history), CancellationToken::new()), |_| {}).await.expect("reply");
    assert_eq!(reply.text, "Let me check.");
    assert_eq!(reply.tool_calls.len(), 1, "a block runs once, and nothing after it");
    assert_eq!(reply.tool_calls[0].name, "get_time");
    assert_eq!(
        reply.tool_calls[0].arguments(),
        Ok(json!({"city": "Oslo <|im_end|>"})),
        "stop strings inside a block are ignored"
    );
    assert_eq!(reply.finish.reason, FinishReason::ToolCalls);
    let sent = &fake.requests()[0].body;
    assert!(sent.get("tools").is_none(), "no native tools are sent");
    assert!(
        sent["messages"][0]["content"].as_str().unwrap().contains("<||TOOL.CALL>"),
        "the system message teaches the format"
    );
}

#[tokio::test]
async fn calls_and_results_go_back_as_blocks_in_the_conversation() {
    let fake = FakeProvider::start(vec![Turn::text("It is noon.")]).await;
    let mut config = fake.config(ProviderKind::OpenaiCompatible);
    config.tool_calls = ToolCallMode::Text;
    let provider = config.build().expect("provider");
    let history = vec![
        ev(1, EventKind::User, "Time in Oslo?".to_owned(), json!({})),
        ev(2, EventKind::Assistant, "Let me check.".to_owned(), json!({"text": "Let me check."})),
        ev(
            3,
            EventKind::ToolCall,
            "get_time".to_owned(),
            json!({"id": "call_1", "name": "get_time", "arguments": {"city": "Oslo"}}),
        ),
        ev(
            4,
            EventKind::ToolResult,
            "12:00".to_owned(),
            json!({"tool_call_id": "call_1", "name": "get_time", "output": "12:00", "success": true}),
        ),
    ];
    let reply = collect(provider.stream(request(history), CancellationToken::new()), |_| {}).await.expect("reply");
    assert_eq!(reply.text, "It is noon.");
    assert!(reply.tool_calls.is_empty());
    let messages = fake.requests()[0].body["messages"].clone();
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Let me check.<||TOOL.CALL>{\"name\":\"get_time\",\"arguments\":{\"city\":\"Oslo\"}}<TOOL.CALL||>"})
    );
    assert_eq!(messages[3], json!({"role": "user", "content": "<||TOOL.OUTPUT>12:00<TOOL.OUTPUT||>"}));
}

/// An event from its stored columns; a user event's text is its content.
fn ev(seq: i64, kind: EventKind, content: String, mut data_json: serde_json::Value) -> Event {
    if kind == EventKind::User {
        data_json["text"] = serde_json::Value::String(content.clone());
    }
    Event::from_stored(seq, kind, content, data_json).expect("a valid event")
}
