//! `GET /api/images`: an image the canvas shows, fetched through the egress policy and served
//! from Wright. The image servers are real HTTP servers on 127.0.0.1; the config's egress
//! allowlist names the one the test allows, and a second one (not allowlisted) counts every
//! request it receives, so a refusal is seen to happen before any connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::Value;
use tower::ServiceExt;
use wright_server::token::Auth;
use wright_server::{AppState, Config};

const TOKEN: &str = "test-token";

/// The smallest valid PNG (1×1, transparent).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

struct ImageServer {
    url: String,
    hits: Arc<AtomicUsize>,
}

/// An HTTP server on 127.0.0.1:0 with an image, a page, an SVG, a too-large image, a lie (HTML
/// said to be a PNG), and a redirect to `redirect_to`.
async fn image_server(redirect_to: Option<String>) -> ImageServer {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let redirect_to = redirect_to.unwrap_or_default();
    let router = Router::new()
        .route("/ok.png", get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }))
        .route("/page.html", get(|| async { ([(header::CONTENT_TYPE, "text/html")], "<script>alert(1)</script>") }))
        .route(
            "/lie.png",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], "<html><script>alert(1)</script></html>") }),
        )
        .route(
            "/logo.svg",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/svg+xml")],
                    "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
                )
            }),
        )
        .route(
            "/big.png",
            get(|| async {
                let mut body = PNG.to_vec();
                body.resize(2 * 1024 * 1024, 0);
                ([(header::CONTENT_TYPE, "image/png")], body)
            }),
        )
        .route(
            "/missing.png",
            get(|| async { (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "image/png")], PNG).into_response() }),
        )
        .route(
            "/redirect.png",
            get(move || {
                let target = redirect_to.clone();
                async move { (StatusCode::FOUND, [(header::LOCATION, target)]) }
            }),
        )
        .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
            counter.fetch_add(1, Ordering::SeqCst);
            next.run(request)
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    ImageServer { url, hits }
}

struct Fixture {
    _dir: tempfile::TempDir,
    state: AppState,
}

impl Fixture {
    /// Wright with `allowed` (host:port) on the egress allowlist and images capped at 1 MiB.
    async fn allowing(allowed: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = format!("[egress]\nallow = [\"{allowed}\"]\n\n[images]\nmax_bytes = 1048576\n");
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        let config = Config::load(dir.path()).unwrap();
        let state = AppState::open(config, Auth::new(TOKEN.into()), wright_server::domain::models::Models::none())
            .await
            .unwrap();
        Self { _dir: dir, state }
    }

    async fn image(&self, url: &str, token: bool) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let mut encoded = String::new();
        for byte in url.bytes() {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                encoded.push(byte as char);
            } else {
                encoded.push_str(&format!("%{byte:02X}"));
            }
        }
        let mut request = Request::get(format!("/api/images?url={encoded}"));
        if token {
            request = request.header("authorization", format!("Bearer {TOKEN}"));
        }
        let response =
            wright_server::api::app(self.state.clone()).oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec();
        (status, headers, body)
    }

    /// A refusal: its status, and the code and message of the API's one error shape.
    async fn refusal(&self, url: &str) -> (StatusCode, String, String) {
        let (status, headers, body) = self.image(url, true).await;
        assert_eq!(headers[header::CONTENT_TYPE], "application/json", "{url}: {status}");
        let body: Value = serde_json::from_slice(&body).unwrap();
        (
            status,
            body["error"]["code"].as_str().unwrap().to_owned(),
            body["error"]["message"].as_str().unwrap().to_owned(),
        )
    }
}

#[tokio::test]
async fn an_image_on_an_allowlisted_server_is_served_with_a_fixed_type_and_an_inert_policy() {
    let server = image_server(None).await;
    let fixture = Fixture::allowing(server.url.trim_start_matches("http://")).await;
    let (status, headers, body) = fixture.image(&format!("{}/ok.png", server.url), true).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, PNG);
    assert_eq!(headers[header::CONTENT_TYPE], "image/png");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.contains("default-src 'none'") && policy.contains("sandbox"), "{policy}");
    assert_eq!(headers["cross-origin-resource-policy"], "same-origin");
    assert!(headers[header::CACHE_CONTROL].to_str().unwrap().starts_with("private"));
    // Like every /api route, it needs the token.
    let (status, ..) = fixture.image(&format!("{}/ok.png", server.url), false).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn loopback_and_private_addresses_not_allowlisted_are_refused_before_any_connection() {
    let allowed = image_server(None).await;
    let canary = image_server(None).await;
    let fixture = Fixture::allowing(allowed.url.trim_start_matches("http://")).await;
    // Another port of the allowlisted host is not allowlisted.
    let (status, code, message) = fixture.refusal(&format!("{}/ok.png", canary.url)).await;
    assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "denied"));
    assert!(message.contains("loopback"), "{message}");
    for url in [
        "http://10.0.0.1/a.png",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/a.png",
        "http://localhost/a.png",
    ] {
        let (status, code, message) = fixture.refusal(url).await;
        assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "denied"), "{url}: {message}");
    }
    assert_eq!(canary.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_from_an_allowlisted_server_to_one_that_is_not_is_refused() {
    let canary = image_server(None).await;
    let allowed = image_server(Some(format!("{}/ok.png", canary.url))).await;
    let fixture = Fixture::allowing(allowed.url.trim_start_matches("http://")).await;
    let (status, code, _) = fixture.refusal(&format!("{}/redirect.png", allowed.url)).await;
    assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "denied"));
    assert_eq!(allowed.hits.load(Ordering::SeqCst), 1);
    assert_eq!(canary.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn what_is_not_a_raster_image_is_refused_whatever_its_type_says() {
    let server = image_server(None).await;
    let fixture = Fixture::allowing(server.url.trim_start_matches("http://")).await;
    for (path, said) in [("/page.html", "text/html"), ("/lie.png", "image/png"), ("/logo.svg", "SVG")] {
        let (status, code, message) = fixture.refusal(&format!("{}{path}", server.url)).await;
        assert_eq!((status, code.as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, "not_an_image"), "{path}: {message}");
        assert!(message.contains(said), "{path}: {message}");
    }
    let (status, code, _) = fixture.refusal(&format!("{}/missing.png", server.url)).await;
    assert_eq!((status, code.as_str()), (StatusCode::BAD_GATEWAY, "upstream"));
    for url in ["file:///etc/passwd", "javascript:alert(1)", "not a url"] {
        let (status, code, message) = fixture.refusal(url).await;
        assert!(
            status == StatusCode::FORBIDDEN || status == StatusCode::BAD_REQUEST,
            "{url}: {status} {code} {message}"
        );
    }
}

#[tokio::test]
async fn an_image_larger_than_the_configured_cap_is_refused() {
    let server = image_server(None).await;
    let fixture = Fixture::allowing(server.url.trim_start_matches("http://")).await;
    let (status, code, message) = fixture.refusal(&format!("{}/big.png", server.url)).await;
    assert_eq!((status, code.as_str()), (StatusCode::PAYLOAD_TOO_LARGE, "too_large"), "{message}");
    assert!(message.contains("1048576"), "{message}");
}
