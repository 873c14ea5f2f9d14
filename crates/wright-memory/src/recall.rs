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

use wright_core::{AgentId, MemoryLayer};
use wright_store::{Memory, MemoryConfig, MemoryFilter, StoreError};

use crate::Memories;
use crate::vectors::dot;

const DAY_MS: i64 = 86_400_000;

/// The distinct words of a query (lowercased), at most 32. The store searches each as a
/// phrase, so what the model typed is text, never full-text syntax.
fn words_of(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| seen.insert(word.clone()))
        .take(32)
        .collect()
}

/// A candidate from the full-text side: the memory and its BM25 (higher is better).
struct Scored {
    memory: Memory,
    bm25: f64,
}

pub(crate) async fn recall(
    memories: &Memories,
    agent: &AgentId,
    query: &str,
    filter: &MemoryFilter,
    limit: usize,
) -> Result<Vec<Memory>, StoreError> {
    let words = words_of(query);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let config = memories.store.memory_config();
    let limit = limit.min(config.max_results);
    let now = memories.store.clock().now_ms();
    let pool = (limit * 8).max(64);
    let text = full_text(memories, agent, &words, filter, pool, now).await?;

    let query_vector = memories.query_vector(query).await;
    // Memories waiting for a vector (the endpoint failed when they were stored) are tried
    // again now, in the background, so the model never waits for it.
    memories.embed_due_in_background(agent).await?;
    let mut memories = match query_vector {
        Some(vector) => hybrid(memories, agent, &vector, text, filter, pool, now).await?,
        None => {
            let best = text.first().map_or(0.0, |scored| scored.bm25);
            text.into_iter()
                .map(|Scored { mut memory, bm25 }| {
                    memory.relevance = Some(relevance(config, bm25, best, memory.layer, now - memory.created_at));
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
    memories: &Memories,
    agent: &AgentId,
    query_words: &[String],
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Scored>, StoreError> {
    let config = memories.store.memory_config();
    let mut cap = config.rank_all_below.max(pool) as i64;
    loop {
        let found = memories.store.memory_word_matches(query_words, cap).await?;
        let corpus = found.newest_id.max(1) as f64;
        let mut words = Vec::with_capacity(query_words.len());
        for rowids in found.matches {
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
            for memory in memories.store.memories_with_ids(agent, &ids, filter, now).await? {
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

/// Full-text candidates and the vector index's nominees, rescored by cosine and fused by
/// reciprocal rank, weighted by layer and recency.
async fn hybrid(
    memories: &Memories,
    agent: &AgentId,
    query: &[f32],
    text: Vec<Scored>,
    filter: &MemoryFilter,
    pool: usize,
    now: i64,
) -> Result<Vec<Memory>, StoreError> {
    let Some(embeddings) = memories.embeddings.as_ref() else {
        return Ok(text.into_iter().map(|scored| scored.memory).collect());
    };
    let config = &embeddings.config;
    // A layer filter leaves about a quarter of the nominees: nominate more.
    let nominees = config.vector_candidates.max(pool) * if filter.layer.is_some() { 4 } else { 1 };
    let nominated = memories.nominate(agent, query, nominees).await?;
    let text_rank: HashMap<i64, usize> =
        text.iter().enumerate().map(|(position, scored)| (scored.memory.id, position + 1)).collect();
    // Only the nominees are rescored: a full-text candidate the index did not nominate is
    // not among the nearest, and ranks by its words alone (the index is the vector side's
    // retrieval, as any approximate nearest-neighbour search is).

    let found = memories.store.memories_with_ids(agent, &nominated, filter, now).await?;
    let ids: Vec<i64> = found.iter().map(|memory| memory.id).collect();
    let vectors = memories.store.memory_vectors(&ids, &embeddings.space).await?;
    let mut cosines: HashMap<i64, f64> = HashMap::with_capacity(vectors.len());
    for (id, vector) in vectors {
        if vector.len() == query.len() {
            cosines.insert(id, f64::from(dot(&vector, query)));
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
    let memory_config = memories.store.memory_config();
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
                (fused / best) * weight(memory_config, memory.layer) * recency(memory_config, now - memory.created_at),
            );
            Some(memory)
        })
        .collect())
}

fn weight(config: &MemoryConfig, layer: MemoryLayer) -> f64 {
    match layer {
        MemoryLayer::Long => config.weight_long,
        MemoryLayer::Mid => config.weight_mid,
        MemoryLayer::Short => config.weight_short,
        MemoryLayer::Session => config.weight_session,
    }
}

/// The relevance of a full-text match: its BM25 score (higher is better) relative to the best
/// match of the same query (its absolute size depends on the corpus and the query), times the
/// layer's weight and the recency factor. In 0..1.
pub fn relevance(config: &MemoryConfig, bm25: f64, best_bm25: f64, layer: MemoryLayer, age_ms: i64) -> f64 {
    let text = if best_bm25 > 0.0 { (bm25 / best_bm25).clamp(0.0, 1.0) } else { 1.0 };
    text * weight(config, layer) * recency(config, age_ms)
}

/// `floor + (1 - floor) * 0.5^(age / half_life)`.
fn recency(config: &MemoryConfig, age_ms: i64) -> f64 {
    let age_days = age_ms.max(0) as f64 / DAY_MS as f64;
    let half_life = config.recency_half_life_days.max(f64::MIN_POSITIVE);
    config.recency_floor + (1.0 - config.recency_floor) * 0.5f64.powf(age_days / half_life)
}

#[cfg(test)]
mod tests;
