//! One running (or connected) Chromium: the CDP handler task, the request interceptor, and the
//! facts needed to notice that the process died.
//!
//! Interception is enabled on the *browser* session (`Fetch.enable` without a target), not per
//! page: it then sees every request of every target — pages, cross-site iframes in their own
//! processes, dedicated and service workers, popups — at the Request stage, including each
//! redirect hop, before anything is sent. Each paused request is put to the [`RequestPolicy`]
//! and continued or failed with `BlockedByClient`. Chromium never hands `data:`/`blob:` URLs to
//! Fetch (they make no network request); WebSockets are not covered by Fetch, which is why a
//! launched browser also sends every connection through the policy's proxy (see the crate
//! docs).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig as CdpConfig};
use chromiumoxide::cdp::browser_protocol::browser::CloseParams;
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, ContinueRequestParams, EventRequestPaused, FailRequestParams, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::handler::viewport::Viewport as CdpViewport;
use futures::StreamExt;
use tokio::task::AbortHandle;

use crate::config::BrowserConfig;
use crate::error::BrowserError;
use crate::policy::{BlockedLog, BlockedRequest, PolicyProxy, RequestPolicy};

/// Switches for a browser that runs as a service on a server: headless, no sandbox (it may run
/// as root in a container; the egress policy and context isolation are the boundary), and no
/// traffic of its own — no component updates, sync, metrics, safe-browsing or DNS prefetch —
/// so that the only requests it makes are the ones pages make, all of which are intercepted.
const SERVER_ARGS: &[&str] = &[
    "headless",
    "no-sandbox",
    "disable-setuid-sandbox",
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "no-default-browser-check",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-default-apps",
    "disable-extensions",
    "disable-breakpad",
    "disable-client-side-phishing-detection",
    "disable-domain-reliability",
    "disable-dev-shm-usage",
    "disable-hang-monitor",
    "disable-prompt-on-repost",
    "dns-prefetch-disable",
    "metrics-recording-only",
    "password-store=basic",
    "use-mock-keychain",
    "hide-scrollbars",
    "mute-audio",
    "force-color-profile=srgb",
    "disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater,NetworkPrediction",
];

/// A live browser. Dropped when the manager replaces or shuts it down; dropping aborts the
/// handler and interceptor tasks, which releases the last `Browser`, whose child process is
/// killed on drop (chromiumoxide spawns it with `kill_on_drop`).
pub(crate) struct Instance {
    pub(crate) browser: Arc<Browser>,
    /// The launched process, for liveness checks and for operators; `None` when connected.
    pub(crate) pid: Option<u32>,
    /// Cleared by the handler task when the CDP connection ends.
    connected: Arc<AtomicBool>,
    pub(crate) blocked: Arc<BlockedLog>,
    /// The egress policy, for judging what interception does not see (WebSockets) in reports.
    pub(crate) policy: Arc<dyn RequestPolicy>,
    tasks: Vec<AbortHandle>,
    /// Each launch gets its own profile directory, removed with the instance.
    _user_data_dir: Option<tempfile::TempDir>,
    /// The egress proxy the launched browser connects through; stops with the instance.
    _proxy: Option<PolicyProxy>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Instance").field("pid", &self.pid).finish_non_exhaustive()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Instance {
    /// Launches Chromium (or connects to `cdp_url`) and starts intercepting.
    pub(crate) async fn start(
        config: &BrowserConfig,
        policy: Arc<dyn RequestPolicy>,
    ) -> Result<Instance, BrowserError> {
        let (mut browser, mut handler, user_data_dir, proxy) = match &config.cdp_url {
            Some(url) => {
                tracing::warn!(
                    url,
                    "browser reached over CDP: not routed through the egress proxy, so WebSockets are \
                     not checked and Chromium resolves names itself"
                );
                let connect = Browser::connect(url.clone());
                let (browser, handler) = tokio::time::timeout(config.launch_timeout, connect)
                    .await
                    .map_err(|_| BrowserError::Launch(format!("no answer from {url}")))?
                    .map_err(|error| BrowserError::Launch(format!("connecting to {url}: {error}")))?;
                (browser, handler, None, None)
            }
            None => {
                let executable = config.resolved_chromium_path();
                if !executable.exists() {
                    return Err(BrowserError::Launch(format!(
                        "Chromium not found at {} (install Debian's `chromium` package or set chromium_path)",
                        executable.display()
                    )));
                }
                let user_data_dir = tempfile::Builder::new()
                    .prefix("wright-browser-")
                    .tempdir()
                    .map_err(|error| BrowserError::Launch(format!("profile directory: {error}")))?;
                // The proxy is how the policy reaches every connection; an operator's extra
                // switch must not quietly replace it.
                if let Some(arg) = config.extra_args.iter().find(|arg| {
                    let name = arg.trim_start_matches('-').split('=').next().unwrap_or_default();
                    matches!(
                        name,
                        "proxy-server"
                            | "proxy-bypass-list"
                            | "proxy-pac-url"
                            | "no-proxy-server"
                            | "proxy-auto-detect"
                    )
                }) {
                    return Err(BrowserError::Launch(format!(
                        "extra_args may not set {arg:?}: every connection goes through the egress proxy"
                    )));
                }
                let proxy = policy
                    .start_proxy()
                    .await
                    .map_err(|error| BrowserError::Launch(format!("starting the egress proxy: {error}")))?;
                let proxy_args = [
                    format!("proxy-server=http://{}", proxy.address),
                    // Chromium goes to loopback directly unless told otherwise.
                    "proxy-bypass-list=<-loopback>".to_string(),
                ];
                let cdp_config = CdpConfig::builder()
                    .chrome_executable(&executable)
                    .disable_default_args()
                    .no_sandbox()
                    .args(SERVER_ARGS.iter().copied())
                    .args(proxy_args.iter().map(String::as_str))
                    .args(config.extra_args.iter().map(String::as_str))
                    .user_data_dir(user_data_dir.path())
                    .window_size(config.viewport.width, config.viewport.height)
                    .viewport(CdpViewport {
                        width: config.viewport.width,
                        height: config.viewport.height,
                        ..CdpViewport::default()
                    })
                    .launch_timeout(config.launch_timeout)
                    .request_timeout(config.call_timeout)
                    .build()
                    .map_err(BrowserError::Launch)?;
                let (browser, handler) = Browser::launch(cdp_config)
                    .await
                    .map_err(|error| BrowserError::Launch(format!("{}: {error}", executable.display())))?;
                (browser, handler, Some(user_data_dir), Some(proxy))
            }
        };
        let pid = browser.get_mut_child().and_then(|child| child.as_mut_inner().id());

        // The handler drives the websocket; without it being polled every call hangs. It ends
        // when the connection does (the browser exited or was killed), which is how a crash is
        // noticed between calls.
        let connected = Arc::new(AtomicBool::new(true));
        let handler_connected = Arc::clone(&connected);
        let handler_task = tokio::spawn(async move {
            while let Some(result) = handler.next().await {
                if let Err(error) = result {
                    tracing::debug!(%error, "browser connection ended");
                    break;
                }
            }
            handler_connected.store(false, Ordering::SeqCst);
        });

        let browser = Arc::new(browser);
        let blocked = Arc::new(BlockedLog::default());
        let intercept_task =
            match start_interception(&browser, Arc::clone(&policy), &blocked, config.call_timeout).await {
                Ok(task) => task,
                Err(error) => {
                    handler_task.abort();
                    return Err(BrowserError::Launch(format!("enabling request interception: {error}")));
                }
            };
        Ok(Instance {
            browser,
            pid,
            connected,
            blocked,
            policy,
            tasks: vec![handler_task.abort_handle(), intercept_task],
            _user_data_dir: user_data_dir,
            _proxy: proxy,
        })
    }

    /// False once the CDP connection has ended or the launched process is gone.
    pub(crate) fn is_alive(&self) -> bool {
        self.connected.load(Ordering::SeqCst) && self.pid.is_none_or(process_alive)
    }

    /// Records that a call found the browser unreachable, so the next call starts a new one.
    pub(crate) fn mark_dead(&self) {
        self.connected.store(false, Ordering::SeqCst);
    }

    /// Asks the browser to exit; the process is killed anyway when the instance drops.
    pub(crate) async fn shut_down(&self) {
        if self.pid.is_some() && self.is_alive() {
            let close = self.browser.execute(CloseParams::default());
            if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(2), close).await {
                tracing::debug!(%error, "Browser.close");
            }
        }
    }
}

/// Subscribes to paused requests on the browser session, then enables Fetch for all URLs.
/// The subscription comes first so that no paused request can be missed (a request nobody
/// answers would hang its page until the call timeout).
async fn start_interception(
    browser: &Arc<Browser>,
    policy: Arc<dyn RequestPolicy>,
    blocked: &Arc<BlockedLog>,
    check_timeout: Duration,
) -> Result<AbortHandle, chromiumoxide::error::CdpError> {
    let mut paused = browser.event_listener::<EventRequestPaused>().await?;
    let enable = fetch::EnableParams::builder()
        .pattern(RequestPattern::builder().url_pattern("*").request_stage(RequestStage::Request).build())
        .handle_auth_requests(false)
        .build();
    browser.execute(enable).await?;

    let browser = Arc::clone(browser);
    let blocked = Arc::clone(blocked);
    let task = tokio::spawn(async move {
        while let Some(event) = paused.next().await {
            // One task per request: policy checks resolve names and must not queue behind each
            // other. Each ends once Chromium has its answer (bounded by `check_timeout`).
            let browser = Arc::clone(&browser);
            let policy = Arc::clone(&policy);
            let blocked = Arc::clone(&blocked);
            tokio::spawn(async move {
                let url = event.request.url.as_str();
                let verdict = match tokio::time::timeout(check_timeout, policy.check(url)).await {
                    Ok(verdict) => verdict,
                    Err(_) => Err("the egress check timed out".to_string()),
                };
                let answer = match verdict {
                    Ok(()) => browser.execute(ContinueRequestParams::new(event.request_id.clone())).await.map(drop),
                    Err(reason) => {
                        tracing::debug!(url, %reason, "browser request denied");
                        blocked.push(
                            event.frame_id.as_ref().to_string(),
                            BlockedRequest {
                                url: url.to_string(),
                                resource_type: format!("{:?}", event.resource_type).to_lowercase(),
                                reason,
                            },
                        );
                        browser
                            .execute(FailRequestParams::new(event.request_id.clone(), ErrorReason::BlockedByClient))
                            .await
                            .map(drop)
                    }
                };
                if let Err(error) = answer {
                    // The request's page was closed meanwhile; nothing is waiting for it.
                    tracing::debug!(%error, "answering a paused request");
                }
            });
        }
    });
    Ok(task.abort_handle())
}

/// Whether `pid` names a running (not zombie) process. Reads `/proc`; where there is none,
/// assumes alive and relies on the connection state.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => !std::path::Path::new("/proc/self").exists(),
    }
}
