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
    let history =
        vec![Event { seq: 1, kind: EventKind::User, content: "Time in Oslo?".to_owned(), data_json: json!({}) }];
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
        Event { seq: 1, kind: EventKind::User, content: "Time in Oslo?".to_owned(), data_json: json!({}) },
        Event {
            seq: 2,
            kind: EventKind::Assistant,
            content: "Let me check.".to_owned(),
            data_json: json!({"text": "Let me check."}),
        },
        Event {
            seq: 3,
            kind: EventKind::ToolCall,
            content: "get_time".to_owned(),
            data_json: json!({"id": "call_1", "name": "get_time", "arguments": {"city": "Oslo"}}),
        },
        Event {
            seq: 4,
            kind: EventKind::ToolResult,
            content: "12:00".to_owned(),
            data_json: json!({"tool_call_id": "call_1", "name": "get_time", "output": "12:00", "success": true}),
        },
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
