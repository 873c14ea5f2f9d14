//! The one error of this crate, [`LlmError`], and what a caller can do about each variant.
//!
//! Variants are classes a caller acts on, not vendor codes: the transport retries the
//! retryable ones (`RateLimited`, `Overloaded`, `ServerError`; [`LlmError::is_retryable`]) with
//! backoff while nothing has streamed yet; what is left ends the run with a notice that names
//! the class (the loop fits requests into the window beforehand rather than reacting to
//! `ContextLengthExceeded`); `Authentication` and `NotFound` are the operator's to fix. The
//! vendor's own type, code and status stay in [`ErrorInfo`] for logs and tests.

use std::fmt;
use std::time::Duration;

/// What the provider said about an error, as it said it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The HTTP status, when the error came as a non-2xx response; None inside a 200 stream.
    pub http_status: Option<u16>,
    /// The vendor's error type (`invalid_request_error`, `overloaded_error`, …).
    pub error_type: Option<String>,
    /// The vendor's error code (`context_length_exceeded`, `400`, …), numbers as text.
    pub code: Option<String>,
    /// Google's status (`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`, …).
    pub status: Option<String>,
    /// The request parameter OpenAI blames (`stop`, `model`, `messages`).
    pub param: Option<String>,
    pub message: String,
}

impl ErrorInfo {
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), ..Self::default() }
    }
}

impl fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let mut marks = Vec::new();
        if let Some(status) = self.http_status {
            marks.push(format!("HTTP {status}"));
        }
        for mark in [&self.error_type, &self.code, &self.status].into_iter().flatten() {
            marks.push(mark.clone());
        }
        if !marks.is_empty() {
            write!(f, " ({})", marks.join(", "))?;
        }
        Ok(())
    }
}

/// Why a model request failed. The classes follow the wire fixtures' `class` column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// Bad, missing or revoked key, or no permission. Not retried.
    #[error("authentication failed: {0}")]
    Authentication(Box<ErrorInfo>),
    /// Unknown model or endpoint. Not retried.
    #[error("not found: {0}")]
    NotFound(Box<ErrorInfo>),
    /// The request was refused as malformed. Not retried.
    #[error("invalid request: {0}")]
    InvalidRequest(Box<ErrorInfo>),
    /// Too many requests for now; `retry_after` is the provider's hint. Retried.
    #[error("rate limited: {info}")]
    RateLimited { info: Box<ErrorInfo>, retry_after: Option<Duration> },
    /// Out of credit or quota: waiting does not help. Not retried.
    #[error("quota exceeded: {0}")]
    QuotaExceeded(Box<ErrorInfo>),
    /// The conversation does not fit the model's context window: compact it. Not retried.
    #[error("context length exceeded: {0}")]
    ContextLengthExceeded(Box<ErrorInfo>),
    /// The provider is overloaded (Anthropic 529, Gemini 503). Retried.
    #[error("provider overloaded: {info}")]
    Overloaded { info: Box<ErrorInfo>, retry_after: Option<Duration> },
    /// The provider failed (5xx). Retried.
    #[error("provider server error: {info}")]
    ServerError { info: Box<ErrorInfo>, retry_after: Option<Duration> },
    /// An error the provider reported that fits no other class (e.g. an error object inside
    /// an OpenRouter chunk). Not retried.
    #[error("provider error: {0}")]
    Provider(Box<ErrorInfo>),
    /// The stream ended before the provider said it was finished: the reply is cut short and
    /// must not be taken as a clean completion. Not retried (text may already have streamed).
    #[error("incomplete response: {0}")]
    Incomplete(String),
    /// The connection failed or timed out before or during the response. Retried when
    /// nothing has been delivered yet.
    #[error("transport error: {0}")]
    Transport(String),
    /// The provider answered 2xx with something we could not read.
    #[error("unreadable response: {0}")]
    InvalidResponse(String),
    /// The configuration cannot make a provider (no key, unknown kind, bad URL).
    #[error("provider configuration: {0}")]
    Config(String),
    /// The caller's cancellation token fired.
    #[error("cancelled")]
    Cancelled,
    /// Wright did not send the request: a usage budget or a run's token limit would be passed.
    /// The message names the limit and how to raise it. Not retried.
    #[error("{0}")]
    NotSent(String),
}

impl LlmError {
    /// The class name used in the wire fixtures and in stored error categories.
    pub fn class(&self) -> &'static str {
        match self {
            LlmError::Authentication(_) => "authentication",
            LlmError::NotFound(_) => "not_found",
            LlmError::InvalidRequest(_) => "invalid_request",
            LlmError::RateLimited { .. } => "rate_limit",
            LlmError::QuotaExceeded(_) => "quota_exceeded",
            LlmError::ContextLengthExceeded(_) => "context_length_exceeded",
            LlmError::Overloaded { .. } => "overloaded",
            LlmError::ServerError { .. } => "server_error",
            LlmError::Provider(_) => "provider_error",
            LlmError::Incomplete(_) => "incomplete",
            LlmError::Transport(_) => "transport",
            LlmError::InvalidResponse(_) => "invalid_response",
            LlmError::Config(_) => "config",
            LlmError::NotSent(_) => "not_sent",
            LlmError::Cancelled => "cancelled",
        }
    }

    /// Whether trying the same request again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Overloaded { .. }
                | LlmError::ServerError { .. }
                | LlmError::Transport(_)
        )
    }

    /// The provider's own hint of when to try again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. }
            | LlmError::Overloaded { retry_after, .. }
            | LlmError::ServerError { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The same error with every secret `redactor` holds removed from its text: a provider (or
    /// a gateway before it) may quote the key it was sent. Called once, where the transport
    /// makes an error, so nothing downstream — logs, the stored notice, the canvas, Telegram —
    /// ever sees the key.
    pub fn redacted(self, redactor: &wright_core::Redactor) -> LlmError {
        let info = |mut info: Box<ErrorInfo>| {
            info.message = redactor.redact(&info.message);
            for field in [&mut info.error_type, &mut info.code, &mut info.status, &mut info.param].into_iter().flatten()
            {
                *field = redactor.redact(field);
            }
            info
        };
        match self {
            LlmError::Authentication(found) => LlmError::Authentication(info(found)),
            LlmError::NotFound(found) => LlmError::NotFound(info(found)),
            LlmError::InvalidRequest(found) => LlmError::InvalidRequest(info(found)),
            LlmError::QuotaExceeded(found) => LlmError::QuotaExceeded(info(found)),
            LlmError::ContextLengthExceeded(found) => LlmError::ContextLengthExceeded(info(found)),
            LlmError::Provider(found) => LlmError::Provider(info(found)),
            LlmError::RateLimited { info: found, retry_after } => {
                LlmError::RateLimited { info: info(found), retry_after }
            }
            LlmError::Overloaded { info: found, retry_after } => {
                LlmError::Overloaded { info: info(found), retry_after }
            }
            LlmError::ServerError { info: found, retry_after } => {
                LlmError::ServerError { info: info(found), retry_after }
            }
            LlmError::Incomplete(text) => LlmError::Incomplete(redactor.redact(&text)),
            LlmError::Transport(text) => LlmError::Transport(redactor.redact(&text)),
            LlmError::InvalidResponse(text) => LlmError::InvalidResponse(redactor.redact(&text)),
            LlmError::Config(text) => LlmError::Config(redactor.redact(&text)),
            LlmError::Cancelled => LlmError::Cancelled,
            // Wright's own words, naming no secret.
            LlmError::NotSent(text) => LlmError::NotSent(text),
        }
    }

    /// The provider's description, when the error came from the provider.
    pub fn info(&self) -> Option<&ErrorInfo> {
        match self {
            LlmError::Authentication(info)
            | LlmError::NotFound(info)
            | LlmError::InvalidRequest(info)
            | LlmError::QuotaExceeded(info)
            | LlmError::ContextLengthExceeded(info)
            | LlmError::Provider(info)
            | LlmError::RateLimited { info, .. }
            | LlmError::Overloaded { info, .. }
            | LlmError::ServerError { info, .. } => Some(&**info),
            _ => None,
        }
    }
}

/// The classes, as a vendor module decides them, before the error is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Authentication,
    NotFound,
    InvalidRequest,
    RateLimit,
    Quota,
    Context,
    Overloaded,
    Server,
    Provider,
}

impl Class {
    pub(crate) fn into_error(self, info: ErrorInfo, retry_after: Option<Duration>) -> LlmError {
        // Boxed: the error travels through every Result of a stream; keep that small.
        let info = Box::new(info);
        match self {
            Class::Authentication => LlmError::Authentication(info),
            Class::NotFound => LlmError::NotFound(info),
            Class::InvalidRequest => LlmError::InvalidRequest(info),
            Class::RateLimit => LlmError::RateLimited { info, retry_after },
            Class::Quota => LlmError::QuotaExceeded(info),
            Class::Context => LlmError::ContextLengthExceeded(info),
            Class::Overloaded => LlmError::Overloaded { info, retry_after },
            Class::Server => LlmError::ServerError { info, retry_after },
            Class::Provider => LlmError::Provider(info),
        }
    }

    /// The class an HTTP status alone suggests, when the body says nothing more precise.
    pub(crate) fn from_status(status: u16) -> Class {
        match status {
            401 | 403 => Class::Authentication,
            404 => Class::NotFound,
            408 => Class::Server,
            413 => Class::Context,
            429 => Class::RateLimit,
            529 => Class::Overloaded,
            503 => Class::Overloaded,
            500..=599 => Class::Server,
            400..=499 => Class::InvalidRequest,
            _ => Class::Provider,
        }
    }
}

/// Phrases by which servers without a dedicated code (Anthropic, llama.cpp, vLLM, Ollama)
/// say the prompt does not fit.
pub(crate) fn mentions_context_overflow(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "maximum context length",
        "context length exceeded",
        "context_length_exceeded",
        "exceeds the context size",
        "exceed context window",
        "context window",
        "input token count",
        "too many tokens",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase))
}

/// Reads a duration such as Google's `"34.4s"` or the `2.284s` / `20ms` in OpenAI's
/// "Please try again in 2.284s" message.
pub(crate) fn parse_duration_text(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, scale) = if let Some(number) = text.strip_suffix("ms") {
        (number, 0.001)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number.trim().parse().ok()?;
    hinted_delay(value * scale)
}

/// The longest retry hint believed as given: a provider's `retry-after: 1e20` means "not
/// soon", and is read as a day (longer than any retry policy waits, so the error is reported).
const LONGEST_HINT: Duration = Duration::from_secs(24 * 60 * 60);

/// A provider's hint in seconds as a delay: negative or not a number is no hint, and a hint
/// too large for a `Duration` is clamped instead of panicking.
fn hinted_delay(seconds: f64) -> Option<Duration> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).map_or(LONGEST_HINT, |delay| delay.min(LONGEST_HINT)))
}

/// Finds "try again in X" in a message, the only place OpenAI puts a retry hint in the body.
pub(crate) fn retry_hint_in_message(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = lower.find("try again in ")? + "try again in ".len();
    let rest = &lower[start..];
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'm' || c == 's')).unwrap_or(rest.len());
    parse_duration_text(rest[..end].trim_end_matches('.'))
}

/// Reads `retry-after-ms` or `retry-after` (seconds) from response headers.
pub(crate) fn retry_after_header(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    if let Some(millis) = read("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return hinted_delay(millis / 1000.0);
    }
    read("retry-after").and_then(|value| value.parse::<f64>().ok()).and_then(hinted_delay)
}

#[cfg(test)]
mod hint_tests {
    use super::*;

    #[test]
    fn huge_or_malformed_retry_hints_are_clamped_or_ignored_never_a_panic() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "1e20".parse().unwrap());
        assert_eq!(retry_after_header(&headers), Some(LONGEST_HINT));
        headers.insert("retry-after-ms", "-5".parse().unwrap());
        assert_eq!(retry_after_header(&headers), None);
        assert_eq!(parse_duration_text("1e300s"), Some(LONGEST_HINT));
        assert_eq!(parse_duration_text("NaNs"), None);
        assert_eq!(parse_duration_text("20ms"), Some(Duration::from_millis(20)));
    }

    #[test]
    fn a_key_the_provider_echoes_in_its_error_is_redacted_in_every_field() {
        let redactor = wright_core::Redactor::new(["sk-proj-SECRET-abcd"]);
        let error = LlmError::Authentication(Box::new(ErrorInfo {
            code: Some("bad key sk-proj-SECRET-abcd".to_owned()),
            ..ErrorInfo::new("Incorrect API key provided: Bearer sk-proj-SECRET-abcd.")
        }));
        assert_eq!(
            error.redacted(&redactor).to_string(),
            "authentication failed: Incorrect API key provided: Bearer [redacted]. (bad key [redacted])"
        );
        let transport = LlmError::Transport("proxy said sk-proj-SECRET-abcd".to_owned()).redacted(&redactor);
        assert_eq!(transport.to_string(), "transport error: proxy said [redacted]");
    }
}
