//! The agent loop end to end: the real `wright serve` binary talking to the scripted fake
//! provider over each wire format — OpenAI's own Chat Completions dialect, OpenAI's Responses
//! API, the compatible dialect of local servers, Anthropic, Gemini and the text protocol —
//! configured through the environment, as a user would.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wright_llm::ProviderKind;
use wright_llm::testing::{FakeCall, FakeError, FakeProvider, Turn};

pub(crate) const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");
pub(crate) const TOKEN: &str = "loop-token";

#[derive(Clone, Copy, Debug)]
pub(crate) enum Wire {
    Openai,
    Responses,
    Compatible,
    Anthropic,
    Gemini,
    Text,
}

pub(crate) const WIRES: [Wire; 6] =
    [Wire::Openai, Wire::Responses, Wire::Compatible, Wire::Anthropic, Wire::Gemini, Wire::Text];

pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
    pub(crate) client: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Server {
    pub(crate) fn start(data_dir: &Path, fake: &FakeProvider, wire: Wire) -> Self {
        Self::start_with(data_dir, fake, wire, &[])
    }

    pub(crate) fn start_with(data_dir: &Path, fake: &FakeProvider, wire: Wire, extra_env: &[(&str, &str)]) -> Self {
        let mut command = model_command(data_dir, fake, wire);
        command.args(["serve", "--bind", "127.0.0.1:0"]).envs(extra_env.iter().copied());
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next();
        let listening = lines.next().unwrap().unwrap();
        let url = listening.rsplit(' ').next().unwrap().to_owned();
        rustls::crypto::ring::default_provider().install_default().ok();
        Self { child, url, client: reqwest::Client::new() }
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response =
            self.client.post(format!("{}{path}", self.url)).bearer_auth(TOKEN).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn get(&self, path: &str) -> Value {
        self.client.get(format!("{}{path}", self.url)).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap()
    }

    pub(crate) async fn conversation(&self) -> String {
        let (status, created) = self.post("/api/agents/default/conversations", json!({"title": "loop"})).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    /// Sends a message and waits until the run stops; returns the conversation detail.
    pub(crate) async fn say(&self, id: &str, text: &str) -> Value {
        let (status, body) = self.post(&format!("/api/conversations/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 202, "{body}");
        self.settle(id).await
    }

    pub(crate) async fn settle(&self, id: &str) -> Value {
        let started = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let detail = self.get(&format!("/api/conversations/{id}")).await;
            if detail["conversation"]["status"] != "running" {
                // The run may not have been marked running yet; a settled run has events after the user's.
                let last_kind =
                    detail["events"].as_array().and_then(|events| events.last()).map(|event| event["kind"].clone());
                if last_kind != Some(json!("user")) {
                    return detail;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the run did not settle: {detail}");
        }
    }
}

fn kinds(detail: &Value) -> Vec<String> {
    detail["events"].as_array().unwrap().iter().map(|event| event["kind"].as_str().unwrap().to_owned()).collect()
}

pub(crate) fn results(detail: &Value) -> Vec<Value> {
    detail["events"].as_array().unwrap().iter().filter(|event| event["kind"] == "tool_result").cloned().collect()
}

/// A script turn calling tools, in the wire's own way: native calls, or the text protocol's
/// delimited blocks (one per turn).
pub(crate) fn calls(wire: Wire, calls: Vec<(&str, Value)>) -> Vec<Turn> {
    said_and_called(wire, "", calls)
}

/// Like [`calls`], with text before the first call.
fn said_and_called(wire: Wire, text: &str, calls: Vec<(&str, Value)>) -> Vec<Turn> {
    match wire {
        Wire::Text => calls
            .into_iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                let block = format!("<||TOOL.CALL>{}<TOOL.CALL||>", json!({"name": name, "arguments": arguments}));
                Turn::text(if index == 0 { format!("{text}{block}") } else { block })
            })
            .collect(),
        _ => vec![Turn::ToolCalls {
            text: text.to_owned(),
            calls: calls.into_iter().map(|(name, arguments)| FakeCall::new(name, arguments)).collect(),
        }],
    }
}

/// `wright --data-dir DIR` with the environment a user sets for `wire`, pointed at `fake`.
pub(crate) fn model_command(data_dir: &Path, fake: &FakeProvider, wire: Wire) -> Command {
    let mut command = Command::new(WRIGHT);
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_clear()
        .env("WRIGHT_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // The variables a user would set for each: the vendor's key and base URL, and the model.
    // `openai-chat` keeps OpenAI's own dialect at a base URL that is not api.openai.com; plain
    // `openai` there means the compatible dialect.
    let (key, base, kind, model) = match wire {
        Wire::Openai => ("OPENAI_API_KEY", "OPENAI_BASE_URL", ProviderKind::Openai, "openai-chat/fake-model"),
        Wire::Responses => {
            ("OPENAI_API_KEY", "OPENAI_BASE_URL", ProviderKind::OpenaiResponses, "openai-responses/fake-model")
        }
        Wire::Compatible => ("OPENAI_API_KEY", "OPENAI_BASE_URL", ProviderKind::OpenaiCompatible, "openai/fake-model"),
        Wire::Anthropic => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ProviderKind::Anthropic, "anthropic/fake-model"),
        Wire::Gemini => ("GEMINI_API_KEY", "GEMINI_BASE_URL", ProviderKind::Gemini, "gemini/fake-model"),
        // A local server without a key, taught the text protocol.
        Wire::Text => ("", "OPENAI_BASE_URL", ProviderKind::OpenaiCompatible, "openai-compatible/fake-model"),
    };
    if !key.is_empty() {
        command.env(key, "test-key");
    }
    command.env(base, fake.base_url(kind)).env("WRIGHT_MODEL", model);
    if matches!(wire, Wire::Text) {
        command.env("WRIGHT_TOOL_CALLS", "text");
    }
    command
}

#[tokio::test]
async fn parallel_calls_and_a_tool_error_the_model_recovers_from_on_every_wire() {
    for wire in WIRES {
        let mut script =
            calls(wire, vec![("set_state", json!({"key": "city", "value": "Oslo"})), ("get_state", json!({"key": 5}))]);
        script.push(Turn::text("Saved Oslo; the lookup failed, so I will not retry it."));
        let fake = FakeProvider::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        let detail = server.say(&id, "remember Oslo").await;
        assert_eq!(detail["conversation"]["status"], "idle", "{wire:?}: {detail}");
        let results = results(&detail);
        assert_eq!(results.len(), 2, "{wire:?}: {detail}");
        assert_eq!(
            (results[0]["success"].clone(), results[1]["success"].clone()),
            (json!(true), json!(false)),
            "{wire:?}"
        );
        assert_eq!(results[1]["output"]["category"], "invalid_arguments", "{wire:?}");
        let last = detail["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (last["kind"].as_str(), last["content"].as_str()),
            (Some("assistant"), Some("Saved Oslo; the lookup failed, so I will not retry it.")),
            "{wire:?}"
        );
        let requests = fake.requests();
        // The two OpenAI dialects differ on the wire: only OpenAI itself is asked for usage.
        let asks_usage = requests[0].body.get("stream_options").is_some();
        assert_eq!(asks_usage, matches!(wire, Wire::Openai), "{wire:?}: {}", requests[0].body);
        let responses_api = requests[0].path_and_query.ends_with("/responses");
        assert_eq!(responses_api, matches!(wire, Wire::Responses), "{wire:?}: {}", requests[0].path_and_query);
        let last_request = requests.last().unwrap().body.to_string();
        assert!(
            last_request.contains("invalid_arguments"),
            "{wire:?}: the error went back to the model: {last_request}"
        );
        let state = server.get("/api/agents/default/state/city").await;
        assert_eq!(state["value"], "Oslo", "{wire:?}");
    }
}

#[tokio::test]
async fn the_turn_limit_a_429_and_a_context_length_error_on_every_wire() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "[agent]\nmax_tool_turns = 2\n").unwrap();
        let mut script = Vec::new();
        for _ in 0..2 {
            script.extend(calls(wire, vec![("list_state_keys", json!({}))]));
        }
        script.push(Turn::text("Stopping here."));
        script.push(Turn::Error(FakeError::RateLimit { retry_after: Duration::from_millis(20) }));
        script.push(Turn::text("after the retry"));
        script.push(Turn::Error(FakeError::ContextLength));
        let fake = FakeProvider::start(script).await;
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        let detail = server.say(&id, "loop forever").await;
        let events = detail["events"].as_array().unwrap();
        let notice = events.last().unwrap();
        assert_eq!(notice["type"], "turn_limit", "{wire:?}: {detail}");
        assert_eq!(events[events.len() - 2]["content"], "Stopping here.", "{wire:?}");
        let final_request = &fake.requests()[2].body;
        assert!(
            final_request.get("tools").is_none_or(|tools| tools.as_array().is_none_or(Vec::is_empty)),
            "{wire:?}: {final_request}"
        );
        assert_eq!(results(&detail).len(), 2, "{wire:?}: two tool turns ran, the third request had no tools");
        let detail = server.say(&id, "again").await;
        let last = detail["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["content"], "after the retry", "{wire:?}: the 429 was retried: {detail}");
        let detail = server.say(&id, "too long").await;
        assert_eq!(detail["conversation"]["status"], "error", "{wire:?}: {detail}");
        let last = detail["events"].as_array().unwrap().last().unwrap().clone();
        assert!(last["content"].as_str().unwrap().contains("context length"), "{wire:?}: {last}");
    }
}

/// Issue 33 item 7: a provider (or a gateway before it) that quotes the key it was sent in its
/// 401 — `Incorrect API key provided: Bearer sk-…` — must not put the key into the stored error
/// notice, the conversation's API answer, or the server's log.
#[tokio::test]
async fn a_key_the_provider_quotes_in_its_error_is_redacted_everywhere_on_every_wire() {
    const KEY: &str = "sk-proj-EchoedBack-7f3a9c1d2e4b";
    for wire in [Wire::Openai, Wire::Responses, Wire::Compatible, Wire::Anthropic, Wire::Gemini] {
        let fake = FakeProvider::start(vec![Turn::Error(FakeError::EchoingKey)]).await;
        let dir = tempfile::tempdir().unwrap();
        let log_path = dir.path().join("serve.log");
        let variable = match wire {
            Wire::Anthropic => "ANTHROPIC_API_KEY",
            Wire::Gemini => "GEMINI_API_KEY",
            _ => "OPENAI_API_KEY",
        };
        let mut command = model_command(dir.path(), &fake, wire);
        command
            .env(variable, KEY)
            .env("RUST_LOG", "debug,sqlx=warn,hyper=warn,reqwest=warn,h2=warn")
            .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()))
            .args(["serve", "--bind", "127.0.0.1:0"]);
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next();
        let url = lines.next().unwrap().unwrap().rsplit(' ').next().unwrap().to_owned();
        rustls::crypto::ring::default_provider().install_default().ok();
        let server = Server { child, url, client: reqwest::Client::new() };
        let id = server.conversation().await;
        let detail = server.say(&id, "hello").await;
        let sent = fake.requests()[0].headers.clone();
        assert!(format!("{sent:?}").contains(KEY), "{wire:?}: the fake was sent the key");
        let shown = detail.to_string();
        assert_eq!(detail["conversation"]["status"], "error", "{wire:?}: {shown}");
        assert!(shown.contains("[redacted]"), "{wire:?}: the provider's quote is there, redacted: {shown}");
        assert!(!shown.contains(KEY), "{wire:?}: the API answer holds the key: {shown}");
        drop(server);
        for file in ["wright.db", "wright.db-wal"] {
            let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
            assert!(!bytes.windows(KEY.len()).any(|window| window == KEY.as_bytes()), "{wire:?}: {file} holds the key");
        }
        let log = std::fs::read_to_string(&log_path).unwrap();
        assert!(!log.contains(KEY), "{wire:?}: the log holds the key: {log}");
    }
}

#[tokio::test]
async fn cancel_mid_stream_closes_the_connection_and_says_so_on_every_wire() {
    for wire in WIRES {
        let fake = FakeProvider::start(vec![Turn::Hang { text: "Thinking about".into() }]).await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        let (status, _) =
            server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "take your time"})).await;
        assert_eq!(status, 202);
        let started = Instant::now();
        while fake.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(started.elapsed() < Duration::from_secs(10));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _) = server.post(&format!("/api/conversations/{id}/cancel"), json!({})).await;
        assert_eq!(status, 200);
        let detail = server.settle(&id).await;
        let last = detail["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["type"], "cancelled", "{wire:?}: {detail}");
        assert_eq!(detail["conversation"]["status"], "idle", "{wire:?}");
        let started = Instant::now();
        while fake.disconnects() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(started.elapsed() < Duration::from_secs(5), "{wire:?}: the stream was not closed");
        }
    }
}

#[tokio::test]
async fn a_run_killed_mid_way_reloads_with_every_stored_event_on_every_wire() {
    for wire in WIRES {
        let mut script = said_and_called(wire, "Noting it.", vec![("set_state", json!({"key": "k", "value": 1}))]);
        script.push(Turn::Hang { text: "and now".into() });
        let fake = FakeProvider::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "go"})).await;
        let started = Instant::now();
        while fake.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(started.elapsed() < Duration::from_secs(10), "{wire:?}");
        }
        let before = server.get(&format!("/api/conversations/{id}")).await;
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let after = server.get(&format!("/api/conversations/{id}")).await;
        let before_kinds = kinds(&before);
        assert_eq!(before_kinds, ["user", "assistant", "tool_call", "tool_result"], "{wire:?}: {before}");
        assert_eq!(
            after["events"].as_array().unwrap()[..4],
            before["events"].as_array().unwrap()[..4],
            "{wire:?}: {after}"
        );
        assert_eq!(after["events"][4]["type"], "interrupted", "{wire:?}: {after}");
        assert_eq!(after["conversation"]["status"], "idle", "{wire:?}");
        let state = server.get("/api/agents/default/state/k").await;
        assert_eq!(state["value"], 1, "{wire:?}: the tool's effect survived the kill");
    }
}

#[tokio::test]
async fn a_long_conversation_is_compacted_without_losing_events_on_every_wire() {
    for wire in WIRES {
        let fake = FakeProvider::start(vec![
            // Long answers that do not repeat themselves (a reply that does is stopped).
            Turn::text((0..21).map(|part| format!("a long answer, part {part}. ")).collect::<String>()),
            Turn::text((0..24).map(|part| format!("another long answer, part {part}. ")).collect::<String>()),
            Turn::text("SUMMARY: two long answers were given."),
            Turn::text("Short reply."),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[agent]\ncompact_above_chars = 1200\nkeep_recent_chars = 200\n",
        )
        .unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        server.say(&id, "first").await;
        server.say(&id, "second").await;
        let detail = server.say(&id, "third").await;
        let events = detail["events"].as_array().unwrap();
        assert!(
            events.iter().any(|event| event["summary"] == "SUMMARY: two long answers were given."),
            "{wire:?}: {detail}"
        );
        assert_eq!(events.iter().filter(|event| event["kind"] == "user").count(), 3, "{wire:?}: no event was lost");
        assert_eq!(events.last().unwrap()["content"], "Short reply.", "{wire:?}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 4, "{wire:?}: two answers, the summary, the reply");
        let summary_request = requests[2].body.to_string();
        assert!(
            summary_request.contains("a long answer, part 0. a long answer, part 1."),
            "{wire:?}: the summary request holds the old turn"
        );
        let last_request = requests[3].body.to_string();
        assert!(last_request.contains("SUMMARY: two long answers"), "{wire:?}: the summary reached the model");
        assert!(!last_request.contains("a long answer, part 0."), "{wire:?}: compacted turns were not sent again");
        assert!(last_request.contains("another long answer"), "{wire:?}: the recent turn was kept");
        assert!(last_request.contains("third"), "{wire:?}: the new message was sent");
    }
}

#[tokio::test]
async fn a_pending_question_survives_a_restart_is_answered_once_and_resumes_the_run() {
    let fake = FakeProvider::start(vec![
        Turn::tool_call("ask_user", json!({"question": "Tea or coffee?", "options": ["tea", "coffee"]})),
        Turn::text("Tea it is."),
        Turn::tool_call("ask_user", json!({"question": "Milk?"})),
        Turn::text("Noted."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &fake, Wire::Anthropic);
    let id = server.conversation().await;
    let detail = server.say(&id, "make me a drink").await;
    assert_eq!(detail["conversation"]["status"], "waiting", "{detail}");
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    assert_eq!(detail["pending"][0]["args"]["options"], json!(["tea", "coffee"]));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Anthropic);
    let detail = server.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(detail["pending"][0]["tool_call_id"], call_id.as_str(), "the question is still there after a restart");
    let (status, _) =
        server.post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"answer": "tea"}})).await;
    assert_eq!(status, 200);
    let (status, body) = server
        .post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"answer": "coffee"}}))
        .await;
    assert_eq!(status, 409, "a second answer is refused: {body}");
    let detail = server.settle(&id).await;
    let last = detail["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "Tea it is.", "{detail}");
    assert!(fake.requests()[1].body.to_string().contains("tea"), "the answer reached the model");
    // A new message while a question is pending dismisses it first.
    let detail = server.say(&id, "one more").await;
    assert_eq!(detail["conversation"]["status"], "waiting", "{detail}");
    let detail = server.say(&id, "never mind, just tea").await;
    let dismissed = results(&detail)
        .into_iter()
        .find(|result| result["name"] == "ask_user" && result["output"]["action"] == "dismissed");
    assert!(dismissed.is_some(), "{detail}");
    assert!(detail["pending"].as_array().unwrap().is_empty());
}

/// Sandbox code that keeps its worker busy for `millis`: a tool that runs for a while.
fn slow_code(millis: u64) -> Value {
    json!({"code": format!("const end = Date.now() + {millis}; while (Date.now() < end) {{}} return 'slept';"), "timeout_ms": 20000})
}

/// Every tool call has exactly one result before the next user or assistant message.
fn assert_paired(detail: &Value, context: &str) {
    let mut open: Vec<String> = Vec::new();
    for event in detail["events"].as_array().unwrap() {
        match event["kind"].as_str().unwrap() {
            "tool_call" => open.push(event["id"].as_str().unwrap().to_owned()),
            "tool_result" => {
                let id = event["tool_call_id"].as_str().unwrap();
                let position = open.iter().position(|open_id| open_id == id);
                assert!(position.is_some(), "{context}: a result without its call: {event}");
                open.remove(position.unwrap());
            }
            "user" | "assistant" => {
                assert!(open.is_empty(), "{context}: calls {open:?} left without results: {detail}")
            }
            _ => {}
        }
    }
}

async fn wait_for(server: &Server, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let detail = server.get(&format!("/api/conversations/{id}")).await;
        if ready(&detail) {
            return detail;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "never saw {what}: {detail}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test]
async fn stop_during_a_tool_of_two_parallel_calls_then_the_next_message_is_answered_on_every_wire() {
    for wire in WIRES {
        // The text protocol makes one call per turn: there, the stop comes during the only call.
        let parallel = match wire {
            Wire::Text => vec![("run_sandbox_code", slow_code(8000))],
            _ => vec![("run_sandbox_code", slow_code(8000)), ("set_state", json!({"key": "k", "value": 1}))],
        };
        let mut script = calls(wire, parallel);
        script.push(Turn::text("Back again."));
        let fake = FakeProvider::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        let (status, _) = server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "go"})).await;
        assert_eq!(status, 202);
        wait_for(&server, &id, "the tool call", |detail| kinds(detail).contains(&"tool_call".to_owned())).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let (status, _) = server.post(&format!("/api/conversations/{id}/cancel"), json!({})).await;
        assert_eq!(status, 200);
        let detail = server.settle(&id).await;
        assert!(started.elapsed() < Duration::from_secs(5), "{wire:?}: the running tool was stopped, not awaited");
        assert_eq!(detail["conversation"]["status"], "idle", "{wire:?}: {detail}");
        assert_paired(&detail, &format!("{wire:?}"));
        let categories: Vec<Value> =
            results(&detail).iter().map(|result| result["output"]["category"].clone()).collect();
        assert!(categories.iter().all(|category| category == "cancelled"), "{wire:?}: {detail}");
        assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["type"], "cancelled", "{wire:?}");
        let state = server.get("/api/agents/default/state/k").await;
        assert!(state["value"].is_null(), "{wire:?}: the call after the cancel never ran: {state}");
        // Unanswered calls would make every later request fail; this one is answered.
        let detail = server.say(&id, "are you there?").await;
        let last = detail["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["content"], "Back again.", "{wire:?}: {detail}");
        assert!(fake.refusals().is_empty(), "{wire:?}: {:?}", fake.refusals());
    }
}

#[tokio::test]
async fn an_answer_given_while_the_same_turn_still_runs_resumes_the_run() {
    // The text protocol makes one call per turn, so a turn cannot hold a pause and another call.
    for wire in [Wire::Openai, Wire::Responses, Wire::Compatible, Wire::Anthropic, Wire::Gemini] {
        let mut script =
            calls(wire, vec![("ask_user", json!({"question": "Tea?"})), ("run_sandbox_code", slow_code(1500))]);
        script.push(Turn::text("Tea, then."));
        let fake = FakeProvider::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "drink?"})).await;
        let detail = wait_for(&server, &id, "the pending question", |detail| {
            detail["pending"].as_array().is_some_and(|pending| !pending.is_empty())
        })
        .await;
        assert_eq!(detail["conversation"]["status"], "running", "{wire:?}: the sandbox call still runs");
        let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
        let (status, body) = server
            .post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"answer": "yes"}}))
            .await;
        assert_eq!(status, 200, "{wire:?}: {body}");
        let detail = wait_for(&server, &id, "the final answer", |detail| {
            detail["events"].as_array().unwrap().last().unwrap()["content"] == "Tea, then."
        })
        .await;
        assert_eq!(detail["conversation"]["status"], "idle", "{wire:?}: {detail}");
        assert_paired(&detail, &format!("{wire:?}"));
        assert!(fake.refusals().is_empty(), "{wire:?}: {:?}", fake.refusals());
    }
}

#[tokio::test]
async fn a_tool_that_panics_leaves_the_conversation_usable() {
    let fake = FakeProvider::start(vec![
        Turn::tool_calls(vec![("list_state_keys", json!({})), ("set_state", json!({"key": "k", "value": 2}))]),
        Turn::text("That tool broke; the other worked."),
        Turn::text("Still here."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(dir.path(), &fake, Wire::Openai, &[("WRIGHT_FAULT_PANIC_TOOL", "list_state_keys")]);
    let id = server.conversation().await;
    let detail = server.say(&id, "go").await;
    assert_eq!(detail["conversation"]["status"], "idle", "{detail}");
    let results = results(&detail);
    assert_eq!(results[0]["output"]["category"], "internal", "{detail}");
    assert_eq!(results[1]["success"], true);
    let detail = server.say(&id, "and now?").await;
    assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["content"], "Still here.");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

#[tokio::test]
async fn wright_chat_beside_wright_serve_leaves_the_servers_run_alone() {
    let fake = FakeProvider::start(vec![Turn::Hang { text: "thinking".into() }]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Anthropic);
    let id = server.conversation().await;
    server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "take your time"})).await;
    wait_for(&server, &id, "the run", |detail| detail["conversation"]["status"] == "running").await;
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A terminal chat opens the same data directory and ends at once (no input).
    let output = model_command(dir.path(), &fake, Wire::Anthropic)
        .arg("chat")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let detail = server.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(detail["conversation"]["status"], "running", "the server's run was not marked interrupted: {detail}");
    assert!(!kinds(&detail).contains(&"notice".to_owned()), "{detail}");
    server.post(&format!("/api/conversations/{id}/cancel"), json!({})).await;
    let detail = server.settle(&id).await;
    assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["type"], "cancelled", "{detail}");
}

/// Answers the conversation's first waiting call, if one waits; says whether it did.
async fn answer_first_pending(server: &Server, id: &str, detail: &Value) -> bool {
    if detail["conversation"]["status"] != "waiting" {
        return false;
    }
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    server.post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"answer": "yes"}})).await;
    true
}

/// A small deterministic generator, so a failing chaos run can be replayed from its seed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

#[tokio::test]
async fn chaos_sigkill_at_random_moments_loses_nothing_and_every_conversation_goes_on() {
    let seed = 0x5eed_2026;
    let mut random = Lcg(seed);
    // Each round of the script: parallel calls (one slow), a pause, an answer.
    let round = || {
        vec![
            Turn::tool_calls(vec![
                ("run_sandbox_code", slow_code(300)),
                ("set_state", json!({"key": "k", "value": 1})),
            ]),
            Turn::tool_calls(vec![("ask_user", json!({"question": "Go on?"})), ("list_state_keys", json!({}))]),
            Turn::text("Round done."),
        ]
    };
    let fake = FakeProvider::start((0..40).flat_map(|_| round()).collect()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &fake, Wire::Openai);
    let conversations = [server.conversation().await, server.conversation().await];
    let mut seen: Vec<Vec<Value>> = vec![Vec::new(); conversations.len()];
    let started = Instant::now();
    for kill in 0..20 {
        // Nudge every conversation on: answer what waits, or say something.
        for id in &conversations {
            let detail = server.get(&format!("/api/conversations/{id}")).await;
            if !answer_first_pending(&server, id, &detail).await && detail["conversation"]["status"] != "running" {
                server.post(&format!("/api/conversations/{id}/messages"), json!({"text": format!("go {kill}")})).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(random.below(600))).await;
        for (index, id) in conversations.iter().enumerate() {
            seen[index] = server.get(&format!("/api/conversations/{id}")).await["events"].as_array().unwrap().clone();
        }
        tokio::time::sleep(Duration::from_millis(random.below(100))).await;
        server.child.kill().unwrap(); // SIGKILL
        server.child.wait().unwrap();
        server = Server::start(dir.path(), &fake, Wire::Openai);
        for (index, id) in conversations.iter().enumerate() {
            let detail = server.get(&format!("/api/conversations/{id}")).await;
            let events = detail["events"].as_array().unwrap();
            assert!(
                events.len() >= seen[index].len() && events[..seen[index].len()] == seen[index][..],
                "seed {seed:#x}, kill {kill}: events were lost: before {:?} after {detail}",
                seen[index]
            );
            assert_paired(&detail, &format!("seed {seed:#x}, kill {kill}"));
            assert_ne!(detail["conversation"]["status"], "error", "seed {seed:#x}, kill {kill}: {detail}");
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the chaos run is bounded in time");
    }
    // Every conversation continues to a final answer.
    for id in &conversations {
        for _ in 0..10 {
            let detail = server.get(&format!("/api/conversations/{id}")).await;
            if answer_first_pending(&server, id, &detail).await || detail["conversation"]["status"] == "running" {
                server.settle(id).await;
                continue;
            }
            let last = detail["events"].as_array().unwrap().last().cloned().unwrap_or_default();
            if last["kind"] == "assistant" && !last["content"].as_str().unwrap_or_default().is_empty() {
                break;
            }
            server.say(id, "finish up").await;
        }
        let detail = server.get(&format!("/api/conversations/{id}")).await;
        assert_eq!(detail["conversation"]["status"], "idle", "seed {seed:#x}: {detail}");
        assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["kind"], "assistant", "{detail}");
        assert_paired(&detail, &format!("seed {seed:#x}, end"));
    }
    assert!(fake.refusals().is_empty(), "seed {seed:#x}: requests refused: {:?}", fake.refusals());
}

impl Server {
    async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        let response =
            self.client.put(format!("{}{path}", self.url)).bearer_auth(TOKEN).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test]
async fn a_call_its_policy_asks_about_waits_for_approval_across_a_restart_and_runs_as_edited() {
    let fake = FakeProvider::start(vec![
        Turn::tool_call("set_state", json!({"key": "k", "value": 1})),
        Turn::text("Saved."),
        Turn::tool_call("set_state", json!({"key": "k", "value": 3})),
        Turn::text("Not saved, then."),
        Turn::tool_call("set_state", json!({"key": "k", "value": 4})),
        Turn::text("Refused by policy."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &fake, Wire::Openai);
    let (status, body) = server.put("/api/agents/default/tools/set_state/policy", json!({"policy": "ask"})).await;
    assert_eq!((status, body["policy"].as_str(), body["default_policy"].as_str()), (200, Some("ask"), Some("allow")));
    let id = server.conversation().await;
    let detail = server.say(&id, "save it").await;
    assert_eq!(detail["conversation"]["status"], "waiting", "{detail}");
    assert_eq!(
        (detail["pending"][0]["kind"].as_str(), detail["pending"][0]["tool_name"].as_str()),
        (Some("approval"), Some("set_state"))
    );
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    assert!(server.get("/api/agents/default/state/k").await["value"].is_null(), "nothing ran before approval");
    // The approval waits durably: a restart changes nothing.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Openai);
    let (status, body) = server
        .post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"decision": "maybe"}}))
        .await;
    assert_eq!(status, 400, "an unknown decision is refused: {body}");
    let answer = json!({"answer": {"decision": "approve", "arguments": {"key": "k", "value": 2}}});
    let (status, body) = server.post(&format!("/api/conversations/{id}/pending/{call_id}"), answer).await;
    assert_eq!(status, 200, "{body}");
    let detail = server.settle(&id).await;
    assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["content"], "Saved.", "{detail}");
    assert_eq!(server.get("/api/agents/default/state/k").await["value"], 2, "it ran with the person's edit");
    assert_paired(&detail, "approved");
    let approved = results(&detail).last().unwrap().clone();
    assert_eq!(
        approved["output"],
        json!({"ok": true, "arguments_edited_by_person": {"key": "k", "value": 2}}),
        "the model reads what really ran: {approved}"
    );
    // Denied: the model reads the refusal; nothing runs.
    let detail = server.say(&id, "now 3").await;
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    server.post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"decision": "deny"}})).await;
    let detail = server.settle(&id).await;
    let last_result = results(&detail).last().unwrap().clone();
    assert_eq!(
        (last_result["success"].as_bool(), last_result["output"]["category"].as_str()),
        (Some(false), Some("denied"))
    );
    assert_eq!(server.get("/api/agents/default/state/k").await["value"], 2);
    // A deny policy refuses at once, without asking.
    server.put("/api/agents/default/tools/set_state/policy", json!({"policy": "deny"})).await;
    let detail = server.say(&id, "now 4").await;
    assert_eq!(detail["conversation"]["status"], "idle", "{detail}");
    assert_eq!(results(&detail).last().unwrap()["output"]["category"], "denied");
    // The execution log says who decided.
    let log = server.get("/api/agents/default/executions?tool=set_state").await;
    let decisions: Vec<(Option<&str>, bool)> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|execution| (execution["decided_by"].as_str(), execution["success"].as_bool().unwrap()))
        .collect();
    assert_eq!(decisions, [(Some("policy"), false), (Some("person"), false), (Some("person"), true)], "{log}");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

#[tokio::test]
async fn always_allow_sets_the_policy_and_a_new_message_dismisses_a_waiting_approval() {
    let fake = FakeProvider::start(vec![
        Turn::tool_call("set_state", json!({"key": "a", "value": 1})),
        Turn::tool_call("set_state", json!({"key": "b", "value": 1})),
        Turn::text("Done."),
        Turn::tool_call("set_state", json!({"key": "c", "value": 1})),
        Turn::text("Ran without asking."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Anthropic);
    server.put("/api/agents/default/tools/set_state/policy", json!({"policy": "ask"})).await;
    let id = server.conversation().await;
    let detail = server.say(&id, "a").await;
    assert_eq!(detail["pending"][0]["kind"], "approval");
    // The person writes instead of approving: the call is closed as not run.
    let detail = server.say(&id, "never mind").await;
    let dismissed = results(&detail).first().unwrap().clone();
    assert_eq!(
        (dismissed["success"].as_bool(), dismissed["output"]["category"].as_str()),
        (Some(false), Some("dismissed"))
    );
    assert_eq!(detail["pending"][0]["kind"], "approval", "the model asked again: {detail}");
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    server.post(&format!("/api/conversations/{id}/pending/{call_id}"), json!({"answer": {"decision": "always"}})).await;
    server.settle(&id).await;
    let tools = server.get("/api/agents/default/tools").await;
    let set_state = tools.as_array().unwrap().iter().find(|tool| tool["name"] == "set_state").unwrap().clone();
    assert_eq!((set_state["policy"].as_str(), set_state["overridden"].as_bool()), (Some("allow"), Some(true)));
    let detail = server.say(&id, "c").await;
    assert_eq!(detail["events"].as_array().unwrap().last().unwrap()["content"], "Ran without asking.", "{detail}");
    assert_eq!(server.get("/api/agents/default/state/b").await["value"], 1);
    assert!(server.get("/api/agents/default/state/a").await["value"].is_null());
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

/// Issue 16: a memory the model stores is in the system message of the next run (assembled at
/// run start, like the notes, so one run's requests share one system message); the person's
/// edit and forget through the memory API show in the run after each.
#[tokio::test]
async fn a_memory_stored_by_the_model_and_edited_by_the_person_reaches_the_next_system_message() {
    let wire = Wire::Openai;
    let mut script = calls(
        wire,
        vec![(
            "memory",
            json!({"action": "store", "layer": "long", "category": "preference", "content": "Prefers tea over coffee"}),
        )],
    );
    script.push(Turn::text("Noted."));
    script.push(Turn::text("Tea."));
    script.push(Turn::text("Green tea it is."));
    script.push(Turn::text("Forgotten."));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    // Every schema sent whole: with on-demand loading the catalogue part of the system
    // message changes when a tool is loaded mid-run.
    std::fs::write(dir.path().join("config.toml"), "[agents.default.tools]\nloading = \"all\"\n").unwrap();
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;
    let detail = server.say(&id, "I prefer tea").await;
    let stored = &results(&detail)[0]["output"];
    assert_eq!(stored["success"], true, "{detail}");
    let memory_id = stored["memories"][0]["id"].as_str().unwrap().to_owned();
    let system_of = |index: usize| fake.requests()[index].body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(!system_of(0).contains("Prefers tea"), "not there before it was stored");
    assert_eq!(system_of(1), system_of(0), "one system message per run");
    server.say(&id, "what do I drink?").await;
    let line = format!("[long/preference #{memory_id}] Prefers tea over coffee");
    assert!(system_of(2).contains(&line), "{}", system_of(2));

    let listed = server.get("/api/agents/default/memories?layer=long").await;
    assert_eq!(listed[0]["author"], "agent", "{listed}");
    let edited = server
        .client
        .patch(format!("{}/api/agents/default/memories/{memory_id}", server.url))
        .bearer_auth(TOKEN)
        .json(&json!({"content": "Prefers green tea"}))
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status().as_u16(), 200);
    server.say(&id, "what now?").await;
    assert!(system_of(3).contains("Prefers green tea") && !system_of(3).contains("over coffee"), "{}", system_of(3));

    let (status, forgotten) = server.post(&format!("/api/agents/default/memories/{memory_id}/forget"), json!({})).await;
    assert_eq!((status, forgotten["archived_reason"].as_str()), (200, Some("forget")), "{forgotten}");
    server.say(&id, "and now?").await;
    assert!(!system_of(4).contains("green tea"), "{}", system_of(4));
    let history = server.get(&format!("/api/agents/default/memories/{memory_id}/history")).await;
    let actions: Vec<(&str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|change| (change["action"].as_str().unwrap(), change["author"].as_str().unwrap()))
        .collect();
    assert_eq!(actions, vec![("store", "agent"), ("edit", "admin"), ("forget", "admin")]);
    let (status, restored) = server.post(&format!("/api/agents/default/memories/{memory_id}/restore"), json!({})).await;
    assert_eq!((status, restored["archived_at"].clone()), (200, Value::Null), "{restored}");
    let found = server.get("/api/agents/default/memories?query=green%20tea").await;
    assert_eq!(found[0]["id"].to_string(), memory_id, "{found}");
}

/// Issue 16: `/newsession [name]` typed in a chat starts a session and a conversation in it,
/// without a model turn; the open session's session memories end.
#[tokio::test]
async fn newsession_typed_in_the_chat_starts_a_session_and_a_conversation() {
    let wire = Wire::Openai;
    let mut script =
        calls(wire, vec![("memory", json!({"action": "store", "layer": "session", "content": "Drafting the letter"}))]);
    script.push(Turn::text("Noted."));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;
    server.say(&id, "I am drafting the letter").await;
    let requests = fake.requests().len();

    let (status, started) =
        server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "/newsession Taxes"})).await;
    assert_eq!(status, 201, "{started}");
    assert_eq!(started["session"]["name"], "Taxes");
    assert_eq!(started["session"]["started_by"], "person");
    let new_conversation = started["conversation_id"].as_str().unwrap();
    assert_eq!(started["session"]["conversation_ids"], json!([new_conversation]));
    assert_eq!(fake.requests().len(), requests, "no model turn for the command");
    let detail = server.get(&format!("/api/conversations/{id}")).await;
    assert!(!detail["events"].to_string().contains("/newsession"), "the command is not a message");

    let sessions = server.get("/api/agents/default/sessions").await;
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(sessions[1]["conversation_ids"], json!([id]));
    assert!(sessions[1]["ended_at"].is_string());
    let session_memories = server.get("/api/agents/default/memories?layer=session").await;
    assert_eq!(session_memories, json!([]), "the session memory ended with its session");
    let archived = server.get("/api/agents/default/memories?archived=true").await;
    assert_eq!(archived[0]["archived_reason"], "expire", "{archived}");
}

/// Issue 29: the system message describes only the toolsets the agent has. Issue 35 item 6:
/// the workspace toolset is on by default, so its section (glob, grep, file tools, bash) is
/// there, and it is gone once the person switches the toolset off.
#[tokio::test]
async fn the_system_message_describes_the_workspace_only_when_its_toolset_is_on() {
    let wire = Wire::Openai;
    let fake = FakeProvider::start(vec![Turn::text("Hi."), Turn::text("Hi again.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;
    server.say(&id, "hello").await;
    let system_of = |index: usize| fake.requests()[index].body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system_of(0).contains("## Your workspace"), "{}", system_of(0));
    assert!(system_of(0).contains("file_read"), "{}", system_of(0));
    let settings = server.get("/api/agents/default/tool-settings").await;
    let toolsets: Vec<Value> =
        settings["toolsets"].as_array().unwrap().iter().filter(|toolset| **toolset != "workspace").cloned().collect();
    assert_eq!(toolsets.len() + 1, settings["toolsets"].as_array().unwrap().len(), "on by default: {settings}");
    let response = server
        .client
        .put(format!("{}/api/agents/default/tool-settings", server.url))
        .bearer_auth(TOKEN)
        .json(&json!({"toolsets": toolsets, "loading": settings["loading"], "always_loaded": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    server.say(&id, "and now?").await;
    assert!(!system_of(1).contains("## Your workspace"), "{}", system_of(1));
    assert!(!system_of(1).contains("file_read"), "{}", system_of(1));
}

/// Issue 32: a local server that says nothing of its model (the fake) keeps today's settings
/// and says why; `[model_profiles]` in config.toml gives it the small-model profile, whose
/// first request goes out at temperature 0, held to a call, with a reply cap. A hosted API
/// keeps today's settings. The API says which profile and why.
#[tokio::test]
async fn the_model_profile_is_chosen_from_the_connection_and_applied_to_the_request() {
    let fake = FakeProvider::start(vec![Turn::text("Saved.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Compatible);
    let profile = server.get("/api/agents/default/model/profile").await;
    assert_eq!(profile["profile"], "standard", "{profile}");
    assert!(profile["reasons"][0].as_str().unwrap().contains("at a local address: its size unknown"), "{profile}");
    drop(server);
    std::fs::write(dir.path().join("config.toml"), "[model_profiles.fake-model]\nprofile = \"small_local\"\n").unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Compatible);
    let profile = server.get("/api/agents/default/model/profile").await;
    assert_eq!(profile["profile"], "small_local", "{profile}");
    assert_eq!(profile["reasons"][1], "config.toml sets the profile to small_local", "{profile}");
    assert_eq!(profile["settings"]["temperature"], 0.0);
    let id = server.conversation().await;
    server.say(&id, "Save my favourite colour, green, in your state under the key colour.").await;
    let body = &fake.requests()[0].body;
    assert_eq!(body["temperature"], 0.0, "{body}");
    assert_eq!(body["tool_choice"], "required", "{body}");

    let hosted_fake = FakeProvider::start(vec![Turn::text("Hi.")]).await;
    let hosted_dir = tempfile::tempdir().unwrap();
    let hosted = Server::start(hosted_dir.path(), &hosted_fake, Wire::Openai);
    let profile = hosted.get("/api/agents/default/model/profile").await;
    assert_eq!(profile["profile"], "standard", "{profile}");
    assert!(profile["settings"]["temperature"].is_null(), "{profile}");
    let id = hosted.conversation().await;
    hosted.say(&id, "Save my favourite colour, green, in your state under the key colour.").await;
    assert!(hosted_fake.requests()[0].body.get("temperature").is_none_or(Value::is_null));
}

/// Issue 32: a message that names a day ("tomorrow", "next Monday") reaches the model headed by
/// when it was sent and the dates of the days it names, worked out by the host in the
/// `[sessions]` zone; a message that names none carries the time alone.
#[tokio::test]
async fn a_message_that_names_a_day_carries_its_date() {
    let fake = FakeProvider::start(vec![Turn::text("Noted."), Turn::text("Hi.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Openai);
    let id = server.conversation().await;
    server.say(&id, "Remind me tomorrow at 9 and next Monday at 8:30").await;
    server.say(&id, "hello").await;
    let last = fake.requests().last().unwrap().body.clone();
    let users: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .collect();
    let header = |text: &str| text.split(']').next().unwrap().to_owned();
    let days = header(&users[0]);
    assert!(days.contains("time zone UTC (UTC+00:00); tomorrow is "), "{days}");
    let monday = days.split("next Monday is Monday ").nth(1).expect("next Monday's date");
    assert!(monday.len() >= 10 && monday.as_bytes()[4] == b'-', "{days}");
    assert!(!header(&users[1]).contains(" is "), "{}", users[1]);
}
