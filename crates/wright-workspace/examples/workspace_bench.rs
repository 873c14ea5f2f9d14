//! Measures the workspace (report, don't assert): `grep` over a directory against `rg` on the
//! same tree, and the fixed cost of a confined `bash -c true` against a plain one.
//!
//! ```text
//! cargo run --release -p wright-workspace --example workspace_bench -- grep TREE PATTERN [RUNS]
//! cargo run --release -p wright-workspace --example workspace_bench -- bash [RUNS]
//! ```
//! TREE is used as an operator root (read-only); DATA for the agent's workspace is a temp dir.

use std::time::{Duration, Instant};

use wright_core::AgentId;
use wright_workspace::{GrepMode, GrepRequest, RootConfig, ShellRequest, WorkspaceConfig, Workspaces};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let data = tempfile::tempdir()?;
    match arguments.first().map(String::as_str) {
        Some("grep") => {
            let tree = std::path::PathBuf::from(&arguments[1]);
            let pattern = &arguments[2];
            let runs: usize = arguments.get(3).map_or(Ok(10), |runs| runs.parse())?;
            let config = WorkspaceConfig {
                roots: vec![RootConfig { path: tree.clone(), writable: false }],
                ..Default::default()
            };
            let workspace = Workspaces::new(data.path(), config)?.open(&AgentId::default_agent())?;
            for mode in [GrepMode::Content, GrepMode::FilesWithMatches] {
                let request = GrepRequest {
                    pattern: pattern.clone(),
                    path: Some(tree.display().to_string()),
                    mode,
                    ..Default::default()
                };
                let mut samples = Vec::new();
                let mut outcome = None;
                for _ in 0..runs {
                    let started = Instant::now();
                    outcome = Some(workspace.grep(&request)?);
                    samples.push(started.elapsed());
                }
                let outcome = outcome.expect("at least one run");
                let mut rg_samples = Vec::new();
                let flag = if mode == GrepMode::Content { "-n" } else { "-l" };
                let mut rg_lines = 0;
                for _ in 0..runs {
                    let started = Instant::now();
                    let output = std::process::Command::new("rg").args([flag, pattern.as_str()]).arg(&tree).output()?;
                    rg_samples.push(started.elapsed());
                    rg_lines = output.stdout.iter().filter(|byte| **byte == b'\n').count();
                }
                let (ours, rg) = (median(samples), median(rg_samples));
                println!(
                    "grep {mode:?}: wright {ours:?} ({} lines, {} files searched) | rg {rg:?} ({rg_lines} lines) | ratio {:.2}",
                    outcome.output.lines().count(),
                    outcome.files_searched,
                    ours.as_secs_f64() / rg.as_secs_f64()
                );
            }
        }
        Some("bash") => {
            let runs: usize = arguments.get(1).map_or(Ok(50), |runs| runs.parse())?;
            let workspace = Workspaces::new(data.path(), WorkspaceConfig::default())?.open(&AgentId::default_agent())?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let request = ShellRequest { command: "true".into(), timeout_ms: None, cwd: None };
            let mut confined = Vec::new();
            let mut plain = Vec::new();
            for _ in 0..runs {
                let started = Instant::now();
                let outcome = runtime.block_on(workspace.run(&request))?;
                confined.push(started.elapsed());
                assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
                let started = Instant::now();
                let status = runtime.block_on(async {
                    tokio::process::Command::new("/bin/bash").args(["-c", "true"]).status().await
                })?;
                plain.push(started.elapsed());
                assert!(status.success());
            }
            let (confined, plain) = (median(confined), median(plain));
            println!(
                "bash -c true: confined {confined:?} | plain {plain:?} | fixed cost of confinement {:?}",
                confined.saturating_sub(plain)
            );
        }
        _ => anyhow::bail!("usage: workspace_bench grep TREE PATTERN [RUNS] | bash [RUNS]"),
    }
    Ok(())
}
