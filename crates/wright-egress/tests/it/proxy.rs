//! The egress proxy, driven by a raw TCP client the way Chromium drives it: CONNECT tunnels and
//! absolute-form requests, refusals with their reasons, and the limits.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wright_egress::{Egress, EgressConfig, EgressProxy, ProxyLimits, StaticResolver};

use super::{allowing, egress_with, ip, serve};

/// A TCP server that echoes what it gets and counts the connections it accepted.
async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut read, mut write) = socket.split();
                tokio::io::copy(&mut read, &mut write).await.ok();
            });
        }
    });
    (address, accepted)
}

async fn proxy(allow: &[String], resolver: StaticResolver, limits: ProxyLimits) -> EgressProxy {
    egress_with(allowing(allow), resolver).start_proxy(limits).await.unwrap()
}

/// Sends `request` and reads the response head: (status, head text).
async fn send(stream: &mut TcpStream, request: &str) -> (u16, String) {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).await.unwrap();
        assert_eq!(read, 1, "connection closed mid-head: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    (status, head)
}

async fn rest(stream: &mut TcpStream) -> String {
    let mut body = String::new();
    stream.read_to_string(&mut body).await.unwrap();
    body
}

#[tokio::test]
async fn connect_tunnels_to_an_allowlisted_address_resolved_once() {
    let (target, accepted) = echo_server().await;
    let resolver = Arc::new(StaticResolver::new().with("allowed.test", &[ip("127.0.0.1")]));
    let config = allowing(&[format!("127.0.0.1:{}", target.port())]);
    let egress = wright_egress::Egress::with_resolver(config, Arc::clone(&resolver) as _).unwrap();
    let proxy = egress.start_proxy(ProxyLimits::default()).await.unwrap();
    assert!(proxy.address().ip().is_loopback());
    assert_eq!(proxy.url(), format!("http://{}", proxy.address()));

    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(
        &mut client,
        &format!("CONNECT allowed.test:{0} HTTP/1.1\r\nHost: allowed.test:{0}\r\n\r\n", target.port()),
    )
    .await;
    assert_eq!(status, 200);
    client.write_all(b"through the tunnel").await.unwrap();
    let mut echoed = [0u8; 18];
    client.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"through the tunnel");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // One lookup, and the connection went to its answer: no second lookup for a rebinding
    // DNS server to answer differently.
    assert_eq!(resolver.lookups(), 1);
}

#[tokio::test]
async fn connect_to_a_denied_address_is_refused_with_the_rule() {
    let (target, accepted) = echo_server().await;
    // Another port is allowlisted; this one is not.
    let proxy = proxy(&["127.0.0.1:1".to_owned()], StaticResolver::new(), ProxyLimits::default()).await;
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, head) = send(&mut client, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(status, 403, "{head}");
    assert!(head.to_ascii_lowercase().contains("x-wright-egress: denied"), "{head}");
    let body = rest(&mut client).await;
    assert!(body.contains(&format!("CONNECT {target}: 127.0.0.1 is loopback")), "{body}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "the denied server never saw a connection");
}

#[tokio::test]
async fn a_name_that_resolves_to_a_denied_address_is_refused() {
    let (target, accepted) = echo_server().await;
    // A public-looking name whose DNS answer is loopback, and one whose answers mix a public
    // and a private address: both denied, and nothing connects.
    let resolver = StaticResolver::new()
        .with("rebound.test", &[ip("127.0.0.1")])
        .with("mixed.test", &[ip("93.184.216.34"), ip("10.0.0.1")]);
    let proxy = proxy(&[], resolver, ProxyLimits::default()).await;
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut client, &format!("CONNECT rebound.test:{} HTTP/1.1\r\n\r\n", target.port())).await;
    assert_eq!(status, 403);
    assert!(rest(&mut client).await.contains("127.0.0.1 is loopback"));
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut client, "GET http://mixed.test/ HTTP/1.1\r\nHost: mixed.test\r\n\r\n").await;
    assert_eq!(status, 403);
    assert!(rest(&mut client).await.contains("10.0.0.1 is private"));
    // An unknown name is a resolution failure, not a connection.
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut client, "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, 502);
    assert!(rest(&mut client).await.contains("could not resolve nowhere.test"));
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn absolute_form_requests_are_forwarded_with_the_judged_host() {
    let router = Router::new().route(
        "/who",
        get(|headers: HeaderMap| async move {
            let header = |name: &str| headers.get(name).map(|value| value.to_str().unwrap().to_owned());
            format!("host={:?} proxy-connection={:?}", header("host"), header("proxy-connection"))
        }),
    );
    let site = serve(router).await;
    let (denied, accepted) = echo_server().await;
    let proxy = proxy(&[format!("127.0.0.1:{}", site.port())], StaticResolver::new(), ProxyLimits::default()).await;

    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let request =
        format!("GET http://{site}/who HTTP/1.1\r\nHost: evil.example\r\nProxy-Connection: keep-alive\r\n\r\n");
    let (status, head) = send(&mut client, &request).await;
    assert_eq!(status, 200, "{head}");
    let body = rest(&mut client).await;
    assert_eq!(body, format!("host={:?} proxy-connection=None", Some(site.to_string())));

    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut client, &format!("GET http://{denied}/ HTTP/1.1\r\nHost: {denied}\r\n\r\n")).await;
    assert_eq!(status, 403);
    assert!(rest(&mut client).await.contains("is loopback"));
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn requests_that_are_not_proxy_requests_are_refused() {
    let proxy = proxy(&[], StaticResolver::new(), ProxyLimits::default()).await;
    for (request, expected) in [
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "this is a forward proxy"),
        ("GET https://example.com/ HTTP/1.1\r\n\r\n", "only http:// is forwarded"),
        ("GET ftp://example.com/ HTTP/1.1\r\n\r\n", "only http:// is forwarded"),
        ("CONNECT example.com HTTP/1.1\r\n\r\n", "is not host:port"),
        ("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", "is not host:port"),
        ("GET http://example.com/ HTTP/2.0\r\n\r\n", "unsupported protocol version"),
        ("GET http://example.com/ HTTP/1.1\r\n folded\r\n\r\n", "malformed header line"),
    ] {
        let mut client = TcpStream::connect(proxy.address()).await.unwrap();
        let (status, _) = send(&mut client, request).await;
        assert_eq!(status, 400, "{request:?}");
        let body = rest(&mut client).await;
        assert!(body.contains(expected), "{request:?}: {body}");
    }
}

#[tokio::test]
async fn oversized_request_heads_are_refused() {
    let limits = ProxyLimits { max_header_bytes: 1024, ..ProxyLimits::default() };
    let proxy = proxy(&[], StaticResolver::new(), limits).await;
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let request = format!("GET http://example.com/ HTTP/1.1\r\nCookie: {}\r\n\r\n", "x".repeat(2000));
    let (status, _) = send(&mut client, &request).await;
    assert_eq!(status, 431);
    assert!(rest(&mut client).await.contains("exceeds 1024 bytes"));
}

#[tokio::test]
async fn connections_over_the_limit_get_503_until_one_closes() {
    let (target, _) = echo_server().await;
    let limits = ProxyLimits { max_connections: 1, ..ProxyLimits::default() };
    let proxy = proxy(&[format!("127.0.0.1:{}", target.port())], StaticResolver::new(), limits).await;
    let mut first = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut first, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(status, 200);

    let mut second = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut second, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(status, 503);
    assert!(rest(&mut second).await.contains("already serves 1 connections"));

    // Closing the tunnel frees its slot (once the relay has seen both ends close).
    drop(first);
    let mut status = 0;
    for _ in 0..100 {
        let mut next = TcpStream::connect(proxy.address()).await.unwrap();
        status = send(&mut next, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await.0;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, 200);
}

#[tokio::test]
async fn idle_tunnels_are_closed() {
    let (target, _) = echo_server().await;
    let limits = ProxyLimits { idle_timeout_ms: 200, ..ProxyLimits::default() };
    let proxy = proxy(&[format!("127.0.0.1:{}", target.port())], StaticResolver::new(), limits).await;
    let mut client = TcpStream::connect(proxy.address()).await.unwrap();
    let (status, _) = send(&mut client, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(status, 200);
    // Nothing is sent; the proxy closes the tunnel, which the client sees as end of stream.
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(10), client.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
}

#[tokio::test]
async fn a_dropped_proxy_stops_listening() {
    let proxy = proxy(&[], StaticResolver::new(), ProxyLimits::default()).await;
    let address = proxy.address();
    drop(proxy);
    let mut refused = false;
    for _ in 0..100 {
        if TcpStream::connect(address).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused);
}

/// The same proxy on a Unix socket (how a confined shell reaches it): the policy judges
/// every request, and dropping the proxy closes the connections it serves.
#[tokio::test]
async fn a_unix_socket_proxy_applies_the_same_policy_and_ends_its_connections_when_dropped() {
    let (target, accepted) = echo_server().await;
    let (denied, denied_accepted) = echo_server().await;
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("proxy.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let egress = egress_with(allowing(&[format!("127.0.0.1:{}", target.port())]), StaticResolver::new());
    let proxy = egress.serve_proxy_on(listener, ProxyLimits::default()).unwrap();

    let mut tunnel = tokio::net::UnixStream::connect(&path).await.unwrap();
    tunnel.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes()).await.unwrap();
    let mut head = [0u8; 39];
    tunnel.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200 Connection established\r\n\r\n");
    tunnel.write_all(b"ping").await.unwrap();
    let mut echoed = [0u8; 4];
    tunnel.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");

    let mut refused = tokio::net::UnixStream::connect(&path).await.unwrap();
    refused.write_all(format!("GET http://{denied}/ HTTP/1.1\r\nHost: {denied}\r\n\r\n").as_bytes()).await.unwrap();
    let mut answer = String::new();
    refused.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
    assert!(answer.contains("is loopback"), "{answer}");
    assert_eq!(denied_accepted.load(Ordering::SeqCst), 0);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);

    drop(proxy);
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(10), tunnel.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "the tunnel outlived the proxy: {read:?}");
    assert!(tokio::net::UnixStream::connect(&path).await.is_err(), "the dropped proxy still accepts");
}

#[tokio::test]
async fn zero_limits_are_a_configuration_error() {
    let egress = egress_with(allowing(&[]), StaticResolver::new());
    let error = egress.start_proxy(ProxyLimits { max_connections: 0, ..ProxyLimits::default() }).await.unwrap_err();
    assert_eq!(error.code(), "config");
    // From the config too, at start rather than at the browser's first launch.
    let config = EgressConfig { proxy: ProxyLimits { idle_timeout_ms: 0, ..ProxyLimits::default() }, ..allowing(&[]) };
    let error = Egress::with_resolver(config, Arc::new(StaticResolver::new())).err().unwrap();
    assert!(error.to_string().contains("proxy limits must all be positive"), "{error}");
}
