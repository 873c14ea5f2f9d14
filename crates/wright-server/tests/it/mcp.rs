//! The router's side of MCP in process: the `/mcp` request cap, `[mcp_server]` switched off and
//! its checks at load, and `GET /api/mcp/servers` with real MCP servers behind it (the Python
//! SDK server of wright-mcp's tests; `$WRIGHT_TEST_MCP_PYTHON`, made by scripts/test.sh, else
//! `target/mcp-test-venv`). An MCP client against the real binary is in `tests/e2e/mcp_server.rs`.

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

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

/// The router in process, for the limits and the config.
async fn state_with(config: &str) -> (tempfile::TempDir, anyhow::Result<wright_server::AppState>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let state = match wright_server::Config::load(dir.path()) {
        Ok(config) => {
            wright_server::AppState::open(
                config,
                wright_server::token::Auth::new(TOKEN.into()),
                wright_server::domain::models::Models::none(),
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
