//! Limits and pool settings: [`SandboxConfig`] (operator config, every field has a default) and
//! [`RunLimits`] (per-tool or per-call overrides), merged into the [`Limits`] one call runs under.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the sandbox runs code. Deserialised from the operator's config; every field has a default
/// so an empty table is a valid config (except `worker_command`, which the binary fills in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// QuickJS heap limit per call, bytes (the runtime's own allocator accounting).
    pub memory_limit_bytes: usize,
    /// JavaScript stack limit, bytes. Deep recursion ends in a `RangeError`, not a crash.
    pub stack_limit_bytes: usize,
    /// Default deadline of a call, ms; a tool or a call may override it (see [`RunLimits`]).
    pub deadline_ms: u64,
    /// The longest deadline an override may ask for, ms. A model-supplied `timeout_ms` above
    /// it is refused by `run_sandbox_code`; any other override is cut to it.
    pub max_deadline_ms: u64,
    /// How long past its deadline a call may run before the watchdog kills its worker, ms.
    /// The interrupt handler normally stops code at the deadline; this covers native builtins
    /// that never poll it (`new Array(1e9).join('')`) and host calls that hang.
    pub grace_ms: u64,
    /// Largest result, bytes of JSON text; larger is an `output_too_large` failure.
    pub max_result_bytes: usize,
    /// Captured `console.*` output per call, bytes; further output is dropped with a marker.
    pub max_log_bytes: usize,
    /// Captured `console.*` calls per call; further calls are dropped with a marker.
    pub max_log_entries: usize,
    /// `fetch` requests per call; the next one throws in the agent's code.
    pub max_fetches: u32,
    /// Warm worker processes kept ready. Calls beyond this many at once start extra workers.
    pub pool_size: usize,
    /// Calls one worker serves before it is replaced, so that nothing accumulates in a
    /// long-lived process (allocator fragmentation, QuickJS atoms).
    pub max_calls_per_worker: u64,
    /// The command that starts a worker: program and arguments. The `wright` binary re-executes
    /// itself with a hidden subcommand that calls [`crate::worker_main`]; tests use the
    /// `wright-sandbox-worker` binary.
    pub worker_command: Vec<String>,
    /// Whether workers install their syscall filter (seccomp; see `confine.rs`). On by default;
    /// turn it off only where the kernel or a container refuses seccomp filters, which makes
    /// every worker fail to start.
    pub syscall_filter: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            memory_limit_bytes: 64 * 1024 * 1024,
            stack_limit_bytes: 1024 * 1024,
            deadline_ms: 30_000,
            max_deadline_ms: 60_000,
            grace_ms: 250,
            max_result_bytes: 1024 * 1024,
            max_log_bytes: 64 * 1024,
            max_log_entries: 1_000,
            max_fetches: 20,
            pool_size: 2,
            max_calls_per_worker: 10_000,
            worker_command: Vec::new(),
            syscall_filter: true,
        }
    }
}

/// Overrides for one tool or one call; `None` keeps the config's value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunLimits {
    pub memory_limit_bytes: Option<usize>,
    pub stack_limit_bytes: Option<usize>,
    pub deadline_ms: Option<u64>,
    pub max_result_bytes: Option<usize>,
    pub max_log_bytes: Option<usize>,
    pub max_log_entries: Option<usize>,
    pub max_fetches: Option<u32>,
}

impl RunLimits {
    /// Limits with only a deadline set — the common per-tool override.
    pub fn with_deadline(deadline: Duration) -> Self {
        RunLimits { deadline_ms: Some(deadline.as_millis().try_into().unwrap_or(u64::MAX)), ..RunLimits::default() }
    }

    /// `other`'s values where it has them, else ours: a call's overrides over a tool's.
    pub fn or(&self, other: &RunLimits) -> RunLimits {
        RunLimits {
            memory_limit_bytes: other.memory_limit_bytes.or(self.memory_limit_bytes),
            stack_limit_bytes: other.stack_limit_bytes.or(self.stack_limit_bytes),
            deadline_ms: other.deadline_ms.or(self.deadline_ms),
            max_result_bytes: other.max_result_bytes.or(self.max_result_bytes),
            max_log_bytes: other.max_log_bytes.or(self.max_log_bytes),
            max_log_entries: other.max_log_entries.or(self.max_log_entries),
            max_fetches: other.max_fetches.or(self.max_fetches),
        }
    }
}

/// The limits one call runs under, after overrides. Sent to the worker with the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub memory_limit_bytes: usize,
    pub stack_limit_bytes: usize,
    pub deadline_ms: u64,
    pub max_result_bytes: usize,
    pub max_log_bytes: usize,
    pub max_log_entries: usize,
    pub max_fetches: u32,
}

/// Bounds on what a config or an override may ask for. A stack bigger than the worker thread's
/// would turn a `RangeError` into a crash; a tiny heap could not even hold the prelude.
pub(crate) const MIN_MEMORY_LIMIT_BYTES: usize = 1024 * 1024;
pub(crate) const MAX_STACK_LIMIT_BYTES: usize = 32 * 1024 * 1024;

impl Limits {
    pub(crate) fn resolve(config: &SandboxConfig, overrides: &RunLimits) -> Limits {
        Limits {
            memory_limit_bytes: overrides
                .memory_limit_bytes
                .unwrap_or(config.memory_limit_bytes)
                .max(MIN_MEMORY_LIMIT_BYTES),
            stack_limit_bytes: overrides
                .stack_limit_bytes
                .unwrap_or(config.stack_limit_bytes)
                .clamp(64 * 1024, MAX_STACK_LIMIT_BYTES),
            deadline_ms: overrides
                .deadline_ms
                .unwrap_or(config.deadline_ms)
                .min(config.max_deadline_ms.max(config.deadline_ms))
                .max(1),
            max_result_bytes: overrides.max_result_bytes.unwrap_or(config.max_result_bytes),
            max_log_bytes: overrides.max_log_bytes.unwrap_or(config.max_log_bytes),
            max_log_entries: overrides.max_log_entries.unwrap_or(config.max_log_entries),
            max_fetches: overrides.max_fetches.unwrap_or(config.max_fetches),
        }
    }

    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::resolve(&SandboxConfig::default(), &RunLimits::default())
    }
}
