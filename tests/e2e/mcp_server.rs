//! `/mcp`: the real `wright serve` as an MCP server, driven by the official Python SDK's
//! streamable-HTTP client (`mcp_client.py`, the `mcp` package from PyPI) in both of the ways
//! the SDK connects (the initialize handshake, and `server/discover` with the stateless
//! 2026-07-28 protocol): list the tools, call an agent-made tool, find the call in the
//! execution log, the policies, another agent at `/mcp/<agent>`, and no token → 401. (The
//! limits, the config checks and the status route are the server crate's own tests.)
//!
//! The Python interpreter with `mcp` installed is `$WRIGHT_TEST_MCP_PYTHON`, else
//! `target/mcp-test-venv/bin/python` (scripts/test.sh creates it). Without one the tests fail
//! and say how to make it: they never skip.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

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

/// The client, compiled into the test so it travels with this file.
const MCP_CLIENT: &str = include_str!("mcp_client.py");

/// Runs the SDK client against `url` and returns what it printed.
async fn mcp_client(mode: &str, url: &str, token: &str, calls: Value) -> Value {
    let output = tokio::process::Command::new(python())
        .args(["-c", MCP_CLIENT, mode, url, token, &calls.to_string()])
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
