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

    // 1 MiB fetch: guard vs plain reqwest, interleaved so drift hits both alike.
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let plain_named = reqwest::Client::builder().no_proxy().resolve("bench.test", address).build().unwrap();
    let by_ip = format!("http://{address}/body");
    let by_name = format!("http://bench.test:{}/body", address.port());
    let mut samples: [Vec<Duration>; 4] = Default::default();
    let rounds = 301;
    for round in 0..rounds + 20 {
        let timings = [
            {
                let start = Instant::now();
                let response = egress.fetch(EgressRequest::get(&by_ip)).await.unwrap();
                assert_eq!(response.body.len(), BODY_BYTES);
                start.elapsed()
            },
            {
                let start = Instant::now();
                let body = plain.get(&by_ip).send().await.unwrap().bytes().await.unwrap();
                assert_eq!(body.len(), BODY_BYTES);
                start.elapsed()
            },
            {
                let start = Instant::now();
                let response = egress.fetch(EgressRequest::get(&by_name)).await.unwrap();
                assert_eq!(response.body.len(), BODY_BYTES);
                start.elapsed()
            },
            {
                let start = Instant::now();
                let body = plain_named.get(&by_name).send().await.unwrap().bytes().await.unwrap();
                assert_eq!(body.len(), BODY_BYTES);
                start.elapsed()
            },
        ];
        // The first rounds warm the pools and caches.
        if round >= 20 {
            for (samples, timing) in samples.iter_mut().zip(timings) {
                samples.push(timing);
            }
        }
    }
    let [guard_ip, plain_ip, guard_name, plain_name] = samples.map(median);
    let overhead = |guard: Duration, plain: Duration| (guard.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0;
    println!("1 MiB local fetch (median of {rounds})");
    println!(
        "  by IP    guard {guard_ip:>9.0?}  plain reqwest {plain_ip:>9.0?}  overhead {:+.1}%",
        overhead(guard_ip, plain_ip)
    );
    println!(
        "  by name  guard {guard_name:>9.0?}  plain reqwest {plain_name:>9.0?}  overhead {:+.1}%",
        overhead(guard_name, plain_name)
    );
}
