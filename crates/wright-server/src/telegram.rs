//! The Telegram channel: the owner talks to an agent from a phone, through the same path as
//! the canvas ([`crate::domain::channel`]).
//!
//! - **In:** long polling of `getUpdates` (the Bot API's base URL is configurable). The poller
//!   only dispatches: each update goes to its chat's own queue and task, so one chat (a stranger
//!   flooding the bot) never holds up another; an update Wright cannot decode is logged and
//!   skipped. Only private chats of the users in `[telegram] allowed_user_ids` are served;
//!   anyone else is told the bot is private — once per [`STRANGER_REFUSAL_PERIOD`], not per
//!   message — and logged. A message is a command (`/newsession [name]`, `/cancel`,
//!   `/codestats`, `/codefailures [n]`, `/help`), an answer to a waiting `ask_user`, or a
//!   message to the agent; after the session division (daily, weekly) the next one starts a
//!   new conversation in the new session, as in the canvas. A button press answers the pending
//!   call it names (`callback_query` → the store's answer-once → `answerCallbackQuery`, at
//!   once: Telegram drops an answer after about 15 s). A 👍 or 👎 reaction on one of the bot's
//!   answers rates the run that wrote it (`message_reaction` updates), like the canvas's thumbs.
//! - **Out:** one follower task per chat subscribes to the hub of the conversation the chat is
//!   bound to, like the canvas's event stream: text streams into a message edited as it grows,
//!   re-rendered as Telegram HTML and split at 4096 characters (`wright_telegram::format`);
//!   `ask_user` options become an inline keyboard, approvals Approve / Deny / Always buttons,
//!   forms and components a short text with the canvas link. Notifications go to every chat of
//!   the agent (the notifier calls [`TelegramChannel::deliver_notifications`]).
//! - **The outbox:** nothing above talks to Telegram itself (except the answer to a button
//!   press, which is only worth sending at once). Every message, edit and keyboard is written
//!   to the store's outbox (`telegram_outbox`: what each message should show); one sender task
//!   per chat brings the chat up to date, oldest message first — it sends only what differs from
//!   what Telegram accepted (no "message is not modified"), edits a message already sent rather
//!   than sending a copy, and retries with backoff through outages (502, refused connections)
//!   until Telegram accepts; a newer text of the same message supersedes one never sent. A
//!   keyboard Telegram refuses is replaced by a plain-text question. A restart resumes it.
//! - **Rate limits:** a chat's sender waits at least `edit_interval_ms` between requests, and
//!   after a 429 the `retry_after` Telegram asked for.
//!
//! Durable state is in the store: the poller's cursor (the next update id, written once the
//! updates of a batch are handled), each chat's bound conversation and the outbox; a button
//! carries the pending call's row id, so a press after a restart still answers it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;
use wright_core::{AgentId, ConversationStatus, EventBody, Notice, PendingKind, Rating};
use wright_store::{ChannelChat, ChannelKind, OutboxItem, PendingCall, StoreError, TelegramDelivery};
use wright_telegram::wire::{
    AnswerCallbackQuery, CallbackQuery, ChatType, EditMessageReplyMarkup, EditMessageText, GetUpdates, Incoming,
    InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, Message, MessageReactionUpdated, ParseMode,
    ReactionType, SendMessage, Update,
};
use wright_telegram::{BotApi, MESSAGE_LIMIT, TelegramError, format};

use crate::AppState;
use crate::config::TelegramConfig;
use crate::domain::DomainError;
use crate::domain::channel::{self, Command, Reply};
use crate::domain::hub::{Subscription, Update as HubUpdate};
use crate::domain::runs::Sender;

/// A stranger is told the bot is private at most once in this period, however many messages
/// they send: each refusal is a message in their chat, paced like any other.
pub const STRANGER_REFUSAL_PERIOD: Duration = Duration::from_secs(10 * 60);

/// The first wait after a failed send (an outage, a network error); each next one doubles.
const RETRY_FIRST: Duration = Duration::from_millis(500);
/// The longest wait between two tries of the outbox while Telegram is unreachable.
const RETRY_MAX: Duration = Duration::from_secs(15);

/// How long the outbox keeps settled rows: Telegram lets a bot edit its messages for 48 hours.
const OUTBOX_KEEP: Duration = Duration::from_secs(48 * 60 * 60);

/// How often settled outbox rows older than [`OUTBOX_KEEP`] are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// Removes settled outbox rows too old for Telegram to edit.
async fn prune_outbox(state: &AppState) {
    let keep_from = state.config.clock.now_ms() - OUTBOX_KEEP.as_millis() as i64;
    if let Err(error) = state.store.outbox_prune(keep_from).await {
        tracing::warn!(%error, "Telegram: cannot prune the outbox");
    }
}

/// A chat's follower task and the conversation it follows.
struct Follower {
    conversation_id: String,
    task: tokio::task::JoinHandle<()>,
}

/// An update for a chat's handler, and where to say it was handled (the poller moves its
/// cursor past a batch only once every update of it was).
type Job = (Update, oneshot::Sender<()>);

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
    /// Each chat's queue of updates, read by that chat's handler task in order. The task ends
    /// when its sender is dropped (the channel stops); held only to look up or insert.
    handlers: Mutex<HashMap<i64, mpsc::UnboundedSender<Job>>>,
    /// Each chat's outbox sender, woken by every write to the chat's outbox (a `Notify` keeps
    /// one wake-up for a sender that is busy, so none is lost). The tasks run until shutdown.
    senders: Mutex<HashMap<i64, Arc<Notify>>>,
    /// When each stranger was last told the bot is private.
    refused: Mutex<HashMap<i64, Instant>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
            handlers: Mutex::new(HashMap::new()),
            senders: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
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
            let followers: Vec<Follower> = lock(&channel.followers).drain().map(|(_, follower)| follower).collect();
            for follower in followers {
                follower.task.abort();
            }
            // Dropping the queues ends the handler tasks.
            lock(&channel.handlers).clear();
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
                    *lock(&self.bot_username) = me.username;
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
        // What the outbox still owes goes out again; what is settled and too old to edit goes
        // (now, and every PRUNE_EVERY while the poller runs).
        prune_outbox(state).await;
        let mut pruned_at = Instant::now();
        match state.store.outbox_chats().await {
            Ok(chats) => chats.into_iter().for_each(|chat| self.wake(state, chat)),
            Err(error) => tracing::warn!(%error, "Telegram: cannot read the outbox"),
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
            if pruned_at.elapsed() >= PRUNE_EVERY {
                prune_outbox(state).await;
                pruned_at = Instant::now();
            }
            let request = GetUpdates {
                offset: (offset > 0).then_some(offset),
                limit: Some(50),
                timeout: self.config.poll_timeout_secs,
                allowed_updates: Some(vec!["message".into(), "callback_query".into(), "message_reaction".into()]),
            };
            match self.api.get_updates(&request).await {
                Ok(batch) => {
                    backoff = Duration::from_secs(1);
                    let mut handled = Vec::new();
                    let mut last = None;
                    for incoming in batch {
                        let Some(update_id) = incoming.update_id() else {
                            tracing::warn!(?incoming, "Telegram: skipped an update without an id");
                            continue;
                        };
                        last = Some(last.map_or(update_id, |last: i64| last.max(update_id)));
                        match incoming {
                            Incoming::Update(update) => handled.push(self.dispatch(state, *update)),
                            // Fetched again it would block every later update: skipped, and said.
                            Incoming::Undecodable { error, .. } => {
                                tracing::warn!(update_id, %error, "Telegram: skipped an update Wright cannot read");
                            }
                        }
                    }
                    // Chats are handled concurrently; the cursor moves once all of the batch
                    // is (a crash repeats at most this batch, and loses none of it).
                    for done in handled {
                        done.await.ok();
                    }
                    if let Some(last) = last {
                        offset = last + 1;
                        if let Err(error) = state.store.set_channel_cursor(ChannelKind::Telegram, offset).await {
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

    /// Hands `update` to its chat's handler (started on first use); resolves once handled.
    fn dispatch(self: &Arc<Self>, state: &AppState, update: Update) -> oneshot::Receiver<()> {
        let (done, handled) = oneshot::channel();
        let chat = update
            .message
            .as_ref()
            .map(|message| message.chat.id)
            .or_else(|| update.callback_query.as_ref().map(|query| query.from.id))
            .or_else(|| update.message_reaction.as_ref().map(|reaction| reaction.chat.id));
        let Some(chat) = chat else {
            // Nothing Wright handles (an edited message): handled by doing nothing.
            done.send(()).ok();
            return handled;
        };
        let mut handlers = lock(&self.handlers);
        let queue = handlers.entry(chat).or_insert_with(|| self.start_handler(state));
        if let Err(mpsc::error::SendError(job)) = queue.send((update, done)) {
            // Its task is gone (it panicked): a new one takes the update.
            let queue = self.start_handler(state);
            queue.send(job).ok();
            handlers.insert(chat, queue);
        }
        handled
    }

    /// A chat's handler: its updates one at a time, in order.
    fn start_handler(self: &Arc<Self>, state: &AppState) -> mpsc::UnboundedSender<Job> {
        let (queue, mut jobs) = mpsc::unbounded_channel::<Job>();
        let channel = Arc::clone(self);
        let state = state.clone();
        tokio::spawn(async move {
            while let Some((update, done)) = jobs.recv().await {
                channel.handle(&state, update).await;
                done.send(()).ok();
            }
        });
        queue
    }

    async fn handle(self: &Arc<Self>, state: &AppState, update: Update) {
        if let Some(message) = update.message {
            self.handle_message(state, message).await;
        } else if let Some(query) = update.callback_query {
            self.handle_press(state, query).await;
        } else if let Some(reaction) = update.message_reaction {
            self.handle_reaction(state, reaction).await;
        }
    }

    /// A 👍 or 👎 on one of the bot's answers rates the run that wrote it (issue 31), as the
    /// thumbs do in the canvas. Other reactions, reactions removed, and reactions to messages
    /// that are not answers (questions, notifications) say nothing about a run.
    async fn handle_reaction(self: &Arc<Self>, state: &AppState, reaction: MessageReactionUpdated) {
        let Some(user) = reaction.user.as_ref() else { return };
        if reaction.chat.kind != ChatType::Private || !self.allowed(user.id) {
            return;
        }
        let rating = reaction.new_reaction.iter().find_map(|kind| match kind {
            ReactionType::Emoji { emoji } if emoji == "👍" => Some(Rating::Up),
            ReactionType::Emoji { emoji } if emoji == "👎" => Some(Rating::Down),
            _ => None,
        });
        let Some(rating) = rating else { return };
        if let Err(error) = self.rate(state, reaction.chat.id, reaction.message_id, rating).await {
            tracing::warn!(%error, chat = reaction.chat.id, "Telegram: could not take a reaction as a rating");
        }
    }

    /// Rates the run whose answer is the message (its slot names the run).
    async fn rate(&self, state: &AppState, chat: i64, message_id: i64, rating: Rating) -> anyhow::Result<()> {
        let Some(slot) = state.store.outbox_message(chat, message_id).await? else { return Ok(()) };
        let Some((conversation, seq)) = run_of_slot(&slot) else { return Ok(()) };
        crate::learning::rate(state, conversation, Some(seq), rating, None).await?;
        Ok(())
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
            self.refuse_stranger(state, chat, from.id, from.username.as_deref());
            return;
        }
        let Some(text) = message.text.filter(|text| !text.trim().is_empty()) else {
            self.send_text(state, chat, "I can read text messages only.").await;
            return;
        };
        let conversation_id = match self.conversation_for(state, chat, from.id).await {
            Ok(id) => id,
            Err(error) => {
                tracing::warn!(%error, "Telegram: cannot open a conversation for a chat");
                self.send_text(state, chat, "Something went wrong on the server; see its log.").await;
                return;
            }
        };
        let bot = lock(&self.bot_username).clone();
        if let Some(command) = channel::parse_command(&text, bot.as_deref()) {
            self.command(state, chat, from.id, &conversation_id, command).await;
            return;
        }
        if text.trim_start().starts_with('/') {
            self.send_text(state, chat, channel::HELP).await;
            return;
        }
        // A question waits for words: this message is its answer (a number or the text of an
        // option picks it — the way to answer when a keyboard could not be shown).
        let waiting = state.store.pending_calls(&conversation_id).await.unwrap_or_default();
        if let Some(call) = waiting.iter().rev().find(|call| is_question(call)) {
            if let Err(error) = channel::answer(
                state,
                &conversation_id,
                &call.tool_call_id,
                json!({ "answer": typed_answer(call, &text) }),
            )
            .await
            {
                self.send_text(state, chat, &error.to_string()).await;
            }
            return;
        }
        if let Err(error) =
            channel::send(state, &conversation_id, &text, Sender::Person, wright_core::UsageCaller::Channel).await
        {
            let message = match error {
                DomainError::RunInProgress => {
                    "I am still working on your last message. Wait for it, or send /cancel to stop it.".to_owned()
                }
                other => other.to_string(),
            };
            self.send_text(state, chat, &message).await;
        }
    }

    /// Tells a stranger the bot is private, once per [`STRANGER_REFUSAL_PERIOD`]; logged as often.
    fn refuse_stranger(self: &Arc<Self>, state: &AppState, chat: i64, user_id: i64, username: Option<&str>) {
        let now = Instant::now();
        {
            let mut refused = lock(&self.refused);
            if refused.get(&chat).is_some_and(|at| now.duration_since(*at) < STRANGER_REFUSAL_PERIOD) {
                tracing::debug!(user_id, "Telegram: a stranger's message ignored (already told)");
                return;
            }
            refused.retain(|_, at| now.duration_since(*at) < STRANGER_REFUSAL_PERIOD);
            refused.insert(chat, now);
        }
        tracing::warn!(
            user_id,
            username = username.unwrap_or(""),
            "Telegram: refused a user who is not in [telegram] allowed_user_ids"
        );
        let refusal = format!(
            "This bot is private. (Your Telegram user id is {user_id}; the owner can allow it in [telegram] allowed_user_ids.)"
        );
        let channel = Arc::clone(self);
        let state = state.clone();
        // Written off the handler: the stranger's queue holds nobody up either way.
        tokio::spawn(async move { channel.send_text(&state, chat, &refusal).await });
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
                self.send_text(state, chat, &format!("Started new session: {}", started.session.name)).await;
            }
            Ok(Reply::Text(texts)) => {
                for text in texts {
                    self.send_markdown(state, chat, &text).await;
                }
            }
            Ok(Reply::RunStarted) => {}
            Err(error) => self.send_text(state, chat, &error.to_string()).await,
        }
    }

    /// The conversation the chat talks to: its bound one while it is in the agent's current
    /// session, else a new one in the current session (bound, and followed) — after the daily
    /// or weekly division the chat starts afresh, as the canvas does.
    async fn conversation_for(self: &Arc<Self>, state: &AppState, chat: i64, user: i64) -> anyhow::Result<String> {
        if let Some(bound) = state.store.channel_chat(ChannelKind::Telegram, &chat.to_string()).await?
            && let Some(conversation_id) = bound.conversation_id
            && bound.agent_id == self.agent.as_str()
            && state.store.conversation(&conversation_id).await.is_ok()
        {
            // Dividing first when the schedule says a new session has begun.
            let current = state.store.current_session(&self.agent).await?;
            if state.store.conversation_session_id(&conversation_id).await? == Some(current.id) {
                self.follow(state, chat, &conversation_id);
                return Ok(conversation_id);
            }
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
        let mut followers = lock(&self.followers);
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
        // The seq of the person's message that started the run being followed, once seen.
        let mut run_seq: Option<i64> = None;
        let mut answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
        // Questions shown in this chat: tool call id → the pending call's row id.
        let mut questions: HashMap<String, i64> = HashMap::new();
        let interval = Duration::from_millis(self.config.edit_interval_ms);
        let mut flush_at: Option<Instant> = None;
        // Questions open from before (a restart): shown again — the outbox sends nothing for
        // one the chat already shows as it is.
        self.present_pending(&state, chat, &conversation_id, &mut questions).await;
        loop {
            let update = tokio::select! {
                update = updates.recv() => update,
                () = sleep_until(flush_at) => {
                    flush_at = None;
                    self.flush(&state, chat, &mut answer).await;
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
                        // The outbox paces what reaches Telegram; this only spares the store
                        // a write per delta.
                        flush_at.get_or_insert_with(|| {
                            Instant::now() + if answer.flushed { interval } else { Duration::ZERO }
                        });
                    }
                    Ok(HubUpdate::Event(stored)) => match stored.event.body {
                        EventBody::Assistant { .. } => {
                            answer.text = stored.event.content.clone();
                            self.flush(&state, chat, &mut answer).await;
                            answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
                            flush_at = None;
                        }
                        EventBody::ToolResult { tool_call_id, .. } => {
                            if let Some(pending_id) = questions.remove(&tool_call_id) {
                                // Answered (here or in the canvas): the buttons go.
                                self.remove_buttons(&state, chat, pending_id).await;
                            }
                        }
                        EventBody::Notice(Notice::Compaction { .. }) => {}
                        EventBody::Notice(_) => {
                            self.flush(&state, chat, &mut answer).await;
                            self.send_text(&state, chat, &format!("ℹ {}", stored.event.content)).await;
                        }
                        EventBody::User { .. } => run_seq = Some(stored.event.seq),
                        EventBody::ToolCall { .. } => {}
                    },
                    Ok(HubUpdate::Status { status, error }) => match status {
                        ConversationStatus::Waiting => {
                            self.flush(&state, chat, &mut answer).await;
                            answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
                            flush_at = None;
                            self.present_pending(&state, chat, &conversation_id, &mut questions).await;
                        }
                        ConversationStatus::Error | ConversationStatus::Idle => {
                            // A run that ended without a stored answer (cancelled, failed) leaves
                            // its streamed text as it is; the next run starts a new message.
                            self.flush(&state, chat, &mut answer).await;
                            answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
                            flush_at = None;
                            if let Some(error) = error.filter(|error| !error.trim().is_empty()) {
                                self.send_markdown(&state, chat, &format!("⚠ {error}")).await;
                            }
                        }
                        ConversationStatus::Running => {
                            // A new run: what it says starts a new message.
                            self.flush(&state, chat, &mut answer).await;
                            answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
                            flush_at = None;
                        }
                    },
                    Ok(HubUpdate::Notification(_) | HubUpdate::Waiting { .. }) => {}
                    // Fell behind: what was dropped may include the end of a run, so the messages
                    // shown so far stay as they are and what follows goes to new ones; the stored
                    // answer at the end has it all. Never an edit of an older answer's message
                    // with a newer text.
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::info!(chat, skipped, "Telegram: the chat fell behind its conversation's updates");
                        answer = Streamed::new(run_seq.map(|seq| (conversation_id.as_str(), seq)));
                        flush_at = None;
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }

    /// Writes the answer so far to the outbox, one message per 4096 characters; the sender
    /// edits what changed and sends the rest.
    async fn flush(self: &Arc<Self>, state: &AppState, chat: i64, answer: &mut Streamed) {
        if answer.text.trim().is_empty() {
            return;
        }
        answer.flushed = true;
        for (index, html) in format::render(&answer.text, MESSAGE_LIMIT).into_iter().enumerate() {
            let slot = format!("answer:{}:{index}", answer.key);
            if let Err(error) = state.store.outbox_put(chat, &slot, &html, None, None).await {
                tracing::warn!(%error, chat, "Telegram: cannot write to the outbox");
            }
        }
        self.wake(state, chat);
    }

    /// Shows the calls waiting in the conversation (a question already shown is written again
    /// unchanged, which the outbox sends nothing for).
    async fn present_pending(
        self: &Arc<Self>,
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
            let question = self.question(&call, conversation_id);
            let keyboard = question.keyboard.as_ref().and_then(|keyboard| serde_json::to_string(keyboard).ok());
            let slot = question_slot(call.id);
            match state
                .store
                .outbox_put(chat, &slot, &question.text, keyboard.as_deref(), Some(&question.fallback))
                .await
            {
                Ok(()) => {
                    questions.insert(call.tool_call_id.clone(), call.id);
                }
                Err(error) => tracing::warn!(%error, chat, "Telegram: cannot write a question to the outbox"),
            }
        }
        self.wake(state, chat);
    }

    /// A waiting call as a message: its HTML and buttons, and the plain-text question shown
    /// instead when Telegram refuses the buttons.
    fn question(&self, call: &PendingCall, conversation_id: &str) -> Question {
        let link = format::escape(&self.conversation_link(conversation_id));
        if call.kind == PendingKind::Approval {
            let arguments = serde_json::to_string_pretty(&call.args).unwrap_or_default();
            let arguments: String = arguments.chars().take(1500).collect();
            let mut text = format!(
                "🔐 The agent wants to run <code>{}</code>:\n<pre>{}</pre>",
                format::escape(&call.tool_name),
                format::escape(&arguments)
            );
            // Asked by the host after outside content: say why, as the canvas does.
            if let Some(reason) = call.render.get("reason").and_then(Value::as_str) {
                let reason = format::escape(reason);
                text.push_str(&format!(
                    "\n<i>Asked because {reason}: what it read may have told the agent to do this.</i>"
                ));
            }
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
            let fallback = format!("{text}\n\nDecide in the canvas:\n{link}");
            return Question { text, keyboard: Some(keyboard), fallback };
        }
        if call.tool_name == "ask_user" {
            let question = call.args.get("question").and_then(Value::as_str).unwrap_or("A question");
            let options = options_of(call);
            let mut text =
                format!("❓ {}", format::render(question, MESSAGE_LIMIT - 1500).into_iter().next().unwrap_or_default());
            if options.is_empty() {
                text.push_str("\n\n<i>Reply with your answer.</i>");
                return Question { fallback: text.clone(), text, keyboard: None };
            }
            // Typed, the question still works: a number or the option's text answers it.
            let listed: String = options
                .iter()
                .enumerate()
                .take(20)
                .map(|(index, option)| {
                    format!("\n{}. {}", index + 1, format::escape(&option.chars().take(60).collect::<String>()))
                })
                .collect();
            let fallback = format!("{text}\n{listed}\n\n<i>Reply with the number or the text of your choice.</i>");
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
            return Question { text, keyboard: Some(InlineKeyboardMarkup { inline_keyboard: rows }), fallback };
        }
        let what = if call.tool_name == "render_and_wait" { "A component" } else { "A form" };
        let title = call
            .args
            .get("title")
            .and_then(Value::as_str)
            .map(|title| format!(" “{}”", format::escape(title)))
            .unwrap_or_default();
        let text = format!("📝 {what}{title} waits for you in the canvas:\n{link}");
        Question { fallback: text.clone(), text, keyboard: None }
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
        let data = query.data.as_deref().unwrap_or_default();
        // The buttons of a pressed question go, whoever answered it — written before the answer
        // resumes the run, so the outbox (oldest first) removes them before the run's reply.
        // The follower asks the same when the result arrives; the outbox sends one edit.
        let pressed = query
            .message
            .as_ref()
            .map(|message| message.chat.id)
            .zip(data.split(':').nth(1).and_then(|id| id.parse::<i64>().ok()));
        if let Some((chat, pending_id)) = pressed {
            self.remove_buttons(state, chat, pending_id).await;
        }
        let outcome = self.press(state, data).await;
        let text = match &outcome {
            Ok(label) => format!("✓ {label}"),
            Err(problem) => problem.clone(),
        };
        // At once and not through the outbox: Telegram drops an answer after about 15 s.
        if let Err(error) = self.api.answer_callback_query(&reply(&text)).await {
            tracing::warn!(%error, "Telegram: answerCallbackQuery failed");
        }
        if let (Some((chat, pending_id)), Ok(label)) = (pressed, outcome) {
            let slot = format!("answered:{pending_id}");
            let html = format::plain(&format!("→ {label}"), MESSAGE_LIMIT).into_iter().next().unwrap_or_default();
            if let Err(error) = state.store.outbox_put(chat, &slot, &html, None, None).await {
                tracing::warn!(%error, chat, "Telegram: cannot write to the outbox");
            }
            self.wake(state, chat);
        }
    }

    async fn remove_buttons(self: &Arc<Self>, state: &AppState, chat: i64, pending_id: i64) {
        if let Err(error) = state.store.outbox_set_keyboard(chat, &question_slot(pending_id), None).await {
            tracing::warn!(%error, chat, "Telegram: cannot write to the outbox");
        }
        self.wake(state, chat);
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

    /// Hands every notification not yet given to Telegram to the outbox of each chat of its
    /// agent (the outbox delivers it through outages).
    pub async fn deliver_notifications(self: &Arc<Self>, state: &AppState) {
        let Ok(pending) = state.store.notifications_for_telegram(50).await else { return };
        for notification in pending {
            let chats: Vec<i64> = if notification.agent_id != self.agent.as_str() {
                Vec::new()
            } else {
                let chats = state.store.channel_chats(ChannelKind::Telegram, &self.agent).await.unwrap_or_default();
                chats
                    .iter()
                    .filter(|chat| chat.user_id.parse::<i64>().is_ok_and(|user| self.allowed(user)))
                    .filter_map(|chat| chat.chat_id.parse().ok())
                    .collect()
            };
            let mut delivery = if chats.is_empty() { TelegramDelivery::Skipped } else { TelegramDelivery::Sent };
            let mut text = format!("🔔 **{}**\n\n{}", notification.title, notification.text);
            if let Some(conversation_id) = &notification.conversation_id {
                text.push_str(&format!("\n\n{}", self.conversation_link(conversation_id)));
            }
            for chat in chats {
                let slot = format!("notification:{}", notification.id);
                if let Err(error) = self.put_markdown(state, chat, &slot, &text).await {
                    tracing::warn!(%error, "Telegram: cannot write a notification to the outbox");
                    delivery = TelegramDelivery::Failed;
                }
            }
            if let Err(error) = state.store.set_notification_telegram(notification.id, delivery).await {
                tracing::warn!(%error, "Telegram: cannot record a notification's delivery");
            }
        }
    }

    /// Writes Markdown to the outbox as one or more new messages.
    async fn send_markdown(self: &Arc<Self>, state: &AppState, chat: i64, markdown: &str) {
        let slot = format!("reply:{}", uuid::Uuid::now_v7());
        if let Err(error) = self.put_markdown(state, chat, &slot, markdown).await {
            tracing::warn!(%error, chat, "Telegram: cannot write to the outbox");
        }
    }

    async fn put_markdown(
        self: &Arc<Self>,
        state: &AppState,
        chat: i64,
        slot: &str,
        markdown: &str,
    ) -> Result<(), wright_store::StoreError> {
        for (index, html) in format::render(markdown, MESSAGE_LIMIT).into_iter().enumerate() {
            state.store.outbox_put(chat, &format!("{slot}:{index}"), &html, None, None).await?;
        }
        self.wake(state, chat);
        Ok(())
    }

    /// Writes plain text (escaped) to the outbox as one or more new messages.
    async fn send_text(self: &Arc<Self>, state: &AppState, chat: i64, text: &str) {
        let slot = uuid::Uuid::now_v7();
        for (index, html) in format::plain(text, MESSAGE_LIMIT).into_iter().enumerate() {
            if let Err(error) = state.store.outbox_put(chat, &format!("reply:{slot}:{index}"), &html, None, None).await
            {
                tracing::warn!(%error, chat, "Telegram: cannot write to the outbox");
            }
        }
        self.wake(state, chat);
    }

    /// Wakes the chat's outbox sender, starting it on first use.
    fn wake(self: &Arc<Self>, state: &AppState, chat: i64) {
        let mut senders = lock(&self.senders);
        if let Some(wake) = senders.get(&chat) {
            wake.notify_one();
            return;
        }
        let wake = Arc::new(Notify::new());
        senders.insert(chat, Arc::clone(&wake));
        let channel = Arc::clone(self);
        let state = state.clone();
        // One per chat, until shutdown.
        tokio::spawn(async move {
            tokio::select! {
                () = channel.run_sender(&state, chat, &wake) => {}
                () = state.shutdown.cancelled() => {}
            }
        });
    }

    /// The chat's outbox sender: sends the oldest message that differs from what Telegram
    /// shows, reads the outbox again (a newer text supersedes), and so on; waits when there is
    /// nothing, when Telegram asks (429), and with backoff while Telegram cannot be reached.
    async fn run_sender(&self, state: &AppState, chat: i64, wake: &Notify) {
        let interval = Duration::from_millis(self.config.edit_interval_ms);
        let mut next = Instant::now();
        let mut backoff = RETRY_FIRST;
        loop {
            let item = match state.store.outbox_pending(chat).await {
                Ok(items) => items.into_iter().next(),
                Err(error) => {
                    tracing::warn!(%error, chat, "Telegram: cannot read the outbox");
                    tokio::time::sleep(RETRY_MAX).await;
                    continue;
                }
            };
            let Some(item) = item else {
                wake.notified().await;
                continue;
            };
            tokio::time::sleep_until(next).await;
            let outcome = self.deliver(&item).await;
            next = Instant::now() + interval;
            let recorded = match outcome {
                Ok(sent) => {
                    backoff = RETRY_FIRST;
                    state.store.outbox_sent(item.id, sent.message_id, &sent.text, sent.keyboard.as_deref()).await
                }
                Err(TelegramError::RateLimited { retry_after }) => {
                    tracing::info!(chat, ?retry_after, "Telegram: flood control; waiting as asked");
                    next = Instant::now() + retry_after;
                    state.store.outbox_attempt_failed(item.id, "rate limited").await
                }
                Err(TelegramError::BadRequest { description })
                    if item.message_id.is_some() && cannot_edit(&description) =>
                {
                    tracing::info!(chat, %description, "Telegram: a message cannot be edited; sending it anew");
                    state.store.outbox_forget_message(item.id).await
                }
                Err(TelegramError::BadRequest { description }) if item.keyboard.is_some() => {
                    tracing::warn!(chat, %description, "Telegram refused a keyboard; asking in plain text");
                    state.store.outbox_without_keyboard(item.id).await
                }
                Err(error @ (TelegramError::BadRequest { .. } | TelegramError::Forbidden { .. })) => {
                    tracing::warn!(%error, chat, "Telegram refused a message for good");
                    state.store.outbox_failed(item.id, &error.to_string()).await
                }
                Err(error) => {
                    // Unreachable, 5xx, a page instead of JSON, a token refused for now: later.
                    tracing::warn!(%error, chat, retry_in = ?backoff, "Telegram: a message waits in the outbox");
                    next = Instant::now() + backoff;
                    backoff = (backoff * 2).min(RETRY_MAX);
                    state.store.outbox_attempt_failed(item.id, &error.to_string()).await
                }
            };
            if let Err(error) = recorded {
                tracing::warn!(%error, chat, "Telegram: cannot record a delivery in the outbox");
                tokio::time::sleep(RETRY_MAX).await;
            }
        }
    }

    /// One request that brings `item`'s message closer to what it should show: a send when it
    /// has no message yet, else an edit of its text (with its keyboard) or of its keyboard alone.
    async fn deliver(&self, item: &OutboxItem) -> Result<Sent, TelegramError> {
        let keyboard: Option<InlineKeyboardMarkup> = match item.keyboard.as_deref().map(serde_json::from_str) {
            Some(Ok(keyboard)) => Some(keyboard),
            Some(Err(error)) => {
                tracing::warn!(%error, "Telegram: a keyboard in the outbox does not parse; sent without it");
                None
            }
            None => None,
        };
        let sent = |message_id: i64| Sent { message_id, text: item.text.clone(), keyboard: item.keyboard.clone() };
        let Some(message_id) = item.message_id else {
            let request = SendMessage {
                chat_id: item.chat_id,
                text: item.text.clone(),
                parse_mode: Some(ParseMode::Html),
                reply_markup: keyboard,
                link_preview_options: Some(LinkPreviewOptions { is_disabled: true }),
            };
            return self.api.send_message(&request).await.map(|message| sent(message.message_id));
        };
        let outcome = if item.sent_text.as_deref() != Some(item.text.as_str()) {
            let request = EditMessageText {
                chat_id: item.chat_id,
                message_id,
                text: item.text.clone(),
                parse_mode: Some(ParseMode::Html),
                reply_markup: keyboard,
                link_preview_options: Some(LinkPreviewOptions { is_disabled: true }),
            };
            self.api.edit_message_text(&request).await.map(|_| ())
        } else {
            let request = EditMessageReplyMarkup { chat_id: item.chat_id, message_id, reply_markup: keyboard };
            self.api.edit_message_reply_markup(&request).await.map(|_| ())
        };
        match outcome {
            Ok(()) => Ok(sent(message_id)),
            // It shows this already (an edit that went through before its answer was lost).
            Err(error) if error.is_not_modified() => Ok(sent(message_id)),
            Err(error) => Err(error),
        }
    }
}

/// What Telegram accepted for an outbox row.
struct Sent {
    message_id: i64,
    text: String,
    keyboard: Option<String>,
}

/// A waiting call as a message (see [`TelegramChannel::question`]).
struct Question {
    text: String,
    keyboard: Option<InlineKeyboardMarkup>,
    fallback: String,
}

/// An answer as it streams into a chat: its text so far, under an outbox slot of its own.
struct Streamed {
    text: String,
    /// Its messages are `answer:<key>:<piece>` in the outbox; new for every answer, so a later
    /// answer never edits an earlier one's messages. `<conversation>@<seq>.<uuid>` when the run
    /// is known (the seq of the person's message that started it): a reaction to the message
    /// rates that run.
    key: String,
    /// Whether it was written to the outbox yet (the first piece goes at once, later ones at
    /// the chat's pace).
    flushed: bool,
}

impl Streamed {
    fn new(run: Option<(&str, i64)>) -> Self {
        let key = match run {
            Some((conversation, seq)) => format!("{conversation}@{seq}.{}", uuid::Uuid::now_v7()),
            None => uuid::Uuid::now_v7().to_string(),
        };
        Self { text: String::new(), key, flushed: false }
    }
}

/// The conversation and the seq of the person's message that started the run an answer's
/// slot belongs to.
fn run_of_slot(slot: &str) -> Option<(&str, i64)> {
    let (conversation, rest) = slot.strip_prefix("answer:")?.split_once('@')?;
    Some((conversation, rest.split_once('.')?.0.parse().ok()?))
}

fn question_slot(pending_id: i64) -> String {
    format!("question:{pending_id}")
}

/// Telegram's words for an edit that can never succeed: the message is gone or too old.
fn cannot_edit(description: &str) -> bool {
    description.contains("message to edit not found") || description.contains("message can't be edited")
}

fn options_of(call: &PendingCall) -> Vec<&str> {
    call.args.get("options").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// A waiting `ask_user`: a typed message answers it.
fn is_question(call: &PendingCall) -> bool {
    call.kind == PendingKind::Question && call.tool_name == "ask_user"
}

/// What a typed reply to `call` answers: the option it names by number or by text, else the
/// words themselves.
fn typed_answer(call: &PendingCall, text: &str) -> String {
    let options = options_of(call);
    let typed = text.trim();
    if let Ok(number) = typed.trim_end_matches('.').parse::<usize>()
        && let Some(option) = number.checked_sub(1).and_then(|index| options.get(index))
    {
        return (*option).to_owned();
    }
    options
        .iter()
        .find(|option| option.trim().eq_ignore_ascii_case(typed))
        .map_or_else(|| text.to_owned(), |option| (*option).to_owned())
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
