//! Integration tests: a real Chromium against pages this test serves on 127.0.0.1.
//!
//! The test policy allows only `http://127.0.0.1:<site port>/`, and its egress proxy (a real
//! `wright-egress` proxy) only the site's port and a WebSocket server's. A second listener, on a
//! port the policy denies, is a bare TCP socket that counts connections: a blocked request must
//! not even connect to it. If Chromium is missing and cannot be installed, each test says so and
//! returns (a skip, not a pass of the behaviour).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use futures::future::BoxFuture;
use wright_browser::shapes::{
    ClickArgs, EvaluateArgs, ExtractHtmlArgs, ExtractTextArgs, NavigateArgs, ScreenshotArgs, TypeArgs, WaitUntil,
};
use wright_browser::{BrowserConfig, BrowserError, Browsers, PolicyProxy, RequestPolicy};
use wright_egress::{Egress, EgressConfig, ProxyLimits};

/// Allows one local origin, and the local ports its proxy allows, for requests Chromium
/// reports over CDP; everything else is refused with a reason. Its proxy is the egress proxy,
/// allowing the given local ports only (so a test can also see the proxy refuse what CDP let by).
struct AllowOrigin {
    origins: Vec<String>,
    egress: Egress,
}

impl AllowOrigin {
    fn new(origin: &str, proxy_ports: &[u16]) -> Self {
        let allow = proxy_ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let egress = Egress::new(EgressConfig { allow, ..EgressConfig::default() }).unwrap();
        let mut origins = vec![origin.to_string()];
        origins.extend(proxy_ports.iter().map(|port| format!("http://127.0.0.1:{port}")));
        AllowOrigin { origins, egress }
    }
}

impl RequestPolicy for AllowOrigin {
    fn check<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if self.origins.iter().any(|origin| url.starts_with(&format!("{origin}/"))) {
                Ok(())
            } else {
                Err(format!("{url} is not on the test allowlist"))
            }
        })
    }

    fn start_proxy(&self) -> BoxFuture<'_, Result<PolicyProxy, String>> {
        Box::pin(async move {
            let proxy = self.egress.start_proxy(ProxyLimits::default()).await.map_err(|error| error.to_string())?;
            Ok(PolicyProxy { address: proxy.address(), guard: Box::new(proxy) })
        })
    }
}

/// SHA-1 (FIPS 180-4), for the WebSocket handshake's `Sec-WebSocket-Accept`.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut state: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks(64) {
        let mut w = [0u32; 80];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[i * 4..i * 4 + 4].try_into().unwrap());
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = state;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let next = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(*word);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, next);
        }
        for (slot, value) in state.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(value);
        }
    }
    let mut digest = [0u8; 20];
    for (chunk, word) in digest.chunks_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    digest
}

fn websocket_accept(key: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .encode(sha1(format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes()))
}

/// A minimal WebSocket server: completes the handshake, sends one text frame, and counts
/// handshakes.
async fn websocket_server() -> (SocketAddr, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&handshakes);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let Some(key) = head.lines().find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("sec-websocket-key").then(|| value.trim().to_string())
                }) else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                     Sec-WebSocket-Accept: {}\r\n\r\n",
                    websocket_accept(&key)
                );
                let message = b"hello over the websocket";
                let mut frame = vec![0x81, message.len() as u8];
                frame.extend_from_slice(message);
                if socket.write_all(response.as_bytes()).await.is_ok() && socket.write_all(&frame).await.is_ok() {
                    // Keep the connection open until the browser closes it.
                    let mut sink = [0u8; 256];
                    while socket.read(&mut sink).await.unwrap_or(0) > 0 {}
                }
            });
        }
    });
    (address, handshakes)
}

struct Fixture {
    browsers: Browsers,
    site: String,
    denied: String,
    denied_connections: Arc<AtomicUsize>,
    websocket: SocketAddr,
    websocket_handshakes: Arc<AtomicUsize>,
}

impl Fixture {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.site)
    }

    async fn navigate(&self, conversation: &str, path: &str) -> Result<serde_json::Value, BrowserError> {
        let args = NavigateArgs { url: self.url(path), wait_until: WaitUntil::Load };
        Ok(self.browsers.navigate(conversation, &args).await?.to_json())
    }

    async fn text(&self, conversation: &str, selector: Option<&str>) -> String {
        let args = ExtractTextArgs { selector: selector.map(str::to_string) };
        self.browsers.extract_text(conversation, &args).await.expect("extract_text").value.text
    }
}

/// Chromium present, or installed now (as root, from Debian's package); false means skip.
fn chromium_ready() -> bool {
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *READY.get_or_init(|| {
        if wright_browser::find_chromium().is_some() {
            return true;
        }
        eprintln!("Chromium not found; trying `apt-get install -y chromium`");
        let installed = std::process::Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium"])
            .status()
            .is_ok_and(|status| status.success());
        let ready = installed && wright_browser::find_chromium().is_some();
        if !ready {
            eprintln!("SKIPPED: Chromium is not installed and could not be installed; browser tests did not run");
        }
        ready
    })
}

async fn fixture(config: BrowserConfig) -> Option<Fixture> {
    if !chromium_ready() {
        return None;
    }
    let site_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site_address = site_listener.local_addr().unwrap();
    let denied_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let denied_address = denied_listener.local_addr().unwrap();
    let denied_connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&denied_connections);
    tokio::spawn(async move {
        while let Ok((socket, _)) = denied_listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    tokio::spawn(async move { axum::serve(site_listener, site(site_address, denied_address)).await.unwrap() });
    let (websocket, websocket_handshakes) = websocket_server().await;
    let site = format!("http://{site_address}");
    let policy = Arc::new(AllowOrigin::new(&site, &[site_address.port(), websocket.port()]));
    Some(Fixture {
        browsers: Browsers::new(config, policy),
        site,
        denied: format!("http://{denied_address}"),
        denied_connections,
        websocket,
        websocket_handshakes,
    })
}

fn test_config() -> BrowserConfig {
    BrowserConfig {
        call_timeout: Duration::from_secs(20),
        selector_wait: Duration::from_millis(500),
        ..BrowserConfig::default()
    }
}

fn site(own: SocketAddr, denied: SocketAddr) -> Router {
    #[derive(serde::Deserialize)]
    struct WebSocketTarget {
        to: String,
    }
    #[derive(serde::Deserialize)]
    struct Who {
        name: Option<String>,
    }
    Router::new()
        .route(
            "/",
            get(|| async {
                Html("<html><head><title>Home page</title></head><body><h1 id=\"head\">Welcome</h1>\
                      <p class=\"intro\">Plain <b>bold</b> text.</p><div id=\"box\" style=\"width:120px;height:40px;background:red\"></div>\
                      </body></html>")
            }),
        )
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, Html("<title>Nope</title>not here")) }))
        .route(
            "/tall",
            get(|| async { Html("<html><body style=\"margin:0\"><div style=\"height:3000px\">tall</div></body></html>") }),
        )
        .route(
            "/form",
            get(|| async {
                Html("<html><head><title>Form</title></head><body><form action=\"/submitted\" method=\"get\">\
                      <input id=\"name\" name=\"name\" value=\"prefilled\"><button id=\"go\" type=\"submit\">Send</button></form></body></html>")
            }),
        )
        .route(
            "/submitted",
            get(|Query(who): Query<Who>| async move {
                Html(format!("<html><head><title>Thanks</title></head><body><p id=\"greeting\">Hello, {}!</p></body></html>", who.name.unwrap_or_default()))
            }),
        )
        .route(
            "/leaky",
            get(move || async move {
                Html(format!(
                    "<html><head><title>Leaky</title></head><body><img src=\"http://{denied}/pixel.png\">\
                     <p id=\"out\">waiting</p><script>fetch('http://{denied}/data').then(() => {{ document.getElementById('out').textContent = 'fetched'; }}, \
                     () => {{ document.getElementById('out').textContent = 'fetch failed'; }});</script></body></html>"
                ))
            }),
        )
        .route(
            "/websocket",
            get(|Query(target): Query<WebSocketTarget>| async move {
                Html(format!(
                    "<html><head><title>Socket</title></head><body><p id=\"out\">waiting</p><script>\
                     const out = document.getElementById('out'); const socket = new WebSocket('ws://{}/');\
                     socket.onmessage = (event) => {{ out.textContent = 'message: ' + event.data; }};\
                     socket.onerror = () => {{ out.textContent = 'failed'; }};</script></body></html>",
                    target.to
                ))
            }),
        )
        .route("/redirect", get(move || async move { Redirect::temporary(&format!("http://{denied}/secret")) }))
        .route("/hop", get(move || async move { Redirect::temporary(&format!("http://{own}/")) }))
        .route(
            "/set-cookie",
            get(|Query(who): Query<Who>| async move {
                let cookie = format!("who={}; Path=/", who.name.unwrap_or_default());
                ([(header::SET_COOKIE, cookie)], Html("<title>Set</title>set"))
            }),
        )
        .route(
            "/cookies",
            get(|headers: HeaderMap| async move {
                let cookies = headers.get(header::COOKIE).and_then(|value| value.to_str().ok()).unwrap_or("none").to_string();
                Html(format!("<html><body><p id=\"cookies\">{cookies}</p></body></html>")).into_response()
            }),
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_reports_url_title_and_status() {
    let Some(fixture) = fixture(test_config()).await else { return };
    let reply = fixture.navigate("c1", "/").await.unwrap();
    assert_eq!(reply["url"], fixture.url("/"));
    assert_eq!(reply["title"], "Home page");
    assert_eq!(reply["status"], 200);
    assert!(reply.get("blocked").is_none() && reply.get("session_lost").is_none(), "{reply}");

    let reply = fixture.navigate("c1", "/missing").await.unwrap();
    assert_eq!(reply["status"], 404);
    assert_eq!(reply["title"], "Nope");

    // A redirect within the allowed origin is followed; the final URL is reported.
    let reply = fixture.navigate("c1", "/hop").await.unwrap();
    assert_eq!(reply["url"], fixture.url("/"));
    assert_eq!(reply["status"], 200);

    for wait_until in [WaitUntil::Domcontentloaded, WaitUntil::Networkidle] {
        let args = NavigateArgs { url: fixture.url("/form"), wait_until };
        let reply = fixture.browsers.navigate("c1", &args).await.unwrap();
        assert_eq!(reply.value.title, "Form", "{wait_until:?}");
    }
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_failures_are_clear_errors() {
    let Some(fixture) = fixture(test_config()).await else { return };
    // Not http(s): refused before the browser is involved.
    let args = NavigateArgs { url: "file:///etc/passwd".to_string(), wait_until: WaitUntil::Load };
    let error = fixture.browsers.navigate("c1", &args).await.unwrap_err();
    assert!(matches!(error, BrowserError::Denied { .. }), "{error}");
    // Denied by the policy: the policy's reason is the error.
    let args = NavigateArgs { url: format!("{}/", fixture.denied), wait_until: WaitUntil::Load };
    let error = fixture.browsers.navigate("c1", &args).await.unwrap_err();
    assert!(error.to_string().contains("not on the test allowlist"), "{error}");
    assert_eq!(fixture.denied_connections.load(Ordering::SeqCst), 0);
    fixture.browsers.shut_down().await;

    // Allowed but nothing listens: the egress proxy cannot connect, and its reason is the error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_origin = format!("http://{}", closed.local_addr().unwrap());
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let browsers = Browsers::new(test_config(), Arc::new(AllowOrigin::new(&closed_origin, &[closed_port])));
    let args = NavigateArgs { url: format!("{closed_origin}/"), wait_until: WaitUntil::Load };
    let error = browsers.navigate("c1", &args).await.unwrap_err();
    match &error {
        BrowserError::NavigationFailed { reason, .. } => {
            assert!(reason.contains("could not connect") && reason.contains("Connection refused"), "{error}")
        }
        other => panic!("expected NavigationFailed, got {other:?}"),
    }
    browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_text_and_html() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("c1", "/").await.unwrap();
    let all = fixture.text("c1", None).await;
    assert!(all.contains("Welcome") && all.contains("Plain bold text."), "{all}");
    assert_eq!(fixture.text("c1", Some("#head")).await, "Welcome");

    let inner = fixture
        .browsers
        .extract_html("c1", &ExtractHtmlArgs { selector: Some(".intro".into()), outer: false })
        .await
        .unwrap();
    assert_eq!(inner.value.html, "Plain <b>bold</b> text.");
    let outer = fixture
        .browsers
        .extract_html("c1", &ExtractHtmlArgs { selector: Some(".intro".into()), outer: true })
        .await
        .unwrap();
    assert_eq!(outer.value.html, "<p class=\"intro\">Plain <b>bold</b> text.</p>");
    let body = fixture.browsers.extract_html("c1", &ExtractHtmlArgs::default()).await.unwrap();
    assert!(body.value.html.starts_with("<h1 id=\"head\">"), "{}", body.value.html);
    assert_eq!(body.to_json().as_object().unwrap().keys().collect::<Vec<_>>(), ["html"]);

    let error =
        fixture.browsers.extract_text("c1", &ExtractTextArgs { selector: Some("#nothing".into()) }).await.unwrap_err();
    assert!(matches!(error, BrowserError::SelectorNotFound { .. }), "{error}");
    let error = fixture
        .browsers
        .extract_html("c1", &ExtractHtmlArgs { selector: Some("p[".into()), outer: false })
        .await
        .unwrap_err();
    assert!(matches!(error, BrowserError::InvalidSelector { .. }), "{error}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_of_viewport_element_and_full_page() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("c1", "/").await.unwrap();
    let shot = fixture.browsers.screenshot("c1", &ScreenshotArgs::default()).await.unwrap();
    assert_eq!((shot.value.width, shot.value.height), (1280, 800));
    assert!(shot.value.image.starts_with("iVBORw0KGgo"), "base64 PNG");
    let json = shot.to_json();
    let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["height", "image", "width"]);

    let element = fixture
        .browsers
        .screenshot("c1", &ScreenshotArgs { selector: Some("#box".into()), full_page: false })
        .await
        .unwrap();
    assert_eq!((element.value.width, element.value.height), (120, 40));

    fixture.navigate("c1", "/tall").await.unwrap();
    let full = fixture.browsers.screenshot("c1", &ScreenshotArgs { selector: None, full_page: true }).await.unwrap();
    assert_eq!((full.value.width, full.value.height), (1280, 3000));

    let error = fixture
        .browsers
        .screenshot("c1", &ScreenshotArgs { selector: Some("#none".into()), full_page: false })
        .await
        .unwrap_err();
    assert!(matches!(error, BrowserError::SelectorNotFound { .. }), "{error}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_expressions_bodies_and_errors() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("c1", "/").await.unwrap();
    let evaluate = |code: &str| {
        let args = EvaluateArgs { code: code.to_string() };
        let browsers = fixture.browsers.clone();
        async move { browsers.evaluate("c1", &args).await }
    };
    assert_eq!(evaluate("document.title").await.unwrap().value.result, "Home page");
    assert_eq!(
        evaluate("({a: 1, b: [true, null]})").await.unwrap().value.result,
        serde_json::json!({"a": 1, "b": [true, null]})
    );
    assert_eq!(evaluate("return 6 * 7").await.unwrap().value.result, 42);
    assert_eq!(evaluate("new Promise(r => setTimeout(() => r('later'), 50))").await.unwrap().value.result, "later");
    assert_eq!(evaluate("undefined").await.unwrap().to_json(), serde_json::json!({"result": null}));
    let error = evaluate("throw new Error('boom')").await.unwrap_err();
    assert!(matches!(&error, BrowserError::Script { message } if message.contains("boom")), "{error}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_is_filled_and_submitted() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("c1", "/form").await.unwrap();
    let typed = fixture
        .browsers
        .type_text("c1", &TypeArgs { selector: "#name".into(), text: "Ada Lovelace".into(), clear_first: true })
        .await
        .unwrap();
    assert_eq!(typed.to_json(), serde_json::json!({"ok": true}));
    // Without clear_first the text is appended.
    fixture
        .browsers
        .type_text("c1", &TypeArgs { selector: "#name".into(), text: " ✓".into(), clear_first: false })
        .await
        .unwrap();
    let value = fixture
        .browsers
        .evaluate("c1", &EvaluateArgs { code: "document.querySelector('#name').value".into() })
        .await
        .unwrap();
    assert_eq!(value.value.result, "Ada Lovelace ✓");

    let clicked = fixture.browsers.click("c1", &ClickArgs { selector: "#go".into() }).await.unwrap();
    assert_eq!(clicked.to_json(), serde_json::json!({"ok": true}));
    assert_eq!(fixture.text("c1", Some("#greeting")).await, "Hello, Ada Lovelace ✓!");

    let error = fixture.browsers.click("c1", &ClickArgs { selector: "#no-such-button".into() }).await.unwrap_err();
    assert!(matches!(error, BrowserError::SelectorNotFound { .. }), "{error}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_and_fetch_to_a_denied_port_are_blocked() {
    let Some(fixture) = fixture(test_config()).await else { return };
    let reply = fixture.navigate("c1", "/leaky").await.unwrap();
    assert_eq!(reply["title"], "Leaky");
    // The fetch settles after load; its rejection is what the page sees.
    let mut outcome = String::new();
    for _ in 0..50 {
        outcome = fixture.text("c1", Some("#out")).await;
        if outcome != "waiting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(outcome, "fetch failed");
    let mut blocked: Vec<String> = reply["blocked"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|entry| entry["url"].as_str().unwrap().to_string())
        .collect();
    // The fetch may be blocked after navigate returned; then a later reply reports it.
    if blocked.len() < 2 {
        let later = fixture.browsers.extract_text("c1", &ExtractTextArgs::default()).await.unwrap();
        blocked.extend(later.blocked.into_iter().map(|entry| entry.url));
    }
    blocked.sort();
    assert_eq!(blocked, [format!("{}/data", fixture.denied), format!("{}/pixel.png", fixture.denied)]);
    assert!(reply["blocked"][0]["reason"].as_str().unwrap().contains("allowlist"), "{reply}");
    assert_eq!(fixture.denied_connections.load(Ordering::SeqCst), 0, "nothing reached the denied port");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_refuses_what_the_cdp_check_let_through() {
    if !chromium_ready() {
        return;
    }
    // The CDP check allows the origin but the proxy allows no port: what happens when a name
    // passed the check and then resolved to a denied address (DNS rebinding). The proxy's
    // verdict is the error, and the site sees nothing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    let browsers = Browsers::new(test_config(), Arc::new(AllowOrigin::new(&origin, &[])));
    let args = NavigateArgs { url: format!("{origin}/"), wait_until: WaitUntil::Load };
    let error = browsers.navigate("c1", &args).await.unwrap_err();
    match &error {
        BrowserError::Denied { reason, .. } => assert!(reason.contains("127.0.0.1 is loopback"), "{error}"),
        other => panic!("expected Denied, got {other:?}"),
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_args_cannot_replace_the_proxy() {
    if !chromium_ready() {
        return;
    }
    let config = BrowserConfig { extra_args: vec!["proxy-server=direct://".to_string()], ..test_config() };
    let browsers = Browsers::new(config, Arc::new(AllowOrigin::new("http://127.0.0.1:1", &[])));
    let error = browsers.warm_up().await.unwrap_err();
    assert!(matches!(error, BrowserError::Launch(_)) && error.to_string().contains("egress proxy"), "{error}");
}

/// What the page's `#out` settles on (it starts as `waiting`).
async fn settled(fixture: &Fixture, conversation: &str) -> String {
    let mut outcome = String::new();
    for _ in 0..100 {
        outcome = fixture.text(conversation, Some("#out")).await;
        if outcome != "waiting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    outcome
}

#[test]
fn websocket_accept_matches_rfc_6455() {
    assert_eq!(websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_to_a_denied_port_is_blocked() {
    let Some(fixture) = fixture(test_config()).await else { return };
    let denied = fixture.denied.trim_start_matches("http://").to_string();
    let reply = fixture.navigate("c1", &format!("/websocket?to={denied}")).await.unwrap();
    assert_eq!(settled(&fixture, "c1").await, "failed");
    assert_eq!(fixture.denied_connections.load(Ordering::SeqCst), 0, "the denied server never saw a connection");
    // The agent is told as well: the socket is listed in `blocked`, in this reply or a later one.
    let mut blocked: Vec<serde_json::Value> = reply["blocked"].as_array().cloned().unwrap_or_default();
    for _ in 0..20 {
        if !blocked.is_empty() {
            break;
        }
        let later = fixture.browsers.extract_text("c1", &ExtractTextArgs::default()).await.unwrap();
        blocked.extend(later.blocked.into_iter().map(|entry| serde_json::to_value(entry).unwrap()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(blocked.len(), 1, "{blocked:?}");
    assert_eq!(blocked[0]["url"], format!("ws://{denied}/"));
    assert_eq!(blocked[0]["resource_type"], "websocket");
    assert!(blocked[0]["reason"].as_str().unwrap().contains("allowlist"), "{blocked:?}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_to_an_allowlisted_port_works() {
    let Some(fixture) = fixture(test_config()).await else { return };
    let reply = fixture.navigate("c1", &format!("/websocket?to={}", fixture.websocket)).await.unwrap();
    assert_eq!(settled(&fixture, "c1").await, "message: hello over the websocket");
    assert_eq!(fixture.websocket_handshakes.load(Ordering::SeqCst), 1);
    let later = fixture.browsers.extract_text("c1", &ExtractTextArgs::default()).await.unwrap();
    assert!(reply.get("blocked").is_none() && later.blocked.is_empty(), "an allowed socket is not reported: {reply}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_a_denied_address_is_blocked() {
    let Some(fixture) = fixture(test_config()).await else { return };
    let error = fixture.navigate("c1", "/redirect").await.unwrap_err();
    match &error {
        BrowserError::Denied { url, reason } => {
            assert_eq!(url, &format!("{}/secret", fixture.denied));
            assert!(reason.contains("allowlist"), "{reason}");
        }
        other => panic!("expected Denied, got {other:?}"),
    }
    assert_eq!(fixture.denied_connections.load(Ordering::SeqCst), 0);
    // The session survives a blocked navigation.
    assert_eq!(fixture.navigate("c1", "/").await.unwrap()["title"], "Home page");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_do_not_share_cookies() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("alice", "/set-cookie?name=alice").await.unwrap();
    fixture.navigate("bob", "/set-cookie?name=bob").await.unwrap();
    fixture.navigate("alice", "/cookies").await.unwrap();
    fixture.navigate("bob", "/cookies").await.unwrap();
    fixture.navigate("carol", "/cookies").await.unwrap();
    assert_eq!(fixture.text("alice", Some("#cookies")).await, "who=alice");
    assert_eq!(fixture.text("bob", Some("#cookies")).await, "who=bob");
    assert_eq!(fixture.text("carol", Some("#cookies")).await, "none");
    assert_eq!(fixture.browsers.open_contexts().await, 3);

    // browser_close drops the context: the cookie is gone on the next visit.
    let closed = fixture.browsers.close("alice").await.unwrap();
    assert_eq!(closed.to_json(), serde_json::json!({"ok": true}));
    assert_eq!(fixture.browsers.open_contexts().await, 2);
    fixture.navigate("alice", "/cookies").await.unwrap();
    assert_eq!(fixture.text("alice", Some("#cookies")).await, "none");
    fixture.browsers.end_conversation("bob").await;
    assert_eq!(fixture.browsers.open_contexts().await, 2);
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_contexts_are_closed() {
    let config = BrowserConfig { idle_timeout: Duration::from_millis(800), ..test_config() };
    let Some(fixture) = fixture(config).await else { return };
    fixture.navigate("c1", "/set-cookie?name=idle").await.unwrap();
    assert_eq!(fixture.browsers.open_contexts().await, 1);
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(fixture.browsers.open_contexts().await, 0);
    let reply = fixture.navigate("c1", "/cookies").await.unwrap();
    assert!(reply["session_lost"].as_str().unwrap().contains("without browser calls"), "{reply}");
    assert_eq!(fixture.text("c1", Some("#cookies")).await, "none");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_cap_evicts_the_least_recently_used() {
    let config = BrowserConfig { max_contexts: 2, ..test_config() };
    let Some(fixture) = fixture(config).await else { return };
    fixture.navigate("a", "/").await.unwrap();
    fixture.navigate("b", "/").await.unwrap();
    fixture.navigate("a", "/").await.unwrap();
    fixture.navigate("c", "/").await.unwrap();
    assert_eq!(fixture.browsers.open_contexts().await, 2);
    let reply = fixture.navigate("b", "/").await.unwrap();
    assert!(reply["session_lost"].as_str().unwrap().contains("make room"), "{reply}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_started_again() {
    let Some(fixture) = fixture(test_config()).await else { return };
    fixture.navigate("c1", "/set-cookie?name=before").await.unwrap();
    let pid = fixture.browsers.browser_pid().await.expect("launched browser has a pid");
    let killed = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(killed.success());
    tokio::time::sleep(Duration::from_millis(300)).await;

    let reply = fixture.navigate("c1", "/cookies").await.unwrap();
    assert!(reply["session_lost"].as_str().unwrap().contains("browser stopped"), "{reply}");
    assert_eq!(fixture.text("c1", Some("#cookies")).await, "none");
    let new_pid = fixture.browsers.browser_pid().await.unwrap();
    assert_ne!(pid, new_pid);
    // Only the first call after the restart carries the notice.
    let again = fixture.navigate("c1", "/").await.unwrap();
    assert!(again.get("session_lost").is_none(), "{again}");
    fixture.browsers.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warmed_up_browser_stays_until_idle_then_closes() {
    let config = BrowserConfig { idle_timeout: Duration::from_millis(1500), ..test_config() };
    let Some(fixture) = fixture(config).await else { return };
    fixture.browsers.warm_up().await.unwrap();
    let pid = fixture.browsers.browser_pid().await.expect("running after warm_up");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(fixture.browsers.browser_pid().await, Some(pid), "not closed before idle_timeout");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(fixture.browsers.browser_pid().await, None, "closed once idle with no contexts");
    // And started again on demand.
    assert_eq!(fixture.navigate("c1", "/").await.unwrap()["title"], "Home page");
}
