//! wright-mcp against real MCP servers built with the official Python SDK (`server.py`, the
//! `mcp` package from PyPI), one over stdio and one over streamable HTTP: list, call, the
//! empty environment, a server that dies mid-call (reported, tools gone, back after the
//! backoff), a tool list that changes, a result too large, an error result, a timeout.
//!
//! The Python interpreter with `mcp` installed is `$WRIGHT_TEST_MCP_PYTHON`, else
//! `target/mcp-test-venv/bin/python` (scripts/test.sh creates it). Without one the tests fail
//! and say how to make it: they never skip.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wright_mcp::{Admission, AdmitFuture, HttpGate, McpClients, McpConfig, McpError, McpServerConfig, ServerState};

/// A gate for the tests, as strict as its table: a URL is admitted only if its exact text is
/// in the table, with the host and addresses given there. Records every URL it judged.
#[derive(Default)]
struct TableGate {
    admitted: BTreeMap<String, Admission>,
    judged: Mutex<Vec<String>>,
}

impl TableGate {
    fn admitting(url: &str, host: Option<&str>, address: IpAddr) -> Arc<TableGate> {
        let admission = Admission { host: host.map(str::to_owned), addresses: vec![address] };
        Arc::new(TableGate { admitted: BTreeMap::from([(url.to_owned(), admission)]), judged: Mutex::default() })
    }

    fn judged(&self) -> Vec<String> {
        self.judged.lock().unwrap().clone()
    }
}

impl HttpGate for TableGate {
    fn admit<'a>(&'a self, url: &'a str) -> AdmitFuture<'a> {
        self.judged.lock().unwrap().push(url.to_owned());
        let verdict = self.admitted.get(url).cloned().ok_or_else(|| format!("{url} is not in the test's table"));
        Box::pin(async move { verdict })
    }
}

/// For servers that are not HTTP: admits nothing.
fn no_http() -> Arc<TableGate> {
    Arc::new(TableGate::default())
}

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

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

fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/server.py").to_string_lossy().into_owned()
}

fn stdio_server(env: &[(&str, &str)]) -> McpServerConfig {
    McpServerConfig::Stdio {
        command: python(),
        args: vec![server_script(), "stdio".to_owned()],
        env: env.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect(),
        cwd: None,
    }
}

/// Config with fast retries, so the tests see a restart within a second.
fn config(servers: BTreeMap<String, McpServerConfig>) -> McpConfig {
    McpConfig {
        servers,
        retry_initial_ms: 200,
        retry_max_ms: 1_000,
        max_result_bytes: 64 * 1024,
        call_timeout_ms: 10_000,
        ..McpConfig::default()
    }
}

/// Waits (up to 30 s: Python starts slowly on a loaded machine) until `check` holds.
async fn until(clients: &McpClients, what: &str, check: impl Fn(&McpClients) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check(clients) {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {:?}", clients.status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn names(clients: &McpClients) -> Vec<String> {
    clients.tools().into_iter().map(|tool| tool.name).collect()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// A free port for the HTTP server (bound and released: the server binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The HTTP server as a child process, killed on drop.
struct HttpServer {
    _child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    fn start(port: u16) -> HttpServer {
        HttpServer::answering(port, &[])
    }

    /// A server that also answers requests for `hosts` (besides 127.0.0.1 and localhost).
    fn answering(port: u16, hosts: &[&str]) -> HttpServer {
        let child = tokio::process::Command::new(python())
            .args([server_script(), "http".to_owned(), port.to_string()])
            .args(hosts)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        HttpServer { _child: child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

#[tokio::test]
async fn stdio_server_lists_calls_and_starts_with_an_empty_environment() {
    let servers = BTreeMap::from([("py".to_owned(), stdio_server(&[("GREETING", "hello")]))]);
    let clients = McpClients::start(config(servers), no_http(), wright_core::Redactor::default()).unwrap();
    until(&clients, "the stdio server", |clients| !clients.tools().is_empty()).await;

    let tools = clients.tools();
    let listed: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    for expected in ["mcp__py__echo", "mcp__py__env", "mcp__py__big", "mcp__py__die", "mcp__py__grow"] {
        assert!(listed.contains(&expected), "{listed:?}");
    }
    let echo = clients.tool("mcp__py__echo").unwrap();
    assert_eq!(echo.tool, "echo");
    assert_eq!(echo.description, "Returns the text it was given.");
    assert!(echo.read_only, "the server marked it readOnlyHint");
    assert!(!clients.tool("mcp__py__env").unwrap().read_only, "not marked: counted as able to send out");
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string", "{}", echo.input_schema);
    assert_eq!(clients.status()[0].state, ServerState::Up { tools: tools.len() });

    let result = clients.call("mcp__py__echo", json!({"text": "über"})).await.unwrap();
    assert_eq!(text(&result), "über", "{result}");

    // Only what the config named (plus what Python itself sets, such as LC_CTYPE).
    let result = clients.call("mcp__py__env", json!({})).await.unwrap();
    let variables: Vec<&str> = text(&result).split(',').collect();
    assert!(variables.contains(&"GREETING"), "{variables:?}");
    for inherited in ["PATH", "HOME", "CARGO_MANIFEST_DIR", "CARGO"] {
        assert!(!variables.contains(&inherited), "{inherited} leaked into the server: {variables:?}");
    }

    let error = clients.call("mcp__py__fails", json!({})).await.unwrap_err();
    // The SDK reports a raised exception as an error result naming the tool (not the message).
    assert!(matches!(&error, McpError::ToolFailed { message, .. } if message.contains("fails")), "{error}");
    let error = clients.call("mcp__py__nope", json!({})).await.unwrap_err();
    assert!(matches!(error, McpError::UnknownTool { .. }), "{error}");
    let error = clients.call("mcp__other__echo", json!({})).await.unwrap_err();
    assert!(matches!(error, McpError::UnknownTool { .. }), "{error}");
}

#[tokio::test]
async fn a_result_too_large_is_refused_and_a_slow_call_times_out() {
    let servers = BTreeMap::from([("py".to_owned(), stdio_server(&[]))]);
    let clients = McpClients::start(
        McpConfig { call_timeout_ms: 2_000, ..config(servers) },
        no_http(),
        wright_core::Redactor::default(),
    )
    .unwrap();
    until(&clients, "the stdio server", |clients| !clients.tools().is_empty()).await;

    // The SDK sends a str result twice (a text block and structuredContent), so N bytes of
    // text are 2N of result.
    let result = clients.call("mcp__py__big", json!({"size": 30_000})).await.unwrap();
    assert_eq!(text(&result).len(), 30_000);
    let error = clients.call("mcp__py__big", json!({"size": 40_000})).await.unwrap_err();
    assert!(matches!(error, McpError::TooLarge { limit: 65_536, bytes, .. } if bytes > 80_000), "{error}");

    let error = clients.call("mcp__py__slow", json!({"seconds": 5})).await.unwrap_err();
    assert!(matches!(error, McpError::Timeout { .. }), "{error}");
    // The server is still there for the next call.
    let result = clients.call("mcp__py__echo", json!({"text": "still here"})).await.unwrap();
    assert_eq!(text(&result), "still here");
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_reported_its_tools_disappear_and_it_comes_back() {
    let servers = BTreeMap::from([("py".to_owned(), stdio_server(&[]))]);
    let clients = McpClients::start(config(servers), no_http(), wright_core::Redactor::default()).unwrap();
    until(&clients, "the stdio server", |clients| !clients.tools().is_empty()).await;
    let mut changes = clients.changes();
    changes.borrow_and_update();

    let error = clients.call("mcp__py__die", json!({})).await.unwrap_err();
    assert!(matches!(error, McpError::ServerDied { .. }), "{error}");
    // Down: reported with a reason, no tools offered, calls refused as unavailable.
    until(&clients, "the server marked down", |clients| {
        matches!(clients.status()[0].state, ServerState::Down { failures: 1, .. })
    })
    .await;
    assert!(changes.has_changed().unwrap());
    if clients.tools().is_empty() {
        let error = clients.call("mcp__py__echo", json!({"text": "x"})).await.unwrap_err();
        assert!(matches!(error, McpError::Unavailable { .. } | McpError::UnknownTool { .. }), "{error}");
    }
    // Restarted after the backoff, tools back.
    until(&clients, "the server back up", |clients| names(clients).contains(&"mcp__py__echo".to_owned())).await;
    let result = clients.call("mcp__py__echo", json!({"text": "again"})).await.unwrap();
    assert_eq!(text(&result), "again");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_retried_with_backoff() {
    let missing = McpServerConfig::Stdio {
        command: "/nonexistent/mcp-server".to_owned(),
        args: Vec::new(),
        env: BTreeMap::new(),
        cwd: None,
    };
    let clients = McpClients::start(
        config(BTreeMap::from([("gone".to_owned(), missing)])),
        no_http(),
        wright_core::Redactor::default(),
    )
    .unwrap();
    until(
        &clients,
        "two failures",
        |clients| matches!(clients.status()[0].state, ServerState::Down { failures, .. } if failures >= 2),
    )
    .await;
    let ServerState::Down { error, retry_in_ms, .. } = clients.status()[0].state.clone() else { unreachable!() };
    assert!(error.contains("could not start"), "{error}");
    assert!(retry_in_ms >= 400, "the wait doubles: {retry_in_ms}");
    assert!(clients.tools().is_empty());
}

#[tokio::test]
async fn tool_lists_refresh_on_list_changed_over_stdio() {
    let servers = BTreeMap::from([("py".to_owned(), stdio_server(&[]))]);
    let clients = McpClients::start(config(servers), no_http(), wright_core::Redactor::default()).unwrap();
    until(&clients, "the stdio server", |clients| !clients.tools().is_empty()).await;
    assert!(!names(&clients).contains(&"mcp__py__added_later".to_owned()));

    clients.call("mcp__py__grow", json!({})).await.unwrap();
    until(&clients, "the added tool", |clients| names(clients).contains(&"mcp__py__added_later".to_owned())).await;
    let result = clients.call("mcp__py__added_later", json!({})).await.unwrap();
    assert_eq!(text(&result), "I was added later");

    clients.call("mcp__py__shrink", json!({})).await.unwrap();
    until(&clients, "the removed tool", |clients| !names(clients).contains(&"mcp__py__added_later".to_owned())).await;
}

#[tokio::test]
async fn streamable_http_server_lists_calls_changes_and_dies() {
    let port = free_port();
    let server = HttpServer::start(port);
    let http = McpServerConfig::Http {
        url: server.url.clone(),
        headers: BTreeMap::from([("x-wright-test".to_owned(), "1".to_owned())]),
    };
    let gate = TableGate::admitting(&server.url, None, LOOPBACK);
    let clients = McpClients::start(
        config(BTreeMap::from([("web".to_owned(), http)])),
        gate.clone(),
        wright_core::Redactor::default(),
    )
    .unwrap();
    until(&clients, "the HTTP server", |clients| !clients.tools().is_empty()).await;
    assert_eq!(clients.status()[0].transport, "http");
    // Judged before each connection attempt (the first ones may have found no server yet),
    // not per request.
    let judged = gate.judged().len();

    let result = clients.call("mcp__web__echo", json!({"text": "over http"})).await.unwrap();
    assert_eq!(text(&result), "over http");
    assert_eq!(gate.judged().len(), judged);
    assert!(gate.judged().iter().all(|url| *url == server.url));
    let error = clients.call("mcp__web__big", json!({"size": 100_000})).await.unwrap_err();
    assert!(matches!(error, McpError::TooLarge { .. }), "{error}");

    clients.call("mcp__web__grow", json!({})).await.unwrap();
    until(&clients, "the added tool", |clients| names(clients).contains(&"mcp__web__added_later".to_owned())).await;

    let error = clients.call("mcp__web__die", json!({})).await.unwrap_err();
    assert!(matches!(error, McpError::ServerDied { .. } | McpError::Protocol { .. }), "{error}");
    until(&clients, "the server marked down", |clients| {
        matches!(clients.status()[0].state, ServerState::Down { .. }) && clients.tools().is_empty()
    })
    .await;
    drop(server);

    // A new server on the same port: the supervisor reconnects.
    let _server = HttpServer::start(port);
    until(&clients, "the server back up", |clients| names(clients).contains(&"mcp__web__echo".to_owned())).await;
    let result = clients.call("mcp__web__echo", json!({"text": "back"})).await.unwrap();
    assert_eq!(text(&result), "back");
    assert!(gate.judged().len() > judged, "a new connection is judged again: {:?}", gate.judged());
}

#[tokio::test]
async fn an_http_server_the_gate_refuses_is_never_reached_and_reported_with_the_gates_reason() {
    let port = free_port();
    let _server = HttpServer::start(port);
    let http = McpServerConfig::Http { url: format!("http://127.0.0.1:{port}/mcp"), headers: BTreeMap::new() };
    let clients = McpClients::start(
        config(BTreeMap::from([("web".to_owned(), http)])),
        no_http(),
        wright_core::Redactor::default(),
    )
    .unwrap();
    until(&clients, "the refusal", |clients| matches!(clients.status()[0].state, ServerState::Down { .. })).await;
    let ServerState::Down { error, .. } = clients.status()[0].state.clone() else { unreachable!() };
    assert!(error.contains("is not in the test's table"), "{error}");
    assert!(clients.tools().is_empty());
}

#[tokio::test]
async fn a_named_http_server_is_reached_only_at_the_addresses_the_gate_admitted() {
    let port = free_port();
    let _server = HttpServer::answering(port, &["mcp-server.wright-test"]);
    // No DNS server knows this name: the connection can only work through the admission.
    let url = format!("http://mcp-server.wright-test:{port}/mcp");
    let http = McpServerConfig::Http { url: url.clone(), headers: BTreeMap::new() };
    let gate = TableGate::admitting(&url, Some("mcp-server.wright-test"), LOOPBACK);
    let clients =
        McpClients::start(config(BTreeMap::from([("named".to_owned(), http)])), gate, wright_core::Redactor::default())
            .unwrap();
    until(&clients, "the named server", |clients| !clients.tools().is_empty()).await;
    let result = clients.call("mcp__named__echo", json!({"text": "pinned"})).await.unwrap();
    assert_eq!(text(&result), "pinned");

    // The same server, admitted under another name than the URL's: the URL's host (which the
    // system would resolve) resolves to nothing, so the server is not reached.
    let url = format!("http://localhost:{port}/mcp");
    let http = McpServerConfig::Http { url: url.clone(), headers: BTreeMap::new() };
    let gate = TableGate::admitting(&url, Some("elsewhere.wright-test"), LOOPBACK);
    let clients =
        McpClients::start(config(BTreeMap::from([("other".to_owned(), http)])), gate, wright_core::Redactor::default())
            .unwrap();
    // (rmcp's error says only "error sending request"; that the server answering at
    // localhost is never reached is what shows the system's resolution was not asked.)
    until(
        &clients,
        "two failed connections",
        |clients| matches!(clients.status()[0].state, ServerState::Down { failures, .. } if failures >= 2),
    )
    .await;
    assert!(clients.tools().is_empty());
}

#[test]
fn config_is_strict_and_names_are_checked() {
    let parsed: McpConfig = toml_like(
        r#"{"servers": {"files": {"transport": "stdio", "command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
            "remote": {"transport": "http", "url": "https://mcp.example/mcp", "headers": {"authorization": "Bearer t"}}}}"#,
    );
    assert_eq!(parsed.servers.len(), 2);
    parsed.check().unwrap();
    assert!(!format!("{parsed:?}").contains("Bearer t"), "header values are not logged");
    assert!(
        serde_json::from_str::<McpConfig>(r#"{"servers": {"a": {"transport": "stdio", "command": "x", "bogus": 1}}}"#)
            .is_err()
    );
    for bad in ["a__b", "_a", "a b", ""] {
        let config =
            McpConfig { servers: BTreeMap::from([(bad.to_owned(), stdio_server_named("x"))]), ..McpConfig::default() };
        assert!(matches!(config.check(), Err(McpError::Config { .. })), "{bad:?}");
    }
    assert_eq!(wright_mcp::qualified_name("fs", "read_file").as_deref(), Some("mcp__fs__read_file"));
    assert_eq!(wright_mcp::qualified_name("fs", "read.file"), None);
    assert_eq!(wright_mcp::qualified_name("fs", &"x".repeat(60)), None);
    assert_eq!(wright_mcp::server_of("mcp__fs__read_file"), Some("fs"));
    assert_eq!(wright_mcp::server_of("fetch_url"), None);
    let delays: Vec<u128> = (1..=5)
        .map(|failures| McpConfig { retry_max_ms: 5_000, ..McpConfig::default() }.retry_delay(failures).as_millis())
        .collect();
    assert_eq!(delays, [1_000, 2_000, 4_000, 5_000, 5_000]);
}

fn stdio_server_named(command: &str) -> McpServerConfig {
    McpServerConfig::Stdio { command: command.to_owned(), args: Vec::new(), env: BTreeMap::new(), cwd: None }
}

/// The config as the server's TOML would give it (same serde model; JSON is what's at hand).
fn toml_like(text: &str) -> McpConfig {
    serde_json::from_str(text).unwrap()
}

/// Issue 33 item 7: a server that quotes a configured secret back — in a result or in an
/// error — hands Wright the text with the secret redacted.
#[tokio::test]
async fn a_secret_a_server_quotes_back_is_redacted() {
    const SECRET: &str = "sk-proj-QUOTED-BACK-5678";
    let servers = BTreeMap::from([("py".to_owned(), stdio_server(&[]))]);
    let redactor = wright_core::Redactor::new([SECRET]);
    let clients = McpClients::start(config(servers), no_http(), redactor).unwrap();
    until(&clients, "the stdio server", |clients| !clients.tools().is_empty()).await;
    let result = clients.call("mcp__py__echo", json!({"text": format!("the key is {SECRET}")})).await.unwrap();
    assert_eq!(text(&result), "the key is [redacted]", "{result}");
    assert!(!result.to_string().contains(SECRET), "{result}");
}
