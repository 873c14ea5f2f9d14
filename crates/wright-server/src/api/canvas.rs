//! The canvas app as the binary carries it: the files of `frontend/dist`, gzip-compressed and
//! embedded at build time (`build.rs`), so `wright serve` serves the app from any directory,
//! installed or in a container. `[server] frontend_dir` overrides it with a folder on disk (for
//! working on the canvas without rebuilding the binary); see [`super::app`].
//!
//! Guarantees:
//! - Files Vite names after their content (`assets/…`) are cached for a year (`immutable`);
//!   everything else (`index.html`, which names them) is revalidated on every load (`no-cache`
//!   with an `ETag`, answered 304 when it still matches).
//! - A client that accepts gzip gets the embedded bytes as they are; any other gets them inflated.
//! - Any other path outside `/api` gets `index.html` with a 404, as `ServeDir` answers, and the
//!   app routes it; `/api` paths never reach here (the caller answers them).
//! - A binary built before the canvas was (a fresh clone) answers every page with a 503 that
//!   says how to build it, never an empty page or a JSON 404.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One embedded file.
pub(crate) struct Asset {
    /// Relative to `frontend/dist`, `/`-separated.
    pub path: &'static str,
    pub content_type: &'static str,
    /// Quoted: the content's CRC-32 and length.
    pub etag: &'static str,
    /// Named after its content: it never changes under this name.
    pub immutable: bool,
    /// A gzip member (RFC 1952).
    pub gzip: &'static [u8],
}

static EMBEDDED: &[Asset] = include!(concat!(env!("OUT_DIR"), "/canvas.rs"));

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// Whether this binary was built with the canvas in it.
pub fn embedded() -> bool {
    !EMBEDDED.is_empty()
}

/// Answers a request for a page or file of the canvas from the embedded copy.
pub(crate) fn serve(method: &Method, path: &str, headers: &HeaderMap) -> Response {
    serve_from(EMBEDDED, method, path, headers)
}

pub(crate) fn serve_from(assets: &[Asset], method: &Method, path: &str, headers: &HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, HEAD")]).into_response();
    }
    let Some(index) = assets.iter().find(|asset| asset.path == "index.html") else {
        return not_built();
    };
    let wanted = path.trim_start_matches('/');
    let wanted = if wanted.is_empty() { "index.html" } else { wanted };
    let (asset, status) = match assets.iter().find(|asset| asset.path == wanted) {
        Some(asset) => (asset, StatusCode::OK),
        None => (index, StatusCode::NOT_FOUND),
    };
    let cache_control = if asset.immutable { IMMUTABLE } else { REVALIDATE };
    let mut response = if status == StatusCode::OK && matches_etag(headers, asset.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if accepts_gzip(headers) {
        let mut response = (status, Body::from(asset.gzip)).into_response();
        response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
        response
    } else {
        match inflate(asset.gzip) {
            Some(bytes) => {
                let mut response = (status, Body::from(bytes)).into_response();
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
                response
            }
            // build.rs made every member; one that does not inflate is a broken build
            None => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    headers.insert(header::ETAG, HeaderValue::from_static(asset.etag));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response
}

/// `If-None-Match` names this ETag (or `*`).
fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

/// `Accept-Encoding` lists gzip (or `*`) with a weight above zero.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|parameter| {
                parameter.trim().strip_prefix("q=").and_then(|weight| weight.trim().parse::<f32>().ok()) == Some(0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// The content of a gzip member as build.rs writes it: a 10-byte header with no optional
/// fields, raw DEFLATE, then CRC-32 and length (8 bytes).
fn inflate(member: &[u8]) -> Option<Vec<u8>> {
    let deflated = member.get(10..member.len().checked_sub(8)?)?;
    miniz_oxide::inflate::decompress_to_vec(deflated).ok()
}

fn not_built() -> Response {
    let page = "<!doctype html><meta charset=\"utf-8\"><title>Wright: the canvas was not built</title>\
        <h1>The canvas was not built into this binary</h1>\
        <p>This <code>wright</code> was compiled before the canvas app was built, so it has no app to serve. \
        The API works at <code>/api</code>.</p>\
        <p>Build the canvas, then the binary again: <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>, \
        then <code>cargo build --bin wright</code>. Or point <code>[server] frontend_dir</code> in \
        <code>config.toml</code> at a built canvas folder.</p>";
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, page).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip_of(text: &str) -> &'static [u8] {
        // The same framing as build.rs (its CRC is not checked here, only by browsers).
        let mut member = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
        member.extend(miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 6));
        member.extend([0; 4]);
        member.extend(u32::try_from(text.len()).unwrap().to_le_bytes());
        Box::leak(member.into_boxed_slice())
    }

    fn assets() -> Vec<Asset> {
        vec![
            Asset {
                path: "index.html",
                content_type: "text/html; charset=utf-8",
                etag: "\"1-a\"",
                immutable: false,
                gzip: gzip_of("<title>Wright</title>"),
            },
            Asset {
                path: "assets/index-abc.js",
                content_type: "text/javascript; charset=utf-8",
                etag: "\"2-b\"",
                immutable: true,
                gzip: gzip_of("console.log(1)"),
            },
        ]
    }

    fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(name, value)| (name.clone(), HeaderValue::from_static(value))).collect()
    }

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec()
    }

    #[tokio::test]
    async fn hashed_assets_are_immutable_and_the_page_revalidates() {
        let assets = assets();
        let gzip = headers(&[(header::ACCEPT_ENCODING, "br, gzip;q=0.8")]);
        let script = serve_from(&assets, &Method::GET, "/assets/index-abc.js", &gzip);
        assert_eq!(script.status(), StatusCode::OK);
        assert_eq!(script.headers()[header::CACHE_CONTROL], IMMUTABLE);
        assert_eq!(script.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(script.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert_eq!(body(script).await, assets[1].gzip);

        let page = serve_from(&assets, &Method::GET, "/", &HeaderMap::new());
        assert_eq!(page.headers()[header::CACHE_CONTROL], REVALIDATE);
        assert_eq!(page.headers()[header::ETAG], "\"1-a\"");
        assert!(page.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body(page).await, b"<title>Wright</title>");

        let again = serve_from(&assets, &Method::GET, "/index.html", &headers(&[(header::IF_NONE_MATCH, "\"1-a\"")]));
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert!(body(again).await.is_empty());
    }

    #[tokio::test]
    async fn unknown_paths_get_the_page_with_a_404_and_other_methods_a_405() {
        let assets = assets();
        let route = serve_from(&assets, &Method::GET, "/agents/default/c/123", &HeaderMap::new());
        assert_eq!(route.status(), StatusCode::NOT_FOUND);
        assert_eq!(body(route).await, b"<title>Wright</title>");
        let post = serve_from(&assets, &Method::POST, "/", &HeaderMap::new());
        assert_eq!(
            (post.status(), &post.headers()[header::ALLOW]),
            (StatusCode::METHOD_NOT_ALLOWED, &"GET, HEAD".parse::<HeaderValue>().unwrap())
        );
    }

    #[tokio::test]
    async fn a_binary_built_without_the_canvas_says_how_to_build_it() {
        let page = serve_from(&[], &Method::GET, "/", &HeaderMap::new());
        assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(String::from_utf8(body(page).await).unwrap().contains("npm run build"));
    }

    #[test]
    fn gzip_is_accepted_unless_refused() {
        for (value, accepted) in [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("*", true),
            ("gzip;q=0", false),
            ("identity", false),
            ("br", false),
        ] {
            assert_eq!(accepts_gzip(&headers(&[(header::ACCEPT_ENCODING, value)])), accepted, "{value}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
