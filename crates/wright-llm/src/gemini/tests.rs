use serde_json::json;

use super::*;
use crate::test_support::{settings, tool_turn};

#[test]
fn signatures_and_api_ids_go_back_and_made_up_ids_do_not() {
    let assistant = json!({"thinking": [{"provider": "gemini", "text": "", "signature": "text-sig"}]});
    let call = json!({"provider": "gemini", "api_id": true, "thought_signature": "call-sig"});
    let request = tool_turn(assistant, call);
    let body = serde_json::to_value(build_request(&settings(), &request)).unwrap();
    assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "Be brief."}]}));
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {"role": "model", "parts": [
                {"text": "Looking.", "thoughtSignature": "text-sig"},
                {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "call_1"}, "thoughtSignature": "call-sig"},
                {"functionCall": {"name": "weather", "args": {"invalid_arguments": "{\"city\": Lima"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"output": {"sky": "clear"}}, "id": "call_1"}},
                {"functionResponse": {"name": "weather", "response": {"error": "invalid JSON arguments"}}},
                {"text": "Thanks"}
            ]}
        ])
    );
    let declaration = &body["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration["parametersJsonSchema"], json!({"type": "object", "properties": {}}), "$schema is removed");
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 100}));
}

#[test]
fn urls_follow_streaming_and_a_versioned_base() {
    let mut settings = settings();
    let wire = GeminiWire { settings: settings.clone() };
    assert_eq!(wire.url("models/gemini-x"), "http://127.0.0.1:1/v1beta/models/gemini-x:streamGenerateContent?alt=sse");
    settings.streaming = false;
    settings.base_url = "https://example.com/v1".to_owned();
    assert_eq!(GeminiWire { settings }.url("g"), "https://example.com/v1/models/g:generateContent");
}
