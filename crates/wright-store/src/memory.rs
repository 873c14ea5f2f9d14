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
//! - Recall's ranking and fusion, the vector index and embedding live above the store
//!   (`wright-memory`); the store answers its questions in SQL: each word's matches in the
//!   FTS5 index ([`Store::memory_word_matches`]), rows by id under a filter
//!   ([`Store::memories_with_ids`]), and the vector rows and queue (`vectors.rs`).

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::{AgentId, MemoryAction, MemoryAuthor, MemoryLayer};

use crate::{Store, StoreError};

mod vectors;

pub use vectors::{MemoryEmbeddingsConfig, MemoryVector, QueuedMemory, VectorBits};

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
}

/// Each query word's matches in the full-text index, newest first
/// ([`Store::memory_word_matches`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordMatches {
    /// The newest memory's id: how many memories there have been, for a word's rarity.
    pub newest_id: i64,
    /// Per word, in the order asked.
    pub matches: Vec<Vec<i64>>,
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
        if let Some(space) = space {
            sqlx::query(
                "INSERT OR IGNORE INTO memory_embedding_queue (memory_id, agent_id, attempts, next_attempt_at) \
             SELECT id, agent_id, 0, ? FROM memories m WHERE id = ? AND NOT EXISTS \
             (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.space = ?)",
            )
            .bind(now)
            .bind(id)
            .bind(space)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
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

    /// The memories each word is in (any agent), newest first: at most `cap + 1` a word, or
    /// all with a negative `cap`; and the newest memory's id (the corpus size, as ids grow).
    /// Each word is quoted as an FTS5 phrase, so `"`, `*`, `AND`, `:` are text, never syntax.
    pub async fn memory_word_matches(&self, words: &[String], cap: i64) -> Result<WordMatches, StoreError> {
        // One statement, one row: the corpus size and each word's matches as text (rows cross
        // from SQLite's thread one at a time, and thousands of them cost more than the search).
        let mut sql = "SELECT (SELECT max(id) FROM memories)".to_owned();
        for _ in words {
            sql.push_str(
                ", (SELECT group_concat(rowid) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? \
                 ORDER BY rowid DESC LIMIT ?))",
            );
        }
        let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql));
        for word in words {
            let phrase = format!("\"{}\"", word.replace('"', "\"\""));
            statement = statement.bind(phrase).bind(if cap < 0 { -1 } else { cap.saturating_add(1) });
        }
        let row = statement.fetch_one(&self.reader).await?;
        let newest: Option<i64> = row.try_get(0)?;
        let mut matches = Vec::with_capacity(words.len());
        for index in 0..words.len() {
            let listed: Option<String> = row.try_get(index + 1)?;
            matches.push(listed.as_deref().unwrap_or_default().split(',').filter_map(|id| id.parse().ok()).collect());
        }
        Ok(WordMatches { newest_id: newest.unwrap_or(0), matches })
    }

    /// The memories of `ids` that are `agent`'s and pass the filter (active at `now` unless
    /// it asks for archived ones), in no particular order. One row of JSON: rows cross from
    /// SQLite's thread one at a time, and on two busy cores each crossing cost more than
    /// reading the row.
    pub async fn memories_with_ids(
        &self,
        agent: &AgentId,
        ids: &[i64],
        filter: &MemoryFilter,
        now: i64,
    ) -> Result<Vec<Memory>, StoreError> {
        let fields = COLUMNS.split(", ").map(|column| format!("'{column}', m.{column}")).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "SELECT json_group_array(json_object({fields})) FROM json_each(?) AS j \
             CROSS JOIN memories m ON m.id = j.value WHERE m.agent_id = ?{}",
            filter_sql(filter)
        );
        let mut statement = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql))
            .bind(serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()))
            .bind(agent.as_str());
        if !filter.archived {
            statement = statement.bind(now);
        }
        if let Some(layer) = filter.layer {
            statement = statement.bind(layer.as_str());
        }
        if let Some(session) = &filter.session_id {
            statement = statement.bind(*session);
        }
        let listed = statement.fetch_one(&self.reader).await?;
        let found: Vec<StoredMemory> = serde_json::from_str(&listed)
            .map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))?;
        found.into_iter().map(StoredMemory::into_memory).collect()
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
