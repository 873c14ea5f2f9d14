//! [`Sandbox`]: a pool of warm worker processes and the watchdog that enforces deadlines.
//!
//! A call takes an idle worker (or starts one), sends it the code, answers its host calls
//! through the caller's [`SandboxHost`], and waits for its outcome — all under
//! `deadline + grace`. If that expires the worker is killed (SIGKILL, whatever it is doing:
//! a native builtin that never polls the interrupt handler, a hung host call) and replaced, and
//! the call fails with kind `timeout`. The host process never runs agent code, so nothing the
//! code does can crash or hold it.

use crate::SandboxError;
use crate::config::{Limits, RunLimits, SandboxConfig};
use crate::host::SandboxHost;
use crate::outcome::{ErrorKind, RunOutcome};
use crate::protocol::{DoneOutcome, FromWorker, HostCall, ResultText, ToWorker, WireOutcome};
use serde_json::Value;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

/// One call: the code (the body of an async function), its `args`, optionally the text bound to
/// `input`, and overrides of the config's limits (a tool's deadline, a call's deadline).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub code: String,
    pub args: Value,
    pub input: Option<String>,
    pub limits: RunLimits,
}

impl RunRequest {
    pub fn new(code: impl Into<String>) -> Self {
        RunRequest {
            code: code.into(),
            args: Value::Object(Default::default()),
            input: None,
            limits: RunLimits::default(),
        }
    }

    pub fn with_args(mut self, args: Value) -> Self {
        self.args = args;
        self
    }

    pub fn with_input(mut self, input: impl Into<String>) -> Self {
        self.input = Some(input.into());
        self
    }

    pub fn with_limits(mut self, limits: RunLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// The sandbox. Cheap to clone; all clones share one pool.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    config: SandboxConfig,
    /// Idle workers, oldest-idle first: the one taken has had the longest to prepare its next
    /// context. Locked only to push or pop, never across an await. A worker is owned by exactly
    /// one call while it runs; a dropped worker is killed (`kill_on_drop`).
    idle: Mutex<VecDeque<Worker>>,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    calls: u64,
    line: String,
}

/// Why an exchange with a worker ended early.
enum ExchangeError {
    /// The worker exited or its pipe broke (a crash, or the OS killed it).
    Died(String),
    Protocol(String),
}

impl Sandbox {
    /// Checks the config and starts `pool_size` workers. Must be called inside a Tokio runtime
    /// (the workers' pipes are registered with it).
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        if config.worker_command.is_empty() {
            return Err(SandboxError::Config("worker_command is empty: say how to start a sandbox worker".to_string()));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(SandboxError::Config("Sandbox::new must be called inside a Tokio runtime".to_string()));
        }
        let sandbox = Sandbox { inner: Arc::new(Inner { config, idle: Mutex::new(VecDeque::new()) }) };
        for _ in 0..sandbox.inner.config.pool_size {
            let worker = sandbox.spawn_worker()?;
            sandbox.give_back(worker);
        }
        Ok(sandbox)
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The limits a request would run under.
    pub fn limits_for(&self, overrides: &RunLimits) -> Limits {
        Limits::resolve(&self.inner.config, overrides)
    }

    /// Process ids of the idle workers (for measuring their memory).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.inner
            .idle
            .lock()
            .map(|idle| idle.iter().filter_map(|worker| worker.child.id()).collect())
            .unwrap_or_default()
    }

    /// Runs one call. Every failure of the code — syntax, exception, deadline, memory, result
    /// size, a crashed worker — is a [`RunOutcome::Failure`]; this never returns a Rust error.
    ///
    /// Cancel-safe: dropping the future kills the worker running the call.
    pub async fn run(&self, request: RunRequest, host: Arc<dyn SandboxHost>) -> RunOutcome {
        let limits = Limits::resolve(&self.inner.config, &request.limits);
        let mut worker = match self.take_worker() {
            Ok(worker) => worker,
            Err(error) => {
                return RunOutcome::failure(
                    ErrorKind::Runtime,
                    format!("the sandbox could not start: {error}"),
                    Vec::new(),
                );
            }
        };
        let deadline = Instant::now() + limits.deadline();
        let kill_at = deadline + Duration::from_millis(self.inner.config.grace_ms);
        let message = match ToWorker::encode_run(&request.code, request.input.as_deref(), &request.args, limits) {
            Ok(message) => message,
            Err(error) => {
                self.give_back(worker);
                return RunOutcome::failure(
                    ErrorKind::Runtime,
                    format!("the call cannot be sent: {error}"),
                    Vec::new(),
                );
            }
        };
        let exchange = exchange(&mut worker, &message, host.as_ref(), deadline, limits.max_result_bytes);
        match tokio::time::timeout_at(kill_at, exchange).await {
            Ok(Ok(wire)) => {
                worker.calls += 1;
                self.give_back(worker);
                into_outcome(wire)
            }
            Ok(Err(error)) => {
                let detail = match error {
                    ExchangeError::Died(detail) | ExchangeError::Protocol(detail) => detail,
                };
                let status = self.retire(worker).await;
                tracing::warn!(%detail, ?status, "sandbox worker failed");
                let error = match status {
                    // SIGKILL from outside (the kernel's OOM killer, an operator).
                    Some(9) => "the sandbox worker was killed (out of system memory?)".to_string(),
                    _ => format!("the sandbox worker failed: {detail}"),
                };
                RunOutcome::failure(ErrorKind::Runtime, error, Vec::new())
            }
            Err(_elapsed) => {
                // The watchdog: the code overran its deadline and the grace, so its worker is
                // stopped for sure, whatever it is doing.
                if let Err(error) = worker.child.start_kill() {
                    tracing::debug!(%error, "sandbox worker already gone");
                }
                self.retire(worker).await;
                RunOutcome::failure(
                    ErrorKind::Timeout,
                    format!("the code ran past its deadline of {} ms and was stopped", limits.deadline_ms),
                    Vec::new(),
                )
            }
        }
    }

    fn take_worker(&self) -> Result<Worker, SandboxError> {
        let idle = self.inner.idle.lock().ok().and_then(|mut idle| idle.pop_front());
        match idle {
            Some(worker) => Ok(worker),
            None => self.spawn_worker(),
        }
    }

    /// Returns a worker to the pool, or lets it go if the pool is full or it has served its
    /// share of calls (then a fresh one takes its place).
    fn give_back(&self, worker: Worker) {
        let config = &self.inner.config;
        let worn_out = worker.calls >= config.max_calls_per_worker;
        let worker = if worn_out {
            drop(worker);
            match self.spawn_worker() {
                Ok(worker) => worker,
                Err(error) => {
                    tracing::warn!(%error, "could not replace a sandbox worker");
                    return;
                }
            }
        } else {
            worker
        };
        if let Ok(mut idle) = self.inner.idle.lock()
            && idle.len() < config.pool_size.max(1)
        {
            idle.push_back(worker);
        }
    }

    /// Kills a worker, reaps it, and starts its replacement so the pool stays warm. Returns the
    /// signal that ended it, if a signal did before we killed it.
    async fn retire(&self, mut worker: Worker) -> Option<i32> {
        // A worker whose pipe closed has usually exited already; give it a moment so that its
        // own end (a crash, the OOM killer) is what gets reported, not our SIGKILL.
        let exited = tokio::time::timeout(Duration::from_millis(50), worker.child.wait()).await;
        let signal = match exited {
            Ok(Ok(status)) => std::os::unix::process::ExitStatusExt::signal(&status),
            _ => {
                if let Err(error) = worker.child.start_kill() {
                    tracing::debug!(%error, "sandbox worker already gone");
                }
                // Reaping is quick after SIGKILL; bound it anyway so nothing holds the call.
                if tokio::time::timeout(Duration::from_secs(1), worker.child.wait()).await.is_err() {
                    tracing::warn!("a killed sandbox worker was not reaped within 1 s");
                }
                None
            }
        };
        match self.spawn_worker() {
            Ok(fresh) => self.give_back(fresh),
            Err(error) => tracing::warn!(%error, "could not replace a sandbox worker"),
        }
        signal
    }

    fn spawn_worker(&self) -> Result<Worker, SandboxError> {
        let command_line = &self.inner.config.worker_command;
        let mut command = Command::new(&command_line[0]);
        command
            .args(&command_line[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // The worker needs nothing from our environment; keeping it empty keeps API keys
            // and tokens out of a process that runs agent code.
            .env_clear()
            .current_dir("/")
            .kill_on_drop(true);
        if !self.inner.config.syscall_filter {
            command.env(crate::confine::NO_SYSCALL_FILTER, "1");
        }
        let mut child =
            command.spawn().map_err(|source| SandboxError::Spawn { command: command_line.join(" "), source })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SandboxError::Protocol("worker started without pipes".to_string()));
        };
        Ok(Worker { child, stdin, stdout: BufReader::new(stdout), calls: 0, line: String::new() })
    }
}

async fn send(worker: &mut Worker, message: &[u8]) -> Result<(), ExchangeError> {
    worker.stdin.write_all(message).await.map_err(|error| ExchangeError::Died(error.to_string()))?;
    worker.stdin.flush().await.map_err(|error| ExchangeError::Died(error.to_string()))
}

/// One call's conversation with its worker: the request, the host calls, the outcome.
async fn exchange(
    worker: &mut Worker,
    message: &[u8],
    host: &dyn SandboxHost,
    deadline: Instant,
    max_result_bytes: usize,
) -> Result<WireOutcome, ExchangeError> {
    send(worker, message).await?;
    loop {
        worker.line.clear();
        let read =
            worker.stdout.read_line(&mut worker.line).await.map_err(|error| ExchangeError::Died(error.to_string()))?;
        if read == 0 {
            return Err(ExchangeError::Died("the worker exited".to_string()));
        }
        match serde_json::from_str::<FromWorker>(&worker.line) {
            Ok(FromWorker::Done { outcome: DoneOutcome::Ok { result_bytes, string, logs } }) => {
                // The worker refuses results over the limit itself; one that claims more is
                // broken, and the host does not allocate for it.
                if result_bytes > max_result_bytes {
                    return Err(ExchangeError::Protocol(format!(
                        "the worker announced a result of {result_bytes} bytes, over the limit of {max_result_bytes}"
                    )));
                }
                let mut result = vec![0; result_bytes];
                worker.stdout.read_exact(&mut result).await.map_err(|error| ExchangeError::Died(error.to_string()))?;
                let text = String::from_utf8(result).map_err(|error| ExchangeError::Protocol(error.to_string()))?;
                let result = if string { ResultText::String(text) } else { ResultText::Json(text) };
                return Ok(WireOutcome::Ok { result, logs });
            }
            Ok(FromWorker::Done { outcome: DoneOutcome::Err { kind, error, stack, logs } }) => {
                return Ok(WireOutcome::Err { kind, error, stack, logs });
            }
            Ok(FromWorker::Call { call }) => {
                // A host call counts against the call's deadline: past it, the code gets an
                // error and the worker's own deadline check turns the call into a timeout.
                let message = match tokio::time::timeout_at(deadline, dispatch(host, call)).await {
                    Ok(reply) => ToWorker::Reply { reply, deadline_passed: false },
                    Err(_elapsed) => ToWorker::Reply {
                        reply: Err("the call's deadline passed while the host was answering".to_string()),
                        deadline_passed: true,
                    },
                };
                let message = message.encode_line().map_err(|error| ExchangeError::Protocol(error.to_string()))?;
                send(worker, &message).await?;
            }
            Err(error) => return Err(ExchangeError::Protocol(format!("bad message from worker: {error}"))),
        }
    }
}

async fn dispatch(host: &dyn SandboxHost, call: HostCall) -> Result<Value, String> {
    match call {
        HostCall::StateGet { key } => host.state_get(&key).await.map(|value| value.unwrap_or(Value::Null)),
        HostCall::StateSet { key, value } => host.state_set(&key, value).await.map(|()| Value::Null),
        HostCall::StateDelete { key } => host.state_delete(&key).await.map(Value::Bool),
        HostCall::StateList { prefix } => host
            .state_list(prefix.as_deref())
            .await
            .map(|keys| Value::Array(keys.into_iter().map(Value::String).collect())),
        HostCall::Fetch(request) => {
            let response = host.fetch(request).await?;
            serde_json::to_value(response).map_err(|error| error.to_string())
        }
    }
}

pub(crate) fn into_outcome(wire: WireOutcome) -> RunOutcome {
    match wire {
        WireOutcome::Ok { result: ResultText::String(text), logs } => {
            RunOutcome::Success { result: Value::String(text), logs }
        }
        WireOutcome::Ok { result: ResultText::Json(text), logs } => match serde_json::from_str(&text) {
            Ok(result) => RunOutcome::Success { result, logs },
            // JSON.stringify keeps lone surrogates as `\udXXX` escapes, which are not Unicode.
            Err(error) => RunOutcome::failure(
                ErrorKind::Runtime,
                format!("the result is not valid JSON text ({error}); it may hold a lone surrogate"),
                logs,
            ),
        },
        WireOutcome::Err { kind, error, stack, logs } => RunOutcome::Failure { error, kind, stack, logs },
    }
}
