//! `/mcp`: the real `wright serve` as an MCP server, driven by the official Python SDK's
//! streamable-HTTP client (`mcp_client.py`, the `mcp` package from PyPI) in both of the ways
//! the SDK connects (the initialize handshake, and `server/discover` with the stateless
//! 2026-07-28 protocol): list the tools, call an agent-made tool, find the call in the
//! execution log, the policies, another agent at `/mcp/<agent>`, and no token → 401. The
//! limits and the config checks are tested on the router in process.
//!
//! The Python interpreter with `mcp` installed is `$WRIGHT_TEST_MCP_PYTHON`, else
//! `target/mcp-test-venv/bin/python` (scripts/test.sh creates it). Without one the tests fail
//! and say how to make it: they never skip.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::binary::{Server, client};

const TOKEN: &str = "mcp-test-token";

fn python() -> String {
    if let Ok(python) = std::env::var("WRIGHT_TEST_MCP_PYTHON") {
        return python;
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-test-venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with the `mcp` package: run scripts/test.sh, or `python3 -m venv target/mcp-test-venv && \
         target/mcp-test-venv/bin/pip install mcp==2.3.0`, or set WRIGHT_TEST_MCP_PYTHON"
    );
    venv.to_string_lossy().into_owned()
}

/// Runs the SDK client against `url` and returns what it printed.
async fn mcp_client(mode: &str, url: &str, token: &str, calls: Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py");
    let output = tokio::process::Command::new(python())
        .arg(script)
        .args([mode, url, token, &calls.to_string()])
        .output()
        .await
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "the MCP client printed no JSON\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

struct Api {
    http: reqwest::Client,
    address: String,
}

impl Api {
    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let response = self
            .http
            .request(method, format!("{}{path}", self.address))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let value: Value = response.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {value}");
        value
    }

    async fn create_tool(&self, agent: &str, name: &str, code: &str) {
        let schema = json!({"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]});
        let create =
            json!({"name": name, "description": format!("{name} someone."), "parameter_schema": schema, "code": code});
        self.send(reqwest::Method::POST, &format!("/api/agents/{agent}/tools/create_tool/invoke"), create).await;
    }

    async fn executions(&self, tool: &str) -> Vec<Value> {
        let response = self
            .http
            .get(format!("{}/api/agents/default/executions?tool={tool}", self.address))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        response.json::<Vec<Value>>().await.unwrap()
    }
}

/// The names of the tools listed, sorted.
fn names(outcome: &Value) -> Vec<&str> {
    let tools = outcome["tools"].as_array().unwrap_or_else(|| panic!("no tools: {outcome}"));
    let mut names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names
}

fn write_config(data_dir: &Path, text: &str) {
    std::fs::create_dir_all(data_dir).unwrap();
    std::fs::write(data_dir.join("config.toml"), text).unwrap();
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_the_agents_tools_and_each_call_is_in_the_execution_log() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "[mcp_server]\nbuiltins = [\"get_state\"]\n");
    let server = Server::start(dir.path(), Some(TOKEN));
    let api = Api { http: client(), address: server.address.clone() };
    api.create_tool("default", "greet", "return 'hello ' + args.who;").await;
    api.create_tool("default", "careful", "return 'ran';").await;
    api.create_tool("default", "forbidden", "return 'ran';").await;
    api.create_tool("default", "switched_off", "return 'ran';").await;
    let put = reqwest::Method::PUT;
    api.send(put.clone(), "/api/agents/default/tools/careful/policy", json!({"policy": "ask"})).await;
    api.send(put.clone(), "/api/agents/default/tools/forbidden/policy", json!({"policy": "deny"})).await;
    api.send(put, "/api/agents/default/agent-tools/switched_off/enabled", json!({"enabled": false})).await;
    api.send(reqwest::Method::POST, "/api/agents", json!({"id": "second"})).await;
    api.create_tool("second", "wave", "return 'bye ' + args.who;").await;

    let url = format!("{}/mcp", server.address);
    let mut protocols: Vec<Value> = Vec::new();
    for mode in ["legacy", "auto"] {
        let calls = json!([
            ["greet", {"who": mode}],
            ["greet", {}],
            ["careful", {"who": "x"}],
            ["forbidden", {"who": "x"}],
        ]);
        let outcome = mcp_client(mode, &url, TOKEN, calls).await;
        assert_eq!(outcome["server"], "wright", "{outcome}");
        protocols.push(outcome["protocol"].clone());
        // The agent's enabled tools and the one built-in the operator picked; not the disabled
        // tool, not the denied one, not the other built-ins.
        assert_eq!(names(&outcome), ["careful", "get_state", "greet"], "{mode}: {outcome}");
        let greet = outcome["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == "greet").unwrap();
        assert_eq!(greet["inputSchema"]["required"], json!(["who"]));
        assert_eq!(greet["description"], "greet someone.");
        let results = &outcome["results"];
        assert_eq!(results[0]["isError"], false, "{outcome}");
        assert_eq!(results[0]["content"][0]["text"], format!("hello {mode}"));
        // Arguments are validated by the registry against the tool's schema.
        assert_eq!(results[1]["isError"], true);
        assert_eq!(results[1]["structuredContent"]["category"], "invalid_arguments", "{outcome}");
        // `ask` cannot be answered over MCP: refused, and the message says what to change.
        assert_eq!(results[2]["isError"], true);
        let careful = results[2]["structuredContent"]["error"].as_str().unwrap();
        assert!(careful.contains("approval") && careful.contains("set its policy"), "{careful}");
        assert_eq!(results[3]["isError"], true);
        assert!(results[3]["structuredContent"]["error"].as_str().unwrap().contains("deny"), "{outcome}");
    }
    // The handshake era and the stateless protocol, both served.
    assert_eq!(protocols, [json!("2025-11-25"), json!("2026-07-28")]);

    let greets = api.executions("greet").await;
    let ran: Vec<&Value> = greets.iter().filter(|execution| execution["success"] == true).collect();
    assert_eq!(ran.len(), 2, "{greets:?}");
    for execution in &ran {
        assert_eq!((&execution["caller"], &execution["tool_kind"]), (&json!("mcp"), &json!("agent")));
        assert_eq!(execution["decided_by"], "policy");
        assert_eq!(execution["tool_version"], 1);
    }
    assert!(
        ran.iter()
            .any(|execution| execution["args"] == json!({"who": "legacy"}) && execution["result"] == "hello legacy")
    );
    let invalid = greets.iter().filter(|execution| execution["error_category"] == "invalid_arguments").count();
    assert_eq!(invalid, 2, "{greets:?}");
    for refused in ["careful", "forbidden"] {
        let executions = api.executions(refused).await;
        assert_eq!(executions.len(), 2, "{executions:?}");
        assert!(executions.iter().all(|execution| execution["error_category"] == "denied"
            && execution["caller"] == "mcp"
            && execution["decided_by"] == "policy"));
    }

    // Another agent is another URL.
    let second =
        mcp_client("legacy", &format!("{}/mcp/second", server.address), TOKEN, json!([["wave", {"who": "ann"}]])).await;
    assert_eq!(names(&second), ["get_state", "wave"], "{second}");
    assert_eq!(second["results"][0]["content"][0]["text"], "bye ann");
    // A tool of another agent, or one not offered, is not callable here.
    let elsewhere = mcp_client("legacy", &url, TOKEN, json!([["wave", {"who": "ann"}]])).await;
    assert!(elsewhere["error"].as_str().unwrap_or_default().contains("no tool named `wave`"), "{elsewhere}");
}

#[tokio::test]
async fn without_the_token_an_mcp_client_gets_401_and_an_unknown_agent_404() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), Some(TOKEN));
    let url = format!("{}/mcp", server.address);
    for mode in ["legacy", "auto"] {
        for token in ["", "wrong-token"] {
            let outcome = mcp_client(mode, &url, token, json!([])).await;
            assert!(outcome["error"].is_string(), "{outcome}");
            assert!(outcome.get("tools").is_none(), "{outcome}");
            let statuses = outcome["statuses"].as_array().unwrap();
            assert!(!statuses.is_empty() && statuses.iter().all(|status| status == 401), "{mode} {token:?}: {outcome}");
        }
    }
    let outcome = mcp_client("legacy", &format!("{url}/nobody"), TOKEN, json!([])).await;
    assert_eq!(outcome["statuses"], json!([404]), "{outcome}");
}

/// The router in process, for the limits and the config.
async fn state_with(config: &str) -> (tempfile::TempDir, anyhow::Result<wright_server::AppState>) {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), config);
    let state = match wright_server::Config::load(dir.path()) {
        Ok(config) => {
            wright_server::AppState::open(
                config,
                wright_server::token::Auth::new(TOKEN.into()),
                wright_server::models::Models::none(),
            )
            .await
        }
        Err(error) => Err(error),
    };
    (dir, state)
}

fn initialize(padding: usize) -> Request<Body> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1", "padding": "x".repeat(padding)}},
    });
    Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn an_mcp_request_over_max_request_bytes_is_refused_with_413() {
    let (_dir, state) = state_with("[mcp_server]\nmax_request_bytes = 2000\n").await;
    let app = wright_server::api::app(state.unwrap());
    let small = app.clone().oneshot(initialize(100)).await.unwrap();
    let status = small.status();
    let body = axum::body::to_bytes(small.into_body(), 1 << 20).await.unwrap();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let large = app.oneshot(initialize(3000)).await.unwrap();
    assert_eq!(large.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn mcp_can_be_switched_off_and_only_builtins_that_run_unattended_can_be_offered() {
    let (_dir, state) = state_with("[mcp_server]\nenabled = false\n").await;
    let response = wright_server::api::app(state.unwrap()).oneshot(initialize(0)).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    for (builtins, expected) in
        [("ask_user", "waits for the person"), ("get_stat", "not a built-in tool (closest: get_state")]
    {
        let (_dir, state) = state_with(&format!("[mcp_server]\nbuiltins = [\"{builtins}\"]\n")).await;
        let error = format!("{:#}", state.err().unwrap());
        assert!(error.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn the_admin_api_reports_each_mcp_server_up_with_its_tools_or_down_with_why_and_when_it_is_tried_again() {
    let server_script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wright-mcp/tests/it/server.py");
    let config = format!(
        r#"
[mcp]
retry_initial_ms = 60000

[mcp.servers.python]
transport = "stdio"
command = {python:?}
args = [{script:?}, "stdio"]

[mcp.servers.missing]
transport = "stdio"
command = "/nonexistent/mcp-server"

[mcp.servers.private]
transport = "http"
url = "http://10.1.2.3:9/mcp"
"#,
        python = python(),
        script = server_script.to_string_lossy(),
    );
    let (_dir, state) = state_with(&config).await;
    let app = wright_server::api::app(state.unwrap());
    let request = || {
        Request::get("/api/mcp/servers").header("authorization", format!("Bearer {TOKEN}")).body(Body::empty()).unwrap()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let servers = loop {
        let response = app.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let servers: Value =
            serde_json::from_slice(&axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap()).unwrap();
        if servers.as_array().unwrap().iter().all(|server| server["state"] != "starting") {
            break servers;
        }
        assert!(tokio::time::Instant::now() < deadline, "still starting: {servers}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let [missing, private, python] = [&servers[0], &servers[1], &servers[2]];
    // An HTTP server the operator did not allow in [egress] is not reached.
    assert_eq!((&private["state"], &private["transport"]), (&json!("down"), &json!("http")));
    let refused = private["last_error"].as_str().unwrap();
    assert!(
        refused.contains("request denied by egress policy") && refused.contains("10.1.2.3 is private"),
        "{refused}"
    );
    assert_eq!(
        (&missing["name"], &missing["state"], &missing["transport"]),
        (&json!("missing"), &json!("down"), &json!("stdio"))
    );
    assert!(missing["last_error"].as_str().unwrap().contains("could not start `/nonexistent/mcp-server`"), "{missing}");
    assert_eq!((&missing["failures"], &missing["tools"]), (&json!(1), &json!(0)));
    // Tried again in a minute (retry_initial_ms), said as a time.
    let retry_at = missing["retry_at"].as_str().unwrap();
    assert!(retry_at.ends_with('Z') && retry_at.len() == 24, "{retry_at}");
    assert_eq!(
        (&python["name"], &python["state"], &python["last_error"]),
        (&json!("python"), &json!("up"), &Value::Null)
    );
    assert!(python["tools"].as_u64().unwrap() >= 5, "{python}");
    assert_eq!(python["retry_at"], Value::Null);
    // Without the token: 401, like every admin route.
    let unauthenticated = app.oneshot(Request::get("/api/mcp/servers").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);
}
