//! The one error type of this crate. Each variant is something the caller (the tool layer, and
//! through it the model) can act on: change the URL, fix the selector, retry later.

use std::time::Duration;

/// What went wrong in a browser operation.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The egress policy refused the URL the agent asked for (or one it was redirected to).
    #[error("denied by egress policy: {url}: {reason}")]
    Denied { url: String, reason: String },
    /// The operation did not finish within the per-call timeout.
    #[error("{operation} timed out after {}s", .after.as_secs_f64())]
    Timeout { operation: &'static str, after: Duration },
    /// No element matched the selector (after waiting for it to appear).
    #[error("no element matches selector {selector:?}")]
    SelectorNotFound { selector: String },
    /// The selector is not valid CSS.
    #[error("invalid CSS selector {selector:?}: {message}")]
    InvalidSelector { selector: String, message: String },
    /// The page could not be loaded (connection refused, DNS failure, blocked, aborted ...).
    #[error("navigation to {url} failed: {reason}")]
    NavigationFailed { url: String, reason: String },
    /// The URL could not be parsed or uses a scheme the browser tool does not open.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    /// Script passed to `evaluate` threw, or its result could not be serialised.
    #[error("script error: {message}")]
    Script { message: String },
    /// Chromium could not be found, started, or reached at the configured CDP URL.
    #[error("could not start the browser: {0}")]
    Launch(String),
    /// The browser died during this call; its sessions are gone. The next call starts afresh.
    #[error("the browser session was lost: {0}")]
    SessionLost(String),
    /// Any other protocol-level failure reported by Chromium.
    #[error("browser protocol error: {0}")]
    Protocol(String),
}

impl From<chromiumoxide::error::CdpError> for BrowserError {
    fn from(error: chromiumoxide::error::CdpError) -> Self {
        use chromiumoxide::error::CdpError;
        match error {
            // The handler's channel or websocket is gone: the browser process is dead or
            // unreachable, which the manager turns into a restart on the next call.
            CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
                BrowserError::SessionLost(error.to_string())
            }
            other => BrowserError::Protocol(other.to_string()),
        }
    }
}
