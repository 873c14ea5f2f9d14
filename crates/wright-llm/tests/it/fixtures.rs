//! The 53 recorded response bodies of `../shared/fixtures/wire`, read in place, each checked
//! against what `fixtures.tsv` says a correct client must extract.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_llm::{LlmError, ProviderConfig, ProviderKind, Request, RetryPolicy, StreamEvent, decode_recorded};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/wire")
}

#[derive(Debug, Clone)]
struct Fixture {
    file: String,
    provider: String,
    endpoint: String,
    streaming: bool,
    expected: Value,
    http_status: u16,
    body: Vec<u8>,
}

impl Fixture {
    fn kind(&self) -> ProviderKind {
        match self.provider.as_str() {
            "openai" if self.endpoint.contains("/responses") => ProviderKind::OpenaiResponses,
            "openai" | "azure-openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            "gemini" => ProviderKind::Gemini,
            _ => ProviderKind::OpenaiCompatible,
        }
    }

    fn content_type(&self) -> &'static str {
        if self.file.ends_with(".sse") { "text/event-stream" } else { "application/json" }
    }
}

fn load() -> Vec<Fixture> {
    let dir = fixture_dir();
    let table = std::fs::read_to_string(dir.join("fixtures.tsv")).expect("fixtures.tsv is readable");
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    let column = |name: &str| header.iter().position(|column| *column == name).expect(name);
    let (file, provider, endpoint, streaming, expected, status) = (
        column("file"),
        column("provider"),
        column("endpoint"),
        column("streaming"),
        column("expected"),
        column("http_status"),
    );
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            let name = cells[file].to_owned();
            Fixture {
                body: std::fs::read(dir.join(&name)).expect("fixture body"),
                file: name,
                provider: cells[provider].to_owned(),
                endpoint: cells[endpoint].to_owned(),
                streaming: cells[streaming] == "yes",
                expected: serde_json::from_str(cells[expected]).expect("expected is JSON"),
                http_status: cells[status].parse().expect("status"),
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Whole,
    Bytes,
    Random,
}

impl Mode {
    fn parse(text: &str) -> Mode {
        match text {
            "whole" => Mode::Whole,
            "bytes" => Mode::Bytes,
            _ => Mode::Random,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Whole => "whole",
            Mode::Bytes => "bytes",
            Mode::Random => "random",
        }
    }
}

/// Splits a body as a mode says; random splits are seeded by the file name, so a failure
/// reproduces.
fn split(body: &[u8], mode: Mode, seed: u64) -> Vec<Vec<u8>> {
    match mode {
        Mode::Whole => vec![body.to_vec()],
        Mode::Bytes => body.iter().map(|byte| vec![*byte]).collect(),
        Mode::Random => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut chunks = Vec::new();
            let mut at = 0;
            while at < body.len() {
                let length = rng.random_range(1..=40).min(body.len() - at);
                chunks.push(body[at..at + length].to_vec());
                at += length;
            }
            chunks
        }
    }
}

fn seed_of(name: &str) -> u64 {
    name.bytes().fold(1469598103934665603u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(1099511628211))
}

/// Serves `/<fixture file>/<mode>/…` with the fixture's status, content type and body, split
/// into one HTTP body frame per chunk.
async fn serve(fixtures: Arc<HashMap<String, Fixture>>) -> String {
    async fn handle(State(fixtures): State<Arc<HashMap<String, Fixture>>>, uri: Uri) -> Response {
        let mut segments = uri.path().trim_start_matches('/').split('/');
        let name = segments.next().unwrap_or_default().to_owned();
        let mode = Mode::parse(segments.next().unwrap_or_default());
        let fixture = fixtures.get(&name).expect("a known fixture").clone();
        let chunks = split(&fixture.body, mode, seed_of(&name));
        let frames = futures::stream::unfold(chunks.into_iter(), |mut chunks| async move {
            let chunk = chunks.next()?;
            // Yield between frames so they tend to leave as separate writes.
            tokio::task::yield_now().await;
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(chunk)), chunks))
        });
        Response::builder()
            .status(fixture.http_status)
            .header("content-type", fixture.content_type())
            .body(Body::from_stream(frames))
            .expect("response")
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let app = Router::new().fallback(handle).with_state(fixtures);
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    url
}

async fn replay_http(base: &str, fixture: &Fixture, mode: Mode) -> Vec<Result<StreamEvent, LlmError>> {
    let kind = fixture.kind();
    let prefix = format!("{base}/{}/{}", fixture.file, mode.name());
    let base_url = match kind {
        ProviderKind::Openai | ProviderKind::OpenaiResponses | ProviderKind::OpenaiCompatible => format!("{prefix}/v1"),
        ProviderKind::Anthropic | ProviderKind::Gemini => prefix,
    };
    let mut config = ProviderConfig::new(kind, "recorded-model").with_base_url(base_url).with_api_key("test-key");
    config.streaming = fixture.streaming;
    config.retry = RetryPolicy::none();
    let provider = config.build().expect("provider");
    let request = Request { system: "test".into(), ..Request::default() };
    let stream = provider.stream(request, CancellationToken::new());
    futures::StreamExt::collect::<Vec<_>>(stream).await
}

fn offline(fixture: &Fixture, mode: Mode) -> Vec<Result<StreamEvent, LlmError>> {
    let chunks = split(&fixture.body, mode, seed_of(&fixture.file));
    let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    decode_recorded(fixture.kind(), fixture.streaming, fixture.http_status, fixture.content_type(), &chunks)
}

/// Checks one replay against `expected`; returns the mismatches.
fn check(fixture: &Fixture, results: &[Result<StreamEvent, LlmError>]) -> Vec<String> {
    let expected = &fixture.expected;
    let mut problems = Vec::new();
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    let mut blocks = Vec::new();
    let mut usage = None;
    let mut finish = None;
    let mut error = None;
    for (position, result) in results.iter().enumerate() {
        if error.is_some() || finish.is_some() {
            problems.push(format!("event after the end at {position}: {result:?}"));
        }
        match result {
            Ok(StreamEvent::TextDelta(delta)) => text.push_str(delta),
            Ok(StreamEvent::ThinkingDelta(delta)) => thinking.push_str(delta),
            Ok(StreamEvent::Thinking(block)) => blocks.push(block.clone()),
            Ok(StreamEvent::ToolCall(call)) => calls.push(call.clone()),
            Ok(StreamEvent::Usage(latest)) => usage = Some(latest.clone()),
            Ok(StreamEvent::Finish(done)) => finish = Some(done.clone()),
            Err(failure) => error = Some(failure.clone()),
        }
    }
    if finish.is_none() && error.is_none() {
        problems.push("the stream ended with neither a finish nor an error".to_owned());
    }
    if let Some(want) = expected.get("text").and_then(Value::as_str)
        && text != want
    {
        problems.push(format!("text: got {text:?}, want {want:?}"));
    }
    for key in ["thinking", "reasoning", "thought_text"] {
        if let Some(want) = expected.get(key).and_then(Value::as_str)
            && thinking != want
        {
            problems.push(format!("{key}: got {thinking:?}, want {want:?}"));
        }
    }
    if let Some(want) = expected.get("tool_calls").and_then(Value::as_array) {
        if calls.len() != want.len() {
            problems.push(format!("tool calls: got {}, want {}: {calls:?}", calls.len(), want.len()));
        }
        for (call, want) in calls.iter().zip(want) {
            if call.name != want["name"] {
                problems.push(format!("call name: got {}, want {}", call.name, want["name"]));
            }
            match want["id"].as_str() {
                Some(id) if call.id != id => problems.push(format!("call id: got {}, want {id}", call.id)),
                _ if call.id.is_empty() => problems.push("an empty call id".to_owned()),
                _ => {}
            }
            let wanted_arguments: Value =
                serde_json::from_str(want["arguments_json"].as_str().unwrap_or("{}")).expect("json");
            match call.arguments() {
                Ok(arguments) if arguments == wanted_arguments => {}
                other => problems.push(format!("arguments of {}: got {other:?}, want {wanted_arguments}", call.name)),
            }
            if let Some(item_id) = want.get("item_id")
                && call.provider_data.get("item_id") != Some(item_id)
            {
                problems.push(format!("item_id: got {}, want {item_id}", call.provider_data));
            }
        }
        let mut ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != calls.len() {
            problems.push("call ids are not unique".to_owned());
        }
    }
    let wanted_end = expected.get("finish_reason").or_else(|| expected.get("status"));
    match (wanted_end.and_then(Value::as_str), &finish) {
        (Some("failed"), None) => {}
        (Some(want), Some(finish)) if finish.raw == want => {}
        (None, None) => {}
        (want, got) => {
            // A fixture whose stream failed after a finish reason (OpenRouter) expects the
            // error, not the finish.
            if !(expected.get("error").is_some() && got.is_none()) {
                problems.push(format!("finish: got {got:?}, want {want:?}"));
            }
        }
    }
    match expected.get("error") {
        Some(want) => match &error {
            None => problems.push(format!("no error; want {want}")),
            Some(got) => {
                if got.class() != want["class"] {
                    problems.push(format!("error class: got {} ({got}), want {}", got.class(), want["class"]));
                }
                let info = got.info().cloned().unwrap_or_default();
                if want["message"].as_str() != Some(info.message.as_str()) {
                    problems.push(format!("error message: got {:?}, want {}", info.message, want["message"]));
                }
                let text_of = |value: &Value| match value {
                    Value::String(text) => Some(text.clone()),
                    Value::Number(number) => Some(number.to_string()),
                    _ => None,
                };
                let pairs = [
                    ("http_status", info.http_status.map(|status| status.to_string())),
                    ("type", info.error_type.clone()),
                    ("code", info.code.clone()),
                    ("status", info.status.clone()),
                    ("param", info.param.clone()),
                ];
                for (key, got_value) in pairs {
                    if let Some(want_value) = want.get(key).and_then(text_of)
                        && got_value.as_deref() != Some(want_value.as_str())
                    {
                        problems.push(format!("error {key}: got {got_value:?}, want {want_value}"));
                    }
                }
                if let Some(delay) = want.get("retry_delay").and_then(Value::as_str) {
                    let seconds: f64 = delay.trim_end_matches('s').parse().expect("seconds");
                    if got.retry_after().map(|after| after.as_secs_f64()) != Some(seconds) {
                        problems.push(format!("retry_after: got {:?}, want {delay}", got.retry_after()));
                    }
                }
                if finish.is_some() {
                    problems.push("an error and a clean finish both".to_owned());
                }
            }
        },
        None => {
            if let Some(got) = &error {
                problems.push(format!("unexpected error: {got}"));
            }
        }
    }
    if expected.get("error").is_none() {
        match (expected.get("usage"), usage) {
            // The table lists the `usage` object; llama.cpp's own counts (`timings`) are read
            // too, and checked by `each_wires_usage_as_the_vendor_sends_it`.
            (Some(Value::Null), Some(_)) if fixture.provider == "llamacpp-openai-compat" => {}
            (Some(Value::Null), Some(got)) => problems.push(format!("usage: got {got:?}, want none")),
            (Some(Value::Object(want)), got) => {
                let got = got.unwrap_or_default();
                for (key, value) in want {
                    let got_value = match key.as_str() {
                        "input_tokens" => Some(got.input_tokens),
                        "output_tokens" => Some(got.output_tokens),
                        "total_tokens" => got.total_tokens,
                        "reasoning_tokens" | "thoughts_tokens" => got.reasoning_tokens,
                        _ => continue,
                    };
                    if got_value != value.as_u64() {
                        problems.push(format!("usage {key}: got {got_value:?}, want {value}"));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(want) = expected.get("parts_with_thoughtSignature").and_then(Value::as_u64) {
        let on_calls = calls.iter().filter(|call| call.provider_data.get("thought_signature").is_some()).count();
        let on_text = blocks.iter().filter(|block| block.signature.is_some()).count();
        if (on_calls + on_text) as u64 != want {
            problems.push(format!("thought signatures kept: got {}, want {want}", on_calls + on_text));
        }
    }
    if let Some(want) = expected.get("redacted_thinking_blocks").and_then(Value::as_u64) {
        let got = blocks.iter().filter(|block| block.redacted.as_deref().is_some_and(|data| !data.is_empty())).count();
        if got as u64 != want {
            problems.push(format!("redacted thinking blocks: got {got}, want {want}"));
        }
    }
    if fixture.provider == "anthropic"
        && expected.get("thinking").is_some()
        && !blocks.iter().any(|block| block.signature.as_deref().is_some_and(|signature| !signature.is_empty()))
    {
        problems.push("the thinking signature was not kept".to_owned());
    }
    problems
}

fn report(failures: &[String], checked: usize, what: &str) {
    assert!(failures.is_empty(), "{} of {checked} {what} replays failed:\n{}", failures.len(), failures.join("\n"));
    eprintln!("{checked} {what} replays passed");
}

async fn replay_all_over_http(mode: Mode) {
    let fixtures = load();
    assert_eq!(fixtures.len(), 53, "the fixture set");
    let by_name: HashMap<String, Fixture> =
        fixtures.iter().map(|fixture| (fixture.file.clone(), fixture.clone())).collect();
    let base = serve(Arc::new(by_name)).await;
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let results = replay_http(&base, fixture, mode).await;
        for problem in check(fixture, &results) {
            failures.push(format!("{} [{}]: {problem}", fixture.file, mode.name()));
        }
    }
    report(&failures, fixtures.len(), &format!("HTTP {}", mode.name()));
}

#[tokio::test]
async fn every_fixture_over_http_whole() {
    replay_all_over_http(Mode::Whole).await;
}

#[tokio::test]
async fn every_fixture_over_http_one_byte_at_a_time() {
    replay_all_over_http(Mode::Bytes).await;
}

#[tokio::test]
async fn every_fixture_over_http_at_random_split_points() {
    replay_all_over_http(Mode::Random).await;
}

/// Offline the splits are exact (TCP may merge frames): every mode, and for the random mode
/// several seeds.
#[test]
fn every_fixture_offline_in_every_split() {
    let fixtures = load();
    let mut failures = Vec::new();
    let mut checked = 0;
    for fixture in &fixtures {
        for mode in [Mode::Whole, Mode::Bytes] {
            checked += 1;
            for problem in check(fixture, &offline(fixture, mode)) {
                failures.push(format!("{} [{}]: {problem}", fixture.file, mode.name()));
            }
        }
        for seed in 0..8u64 {
            checked += 1;
            let chunks = split(&fixture.body, Mode::Random, seed_of(&fixture.file) ^ seed);
            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let results = decode_recorded(
                fixture.kind(),
                fixture.streaming,
                fixture.http_status,
                fixture.content_type(),
                &chunks,
            );
            for problem in check(fixture, &results) {
                failures.push(format!("{} [random seed {seed}]: {problem}", fixture.file));
            }
        }
    }
    report(&failures, checked, "offline");
}

/// A body cut anywhere before its end is never a clean completion.
#[test]
fn every_streamed_fixture_cut_short_is_an_error_not_a_completion() {
    let mut checked = 0;
    for fixture in load().iter().filter(|fixture| fixture.http_status == 200 && fixture.streaming) {
        let body = &fixture.body;
        // Cut inside the last data line, well before the end marker or final chunk.
        let Some(last_data) = body.windows(5).rposition(|window| window == b"data:") else { continue };
        let cut = &body[..last_data + 10];
        let results = decode_recorded(fixture.kind(), true, 200, fixture.content_type(), &[cut]);
        let clean = results.iter().any(|result| matches!(result, Ok(StreamEvent::Finish(_))));
        let errored = results.iter().any(Result::is_err);
        // A fixture whose final event is only [DONE] (or a usage chunk) has its finish before
        // the cut; everything else must fail.
        let finish_before_cut =
            decode_recorded(fixture.kind(), true, 200, fixture.content_type(), &[&body[..last_data]])
                .iter()
                .any(|result| matches!(result, Ok(StreamEvent::Finish(_))));
        if !finish_before_cut {
            assert!(!clean && errored, "{}: cut short gave {results:?}", fixture.file);
        }
        checked += 1;
    }
    assert!(checked > 20);
}

/// The usage each wire reports, read from the recorded bodies: every prompt token (cached ones
/// included), the cached share, reasoning where the wire says it, and the provider's id of the
/// request. The figures are the bodies' own.
#[test]
fn each_wires_usage_as_the_vendor_sends_it() {
    let fixtures = load();
    let usage_of = |file: &str| {
        let fixture = fixtures.iter().find(|fixture| fixture.file == file).expect(file);
        let results = offline(fixture, Mode::Whole);
        results
            .into_iter()
            .find_map(|result| match result {
                Ok(StreamEvent::Usage(usage)) => Some(usage),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{file} reports no usage"))
    };
    let id = |usage: &wright_llm::Usage| usage.request_id.clone().unwrap_or_default();

    let chat = usage_of("openai__chat_stream_text_usage.sse");
    assert_eq!((chat.input_tokens, chat.output_tokens, chat.cached_input_tokens), (78, 9, Some(0)));
    assert_eq!(chat.reasoning_tokens, Some(0));
    assert!(id(&chat).starts_with("chatcmpl-"), "{chat:?}");

    let responses = usage_of("openai__responses_stream_function_call.sse");
    assert_eq!((responses.input_tokens, responses.output_tokens, responses.cached_input_tokens), (255, 16, Some(0)));
    assert!(id(&responses).starts_with("resp_"), "{responses:?}");

    let anthropic = usage_of("anthropic__stream_text_then_parallel_tool_use.sse");
    assert_eq!((anthropic.input_tokens, anthropic.output_tokens), (416, 111));
    assert_eq!((anthropic.cached_input_tokens, anthropic.cache_write_tokens), (Some(0), Some(0)));
    assert!(id(&anthropic).starts_with("msg_"), "{anthropic:?}");

    let gemini = usage_of("gemini__stream_function_call_thought_signature_then_empty_text.sse");
    assert_eq!((gemini.input_tokens, gemini.output_tokens, gemini.reasoning_tokens), (29, 10, Some(202)));
    assert!(!id(&gemini).is_empty(), "{gemini:?}");

    // llama.cpp sends no usage object unasked, but its timings count: 15 evaluated + 314
    // from its prompt cache, 35 generated.
    let llama = usage_of("llamacpp-openai-compat__stream_text_then_tool_call_markup_leak.sse");
    assert_eq!((llama.input_tokens, llama.cached_input_tokens, llama.output_tokens), (329, Some(314), 35));
    assert!(id(&llama).starts_with("chatcmpl-"), "{llama:?}");
}

/// Anthropic counts cache reads and writes apart from `input_tokens`; the canonical prompt
/// holds them all, and says which were cached.
#[test]
fn anthropics_cache_reads_and_writes_join_the_prompt() {
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,",
        "\"cache_read_input_tokens\":1000,\"cache_creation_input_tokens\":200,\"output_tokens\":1}}}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":42}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let results = decode_recorded(ProviderKind::Anthropic, true, 200, "text/event-stream", &[body.as_bytes()]);
    let usage = results
        .into_iter()
        .find_map(|result| match result {
            Ok(StreamEvent::Usage(usage)) => Some(usage),
            _ => None,
        })
        .expect("usage");
    assert_eq!(usage.input_tokens, 1210);
    assert_eq!((usage.cached_input_tokens, usage.cache_write_tokens), (Some(1000), Some(200)));
    assert_eq!(usage.output_tokens, 42);
    assert_eq!(usage.request_id.as_deref(), Some("msg_1"));
}
