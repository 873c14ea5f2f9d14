//! `wright-mcp`: Wright as an MCP client. The operator's MCP servers (`[mcp.servers]`: a stdio
//! command or a streamable-HTTP URL) are kept connected by one supervisor each; their tools are
//! offered as `mcp__<server>__<tool>` and called through [`McpClients::call`].
//!
//! ```text
//! McpClients::start(McpConfig, gate, redactor) -> McpClients   supervisors start in the background
//! clients.tools()                -> Vec<McpTool>  tools of the servers that are up, now
//! clients.call(name, args)       -> Result<Value, McpError>
//! clients.status()               -> Vec<ServerStatus>  up / down (why, retry in) / starting
//! clients.changes()              -> watch::Receiver<u64>  bumps when any tool list changes
//! ```
//!
//! Guarantees: a stdio server starts with an empty environment plus the variables its
//! config gives; an HTTP server is reached only after the caller's [`HttpGate`] (Wright's
//! egress policy) admits its URL, for each connection, and only at the addresses it admitted; a server that fails to start or dies is reported (`status`) and retried with
//! exponential backoff, and its tools are not offered while it is down; a server's tool list is
//! listed again when it sends `notifications/tools/list_changed`; a result larger than
//! `max_result_bytes` is an error, not a context-filling answer; every call has a deadline.
//!
//! **Invariant:** a leaf — nothing here knows about the registry, the store or the egress
//! policy (it sees only the `HttpGate` it is given); the registry wraps these tools (schema
//! validation, execution log) like any other.
//! It reads no environment variables.

mod clients;
mod config;
mod error;
mod gate;

pub use clients::{McpClients, McpTool, ServerState, ServerStatus};
pub use config::{MAX_TOOL_NAME_LEN, McpConfig, McpServerConfig, TOOL_PREFIX, qualified_name, server_of};
pub use error::McpError;
pub use gate::{Admission, AdmitFuture, HttpGate};
