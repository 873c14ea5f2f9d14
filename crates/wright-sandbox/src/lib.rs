//! `wright-sandbox`: runs agent-written JavaScript in QuickJS (rquickjs), in warm worker
//! processes under a watchdog.
//!
//! The code of a tool or of `run_sandbox_code` is the body of an async function: `return value`
//! or `resolve(value)` ends it. Its globals are `args`, `input`, `state.get/set/delete/list`,
//! `fetch`, `console.*` and `resolve` (`sandbox-prelude/`); nothing else of the host exists — no
//! modules, filesystem, process or timers. All but `args` and `input`, and the builtins
//! `ArrayBuffer`, `DataView`, the typed arrays, `Date`, `Map`, `Set`, `WeakMap`, `WeakSet`,
//! `Proxy` and `RegExp`, exist for code that names them (outside `//` comment lines): building
//! them into every context would cost most calls more than their code does. A name assembled at
//! run time does not bring them; a regular expression literal always does.
//!
//! Public surface:
//! - [`Sandbox::new`]`(`[`SandboxConfig`]`)` and [`Sandbox::run`]`(`[`RunRequest`]`,
//!   Arc<dyn `[`SandboxHost`]`>) -> `[`RunOutcome`] — `{result, logs}` or `{error, kind, logs}`
//!   with kind one of `syntax`, `runtime`, `timeout`, `memory`, `output_too_large`.
//! - [`check_syntax`] — refuse code that does not compile, with line and column, without
//!   running any of it.
//! - [`worker_main`] — the worker process's loop; the `wright` binary calls it from a hidden
//!   subcommand named in [`SandboxConfig::worker_command`].
//! - [`run_repeated`] — timings for `wright sandbox run FILE --repeat N`.
//!
//! Guarantees:
//! - Every call runs in a fresh context; nothing one call does is visible to the next.
//! - A worker compiles a given code text once and keeps its bytecode under that exact text
//!   (bounded): an edited or rolled-back tool never runs another text's bytecode.
//! - Memory (QuickJS's allocator limit), stack and result size are capped per call; logs are
//!   capped and marked when truncated; `fetch` is counted (20 per call by default).
//! - The deadline holds for real: the interrupt handler and every host function check it, and
//!   a call still running at deadline + grace has its worker killed and replaced.
//! - This crate knows nothing of tools, models, the app database or HTTP: `state` and `fetch`
//!   reach the world only through the caller's [`SandboxHost`].

mod allocator;
mod bench;
mod compiled;
mod config;
mod confine;
mod engine;
mod host;
mod outcome;
mod pool;
mod protocol;
mod worker;

pub use bench::{RepeatReport, ThroughputReport, run_concurrently, run_repeated};
pub use config::{Limits, RunLimits, SandboxConfig};
pub use host::{FetchRequest, FetchResponse, HostFuture, MemoryHost, SandboxHost};
pub use outcome::{ErrorKind, RunOutcome};
pub use pool::{RunRequest, Sandbox};
#[cfg(feature = "profiling")]
pub use worker::serve_unconfined_for_profiling;
pub use worker::worker_main;

/// What can go wrong around the code (the code's own failures are [`RunOutcome`]s).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The code does not compile. `line` and `column` are 1-based, in the agent's text.
    #[error("{message} (line {line}, column {column})")]
    Syntax { message: String, line: u32, column: u32 },
    #[error("invalid sandbox config: {0}")]
    Config(String),
    #[error("could not start a sandbox worker (`{command}`): {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("QuickJS: {0}")]
    Engine(String),
    #[error("sandbox worker protocol: {0}")]
    Protocol(String),
}

/// Compiles `code` as a tool body without running any of it: `create_tool` and `update_tool`
/// refuse code that fails here. Takes about as long as parsing; no worker is involved.
pub fn check_syntax(code: &str) -> Result<(), SandboxError> {
    engine::check_syntax(code)
}

/// Runs `request` in this thread with no worker and no watchdog: only the interrupt handler
/// enforces the deadline, so a native builtin can overrun it. For a process that is itself
/// disposable — the benchmark's subprocess peer — never for the server. Host calls fail.
pub fn run_in_this_process(request: &RunRequest, config: &SandboxConfig) -> RunOutcome {
    let limits = Limits::resolve(config, &request.limits);
    let mut engine = engine::Engine::new(Box::new(engine::NoHost));
    let wire = engine.run(&request.code, &request.args, request.input.as_deref(), &limits);
    pool::into_outcome(wire)
}
