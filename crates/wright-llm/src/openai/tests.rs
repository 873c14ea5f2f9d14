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

/// A local server answering only `routes` (path → JSON), as vLLM or LM Studio would; every
/// other path 404s, and a request without `Bearer key` (when one is required) gets 401.
async fn local_server(routes: Vec<(&'static str, Value)>, key: Option<&'static str>) -> String {
    use axum::http::{HeaderMap, StatusCode, Uri};
    let routes = std::sync::Arc::new(routes);
    let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let routes = routes.clone();
        async move {
            if let Some(key) = key
                && headers.get("authorization").and_then(|value| value.to_str().ok()) != Some(&format!("Bearer {key}"))
            {
                return (StatusCode::UNAUTHORIZED, "{\"error\":\"unauthorized\"}".to_owned());
            }
            match routes.iter().find(|(path, _)| *path == uri.path()) {
                Some((_, body)) => (StatusCode::OK, body.to_string()),
                None => (StatusCode::NOT_FOUND, "{\"detail\":\"Not Found\"}".to_owned()),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1")
}

fn client() -> reqwest::Client {
    let second = std::time::Duration::from_secs(5);
    crate::transport::http_client(second, second).unwrap()
}

#[tokio::test]
async fn vllm_is_told_by_its_model_list_with_the_window_and_the_weights() {
    // vLLM's ModelCard (vllm/entrypoints/openai/protocol.py): owned_by "vllm", root, max_model_len.
    let listed = json!({"object": "list", "data": [{"id": "assistant", "object": "model", "created": 1_732_000_000,
        "owned_by": "vllm", "root": "Qwen/Qwen2.5-1.5B-Instruct", "parent": null, "max_model_len": 32768,
        "permission": []}]});
    let base = local_server(vec![("/v1/models", listed)], Some("vllm-key")).await;
    let client = client();
    let facts = probe_server(&client, &base, "assistant", Some("vllm-key")).await;
    assert_eq!(facts.server, Some(LocalServer::Vllm));
    assert_eq!(facts.context_window, Some(32768));
    assert_eq!(facts.weights.as_deref(), Some("Qwen/Qwen2.5-1.5B-Instruct"));
    // Without its key, vLLM lists nothing: nothing is known.
    assert_eq!(probe_server(&client, &base, "assistant", None).await, ServerFacts::default());
}

#[tokio::test]
async fn lm_studio_is_told_by_its_own_model_list_with_the_loaded_context() {
    // LM Studio's REST API v0 (`GET /api/v0/models`), as its documentation shows it.
    let listed = json!({"object": "list", "data": [
        {"id": "qwen2-vl-7b-instruct", "object": "model", "type": "vlm", "publisher": "mlx-community",
         "arch": "qwen2_vl", "compatibility_type": "mlx", "quantization": "4bit", "state": "not-loaded",
         "max_context_length": 32768},
        {"id": "qwen2.5-1.5b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
         "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded",
         "max_context_length": 32768, "loaded_context_length": 4096}]});
    let openai_list = json!({"object": "list", "data": [{"id": "qwen2.5-1.5b-instruct", "object": "model",
        "owned_by": "organization_owner"}]});
    let base = local_server(vec![("/api/v0/models", listed), ("/v1/models", openai_list)], None).await;
    let facts = probe_server(&client(), &base, "qwen2.5-1.5b-instruct", None).await;
    assert_eq!(facts.server, Some(LocalServer::LmStudio));
    assert_eq!(facts.context_window, Some(4096));
}

#[tokio::test]
async fn a_compatible_server_that_says_nothing_of_itself_is_not_guessed() {
    let openai_list =
        json!({"object": "list", "data": [{"id": "some-model", "object": "model", "owned_by": "system"}]});
    // A list at /api/v0/models without LM Studio's fields is some other server's.
    let other = json!({"data": [{"id": "some-model"}]});
    let base = local_server(vec![("/v1/models", openai_list), ("/api/v0/models", other)], None).await;
    assert_eq!(probe_server(&client(), &base, "some-model", None).await, ServerFacts::default());
}
