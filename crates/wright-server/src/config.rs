//! Configuration: defaults, then `<data-dir>/config.toml` if present, then command-line flags.
//!
//! Unknown keys in the file are errors, so a typo in a limit's name is reported instead of
//! silently leaving the default in place.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use wright_agent::LoopConfig;
use wright_agentdb::AgentDbConfig;
use wright_browser::BrowserConfig;
use wright_egress::EgressConfig;
use wright_mcp::McpConfig;
use wright_sandbox::SandboxConfig;
use wright_store::{MemoryConfig, NotifyConfig, SessionConfig, SessionSchedule, StateLimits, TextLimits};
use wright_workspace::WorkspaceConfig;

/// The hidden first argument that makes this binary a sandbox worker (see wright-sandbox).
pub const SANDBOX_WORKER: &str = "__sandbox-worker";

/// The hidden first argument that makes this binary the network forwarder inside a confined
/// command's sandbox (see wright-workspace's `network.rs`).
pub const SHELL_FORWARD: &str = "__shell-forward";

/// The whole configuration of one installation.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub server: ServerConfig,
    pub state: StateLimits,
    /// `[limits]`: caps on stored text (documents, names, descriptions) and on diffs.
    pub limits: TextLimits,
    /// `[memory]`: lifetimes per layer, the memory share of the system message, recall.
    pub memory: MemoryConfig,
    /// `[sessions]`: automatic division (daily, weekly, none) at a local time in a time zone,
    /// checked at load (an unknown zone is an error, not a silent UTC).
    pub sessions: SessionConfig,
    pub session_schedule: SessionSchedule,
    pub agent: LoopConfig,
    pub runs: RunsConfig,
    pub learning: LearningConfig,
    pub images: ImagesConfig,
    pub sandbox: SandboxConfig,
    pub egress: EgressConfig,
    pub agentdb: AgentDbConfig,
    pub browser: BrowserConfig,
    /// `[mcp]`: the MCP servers whose tools the agents get (`mcp__<server>__<tool>`).
    pub mcp: McpConfig,
    /// `[mcp_server]`: Wright as an MCP server at `/mcp` (the other direction).
    pub mcp_server: McpServeConfig,
    /// `[workspace]`: extra roots, file and search limits, the confined shell.
    pub workspace: WorkspaceConfig,
    /// The program that forwards a networked command's proxy port inside its sandbox: this
    /// binary behind `SHELL_FORWARD` (used only with `[workspace.shell] network`).
    pub shell_forwarder: wright_workspace::Forwarder,
    /// `[models]`: agent id → `provider/model`, overriding `WRIGHT_MODEL` for that agent.
    pub models: BTreeMap<String, String>,
    /// Per-agent settings (`[agents.<id>]`), by agent id.
    pub agents: BTreeMap<String, AgentConfig>,
    /// `[model_profiles."<model>"]`: a model's profile and its settings by hand, by the
    /// model's name or `provider/model` (wright-agent's `profile`).
    pub model_profiles: BTreeMap<String, wright_agent::profile::ProfileOverride>,
    /// `[telegram]`: the Telegram channel, off until a bot token is set (here or in
    /// `WRIGHT_TELEGRAM_TOKEN`).
    pub telegram: TelegramConfig,
    /// `[notify]`: the agent's notifications per hour and their length.
    pub notify: NotifyConfig,
    /// `[push]`: Web Push to the person's browsers (VAPID contact, limits).
    pub push: crate::push::PushConfig,
    /// `[schedules]`: limits of the schedules agents make, the missed-run window, the tick.
    pub schedules: wright_schedules::ScheduleConfig,
    /// `[budget]`: usage budgets over all agents (`[agents.<id>.budget]` per agent).
    pub budget: BudgetConfig,
    /// Where every time that decides behaviour comes from (schedules, the notify limit, memory
    /// expiry): the system clock, a fixed one in tests.
    pub clock: std::sync::Arc<dyn wright_core::Clock>,
    /// Debug builds only: a built-in tool that panics when called (`WRIGHT_FAULT_PANIC_TOOL`),
    /// for the end-to-end tests of the run lifecycle.
    #[cfg(debug_assertions)]
    pub fault_panic_tool: Option<String>,
}

/// `[server]` in config.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Longest time one API request may take before it is answered with a timeout error.
    pub request_timeout_secs: u64,
    /// A folder with a built canvas app to serve at `/` instead of the one embedded in the
    /// binary (for working on the canvas without rebuilding the binary). Relative to the working
    /// directory; `wright serve` refuses to start when it is set and holds no `index.html`.
    pub frontend_dir: Option<PathBuf>,
    /// Connections served at once. At the cap the server stops accepting (new clients wait
    /// in the kernel's backlog) rather than run out of file descriptors.
    pub max_connections: usize,
    /// Longest wait for a request's head: from a new connection, or between requests on a
    /// kept-alive one, until the head is complete. Slow or silent clients are closed after it.
    pub header_read_timeout_secs: u64,
    /// A connection on which no byte moved either way for this long is closed. Longer than
    /// `request_timeout_secs` and the event stream's 15 s keep-alive, so it only ends a client
    /// that stopped reading or writing.
    pub idle_timeout_secs: u64,
    /// On shutdown, open requests (event streams end at once) get this long to finish before
    /// their connections are dropped.
    pub shutdown_grace_secs: u64,
    /// Host names (with or without `:port`) the server answers besides IP literals and
    /// `localhost`, e.g. the name of a reverse proxy in front of it. Any other `Host` is
    /// refused, which stops DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Mark the session cookie `Secure`: set this when the app is reached over HTTPS.
    pub secure_cookies: bool,
    /// Trust `X-Forwarded-Proto: https` from a reverse proxy to mark the cookie `Secure`.
    pub trust_forwarded_proto: bool,
    /// How long a browser session lasts.
    pub session_lifetime_secs: u64,
    /// Failed login attempts (wrong tokens) allowed per minute, for the whole installation
    /// (there is one owner); when they are used up, every attempt waits.
    pub login_attempts_per_minute: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout_secs: 120,
            frontend_dir: None,
            max_connections: 256,
            header_read_timeout_secs: 15,
            idle_timeout_secs: 300,
            shutdown_grace_secs: 10,
            allowed_hosts: Vec::new(),
            secure_cookies: false,
            trust_forwarded_proto: false,
            session_lifetime_secs: 30 * 24 * 3600,
            login_attempts_per_minute: 10,
        }
    }
}

impl ServerConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    pub fn session_lifetime(&self) -> Duration {
        Duration::from_secs(self.session_lifetime_secs)
    }
}

/// `[runs]` in config.toml: how runs are owned and what may start them.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunsConfig {
    /// How long a process's claim on a running conversation holds without renewal, seconds.
    /// The owner renews it every third of that; another process recovers a run whose lease
    /// ran out (or whose owner's lock file is free: the owner is gone).
    pub lease_seconds: u64,
    /// Messages a component in the canvas may send per conversation per minute (each starts a
    /// run as if the person had typed it); more are refused with 429.
    pub component_messages_per_minute: usize,
}

impl Default for RunsConfig {
    fn default() -> Self {
        Self { lease_seconds: 30, component_messages_per_minute: 5 }
    }
}

/// `[learning]` in config.toml: learning rounds and the counters of live learned items
/// (issue 31). The token budget of learned items in a request is `[agent] learned_budget_tokens`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearningConfig {
    /// A live item is rolled back when at least this many later runs that carried it failed
    /// and they outnumber those that succeeded.
    pub rollback_min_failures: i64,
    /// The longest one replay of a case may take before it counts as failed, seconds.
    pub replay_timeout_secs: u64,
    /// How many of the agent's most recent finished runs a round gathers candidates from.
    pub recent_runs: i64,
    /// The most candidates one round replays (each costs a replay of every held-out case).
    pub max_candidates: usize,
    /// The hour (0–23, UTC) after which the nightly round of agents that turned it on starts.
    pub nightly_hour: u8,
    /// The model that drafts notes edits and skills from failing runs (`provider/model`, like
    /// `WRIGHT_MODEL`), when a stronger one than the agent's should; the agent's own by default.
    pub draft_model: Option<String>,
}

impl Default for LearningConfig {
    fn default() -> Self {
        Self {
            rollback_min_failures: 3,
            replay_timeout_secs: 120,
            recent_runs: 30,
            max_candidates: 6,
            nightly_hour: 3,
            draft_model: None,
        }
    }
}

/// `[images]` in config.toml: the images the canvas shows through `GET /api/images`, fetched
/// through the egress policy (its allowlist, redirect checks and caps apply as well).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImagesConfig {
    /// Largest image served, in bytes; a larger one is refused (413). The egress's own
    /// `max_body_bytes` caps it too. Default 5 MiB.
    pub max_bytes: usize,
    /// Longest time one image fetch may take, redirects and body included (it is also bounded
    /// by the egress's `total_timeout_ms`). Default 15 000 ms.
    pub timeout_ms: u64,
}

impl Default for ImagesConfig {
    fn default() -> Self {
        Self { max_bytes: 5 * 1024 * 1024, timeout_ms: 15_000 }
    }
}

impl ImagesConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// `[telegram]` in config.toml: the bot, who may talk to it, and how it streams.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// The bot's token from @BotFather; `WRIGHT_TELEGRAM_TOKEN` overrides it. Empty: off.
    pub bot_token: String,
    /// The Bot API's address; a local fake in tests.
    pub api_base_url: String,
    /// The Telegram user ids allowed to talk to the agent (the owner's). Everyone else is
    /// refused, and logged.
    pub allowed_user_ids: Vec<i64>,
    /// The agent the chats talk to.
    pub agent: String,
    /// Long polling: how long one getUpdates waits for an update, seconds.
    pub poll_timeout_secs: u64,
    /// The shortest time between two messages or edits in one chat while an answer streams,
    /// milliseconds (Telegram allows about one a second per chat).
    pub edit_interval_ms: u64,
    /// Where the person opens the canvas, for links to forms and components; by default the
    /// server's own address.
    pub canvas_url: Option<String>,
    pub request_timeout_secs: u64,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            bot_token: String::new(),
            api_base_url: "https://api.telegram.org".into(),
            allowed_user_ids: Vec::new(),
            agent: "default".into(),
            poll_timeout_secs: 30,
            edit_interval_ms: 1100,
            canvas_url: None,
            request_timeout_secs: 30,
        }
    }
}

impl std::fmt::Debug for TelegramConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs and error messages.
        formatter
            .debug_struct("TelegramConfig")
            .field("bot_token", &if self.bot_token.is_empty() { "" } else { "(set)" })
            .field("api_base_url", &self.api_base_url)
            .field("allowed_user_ids", &self.allowed_user_ids)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl TelegramConfig {
    pub fn enabled(&self) -> bool {
        !self.bot_token.trim().is_empty()
    }
}

/// `[mcp_server]` in config.toml: what `/mcp` offers to outside MCP clients. Each agent is
/// served at `/mcp/<agent>` (`/mcp` is the default agent) with its enabled agent-made tools and
/// the built-ins named here; calls follow the agent's tool policies.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServeConfig {
    /// Serve `/mcp` at all. Default true: it needs the token like every `/api` route, and
    /// the token already lets its holder invoke any tool through the API.
    pub enabled: bool,
    /// Built-in tools offered besides the agent's own, e.g. `["web_search", "fetch_url"]`.
    /// Default none. Tools that wait for the person (`ask_user`, `render_and_wait`, …)
    /// cannot be offered: no one would answer them.
    pub builtins: Vec<String>,
    /// Largest MCP request body, bytes; a larger one is refused with 413. Default 1 MiB.
    pub max_request_bytes: usize,
}

impl Default for McpServeConfig {
    fn default() -> Self {
        Self { enabled: true, builtins: Vec::new(), max_request_bytes: 1024 * 1024 }
    }
}

impl McpServeConfig {
    /// Every name must be a built-in that runs without the person; the body cap must be positive.
    pub fn check(&self) -> anyhow::Result<()> {
        let builtins = wright_tools::builtin_specs();
        for name in &self.builtins {
            let Some(spec) = builtins.iter().find(|spec| &spec.name == name) else {
                let closest = wright_core::closest_names(name, builtins.iter().map(|spec| spec.name.as_str()));
                anyhow::bail!(
                    "[mcp_server] builtins names `{name}`, which is not a built-in tool (closest: {})",
                    closest.join(", ")
                );
            };
            if spec.pauses.is_some() {
                anyhow::bail!(
                    "[mcp_server] builtins names `{name}`, which waits for the person's answer in the canvas; an MCP \
                     client cannot give one"
                );
            }
        }
        if self.max_request_bytes == 0 {
            anyhow::bail!("[mcp_server] max_request_bytes must be positive");
        }
        Ok(())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    server: ServerConfig,
    state: StateLimits,
    limits: TextLimits,
    memory: MemoryConfig,
    sessions: SessionConfig,
    agent: LoopConfig,
    runs: RunsConfig,
    learning: LearningConfig,
    images: ImagesConfig,
    sandbox: SandboxConfig,
    egress: EgressConfig,
    agentdb: AgentDbConfig,
    browser: BrowserConfig,
    mcp: McpConfig,
    mcp_server: McpServeConfig,
    workspace: WorkspaceConfig,
    models: BTreeMap<String, String>,
    agents: BTreeMap<String, AgentConfig>,
    model_profiles: BTreeMap<String, wright_agent::profile::ProfileOverride>,
    telegram: TelegramConfig,
    notify: NotifyConfig,
    push: crate::push::PushConfig,
    schedules: wright_schedules::ScheduleConfig,
    budget: BudgetConfig,
}

/// One agent's section, `[agents.<id>]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// `[agents.<id>.tools]`: toolsets and tool loading, used until the API sets them.
    pub tools: wright_core::ToolSettings,
    /// `[agents.<id>.budget]`: this agent's usage budgets.
    pub budget: BudgetConfig,
}

/// `[budget]` and `[agents.<id>.budget]`: limits on what model requests spend, per UTC day and
/// month, in tokens (prompt and completion) or dollars (at the prices of the Settings page).
/// Unset: no limit. Budgets set on the Settings page take the place of these for their scope.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    pub tokens_per_day: Option<i64>,
    pub tokens_per_month: Option<i64>,
    pub usd_per_day: Option<f64>,
    pub usd_per_month: Option<f64>,
    /// Notify the person once when this share of a budget is spent (80 by default when any
    /// budget is set).
    pub notify_at_percent: Option<u8>,
}

impl BudgetConfig {
    pub fn settings(&self) -> wright_store::BudgetSettings {
        wright_store::BudgetSettings {
            tokens_per_day: self.tokens_per_day,
            tokens_per_month: self.tokens_per_month,
            usd_per_day: self.usd_per_day,
            usd_per_month: self.usd_per_month,
            notify_at_percent: self.notify_at_percent,
        }
    }

    fn check(&self, section: &str) -> anyhow::Result<()> {
        let negative = self.tokens_per_day.is_some_and(|value| value < 0)
            || self.tokens_per_month.is_some_and(|value| value < 0)
            || self.usd_per_day.is_some_and(|value| !value.is_finite() || value < 0.0)
            || self.usd_per_month.is_some_and(|value| !value.is_finite() || value < 0.0);
        if negative {
            anyhow::bail!("{section}: a budget is 0 or more");
        }
        if self.notify_at_percent.is_some_and(|percent| !(1..=100).contains(&percent)) {
            anyhow::bail!("{section}: notify_at_percent is between 1 and 100");
        }
        Ok(())
    }
}

impl Config {
    /// Defaults for `data_dir`, overridden by `<data_dir>/config.toml` when it exists.
    pub fn load(data_dir: &Path) -> anyhow::Result<Self> {
        let path = data_dir.join("config.toml");
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str::<ConfigFile>(&text).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => ConfigFile::default(),
            Err(error) => return Err(anyhow::anyhow!("{}: {error}", path.display())),
        };
        let located = |error: anyhow::Error| anyhow::anyhow!("{}: {error}", path.display());
        file.budget.check("[budget]").map_err(located)?;
        for (agent, agent_config) in &file.agents {
            agent_config.budget.check(&format!("[agents.{agent}.budget]")).map_err(located)?;
        }
        let program =
            std::env::current_exe().map_err(|error| anyhow::anyhow!("cannot find the wright binary: {error}"))?;
        let mut sandbox = file.sandbox;
        if sandbox.worker_command.is_empty() {
            // The binary serves as its own sandbox worker (see `SANDBOX_WORKER`).
            sandbox.worker_command = vec![program.display().to_string(), SANDBOX_WORKER.to_owned()];
        }
        // And as the shell's forwarder, bind-mounted into each networked command's sandbox.
        let shell_forwarder = wright_workspace::Forwarder { program, arguments: vec![SHELL_FORWARD.to_owned()] };
        Ok(Self {
            data_dir: data_dir.to_owned(),
            server: file.server,
            state: file.state,
            limits: file.limits,
            memory: file.memory,
            session_schedule: file
                .sessions
                .schedule()
                .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?,
            sessions: file.sessions,
            agent: file.agent,
            runs: file.runs,
            learning: file.learning,
            images: file.images,
            sandbox,
            egress: file.egress,
            agentdb: file.agentdb,
            browser: file.browser,
            mcp: file.mcp,
            mcp_server: {
                file.mcp_server.check().map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
                file.mcp_server
            },
            workspace: file.workspace,
            shell_forwarder,
            models: file.models,
            agents: file.agents,
            model_profiles: file.model_profiles,
            telegram: file.telegram,
            notify: file.notify,
            push: file.push,
            schedules: file.schedules,
            budget: file.budget,
            clock: std::sync::Arc::new(wright_core::SystemClock),
            #[cfg(debug_assertions)]
            fault_panic_tool: None,
        })
    }
}
