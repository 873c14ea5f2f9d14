//! `McpError`: what a caller of an MCP tool can act on.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The `[mcp]` configuration is invalid.
    #[error("MCP configuration: {reason}")]
    Config { reason: String },

    /// No server offers a tool by this name (now: its server may be down).
    #[error("no MCP tool named `{name}` is available")]
    UnknownTool { name: String },

    /// The tool's server is not connected (failed to start, died, or is reconnecting).
    #[error("MCP server `{server}` is not available: {reason}")]
    Unavailable { server: String, reason: String },

    /// The connection ended while the call was running.
    #[error("MCP server `{server}` went away during the call: {reason}")]
    ServerDied { server: String, reason: String },

    #[error("MCP tool `{tool}` did not answer within {after:?}")]
    Timeout { tool: String, after: Duration },

    /// The server ran the tool and reported an error (`isError: true`).
    #[error("MCP tool `{tool}` failed: {message}")]
    ToolFailed { tool: String, message: String },

    /// The result was larger than `max_result_bytes`.
    #[error("MCP tool `{tool}` returned {bytes} bytes, more than the {limit}-byte limit")]
    TooLarge { tool: String, bytes: usize, limit: usize },

    /// The server refused the request or answered something that is not MCP.
    #[error("MCP server `{server}`: {reason}")]
    Protocol { server: String, reason: String },
}

impl McpError {
    /// The same error with every secret `redactor` holds removed from the server's text.
    pub fn redacted(self, redactor: &wright_core::Redactor) -> McpError {
        let clean = |text: String| redactor.redact(&text);
        match self {
            McpError::Config { reason } => McpError::Config { reason: clean(reason) },
            McpError::UnknownTool { name } => McpError::UnknownTool { name },
            McpError::Unavailable { server, reason } => McpError::Unavailable { server, reason: clean(reason) },
            McpError::ServerDied { server, reason } => McpError::ServerDied { server, reason: clean(reason) },
            McpError::Timeout { tool, after } => McpError::Timeout { tool, after },
            McpError::ToolFailed { tool, message } => McpError::ToolFailed { tool, message: clean(message) },
            McpError::TooLarge { tool, bytes, limit } => McpError::TooLarge { tool, bytes, limit },
            McpError::Protocol { server, reason } => McpError::Protocol { server, reason: clean(reason) },
        }
    }

    /// A short stable name, stored with the execution.
    pub fn category(&self) -> &'static str {
        match self {
            McpError::Config { .. } => "config",
            McpError::UnknownTool { .. } => "unknown_tool",
            McpError::Unavailable { .. } => "unavailable",
            McpError::ServerDied { .. } => "server_died",
            McpError::Timeout { .. } => "timeout",
            McpError::ToolFailed { .. } => "tool_failed",
            McpError::TooLarge { .. } => "limit",
            McpError::Protocol { .. } => "protocol",
        }
    }
}
