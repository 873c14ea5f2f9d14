//! Layered memory: what an agent keeps at four time scales (seed 001), searched by full text,
//! archived when its time runs out, every change kept in `memory_history`.
//!
//! Time comes from the store's [`Clock`](wright_core::Clock), never from SQLite's `now`: expiry
//! is decided by time, and tests fix it.
//!
//! Invariants:
//! - A memory is never deleted. Forgetting and expiry archive it (`archived_at`,
//!   `archived_reason`); restore brings it back. Every store, edit, forget, expire and restore
//!   writes one `memory_history` row in the same transaction (the table is append-only).
//! - A memory past its `expires_at` is never shown as active, whether or not the sweep that
//!   archives it ([`Store::expire_memories`]) has run yet: every read filters on the time too.
//! - Recall needs no chat model: FTS5's BM25 over content and category, weighted by layer and
//!   recency in Rust ([`MemoryConfig::relevance`]); with an embedding endpoint, one embedding
//!   call for the query, and its vector's nearest memories fused with the full-text ranking
//!   (`recall.rs`, `vectors.rs`). Without an answer from the endpoint, full text alone.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::{AgentId, MemoryAction, MemoryAuthor, MemoryLayer};

use crate::{Store, StoreError};

mod recall;
pub(crate) mod vectors;

pub use vectors::{EmbedFailure, EmbedFuture, EmbedReport, MemoryEmbedder, MemoryEmbeddingsConfig};

const DAY_MS: i64 = 86_400_000;

/// `[memory]` in config.toml: lifetimes per layer, the share of the system message memory may
/// take, and the knobs of recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Days a long-term memory lasts; none (the default) means permanent.
    pub long_ttl_days: Option<u32>,
    /// Days a mid-term memory (goals, plans, projects) lasts.
    pub mid_ttl_days: Option<u32>,
    /// Days a short-term memory (recent context, summaries) lasts.
    pub short_ttl_days: Option<u32>,
    /// Optional upper bound on a session memory's life; by default it lasts exactly as long
    /// as its session (`[sessions]`), which ends it.
    pub session_ttl_days: Option<u32>,
    /// Characters of memory in the system message (seed 000 caps its memory at 4,000).
    pub context_chars: usize,
    /// Longest content of one memory, in characters.
    pub max_content_chars: usize,
    /// Largest `limit` a recall or list may ask for.
    pub max_results: usize,
    /// A word in more memories than this is common: only its most recent this many matches
    /// are candidates (its weight still says how common it is; reading every match of a word
    /// most memories contain is what makes a recall slow on a large store). Read further back
    /// when the filter leaves too few.
    pub rank_all_below: usize,
    /// Recall multiplies BM25 by a weight per layer: a lasting fact outranks a passing remark
    /// that matches as well.
    pub weight_long: f64,
    pub weight_mid: f64,
    pub weight_short: f64,
    pub weight_session: f64,
    /// Recency: a memory this many days old counts half as much more than the floor below
    /// (`floor + (1 - floor) * 0.5^(age / half_life)`).
    pub recency_half_life_days: f64,
    /// What an old memory keeps of its score however old it is.
    pub recency_floor: f64,
    /// `[memory.embeddings]`: an embedding endpoint, for recall by meaning as well as words.
    /// None (the default): full text only.
    pub embeddings: Option<MemoryEmbeddingsConfig>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            long_ttl_days: None,
            mid_ttl_days: Some(90),
            short_ttl_days: Some(14),
            session_ttl_days: None,
            context_chars: 4_000,
            max_content_chars: 2_000,
            max_results: 100,
            rank_all_below: 2_000,
            weight_long: 1.0,
            weight_mid: 0.9,
            weight_short: 0.8,
            weight_session: 1.0,
            recency_half_life_days: 30.0,
            recency_floor: 0.5,
            embeddings: None,
        }
    }
}

impl MemoryConfig {
    pub fn ttl_days(&self, layer: MemoryLayer) -> Option<u32> {
        match layer {
            MemoryLayer::Long => self.long_ttl_days,
            MemoryLayer::Mid => self.mid_ttl_days,
            MemoryLayer::Short => self.short_ttl_days,
            MemoryLayer::Session => self.session_ttl_days,
        }
    }

    /// When a memory of `layer` written at `now_ms` expires; `None` for never.
    pub fn expires_at(&self, layer: MemoryLayer, now_ms: i64) -> Option<i64> {
        self.ttl_days(layer).map(|days| now_ms.saturating_add(i64::from(days) * DAY_MS))
    }

    pub(crate) fn weight(&self, layer: MemoryLayer) -> f64 {
        match layer {
            MemoryLayer::Long => self.weight_long,
            MemoryLayer::Mid => self.weight_mid,
            MemoryLayer::Short => self.weight_short,
            MemoryLayer::Session => self.weight_session,
        }
    }

    /// The relevance of a full-text match: its BM25 score (higher is better) relative to the
    /// best match of the same query (its absolute size depends on the corpus and the query),
    /// times the layer's weight and the recency factor. In 0..1.
    pub fn relevance(&self, bm25: f64, best_bm25: f64, layer: MemoryLayer, age_ms: i64) -> f64 {
        let text = if best_bm25 > 0.0 { (bm25 / best_bm25).clamp(0.0, 1.0) } else { 1.0 };
        text * self.weight(layer) * self.recency(age_ms)
    }

    /// `floor + (1 - floor) * 0.5^(age / half_life)`.
    pub(crate) fn recency(&self, age_ms: i64) -> f64 {
        let age_days = age_ms.max(0) as f64 / DAY_MS as f64;
        let half_life = self.recency_half_life_days.max(f64::MIN_POSITIVE);
        self.recency_floor + (1.0 - self.recency_floor) * 0.5f64.powf(age_days / half_life)
    }
}

/// Why a memory left the active set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchivedReason {
    Forget,
    Expire,
}

/// One memory as stored. Times are milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    pub id: i64,
    pub layer: MemoryLayer,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: String,
    pub session_id: Option<i64>,
    pub conversation_id: Option<String>,
    pub author: MemoryAuthor,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub archived_at: Option<i64>,
    pub archived_reason: Option<ArchivedReason>,
    /// Set by recall only.
    pub relevance: Option<f64>,
}

/// One change in a memory's history, with the memory as it was after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryChange {
    pub id: i64,
    pub memory_id: i64,
    pub action: MemoryAction,
    pub author: MemoryAuthor,
    pub conversation_id: Option<String>,
    pub layer: MemoryLayer,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: String,
    pub expires_at: Option<i64>,
    pub created_at: i64,
}

/// A new memory.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub layer: MemoryLayer,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: String,
}

/// An edit: every field given replaces the stored one. A new layer restarts the lifetime.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryPatch {
    pub layer: Option<MemoryLayer>,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: Option<String>,
}

/// Who makes a change, and from which conversation (also the session of a session memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryActor {
    pub author: MemoryAuthor,
    pub conversation_id: Option<String>,
}

impl MemoryActor {
    pub fn admin() -> Self {
        Self { author: MemoryAuthor::Admin, conversation_id: None }
    }

    pub fn agent(conversation_id: Option<String>) -> Self {
        Self { author: MemoryAuthor::Agent, conversation_id }
    }
}

/// Which memories a list or recall looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    pub layer: Option<MemoryLayer>,
    /// Active (false) or archived (true) memories.
    pub archived: bool,
    /// Session memories of this session only; `None` lists every session's (the person's view).
    pub session_id: Option<i64>,
}

pub(crate) const COLUMNS: &str = "id, layer, category, certainty, content, session_id, conversation_id, author, \
                       created_at, updated_at, expires_at, archived_at, archived_reason";

pub(crate) fn decode(row: &sqlx::sqlite::SqliteRow) -> Result<Memory, StoreError> {
    StoredMemory {
        id: row.try_get("id")?,
        layer: row.try_get("layer")?,
        category: row.try_get("category")?,
        certainty: row.try_get("certainty")?,
        content: row.try_get("content")?,
        session_id: row.try_get("session_id")?,
        conversation_id: row.try_get("conversation_id")?,
        author: row.try_get("author")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        expires_at: row.try_get("expires_at")?,
        archived_at: row.try_get("archived_at")?,
        archived_reason: row.try_get("archived_reason")?,
    }
    .into_memory()
}

/// A memory's columns as stored (also as recall reads them, in one JSON array per query).
#[derive(Deserialize)]
pub(crate) struct StoredMemory {
    pub id: i64,
    pub layer: String,
    pub category: Option<String>,
    pub certainty: Option<f64>,
    pub content: String,
    pub session_id: Option<i64>,
    pub conversation_id: Option<String>,
    pub author: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub archived_at: Option<i64>,
    pub archived_reason: Option<String>,
}

impl StoredMemory {
    pub(crate) fn into_memory(self) -> Result<Memory, StoreError> {
        let invalid = |error: wright_core::CoreError| StoreError::Database(sqlx::Error::Decode(Box::new(error)));
        Ok(Memory {
            id: self.id,
            layer: MemoryLayer::parse(&self.layer).map_err(invalid)?,
            category: self.category,
            certainty: self.certainty,
            content: self.content,
            session_id: self.session_id,
            conversation_id: self.conversation_id,
            author: MemoryAuthor::parse(&self.author).map_err(invalid)?,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            archived_at: self.archived_at,
            archived_reason: match self.archived_reason.as_deref() {
                None => None,
                Some("forget") => Some(ArchivedReason::Forget),
                Some("expire") => Some(ArchivedReason::Expire),
                Some(other) => {
                    return Err(invalid(wright_core::CoreError::Unknown {
                        what: "archive reason",
                        value: other.into(),
                    }));
                }
            },
            relevance: None,
        })
    }
}

/// SQL that keeps only the memories the filter asks for; binds `now` twice when active.
pub(crate) fn filter_sql(filter: &MemoryFilter) -> String {
    let mut sql = String::new();
    if filter.archived {
        sql.push_str(" AND m.archived_at IS NOT NULL");
    } else {
        sql.push_str(" AND m.archived_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)");
    }
    if filter.layer.is_some() {
        sql.push_str(" AND m.layer = ?");
    }
    if filter.session_id.is_some() {
        sql.push_str(" AND (m.layer <> 'session' OR m.session_id = ?)");
    }
    sql
}

impl Store {
    pub fn memory_config(&self) -> &MemoryConfig {
        &self.memory_config
    }

    fn check_memory(&self, content: &str, certainty: Option<f64>) -> Result<(), StoreError> {
        if content.trim().is_empty() {
            return Err(StoreError::InvalidEdit("a memory's content must not be empty".into()));
        }
        let chars = content.chars().count();
        if chars > self.memory_config.max_content_chars {
            return Err(StoreError::LimitExceeded(format!(
                "a memory is {chars} characters; the limit is {} (store one fact per memory)",
                self.memory_config.max_content_chars
            )));
        }
        if let Some(certainty) = certainty
            && !(0.0..=1.0).contains(&certainty)
        {
            return Err(StoreError::InvalidEdit(format!("certainty must be between 0 and 1, not {certainty}")));
        }
        Ok(())
    }

    /// Stores a new memory and its `store` history row.
    pub async fn store_memory(
        &self,
        agent: &AgentId,
        memory: &NewMemory,
        actor: &MemoryActor,
    ) -> Result<Memory, StoreError> {
        self.check_memory(&memory.content, memory.certainty)?;
        // A session memory belongs to the agent's open session and ends with it, wherever it
        // was stored from (a conversation that began in an earlier session included: the
        // model may have started a new session in it).
        let session_id =
            if memory.layer == MemoryLayer::Session { Some(self.current_session(agent).await?.id) } else { None };
        let now = self.clock.now_ms();
        let expires_at = self.memory_config.expires_at(memory.layer, now);
        let mut transaction = self.begin_write().await?;
        let agent_exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&mut *transaction)
            .await?;
        if agent_exists.is_none() {
            return Err(StoreError::AgentNotFound(agent.to_string()));
        }
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO memories (agent_id, layer, category, certainty, content, session_id, conversation_id, \
             author, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(agent.as_str())
        .bind(memory.layer.as_str())
        .bind(memory.category.as_deref())
        .bind(memory.certainty)
        .bind(&memory.content)
        .bind(session_id)
        .bind(actor.conversation_id.as_deref())
        .bind(actor.author.as_str())
        .bind(now)
        .bind(now)
        .bind(expires_at)
        .fetch_one(&mut *transaction)
        .await?;
        record(&mut transaction, id, MemoryAction::Store, actor, now).await?;
        self.queue_for_embedding(&mut transaction, id, now).await?;
        transaction.commit().await?;
        self.embed_now(&[id]).await;
        self.memory(agent, id).await
    }

    /// Queues a memory for a vector in the embedding space when embeddings are configured,
    /// also in a process without the embedder (the CLI beside the server): the queue is what
    /// needs a vector, drained by the process that has it. (Configured later, attaching the
    /// embedder queues whatever has no vector.)
    async fn queue_for_embedding(
        &self,
        transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        id: i64,
        now: i64,
    ) -> Result<(), StoreError> {
        if self.memory_config.embeddings.is_none() {
            return Ok(());
        }
        sqlx::query(
            "INSERT OR REPLACE INTO memory_embedding_queue (memory_id, agent_id, attempts, next_attempt_at) \
             SELECT id, agent_id, 0, ? FROM memories WHERE id = ?",
        )
        .bind(now)
        .bind(id)
        .execute(&mut **transaction)
        .await?;
        Ok(())
    }

    /// One memory of `agent`, active or archived.
    pub async fn memory(&self, agent: &AgentId, id: i64) -> Result<Memory, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM memories WHERE agent_id = ? AND id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(agent.as_str())
            .bind(id)
            .fetch_optional(&self.writer)
            .await?
            .ok_or_else(|| StoreError::ItemNotFound { kind: "memory", name: id.to_string() })?;
        decode(&row)
    }

    /// Edits a memory (active or archived); a new layer restarts its lifetime from now.
    pub async fn edit_memory(
        &self,
        agent: &AgentId,
        id: i64,
        patch: &MemoryPatch,
        actor: &MemoryActor,
    ) -> Result<Memory, StoreError> {
        let current = self.memory(agent, id).await?;
        let content = patch.content.clone().unwrap_or(current.content.clone());
        let certainty = patch.certainty.or(current.certainty);
        self.check_memory(&content, certainty)?;
        let now = self.clock.now_ms();
        let layer = patch.layer.unwrap_or(current.layer);
        let expires_at =
            if layer == current.layer { current.expires_at } else { self.memory_config.expires_at(layer, now) };
        let category = patch.category.clone().or(current.category.clone()).filter(|category| !category.is_empty());
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "UPDATE memories SET layer = ?, category = ?, certainty = ?, content = ?, expires_at = ?, updated_at = ? \
             WHERE agent_id = ? AND id = ?",
        )
        .bind(layer.as_str())
        .bind(category.as_deref())
        .bind(certainty)
        .bind(&content)
        .bind(expires_at)
        .bind(now)
        .bind(agent.as_str())
        .bind(id)
        .execute(&mut *transaction)
        .await?;
        record(&mut transaction, id, MemoryAction::Edit, actor, now).await?;
        let content_changed = content != current.content;
        if content_changed {
            // The old vectors describe the old content: gone with it, in every space.
            sqlx::query("DELETE FROM memory_vectors WHERE memory_id = ?").bind(id).execute(&mut *transaction).await?;
            self.queue_for_embedding(&mut transaction, id, now).await?;
        }
        transaction.commit().await?;
        if content_changed {
            self.embed_now(&[id]).await;
        }
        self.memory(agent, id).await
    }

    /// Archives an active memory as forgotten. Forgetting one already archived is an error
    /// the caller can show ("already forgotten / expired").
    pub async fn forget_memory(&self, agent: &AgentId, id: i64, actor: &MemoryActor) -> Result<Memory, StoreError> {
        self.archive(agent, id, ArchivedReason::Forget, actor).await
    }

    async fn archive(
        &self,
        agent: &AgentId,
        id: i64,
        reason: ArchivedReason,
        actor: &MemoryActor,
    ) -> Result<Memory, StoreError> {
        let now = self.clock.now_ms();
        let (reason_text, action) = match reason {
            ArchivedReason::Forget => ("forget", MemoryAction::Forget),
            ArchivedReason::Expire => ("expire", MemoryAction::Expire),
        };
        let mut transaction = self.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE memories SET archived_at = ?, archived_reason = ?, updated_at = ? \
             WHERE agent_id = ? AND id = ? AND archived_at IS NULL",
        )
        .bind(now)
        .bind(reason_text)
        .bind(now)
        .bind(agent.as_str())
        .bind(id)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if changed == 0 {
            drop(transaction);
            let memory = self.memory(agent, id).await?;
            return Err(StoreError::InvalidEdit(format!(
                "memory {id} is already archived ({})",
                match memory.archived_reason {
                    Some(ArchivedReason::Expire) => "expired",
                    _ => "forgotten",
                }
            )));
        }
        record(&mut transaction, id, action, actor, now).await?;
        transaction.commit().await?;
        self.memory(agent, id).await
    }

    /// Brings an archived memory back. One that had expired gets a fresh lifetime from now,
    /// or it would expire again at the next sweep.
    pub async fn restore_memory(&self, agent: &AgentId, id: i64, actor: &MemoryActor) -> Result<Memory, StoreError> {
        let current = self.memory(agent, id).await?;
        if current.archived_at.is_none() {
            return Err(StoreError::InvalidEdit(format!("memory {id} is not archived")));
        }
        let now = self.clock.now_ms();
        let expires_at = match current.expires_at {
            Some(at) if at <= now => self.memory_config.expires_at(current.layer, now),
            other => other,
        };
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "UPDATE memories SET archived_at = NULL, archived_reason = NULL, expires_at = ?, updated_at = ? \
             WHERE agent_id = ? AND id = ?",
        )
        .bind(expires_at)
        .bind(now)
        .bind(agent.as_str())
        .bind(id)
        .execute(&mut *transaction)
        .await?;
        record(&mut transaction, id, MemoryAction::Restore, actor, now).await?;
        // Archived memories are not queued when an embedder is attached: a restored one
        // without a vector in the space gets one now.
        let space = self.memory_config.embeddings.as_ref().map(MemoryEmbeddingsConfig::space);
        let queued = space.is_some()
            && sqlx::query(
                "INSERT OR IGNORE INTO memory_embedding_queue (memory_id, agent_id, attempts, next_attempt_at) \
             SELECT id, agent_id, 0, ? FROM memories m WHERE id = ? AND NOT EXISTS \
             (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.space = ?)",
            )
            .bind(now)
            .bind(id)
            .bind(space.as_deref().unwrap_or_default())
            .execute(&mut *transaction)
            .await?
            .rows_affected()
                > 0;
        transaction.commit().await?;
        if queued {
            self.embed_now(&[id]).await;
        }
        self.memory(agent, id).await
    }

    /// Archives every active memory (of all agents) whose time has come, with an `expire`
    /// history row each. Returns how many. Cheap when nothing is due (a partial index).
    pub async fn expire_memories(&self) -> Result<u64, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let due: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM memories WHERE archived_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?",
        )
        .bind(now)
        .fetch_all(&mut *transaction)
        .await?;
        if due.is_empty() {
            return Ok(0);
        }
        sqlx::query(
            "UPDATE memories SET archived_at = ?, archived_reason = 'expire', updated_at = ? \
             WHERE archived_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?",
        )
        .bind(now)
        .bind(now)
        .bind(now)
        .execute(&mut *transaction)
        .await?;
        let system = MemoryActor { author: MemoryAuthor::System, conversation_id: None };
        for (id,) in &due {
            record(&mut transaction, *id, MemoryAction::Expire, &system, now).await?;
        }
        transaction.commit().await?;
        Ok(due.len() as u64)
    }

    /// Memories of `agent`, newest first.
    pub async fn list_memories(
        &self,
        agent: &AgentId,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let limit = limit.min(self.memory_config.max_results);
        let sql = format!(
            "SELECT {} FROM memories m WHERE m.agent_id = ?{} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            COLUMNS.split(", ").map(|column| format!("m.{column}")).collect::<Vec<_>>().join(", "),
            filter_sql(filter)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent.as_str());
        if !filter.archived {
            query = query.bind(self.clock.now_ms());
        }
        if let Some(layer) = filter.layer {
            query = query.bind(layer.as_str());
        }
        if let Some(session) = &filter.session_id {
            query = query.bind(*session);
        }
        let rows = query.bind(limit as i64).fetch_all(&self.reader).await?;
        rows.iter().map(decode).collect()
    }

    /// Memories matching `query`, most relevant first. Full text alone (see
    /// [`MemoryConfig::relevance`]), or, with an embedder attached and answering, full text and
    /// vectors fused by reciprocal rank and then weighted by layer and recency (see
    /// `recall.rs`). A query with no words finds nothing.
    pub async fn recall_memories(
        &self,
        agent: &AgentId,
        query: &str,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        recall::recall(self, agent, query, filter, limit).await
    }

    /// What the system message carries: active long-term memories, then active mid-term ones,
    /// each newest first, as many as fit in `max_chars` of content (the renderer applies the
    /// same cap to the lines it writes; reading no more than it can show keeps a run's start
    /// cheap however many memories there are).
    pub async fn context_memories(&self, agent: &AgentId, max_chars: usize) -> Result<Vec<Memory>, StoreError> {
        // A rendered line is at least 12 characters besides its content (`- [long #1] `), so
        // no more rows than this can ever be shown. Each layer's index is walked newest first
        // a page at a time, and the walk stops as soon as the cap is reached: a typical cap
        // holds a few dozen memories, whatever the store holds.
        let most_rows = max_chars / 12 + 1;
        const PAGE: usize = 32;
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE agent_id = ? AND layer = ? AND archived_at IS NULL \
             AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        );
        let now = self.clock.now_ms();
        let mut total = 0;
        let mut memories = Vec::new();
        for layer in [MemoryLayer::Long, MemoryLayer::Mid] {
            let mut offset = 0;
            loop {
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(agent.as_str())
                    .bind(layer.as_str())
                    .bind(now)
                    .bind(PAGE as i64)
                    .bind(offset as i64)
                    .fetch_all(&self.reader)
                    .await?;
                for row in &rows {
                    let memory = decode(row)?;
                    total += memory.content.chars().count();
                    if (total > max_chars && !memories.is_empty()) || memories.len() >= most_rows {
                        return Ok(memories);
                    }
                    memories.push(memory);
                }
                if rows.len() < PAGE {
                    break;
                }
                offset += PAGE;
            }
        }
        Ok(memories)
    }

    /// Every change of one memory, oldest first.
    pub async fn memory_history(&self, agent: &AgentId, id: i64) -> Result<Vec<MemoryChange>, StoreError> {
        self.memory(agent, id).await?;
        let rows = sqlx::query(
            "SELECT id, memory_id, action, author, conversation_id, layer, category, certainty, content, \
             expires_at, created_at FROM memory_history WHERE memory_id = ? ORDER BY id",
        )
        .bind(id)
        .fetch_all(&self.reader)
        .await?;
        let invalid = |error: wright_core::CoreError| StoreError::Database(sqlx::Error::Decode(Box::new(error)));
        rows.iter()
            .map(|row| {
                Ok(MemoryChange {
                    id: row.try_get("id")?,
                    memory_id: row.try_get("memory_id")?,
                    action: MemoryAction::parse(row.try_get("action")?).map_err(invalid)?,
                    author: MemoryAuthor::parse(row.try_get("author")?).map_err(invalid)?,
                    conversation_id: row.try_get("conversation_id")?,
                    layer: MemoryLayer::parse(row.try_get("layer")?).map_err(invalid)?,
                    category: row.try_get("category")?,
                    certainty: row.try_get("certainty")?,
                    content: row.try_get("content")?,
                    expires_at: row.try_get("expires_at")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }
}

/// Writes the history row of a change, copying the memory as it now is.
pub(crate) async fn record(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    id: i64,
    action: MemoryAction,
    actor: &MemoryActor,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO memory_history (memory_id, action, author, conversation_id, layer, category, certainty, \
         content, expires_at, created_at) \
         SELECT id, ?, ?, ?, layer, category, certainty, content, expires_at, ? FROM memories WHERE id = ?",
    )
    .bind(action.as_str())
    .bind(actor.author.as_str())
    .bind(actor.conversation_id.as_deref())
    .bind(now)
    .bind(id)
    .execute(&mut **transaction)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests;
