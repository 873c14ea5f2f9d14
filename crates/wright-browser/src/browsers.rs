//! [`Browsers`]: the one browser of an installation and the per-conversation sessions in it.
//!
//! The browser starts on the first call that needs it. Each conversation gets its own
//! isolated context on first use; it is closed by [`Browsers::close`], by
//! [`Browsers::end_conversation`], after `idle_timeout` without calls, or to make room when
//! `max_contexts` are open (least recently used first). When the browser process dies, every
//! session is dropped and the next call of each conversation starts a new browser (if needed)
//! and a new context, and says in `session_lost` that the old one is gone.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::BrowserConfig;
use crate::error::BrowserError;
use crate::instance::Instance;
use crate::policy::RequestPolicy;
use crate::session::Session;
use crate::shapes::{
    ClickArgs, Done, EvaluateArgs, Evaluated, ExtractHtmlArgs, ExtractTextArgs, Html, NavigateArgs, Navigated, Reply,
    Screenshot, ScreenshotArgs, Text, TypeArgs,
};

/// Remembered "your session was lost" notices, for conversations that have not called since.
const LOST_NOTICES_CAP: usize = 1024;

/// The browser tools' back end. Cheap to clone; clones share the browser and sessions.
#[derive(Clone)]
pub struct Browsers {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Browsers {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Browsers").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

struct Inner {
    config: BrowserConfig,
    policy: Arc<dyn RequestPolicy>,
    /// Held across awaits while launching the browser or opening a context, so two first
    /// calls never start two browsers; hence tokio's Mutex. Operations on a page do not hold
    /// it (they hold their session's own lock).
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    instance: Option<Arc<Instance>>,
    sessions: HashMap<String, Arc<Session>>,
    /// Why a conversation's session ended without it asking, told on its next call.
    lost: HashMap<String, String>,
    /// The idle reaper task runs from the first launch until `Inner` is dropped.
    reaper_started: bool,
    last_activity: Option<Instant>,
}

impl Browsers {
    /// A manager that launches nothing until the first call.
    pub fn new(config: BrowserConfig, policy: Arc<dyn RequestPolicy>) -> Browsers {
        Browsers { inner: Arc::new(Inner { config, policy, state: tokio::sync::Mutex::new(State::default()) }) }
    }

    pub fn config(&self) -> &BrowserConfig {
        &self.inner.config
    }

    /// `browser_navigate`.
    pub async fn navigate(&self, conversation: &str, args: &NavigateArgs) -> Result<Reply<Navigated>, BrowserError> {
        check_url(&args.url)?;
        // Checked here too, not only by the interceptor, so that a refused URL never reaches
        // the browser and the agent gets the policy's reason as the error.
        if args.url != "about:blank" {
            self.inner
                .policy
                .check(&args.url)
                .await
                .map_err(|reason| BrowserError::Denied { url: args.url.clone(), reason })?;
        }
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "navigate", session_lost, session.navigate(args)).await
    }

    /// `browser_screenshot`.
    pub async fn screenshot(
        &self,
        conversation: &str,
        args: &ScreenshotArgs,
    ) -> Result<Reply<Screenshot>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "screenshot", session_lost, session.screenshot(args, self.config())).await
    }

    /// `browser_click`.
    pub async fn click(&self, conversation: &str, args: &ClickArgs) -> Result<Reply<Done>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "click", session_lost, session.click(args, self.config())).await
    }

    /// `browser_type`.
    pub async fn type_text(&self, conversation: &str, args: &TypeArgs) -> Result<Reply<Done>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "type", session_lost, session.type_text(args, self.config())).await
    }

    /// `browser_extract_text`.
    pub async fn extract_text(&self, conversation: &str, args: &ExtractTextArgs) -> Result<Reply<Text>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "extract_text", session_lost, session.extract_text(args, self.config())).await
    }

    /// `browser_extract_html`.
    pub async fn extract_html(&self, conversation: &str, args: &ExtractHtmlArgs) -> Result<Reply<Html>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "extract_html", session_lost, session.extract_html(args, self.config())).await
    }

    /// `browser_evaluate`.
    pub async fn evaluate(&self, conversation: &str, args: &EvaluateArgs) -> Result<Reply<Evaluated>, BrowserError> {
        let (session, session_lost) = self.inner.session_for(conversation).await?;
        self.finish(&session, "evaluate", session_lost, session.evaluate(args)).await
    }

    /// `browser_close`: closes the conversation's context. `{ok: true}` also when none was open.
    pub async fn close(&self, conversation: &str) -> Result<Reply<Done>, BrowserError> {
        let session = {
            let mut state = self.inner.state.lock().await;
            state.lost.remove(conversation);
            state.sessions.remove(conversation)
        };
        if let Some(session) = session {
            let _busy = session.busy.lock().await;
            session.dispose().await;
        }
        Ok(Reply { value: Done::OK, blocked: Vec::new(), session_lost: None })
    }

    /// The conversation ended (deleted, archived): release its context, remember nothing.
    pub async fn end_conversation(&self, conversation: &str) {
        // `close` cannot fail; its Result is for the tool's uniform signature.
        if let Err(error) = self.close(conversation).await {
            tracing::debug!(%error, "closing an ended conversation's browser context");
        }
    }

    /// Closes every context and the browser. Calls after this start a new browser.
    pub async fn shut_down(&self) {
        let (instance, sessions) = {
            let mut state = self.inner.state.lock().await;
            let sessions: Vec<_> = state.sessions.drain().map(|(_, session)| session).collect();
            (state.instance.take(), sessions)
        };
        drop(sessions);
        if let Some(instance) = instance {
            instance.shut_down().await;
        }
    }

    /// Number of conversation contexts open now.
    pub async fn open_contexts(&self) -> usize {
        self.inner.state.lock().await.sessions.len()
    }

    /// Process id of the launched browser, if one is running (none when connected by URL).
    pub async fn browser_pid(&self) -> Option<u32> {
        let state = self.inner.state.lock().await;
        state.instance.as_ref().filter(|instance| instance.is_alive()).and_then(|instance| instance.pid)
    }

    /// Starts the browser now instead of on the first call (to take the launch time early).
    pub async fn warm_up(&self) -> Result<(), BrowserError> {
        let mut state = self.inner.state.lock().await;
        self.inner.ensure_instance(&mut state).await.map(drop)
    }

    /// Runs one operation (a future over `session`, not started yet) under the session's lock
    /// and the call timeout, and wraps its value with what the agent should know.
    async fn finish<T: Serialize>(
        &self,
        session: &Arc<Session>,
        operation: &'static str,
        session_lost: Option<String>,
        work: impl Future<Output = Result<T, BrowserError>>,
    ) -> Result<Reply<T>, BrowserError> {
        let call_timeout = self.inner.config.call_timeout;
        let _busy = session.busy.lock().await;
        session.touch();
        let outcome = tokio::time::timeout(call_timeout, work).await;
        session.touch();
        let value = match outcome {
            Ok(Ok(value)) => value,
            Ok(Err(error)) => return Err(self.inner.after_error(session, error)),
            Err(_) => {
                let error = BrowserError::Timeout { operation, after: call_timeout };
                return Err(self.inner.after_error(session, error));
            }
        };
        let blocked = session.take_blocked().await;
        Ok(Reply { value, blocked, session_lost })
    }
}

impl Inner {
    /// The conversation's session, opening a browser and a context as needed. The second
    /// value is the notice to give when an earlier session of this conversation was lost.
    async fn session_for(self: &Arc<Self>, conversation: &str) -> Result<(Arc<Session>, Option<String>), BrowserError> {
        let mut state = self.state.lock().await;
        state.last_activity = Some(Instant::now());
        let instance = self.ensure_instance(&mut state).await?;
        if let Some(session) = state.sessions.get(conversation) {
            let session = Arc::clone(session);
            let lost = state.lost.remove(conversation);
            return Ok((session, lost));
        }
        if state.sessions.len() >= self.config.max_contexts.max(1) {
            let oldest = state
                .sessions
                .iter()
                .filter(|(_, session)| session.busy.try_lock().is_ok())
                .max_by_key(|(_, session)| session.idle_for())
                .map(|(name, _)| name.clone());
            match oldest {
                Some(name) => {
                    if let Some(evicted) = state.sessions.remove(&name) {
                        let notice = format!(
                            "closed to make room for another conversation ({} browser contexts at most)",
                            self.config.max_contexts
                        );
                        remember_lost(&mut state, name, notice);
                        tokio::spawn(async move { evicted.dispose().await });
                    }
                }
                None => {
                    return Err(BrowserError::Launch(format!(
                        "all {} browser contexts are busy; try again shortly",
                        self.config.max_contexts
                    )));
                }
            }
        }
        let session = match Session::open(Arc::clone(&instance)).await {
            Ok(session) => Arc::new(session),
            Err(error) => {
                if matches!(error, BrowserError::SessionLost(_)) {
                    instance.mark_dead();
                }
                return Err(error);
            }
        };
        state.sessions.insert(conversation.to_string(), Arc::clone(&session));
        let lost = state.lost.remove(conversation);
        Ok((session, lost))
    }

    /// The running browser; replaces a dead one, telling each of its conversations so.
    async fn ensure_instance(self: &Arc<Self>, state: &mut State) -> Result<Arc<Instance>, BrowserError> {
        if let Some(instance) = &state.instance {
            if instance.is_alive() {
                return Ok(Arc::clone(instance));
            }
            tracing::warn!(pid = ?instance.pid, "the browser stopped; starting a new one");
            state.instance = None;
            let names: Vec<String> = state.sessions.drain().map(|(name, _)| name).collect();
            for name in names {
                let notice = "the browser stopped (crashed or was killed); this conversation's pages, \
                              cookies and logins are gone and a new session was started"
                    .to_string();
                remember_lost(state, name, notice);
            }
        }
        let instance = Arc::new(Instance::start(&self.config, Arc::clone(&self.policy)).await?);
        state.instance = Some(Arc::clone(&instance));
        // A fresh browser counts as activity, or the reaper would close one started by
        // `warm_up` (no session yet) on its next tick.
        state.last_activity = Some(Instant::now());
        if !state.reaper_started {
            state.reaper_started = true;
            tokio::spawn(reap_idle(Arc::downgrade(self)));
        }
        Ok(instance)
    }

    /// Turns an error from a dead browser into `SessionLost` and forgets the browser, so the
    /// next call starts a new one; other errors pass through.
    fn after_error(&self, session: &Session, error: BrowserError) -> BrowserError {
        let dead = !session.instance.is_alive() || matches!(error, BrowserError::SessionLost(_));
        if !dead {
            return error;
        }
        session.instance.mark_dead();
        BrowserError::SessionLost(format!(
            "the browser stopped during this call ({error}); the next call starts a new session"
        ))
    }
}

fn remember_lost(state: &mut State, conversation: String, notice: String) {
    if state.lost.len() >= LOST_NOTICES_CAP {
        state.lost.clear();
    }
    state.lost.insert(conversation, notice);
}

/// Closes sessions idle for `idle_timeout`, and the browser itself once no session is left
/// and nothing has happened for as long. Runs from the first launch; stops when the
/// `Browsers` it serves is dropped (the weak reference no longer upgrades).
async fn reap_idle(inner: Weak<Inner>) {
    let period = match inner.upgrade() {
        Some(inner) => (inner.config.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30)),
        None => return,
    };
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        ticker.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let idle_timeout = inner.config.idle_timeout;
        let (expired, idle_instance) = {
            let mut state = inner.state.lock().await;
            let names: Vec<String> = state
                .sessions
                .iter()
                .filter(|(_, session)| session.idle_for() >= idle_timeout && session.busy.try_lock().is_ok())
                .map(|(name, _)| name.clone())
                .collect();
            let mut expired = Vec::new();
            for name in names {
                if let Some(session) = state.sessions.remove(&name) {
                    let notice = format!(
                        "closed after {}s without browser calls; pages and cookies are gone",
                        idle_timeout.as_secs()
                    );
                    remember_lost(&mut state, name, notice);
                    expired.push(session);
                }
            }
            let quiet = state.last_activity.is_none_or(|at| at.elapsed() >= idle_timeout);
            let idle_instance = if state.sessions.is_empty() && quiet { state.instance.take() } else { None };
            (expired, idle_instance)
        };
        for session in expired {
            session.dispose().await;
        }
        if let Some(instance) = idle_instance {
            tracing::debug!("closing the idle browser");
            instance.shut_down().await;
        }
    }
}

/// The browser tools open web pages only: http(s), plus `about:blank` to clear the page.
fn check_url(url: &str) -> Result<(), BrowserError> {
    if url == "about:blank" {
        return Ok(());
    }
    let scheme = url.split_once(':').map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") if url.len() > scheme.as_deref().map_or(0, str::len) + 3 => Ok(()),
        Some("http" | "https") => Err(BrowserError::InvalidUrl { url: url.to_string(), reason: "no host".to_string() }),
        _ => Err(BrowserError::Denied {
            url: url.to_string(),
            reason: "only http and https URLs can be opened in the browser".to_string(),
        }),
    }
}
