//! A subprocess peer for `../shared/bench/peers` (`PEERS_EXTRA='wright=/abs/path/peer'`): reads
//! the harness's program from stdin, runs it as sandbox code in this process, and prints what it
//! logged (the "stdout" protocol: the program is `console.log(JSON.stringify(...))`, which is a
//! valid tool body). One process per run, like the node/bun/deno peers; the interrupt handler
//! and the memory limit are the only guards, which is fine for a process that exits anyway.
//!
//! `--deadline-ms N` (default 10000) and `--memory-mb N` (default 32, the harness's limit).

use std::io::Read;
use wright_sandbox::{RunLimits, RunOutcome, RunRequest, SandboxConfig, run_in_this_process};

fn main() {
    let mut arguments = std::env::args().skip(1);
    let mut limits =
        RunLimits { deadline_ms: Some(10_000), memory_limit_bytes: Some(32 * 1024 * 1024), ..RunLimits::default() };
    while let Some(argument) = arguments.next() {
        let value = arguments.next().and_then(|value| value.parse::<u64>().ok());
        match (argument.as_str(), value) {
            ("--deadline-ms", Some(ms)) => limits.deadline_ms = Some(ms),
            ("--memory-mb", Some(mb)) => limits.memory_limit_bytes = Some(mb as usize * 1024 * 1024),
            _ => {
                eprintln!("usage: peer [--deadline-ms N] [--memory-mb N] < program.js");
                std::process::exit(2);
            }
        }
    }
    let mut code = String::new();
    if let Err(error) = std::io::stdin().read_to_string(&mut code) {
        eprintln!("peer: {error}");
        std::process::exit(2);
    }
    let outcome = run_in_this_process(&RunRequest::new(code).with_limits(limits), &SandboxConfig::default());
    for line in outcome.logs() {
        println!("{line}");
    }
    if let RunOutcome::Failure { error, kind, .. } = &outcome {
        eprintln!("{kind}: {error}");
        std::process::exit(1);
    }
}
