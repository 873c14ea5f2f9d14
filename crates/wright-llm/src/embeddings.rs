//! Embeddings: texts to vectors through a connection's own embedding endpoint — OpenAI's and
//! the compatible servers' `POST /v1/embeddings`, Gemini's `models/{m}:batchEmbedContents`,
//! Ollama's `POST /api/embed`. Anthropic has none.
//!
//! An [`Embedder`] is one model on one connection. It sends at most the vendor's batch size
//! per request (OpenAI 2,048 inputs, Gemini 100) and answers one vector per text, in order.
//! It does not retry: its callers decide (memory recall falls back to full text at once,
//! storing queues the text for later), and an error is classified by the vendor's own error
//! reader, as a chat request's is.
//!
//! Invariant: every vector returned has the same length, and that length is `dimensions` when
//! one was asked for; anything else is [`LlmError::InvalidResponse`], never a short vector.

use std::time::Duration;

use wright_core::EmbedPurpose;

use crate::LlmError;
use crate::config::{ToolCallMode, ollama_base_url, wire_for};
use crate::connection::{Connection, ConnectionKind};
use crate::transport::{error_chain, http_client};

/// One embedding model on one connection.
#[derive(Clone)]
pub struct Embedder {
    connection: Connection,
    model: String,
    dimensions: Option<u32>,
    client: reqwest::Client,
    timeout: Duration,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("connection", &self.connection)
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// An embedder for `model` on this connection; `dimensions` asks models that can shorten
    /// their vectors (OpenAI's text-embedding-3, Gemini's, some Ollama models) for that many.
    /// `timeout` bounds each request, connection included.
    pub fn embedder(&self, model: &str, dimensions: Option<u32>, timeout: Duration) -> Result<Embedder, LlmError> {
        if self.kind == ConnectionKind::Anthropic {
            return Err(LlmError::Config(
                "Anthropic has no embeddings endpoint; use an OpenAI, Gemini, Ollama or OpenAI-compatible connection"
                    .to_owned(),
            ));
        }
        if model.trim().is_empty() {
            return Err(LlmError::Config("no embedding model is set".to_owned()));
        }
        if self.kind.needs_key() && self.key().is_none() {
            return Err(LlmError::Config(format!("the {} provider needs an API key", self.kind.as_str())));
        }
        if dimensions == Some(0) {
            return Err(LlmError::Config("embedding dimensions must be at least 1".to_owned()));
        }
        let base = self.base_url();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!("base URL {base:?} must start with http:// or https://")));
        }
        Ok(Embedder {
            connection: self.clone(),
            model: model.trim().to_owned(),
            dimensions,
            client: http_client(timeout, timeout)?,
            timeout,
        })
    }
}

impl Embedder {
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dimensions(&self) -> Option<u32> {
        self.dimensions
    }

    /// The most texts one request carries.
    pub fn batch_size(&self) -> usize {
        match self.connection.kind {
            // The API's limit on `input` (2,048); compatible servers take fewer at a time in
            // practice, and a memory's batch is small anyway.
            ConnectionKind::Openai => 2_048,
            ConnectionKind::OpenaiCompatible | ConnectionKind::Ollama => 256,
            // "at most 100 requests can be in one batch".
            ConnectionKind::Gemini | ConnectionKind::Anthropic => 100,
        }
    }

    /// One vector per text, in the order given. An error has the key it was sent redacted.
    pub async fn embed(&self, texts: &[&str], purpose: EmbedPurpose) -> Result<Vec<Vec<f32>>, LlmError> {
        self.embed_counted(texts, purpose).await.map(|(vectors, _)| vectors)
    }

    /// [`Embedder::embed`], with the tokens the server says it read (OpenAI's and compatible
    /// servers' `usage.prompt_tokens`, Ollama's `prompt_eval_count`); None when a batch's
    /// answer did not say (Gemini never does).
    pub async fn embed_counted(
        &self,
        texts: &[&str],
        purpose: EmbedPurpose,
    ) -> Result<(Vec<Vec<f32>>, Option<u64>), LlmError> {
        self.embed_as_sent(texts, purpose).await.map_err(|error| error.redacted(&self.connection.redactor()))
    }

    async fn embed_as_sent(
        &self,
        texts: &[&str],
        purpose: EmbedPurpose,
    ) -> Result<(Vec<Vec<f32>>, Option<u64>), LlmError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = Some(0);
        for batch in texts.chunks(self.batch_size()) {
            let (batch_vectors, batch_tokens) = self.embed_batch(batch, purpose).await?;
            vectors.extend(batch_vectors);
            tokens = tokens.zip(batch_tokens).map(|(sum, more)| sum + more);
        }
        let width = vectors.first().map(Vec::len);
        if let Some(width) = width {
            if width == 0 || vectors.iter().any(|vector| vector.len() != width) {
                return Err(LlmError::InvalidResponse("the embedding vectors are not all of one length".to_owned()));
            }
            if let Some(asked) = self.dimensions
                && width != asked as usize
            {
                return Err(LlmError::InvalidResponse(format!(
                    "asked for {asked} dimensions, the model answered {width} (does it take a dimensions setting?)"
                )));
            }
        }
        Ok((vectors, tokens))
    }

    async fn embed_batch(
        &self,
        texts: &[&str],
        purpose: EmbedPurpose,
    ) -> Result<(Vec<Vec<f32>>, Option<u64>), LlmError> {
        let base = self.connection.base_url();
        let key = self.connection.key();
        let request = match self.connection.kind {
            ConnectionKind::Openai | ConnectionKind::OpenaiCompatible => {
                let body = crate::openai::wire::EmbeddingRequest {
                    model: &self.model,
                    input: texts,
                    encoding_format: "float",
                    dimensions: self.dimensions,
                };
                let request = self.client.post(format!("{base}/embeddings")).json(&body);
                match key {
                    Some(key) => request.bearer_auth(key),
                    None => request,
                }
            }
            ConnectionKind::Gemini | ConnectionKind::Anthropic => {
                let model = self.model.strip_prefix("models/").unwrap_or(&self.model);
                let body = crate::gemini::wire::BatchEmbedRequest {
                    requests: texts
                        .iter()
                        .map(|text| crate::gemini::wire::EmbedContentRequest {
                            model: format!("models/{model}"),
                            content: crate::gemini::wire::Content {
                                role: None,
                                parts: vec![crate::gemini::wire::Part {
                                    text: Some((*text).to_owned()),
                                    ..Default::default()
                                }],
                            },
                            task_type: match purpose {
                                EmbedPurpose::Query => "RETRIEVAL_QUERY",
                                EmbedPurpose::Document => "RETRIEVAL_DOCUMENT",
                            },
                            output_dimensionality: self.dimensions,
                        })
                        .collect(),
                };
                // The key in a header rather than the query, so it cannot end up in a logged URL.
                self.client
                    .post(format!("{base}/v1beta/models/{model}:batchEmbedContents"))
                    .header("x-goog-api-key", key.unwrap_or_default())
                    .json(&body)
            }
            ConnectionKind::Ollama => {
                let body =
                    crate::ollama::wire::EmbedRequest { model: &self.model, input: texts, dimensions: self.dimensions };
                let request = self.client.post(format!("{}/api/embed", ollama_base_url(&base))).json(&body);
                match key {
                    // Ollama itself takes no key; one set is for a proxy in front of it.
                    Some(key) => request.bearer_auth(key),
                    None => request,
                }
            }
        };
        let response =
            request.timeout(self.timeout).send().await.map_err(|error| LlmError::Transport(error_chain(&error)))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|error| LlmError::Transport(error_chain(&error)))?;
        if !(200..300).contains(&status) {
            // Each vendor's error body is read by the code that reads its chat errors.
            let wire = wire_for(&self.connection.provider_config(&self.model, ToolCallMode::Native));
            return Err(wire.classify(status, &headers, &body));
        }
        let invalid = |error: serde_json::Error| LlmError::InvalidResponse(format!("embeddings: {error}"));
        let (vectors, tokens): (Vec<Vec<f32>>, Option<u64>) = match self.connection.kind {
            ConnectionKind::Openai | ConnectionKind::OpenaiCompatible => {
                let mut answer: crate::openai::wire::EmbeddingResponse =
                    serde_json::from_slice(&body).map_err(invalid)?;
                answer.data.sort_by_key(|data| data.index);
                if answer.data.iter().enumerate().any(|(position, data)| data.index != position) {
                    return Err(LlmError::InvalidResponse("embeddings: the indexes are not 0..n".to_owned()));
                }
                let tokens = answer.usage.and_then(|usage| usage.prompt_tokens);
                (answer.data.into_iter().map(|data| data.embedding).collect(), tokens)
            }
            ConnectionKind::Gemini | ConnectionKind::Anthropic => {
                let answer: crate::gemini::wire::BatchEmbedResponse = serde_json::from_slice(&body).map_err(invalid)?;
                (answer.embeddings.into_iter().map(|embedding| embedding.values).collect(), None)
            }
            ConnectionKind::Ollama => {
                let answer: crate::ollama::wire::EmbedResponse = serde_json::from_slice(&body).map_err(invalid)?;
                (answer.embeddings, answer.prompt_eval_count)
            }
        };
        if vectors.len() != texts.len() {
            return Err(LlmError::InvalidResponse(format!(
                "embeddings: {} texts sent, {} vectors answered",
                texts.len(),
                vectors.len()
            )));
        }
        if vectors.iter().flatten().any(|value| !value.is_finite()) {
            return Err(LlmError::InvalidResponse(
                "embeddings: a vector holds a value that is not a number".to_owned(),
            ));
        }
        Ok((vectors, tokens))
    }
}
