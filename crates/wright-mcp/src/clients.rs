//! `McpClients`: one supervisor task per configured server, keeping it connected and its tool
//! list current, and the calls into it.
//!
//! Each server's supervisor owns its connection: it connects (spawning the child or opening
//! the HTTP session), lists the tools, then waits for one of three things — Wright shutting
//! down, the server saying its tools changed (`notifications/tools/list_changed`, listed
//! again), or the connection ending. A server that fails to start or dies is marked down (its
//! tools disappear from [`McpClients::tools`] at once) and tried again after
//! `retry_initial_ms · 2^(failures-1)`, capped at `retry_max_ms`; a connection that lists its
//! tools resets the count.
//!
//! The shared table (`Shared::servers`) is written by the supervisors and read by callers; a
//! std `Mutex`, held only to copy a slot in or out, never across an await. A call clones the
//! server's `Peer` out of the table and talks to it without the lock. Every supervisor stops
//! when `McpClients` (all clones) is dropped: their token is cancelled by a drop guard, which
//! also ends the child processes (rmcp kills a child when its transport is dropped).

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, ServiceError, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::McpError;
use crate::config::{McpConfig, McpServerConfig, qualified_name, server_of};
use crate::gate::{HttpGate, PinnedResolver};

/// One tool of a connected server, as the registry lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpTool {
    /// `mcp__<server>__<tool>`: the name the model calls.
    pub name: String,
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    pub description: String,
    /// The server's `inputSchema`, as given.
    pub input_schema: Value,
    /// The server marked it read-only (`annotations.readOnlyHint`): its calls change nothing
    /// and send nothing anywhere, as far as the server says.
    pub read_only: bool,
}

/// How a server is doing, for the admin page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// The first connection attempt has not finished.
    Starting,
    /// Connected; `tools` of its tools are offered.
    Up { tools: usize },
    /// Not connected: why, how many failures in a row, how long the wait before the next
    /// attempt is, and when that attempt starts (milliseconds since the Unix epoch).
    Down { error: String, failures: u32, retry_in_ms: u64, retry_at_ms: u64 },
}

/// One configured server and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    #[serde(flatten)]
    pub state: ServerState,
    /// Tools the server offers whose names cannot be model tool names (not offered).
    pub skipped_tools: Vec<String>,
    /// Why the server last went down, kept after it comes back (none if it never did).
    pub last_error: Option<String>,
}

struct Slot {
    state: ServerState,
    last_error: Option<String>,
    peer: Option<Peer<RoleClient>>,
    /// Wakes the supervisor when a call finds the connection broken. An HTTP session has no
    /// process whose exit ends it, so a failed call is how a dead server is noticed.
    broken: Arc<Notify>,
    tools: Vec<McpTool>,
    skipped_tools: Vec<String>,
}

struct Shared {
    config: McpConfig,
    /// Judges every HTTP server's URL before each connection (the egress policy).
    gate: Arc<dyn HttpGate>,
    servers: Mutex<BTreeMap<String, Slot>>,
    /// Bumped whenever any server's tool list changes (up, down, list_changed), so a
    /// registry can rebuild the specs it caches.
    generation: watch::Sender<u64>,
    /// Every configured secret: removed from whatever a server says (its errors, its results,
    /// why it went down) before that text is logged, stored or shown.
    redactor: wright_core::Redactor,
}

impl Shared {
    fn update(&self, server: &str, change: impl FnOnce(&mut Slot)) {
        let mut servers = self.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(slot) = servers.get_mut(server) {
            change(slot);
        }
        drop(servers);
        self.generation.send_modify(|generation| *generation += 1);
    }
}

/// The connections to every configured MCP server. Cheap to clone; the supervisors stop when
/// the last clone is dropped.
#[derive(Clone)]
pub struct McpClients {
    shared: Arc<Shared>,
    _stop: Arc<DropGuard>,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients").field("config", &self.shared.config).finish_non_exhaustive()
    }
}

/// Tells the supervisor that the server's tool list changed.
struct Handler {
    tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

impl McpClients {
    /// Checks the configuration and starts one supervisor per server (on the current tokio
    /// runtime). Returns at once: servers connect in the background. Every connection to an
    /// HTTP server is first admitted by `gate`, and goes only to the addresses it admitted.
    /// Every secret `redactor` holds is removed from what the servers say.
    pub fn start(
        config: McpConfig,
        gate: Arc<dyn HttpGate>,
        redactor: wright_core::Redactor,
    ) -> Result<McpClients, McpError> {
        config.check()?;
        install_crypto_provider();
        let servers = config
            .servers
            .keys()
            .map(|name| {
                let slot = Slot {
                    state: ServerState::Starting,
                    last_error: None,
                    peer: None,
                    broken: Arc::new(Notify::new()),
                    tools: Vec::new(),
                    skipped_tools: Vec::new(),
                };
                (name.clone(), slot)
            })
            .collect();
        let (generation, _) = watch::channel(0);
        let shared = Arc::new(Shared { config, gate, servers: Mutex::new(servers), generation, redactor });
        let stop = CancellationToken::new();
        for (name, server) in &shared.config.servers {
            tokio::spawn(supervise(Arc::clone(&shared), name.clone(), server.clone(), stop.clone()));
        }
        Ok(McpClients { shared, _stop: Arc::new(stop.drop_guard()) })
    }

    /// The tools of every connected server, by server then tool name.
    pub fn tools(&self) -> Vec<McpTool> {
        let servers = self.shared.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        servers.values().flat_map(|slot| slot.tools.iter().cloned()).collect()
    }

    /// The tool named `name` (`mcp__<server>__<tool>`) if its server is connected and offers it.
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        let server = server_of(name)?;
        let servers = self.shared.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        servers.get(server)?.tools.iter().find(|tool| tool.name == name).cloned()
    }

    /// Every configured server and how it is doing.
    pub fn status(&self) -> Vec<ServerStatus> {
        let servers = self.shared.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        servers
            .iter()
            .map(|(name, slot)| ServerStatus {
                name: name.clone(),
                transport: self.shared.config.servers.get(name).map_or("unknown", McpServerConfig::transport),
                state: slot.state.clone(),
                skipped_tools: slot.skipped_tools.clone(),
                last_error: slot.last_error.clone(),
            })
            .collect()
    }

    /// A number that changes whenever some server's tool list does (for caches of specs).
    pub fn generation(&self) -> u64 {
        *self.shared.generation.borrow()
    }

    /// A receiver whose value changes whenever some server's tool list does.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }

    /// Calls `name` (`mcp__<server>__<tool>`) with `arguments` (a JSON object). The result is
    /// the server's `CallToolResult` as JSON (`content`, and `structuredContent` when given).
    /// Dropping the future abandons the call.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, McpError> {
        let redactor = &self.shared.redactor;
        match self.call_as_answered(name, arguments).await {
            Ok(mut value) => {
                redact_strings(&mut value, redactor);
                Ok(value)
            }
            Err(error) => Err(error.redacted(redactor)),
        }
    }

    async fn call_as_answered(&self, name: &str, arguments: Value) -> Result<Value, McpError> {
        let unknown = || McpError::UnknownTool { name: name.to_owned() };
        let server = server_of(name).ok_or_else(unknown)?.to_owned();
        let (peer, tool, broken) = {
            let servers = self.shared.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let slot = servers.get(&server).ok_or_else(unknown)?;
            let Some(peer) = slot.peer.clone() else {
                let reason = match &slot.state {
                    ServerState::Down { error, .. } => error.clone(),
                    _ => "it is still starting".to_owned(),
                };
                return Err(McpError::Unavailable { server, reason });
            };
            let tool = slot.tools.iter().find(|tool| tool.name == name).ok_or_else(unknown)?.tool.clone();
            (peer, tool, Arc::clone(&slot.broken))
        };
        let Value::Object(arguments) = arguments else {
            return Err(McpError::Protocol { server, reason: "tool arguments must be a JSON object".to_owned() });
        };
        let params = CallToolRequestParams::new(tool).with_arguments(arguments);
        let timeout = self.shared.config.call_timeout();
        let result = match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Err(_elapsed) => return Err(McpError::Timeout { tool: name.to_owned(), after: timeout }),
            Ok(Err(error)) => {
                let error = service_error(&server, error);
                if matches!(error, McpError::ServerDied { .. }) {
                    broken.notify_one();
                }
                return Err(error);
            }
            Ok(Ok(result)) => result,
        };
        let limit = self.shared.config.max_result_bytes;
        let mut value = serde_json::to_value(&result)
            .map_err(|error| McpError::Protocol { server: server.clone(), reason: error.to_string() })?;
        let bytes = value.to_string().len();
        if bytes > limit {
            return Err(McpError::TooLarge { tool: name.to_owned(), bytes, limit });
        }
        if result.is_error == Some(true) {
            let message = text_of(&value);
            return Err(McpError::ToolFailed { tool: name.to_owned(), message });
        }
        if let Value::Object(object) = &mut value {
            // Protocol bookkeeping, not the tool's answer.
            object.remove("_meta");
            object.remove("isError");
            object.remove("resultType");
        }
        Ok(value)
    }
}

/// The text blocks of a result, joined (an error result's message).
fn text_of(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() { "the tool reported an error without a message".to_owned() } else { texts.join("\n") }
}

fn service_error(server: &str, error: ServiceError) -> McpError {
    let server = server.to_owned();
    match error {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) | ServiceError::Cancelled { .. } => {
            McpError::ServerDied { server, reason: error.to_string() }
        }
        ServiceError::McpError(data) => McpError::Protocol { server, reason: data.message.to_string() },
        other => McpError::Protocol { server, reason: other.to_string() },
    }
}

/// Keeps one server connected until `stop` fires.
async fn supervise(shared: Arc<Shared>, name: String, server: McpServerConfig, stop: CancellationToken) {
    let mut failures: u32 = 0;
    loop {
        let error = tokio::select! {
            () = stop.cancelled() => return,
            error = run_connection(&shared, &name, &server, &mut failures, &stop) => error,
        };
        if stop.is_cancelled() {
            return;
        }
        let error = shared.redactor.redact(&error);
        failures = failures.saturating_add(1);
        let delay = shared.config.retry_delay(failures);
        tracing::warn!(server = %name, %error, failures, retry_in = ?delay, "MCP server is down");
        let retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        // Shown to the person ("next attempt at …"); the wait itself is the sleep below.
        let retry_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
            .saturating_add(retry_in_ms);
        shared.update(&name, |slot| {
            slot.last_error = Some(error.clone());
            slot.state = ServerState::Down { error, failures, retry_in_ms, retry_at_ms };
            slot.peer = None;
            slot.tools.clear();
        });
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// One connection's life: connect, list, follow list changes; returns why it ended.
async fn run_connection(
    shared: &Shared,
    name: &str,
    server: &McpServerConfig,
    failures: &mut u32,
    stop: &CancellationToken,
) -> String {
    let tools_changed = Arc::new(Notify::new());
    let handler = Handler { tools_changed: Arc::clone(&tools_changed) };
    let connect_timeout = shared.config.connect_timeout();
    let running = match tokio::time::timeout(connect_timeout, connect(shared, server, handler)).await {
        Err(_elapsed) => return format!("did not finish starting within {connect_timeout:?}"),
        Ok(Err(error)) => return error,
        Ok(Ok(running)) => running,
    };
    let peer = running.peer().clone();
    // `waiting` owns the service; dropping it (when this function returns) cancels the
    // connection's task through rmcp's own drop guard, which ends the child process.
    let closed = running.waiting();
    tokio::pin!(closed);
    // A fresh one per connection: a permit left by a call that failed on the previous
    // connection must not end this one.
    let broken = Arc::new(Notify::new());
    if let Some(slot) = shared.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_mut(name) {
        slot.broken = Arc::clone(&broken);
    }
    if let Err(error) = list_into(shared, name, &peer).await {
        return error;
    }
    *failures = 0;
    loop {
        tokio::select! {
            () = stop.cancelled() => return "Wright is shutting down".to_owned(),
            () = tools_changed.notified() => {
                if let Err(error) = list_into(shared, name, &peer).await {
                    return error;
                }
            }
            () = broken.notified() => return "a call found the connection broken".to_owned(),
            quit = &mut closed => return match quit {
                Ok(reason) => format!("the connection ended ({reason:?})"),
                Err(error) => format!("the connection's task failed: {error}"),
            },
        }
    }
}

/// Lists the server's tools and publishes them (those with usable names).
async fn list_into(shared: &Shared, name: &str, peer: &Peer<RoleClient>) -> Result<(), String> {
    let listed = tokio::time::timeout(shared.config.call_timeout(), peer.list_all_tools())
        .await
        .map_err(|_elapsed| "listing its tools timed out".to_owned())?
        .map_err(|error| format!("listing its tools failed: {error}"))?;
    let mut tools = Vec::new();
    let mut skipped_tools = Vec::new();
    let mut seen = HashMap::new();
    for tool in listed {
        let Some(qualified) = qualified_name(name, &tool.name) else {
            skipped_tools.push(tool.name.to_string());
            continue;
        };
        if seen.insert(qualified.clone(), ()).is_some() {
            skipped_tools.push(tool.name.to_string());
            continue;
        }
        tools.push(McpTool {
            name: qualified,
            server: name.to_owned(),
            tool: tool.name.to_string(),
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            read_only: tool.annotations.as_ref().and_then(|annotations| annotations.read_only_hint) == Some(true),
        });
    }
    let count = tools.len();
    shared.update(name, |slot| {
        slot.state = ServerState::Up { tools: count };
        slot.peer = Some(peer.clone());
        slot.tools = tools;
        slot.skipped_tools = skipped_tools;
    });
    Ok(())
}

type Running = rmcp::service::RunningService<RoleClient, Handler>;

async fn connect(shared: &Shared, server: &McpServerConfig, handler: Handler) -> Result<Running, String> {
    match server {
        McpServerConfig::Stdio { command, args, env, cwd } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args).env_clear().envs(env);
            if let Some(cwd) = cwd {
                process.current_dir(cwd);
            }
            // The server's stderr is its log; Wright's own log is no place for it (it could be
            // large), and the reason a server fails is reported from the connection.
            let (transport, _stderr) = TokioChildProcess::builder(process)
                .stderr(Stdio::null())
                .spawn()
                .map_err(|error| format!("could not start `{command}`: {error}"))?;
            handler.serve(transport).await.map_err(|error| format!("the MCP handshake failed: {error}"))
        }
        McpServerConfig::Http { url, headers } => {
            // Judged once for this connection; the client below reaches only what passed.
            let admission = shared.gate.admit(url).await?;
            let mut custom = HashMap::new();
            for (header, value) in headers {
                let header_name = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|error| format!("header {header:?}: {error}"))?;
                let header_value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|error| format!("value of header {header:?}: {error}"))?;
                custom.insert(header_name, header_value);
            }
            // Responses are bounded, so a server cannot make Wright buffer an unbounded body
            // before the result cap is checked. rmcp treats a response over this bound as a
            // broken transport (the connection is dropped and reconnected), so it is set well
            // above the result cap: results between the two get the ordinary TooLarge error.
            let response_cap = shared.config.max_result_bytes.saturating_mul(4).saturating_add(1024 * 1024);
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(custom)
                .max_json_response_size(response_cap)
                .max_sse_event_size(response_cap);
            // No proxy (it would resolve names itself), no redirects (a hop would be unjudged),
            // and names resolve only to the admitted addresses.
            let client = reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .dns_resolver(Arc::new(PinnedResolver(admission)))
                .build()
                .map_err(|error| format!("HTTP client: {error}"))?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            handler.serve(transport).await.map_err(|error| format!("the MCP handshake failed: {error}"))
        }
    }
}

/// Installs ring as rustls's provider (reqwest is built without one); harmless when another
/// crate already did.
pub(crate) fn install_crypto_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::ring::default_provider().install_default().is_err() {
            tracing::debug!("a rustls crypto provider was already installed");
        }
    });
}

/// Every string in `value` (keys stay: they are the protocol's) with the secrets redacted.
fn redact_strings(value: &mut Value, redactor: &wright_core::Redactor) {
    match value {
        Value::String(text) => {
            if redactor.finds_secret_in(text) {
                *text = redactor.redact(text);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_strings(item, redactor)),
        Value::Object(object) => object.values_mut().for_each(|item| redact_strings(item, redactor)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    /// Issue 33 item 7: a secret an MCP server quotes back — in a result or an error — is gone
    /// before the text leaves this crate.
    #[test]
    fn what_a_server_says_loses_every_configured_secret() {
        let redactor = wright_core::Redactor::new(["sk-proj-FROM-THE-ENV-1234"]);
        let mut result = serde_json::json!({"content": [{"type": "text", "text": "token sk-proj-FROM-THE-ENV-1234 used"}],
            "structuredContent": {"nested": ["sk-proj-FROM-THE-ENV-1234"]}});
        redact_strings(&mut result, &redactor);
        assert!(!result.to_string().contains("sk-proj-FROM-THE-ENV-1234"), "{result}");
        assert_eq!(result["content"][0]["text"], "token [redacted] used");
        let error =
            McpError::ToolFailed { tool: "mcp__py__fails".into(), message: "bad sk-proj-FROM-THE-ENV-1234".into() };
        assert_eq!(error.redacted(&redactor).to_string(), "MCP tool `mcp__py__fails` failed: bad [redacted]");
    }
}
