//! An agent's memory above the store: recall's ranking and fusion, the vector index and
//! embedding. The store (`wright-store`'s `memory`) keeps the rows, their history and the
//! lifetimes per layer, and answers in SQL; [`Memories`] decides what a recall returns and
//! keeps memories' vectors current.
//!
//! Recall needs no chat model: each query word's matches in the store's full-text index are
//! scored here by BM25 and weighted by layer and recency ([`relevance`]); with an embedding
//! endpoint, one embedding call for the query, and its vector's nearest memories (a quantised
//! index per agent, rescored exactly) fused with the full-text ranking by reciprocal rank
//! (`recall.rs`, `vectors.rs`). Without an answer from the endpoint, full text alone.
//!
//! Writes go through [`Memories`] so that a new or changed memory is embedded at once; a write
//! made straight to the store (another process, the CLI without an embedder) is queued in its
//! transaction and embedded by the next drain, so nothing is lost either way.

mod recall;
mod vectors;

use std::sync::Arc;

use wright_core::AgentId;
use wright_store::{Memory, MemoryActor, MemoryFilter, MemoryPatch, NewMemory, Store, StoreError};

pub use recall::relevance;
pub use vectors::{EmbedFailure, EmbedFuture, EmbedReport, MemoryEmbedder};

/// An agent's memories as tools, the API and the CLI use them. Cheap to clone (the store's
/// pools and the embedder's state are shared).
#[derive(Clone, Debug)]
pub struct Memories {
    store: Store,
    /// The embedder of memory vectors, when `[memory.embeddings]` is configured and the binary
    /// attached one ([`Memories::with_embedder`]).
    embeddings: Option<Arc<vectors::Embeddings>>,
}

impl Memories {
    /// Memories over `store` (its `[memory]` settings), recalled by full text until an
    /// embedder is attached.
    pub fn new(store: Store) -> Self {
        Self { store, embeddings: None }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Memories matching `query`, most relevant first (see the crate's header). A query with
    /// no words finds nothing.
    pub async fn recall(
        &self,
        agent: &AgentId,
        query: &str,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        recall::recall(self, agent, query, filter, limit).await
    }

    /// Stores a new memory, and embeds it now when an embedder is attached.
    pub async fn store_memory(
        &self,
        agent: &AgentId,
        memory: &NewMemory,
        actor: &MemoryActor,
    ) -> Result<Memory, StoreError> {
        let stored = self.store.store_memory(agent, memory, actor).await?;
        self.embed_now(&[stored.id]).await;
        Ok(stored)
    }

    /// Edits a memory; a changed content is embedded again now.
    pub async fn edit_memory(
        &self,
        agent: &AgentId,
        id: i64,
        patch: &MemoryPatch,
        actor: &MemoryActor,
    ) -> Result<Memory, StoreError> {
        let edited = self.store.edit_memory(agent, id, patch, actor).await?;
        self.embed_now(&[id]).await;
        Ok(edited)
    }

    /// Brings an archived memory back; one without a vector in the space gets one now.
    pub async fn restore_memory(&self, agent: &AgentId, id: i64, actor: &MemoryActor) -> Result<Memory, StoreError> {
        let restored = self.store.restore_memory(agent, id, actor).await?;
        self.embed_now(&[id]).await;
        Ok(restored)
    }

    /// How many memories wait for a vector (of all agents).
    pub async fn unembedded(&self) -> Result<i64, StoreError> {
        self.store.embedding_queue_len().await
    }
}
