//! `Egress::check` and `Egress::fetch`: the guarded request path.
//!
//! One hop is: parse (once, with the `url` crate that reqwest itself uses, so the policy and
//! the connector see the same host) → judge the scheme and host → resolve once → judge every
//! address → pin the approved addresses → send. Redirects are followed here, never by the
//! client, so every hop goes through the same steps. Limits: connect timeout per hop, one
//! total deadline over all hops and the body, a cap on the header block, a cap on the body
//! (cut, not failed: `truncated`).

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use url::{Host, Url};

use crate::error::chain;
use crate::policy::{AddressVerdict, Verdict, name_rule, normalize_host};
use crate::render::FetchUrlResult;
use crate::resolver::{NotPinned, PinGuard};
use crate::{Egress, EgressError};

/// Request headers the client owns. Like the fetch standard's forbidden request headers, they
/// are dropped silently rather than refused: a `Host` that differs from the URL would make the
/// checked host and the addressed virtual host differ, and the framing headers are the
/// client's business.
const DROPPED_REQUEST_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// Headers that carry credentials; never sent to another origin after a redirect.
const CREDENTIAL_HEADERS: &[HeaderName] = &[header::AUTHORIZATION, header::COOKIE, header::PROXY_AUTHORIZATION];

/// Headers that describe a body; dropped with the body when a redirect turns a request into GET.
const BODY_HEADERS: &[HeaderName] =
    &[header::CONTENT_TYPE, header::CONTENT_ENCODING, header::CONTENT_LANGUAGE, header::CONTENT_LOCATION];

/// Methods the agent may use. CONNECT and TRACE have no business here.
const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// One request, as `fetch_url` and the sandbox's `fetch` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRequest {
    /// `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` or `OPTIONS` (any case).
    pub method: String,
    pub url: String,
    /// Request headers in order; repeated names are sent repeatedly.
    pub headers: Vec<(String, String)>,
    pub body: Option<Bytes>,
    /// A deadline tighter than the configured total (the rest of a tool call's budget).
    pub timeout: Option<Duration>,
}

impl EgressRequest {
    /// A plain GET.
    pub fn get(url: impl Into<String>) -> Self {
        EgressRequest { method: "GET".to_owned(), url: url.into(), headers: Vec::new(), body: None, timeout: None }
    }
}

/// The final response, after redirects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressResponse {
    pub status: u16,
    /// Header names lower-cased, values decoded as UTF-8 (lossily), in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    /// The body was longer than `max_body_bytes` and was cut there.
    pub truncated: bool,
    /// The URL that answered (after redirects), as parsed.
    pub url: String,
    /// How many redirects were followed.
    pub redirects: usize,
    /// The address the final hop connected to, when the client reports it.
    pub remote_address: Option<SocketAddr>,
}

impl EgressResponse {
    /// 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header_name, _)| header_name.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as text, with invalid UTF-8 replaced (for the sandbox's `text()`).
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The `fetch_url` tool result: `{status, headers, body, ok, truncated, encoding?}`.
    pub fn to_fetch_url_result(&self) -> FetchUrlResult {
        FetchUrlResult::from_response(self)
    }
}

/// Parses the way the client will: reqwest takes this very `Url` value, never the string.
pub(crate) fn parse_url(input: &str) -> Result<Url, EgressError> {
    Url::parse(input.trim())
        .map_err(|error| EgressError::InvalidUrl { url: input.to_owned(), reason: error.to_string() })
}

fn parse_method(method: &str) -> Result<Method, EgressError> {
    let upper = if method.is_empty() { "GET".to_owned() } else { method.to_ascii_uppercase() };
    if !METHODS.contains(&upper.as_str()) {
        return Err(EgressError::InvalidRequest {
            reason: format!("method {method:?} is not one of {}", METHODS.join(", ")),
        });
    }
    Method::from_bytes(upper.as_bytes())
        .map_err(|_| EgressError::InvalidRequest { reason: format!("bad method {method:?}") })
}

fn build_headers(headers: &[(String, String)]) -> Result<HeaderMap, EgressError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header_name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| EgressError::InvalidRequest { reason: format!("bad header name {name:?}") })?;
        if DROPPED_REQUEST_HEADERS.contains(&header_name.as_str()) {
            continue;
        }
        let header_value = HeaderValue::from_str(value)
            .map_err(|_| EgressError::InvalidRequest { reason: format!("bad value for header {name:?}") })?;
        map.append(header_name, header_value);
    }
    Ok(map)
}

/// Same scheme, host and port: the fetch standard's "same origin", which decides whether
/// credentials may follow a redirect.
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

fn find_source<'a, T: std::error::Error + 'static>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = current {
        if let Some(found) = cause.downcast_ref::<T>() {
            return Some(found);
        }
        current = cause.source();
    }
    None
}

impl Egress {
    /// Judges a URL without sending anything: parse, scheme, name rules, one lookup, every
    /// address. Never fails; an unparsable URL or an unresolvable name is a deny verdict.
    pub async fn check(&self, url: &str) -> Verdict {
        if let Some(reason) = self.carried_secret(url, &[], &[]) {
            return Verdict::refused(url, None, None, reason);
        }
        let parsed = match parse_url(url) {
            Ok(parsed) => parsed,
            Err(error) => return Verdict::refused(url, None, None, error.to_string()),
        };
        match self.evaluate(&parsed).await {
            Ok(verdict) => verdict,
            Err(error) => Verdict::refused(
                parsed.as_str(),
                parsed.host_str().map(str::to_owned),
                parsed.port_or_known_default(),
                error.to_string(),
            ),
        }
    }

    /// The verdict for a parsed URL. `Err` only when the name could not be resolved.
    pub(crate) async fn evaluate(&self, url: &Url) -> Result<Verdict, EgressError> {
        let host_text = url.host_str().map(str::to_owned);
        let port = url.port_or_known_default();
        let refused = |rule: String| Verdict::refused(url.as_str(), host_text.clone(), port, rule);
        if !matches!(url.scheme(), "http" | "https") {
            return Ok(refused(format!("scheme {:?} is not http or https", url.scheme())));
        }
        // Both are present for http(s) URLs; the url crate refuses them otherwise.
        let (Some(host), Some(port)) = (url.host(), port) else {
            return Ok(refused("URL has no host".to_owned()));
        };
        let policy = &self.inner.policy;
        let (allowed, addresses, rule) = match host {
            // IP literals never reach a resolver (reqwest connects to them directly): judged here.
            Host::Ipv4(address) => policy.judge_all(&[IpAddr::V4(address)], port),
            Host::Ipv6(address) => policy.judge_all(&[IpAddr::V6(address)], port),
            Host::Domain(name) => {
                let normalized = normalize_host(name);
                if let Some(entry) = policy.allowlisted_host(&normalized, port) {
                    let rule = format!("allowlist {entry}");
                    let addresses = self.inner.resolver.lookup(name).await?;
                    let verdicts = addresses
                        .into_iter()
                        .map(|address| AddressVerdict { address, allowed: true, rule: rule.clone() })
                        .collect();
                    (true, verdicts, rule)
                } else if let Some(rule) = name_rule(&normalized) {
                    return Ok(refused(rule));
                } else {
                    let addresses = self.inner.resolver.lookup(name).await?;
                    policy.judge_all(&addresses, port)
                }
            }
        };
        Ok(Verdict { allowed, url: url.as_str().to_owned(), host: host_text, port: Some(port), addresses, rule })
    }

    /// Judges one hop and, if allowed, pins its addresses for the client. The guard must live
    /// until the response headers have arrived (the connection is made by then).
    async fn approve(&self, url: &Url) -> Result<Option<PinGuard>, EgressError> {
        let verdict = self.evaluate(url).await?;
        if !verdict.allowed {
            tracing::info!(url = %verdict.url, rule = %verdict.rule, "egress denied");
            return Err(EgressError::Denied { reason: verdict.reason() });
        }
        Ok(match url.host() {
            Some(Host::Domain(name)) => {
                let addresses: Vec<IpAddr> = verdict.addresses.iter().map(|address| address.address).collect();
                Some(self.inner.pins.pin(name, &addresses))
            }
            _ => None,
        })
    }

    /// Sends a request through the policy, following redirects ourselves. The whole exchange
    /// (all hops and the body) is bounded by the configured total timeout, or by
    /// `request.timeout` when that is shorter.
    pub async fn fetch(&self, request: EgressRequest) -> Result<EgressResponse, EgressError> {
        let total = self.inner.config.total_timeout();
        let deadline = request.timeout.map_or(total, |timeout| timeout.min(total));
        match tokio::time::timeout(deadline, self.fetch_hops(request)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(EgressError::Timeout { after: deadline }),
        }
    }

    async fn fetch_hops(&self, request: EgressRequest) -> Result<EgressResponse, EgressError> {
        let config = &self.inner.config;
        let body_bytes = request.body.as_deref().unwrap_or_default();
        if let Some(reason) = self.carried_secret(&request.url, &request.headers, body_bytes) {
            return Err(EgressError::Denied { reason });
        }
        let mut url = parse_url(&request.url)?;
        let mut method = parse_method(&request.method)?;
        let mut headers = build_headers(&request.headers)?;
        let mut body = request.body;
        let mut redirects = 0;
        loop {
            let pin = self.approve(&url).await?;
            let mut builder = self.inner.client.request(method.clone(), url.clone()).headers(headers.clone());
            if let Some(body) = &body {
                builder = builder.body(body.clone());
            }
            let response = builder.send().await.map_err(|error| self.send_error(error))?;
            drop(pin);

            let header_bytes: usize =
                response.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
            if header_bytes > config.max_header_bytes {
                return Err(EgressError::HeadersTooLarge { limit: config.max_header_bytes });
            }

            let status = response.status();
            let location = response.headers().get(header::LOCATION).cloned();
            if let (true, Some(location)) = (status.is_redirection(), location) {
                if !matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
                    // 300 Multiple Choices and 304 are not redirects to follow.
                    return self.read(response, method, url, redirects).await;
                }
                if redirects >= config.max_redirects {
                    return Err(EgressError::TooManyRedirects { limit: config.max_redirects });
                }
                let location = location.to_str().map_err(|_| EgressError::InvalidUrl {
                    url: String::from_utf8_lossy(location.as_bytes()).into_owned(),
                    reason: "redirect Location is not valid text".to_owned(),
                })?;
                let mut next = url.join(location).map_err(|error| EgressError::InvalidUrl {
                    url: location.to_owned(),
                    reason: format!("redirect Location: {error}"),
                })?;
                // 303 always becomes GET (HEAD stays HEAD); 301/302 turn POST into GET, as
                // browsers do. The body goes, and the headers that described it.
                let to_get = (status == StatusCode::SEE_OTHER && method != Method::HEAD)
                    || (matches!(status.as_u16(), 301 | 302) && method == Method::POST);
                if to_get {
                    method = Method::GET;
                    body = None;
                    for name in BODY_HEADERS {
                        headers.remove(name);
                    }
                }
                if !same_origin(&url, &next) {
                    // Credentials belong to the origin they were given for.
                    for name in CREDENTIAL_HEADERS {
                        headers.remove(name);
                    }
                    // Only URLs with a host can carry userinfo, and for those clearing it
                    // cannot fail.
                    let has_userinfo = !next.username().is_empty() || next.password().is_some();
                    if has_userinfo && (next.set_username("").is_err() || next.set_password(None).is_err()) {
                        return Err(EgressError::InvalidUrl {
                            url: next.to_string(),
                            reason: "cannot strip credentials".to_owned(),
                        });
                    }
                }
                drop(response);
                url = next;
                redirects += 1;
                continue;
            }
            // Not a redirect: read the body (bounded).
            return self.read(response, method, url, redirects).await;
        }
    }

    async fn read(
        &self,
        mut response: reqwest::Response,
        method: Method,
        url: Url,
        redirects: usize,
    ) -> Result<EgressResponse, EgressError> {
        let limit = self.inner.config.max_body_bytes;
        let status = response.status().as_u16();
        let remote_address = response.remote_addr();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect();
        let mut body = BytesMut::new();
        let mut truncated = false;
        if method != Method::HEAD {
            while let Some(chunk) = response.chunk().await.map_err(|error| self.body_error(error))? {
                let room = limit - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    // Stop reading: dropping the response closes the connection.
                    break;
                }
                body.extend_from_slice(&chunk);
            }
        }
        Ok(EgressResponse {
            status,
            headers,
            body: body.freeze(),
            truncated,
            url: url.into(),
            redirects,
            remote_address,
        })
    }

    fn send_error(&self, error: reqwest::Error) -> EgressError {
        if let Some(not_pinned) = find_source::<NotPinned>(&error) {
            return EgressError::Denied { reason: not_pinned.to_string() };
        }
        if error.is_timeout() {
            // The only timeout the client itself enforces is the connect timeout.
            return EgressError::Timeout { after: self.inner.config.connect_timeout() };
        }
        if error.is_connect() {
            return EgressError::Connect { reason: chain(&error) };
        }
        if error.is_builder() {
            return EgressError::InvalidRequest { reason: chain(&error) };
        }
        EgressError::Http { reason: chain(&error) }
    }

    fn body_error(&self, error: reqwest::Error) -> EgressError {
        if error.is_timeout() {
            return EgressError::Timeout { after: self.inner.config.total_timeout() };
        }
        EgressError::Http { reason: chain(&error) }
    }
}
