//! Tests of the `wright` server and CLI: the router in process (no socket) for routes and
//! auth, and the real binary for `serve`, `tool call` and the document commands.

mod api;
mod binary;
mod hardening;
mod images;
mod memory_embeddings;
mod model_loop;
mod real_model;
mod settings;
