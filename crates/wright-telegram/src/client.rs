//! The client: one POST of JSON per method to `{base_url}/bot{token}/{method}`, the envelope
//! read into a typed result or a [`TelegramError`].
//!
//! The token is part of every URL, so nothing here ever prints a URL: transport errors are
//! reported without it (`reqwest::Error::without_url`).

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::TelegramError;
use crate::wire::{
    AnswerCallbackQuery, ApiResponse, EditMessageReplyMarkup, EditMessageText, GetUpdates, Incoming, Message,
    MessageOrTrue, SendMessage, User,
};

/// Where and as whom to call the Bot API.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    /// `https://api.telegram.org`, or a test server; no trailing slash.
    base_url: String,
    token: String,
    /// For every call but getUpdates, whose own long-poll timeout is added to it.
    request_timeout: Duration,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        formatter.debug_struct("BotApi").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl BotApi {
    pub fn new(base_url: &str, token: &str, request_timeout: Duration) -> Result<Self, TelegramError> {
        if rustls::crypto::ring::default_provider().install_default().is_err() {
            // Already installed in this process: that is all reqwest needs.
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // The operator's endpoint, not an agent-chosen one: no proxy from the environment.
            .no_proxy()
            .build()
            .map_err(|error| TelegramError::Network(error.without_url().to_string()))?;
        Ok(Self { http, base_url: base_url.trim_end_matches('/').to_owned(), token: token.to_owned(), request_timeout })
    }

    async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<R, TelegramError> {
        let url = format!("{}/bot{}/{method}", self.base_url, self.token);
        let response = self
            .http
            .post(url)
            .json(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|error| TelegramError::Network(error.without_url().to_string()))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|error| TelegramError::Network(error.without_url().to_string()))?;
        let envelope: ApiResponse<R> = serde_json::from_slice(&bytes)
            .map_err(|error| TelegramError::Decode(format!("{method} answered {status}: {error}")))?;
        if envelope.ok {
            return envelope
                .result
                .ok_or_else(|| TelegramError::Decode(format!("{method} answered ok without a result")));
        }
        let description = envelope.description.unwrap_or_default();
        let code = envelope.error_code.unwrap_or(i64::from(status));
        Err(match code {
            429 => {
                // Without the hint, wait a little rather than hammer.
                let seconds = envelope.parameters.and_then(|parameters| parameters.retry_after).unwrap_or(1);
                TelegramError::RateLimited { retry_after: Duration::from_secs(seconds.min(3600)) }
            }
            400 => TelegramError::BadRequest { description },
            401 | 404 => TelegramError::Unauthorized,
            403 => TelegramError::Forbidden { description },
            409 => TelegramError::Conflict { description },
            code => TelegramError::Api { code, description },
        })
    }

    /// The bot itself: checks the token.
    pub async fn get_me(&self) -> Result<User, TelegramError> {
        self.call("getMe", &serde_json::json!({}), self.request_timeout).await
    }

    /// Long polling: waits up to `request.timeout` seconds for updates after `offset - 1`, and
    /// confirms (Telegram forgets) every update before `offset`.
    ///
    /// Each update is decoded on its own: one Wright cannot read (a chat type a newer Bot API
    /// added) is returned as [`Incoming::Undecodable`] with its id, so the caller can log it and
    /// move past it instead of fetching the whole batch again forever.
    pub async fn get_updates(&self, request: &GetUpdates) -> Result<Vec<Incoming>, TelegramError> {
        let timeout = self.request_timeout + Duration::from_secs(request.timeout);
        let raw: Vec<serde_json::Value> = self.call("getUpdates", request, timeout).await?;
        Ok(raw.into_iter().map(Incoming::decode).collect())
    }

    pub async fn send_message(&self, request: &SendMessage) -> Result<Message, TelegramError> {
        self.call("sendMessage", request, self.request_timeout).await
    }

    pub async fn edit_message_text(&self, request: &EditMessageText) -> Result<MessageOrTrue, TelegramError> {
        self.call("editMessageText", request, self.request_timeout).await
    }

    pub async fn edit_message_reply_markup(
        &self,
        request: &EditMessageReplyMarkup,
    ) -> Result<MessageOrTrue, TelegramError> {
        self.call("editMessageReplyMarkup", request, self.request_timeout).await
    }

    pub async fn answer_callback_query(&self, request: &AnswerCallbackQuery) -> Result<bool, TelegramError> {
        self.call("answerCallbackQuery", request, self.request_timeout).await
    }
}
