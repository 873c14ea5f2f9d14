//! The [`Provider`] trait — one required streaming method — and [`HttpProvider`], the one
//! implementation every HTTP wire shares.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::LlmError;
use crate::canonical::{EventStream, Reply, Request, collect};
use crate::transport::{self, RetryPolicy, Wire};

/// A model behind some API. Object-safe: the loop holds an `Arc<dyn Provider>`.
///
/// Contract of [`Provider::stream`]: text and reasoning deltas in order; tool calls only
/// whole; then usage and exactly one `Finish`, or an error instead of the finish (an
/// incomplete stream is an error, never a clean completion). Retries happen inside, before
/// anything is delivered. The token cancels at any point; dropping the stream also stops it.
pub trait Provider: Send + Sync {
    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream;

    /// `kind/model`, for logs and the UI.
    fn label(&self) -> String {
        "provider".to_owned()
    }

    /// The model's context window in tokens, when the server says it (llama.cpp, Ollama);
    /// asked once and remembered.
    fn context_window(&self) -> BoxFuture<'_, Option<u32>> {
        Box::pin(async move { self.server_facts().await.context_window })
    }

    /// What the model's server says of itself and the model (a local server: llama.cpp,
    /// Ollama, vLLM, LM Studio); nothing for the hosted APIs. Asked once and remembered.
    fn server_facts(&self) -> BoxFuture<'_, ServerFacts> {
        Box::pin(async { ServerFacts::default() })
    }

    /// One turn, collected; `on_event` sees every event as it arrives.
    fn complete<'a>(
        &'a self,
        request: Request,
        cancel: CancellationToken,
        on_event: &'a (dyn Fn(&crate::StreamEvent) + Send + Sync),
    ) -> BoxFuture<'a, Result<Reply, LlmError>> {
        let stream = self.stream(request, cancel);
        Box::pin(collect(stream, on_event))
    }
}

/// A provider reached over HTTP through one of the wires.
pub struct HttpProvider {
    label: String,
    client: reqwest::Client,
    wire: Arc<dyn Wire>,
    retry: RetryPolicy,
    /// Applied to every error before it leaves the transport.
    redactor: wright_core::Redactor,
    /// Where to ask the server about itself: `(base URL, model)` of an OpenAI-compatible
    /// server; `None` for the hosted APIs, which do not say.
    server_probe: Option<(String, String, Option<String>)>,
    /// The answer, asked once (a `OnceCell` so concurrent runs ask together, not twice).
    server_facts: tokio::sync::OnceCell<ServerFacts>,
}

/// A local server's kind, as it shows itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalServer {
    LlamaCpp,
    Ollama,
    Vllm,
    LmStudio,
}

impl LocalServer {
    pub fn as_str(self) -> &'static str {
        match self {
            LocalServer::LlamaCpp => "llama.cpp",
            LocalServer::Ollama => "Ollama",
            LocalServer::Vllm => "vLLM",
            LocalServer::LmStudio => "LM Studio",
        }
    }
}

/// What a model's server says: which server it is, the context window, the model's size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerFacts {
    pub server: Option<LocalServer>,
    pub context_window: Option<u32>,
    /// The model's parameter count (llama.cpp's `n_params`, Ollama's `parameter_count`).
    pub parameters: Option<u64>,
    /// The size of the model's file in bytes (llama.cpp's GGUF).
    pub size_bytes: Option<u64>,
    /// The weights the server loaded, when it names them apart from what requests call the
    /// model (vLLM's `root`: `Qwen/Qwen2.5-1.5B-Instruct` served as `assistant`).
    pub weights: Option<String>,
}

impl HttpProvider {
    pub(crate) fn new(
        label: String,
        client: reqwest::Client,
        wire: Arc<dyn Wire>,
        retry: RetryPolicy,
        redactor: wright_core::Redactor,
    ) -> Self {
        Self { label, client, wire, retry, redactor, server_probe: None, server_facts: tokio::sync::OnceCell::new() }
    }

    /// Asks `base_url`'s server about itself (llama.cpp, Ollama, vLLM, LM Studio), with the
    /// key the provider sends it (a vLLM started with `--api-key` lists its models only so).
    pub(crate) fn probing_server(mut self, base_url: String, model: String, api_key: Option<String>) -> Self {
        self.server_probe = Some((base_url, model, api_key));
        self
    }

    /// The JSON body this provider would send for `request`, for inspection and tests.
    pub fn request_body(&self, request: &Request) -> Result<Value, LlmError> {
        let call = self.wire.build(request)?;
        serde_json::from_slice(&call.body).map_err(|error| LlmError::InvalidResponse(error.to_string()))
    }
}

impl Provider for HttpProvider {
    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        transport::run(
            self.client.clone(),
            Arc::clone(&self.wire),
            self.retry.clone(),
            self.redactor.clone(),
            request,
            cancel,
        )
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn server_facts(&self) -> BoxFuture<'_, ServerFacts> {
        Box::pin(async move {
            let Some((base_url, model, api_key)) = &self.server_probe else { return ServerFacts::default() };
            self.server_facts
                .get_or_init(|| crate::openai::probe_server(&self.client, base_url, model, api_key.as_deref()))
                .await
                .clone()
        })
    }
}
