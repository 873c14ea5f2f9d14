//! Memory vectors: what recall needs when an embedding endpoint is configured
//! (`[memory.embeddings]`). [`Memories`] embeds through a [`MemoryEmbedder`] the binary
//! provides (this crate knows no vendor); the store keeps one vector per memory in the
//! configured space and the queue of memories waiting for one; here a quantised copy of each
//! agent's vectors is kept in memory ([`VectorIndex`]: one sign bit a component, loaded lazily,
//! refreshed by `seq`), which nominates nearest neighbours by Hamming distance for exact cosine
//! rescoring.
//!
//! Invariants:
//! - Embedding never loses a memory: the store commits the memory with a queue row in the same
//!   transaction; the vector is written later, and only if the memory's content is still what
//!   was embedded. A failure leaves the row, with the reason and a later `next_attempt_at`
//!   (doubling from `retry_ms` up to `max_retry_ms`).
//! - A change of space (model or dimensions) deletes the old space's vectors and queues every
//!   active memory when the embedder is attached ([`Memories::with_embedder`]).
//! - An endpoint that failed (unreachable, timed out, 5xx, refused key) is not asked again
//!   before `retry_ms` has passed (then twice that, …): recall answers from full text at once
//!   meanwhile, and the change of state is logged once each way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use wright_core::{AgentId, EmbedPurpose};
use wright_store::{MemoryEmbeddingsConfig, MemoryVector, QueuedMemory, StoreError};

use crate::Memories;

/// Why texts got no vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedFailure {
    /// The endpoint could not answer: unreachable, timed out, failing, refusing the key, rate
    /// limited, misconfigured. Everything waits until it is back.
    Unavailable(String),
    /// The endpoint refused these texts (too long, invalid): the same texts would be refused
    /// again, others may pass.
    Refused(String),
}

impl EmbedFailure {
    pub fn message(&self) -> &str {
        match self {
            EmbedFailure::Unavailable(message) | EmbedFailure::Refused(message) => message,
        }
    }
}

/// The future an embedder answers with.
pub type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Vec<f32>>, EmbedFailure>> + Send + 'a>>;

/// Texts to vectors: the binary's adapter over an embedding endpoint (or, in benchmarks, a
/// function). One vector per text, in order, all of one length.
pub trait MemoryEmbedder: Send + Sync {
    fn embed<'a>(&'a self, texts: &'a [String], purpose: EmbedPurpose) -> EmbedFuture<'a>;
}

/// Whether the endpoint is believed to answer. Times are the store clock's.
#[derive(Debug, Default)]
struct Health {
    /// While set and in the future, nobody asks the endpoint.
    down_until: Option<i64>,
    /// Failures in a row, for the doubling wait.
    failures: u32,
}

/// The embedder attached to a store, its health and the per-agent indexes. Shared by the
/// store's clones.
pub(crate) struct Embeddings {
    embedder: Arc<dyn MemoryEmbedder>,
    pub(crate) config: MemoryEmbeddingsConfig,
    pub(crate) space: String,
    /// Held only for a read or write of the fields, never across an await.
    health: std::sync::Mutex<Health>,
    /// One index per agent, created on its first hybrid recall. The inner lock is held across
    /// the refresh's query, so it is tokio's; the map's only around lookups.
    indexes: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<VectorIndex>>>>,
    /// Set while a background drain started by a recall runs, so recalls start at most one.
    draining: AtomicBool,
    /// Counts the batches of vectors this process wrote: an index refreshes when it changed.
    written: AtomicU64,
    /// Whether the queue may hold something (set when this process queues or postpones a
    /// memory, cleared when a drain finds nothing): a recall looks at the queue only then.
    maybe_queued: AtomicBool,
}

impl std::fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embeddings").field("space", &self.space).finish_non_exhaustive()
    }
}

impl Embeddings {
    /// Whether the endpoint may be asked now.
    pub(crate) fn available(&self, now: i64) -> bool {
        let health = self.health.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        health.down_until.is_none_or(|until| now >= until)
    }

    fn succeeded(&self) {
        let mut health = self.health.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if health.down_until.take().is_some() || health.failures > 0 {
            tracing::info!(space = %self.space, "the embedding endpoint answers again: recall ranks by full text and vectors");
        }
        health.failures = 0;
    }

    fn failed(&self, now: i64, message: &str) {
        let mut health = self.health.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        health.failures = health.failures.saturating_add(1);
        let wait = self.config.backoff_ms(health.failures);
        let was_up = health.down_until.is_none();
        health.down_until = Some(now.saturating_add(wait));
        if was_up {
            tracing::warn!(space = %self.space, error = %message, retry_in_ms = wait,
                "the embedding endpoint failed: recall uses full text only and memories wait to be embedded until it answers");
        } else {
            tracing::debug!(space = %self.space, error = %message, retry_in_ms = wait, "the embedding endpoint failed again");
        }
    }

    /// Embeds `texts`, within `timeout`, keeping the endpoint's health.
    pub(crate) async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
        timeout: Duration,
        now: i64,
    ) -> Result<Vec<Vec<f32>>, EmbedFailure> {
        let outcome = match tokio::time::timeout(timeout, self.embedder.embed(texts, purpose)).await {
            Ok(Ok(vectors)) if vectors.len() != texts.len() => Err(EmbedFailure::Unavailable(format!(
                "{} texts sent, {} vectors answered",
                texts.len(),
                vectors.len()
            ))),
            Ok(outcome) => outcome,
            Err(_) => Err(EmbedFailure::Unavailable(format!("no answer within {} ms", timeout.as_millis()))),
        };
        match &outcome {
            Ok(_) | Err(EmbedFailure::Refused(_)) => self.succeeded(),
            Err(EmbedFailure::Unavailable(message)) => self.failed(now, message),
        }
        outcome
    }

    fn index(&self, agent: &AgentId) -> Arc<tokio::sync::Mutex<VectorIndex>> {
        let mut indexes = self.indexes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(indexes.entry(agent.as_str().to_owned()).or_insert_with(|| {
            Arc::new(tokio::sync::Mutex::new(VectorIndex { space: self.space.clone(), ..VectorIndex::default() }))
        }))
    }
}

/// A vector scaled to length 1 (a zero vector stays zero).
pub(crate) fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        for value in &mut vector {
            *value /= norm;
        }
    }
    vector
}

/// The sign bits of a vector, 64 components a word.
pub(crate) fn sign_bits(vector: &[f32]) -> Vec<u64> {
    let mut words = vec![0u64; vector.len().div_ceil(64)];
    for (index, value) in vector.iter().enumerate() {
        if *value > 0.0 {
            words[index / 64] |= 1 << (index % 64);
        }
    }
    words
}

/// Cosine similarity of two vectors of length 1.
pub(crate) fn dot(left: &[f32], right: &[f32]) -> f32 {
    left.iter().zip(right).map(|(a, b)| a * b).sum()
}

/// Rows of sign bits read per query when an index loads.
const LOAD_CHUNK: usize = 10_000;

/// How long an index trusts that only this process writes vectors.
const REFRESH_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// One agent's vectors in one space, quantised to sign bits: 100,000 vectors of 1,536
/// dimensions take 19 MB, and a query's Hamming distance to all of them is a few hundred
/// thousand popcounts. Only a nomination: the candidates are rescored exactly from SQLite.
#[derive(Debug, Default)]
pub(crate) struct VectorIndex {
    space: String,
    /// Words of bits per vector; fixed by the first vector loaded.
    words: usize,
    /// The highest `seq` loaded: the next refresh reads only newer rows.
    seen: i64,
    /// When it was last refreshed, and the store's vector-write count then.
    loaded_at: Option<std::time::Instant>,
    generation: u64,
    ids: Vec<i64>,
    bits: Vec<u64>,
    slots: HashMap<i64, usize>,
}

impl VectorIndex {
    /// Loads the vectors written since the last refresh, when this process wrote some since
    /// (`generation`) or `REFRESH_AFTER` has passed (another process may have: vectors are
    /// written only by a process with an embedder, normally one server).
    async fn refresh(
        &mut self,
        store: &wright_store::Store,
        agent: &AgentId,
        generation: u64,
    ) -> Result<(), StoreError> {
        if self.loaded_at.is_some_and(|at| at.elapsed() < REFRESH_AFTER) && self.generation == generation {
            return Ok(());
        }
        self.generation = generation;
        self.loaded_at = Some(std::time::Instant::now());
        loop {
            let page = store.memory_vector_bits(&self.space, agent, self.seen, LOAD_CHUNK).await?;
            let Some(newest) = page.newest else { return Ok(()) };
            self.seen = newest;
            for (id, words) in &page.entries {
                self.put(*id, words);
            }
            if page.rows < LOAD_CHUNK {
                return Ok(());
            }
        }
    }

    fn put(&mut self, id: i64, words: &[u64]) {
        if self.words == 0 {
            self.words = words.len();
        }
        // A vector of another length (the endpoint changed its dimensions) cannot be
        // compared; exact rescoring ignores it too.
        if words.len() != self.words {
            return;
        }
        match self.slots.get(&id) {
            Some(&slot) => self.bits[slot * self.words..(slot + 1) * self.words].copy_from_slice(words),
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                self.bits.extend_from_slice(words);
            }
        }
    }

    /// The ids of the `count` vectors nearest to `query` by Hamming distance of the signs.
    fn nearest(&self, query: &[u64], count: usize) -> Vec<i64> {
        if self.ids.is_empty() || query.len() != self.words || count == 0 {
            return Vec::new();
        }
        let distances: Vec<u32> = self
            .bits
            .chunks_exact(self.words)
            .map(|words| words.iter().zip(query).map(|(a, b)| (a ^ b).count_ones()).sum())
            .collect();
        if distances.len() <= count {
            return self.ids.clone();
        }
        // A counting pass finds the distance the `count`-th nearest has; ties at it are taken
        // in index order until `count` are chosen.
        let mut histogram = vec![0usize; self.words * 64 + 1];
        for distance in &distances {
            histogram[*distance as usize] += 1;
        }
        let mut threshold = 0;
        let mut below = 0;
        for (distance, number) in histogram.iter().enumerate() {
            if below + number >= count {
                threshold = distance as u32;
                break;
            }
            below += number;
        }
        let mut at_threshold = count - below;
        let mut chosen = Vec::with_capacity(count);
        for (slot, distance) in distances.iter().enumerate() {
            if *distance < threshold {
                chosen.push(self.ids[slot]);
            } else if *distance == threshold && at_threshold > 0 {
                at_threshold -= 1;
                chosen.push(self.ids[slot]);
            }
        }
        chosen
    }
}

/// How many memories a drain embedded and how many still wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbedReport {
    pub embedded: usize,
    pub failed: usize,
}

impl Memories {
    /// The same memories embedded through `embedder`, in the space of `[memory.embeddings]`
    /// (which must be set). Vectors of any other space are deleted, and every active memory
    /// without a vector in this space is queued; queued memories are tried again at once (a
    /// restart is a retry).
    pub async fn with_embedder(mut self, embedder: Arc<dyn MemoryEmbedder>) -> Result<Self, StoreError> {
        let Some(config) = self.store.memory_config().embeddings.clone() else {
            return Err(StoreError::InvalidEdit("[memory.embeddings] is not configured".into()));
        };
        let space = config.space();
        if self.store.reset_embedding_space(&space).await? {
            tracing::info!(%space, "the embedding space changed: the old vectors are deleted and every memory is embedded again");
        }
        self.embeddings = Some(Arc::new(Embeddings {
            embedder,
            config,
            space,
            health: std::sync::Mutex::new(Health::default()),
            indexes: std::sync::Mutex::new(HashMap::new()),
            draining: AtomicBool::new(false),
            written: AtomicU64::new(0),
            // Memories may have been queued by another process, or before the start.
            maybe_queued: AtomicBool::new(true),
        }));
        Ok(self)
    }

    /// Whether an embedder is attached.
    pub fn embeds(&self) -> bool {
        self.embeddings.is_some()
    }

    /// Embeds queued memories whose time has come: of `agent` only, or of every agent; at most
    /// `[memory.embeddings] batch_size` per request, until none is due or the endpoint fails.
    /// Nothing happens while the endpoint is believed down.
    pub async fn embed_pending(&self, agent: Option<&AgentId>) -> Result<EmbedReport, StoreError> {
        let mut report = EmbedReport::default();
        let Some(embeddings) = self.embeddings.clone() else { return Ok(report) };
        let timeout = Duration::from_millis(embeddings.config.timeout_ms);
        loop {
            let round = self.embed_queued(&embeddings, agent, None, timeout).await?;
            report.embedded += round.embedded;
            report.failed += round.failed;
            if round.embedded == 0 {
                return Ok(report);
            }
        }
    }

    /// Right after a store, edit or restore: embeds these memories now (those queued), within
    /// the query timeout. A failure leaves them queued; it is never the caller's error.
    pub(crate) async fn embed_now(&self, ids: &[i64]) {
        let Some(embeddings) = self.embeddings.clone() else { return };
        embeddings.maybe_queued.store(true, Ordering::SeqCst);
        let timeout = Duration::from_millis(embeddings.config.query_timeout_ms);
        if let Err(error) = self.embed_queued(&embeddings, None, Some(ids), timeout).await {
            tracing::warn!(%error, "memories could not be embedded; they stay queued");
        }
    }

    /// Starts a drain of `agent`'s due queue in the background when there is one (a recall's
    /// way to retry without making the model wait).
    pub(crate) async fn embed_due_in_background(&self, agent: &AgentId) -> Result<(), StoreError> {
        let Some(embeddings) = self.embeddings.clone() else { return Ok(()) };
        let now = self.store.clock().now_ms();
        if !embeddings.available(now) || !embeddings.maybe_queued.load(Ordering::SeqCst) {
            return Ok(());
        }
        let (next, any) = self.store.embedding_queue_next(agent).await?;
        if !any {
            embeddings.maybe_queued.store(false, Ordering::SeqCst);
        }
        if next.is_none_or(|next| next > now) || embeddings.draining.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let memories = self.clone();
        let agent = agent.clone();
        // Ends when the agent's due queue is drained or the endpoint fails; the flag is
        // cleared however it ends.
        tokio::spawn(async move {
            struct Clear(Arc<Embeddings>);
            impl Drop for Clear {
                fn drop(&mut self) {
                    self.0.draining.store(false, Ordering::SeqCst);
                }
            }
            let _clear = Clear(embeddings);
            if let Err(error) = memories.embed_pending(Some(&agent)).await {
                tracing::warn!(%error, %agent, "queued memories could not be embedded");
            }
        });
        Ok(())
    }

    /// One batch: the due queue rows (of `agent`, or these `ids`), embedded and written.
    async fn embed_queued(
        &self,
        embeddings: &Embeddings,
        agent: Option<&AgentId>,
        ids: Option<&[i64]>,
        timeout: Duration,
    ) -> Result<EmbedReport, StoreError> {
        let mut report = EmbedReport::default();
        let now = self.store.clock().now_ms();
        if !embeddings.available(now) {
            return Ok(report);
        }
        let queued = self.store.due_embeddings(now, agent, ids, embeddings.config.batch_size).await?;
        if queued.is_empty() {
            // Nothing due; anything still queued waits for its time, and the sweep has it.
            if ids.is_none() && self.store.embedding_queue_len().await? == 0 {
                embeddings.maybe_queued.store(false, Ordering::SeqCst);
            }
            return Ok(report);
        }
        let texts: Vec<String> = queued.iter().map(|memory| memory.content.clone()).collect();
        match embeddings.embed(&texts, EmbedPurpose::Document, timeout, now).await {
            Ok(vectors) => {
                report.embedded += self.write_vectors(embeddings, &queued, vectors).await?;
            }
            Err(EmbedFailure::Refused(message)) if queued.len() > 1 => {
                // One text spoils the batch: each alone finds which.
                tracing::debug!(error = %message, "a batch was refused; embedding its memories one by one");
                for memory in &queued {
                    let text = std::slice::from_ref(&memory.content);
                    match embeddings.embed(text, EmbedPurpose::Document, timeout, now).await {
                        Ok(vectors) => {
                            report.embedded +=
                                self.write_vectors(embeddings, std::slice::from_ref(memory), vectors).await?
                        }
                        Err(failure) => {
                            report.failed += 1;
                            self.postpone(embeddings, std::slice::from_ref(memory), failure.message()).await?;
                            if matches!(failure, EmbedFailure::Unavailable(_)) {
                                break;
                            }
                        }
                    }
                }
            }
            Err(failure) => {
                report.failed += queued.len();
                if let EmbedFailure::Refused(message) = &failure {
                    tracing::warn!(memory = queued[0].id, error = %message, "the embedding endpoint refused a memory; it is tried again later");
                }
                self.postpone(embeddings, &queued, failure.message()).await?;
            }
        }
        Ok(report)
    }

    /// Writes the vectors of queued memories (scaled to length 1, with their sign bits); an
    /// unusable vector (empty, not numbers) leaves its memory queued for later. Returns how
    /// many were written.
    async fn write_vectors(
        &self,
        embeddings: &Embeddings,
        queued: &[QueuedMemory],
        vectors: Vec<Vec<f32>>,
    ) -> Result<usize, StoreError> {
        let mut usable = Vec::with_capacity(queued.len());
        let mut unusable = Vec::new();
        for (memory, vector) in queued.iter().zip(vectors) {
            if vector.is_empty() || vector.iter().any(|value| !value.is_finite()) {
                unusable.push(memory.clone());
                continue;
            }
            let vector = normalized(vector);
            let bits = sign_bits(&vector);
            usable.push(MemoryVector { memory, vector, bits });
        }
        let written = self.store.write_memory_vectors(&embeddings.space, &usable).await?;
        embeddings.written.fetch_add(1, Ordering::SeqCst);
        if !unusable.is_empty() {
            self.postpone(embeddings, &unusable, "the endpoint answered an empty vector or one that is not numbers")
                .await?;
        }
        Ok(written)
    }

    /// Leaves queued memories for later, saying why: each waits `retry_ms`, doubling per attempt.
    async fn postpone(&self, embeddings: &Embeddings, queued: &[QueuedMemory], error: &str) -> Result<(), StoreError> {
        embeddings.maybe_queued.store(true, Ordering::SeqCst);
        let now = self.store.clock().now_ms();
        let postponed: Vec<(i64, i64, i64)> = queued
            .iter()
            .map(|memory| {
                let attempts = u32::try_from(memory.attempts).unwrap_or(u32::MAX).saturating_add(1);
                (memory.id, i64::from(attempts), now.saturating_add(embeddings.config.backoff_ms(attempts)))
            })
            .collect();
        self.store.postpone_embeddings(&postponed, error).await
    }

    /// The query's vector, or None when recall must do without (no embedder, endpoint down
    /// or failing now: logged by the health keeping).
    pub(crate) async fn query_vector(&self, query: &str) -> Option<Vec<f32>> {
        let embeddings = self.embeddings.as_ref()?;
        let now = self.store.clock().now_ms();
        if !embeddings.available(now) {
            return None;
        }
        let timeout = Duration::from_millis(embeddings.config.query_timeout_ms);
        match embeddings.embed(&[query.to_owned()], EmbedPurpose::Query, timeout, now).await {
            Ok(mut vectors) => vectors.pop().filter(|vector| !vector.is_empty()).map(normalized),
            Err(failure) => {
                tracing::debug!(error = %failure.message(), "no query vector: recall uses full text only");
                None
            }
        }
    }

    /// The agent's nearest neighbours of `query` by the quantised index (refreshed first).
    pub(crate) async fn nominate(&self, agent: &AgentId, query: &[f32], count: usize) -> Result<Vec<i64>, StoreError> {
        let Some(embeddings) = self.embeddings.as_ref() else { return Ok(Vec::new()) };
        let index = embeddings.index(agent);
        let mut index = index.lock().await;
        index.refresh(&self.store, agent, embeddings.written.load(Ordering::SeqCst)).await?;
        Ok(index.nearest(&sign_bits(query), count))
    }
}

#[cfg(test)]
mod tests;
