//! Measures the workspace (report, don't assert): `grep` over a directory against `rg` on the
//! same tree, and the fixed cost of a confined `bash -c true` against a plain one, without and
//! with network (through the egress proxy and the forwarder).
//!
//! ```text
//! cargo build --release -p wright-workspace --bins --examples
//! target/release/examples/workspace_bench grep TREE PATTERN [RUNS]
//! target/release/examples/workspace_bench bash [RUNS] [FORWARDER [ARGUMENTS...]]
//! ```
//! TREE is used as an operator root (read-only); DATA for the agent's workspace is a temp dir.
//! FORWARDER defaults to the `wright-shell-forward` binary next to the example's directory; pass
//! a `wright` binary and `__shell-forward` to measure the one the server uses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wright_core::AgentId;
use wright_egress::{Egress, EgressConfig};
use wright_workspace::{
    Forwarder, GrepMode, GrepRequest, RootConfig, ShellNetwork, ShellProxy, ShellRequest, WorkspaceConfig, Workspaces,
};

/// The egress proxy as the shell's (what wright-tools does for the server).
#[derive(Debug)]
struct BenchProxy(Egress);

impl ShellProxy for BenchProxy {
    fn serve(&self, listener: tokio::net::UnixListener) -> Result<Box<dyn Send + Sync>, String> {
        let proxy =
            self.0.serve_proxy_on(listener, self.0.config().proxy.clone()).map_err(|error| error.to_string())?;
        Ok(Box::new(proxy))
    }
}

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
            let forwarder = match arguments.get(2) {
                Some(program) => Forwarder { program: program.into(), arguments: arguments[3..].to_vec() },
                // target/<profile>/examples/workspace_bench -> target/<profile>/wright-shell-forward
                None => Forwarder {
                    program: std::env::current_exe()?
                        .parent()
                        .and_then(std::path::Path::parent)
                        .ok_or_else(|| anyhow::anyhow!("no target directory"))?
                        .join("wright-shell-forward"),
                    arguments: Vec::new(),
                },
            };
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let workspace = Workspaces::new(data.path(), WorkspaceConfig::default())?.open(&AgentId::default_agent())?;
            let mut networked_config = WorkspaceConfig::default();
            networked_config.shell.network = true;
            let network = ShellNetwork {
                proxy: Arc::new(BenchProxy(Egress::new(EgressConfig::default())?)),
                forwarder: forwarder.clone(),
            };
            let networked = Workspaces::new(data.path(), networked_config)?
                .with_network(network)?
                .open(&AgentId::default_agent())?;
            anyhow::ensure!(networked.shell_network(), "the networked shell is off: {:?}", networked.shell_status());
            let request = ShellRequest { command: "true".into(), timeout_ms: None, cwd: None };
            let (mut confined, mut with_network, mut plain) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                let started = Instant::now();
                let outcome = runtime.block_on(workspace.run(&request))?;
                confined.push(started.elapsed());
                assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
                let started = Instant::now();
                let outcome = runtime.block_on(networked.run(&request))?;
                with_network.push(started.elapsed());
                assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
                let started = Instant::now();
                let status = runtime.block_on(async {
                    tokio::process::Command::new("/bin/bash").args(["-c", "true"]).status().await
                })?;
                plain.push(started.elapsed());
                assert!(status.success());
            }
            let (confined, with_network, plain) = (median(confined), median(with_network), median(plain));
            println!(
                "bash -c true ({runs} runs, medians): plain {plain:?} | confined, no network {confined:?} (+{:?}) | \
                 confined, network through {} {with_network:?} (+{:?} over no network)",
                confined.saturating_sub(plain),
                forwarder.program.display(),
                with_network.saturating_sub(confined),
            );
        }
        _ => anyhow::bail!("usage: workspace_bench grep TREE PATTERN [RUNS] | bash [RUNS] [FORWARDER [ARGUMENTS...]]"),
    }
    Ok(())
}
