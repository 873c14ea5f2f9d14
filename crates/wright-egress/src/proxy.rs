//! `EgressProxy`: a local HTTP forward proxy that puts every connection a browser makes
//! through the egress policy.
//!
//! Chromium is pointed at it with `--proxy-server` (and `--proxy-bypass-list=<-loopback>`, or
//! it would go to loopback directly), so it no longer connects to anything itself: not for
//! pages, not for sub-resources, and not for WebSockets, which CDP request interception never
//! sees. It also no longer resolves names: the proxy resolves each host once with the egress
//! resolver, judges every address, and connects to one of exactly those addresses, so DNS
//! rebinding between check and connect has nothing to answer.
//!
//! What it speaks (HTTP/1.1, what Chromium sends to an HTTP proxy):
//!
//! - `CONNECT host:port` — a tunnel, for `https://`, `wss://` and (in Chromium) `ws://`;
//! - absolute-form requests `GET http://host/path HTTP/1.1` — for `http://`, including `Upgrade`
//!   requests. The request is sent on with an origin-form target, the `Host` of the URL that
//!   was judged, and `Connection: close` (one request per upstream connection, so a kept-alive
//!   client connection can never carry a second request to an unjudged host).
//!
//! Everything else is refused with a plain-text response whose body (and header
//! `x-wright-egress-reason`) says why: `403` denied by the policy (header `x-wright-egress:
//! denied`; other refusals say `refused`), `400` not a proxy request, `431` request head
//! too large, `502` could not resolve or connect, `503` too many open connections, `504`
//! connect timeout.
//!
//! **Exposure.** It listens on 127.0.0.1 only, and it reaches nothing the policy would not let
//! `fetch_url` reach; a local user who can connect to it can reach those addresses directly
//! anyway. It does not add anything to what is reachable from the machine.
//!
//! The same proxy also serves a Unix socket the caller bound ([`Egress::serve_proxy_on`]): a
//! confined shell's network namespace has no route anywhere, and that socket, bind-mounted into
//! it, is its one way out. Dropping the returned [`UnixSocketProxy`] closes every connection
//! it opened, so a command's connections end with its call.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::{AbortHandle, JoinSet};
use url::{Position, Url};

use crate::{Egress, EgressError};

/// Bounds on what the proxy holds open and reads; `[egress.proxy]` in the server's config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxyLimits {
    /// Client connections served at once (tunnels, WebSockets and plain requests); one more
    /// gets `503`. Default 256 (Chromium opens at most 32 to one proxy per profile, and each
    /// browser context is its own profile).
    pub max_connections: usize,
    /// Size of a request head (request line and headers) before it is refused with `431`.
    /// Default 64 KiB.
    pub max_header_bytes: usize,
    /// A connection with no bytes in either direction for this long is closed; also bounds
    /// the wait for a request head. Default 300 000 ms (a quiet WebSocket is not dead).
    pub idle_timeout_ms: u64,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits { max_connections: 256, max_header_bytes: 64 * 1024, idle_timeout_ms: 300_000 }
    }
}

impl ProxyLimits {
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    /// Every limit must be positive: a zero would refuse everything or close at once.
    pub(crate) fn check(&self) -> Result<(), EgressError> {
        if self.max_connections == 0 || self.max_header_bytes == 0 || self.idle_timeout_ms == 0 {
            return Err(EgressError::Config { reason: format!("proxy limits must all be positive: {self:?}") });
        }
        Ok(())
    }
}

/// A running proxy. Dropping it stops the listener and closes every connection it serves.
pub struct EgressProxy {
    address: SocketAddr,
    task: AbortHandle,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy").field("address", &self.address).finish_non_exhaustive()
    }
}

impl EgressProxy {
    /// Where it listens: 127.0.0.1 and an ephemeral port.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`, the value for Chromium's `--proxy-server`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // The accept task owns the `JoinSet` of connection tasks; aborting it drops the set,
        // which aborts them all.
        self.task.abort();
    }
}

/// The proxy serving a Unix socket. Dropping it stops accepting and closes every connection
/// it serves; the socket file is the caller's to remove.
pub struct UnixSocketProxy {
    task: AbortHandle,
}

impl std::fmt::Debug for UnixSocketProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixSocketProxy").finish_non_exhaustive()
    }
}

impl Drop for UnixSocketProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where clients come from: TCP on 127.0.0.1 (a browser) or a Unix socket (a confined shell).
trait Listener: Send + 'static {
    type Client: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl Future<Output = std::io::Result<Self::Client>> + Send;
}

impl Listener for TcpListener {
    type Client = TcpStream;
    async fn accept(&self) -> std::io::Result<TcpStream> {
        TcpListener::accept(self).await.map(|(client, _)| client)
    }
}

impl Listener for UnixListener {
    type Client = UnixStream;
    async fn accept(&self) -> std::io::Result<UnixStream> {
        UnixListener::accept(self).await.map(|(client, _)| client)
    }
}

impl Egress {
    /// Serves the proxy on `listener`, a Unix socket the caller bound (and made reachable only
    /// to whom it means to serve), with this client's policy and resolver. Must be called
    /// within a tokio runtime.
    pub fn serve_proxy_on(&self, listener: UnixListener, limits: ProxyLimits) -> Result<UnixSocketProxy, EgressError> {
        limits.check()?;
        let task = tokio::spawn(accept_loop(listener, self.clone(), Arc::new(limits)));
        Ok(UnixSocketProxy { task: task.abort_handle() })
    }

    /// Starts a forward proxy on 127.0.0.1 (ephemeral port) that applies this client's policy
    /// and resolver to every connection. Must be called within a tokio runtime.
    pub async fn start_proxy(&self, limits: ProxyLimits) -> Result<EgressProxy, EgressError> {
        limits.check()?;
        let listener = TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
            .await
            .map_err(|error| EgressError::Config { reason: format!("binding the egress proxy: {error}") })?;
        let address = listener
            .local_addr()
            .map_err(|error| EgressError::Config { reason: format!("egress proxy address: {error}") })?;
        let egress = self.clone();
        let limits = Arc::new(limits);
        let task = tokio::spawn(accept_loop(listener, egress, limits));
        tracing::debug!(%address, "egress proxy listening");
        Ok(EgressProxy { address, task: task.abort_handle() })
    }
}

async fn accept_loop<L: Listener>(listener: L, egress: Egress, limits: Arc<ProxyLimits>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let mut client = match accepted {
                    Ok(client) => client,
                    Err(error) => {
                        // Out of file descriptors and the like: keep serving the rest.
                        tracing::warn!(%error, "egress proxy accept");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    let limit = limits.max_connections;
                    connections.spawn(async move {
                        let refusal = Refusal::new(503, format!("the egress proxy already serves {limit} connections"));
                        refusal.send(&mut client).await;
                    });
                    continue;
                };
                let egress = egress.clone();
                let limits = Arc::clone(&limits);
                connections.spawn(async move {
                    serve(&egress, &limits, client).await;
                    drop(slot);
                });
            }
            // Reap finished connections so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A refusal: status and the reason, sent as the plain-text body.
#[derive(Debug)]
struct Refusal {
    status: u16,
    reason: String,
}

impl Refusal {
    fn new(status: u16, reason: impl Into<String>) -> Self {
        Refusal { status, reason: reason.into() }
    }

    fn from_egress(error: EgressError) -> Self {
        let status = match &error {
            EgressError::Denied { .. } => 403,
            EgressError::Timeout { .. } => 504,
            EgressError::InvalidUrl { .. } | EgressError::InvalidRequest { .. } => 400,
            _ => 502,
        };
        Refusal::new(status, error.to_string())
    }

    async fn send(&self, client: &mut (impl AsyncWrite + Unpin)) {
        let phrase = match self.status {
            400 => "Bad Request",
            403 => "Forbidden",
            431 => "Request Header Fields Too Large",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => "Error",
        };
        let code = if self.status == 403 { "denied" } else { "refused" };
        // The reason again as a header, for a browser that sees headers but not bodies (CDP
        // response events); header values are visible ASCII and spaces.
        let header_reason: String =
            self.reason.chars().map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' }).collect();
        let body = format!("{}\n", self.reason);
        let response = format!(
            "HTTP/1.1 {} {phrase}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
             x-wright-egress: {code}\r\nx-wright-egress-reason: {header_reason}\r\nconnection: close\r\n\
             proxy-connection: close\r\n\r\n{body}",
            self.status,
            body.len()
        );
        // The client may already be gone; there is nobody left to tell.
        if client.write_all(response.as_bytes()).await.is_ok() {
            client.shutdown().await.ok();
        }
    }
}

async fn serve(egress: &Egress, limits: &ProxyLimits, mut client: impl AsyncRead + AsyncWrite + Unpin) {
    let head = match tokio::time::timeout(limits.idle_timeout(), read_head(&mut client, limits.max_header_bytes)).await
    {
        Ok(Ok(Some(head))) => head,
        // Closed before sending a request, or idle: nothing to answer.
        Ok(Ok(None)) | Err(_) => return,
        Ok(Err(refusal)) => return refusal.send(&mut client).await,
    };
    // Resolving and connecting together get the client's total budget.
    let budget = egress.config().total_timeout();
    let opened = tokio::time::timeout(budget, open(egress, &head)).await.unwrap_or_else(|_| {
        Err(Refusal::new(504, format!("{}: resolving and connecting took over {} ms", head.target, budget.as_millis())))
    });
    match opened {
        Ok((mut upstream, preamble)) => {
            if let Err(error) = start(&mut client, &head, &mut upstream, &preamble).await {
                tracing::debug!(%error, "egress proxy: starting the relay");
                return;
            }
            relay(client, upstream, limits.idle_timeout()).await;
        }
        Err(refusal) => {
            if refusal.status == 403 {
                tracing::info!(target = %head.target, reason = %refusal.reason, "egress proxy denied");
            }
            refusal.send(&mut client).await;
        }
    }
}

/// The request line and headers of one request, and any bytes read past them.
#[derive(Debug)]
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    rest: Vec<u8>,
}

/// Reads one request head. `Ok(None)`: the client closed before sending one.
async fn read_head(client: &mut (impl AsyncRead + Unpin), max: usize) -> Result<Option<Head>, Refusal> {
    let mut buffer: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let end = loop {
        let searched_from = buffer.len().saturating_sub(3);
        let read = match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return Ok(None),
            Ok(read) => read,
        };
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(at) = buffer[searched_from..].windows(4).position(|window| window == b"\r\n\r\n") {
            let end = searched_from + at + 4;
            if end > max {
                return Err(too_large(max));
            }
            break end;
        }
        if buffer.len() > max {
            return Err(too_large(max));
        }
    };
    let text = std::str::from_utf8(&buffer[..end - 4])
        .map_err(|_| Refusal::new(400, "the request head is not valid UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::new(400, format!("malformed request line {request_line:?}")));
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(Refusal::new(400, format!("unsupported protocol version {version:?}")));
    }
    let valid_method = !method.is_empty() && method.bytes().all(|byte| byte.is_ascii_alphabetic());
    if !valid_method || target.is_empty() {
        return Err(Refusal::new(400, format!("malformed request line {request_line:?}")));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Refusal::new(400, format!("malformed header line {line:?}")));
        };
        let valid_name = !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_graphic() && byte != b':');
        if !valid_name {
            // Also catches obsolete line folding (a line starting with whitespace).
            return Err(Refusal::new(400, format!("malformed header line {line:?}")));
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok(Some(Head { method: method.to_owned(), target: target.to_owned(), headers, rest: buffer[end..].to_vec() }))
}

fn too_large(max: usize) -> Refusal {
    Refusal::new(431, format!("the request head exceeds {max} bytes"))
}

/// Judges the request's destination and connects to an approved address. Returns the upstream
/// connection and the bytes to send on it first (the rewritten request head, for absolute-form).
async fn open(egress: &Egress, head: &Head) -> Result<(TcpStream, Vec<u8>), Refusal> {
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let url = connect_target(&head.target)?;
        let upstream = approve_and_connect(egress, &url, &format!("CONNECT {}", head.target)).await?;
        return Ok((upstream, Vec::new()));
    }
    let url = Url::parse(&head.target).map_err(|_| {
        Refusal::new(
            400,
            format!("{:?}: this is a forward proxy; send CONNECT or an absolute http:// URL", head.target),
        )
    })?;
    if url.scheme() != "http" {
        return Err(Refusal::new(
            400,
            format!("{:?}: only http:// is forwarded in absolute form; other schemes use CONNECT", head.target),
        ));
    }
    let upstream = approve_and_connect(egress, &url, url.as_str()).await?;
    Ok((upstream, forwarded_head(head, &url)))
}

/// `host:port` of a CONNECT, as a URL the policy can judge. The port is required, and nothing
/// but a host may precede it (no userinfo, path or query that the `url` crate would read
/// differently from a plain authority).
fn connect_target(target: &str) -> Result<Url, Refusal> {
    let invalid = || Refusal::new(400, format!("CONNECT target {target:?} is not host:port"));
    let (host, port) = target.rsplit_once(':').ok_or_else(invalid)?;
    if host.is_empty() || port.is_empty() || !port.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(invalid());
    }
    if host.bytes().any(|byte| matches!(byte, b'/' | b'@' | b'?' | b'#' | b'\\') || byte.is_ascii_whitespace()) {
        return Err(invalid());
    }
    port.parse::<u16>().map_err(|_| invalid())?;
    let url = Url::parse(&format!("http://{target}/")).map_err(|_| invalid())?;
    Ok(url)
}

/// The policy's verdict on `url`; if allowed, a connection to one of the addresses it approved.
async fn approve_and_connect(egress: &Egress, url: &Url, what: &str) -> Result<TcpStream, Refusal> {
    let verdict = egress.evaluate(url).await.map_err(Refusal::from_egress)?;
    if !verdict.allowed {
        return Err(Refusal::from_egress(EgressError::Denied { reason: format!("{what}: {}", verdict.rule) }));
    }
    let Some(port) = url.port_or_known_default() else {
        return Err(Refusal::new(400, format!("{what}: no port")));
    };
    let timeout = egress.config().connect_timeout();
    let mut failures = Vec::new();
    // Exactly the addresses that were judged; nothing here resolves anything.
    for verdict in &verdict.addresses {
        let address = SocketAddr::new(verdict.address, port);
        match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                // Small writes (WebSocket frames, TLS records) should not wait for Nagle.
                stream.set_nodelay(true).ok();
                return Ok(stream);
            }
            Ok(Err(error)) => failures.push(format!("{address}: {error}")),
            Err(_) => failures.push(format!("{address}: no answer within {} ms", timeout.as_millis())),
        }
    }
    let all_timed_out = !failures.is_empty() && failures.iter().all(|failure| failure.contains("no answer within"));
    let status = if all_timed_out { 504 } else { 502 };
    Err(Refusal::new(status, format!("{what}: could not connect: {}", failures.join("; "))))
}

/// Hop-by-hop headers, which concern the client–proxy connection and are not forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// The request head sent upstream for an absolute-form request: origin-form target, `Host`
/// from the judged URL, hop-by-hop headers dropped, and either the upgrade the client asked
/// for or `Connection: close`.
fn forwarded_head(head: &Head, url: &Url) -> Vec<u8> {
    let connection_tokens: Vec<String> = head
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| value.split(',').map(|token| token.trim().to_ascii_lowercase()))
        .collect();
    let upgrade = connection_tokens
        .iter()
        .any(|token| token == "upgrade")
        .then(|| head.headers.iter().find(|(name, _)| name.eq_ignore_ascii_case("upgrade")))
        .flatten();
    // `host_str` brackets IPv6; the port is there only when it is not the default.
    let host = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (host, None) => host.unwrap_or_default().to_owned(),
        (None, Some(_)) => String::new(),
    };
    let mut out =
        format!("{} {} HTTP/1.1\r\nhost: {host}\r\n", head.method, &url[Position::BeforePath..Position::AfterQuery]);
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str()) || connection_tokens.contains(&lower) {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    match upgrade {
        Some((_, protocol)) => out.push_str(&format!("connection: upgrade\r\nupgrade: {protocol}\r\n")),
        None => out.push_str("connection: close\r\n"),
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Tells the client the tunnel is up (CONNECT) or sends the rewritten request upstream, then
/// any bytes the client sent after its head.
async fn start(
    client: &mut (impl AsyncWrite + Unpin),
    head: &Head,
    upstream: &mut TcpStream,
    preamble: &[u8],
) -> std::io::Result<()> {
    if head.method.eq_ignore_ascii_case("CONNECT") {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
    } else {
        upstream.write_all(preamble).await?;
    }
    if !head.rest.is_empty() {
        upstream.write_all(&head.rest).await?;
    }
    Ok(())
}

/// Copies bytes both ways until both sides have finished or nothing moved for `idle`. An end
/// of stream on one side is passed on as a half-close to the other. The two directions run
/// concurrently, so a peer that stops reading while it writes cannot stall the other one.
async fn relay(client: impl AsyncRead + AsyncWrite + Unpin, upstream: TcpStream, idle: Duration) {
    let (client_read, client_write) = tokio::io::split(client);
    let (upstream_read, upstream_write) = upstream.into_split();
    let started = Instant::now();
    // Milliseconds since `started` of the last byte moved in either direction.
    let last_activity = AtomicU64::new(0);
    let copying = async {
        tokio::join!(
            copy_half(client_read, upstream_write, started, &last_activity),
            copy_half(upstream_read, client_write, started, &last_activity),
        )
    };
    let watchdog = async {
        loop {
            let last = started + Duration::from_millis(last_activity.load(Ordering::Relaxed));
            let deadline = last + idle;
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    };
    tokio::select! {
        _ = copying => {}
        () = watchdog => tracing::debug!("egress proxy: idle connection closed"),
    }
}

async fn copy_half(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    started: Instant,
    last_activity: &AtomicU64,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let now = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        last_activity.store(now, Ordering::Relaxed);
        if to.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    to.shutdown().await.ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_targets_are_plain_authorities() {
        assert_eq!(connect_target("example.com:443").unwrap().as_str(), "http://example.com:443/");
        assert_eq!(connect_target("[::1]:8080").unwrap().host_str(), Some("[::1]"));
        for bad in ["example.com", "example.com:", ":443", "a@b.com:443", "b.com/x:443", "b.com:99999", "b.com:4a"] {
            assert_eq!(connect_target(bad).unwrap_err().status, 400, "{bad}");
        }
    }

    #[test]
    fn forwarded_heads_are_origin_form_with_the_judged_host() {
        let head = Head {
            method: "POST".into(),
            target: "http://example.com:8080/a?b=1#frag".into(),
            headers: vec![
                ("Host".into(), "evil.example".into()),
                ("Proxy-Connection".into(), "keep-alive".into()),
                ("Connection".into(), "keep-alive, X-Private".into()),
                ("X-Private".into(), "1".into()),
                ("Content-Length".into(), "3".into()),
            ],
            rest: Vec::new(),
        };
        let url = Url::parse(&head.target).unwrap();
        let text = String::from_utf8(forwarded_head(&head, &url)).unwrap();
        assert_eq!(
            text,
            "POST /a?b=1 HTTP/1.1\r\nhost: example.com:8080\r\nContent-Length: 3\r\nconnection: close\r\n\r\n"
        );
        let upgrade = Head {
            method: "GET".into(),
            target: "http://[::1]/ws".into(),
            headers: vec![("Connection".into(), "Upgrade".into()), ("Upgrade".into(), "websocket".into())],
            rest: Vec::new(),
        };
        let url = Url::parse(&upgrade.target).unwrap();
        let text = String::from_utf8(forwarded_head(&upgrade, &url)).unwrap();
        assert_eq!(text, "GET /ws HTTP/1.1\r\nhost: [::1]\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n");
    }
}
