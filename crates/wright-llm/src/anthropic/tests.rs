use serde_json::{Value, json};

use super::*;
use crate::test_support::{settings, tool_turn};

#[test]
fn thinking_goes_back_first_and_results_share_one_user_message() {
    let thinking = json!({"thinking": [
        {"provider": "anthropic", "text": "Think.", "signature": "sig-1"},
        {"provider": "anthropic", "text": "", "redacted": "opaque"},
        {"provider": "gemini", "text": "", "signature": "not ours"}
    ]});
    let request = tool_turn(thinking, Value::Null);
    let body = serde_json::to_value(build_request(&settings(), &request)).unwrap();
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Think.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"invalid_arguments": "{\"city\": Lima"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"sky\":\"clear\"}"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "invalid JSON arguments", "is_error": true},
                {"type": "text", "text": "Thanks"}
            ]}
        ])
    );
    assert_eq!(body["max_tokens"], 100);
    assert!(body.get("thinking").is_none());
}

#[test]
fn a_thinking_budget_turns_thinking_on_and_leaves_room_for_the_answer() {
    let mut settings = settings();
    settings.thinking_budget = Some(2048);
    let body = serde_json::to_value(build_request(&settings, &tool_turn(Value::Null, Value::Null))).unwrap();
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
    assert!(body["max_tokens"].as_u64().unwrap() > 2048);
}

#[test]
fn the_start_input_counts_only_when_no_fragment_follows() {
    let mut decoder = MessagesDecoder::default();
    let mut out = Vec::new();
    let events = [
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
    ];
    for event in events {
        decoder.event(None, &event.to_string(), &mut out).unwrap();
    }
    decoder.end(&mut out).unwrap();
    let StreamEvent::ToolCall(call) = &out[0] else { panic!("{out:?}") };
    assert_eq!(call.arguments_json, "{\"a\":1}");
}
