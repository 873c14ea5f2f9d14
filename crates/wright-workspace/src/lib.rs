//! The agent's workspace: files beneath allowed roots, search over them, and a confined shell.
//!
//! A [`Workspace`] is one agent's view: its own directory (`data/agents/<agent>/workspace/`,
//! shown to the model as `/workspace`) plus the host directories the operator listed in
//! config, each read-only or read-write and shown at its own host path. The file engines
//! ([`Workspace::read`], [`Workspace::write`], [`Workspace::edit`], [`Workspace::glob`],
//! [`Workspace::grep`]) and the command runner ([`Workspace::run`]) all speak that one
//! namespace, so a path the model learns from one tool works in the others.
//!
//! Invariants:
//! - Every path is resolved by the kernel beneath the directory fd of its root
//!   (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`): `..`, absolute symlinks,
//!   `/proc/self/root` and links that leave the root fail in the kernel, not in a string
//!   check. What was opened is used through its fd; no path is resolved twice, so a symlink
//!   swapped in between changes nothing. Walks (glob, grep) descend by fd, one component at
//!   a time, never following a symlink.
//! - Only regular files are read or edited (a device or a FIFO is refused), and a file with
//!   several names (hard links) only in the agent's own workspace and only when the server's
//!   user owns it — there the shell cannot link across its mount, so both names are inside
//!   (see `paths::Links`); a write replaces the directory entry by rename, so it never lands in
//!   a file that another name also points to.
//! - Nothing is written beneath a read-only root.
//! - Commands run only under bubblewrap with their own user, mount, PID, network, IPC and UTS
//!   namespaces: read-only system directories, the roots bound as configured, a deadline after
//!   which the whole namespace is killed (background processes included), and limits on
//!   memory, processes, file size and output. When bubblewrap cannot run on the host the shell
//!   is off ([`ShellStatus::Unavailable`]); there is no unconfined fallback.
//! - A command's network namespace has no route anywhere. When the operator allows network, its
//!   one way out is a Unix socket served by the egress proxy, bind-mounted for that command
//!   alone (`network.rs`); otherwise it has none.
//!
//! This crate is a leaf: it knows nothing of tools, models or the store.

mod config;
mod error;
mod files;
mod network;
mod paths;
mod search;
mod shell;
mod walk;

pub use config::{RootConfig, ShellConfig, WorkspaceConfig, WorkspaceLimits};
pub use error::WorkspaceError;
pub use files::{EditOutcome, ReadOutcome, WriteOutcome};
pub use network::{FORWARDER_MOUNT, Forwarder, PROXY_ADDRESS, SOCKET_MOUNT, ShellNetwork, ShellProxy, forward_main};
pub use paths::{Place, Root, WORKSPACE_MOUNT, Workspace, Workspaces};
pub use search::{GlobOutcome, GrepMode, GrepOutcome, GrepRequest};
pub use shell::{ShellOutcome, ShellRequest, ShellStatus};
