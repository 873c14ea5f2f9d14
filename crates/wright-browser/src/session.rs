//! One conversation's browser state: an isolated browser context (its own cookies, storage and
//! cache) with one page, and the operations the tools perform on that page.
//!
//! Page-side work is done with small scripts that receive the selector as a JSON string
//! literal, so a selector can never break out into code; input events (clicks, keys) go
//! through CDP's `Input` domain so pages see real, trusted events.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventResponseReceived, EventWebSocketCreated, LoaderId, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, EventFrameStartedLoading, EventLifecycleEvent, NavigateParams,
    Viewport as ClipRect,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use crate::config::BrowserConfig;
use crate::error::BrowserError;
use crate::instance::Instance;
use crate::policy::BlockedRequest;
use crate::shapes::{
    ClickArgs, Done, EvaluateArgs, Evaluated, ExtractHtmlArgs, ExtractTextArgs, Html, NavigateArgs, Navigated,
    Screenshot, ScreenshotArgs, Text, TypeArgs, WaitUntil,
};

pub(crate) struct Session {
    pub(crate) instance: Arc<Instance>,
    pub(crate) context_id: BrowserContextId,
    page: Page,
    /// Last time a call started or finished; read by the idle reaper.
    last_used: Mutex<Instant>,
    /// One operation at a time per conversation: the agent's calls are ordered, and two
    /// interleaved navigations on one page would report each other's results. Held across
    /// awaits, hence tokio's Mutex.
    pub(crate) busy: tokio::sync::Mutex<()>,
    /// Reports the page's WebSockets the policy denies (see [`watch_websockets`]).
    websocket_watch: tokio::task::AbortHandle,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.websocket_watch.abort();
    }
}

/// CDP Fetch interception never sees WebSockets; the egress proxy refuses the denied ones, but
/// the page only learns that the socket failed. So that the agent is told too, each WebSocket
/// the page opens is judged by the same policy and a denied one is listed in `blocked` (as
/// `ws://…` with resource type `websocket`). Sockets of out-of-process frames and workers are
/// refused by the proxy all the same, but not listed.
async fn watch_websockets(instance: &Instance, page: &Page) -> Result<tokio::task::AbortHandle, BrowserError> {
    let mut created = page.event_listener::<EventWebSocketCreated>().await?;
    let policy = Arc::clone(&instance.policy);
    let blocked = Arc::clone(&instance.blocked);
    let frame_id = page.target_id().as_ref().to_string();
    let task = tokio::spawn(async move {
        while let Some(event) = created.next().await {
            let (policy, blocked, frame_id) = (Arc::clone(&policy), Arc::clone(&blocked), frame_id.clone());
            // One task per socket: a check may resolve a name and must not hold up the next.
            tokio::spawn(async move {
                if let Err(reason) = policy.check(&as_http(&event.url)).await {
                    let request = BlockedRequest { url: event.url.clone(), resource_type: "websocket".into(), reason };
                    blocked.push(frame_id, request);
                }
            });
        }
    });
    Ok(task.abort_handle())
}

/// The http(s) URL a WebSocket handshake is made to, which is what the policy judges.
fn as_http(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("wss://") {
        format!("https://{rest}")
    } else if let Some(rest) = url.strip_prefix("ws://") {
        format!("http://{rest}")
    } else {
        url.to_owned()
    }
}

impl Session {
    /// Makes a fresh context and its page. The page exists before any request can be made,
    /// and interception is already on for the whole browser.
    pub(crate) async fn open(instance: Arc<Instance>) -> Result<Session, BrowserError> {
        let context_id = instance.browser.create_browser_context(CreateBrowserContextParams::default()).await?;
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = Some(context_id.clone());
        let page = match instance.browser.new_page(params).await {
            Ok(page) => page,
            Err(error) => {
                // Do not leak the context when the page could not be made.
                if let Err(dispose_error) = instance.browser.dispose_browser_context(context_id).await {
                    tracing::debug!(%dispose_error, "disposing a context without page");
                }
                return Err(error.into());
            }
        };
        let websocket_watch = match watch_websockets(&instance, &page).await {
            Ok(watch) => watch,
            Err(error) => {
                if let Err(dispose_error) = instance.browser.dispose_browser_context(context_id).await {
                    tracing::debug!(%dispose_error, "disposing a context whose page could not be watched");
                }
                return Err(error);
            }
        };
        Ok(Session {
            instance,
            context_id,
            page,
            last_used: Mutex::new(Instant::now()),
            busy: tokio::sync::Mutex::new(()),
            websocket_watch,
        })
    }

    pub(crate) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Instant::now();
    }

    pub(crate) fn idle_for(&self) -> Duration {
        self.last_used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).elapsed()
    }

    /// Closes the context and with it its page, cookies and storage.
    pub(crate) async fn dispose(&self) {
        if !self.instance.is_alive() {
            return;
        }
        let dispose = self.instance.browser.dispose_browser_context(self.context_id.clone());
        match tokio::time::timeout(Duration::from_secs(5), dispose).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::debug!(%error, "disposing browser context"),
            Err(_) => tracing::debug!("disposing browser context timed out"),
        }
    }

    /// Requests of this page (any of its frames) that were blocked since the last collection.
    pub(crate) async fn take_blocked(&self) -> Vec<BlockedRequest> {
        let mut frame_ids = vec![self.page.target_id().as_ref().to_string()];
        if let Ok(frames) = self.page.frames().await {
            frame_ids.extend(frames.into_iter().map(|frame| frame.as_ref().to_string()));
        }
        self.instance.blocked.take_for(&frame_ids)
    }

    pub(crate) async fn navigate(&self, args: &NavigateArgs) -> Result<Navigated, BrowserError> {
        let main_frame = match self.page.mainframe().await? {
            Some(frame) => frame,
            None => self.page.target_id().as_ref().to_string().into(),
        };
        // Subscribe before navigating so that no event of this navigation is missed.
        let mut lifecycle = self.page.event_listener::<EventLifecycleEvent>().await?;
        let mut responses = self.page.event_listener::<EventResponseReceived>().await?;
        let mut failures = self.page.event_listener::<EventLoadingFailed>().await?;

        // chromiumoxide answers Page.navigate only once the page has loaded (or failed), so it
        // runs in its own task while this one watches lifecycle events for the other
        // `wait_until` points. Dropping the task's handle on return does not cancel it; it
        // ends by itself within the handler's request timeout.
        let page = self.page.clone();
        let url = args.url.clone();
        let mut navigation = tokio::spawn(async move { page.execute(NavigateParams::new(url)).await });
        let wanted = match args.wait_until {
            WaitUntil::Load => "load",
            WaitUntil::Domcontentloaded => "DOMContentLoaded",
            WaitUntil::Networkidle => "networkIdle",
        };
        let mut loader: Option<LoaderId> = None;
        let mut navigation_done = false;
        let mut status: i64 = 0;
        // The egress proxy's own refusal of the document (status 4xx/5xx with its marker
        // header): the policy or the connection failed there, not at the site.
        let mut proxy_refusal: Option<BrowserError> = None;
        // Chromium's reason for a document that failed to load (refused, reset, blocked …).
        let mut document_failure: Option<String> = None;
        loop {
            tokio::select! {
                joined = &mut navigation, if !navigation_done => {
                    navigation_done = true;
                    let response = joined
                        .map_err(|error| BrowserError::Protocol(error.to_string()))?
                        .map_err(|error| self.navigation_error(&args.url, error.to_string()));
                    let response = match response {
                        Ok(response) => response,
                        Err(error) => return Err(self.explain_block(error).await),
                    };
                    if let Some(error_text) = response.result.error_text.clone() {
                        let error = self.navigation_error(&args.url, error_text);
                        return Err(self.explain_block(error).await);
                    }
                    match response.result.loader_id.clone() {
                        // A same-document navigation (only the fragment changed) has no loader
                        // and no lifecycle events: it is complete now.
                        None => break,
                        Some(id) => loader = Some(id),
                    }
                    if args.wait_until != WaitUntil::Networkidle {
                        break;
                    }
                }
                Some(event) = lifecycle.next() => {
                    if event.frame_id != main_frame {
                        continue;
                    }
                    if event.name == "init" && loader.is_none() {
                        loader = Some(event.loader_id.clone());
                    }
                    if event.name == wanted && loader.as_ref() == Some(&event.loader_id) {
                        break;
                    }
                }
                Some(event) = failures.next() => {
                    if event.r#type == ResourceType::Document {
                        document_failure = Some(event.error_text.clone());
                    }
                }
                Some(event) = responses.next() => {
                    if event.r#type == ResourceType::Document && event.frame_id.as_ref() == Some(&main_frame) {
                        status = event.response.status;
                        proxy_refusal = proxy_refusal_of(&event.response);
                    }
                }
            }
        }
        while let Some(Some(event)) = futures::FutureExt::now_or_never(responses.next()) {
            if event.r#type == ResourceType::Document && event.frame_id.as_ref() == Some(&main_frame) {
                status = event.response.status;
                proxy_refusal = proxy_refusal_of(&event.response);
            }
        }
        // Page.navigate can answer before the document's Network.responseReceived reaches us
        // (they travel on separate channels), so a page that came over HTTP gets a moment
        // for its status to arrive.
        if status == 0 && loader.is_some() && args.url.starts_with("http") {
            let document_response = async {
                while let Some(event) = responses.next().await {
                    if event.r#type == ResourceType::Document && event.frame_id.as_ref() == Some(&main_frame) {
                        return Some(event);
                    }
                }
                None
            };
            if let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(2), document_response).await {
                status = event.response.status;
                proxy_refusal = proxy_refusal_of(&event.response);
            }
        }
        #[derive(Deserialize)]
        struct Location {
            url: String,
            title: String,
        }
        let location: Location =
            serde_json::from_value(self.eval("({ url: location.href, title: document.title })").await?)
                .map_err(|error| BrowserError::Protocol(error.to_string()))?;
        // A load that failed after the first response (a blocked or broken redirect hop)
        // commits Chromium's error page instead of returning an error to Page.navigate.
        if location.url.starts_with("chrome-error:") {
            while let Some(Some(event)) = futures::FutureExt::now_or_never(failures.next()) {
                if event.r#type == ResourceType::Document {
                    document_failure = Some(event.error_text.clone());
                }
            }
            let reason = document_failure.unwrap_or_else(|| "the page failed to load".to_string());
            return Err(match self.denied_document().await {
                Some(denied) => denied,
                None => self.navigation_error(&args.url, reason),
            });
        }
        if let Some(refusal) = proxy_refusal {
            return Err(refusal);
        }
        Ok(Navigated { url: location.url, title: location.title, status })
    }

    fn navigation_error(&self, url: &str, reason: String) -> BrowserError {
        BrowserError::NavigationFailed { url: url.to_string(), reason }
    }

    /// A navigation that failed because our policy blocked its document (the URL itself or a
    /// redirect hop) is reported as `Denied` with the policy's reason, not as a network error.
    async fn explain_block(&self, error: BrowserError) -> BrowserError {
        let BrowserError::NavigationFailed { reason, .. } = &error else { return error };
        if !reason.contains("ERR_BLOCKED_BY_CLIENT") {
            return error;
        }
        self.denied_document().await.unwrap_or(error)
    }

    /// `Denied` for the most recent document request of this page the policy refused.
    async fn denied_document(&self) -> Option<BrowserError> {
        let blocked = self.take_blocked().await;
        let document = blocked.iter().rev().find(|request| request.resource_type == "document")?;
        Some(BrowserError::Denied { url: document.url.clone(), reason: document.reason.clone() })
    }

    pub(crate) async fn screenshot(
        &self,
        args: &ScreenshotArgs,
        config: &BrowserConfig,
    ) -> Result<Screenshot, BrowserError> {
        let clip = match &args.selector {
            Some(selector) => {
                self.wait_for(selector, config).await?;
                let script = format!(
                    "(() => {{ const el = document.querySelector({selector}); el.scrollIntoView({{block: 'center', inline: 'center'}}); \
                     const r = el.getBoundingClientRect(); return {{ x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height }}; }})()",
                    selector = js_string(selector)
                );
                let rect: Rect = serde_json::from_value(self.eval(&script).await?)
                    .map_err(|error| BrowserError::Protocol(error.to_string()))?;
                if rect.width < 1.0 || rect.height < 1.0 {
                    return Err(BrowserError::Script {
                        message: format!("element {selector:?} has no visible size to capture"),
                    });
                }
                Some(rect)
            }
            None if args.full_page => {
                let script = "({ x: 0, y: 0, width: Math.max(document.documentElement.scrollWidth, document.body ? document.body.scrollWidth : 0, window.innerWidth), \
                     height: Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0, window.innerHeight) })";
                Some(
                    serde_json::from_value(self.eval(script).await?)
                        .map_err(|error| BrowserError::Protocol(error.to_string()))?,
                )
            }
            None => None,
        };
        let mut params = CaptureScreenshotParams::builder().format(CaptureScreenshotFormat::Png);
        if let Some(rect) = clip {
            params = params
                .clip(ClipRect { x: rect.x, y: rect.y, width: rect.width, height: rect.height, scale: 1.0 })
                .capture_beyond_viewport(true);
        }
        let captured = self.page.execute(params.build()).await?;
        let image: String = captured.result.data.clone().into();
        let (width, height) =
            png_size(&image).ok_or_else(|| BrowserError::Protocol("the screenshot is not a PNG".to_string()))?;
        Ok(Screenshot { image, width, height })
    }

    pub(crate) async fn click(&self, args: &ClickArgs, config: &BrowserConfig) -> Result<Done, BrowserError> {
        self.wait_for(&args.selector, config).await?;
        let mut loading = self.page.event_listener::<EventFrameStartedLoading>().await?;
        let mut lifecycle = self.page.event_listener::<EventLifecycleEvent>().await?;
        let element = self.page.find_element(args.selector.as_str()).await?;
        element.click().await?;
        self.settle(&mut loading, &mut lifecycle).await;
        Ok(Done::OK)
    }

    pub(crate) async fn type_text(&self, args: &TypeArgs, config: &BrowserConfig) -> Result<Done, BrowserError> {
        self.wait_for(&args.selector, config).await?;
        let element = self.page.find_element(args.selector.as_str()).await?;
        element.focus().await?;
        // Put the caret at the end (or clear) so typing appends, as a person clicking into a
        // filled field and typing would; input/change events let frameworks see the change.
        let prepare = if args.clear_first {
            "function() { if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); } \
             else if (this.isContentEditable) { this.textContent = ''; } }"
        } else {
            "function() { if ('value' in this && typeof this.setSelectionRange === 'function') { \
             try { this.setSelectionRange(this.value.length, this.value.length); } catch (e) {} } }"
        };
        element.call_js_fn(prepare, false).await?;
        let mut buffer = [0u8; 4];
        for character in args.text.chars() {
            let key = character.encode_utf8(&mut buffer);
            // Keys chromiumoxide knows (ASCII letters, digits, punctuation, Enter …) are sent
            // as key presses so key handlers fire; anything else is inserted as text.
            if chromiumoxide::keys::get_key_definition(&*key).is_some() {
                element.press_key(&*key).await?;
            } else {
                self.page.execute(InsertTextParams::new(key.to_string())).await?;
            }
        }
        Ok(Done::OK)
    }

    pub(crate) async fn extract_text(
        &self,
        args: &ExtractTextArgs,
        config: &BrowserConfig,
    ) -> Result<Text, BrowserError> {
        let target = self.target_expression(args.selector.as_deref(), config).await?;
        let text = self
            .eval(&format!(
                "(() => {{ const el = {target}; return el ? (el.innerText ?? el.textContent ?? '') : ''; }})()"
            ))
            .await?;
        Ok(Text { text: text.as_str().unwrap_or_default().to_string() })
    }

    pub(crate) async fn extract_html(
        &self,
        args: &ExtractHtmlArgs,
        config: &BrowserConfig,
    ) -> Result<Html, BrowserError> {
        let target = self.target_expression(args.selector.as_deref(), config).await?;
        let property = if args.outer { "outerHTML" } else { "innerHTML" };
        let html = self.eval(&format!("(() => {{ const el = {target}; return el ? el.{property} : ''; }})()")).await?;
        Ok(Html { html: html.as_str().unwrap_or_default().to_string() })
    }

    pub(crate) async fn evaluate(&self, args: &EvaluateArgs) -> Result<Evaluated, BrowserError> {
        // Models write both `document.title` and `return document.title`; the second is a
        // syntax error as an expression, so it is retried as the body of an async function.
        match self.eval(&args.code).await {
            Err(BrowserError::Script { message }) if message.contains("Illegal return statement") => {
                let wrapped = format!("(async () => {{\n{}\n}})()", args.code);
                Ok(Evaluated { result: self.eval(&wrapped).await? })
            }
            other => Ok(Evaluated { result: other? }),
        }
    }

    /// JS expression for the element an extract works on: the selector's first match, or the
    /// body (the document element when there is none).
    async fn target_expression(&self, selector: Option<&str>, config: &BrowserConfig) -> Result<String, BrowserError> {
        match selector {
            Some(selector) => {
                self.wait_for(selector, config).await?;
                Ok(format!("document.querySelector({})", js_string(selector)))
            }
            None => Ok("(document.body || document.documentElement)".to_string()),
        }
    }

    /// Waits up to `selector_wait` for `selector` to match, as a person waits for a page to
    /// finish rendering; an invalid selector fails at once.
    async fn wait_for(&self, selector: &str, config: &BrowserConfig) -> Result<(), BrowserError> {
        let probe = format!(
            "(() => {{ try {{ return document.querySelector({}) ? 'found' : 'missing'; }} catch (e) {{ return 'invalid:' + e.message; }} }})()",
            js_string(selector)
        );
        let deadline = Instant::now() + config.selector_wait;
        loop {
            let answer = self.eval(&probe).await?;
            match answer.as_str().unwrap_or_default() {
                "found" => return Ok(()),
                "missing" if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
                "missing" => return Err(BrowserError::SelectorNotFound { selector: selector.to_string() }),
                other => {
                    return Err(BrowserError::InvalidSelector {
                        selector: selector.to_string(),
                        message: other.trim_start_matches("invalid:").to_string(),
                    });
                }
            }
        }
    }

    /// After a click: if the main frame starts loading within a moment (a link, a form
    /// submit), wait for that page's `load` so the next call sees the new page. Bounded by the
    /// caller's timeout.
    async fn settle(
        &self,
        loading: &mut (impl futures::Stream<Item = Arc<EventFrameStartedLoading>> + Unpin),
        lifecycle: &mut (impl futures::Stream<Item = Arc<EventLifecycleEvent>> + Unpin),
    ) {
        let main_frame = self.page.target_id().as_ref().to_string();
        let started = tokio::time::timeout(Duration::from_millis(250), async {
            while let Some(event) = loading.next().await {
                if event.frame_id.as_ref() == main_frame {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        if !started {
            return;
        }
        let mut loader: Option<LoaderId> = None;
        while let Some(event) = lifecycle.next().await {
            if event.frame_id.as_ref() != main_frame {
                continue;
            }
            if event.name == "init" {
                loader = Some(event.loader_id.clone());
            }
            if event.name == "load" && loader.as_ref().is_none_or(|id| *id == event.loader_id) {
                return;
            }
        }
    }

    /// Evaluates `expression` in the page's main world and returns its JSON value, awaiting
    /// promises. `undefined` becomes `null`; values JSON cannot hold (NaN, Infinity, BigInt)
    /// become their string form.
    async fn eval(&self, expression: &str) -> Result<Value, BrowserError> {
        let params = EvaluateParams::builder()
            .expression(expression)
            .return_by_value(true)
            .await_promise(true)
            .user_gesture(true)
            .build()
            .map_err(BrowserError::Protocol)?;
        let evaluated = self.page.execute(params).await?.result;
        if let Some(details) = evaluated.exception_details {
            let message =
                details.exception.as_ref().and_then(|exception| exception.description.clone()).unwrap_or(details.text);
            return Err(BrowserError::Script { message });
        }
        let object = evaluated.result;
        if let Some(value) = object.value {
            return Ok(value);
        }
        if let Some(unserializable) = object.unserializable_value {
            return Ok(Value::String(unserializable.as_ref().to_string()));
        }
        Ok(Value::Null)
    }
}

#[derive(Debug, Deserialize)]
struct Rect {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// A Rust string as a JavaScript string literal (JSON is a subset of JS for strings, apart
/// from U+2028/9, which serde_json leaves raw but which modern engines accept in literals).
fn js_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// Width and height from a base64 PNG's IHDR chunk (bytes 16..24 of the file).
pub(crate) fn png_size(base64_png: &str) -> Option<(u32, u32)> {
    let head = base64::engine::general_purpose::STANDARD.decode(base64_png.get(..32)?).ok()?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let width = u32::from_be_bytes(head.get(16..20)?.try_into().ok()?);
    let height = u32::from_be_bytes(head.get(20..24)?.try_into().ok()?);
    Some((width, height))
}

/// The header the egress proxy puts on the responses it makes itself (`denied` or `refused`),
/// and the one that carries its reason.
const PROXY_MARKER: &str = "x-wright-egress";
const PROXY_REASON: &str = "x-wright-egress-reason";

/// A document response made by the egress proxy rather than the site, as the error it stands
/// for: `Denied` when the proxy's policy check refused it (e.g. the name resolved to another
/// address than when it was checked), `NavigationFailed` when it could not resolve or connect.
/// A site could send the marker itself; that only makes its own page fail.
fn proxy_refusal_of(response: &chromiumoxide::cdp::browser_protocol::network::Response) -> Option<BrowserError> {
    let headers = response.headers.inner().as_object()?;
    let header = |wanted: &str| {
        headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(wanted)).and_then(|(_, value)| value.as_str())
    };
    let marker = header(PROXY_MARKER)?;
    let reason = header(PROXY_REASON).unwrap_or("refused by the egress proxy").to_string();
    let url = response.url.clone();
    Some(match marker {
        "denied" => BrowserError::Denied { url, reason },
        _ => BrowserError::NavigationFailed { url, reason },
    })
}
