//! A fake Telegram Bot API on 127.0.0.1, for tests. It speaks the real wire (`POST
//! /bot<token>/<method>` with JSON, answers in the `{ok, result}` / `{ok: false, error_code,
//! description, parameters}` envelope) and refuses what Telegram refuses, with Telegram's
//! descriptions:
//!
//! - a wrong token: 401 `Unauthorized`; an unknown method: 404 `Not Found`;
//! - a chat nobody started: `Bad Request: chat not found`;
//! - HTML that does not parse: `Bad Request: can't parse entities: …`; an unknown parse mode;
//! - an empty text, or one over 4096 characters once parsed: `Bad Request: message is too long`;
//! - `callback_data` over 64 bytes: `Bad Request: BUTTON_DATA_INVALID`;
//! - an edit of a message that does not exist, is not the bot's, or would not change;
//! - a callback query answered twice or unknown, or later than Telegram's deadline (~15 s after
//!   the press: "query is too old");
//! - a keyboard button without text (`BUTTON_TEXT_EMPTY`);
//! - flood control: more than `per_chat_per_second` messages and edits in one chat within a
//!   second answer 429 with `retry_after`, and every request to that chat before the wait is
//!   over is refused again and counted as a violation (a client that respects `retry_after` has
//!   none);
//! - two getUpdates at once: the earlier ends with 409 `Conflict: terminated by other getUpdates
//!   request`;
//! - outages ([`FakeBotApi::set_outage`], also after a number of accepted messages with
//!   [`FakeBotApi::outage_after`]): 502 with an HTML page, as Telegram's front end answers, or
//!   connections refused — new ones closed at once, open keep-alive ones reset on their next use.
//!
//! A test plays the person: [`FakeBotApi::send_text`] queues a message update,
//! [`FakeBotApi::press`] a button press on a message the bot sent; it reads what the bot did
//! with [`FakeBotApi::messages`] and waits for it with [`FakeBotApi::wait_for`] (woken by every
//! change, never by a timer).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::entities::parse_html;
use crate::wire::{
    AnswerCallbackQuery, CallbackQuery, Chat, ChatType, EditMessageReplyMarkup, EditMessageText, GetUpdates,
    InlineKeyboardMarkup, MaybeInaccessibleMessage, Message, MessageEntity, MessageReactionUpdated, ParseMode,
    ReactionType, SendMessage, Update, User,
};
use crate::{CALLBACK_DATA_LIMIT, MESSAGE_LIMIT};

/// The bot's own user, as getMe answers.
pub const BOT_USER_ID: i64 = 7_000_000_001;

/// Flood control of the fake.
#[derive(Debug, Clone, Copy)]
pub struct FakeLimits {
    /// Messages and edits one chat may receive within a second.
    pub per_chat_per_second: usize,
    /// What a 429 tells the client to wait, seconds.
    pub retry_after_secs: u64,
    /// How long after a press its callback query may still be answered; later answers are
    /// refused "query is too old" (Telegram's deadline is about 15 s; never set it longer).
    pub callback_answer_deadline: Duration,
}

impl Default for FakeLimits {
    fn default() -> Self {
        Self { per_chat_per_second: 20, retry_after_secs: 1, callback_answer_deadline: Duration::from_secs(15) }
    }
}

/// How the fake is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outage {
    #[default]
    None,
    /// Every request answered 502 with an HTML page (Telegram's front end, API down).
    BadGateway,
    /// No connection: new ones are closed at once, open ones reset on their next use.
    Refused,
}

/// A message in a chat, as the fake keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    pub message_id: i64,
    /// Sent by the bot (else by the person).
    pub from_bot: bool,
    /// As sent: HTML for the bot's messages with parse_mode HTML.
    pub raw: String,
    /// The visible text, entities parsed.
    pub text: String,
    pub reply_markup: Option<InlineKeyboardMarkup>,
    /// How many times the bot edited it.
    pub edits: usize,
}

impl ChatMessage {
    /// The `callback_data` of every button, row by row.
    pub fn buttons(&self) -> Vec<(String, String)> {
        self.reply_markup
            .iter()
            .flat_map(|markup| markup.inline_keyboard.iter().flatten())
            .map(|button| (button.text.clone(), button.callback_data.clone().unwrap_or_default()))
            .collect()
    }
}

/// What a test can look at.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// By chat id.
    pub chats: BTreeMap<i64, Vec<ChatMessage>>,
    /// Every answerCallbackQuery, in order.
    pub callback_answers: Vec<AnswerCallbackQuery>,
    /// Every refusal the fake answered, as `method: description`.
    pub refusals: Vec<String>,
    /// Requests made to a chat while it was told to wait (429 `retry_after`).
    pub violations: usize,
    /// Updates not yet confirmed by a getUpdates with a higher offset.
    pub pending_updates: usize,
    /// How many getUpdates calls arrived.
    pub polls: usize,
}

impl Snapshot {
    pub fn messages(&self, chat: i64) -> &[ChatMessage] {
        self.chats.get(&chat).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The bot's messages in `chat`.
    pub fn bot_messages(&self, chat: i64) -> Vec<&ChatMessage> {
        self.messages(chat).iter().filter(|message| message.from_bot).collect()
    }
}

#[derive(Default)]
struct ChatRate {
    recent: VecDeque<Instant>,
    wait_until: Option<Instant>,
}

#[derive(Default)]
struct FakeState {
    snapshot: Snapshot,
    users: HashMap<i64, User>,
    /// As sent: JSON, so a test can queue an update Wright's types do not know.
    updates: VecDeque<Value>,
    next_update_id: i64,
    next_message_id: HashMap<i64, i64>,
    /// Callback query ids not answered yet, with when the press happened.
    open_queries: HashMap<String, Instant>,
    next_query: u64,
    rates: HashMap<i64, ChatRate>,
    /// Chats whose next request gets a 429 (set by a test).
    forced_waits: HashMap<i64, u64>,
    /// Bumped by every getUpdates, so an earlier one waiting learns it was superseded.
    poll_generation: u64,
    /// An outage now (see [`Outage`]).
    outage: Outage,
    /// An outage that begins once this many more messages and edits were accepted.
    outage_after: Option<(usize, Outage)>,
    /// The outage that begins with the next request (after the last accepted one's answer
    /// has gone out: a refused connection must not swallow it).
    outage_next: Option<Outage>,
    /// A 429 with this `retry_after` (seconds) once this many more were accepted.
    rate_limit_after: Option<(usize, u64)>,
    /// Every keyboard refused with this description (a test of what Wright does when
    /// Telegram refuses one, for whatever reason).
    refuse_keyboards: Option<String>,
    /// The `allowed_updates` of the last getUpdates that named them (Telegram keeps them
    /// between calls); `None`: never named, Telegram's default (no `message_reaction`).
    allowed_updates: Option<Vec<String>>,
    /// Each person's current reaction per (chat, message), for `old_reaction`.
    reactions: HashMap<(i64, i64), Vec<String>>,
}

/// Reactions a person can set in a private chat with a bot (part of Telegram's standard set).
const STANDARD_REACTIONS: &[&str] = &["👍", "👎", "❤", "🔥", "🎉", "🤔", "😢", "👏", "😁", "🙏", "👌"];

struct Shared {
    token: String,
    limits: FakeLimits,
    state: Mutex<FakeState>,
    changed: tokio::sync::Notify,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running fake. Dropping it stops the server.
pub struct FakeBotApi {
    url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeBotApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeBotApi {
    /// Starts a fake that accepts `token`, on 127.0.0.1 at a free port.
    pub async fn start(token: &str, limits: FakeLimits) -> Self {
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            limits,
            state: Mutex::new(FakeState { next_update_id: 100_000, ..FakeState::default() }),
            changed: tokio::sync::Notify::new(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let app = Router::new().route("/{bot}/{method}", axum::routing::post(handle)).with_state(Arc::clone(&shared));
        let listener = GatedListener { inner: listener, shared: Arc::clone(&shared) };
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "fake Bot API stopped");
            }
        });
        Self { url, shared, server }
    }

    /// The base URL to configure: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A person with a private chat with the bot (id = the user's id).
    pub fn user(&self, id: i64, first_name: &str) -> User {
        let user = User {
            id,
            is_bot: false,
            first_name: first_name.to_owned(),
            last_name: None,
            username: None,
            language_code: Some("en".to_owned()),
        };
        self.shared.state().users.insert(id, user.clone());
        user
    }

    /// The person types `text` in their chat with the bot; returns the update's id.
    pub fn send_text(&self, from: &User, text: &str) -> i64 {
        let update_id = {
            let mut state = self.shared.state();
            let message_id = next_message_id(&mut state, from.id);
            let entities = text.starts_with('/').then(|| {
                let length = text.find(char::is_whitespace).unwrap_or(text.len());
                vec![MessageEntity {
                    kind: "bot_command".to_owned(),
                    offset: 0,
                    length: crate::entities::utf16_len(&text[..length]) as i64,
                    url: None,
                    language: None,
                }]
            });
            let message = Message {
                message_id,
                from: Some(from.clone()),
                chat: private_chat(from),
                date: unix_now(),
                text: Some(text.to_owned()),
                entities,
                reply_markup: None,
            };
            state.snapshot.chats.entry(from.id).or_default().push(ChatMessage {
                message_id,
                from_bot: false,
                raw: text.to_owned(),
                text: text.to_owned(),
                reply_markup: None,
                edits: 0,
            });
            push_update(&mut state, |update_id| Update {
                update_id,
                message: Some(message),
                edited_message: None,
                callback_query: None,
                message_reaction: None,
            })
        };
        self.shared.changed.notify_waiters();
        update_id
    }

    /// The person presses the button with `callback_data` on the bot's message `message_id`.
    /// Panics when no such button is on that message: a real client can press only what it shows.
    pub fn press(&self, from: &User, message_id: i64, callback_data: &str) -> String {
        let query_id = {
            let mut state = self.shared.state();
            let message = state
                .snapshot
                .messages(from.id)
                .iter()
                .find(|message| message.message_id == message_id && message.from_bot)
                .cloned()
                .unwrap_or_else(|| panic!("no bot message {message_id} in chat {}", from.id));
            assert!(
                message.buttons().iter().any(|(_, data)| data == callback_data),
                "message {message_id} has no button {callback_data:?}: {:?}",
                message.buttons()
            );
            state.next_query += 1;
            let query_id = format!("{}{:08}", from.id, state.next_query);
            state.open_queries.insert(query_id.clone(), Instant::now());
            let query = CallbackQuery {
                id: query_id.clone(),
                from: from.clone(),
                message: Some(MaybeInaccessibleMessage { message_id, chat: private_chat(from), date: unix_now() }),
                chat_instance: format!("-{}", from.id),
                data: Some(callback_data.to_owned()),
            };
            push_update(&mut state, |update_id| Update {
                update_id,
                message: None,
                edited_message: None,
                callback_query: Some(query),
                message_reaction: None,
            });
            query_id
        };
        self.shared.changed.notify_waiters();
        query_id
    }

    /// The person sets their reaction on message `message_id` of their chat to `emoji` (or
    /// removes it, with `None`). Panics on a message that does not exist or an emoji outside
    /// Telegram's standard reactions: a client offers only those. As Telegram does, the update
    /// exists only when the bot asked for `message_reaction` updates (`allowed_updates`);
    /// returns its id, or `None` when the bot did not ask.
    pub fn react(&self, from: &User, message_id: i64, emoji: Option<&str>) -> Option<i64> {
        let update_id = {
            let mut state = self.shared.state();
            assert!(
                state.snapshot.messages(from.id).iter().any(|message| message.message_id == message_id),
                "no message {message_id} in chat {}",
                from.id
            );
            if let Some(emoji) = emoji {
                assert!(STANDARD_REACTIONS.contains(&emoji), "{emoji:?} is not one of Telegram's standard reactions");
            }
            let new: Vec<String> = emoji.into_iter().map(str::to_owned).collect();
            let old = state.reactions.insert((from.id, message_id), new.clone()).unwrap_or_default();
            let asked = state
                .allowed_updates
                .as_ref()
                .is_some_and(|allowed| allowed.iter().any(|kind| kind == "message_reaction"));
            if !asked {
                return None;
            }
            let emoji = |list: Vec<String>| list.into_iter().map(|emoji| ReactionType::Emoji { emoji }).collect();
            let reaction = MessageReactionUpdated {
                chat: private_chat(from),
                message_id,
                user: Some(from.clone()),
                date: unix_now(),
                old_reaction: emoji(old),
                new_reaction: emoji(new),
            };
            push_update(&mut state, |update_id| Update {
                update_id,
                message: None,
                edited_message: None,
                callback_query: None,
                message_reaction: Some(reaction),
            })
        };
        self.shared.changed.notify_waiters();
        Some(update_id)
    }

    /// Starts or ends a 502 outage (see [`Outage::BadGateway`]).
    pub fn set_down(&self, down: bool) {
        self.set_outage(if down { Outage::BadGateway } else { Outage::None });
    }

    /// Starts (or, with [`Outage::None`], ends) an outage.
    pub fn set_outage(&self, outage: Outage) {
        let mut state = self.shared.state();
        state.outage = outage;
        state.outage_after = None;
        state.outage_next = None;
    }

    /// An outage begins once `messages` more messages and edits have been accepted: a test
    /// places it mid-answer without racing the bot.
    pub fn outage_after(&self, messages: usize, outage: Outage) {
        self.shared.state().outage_after = Some((messages, outage));
    }

    /// The chat is told to wait `seconds` (429) once `messages` more messages and edits to it
    /// have been accepted: a long flood wait placed mid-answer.
    pub fn rate_limit_after(&self, messages: usize, seconds: u64) {
        self.shared.state().rate_limit_after = Some((messages, seconds));
    }

    /// From now on every message or edit with a keyboard is refused with `description`
    /// (None: keyboards are checked as usual again).
    pub fn refuse_keyboards(&self, description: Option<&str>) {
        self.shared.state().refuse_keyboards = description.map(str::to_owned);
    }

    /// Queues an update given as JSON (built from its update id), as Telegram would send it —
    /// also one Wright's types do not know. Returns the update's id.
    pub fn push_raw_update(&self, build: impl FnOnce(i64) -> Value) -> i64 {
        let update_id = {
            let mut state = self.shared.state();
            state.next_update_id += 1;
            let update_id = state.next_update_id;
            state.updates.push_back(build(update_id));
            state.snapshot.pending_updates = state.updates.len();
            update_id
        };
        self.shared.changed.notify_waiters();
        update_id
    }

    /// The next request to `chat` is answered 429 with `retry_after = seconds`.
    pub fn force_retry_after(&self, chat: i64, seconds: u64) {
        self.shared.state().forced_waits.insert(chat, seconds);
    }

    pub fn snapshot(&self) -> Snapshot {
        self.shared.state().snapshot.clone()
    }

    /// Waits until `check` finds what it looks for in the fake's state, re-checking on every
    /// change; panics with `what` after `timeout`.
    pub async fn wait_for<T>(&self, what: &str, timeout: Duration, check: impl Fn(&Snapshot) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let state = self.shared.state();
                if let Some(found) = check(&state.snapshot) {
                    return found;
                }
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let snapshot = self.snapshot();
                panic!("timed out waiting for {what}; the fake holds {snapshot:#?}");
            }
        }
    }
}

fn private_chat(user: &User) -> Chat {
    Chat {
        id: user.id,
        kind: ChatType::Private,
        title: None,
        username: user.username.clone(),
        first_name: Some(user.first_name.clone()),
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|since| since.as_secs() as i64).unwrap_or(0)
}

fn next_message_id(state: &mut FakeState, chat: i64) -> i64 {
    let next = state.next_message_id.entry(chat).or_insert(1);
    let id = *next;
    *next += 1;
    id
}

fn push_update(state: &mut FakeState, build: impl FnOnce(i64) -> Update) -> i64 {
    state.next_update_id += 1;
    let update_id = state.next_update_id;
    state.updates.push_back(serde_json::to_value(build(update_id)).unwrap_or(Value::Null));
    state.snapshot.pending_updates = state.updates.len();
    update_id
}

fn ok(result: Value) -> Response {
    (StatusCode::OK, axum::Json(json!({ "ok": true, "result": result }))).into_response()
}

fn refuse(shared: &Shared, method: &str, code: u16, description: &str, retry_after: Option<u64>) -> Response {
    shared.state().snapshot.refusals.push(format!("{method}: {description}"));
    shared.changed.notify_waiters();
    let mut body = json!({ "ok": false, "error_code": code, "description": description });
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({ "retry_after": seconds });
    }
    (StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST), axum::Json(body)).into_response()
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let outage = {
        let mut state = shared.state();
        if let Some(outage) = state.outage_next.take() {
            state.outage = outage;
        }
        state.outage
    };
    if outage == Outage::Refused {
        // Read before the outage began; its answer cannot go out (the stream is reset).
        shared.state().snapshot.refusals.push("connection reset".to_owned());
        shared.changed.notify_waiters();
        return StatusCode::BAD_GATEWAY.into_response();
    }
    if outage == Outage::BadGateway {
        shared.state().snapshot.refusals.push(format!("{method}: 502 Bad Gateway"));
        shared.changed.notify_waiters();
        let page = "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>";
        return (StatusCode::BAD_GATEWAY, [(axum::http::header::CONTENT_TYPE, "text/html")], page).into_response();
    }
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return refuse(&shared, &method, 401, "Unauthorized", None);
    }
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(body) => body,
            Err(_) => return refuse(&shared, &method, 400, "Bad Request: can't parse JSON object", None),
        }
    };
    let response = match method.as_str() {
        "getMe" => Ok(ok(json!({
            "id": BOT_USER_ID, "is_bot": true, "first_name": "Wright", "username": "wright_test_bot",
            "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false
        }))),
        "getUpdates" => return get_updates(&shared, body).await,
        "sendMessage" => send_message(&shared, body),
        "editMessageText" => edit_message_text(&shared, body),
        "editMessageReplyMarkup" => edit_reply_markup(&shared, body),
        "answerCallbackQuery" => answer_callback_query(&shared, body),
        _ => Err((404, "Not Found".to_owned(), None)),
    };
    shared.changed.notify_waiters();
    match response {
        Ok(response) => response,
        Err((code, description, retry_after)) => refuse(&shared, &method, code, &description, retry_after),
    }
}

type Refusal = (u16, String, Option<u64>);

fn bad(description: &str) -> Refusal {
    (400, format!("Bad Request: {description}"), None)
}

fn parse<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, Refusal> {
    serde_json::from_value(body).map_err(|error| bad(&format!("invalid request: {error}")))
}

async fn get_updates(shared: &Arc<Shared>, body: Value) -> Response {
    let request: GetUpdates = match parse(body) {
        Ok(request) => request,
        Err((code, description, _)) => return refuse(shared, "getUpdates", code, &description, None),
    };
    let generation = {
        let mut state = shared.state();
        state.poll_generation += 1;
        state.snapshot.polls += 1;
        if let Some(allowed) = &request.allowed_updates {
            state.allowed_updates = Some(allowed.clone());
        }
        if let Some(offset) = request.offset {
            state.updates.retain(|update| update["update_id"].as_i64().is_none_or(|id| id >= offset));
            state.snapshot.pending_updates = state.updates.len();
        }
        state.poll_generation
    };
    // Wake an earlier poll so it learns it was superseded.
    shared.changed.notify_waiters();
    // Long polling, bounded so a test never hangs on it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(request.timeout.min(30));
    loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        {
            let state = shared.state();
            if state.poll_generation != generation {
                drop(state);
                return refuse(
                    shared,
                    "getUpdates",
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                    None,
                );
            }
            let limit = request.limit.unwrap_or(100).clamp(1, 100) as usize;
            let ready: Vec<Value> = state.updates.iter().take(limit).cloned().collect();
            if !ready.is_empty() {
                return ok(Value::Array(ready));
            }
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return ok(json!([]));
        }
    }
}

/// Flood control for a request to `chat`: counts it, or says how long to wait.
fn admit(shared: &Shared, state: &mut FakeState, chat: i64) -> Result<(), Refusal> {
    let now = Instant::now();
    let limits = shared.limits;
    let rate = state.rates.entry(chat).or_default();
    if let Some(until) = rate.wait_until {
        if now < until {
            state.snapshot.violations += 1;
            let left = until.duration_since(now).as_secs().max(1);
            return Err((429, format!("Too Many Requests: retry after {left}"), Some(left)));
        }
        rate.wait_until = None;
    }
    if let Some(seconds) = state.forced_waits.remove(&chat) {
        let rate = state.rates.entry(chat).or_default();
        rate.wait_until = Some(now + Duration::from_secs(seconds));
        return Err((429, format!("Too Many Requests: retry after {seconds}"), Some(seconds)));
    }
    let rate = state.rates.entry(chat).or_default();
    while rate.recent.front().is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(1)) {
        rate.recent.pop_front();
    }
    if rate.recent.len() >= limits.per_chat_per_second {
        rate.wait_until = Some(now + Duration::from_secs(limits.retry_after_secs));
        let seconds = limits.retry_after_secs;
        return Err((429, format!("Too Many Requests: retry after {seconds}"), Some(seconds)));
    }
    rate.recent.push_back(now);
    if let Some((left, seconds)) = state.rate_limit_after.take() {
        if left <= 1 {
            state.forced_waits.insert(chat, seconds);
        } else {
            state.rate_limit_after = Some((left - 1, seconds));
        }
    }
    if let Some((left, outage)) = state.outage_after.take() {
        // This request is accepted and answered; the outage begins with the next one.
        if left <= 1 {
            state.outage_next = Some(outage);
        } else {
            state.outage_after = Some((left - 1, outage));
        }
    }
    Ok(())
}

/// Telegram's checks of a message's text and buttons; the visible text.
fn check_text(
    text: &str,
    parse_mode: Option<ParseMode>,
    markup: Option<&InlineKeyboardMarkup>,
) -> Result<String, Refusal> {
    let visible = match parse_mode {
        None => text.to_owned(),
        Some(ParseMode::Html) => {
            parse_html(text).map_err(|problem| bad(&format!("can't parse entities: {problem}")))?.text
        }
        // Wright never sends MarkdownV2; the fake does not pretend to check it.
        Some(ParseMode::MarkdownV2) => return Err(bad("unsupported parse_mode in the fake")),
    };
    if visible.trim().is_empty() {
        return Err(bad("message text is empty"));
    }
    if crate::entities::utf16_len(&visible) > MESSAGE_LIMIT {
        return Err(bad("message is too long"));
    }
    for button in markup.iter().flat_map(|markup| markup.inline_keyboard.iter().flatten()) {
        if button.text.trim().is_empty() {
            return Err(bad("BUTTON_TEXT_EMPTY"));
        }
        match (&button.callback_data, &button.url) {
            (Some(data), None) if !data.is_empty() && data.len() <= CALLBACK_DATA_LIMIT => {}
            (Some(_), None) => return Err(bad("BUTTON_DATA_INVALID")),
            (None, Some(url)) if url.starts_with("https://") || url.starts_with("http://") => {
                // Telegram refuses addresses it cannot open for the person: loopback among them.
                if url.contains("://127.") || url.contains("://localhost") {
                    return Err(bad(&format!("inline keyboard button URL '{url}' is invalid: Wrong HTTP URL")));
                }
            }
            _ => {
                return Err(bad(
                    "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
                ));
            }
        }
    }
    Ok(visible)
}

/// The refusal a test asked for, when the request carries a keyboard.
fn refuse_keyboard(state: &FakeState, markup: Option<&InlineKeyboardMarkup>) -> Result<(), Refusal> {
    match (&state.refuse_keyboards, markup) {
        (Some(description), Some(markup)) if !markup.inline_keyboard.is_empty() => Err(bad(description)),
        _ => Ok(()),
    }
}

fn send_message(shared: &Shared, body: Value) -> Result<Response, Refusal> {
    let request: SendMessage = parse(body)?;
    let mut state = shared.state();
    let Some(user) = state.users.get(&request.chat_id).cloned() else {
        return Err(bad("chat not found"));
    };
    if !state.snapshot.chats.contains_key(&request.chat_id) {
        // The person exists but never started the bot: a bot cannot write first.
        return Err((403, "Forbidden: bot can't initiate conversation with a user".to_owned(), None));
    }
    let visible = check_text(&request.text, request.parse_mode, request.reply_markup.as_ref())?;
    refuse_keyboard(&state, request.reply_markup.as_ref())?;
    admit(shared, &mut state, request.chat_id)?;
    let message_id = next_message_id(&mut state, request.chat_id);
    state.snapshot.chats.entry(request.chat_id).or_default().push(ChatMessage {
        message_id,
        from_bot: true,
        raw: request.text.clone(),
        text: visible.clone(),
        reply_markup: request.reply_markup.clone(),
        edits: 0,
    });
    Ok(ok(bot_message_json(message_id, &user, &visible, request.reply_markup.as_ref())))
}

fn bot_message_json(message_id: i64, user: &User, text: &str, markup: Option<&InlineKeyboardMarkup>) -> Value {
    let mut message = json!({
        "message_id": message_id,
        "from": { "id": BOT_USER_ID, "is_bot": true, "first_name": "Wright", "username": "wright_test_bot" },
        "chat": private_chat(user),
        "date": unix_now(),
        "text": text,
    });
    if let Some(markup) = markup {
        message["reply_markup"] = serde_json::to_value(markup).unwrap_or(Value::Null);
    }
    message
}

fn edit_message_text(shared: &Shared, body: Value) -> Result<Response, Refusal> {
    let request: EditMessageText = parse(body)?;
    let mut state = shared.state();
    let Some(user) = state.users.get(&request.chat_id).cloned() else {
        return Err(bad("chat not found"));
    };
    let visible = check_text(&request.text, request.parse_mode, request.reply_markup.as_ref())?;
    refuse_keyboard(&state, request.reply_markup.as_ref())?;
    let existing = state
        .snapshot
        .messages(request.chat_id)
        .iter()
        .find(|message| message.message_id == request.message_id)
        .cloned()
        .ok_or_else(|| bad("message to edit not found"))?;
    if !existing.from_bot {
        return Err(bad("message can't be edited"));
    }
    if existing.raw == request.text && existing.reply_markup == request.reply_markup {
        return Err(bad(
            "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
        ));
    }
    admit(shared, &mut state, request.chat_id)?;
    if let Some(message) = state
        .snapshot
        .chats
        .get_mut(&request.chat_id)
        .and_then(|messages| messages.iter_mut().find(|message| message.message_id == request.message_id))
    {
        message.raw = request.text.clone();
        message.text = visible.clone();
        message.reply_markup = request.reply_markup.clone();
        message.edits += 1;
    }
    Ok(ok(bot_message_json(request.message_id, &user, &visible, request.reply_markup.as_ref())))
}

fn edit_reply_markup(shared: &Shared, body: Value) -> Result<Response, Refusal> {
    let request: EditMessageReplyMarkup = parse(body)?;
    let mut state = shared.state();
    let Some(user) = state.users.get(&request.chat_id).cloned() else {
        return Err(bad("chat not found"));
    };
    let existing = state
        .snapshot
        .messages(request.chat_id)
        .iter()
        .find(|message| message.message_id == request.message_id)
        .cloned()
        .ok_or_else(|| bad("message to edit not found"))?;
    if !existing.from_bot {
        return Err(bad("message can't be edited"));
    }
    if existing.reply_markup == request.reply_markup {
        return Err(bad(
            "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
        ));
    }
    admit(shared, &mut state, request.chat_id)?;
    if let Some(message) = state
        .snapshot
        .chats
        .get_mut(&request.chat_id)
        .and_then(|messages| messages.iter_mut().find(|message| message.message_id == request.message_id))
    {
        message.reply_markup = request.reply_markup.clone();
        message.edits += 1;
    }
    Ok(ok(bot_message_json(request.message_id, &user, &existing.text, request.reply_markup.as_ref())))
}

fn answer_callback_query(shared: &Shared, body: Value) -> Result<Response, Refusal> {
    let request: AnswerCallbackQuery = parse(body)?;
    let mut state = shared.state();
    if request.text.as_ref().is_some_and(|text| text.chars().count() > 200) {
        return Err(bad("MESSAGE_TOO_LONG"));
    }
    let too_old = || bad("query is too old and response timeout expired or query ID is invalid");
    let pressed = state.open_queries.remove(&request.callback_query_id).ok_or_else(too_old)?;
    if pressed.elapsed() > shared.limits.callback_answer_deadline {
        return Err(too_old());
    }
    state.snapshot.callback_answers.push(request);
    Ok(ok(Value::Bool(true)))
}

/// The fake's listener: while [`Outage::Refused`], a new connection is closed at once and an
/// open one fails on its next read or write, as when nothing listens at Telegram's address.
struct GatedListener {
    inner: tokio::net::TcpListener,
    shared: Arc<Shared>,
}

impl GatedListener {
    fn refused(shared: &Shared) -> bool {
        shared.state().outage == Outage::Refused
    }
}

impl axum::serve::Listener for GatedListener {
    type Io = GatedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, address) = axum::serve::Listener::accept(&mut self.inner).await;
            if Self::refused(&self.shared) {
                self.shared.state().snapshot.refusals.push("connection refused".to_owned());
                self.shared.changed.notify_waiters();
                drop(stream);
                continue;
            }
            return (GatedStream { inner: stream, shared: Arc::clone(&self.shared) }, address);
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that breaks while the fake refuses connections.
struct GatedStream {
    inner: tokio::net::TcpStream,
    shared: Arc<Shared>,
}

impl GatedStream {
    fn check(&self) -> std::io::Result<()> {
        if GatedListener::refused(&self.shared) {
            self.shared.state().snapshot.refusals.push("connection reset".to_owned());
            self.shared.changed.notify_waiters();
            return Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the fake refuses connections"));
        }
        Ok(())
    }
}

impl tokio::io::AsyncRead for GatedStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
        buffer: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Err(error) = this.check() {
            return std::task::Poll::Ready(Err(error));
        }
        std::pin::Pin::new(&mut this.inner).poll_read(context, buffer)
    }
}

impl tokio::io::AsyncWrite for GatedStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
        bytes: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Err(error) = this.check() {
            return std::task::Poll::Ready(Err(error));
        }
        std::pin::Pin::new(&mut this.inner).poll_write(context, bytes)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(context)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(context)
    }
}
