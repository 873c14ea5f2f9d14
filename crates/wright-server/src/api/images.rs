//! `GET /api/images?url=…`: an image the agent shows, fetched through the egress and served
//! from Wright.
//!
//! The canvas never loads an address the agent chose (that request would leave from the
//! person's browser, past the egress policy, and to another port of this host with the
//! session cookie). It asks this route instead, which fetches the URL with the same policy
//! as `fetch_url` (loopback, private and metadata addresses refused, each redirect judged
//! again, header and time caps) plus `[images]` limits of its own, and answers only with a
//! raster image whose bytes it recognised.
//!
//! **SVG is refused**, not served sandboxed: an SVG is a document (scripts, external
//! references, `foreignObject`), and while an `<img>` renders it inert, the same URL opened
//! in a tab would be a same-origin document of the app kept safe only by the response's CSP.
//! Refusing costs little (an agent can show an SVG it holds as a data: URL, which the page
//! renders inert) and leaves nothing to get right later. What is served is decided by the
//! bytes, never by the upstream `Content-Type` alone: the upstream must say `image/…` (not
//! SVG), and the body must begin with the signature of PNG, JPEG, GIF, WebP or AVIF; the
//! response's `Content-Type` is the type of that signature.
//!
//! Every answer carries `Content-Security-Policy: default-src 'none'; sandbox`,
//! `X-Content-Type-Options: nosniff` and `Cross-Origin-Resource-Policy: same-origin`, so even
//! a mistake in the sniffing could not turn the body into an active document, and no other
//! origin (a component's opaque frame included) can embed it.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use wright_egress::{EgressError, EgressRequest};

use super::ApiError;
use crate::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ImageQuery {
    /// The http(s) address of the image, as the agent gave it.
    pub url: String,
}

/// The policy of an image response: nothing it contains may run or load anything, even if
/// opened as a document. `frame-ancestors` repeats the app's own rule, which this replaces.
pub(super) const IMAGE_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; sandbox; frame-ancestors 'none'";

/// The raster formats served, by their leading bytes. Anything else is not an image to us.
fn sniff(body: &[u8]) -> Option<&'static str> {
    if body.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if body.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if body.starts_with(b"GIF87a") || body.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if body.len() >= 12 && &body[..4] == b"RIFF" && &body[8..12] == b"WEBP" {
        Some("image/webp")
    } else if body.len() >= 12 && &body[4..8] == b"ftyp" && matches!(&body[8..12], b"avif" | b"avis") {
        Some("image/avif")
    } else {
        None
    }
}

fn refused(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(status, code, message)
}

/// Each egress failure as the canvas should show it: the policy's refusal is the client's
/// business (403, with the rule); a remote that fails or is slow is a gateway error.
fn egress_error(error: EgressError) -> ApiError {
    let message = error.to_string();
    match error {
        EgressError::Denied { .. } => refused(StatusCode::FORBIDDEN, "denied", message),
        EgressError::InvalidUrl { .. } | EgressError::InvalidRequest { .. } => {
            refused(StatusCode::BAD_REQUEST, "invalid_url", message)
        }
        EgressError::Timeout { .. } => refused(StatusCode::GATEWAY_TIMEOUT, "timeout", message),
        EgressError::Dns { .. }
        | EgressError::Connect { .. }
        | EgressError::TooManyRedirects { .. }
        | EgressError::HeadersTooLarge { .. }
        | EgressError::Http { .. } => refused(StatusCode::BAD_GATEWAY, "upstream", message),
        EgressError::NotConfigured { .. } | EgressError::Search { .. } | EgressError::Config { .. } => {
            ApiError::internal(&message)
        }
    }
}

/// Fetches an image through the egress policy and serves it from Wright.
#[utoipa::path(
    get, path = "/api/images", tag = "images", params(ImageQuery),
    responses(
        (status = 200, description = "The image, its type decided by its bytes (PNG, JPEG, GIF, WebP, AVIF)",
            content_type = "image/*"),
        (status = 400, body = super::error::ErrorBody, description = "No URL, or not an http(s) URL"),
        (status = 403, body = super::error::ErrorBody, description = "The egress policy refused the address"),
        (status = 413, body = super::error::ErrorBody, description = "Larger than `[images] max_bytes`"),
        (status = 415, body = super::error::ErrorBody, description = "Not a raster image (SVG included)"),
        (status = 502, body = super::error::ErrorBody, description = "The remote failed or answered with an error"),
        (status = 504, body = super::error::ErrorBody, description = "The remote was too slow"),
    ),
)]
pub(super) async fn image(
    State(state): State<AppState>,
    query: Result<Query<ImageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) =
        query.map_err(|rejection| refused(StatusCode::BAD_REQUEST, "invalid_url", rejection.body_text()))?;
    let limits = &state.config.images;
    let egress = &state.tools.services().egress;
    // The egress's own body cap cuts rather than fails; either cap reached means too large.
    let limit = limits.max_bytes.min(egress.config().max_body_bytes);
    let request = EgressRequest {
        headers: vec![("accept".to_owned(), "image/avif,image/webp,image/png,image/jpeg,image/gif".to_owned())],
        timeout: Some(limits.timeout()),
        ..EgressRequest::get(query.url)
    };
    let response = egress.fetch(request).await.map_err(egress_error)?;
    if !response.ok() {
        return Err(refused(
            StatusCode::BAD_GATEWAY,
            "upstream",
            format!("the image server answered with status {}", response.status),
        ));
    }
    if response.truncated || response.body.len() > limit {
        return Err(refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the image is larger than {limit} bytes"),
        ));
    }
    let declared = response.header("content-type").unwrap_or("").trim().to_ascii_lowercase();
    if declared.starts_with("image/svg") {
        return Err(refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "not_an_image",
            "SVG images are not served from an address (show one as a data: URL instead)",
        ));
    }
    let sniffed = sniff(&response.body);
    let Some(content_type) = sniffed.filter(|_| declared.starts_with("image/")) else {
        let declared = if declared.is_empty() { "no type".to_owned() } else { declared };
        return Err(refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "not_an_image",
            format!("not a PNG, JPEG, GIF, WebP or AVIF image (the server said {declared})"),
        ));
    };
    let mut served = (StatusCode::OK, response.body).into_response();
    let headers = served.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(IMAGE_CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    // Private: the response depends on the session; a day in the person's own cache spares
    // the remote a request on every render and reload.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=86400"));
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::sniff;

    #[test]
    fn each_served_format_is_recognised_by_its_leading_bytes_and_nothing_else_is() {
        let check = |body: &[u8], expected: Option<&str>| assert_eq!(sniff(body), expected, "{body:?}");
        check(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some("image/png"));
        check(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F'], Some("image/jpeg"));
        check(b"GIF89a\x01\0\x01\0", Some("image/gif"));
        check(b"GIF87a\x01\0\x01\0", Some("image/gif"));
        check(b"RIFF\x24\0\0\0WEBPVP8 ", Some("image/webp"));
        check(b"\0\0\0\x1cftypavif\0\0\0\0", Some("image/avif"));
        check(b"\0\0\0\x1cftypavis\0\0\0\0", Some("image/avif"));
        // Not images, or not ones served: SVG, HTML, a HEIC, a RIFF that is not WebP, too short.
        check(b"<svg xmlns='http://www.w3.org/2000/svg'/>", None);
        check(b"<!doctype html><script>", None);
        check(b"\0\0\0\x1cftypheic\0\0\0\0", None);
        check(b"RIFF\x24\0\0\0WAVEfmt ", None);
        check(b"\x89PNG", None);
        check(b"", None);
    }
}
