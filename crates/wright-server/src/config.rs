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
use wright_sandbox::SandboxConfig;
use wright_store::{MemoryConfig, SessionConfig, SessionSchedule, StateLimits};

/// The whole configuration of one installation.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub server: ServerConfig,
    pub state: StateLimits,
    /// `[memory]`: lifetimes per layer, the memory share of the system message, recall.
    pub memory: MemoryConfig,
    /// `[sessions]`: automatic division (daily, weekly, none) at a local time in a time zone,
    /// checked at load (an unknown zone is an error, not a silent UTC).
    pub sessions: SessionConfig,
    pub session_schedule: SessionSchedule,
    pub agent: LoopConfig,
    pub runs: RunsConfig,
    pub sandbox: SandboxConfig,
    pub egress: EgressConfig,
    pub agentdb: AgentDbConfig,
    pub browser: BrowserConfig,
    /// `[models]`: agent id → `provider/model`, overriding `WRIGHT_MODEL` for that agent.
    pub models: BTreeMap<String, String>,
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
    /// Where the built canvas app is; served at `/` when the folder exists.
    pub frontend_dir: PathBuf,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout_secs: 120,
            frontend_dir: PathBuf::from("frontend/dist"),
        }
    }
}

impl ServerConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
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

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    server: ServerConfig,
    state: StateLimits,
    memory: MemoryConfig,
    sessions: SessionConfig,
    agent: LoopConfig,
    runs: RunsConfig,
    sandbox: SandboxConfig,
    egress: EgressConfig,
    agentdb: AgentDbConfig,
    browser: BrowserConfig,
    models: BTreeMap<String, String>,
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
        let mut sandbox = file.sandbox;
        if sandbox.worker_command.is_empty() {
            // The binary serves as its own sandbox worker (see `cli::SANDBOX_WORKER`).
            let program =
                std::env::current_exe().map_err(|error| anyhow::anyhow!("cannot find the wright binary: {error}"))?;
            sandbox.worker_command = vec![program.display().to_string(), crate::cli::SANDBOX_WORKER.to_owned()];
        }
        Ok(Self {
            data_dir: data_dir.to_owned(),
            server: file.server,
            state: file.state,
            memory: file.memory,
            session_schedule: file
                .sessions
                .schedule()
                .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?,
            sessions: file.sessions,
            agent: file.agent,
            runs: file.runs,
            sandbox,
            egress: file.egress,
            agentdb: file.agentdb,
            browser: file.browser,
            models: file.models,
            #[cfg(debug_assertions)]
            fault_panic_tool: None,
        })
    }
}
