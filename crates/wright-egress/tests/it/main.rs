//! Integration tests for `wright-egress`: the SSRF URL table, DNS rebinding, redirects,
//! limits, the `fetch_url` rendering and the three web search backends against local fakes.
//!
//! Every server binds 127.0.0.1:0. Names are answered by a `StaticResolver`, so nothing here
//! touches real DNS; 127.0.0.1 is reachable only where a test allowlists it.

mod proxy;
mod search;
mod ssrf_table;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use wright_egress::{Egress, EgressConfig, EgressError, EgressRequest, NameResolver, StaticResolver};

pub fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

pub fn egress_with(config: EgressConfig, resolver: StaticResolver) -> Egress {
    Egress::with_resolver(config, Arc::new(resolver)).unwrap()
}

pub fn allowing(allow: &[String]) -> EgressConfig {
    EgressConfig { allow: allow.to_vec(), ..EgressConfig::default() }
}

pub async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

/// A server that counts every request it gets and offers the routes the tests need.
#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

impl Hits {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

async fn test_server() -> (SocketAddr, Hits) {
    let hits = Hits::default();
    let router = Router::new()
        .route("/echo", any(echo))
        .route("/redirect", any(redirect))
        .route("/loop", any(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }))
        .route("/big", any(big))
        .route("/slow", any(slow))
        .route("/fat-headers", any(fat_headers))
        .route("/png", any(png))
        .route("/text", any(|| async { ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "héllo") }))
        .layer(axum::middleware::from_fn_with_state(hits.clone(), count_hits))
        .with_state(hits.clone());
    (serve(router).await, hits)
}

async fn count_hits(
    State(hits): State<Hits>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    hits.0.fetch_add(1, Ordering::SeqCst);
    next.run(request).await
}

async fn echo(method: Method, headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let get = |name: &str| headers.get(name).map(|value| value.to_str().unwrap().to_owned());
    axum::Json(serde_json::json!({
        "method": method.as_str(),
        "body": String::from_utf8_lossy(&body),
        "authorization": get("authorization"),
        "cookie": get("cookie"),
        "content_type": get("content-type"),
        "custom": get("x-custom"),
        "host": get("host"),
    }))
}

async fn redirect(Query(params): Query<HashMap<String, String>>) -> Response {
    let status = params.get("status").map_or(302, |status| status.parse().unwrap());
    let to = params.get("to").cloned().unwrap_or_default();
    (StatusCode::from_u16(status).unwrap(), [(header::LOCATION, to)]).into_response()
}

async fn big(Query(params): Query<HashMap<String, String>>) -> Vec<u8> {
    let bytes: usize = params["bytes"].parse().unwrap();
    vec![b'a'; bytes]
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(3)).await;
    "late"
}

async fn fat_headers() -> Response {
    ([("x-fat", "f".repeat(20 * 1024))], "fat").into_response()
}

async fn png() -> Response {
    ([(header::CONTENT_TYPE, "image/png")], vec![0x89, b'P', b'N', b'G', 0, 0xff]).into_response()
}

/// An egress that may reach the test server at `address` (by IP and port) and nothing local else.
fn egress_for(address: SocketAddr, resolver: StaticResolver) -> Egress {
    egress_with(allowing(&[address.to_string()]), resolver)
}

async fn echo_json(egress: &Egress, request: EgressRequest) -> serde_json::Value {
    let response = egress.fetch(request).await.unwrap();
    assert_eq!(response.status, 200, "{}", response.text());
    serde_json::from_slice(&response.body).unwrap()
}

#[test]
fn egress_is_cheap_to_share() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    assert_shareable::<Egress>();
}

#[test]
fn config_defaults_match_the_issue() {
    let config = EgressConfig::default();
    assert_eq!(config.connect_timeout(), Duration::from_secs(10));
    assert_eq!(config.total_timeout(), Duration::from_secs(30));
    assert_eq!(config.max_body_bytes, 5 * 1024 * 1024);
    assert_eq!(config.max_redirects, 5);
    assert_eq!(config.max_requests_per_call, 20);
    assert!(config.allow.is_empty());
    // An empty table is the default; unknown keys are refused.
    let parsed: EgressConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(parsed, config);
    assert!(serde_json::from_str::<EgressConfig>(r#"{"max_body_byte": 1}"#).is_err());
    let parsed: EgressConfig = serde_json::from_str(
        r#"{"allow": ["nas.lan", "10.0.0.0/8:8443"], "search": {"searxng_url": "http://localhost:8888"}}"#,
    )
    .unwrap();
    assert_eq!(parsed.allow.len(), 2);
}

#[test]
fn bad_allowlist_entries_are_refused() {
    for entry in ["", "nas.lan:99999", "[::1", "exa mple.com", "*.", "10.0.0.0/33:80x"] {
        let config = allowing(&[entry.to_owned()]);
        let error = Egress::with_resolver(config, Arc::new(StaticResolver::new())).unwrap_err();
        assert!(matches!(error, EgressError::Config { .. }), "{entry:?}: {error}");
    }
}

#[test]
fn api_keys_never_reach_debug_output() {
    let mut config = EgressConfig::default();
    config.search.brave_api_key = Some("secret-brave".to_owned());
    config.search.tavily_api_key = Some("secret-tavily".to_owned());
    let egress = egress_with(config, StaticResolver::new());
    let debug = format!("{egress:?}");
    assert!(!debug.contains("secret"), "{debug}");
}

/// The binary may build its `Egress` before the runtime starts (config loading).
#[test]
fn system_resolver_builds_outside_a_runtime() {
    let egress = Egress::new(EgressConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(!runtime.block_on(egress.check("http://[::1]/")).allowed);
}

#[tokio::test]
async fn system_resolver_builds_and_literals_need_no_dns() {
    // hickory answers `localhost` from /etc/hosts; the allowlist lets the lookup happen.
    let egress = Egress::new(allowing(&["localhost".to_owned()])).unwrap();
    let verdict = egress.check("http://localhost/").await;
    assert!(verdict.allowed, "{verdict}");
    assert!(verdict.addresses.iter().all(|address| address.address.is_loopback()), "{verdict}");
    let egress = Egress::new(EgressConfig::default()).unwrap();
    let verdict = egress.check("http://127.0.0.1/").await;
    assert!(!verdict.allowed);
    assert_eq!(
        verdict.to_string(),
        "deny http://127.0.0.1/: 127.0.0.1 is loopback (127.0.0.0/8)\n  deny 127.0.0.1: loopback (127.0.0.0/8)"
    );
}

#[tokio::test]
async fn verdict_prints_addresses_and_rule() {
    let resolver = StaticResolver::new().with("example.com", &[ip("93.184.215.14"), ip("10.1.2.3")]);
    let egress = egress_with(EgressConfig::default(), resolver);
    let verdict = egress.check("http://example.com/").await;
    assert!(!verdict.allowed);
    assert_eq!(
        verdict.to_string(),
        "deny http://example.com/: 10.1.2.3 is private (10.0.0.0/8)\n  allow 93.184.215.14: globally routable\n  deny 10.1.2.3: private (10.0.0.0/8)"
    );
    let json = serde_json::to_value(&verdict).unwrap();
    assert_eq!(json["addresses"][1]["address"], "10.1.2.3");
    assert_eq!(json["port"], 80);
}

/// A resolver that answers a public address first and 127.0.0.1 on every later lookup: if the
/// client looked the name up a second time (or the pin were not honoured), the request would
/// land on the local server.
#[tokio::test]
async fn dns_rebinding_cannot_reach_loopback() {
    let (address, hits) = test_server().await;
    let resolver = Arc::new(
        StaticResolver::new().with_sequence("rebind.test", vec![vec![ip("198.51.99.1")], vec![ip("127.0.0.1")]]),
    );
    let config = EgressConfig { connect_timeout_ms: 500, total_timeout_ms: 2_000, ..EgressConfig::default() };
    let egress = Egress::with_resolver(config, resolver.clone()).unwrap();
    let url = format!("http://rebind.test:{}/echo", address.port());

    // First lookup: public, approved, pinned; the connection goes to 198.51.99.1 (and fails
    // or times out on this machine), never to 127.0.0.1.
    let first = egress.fetch(EgressRequest::get(&url)).await;
    assert!(matches!(first, Err(EgressError::Connect { .. } | EgressError::Timeout { .. })), "{first:?}");
    assert_eq!(resolver.lookups(), 1, "the client must not resolve the name again");
    assert_eq!(hits.count(), 0);

    // Second lookup: 127.0.0.1, denied before any connection.
    let second = egress.fetch(EgressRequest::get(&url)).await;
    assert!(matches!(&second, Err(EgressError::Denied { reason }) if reason.contains("loopback")), "{second:?}");
    assert_eq!(resolver.lookups(), 2);
    assert_eq!(hits.count(), 0);
}

#[tokio::test]
async fn one_private_answer_among_public_ones_denies() {
    let (address, hits) = test_server().await;
    let resolver = StaticResolver::new().with("mixed.test", &[ip("93.184.215.14"), ip("127.0.0.1")]);
    let egress = egress_with(EgressConfig::default(), resolver);
    let result = egress.fetch(EgressRequest::get(format!("http://mixed.test:{}/echo", address.port()))).await;
    assert!(matches!(result, Err(EgressError::Denied { .. })), "{result:?}");
    assert_eq!(hits.count(), 0);
}

#[tokio::test]
async fn allowlisted_server_is_reached_by_ip_and_by_name() {
    let (address, hits) = test_server().await;
    let resolver = StaticResolver::new().with("box.lan", &[ip("127.0.0.1")]);
    let egress = egress_with(allowing(&[address.to_string(), format!("box.lan:{}", address.port())]), resolver);
    let response = egress.fetch(EgressRequest::get(format!("http://{address}/text"))).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.text(), "héllo");
    assert_eq!(response.remote_address, Some(address));
    let body = echo_json(&egress, EgressRequest::get(format!("http://box.lan:{}/echo", address.port()))).await;
    assert_eq!(body["host"], format!("box.lan:{}", address.port()));
    // The trailing-dot spelling names the same host and reaches the same pinned address.
    let body = echo_json(&egress, EgressRequest::get(format!("http://BOX.lan.:{}/echo", address.port()))).await;
    assert_eq!(body["host"], format!("box.lan.:{}", address.port()));
    assert_eq!(hits.count(), 3);
}

#[tokio::test]
async fn unlisted_local_server_is_denied() {
    let (address, hits) = test_server().await;
    let egress = egress_with(EgressConfig::default(), StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/echo"))).await;
    assert!(matches!(&result, Err(EgressError::Denied { reason }) if reason.contains("loopback")), "{result:?}");
    assert_eq!(hits.count(), 0);
}

#[tokio::test]
async fn redirect_to_a_non_allowlisted_local_port_is_denied() {
    let (allowed, allowed_hits) = test_server().await;
    let (other, other_hits) = test_server().await;
    let egress = egress_for(allowed, StaticResolver::new());
    assert!(egress.check(&format!("http://{allowed}/")).await.allowed);
    assert!(!egress.check(&format!("http://{other}/")).await.allowed);

    let url = format!("http://{allowed}/redirect?to=http://{other}/echo");
    let result = egress.fetch(EgressRequest::get(url)).await;
    assert!(
        matches!(&result, Err(EgressError::Denied { reason }) if reason.contains(&other.to_string())),
        "{result:?}"
    );
    assert_eq!(allowed_hits.count(), 1);
    assert_eq!(other_hits.count(), 0);
}

#[tokio::test]
async fn redirects_to_metadata_or_other_schemes_are_denied() {
    let (address, _) = test_server().await;
    let egress = egress_for(address, StaticResolver::new());
    for target in [
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "http://[::ffff:127.0.0.1]:1/",
        "http://localhost/",
    ] {
        let url = format!("http://{address}/redirect?to={}", urlencode(target));
        let result = egress.fetch(EgressRequest::get(url)).await;
        assert!(matches!(result, Err(EgressError::Denied { .. })), "{target}: {result:?}");
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn see_other_turns_into_get_and_307_keeps_the_body() {
    let (address, _) = test_server().await;
    let egress = egress_for(address, StaticResolver::new());
    let post = |status: u16| EgressRequest {
        method: "POST".to_owned(),
        url: format!("http://{address}/redirect?status={status}&to=/echo"),
        headers: vec![("content-type".to_owned(), "text/plain".to_owned())],
        body: Some(Bytes::from_static(b"hello")),
        timeout: None,
    };
    let body = echo_json(&egress, post(303)).await;
    assert_eq!(body["method"], "GET");
    assert_eq!(body["body"], "");
    assert_eq!(body["content_type"], serde_json::Value::Null);

    let body = echo_json(&egress, post(302)).await;
    assert_eq!(body["method"], "GET");

    for status in [307, 308] {
        let body = echo_json(&egress, post(status)).await;
        assert_eq!(body["method"], "POST");
        assert_eq!(body["body"], "hello");
        assert_eq!(body["content_type"], "text/plain");
    }

    let mut put = post(303);
    put.method = "PUT".to_owned();
    assert_eq!(echo_json(&egress, put).await["method"], "GET");
    let response = egress.fetch(EgressRequest::get(format!("http://{address}/redirect?to=/text"))).await.unwrap();
    assert_eq!(response.redirects, 1);
    assert_eq!(response.url, format!("http://{address}/text"));
}

#[tokio::test]
async fn credentials_are_not_forwarded_to_another_host() {
    let (address, _) = test_server().await;
    let port = address.port();
    let resolver = StaticResolver::new().with("other.test", &[ip("127.0.0.1")]);
    let egress = egress_with(allowing(&[address.to_string(), "other.test".to_owned()]), resolver);
    let with_credentials = |url: String| EgressRequest {
        headers: vec![
            ("Authorization".to_owned(), "Bearer secret".to_owned()),
            ("Cookie".to_owned(), "session=secret".to_owned()),
            ("X-Custom".to_owned(), "kept".to_owned()),
        ],
        ..EgressRequest::get(url)
    };

    // Same origin: credentials stay.
    let body = echo_json(&egress, with_credentials(format!("http://{address}/redirect?to=/echo"))).await;
    assert_eq!(body["authorization"], "Bearer secret");
    assert_eq!(body["cookie"], "session=secret");

    // Another host: credentials dropped, other headers kept.
    let target = urlencode(&format!("http://other.test:{port}/echo"));
    let body = echo_json(&egress, with_credentials(format!("http://{address}/redirect?to={target}"))).await;
    assert_eq!(body["host"], format!("other.test:{port}"));
    assert_eq!(body["authorization"], serde_json::Value::Null);
    assert_eq!(body["cookie"], serde_json::Value::Null);
    assert_eq!(body["custom"], "kept");

    // URL userinfo becomes Basic auth on the first hop only.
    let body = echo_json(&egress, EgressRequest::get(format!("http://user:pw@{address}/redirect?to={target}"))).await;
    assert_eq!(body["authorization"], serde_json::Value::Null);
    let body = echo_json(&egress, EgressRequest::get(format!("http://user:pw@{address}/echo"))).await;
    assert_eq!(body["authorization"], "Basic dXNlcjpwdw==");
}

#[tokio::test]
async fn redirect_limit_is_enforced() {
    let (address, hits) = test_server().await;
    let egress = egress_for(address, StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/loop"))).await;
    assert!(matches!(result, Err(EgressError::TooManyRedirects { limit: 5 })), "{result:?}");
    assert_eq!(hits.count(), 6, "the first request and five redirects");

    let config = EgressConfig { max_redirects: 0, ..allowing(&[address.to_string()]) };
    let egress = egress_with(config, StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/loop"))).await;
    assert!(matches!(result, Err(EgressError::TooManyRedirects { limit: 0 })), "{result:?}");
}

#[tokio::test]
async fn body_over_the_limit_is_truncated() {
    let (address, _) = test_server().await;
    let limit = 1024 * 1024;
    let config = EgressConfig { max_body_bytes: limit, ..allowing(&[address.to_string()]) };
    let egress = egress_with(config, StaticResolver::new());
    let fetch = |bytes: usize| egress.fetch(EgressRequest::get(format!("http://{address}/big?bytes={bytes}")));

    let response = fetch(2 * limit).await.unwrap();
    assert_eq!(response.body.len(), limit);
    assert!(response.truncated);
    let result = response.to_fetch_url_result();
    assert!(result.truncated);
    // application/octet-stream: rendered as base64 of the kept bytes.
    assert_eq!(result.encoding, Some("base64"));
    assert_eq!(result.body.len(), limit.div_ceil(3) * 4);

    let response = fetch(limit).await.unwrap();
    assert_eq!(response.body.len(), limit);
    assert!(!response.truncated);

    let response = fetch(10).await.unwrap();
    assert_eq!(&response.body[..], b"aaaaaaaaaa");
    assert!(!response.truncated);
}

#[tokio::test]
async fn total_timeout_and_request_deadline() {
    let (address, _) = test_server().await;
    let config = EgressConfig { total_timeout_ms: 300, ..allowing(&[address.to_string()]) };
    let egress = egress_with(config, StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/slow"))).await;
    assert!(matches!(result, Err(EgressError::Timeout { after }) if after == Duration::from_millis(300)), "{result:?}");

    let egress = egress_for(address, StaticResolver::new());
    let request = EgressRequest {
        timeout: Some(Duration::from_millis(200)),
        ..EgressRequest::get(format!("http://{address}/slow"))
    };
    let result = egress.fetch(request).await;
    assert!(matches!(result, Err(EgressError::Timeout { after }) if after == Duration::from_millis(200)), "{result:?}");
}

#[tokio::test]
async fn oversized_response_headers_are_refused() {
    let (address, _) = test_server().await;
    let config = EgressConfig { max_header_bytes: 8 * 1024, ..allowing(&[address.to_string()]) };
    let egress = egress_with(config, StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/fat-headers"))).await;
    assert!(matches!(result, Err(EgressError::HeadersTooLarge { limit: 8192 })), "{result:?}");
    // The default cap (64 KiB) lets the same response through.
    let egress = egress_for(address, StaticResolver::new());
    assert!(egress.fetch(EgressRequest::get(format!("http://{address}/fat-headers"))).await.is_ok());
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let egress = egress_for(address, StaticResolver::new());
    let result = egress.fetch(EgressRequest::get(format!("http://{address}/"))).await;
    assert!(matches!(result, Err(EgressError::Connect { .. })), "{result:?}");
}

#[tokio::test]
async fn bad_requests_are_refused_before_sending() {
    let (address, hits) = test_server().await;
    let egress = egress_for(address, StaticResolver::new());
    let mut request = EgressRequest::get(format!("http://{address}/echo"));
    request.method = "CONNECT".to_owned();
    assert!(matches!(egress.fetch(request).await, Err(EgressError::InvalidRequest { .. })));
    let request = EgressRequest {
        headers: vec![("bad header".to_owned(), "x".to_owned())],
        ..EgressRequest::get(format!("http://{address}/echo"))
    };
    assert!(matches!(egress.fetch(request).await, Err(EgressError::InvalidRequest { .. })));
    assert!(matches!(egress.fetch(EgressRequest::get("http://")).await, Err(EgressError::InvalidUrl { .. })));
    assert_eq!(hits.count(), 0);

    // A Host header cannot point the request at another virtual host.
    let request = EgressRequest {
        headers: vec![("Host".to_owned(), "169.254.169.254".to_owned())],
        ..EgressRequest::get(format!("http://{address}/echo"))
    };
    assert_eq!(echo_json(&egress, request).await["host"], address.to_string());
}

#[tokio::test]
async fn fetch_url_result_renders_text_and_binary() {
    let (address, _) = test_server().await;
    let egress = egress_for(address, StaticResolver::new());

    let response = egress.fetch(EgressRequest::get(format!("http://{address}/text"))).await.unwrap();
    let json = response.to_fetch_url_result().to_json();
    assert_eq!(json["status"], 200);
    assert_eq!(json["ok"], true);
    assert_eq!(json["truncated"], false);
    assert_eq!(json["body"], "héllo");
    assert_eq!(json["headers"]["content-type"], "text/plain; charset=utf-8");
    assert!(json.get("encoding").is_none());

    let response = egress.fetch(EgressRequest::get(format!("http://{address}/png"))).await.unwrap();
    let json = response.to_fetch_url_result().to_json();
    assert_eq!(json["encoding"], "base64");
    assert_eq!(json["body"], "iVBORwD/");

    let mut head = EgressRequest::get(format!("http://{address}/text"));
    head.method = "head".to_owned();
    let response = egress.fetch(head).await.unwrap();
    assert!(response.body.is_empty());
    assert_eq!(response.header("Content-Type"), Some("text/plain; charset=utf-8"));

    let response = egress.fetch(EgressRequest::get(format!("http://{address}/redirect?status=404&to=/x"))).await;
    // A 4xx with a Location is not a redirect: returned as is.
    let response = response.unwrap();
    assert_eq!(response.status, 404);
    assert!(!response.to_fetch_url_result().ok);
}

#[test]
fn textual_media_types() {
    for textual in [
        "text/html; charset=utf-8",
        "application/json",
        "application/ld+json",
        "image/svg+xml",
        "application/xml",
        "application/javascript",
    ] {
        assert!(wright_egress::is_textual_media_type(textual), "{textual}");
    }
    for binary in
        ["image/png", "application/octet-stream", "application/pdf", "application/zip", "video/mp4", "nonsense"]
    {
        assert!(!wright_egress::is_textual_media_type(binary), "{binary}");
    }
}

/// `NameResolver` is public so other callers (the browser) can share the same answers.
#[tokio::test]
async fn static_resolver_sequences_repeat_the_last_answer() {
    let resolver = StaticResolver::new().with_sequence("a.test", vec![vec![ip("1.1.1.1")], vec![ip("2.2.2.2")]]);
    assert_eq!(resolver.lookup("a.test").await.unwrap(), vec![ip("1.1.1.1")]);
    assert_eq!(resolver.lookup("A.TEST.").await.unwrap(), vec![ip("2.2.2.2")]);
    assert_eq!(resolver.lookup("a.test").await.unwrap(), vec![ip("2.2.2.2")]);
    assert!(matches!(resolver.lookup("b.test").await, Err(EgressError::Dns { .. })));
    assert_eq!(resolver.lookups(), 4);
}
