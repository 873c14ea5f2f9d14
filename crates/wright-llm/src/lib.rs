//! Wright's models: canonical requests and stream events, the [`Provider`] trait, and the
//! wire adapters that translate at the boundary (DESIGN.md §3).
//!
//! - [`Request`] holds the system text, the history as `wright_core::Event`s and the tool
//!   specs; [`Provider::stream`] answers with an [`EventStream`] of [`StreamEvent`]s;
//!   [`collect`] drains one into a [`Reply`].
//! - Adapters, each a `<vendor>/wire.rs` of typed serde structs plus pure conversion: OpenAI
//!   Chat Completions (and OpenAI-compatible servers: Ollama, llama.cpp, vLLM, LM Studio,
//!   Groq, OpenRouter, Azure), the OpenAI Responses API, Anthropic Messages, Gemini — and
//!   the [text protocol](text_protocol) for models without native tool calls.
//! - [`ProviderConfig`] builds a provider; [`config_from_env`] picks one from the
//!   environment values the binary passes in; a [`Connection`] (a vendor, base URL and key
//!   added in the canvas) lists the provider's models and makes a config for one of them,
//!   or an [`Embedder`] for one of its embedding models (texts to vectors, for memory recall).
//! - [`tool_schema`] translates tool schemas into the JSON Schema subset each server accepts
//!   (Wright still validates calls against the full schema).
//! - [`recover_calls`] finds tool calls a model wrote as text (bare JSON, ```json, `<tool_call>`,
//!   text-protocol blocks) in a reply that made none.
//! - [`sse`] is the incremental SSE parser; `testing` (feature `testing`) is a scripted fake
//!   provider server that speaks the real streaming formats.
//!
//! Invariants:
//! - A stream yields tool calls only whole (arguments accumulated across chunks, parallel
//!   calls by index, ids made up where the API sends none) and ends with exactly one
//!   `Finish` or one error. A stream cut short — EOF without the provider's finish, an error
//!   event inside an HTTP-200 stream — is an error, never a clean completion.
//! - Errors are classified into [`LlmError`]'s variants; the retryable ones are retried with
//!   backoff inside the provider, and only while nothing has been delivered.
//! - Vendor JSON never leaves its vendor module; nothing here reads the environment or
//!   talks to anything but the configured endpoint.

mod anthropic;
mod canonical;
mod config;
mod connection;
mod embeddings;
mod error;
mod gemini;
mod json_array;
mod ollama;
mod openai;
mod provider;
mod recovery;
mod responses;
pub mod sse;
pub mod text_protocol;
pub mod tool_schema;
mod transport;

#[cfg(test)]
mod test_support;

#[cfg(feature = "testing")]
pub mod testing;

pub use canonical::{
    EventStream, Finish, FinishReason, Reply, Request, StreamEvent, ThinkingBlock, ToolCallEvent, Usage, collect,
};
pub use config::{
    DEFAULT_ANTHROPIC_MODEL, DEFAULT_GEMINI_MODEL, DEFAULT_OLLAMA_HOST, DEFAULT_OPENAI_MODEL, HOW_TO_CONFIGURE,
    ProviderConfig, ProviderEnv, ProviderKind, ToolCallMode, config_from_env, ollama_base_url, ollama_config,
    ollama_models,
};
pub use connection::{Connection, ConnectionKind, ListedModel};
pub use embeddings::Embedder;
pub use error::{ErrorInfo, LlmError};
pub use provider::{HttpProvider, LocalServer, Provider, ServerFacts};
pub use recovery::{Recovered, recover_calls};
pub use text_protocol::{TextProtocol, TextProtocolProvider};
pub use tool_schema::SchemaDialect;
pub use transport::RetryPolicy;
pub use wright_core::EmbedPurpose;

/// The HTTP body the provider `config` would send for `request`, as JSON: what real-server
/// tests post to an endpoint of their own choosing, and what request sizes are measured on.
pub fn request_body(config: &ProviderConfig, request: &Request) -> Result<serde_json::Value, LlmError> {
    let rewritten;
    let request = match config.tool_calls {
        ToolCallMode::Native => request,
        ToolCallMode::Text => {
            rewritten = config.text_protocol.rewrite(request);
            &rewritten
        }
    };
    let call = config::wire_for(config).build(request)?;
    serde_json::from_slice(&call.body)
        .map_err(|error| LlmError::InvalidResponse(format!("the request body is not JSON: {error}")))
}

/// Decodes a recorded response body without a network, as the HTTP path would: `status`
/// and `content_type` decide between error classification, SSE, a streamed JSON array and
/// a whole JSON document; `chunks` are fed as they would arrive. For replay tests and
/// benchmarks.
pub fn decode_recorded(
    kind: ProviderKind,
    streaming: bool,
    status: u16,
    content_type: &str,
    chunks: &[&[u8]],
) -> Vec<Result<StreamEvent, LlmError>> {
    let mut config = ProviderConfig::new(kind, "recorded");
    config.streaming = streaming;
    let wire = config::wire_for(&config);
    transport::decode_offline(wire.as_ref(), streaming, status, content_type, chunks)
}
