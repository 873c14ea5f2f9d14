//! `sandbox_run FILE [--args JSON] [--input FILE] [--repeat N] [--warmup N] [--json]
//! [--concurrency C] [--pool N]`: what `wright sandbox run` does, for benchmarking this crate alone (the
//! worker is the `wright-sandbox-worker` binary next to this example's directory). With
//! `--concurrency C` it reports throughput instead: N calls from C callers at once, on a pool
//! of C workers (or `--pool N`; the default is the config's 2).

use std::sync::Arc;
use wright_sandbox::{MemoryHost, RunRequest, Sandbox, SandboxConfig, run_concurrently, run_repeated};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let mut file = None;
    let mut request = RunRequest::new("");
    let (mut repeat, mut warmup, mut as_json, mut concurrency, mut pool) = (1usize, 0usize, false, None, None);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--args" => request.args = serde_json::from_str(&arguments.next().ok_or("--args JSON")?)?,
            "--input" => request.input = Some(std::fs::read_to_string(arguments.next().ok_or("--input FILE")?)?),
            "--repeat" => repeat = arguments.next().ok_or("--repeat N")?.parse()?,
            "--warmup" => warmup = arguments.next().ok_or("--warmup N")?.parse()?,
            "--json" => as_json = true,
            "--pool" => pool = Some(arguments.next().ok_or("--pool N")?.parse::<usize>()?),
            "--concurrency" => concurrency = Some(arguments.next().ok_or("--concurrency C")?.parse::<usize>()?),
            _ => file = Some(argument),
        }
    }
    request.code = std::fs::read_to_string(
        file.ok_or("usage: sandbox_run FILE [--args JSON] [--input FILE] [--repeat N] [--json]")?,
    )?;
    // target/<profile>/examples/sandbox_run -> target/<profile>/wright-sandbox-worker
    let worker = std::env::current_exe()?
        .parent()
        .and_then(|dir| dir.parent())
        .ok_or("no exe dir")?
        .join("wright-sandbox-worker");
    let mut config =
        SandboxConfig { worker_command: vec![worker.to_string_lossy().into_owned()], ..SandboxConfig::default() };
    if let Some(size) = pool.or(concurrency) {
        config.pool_size = size;
    }
    let sandbox = Sandbox::new(config)?;
    if let Some(concurrency) = concurrency {
        let report =
            run_concurrently(&sandbox, &request, Arc::new(MemoryHost::new()), concurrency, repeat, warmup).await;
        println!("{}", report.to_json());
        return Ok(());
    }
    let report = run_repeated(&sandbox, &request, Arc::new(MemoryHost::new()), repeat, warmup).await;
    if as_json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.to_text());
    }
    Ok(())
}
