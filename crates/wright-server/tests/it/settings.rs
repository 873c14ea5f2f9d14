//! The Settings API in process: connections, keys, model lists, a model per agent — against
//! the scripted fake provider, whose model lists refuse a wrong key as the vendors do.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use wright_llm::testing::{FakeProvider, Turn};
use wright_llm::{ProviderEnv, ProviderKind};
use wright_server::domain::models::Models;
use wright_server::token::Auth;
use wright_server::{AppState, Config};

const TOKEN: &str = "test-token";
const KEY: &str = "sk-canvas-SECRET-0123456789wxyz";
const OTHER_KEY: &str = "sk-canvas-OTHER-9876543210abcd";

struct Fixture {
    dir: tempfile::TempDir,
    state: AppState,
    /// Every JSON body any route answered, to search for keys.
    answers: std::sync::Mutex<Vec<String>>,
}

impl Fixture {
    async fn new(models: Models) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::load(dir.path()).unwrap();
        let state = AppState::open(config, Auth::new(TOKEN.into()), models).await.unwrap();
        Self { dir, state, answers: Default::default() }
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
        self.answers.lock().unwrap().push(String::from_utf8_lossy(&bytes).into_owned());
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method.clone(), path, body).await;
        assert!(status.is_success(), "{method} {path} → {status}: {value}");
        value
    }

    /// Sends a message in a new conversation of `agent` and waits for the run to end.
    async fn chat(&self, agent: &str, text: &str) -> Value {
        let created =
            self.ok(Method::POST, &format!("/api/agents/{agent}/conversations"), Some(json!({"title": "t"}))).await;
        let id = created["id"].as_str().unwrap().to_owned();
        self.ok(Method::POST, &format!("/api/conversations/{id}/messages"), Some(json!({"text": text}))).await;
        let started = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let detail = self.ok(Method::GET, &format!("/api/conversations/{id}"), None).await;
            let last = detail["events"].as_array().and_then(|events| events.last()).map(|event| event["kind"].clone());
            if detail["conversation"]["status"] != "running" && last != Some(json!("user")) {
                return detail;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the run did not end: {detail}");
        }
    }
}

fn last_text(detail: &Value) -> String {
    detail["events"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn keys_never_leave_the_server_and_live_in_an_owner_only_file() {
    let fake = FakeProvider::start(vec![Turn::text("Hello from the fake.")]).await;
    fake.accept_key(KEY);
    fake.set_models(&["small-model", "large-model"]);
    let fixture = Fixture::new(Models::none()).await;
    let created = fixture
        .ok(
            Method::POST,
            "/api/settings/connections",
            Some(json!({"name": "Local", "kind": "openai_compatible",
                "base_url": fake.base_url(ProviderKind::OpenaiCompatible), "api_key": KEY})),
        )
        .await;
    assert_eq!((created["key_set"].clone(), created["key_last_four"].clone()), (json!(true), json!("wxyz")));
    let id = created["id"].as_str().unwrap().to_owned();
    let listed = fixture.ok(Method::GET, &format!("/api/settings/connections/{id}/models"), None).await;
    assert_eq!(
        listed["models"],
        json!([{"id": "large-model", "context_window": null}, {"id": "small-model", "context_window": null}])
    );
    let tested = fixture.ok(Method::POST, &format!("/api/settings/connections/{id}/test"), None).await;
    assert_eq!(tested, json!({"ok": true, "model_count": 2, "error": null}));
    fixture
        .ok(Method::PUT, "/api/settings/models/default", Some(json!({"connection_id": id, "model": "small-model"})))
        .await;
    let detail = fixture.chat("default", "hi").await;
    assert_eq!(last_text(&detail), "Hello from the fake.");
    // An edit without a key keeps it.
    let edited = fixture
        .ok(
            Method::PUT,
            &format!("/api/settings/connections/{id}"),
            Some(json!({"name": "Local server", "kind": "openai_compatible",
                "base_url": fake.base_url(ProviderKind::OpenaiCompatible)})),
        )
        .await;
    assert_eq!(edited["key_last_four"], "wxyz");
    for path in [
        "/api/settings/connections",
        "/api/settings/models",
        "/api/status",
        "/api/agents",
        "/api/conversations",
        "/api/executions",
        "/api/openapi.json",
    ] {
        fixture.call(Method::GET, path, None).await;
    }
    let answers = fixture.answers.lock().unwrap().clone();
    assert!(answers.len() > 10);
    for answer in &answers {
        assert!(!answer.contains(KEY) && !answer.contains("SECRET"), "a key in an answer: {answer}");
    }
    // The key reached the provider, and only through the keys file.
    let sent = fake.requests().last().unwrap().headers["authorization"].to_str().unwrap().to_owned();
    assert_eq!(sent, format!("Bearer {KEY}"));
    let secrets = fixture.dir.path().join("secrets.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&secrets).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    for file in std::fs::read_dir(fixture.dir.path()).unwrap() {
        let path = file.unwrap().path();
        if path != secrets && path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!String::from_utf8_lossy(&bytes).contains("SECRET"), "a key in {}", path.display());
        }
    }
    // Removing the connection removes its key and its choices.
    fixture.ok(Method::DELETE, &format!("/api/settings/connections/{id}"), None).await;
    assert!(!std::fs::read_to_string(&secrets).unwrap().contains(KEY));
    assert_eq!(fixture.ok(Method::GET, "/api/settings/models", None).await["default"], Value::Null);
}

#[tokio::test]
async fn a_changed_key_or_model_takes_effect_on_the_next_run_and_the_canvas_wins_over_the_environment() {
    let fake = FakeProvider::start(vec![Turn::text("one"), Turn::text("two"), Turn::text("three")]).await;
    let env = ProviderEnv {
        openai_api_key: Some("sk-env-key-000000000000".into()),
        openai_base_url: Some(fake.base_url(ProviderKind::OpenaiCompatible)),
        wright_model: Some("openai/env-model".into()),
        ..ProviderEnv::default()
    };
    let fixture = Fixture::new(Models::from_environment(&env, &BTreeMap::new()).await).await;
    let status = fixture.ok(Method::GET, "/api/status", None).await;
    assert_eq!(status["provider"]["model"], "env-model");
    let connections = fixture.ok(Method::GET, "/api/settings/connections", None).await;
    let env_connection = &connections["connections"][0];
    assert_eq!((env_connection["id"].clone(), env_connection["read_only"].clone()), (json!("env:openai"), json!(true)));
    assert_eq!(env_connection["key_last_four"], "0000");
    let (refused, _) = fixture.call(Method::DELETE, "/api/settings/connections/env:openai", None).await;
    assert_eq!(refused, StatusCode::CONFLICT);

    let created = fixture
        .ok(
            Method::POST,
            "/api/settings/connections",
            Some(json!({"name": "Canvas", "kind": "openai_compatible",
                "base_url": fake.base_url(ProviderKind::OpenaiCompatible), "api_key": KEY})),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    fixture
        .ok(Method::PUT, "/api/agents/default/model", Some(json!({"connection_id": id, "model": "first-model"})))
        .await;
    assert_eq!(fixture.ok(Method::GET, "/api/status?agent=default", None).await["provider"]["model"], "first-model");
    assert_eq!(last_text(&fixture.chat("default", "a").await), "one");
    let first = fake.requests().last().unwrap().clone();
    assert_eq!(
        (first.body["model"].clone(), first.headers["authorization"].to_str().unwrap()),
        (json!("first-model"), format!("Bearer {KEY}").as_str())
    );

    fixture
        .ok(
            Method::PUT,
            &format!("/api/settings/connections/{id}"),
            Some(json!({"name": "Canvas", "kind": "openai_compatible",
                "base_url": fake.base_url(ProviderKind::OpenaiCompatible), "api_key": OTHER_KEY})),
        )
        .await;
    fixture
        .ok(
            Method::PUT,
            "/api/agents/default/model",
            Some(json!({"connection_id": id, "model": "second-model", "tool_calls": "native"})),
        )
        .await;
    assert_eq!(last_text(&fixture.chat("default", "b").await), "two");
    let second = fake.requests().last().unwrap().clone();
    assert_eq!(second.body["model"], "second-model");
    assert_eq!(second.headers["authorization"].to_str().unwrap(), format!("Bearer {OTHER_KEY}"));

    // Without the agent's own choice, the environment's model applies again.
    fixture.ok(Method::DELETE, "/api/agents/default/model", None).await;
    assert_eq!(last_text(&fixture.chat("default", "c").await), "three");
    assert_eq!(fake.requests().last().unwrap().body["model"], "env-model");
}

#[tokio::test]
async fn a_connection_that_fails_its_test_shows_the_providers_error() {
    let fake = FakeProvider::start(Vec::new()).await;
    let fixture = Fixture::new(Models::none()).await;
    let add = |name: &str, kind: &str, base_url: String, key: &str| json!({"name": name, "kind": kind, "base_url": base_url, "api_key": key});
    let cases = [
        (
            add("wrong key", "openai", fake.base_url(ProviderKind::Openai), "sk-wrong-key-000000"),
            "Incorrect API key provided",
        ),
        (add("wrong anthropic key", "anthropic", fake.url().to_owned(), "sk-ant-wrong-0000"), "invalid x-api-key"),
        (add("wrong gemini key", "gemini", fake.url().to_owned(), "AIza-wrong-0000"), "API key not valid"),
        (
            add("wrong path", "openai_compatible", format!("{}/nowhere", fake.url()), "test-key"),
            "not found: unknown path",
        ),
        (add("no server", "openai_compatible", "http://127.0.0.1:9/v1".to_owned(), ""), "127.0.0.1:9"),
    ];
    for (input, expected) in cases {
        let created = fixture.ok(Method::POST, "/api/settings/connections", Some(input.clone())).await;
        let id = created["id"].as_str().unwrap();
        let tested = fixture.ok(Method::POST, &format!("/api/settings/connections/{id}/test"), None).await;
        assert_eq!(tested["ok"], false, "{input}");
        let error = tested["error"].as_str().unwrap();
        assert!(error.contains(expected), "{input}: {error:?} should contain {expected:?}");
        let (status, listed) = fixture.call(Method::GET, &format!("/api/settings/connections/{id}/models"), None).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{listed}");
        assert!(listed["error"]["message"].as_str().unwrap().contains(expected));
    }
    // The right keys list each vendor's models in its own shape.
    for (kind, base_url) in [
        ("openai", fake.base_url(ProviderKind::Openai)),
        ("anthropic", fake.url().to_owned()),
        ("gemini", fake.url().to_owned()),
        ("ollama", fake.url().to_owned()),
    ] {
        let created = fixture
            .ok(
                Method::POST,
                "/api/settings/connections",
                Some(add(&format!("good {kind}"), kind, base_url, "test-key")),
            )
            .await;
        let id = created["id"].as_str().unwrap();
        let listed = fixture.ok(Method::GET, &format!("/api/settings/connections/{id}/models"), None).await;
        let window = if kind == "gemini" { json!(1_048_576) } else { Value::Null };
        assert_eq!(listed["models"], json!([{"id": "fake-model", "context_window": window}]), "{kind}");
    }
    // A choice on a connection that does not exist is refused; so is an unknown kind.
    let (status, _) = fixture
        .call(Method::PUT, "/api/settings/models/default", Some(json!({"connection_id": "nope", "model": "m"})))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) =
        fixture.call(Method::POST, "/api/settings/connections", Some(json!({"name": "x", "kind": "cohere"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn with_no_model_the_hint_names_the_settings_page_first_and_once() {
    let fixture = Fixture::new(Models::none()).await;
    let status = fixture.ok(Method::GET, "/api/status", None).await;
    let hint = status["setup_hint"].as_str().unwrap();
    assert_eq!(hint.matches("No model is configured").count(), 1, "{hint}");
    assert!(!hint.contains("provider configuration"), "{hint}");
    assert!(hint.find("Settings").unwrap() < hint.find("OPENAI_API_KEY").unwrap(), "{hint}");
}

#[tokio::test]
async fn a_profile_set_on_the_settings_page_says_why_and_the_next_run_uses_it() {
    let fake = FakeProvider::start(vec![Turn::text("one"), Turn::text("two"), Turn::text("three")]).await;
    let env = ProviderEnv {
        openai_api_key: Some("sk-env-key-000000000000".into()),
        openai_base_url: Some(fake.base_url(ProviderKind::OpenaiCompatible)),
        wright_model: Some("openai/env-model".into()),
        ..ProviderEnv::default()
    };
    let fixture = Fixture::new(Models::from_environment(&env, &BTreeMap::new()).await).await;
    let chosen = fixture.ok(Method::GET, "/api/agents/default/model/profile", None).await;
    assert_eq!((chosen["model"].clone(), chosen["saved"].clone()), (json!("openai_compatible/env-model"), Value::Null));
    assert_eq!(last_text(&fixture.chat("default", "a").await), "one");
    assert_eq!(fake.requests().last().unwrap().body.get("temperature"), None, "the standard profile sends none");

    // Out of range: refused, naming the setting; nothing saved.
    let (status, body) =
        fixture.call(Method::PUT, "/api/agents/default/model/profile", Some(json!({"temperature": 5.0}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("temperature"), "{body}");
    let (status, _) =
        fixture.call(Method::PUT, "/api/agents/default/model/profile", Some(json!({"temprature": 0.5}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "an unknown field is refused as every body's is");

    let set = fixture
        .ok(
            Method::PUT,
            "/api/agents/default/model/profile",
            Some(json!({"profile": "small_local", "temperature": 0.3, "reply_tokens": 300})),
        )
        .await;
    assert_eq!(set["profile"], "small_local");
    assert_eq!((set["settings"]["temperature"].as_f64().unwrap() * 10.0).round(), 3.0);
    assert_eq!(set["saved"]["reply_tokens"], 300);
    let reasons: Vec<&str> = set["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(reasons.contains(&"the Settings page sets the profile to small_local"), "{reasons:?}");
    assert!(reasons.contains(&"the Settings page sets temperature, reply_tokens"), "{reasons:?}");
    assert_eq!(last_text(&fixture.chat("default", "b").await), "two");
    let request = fake.requests().last().unwrap().body.clone();
    assert_eq!((request["temperature"].as_f64().unwrap() * 10.0).round(), 3.0, "{request}");

    // Cleared: the chosen profile applies again.
    let cleared = fixture.ok(Method::DELETE, "/api/agents/default/model/profile", None).await;
    assert_eq!((cleared["profile"].clone(), cleared["saved"].clone()), (json!("standard"), Value::Null));
    assert_eq!(last_text(&fixture.chat("default", "c").await), "three");
    assert_eq!(fake.requests().last().unwrap().body.get("temperature"), None);
}
