//! What the operator configures (`[workspace]` in config.toml): extra roots, file and search
//! limits, and the shell. Every field has a default, so an empty table is a valid config.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Host directories every agent may use besides its own workspace, each shown to the agent
    /// (and bound in its shell) at its own absolute host path.
    pub roots: Vec<RootConfig>,
    pub limits: WorkspaceLimits,
    pub shell: ShellConfig,
}

/// One operator-chosen host directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// An absolute path to an existing directory.
    pub path: PathBuf,
    /// Whether the agent may write beneath it (file_write, file_edit, the shell). Default: no.
    #[serde(default)]
    pub writable: bool,
}

/// Caps on the file engines and search; each bounds work a model's arguments control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceLimits {
    /// Lines file_read returns when the call names no limit.
    pub read_default_lines: usize,
    /// Characters of one line file_read shows; the rest is cut with a marker.
    pub read_max_line_chars: usize,
    /// Bytes of text file_read returns in one call; later lines are left for an offset.
    pub read_max_output_bytes: usize,
    /// Largest file file_write writes or file_edit edits, bytes.
    pub max_write_bytes: usize,
    /// Paths glob returns, newest first.
    pub glob_max_results: usize,
    /// Output lines (matches, files or counts) grep returns.
    pub grep_max_results: usize,
    /// Characters of one matching line grep shows.
    pub grep_max_line_chars: usize,
    /// Entries a glob or grep walk visits before it stops (reported as truncated).
    pub walk_max_entries: usize,
    /// How long a glob or grep may run, ms; it stops with what it found (truncated).
    pub search_deadline_ms: u64,
    /// Files larger than this are skipped by grep, bytes.
    pub grep_max_file_bytes: u64,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        WorkspaceLimits {
            read_default_lines: 2_000,
            read_max_line_chars: 2_000,
            read_max_output_bytes: 256 * 1024,
            max_write_bytes: 10 * 1024 * 1024,
            glob_max_results: 1_000,
            grep_max_results: 1_000,
            grep_max_line_chars: 500,
            walk_max_entries: 200_000,
            search_deadline_ms: 20_000,
            grep_max_file_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The confined shell (`bash`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Whether the bash tool may run at all. When on, bubblewrap must work on the host or the
    /// shell stays off (it never runs unconfined).
    pub enabled: bool,
    /// The bubblewrap binary.
    pub bwrap_path: PathBuf,
    /// Deadline of a command when the call names none, ms.
    pub default_timeout_ms: u64,
    /// Longest deadline a call may ask for, ms; above it the call is refused.
    pub max_timeout_ms: u64,
    /// Address space of each process, bytes (RLIMIT_AS).
    pub memory_limit_bytes: u64,
    /// Processes (and threads) the command may have at once (RLIMIT_NPROC in its own user
    /// namespace).
    pub max_processes: u64,
    /// Largest file the command may write, bytes (RLIMIT_FSIZE).
    pub max_file_bytes: u64,
    /// stdout and stderr kept together, bytes; past it the command is killed and the result
    /// marked truncated.
    pub max_output_bytes: usize,
    /// Whether commands may reach the network: only through the egress proxy (the proxy
    /// variables are set; what it forwards obeys `[egress]`, loopback and private addresses
    /// refused unless in `[egress] allow`). Default off: no network at all.
    pub network: bool,
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            enabled: true,
            bwrap_path: PathBuf::from("/usr/bin/bwrap"),
            default_timeout_ms: 30_000,
            max_timeout_ms: 600_000,
            memory_limit_bytes: 2 * 1024 * 1024 * 1024,
            max_processes: 256,
            max_file_bytes: 1024 * 1024 * 1024,
            max_output_bytes: 1024 * 1024,
            network: false,
        }
    }
}
