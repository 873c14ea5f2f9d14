//! Regression tests of issue 22: hostile input and load. Each guards one finding of the attack
//! run — an unbounded find/replace, quadratic diffs on the async threads, leaking live-update
//! channels, slow and idle clients, a shutdown that waited for browsers, sessions that
//! survived logout, cross-site posts, DNS rebinding, and errors that were not JSON.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wright_server::token::Auth;
use wright_server::{AppState, Config};

const TOKEN: &str = "test-token";
const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");

async fn state_with(configure: impl FnOnce(&mut Config)) -> (tempfile::TempDir, AppState) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::load(dir.path()).unwrap();
    configure(&mut config);
    let state =
        AppState::open(config, Auth::new(TOKEN.into()), wright_server::domain::models::Models::none()).await.unwrap();
    (dir, state)
}

/// Sends one request to the router in process; returns status, headers and the body as JSON
/// (or as a JSON string when it is not JSON).
async fn send(state: &AppState, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Value) {
    let response = wright_server::api::app(state.clone()).oneshot(request).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, headers, body)
}

fn authed(method: Method, path: &str, body: Option<Value>) -> Request<Body> {
    let request = Request::builder().method(method).uri(path).header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    match body {
        Some(body) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    }
    .unwrap()
}

/// Serves `state` on a real socket in this process; returns the address and a sender that
/// shuts the server down.
async fn serve(state: AppState) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        wright_server::serve(listener, state, async move {
            stopped.await.ok();
        })
        .await
        .unwrap();
    });
    (address, stop, task)
}

fn client() -> reqwest::Client {
    rustls::crypto::ring::default_provider().install_default().ok();
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

/// The real binary, serving on a free port of 127.0.0.1, optionally under `prlimit`.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    /// `resource_limits`: `prlimit` options such as `--as=3000000000`; none runs it directly.
    fn start(data_dir: &Path, resource_limits: &[&str]) -> Self {
        let mut command = if resource_limits.is_empty() {
            Command::new(WRIGHT)
        } else {
            let mut command = Command::new("prlimit");
            command.args(resource_limits).arg("--").arg(WRIGHT);
            command
        };
        command
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("WRIGHT_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut text = String::new();
        let mut byte = [0u8; 1];
        while !text.contains("listening on http://") || !text.ends_with('\n') {
            assert_eq!(stdout.read(&mut byte).unwrap(), 1, "the server ended before listening: {text}");
            text.push(byte[0] as char);
        }
        let address = text.trim_end().rsplit(' ').next().unwrap().to_owned();
        Self { child, address }
    }

    /// Waits up to `limit` for the process to exit; its status, or None if it is still running.
    fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Guards the 4 KB request that grew the server to 23.8 GB: under a 3 GB address-space limit a
/// find/replace whose result would be 4 GB is refused with the sizes, and the server lives on.
#[tokio::test]
async fn a_find_replace_past_the_document_cap_is_refused_under_a_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--as=3000000000"]);
    let client = client();
    let notes = format!("{}/api/agents/default/documents/learned_notes", server.address);
    let post = |body: Value| client.post(&notes).bearer_auth(TOKEN).json(&body).send();
    let replaced = post(json!({"operation": "replace", "content": "a".repeat(200_000)})).await.unwrap();
    assert_eq!(replaced.status(), 200);
    let bomb = json!({"operation": "find_replace", "find": "a", "replace": "b".repeat(20_000), "replace_all": true});
    let refused = post(bomb).await.expect("the server answers instead of dying");
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "limit");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("4000000000 bytes") && message.contains("524288 bytes"), "{message}");
    let health = client.get(format!("{}/api/health", server.address)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    // The same cap holds for a replace and for the agent's name.
    let too_big = post(json!({"operation": "replace", "content": "x".repeat(600_000)})).await.unwrap();
    assert_eq!(too_big.status(), 422);
    let agent = client
        .post(format!("{}/api/agents", server.address))
        .bearer_auth(TOKEN)
        .json(&json!({"id": "big", "name": "n".repeat(1_000_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(agent.status(), 422);
    let body: Value = agent.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("the limit is 256 bytes"), "{body}");
}

fn numbered_lines(prefix: &str, count: usize) -> String {
    (0..count).map(|line| format!("{prefix}{line}\n")).collect()
}

/// Guards the quadratic diffs that ran on the async threads: three diffs of 40,000 entirely
/// different lines run at once while /api/health keeps answering; over the diff cap the answer
/// is "too large to diff" without any work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_diffs_run_off_the_async_threads_and_over_the_cap_are_refused() {
    let (_dir, state) = state_with(|config| config.limits.max_diff_lines = 50_000).await;
    let agent = wright_core::AgentId::default_agent();
    let meta = wright_store::VersionMeta::new(wright_core::Author::Admin);
    for prefix in ["o", "n"] {
        let edit = wright_store::DocumentEdit::Replace { content: numbered_lines(prefix, 40_000) };
        state.store.edit_document(&agent, wright_core::DocumentKind::LearnedNotes, &edit, &meta).await.unwrap();
    }
    let (address, stop, task) = serve(state.clone()).await;
    let client = client();
    let diff_url = format!("http://{address}/api/agents/default/documents/learned_notes/diff?from=2&to=3");
    let diffs: Vec<_> = (0..3)
        .map(|_| {
            let request = client.get(&diff_url).bearer_auth(TOKEN).send();
            tokio::spawn(async move { request.await.unwrap().status() })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..5 {
        let health =
            tokio::time::timeout(Duration::from_secs(5), client.get(format!("http://{address}/api/health")).send())
                .await
                .expect("health answers while the diffs run")
                .unwrap();
        assert_eq!(health.status(), 200);
    }
    for diff in diffs {
        assert_eq!(diff.await.unwrap(), 200);
    }
    stop.send(()).unwrap();
    task.await.unwrap();

    let (_dir, state) = state_with(|_| {}).await;
    for prefix in ["o", "n"] {
        let edit = wright_store::DocumentEdit::Replace { content: numbered_lines(prefix, 40_000) };
        state.store.edit_document(&agent, wright_core::DocumentKind::LearnedNotes, &edit, &meta).await.unwrap();
    }
    let path = "/api/agents/default/documents/learned_notes/diff?from=2&to=3";
    let (status, _, body) = send(&state, authed(Method::GET, path, None)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("too_large_to_diff")));
    assert!(body["error"]["message"].as_str().unwrap().contains("40000 lines"), "{body}");
}

/// Tool and component diffs share the bound: an agent tool whose code grew past the diff cap
/// answers "too large to diff" on its diff route.
#[tokio::test]
async fn agent_tool_diffs_are_bounded_too() {
    let (_dir, state) = state_with(|_| {}).await;
    let agent = wright_core::AgentId::default_agent();
    let meta = wright_store::VersionMeta::new(wright_core::Author::Agent);
    let content = wright_store::ToolContent {
        description: "Grows.".into(),
        parameter_schema: json!({"type": "object"}),
        code: numbered_lines("// o", 30_000),
        limits: Value::Null,
    };
    state.store.create_agent_tool(&agent, "grows", &content, true, None, &meta).await.unwrap();
    let patch = wright_store::ToolPatch { code: Some(numbered_lines("// n", 30_000)), ..Default::default() };
    state.store.update_agent_tool(&agent, "grows", &patch, None, &meta).await.unwrap();
    let path = "/api/agents/default/agent-tools/grows/diff?from=1&to=2";
    let (status, _, body) = send(&state, authed(Method::GET, path, None)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("too_large_to_diff")));
}

/// Guards the leak of a 1,024-slot channel per conversation whose stream was opened once:
/// after opening and closing the streams of 2,000 conversations no channel is left.
#[tokio::test]
async fn live_update_channels_are_freed_with_their_last_stream() {
    let (_dir, state) = state_with(|_| {}).await;
    let agent = wright_core::AgentId::default_agent();
    for index in 0..2_000 {
        let id = format!("soak-{index}");
        state.store.create_conversation(&agent, &id, "soak").await.unwrap();
        let response = wright_server::api::app(state.clone())
            .oneshot(authed(Method::GET, &format!("/api/conversations/{id}/stream"), None))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut body = response.into_body().into_data_stream();
        assert!(body.next().await.is_some(), "the stream starts with the status");
        // The page goes away.
        drop(body);
    }
    let started = Instant::now();
    while state.hub.channel_count() > 0 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state.hub.channel_count(), 0, "every channel went with its last stream");
}

/// Reads until the server closes the socket or `limit` passes; true if it was closed.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let started = Instant::now();
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut buffer = [0u8; 1024];
    while started.elapsed() < limit {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {} // a 408 or similar before the close
            Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true, // reset
        }
    }
    false
}

/// Guards the listener that kept every slow-header and idle connection: with a cap of 16
/// connections and a 1 s header timeout, 120 such clients are all closed and health is
/// answered throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_and_health_stays_answered() {
    let (_dir, state) = state_with(|config| {
        config.server.max_connections = 16;
        config.server.header_read_timeout_secs = 1;
    })
    .await;
    let (address, stop, task) = serve(state).await;
    let attackers = tokio::task::spawn_blocking(move || {
        let mut sockets: Vec<TcpStream> = (0..120)
            .map(|index| {
                let mut socket = TcpStream::connect(address).unwrap();
                if index % 2 == 0 {
                    socket.write_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
                }
                socket
            })
            .collect();
        sockets.iter_mut().all(|socket| closed_within(socket, Duration::from_secs(60)))
    });
    let client = client();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let health =
            tokio::time::timeout(Duration::from_secs(20), client.get(format!("http://{address}/api/health")).send())
                .await
                .expect("health is answered while slow clients come and go")
                .unwrap();
        assert_eq!(health.status(), 200);
    }
    assert!(attackers.await.unwrap(), "every slow or idle client was closed");
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Guards accepts failing at the open-file limit: under a limit of 160 descriptors, 400 idle
/// connections neither starve the server nor stop health from being answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_clients_cannot_exhaust_the_open_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[server]\nheader_read_timeout_secs = 2\n").unwrap();
    let server = Server::start(dir.path(), &["--nofile=160"]);
    let address: SocketAddr = server.address.trim_start_matches("http://").parse().unwrap();
    let idle: Vec<TcpStream> = (0..400).filter_map(|_| TcpStream::connect(address).ok()).collect();
    assert!(idle.len() > 100, "the idle clients connected");
    let client = client();
    for _ in 0..3 {
        let health =
            tokio::time::timeout(Duration::from_secs(30), client.get(format!("{}/api/health", server.address)).send())
                .await
                .expect("health is answered within 30 s")
                .unwrap();
        assert_eq!(health.status(), 200);
    }
    // The server still has descriptors for its own work: a request that reads the database.
    let agents = client.get(format!("{}/api/agents", server.address)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(agents.status(), 200);
    drop(idle);
}

/// A connection on which nothing moves is closed after the idle timeout, even when the header
/// timeout is much longer.
#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let (_dir, state) = state_with(|config| {
        config.server.header_read_timeout_secs = 600;
        config.server.idle_timeout_secs = 1;
    })
    .await;
    let (address, stop, task) = serve(state).await;
    let closed = tokio::task::spawn_blocking(move || {
        let mut socket = TcpStream::connect(address).unwrap();
        closed_within(&mut socket, Duration::from_secs(30))
    });
    assert!(closed.await.unwrap());
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Guards the shutdown that waited for every open event stream: SIGTERM with a stream open
/// ends the process within the grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_an_open_event_stream_exits_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    let client = client();
    let created: Value = client
        .post(format!("{}/api/agents/default/conversations", server.address))
        .bearer_auth(TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    let stream = client
        .get(format!("{}/api/conversations/{id}/stream", server.address))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    assert!(body.next().await.is_some());
    let killed = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = tokio::task::block_in_place(|| server.wait_for_exit(Duration::from_secs(30)));
    assert!(status.is_some_and(|status| status.success()), "exited cleanly within the grace period: {status:?}");
    // The stream ended rather than being cut: it reaches its end.
    while let Some(chunk) = body.next().await {
        if chunk.is_err() {
            break;
        }
    }
}

fn session_cookie(headers: &axum::http::HeaderMap) -> String {
    let set_cookie = headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    set_cookie.split(';').next().unwrap().to_owned()
}

fn login_request(extra: &[(&str, &str)]) -> Request<Body> {
    let mut request =
        Request::builder().method(Method::POST).uri("/api/auth/login").header(header::CONTENT_TYPE, "application/json");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(Body::from(json!({ "token": TOKEN }).to_string())).unwrap()
}

fn with_cookie(method: Method, path: &str, cookie: &str, extra: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::builder().method(method).uri(path).header(header::COOKIE, cookie);
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(Body::empty()).unwrap()
}

/// Guards the session cookie that was a fixed hash of the token: each login gets a random
/// session that logout ends; cross-site posts with the cookie are refused, bearer clients are
/// not affected.
#[tokio::test]
async fn sessions_are_random_revocable_and_same_origin() {
    let (_dir, state) = state_with(|_| {}).await;
    let (status, first_headers, _) = send(&state, login_request(&[])).await;
    assert_eq!(status, StatusCode::OK);
    let (_, second_headers, _) = send(&state, login_request(&[])).await;
    let (first, second) = (session_cookie(&first_headers), session_cookie(&second_headers));
    assert_ne!(first, second, "every login is a session of its own");
    let set_cookie = first_headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(set_cookie.contains("HttpOnly") && !set_cookie.contains("Secure"), "{set_cookie}");
    assert_eq!(send(&state, with_cookie(Method::GET, "/api/agents", &first, &[])).await.0, StatusCode::OK);

    // A form on another site posting with the cookie.
    for headers in [&[("sec-fetch-site", "cross-site")][..], &[("origin", "http://evil.example")][..]] {
        let (status, _, body) = send(&state, with_cookie(Method::POST, "/api/auth/logout", &first, headers)).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("cross_site")));
    }
    // The app itself, and a bearer client with any Origin.
    let same_origin = [("sec-fetch-site", "same-origin")];
    let bearer_from_elsewhere = Request::builder()
        .method(Method::POST)
        .uri("/api/auth/logout")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header("origin", "http://evil.example")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&state, bearer_from_elsewhere).await.0, StatusCode::OK);
    assert_eq!(
        send(&state, with_cookie(Method::POST, "/api/auth/logout", &first, &same_origin)).await.0,
        StatusCode::OK
    );

    // Logged out: that cookie is dead, the other session lives.
    assert_eq!(send(&state, with_cookie(Method::GET, "/api/agents", &first, &[])).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(send(&state, with_cookie(Method::GET, "/api/agents", &second, &[])).await.0, StatusCode::OK);
}

#[tokio::test]
async fn the_cookie_is_secure_behind_a_trusted_tls_proxy() {
    let (_dir, state) = state_with(|config| config.server.trust_forwarded_proto = true).await;
    let (_, headers, _) = send(&state, login_request(&[("x-forwarded-proto", "https")])).await;
    assert!(headers.get(header::SET_COOKIE).unwrap().to_str().unwrap().contains("; Secure"));
    let (_dir, state) = state_with(|_| {}).await;
    let (_, headers, _) = send(&state, login_request(&[("x-forwarded-proto", "https")])).await;
    assert!(!headers.get(header::SET_COOKIE).unwrap().to_str().unwrap().contains("Secure"), "untrusted header");
}

/// Guards login at ~3,000 guesses a second and DNS rebinding against a weak token.
#[tokio::test]
async fn login_is_rate_limited_and_foreign_hosts_are_refused() {
    let (_dir, state) = state_with(|config| {
        config.server.login_attempts_per_minute = 5;
        config.server.allowed_hosts = vec!["wright.example".into()];
    })
    .await;
    let wrong = || {
        Request::builder()
            .method(Method::POST)
            .uri("/api/auth/login")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"token": "guess"}).to_string()))
            .unwrap()
    };
    for _ in 0..5 {
        assert_eq!(send(&state, wrong()).await.0, StatusCode::UNAUTHORIZED);
    }
    let (status, headers, body) = send(&state, wrong()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")));
    assert!(headers.contains_key(header::RETRY_AFTER));

    let with_host =
        |host: &str| Request::builder().uri("/api/health").header(header::HOST, host).body(Body::empty()).unwrap();
    let (status, _, body) = send(&state, with_host("rebound.evil.example:8080")).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::MISDIRECTED_REQUEST, Some("unknown_host")));
    for host in ["127.0.0.1:8080", "localhost:8080", "wright.example"] {
        assert_eq!(send(&state, with_host(host)).await.0, StatusCode::OK, "{host}");
    }
}

/// Guards the answers that were HTML, empty or text/plain: under /api every error is the JSON
/// shape; outside it the app's HTML, also for a path too long for the file system.
#[tokio::test]
async fn every_api_error_is_json_and_html_only_outside_the_api() {
    let frontend = tempfile::tempdir().unwrap();
    std::fs::write(frontend.path().join("index.html"), "<!doctype html><title>Wright</title>").unwrap();
    let frontend_dir = frontend.path().to_owned();
    let (_dir, state) = state_with(move |config| config.server.frontend_dir = Some(frontend_dir)).await;
    let cases = [
        (authed(Method::GET, "/api/no/such/route", None), StatusCode::NOT_FOUND, "not_found"),
        (authed(Method::GET, "/api", None), StatusCode::NOT_FOUND, "not_found"),
        (authed(Method::DELETE, "/api/health", None), StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        (authed(Method::GET, "/api/market/listings?limit=many", None), StatusCode::BAD_REQUEST, "bad_request"),
        (authed(Method::GET, "/api/market/listings?limit=0", None), StatusCode::BAD_REQUEST, "bad_request"),
        (
            authed(Method::GET, "/api/agents/%FF%FE/documents/system_prompt", None),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
    ];
    for (request, status, code) in cases {
        let path = request.uri().to_string();
        let (got, headers, body) = send(&state, request).await;
        assert_eq!((got, body["error"]["code"].as_str()), (status, Some(code)), "{path}: {body}");
        assert!(body["error"]["message"].as_str().is_some_and(|message| !message.is_empty()), "{path}");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json", "{path}");
    }
    for path in [format!("/{}", "a".repeat(256)), "/conversations/some-id".to_owned()] {
        let request = Request::builder().uri(&path).body(Body::empty()).unwrap();
        let (status, _, body) = send(&state, request).await;
        // The app routes these itself; the server answers its page as it does any unknown path.
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body.as_str().unwrap().contains("<title>Wright</title>"), "{path}: {body}");
    }
    // Listings come a page at a time, with the total in a header.
    let (status, headers, body) = send(&state, authed(Method::GET, "/api/market/listings?limit=1", None)).await;
    assert_eq!((status, body.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));
    assert_eq!(headers["x-total-count"], "0");
}
