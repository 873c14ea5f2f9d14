use serde_json::{Value, json};

use super::*;
use crate::test_support::{settings, tool_turn};

#[test]
fn history_becomes_input_items_referencing_call_ids() {
    let body = serde_json::to_value(build_request(&settings(), &tool_turn(Value::Null, Value::Null))).unwrap();
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["store"], false);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": "Weather?"},
            {"type": "message", "role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": "{\"city\": Lima"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"sky\":\"clear\"}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "invalid JSON arguments"},
            {"type": "message", "role": "user", "content": "Thanks"}
        ])
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {}}, "strict": false})
    );
}
