//! Each adapter against the scripted fake provider: the real client, the real formats.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_core::{Event, EventKind, ToolSpec};
use wright_llm::testing::{FakeError, FakeProvider, Turn};
use wright_llm::{FinishReason, LlmError, ProviderConfig, ProviderKind, Reply, Request, StreamEvent, collect};

const KINDS: [ProviderKind; 5] = [
    ProviderKind::Openai,
    ProviderKind::OpenaiResponses,
    ProviderKind::OpenaiCompatible,
    ProviderKind::Anthropic,
    ProviderKind::Gemini,
];

fn event(kind: EventKind, content: &str, mut data_json: Value) -> Event {
    if kind == EventKind::User {
        data_json["text"] = json!(content);
    }
    Event::from_stored(0, kind, content.to_owned(), data_json).expect("a valid event")
}

fn request() -> Request {
    Request {
        system: "You are a test.".to_owned(),
        history: vec![event(EventKind::User, "What time is it in Oslo?", json!({}))],
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

async fn run(config: &ProviderConfig, request: Request) -> (Result<Reply, LlmError>, String) {
    let provider = config.build().expect("provider");
    let mut streamed = String::new();
    let reply = collect(provider.stream(request, CancellationToken::new()), |event| {
        if let StreamEvent::TextDelta(delta) = event {
            streamed.push_str(delta);
        }
    })
    .await;
    (reply, streamed)
}

fn configs(fake: &FakeProvider, kind: ProviderKind) -> Vec<ProviderConfig> {
    let streaming = fake.config(kind);
    let mut whole = fake.config(kind);
    whole.streaming = false;
    vec![streaming, whole]
}

#[tokio::test]
async fn parallel_calls_with_split_arguments_arrive_whole_on_every_adapter() {
    for kind in KINDS {
        for config in configs(&FakeProvider::start(Vec::new()).await, kind) {
            let fake = FakeProvider::start(vec![Turn::ToolCalls {
                text: "Let me look — «both» cities.".to_owned(),
                calls: vec![
                    wright_llm::testing::FakeCall::new("get_time", json!({"city": "Oslo", "note": "naïve ✓"})),
                    wright_llm::testing::FakeCall::new("get_time", json!({"city": "Lima"})),
                ],
            }])
            .await;
            let config = ProviderConfig { base_url: Some(fake.base_url(kind)), ..config };
            let (reply, streamed) = run(&config, request()).await;
            let reply = reply.unwrap_or_else(|error| panic!("{kind:?} streaming={}: {error}", config.streaming));
            assert_eq!(reply.text, "Let me look — «both» cities.", "{kind:?}");
            assert_eq!(streamed, reply.text);
            let calls: Vec<(String, Value)> = reply
                .tool_calls
                .iter()
                .map(|call| (call.name.clone(), call.arguments().expect("valid JSON")))
                .collect();
            assert_eq!(
                calls,
                vec![
                    ("get_time".to_owned(), json!({"city": "Oslo", "note": "naïve ✓"})),
                    ("get_time".to_owned(), json!({"city": "Lima"}))
                ],
                "{kind:?} streaming={}",
                config.streaming
            );
            assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
            assert_eq!(reply.finish.reason, FinishReason::ToolCalls, "{kind:?}");
            // Compatible servers are not asked for the usage chunk (see the openai module).
            let usage_asked = !(kind == ProviderKind::OpenaiCompatible && config.streaming);
            assert_eq!(reply.usage.is_some(), usage_asked, "{kind:?} streaming={}", config.streaming);
            if let Some(usage) = &reply.usage {
                let fake = wright_llm::testing::FAKE_USAGE;
                let counted = (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens);
                assert_eq!(
                    counted,
                    (fake.prompt_tokens, Some(fake.cached_prompt_tokens), fake.completion_tokens),
                    "{kind:?} streaming={}",
                    config.streaming
                );
            }
        }
    }
}

#[tokio::test]
async fn rate_limits_and_overloads_are_retried_with_the_hinted_delay() {
    for kind in KINDS {
        let fake = FakeProvider::start(vec![
            Turn::Error(FakeError::RateLimit { retry_after: Duration::from_millis(5) }),
            Turn::Error(FakeError::Overloaded),
            Turn::text("Finally."),
        ])
        .await;
        let (reply, _) = run(&fake.config(kind), request()).await;
        assert_eq!(reply.expect("retried to success").text, "Finally.", "{kind:?}");
        assert_eq!(fake.requests().len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_the_last_error_is_returned() {
    let fake = FakeProvider::start(vec![Turn::Error(FakeError::ServerError); 5]).await;
    let mut config = fake.config(ProviderKind::Anthropic);
    config.retry.max_retries = 2;
    let (reply, _) = run(&config, request()).await;
    assert!(matches!(reply, Err(LlmError::ServerError { .. })), "{reply:?}");
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn a_hint_longer_than_the_longest_delay_is_not_waited_for() {
    let fake =
        FakeProvider::start(vec![Turn::Error(FakeError::RateLimit { retry_after: Duration::from_secs(120) })]).await;
    let (reply, _) = run(&fake.config(ProviderKind::Openai), request()).await;
    match reply {
        Err(error @ LlmError::RateLimited { .. }) => assert_eq!(error.retry_after(), Some(Duration::from_secs(120))),
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn context_length_and_authentication_errors_surface_at_once() {
    for kind in KINDS {
        let fake =
            FakeProvider::start(vec![Turn::Error(FakeError::ContextLength), Turn::Error(FakeError::Authentication)])
                .await;
        let (first, _) = run(&fake.config(kind), request()).await;
        assert!(matches!(first, Err(LlmError::ContextLengthExceeded(_))), "{kind:?}: {first:?}");
        let (second, _) = run(&fake.config(kind), request()).await;
        assert!(matches!(second, Err(LlmError::Authentication(_))), "{kind:?}: {second:?}");
        assert_eq!(fake.requests().len(), 2, "{kind:?}: not retried");
    }
}

#[tokio::test]
async fn an_error_inside_the_stream_after_text_is_an_error_and_not_retried() {
    for kind in KINDS {
        let fake = FakeProvider::start(vec![
            Turn::StreamError { text: "Partial answer".to_owned(), message: "Overloaded".to_owned() },
            Turn::text("never asked for"),
        ])
        .await;
        let (reply, streamed) = run(&fake.config(kind), request()).await;
        assert!(reply.is_err(), "{kind:?}: {reply:?}");
        assert_eq!(streamed, "Partial answer", "{kind:?}: what streamed stays shown");
        assert_eq!(fake.requests().len(), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn a_stream_that_ends_without_a_finish_is_incomplete() {
    for kind in KINDS {
        let fake = FakeProvider::start(vec![Turn::Truncated { text: "Half a thou".to_owned() }]).await;
        let (reply, streamed) = run(&fake.config(kind), request()).await;
        assert!(matches!(reply, Err(LlmError::Incomplete(_))), "{kind:?}: {reply:?}");
        assert_eq!(streamed, "Half a thou");
    }
}

#[tokio::test]
async fn cancelling_mid_stream_ends_the_stream_and_the_connection() {
    for kind in KINDS {
        let fake = FakeProvider::start(vec![Turn::Hang { text: "Thinking about it".to_owned() }]).await;
        let provider = fake.config(kind).build().expect("provider");
        let cancel = CancellationToken::new();
        let mut stream = provider.stream(request(), cancel.clone());
        let mut text = String::new();
        while text != "Thinking about it" {
            match stream.next().await {
                Some(Ok(StreamEvent::TextDelta(delta))) => text.push_str(&delta),
                Some(Ok(_)) => {}
                other => panic!("{kind:?}: {other:?} before the text"),
            }
        }
        cancel.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("ends promptly");
        assert!(matches!(ended, Some(Err(LlmError::Cancelled))), "{kind:?}: {ended:?}");
        assert!(stream.next().await.is_none());
        for _ in 0..100 {
            if fake.disconnects() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(fake.disconnects(), 1, "{kind:?}: the connection was closed");
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let fake = FakeProvider::start(vec![Turn::Hang { text: "…".to_owned() }]).await;
    let provider = fake.config(ProviderKind::Openai).build().expect("provider");
    let mut stream = provider.stream(request(), CancellationToken::new());
    assert!(matches!(stream.next().await, Some(Ok(StreamEvent::TextDelta(_)))));
    drop(stream);
    for _ in 0..100 {
        if fake.disconnects() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(fake.disconnects(), 1);
}

/// A whole tool turn as the loop stores it, sent back on the next request.
fn history_with_a_tool_turn() -> Vec<Event> {
    vec![
        event(EventKind::User, "Time in Oslo and Lima?", json!({})),
        event(EventKind::Assistant, "Checking.", json!({"text": "Checking.", "provider": null})),
        event(
            EventKind::ToolCall,
            "get_time(..)",
            json!({"id": "call_a", "name": "get_time", "arguments": {"city": "Oslo"}, "provider": null}),
        ),
        event(
            EventKind::ToolCall,
            "get_time(..)",
            json!({"id": "call_b", "name": "get_time", "arguments": {"city": "Lima"}, "provider": null}),
        ),
        event(
            EventKind::ToolResult,
            "12:00",
            json!({"tool_call_id": "call_a", "name": "get_time", "output": {"time": "12:00"}, "success": true}),
        ),
        event(
            EventKind::ToolResult,
            "failed",
            json!({"tool_call_id": "call_b", "name": "get_time", "output": "no such city", "success": false}),
        ),
        event(EventKind::Notice, "ignored", json!({"type": "cancelled"})),
    ]
}

#[tokio::test]
async fn the_request_each_adapter_sends_has_the_vendors_shape() {
    for kind in KINDS {
        let fake = FakeProvider::start(vec![Turn::text("ok")]).await;
        let request = Request { history: history_with_a_tool_turn(), ..request() };
        run(&fake.config(kind), request).await.0.expect("reply");
        let sent = fake.requests().remove(0);
        let body = &sent.body;
        match kind {
            ProviderKind::Openai | ProviderKind::OpenaiCompatible => {
                assert_eq!(sent.path_and_query, "/v1/chat/completions");
                assert_eq!(sent.headers["authorization"], "Bearer test-key");
                let roles: Vec<&str> =
                    body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
                assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
                assert_eq!(body["messages"][2]["tool_calls"][1]["function"]["arguments"], "{\"city\":\"Lima\"}");
                assert_eq!(
                    body["messages"][3],
                    json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"time\":\"12:00\"}"})
                );
                assert_eq!(body["tools"][0]["function"]["name"], "get_time");
                assert_eq!(body["stream"], true);
                assert_eq!(body["stream_options"].is_object(), kind == ProviderKind::Openai);
            }
            ProviderKind::Anthropic => {
                assert_eq!(sent.path_and_query, "/v1/messages");
                assert_eq!(sent.headers["x-api-key"], "test-key");
                assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
                assert_eq!(body["system"], "You are a test.");
                let roles: Vec<&str> =
                    body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
                assert_eq!(roles, ["user", "assistant", "user"]);
                assert_eq!(
                    body["messages"][1]["content"][2],
                    json!({"type": "tool_use", "id": "call_b", "name": "get_time", "input": {"city": "Lima"}})
                );
                assert_eq!(
                    body["messages"][2]["content"][1],
                    json!({"type": "tool_result", "tool_use_id": "call_b", "content": "no such city", "is_error": true})
                );
                assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
            }
            ProviderKind::Gemini => {
                assert_eq!(sent.path_and_query, "/v1beta/models/fake-model:streamGenerateContent?alt=sse");
                assert_eq!(sent.headers["x-goog-api-key"], "test-key");
                assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You are a test.");
                let roles: Vec<&str> =
                    body["contents"].as_array().unwrap().iter().map(|c| c["role"].as_str().unwrap()).collect();
                assert_eq!(roles, ["user", "model", "user"]);
                assert_eq!(
                    body["contents"][1]["parts"][1],
                    json!({"functionCall": {"name": "get_time", "args": {"city": "Oslo"}}})
                );
                assert_eq!(
                    body["contents"][2]["parts"][1],
                    json!({"functionResponse": {"name": "get_time", "response": {"error": "no such city"}}})
                );
                assert_eq!(body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["type"], "object");
            }
            ProviderKind::OpenaiResponses => {
                assert_eq!(sent.path_and_query, "/v1/responses");
                assert_eq!(sent.headers["authorization"], "Bearer test-key");
                assert_eq!(body["instructions"], "You are a test.");
                let input = body["input"].as_array().unwrap();
                let call = input.iter().find(|item| item["type"] == "function_call" && item["call_id"] == "call_b");
                assert_eq!(call.map(|item| item["arguments"].clone()), Some(json!("{\"city\":\"Lima\"}")), "{body}");
                let output =
                    input.iter().find(|item| item["type"] == "function_call_output" && item["call_id"] == "call_a");
                assert_eq!(output.map(|item| item["output"].clone()), Some(json!("{\"time\":\"12:00\"}")), "{body}");
                assert_eq!(body["tools"][0]["name"], "get_time");
                assert_eq!(body["stream"], true);
            }
        }
    }
}

#[tokio::test]
async fn an_exhausted_script_answers_with_a_marker_text() {
    let fake = FakeProvider::start(Vec::new()).await;
    let (reply, _) = run(&fake.config(ProviderKind::Gemini), request()).await;
    assert_eq!(reply.expect("reply").text, wright_llm::testing::SCRIPT_EXHAUSTED);
}

/// The fake is as strict as each real API about a tool call without its result: the request
/// is refused with the vendor's status and message, and no turn of the script is spent.
#[tokio::test]
async fn the_fake_refuses_a_call_without_its_result_like_each_vendor() {
    let fake = FakeProvider::start(vec![Turn::text("ok")]).await;
    let cases = [
        (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "done"},
                {"role": "user", "content": "again"}]}),
            "The following tool_call_ids did not have response messages: call_2",
        ),
        (
            "/v1/responses",
            json!({"model": "m", "input": [
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]}),
            "No tool output found for function call call_1.",
        ),
        (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "text", "text": "again"}]}]}),
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
        ),
        (
            "/v1beta/models/m:generateContent",
            json!({"contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "g", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}),
            "the number of function response parts is equal to the number of function call parts",
        ),
    ];
    let client = reqwest::Client::new();
    for (path, body, message) in cases {
        let response = client.post(format!("{}{path}", fake.url())).json(&body).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 400, "{path}");
        let text = response.text().await.unwrap();
        assert!(text.contains(message), "{path}: {text}");
    }
    assert_eq!(fake.refusals().len(), 4);
    // The script's turn is still there for a valid request.
    let reply = run(&fake.config(ProviderKind::Anthropic), request()).await.0.expect("reply");
    assert_eq!(reply.text, "ok");
}

#[tokio::test]
async fn a_local_server_that_fails_to_stream_a_call_is_asked_for_the_answer_whole() {
    // llama.cpp's streaming tool-call parser ends some streams with a 500 its whole-response
    // path does not hit ("Invalid diff: now finding less tool calls!").
    // It streams a newline first: whitespace is nothing shown, so the answer is still asked whole.
    let failure =
        || Turn::StreamError { text: "\n".into(), message: "Invalid diff: now finding less tool calls!".into() };
    let fake = FakeProvider::start(vec![failure(), Turn::tool_call("get_time", json!({"city": "Oslo"}))]).await;
    let (reply, _) = run(&fake.config(ProviderKind::OpenaiCompatible), request()).await;
    assert_eq!(reply.expect("answered whole").tool_calls[0].name, "get_time");
    let streams: Vec<bool> = fake.requests().iter().map(|request| request.body["stream"] == json!(true)).collect();
    assert_eq!(streams, [true, false]);

    // OpenAI's own API streams reliably: it is retried as it was sent.
    let fake = FakeProvider::start(vec![failure(), Turn::text("Noon.")]).await;
    let (reply, _) = run(&fake.config(ProviderKind::Openai), request()).await;
    assert_eq!(reply.expect("retried").text, "\nNoon.", "the newline streamed before the failure stays");
    assert!(fake.requests().iter().all(|request| request.body["stream"] == json!(true)));
}
