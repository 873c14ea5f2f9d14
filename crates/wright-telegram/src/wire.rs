//! The Bot API's JSON, as typed serde structs: the few methods Wright calls, the updates it
//! reads and the envelope every answer comes in (`{"ok": true, "result": …}` or
//! `{"ok": false, "error_code", "description", "parameters": {"retry_after"}}`).
//!
//! Fields Wright does not use are left out; unknown fields in what Telegram sends are ignored
//! (the API adds fields over time), so an update of a kind Wright does not handle still parses.

use serde::{Deserialize, Serialize};

/// Every answer of the Bot API.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct ApiResponse<T> {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<ResponseParameters>,
}

/// Why a request failed and what to do about it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ResponseParameters {
    /// A group became a supergroup with this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrate_to_chat_id: Option<i64>,
    /// Flood control: seconds to wait before the request may be repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

/// One incoming update. At most one of the optional parts is present.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Update {
    pub update_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_query: Option<CallbackQuery>,
    /// A person changed their reaction to a message (only with `message_reaction` in
    /// `allowed_updates`; never for reactions set by bots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_reaction: Option<MessageReactionUpdated>,
}

/// `MessageReactionUpdated`: a change of one person's reactions to a message.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MessageReactionUpdated {
    pub chat: Chat,
    pub message_id: i64,
    /// Absent when the reaction is anonymous (a chat's, in groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<User>,
    pub date: i64,
    pub old_reaction: Vec<ReactionType>,
    pub new_reaction: Vec<ReactionType>,
}

/// `ReactionType`: an emoji, a custom emoji, or a paid reaction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReactionType {
    Emoji { emoji: String },
    CustomEmoji { custom_emoji_id: String },
    Paid,
}

/// One element of getUpdates' answer, decoded on its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Update(Box<Update>),
    /// An update that does not fit Wright's types (a kind of chat or field a newer Bot API
    /// sends). `update_id` when the element has one, so the poller can move past it.
    Undecodable {
        update_id: Option<i64>,
        error: String,
    },
}

impl Incoming {
    pub fn decode(value: serde_json::Value) -> Incoming {
        let update_id = value.get("update_id").and_then(serde_json::Value::as_i64);
        match serde_json::from_value::<Update>(value) {
            Ok(update) => Incoming::Update(Box::new(update)),
            Err(error) => Incoming::Undecodable { update_id, error: error.to_string() },
        }
    }

    /// The update's id, when it has one.
    pub fn update_id(&self) -> Option<i64> {
        match self {
            Incoming::Update(update) => Some(update.update_id),
            Incoming::Undecodable { update_id, .. } => *update_id,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub is_bot: bool,
    pub first_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_code: Option<String>,
}

/// The kinds of chat. A bot talks to its owner in a `private` chat, whose id is the user's.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChatType {
    Private,
    Group,
    Supergroup,
    Channel,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Chat {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: ChatType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub message_id: i64,
    /// Absent for messages sent to channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<User>,
    pub chat: Chat,
    /// Unix time, seconds.
    pub date: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Commands, links, formatting in `text` (offsets in UTF-16 code units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<MessageEntity>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<InlineKeyboardMarkup>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessageEntity {
    #[serde(rename = "type")]
    pub kind: String,
    pub offset: i64,
    pub length: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// A press on an inline keyboard button.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    /// The message with the button; an `InaccessibleMessage` (date 0) when it is too old, which
    /// has the same `chat` and `message_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<MaybeInaccessibleMessage>,
    pub chat_instance: String,
    /// The button's `callback_data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// The parts of `Message` and `InaccessibleMessage` they share.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MaybeInaccessibleMessage {
    pub message_id: i64,
    pub chat: Chat,
    /// 0 for an inaccessible message.
    pub date: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct InlineKeyboardMarkup {
    pub inline_keyboard: Vec<Vec<InlineKeyboardButton>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct InlineKeyboardButton {
    pub text: String,
    /// 1-64 bytes, sent back in the callback query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// How the text of a message is formatted. Wright sends HTML: only `<`, `>` and `&` need
/// escaping, where MarkdownV2 reserves eighteen characters.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum ParseMode {
    #[serde(rename = "HTML")]
    Html,
    MarkdownV2,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LinkPreviewOptions {
    pub is_disabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetUpdates {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Long polling: seconds to wait for an update before answering with none.
    #[serde(default)]
    pub timeout: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_updates: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendMessage {
    pub chat_id: i64,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse_mode: Option<ParseMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<InlineKeyboardMarkup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_preview_options: Option<LinkPreviewOptions>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EditMessageText {
    pub chat_id: i64,
    pub message_id: i64,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse_mode: Option<ParseMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<InlineKeyboardMarkup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_preview_options: Option<LinkPreviewOptions>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EditMessageReplyMarkup {
    pub chat_id: i64,
    pub message_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<InlineKeyboardMarkup>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnswerCallbackQuery {
    pub callback_query_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_alert: Option<bool>,
}

/// `editMessageText` answers with the edited message, or `true` for inline messages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum MessageOrTrue {
    Message(Box<Message>),
    True(bool),
}
