//! `EgressError`: the one error type of this crate.
//!
//! Each variant is something a caller can act on: tell the agent the URL was refused and why
//! (`Denied`), that the name does not exist (`Dns`), that the server was slow (`Timeout`), or
//! tell the operator what to configure (`NotConfigured`). Messages are written to be shown to
//! the agent as they are: they never contain API keys.

use std::time::Duration;

/// Everything that can go wrong on the way out.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The URL could not be parsed, has no host, or a redirect pointed at nonsense.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },

    /// The request itself is malformed: an unsupported method, a bad header name or value,
    /// or web search arguments out of range.
    #[error("invalid request: {reason}")]
    InvalidRequest { reason: String },

    /// The egress policy refused the URL (or a redirect hop). `reason` names the rule that
    /// decided and the address it applied to, e.g. `127.0.0.1 is loopback (127.0.0.0/8)`.
    #[error("request denied by egress policy: {reason}")]
    Denied { reason: String },

    /// The host name did not resolve (no such name, no addresses, or the resolver failed).
    #[error("could not resolve {host}: {reason}")]
    Dns { host: String, reason: String },

    /// The TCP or TLS connection to an approved address failed.
    #[error("could not connect: {reason}")]
    Connect { reason: String },

    /// The request did not finish within its time limit (connect or total).
    #[error("request timed out after {}", humanize(*.after))]
    Timeout { after: Duration },

    /// More redirects than the configured limit.
    #[error("too many redirects (limit {limit})")]
    TooManyRedirects { limit: usize },

    /// The response headers were larger than the configured cap.
    #[error("response headers exceed {limit} bytes")]
    HeadersTooLarge { limit: usize },

    /// Any other HTTP-level failure (protocol error, connection reset mid-body, …).
    #[error("HTTP error: {reason}")]
    Http { reason: String },

    /// A feature needs operator configuration that is missing (e.g. no web search backend).
    /// `hint` says what to set.
    #[error("{what} is not configured: {hint}")]
    NotConfigured { what: String, hint: String },

    /// The web search backend answered with an error or a body we could not read.
    #[error("web search via {backend} failed: {reason}")]
    Search { backend: &'static str, reason: String },

    /// The egress configuration itself is invalid (a bad allowlist entry, an unreadable
    /// system resolver configuration, a client that cannot be built).
    #[error("invalid egress configuration: {reason}")]
    Config { reason: String },
}

fn humanize(duration: Duration) -> String {
    if duration.as_millis().is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

impl EgressError {
    /// A short, stable machine-readable code for logs and tool results.
    pub fn code(&self) -> &'static str {
        match self {
            EgressError::InvalidUrl { .. } => "invalid_url",
            EgressError::InvalidRequest { .. } => "invalid_request",
            EgressError::Denied { .. } => "denied",
            EgressError::Dns { .. } => "dns",
            EgressError::Connect { .. } => "connect",
            EgressError::Timeout { .. } => "timeout",
            EgressError::TooManyRedirects { .. } => "too_many_redirects",
            EgressError::HeadersTooLarge { .. } => "headers_too_large",
            EgressError::Http { .. } => "http",
            EgressError::NotConfigured { .. } => "not_configured",
            EgressError::Search { .. } => "search",
            EgressError::Config { .. } => "config",
        }
    }
}

/// Renders an error with its whole `source()` chain: reqwest's top-level messages ("error
/// sending request") say little without the cause underneath.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
