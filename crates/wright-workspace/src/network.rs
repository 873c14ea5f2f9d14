//! Network for the confined shell, when the operator allows it: only through the egress proxy.
//!
//! A command keeps its own network namespace (nothing but its own loopback, no route anywhere).
//! Its one way out is a Unix socket: for each command the runner binds a fresh socket on the
//! host (`<data_dir>/run/shell/`, mode 0700), hands it to the [`ShellProxy`] (the egress proxy,
//! which judges every request by the egress policy: it resolves each name once, refuses
//! loopback and private addresses unless allowlisted, and connects only to the addresses it
//! approved), and bind-mounts that one socket into the sandbox at [`SOCKET_MOUNT`]. Programs
//! speak TCP to a proxy, not Unix sockets, so a small forwarder — the `wright` binary itself
//! under a hidden subcommand, bind-mounted read-only at [`FORWARDER_MOUNT`] — listens on the
//! namespace's own loopback at [`PROXY_ADDRESS`] and copies each connection to the socket; the
//! command gets `http_proxy`/`https_proxy`/`all_proxy` (and their upper-case forms) pointing
//! there. Nothing here is a filter: the kernel still gives the command no route, and whatever
//! it sends through the socket (with or without the forwarder) meets the egress proxy.
//!
//! The forwarder is the command's parent inside the sandbox: the limits shell sets the rlimits
//! and then becomes the forwarder, which binds its port *before* it starts the command (so the
//! first connection never races the listener) and exits with the command's status. It gains
//! nothing the command does not have: the same user, limits and namespaces.
//!
//! A command's socket and its proxy live exactly as long as its call: dropping them closes
//! every connection the command opened through the proxy.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};

use crate::WorkspaceError;

/// Where the forwarder listens, on the command's own loopback (a fresh namespace per command,
/// so the port is always free).
pub const PROXY_ADDRESS: &str = "127.0.0.1:3128";

/// Where the command's proxy socket appears inside the sandbox.
pub const SOCKET_MOUNT: &str = "/run/wright/proxy.sock";

/// Where the forwarder's program appears inside the sandbox.
pub const FORWARDER_MOUNT: &str = "/run/wright/forward";

/// The environment a networked command gets: every spelling of the proxy variables that
/// common clients read (curl, wget, git, pip, Python's urllib, Node's fetch with a proxy
/// agent), pointing at the forwarder.
pub(crate) const PROXY_VARIABLES: &[&str] =
    &["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"];

/// The egress proxy as the shell sees it. Implemented where the egress policy lives (the tools
/// crate wraps `wright_egress::Egress`), so this crate stays a leaf.
pub trait ShellProxy: Send + Sync + std::fmt::Debug {
    /// Starts serving HTTP proxy clients (CONNECT and absolute-form `http://`) on `listener`,
    /// judging each by the egress policy. Dropping the returned guard stops it and closes every
    /// connection it serves. Called within a tokio runtime.
    fn serve(&self, listener: tokio::net::UnixListener) -> Result<Box<dyn Send + Sync>, String>;
}

/// The program that forwards the namespace's loopback port to the proxy socket, and the
/// arguments that make it do so: the `wright` binary and its hidden subcommand, or (in this
/// crate's tests) the `wright-shell-forward` binary and none. It is bind-mounted into the
/// sandbox, so it must need nothing but `/usr` (and the loader links into it) to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarder {
    pub program: PathBuf,
    pub arguments: Vec<String>,
}

/// What [`crate::Workspaces::with_network`] takes: the proxy and the forwarder.
#[derive(Debug, Clone)]
pub struct ShellNetwork {
    pub proxy: Arc<dyn ShellProxy>,
    pub forwarder: Forwarder,
}

/// The network of every agent's shell, shared by their workspaces.
#[derive(Debug)]
pub(crate) struct NetworkAccess {
    pub(crate) proxy: Arc<dyn ShellProxy>,
    pub(crate) forwarder: Forwarder,
    /// `<data_dir>/run/shell`: where each command's socket is bound.
    sockets: PathBuf,
    /// `O_PATH` fd of `sockets`. Sockets are bound through `/proc/self/fd/N/…`, a short path
    /// whatever the data directory's (a socket address holds at most 107 bytes).
    sockets_fd: OwnedFd,
}

static SOCKET_COUNTER: AtomicU64 = AtomicU64::new(0);

impl NetworkAccess {
    /// Makes `<data_dir>/run/shell` (mode 0700: only this user can reach the sockets there) and
    /// removes sockets left by processes that are gone.
    pub(crate) fn new(data_dir: &Path, network: ShellNetwork) -> Result<Self, WorkspaceError> {
        let sockets = data_dir.join("run").join("shell");
        let shown = sockets.display().to_string();
        std::fs::create_dir_all(&sockets).map_err(|error| WorkspaceError::io(&shown, error))?;
        let sockets_fd = rustix::fs::open(&sockets, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|errno| WorkspaceError::errno(&shown, errno))?;
        rustix::fs::chmod(&sockets, Mode::RWXU).map_err(|errno| WorkspaceError::errno(&shown, errno))?;
        remove_stale_sockets(&sockets);
        Ok(NetworkAccess { proxy: network.proxy, forwarder: network.forwarder, sockets, sockets_fd })
    }

    /// Binds a fresh socket, not yet served (the start-up probe only needs the file to exist).
    pub(crate) fn bind(&self) -> Result<(std::os::unix::net::UnixListener, CommandSocket), WorkspaceError> {
        let name = format!("{}-{}.sock", std::process::id(), SOCKET_COUNTER.fetch_add(1, Ordering::Relaxed));
        let short = format!("/proc/self/fd/{}/{name}", self.sockets_fd.as_raw_fd());
        let listener = std::os::unix::net::UnixListener::bind(&short).map_err(|error| {
            WorkspaceError::ShellUnavailable(format!("cannot bind the command's proxy socket: {error}"))
        })?;
        Ok((listener, CommandSocket { host: self.sockets.join(name), serving: None }))
    }

    /// A socket for one command, served by the proxy until the returned value is dropped.
    pub(crate) fn open(&self) -> Result<CommandSocket, WorkspaceError> {
        let (listener, mut socket) = self.bind()?;
        let unavailable = |reason: String| WorkspaceError::ShellUnavailable(format!("the egress proxy: {reason}"));
        listener.set_nonblocking(true).map_err(|error| unavailable(error.to_string()))?;
        let listener = tokio::net::UnixListener::from_std(listener).map_err(|error| unavailable(error.to_string()))?;
        socket.serving = Some(self.proxy.serve(listener).map_err(unavailable)?);
        Ok(socket)
    }
}

/// One command's proxy socket on the host. Dropping it stops the proxy serving it (closing the
/// command's connections) and removes the file.
pub(crate) struct CommandSocket {
    pub(crate) host: PathBuf,
    serving: Option<Box<dyn Send + Sync>>,
}

impl Drop for CommandSocket {
    fn drop(&mut self) {
        drop(self.serving.take());
        if let Err(error) = std::fs::remove_file(&self.host) {
            tracing::warn!(%error, socket = %self.host.display(), "a command's proxy socket could not be removed");
        }
    }
}

/// Sockets are named `<pid>-<n>.sock`; those of a process that no longer runs were left by a
/// crash. (A pid reused since keeps its stale file: harmless, and removed on a later start.)
fn remove_stale_sockets(sockets: &Path) {
    let Ok(entries) = std::fs::read_dir(sockets) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split_once('-').and_then(|(pid, _)| pid.parse::<u32>().ok()) else { continue };
        if pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
            && let Err(error) = std::fs::remove_file(entry.path())
        {
            tracing::debug!(%error, name, "a stale proxy socket could not be removed");
        }
    }
}

/// The forwarder's entry point, inside the sandbox: `LISTEN SOCKET PROGRAM [ARGUMENTS…]`. Binds
/// `LISTEN` (TCP), starts `PROGRAM` with the same stdio, copies every accepted connection to the
/// Unix socket `SOCKET`, and exits with the program's status (128 + the signal that killed it).
/// The `wright` binary calls it from a hidden subcommand; `wright-shell-forward` is the same for
/// this crate's tests.
pub fn forward_main(arguments: &[String]) -> ExitCode {
    let [listen, socket, program, rest @ ..] = arguments else {
        eprintln!("wright: the shell's forwarder needs LISTEN SOCKET PROGRAM [ARGUMENTS...]");
        return ExitCode::from(126);
    };
    match forward(listen, Path::new(socket), program, rest) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("wright: the shell's network forwarder failed: {error}");
            ExitCode::from(126)
        }
    }
}

/// Binds first, then starts the command at once and waits for it on this thread (a plain
/// `waitpid`, so its end is seen without delay), while a second thread builds a small runtime
/// and serves the connections; any that arrive meanwhile wait in the listen backlog.
fn forward(listen: &str, socket: &Path, program: &str, arguments: &[String]) -> std::io::Result<u8> {
    let listener = std::net::TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let mut child = std::process::Command::new(program).args(arguments).spawn()?;
    let socket = socket.to_owned();
    // Ends with the process, when the command has exited.
    let serving = std::thread::Builder::new().name("forward".to_owned()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() {
            Ok(runtime) => runtime,
            Err(error) => return eprintln!("wright: the shell's network forwarder could not start: {error}"),
        };
        runtime.block_on(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(error) => return eprintln!("wright: the shell's network forwarder could not listen: {error}"),
            };
            loop {
                match listener.accept().await {
                    Ok((client, _)) => {
                        tokio::spawn(relay(client, socket.clone()));
                    }
                    // Out of descriptors (the command's own doing): the next accept may succeed.
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                }
            }
        });
    });
    if let Err(error) = serving {
        eprintln!("wright: the shell's network forwarder could not start: {error}");
    }
    let status = child.wait()?;
    use std::os::unix::process::ExitStatusExt;
    let code = status.code().or_else(|| status.signal().map(|signal| 128 + signal)).unwrap_or(126);
    Ok(u8::try_from(code).unwrap_or(u8::MAX))
}

/// One connection: to the proxy socket, then bytes both ways until both sides are done. A
/// refused socket closes the client's connection, which it sees as the proxy going away.
async fn relay(mut client: tokio::net::TcpStream, socket: PathBuf) {
    let Ok(mut upstream) = tokio::net::UnixStream::connect(&socket).await else { return };
    // Either side may close abruptly; there is nobody to tell.
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.ok();
}
