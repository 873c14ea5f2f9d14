//! Tests of the `wright` server: the router in process (no socket) for routes, auth, limits and
//! the config, and the listener's hardening. The end-to-end tests that drive the real binary
//! from outside are the workspace's, in the top-level `tests/e2e` (this crate's `e2e` target).

mod api;
mod hardening;
mod images;
mod mcp;
mod memory_embeddings;
mod settings;
mod telegram;
