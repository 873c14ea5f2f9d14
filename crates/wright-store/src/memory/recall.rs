//! Recall: the memories that match a query, best first.
//!
//! Full text (always): FTS5 finds each word's memories, BM25 (computed here, see
//! [`full_text`]) picks a pool of candidates, filtered (agent, layer, archived, session), and
//! each gets `bm25 / best bm25 × layer weight × recency`.
//!
//! Hybrid (with an embedder that answers): the query is embedded (one call to the embedding
//! endpoint, never a chat model); the agent's quantised vector index nominates its nearest
//! memories, which are rescored exactly (cosine of the stored f32 vectors); the cosine ranking
//! and the full-text ranking are fused by reciprocal rank — `Σ 1/(k + rank)`, scaled so that
//! first in both is 1 — then weighted by layer and recency as above.
//! Reciprocal rank rather than a weighted sum of scores because BM25's scale depends on the
//! corpus and the query, and cosine's on the model; ranks compare without calibration.
//! A memory below `min_similarity`, not nominated, or without a vector yet (still queued) has
//! no vector rank and keeps its full-text one. Without a query vector, full text alone answers.

use std::collections::{HashMap, HashSet};

use sqlx::Row;
use wright_core::AgentId;

use super::vectors::{dot, from_blob};
use super::{COLUMNS, Memory, MemoryFilter, filter_sql};
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

/// A candidate from the full-text side: the memory and its BM25 (higher is better).
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

/// One query word: the memories it is in (newest first), whether that is all of them, and its
/// inverse document frequency.
struct Word {
    rowids: Vec<i64>,
    complete: bool,
    idf: f64,
}

/// BM25's term-frequency saturation and length normalisation (the usual values, FTS5's too).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The full-text candidates, filtered, best BM25 first, at most `pool`.
///
/// FTS5 finds the memories each word is in — a walk of the word's doclist, newest first,
/// a few microseconds per thousand — and the scoring is done here: FTS5's own `bm25()` costs
/// about a microsecond per match plus a pass over every match of every word for its document
/// frequency, which on 100,000 memories was most of a recall's time. The score is BM25 with
/// binary term frequency (a memory is one short fact; a word in it once or twice is the same
/// evidence): `Σ idf(word) · (k1 + 1) / (1 + k1 · (1 − b + b · length / average length))` over
/// the query words the memory has, the average taken over the candidates.
///
/// A word in more than `rank_all_below` memories is common: only its most recent that many
/// matches are candidates, and its document frequency is estimated from how far back they
/// reach (ids grow with time). Candidates are ordered by their summed idf, and joined to their
/// rows and filtered (agent, layer, archived, session) a batch at a time; when the filter
/// leaves fewer than `pool` and a common word was cut, its matches are read further back.
async fn full_text(
    store: &Store,
    agent: &AgentId,
    phrases: &[String],
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Scored>, StoreError> {
    let config = &store.memory_config;
    let mut cap = config.rank_all_below.max(pool) as i64;
    // One statement, one row: the corpus size and each word's matches as text (rows cross
    // from SQLite's thread one at a time, and thousands of them cost more than the search).
    let mut sql = "SELECT (SELECT max(id) FROM memories)".to_owned();
    for _ in phrases {
        sql.push_str(
            ", (SELECT group_concat(rowid) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? \
             ORDER BY rowid DESC LIMIT ?))",
        );
    }
    loop {
        let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
        for phrase in phrases {
            statement = statement.bind(phrase.clone()).bind(if cap < 0 { -1 } else { cap + 1 });
        }
        let row = statement.fetch_one(&store.reader).await?;
        let newest: Option<i64> = row.try_get(0)?;
        let corpus = newest.unwrap_or(0).max(1) as f64;
        let mut words = Vec::with_capacity(phrases.len());
        for index in 0..phrases.len() {
            let listed: Option<String> = row.try_get(index + 1)?;
            let rowids: Vec<i64> =
                listed.as_deref().unwrap_or_default().split(',').filter_map(|id| id.parse().ok()).collect();
            let complete = cap < 0 || rowids.len() as i64 <= cap;
            let mut rowids = rowids;
            rowids.truncate(if complete { rowids.len() } else { cap as usize });
            let df = match (complete, rowids.last()) {
                (true, _) | (false, None) => rowids.len() as f64,
                // The matches reach back to `oldest`: as dense before it as after.
                (false, Some(oldest)) => (rowids.len() as f64 * corpus / (corpus - *oldest as f64 + 1.0)).min(corpus),
            };
            let idf = (1.0 + (corpus - df + 0.5) / (df + 0.5)).ln();
            words.push(Word { rowids, complete, idf });
        }
        let mut summed: HashMap<i64, f64> = HashMap::new();
        for word in &words {
            for rowid in &word.rowids {
                *summed.entry(*rowid).or_insert(0.0) += word.idf;
            }
        }
        let mut order: Vec<(i64, f64)> = summed.into_iter().collect();
        let batch = (pool * 2).max(128);
        let best_first = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
        // Usually the first batch is enough: sort it alone, and the rest only when needed.
        if order.len() > batch {
            order.select_nth_unstable_by(batch, best_first);
        }
        let first = batch.min(order.len());
        order[..first].sort_by(best_first);
        let mut rest_sorted = order.len() <= batch;
        let mut kept: Vec<(Memory, f64)> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            if start > 0 && !rest_sorted {
                order[start..].sort_by(best_first);
                rest_sorted = true;
            }
            let chunk = &order[start..(start + batch).min(order.len())];
            start += chunk.len();
            let idf_of: HashMap<i64, f64> = chunk.iter().copied().collect();
            let ids: Vec<i64> = chunk.iter().map(|(id, _)| *id).collect();
            for memory in rows_of(store, agent, &ids, filter, now).await? {
                let idf = idf_of.get(&memory.id).copied().unwrap_or(0.0);
                kept.push((memory, idf));
            }
            if kept.len() >= pool {
                break;
            }
        }
        let cut = words.iter().any(|word| !word.complete);
        if kept.len() < pool && cut && cap >= 0 {
            // Read the cut words further back: eight times as far, then to the start.
            cap = if cap >= config.rank_all_below.max(pool) as i64 * 8 { -1 } else { cap * 8 };
            continue;
        }
        let lengths: Vec<f64> = kept.iter().map(|(memory, _)| length_of(memory)).collect();
        let average = (lengths.iter().sum::<f64>() / lengths.len().max(1) as f64).max(1.0);
        let mut scored: Vec<Scored> = kept
            .into_iter()
            .zip(lengths)
            .map(|((memory, idf), length)| Scored {
                memory,
                bm25: idf * (K1 + 1.0) / (1.0 + K1 * (1.0 - B + B * length / average)),
            })
            .collect();
        scored.sort_by(|a, b| b.bm25.total_cmp(&a.bm25).then(b.memory.id.cmp(&a.memory.id)));
        scored.truncate(pool);
        return Ok(scored);
    }
}

/// A memory's length in words (content and category), as BM25 normalises by.
fn length_of(memory: &Memory) -> f64 {
    let words = |text: &str| text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()).count();
    (words(&memory.content) + memory.category.as_deref().map_or(0, words)) as f64
}

/// The memories of `ids` that pass the filter, in no particular order. One row of JSON: rows
/// cross from SQLite's thread one at a time, and on two busy cores each crossing cost more
/// than reading the row.
async fn rows_of(
    store: &Store,
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
    let listed = statement.fetch_one(&store.reader).await?;
    let found: Vec<super::StoredMemory> =
        serde_json::from_str(&listed).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))?;
    found.into_iter().map(super::StoredMemory::into_memory).collect()
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
    // Only the nominees are rescored: a full-text candidate the index did not nominate is
    // not among the nearest, and ranks by its words alone (the index is the vector side's
    // retrieval, as any approximate nearest-neighbour search is).

    // The nominees' rows (filtered) as one JSON row, their vectors as rows of blobs: a vector
    // is 1.5–6 KB, and as hex inside JSON it cost more to write and read than a row crossing.
    let found = rows_of(store, agent, &nominated, filter, now).await?;
    let vectors: Vec<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT v.memory_id, v.vector FROM json_each(?) AS j CROSS JOIN memory_vectors v \
         ON v.memory_id = j.value AND v.space = ?",
    )
    .bind(serde_json::to_string(&found.iter().map(|memory| memory.id).collect::<Vec<_>>()).unwrap_or_default())
    .bind(&embeddings.space)
    .fetch_all(&store.reader)
    .await?;
    let mut cosines: HashMap<i64, f64> = HashMap::with_capacity(vectors.len());
    for (id, blob) in vectors {
        if blob.len() == query.len() * 4 {
            cosines.insert(id, f64::from(dot(&from_blob(&blob), query)));
        }
    }
    let mut candidates: Vec<Memory> = text.into_iter().map(|scored| scored.memory).collect();
    candidates.extend(found.into_iter().filter(|memory| !text_rank.contains_key(&memory.id)));
    let mut by_cosine: Vec<(i64, f64)> =
        cosines.into_iter().filter(|(_, cosine)| *cosine >= config.min_similarity).collect();
    by_cosine.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let vector_rank: HashMap<i64, usize> =
        by_cosine.iter().enumerate().map(|(position, (id, _))| (*id, position + 1)).collect();

    let k = config.rrf_k.max(0.0);
    let best = 2.0 / (k + 1.0);
    let memory_config = &store.memory_config;
    Ok(candidates
        .into_iter()
        .filter_map(|mut memory| {
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
