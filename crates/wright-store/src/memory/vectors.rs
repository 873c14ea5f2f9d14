//! Memory vectors: what recall needs when an embedding endpoint is configured
//! (`[memory.embeddings]`). The store embeds through a [`MemoryEmbedder`] the binary provides
//! (the store knows no vendor), keeps one vector per memory in the configured space
//! (`memory_vectors`, little-endian f32, scaled to length 1) and a quantised copy of each in
//! memory per agent ([`VectorIndex`]: one sign bit a component, loaded lazily, refreshed by
//! `seq`), which nominates nearest neighbours by Hamming distance for exact cosine rescoring.
//!
//! Invariants:
//! - Embedding never loses a memory: the memory is committed first, with a queue row
//!   (`memory_embedding_queue`) in the same transaction; the vector is written later, and only
//!   if the memory's content is still what was embedded. A failure leaves the row, with the
//!   reason and a later `next_attempt_at` (doubling from `retry_ms` up to `max_retry_ms`).
//! - An edit of the content deletes the memory's vectors in the edit's transaction, so a stale
//!   vector is never used; a change of space (model or dimensions) deletes the old space's
//!   vectors and queues every active memory when the embedder is attached.
//! - An endpoint that failed (unreachable, timed out, 5xx, refused key) is not asked again
//!   before `retry_ms` has passed (then twice that, …): recall answers from full text at once
//!   meanwhile, and the change of state is logged once each way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::{AgentId, EmbedPurpose};

use crate::{Store, StoreError};

/// `[memory.embeddings]` in config.toml: the endpoint that embeds memories, and how its
/// vectors take part in recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryEmbeddingsConfig {
    /// The provider connection: an id from the Settings page, or one of the environment's
    /// (`env:openai`, `env:gemini`, `env:ollama`, `env:openai_compatible`). Its key is used.
    pub connection: String,
    /// The embedding model, e.g. `text-embedding-3-small`, `gemini-embedding-001`,
    /// `nomic-embed-text`.
    pub model: String,
    /// Ask the model for this many dimensions (models that can shorten their vectors).
    #[serde(default)]
    pub dimensions: Option<u32>,
    /// Longest wait for a recall's query vector, and for a memory's vector right after it is
    /// stored or edited; past it, recall answers from full text and the memory waits in the
    /// queue.
    #[serde(default = "default_query_timeout_ms")]
    pub query_timeout_ms: u64,
    /// Longest wait for one batch of queued memories.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Queued memories embedded per request.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// After a failure, the endpoint (or a memory it refused) is tried again after this long,
    /// then twice as long, up to `max_retry_ms`.
    #[serde(default = "default_retry_ms")]
    pub retry_ms: u64,
    #[serde(default = "default_max_retry_ms")]
    pub max_retry_ms: u64,
    /// Reciprocal rank fusion's constant: a memory's score is the sum of 1/(k + rank) over the
    /// full-text and the vector ranking. Smaller than the usual 60 because both lists are
    /// short and layer and recency weights follow; they should reorder near-ties, not overrule
    /// a clear difference in rank.
    #[serde(default = "default_rrf_k")]
    pub rrf_k: f64,
    /// Cosine similarity below which a memory is no vector match (its nearest neighbours are
    /// not all related). Depends on the model: OpenAI's are lower, nomic's higher.
    #[serde(default = "default_min_similarity")]
    pub min_similarity: f64,
    /// Nearest neighbours the vector index nominates (by the Hamming distance of their signs)
    /// for exact rescoring: reading their vectors is most of a hybrid recall's own time
    /// (64 × 1,536 dimensions is 400 KB).
    #[serde(default = "default_vector_candidates")]
    pub vector_candidates: usize,
}

fn default_query_timeout_ms() -> u64 {
    3_000
}
fn default_timeout_ms() -> u64 {
    30_000
}
fn default_batch_size() -> usize {
    64
}
fn default_retry_ms() -> u64 {
    30_000
}
fn default_max_retry_ms() -> u64 {
    3_600_000
}
fn default_rrf_k() -> f64 {
    20.0
}
fn default_min_similarity() -> f64 {
    0.25
}
fn default_vector_candidates() -> usize {
    64
}

impl MemoryEmbeddingsConfig {
    /// A config for `model` on `connection` with every other field at its default.
    pub fn new(connection: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            connection: connection.into(),
            model: model.into(),
            dimensions: None,
            query_timeout_ms: default_query_timeout_ms(),
            timeout_ms: default_timeout_ms(),
            batch_size: default_batch_size(),
            retry_ms: default_retry_ms(),
            max_retry_ms: default_max_retry_ms(),
            rrf_k: default_rrf_k(),
            min_similarity: default_min_similarity(),
            vector_candidates: default_vector_candidates(),
        }
    }

    /// The name vectors are stored under: the model, and the dimensions when asked for.
    pub fn space(&self) -> String {
        match self.dimensions {
            Some(dimensions) => format!("{}@{dimensions}", self.model),
            None => self.model.clone(),
        }
    }

    fn backoff_ms(&self, attempts: u32) -> i64 {
        let delay = self.retry_ms.saturating_mul(1u64 << attempts.saturating_sub(1).min(30));
        delay.min(self.max_retry_ms).min(i64::MAX as u64) as i64
    }
}

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

pub(crate) fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

pub(crate) fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])).collect()
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

fn bits_blob(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
}

/// Cosine similarity of two vectors of length 1.
pub(crate) fn dot(left: &[f32], right: &[f32]) -> f32 {
    left.iter().zip(right).map(|(a, b)| a * b).sum()
}

/// Rows of sign bits read per query when an index loads.
const LOAD_CHUNK: i64 = 10_000;

/// How long an index trusts that only this process writes vectors.
const REFRESH_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// Little-endian u64 words from the hex of their bytes (as SQLite's `hex()` writes them).
pub(crate) fn words_of_hex(hex: &str) -> Option<Vec<u64>> {
    let bytes = hex.as_bytes();
    if !bytes.len().is_multiple_of(16) {
        return None;
    }
    let nibble = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    bytes
        .chunks_exact(16)
        .map(|word| {
            let mut le = [0u8; 8];
            for (index, pair) in word.chunks_exact(2).enumerate() {
                le[index] = nibble(pair[0])? << 4 | nibble(pair[1])?;
            }
            Some(u64::from_le_bytes(le))
        })
        .collect()
}

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
    async fn refresh(&mut self, store: &Store, agent: &AgentId, generation: u64) -> Result<(), StoreError> {
        if self.loaded_at.is_some_and(|at| at.elapsed() < REFRESH_AFTER) && self.generation == generation {
            return Ok(());
        }
        self.generation = generation;
        self.loaded_at = Some(std::time::Instant::now());
        loop {
            // Thousands of rows at a time as one text row each (`id:hex,…`): rows cross from
            // SQLite's thread one by one, and 100,000 of them took a second.
            let (newest, listed): (Option<i64>, Option<String>) = sqlx::query_as(
                "SELECT max(seq), group_concat(memory_id || ':' || hex(bits)) FROM (SELECT seq, memory_id, bits \
                 FROM memory_vectors WHERE space = ? AND agent_id = ? AND seq > ? ORDER BY seq LIMIT ?)",
            )
            .bind(&self.space)
            .bind(agent.as_str())
            .bind(self.seen)
            .bind(LOAD_CHUNK)
            .fetch_one(&store.reader)
            .await?;
            let Some(newest) = newest else { return Ok(()) };
            self.seen = newest;
            let mut loaded = 0;
            for entry in listed.as_deref().unwrap_or_default().split(',') {
                loaded += 1;
                let Some((id, hex)) = entry.split_once(':') else { continue };
                let (Ok(id), Some(words)) = (id.parse::<i64>(), words_of_hex(hex)) else { continue };
                self.put(id, &words);
            }
            if loaded < LOAD_CHUNK {
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

impl Store {
    /// The same store embedding memories through `embedder`, in the space of
    /// `[memory.embeddings]` (which must be set). Vectors of any other space are deleted, and
    /// every active memory without a vector in this space is queued; queued memories are
    /// tried again at once (a restart is a retry).
    pub async fn with_embedder(mut self, embedder: Arc<dyn MemoryEmbedder>) -> Result<Self, StoreError> {
        let Some(config) = self.memory_config.embeddings.clone() else {
            return Err(StoreError::InvalidEdit("[memory.embeddings] is not configured".into()));
        };
        let space = config.space();
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let other_spaces: Vec<(String,)> = sqlx::query_as("SELECT DISTINCT space FROM memory_vectors WHERE space <> ?")
            .bind(&space)
            .fetch_all(&mut *transaction)
            .await?;
        for (other,) in &other_spaces {
            sqlx::query("DELETE FROM memory_vectors WHERE space = ?").bind(other).execute(&mut *transaction).await?;
        }
        sqlx::query(
            "INSERT OR IGNORE INTO memory_embedding_queue (memory_id, agent_id, attempts, next_attempt_at) \
             SELECT m.id, m.agent_id, 0, ? FROM memories m WHERE m.archived_at IS NULL \
             AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.space = ?)",
        )
        .bind(now)
        .bind(&space)
        .execute(&mut *transaction)
        .await?;
        sqlx::query("UPDATE memory_embedding_queue SET attempts = 0, next_attempt_at = ?")
            .bind(now)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        if !other_spaces.is_empty() {
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
    pub fn embeds_memories(&self) -> bool {
        self.embeddings.is_some()
    }

    /// How many memories wait for a vector (of all agents).
    pub async fn unembedded_memories(&self) -> Result<i64, StoreError> {
        let (count,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM memory_embedding_queue").fetch_one(&self.reader).await?;
        Ok(count)
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

    /// Right after a store, edit or restore: embeds these memories now, within the query
    /// timeout. A failure leaves them queued; it is never the caller's error.
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
        let now = self.clock.now_ms();
        if !embeddings.available(now) || !embeddings.maybe_queued.load(Ordering::SeqCst) {
            return Ok(());
        }
        let (next, any): (Option<i64>, bool) = sqlx::query_as(
            "SELECT (SELECT min(next_attempt_at) FROM memory_embedding_queue WHERE agent_id = ?), \
             EXISTS (SELECT 1 FROM memory_embedding_queue)",
        )
        .bind(agent.as_str())
        .fetch_one(&self.reader)
        .await?;
        if !any {
            embeddings.maybe_queued.store(false, Ordering::SeqCst);
        }
        if next.is_none_or(|next| next > now) || embeddings.draining.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let store = self.clone();
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
            if let Err(error) = store.embed_pending(Some(&agent)).await {
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
        let now = self.clock.now_ms();
        if !embeddings.available(now) {
            return Ok(report);
        }
        let mut sql = "SELECT q.memory_id, q.attempts, m.content FROM memory_embedding_queue q \
                       CROSS JOIN memories m ON m.id = q.memory_id WHERE q.next_attempt_at <= ?"
            .to_owned();
        if agent.is_some() {
            sql.push_str(" AND q.agent_id = ?");
        }
        if ids.is_some() {
            sql.push_str(" AND q.memory_id IN (SELECT value FROM json_each(?))");
        }
        sql.push_str(" ORDER BY q.next_attempt_at, q.memory_id LIMIT ?");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(now);
        if let Some(agent) = agent {
            query = query.bind(agent.as_str());
        }
        if let Some(ids) = ids {
            query = query.bind(serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()));
        }
        let rows = query.bind(embeddings.config.batch_size.max(1) as i64).fetch_all(&self.reader).await?;
        let mut queued = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get("memory_id")?;
            let attempts: i64 = row.try_get("attempts")?;
            let content: String = row.try_get("content")?;
            queued.push((id, attempts, content));
        }
        if queued.is_empty() {
            if ids.is_none() {
                // Nothing due; anything still queued waits for its time, and the sweep has it.
                let (left,): (i64,) =
                    sqlx::query_as("SELECT count(*) FROM memory_embedding_queue").fetch_one(&self.reader).await?;
                if left == 0 {
                    embeddings.maybe_queued.store(false, Ordering::SeqCst);
                }
            }
            return Ok(report);
        }
        let texts: Vec<String> = queued.iter().map(|(_, _, content)| content.clone()).collect();
        match embeddings.embed(&texts, EmbedPurpose::Document, timeout, now).await {
            Ok(vectors) => {
                report.embedded += self.write_vectors(embeddings, &queued, vectors).await?;
            }
            Err(EmbedFailure::Refused(message)) if queued.len() > 1 => {
                // One text spoils the batch: each alone finds which.
                tracing::debug!(error = %message, "a batch was refused; embedding its memories one by one");
                for item in &queued {
                    match embeddings.embed(std::slice::from_ref(&item.2), EmbedPurpose::Document, timeout, now).await {
                        Ok(vectors) => {
                            report.embedded +=
                                self.write_vectors(embeddings, std::slice::from_ref(item), vectors).await?
                        }
                        Err(failure) => {
                            report.failed += 1;
                            self.postpone(embeddings, std::slice::from_ref(item), failure.message()).await?;
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
                    tracing::warn!(memory = queued[0].0, error = %message, "the embedding endpoint refused a memory; it is tried again later");
                }
                self.postpone(embeddings, &queued, failure.message()).await?;
            }
        }
        Ok(report)
    }

    /// Writes vectors for queued memories whose content is still what was embedded, and takes
    /// them off the queue. Returns how many were written.
    async fn write_vectors(
        &self,
        embeddings: &Embeddings,
        queued: &[(i64, i64, String)],
        vectors: Vec<Vec<f32>>,
    ) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let mut written = 0;
        let mut transaction = self.begin_write().await?;
        let mut unusable = Vec::new();
        for (item, vector) in queued.iter().zip(vectors) {
            let (id, _, content) = item;
            if vector.is_empty() || vector.iter().any(|value| !value.is_finite()) {
                unusable.push(item.clone());
                continue;
            }
            let vector = normalized(vector);
            let current: Option<(String,)> =
                sqlx::query_as("SELECT agent_id FROM memories WHERE id = ? AND content = ?")
                    .bind(id)
                    .bind(content)
                    .fetch_optional(&mut *transaction)
                    .await?;
            // Edited since it was read: its queue row was renewed by the edit, and the next
            // drain embeds the new content.
            let Some((agent,)) = current else { continue };
            sqlx::query("DELETE FROM memory_vectors WHERE memory_id = ? AND space = ?")
                .bind(id)
                .bind(&embeddings.space)
                .execute(&mut *transaction)
                .await?;
            sqlx::query(
                "INSERT INTO memory_vectors (memory_id, space, agent_id, dimensions, bits, vector, embedded_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(&embeddings.space)
            .bind(&agent)
            .bind(vector.len() as i64)
            .bind(bits_blob(&sign_bits(&vector)))
            .bind(to_blob(&vector))
            .bind(now)
            .execute(&mut *transaction)
            .await?;
            sqlx::query("DELETE FROM memory_embedding_queue WHERE memory_id = ?")
                .bind(id)
                .execute(&mut *transaction)
                .await?;
            written += 1;
        }
        transaction.commit().await?;
        embeddings.written.fetch_add(1, Ordering::SeqCst);
        if !unusable.is_empty() {
            self.postpone(embeddings, &unusable, "the endpoint answered an empty vector or one that is not numbers")
                .await?;
        }
        Ok(written)
    }

    /// Leaves queued memories for later, saying why.
    async fn postpone(
        &self,
        embeddings: &Embeddings,
        queued: &[(i64, i64, String)],
        error: &str,
    ) -> Result<(), StoreError> {
        embeddings.maybe_queued.store(true, Ordering::SeqCst);
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        for (id, attempts, _) in queued {
            let attempts = u32::try_from(*attempts).unwrap_or(u32::MAX).saturating_add(1);
            sqlx::query(
                "UPDATE memory_embedding_queue SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE memory_id = ?",
            )
            .bind(i64::from(attempts))
            .bind(now.saturating_add(embeddings.config.backoff_ms(attempts)))
            .bind(error.chars().take(500).collect::<String>())
            .bind(id)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The query's vector, or None when recall must do without (no embedder, endpoint down
    /// or failing now: logged by the health keeping).
    pub(crate) async fn query_vector(&self, query: &str) -> Option<Vec<f32>> {
        let embeddings = self.embeddings.as_ref()?;
        let now = self.clock.now_ms();
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
        index.refresh(self, agent, embeddings.written.load(Ordering::SeqCst)).await?;
        Ok(index.nearest(&sign_bits(query), count))
    }
}

#[cfg(test)]
mod tests;
