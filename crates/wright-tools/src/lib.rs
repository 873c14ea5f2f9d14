//! Wright's built-in tools and the registry that runs every tool call.
//!
//! A tool is a name, a description written for a model, a JSON Schema of its arguments
//! (generated with schemars from the Rust type the handler takes) and a handler that returns
//! JSON. The [`ToolRegistry`] is the one door through which the agent loop, the CLI and the
//! HTTP API call tools: it finds the tool, validates the arguments against the schema with
//! jsonschema (a violation lists each failing path), runs it, and records the call in
//! `tool_executions`.
//!
//! Invariants:
//! - A handler never sees arguments that failed its schema.
//! - Every call that reaches a tool of an existing agent is recorded, success or failure.
//! - This crate knows nothing of models or HTTP; the loop and the server call into it.

pub mod browser;
mod builtin;
mod code;
mod components;
mod database;
mod error;
mod execution_log;
mod host;
mod interaction;
pub mod market;
mod mcp;
mod memory;
mod proactive;
mod registry;
mod schema;
mod self_modification;
mod skills;
mod state;
mod tool_management;
mod web;
pub mod workspace;

pub use code::run_file;
pub use error::ToolError;
pub use interaction::check_pausing_call;
pub use mcp::{EgressGate, egress_gate};
pub use registry::{ToolInfo, ToolRegistry, builtin_specs};

use std::sync::Arc;

use wright_agentdb::AgentDatabases;
use wright_browser::Browsers;
use wright_core::AgentId;
use wright_egress::Egress;
use wright_memory::Memories;
use wright_sandbox::Sandbox;
use wright_schedules::Schedules;
use wright_store::Store;
use wright_workspace::Workspaces;

/// What tools reach the world through. Built once by the binary, shared by every call.
pub struct Services {
    pub store: Store,
    /// Memories recalled and embedded above the store (the `memory` tool).
    pub memories: Memories,
    /// Schedules under `[schedules]`' policy (the `schedule` tool).
    pub schedules: Schedules,
    /// Runs agent-written JavaScript (run_sandbox_code and agent-made tools).
    pub sandbox: Sandbox,
    /// Every request the agent causes (fetch_url, web_search, the sandbox's fetch).
    pub egress: Egress,
    /// The agents' own databases (db_sql, db_schema).
    pub databases: AgentDatabases,
    /// Headless Chromium, one context per conversation, its requests judged by `egress`.
    pub browsers: Browsers,
    /// The agents' workspaces and the confined shell (glob, file_*, grep, bash).
    pub workspaces: Workspaces,
}

/// Who is calling and on whose behalf; handed to every handler.
#[derive(Clone)]
pub struct ToolContext {
    pub services: Arc<Services>,
    pub agent: AgentId,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
}
