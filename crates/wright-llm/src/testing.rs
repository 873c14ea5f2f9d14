//! A scripted fake provider: a local HTTP server that answers each request with the next
//! [`Turn`] of a script, in the real wire format the request asked for — OpenAI Chat
//! Completions (`…/chat/completions`), OpenAI Responses (`…/responses`), Anthropic Messages
//! (`…/v1/messages`) or Gemini
//! (`…:streamGenerateContent?alt=sse`, `…:generateContent`) — streaming or not, as the
//! request's `stream` field says. Text is streamed in small pieces, tool-call arguments split
//! mid-token, parallel calls interleaved by index; errors come with the vendor's real status,
//! body and retry hints. Every request is recorded for assertions. Like the real APIs, it
//! refuses a history in which a tool call is not followed by its result (or a result has no
//! call), with each vendor's own status and message ([`FakeProvider::refusals`]).
//!
//! ```ignore
//! let fake = FakeProvider::start(vec![
//!     Turn::tool_calls(vec![("get_time", json!({})), ("get_weather", json!({"city": "Oslo"}))]),
//!     Turn::Error(FakeError::RateLimit { retry_after: Duration::from_millis(5) }),
//!     Turn::text("Done."),
//! ]).await;
//! let provider = fake.config(ProviderKind::Anthropic).build()?;
//! // … or point the binary at it: OPENAI_BASE_URL=fake.base_url(ProviderKind::Openai)
//! ```
//!
//! The server runs on a task owned by the [`FakeProvider`]; dropping it stops the server.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::{ProviderConfig, ProviderKind, RetryPolicy};

/// What the fake reports for every turn that finishes, on every wire that reports usage
/// (OpenAI-compatible streams are not asked and say nothing): prompt tokens, of which cached,
/// and completion tokens.
pub const FAKE_USAGE: FakeUsage = FakeUsage { prompt_tokens: 10, cached_prompt_tokens: 4, completion_tokens: 5 };

/// Token counts the fake reports (see [`FAKE_USAGE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeUsage {
    pub prompt_tokens: u64,
    pub cached_prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Text, then a normal finish.
    Text(String),
    /// Optional text, then tool calls made in parallel, then a tool-calls finish.
    ToolCalls { text: String, calls: Vec<FakeCall> },
    /// An HTTP error before any body.
    Error(FakeError),
    /// Text, then an error event inside the HTTP-200 stream.
    StreamError { text: String, message: String },
    /// Text, then the body ends without a finish (an incomplete response).
    Truncated { text: String },
    /// Text, then nothing more until the client goes away (for cancellation tests).
    Hang { text: String },
}

impl Turn {
    pub fn text(text: impl Into<String>) -> Self {
        Turn::Text(text.into())
    }

    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Turn::tool_calls(vec![(name, arguments)])
    }

    pub fn tool_calls(calls: Vec<(&str, Value)>) -> Self {
        Turn::ToolCalls {
            text: String::new(),
            calls: calls.into_iter().map(|(name, arguments)| FakeCall::new(name, arguments)).collect(),
        }
    }
}

/// A tool call the fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeCall {
    pub name: String,
    /// Usually an object; a `Value::String` is sent as raw argument text (to script invalid
    /// JSON on OpenAI-style wires).
    pub arguments: Value,
}

impl FakeCall {
    pub fn new(name: &str, arguments: Value) -> Self {
        Self { name: name.to_owned(), arguments }
    }

    fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// An HTTP error, rendered with each vendor's status, body and retry hint.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeError {
    RateLimit {
        retry_after: Duration,
    },
    ContextLength,
    Overloaded,
    ServerError,
    Authentication,
    /// A 401 whose message quotes the credential the request carried, as some gateways and
    /// OpenAI-compatible servers do (`Incorrect API key provided: Bearer sk-…`).
    EchoingKey,
}

/// A request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// Chooses the next turn from the request's body once the script is used up (a model that
/// reacts to what it reads, e.g. one that obeys instructions in tool results).
pub type Responder = Arc<dyn Fn(&Value) -> Turn + Send + Sync>;

#[derive(Default)]
struct Shared {
    script: Mutex<std::collections::VecDeque<Turn>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Bodies the client dropped before their end (see [`FakeProvider::disconnects`]).
    disconnects: AtomicUsize,
    /// Requests refused for their history, with the vendor's message.
    refusals: Mutex<Vec<String>>,
    /// What the model lists answer (see [`FakeProvider::set_models`]).
    models: Mutex<Vec<String>>,
    /// The key the model lists and embedding endpoints accept (see [`FakeProvider::accept_key`]).
    key: Mutex<String>,
    /// What the embedding endpoints know and refuse (see [`FakeProvider::set_embedding_models`]).
    embeddings: Mutex<FakeEmbeddings>,
}

/// The fake's embedding models: their names, their native width, the longest input they take
/// (in the fake's tokens, four characters each), and an error every embedding request gets
/// while one is set (the endpoint "down").
#[derive(Debug, Clone)]
struct FakeEmbeddings {
    models: Vec<String>,
    dimensions: usize,
    max_tokens: usize,
    failure: Option<FakeError>,
}

impl Default for FakeEmbeddings {
    fn default() -> Self {
        Self { models: vec![FAKE_EMBEDDING_MODEL.to_owned()], dimensions: 64, max_tokens: 8_192, failure: None }
    }
}

/// The running fake server. Dropping it stops the server task.
pub struct FakeProvider {
    url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// What the fake answers once its script is used up.
pub const SCRIPT_EXHAUSTED: &str = "(the fake provider's script is exhausted)";

impl FakeProvider {
    /// Starts a server on 127.0.0.1 at a free port.
    pub async fn start(script: Vec<Turn>) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            models: Mutex::new(vec!["fake-model".to_owned()]),
            key: Mutex::new(FAKE_KEY.to_owned()),
            ..Shared::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "fake provider server stopped");
            }
        });
        Self { url, shared, server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The base URL a provider of `kind` is configured with to reach this server.
    pub fn base_url(&self, kind: ProviderKind) -> String {
        match kind {
            ProviderKind::Openai | ProviderKind::OpenaiResponses | ProviderKind::OpenaiCompatible => {
                format!("{}/v1", self.url)
            }
            ProviderKind::Anthropic | ProviderKind::Gemini => self.url.clone(),
        }
    }

    /// A config for `kind` pointed at this server, with a test key and millisecond retries.
    pub fn config(&self, kind: ProviderKind) -> ProviderConfig {
        let mut config =
            ProviderConfig::new(kind, "fake-model").with_base_url(self.base_url(kind)).with_api_key(FAKE_KEY);
        config.retry = RetryPolicy { max_retries: 3, initial_delay_ms: 1, max_delay_ms: 1_000 };
        config
    }

    /// From now on, once the script is used up, each turn is what `responder` makes of the
    /// request's body (in the wire format the request used).
    pub fn respond_with(&self, responder: Responder) {
        *self.shared.responder.lock().expect("responder lock") = Some(responder);
    }

    /// Appends turns to the script.
    pub fn push(&self, turns: impl IntoIterator<Item = Turn>) {
        self.shared.script.lock().expect("script lock").extend(turns);
    }

    /// The models its lists name from now on (`fake-model` at start).
    pub fn set_models(&self, models: &[&str]) {
        *self.shared.models.lock().expect("models lock") = models.iter().map(|model| (*model).to_owned()).collect();
    }

    /// The key the model lists accept from now on ([`FAKE_KEY`] at start); any other is
    /// refused as the vendor refuses a wrong key.
    pub fn accept_key(&self, key: &str) {
        *self.shared.key.lock().expect("key lock") = key.to_owned();
    }

    /// The embedding models the embedding endpoints serve from now on (only
    /// [`FAKE_EMBEDDING_MODEL`] at start); any other is refused as the vendor refuses an
    /// unknown model.
    pub fn set_embedding_models(&self, models: &[&str]) {
        self.shared.embeddings.lock().expect("embeddings lock").models =
            models.iter().map(|model| (*model).to_owned()).collect();
    }

    /// The native width of the fake's embedding vectors from now on (64 at start).
    pub fn set_embedding_dimensions(&self, dimensions: usize) {
        self.shared.embeddings.lock().expect("embeddings lock").dimensions = dimensions.max(1);
    }

    /// The longest input the embedding models take, in the fake's tokens (four characters
    /// each; 8,192 at start). OpenAI refuses a longer one; Ollama and Gemini cut it short,
    /// as they do by default.
    pub fn set_embedding_max_tokens(&self, tokens: usize) {
        self.shared.embeddings.lock().expect("embeddings lock").max_tokens = tokens;
    }

    /// From now on every embedding request gets this error, in the vendor's shape (None: answer
    /// again). Model requests are not affected.
    pub fn fail_embeddings(&self, error: Option<FakeError>) {
        self.shared.embeddings.lock().expect("embeddings lock").failure = error;
    }

    /// The embedding requests received so far (also in [`FakeProvider::requests`]).
    pub fn embedding_requests(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|request| is_embedding_path(&request.path_and_query)).collect()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    /// The vendor messages of requests refused because their history broke the vendor's
    /// rules (a tool call without its result right after it, a result without its call).
    /// Such a request consumes no turn of the script, as a real API would not answer it.
    pub fn refusals(&self) -> Vec<String> {
        self.shared.refusals.lock().expect("refusals lock").clone()
    }

    /// How many streamed bodies were dropped by the client before they ended — a
    /// cancelled `Hang` turn counts one.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    OpenAi,
    /// OpenAI's Responses API (`/responses`), whose errors look like Chat Completions'.
    Responses,
    Anthropic,
    Gemini,
}

async fn handle(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path_and_query = uri.path_and_query().map(ToString::to_string).unwrap_or_default();
    // The probes of a compatible provider (llama.cpp's /props, Ollama's /api/show, LM Studio's
    // /api/v0/models) are not model requests: the fake says nothing of itself, as a hosted API,
    // and does not record them, so scripts count model turns only.
    if matches!(uri.path(), "/props" | "/api/show" | "/api/v0/models") {
        return plain(StatusCode::NOT_FOUND, "application/json", json!({"error": "not found"}).to_string());
    }
    // Nor are model lists (the Settings page's, and the probe's look for vLLM's name in one).
    if let Some(response) = model_list(&shared, uri.path(), &headers) {
        return response;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded_headers = headers.clone();
    shared.requests.lock().expect("requests lock").push(RecordedRequest {
        path_and_query: path_and_query.clone(),
        headers,
        body: request.clone(),
    });
    let path = uri.path();
    if is_embedding_path(path) {
        return embeddings(&shared, path, &recorded_headers, &request);
    }
    let (format, streaming) = if path.ends_with("/chat/completions") {
        (Format::OpenAi, request["stream"].as_bool().unwrap_or(false))
    } else if path.ends_with("/responses") {
        (Format::Responses, request["stream"].as_bool().unwrap_or(false))
    } else if path.ends_with("/v1/messages") {
        (Format::Anthropic, request["stream"].as_bool().unwrap_or(false))
    } else if path.contains(":streamGenerateContent") {
        (Format::Gemini, true)
    } else if path.contains(":generateContent") {
        (Format::Gemini, false)
    } else {
        return plain(
            StatusCode::NOT_FOUND,
            "application/json",
            json!({"error": {"message": "unknown path"}}).to_string(),
        );
    };
    // As strict as each real API: a history that breaks the pairing of calls and results is
    // refused with the vendor's own status and body, before any turn is spent.
    if let Err(message) = check_history(format, &request) {
        shared.refusals.lock().expect("refusals lock").push(message.clone());
        return refusal(format, &message);
    }
    let include_usage = request["stream_options"]["include_usage"].as_bool().unwrap_or(false);
    let scripted = shared.script.lock().expect("script lock").pop_front();
    let responder = shared.responder.lock().expect("responder lock").clone();
    let turn = match (scripted, responder) {
        (Some(turn), _) => turn,
        (None, Some(responder)) => responder(&request),
        (None, None) => Turn::text(SCRIPT_EXHAUSTED),
    };
    let (text, calls, ending) = match turn {
        Turn::Error(FakeError::EchoingKey) => return echoing_key(format, &recorded_headers),
        Turn::Error(error) => return error_response(format, &error),
        Turn::Text(text) => (text, Vec::new(), Ending::Finish),
        Turn::ToolCalls { text, calls } => (text, calls, Ending::Finish),
        Turn::StreamError { text, message } => (text, Vec::new(), Ending::Error(message)),
        Turn::Truncated { text } => (text, Vec::new(), Ending::Eof),
        Turn::Hang { text } => (text, Vec::new(), Ending::Hang),
    };
    if !streaming {
        let body = match format {
            Format::OpenAi => openai_whole(&text, &calls),
            Format::Responses => responses_whole(&responses_output(&text, &calls)),
            Format::Anthropic => anthropic_whole(&text, &calls),
            Format::Gemini => gemini_whole(&text, &calls),
        };
        return plain(StatusCode::OK, "application/json", body.to_string());
    }
    let events = match format {
        Format::OpenAi => openai_events(&text, &calls, &ending, include_usage),
        Format::Responses => responses_events(&text, &calls, &ending),
        Format::Anthropic => anthropic_events(&text, &calls, &ending),
        Format::Gemini => gemini_events(&text, &calls, &ending),
    };
    let frames = futures::stream::iter(events.into_iter().map(|event| Ok::<_, Infallible>(Bytes::from(event))));
    let body = if ending == Ending::Hang {
        // The guard lives in the closure: it drops, and counts, when the client goes away.
        let guard = DisconnectGuard(Arc::clone(&shared));
        Body::from_stream(frames.chain(futures::stream::pending()).map(move |frame| {
            guard.keep();
            frame
        }))
    } else {
        Body::from_stream(frames)
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(body)
        .expect("valid response")
}

/// Checks a request's history the way the vendor does: every tool call is answered by
/// exactly one result right after it, and no result answers a call that is not there.
/// The messages are the vendors' own.
fn check_history(format: Format, request: &Value) -> Result<(), String> {
    let list = |key: &str| request[key].as_array().cloned().unwrap_or_default();
    match format {
        Format::OpenAi => {
            let messages = list("messages");
            let mut index = 0;
            while index < messages.len() {
                let message = &messages[index];
                if message["role"] == "tool" {
                    return Err("Invalid parameter: messages with role 'tool' must be a response to a preceeding \
                                message with 'tool_calls'."
                        .to_owned());
                }
                let mut open: Vec<String> = message["tool_calls"]
                    .as_array()
                    .map(|calls| calls.iter().filter_map(|call| call["id"].as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                index += 1;
                if open.is_empty() {
                    continue;
                }
                while index < messages.len() && messages[index]["role"] == "tool" {
                    let id = messages[index]["tool_call_id"].as_str().unwrap_or_default();
                    match open.iter().position(|open_id| open_id == id) {
                        Some(position) => {
                            open.remove(position);
                        }
                        None => {
                            return Err("Invalid parameter: messages with role 'tool' must be a response to a \
                                        preceeding message with 'tool_calls'."
                                .to_owned());
                        }
                    }
                    index += 1;
                }
                if !open.is_empty() {
                    return Err(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each \
                         'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        open.join(", ")
                    ));
                }
            }
            Ok(())
        }
        Format::Responses => {
            let items = list("input");
            for (index, item) in items.iter().enumerate() {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if item["type"] == "function_call" {
                    let answered = items[index + 1..]
                        .iter()
                        .any(|later| later["type"] == "function_call_output" && later["call_id"] == call_id);
                    if !answered {
                        return Err(format!("No tool output found for function call {call_id}."));
                    }
                }
                if item["type"] == "function_call_output" {
                    let called = items[..index]
                        .iter()
                        .any(|earlier| earlier["type"] == "function_call" && earlier["call_id"] == call_id);
                    if !called {
                        return Err(format!("No tool call found for function call output with call_id {call_id}."));
                    }
                }
            }
            Ok(())
        }
        Format::Anthropic => {
            let messages = list("messages");
            let blocks = |message: &Value, kind: &str, key: &str| -> Vec<String> {
                message["content"]
                    .as_array()
                    .map(|blocks| {
                        blocks
                            .iter()
                            .filter(|block| block["type"] == kind)
                            .filter_map(|block| block[key].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for (index, message) in messages.iter().enumerate() {
                let used = if message["role"] == "assistant" { blocks(message, "tool_use", "id") } else { Vec::new() };
                let next_results =
                    messages.get(index + 1).map(|next| blocks(next, "tool_result", "tool_use_id")).unwrap_or_default();
                let missing: Vec<&String> = used.iter().filter(|id| !next_results.contains(id)).collect();
                if !missing.is_empty() {
                    let ids: Vec<&str> = missing.iter().map(|id| id.as_str()).collect();
                    return Err(format!(
                        "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. \
                         Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        index + 1,
                        ids.join(", ")
                    ));
                }
                let previous_uses = match index.checked_sub(1).map(|previous| &messages[previous]) {
                    Some(previous) if previous["role"] == "assistant" => blocks(previous, "tool_use", "id"),
                    _ => Vec::new(),
                };
                for (position, id) in blocks(message, "tool_result", "tool_use_id").iter().enumerate() {
                    if !previous_uses.contains(id) {
                        return Err(format!(
                            "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` \
                             blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the \
                             previous message."
                        ));
                    }
                }
            }
            Ok(())
        }
        Format::Gemini => {
            let contents = list("contents");
            let count = |content: &Value, key: &str| {
                content["parts"]
                    .as_array()
                    .map_or(0, |parts| parts.iter().filter(|part| part.get(key).is_some()).count())
            };
            for (index, content) in contents.iter().enumerate() {
                let responses = count(content, "functionResponse");
                let previous_calls =
                    index.checked_sub(1).map_or(0, |previous| count(&contents[previous], "functionCall"));
                let calls = count(content, "functionCall");
                let next_responses = contents.get(index + 1).map_or(0, |next| count(next, "functionResponse"));
                if (responses > 0 && previous_calls == 0) || (calls > 0 && next_responses == 0) {
                    return Err(
                        "Please ensure that function response turn comes immediately after a function call turn."
                            .to_owned(),
                    );
                }
                if calls > 0 && next_responses != calls {
                    return Err("Please ensure that the number of function response parts is equal to the number of \
                                function call parts of the function call turn."
                        .to_owned());
                }
            }
            Ok(())
        }
    }
}

/// A refused request in the vendor's own error envelope (status 400).
fn refusal(format: Format, message: &str) -> Response {
    let body = match format {
        Format::OpenAi | Format::Responses => json!({"error": {
            "message": message, "type": "invalid_request_error",
            "param": if format == Format::OpenAi { "messages" } else { "input" }, "code": null}}),
        Format::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error", "message": message},
            "request_id": "req_011CFakeRefusal"}),
        Format::Gemini => json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}),
    };
    plain(StatusCode::BAD_REQUEST, "application/json", body.to_string())
}

struct DisconnectGuard(Arc<Shared>);

impl DisconnectGuard {
    fn keep(&self) {}
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        self.0.disconnects.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    Finish,
    Error(String),
    Eof,
    Hang,
}

/// The key a fake accepts at start and puts in its configs.
pub const FAKE_KEY: &str = "test-key";

/// The model-list endpoints, in each vendor's shape and with its refusal of a missing or
/// wrong key: OpenAI's `GET /v1/models` (Bearer), Anthropic's `GET /v1/models` (`x-api-key`
/// with `anthropic-version`), Gemini's `GET /v1beta/models` (`x-goog-api-key`), Ollama's
/// `GET /api/tags` (no key). None for any other path.
fn model_list(shared: &Shared, path: &str, headers: &HeaderMap) -> Option<Response> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let models = shared.models.lock().expect("models lock").clone();
    let key = shared.key.lock().expect("key lock").clone();
    let json = |body: Value| plain(StatusCode::OK, "application/json", body.to_string());
    let unauthorized = |body: Value| plain(StatusCode::UNAUTHORIZED, "application/json", body.to_string());
    if path.ends_with("/api/tags") {
        let models: Vec<Value> = models
            .iter()
            .map(|name| {
                json!({"name": name, "model": name, "modified_at": "2025-05-01T10:00:00Z", "size": 5_000_000_000u64,
                "digest": "sha256:fake", "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B"}})
            })
            .collect();
        return Some(json(json!({"models": models})));
    }
    if path.ends_with("/v1beta/models") {
        if header("x-goog-api-key").as_deref() != Some(key.as_str()) {
            return Some(plain(
                StatusCode::BAD_REQUEST,
                "application/json",
                json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID"}]}})
                .to_string(),
            ));
        }
        let mut listed: Vec<Value> = models
            .iter()
            .map(|name| {
                json!({"name": format!("models/{name}"), "displayName": name, "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536, "supportedGenerationMethods": ["generateContent", "countTokens"]})
            })
            .collect();
        listed.push(json!({"name": "models/text-embedding-004", "inputTokenLimit": 2048,
            "supportedGenerationMethods": ["embedContent"]}));
        return Some(json(json!({"models": listed})));
    }
    if !path.ends_with("/v1/models") {
        return None;
    }
    if header("anthropic-version").is_some() {
        if header("x-api-key").as_deref() != Some(key.as_str()) {
            return Some(unauthorized(json!({"type": "error", "error": {"type": "authentication_error",
                "message": "invalid x-api-key"}, "request_id": "req_fake"})));
        }
        let data: Vec<Value> = models
            .iter()
            .map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-05-14T00:00:00Z"}))
            .collect();
        let (first, last) = (models.first().cloned(), models.last().cloned());
        return Some(json(json!({"data": data, "has_more": false, "first_id": first, "last_id": last})));
    }
    if header("authorization") != Some(format!("Bearer {key}")) {
        return Some(unauthorized(json!({"error": {"message": "Incorrect API key provided.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})));
    }
    let data: Vec<Value> = models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 1_715_367_049, "owned_by": "system"}))
        .collect();
    Some(json(json!({"object": "list", "data": data})))
}

fn plain(status: StatusCode, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))
        .expect("valid response")
}

/// Text in pieces of a few characters, so deltas are many and split words.
fn pieces(text: &str) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters.chunks(5).map(|chunk| chunk.iter().collect()).collect()
}

/// Argument text split into fragments of three bytes' worth of characters, mid-token.
fn fragments(text: &str) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters.chunks(3).map(|chunk| chunk.iter().collect()).collect()
}

fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

fn named_sse(data: &Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or("message"))
}

fn call_id(index: usize) -> String {
    format!("call_fake_{index}")
}

fn openai_events(text: &str, calls: &[FakeCall], ending: &Ending, include_usage: bool) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        sse(&json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    events.extend(pieces(text).iter().map(|piece| chunk(json!({"content": piece}), Value::Null)));
    for (index, call) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call_id(index), "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for fragment in fragments(&call.arguments_text()) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            ));
        }
    }
    match ending {
        Ending::Finish => {
            events.push(chunk(json!({}), json!(if calls.is_empty() { "stop" } else { "tool_calls" })));
            if include_usage {
                events.push(sse(&json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                        "prompt_tokens_details": {"cached_tokens": 4}}})));
            }
            events.push("data: [DONE]\n\n".to_owned());
        }
        Ending::Error(message) => events.push(format!(
            "event: error\ndata: {}\n\n",
            json!({"error": {"message": message, "type": "server_error", "code": null}})
        )),
        Ending::Eof | Ending::Hang => {}
    }
    events
}

/// The output items of a Responses reply: a message with the text (if any), then one
/// function_call item per call.
fn responses_output(text: &str, calls: &[FakeCall]) -> Vec<Value> {
    let mut output = Vec::new();
    if !text.is_empty() {
        output.push(json!({"id": "msg_fake", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}));
    }
    for (index, call) in calls.iter().enumerate() {
        output.push(json!({"id": format!("fc_fake_{index}"), "type": "function_call", "call_id": call_id(index),
            "name": call.name, "arguments": call.arguments_text(), "status": "completed"}));
    }
    output
}

fn responses_whole(output: &[Value]) -> Value {
    json!({"id": "resp_fake", "object": "response", "status": "completed", "model": "fake-model", "output": output,
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 5, "total_tokens": 15}})
}

/// The Responses stream as OpenAI sends it: named events, text deltas keyed by item, a
/// function_call item added with empty arguments, argument deltas keyed by item id, its
/// `.done`, the item done, and `response.completed` (no `[DONE]`).
fn responses_events(text: &str, calls: &[FakeCall], ending: &Ending) -> Vec<String> {
    let output = responses_output(text, calls);
    let mut events = vec![named_sse(&json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp_fake", "object": "response", "status": "in_progress", "output": []}}))];
    let mut item_index = 0;
    if !text.is_empty() {
        events.push(named_sse(&json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "msg_fake", "type": "message", "role": "assistant", "status": "in_progress", "content": []}})));
        for piece in pieces(text) {
            events.push(named_sse(&json!({"type": "response.output_text.delta", "item_id": "msg_fake",
                "output_index": 0, "content_index": 0, "delta": piece})));
        }
        if *ending != Ending::Finish && calls.is_empty() {
            return with_responses_ending(events, ending);
        }
        events.push(named_sse(&json!({"type": "response.output_item.done", "output_index": 0, "item": output[0]})));
        item_index = 1;
    }
    for (offset, call) in calls.iter().enumerate() {
        let index = item_index + offset;
        let item_id = format!("fc_fake_{offset}");
        events.push(named_sse(&json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": item_id, "type": "function_call", "call_id": call_id(offset), "name": call.name,
                "arguments": "", "status": "in_progress"}})));
        for fragment in fragments(&call.arguments_text()) {
            events.push(named_sse(&json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": index, "delta": fragment})));
        }
        events.push(named_sse(&json!({"type": "response.function_call_arguments.done", "item_id": item_id,
            "output_index": index, "arguments": call.arguments_text()})));
        events.push(named_sse(&json!({"type": "response.output_item.done", "output_index": index,
            "item": output[index]})));
    }
    if *ending != Ending::Finish {
        return with_responses_ending(events, ending);
    }
    events.push(named_sse(&json!({"type": "response.completed", "response": responses_whole(&output)})));
    events
}

fn with_responses_ending(mut events: Vec<String>, ending: &Ending) -> Vec<String> {
    if let Ending::Error(message) = ending {
        events.push(named_sse(&json!({"type": "error", "code": "server_error", "message": message, "param": null})));
    }
    events
}

fn anthropic_events(text: &str, calls: &[FakeCall], ending: &Ending) -> Vec<String> {
    let mut events = vec![named_sse(&json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
        "role": "assistant", "model": "fake-model", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 6, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 0, "output_tokens": 1}}}))];
    let mut index = 0;
    if !text.is_empty() {
        events.push(named_sse(
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        events.push(named_sse(&json!({"type": "ping"})));
        for piece in pieces(text) {
            events.push(named_sse(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": piece}})));
        }
        if *ending != Ending::Finish && calls.is_empty() {
            return with_anthropic_ending(events, ending);
        }
        events.push(named_sse(&json!({"type": "content_block_stop", "index": 0})));
        index = 1;
    }
    for (offset, call) in calls.iter().enumerate() {
        let block = index + offset;
        events.push(named_sse(&json!({"type": "content_block_start", "index": block,
            "content_block": {"type": "tool_use", "id": call_id(offset), "name": call.name, "input": {}}})));
        events.push(named_sse(&json!({"type": "content_block_delta", "index": block,
            "delta": {"type": "input_json_delta", "partial_json": ""}})));
        for fragment in fragments(&call.arguments_text()) {
            events.push(named_sse(&json!({"type": "content_block_delta", "index": block,
                "delta": {"type": "input_json_delta", "partial_json": fragment}})));
        }
        events.push(named_sse(&json!({"type": "content_block_stop", "index": block})));
    }
    if *ending != Ending::Finish {
        return with_anthropic_ending(events, ending);
    }
    events.push(named_sse(&json!({"type": "message_delta",
        "delta": {"stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" }, "stop_sequence": null},
        "usage": {"output_tokens": 5}})));
    events.push(named_sse(&json!({"type": "message_stop"})));
    events
}

fn with_anthropic_ending(mut events: Vec<String>, ending: &Ending) -> Vec<String> {
    if let Ending::Error(message) = ending {
        events.push(named_sse(&json!({"type": "error", "error": {"type": "overloaded_error", "message": message}})));
    }
    events
}

fn gemini_events(text: &str, calls: &[FakeCall], ending: &Ending) -> Vec<String> {
    // Gemini ends events with CRLF CRLF.
    let event = |value: Value| format!("data: {value}\r\n\r\n");
    let usage =
        json!({"promptTokenCount": 10, "cachedContentTokenCount": 4, "candidatesTokenCount": 5, "totalTokenCount": 15});
    let mut events: Vec<String> = pieces(text)
        .iter()
        .map(|piece| {
            event(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}],
            "usageMetadata": usage}))
        })
        .collect();
    match ending {
        Ending::Finish => {
            let parts: Vec<Value> = calls
                .iter()
                .map(|call| json!({"functionCall": {"name": call.name, "args": object_arguments(call)}}))
                .collect();
            let parts = if parts.is_empty() { vec![json!({"text": ""})] } else { parts };
            events.push(event(json!({"candidates": [{"content": {"role": "model", "parts": parts},
                "finishReason": "STOP", "index": 0}], "usageMetadata": usage})));
        }
        Ending::Error(message) => {
            events.push(event(json!({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}})));
        }
        Ending::Eof | Ending::Hang => {}
    }
    events
}

/// Gemini (and Anthropic whole responses) carry arguments as objects; raw text goes in as a
/// string field so the call still arrives.
fn object_arguments(call: &FakeCall) -> Value {
    match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        other => json!({ "raw": other }),
    }
}

fn openai_whole(text: &str, calls: &[FakeCall]) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            json!({"id": call_id(index), "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_text()}})
        })
        .collect();
    json!({"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant",
            "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
            "tool_calls": if tool_calls.is_empty() { Value::Null } else { json!(tool_calls) }},
            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "prompt_tokens_details": {"cached_tokens": 4}}})
}

fn anthropic_whole(text: &str, calls: &[FakeCall]) -> Value {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (index, call) in calls.iter().enumerate() {
        content.push(
            json!({"type": "tool_use", "id": call_id(index), "name": call.name, "input": object_arguments(call)}),
        );
    }
    json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model", "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "usage": {"input_tokens": 6, "cache_read_input_tokens": 4, "output_tokens": 5}})
}

fn gemini_whole(text: &str, calls: &[FakeCall]) -> Value {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    for call in calls {
        parts.push(json!({"functionCall": {"name": call.name, "args": object_arguments(call)}}));
    }
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "cachedContentTokenCount": 4, "candidatesTokenCount": 5, "totalTokenCount": 15}})
}

fn error_response(format: Format, error: &FakeError) -> Response {
    let (status, body, headers): (u16, Value, Vec<(&str, String)>) = match (format, error) {
        (Format::OpenAi | Format::Responses, FakeError::RateLimit { retry_after }) => (
            429,
            json!({"error": {"message": "Rate limit reached for fake-model. Please try again in 1ms.", "type": "requests",
                "param": null, "code": "rate_limit_exceeded"}}),
            vec![("retry-after-ms", retry_after.as_millis().to_string())],
        ),
        (Format::OpenAi | Format::Responses, FakeError::ContextLength) => (
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error",
                "param": "messages", "code": "context_length_exceeded"}}),
            Vec::new(),
        ),
        (Format::OpenAi | Format::Responses, FakeError::Overloaded) => (
            503,
            json!({"error": {"message": "The engine is currently overloaded.", "type": "server_error", "code": null}}),
            Vec::new(),
        ),
        (Format::OpenAi | Format::Responses, FakeError::ServerError) => (
            500,
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "code": null}}),
            Vec::new(),
        ),
        (Format::OpenAi | Format::Responses, FakeError::Authentication | FakeError::EchoingKey) => (
            401,
            json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}),
            Vec::new(),
        ),
        (Format::Anthropic, error) => {
            let (status, kind, message) = match error {
                FakeError::RateLimit { .. } => (429, "rate_limit_error", "This request would exceed the rate limit."),
                FakeError::ContextLength => {
                    (400, "invalid_request_error", "prompt is too long: 208751 tokens > 200000 maximum")
                }
                FakeError::Overloaded => (529, "overloaded_error", "Overloaded"),
                FakeError::ServerError => (500, "api_error", "Internal server error"),
                FakeError::Authentication | FakeError::EchoingKey => (401, "authentication_error", "invalid x-api-key"),
            };
            let headers = match error {
                FakeError::RateLimit { retry_after } => vec![("retry-after", format!("{}", retry_after.as_secs_f64()))],
                _ => Vec::new(),
            };
            (
                status,
                json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}),
                headers,
            )
        }
        (Format::Gemini, error) => {
            let (status, google_status, message, details) = match error {
                FakeError::RateLimit { retry_after } => (
                    429,
                    "RESOURCE_EXHAUSTED",
                    "Resource exhausted. Please try again later.",
                    json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": format!("{}s", retry_after.as_secs_f64())}]),
                ),
                FakeError::ContextLength => (
                    400,
                    "INVALID_ARGUMENT",
                    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                    json!([]),
                ),
                FakeError::Overloaded => {
                    (503, "UNAVAILABLE", "The model is overloaded. Please try again later.", json!([]))
                }
                FakeError::ServerError => (500, "INTERNAL", "An internal error has occurred.", json!([])),
                FakeError::Authentication | FakeError::EchoingKey => (
                    400,
                    "INVALID_ARGUMENT",
                    "API key not valid. Please pass a valid API key.",
                    json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
                ),
            };
            (
                status,
                json!({"error": {"code": status, "message": message, "status": google_status, "details": details}}),
                Vec::new(),
            )
        }
    };
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).expect("valid status"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder.body(Body::from(body.to_string())).expect("valid response")
}

/// A 401 in `format`'s error shape whose message quotes the credential header the request
/// carried (see [`FakeError::EchoingKey`]).
fn echoing_key(format: Format, headers: &HeaderMap) -> Response {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("").to_owned();
    let body = match format {
        Format::OpenAi | Format::Responses => {
            let sent = header("authorization");
            json!({"error": {"message": format!("Incorrect API key provided: {sent}. You can find your API key at https://platform.openai.com/account/api-keys."),
                "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
        }
        Format::Anthropic => {
            let sent = header("x-api-key");
            json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key: {sent}")},
                "request_id": "req_fake"})
        }
        Format::Gemini => {
            let sent = header("x-goog-api-key");
            json!({"error": {"code": 401, "message": format!("API key not valid: {sent}"), "status": "UNAUTHENTICATED"}})
        }
    };
    plain(StatusCode::UNAUTHORIZED, "application/json", body.to_string())
}

/// The embedding model the fake serves at start.
pub const FAKE_EMBEDDING_MODEL: &str = "fake-embed";

fn is_embedding_path(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or(path);
    path.ends_with("/embeddings") || path.ends_with(":batchEmbedContents") || path.ends_with("/api/embed")
}

/// Words that carry no meaning of their own for the fake's model (a real embedding model
/// weighs them little too).
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "is", "are", "was", "were", "be", "does", "do",
    "did", "which", "what", "who", "whom", "how", "his", "her", "hers", "she", "he", "it", "its", "has", "have", "had",
    "with", "my", "your", "i", "you", "we", "they", "that", "this", "s",
];

/// The fake model's whole notion of meaning: words of one group embed as one concept, so a
/// text can be found by a word it does not contain.
const CONCEPTS: &[(&str, &[&str])] = &[
    ("car", &["car", "cars", "automobile", "automobiles", "vehicle", "vehicles", "volvo"]),
    ("drive", &["drive", "drives", "driving", "drove", "driven"]),
    ("dog", &["dog", "dogs", "puppy", "puppies", "hound"]),
    ("food", &["food", "meal", "meals", "dinner", "lunch", "eat", "eats", "eating", "vegetarian", "vegan"]),
    ("doctor", &["doctor", "doctors", "physician", "clinic", "dentist"]),
    ("music", &["music", "song", "songs", "band", "concert", "guitar", "piano"]),
];

/// The fake model's embedding of `text` with `dimensions` components: a bag of concepts —
/// each word lowercased, stop words dropped, mapped to its concept (or itself, a trailing
/// plural `s` cut), hashed (FNV-1a) to one component with a sign — scaled to length 1. The
/// same text always gets the same vector; a text of stop words only gets the zero vector.
pub fn fake_embedding(text: &str, dimensions: usize) -> Vec<f32> {
    let mut vector = vec![0.0f32; dimensions.max(1)];
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()) {
        if STOP_WORDS.contains(&word) {
            continue;
        }
        let concept = CONCEPTS
            .iter()
            .find(|(_, words)| words.contains(&word))
            .map(|(concept, _)| (*concept).to_owned())
            .unwrap_or_else(|| match word.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
                _ => word.to_owned(),
            });
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in concept.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        let index = (hash % vector.len() as u64) as usize;
        vector[index] += if (hash >> 40) & 1 == 0 { 1.0 } else { -1.0 };
    }
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        for value in &mut vector {
            *value /= norm;
        }
    }
    vector
}

/// The fake's tokens: four characters each, as a rough rule for English.
fn fake_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The embedding endpoints, each as strict as its vendor's: the key (OpenAI Bearer, Gemini
/// `x-goog-api-key`; Ollama takes none), the model, the batch size, the input's length, the
/// dimensions asked for; errors in the vendor's envelope and status.
fn embeddings(shared: &Shared, path: &str, headers: &HeaderMap, request: &Value) -> Response {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let key = shared.key.lock().expect("key lock").clone();
    let settings = shared.embeddings.lock().expect("embeddings lock").clone();
    let json = |status: StatusCode, body: Value| plain(status, "application/json", body.to_string());
    let openai_invalid = |message: String| {
        json(
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
        )
    };
    let google_error = |status: StatusCode, google_status: &str, message: String| {
        json(status, json!({"error": {"code": status.as_u16(), "message": message, "status": google_status}}))
    };
    let ollama_error = |status: StatusCode, message: String| json(status, json!({"error": message}));
    let texts_of = |input: &Value| -> Option<Vec<String>> {
        match input {
            Value::String(text) => Some(vec![text.clone()]),
            Value::Array(items) => items.iter().map(|item| item.as_str().map(str::to_owned)).collect(),
            _ => None,
        }
    };
    if path.ends_with(":batchEmbedContents") {
        if header("x-goog-api-key").as_deref() != Some(key.as_str()) {
            return json(
                StatusCode::BAD_REQUEST,
                json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}),
            );
        }
        if let Some(failure) = &settings.failure {
            return error_response(Format::Gemini, failure);
        }
        let model = path.rsplit('/').next().unwrap_or_default().trim_end_matches(":batchEmbedContents").to_owned();
        if !settings.models.contains(&model) {
            return google_error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                format!(
                    "models/{model} is not found for API version v1beta, or is not supported for embedContent. Call \
                     ListModels to see the list of available models and their supported methods."
                ),
            );
        }
        let Some(requests) = request["requests"].as_array() else {
            return google_error(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "Invalid JSON payload received. Unknown name \"\": Root element must be a message.".to_owned(),
            );
        };
        if requests.len() > 100 {
            return google_error(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n".to_owned(),
            );
        }
        let mut values = Vec::new();
        for (index, item) in requests.iter().enumerate() {
            if item["model"].as_str() != Some(format!("models/{model}").as_str()) {
                return google_error(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    format!(
                        "* BatchEmbedContentsRequest.requests[{index}].model: the model of each request must be the batch's models/{model}\n"
                    ),
                );
            }
            let text: String = item["content"]["parts"]
                .as_array()
                .map(|parts| parts.iter().filter_map(|part| part["text"].as_str()).collect())
                .unwrap_or_default();
            if text.is_empty() {
                return google_error(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    format!(
                        "* BatchEmbedContentsRequest.requests[{index}].content.parts: contents.parts must not be empty.\n"
                    ),
                );
            }
            let dimensions = match item["outputDimensionality"].as_u64() {
                Some(asked) if asked == 0 || asked as usize > settings.dimensions => {
                    return google_error(
                        StatusCode::BAD_REQUEST,
                        "INVALID_ARGUMENT",
                        format!(
                            "* BatchEmbedContentsRequest.requests[{index}].output_dimensionality: must be between 1 and {}\n",
                            settings.dimensions
                        ),
                    );
                }
                Some(asked) => asked as usize,
                None => settings.dimensions,
            };
            // Gemini cuts a long text to the model's input limit by itself.
            let cut: String = text.chars().take(settings.max_tokens * 4).collect();
            values.push(json!({"values": shortened(&cut, settings.dimensions, dimensions)}));
        }
        return json(StatusCode::OK, json!({"embeddings": values}));
    }
    if path.ends_with("/api/embed") {
        if let Some(failure) = &settings.failure {
            let status = match failure {
                FakeError::RateLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
                FakeError::ContextLength => StatusCode::BAD_REQUEST,
                FakeError::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
                FakeError::ServerError | FakeError::Authentication | FakeError::EchoingKey => {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            };
            return ollama_error(
                status,
                "server busy, please try again.  maximum pending requests exceeded".to_owned(),
            );
        }
        let model = request["model"].as_str().unwrap_or_default().to_owned();
        if !settings.models.contains(&model) {
            return ollama_error(StatusCode::NOT_FOUND, format!("model {model:?} not found, try pulling it first"));
        }
        let Some(texts) = texts_of(&request["input"]) else {
            return ollama_error(StatusCode::BAD_REQUEST, "invalid input type".to_owned());
        };
        let dimensions = match request["dimensions"].as_u64() {
            Some(asked) if asked == 0 || asked as usize > settings.dimensions => {
                return ollama_error(
                    StatusCode::BAD_REQUEST,
                    format!("dimensions must be between 1 and {}", settings.dimensions),
                );
            }
            Some(asked) => asked as usize,
            None => settings.dimensions,
        };
        let truncate = request["truncate"].as_bool().unwrap_or(true);
        let mut vectors = Vec::new();
        for text in &texts {
            if fake_tokens(text) > settings.max_tokens && !truncate {
                return ollama_error(StatusCode::BAD_REQUEST, "input exceeds maximum context length".to_owned());
            }
            let cut: String = text.chars().take(settings.max_tokens * 4).collect();
            vectors.push(shortened(&cut, settings.dimensions, dimensions));
        }
        let tokens: usize = texts.iter().map(|text| fake_tokens(text).min(settings.max_tokens)).sum();
        return json(
            StatusCode::OK,
            json!({"model": model, "embeddings": vectors, "total_duration": 14_143_917, "load_duration": 1_019_500,
                "prompt_eval_count": tokens}),
        );
    }
    // OpenAI and the compatible servers.
    if header("authorization") != Some(format!("Bearer {key}")) {
        return json(
            StatusCode::UNAUTHORIZED,
            json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": null,
                "code": "invalid_api_key"}}),
        );
    }
    if let Some(failure) = &settings.failure {
        return error_response(Format::OpenAi, failure);
    }
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    if !settings.models.contains(&model) {
        return json(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist or you do not have access to it."),
                "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
        );
    }
    let invalid_input =
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";
    let Some(texts) = texts_of(&request["input"]) else { return openai_invalid(invalid_input.to_owned()) };
    if texts.is_empty() || texts.len() > 2_048 || texts.iter().any(String::is_empty) {
        return openai_invalid(invalid_input.to_owned());
    }
    if let Some(index) = texts.iter().position(|text| fake_tokens(text) > settings.max_tokens) {
        return openai_invalid(format!(
            "Invalid 'input[{index}]': maximum input length is {} tokens.",
            settings.max_tokens
        ));
    }
    let dimensions = match request["dimensions"].as_u64() {
        Some(asked) if asked == 0 || asked as usize > settings.dimensions => {
            return openai_invalid(format!(
                "Invalid 'dimensions': integer above maximum value. Expected a value <= {}, but got {asked} instead.",
                settings.dimensions
            ));
        }
        Some(asked) => asked as usize,
        None => settings.dimensions,
    };
    if request["encoding_format"].as_str().is_some_and(|format| format != "float") {
        return openai_invalid("the fake answers floats only".to_owned());
    }
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({"object": "embedding", "index": index, "embedding": shortened(text, settings.dimensions, dimensions)})
        })
        .collect();
    let tokens: usize = texts.iter().map(|text| fake_tokens(text)).sum();
    json(
        StatusCode::OK,
        json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}),
    )
}

/// A vector cut to its first `dimensions` components and scaled to length 1 again, as
/// models trained to shorten (Matryoshka) do.
fn shortened(text: &str, native: usize, dimensions: usize) -> Vec<f32> {
    let mut vector = fake_embedding(text, native);
    vector.truncate(dimensions);
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        for value in &mut vector {
            *value /= norm;
        }
    }
    vector
}
