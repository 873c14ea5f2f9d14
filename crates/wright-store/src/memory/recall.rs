//! Recall: the memories that match a query, best first.
//!
//! Full text (always): FTS5's BM25 picks a pool of candidates, filtered (agent, layer,
//! archived, session), and each gets `bm25 / best bm25 × layer weight × recency`. How the pool
//! is picked depends on how common the query's words are, because scoring a match is the
//! expensive part (about a microsecond each, and a word most memories contain matches tens of
//! thousands), and BM25 already says a common word tells memories apart by next to nothing:
//! - every word in at most `rank_all_below` memories: all matches are ranked;
//! - some words rarer than that: the matches of the rare words are ranked (a memory with a
//!   rare word outscores any with only common ones anyway);
//! - all words common: the `recent_window` most recent matches are ranked (recency is part of
//!   relevance).
//!
//! Hybrid (with an embedder that answers): the query is embedded (one call to the embedding
//! endpoint, never a chat model); the agent's quantised vector index nominates its nearest
//! memories; full-text and vector candidates are rescored exactly (cosine of the stored f32
//! vectors) and fused by reciprocal rank — `Σ 1/(k + rank)` over the BM25 and the cosine
//! ranking, scaled so that first in both is 1 — then weighted by layer and recency as above.
//! Reciprocal rank rather than a weighted sum of scores because BM25's scale depends on the
//! corpus and the query, and cosine's on the model; ranks compare without calibration.
//! A memory below `min_similarity` has no vector rank; one without a vector (not yet
//! embedded) keeps its full-text rank. Without a query vector, full text alone answers.

use std::collections::{HashMap, HashSet};

use sqlx::Row;
use wright_core::AgentId;

use super::vectors::{dot, from_blob};
use super::{COLUMNS, Memory, MemoryFilter, decode, filter_sql};
use crate::{Store, StoreError};

/// The distinct words of a query (lowercased), each quoted as an FTS5 phrase so `"`, `*`,
/// `AND`, `:` in what the model typed are text, never syntax. At most 32.
fn phrases(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| seen.insert(word.clone()))
        .take(32)
        .map(|word| format!("\"{word}\""))
        .collect()
}

/// A candidate from the full-text side: the memory and its BM25 (negative, lower is better).
struct Scored {
    memory: Memory,
    bm25: f64,
}

pub(super) async fn recall(
    store: &Store,
    agent: &AgentId,
    query: &str,
    filter: &MemoryFilter,
    limit: usize,
) -> Result<Vec<Memory>, StoreError> {
    let phrases = phrases(query);
    if phrases.is_empty() {
        return Ok(Vec::new());
    }
    let config = &store.memory_config;
    let limit = limit.min(config.max_results);
    let now = store.clock.now_ms();
    let pool = (limit * 8).max(64);
    let text = full_text(store, agent, &phrases, filter, pool, now).await?;

    let query_vector = store.query_vector(query).await;
    // Memories waiting for a vector (the endpoint failed when they were stored) are tried
    // again now, in the background, so the model never waits for it.
    store.embed_due_in_background(agent).await?;
    let mut memories = match query_vector {
        Some(vector) => hybrid(store, agent, &vector, text, filter, pool, now).await?,
        None => {
            let best = text.first().map_or(0.0, |scored| scored.bm25);
            text.into_iter()
                .map(|Scored { mut memory, bm25 }| {
                    memory.relevance = Some(config.relevance(bm25, best, memory.layer, now - memory.created_at));
                    memory
                })
                .collect()
        }
    };
    memories.sort_by(|a, b| b.relevance.unwrap_or(0.0).total_cmp(&a.relevance.unwrap_or(0.0)));
    memories.truncate(limit);
    Ok(memories)
}

/// The full-text candidates, filtered, best BM25 first, at most `pool`.
async fn full_text(
    store: &Store,
    agent: &AgentId,
    phrases: &[String],
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Scored>, StoreError> {
    let config = &store.memory_config;
    let threshold = config.rank_all_below.max(pool);
    // How many memories each word is in, counted no further than the threshold (a walk of
    // the word's doclist, no scoring).
    let mut rare = Vec::new();
    let mut common = Vec::new();
    let mut rare_matches = 0;
    for phrase in phrases {
        let (count,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)")
                .bind(phrase)
                .bind(threshold as i64 + 1)
                .fetch_one(&store.reader)
                .await?;
        let count = count as usize;
        if count > threshold {
            common.push(phrase.as_str());
        } else if count > 0 {
            rare.push(phrase.as_str());
            rare_matches += count;
        }
    }
    let window = config.recent_window.max(pool);
    let mut scored = Vec::new();
    if !rare.is_empty() {
        // Every match of the rare words, ranked inside the index; only the best `scan` are
        // joined to their rows and filtered, and all of them only if the filter leaves too few.
        let scan = (pool * 8).max(512);
        scored = ranked(store, agent, &rare.join(" OR "), "rank", scan as i64, filter, pool, now).await?;
        if scored.len() < pool && rare_matches > scan {
            scored = ranked(store, agent, &rare.join(" OR "), "rank", -1, filter, pool, now).await?;
        }
    }
    if scored.len() < pool / 8 && !common.is_empty() {
        // Too few memories have the rare words (or there are none): the most recent matches
        // of the common ones follow. Their BM25 counts only common words, so it is small next
        // to a rare word's, which keeps them after the memories with rare words.
        let seen: HashSet<i64> = scored.iter().map(|scored| scored.memory.id).collect();
        let mut recent =
            ranked(store, agent, &common.join(" OR "), "rowid DESC", window as i64, filter, pool, now).await?;
        if recent.len() < pool {
            // A narrow filter (another agent's memories are most of the window): a wider one.
            recent = ranked(store, agent, &common.join(" OR "), "rowid DESC", (window * 8) as i64, filter, pool, now)
                .await?;
        }
        scored.extend(recent.into_iter().filter(|candidate| !seen.contains(&candidate.memory.id)));
        scored.sort_by(|a, b| a.bm25.total_cmp(&b.bm25));
        scored.truncate(pool);
    }
    Ok(scored)
}

/// One ranked full-text query: the matches of `expression` in `order`, the first `scan` of
/// them (-1: all) joined to their rows and filtered, the best `pool` by BM25. The join goes
/// from the index to the rows (`CROSS JOIN`: the planner otherwise probed the index per row).
async fn ranked(
    store: &Store,
    agent: &AgentId,
    expression: &str,
    order: &str,
    scan: i64,
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Scored>, StoreError> {
    let columns = COLUMNS.split(", ").map(|column| format!("m.{column}")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT {columns}, ranked.score AS score FROM \
         (SELECT rowid, rank AS score FROM memories_fts WHERE memories_fts MATCH ? ORDER BY {order} LIMIT ?) \
         AS ranked CROSS JOIN memories m ON m.id = ranked.rowid \
         WHERE m.agent_id = ?{} ORDER BY ranked.score LIMIT ?",
        filter_sql(filter)
    );
    let mut statement =
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(expression.to_owned()).bind(scan).bind(agent.as_str());
    if !filter.archived {
        statement = statement.bind(now);
    }
    if let Some(layer) = filter.layer {
        statement = statement.bind(layer.as_str());
    }
    if let Some(session) = &filter.session_id {
        statement = statement.bind(*session);
    }
    let rows = statement.bind(pool as i64).fetch_all(&store.reader).await?;
    rows.iter().map(|row| Ok(Scored { memory: decode(row)?, bm25: row.try_get("score")? })).collect()
}

/// Full-text candidates and the vector index's nominees, rescored by cosine and fused by
/// reciprocal rank, weighted by layer and recency.
async fn hybrid(
    store: &Store,
    agent: &AgentId,
    query: &[f32],
    text: Vec<Scored>,
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Memory>, StoreError> {
    let Some(embeddings) = store.embeddings.as_ref() else {
        return Ok(text.into_iter().map(|scored| scored.memory).collect());
    };
    let config = &embeddings.config;
    // A layer filter leaves about a quarter of the nominees: nominate more.
    let nominees = config.vector_candidates.max(pool) * if filter.layer.is_some() { 4 } else { 1 };
    let nominated = store.nominate(agent, query, nominees).await?;
    let text_rank: HashMap<i64, usize> =
        text.iter().enumerate().map(|(position, scored)| (scored.memory.id, position + 1)).collect();
    let mut ids: Vec<i64> = text.iter().map(|scored| scored.memory.id).collect();
    ids.extend(nominated.iter().filter(|id| !text_rank.contains_key(id)));

    let columns = COLUMNS.split(", ").map(|column| format!("m.{column}")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT {columns}, v.vector AS vector FROM json_each(?) AS j CROSS JOIN memories m ON m.id = j.value \
         LEFT JOIN memory_vectors v ON v.memory_id = m.id AND v.space = ? WHERE m.agent_id = ?{}",
        filter_sql(filter)
    );
    let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
        .bind(&embeddings.space)
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
    let rows = statement.fetch_all(&store.reader).await?;
    let mut candidates = Vec::with_capacity(rows.len());
    for row in &rows {
        let memory = decode(row)?;
        let vector: Option<Vec<u8>> = row.try_get("vector")?;
        let cosine = vector
            .map(|blob| from_blob(&blob))
            .filter(|vector| vector.len() == query.len())
            .map(|vector| f64::from(dot(&vector, query)));
        candidates.push((memory, cosine));
    }
    let mut by_cosine: Vec<(i64, f64)> = candidates
        .iter()
        .filter_map(|(memory, cosine)| {
            cosine.filter(|cosine| *cosine >= config.min_similarity).map(|cosine| (memory.id, cosine))
        })
        .collect();
    by_cosine.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let vector_rank: HashMap<i64, usize> =
        by_cosine.iter().enumerate().map(|(position, (id, _))| (*id, position + 1)).collect();

    let k = config.rrf_k.max(0.0);
    let best = 2.0 / (k + 1.0);
    let memory_config = &store.memory_config;
    Ok(candidates
        .into_iter()
        .filter_map(|(mut memory, _)| {
            let fused = [text_rank.get(&memory.id), vector_rank.get(&memory.id)]
                .into_iter()
                .flatten()
                .map(|rank| 1.0 / (k + *rank as f64))
                .sum::<f64>();
            if fused <= 0.0 {
                return None;
            }
            memory.relevance = Some(
                (fused / best) * memory_config.weight(memory.layer) * memory_config.recency(now - memory.created_at),
            );
            Some(memory)
        })
        .collect())
}
