//! The `wright` binary's library half: configuration, the HTTP API and the CLI commands.
//!
//! [`api::app`] builds the axum router from an [`AppState`] (tests call it without a socket);
//! [`serve`] runs it on a listener until a shutdown future resolves. Every `/api` route is
//! registered through utoipa-axum, so the router and the OpenAPI document at
//! `/api/openapi.json` are built from the same list and cannot drift apart.
//!
//! Invariants:
//! - Every `/api` route except `GET /api/health` and `POST /api/auth/login` requires the
//!   token, as a `Bearer` header or the session cookie that login sets.
//! - Every failure, including JSON and path rejections, timeouts and unknown routes, answers
//!   with one shape: `{"error": {"code", "message"}}`; 5xx bodies say nothing of internals.
//! - Configuration is read once, here, and passed down; nothing below reads the environment.
//! - The listener caps connections and times out slow and idle clients; shutdown ends event
//!   streams and finishes within `[server] shutdown_grace_secs` ([`listener`]).

pub mod api;
pub mod chat;
pub mod cli;
pub mod config;
pub mod domain;
pub mod embedder;
pub mod export;
pub mod learning;
pub mod listener;
pub mod notifier;
pub mod push;
pub mod scheduler;
pub mod secrets;
pub mod telegram;
pub mod token;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wright_store::Store;
use wright_tools::{Services, ToolRegistry};

pub use config::Config;

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// Memories recalled and embedded above the store: the memory API.
    pub memories: wright_memory::Memories,
    /// Schedules under `[schedules]`' policy: the scheduler's tick and the schedules API.
    pub schedules: wright_schedules::Schedules,
    pub tools: Arc<ToolRegistry>,
    pub auth: Arc<token::Auth>,
    pub config: Arc<Config>,
    pub hub: Arc<domain::hub::Hub>,
    pub runs: Arc<domain::runs::Runs>,
    /// The usage ledger, prices and budgets.
    pub ledger: Arc<domain::usage::Ledger>,
    /// The models of agents, read from the settings on every run.
    pub models: Arc<domain::models::Models>,
    /// Keys of the connections added in the canvas.
    pub secrets: Arc<secrets::Secrets>,
    /// Every configured secret (provider keys, the access token, the Telegram token), removed
    /// from foreign text — provider and MCP errors — where that text is made into an error.
    pub redactor: wright_core::Redactor,
    /// Cancelled when the server shuts down; long-lived responses (event streams) watch it so
    /// shutdown does not wait for the browser to go away.
    pub shutdown: CancellationToken,
    pub login_limiter: Arc<api::LoginLimiter>,
    /// Web Push to the person's browsers; None when `[push] enabled` is off.
    pub push: Option<Arc<push::Pusher>>,
}

impl AppState {
    /// Opens the data directory (creating it), the app database and the tool registry.
    pub async fn open(config: Config, auth: token::Auth, models: domain::models::Models) -> anyhow::Result<Self> {
        let mut services = open_services(&config).await?;
        report_capabilities(&config, &services.workspaces);
        let redactor = models.redactor().clone();
        redactor.add(auth.token());
        redactor.add(&config.telegram.bot_token);
        let secrets = Arc::new(secrets::Secrets::new(&config.data_dir, redactor.clone()));
        // No request the agent causes carries a configured secret, also encoded.
        services.egress.refuse_secrets(Arc::new(EgressSecrets(redactor.clone())));
        // The models read the canvas's choices through a store without the embedder: the
        // embedder reads its connection through the models.
        let models = Arc::new(
            models
                .with_drafting(config.learning.draft_model.as_deref())
                .with_settings(services.store.clone(), Arc::clone(&secrets)),
        );
        let shutdown = CancellationToken::new();
        let ledger = Arc::new(domain::usage::Ledger::for_config(services.store.clone(), &config));
        if let Some(embeddings) = &config.memory.embeddings {
            let embedder =
                embedder::ConnectionEmbedder::new(Arc::clone(&models), Arc::clone(&ledger), embeddings.clone());
            services.memories = services.memories.clone().with_embedder(Arc::new(embedder)).await?;
            tracing::info!(connection = %embeddings.connection, space = %embeddings.space(),
                "memories are embedded: recall ranks by full text and vectors");
            embedder::spawn_sweep(
                services.memories.clone(),
                Duration::from_millis(embeddings.retry_ms.clamp(1_000, 60_000)),
                shutdown.clone(),
            );
        }
        let store = services.store.clone();
        let schedules = services.schedules.clone();
        let memories = services.memories.clone();
        // HTTP MCP servers are reached through the egress policy, like any agent-caused request.
        let mcp_gate = wright_tools::egress_gate(&services.egress);
        let mut registry = ToolRegistry::new(Arc::new(services)).with_redactor(redactor.clone());
        if !config.mcp.servers.is_empty() {
            // Servers connect in the background; their tools appear as each comes up.
            registry =
                registry.with_mcp(wright_mcp::McpClients::start(config.mcp.clone(), mcp_gate, redactor.clone())?);
        }
        #[cfg(debug_assertions)]
        let registry = registry.panicking_in(config.fault_panic_tool.clone());
        let tools = Arc::new(registry);
        let hub = Arc::new(domain::hub::Hub::default());
        let owner = domain::owner::RunOwner::acquire(&config.data_dir)?;
        let runs = Arc::new(
            domain::runs::Runs::new(
                store.clone(),
                Arc::clone(&hub),
                Arc::clone(&tools),
                Arc::clone(&models),
                Arc::clone(&ledger),
                config.agent.clone(),
                config.runs.clone(),
                owner,
            )
            .with_configured_tools(
                config.agents.iter().map(|(agent, section)| (agent.clone(), section.tools.clone())).collect(),
            )
            .with_profiles(config.model_profiles.clone())
            .with_learning(config.learning.clone()),
        );
        runs.recover_orphaned().await.map_err(|error| anyhow::anyhow!("{error}"))?;
        runs.spawn_heartbeat();
        let login_limiter = Arc::new(api::LoginLimiter::new(config.server.login_attempts_per_minute));
        // The VAPID key is made on the first start and kept in the data directory.
        let push = match config.push.enabled {
            true => Some(Arc::new(push::Pusher::load_or_create(&config.data_dir, config.push.clone())?)),
            false => None,
        };
        Ok(Self {
            login_limiter,
            push,
            store,
            memories,
            schedules,
            tools,
            auth: Arc::new(auth),
            config: Arc::new(config),
            hub,
            runs,
            ledger,
            models,
            secrets,
            redactor,
            shutdown,
        })
    }
}

/// Starts what works on its own beside the HTTP API, until `state.shutdown`: the scheduler,
/// the notifications' delivery (canvas and Telegram), the nightly learning rounds, and the Telegram channel when a bot token
/// is set. `server_url` is where the canvas is, for links sent to Telegram.
pub fn start_background(state: &AppState, server_url: &str) -> anyhow::Result<()> {
    let telegram = telegram::TelegramChannel::new(&state.config.telegram, server_url)?;
    if let Some(telegram) = &telegram {
        telegram.spawn(state.clone());
    }
    notifier::spawn(state.clone(), telegram);
    if let Some(pusher) = &state.push {
        push::spawn_waiting(state.store.clone(), Arc::clone(&state.hub), Arc::clone(pusher), state.shutdown.clone());
    }
    scheduler::spawn(state.clone());
    learning::spawn_nightly(state.clone());
    Ok(())
}

/// The process's secrets as the egress asks for them.
struct EgressSecrets(wright_core::Redactor);

impl wright_egress::Secrets for EgressSecrets {
    fn any(&self, found: &mut dyn FnMut(&str) -> bool) -> bool {
        self.0.any(found)
    }
}

/// Opens the data directory (creating it) and everything tools reach the world through: the
/// app database, the sandbox's worker pool, the egress client.
pub async fn open_services(config: &Config) -> anyhow::Result<Services> {
    std::fs::create_dir_all(&config.data_dir)?;
    let store = Store::open(&config.data_dir.join("wright.db"), config.state.clone())
        .await?
        .with_text_limits(config.limits.clone())
        .with_memory(config.memory.clone(), Arc::clone(&config.clock))
        .with_sessions(config.session_schedule.clone())
        .with_notify(config.notify.clone());
    let schedules = wright_schedules::Schedules::new(store.clone(), config.schedules.clone());
    let memories = wright_memory::Memories::new(store.clone());
    let sandbox = wright_sandbox::Sandbox::new(config.sandbox.clone())?;
    let egress = wright_egress::Egress::new(config.egress.clone())?;
    let databases = wright_agentdb::AgentDatabases::new(config.data_dir.join("agents"), config.agentdb.clone());
    let browsers =
        wright_browser::Browsers::new(config.browser.clone(), wright_tools::browser::request_policy(&egress));
    // With `[workspace.shell] network` on, commands reach the web only through this egress.
    let shell_network = wright_workspace::ShellNetwork {
        proxy: wright_tools::workspace::shell_proxy(&egress),
        forwarder: config.shell_forwarder.clone(),
    };
    let workspaces =
        wright_workspace::Workspaces::new(&config.data_dir, config.workspace.clone())?.with_network(shell_network)?;
    Ok(Services { store, memories, schedules, sandbox, egress, databases, browsers, workspaces })
}

/// One capability that depends on the host, and whether it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    pub name: &'static str,
    /// `Ok(how)` when on, `Err(why)` when off.
    pub state: Result<String, String>,
}

/// What the agent can and cannot do on this host, and why: the confined shell, its network, the
/// browser. `wright serve` logs it at start, so an operator (`docker logs`) sees a capability
/// that is off and what turns it on.
pub fn capabilities(config: &Config, workspaces: &wright_workspace::Workspaces) -> Vec<Capability> {
    let shell = match workspaces.shell_status() {
        wright_workspace::ShellStatus::Available => Ok("confined by bubblewrap".to_owned()),
        wright_workspace::ShellStatus::Disabled => Err("[workspace.shell] enabled = false".to_owned()),
        wright_workspace::ShellStatus::Unavailable { reason } => Err(format!(
            "confinement is unavailable on this host, and bash never runs unconfined: {reason} \
             (install bubblewrap, or set [workspace.shell] bwrap_path)"
        )),
    };
    let network = match (&shell, workspaces.shell_network()) {
        (Err(_), _) => Err("bash is off".to_owned()),
        (Ok(_), true) => Ok("only through the egress proxy".to_owned()),
        (Ok(_), false) => Err(
            "[workspace.shell] network = false (commands reach no network; true lets them through the egress proxy)"
                .to_owned(),
        ),
    };
    let browser = if let Some(url) = &config.browser.cdp_url {
        Ok(format!("the running browser at {url}"))
    } else {
        match &config.browser.chromium_path {
            Some(path) if is_executable(path) => Ok(format!("Chromium at {}", path.display())),
            Some(path) => Err(format!("[browser] chromium_path {} is not an executable", path.display())),
            None => match wright_browser::find_chromium() {
                Some(path) => Ok(format!("Chromium at {}", path.display())),
                None => Err("no Chromium found (chromium, chromium-browser, google-chrome on PATH, or \
                     /usr/bin/chromium); install it or set [browser] chromium_path or cdp_url"
                    .to_owned()),
            },
        }
    };
    vec![
        Capability { name: "bash", state: shell },
        Capability { name: "network for bash", state: network },
        Capability { name: "browser", state: browser },
    ]
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Logs [`capabilities`]: each that is on as information, each that is off as a warning with why.
pub fn report_capabilities(config: &Config, workspaces: &wright_workspace::Workspaces) {
    for capability in capabilities(config, workspaces) {
        match capability.state {
            Ok(how) => tracing::info!("{}: on, {how}", capability.name),
            Err(why) => tracing::warn!("{} is OFF: {why}", capability.name),
        }
    }
}

/// Serves the app on `listener` until `shutdown` resolves, then ends event streams, lets
/// in-flight requests finish for at most `[server] shutdown_grace_secs`, closes the ledger
/// (its queued rows, its budget leases) and the store.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let store = state.store.clone();
    let ledger = Arc::clone(&state.ledger);
    let token = state.shutdown.clone();
    let limits = listener::ListenerLimits::from(&state.config.server);
    let router = api::app(state);
    // Ends with the signal, or with the server when `listener::run` returns first.
    let signal = tokio::spawn({
        let token = token.clone();
        async move {
            tokio::select! {
                () = shutdown => token.cancel(),
                () = token.cancelled() => {}
            }
        }
    });
    listener::run(listener, router, limits, token.clone()).await;
    token.cancel();
    signal.await.ok();
    // The ledger's queued rows are written, and the budget slices this process holds go back
    // to the others now, not when they lapse.
    ledger.close(std::time::Duration::from_secs(5)).await;
    store.close().await;
    Ok(())
}
