//! Roots and the resolution of every path beneath one of them, by the kernel.
//!
//! The model names paths in one namespace: `/workspace/...` (or a relative path) for the agent's
//! own directory, and each operator root at its host path. [`Workspace::resolve`] only decides
//! *which* root a path belongs to (a prefix of components); the rest of the path, `..` and
//! symlinks included, is handed to `openat2` relative to the root's directory fd with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so it is the kernel that refuses to leave the root.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
use wright_core::AgentId;

use crate::WorkspaceError;
use crate::config::{ShellConfig, WorkspaceConfig, WorkspaceLimits};
use crate::network::{NetworkAccess, ShellNetwork};
use crate::shell::{PidsCgroups, ShellStatus};

/// Where the agent's own directory appears, to the model and inside the shell.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// Paths the sandbox provides itself; a root shown there would hide or replace them.
const RESERVED: &[&str] =
    &["/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/proc", "/dev", "/tmp", "/etc", WORKSPACE_MOUNT];

/// Every agent's workspace, built once from config. Cheap to share.
#[derive(Debug)]
pub struct Workspaces {
    data_dir: PathBuf,
    config: WorkspaceConfig,
    shell: ShellStatus,
    /// Where commands' processes are counted when the server runs as root (see `shell.rs`).
    pids_cgroups: Option<PidsCgroups>,
    /// The egress proxy for commands, when `[workspace.shell] network` is on and
    /// [`Workspaces::with_network`] gave it.
    network: Option<Arc<NetworkAccess>>,
}

impl Workspaces {
    /// Checks the configured roots and probes the shell (a real confined `true`), so the
    /// binary can say at start whether `bash` is on and, if not, why. With
    /// `[workspace.shell] network` on, the shell stays off until [`Workspaces::with_network`]
    /// gives it the egress proxy (it never runs with a network other than that one).
    pub fn new(data_dir: impl Into<PathBuf>, config: WorkspaceConfig) -> Result<Self, WorkspaceError> {
        for root in &config.roots {
            check_root_config(&root.path)?;
        }
        let data_dir = data_dir.into();
        let agents = data_dir.join("agents");
        std::fs::create_dir_all(&agents).map_err(|error| WorkspaceError::io(&agents.display().to_string(), error))?;
        let (shell, pids_cgroups) = if config.shell.network && config.shell.enabled {
            let reason = "[workspace.shell] network is on, but no egress proxy was given to the shell".to_owned();
            (ShellStatus::Unavailable { reason }, None)
        } else {
            ShellStatus::probe(&config.shell, &agents, None)
        };
        Ok(Workspaces { data_dir, config, shell, pids_cgroups, network: None })
    }

    /// Gives commands the network through `network` when `[workspace.shell] network` is on (and
    /// probes the shell again, the forwarder included); without that setting it changes nothing.
    pub fn with_network(mut self, network: ShellNetwork) -> Result<Self, WorkspaceError> {
        if !(self.config.shell.network && self.config.shell.enabled) {
            return Ok(self);
        }
        let access = NetworkAccess::new(&self.data_dir, network)?;
        let (shell, pids_cgroups) =
            ShellStatus::probe(&self.config.shell, &self.data_dir.join("agents"), Some(&access));
        self.network = shell.is_available().then(|| Arc::new(access));
        self.shell = shell;
        self.pids_cgroups = pids_cgroups;
        Ok(self)
    }

    /// Whether commands reach the network (through the egress proxy): the shell is available
    /// and the operator turned network on.
    pub fn shell_network(&self) -> bool {
        self.shell.is_available() && self.network.is_some()
    }

    pub fn config(&self) -> &WorkspaceConfig {
        &self.config
    }

    pub fn shell_status(&self) -> &ShellStatus {
        &self.shell
    }

    /// The host directory of `agent`'s workspace (created by [`Workspaces::open`]).
    pub fn agent_dir(&self, agent: &AgentId) -> PathBuf {
        self.data_dir.join("agents").join(agent.as_str()).join("workspace")
    }

    /// Opens `agent`'s view: its workspace (created if missing) and the operator's roots.
    pub fn open(&self, agent: &AgentId) -> Result<Workspace, WorkspaceError> {
        let own = self.agent_dir(agent);
        std::fs::create_dir_all(&own).map_err(|error| WorkspaceError::io(WORKSPACE_MOUNT, error))?;
        // Files with several names are read in the agent's own workspace when this user owns
        // them (see `Links`), never in an operator root.
        let owner = Links::OwnedBy(rustix::process::geteuid().as_raw());
        let mut roots = vec![Root::open(PathBuf::from(WORKSPACE_MOUNT), own, true, owner)?];
        for root in &self.config.roots {
            roots.push(Root::open(root.path.clone(), root.path.clone(), root.writable, Links::Single)?);
        }
        Ok(Workspace {
            roots,
            limits: self.config.limits.clone(),
            shell: self.config.shell.clone(),
            shell_status: self.shell.clone(),
            pids_cgroups: self.pids_cgroups.clone(),
            network: self.network.clone(),
        })
    }
}

fn check_root_config(path: &Path) -> Result<(), WorkspaceError> {
    let shown = path.display().to_string();
    let plain =
        path.is_absolute() && path.components().skip(1).all(|component| matches!(component, Component::Normal(_)));
    if !plain {
        return Err(WorkspaceError::Invalid(format!(
            "workspace root `{shown}` must be an absolute path without `.` or `..`"
        )));
    }
    if RESERVED.iter().any(|reserved| path == Path::new(reserved))
        || path.starts_with("/proc")
        || path.starts_with("/dev")
    {
        return Err(WorkspaceError::Invalid(format!(
            "workspace root `{shown}` is a system directory; name a directory of your own"
        )));
    }
    if path.starts_with(WORKSPACE_MOUNT) {
        return Err(WorkspaceError::Invalid(format!(
            "workspace root `{shown}` would hide the agent's {WORKSPACE_MOUNT}"
        )));
    }
    if !path.is_dir() {
        return Err(WorkspaceError::Invalid(format!("workspace root `{shown}` is not an existing directory")));
    }
    Ok(())
}

/// One allowed directory: where the model sees it, where it is on the host, and its fd.
#[derive(Debug)]
pub struct Root {
    /// The absolute path the model and the shell use.
    pub shown: PathBuf,
    /// The directory on the host.
    pub host: PathBuf,
    pub writable: bool,
    /// Which files with more than one name its engines read, search and edit.
    pub(crate) links: Links,
    /// `O_PATH` fd of the directory, opened once; every path beneath is resolved from it.
    fd: OwnedFd,
}

/// Which files with more than one name (hard links) a root's engines work on. Writes never
/// land in a shared inode either way (they replace the name by rename).
///
/// A second name may be anywhere on the filesystem, so a hard link in a root may be a way to a
/// file outside the roots. Who can make one decides the rule:
/// - In an operator root, anyone who can write there (it may be shared with other users of
///   the host, and on a host without `fs.protected_hardlinks` they could link files they cannot
///   read): one name only.
/// - In the agent's own workspace, only two kinds of writer exist. Its shell, whose workspace
///   is a bind mount of its own: the kernel refuses a link across mounts (`EXDEV`), so both
///   names are in the workspace. And processes of the server's own user (or root) on the host,
///   which could as well copy the file. So a file there with several names is accepted when
///   this user owns it (what the shell's user maps to); a file of another owner linked in is
///   refused. That serves `git clone` of a local repository and package stores (pnpm) that
///   hard-link, inside the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Links {
    Single,
    OwnedBy(u32),
}

impl Root {
    fn open(shown: PathBuf, host: PathBuf, writable: bool, links: Links) -> Result<Self, WorkspaceError> {
        let fd = rustix::fs::open(&host, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|errno| WorkspaceError::errno(&shown.display().to_string(), errno))?;
        Ok(Root { shown, host, writable, links, fd })
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Opens `relative` beneath this root. The kernel refuses `..` past the root, absolute and
    /// escaping symlinks and magic links (`/proc/self/...`) with `EXDEV`/`ELOOP`.
    pub(crate) fn open_beneath(&self, relative: &Path, flags: OFlags) -> Result<OwnedFd, WorkspaceError> {
        open_beneath(&self.fd, relative, flags).map_err(|errno| WorkspaceError::errno(&self.show(relative), errno))
    }

    /// The path the model sees for `relative`.
    pub(crate) fn show(&self, relative: &Path) -> String {
        if relative.as_os_str().is_empty() || relative == Path::new(".") {
            self.shown.display().to_string()
        } else {
            self.shown.join(relative).display().to_string()
        }
    }
}

pub(crate) fn open_beneath(dir: impl AsFd, relative: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
    // openat2 refuses flags that mean nothing to an O_PATH descriptor (O_NOCTTY among them).
    let flags =
        if flags.contains(OFlags::PATH) { flags | OFlags::CLOEXEC } else { flags | OFlags::CLOEXEC | OFlags::NOCTTY };
    openat2(dir, relative, flags, Mode::empty(), ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS)
}

/// Where a path given to a file operation leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The agent's own workspace (`/workspace`, or a relative path).
    Own,
    /// One of the operator's roots (`[workspace] roots`).
    OperatorRoot,
    /// No root: the operation fails.
    Nowhere,
}

/// One agent's roots and limits; what every file, search and shell operation runs against.
#[derive(Debug)]
pub struct Workspace {
    pub(crate) roots: Vec<Root>,
    pub(crate) limits: WorkspaceLimits,
    pub(crate) shell: ShellConfig,
    pub(crate) shell_status: ShellStatus,
    pub(crate) pids_cgroups: Option<PidsCgroups>,
    pub(crate) network: Option<Arc<NetworkAccess>>,
}

impl Workspace {
    /// The agent's workspace first, then the operator's roots.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    pub fn shell_status(&self) -> &ShellStatus {
        &self.shell_status
    }

    /// Whether commands reach the network (only through the egress proxy).
    pub fn shell_network(&self) -> bool {
        self.shell_status.is_available() && self.network.is_some()
    }

    /// Which root `path` belongs to, and the rest of it (to be resolved by the kernel).
    /// A relative path is relative to `/workspace`; an absolute one must start with a root's
    /// shown path (the longest such root wins).
    pub(crate) fn resolve(&self, path: &str) -> Result<(&Root, PathBuf), WorkspaceError> {
        let given = Path::new(path);
        if !given.is_absolute() {
            return Ok((&self.roots[0], given.to_path_buf()));
        }
        self.roots
            .iter()
            .filter_map(|root| given.strip_prefix(&root.shown).ok().map(|rest| (root, rest.to_path_buf())))
            .max_by_key(|(root, _)| root.shown.components().count())
            .ok_or_else(|| WorkspaceError::OutsideRoots { path: path.to_owned(), roots: self.describe_roots() })
    }

    /// Which root a file operation on `path` resolves beneath (the kernel then keeps it there).
    pub fn place(&self, path: &str) -> Place {
        match self.resolve(path) {
            Ok((root, _)) if std::ptr::eq(root, &self.roots[0]) => Place::Own,
            Ok(_) => Place::OperatorRoot,
            Err(_) => Place::Nowhere,
        }
    }

    /// `/workspace (read-write), /srv/notes (read-only)`.
    pub fn describe_roots(&self) -> String {
        self.roots
            .iter()
            .map(|root| {
                format!("{} ({})", root.shown.display(), if root.writable { "read-write" } else { "read-only" })
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn writable_root(&self, path: &str) -> Result<(&Root, PathBuf), WorkspaceError> {
        let (root, relative) = self.resolve(path)?;
        if !root.writable {
            return Err(WorkspaceError::ReadOnly { path: path.to_owned() });
        }
        Ok((root, relative))
    }
}
