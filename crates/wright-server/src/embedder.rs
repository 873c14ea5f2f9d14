//! The store's memory embedder (`[memory.embeddings]`): a provider connection's embedding
//! endpoint through `wright_llm::Embedder`, and the sweep that embeds queued memories.
//!
//! The connection is resolved again for each call (a key changed on the Settings page applies
//! at once), and the HTTP client is rebuilt only when the connection changed. Errors become the
//! store's two kinds: a refused text (invalid request, too long) or an endpoint that cannot
//! answer now (everything else).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wright_core::{EmbedPurpose, UsageCaller, UsagePurpose};
use wright_llm::{Connection, Embedder, LlmError};
use wright_memory::{EmbedFailure, EmbedFuture, Memories, MemoryEmbedder};
use wright_store::{MemoryEmbeddingsConfig, UsageRecord};

use crate::domain::models::Models;
use crate::domain::prices::{Price, Tokens};
use crate::domain::usage::Ledger;

pub struct ConnectionEmbedder {
    models: Arc<Models>,
    /// Every embedding request is checked against all agents' budgets and written to the
    /// usage ledger (purpose `embedding`; the store's embedder knows no agent).
    ledger: Arc<Ledger>,
    config: MemoryEmbeddingsConfig,
    /// The last connection resolved and its embedder; held only to read or replace it.
    built: Mutex<Option<(Connection, Embedder)>>,
}

impl ConnectionEmbedder {
    pub fn new(models: Arc<Models>, ledger: Arc<Ledger>, config: MemoryEmbeddingsConfig) -> Self {
        Self { models, ledger, config, built: Mutex::new(None) }
    }

    async fn embedder(&self) -> Result<(Embedder, &'static str), EmbedFailure> {
        let connection = self
            .models
            .connection(&self.config.connection)
            .await
            .map_err(|error| EmbedFailure::Unavailable(format!("the embedding connection: {error}")))?
            .ok_or_else(|| {
                EmbedFailure::Unavailable(format!(
                    "[memory.embeddings] connection {:?} does not exist (a connection id from the Settings page, \
                     or env:openai, env:gemini, env:ollama, env:openai_compatible)",
                    self.config.connection
                ))
            })?;
        let mut built = self.built.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let kind = connection.kind.as_str();
        if let Some((known, embedder)) = built.as_ref()
            && *known == connection
        {
            return Ok((embedder.clone(), kind));
        }
        // The longer of the two timeouts: the store bounds each call itself.
        let timeout = Duration::from_millis(self.config.timeout_ms.max(self.config.query_timeout_ms));
        let embedder = connection
            .embedder(&self.config.model, self.config.dimensions, timeout)
            .map_err(|error| EmbedFailure::Unavailable(error.to_string()))?;
        *built = Some((connection, embedder.clone()));
        Ok((embedder, kind))
    }
}

impl MemoryEmbedder for ConnectionEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String], purpose: EmbedPurpose) -> EmbedFuture<'a> {
        Box::pin(async move {
            let (embedder, kind) = self.embedder().await?;
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let (connection, model) = (self.config.connection.as_str(), self.config.model.as_str());
            // Four characters a token: the estimate reserved, and recorded when the server
            // does not count (Gemini).
            let estimate = texts.iter().map(|text| text.len() as u64).sum::<u64>().div_ceil(4);
            let price = self.ledger.price(connection, kind, model).await.unwrap_or(Price::FREE);
            let cost = |prompt: u64| price.cost(&Tokens { prompt, ..Tokens::default() });
            // Over budget: the memories stay queued and are embedded once the budget allows.
            let reservation =
                self.ledger.reserve(None, estimate, cost(estimate)).await.map_err(EmbedFailure::Unavailable)?;
            let started = std::time::Instant::now();
            let answer = embedder.embed_counted(&texts, purpose).await;
            let (counted, cut) = match &answer {
                Ok((_, tokens)) => (*tokens, false),
                Err(_) => (None, true),
            };
            let prompt = counted.unwrap_or(estimate);
            let record = UsageRecord {
                agent_id: None,
                conversation_id: None,
                run_id: None,
                caller: UsageCaller::Person,
                purpose: UsagePurpose::Embedding,
                connection: connection.to_owned(),
                model: model.to_owned(),
                prompt_tokens: prompt as i64,
                cached_prompt_tokens: 0,
                completion_tokens: 0,
                reasoning_tokens: None,
                request_id: None,
                duration_ms: started.elapsed().as_millis() as i64,
                cost_usd: cost(prompt),
                estimated: counted.is_none(),
                cut,
            };
            self.ledger.record(reservation, &record).await;
            answer.map(|(vectors, _)| vectors).map_err(|error| match error {
                LlmError::InvalidRequest(_) | LlmError::ContextLengthExceeded(_) => {
                    EmbedFailure::Refused(error.to_string())
                }
                other => EmbedFailure::Unavailable(other.to_string()),
            })
        })
    }
}

/// Embeds queued memories every `interval` until `shutdown` (memories stored while the
/// endpoint was down, and every memory after the embedding model changed).
pub fn spawn_sweep(memories: Memories, interval: Duration, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            match memories.embed_pending(None).await {
                Ok(report) if report.embedded > 0 => {
                    tracing::info!(embedded = report.embedded, "queued memories embedded");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "the memory embedding sweep failed"),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
        }
    });
}
