//! Browser benchmark: launch, new context, navigate-and-extract of a local page, and memory
//! per open context. Medians of 20, std `Instant`; it measures, it asserts nothing.
//!
//! `CARGO_TARGET_DIR=/work/target-browser cargo bench -p wright-browser --bench browser`
//! The same workload in Playwright (playwright-core, same Chromium): `benches/playwright.mjs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use futures::future::BoxFuture;
use wright_browser::shapes::{ExtractTextArgs, NavigateArgs, WaitUntil};
use wright_browser::{BrowserConfig, Browsers, PolicyProxy, RequestPolicy};
use wright_egress::{Egress, EgressConfig, ProxyLimits};

const RUNS: usize = 20;

/// Lets every request through the CDP check; connections go through the real egress proxy,
/// which allows the benchmark page's port.
struct AllowPage(Egress);

impl RequestPolicy for AllowPage {
    fn check<'a>(&'a self, _url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn start_proxy(&self) -> BoxFuture<'_, Result<PolicyProxy, String>> {
        Box::pin(async move {
            let proxy = self.0.start_proxy(ProxyLimits::default()).await.map_err(|error| error.to_string())?;
            Ok(PolicyProxy { address: proxy.address(), guard: Box::new(proxy) })
        })
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Proportional set size (shared pages split between their users, so a process tree's sum
/// is not inflated by shared libraries) of a process and all its descendants, in KiB.
fn tree_rss_kib(root: u32) -> u64 {
    let mut total = 0;
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
            total += rollup
                .lines()
                .find_map(|line| line.strip_prefix("Pss:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Ok(children) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            stack.extend(children.split_whitespace().filter_map(|child| child.parse::<u32>().ok()));
        }
    }
    total
}

#[tokio::main]
async fn main() {
    if wright_browser::find_chromium().is_none() {
        eprintln!("SKIPPED: Chromium not found (apt-get install -y chromium)");
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let page = "<html><head><title>Bench</title></head><body><h1>Benchmark page</h1>\
                <p id=\"text\">Some text to extract from a small local page.</p></body></html>";
    let router = Router::new().route("/", get(move || async move { Html(page) }));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let url = format!("http://{address}/");
    let allow = vec![format!("127.0.0.1:{}", address.port())];
    let egress = Egress::new(EgressConfig { allow, ..EgressConfig::default() }).unwrap();
    let policy: Arc<dyn RequestPolicy> = Arc::new(AllowPage(egress));

    // Launch: a new browser each run (warm_up starts it without a context).
    let mut launches = Vec::new();
    for _ in 0..RUNS {
        let browsers = Browsers::new(BrowserConfig::default(), Arc::clone(&policy));
        let start = Instant::now();
        browsers.warm_up().await.unwrap();
        launches.push(start.elapsed());
        browsers.shut_down().await;
    }

    let browsers =
        Browsers::new(BrowserConfig { max_contexts: RUNS + 1, ..BrowserConfig::default() }, Arc::clone(&policy));
    browsers.warm_up().await.unwrap();
    let pid = browsers.browser_pid().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base_rss = tree_rss_kib(pid);
    if base_rss == 0 {
        eprintln!(
            "note: no /proc/{pid}/status readable; memory figures will be 0: {:?}",
            std::fs::read_to_string(format!("/proc/{pid}/status")).map(|s| s
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | "))
        );
    }

    // New context: the first call of a conversation (context + page), with a trivial op.
    let navigate = NavigateArgs { url: url.clone(), wait_until: WaitUntil::Load };
    let extract = ExtractTextArgs { selector: Some("#text".to_string()) };
    let mut contexts = Vec::new();
    for run in 0..RUNS {
        let start = Instant::now();
        browsers
            .evaluate(&format!("c{run}"), &wright_browser::shapes::EvaluateArgs { code: "1".into() })
            .await
            .unwrap();
        contexts.push(start.elapsed());
    }
    // Memory per open context: RUNS contexts, each with the local page loaded.
    for run in 0..RUNS {
        browsers.navigate(&format!("c{run}"), &navigate).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let loaded_rss = tree_rss_kib(pid);

    // Navigate-and-extract in one warm conversation.
    let mut round_trips = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        browsers.navigate("c0", &navigate).await.unwrap();
        let text = browsers.extract_text("c0", &extract).await.unwrap();
        assert!(text.value.text.starts_with("Some text"));
        round_trips.push(start.elapsed());
    }
    browsers.shut_down().await;

    println!("wright-browser (chromiumoxide, through the egress proxy), median of {RUNS}:");
    println!("  launch                 {:>8.1} ms", median(launches).as_secs_f64() * 1e3);
    println!("  new context + page     {:>8.1} ms", median(contexts).as_secs_f64() * 1e3);
    println!("  navigate + extract     {:>8.1} ms", median(round_trips).as_secs_f64() * 1e3);
    println!(
        "  memory per context     {:>8.1} MiB  (browser tree {:.0} MiB idle, {:.0} MiB with {RUNS} contexts)",
        (loaded_rss.saturating_sub(base_rss)) as f64 / RUNS as f64 / 1024.0,
        base_rss as f64 / 1024.0,
        loaded_rss as f64 / 1024.0
    );
}
