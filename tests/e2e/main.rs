//! End-to-end tests of the workspace: the real `wright` binary, spawned on a fresh data
//! directory, driven from outside as a user's programs would — its CLI and `serve`
//! (`binary`), the agent loop against the scripted fake provider over every wire format
//! (`model_loop`), a real small model (`real_model`), and an MCP client built on the official
//! Python SDK against `/mcp` (`mcp_server`); and ARCHITECTURE.md's code map against the
//! workspace's manifests (`architecture`).
//!
//! One test binary for them all, built as a test target of `wright-server` (its manifest
//! points here): that is how `CARGO_BIN_EXE_wright` names the binary cargo just built for the
//! same `cargo test --workspace`, never a stale one. Each crate's own tests stay beside it
//! (`crates/*/tests`). Run one module with `cargo test -p wright-server --test e2e model_loop`.

mod architecture;
mod attacks;
mod binary;
mod export;
mod learning;
mod mcp_server;
mod model_loop;
mod push;
mod real_model;
mod skills;
mod usage;
