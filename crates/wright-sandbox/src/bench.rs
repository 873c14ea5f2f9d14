//! Running one piece of code many times and timing it: what `wright sandbox run FILE
//! [--args JSON] [--input FILE] [--repeat N] [--json]` prints, and what the benchmark against
//! the peer sandboxes (`../shared/bench/peers`) uses. The binary only parses arguments.
//! [`run_concurrently`] measures the pool's throughput instead of one call's latency.

use crate::host::SandboxHost;
use crate::outcome::RunOutcome;
use crate::pool::{RunRequest, Sandbox};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// Timings of `runs` calls of the same request, and the last call's outcome.
#[derive(Debug, Clone)]
pub struct RepeatReport {
    pub outcome: RunOutcome,
    pub runs: usize,
    pub median_ms: f64,
    pub p95_ms: f64,
    /// Sequential runs per second: runs / the sum of their latencies.
    pub runs_per_s: f64,
    /// Peak resident memory of this process plus the largest worker, MiB (Linux; 0 elsewhere).
    pub peak_rss_mb: f64,
    /// CPU time per timed call of this process and the workers together, µs ([`CpuClock`]).
    pub cpu_us_per_call: f64,
}

impl RepeatReport {
    /// `{"result", "runs", "median_ms", "p95_ms", "runs_per_s", "peak_rss_mb", "cpu_us_per_call"}`;
    /// on failure
    /// `result` is null and `error` and `kind` say why.
    pub fn to_json(&self) -> Value {
        let mut object = json!({
            "result": Value::Null,
            "runs": self.runs,
            "median_ms": self.median_ms,
            "p95_ms": self.p95_ms,
            "runs_per_s": self.runs_per_s,
            "peak_rss_mb": self.peak_rss_mb,
            "cpu_us_per_call": self.cpu_us_per_call,
        });
        match &self.outcome {
            RunOutcome::Success { result, .. } => object["result"] = result.clone(),
            RunOutcome::Failure { error, kind, .. } => {
                object["error"] = json!(error);
                object["kind"] = json!(kind);
            }
        }
        object
    }

    /// The human form: the outcome as JSON, then one line of timings.
    pub fn to_text(&self) -> String {
        let outcome = serde_json::to_string_pretty(&self.outcome.to_json()).unwrap_or_default();
        format!(
            "{outcome}\nruns {}  median {:.3} ms  p95 {:.3} ms  {:.0} runs/s  peak RSS {:.1} MiB  CPU {:.1} µs/call",
            self.runs, self.median_ms, self.p95_ms, self.runs_per_s, self.peak_rss_mb, self.cpu_us_per_call
        )
    }
}

/// Runs `request` `warmup` times untimed, then `repeat` times (at least once) timed, one after
/// the other, each in a fresh context as always. Latency is the caller's wall time for
/// `Sandbox::run`: IPC, compiling, running and returning the result.
pub async fn run_repeated(
    sandbox: &Sandbox,
    request: &RunRequest,
    host: Arc<dyn SandboxHost>,
    repeat: usize,
    warmup: usize,
) -> RepeatReport {
    for _ in 0..warmup {
        sandbox.run(request.clone(), Arc::clone(&host)).await;
    }
    let runs = repeat.max(1);
    let mut samples = Vec::with_capacity(runs);
    let mut outcome = None;
    let cpu = CpuClock::start(sandbox);
    for _ in 0..runs {
        let request = request.clone();
        let started = Instant::now();
        let this = sandbox.run(request, Arc::clone(&host)).await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        outcome = Some(this);
    }
    let cpu_us_per_call = cpu.micros_per_call(sandbox, runs);
    let total: f64 = samples.iter().sum();
    samples.sort_by(f64::total_cmp);
    let worker_peak =
        sandbox.worker_pids().into_iter().map(|pid| peak_rss_mb(&format!("/proc/{pid}/status"))).fold(0.0, f64::max);
    RepeatReport {
        outcome: outcome.unwrap_or_else(|| RunOutcome::failure(crate::ErrorKind::Runtime, "no run", Vec::new())),
        runs,
        median_ms: median(&samples),
        p95_ms: nearest_rank(&samples, 0.95),
        runs_per_s: if total > 0.0 { runs as f64 / (total / 1000.0) } else { 0.0 },
        peak_rss_mb: peak_rss_mb("/proc/self/status") + worker_peak,
        cpu_us_per_call,
    }
}

/// How many calls a pool serves per second when `concurrency` callers keep it busy.
#[derive(Debug, Clone, Copy)]
pub struct ThroughputReport {
    pub concurrency: usize,
    pub calls: usize,
    /// Calls whose outcome was not a success (they count in `calls`, so a broken run shows).
    pub failures: usize,
    pub seconds: f64,
    pub calls_per_s: f64,
    /// CPU time per call of this process and the workers together, µs ([`CpuClock`]).
    pub cpu_us_per_call: f64,
}

impl ThroughputReport {
    pub fn to_json(&self) -> Value {
        json!({
            "concurrency": self.concurrency,
            "calls": self.calls,
            "failures": self.failures,
            "seconds": self.seconds,
            "calls_per_s": self.calls_per_s,
            "cpu_us_per_call": self.cpu_us_per_call,
        })
    }
}

/// Runs `total` calls of `request` from `concurrency` callers at once (each starts its next call
/// when its last one ends), after `warmup` untimed calls per caller. With `concurrency` equal
/// to the pool size this is the pool's throughput: every worker always has a call waiting.
pub async fn run_concurrently(
    sandbox: &Sandbox,
    request: &RunRequest,
    host: Arc<dyn SandboxHost>,
    concurrency: usize,
    total: usize,
    warmup: usize,
) -> ThroughputReport {
    let concurrency = concurrency.max(1);
    let caller = |calls: usize| {
        let (sandbox, request, host) = (sandbox.clone(), request.clone(), Arc::clone(&host));
        async move {
            let mut failures = 0;
            for _ in 0..calls {
                if !matches!(sandbox.run(request.clone(), Arc::clone(&host)).await, RunOutcome::Success { .. }) {
                    failures += 1;
                }
            }
            failures
        }
    };
    let mut warmups = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        warmups.spawn(caller(warmup));
    }
    warmups.join_all().await;
    let started = Instant::now();
    let cpu = CpuClock::start(sandbox);
    let mut callers = tokio::task::JoinSet::new();
    for index in 0..concurrency {
        // Spread `total` over the callers; the first ones take the remainder.
        callers.spawn(caller(total / concurrency + usize::from(index < total % concurrency)));
    }
    let failures = callers.join_all().await.into_iter().sum();
    let seconds = started.elapsed().as_secs_f64();
    let cpu_us_per_call = cpu.micros_per_call(sandbox, total);
    ThroughputReport {
        concurrency,
        calls: total,
        failures,
        seconds,
        calls_per_s: if seconds > 0.0 { total as f64 / seconds } else { 0.0 },
        cpu_us_per_call,
    }
}

/// The CPU time this process and the pool's workers have used, read from the kernel's
/// per-thread counters (`/proc/PID/task/*/schedstat`, nanoseconds; Linux only, 0 elsewhere):
/// on a machine with fewer cores than the pool has processes, this — not a call's own path —
/// is what bounds both latency and throughput. Workers are those idle at the start and at the
/// end (all of them, between calls); one replaced in between is left out.
struct CpuClock {
    started: Vec<(String, u64)>,
}

impl CpuClock {
    fn start(sandbox: &Sandbox) -> CpuClock {
        CpuClock { started: Self::processes(sandbox).into_iter().map(|pid| (pid.clone(), cpu_ns(&pid))).collect() }
    }

    fn micros_per_call(&self, sandbox: &Sandbox, calls: usize) -> f64 {
        let now = Self::processes(sandbox);
        let used: u64 = self
            .started
            .iter()
            .filter(|(pid, _)| now.contains(pid))
            .map(|(pid, before)| cpu_ns(pid).saturating_sub(*before))
            .sum();
        used as f64 / 1000.0 / calls.max(1) as f64
    }

    fn processes(sandbox: &Sandbox) -> Vec<String> {
        let mut pids = vec!["self".to_string()];
        pids.extend(sandbox.worker_pids().into_iter().map(|pid| pid.to_string()));
        pids
    }
}

/// Nanoseconds on a CPU of every live thread of process `pid` ("self" for this one).
fn cpu_ns(pid: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The nearest-rank percentile, as the peers' harness computes it.
fn nearest_rank(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn peak_rss_mb(status_path: &str) -> f64 {
    std::fs::read_to_string(status_path)
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
