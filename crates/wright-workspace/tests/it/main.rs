//! Integration tests of the workspace: the file engines' escape tests (`files.rs`), search
//! (`search.rs`) and the confined shell (`shell.rs`). Each test builds its own temporary
//! installation: a data directory, a read-only and a read-write operator root, and an
//! `outside` directory with a secret that no operation may reveal or change.

mod files;
mod network;
mod search;
mod shell;

use std::path::{Path, PathBuf};

use tempfile::TempDir;
use wright_core::AgentId;
use wright_workspace::{RootConfig, ShellNetwork, Workspace, WorkspaceConfig, Workspaces};

pub const SECRET: &str = "SECRET-7f3a9c";

pub(crate) struct Fixture {
    pub temp: TempDir,
    pub workspace: Workspace,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self::with(|_| {})
    }

    pub(crate) fn with(adjust: impl FnOnce(&mut WorkspaceConfig)) -> Self {
        Self::build(adjust, None)
    }

    /// With `network` given to the shell (which uses it only if `adjust` turns network on).
    pub(crate) fn build(adjust: impl FnOnce(&mut WorkspaceConfig), network: Option<ShellNetwork>) -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        for directory in ["data", "outside", "shared-ro", "shared-rw"] {
            std::fs::create_dir_all(temp.path().join(directory)).expect("mkdir");
        }
        std::fs::write(temp.path().join("outside/secret.txt"), SECRET).expect("secret");
        std::fs::write(temp.path().join("shared-ro/readme.txt"), "read only\n").expect("ro file");
        let mut config = WorkspaceConfig {
            roots: vec![
                RootConfig { path: temp.path().join("shared-ro"), writable: false },
                RootConfig { path: temp.path().join("shared-rw"), writable: true },
            ],
            ..WorkspaceConfig::default()
        };
        adjust(&mut config);
        let mut workspaces = Workspaces::new(temp.path().join("data"), config).expect("workspaces");
        if let Some(network) = network {
            workspaces = workspaces.with_network(network).expect("network");
        }
        let workspace = workspaces.open(&AgentId::parse("agent-1").expect("id")).expect("open");
        Fixture { temp, workspace }
    }

    /// The agent's workspace on the host.
    pub(crate) fn host(&self, relative: &str) -> PathBuf {
        self.temp.path().join("data/agents/agent-1/workspace").join(relative)
    }

    pub(crate) fn outside(&self) -> PathBuf {
        self.temp.path().join("outside")
    }

    pub(crate) fn root(&self, name: &str) -> PathBuf {
        self.temp.path().join(name)
    }

    /// The secret must still be there, unchanged: nothing wrote through to it.
    pub(crate) fn assert_secret_intact(&self) {
        let secret = std::fs::read_to_string(self.outside().join("secret.txt")).expect("secret still readable");
        assert_eq!(secret, SECRET, "a file outside the roots was changed");
    }
}

pub fn path_text(path: &Path) -> String {
    path.display().to_string()
}
