//! The listener: accepts TCP connections under a cap and serves each with hyper's HTTP/1,
//! with a header-read timeout, an idle timeout and a bounded graceful shutdown.
//!
//! Why not `axum::serve`: it keeps every connection it accepts for as long as the client
//! likes (no header timeout, no cap), so a thousand silent sockets exhaust the process's file
//! descriptors and health probes start failing.
//!
//! - **Cap:** a permit of a `Semaphore` is taken *before* `accept`, so at the cap new clients
//!   wait in the kernel's backlog instead of taking descriptors; a permit is returned when its
//!   connection's task ends. The cap is lowered to fit under the process's open-file limit,
//!   leaving [`RESERVED_DESCRIPTORS`] for the rest of the server, so accepting can never starve
//!   the database, the sandbox's workers or the egress of descriptors.
//! - **Header timeout:** hyper's, from the moment it waits for a request head (on a new
//!   connection, or between requests on a kept-alive one) until the head is complete.
//! - **Idle timeout:** [`IdleTimeout`] fails the socket's reads and writes once no byte has
//!   moved either way for that long, e.g. a client that stopped reading a response.
//! - **Shutdown:** when the token is cancelled the accept loop stops, event streams end (they
//!   watch the same token), every connection is told to finish its request and close, and
//!   after the grace period whatever is left is dropped.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;

/// What the listener needs from `[server]`.
#[derive(Debug, Clone)]
pub struct ListenerLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub shutdown_grace: Duration,
}

impl From<&ServerConfig> for ListenerLimits {
    fn from(config: &ServerConfig) -> Self {
        Self {
            max_connections: config.max_connections.max(1),
            header_read_timeout: config.header_read_timeout(),
            idle_timeout: config.idle_timeout(),
            shutdown_grace: config.shutdown_grace(),
        }
    }
}

/// Descriptors kept for everything but client connections: the database files, the sandbox
/// workers' pipes, the browser, outbound requests, the listener itself.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The configured cap, lowered to fit under `open_file_limit` with the reserve left over.
pub fn effective_max_connections(configured: usize, open_file_limit: Option<u64>) -> usize {
    match open_file_limit {
        Some(limit) => {
            let room = usize::try_from(limit.saturating_sub(RESERVED_DESCRIPTORS)).unwrap_or(usize::MAX);
            configured.min(room).max(1)
        }
        None => configured.max(1),
    }
}

/// The process's soft limit on open files, when there is one.
#[cfg(unix)]
#[allow(unsafe_code)]
fn open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable rlimit for the duration of the call.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (status == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then drains for at most
/// `limits.shutdown_grace`.
pub async fn run(listener: TcpListener, router: Router, limits: ListenerLimits, shutdown: CancellationToken) {
    let max_connections = effective_max_connections(limits.max_connections, open_file_limit());
    if max_connections < limits.max_connections {
        tracing::warn!(
            configured = limits.max_connections,
            max_connections,
            "[server] max_connections lowered to fit the open-file limit (raise it with `ulimit -n`)"
        );
    }
    // Owned by this loop; each connection task holds one permit until it ends. Never closed.
    let permits = Arc::new(Semaphore::new(max_connections));
    // Every connection task, so shutdown can wait for them (and abort the stragglers).
    let mut connections = JoinSet::new();
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_closed) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(error) => {
                    // Out of descriptors or a connection reset before accept: back off a moment
                    // rather than spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        while connections.try_join_next().is_some() {}
        let connection = serve_connection(stream, router.clone(), limits.clone(), shutdown.clone());
        connections.spawn(async move {
            connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let drained =
        tokio::time::timeout(limits.shutdown_grace, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            open = connections.len(),
            "connections still open after the shutdown grace period; closing them"
        );
        connections.abort_all();
    }
}

async fn serve_connection(stream: TcpStream, router: Router, limits: ListenerLimits, shutdown: CancellationToken) {
    stream.set_nodelay(true).ok();
    let io = TokioIo::new(IdleTimeout::new(stream, limits.idle_timeout));
    let service = hyper_util::service::TowerToHyperService::new(router);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        // Timeouts and clients that vanish end here; none of it is the server's fault.
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// A socket whose reads and writes fail with `TimedOut` once nothing has moved either way for
/// `idle`. The deadline is only looked at when hyper polls the socket and would wait; any byte
/// read or written moves it.
pub struct IdleTimeout<I> {
    inner: I,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<I> IdleTimeout<I> {
    pub fn new(inner: I, idle: Duration) -> Self {
        Self { inner, idle, deadline: Box::pin(tokio::time::sleep(idle)) }
    }

    fn moved(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    fn waiting<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "connection idle too long"))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for IdleTimeout<I> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx),
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<I> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(result) => {
                if matches!(result, Ok(written) if written > 0) {
                    this.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => {
                if matches!(result, Ok(written) if written > 0) {
                    this.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Ready(result) => Poll::Ready(result),
            Poll::Pending => this.waiting(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_fits_under_the_open_file_limit() {
        assert_eq!(effective_max_connections(256, None), 256);
        assert_eq!(effective_max_connections(256, Some(20_000)), 256);
        assert_eq!(effective_max_connections(256, Some(256)), 192);
        assert_eq!(effective_max_connections(256, Some(10)), 1);
    }
}
