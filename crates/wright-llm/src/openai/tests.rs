use serde_json::{Value, json};

use super::*;
use crate::test_support::{settings, tool_turn};

#[test]
fn history_becomes_messages_with_calls_on_the_assistant_message() {
    let request = tool_turn(Value::Null, Value::Null);
    let body = serde_json::to_value(build_request(&settings(), Flavor::OpenAi, &request)).unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": Lima"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"clear\"}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "invalid JSON arguments"},
            {"role": "user", "content": "Thanks"}
        ])
    );
    assert_eq!(body["max_completion_tokens"], 100);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    let compatible = serde_json::to_value(build_request(&settings(), Flavor::Compatible, &request)).unwrap();
    assert_eq!((compatible["max_tokens"].clone(), compatible.get("stream_options")), (json!(100), None));
}

#[test]
fn calls_without_text_have_null_content() {
    let mut request = tool_turn(Value::Null, Value::Null);
    request.history.remove(1);
    let messages = serde_json::to_value(messages("", &HistoryItem::all(&request.history))).unwrap();
    assert_eq!(messages[1]["content"], Value::Null);
    assert_eq!(messages[1]["tool_calls"].as_array().unwrap().len(), 2);
}

fn delta(index: Option<u32>, id: Option<&str>, name: Option<&str>, arguments: Option<Value>) -> ToolCallDelta {
    ToolCallDelta {
        index,
        id: id.map(str::to_owned),
        function: Some(wire::FunctionDelta { name: name.map(str::to_owned), arguments }),
    }
}

#[test]
fn the_accumulator_handles_indexes_missing_indexes_and_whole_arguments() {
    let mut accumulator = CallAccumulator::default();
    // Interleaved parallel calls by index.
    accumulator.add(delta(Some(1), Some("b"), Some("second"), Some(json!(""))));
    accumulator.add(delta(Some(0), Some("a"), Some("first"), None));
    accumulator.add(delta(Some(1), None, None, Some(json!("{\"x\":"))));
    accumulator.add(delta(Some(0), None, None, Some(json!("{}"))));
    accumulator.add(delta(Some(1), None, None, Some(json!("1}"))));
    let calls = accumulator.finish();
    let seen: Vec<(&str, &str, &str)> =
        calls.iter().map(|call| (call.id.as_str(), call.name.as_str(), call.arguments_json.as_str())).collect();
    assert_eq!(seen, [("a", "first", "{}"), ("b", "second", "{\"x\":1}")]);

    // No index at all: a new id starts a call, fragments without id extend the last one.
    let mut accumulator = CallAccumulator::default();
    accumulator.add(delta(None, Some("p"), Some("one"), Some(json!("{\"a\""))));
    accumulator.add(delta(None, None, None, Some(json!(":1}"))));
    accumulator.add(delta(None, Some("q"), Some("two"), Some(json!({"b": 2}))));
    let calls = accumulator.finish();
    let seen: Vec<(&str, &str)> = calls.iter().map(|call| (call.id.as_str(), call.arguments_json.as_str())).collect();
    assert_eq!(seen, [("p", "{\"a\":1}"), ("q", "{\"b\":2}")]);

    // No id: one is made up.
    let mut accumulator = CallAccumulator::default();
    accumulator.add(delta(Some(0), None, Some("f"), Some(json!("{}"))));
    assert!(accumulator.finish()[0].id.starts_with("call_"));
}

#[test]
fn errors_are_classified_by_code_before_status() {
    let classify = |status: u16, body: Value| classify_http(status, &HeaderMap::new(), body.to_string().as_bytes());
    let quota = classify(
        429,
        json!({"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}}),
    );
    assert!(matches!(quota, LlmError::QuotaExceeded(_)));
    let limited =
        classify(429, json!({"error": {"message": "Please try again in 20ms.", "code": "rate_limit_exceeded"}}));
    assert_eq!(limited.retry_after(), Some(std::time::Duration::from_millis(20)));
    // Ollama's plain-string error, vLLM's top-level fields, llama.cpp's context type.
    assert!(matches!(classify(404, json!({"error": "model \"x\" not found"})), LlmError::NotFound(_)));
    assert!(matches!(
        classify(
            400,
            json!({"object": "error", "message": "This model's maximum context length is 4096 tokens.", "code": 400})
        ),
        LlmError::ContextLengthExceeded(_)
    ));
    assert!(matches!(
        classify(400, json!({"error": {"code": 400, "message": "too big", "type": "exceed_context_size_error"}})),
        LlmError::ContextLengthExceeded(_)
    ));
    assert!(matches!(classify(502, json!("bad gateway")), LlmError::ServerError { .. }));
}

#[test]
fn ollama_says_its_context_window_in_parameters_or_model_info() {
    let show = |value: serde_json::Value| serde_json::from_value::<wire::OllamaShow>(value).unwrap();
    let set = show(
        json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192", "model_info": {"qwen2.context_length": 32768}}),
    );
    assert_eq!(ollama_context_window(&set), Some(8192));
    let trained = show(json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}));
    assert_eq!(ollama_context_window(&trained), Some(32768));
    assert_eq!(ollama_context_window(&show(json!({}))), None);
}

#[test]
fn ollama_says_its_parameter_count_in_model_info_or_details() {
    let show = |value: serde_json::Value| serde_json::from_value::<wire::OllamaShow>(value).unwrap();
    let counted =
        show(json!({"model_info": {"general.parameter_count": 494032768}, "details": {"parameter_size": "7B"}}));
    assert_eq!(ollama_parameters(&counted), Some(494_032_768));
    assert_eq!(ollama_parameters(&show(json!({"details": {"parameter_size": "7.6B"}}))), Some(7_600_000_000));
    assert_eq!(ollama_parameters(&show(json!({"details": {"parameter_size": "494.03M"}}))), Some(494_030_000));
    assert_eq!(ollama_parameters(&show(json!({"details": {"parameter_size": "big"}}))), None);
    assert_eq!(ollama_parameters(&show(json!({}))), None);
}
