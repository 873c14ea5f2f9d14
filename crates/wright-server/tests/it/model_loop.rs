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

const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");
const TOKEN: &str = "loop-token";

#[derive(Clone, Copy, Debug)]
enum Wire {
    Openai,
    Responses,
    Compatible,
    Anthropic,
    Gemini,
    Text,
}

const WIRES: [Wire; 6] = [Wire::Openai, Wire::Responses, Wire::Compatible, Wire::Anthropic, Wire::Gemini, Wire::Text];

struct Server {
    child: Child,
    url: String,
    client: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Server {
    fn start(data_dir: &Path, fake: &FakeProvider, wire: Wire) -> Self {
        let mut command = Command::new(WRIGHT);
        command
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
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
            Wire::Compatible => {
                ("OPENAI_API_KEY", "OPENAI_BASE_URL", ProviderKind::OpenaiCompatible, "openai/fake-model")
            }
            Wire::Anthropic => {
                ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ProviderKind::Anthropic, "anthropic/fake-model")
            }
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
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next();
        let listening = lines.next().unwrap().unwrap();
        let url = listening.rsplit(' ').next().unwrap().to_owned();
        rustls::crypto::ring::default_provider().install_default().ok();
        Self { child, url, client: reqwest::Client::new() }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response =
            self.client.post(format!("{}{path}", self.url)).bearer_auth(TOKEN).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        self.client.get(format!("{}{path}", self.url)).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap()
    }

    async fn conversation(&self) -> String {
        let (status, created) = self.post("/api/agents/default/conversations", json!({"title": "loop"})).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    /// Sends a message and waits until the run stops; returns the conversation detail.
    async fn say(&self, id: &str, text: &str) -> Value {
        let (status, body) = self.post(&format!("/api/conversations/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 202, "{body}");
        self.settle(id).await
    }

    async fn settle(&self, id: &str) -> Value {
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

fn results(detail: &Value) -> Vec<Value> {
    detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["kind"] == "tool_result")
        .map(|event| event["data_json"].clone())
        .collect()
}

/// A script turn calling tools, in the wire's own way: native calls, or the text protocol's
/// delimited blocks (one per turn).
fn calls(wire: Wire, calls: Vec<(&str, Value)>) -> Vec<Turn> {
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
        assert_eq!(notice["data_json"]["type"], "turn_limit", "{wire:?}: {detail}");
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
        assert_eq!(last["data_json"]["type"], "cancelled", "{wire:?}: {detail}");
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
        assert_eq!(after["events"][4]["data_json"]["type"], "interrupted", "{wire:?}: {after}");
        assert_eq!(after["conversation"]["status"], "idle", "{wire:?}");
        let state = server.get("/api/agents/default/state/k").await;
        assert_eq!(state["value"], 1, "{wire:?}: the tool's effect survived the kill");
    }
}

#[tokio::test]
async fn a_long_conversation_is_compacted_without_losing_events_on_every_wire() {
    for wire in WIRES {
        let fake = FakeProvider::start(vec![
            Turn::text("a long answer ".repeat(40)),
            Turn::text("another long answer ".repeat(40)),
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
            events.iter().any(|event| event["data_json"]["summary"] == "SUMMARY: two long answers were given."),
            "{wire:?}: {detail}"
        );
        assert_eq!(events.iter().filter(|event| event["kind"] == "user").count(), 3, "{wire:?}: no event was lost");
        assert_eq!(events.last().unwrap()["content"], "Short reply.", "{wire:?}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 4, "{wire:?}: two answers, the summary, the reply");
        let summary_request = requests[2].body.to_string();
        assert!(
            summary_request.contains("a long answer a long answer"),
            "{wire:?}: the summary request holds the old turn"
        );
        let last_request = requests[3].body.to_string();
        assert!(last_request.contains("SUMMARY: two long answers"), "{wire:?}: the summary reached the model");
        assert!(!last_request.contains("a long answer a long answer"), "{wire:?}: compacted turns were not sent again");
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
