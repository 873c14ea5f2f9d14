//! Egress benchmark (std `Instant`, medians): the cost of one policy check, and a 1 MiB fetch
//! from a local server through the guard compared with plain reqwest against the same server.
//!
//! Run: `cargo bench -p wright-egress` (release). The guard's goal is under 5% overhead on the
//! fetch.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::get;
use wright_egress::{Egress, EgressConfig, EgressRequest, StaticResolver, classify};

const BODY_BYTES: usize = 1024 * 1024;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median per-call time over `rounds` rounds of `per_round` calls.
fn time_sync(rounds: usize, per_round: u32, mut f: impl FnMut()) -> Duration {
    let samples = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_round {
                f();
            }
            start.elapsed() / per_round
        })
        .collect();
    median(samples)
}

async fn serve() -> SocketAddr {
    let body = Bytes::from(vec![b'x'; BODY_BYTES]);
    let router = Router::new().route(
        "/body",
        get(move || {
            let body = body.clone();
            async move { ([("content-type", "application/octet-stream")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let address = serve().await;
    let resolver = StaticResolver::new()
        .with("example.com", &["93.184.215.14".parse().unwrap()])
        .with("bench.test", &[address.ip()]);
    let config = EgressConfig {
        allow: vec![address.to_string(), format!("bench.test:{}", address.port())],
        max_body_bytes: 2 * BODY_BYTES,
        ..EgressConfig::default()
    };
    let egress = Egress::with_resolver(config, Arc::new(resolver)).unwrap();

    // Policy checks.
    let public_v6: std::net::IpAddr = "2606:4700:4700::1111".parse().unwrap();
    let address_only = time_sync(31, 100_000, || {
        std::hint::black_box(classify(std::hint::black_box(public_v6)));
    });
    let mut check_literal = Vec::new();
    let mut check_name = Vec::new();
    let mut check_denied = Vec::new();
    for _ in 0..31 {
        for (samples, url) in [
            (&mut check_literal, "http://93.184.215.14/path?q=1"),
            (&mut check_name, "https://example.com/path?q=1"),
            (&mut check_denied, "http://[::ffff:169.254.169.254]/latest/meta-data/"),
        ] {
            let start = Instant::now();
            for _ in 0..10_000 {
                std::hint::black_box(egress.check(std::hint::black_box(url)).await);
            }
            samples.push(start.elapsed() / 10_000);
        }
    }
    println!("policy check (median per call)");
    println!("  classify one address          {:>10.0?}", address_only);
    println!("  check IP-literal URL (allow)  {:>10.0?}", median(check_literal));
    println!("  check named URL (allow)       {:>10.0?}", median(check_name));
    println!("  check mapped metadata (deny)  {:>10.0?}", median(check_denied));

    // 1 MiB fetch: guard vs plain reqwest. On a shared machine the load changes from one
    // second to the next, so each guarded fetch is paired with a plain one made right next to
    // it (in alternating order) and the overhead is the median of the per-pair ratios.
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let plain_named = reqwest::Client::builder().no_proxy().resolve("bench.test", address).build().unwrap();
    let by_ip = format!("http://{address}/body");
    let by_name = format!("http://bench.test:{}/body", address.port());
    let rounds = 1001;
    let warmup = 50;
    let mut results = Vec::new();
    for (label, url, plain_client) in [("by IP  ", &by_ip, &plain), ("by name", &by_name, &plain_named)] {
        let guarded = || async {
            let start = Instant::now();
            let response = egress.fetch(EgressRequest::get(url)).await.unwrap();
            assert_eq!(response.body.len(), BODY_BYTES);
            start.elapsed()
        };
        let unguarded = || async {
            let start = Instant::now();
            let body = plain_client.get(url).send().await.unwrap().bytes().await.unwrap();
            assert_eq!(body.len(), BODY_BYTES);
            start.elapsed()
        };
        let (mut guard_times, mut plain_times, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds + warmup {
            let (guard_time, plain_time) = if round % 2 == 0 {
                let guard_time = guarded().await;
                (guard_time, unguarded().await)
            } else {
                let plain_time = unguarded().await;
                (guarded().await, plain_time)
            };
            if round >= warmup {
                guard_times.push(guard_time);
                plain_times.push(plain_time);
                ratios.push(guard_time.as_secs_f64() / plain_time.as_secs_f64());
            }
        }
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios[ratios.len() / 2];
        results.push((label, median(guard_times), median(plain_times), (ratio - 1.0) * 100.0));
    }
    println!("1 MiB local fetch ({rounds} pairs)");
    for (label, guard, plain, overhead) in results {
        println!(
            "  {label}  guard {guard:>9.0?}  plain reqwest {plain:>9.0?}  overhead (median of pair ratios) {overhead:+.1}%"
        );
    }
}
