use std::time::Duration;

/// The one error of this crate. Variants are what a caller acts on: wait (`RateLimited`), give
/// up on this request (`BadRequest`, `Forbidden`), stop polling (`Unauthorized`, `Conflict`),
/// or try again later (`Network`).
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    /// Flood control (429): the request may be repeated after `retry_after`.
    #[error("Telegram asks to wait {retry_after:?} before the next request")]
    RateLimited { retry_after: Duration },
    /// 400: the request is wrong as sent (a chat that does not exist, entities that do not
    /// parse, a message too long, a message not modified).
    #[error("Telegram refused the request: {description}")]
    BadRequest { description: String },
    /// 403: the bot may not write there (the person blocked it, or never started it).
    #[error("Telegram forbids it: {description}")]
    Forbidden { description: String },
    /// 401 (a wrong token) or 404 (the token's bot does not exist).
    #[error("Telegram does not know this bot token")]
    Unauthorized,
    /// 409: another getUpdates is running with this token, or a webhook is set.
    #[error("Telegram reports a conflict: {description}")]
    Conflict { description: String },
    /// Any other refusal.
    #[error("Telegram answered {code}: {description}")]
    Api { code: i64, description: String },
    /// The request did not reach Telegram or its answer did not arrive. Never contains the
    /// URL, which holds the bot's token.
    #[error("cannot reach the Telegram Bot API: {0}")]
    Network(String),
    /// The answer was not the Bot API's JSON.
    #[error("the Telegram Bot API answered something unexpected: {0}")]
    Decode(String),
}

impl TelegramError {
    /// Telegram's answer to an edit that changes nothing; harmless.
    pub fn is_not_modified(&self) -> bool {
        matches!(self, TelegramError::BadRequest { description } if description.contains("message is not modified"))
    }
}
