//! The rows behind memory vectors (`[memory.embeddings]`): one vector per memory and space in
//! `memory_vectors` (little-endian f32, with its sign bits beside it for the index above the
//! store), and the queue of memories waiting for one (`memory_embedding_queue`). Embedding,
//! the index and recall's fusion live above the store (`wright-memory`); here is only SQL.
//!
//! Invariants:
//! - A vector is written only if the memory's content is still what was embedded; a memory
//!   leaves the queue in the transaction that writes its vector.
//! - A change of space deletes the old space's vectors and queues every active memory
//!   without a vector in the new one ([`Store::reset_embedding_space`]).

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::AgentId;

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

    /// The wait before try number `attempts + 1`: `retry_ms`, doubling, at most `max_retry_ms`.
    pub fn backoff_ms(&self, attempts: u32) -> i64 {
        let delay = self.retry_ms.saturating_mul(1u64 << attempts.saturating_sub(1).min(30));
        delay.min(self.max_retry_ms).min(i64::MAX as u64) as i64
    }
}

/// A memory waiting for a vector: its content as it was read, and the attempts so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMemory {
    pub id: i64,
    pub attempts: i64,
    pub content: String,
}

/// A vector for a queued memory, scaled to length 1, with the sign bits the index reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryVector<'a> {
    pub memory: &'a QueuedMemory,
    pub vector: Vec<f32>,
    pub bits: Vec<u64>,
}

/// A page of the sign bits of one agent's vectors, in the order they were written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorBits {
    /// The highest `seq` on the page (None: nothing newer than asked).
    pub newest: Option<i64>,
    /// How many rows the page held (a row that did not decode is counted, not returned).
    pub rows: usize,
    pub entries: Vec<(i64, Vec<u64>)>,
}

fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])).collect()
}

fn bits_blob(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
}

/// Little-endian u64 words from the hex of their bytes (as SQLite's `hex()` writes them).
fn words_of_hex(hex: &str) -> Option<Vec<u64>> {
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

impl Store {
    /// Makes `space` the one vectors are kept in: other spaces' vectors are deleted, every
    /// active memory without a vector in it is queued, and every queued memory is due now (a
    /// restart is a retry). True when another space's vectors were deleted.
    pub async fn reset_embedding_space(&self, space: &str) -> Result<bool, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let other_spaces: Vec<(String,)> = sqlx::query_as("SELECT DISTINCT space FROM memory_vectors WHERE space <> ?")
            .bind(space)
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
        .bind(space)
        .execute(&mut *transaction)
        .await?;
        sqlx::query("UPDATE memory_embedding_queue SET attempts = 0, next_attempt_at = ?")
            .bind(now)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(!other_spaces.is_empty())
    }

    /// How many memories wait for a vector (of all agents).
    pub async fn embedding_queue_len(&self) -> Result<i64, StoreError> {
        let (count,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM memory_embedding_queue").fetch_one(&self.reader).await?;
        Ok(count)
    }

    /// When `agent`'s earliest queued memory is due (None: none queued), and whether any
    /// agent has one queued.
    pub async fn embedding_queue_next(&self, agent: &AgentId) -> Result<(Option<i64>, bool), StoreError> {
        Ok(sqlx::query_as(
            "SELECT (SELECT min(next_attempt_at) FROM memory_embedding_queue WHERE agent_id = ?), \
             EXISTS (SELECT 1 FROM memory_embedding_queue)",
        )
        .bind(agent.as_str())
        .fetch_one(&self.reader)
        .await?)
    }

    /// Queued memories due by `now` — of `agent` only, or these `ids` only, when given —
    /// earliest first, at most `limit`.
    pub async fn due_embeddings(
        &self,
        now: i64,
        agent: Option<&AgentId>,
        ids: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<QueuedMemory>, StoreError> {
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
        let rows = query.bind(limit.max(1) as i64).fetch_all(&self.reader).await?;
        rows.iter()
            .map(|row| {
                Ok(QueuedMemory {
                    id: row.try_get("memory_id")?,
                    attempts: row.try_get("attempts")?,
                    content: row.try_get("content")?,
                })
            })
            .collect()
    }

    /// Writes vectors in `space` for queued memories whose content is still what was embedded,
    /// and takes them off the queue, in one transaction. Returns how many were written; a
    /// memory edited since it was read keeps its (renewed) queue row.
    pub async fn write_memory_vectors(&self, space: &str, vectors: &[MemoryVector<'_>]) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let mut written = 0;
        let mut transaction = self.begin_write().await?;
        for MemoryVector { memory, vector, bits } in vectors {
            let current: Option<(String,)> =
                sqlx::query_as("SELECT agent_id FROM memories WHERE id = ? AND content = ?")
                    .bind(memory.id)
                    .bind(&memory.content)
                    .fetch_optional(&mut *transaction)
                    .await?;
            let Some((agent,)) = current else { continue };
            sqlx::query("DELETE FROM memory_vectors WHERE memory_id = ? AND space = ?")
                .bind(memory.id)
                .bind(space)
                .execute(&mut *transaction)
                .await?;
            sqlx::query(
                "INSERT INTO memory_vectors (memory_id, space, agent_id, dimensions, bits, vector, embedded_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(memory.id)
            .bind(space)
            .bind(&agent)
            .bind(vector.len() as i64)
            .bind(bits_blob(bits))
            .bind(to_blob(vector))
            .bind(now)
            .execute(&mut *transaction)
            .await?;
            sqlx::query("DELETE FROM memory_embedding_queue WHERE memory_id = ?")
                .bind(memory.id)
                .execute(&mut *transaction)
                .await?;
            written += 1;
        }
        transaction.commit().await?;
        Ok(written)
    }

    /// Leaves queued memories for later: each `(memory, attempts, next attempt at)`, with why.
    pub async fn postpone_embeddings(&self, postponed: &[(i64, i64, i64)], error: &str) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        for (id, attempts, next_attempt_at) in postponed {
            sqlx::query(
                "UPDATE memory_embedding_queue SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE memory_id = ?",
            )
            .bind(attempts)
            .bind(next_attempt_at)
            .bind(error.chars().take(500).collect::<String>())
            .bind(id)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The stored vectors in `space` of these memories (those that have one).
    pub async fn memory_vectors(&self, ids: &[i64], space: &str) -> Result<Vec<(i64, Vec<f32>)>, StoreError> {
        // Rows of blobs: a vector is 1.5–6 KB, and as hex inside JSON it cost more to write
        // and read than a row crossing from SQLite's thread.
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
            "SELECT v.memory_id, v.vector FROM json_each(?) AS j CROSS JOIN memory_vectors v \
             ON v.memory_id = j.value AND v.space = ?",
        )
        .bind(serde_json::to_string(ids).unwrap_or_default())
        .bind(space)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(|(id, blob)| (id, from_blob(&blob))).collect())
    }

    /// The sign bits of `agent`'s vectors in `space` written after `after_seq`, at most
    /// `limit` rows, in the order written.
    pub async fn memory_vector_bits(
        &self,
        space: &str,
        agent: &AgentId,
        after_seq: i64,
        limit: usize,
    ) -> Result<VectorBits, StoreError> {
        // Thousands of rows at a time as one text row each (`id:hex,…`): rows cross from
        // SQLite's thread one by one, and 100,000 of them took a second.
        let (newest, listed): (Option<i64>, Option<String>) = sqlx::query_as(
            "SELECT max(seq), group_concat(memory_id || ':' || hex(bits)) FROM (SELECT seq, memory_id, bits \
             FROM memory_vectors WHERE space = ? AND agent_id = ? AND seq > ? ORDER BY seq LIMIT ?)",
        )
        .bind(space)
        .bind(agent.as_str())
        .bind(after_seq)
        .bind(limit as i64)
        .fetch_one(&self.reader)
        .await?;
        let mut page = VectorBits { newest, ..VectorBits::default() };
        for entry in listed.as_deref().unwrap_or_default().split(',').filter(|entry| !entry.is_empty()) {
            page.rows += 1;
            let Some((id, hex)) = entry.split_once(':') else { continue };
            if let (Ok(id), Some(words)) = (id.parse::<i64>(), words_of_hex(hex)) {
                page.entries.push((id, words));
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_as_little_endian_f32() {
        let vector = vec![0.5f32, -0.25, 0.0, 1.0e-3];
        let blob = to_blob(&vector);
        assert_eq!(blob.len(), 16);
        assert_eq!(&blob[..4], &0.5f32.to_le_bytes());
        assert_eq!(from_blob(&blob), vector);
    }

    #[tokio::test]
    async fn sign_bits_read_back_exactly_through_sqlites_hex() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(&directory.path().join("wright.db"), crate::StateLimits::default()).await.unwrap();
        let bits: Vec<u64> = vec![0x0123_4567_89ab_cdef, u64::MAX, 0, 1 << 63];
        let (hex,): (String,) =
            sqlx::query_as("SELECT hex(?)").bind(bits_blob(&bits)).fetch_one(&store.reader).await.unwrap();
        assert_eq!(words_of_hex(&hex), Some(bits));
        assert_eq!(words_of_hex("ABC"), None);
        assert_eq!(words_of_hex("zz00000000000000"), None);
    }
}
