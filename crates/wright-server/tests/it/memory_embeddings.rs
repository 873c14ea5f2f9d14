//! Hybrid recall end to end: `[memory.embeddings]` through an environment connection to the
//! fake provider's embedding endpoint (each wire), memories stored and recalled through the
//! memory API. The fake's model embeds a bag of concepts (`automobile`, `vehicle` and `Volvo`
//! are one), so a fixed corpus can be ranked wrong by full text and right with vectors.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use wright_llm::ProviderEnv;
use wright_llm::testing::{FAKE_EMBEDDING_MODEL, FAKE_KEY, FakeError, FakeProvider};
use wright_server::domain::models::Models;
use wright_server::token::Auth;
use wright_server::{AppState, Config};
use wright_store::MemoryEmbeddingsConfig;

const TOKEN: &str = "test-token";

struct Fixture {
    _dir: tempfile::TempDir,
    state: AppState,
}

impl Fixture {
    async fn new(fake: &FakeProvider, connection: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::load(dir.path()).unwrap();
        config.memory.embeddings = Some(MemoryEmbeddingsConfig {
            retry_ms: 100,
            ..MemoryEmbeddingsConfig::new(connection, FAKE_EMBEDDING_MODEL)
        });
        let env = ProviderEnv {
            openai_api_key: Some(FAKE_KEY.into()),
            openai_base_url: Some(format!("{}/v1", fake.url())),
            gemini_api_key: Some(FAKE_KEY.into()),
            gemini_base_url: Some(fake.url().to_owned()),
            ollama_host: Some(fake.url().to_owned()),
            ..ProviderEnv::default()
        };
        let models = Models::from_environment(&env, &BTreeMap::new()).await;
        let state = AppState::open(config, Auth::new(TOKEN.into()), models).await.unwrap();
        Self { _dir: dir, state }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request =
            Request::builder().method(method).uri(path).header("authorization", format!("Bearer {TOKEN}"));
        let body = match body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(value.to_string())
            }
            None => Body::empty(),
        };
        let response = wright_server::api::app(self.state.clone()).oneshot(request.body(body).unwrap()).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn store(&self, content: &str) -> String {
        let (status, memory) = self
            .call(Method::POST, "/api/agents/default/memories", Some(json!({"layer": "long", "content": content})))
            .await;
        assert_eq!(status, StatusCode::OK, "{memory}");
        memory["id"].as_str().map(str::to_owned).unwrap_or_else(|| memory["id"].to_string())
    }

    /// The contents recalled for `query`, best first.
    async fn recall(&self, query: &str) -> Vec<String> {
        let path = format!("/api/agents/default/memories?query={}", query.replace(' ', "%20"));
        let (status, found) = self.call(Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        found.as_array().unwrap().iter().map(|memory| memory["content"].as_str().unwrap().to_owned()).collect()
    }
}

const RIGHT: &str = "Anna drives a red Volvo";
const WORDY: &str = "Anna asked which restaurant does the best pasta";
const VEHICLE: &str = "Tom sold his old vehicle";
const QUERY: &str = "Which automobile does Anna drive";

async fn corpus(fixture: &Fixture) {
    for content in [RIGHT, WORDY, VEHICLE, "Tea with lemon in the afternoon"] {
        fixture.store(content).await;
    }
}

#[tokio::test]
async fn hybrid_recall_ranks_right_where_full_text_alone_ranks_wrong_on_every_wire() {
    let fake = FakeProvider::start(Vec::new()).await;
    for connection in ["env:openai", "env:gemini", "env:ollama"] {
        let fixture = Fixture::new(&fake, connection).await;
        corpus(&fixture).await;
        let found = fixture.recall(QUERY).await;
        assert_eq!(found[..3], [RIGHT, WORDY, VEHICLE], "{connection}: {found:?}");
        // The vehicle shares no word with the query: only its vector finds it (beside the
        // Volvo, as near: one concept of four each).
        let mut found = fixture.recall("automobile").await;
        found.sort();
        assert_eq!(found, [RIGHT, VEHICLE], "{connection}");
    }
    // No chat model is asked; each recall is one embedding request for its query (the
    // memories' own requests come at store time, or from the sweep).
    assert_eq!(fake.requests().len(), fake.embedding_requests().len());
    let texts_of = |request: &wright_llm::testing::RecordedRequest| -> Vec<String> {
        let texts = match request.body.get("requests") {
            Some(requests) => {
                requests.as_array().unwrap().iter().map(|item| item["content"]["parts"][0]["text"].clone()).collect()
            }
            None => request.body["input"].as_array().unwrap().clone(),
        };
        texts.iter().map(|text| text.as_str().unwrap().to_owned()).collect()
    };
    for query in [QUERY, "automobile"] {
        let asked = fake.embedding_requests().iter().filter(|request| texts_of(request) == [query]).count();
        assert_eq!(asked, 3, "{query}");
    }
}

#[tokio::test]
async fn with_the_endpoint_down_recall_answers_by_full_text_and_memories_wait_for_their_vectors() {
    let fake = FakeProvider::start(Vec::new()).await;
    let fixture = Fixture::new(&fake, "env:openai").await;
    corpus(&fixture).await;
    fake.fail_embeddings(Some(FakeError::ServerError));
    // Full text alone: the memory with more of the query's words comes first, and the
    // vehicle is not found.
    assert_eq!(fixture.recall(QUERY).await, [WORDY, RIGHT]);
    // Stored while down: kept, and found by its words.
    fixture.store("Maria walks her puppy every morning").await;
    assert_eq!(fixture.recall("puppy").await, ["Maria walks her puppy every morning"]);
    assert!(fixture.recall("dog").await.is_empty());
    // Back up: after the wait, recall ranks by vectors again and the queued memory gets its
    // vector (the sweep or the next recall), so the dog finds the puppy.
    fake.fail_embeddings(None);
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if fixture.recall("dog").await == ["Maria walks her puppy every morning"] {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the puppy was never embedded");
    }
    assert_eq!(fixture.recall(QUERY).await[..3], [RIGHT, WORDY, VEHICLE]);
}

#[tokio::test]
async fn an_edited_memory_is_embedded_again() {
    let fake = FakeProvider::start(Vec::new()).await;
    let fixture = Fixture::new(&fake, "env:ollama").await;
    let id = fixture.store("Tom sold his old vehicle").await;
    assert_eq!(fixture.recall("automobile").await, ["Tom sold his old vehicle"]);
    let (status, _) = fixture
        .call(
            Method::PATCH,
            &format!("/api/agents/default/memories/{id}"),
            Some(json!({"content": "Tom adopted a puppy"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(fixture.recall("automobile").await.is_empty());
    assert_eq!(fixture.recall("dog").await, ["Tom adopted a puppy"]);
    let embedded: Vec<String> = fake
        .embedding_requests()
        .iter()
        .filter_map(|request| request.body["input"][0].as_str().map(str::to_owned))
        .collect();
    assert!(embedded.contains(&"Tom adopted a puppy".to_owned()), "{embedded:?}");
}

#[test]
fn the_embeddings_section_is_read_strictly_with_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| std::fs::write(dir.path().join("config.toml"), text).unwrap();
    write("[memory.embeddings]\nconnection = \"env:ollama\"\nmodel = \"nomic-embed-text\"\ndimensions = 256\n");
    let config = Config::load(dir.path()).unwrap();
    let embeddings = config.memory.embeddings.unwrap();
    assert_eq!((embeddings.connection.as_str(), embeddings.model.as_str()), ("env:ollama", "nomic-embed-text"));
    assert_eq!(embeddings.space(), "nomic-embed-text@256");
    assert_eq!(embeddings.query_timeout_ms, MemoryEmbeddingsConfig::new("c", "m").query_timeout_ms);
    write("[memory.embeddings]\nconnection = \"env:ollama\"\nmodel = \"m\"\ndimension = 256\n");
    let error = Config::load(dir.path()).err().unwrap().to_string();
    assert!(error.contains("dimension"), "{error}");
    write("[memory.embeddings]\nmodel = \"m\"\n");
    assert!(Config::load(dir.path()).is_err(), "a connection is required");
    write("[memory]\ncontext_chars = 100\n");
    assert_eq!(Config::load(dir.path()).unwrap().memory.embeddings, None);
}
