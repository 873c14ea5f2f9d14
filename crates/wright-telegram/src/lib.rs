//! The Telegram Bot API, as much of it as Wright's Telegram channel needs: typed wire structs
//! ([`wire`]), a client over reqwest whose base URL is configurable ([`BotApi`]), the model's
//! Markdown rendered as Telegram HTML and split at Telegram's message limit ([`format`]), and
//! Telegram's own reading of HTML ([`entities`]: which tags, which entities, how long the text
//! is once parsed) that the fake and the tests check messages against.
//!
//! With the `testing` feature, [`testing::FakeBotApi`] is a Bot API server on 127.0.0.1 that
//! answers as strictly as Telegram does: unknown tokens, chats and messages, entities that do
//! not parse, messages too long, edits that change nothing, flood control with `retry_after`,
//! callback queries answered too late ("query is too old"), and outages (502s, refused
//! connections).
//!
//! Invariants: this crate knows nothing of runs, stores or HTTP serving (a leaf, like the LLM
//! adapters); the bot token never appears in an error or a log line; every message text this
//! crate renders parses as Telegram HTML and is at most [`MESSAGE_LIMIT`] characters once
//! parsed.

mod client;
pub mod entities;
mod error;
pub mod format;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

pub use client::BotApi;
pub use error::TelegramError;

/// The longest message text, in UTF-16 code units after entities are parsed (Telegram counts
/// in UTF-16).
pub const MESSAGE_LIMIT: usize = 4096;

/// The most bytes of `callback_data` a button may carry.
pub const CALLBACK_DATA_LIMIT: usize = 64;
