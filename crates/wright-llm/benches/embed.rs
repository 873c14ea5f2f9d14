//! What a hybrid recall adds for its query: one embedding request, here to the fake provider
//! on loopback (each wire), so the figure is the client's and the HTTP round trip's cost —
//! a real endpoint adds its model's time and the network's (tens to hundreds of
//! milliseconds for a hosted API, a few for a local Ollama on a GPU). Measures, does not
//! assert. Run: `cargo bench -p wright-llm --bench embed` (`EMBED_BENCH_DIMS`, default 384).

use std::time::{Duration, Instant};

use wright_core::EmbedPurpose;
use wright_llm::testing::{FAKE_EMBEDDING_MODEL, FAKE_KEY, FakeProvider};
use wright_llm::{Connection, ConnectionKind};

const REQUESTS: usize = 1_000;

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn main() {
    let dimensions: u32 = std::env::var("EMBED_BENCH_DIMS").ok().and_then(|value| value.parse().ok()).unwrap_or(384);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let fake = FakeProvider::start(Vec::new()).await;
        fake.set_embedding_dimensions(dimensions as usize);
        for (kind, base_url, key) in [
            (ConnectionKind::OpenaiCompatible, format!("{}/v1", fake.url()), Some(FAKE_KEY.to_owned())),
            (ConnectionKind::Gemini, fake.url().to_owned(), Some(FAKE_KEY.to_owned())),
            (ConnectionKind::Ollama, fake.url().to_owned(), None),
        ] {
            let connection = Connection { kind, base_url: Some(base_url), api_key: key };
            let embedder = connection.embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(10)).unwrap();
            for _ in 0..50 {
                embedder.embed(&["warm up the connection"], EmbedPurpose::Query).await.unwrap();
            }
            let mut times = Vec::with_capacity(REQUESTS);
            for index in 0..REQUESTS {
                let query = format!("which automobile does Anna drive {index}");
                let started = Instant::now();
                let vectors = embedder.embed(&[&query], EmbedPurpose::Query).await.unwrap();
                times.push(started.elapsed());
                assert_eq!(vectors[0].len(), dimensions as usize);
            }
            times.sort();
            println!(
                "{:<18} query embedding ({dimensions} dimensions) over loopback: p50 {:.3} ms, p99 {:.3} ms",
                kind.as_str(),
                percentile(&times, 0.5).as_secs_f64() * 1e3,
                percentile(&times, 0.99).as_secs_f64() * 1e3,
            );
        }
    });
}
