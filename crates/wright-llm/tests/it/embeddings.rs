//! Embeddings against the fake's embedding endpoints, one per vendor wire: the vectors come
//! back in order and equal the fake model's, the request has the vendor's shape, and each
//! refusal (wrong key, unknown model, input too long, too many in a batch) arrives classified.

use std::time::Duration;

use wright_core::EmbedPurpose;
use wright_llm::testing::{FAKE_EMBEDDING_MODEL, FAKE_KEY, FakeError, FakeProvider, fake_embedding};
use wright_llm::{Connection, ConnectionKind, LlmError};

/// Equal up to JSON's float text (serde_json reads floats to within one unit in the last place).
fn same(left: &[f32], right: &[f32]) -> bool {
    left.len() == right.len() && left.iter().zip(right).all(|(a, b)| (a - b).abs() < 1e-6)
}

fn connection(fake: &FakeProvider, kind: ConnectionKind) -> Connection {
    let base_url = match kind {
        ConnectionKind::Openai | ConnectionKind::OpenaiCompatible => format!("{}/v1", fake.url()),
        _ => fake.url().to_owned(),
    };
    Connection {
        kind,
        base_url: Some(base_url),
        api_key: (kind != ConnectionKind::Ollama).then(|| FAKE_KEY.to_owned()),
    }
}

const KINDS: [ConnectionKind; 4] =
    [ConnectionKind::Openai, ConnectionKind::OpenaiCompatible, ConnectionKind::Gemini, ConnectionKind::Ollama];

#[tokio::test]
async fn each_wire_answers_one_vector_per_text_in_order() {
    let fake = FakeProvider::start(Vec::new()).await;
    let texts = ["Anna drives a red Volvo", "the dog sleeps", "Anna drives a red Volvo"];
    for kind in KINDS {
        let embedder = connection(&fake, kind).embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5)).unwrap();
        let (vectors, tokens) = embedder.embed_counted(&texts, EmbedPurpose::Document).await.unwrap();
        assert_eq!(vectors.len(), 3, "{kind:?}");
        assert!(same(&vectors[0], &fake_embedding(texts[0], 64)), "{kind:?}");
        assert!(same(&vectors[1], &fake_embedding(texts[1], 64)), "{kind:?}");
        assert_eq!(vectors[0], vectors[2]);
        // The tokens each server says it read (the fake: four characters a token); Gemini's
        // batch answer says none.
        let fake_count: u64 = texts.iter().map(|text| text.chars().count().div_ceil(4) as u64).sum();
        match kind {
            ConnectionKind::Gemini => assert_eq!(tokens, None),
            _ => assert_eq!(tokens, Some(fake_count), "{kind:?}"),
        }
        // Shortened on request, by each wire's own field.
        let short = connection(&fake, kind).embedder(FAKE_EMBEDDING_MODEL, Some(16), Duration::from_secs(5)).unwrap();
        let vectors = short.embed(&texts[..1], EmbedPurpose::Query).await.unwrap();
        assert_eq!(vectors[0].len(), 16, "{kind:?}");
    }
    let requests = fake.embedding_requests();
    let paths: Vec<&str> = requests.iter().map(|request| request.path_and_query.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/embeddings",
            "/v1/embeddings",
            "/v1/embeddings",
            "/v1/embeddings",
            "/v1beta/models/fake-embed:batchEmbedContents",
            "/v1beta/models/fake-embed:batchEmbedContents",
            "/api/embed",
            "/api/embed",
        ]
    );
    assert_eq!(requests[1].body["dimensions"], 16);
    assert_eq!(requests[0].body["encoding_format"], "float");
    assert_eq!(requests[4].body["requests"][0]["taskType"], "RETRIEVAL_DOCUMENT");
    assert_eq!(requests[5].body["requests"][0]["taskType"], "RETRIEVAL_QUERY");
    assert_eq!(requests[5].body["requests"][0]["outputDimensionality"], 16);
    assert_eq!(requests[5].body["requests"][0]["model"], "models/fake-embed");
    assert_eq!(requests[7].body["dimensions"], 16);
    assert_eq!(requests[4].headers["x-goog-api-key"], FAKE_KEY);
}

#[tokio::test]
async fn a_wrong_key_and_an_unknown_model_are_refused_as_each_vendor_refuses_them() {
    let fake = FakeProvider::start(Vec::new()).await;
    for kind in KINDS {
        let mut wrong = connection(&fake, kind);
        if kind != ConnectionKind::Ollama {
            wrong.api_key = Some("wrong-key".into());
            let error = wrong.embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5)).unwrap();
            let error = error.embed(&["x"], EmbedPurpose::Query).await.unwrap_err();
            assert!(matches!(error, LlmError::Authentication(_)), "{kind:?}: {error}");
        }
        let unknown = connection(&fake, kind).embedder("no-such-model", None, Duration::from_secs(5)).unwrap();
        let error = unknown.embed(&["x"], EmbedPurpose::Query).await.unwrap_err();
        assert!(matches!(error, LlmError::NotFound(_)), "{kind:?}: {error}");
    }
    let anthropic = Connection { kind: ConnectionKind::Anthropic, base_url: None, api_key: Some("k".into()) };
    assert!(matches!(anthropic.embedder("m", None, Duration::from_secs(1)), Err(LlmError::Config(_))));
}

#[tokio::test]
async fn too_long_inputs_too_many_dimensions_and_an_endpoint_down_arrive_classified() {
    let fake = FakeProvider::start(Vec::new()).await;
    fake.set_embedding_max_tokens(8);
    let long = "word ".repeat(20);
    // OpenAI refuses the text; Ollama and Gemini cut it short by default, as they do.
    let openai = connection(&fake, ConnectionKind::Openai).embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5));
    let error = openai.unwrap().embed(&["short", &long], EmbedPurpose::Document).await.unwrap_err();
    assert!(matches!(&error, LlmError::InvalidRequest(info) if info.message.contains("input[1]")), "{error}");
    for kind in [ConnectionKind::Ollama, ConnectionKind::Gemini] {
        let embedder = connection(&fake, kind).embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5)).unwrap();
        assert_eq!(embedder.embed(&[&long], EmbedPurpose::Document).await.unwrap().len(), 1);
    }
    for kind in KINDS {
        let wide = connection(&fake, kind).embedder(FAKE_EMBEDDING_MODEL, Some(65), Duration::from_secs(5)).unwrap();
        let error = wide.embed(&["x"], EmbedPurpose::Query).await.unwrap_err();
        assert!(matches!(error, LlmError::InvalidRequest(_)), "{kind:?}: {error}");
    }
    fake.fail_embeddings(Some(FakeError::Overloaded));
    for kind in KINDS {
        let embedder = connection(&fake, kind).embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5)).unwrap();
        let error = embedder.embed(&["x"], EmbedPurpose::Query).await.unwrap_err();
        assert!(error.is_retryable(), "{kind:?}: {error}");
    }
    fake.fail_embeddings(None);
    drop(fake);
    let gone = Connection { kind: ConnectionKind::Ollama, base_url: Some("http://127.0.0.1:9".into()), api_key: None };
    let error = gone.embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(2)).unwrap();
    assert!(matches!(error.embed(&["x"], EmbedPurpose::Query).await.unwrap_err(), LlmError::Transport(_)));
}

#[tokio::test]
async fn gemini_batches_are_cut_at_its_limit_of_a_hundred() {
    let fake = FakeProvider::start(Vec::new()).await;
    let texts: Vec<String> = (0..250).map(|index| format!("memory number {index}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embedder =
        connection(&fake, ConnectionKind::Gemini).embedder(FAKE_EMBEDDING_MODEL, None, Duration::from_secs(5)).unwrap();
    let vectors = embedder.embed(&texts, EmbedPurpose::Document).await.unwrap();
    assert_eq!(vectors.len(), 250);
    assert!(same(&vectors[249], &fake_embedding("memory number 249", 64)));
    let sizes: Vec<usize> =
        fake.embedding_requests().iter().map(|request| request.body["requests"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [100, 100, 50]);
}
