//! The Telegram channel: the owner talks to an agent from a phone, through the same path as
//! the canvas ([`crate::domain::channel`]).
//!
//! - **In:** long polling of `getUpdates` (the Bot API's base URL is configurable). Only
//!   private chats of the users in `[telegram] allowed_user_ids` are served; anyone else is
//!   told the bot is private and logged. A message is a command (`/newsession [name]`,
//!   `/cancel`, `/codestats`, `/codefailures [n]`, `/help`), an answer to a waiting `ask_user`
//!   without options, or a message to the agent. A button press answers the pending call it
//!   names (`callback_query` → the store's answer-once → `answerCallbackQuery`).
//! - **Out:** one follower task per chat subscribes to the hub of the conversation the chat is
//!   bound to, like the canvas's event stream: text streams into a message edited as it grows,
//!   re-rendered as Telegram HTML and split at 4096 characters (`wright_telegram::format`);
//!   `ask_user` options become an inline keyboard, approvals Approve / Deny / Always buttons,
//!   forms and components a short text with the canvas link. Notifications go to every chat of
//!   the agent (the notifier calls [`TelegramChannel::deliver_notifications`]).
//! - **Rate limits:** every message and edit to a chat waits for that chat's pacer: at least
//!   `edit_interval_ms` after the previous one, and after a 429 the `retry_after` Telegram
//!   asked for, then the request is repeated.
//!
//! Durable state is in the store: the poller's cursor (the next update id, written after each
//! update is handled) and each chat's bound conversation; a button carries the pending call's
//! row id, so a press after a restart still answers it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;
use wright_core::{AgentId, ConversationStatus, EventBody, Notice, PendingKind};
use wright_store::{ChannelChat, ChannelKind, PendingCall, StoreError, TelegramDelivery};
use wright_telegram::wire::{
    AnswerCallbackQuery, CallbackQuery, ChatType, EditMessageReplyMarkup, EditMessageText, GetUpdates,
    InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, Message, ParseMode, SendMessage, Update,
};
use wright_telegram::{BotApi, MESSAGE_LIMIT, TelegramError, format};

use crate::AppState;
use crate::config::TelegramConfig;
use crate::domain::DomainError;
use crate::domain::channel::{self, Command, Reply};
use crate::domain::hub::{Subscription, Update as HubUpdate};
use crate::domain::runs::Sender;

/// How many times a request refused with 429 is repeated (each after the wait Telegram asked).
const MAX_RETRIES: usize = 5;

/// What a chat's pacer knows: when the next request may go.
struct Pace {
    next: Instant,
}

/// A chat's follower task and the conversation it follows.
struct Follower {
    conversation_id: String,
    task: tokio::task::JoinHandle<()>,
}

pub struct TelegramChannel {
    api: BotApi,
    config: TelegramConfig,
    agent: AgentId,
    /// Where links to the canvas point.
    canvas_url: String,
    /// The bot's username, learned from getMe (for `/command@bot`).
    bot_username: Mutex<Option<String>>,
    /// Followers by chat. Held only to look up, insert or replace, never across an await; a
    /// replaced follower is aborted.
    followers: Mutex<HashMap<i64, Follower>>,
    /// Each chat's pacer. The inner mutex is a tokio one, held across the request it paces, so
    /// requests to one chat go one at a time and in order; the outer one only to find it.
    pacers: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<Pace>>>>,
}

impl TelegramChannel {
    /// The channel of `config`, or None when no bot token is set.
    pub fn new(config: &TelegramConfig, server_url: &str) -> anyhow::Result<Option<Arc<Self>>> {
        if !config.enabled() {
            return Ok(None);
        }
        let api = BotApi::new(
            &config.api_base_url,
            config.bot_token.trim(),
            Duration::from_secs(config.request_timeout_secs),
        )?;
        let agent = AgentId::parse(&config.agent)?;
        let canvas_url =
            config.canvas_url.clone().unwrap_or_else(|| server_url.to_owned()).trim_end_matches('/').to_owned();
        Ok(Some(Arc::new(Self {
            api,
            config: config.clone(),
            agent,
            canvas_url,
            bot_username: Mutex::new(None),
            followers: Mutex::new(HashMap::new()),
            pacers: Mutex::new(HashMap::new()),
        })))
    }

    /// Starts the poller; it runs until the server shuts down.
    pub fn spawn(self: &Arc<Self>, state: AppState) {
        let channel = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                () = channel.poll(&state) => {}
                () = state.shutdown.cancelled() => {}
            }
            let followers: Vec<Follower> = channel
                .followers
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .drain()
                .map(|(_, follower)| follower)
                .collect();
            for follower in followers {
                follower.task.abort();
            }
        });
    }

    fn allowed(&self, user_id: i64) -> bool {
        self.config.allowed_user_ids.contains(&user_id)
    }

    fn conversation_link(&self, conversation_id: &str) -> String {
        format!("{}/agents/{}/c/{}", self.canvas_url, self.agent, conversation_id)
    }

    async fn poll(self: &Arc<Self>, state: &AppState) {
        let mut backoff = Duration::from_secs(1);
        // Check the token first; a wrong one stops the channel with a clear log line.
        loop {
            match self.api.get_me().await {
                Ok(me) => {
                    tracing::info!(bot = me.username.as_deref().unwrap_or(""), "Telegram: connected");
                    *self.bot_username.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = me.username;
                    break;
                }
                Err(TelegramError::Unauthorized) => {
                    tracing::error!("Telegram: the bot token is not valid ([telegram] bot_token); the channel is off");
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, "Telegram: cannot reach the Bot API; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
            }
        }
        // Chats known from before follow their conversations again.
        match state.store.channel_chats(ChannelKind::Telegram, &self.agent).await {
            Ok(chats) => {
                for chat in chats {
                    if let (Ok(chat_id), Some(conversation_id)) = (chat.chat_id.parse::<i64>(), chat.conversation_id) {
                        self.follow(state, chat_id, &conversation_id);
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "Telegram: cannot read the known chats"),
        }
        let mut offset = state.store.channel_cursor(ChannelKind::Telegram).await.unwrap_or(0);
        let mut backoff = Duration::from_secs(1);
        loop {
            let request = GetUpdates {
                offset: (offset > 0).then_some(offset),
                limit: Some(50),
                timeout: self.config.poll_timeout_secs,
                allowed_updates: Some(vec!["message".into(), "callback_query".into()]),
            };
            match self.api.get_updates(&request).await {
                Ok(updates) => {
                    backoff = Duration::from_secs(1);
                    for update in updates {
                        let next = update.update_id + 1;
                        self.handle(state, update).await;
                        offset = next;
                        if let Err(error) = state.store.set_channel_cursor(ChannelKind::Telegram, next).await {
                            tracing::warn!(%error, "Telegram: cannot store the poller's position");
                        }
                    }
                }
                Err(TelegramError::Unauthorized) => {
                    tracing::error!("Telegram: the bot token was refused; the channel stops");
                    return;
                }
                Err(TelegramError::RateLimited { retry_after }) => tokio::time::sleep(retry_after).await,
                Err(error) => {
                    // A conflict (another poller, a webhook) or the network: wait and go on.
                    tracing::warn!(%error, "Telegram: getUpdates failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
            }
        }
    }

    async fn handle(self: &Arc<Self>, state: &AppState, update: Update) {
        if let Some(message) = update.message {
            self.handle_message(state, message).await;
        } else if let Some(query) = update.callback_query {
            self.handle_press(state, query).await;
        }
    }

    async fn handle_message(self: &Arc<Self>, state: &AppState, message: Message) {
        let chat = message.chat.id;
        let Some(from) = message.from else { return };
        if message.chat.kind != ChatType::Private {
            tracing::info!(
                chat,
                "Telegram: a message in a group or channel is ignored; the bot talks in private chats"
            );
            return;
        }
        if !self.allowed(from.id) {
            tracing::warn!(
                user_id = from.id,
                username = from.username.as_deref().unwrap_or(""),
                "Telegram: refused a user who is not in [telegram] allowed_user_ids"
            );
            let refusal = format!(
                "This bot is private. (Your Telegram user id is {}; the owner can allow it in [telegram] allowed_user_ids.)",
                from.id
            );
            self.send_text(chat, &refusal, None).await;
            return;
        }
        let Some(text) = message.text.filter(|text| !text.trim().is_empty()) else {
            self.send_text(chat, "I can read text messages only.", None).await;
            return;
        };
        let conversation_id = match self.conversation_for(state, chat, from.id).await {
            Ok(id) => id,
            Err(error) => {
                tracing::warn!(%error, "Telegram: cannot open a conversation for a chat");
                self.send_text(chat, "Something went wrong on the server; see its log.", None).await;
                return;
            }
        };
        let bot = self.bot_username.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        if let Some(command) = channel::parse_command(&text, bot.as_deref()) {
            self.command(state, chat, from.id, &conversation_id, command).await;
            return;
        }
        if text.trim_start().starts_with('/') {
            self.send_text(chat, channel::HELP, None).await;
            return;
        }
        // A question without options waits for words: this message is its answer.
        let waiting = state.store.pending_calls(&conversation_id).await.unwrap_or_default();
        if let Some(call) = waiting.iter().rev().find(|call| is_open_question(call)) {
            if let Err(error) =
                channel::answer(state, &conversation_id, &call.tool_call_id, json!({ "answer": text })).await
            {
                self.send_text(chat, &error.to_string(), None).await;
            }
            return;
        }
        if let Err(error) = channel::send(state, &conversation_id, &text, Sender::Person).await {
            let message = match error {
                DomainError::RunInProgress => {
                    "I am still working on your last message. Wait for it, or send /cancel to stop it.".to_owned()
                }
                other => other.to_string(),
            };
            self.send_text(chat, &message, None).await;
        }
    }

    async fn command(
        self: &Arc<Self>,
        state: &AppState,
        chat: i64,
        user: i64,
        conversation_id: &str,
        command: Command,
    ) {
        match channel::run_command(state, conversation_id, command).await {
            Ok(Reply::SessionStarted(started)) => {
                let bound = ChannelChat {
                    chat_id: chat.to_string(),
                    user_id: user.to_string(),
                    agent_id: self.agent.to_string(),
                    conversation_id: Some(started.conversation_id.clone()),
                };
                if let Err(error) = state.store.bind_channel_chat(ChannelKind::Telegram, &bound).await {
                    tracing::warn!(%error, "Telegram: cannot bind the chat to the new session's conversation");
                }
                self.follow(state, chat, &started.conversation_id);
                // Seed 001's reply.
                self.send_text(chat, &format!("Started new session: {}", started.session.name), None).await;
            }
            Ok(Reply::Text(texts)) => {
                for text in texts {
                    self.send_markdown(chat, &text).await;
                }
            }
            Ok(Reply::RunStarted) => {}
            Err(error) => self.send_text(chat, &error.to_string(), None).await,
        }
    }

    /// The conversation the chat talks to: its bound one, or a new one (bound, and followed).
    async fn conversation_for(self: &Arc<Self>, state: &AppState, chat: i64, user: i64) -> anyhow::Result<String> {
        if let Some(bound) = state.store.channel_chat(ChannelKind::Telegram, &chat.to_string()).await?
            && let Some(conversation_id) = bound.conversation_id
            && bound.agent_id == self.agent.as_str()
            && state.store.conversation(&conversation_id).await.is_ok()
        {
            self.follow(state, chat, &conversation_id);
            return Ok(conversation_id);
        }
        let conversation_id = uuid::Uuid::now_v7().to_string();
        state.store.create_conversation(&self.agent, &conversation_id, "Telegram").await?;
        let bound = ChannelChat {
            chat_id: chat.to_string(),
            user_id: user.to_string(),
            agent_id: self.agent.to_string(),
            conversation_id: Some(conversation_id.clone()),
        };
        state.store.bind_channel_chat(ChannelKind::Telegram, &bound).await?;
        self.follow(state, chat, &conversation_id);
        Ok(conversation_id)
    }

    /// Makes sure a follower of `conversation_id` runs for the chat (replacing one that follows
    /// another conversation). Subscribes here, before returning, so nothing the next run says
    /// is missed.
    fn follow(self: &Arc<Self>, state: &AppState, chat: i64, conversation_id: &str) {
        let mut followers = self.followers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(existing) = followers.get(&chat)
            && existing.conversation_id == conversation_id
            && !existing.task.is_finished()
        {
            return;
        }
        let subscription = state.hub.subscribe(conversation_id);
        let channel = Arc::clone(self);
        let follower_state = state.clone();
        let followed = conversation_id.to_owned();
        // Owned by the map; aborted when replaced or when the channel stops.
        let task =
            tokio::spawn(async move { channel.run_follower(follower_state, chat, followed, subscription).await });
        if let Some(old) = followers.insert(chat, Follower { conversation_id: conversation_id.to_owned(), task }) {
            old.task.abort();
        }
    }

    async fn run_follower(
        self: Arc<Self>,
        state: AppState,
        chat: i64,
        conversation_id: String,
        mut updates: Subscription,
    ) {
        let mut answer = Streamed::default();
        // Questions shown in this chat: tool call id → message id.
        let mut questions: HashMap<String, i64> = HashMap::new();
        let interval = Duration::from_millis(self.config.edit_interval_ms);
        let mut flush_at: Option<Instant> = None;
        loop {
            let update = tokio::select! {
                update = updates.recv() => update,
                () = sleep_until(flush_at) => {
                    flush_at = None;
                    self.flush(chat, &mut answer).await;
                    continue;
                }
            };
            // A burst of deltas is read whole before acting on it.
            let mut batch = vec![update];
            loop {
                match updates.try_recv() {
                    Ok(update) => batch.push(Ok(update)),
                    Err(TryRecvError::Lagged(skipped)) => batch.push(Err(RecvError::Lagged(skipped))),
                    Err(TryRecvError::Empty) | Err(TryRecvError::Closed) => break,
                }
            }
            for update in batch {
                match update {
                    Ok(HubUpdate::Delta { text }) => {
                        answer.text.push_str(&text);
                        flush_at.get_or_insert_with(|| {
                            Instant::now() + if answer.sent.is_empty() { Duration::ZERO } else { interval }
                        });
                    }
                    Ok(HubUpdate::Event(stored)) => match stored.event.body {
                        EventBody::Assistant { .. } => {
                            answer.text = stored.event.content.clone();
                            self.flush(chat, &mut answer).await;
                            answer = Streamed::default();
                            flush_at = None;
                        }
                        EventBody::ToolResult { tool_call_id, .. } => {
                            if let Some(message_id) = questions.remove(&tool_call_id) {
                                // Answered (here or in the canvas): the buttons go.
                                let request = EditMessageReplyMarkup { chat_id: chat, message_id, reply_markup: None };
                                self.paced(chat, || self.api.edit_message_reply_markup(&request)).await.ok();
                            }
                        }
                        EventBody::Notice(Notice::Compaction { .. }) => {}
                        EventBody::Notice(_) => {
                            self.flush(chat, &mut answer).await;
                            self.send_text(chat, &format!("ℹ {}", stored.event.content), None).await;
                        }
                        EventBody::User { .. } | EventBody::ToolCall { .. } => {}
                    },
                    Ok(HubUpdate::Status { status, error }) => match status {
                        ConversationStatus::Waiting => {
                            self.flush(chat, &mut answer).await;
                            answer = Streamed::default();
                            self.present_pending(&state, chat, &conversation_id, &mut questions).await;
                        }
                        ConversationStatus::Error | ConversationStatus::Idle => {
                            // A run that ended without a stored answer (cancelled, failed) leaves
                            // its streamed text as it is; the next run starts a new message.
                            self.flush(chat, &mut answer).await;
                            answer = Streamed::default();
                            flush_at = None;
                            if let Some(error) = error.filter(|error| !error.trim().is_empty()) {
                                self.send_markdown(chat, &format!("⚠ {error}")).await;
                            }
                        }
                        ConversationStatus::Running => {
                            // A new run: what it says starts a new message.
                            self.flush(chat, &mut answer).await;
                            answer = Streamed::default();
                            flush_at = None;
                        }
                    },
                    Ok(HubUpdate::Notification(_)) => {}
                    // Fell behind (a long wait Telegram asked for while the stream went on): what
                    // was dropped may include the end of a run, so the messages shown so far stay as
                    // they are and what follows goes to new ones; the stored answer at the end has
                    // it all. Never an edit of an older answer's message with a newer text.
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::info!(chat, skipped, "Telegram: the chat fell behind its conversation's updates");
                        answer = Streamed::default();
                        flush_at = None;
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }

    /// Brings the chat's messages up to date with the answer so far: edits the ones whose text
    /// changed, sends the rest.
    async fn flush(&self, chat: i64, answer: &mut Streamed) {
        let rendered = format::render(&answer.text, MESSAGE_LIMIT);
        for (index, html) in rendered.into_iter().enumerate() {
            match answer.sent.get(index) {
                Some((_, sent)) if *sent == html => {}
                Some((message_id, _)) => {
                    let request = EditMessageText {
                        chat_id: chat,
                        message_id: *message_id,
                        text: html.clone(),
                        parse_mode: Some(ParseMode::Html),
                        reply_markup: None,
                        link_preview_options: Some(LinkPreviewOptions { is_disabled: true }),
                    };
                    match self.paced(chat, || self.api.edit_message_text(&request)).await {
                        Ok(_) => answer.sent[index].1 = html,
                        Err(error) if error.is_not_modified() => answer.sent[index].1 = html,
                        Err(error) => tracing::warn!(%error, chat, "Telegram: an edit failed"),
                    }
                }
                None => match self.send_html(chat, html.clone(), None).await {
                    Some(message_id) => answer.sent.push((message_id, html)),
                    None => return,
                },
            }
        }
    }

    /// Shows the calls waiting in the conversation that this chat has not seen yet.
    async fn present_pending(
        &self,
        state: &AppState,
        chat: i64,
        conversation_id: &str,
        questions: &mut HashMap<String, i64>,
    ) {
        let Ok(waiting) = state.store.pending_calls(conversation_id).await else { return };
        for call in waiting {
            if questions.contains_key(&call.tool_call_id) {
                continue;
            }
            let (text, keyboard) = self.question(&call, conversation_id);
            if let Some(message_id) = self.send_html(chat, text, keyboard).await {
                questions.insert(call.tool_call_id.clone(), message_id);
            }
        }
    }

    /// A waiting call as a message: its HTML and buttons.
    fn question(&self, call: &PendingCall, conversation_id: &str) -> (String, Option<InlineKeyboardMarkup>) {
        let link = format::escape(&self.conversation_link(conversation_id));
        if call.kind == PendingKind::Approval {
            let arguments = serde_json::to_string_pretty(&call.args).unwrap_or_default();
            let arguments: String = arguments.chars().take(1500).collect();
            let text = format!(
                "🔐 The agent wants to run <code>{}</code>:\n<pre>{}</pre>",
                format::escape(&call.tool_name),
                format::escape(&arguments)
            );
            let button = |label: &str, decision: &str| InlineKeyboardButton {
                text: label.to_owned(),
                callback_data: Some(format!("v:{}:{decision}", call.id)),
                url: None,
            };
            let keyboard = InlineKeyboardMarkup {
                inline_keyboard: vec![
                    vec![button("Approve", "approve"), button("Deny", "deny")],
                    vec![button("Always allow", "always")],
                ],
            };
            return (text, Some(keyboard));
        }
        if call.tool_name == "ask_user" {
            let question = call.args.get("question").and_then(Value::as_str).unwrap_or("A question");
            let options: Vec<&str> = call
                .args
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut text =
                format!("❓ {}", format::render(question, MESSAGE_LIMIT - 200).into_iter().next().unwrap_or_default());
            if options.is_empty() {
                text.push_str("\n\n<i>Reply with your answer.</i>");
                return (text, None);
            }
            let rows = options
                .iter()
                .enumerate()
                .take(20)
                .map(|(index, option)| {
                    vec![InlineKeyboardButton {
                        text: option.chars().take(60).collect(),
                        callback_data: Some(format!("a:{}:{index}", call.id)),
                        url: None,
                    }]
                })
                .collect();
            return (text, Some(InlineKeyboardMarkup { inline_keyboard: rows }));
        }
        let what = if call.tool_name == "render_and_wait" { "A component" } else { "A form" };
        let title = call
            .args
            .get("title")
            .and_then(Value::as_str)
            .map(|title| format!(" “{}”", format::escape(title)))
            .unwrap_or_default();
        (format!("📝 {what}{title} waits for you in the canvas:\n{link}"), None)
    }

    async fn handle_press(self: &Arc<Self>, state: &AppState, query: CallbackQuery) {
        let reply = |text: &str| AnswerCallbackQuery {
            callback_query_id: query.id.clone(),
            text: Some(text.chars().take(190).collect()),
            show_alert: None,
        };
        if !self.allowed(query.from.id) {
            tracing::warn!(user_id = query.from.id, "Telegram: refused a button press of a user who is not allowed");
            self.api.answer_callback_query(&reply("This bot is private.")).await.ok();
            return;
        }
        let outcome = self.press(state, query.data.as_deref().unwrap_or_default()).await;
        let text = match &outcome {
            Ok(label) => format!("✓ {label}"),
            Err(problem) => problem.clone(),
        };
        if let Err(error) = self.api.answer_callback_query(&reply(&text)).await {
            tracing::warn!(%error, "Telegram: answerCallbackQuery failed");
        }
        // The buttons of an answered question go, whoever answered it.
        if let Some(message) = &query.message
            && message.date != 0
        {
            let chat = message.chat.id;
            let request = EditMessageReplyMarkup { chat_id: chat, message_id: message.message_id, reply_markup: None };
            match self.paced(chat, || self.api.edit_message_reply_markup(&request)).await {
                Ok(_) => {
                    if let Ok(label) = outcome {
                        self.send_text(chat, &format!("→ {label}"), None).await;
                    }
                }
                Err(error) if error.is_not_modified() => {}
                Err(error) => tracing::warn!(%error, "Telegram: cannot remove answered buttons"),
            }
        }
    }

    /// Answers the pending call a button names; the label of the choice, or why not.
    async fn press(&self, state: &AppState, data: &str) -> Result<String, String> {
        let mut parts = data.splitn(3, ':');
        let (kind, id, choice) = (parts.next(), parts.next().and_then(|id| id.parse::<i64>().ok()), parts.next());
        let (Some(kind), Some(id), Some(choice)) = (kind, id, choice) else {
            return Err("This button is not one of mine.".into());
        };
        let Ok(Some((conversation_id, call, waiting))) = state.store.pending_call_by_id(id).await else {
            return Err("This question is gone.".into());
        };
        let agent_of = state.store.conversation(&conversation_id).await.ok().map(|conversation| conversation.agent_id);
        if agent_of.as_deref() != Some(self.agent.as_str()) {
            return Err("This question is gone.".into());
        }
        if !waiting {
            return Err("Already answered.".into());
        }
        let (answer, label) = match kind {
            "a" => {
                let options = call.args.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
                let index: usize = choice.parse().map_err(|_| "This button is not one of mine.".to_owned())?;
                let option = options.get(index).and_then(Value::as_str).ok_or("This option is gone.")?.to_owned();
                (json!({ "answer": option }), option)
            }
            "v" if matches!(choice, "approve" | "deny" | "always") => {
                let label = match choice {
                    "approve" => "Approved",
                    "deny" => "Denied",
                    _ => "Always allowed",
                };
                (json!({ "decision": choice }), label.to_owned())
            }
            _ => return Err("This button is not one of mine.".into()),
        };
        match channel::answer(state, &conversation_id, &call.tool_call_id, answer).await {
            Ok(()) => Ok(label),
            Err(DomainError::Store(StoreError::AlreadyAnswered(_) | StoreError::RunNotOwned(_))) => {
                Err("Already answered.".into())
            }
            Err(error) => Err(error.to_string()),
        }
    }

    /// Sends every notification not yet sent to Telegram to the chats of its agent.
    pub async fn deliver_notifications(&self, state: &AppState) {
        let Ok(pending) = state.store.notifications_for_telegram(50).await else { return };
        for notification in pending {
            let delivery = if notification.agent_id != self.agent.as_str() {
                TelegramDelivery::Skipped
            } else {
                let chats = state.store.channel_chats(ChannelKind::Telegram, &self.agent).await.unwrap_or_default();
                let chats: Vec<i64> = chats
                    .iter()
                    .filter(|chat| chat.user_id.parse::<i64>().is_ok_and(|user| self.allowed(user)))
                    .filter_map(|chat| chat.chat_id.parse().ok())
                    .collect();
                if chats.is_empty() {
                    TelegramDelivery::Skipped
                } else {
                    let mut text = format!("🔔 **{}**\n\n{}", notification.title, notification.text);
                    if let Some(conversation_id) = &notification.conversation_id {
                        text.push_str(&format!("\n\n{}", self.conversation_link(conversation_id)));
                    }
                    let mut delivered = TelegramDelivery::Failed;
                    for chat in chats {
                        match self.try_send_markdown(chat, &text).await {
                            Ok(()) => delivered = TelegramDelivery::Sent,
                            // Refused for good (blocked, a chat that is gone): not again.
                            Err(TelegramError::Forbidden { .. } | TelegramError::BadRequest { .. }) => {}
                            // Telegram unreachable or busy: it stays in the outbox for the next look.
                            Err(error) => {
                                tracing::warn!(%error, "Telegram: a notification waits for Telegram to be reachable");
                                return;
                            }
                        }
                    }
                    delivered
                }
            };
            if let Err(error) = state.store.set_notification_telegram(notification.id, delivery).await {
                tracing::warn!(%error, "Telegram: cannot record a notification's delivery");
            }
        }
    }

    /// Sends Markdown as one or more messages (failures are logged).
    async fn send_markdown(&self, chat: i64, markdown: &str) {
        if let Err(error) = self.try_send_markdown(chat, markdown).await {
            tracing::warn!(%error, chat, "Telegram: sendMessage failed");
        }
    }

    /// Sends Markdown as one or more messages; the first failure stops it.
    async fn try_send_markdown(&self, chat: i64, markdown: &str) -> Result<(), TelegramError> {
        for html in format::render(markdown, MESSAGE_LIMIT) {
            self.try_send_html(chat, html, None).await?;
        }
        Ok(())
    }

    /// Sends plain text (escaped), with optional buttons.
    async fn send_text(&self, chat: i64, text: &str, keyboard: Option<InlineKeyboardMarkup>) {
        for (index, piece) in format::plain(text, MESSAGE_LIMIT).into_iter().enumerate() {
            // Buttons go on the first piece.
            let buttons = if index == 0 { keyboard.clone() } else { None };
            self.send_html(chat, piece, buttons).await;
        }
    }

    async fn send_html(&self, chat: i64, html: String, keyboard: Option<InlineKeyboardMarkup>) -> Option<i64> {
        match self.try_send_html(chat, html, keyboard).await {
            Ok(message_id) => Some(message_id),
            Err(error) => {
                tracing::warn!(%error, chat, "Telegram: sendMessage failed");
                None
            }
        }
    }

    async fn try_send_html(
        &self,
        chat: i64,
        html: String,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<i64, TelegramError> {
        let request = SendMessage {
            chat_id: chat,
            text: html,
            parse_mode: Some(ParseMode::Html),
            reply_markup: keyboard,
            link_preview_options: Some(LinkPreviewOptions { is_disabled: true }),
        };
        self.paced(chat, || self.api.send_message(&request)).await.map(|message| message.message_id)
    }

    /// Runs a request to `chat` when its pacer allows, repeating it after a 429's `retry_after`.
    async fn paced<T, F, Fut>(&self, chat: i64, request: F) -> Result<T, TelegramError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, TelegramError>>,
    {
        let pacer = Arc::clone(
            self.pacers
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .entry(chat)
                .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(Pace { next: Instant::now() }))),
        );
        let mut pace = pacer.lock().await;
        let interval = Duration::from_millis(self.config.edit_interval_ms);
        let mut attempts = 0;
        loop {
            tokio::time::sleep_until(pace.next).await;
            match request().await {
                Err(TelegramError::RateLimited { retry_after }) if attempts < MAX_RETRIES => {
                    attempts += 1;
                    tracing::info!(chat, ?retry_after, "Telegram: flood control; waiting as asked");
                    pace.next = Instant::now() + retry_after;
                }
                outcome => {
                    pace.next = Instant::now() + interval;
                    return outcome;
                }
            }
        }
    }
}

/// An answer as it streams into a chat: its text so far and the messages showing it.
#[derive(Default)]
struct Streamed {
    text: String,
    /// (message id, the HTML it shows), in order.
    sent: Vec<(i64, String)>,
}

/// A waiting `ask_user` without options: a plain message answers it.
fn is_open_question(call: &PendingCall) -> bool {
    call.kind == PendingKind::Question
        && call.tool_name == "ask_user"
        && call.args.get("options").and_then(Value::as_array).is_none_or(|options| options.is_empty())
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
