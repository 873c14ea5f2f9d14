//! Memory vectors against a real database file, a fixed clock and an embedder of this file: a
//! bag of words hashed into 32 components, with a few words of one meaning sharing one
//! component, that can be made to fail or refuse.

use std::sync::{Arc, Mutex};

use wright_core::{AgentId, EmbedPurpose, FixedClock, MemoryLayer};

use wright_store::{MemoryActor, MemoryConfig, MemoryFilter, MemoryPatch, NewMemory, StateLimits, Store};

use super::*;

const T0: i64 = 1_790_000_000_000;

#[derive(Default)]
struct Script {
    down: bool,
    /// Texts containing this are refused (as too long).
    refuse: Option<String>,
    calls: Vec<(Vec<String>, EmbedPurpose)>,
}

#[derive(Default)]
struct TestEmbedder {
    script: Mutex<Script>,
}

impl TestEmbedder {
    fn set_down(&self, down: bool) {
        self.script.lock().unwrap().down = down;
    }

    fn calls(&self) -> usize {
        self.script.lock().unwrap().calls.len()
    }
}

fn embedding(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0f32; 32];
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|word| word.len() > 2) {
        let word = match word {
            "automobile" | "vehicle" | "car" | "cars" => "car",
            other => other,
        };
        let hash = word
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
        vector[(hash % 32) as usize] += 1.0;
    }
    vector
}

impl MemoryEmbedder for TestEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String], purpose: EmbedPurpose) -> EmbedFuture<'a> {
        Box::pin(async move {
            let mut script = self.script.lock().unwrap();
            script.calls.push((texts.to_vec(), purpose));
            if script.down {
                return Err(EmbedFailure::Unavailable("connection refused".into()));
            }
            if let Some(refused) = &script.refuse
                && texts.iter().any(|text| text.contains(refused.as_str()))
            {
                return Err(EmbedFailure::Refused("maximum input length is 8 tokens".into()));
            }
            Ok(texts.iter().map(|text| embedding(text)).collect())
        })
    }
}

fn config(model: &str) -> MemoryConfig {
    MemoryConfig {
        embeddings: Some(MemoryEmbeddingsConfig { retry_ms: 1_000, ..MemoryEmbeddingsConfig::new("test", model) }),
        ..MemoryConfig::default()
    }
}

async fn open_at(path: &std::path::Path, model: &str, clock: Arc<FixedClock>, embedder: Arc<TestEmbedder>) -> Memories {
    let store = Store::open(path, StateLimits::default()).await.unwrap().with_memory(config(model), clock);
    Memories::new(store).with_embedder(embedder).await.unwrap()
}

struct Fixture {
    directory: tempfile::TempDir,
    clock: Arc<FixedClock>,
    embedder: Arc<TestEmbedder>,
    store: Memories,
}

async fn fixture() -> Fixture {
    let directory = tempfile::tempdir().unwrap();
    let clock = Arc::new(FixedClock::at(T0));
    let embedder = Arc::new(TestEmbedder::default());
    let store = open_at(&directory.path().join("wright.db"), "m1", clock.clone(), embedder.clone()).await;
    Fixture { directory, clock, embedder, store }
}

/// A reader of the database file, for what the store does not show (seqs, the queue's errors).
async fn peek(directory: &tempfile::TempDir) -> sqlx::SqlitePool {
    let options =
        sqlx::sqlite::SqliteConnectOptions::new().filename(directory.path().join("wright.db")).read_only(true);
    sqlx::SqlitePool::connect_with(options).await.unwrap()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])).collect()
}

fn agent() -> AgentId {
    AgentId::default_agent()
}

fn long(content: &str) -> NewMemory {
    NewMemory { layer: MemoryLayer::Long, category: None, certainty: None, content: content.into() }
}

/// `(space, seq, vector)` of a memory's vectors.
async fn vectors_of(directory: &tempfile::TempDir, id: i64) -> Vec<(String, i64, Vec<f32>)> {
    sqlx::query_as::<_, (String, i64, Vec<u8>)>(
        "SELECT space, seq, vector FROM memory_vectors WHERE memory_id = ? ORDER BY seq",
    )
    .bind(id)
    .fetch_all(&peek(directory).await)
    .await
    .unwrap()
    .into_iter()
    .map(|(space, seq, blob)| (space, seq, from_blob(&blob)))
    .collect()
}

#[tokio::test]
async fn a_memory_is_embedded_when_stored_and_recall_finds_one_that_shares_no_word_with_the_query() {
    let fixture = fixture().await;
    let actor = MemoryActor::agent(None);
    let car = fixture.store.store_memory(&agent(), &long("Tom sold his old car last spring"), &actor).await.unwrap();
    fixture.store.store_memory(&agent(), &long("Tea with lemon in the afternoon"), &actor).await.unwrap();
    let stored = vectors_of(&fixture.directory, car.id).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].0, "m1");
    assert_eq!(stored[0].2, normalized(embedding("Tom sold his old car last spring")));
    assert_eq!(fixture.store.unembedded().await.unwrap(), 0);
    // No word in common: full text finds nothing, the vector finds the car.
    let found = fixture.store.recall(&agent(), "automobile", &MemoryFilter::default(), 10).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![car.id]);
    assert!(found[0].relevance.unwrap() > 0.0 && found[0].relevance.unwrap() <= 1.0);
    let last = fixture.embedder.script.lock().unwrap().calls.last().cloned().unwrap();
    assert_eq!(last, (vec!["automobile".to_owned()], EmbedPurpose::Query));
}

#[tokio::test]
async fn with_the_endpoint_down_a_memory_is_kept_queued_recall_answers_by_full_text_and_a_retry_embeds_it() {
    let fixture = fixture().await;
    let store = &fixture.store;
    fixture.embedder.set_down(true);
    let tea = store
        .store_memory(&agent(), &long("Tea with lemon in the afternoon"), &MemoryActor::agent(None))
        .await
        .unwrap();
    assert_eq!(store.store().memory(&agent(), tea.id).await.unwrap().content, "Tea with lemon in the afternoon");
    assert!(vectors_of(&fixture.directory, tea.id).await.is_empty());
    assert_eq!(store.unembedded().await.unwrap(), 1);
    let calls = fixture.embedder.calls();
    // Believed down: recall does not ask (no wait), and answers from full text.
    let found = store.recall(&agent(), "lemon tea", &MemoryFilter::default(), 10).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![tea.id]);
    assert_eq!(fixture.embedder.calls(), calls);
    let (attempts, error): (i64, String) =
        sqlx::query_as("SELECT attempts, last_error FROM memory_embedding_queue WHERE memory_id = ?")
            .bind(tea.id)
            .fetch_one(&peek(&fixture.directory).await)
            .await
            .unwrap();
    assert_eq!((attempts, error.as_str()), (1, "connection refused"));
    // Back up, but the wait is not over: still nothing asked.
    fixture.embedder.set_down(false);
    assert_eq!(store.embed_pending(None).await.unwrap(), EmbedReport::default());
    assert_eq!(fixture.embedder.calls(), calls);
    fixture.clock.advance_ms(1_000);
    assert_eq!(store.embed_pending(None).await.unwrap(), EmbedReport { embedded: 1, failed: 0 });
    assert_eq!(vectors_of(&fixture.directory, tea.id).await.len(), 1);
    assert_eq!(store.unembedded().await.unwrap(), 0);
}

#[tokio::test]
async fn a_recall_retries_queued_memories_in_the_background() {
    let fixture = fixture().await;
    let store = &fixture.store;
    fixture.embedder.set_down(true);
    let tea = store.store_memory(&agent(), &long("Tea with lemon"), &MemoryActor::agent(None)).await.unwrap();
    fixture.embedder.set_down(false);
    fixture.clock.advance_ms(1_000);
    store.recall(&agent(), "tea", &MemoryFilter::default(), 10).await.unwrap();
    for _ in 0..200 {
        if !vectors_of(&fixture.directory, tea.id).await.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the recall did not embed the queued memory");
}

#[tokio::test]
async fn an_edit_of_the_content_re_embeds_and_an_edit_of_the_layer_does_not() {
    let fixture = fixture().await;
    let store = &fixture.store;
    let memory = store.store_memory(&agent(), &long("Drives a blue car"), &MemoryActor::agent(None)).await.unwrap();
    let first = vectors_of(&fixture.directory, memory.id).await;
    let layer = MemoryPatch { layer: Some(MemoryLayer::Mid), ..MemoryPatch::default() };
    store.edit_memory(&agent(), memory.id, &layer, &MemoryActor::admin()).await.unwrap();
    assert_eq!(vectors_of(&fixture.directory, memory.id).await, first);
    let content = MemoryPatch { content: Some("Rides a green bicycle".into()), ..MemoryPatch::default() };
    store.edit_memory(&agent(), memory.id, &content, &MemoryActor::admin()).await.unwrap();
    let second = vectors_of(&fixture.directory, memory.id).await;
    assert_eq!(second.len(), 1);
    assert!(second[0].1 > first[0].1, "a re-embedded memory gets a new seq for the index");
    assert_eq!(second[0].2, normalized(embedding("Rides a green bicycle")));
    // The index follows: the bicycle is found by vector, the car no more.
    let found = store.recall(&agent(), "automobile", &MemoryFilter::default(), 10).await.unwrap();
    assert!(found.is_empty(), "{found:?}");
    // An edit while the endpoint is down drops the stale vector at once and queues the memory.
    fixture.embedder.set_down(true);
    let again = MemoryPatch { content: Some("Walks everywhere".into()), ..MemoryPatch::default() };
    store.edit_memory(&agent(), memory.id, &again, &MemoryActor::admin()).await.unwrap();
    assert!(vectors_of(&fixture.directory, memory.id).await.is_empty());
    assert_eq!(store.unembedded().await.unwrap(), 1);
}

#[tokio::test]
async fn a_new_model_deletes_the_old_vectors_and_embeds_every_active_memory_again() {
    let fixture = fixture().await;
    let actor = MemoryActor::agent(None);
    let mut ids = Vec::new();
    for content in ["Tea with lemon", "Drives a blue car", "Plays the piano"] {
        ids.push(fixture.store.store_memory(&agent(), &long(content), &actor).await.unwrap().id);
    }
    fixture.store.store().forget_memory(&agent(), ids[2], &actor).await.unwrap();
    fixture.store.store().close().await;
    let path = fixture.directory.path().join("wright.db");
    let embedder = Arc::new(TestEmbedder::default());
    let store = open_at(&path, "m2", fixture.clock.clone(), embedder.clone()).await;
    for id in &ids {
        assert!(vectors_of(&fixture.directory, *id).await.is_empty(), "the m1 vectors are gone");
    }
    // The two active memories wait; the forgotten one waits for its restore.
    assert_eq!(store.unembedded().await.unwrap(), 2);
    assert_eq!(store.embed_pending(None).await.unwrap(), EmbedReport { embedded: 2, failed: 0 });
    assert_eq!(vectors_of(&fixture.directory, ids[0]).await[0].0, "m2");
    store.restore_memory(&agent(), ids[2], &MemoryActor::admin()).await.unwrap();
    assert_eq!(vectors_of(&fixture.directory, ids[2]).await.len(), 1);
    // The same model again: nothing to do.
    store.store().close().await;
    let store = open_at(&path, "m2", fixture.clock.clone(), embedder.clone()).await;
    let calls = embedder.calls();
    assert_eq!(store.unembedded().await.unwrap(), 0);
    assert_eq!(store.embed_pending(None).await.unwrap(), EmbedReport::default());
    assert_eq!(embedder.calls(), calls);
}

#[tokio::test]
async fn a_refused_text_does_not_hold_back_the_others_of_its_batch() {
    let fixture = fixture().await;
    let store = &fixture.store;
    fixture.embedder.set_down(true);
    let good = store.store_memory(&agent(), &long("Tea with lemon"), &MemoryActor::agent(None)).await.unwrap();
    let bad = store.store_memory(&agent(), &long("poison pill text"), &MemoryActor::agent(None)).await.unwrap();
    {
        let mut script = fixture.embedder.script.lock().unwrap();
        script.down = false;
        script.refuse = Some("poison".into());
    }
    fixture.clock.advance_ms(1_000);
    assert_eq!(store.embed_pending(None).await.unwrap(), EmbedReport { embedded: 1, failed: 1 });
    assert_eq!(vectors_of(&fixture.directory, good.id).await.len(), 1);
    let (attempts, error): (i64, String) =
        sqlx::query_as("SELECT attempts, last_error FROM memory_embedding_queue WHERE memory_id = ?")
            .bind(bad.id)
            .fetch_one(&peek(&fixture.directory).await)
            .await
            .unwrap();
    // Stored while the endpoint was believed down, it was never tried before: one attempt.
    assert_eq!((attempts, error.as_str()), (1, "maximum input length is 8 tokens"));
    // The refusal is the text's, not the endpoint's: recall still asks for query vectors.
    let calls = fixture.embedder.calls();
    store.recall(&agent(), "tea", &MemoryFilter::default(), 10).await.unwrap();
    assert_eq!(fixture.embedder.calls(), calls + 1);
}

#[test]
fn nearest_takes_the_closest_by_hamming_distance_and_ties_in_order() {
    let mut index = VectorIndex { words: 1, ..VectorIndex::default() };
    for (id, bits) in [(1, 0b1111u64), (2, 0b0111), (3, 0b0000), (4, 0b0011), (5, 0b0111)] {
        index.slots.insert(id, index.ids.len());
        index.ids.push(id);
        index.bits.push(bits);
    }
    assert_eq!(index.nearest(&[0b1111], 1), vec![1]);
    assert_eq!(index.nearest(&[0b1111], 3), vec![1, 2, 5]);
    assert_eq!(index.nearest(&[0b0000], 2), vec![3, 4]);
    assert_eq!(index.nearest(&[0b1111], 9).len(), 5);
}

#[test]
fn signs_fill_words_of_64_components() {
    let long: Vec<f32> = (0..70).map(|index| if index % 2 == 0 { 1.0 } else { -1.0 }).collect();
    let bits = sign_bits(&long);
    assert_eq!(bits.len(), 2);
    assert_eq!(bits[0], 0x5555_5555_5555_5555);
    assert_eq!(bits[1], 0b01_0101);
}
