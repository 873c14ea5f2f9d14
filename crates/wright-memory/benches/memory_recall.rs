//! Recall over a large memory store: p50 and p99 of `recall_memories` (limit 10) on 100,000
//! memories of one agent — full text, then hybrid (with precomputed synthetic vectors: each
//! word a fixed random vector, a text the sum of its words', `MEMORY_BENCH_DIMS` components,
//! 384 by default; the embedder answers in-process, so the endpoint's own time is not in these
//! figures: see wright-llm's `embed` bench for a query's request) — plus what a run start pays
//! for the memory section of its system message (`context_memories` at the default
//! 4,000-character cap). Measures; asserts nothing.
//!
//! `cargo bench -p wright-memory --bench memory_recall` (release). `MEMORY_BENCH_COUNT` changes
//! the corpus size, `MEMORY_BENCH_RANK_ALL_BELOW` the `[memory] rank_all_below` setting;
//! `MEMORY_BENCH_DB=path` keeps the database there and reuses it on the next run (storing
//! 100,000 memories takes about a minute).

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::HashMap;

use wright_core::{AgentId, EmbedPurpose, FixedClock, MemoryLayer};
use wright_memory::{EmbedFuture, Memories, MemoryEmbedder};
use wright_store::{MemoryActor, MemoryConfig, MemoryEmbeddingsConfig, MemoryFilter, NewMemory, StateLimits, Store};

const QUERIES: usize = 1_000;
const DAY_MS: i64 = 86_400_000;

/// xorshift64*: a fixed corpus and fixed queries on every run, without a dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Skewed towards small values, as word frequencies are (roughly Zipf).
    fn skewed(&mut self, below: usize) -> usize {
        let uniform = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((below as f64).powf(uniform) as usize).saturating_sub(1).min(below - 1)
    }
}

fn vocabulary() -> Vec<String> {
    let syllables =
        ["ka", "lo", "mi", "ren", "tus", "ba", "dor", "fi", "gan", "hel", "ist", "jo", "ku", "mar", "nel", "op"];
    let mut words = Vec::new();
    for first in syllables {
        for second in syllables {
            for third in ["", "a", "er", "ing"] {
                words.push(format!("{first}{second}{third}"));
            }
        }
    }
    words
}

/// Synthetic embeddings: a fixed random vector per word, a text the sum of its words'.
struct Synthetic {
    words: HashMap<String, Vec<f32>>,
    dimensions: usize,
}

impl Synthetic {
    fn new(words: &[String], dimensions: usize) -> Self {
        let mut random = Random(0x1234_5678_9ABC_DEF1);
        let words = words
            .iter()
            .map(|word| {
                let vector = (0..dimensions).map(|_| (random.next() % 2_001) as f32 / 1_000.0 - 1.0).collect();
                (word.clone(), vector)
            })
            .collect();
        Self { words, dimensions }
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        let mut sum = vec![0.0f32; self.dimensions];
        for word in text.split_whitespace() {
            if let Some(vector) = self.words.get(word) {
                sum.iter_mut().zip(vector).for_each(|(total, value)| *total += value);
            }
        }
        sum
    }
}

impl MemoryEmbedder for Synthetic {
    fn embed<'a>(&'a self, texts: &'a [String], _purpose: EmbedPurpose) -> EmbedFuture<'a> {
        Box::pin(async move { Ok(texts.iter().map(|text| self.vector(text)).collect()) })
    }
}

async fn measure(store: &Memories, agent: &AgentId, queries: &[String], what: &str, count: usize) {
    let filter = MemoryFilter::default();
    for query in queries.iter().take(50) {
        store.recall(agent, query, &filter, 10).await.unwrap();
    }
    let mut times = Vec::with_capacity(queries.len());
    let mut found = 0;
    for query in queries {
        let started = Instant::now();
        found += store.recall(agent, query, &filter, 10).await.unwrap().len();
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "{what} recall (limit 10) over {count}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} queries of 1-3 words, {:.1} results on average)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
        queries.len(),
        found as f64 / queries.len() as f64,
    );
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn main() {
    let count: usize = std::env::var("MEMORY_BENCH_COUNT").ok().and_then(|value| value.parse().ok()).unwrap_or(100_000);
    let rank_all_below = std::env::var("MEMORY_BENCH_RANK_ALL_BELOW")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(MemoryConfig::default().rank_all_below);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let directory = tempfile::tempdir().unwrap();
        let path = std::env::var_os("MEMORY_BENCH_DB")
            .map_or_else(|| directory.path().join("wright.db"), std::path::PathBuf::from);
        let reuse = path.exists();
        let clock = Arc::new(FixedClock::at(1_790_000_000_000));
        let store = Store::open(&path, StateLimits::default()).await.unwrap().with_memory(
            MemoryConfig {
                long_ttl_days: None,
                mid_ttl_days: None,
                short_ttl_days: None,
                session_ttl_days: None,
                rank_all_below,
                ..MemoryConfig::default()
            },
            clock.clone(),
        );
        let agent = AgentId::default_agent();
        let words = vocabulary();
        let mut random = Random(0x9E37_79B9_7F4A_7C15);
        let layers = [MemoryLayer::Long, MemoryLayer::Mid, MemoryLayer::Short, MemoryLayer::Session];
        let categories = ["fact", "preference", "goal", "plan", "summary", "project"];
        let started = Instant::now();
        for index in 0..count {
            if reuse {
                // The same draws as when the database was written, so the queries below match.
                let length = 6 + random.skewed(20);
                for _ in 0..length {
                    random.skewed(words.len());
                }
                clock.advance_ms(365 * DAY_MS / count as i64);
                continue;
            }
            let length = 6 + random.skewed(20);
            let content: Vec<&str> = (0..length).map(|_| words[random.skewed(words.len())].as_str()).collect();
            let memory = NewMemory {
                layer: layers[index % layers.len()],
                category: Some(categories[index % categories.len()].to_owned()),
                certainty: None,
                content: content.join(" "),
            };
            store.store_memory(&agent, &memory, &MemoryActor::agent(Some("bench".into()))).await.unwrap();
            // A year of memories: each a few minutes after the one before.
            clock.advance_ms(365 * DAY_MS / count as i64);
        }
        println!("rank_all_below = {rank_all_below}");
        println!("stored {count} memories in {:.1} s", started.elapsed().as_secs_f64());

        let queries: Vec<String> = (0..QUERIES)
            .map(|_| {
                (0..1 + random.skewed(3))
                    .map(|_| words[random.skewed(words.len())].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        measure(&Memories::new(store.clone()), &agent, &queries, "full-text", count).await;

        let mut times = Vec::new();
        for _ in 0..200 {
            let started = Instant::now();
            store.context_memories(&agent, 4_000).await.unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "context_memories (4,000 chars) at run start: p50 {:.3} ms, p99 {:.3} ms",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
        let started = Instant::now();
        let expired = store.expire_memories().await.unwrap();
        println!(
            "expire_memories with nothing due: {:.3} ms ({expired} expired)",
            started.elapsed().as_secs_f64() * 1e3
        );

        let dimensions: usize =
            std::env::var("MEMORY_BENCH_DIMS").ok().and_then(|value| value.parse().ok()).unwrap_or(384);
        let embeddings = MemoryEmbeddingsConfig {
            batch_size: 1_000,
            ..MemoryEmbeddingsConfig::new("synthetic", format!("synthetic-{dimensions}"))
        };
        let config = MemoryConfig {
            long_ttl_days: None,
            mid_ttl_days: None,
            short_ttl_days: None,
            session_ttl_days: None,
            rank_all_below,
            embeddings: Some(embeddings),
            ..MemoryConfig::default()
        };
        let started = Instant::now();
        let hybrid = Memories::new(store.clone().with_memory(config, clock.clone()))
            .with_embedder(Arc::new(Synthetic::new(&words, dimensions)))
            .await
            .unwrap();
        let report = hybrid.embed_pending(None).await.unwrap();
        println!(
            "embedded {} memories ({dimensions} dimensions, in-process) in {:.1} s",
            report.embedded,
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        hybrid.recall(&agent, &queries[0], &MemoryFilter::default(), 10).await.unwrap();
        println!(
            "first hybrid recall (loads the agent's vector index): {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
        measure(&hybrid, &agent, &queries, "hybrid", count).await;
        store.close().await;
    });
}
