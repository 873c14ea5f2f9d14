//! The confined command runner: bash under bubblewrap.
//!
//! Why bubblewrap rather than our own namespaces: it is Debian's packaged, audited setuid-free
//! tool for exactly this (Flatpak's sandbox), it builds the user, mount, PID, network, IPC and
//! UTS namespaces and the bind mounts in one exec, and it needs no `unsafe` in this workspace
//! (which forbids it; a native build would need `pre_exec` and raw `unshare`/`mount` calls).
//!
//! What a command sees: read-only `/usr` (and the `/bin`, `/lib*` links into it) and a few
//! files of `/etc` that programs need to start, a fresh `/proc`, a minimal `/dev`, an empty
//! `/tmp`, its workspace read-write at `/workspace`, and the operator's roots at their own
//! paths, read-only unless configured otherwise. No host user, no host network (a network
//! namespace with nothing but its own loopback), no host processes. With network allowed, the
//! command also sees its proxy socket and the forwarder under `/run/wright` and the proxy
//! variables (see `network.rs`); its network namespace is the same.
//!
//! How it ends: bubblewrap is the init of the command's PID namespace and dies with its
//! parent (`--die-with-parent`), and when a PID namespace's init dies the kernel kills every
//! process in it. So a command's background processes end with the command, and at the
//! deadline (or past the output cap, or when the call is dropped) killing bubblewrap kills
//! them all, whatever signals they ignore. Measured under a fork bomb, some processes that
//! were forking at that moment still ran for up to 15 s, so the runner does not rely on that
//! alone: when the call ends (or is dropped) it kills every process still in the command's
//! `pids` cgroup (a root server, see [`PidsCgroups`]) or else in its PID namespace, noted when
//! the command started ([`Namespace`]), until none is left.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::WorkspaceError;
use crate::config::ShellConfig;
use crate::network::{FORWARDER_MOUNT, NetworkAccess, PROXY_ADDRESS, PROXY_VARIABLES, SOCKET_MOUNT};
use crate::paths::{WORKSPACE_MOUNT, Workspace};

/// Files of `/etc` a program may need to start (the dynamic loader's cache, TLS roots, the
/// time zone); nothing that describes the host's users or secrets.
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/mime.types",
];

/// Top-level directories that are links into `/usr` on a merged-/usr system, or directories
/// of their own on an older one.
const SYSTEM_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Where a command's processes are counted when `RLIMIT_NPROC` cannot count them.
///
/// The kernel exempts processes whose real uid is the host's root from `RLIMIT_NPROC`, and a
/// user namespace made by a root server maps the sandbox's user to root: then a fork bomb would
/// fill the host's PID table until the deadline. So a server running as root puts each command
/// in a `pids` cgroup of its own, whose `pids.max` the kernel enforces for everyone; if it cannot,
/// the shell is off. A server running as a normal user relies on `RLIMIT_NPROC`, which then
/// counts the command's processes in its own user namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PidsCgroups {
    /// The directory new cgroups are made in (`/sys/fs/cgroup/pids` on cgroup v1).
    base: PathBuf,
}

impl PidsCgroups {
    const CANDIDATES: &[&str] = &["/sys/fs/cgroup/pids", "/sys/fs/cgroup"];

    /// A base where a new cgroup gets a `pids.max`, tried by making (and removing) one.
    fn find() -> Option<PidsCgroups> {
        Self::CANDIDATES.iter().map(PathBuf::from).find_map(|base| {
            let probe = base.join(format!("wright-probe-{}", std::process::id()));
            std::fs::create_dir(&probe).ok()?;
            let works = probe.join("pids.max").exists();
            if let Err(error) = std::fs::remove_dir(&probe) {
                tracing::warn!(%error, probe = %probe.display(), "could not remove the probe cgroup");
            }
            works.then_some(PidsCgroups { base })
        })
    }

    /// A fresh cgroup limited to `max` processes, removed when dropped.
    fn create(&self, max: u64) -> Result<PidsCgroup, WorkspaceError> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let path = self.base.join(format!(
            "wright-shell-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let unavailable =
            |error: std::io::Error| WorkspaceError::ShellUnavailable(format!("cannot make a pids cgroup: {error}"));
        std::fs::create_dir(&path).map_err(unavailable)?;
        let cgroup = PidsCgroup { path };
        std::fs::write(cgroup.path.join("pids.max"), max.to_string()).map_err(unavailable)?;
        Ok(cgroup)
    }
}

/// One command's cgroup: it lists exactly the command's processes, so when the call ends they
/// are killed from that list (cheaper than scanning the process table), and it is removed.
struct PidsCgroup {
    path: PathBuf,
}

impl PidsCgroup {
    /// Kills every process in the cgroup until none is left (at most two seconds).
    fn kill_all(&self) {
        let started = Instant::now();
        let name = self.path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        loop {
            let listed = std::fs::read_to_string(self.path.join("cgroup.procs")).unwrap_or_default();
            let mut found = 0;
            for pid in listed
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok())
                .filter_map(rustix::process::Pid::from_raw)
            {
                let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
                    continue;
                };
                // Pinned by the pidfd, the process must still be in this cgroup: a recycled pid
                // is never signalled.
                let still_ours = std::fs::read_to_string(format!("/proc/{}/cgroup", pid.as_raw_nonzero()))
                    .is_ok_and(|cgroups| cgroups.contains(&name));
                if still_ours {
                    found += 1;
                    if let Err(error) = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL) {
                        tracing::debug!(%error, "a process of a finished command exited on its own");
                    }
                }
            }
            if found == 0 || started.elapsed() > Duration::from_secs(2) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        self.kill_all();
        // The last processes may still be on their way out; an empty cgroup is removable.
        for _ in 0..1_000 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        tracing::warn!(cgroup = %self.path.display(), "a command's pids cgroup could not be removed");
    }
}

/// Whether `bash` can run here, decided once at start by running a confined `true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellStatus {
    Available,
    /// The operator turned the shell off (`[workspace.shell] enabled = false`).
    Disabled,
    /// Confinement does not work on this host; the shell is off, never unconfined.
    Unavailable {
        reason: String,
    },
}

impl ShellStatus {
    pub fn is_available(&self) -> bool {
        matches!(self, ShellStatus::Available)
    }

    /// Runs a confined `true` with `workspace` (an existing directory) bound as the workspace,
    /// behind the forwarder when `network` is given.
    pub(crate) fn probe(
        config: &ShellConfig,
        workspace: &Path,
        network: Option<&NetworkAccess>,
    ) -> (ShellStatus, Option<PidsCgroups>) {
        if !config.enabled {
            return (ShellStatus::Disabled, None);
        }
        let cgroups = if rustix::process::getuid().is_root() {
            match PidsCgroups::find() {
                Some(cgroups) => Some(cgroups),
                None => {
                    let reason =
                        "wright runs as root and no pids cgroup can be made (/sys/fs/cgroup/pids or cgroup v2 \
                                  with the pids controller): the kernel would not limit a command's processes. Run \
                                  wright as a normal user, or give it a pids cgroup"
                            .to_owned();
                    return (ShellStatus::Unavailable { reason }, None);
                }
            }
        } else {
            None
        };
        (Self::probe_bubblewrap(config, workspace, network), cgroups)
    }

    fn probe_bubblewrap(config: &ShellConfig, workspace: &Path, network: Option<&NetworkAccess>) -> ShellStatus {
        // The probe's socket only has to exist (nothing connects); it is removed on return.
        let socket = match network.map(NetworkAccess::bind).transpose() {
            Ok(socket) => socket,
            Err(error) => return ShellStatus::Unavailable { reason: error.to_string() },
        };
        let mounted = network.zip(socket.as_ref()).map(|(network, (_, socket))| (network, socket.host.as_path()));
        let mut command = std::process::Command::new(&config.bwrap_path);
        command.args(sandbox_arguments(workspace, &[], Path::new(WORKSPACE_MOUNT), mounted));
        command.arg("--");
        if let Some((network, _)) = mounted {
            command.args(forwarder_arguments(network));
        }
        command.arg("/bin/true").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        match command.output() {
            Ok(output) if output.status.success() => ShellStatus::Available,
            Ok(output) => ShellStatus::Unavailable {
                reason: format!(
                    "{} failed ({}): {}",
                    config.bwrap_path.display(),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            },
            Err(error) => ShellStatus::Unavailable {
                reason: format!(
                    "{} could not be started ({error}); install bubblewrap (apt-get install bubblewrap)",
                    config.bwrap_path.display()
                ),
            },
        }
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct ShellRequest {
    pub command: String,
    /// Default `[workspace.shell] default_timeout_ms`; above `max_timeout_ms` is refused.
    pub timeout_ms: Option<u64>,
    /// A directory in the workspace's namespace (default `/workspace`).
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ShellOutcome {
    pub stdout: String,
    pub stderr: String,
    /// The command's exit status; `None` when it was killed (deadline, output cap).
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Output past the cap was dropped (and the command killed).
    pub truncated: bool,
    pub timed_out: bool,
}

impl Workspace {
    /// Runs `request.command` with `/bin/bash -c` in the sandbox. Dropping the future kills it.
    pub async fn run(&self, request: &ShellRequest) -> Result<ShellOutcome, WorkspaceError> {
        match &self.shell_status {
            ShellStatus::Available => {}
            ShellStatus::Disabled => {
                return Err(WorkspaceError::ShellUnavailable(
                    "the operator turned it off ([workspace.shell] enabled = false)".to_owned(),
                ));
            }
            ShellStatus::Unavailable { reason } => return Err(WorkspaceError::ShellUnavailable(reason.clone())),
        }
        let config = &self.shell;
        let timeout_ms = request.timeout_ms.unwrap_or(config.default_timeout_ms);
        if timeout_ms > config.max_timeout_ms {
            return Err(WorkspaceError::Limit(format!(
                "timeout_ms {timeout_ms} is above the limit of {} ms",
                config.max_timeout_ms
            )));
        }
        let cwd = self.shell_directory(request.cwd.as_deref())?;
        let binds: Vec<(PathBuf, PathBuf, bool)> =
            self.roots[1..].iter().map(|root| (root.host.clone(), root.shown.clone(), root.writable)).collect();
        // The command's proxy socket, served until the call ends (dropped after the command).
        let socket = self.network.as_deref().map(NetworkAccess::open).transpose()?;
        let network =
            self.network.as_deref().zip(socket.as_ref()).map(|(network, socket)| (network, socket.host.as_path()));
        // Made before the command and dropped after its namespace is swept (declared first, so
        // dropped last).
        let cgroup = match &self.pids_cgroups {
            Some(cgroups) => Some(cgroups.create(config.max_processes)?),
            None => None,
        };
        let mut command = match &cgroup {
            // The shell joins the cgroup and becomes bubblewrap: everything the command starts
            // is counted there from its first fork.
            Some(cgroup) => {
                let mut command = Command::new("/bin/sh");
                command
                    .args(["-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\""])
                    .arg(&cgroup.path)
                    .arg(&config.bwrap_path);
                command
            }
            None => Command::new(&config.bwrap_path),
        };
        command.args(sandbox_arguments(&self.roots[0].host, &binds, &cwd, network));
        command.args(["--", "/bin/bash", "-c", &limits_script(config), "wright-shell", &request.command]);
        if let Some((network, _)) = network {
            command.args(forwarder_arguments(network));
        }
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).process_group(0);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|error| WorkspaceError::ShellUnavailable(format!("bubblewrap did not start: {error}")))?;
        // With a cgroup, its list is the sweep; without one, the PID namespace is.
        let mut namespace =
            if cgroup.is_some() { Namespace { link: None } } else { Namespace::of_child(&mut child).await };
        let mut stdout =
            child.stdout.take().ok_or_else(|| WorkspaceError::ShellUnavailable("no stdout pipe".to_owned()))?;
        let mut stderr =
            child.stderr.take().ok_or_else(|| WorkspaceError::ShellUnavailable("no stderr pipe".to_owned()))?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
        let mut out = Vec::new();
        let mut err = Vec::new();
        let (mut out_open, mut err_open) = (true, true);
        let (mut truncated, mut timed_out) = (false, false);
        let mut out_buffer = [0u8; 8192];
        let mut err_buffer = [0u8; 8192];
        while out_open || err_open {
            tokio::select! {
                read = stdout.read(&mut out_buffer), if out_open => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(n) => truncated |= keep(&mut out, &out_buffer[..n], err.len(), config.max_output_bytes),
                },
                read = stderr.read(&mut err_buffer), if err_open => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => truncated |= keep(&mut err, &err_buffer[..n], out.len(), config.max_output_bytes),
                },
                () = tokio::time::sleep_until(deadline) => {
                    timed_out = true;
                    break;
                }
            }
            if truncated {
                break;
            }
        }
        let status = if timed_out || truncated {
            kill(&mut child).await;
            None
        } else {
            // Both pipes are closed: the namespace is gone or going (its init exited), so this
            // returns at once; the deadline still bounds it.
            match tokio::time::timeout_at(deadline, child.wait()).await {
                Ok(Ok(status)) => Some(status),
                _ => {
                    timed_out = true;
                    kill(&mut child).await;
                    None
                }
            }
        };
        namespace.clear().await;
        if let Some(cgroup) = cgroup {
            tokio::task::spawn_blocking(move || drop(cgroup)).await.map_err(|error| {
                WorkspaceError::ShellUnavailable(format!("the command's cgroup was not cleared: {error}"))
            })?;
        }
        let exit_code = status.and_then(|status| {
            use std::os::unix::process::ExitStatusExt;
            status.code().or_else(|| status.signal().map(|signal| 128 + signal))
        });
        Ok(ShellOutcome {
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).into_owned(),
            exit_code,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            truncated,
            timed_out,
        })
    }

    /// The command's working directory: checked to be a directory beneath a root (by the
    /// kernel, like any path), then named by its shown path, which the sandbox mounts.
    fn shell_directory(&self, cwd: Option<&str>) -> Result<PathBuf, WorkspaceError> {
        let Some(cwd) = cwd else { return Ok(PathBuf::from(WORKSPACE_MOUNT)) };
        let (root, relative) = self.resolve(cwd)?;
        root.open_beneath(&relative, rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY)?;
        if relative
            .components()
            .any(|component| !matches!(component, std::path::Component::Normal(_) | std::path::Component::CurDir))
        {
            return Err(WorkspaceError::Invalid(format!("cwd `{cwd}`: name the directory without `..`")));
        }
        Ok(root.shown.join(relative))
    }
}

/// The PID namespace of a command, named by the target of its init's `/proc/<pid>/ns/pid`
/// link (`pid:[inode]`), so that every process left in it can be found and killed.
struct Namespace {
    link: Option<PathBuf>,
}

impl Namespace {
    /// Reads bubblewrap's first child (the namespace's init) once it exists. A command that
    /// ends before it is seen leaves nothing to sweep: its init exited and took it along.
    async fn of_child(child: &mut tokio::process::Child) -> Namespace {
        let Some(outer) = child.id() else { return Namespace { link: None } };
        let own = std::fs::read_link("/proc/self/ns/pid").ok();
        let children = format!("/proc/{outer}/task/{outer}/children");
        for _ in 0..1_000 {
            let first = std::fs::read_to_string(&children)
                .ok()
                .and_then(|text| text.split_whitespace().next().map(str::to_owned));
            if let Some(init) = first {
                let link = std::fs::read_link(format!("/proc/{init}/ns/pid")).ok();
                if link.is_some() && link != own {
                    return Namespace { link };
                }
            }
            if !matches!(child.try_wait(), Ok(None)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Namespace { link: None }
    }

    /// Kills every process in the namespace until none is left (at most two seconds).
    async fn clear(&mut self) {
        let Some(link) = self.link.take() else { return };
        let swept = tokio::task::spawn_blocking(move || sweep_until_empty(&link)).await;
        if let Err(error) = swept {
            tracing::warn!(%error, "the sweep of a command's namespace did not finish");
        }
    }
}

impl Drop for Namespace {
    /// A call dropped mid-run (cancelled) still leaves nothing behind.
    fn drop(&mut self) {
        if let Some(link) = self.link.take() {
            sweep_until_empty(&link);
        }
    }
}

fn sweep_until_empty(link: &Path) {
    let started = Instant::now();
    while sweep(link) > 0 && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One pass over the process table: SIGKILL to each process whose PID namespace is `link`.
/// The process is pinned by a pidfd before its namespace is checked, so a recycled pid can
/// never direct the signal at another process.
fn sweep(link: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    let mut found = 0;
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        let Some(pid) = rustix::process::Pid::from_raw(pid) else { continue };
        let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else { continue };
        if std::fs::read_link(entry.path().join("ns/pid")).ok().as_deref() != Some(link) || is_zombie(&entry.path()) {
            continue;
        }
        found += 1;
        if let Err(error) = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL) {
            tracing::debug!(%error, "a process of a finished command exited on its own");
        }
    }
    found
}

/// A zombie (the namespace's init, once bubblewrap is gone, until the host's init reaps it)
/// is already dead: nothing to kill, and it must not keep the sweep going.
fn is_zombie(process: &Path) -> bool {
    std::fs::read_to_string(process.join("stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true)
}

/// Appends what fits under the cap (stdout and stderr share it); true when something was cut.
fn keep(buffer: &mut Vec<u8>, bytes: &[u8], other: usize, cap: usize) -> bool {
    let room = cap.saturating_sub(buffer.len() + other);
    buffer.extend_from_slice(&bytes[..bytes.len().min(room)]);
    bytes.len() > room
}

/// SIGKILL to bubblewrap's process group; its PID-namespace init follows (parent-death
/// signal), and with it every process of the command.
async fn kill(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
        && let Err(error) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
    {
        tracing::debug!(%error, "bubblewrap's process group was already gone");
    }
    if let Err(error) = child.kill().await {
        tracing::debug!(%error, "bubblewrap had already exited");
    }
}

/// Limits set by the command's own shell before it runs the command, hard and soft together
/// (`ulimit` without -S/-H), so the command cannot raise them again: raising a hard limit
/// needs a capability in the host's user namespace, which the sandbox does not have. `$1` is
/// the command; with network, `$2…` are the forwarder and its arguments, which then starts it
/// (under the same limits).
fn limits_script(config: &ShellConfig) -> String {
    format!(
        "ulimit -v {} && ulimit -u {} && ulimit -f {} && ulimit -c 0 || {{ echo 'wright: could not set limits' >&2; exit 126; }}; exec \"${{@:2}}\" /bin/bash -c \"$1\"",
        config.memory_limit_bytes / 1024,
        config.max_processes,
        config.max_file_bytes / 1024,
    )
}

/// The forwarder as the sandbox sees it, with its arguments up to the program it starts.
fn forwarder_arguments(network: &NetworkAccess) -> Vec<String> {
    let mut arguments = vec![FORWARDER_MOUNT.to_owned()];
    arguments.extend(network.forwarder.arguments.iter().cloned());
    arguments.extend([PROXY_ADDRESS.to_owned(), SOCKET_MOUNT.to_owned()]);
    arguments
}

/// bubblewrap's arguments up to (not including) `--`: namespaces, mounts, environment. With
/// `network` (and the command's socket on the host), the socket and the forwarder are bound
/// read-only and the proxy variables set; the network namespace is the same either way.
fn sandbox_arguments(
    workspace: &Path,
    roots: &[(PathBuf, PathBuf, bool)],
    cwd: &Path,
    network: Option<(&NetworkAccess, &Path)>,
) -> Vec<String> {
    let mut arguments: Vec<String> = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        // A new session: no access to the server's terminal (TIOCSTI).
        "--new-session",
        "--uid",
        "1000",
        "--gid",
        "1000",
        "--hostname",
        "wright",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    for directory in SYSTEM_DIRS {
        let path = Path::new(directory);
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    arguments.extend(["--symlink".to_owned(), target.display().to_string(), (*directory).to_owned()]);
                }
            }
            Ok(metadata) if metadata.is_dir() => {
                arguments.extend(["--ro-bind".to_owned(), (*directory).to_owned(), (*directory).to_owned()]);
            }
            _ => {}
        }
    }
    for file in ETC_FILES {
        arguments.extend(["--ro-bind-try".to_owned(), (*file).to_owned(), (*file).to_owned()]);
    }
    arguments.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind"].into_iter().map(str::to_owned));
    arguments.push(workspace.display().to_string());
    arguments.push(WORKSPACE_MOUNT.to_owned());
    for (host, shown, writable) in roots {
        arguments.push(if *writable { "--bind" } else { "--ro-bind" }.to_owned());
        arguments.push(host.display().to_string());
        arguments.push(shown.display().to_string());
    }
    if let Some((network, socket)) = network {
        arguments.extend(["--ro-bind".to_owned(), socket.display().to_string(), SOCKET_MOUNT.to_owned()]);
        arguments.extend([
            "--ro-bind".to_owned(),
            network.forwarder.program.display().to_string(),
            FORWARDER_MOUNT.to_owned(),
        ]);
    }
    arguments.extend(["--chdir".to_owned(), cwd.display().to_string(), "--clearenv".to_owned()]);
    if network.is_some() {
        let proxy = format!("http://{PROXY_ADDRESS}");
        for name in PROXY_VARIABLES {
            arguments.extend(["--setenv".to_owned(), (*name).to_owned(), proxy.clone()]);
        }
    }
    for (name, value) in [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", WORKSPACE_MOUNT),
        ("TMPDIR", "/tmp"),
        ("LANG", "C.UTF-8"),
        ("TERM", "dumb"),
    ] {
        arguments.extend(["--setenv".to_owned(), name.to_owned(), value.to_owned()]);
    }
    arguments
}
