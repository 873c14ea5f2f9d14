//! `McpConfig`: the operator's MCP servers, from the `[mcp]` table of the server's config.
//!
//! Strict like the rest of the config (unknown keys are an error). Values are typed here;
//! nothing in this crate reads the environment — a stdio server's variables are given as
//! values, and the binary decides where they come from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::McpError;

/// The separator in `mcp__<server>__<tool>`.
pub const TOOL_PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
/// The longest tool name the model APIs accept (OpenAI, Anthropic and Gemini agree on 64).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// The MCP servers Wright connects to, and the limits of every call.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Servers by name; the name is the middle of their tools' names (`mcp__<name>__<tool>`):
    /// letters, digits, `-` and single `_`.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// Time to start a server and finish the MCP handshake. Default 30 000 ms.
    pub connect_timeout_ms: u64,
    /// Time one tool call may take. Default 60 000 ms.
    pub call_timeout_ms: u64,
    /// A tool result larger than this (as JSON) is refused: it would fill the model's context.
    /// Default 256 KiB.
    pub max_result_bytes: usize,
    /// The first wait before reconnecting a failed server; doubled after each failure in a
    /// row. Default 1 000 ms.
    pub retry_initial_ms: u64,
    /// The longest wait between reconnection attempts. Default 300 000 ms.
    pub retry_max_ms: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            servers: BTreeMap::new(),
            connect_timeout_ms: 30_000,
            call_timeout_ms: 60_000,
            max_result_bytes: 256 * 1024,
            retry_initial_ms: 1_000,
            retry_max_ms: 300_000,
        }
    }
}

impl McpConfig {
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// The wait before attempt `failures + 1`: `retry_initial_ms · 2^(failures-1)`, capped.
    pub fn retry_delay(&self, failures: u32) -> Duration {
        let factor = 1u64 << failures.saturating_sub(1).min(20);
        Duration::from_millis(self.retry_initial_ms.saturating_mul(factor).min(self.retry_max_ms))
    }

    /// Refuses names that would make ambiguous or invalid tool names, and empty commands/URLs.
    pub fn check(&self) -> Result<(), McpError> {
        for (name, server) in &self.servers {
            let valid = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !name.contains(SEPARATOR)
                && !name.starts_with('_')
                && !name.ends_with('_');
            if !valid {
                return Err(McpError::Config {
                    reason: format!(
                        "[mcp.servers] name {name:?}: use letters, digits, '-' and single '_' (it becomes part of \
                         the tools' names, mcp__{name}__<tool>)"
                    ),
                });
            }
            match server {
                McpServerConfig::Stdio { command, .. } if command.trim().is_empty() => {
                    return Err(McpError::Config { reason: format!("[mcp.servers.{name}] command is empty") });
                }
                McpServerConfig::Http { url, .. } if !(url.starts_with("http://") || url.starts_with("https://")) => {
                    return Err(McpError::Config {
                        reason: format!("[mcp.servers.{name}] url {url:?} is not http(s)"),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// How to reach one MCP server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpServerConfig {
    /// A child process speaking MCP on stdin/stdout. It starts with an **empty environment**
    /// plus `env`, so it sees no secret of Wright's that it was not given.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory; default: Wright's.
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint, with headers sent on every request (e.g. `Authorization`).
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    pub fn transport(&self) -> &'static str {
        match self {
            McpServerConfig::Stdio { .. } => "stdio",
            McpServerConfig::Http { .. } => "http",
        }
    }
}

/// Hand-written so variable and header values (tokens) never reach a log line.
impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpServerConfig::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpServerConfig::Http { url, headers } => {
                f.debug_struct("Http").field("url", url).field("headers", &headers.keys().collect::<Vec<_>>()).finish()
            }
        }
    }
}

/// `mcp__<server>__<tool>`, or `None` when the result would not be a valid model tool name
/// (longer than 64, or characters outside `[A-Za-z0-9_-]`).
pub fn qualified_name(server: &str, tool: &str) -> Option<String> {
    let name = format!("{TOOL_PREFIX}{server}{SEPARATOR}{tool}");
    let valid = name.len() <= MAX_TOOL_NAME_LEN
        && !tool.is_empty()
        && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then_some(name)
}

/// The server part of `mcp__<server>__<tool>` (server names contain no `__`).
pub fn server_of(qualified: &str) -> Option<&str> {
    let rest = qualified.strip_prefix(TOOL_PREFIX)?;
    let (server, tool) = rest.split_once(SEPARATOR)?;
    (!server.is_empty() && !tool.is_empty()).then_some(server)
}
