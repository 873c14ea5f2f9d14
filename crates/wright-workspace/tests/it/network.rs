//! The confined shell with network on: a command reaches the web only through the egress
//! proxy (the real one, `wright-egress`, behind the command's Unix socket), which applies the
//! egress policy to everything; a direct connection still has no route; a tunnel ends with
//! the call. Servers bind 127.0.0.1:0 on the host, which the policy refuses unless a test
//! allowlists its port (as the browser tests do). These tests need bubblewrap and python3 in
//! `/usr/bin` (`scripts/test.sh` installs both); without them they fail, they do not skip.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wright_egress::{Egress, EgressConfig, StaticResolver, UnixSocketProxy};
use wright_workspace::{Forwarder, ShellNetwork, ShellOutcome, ShellProxy, ShellRequest, ShellStatus, WorkspaceError};

use crate::Fixture;

/// The egress proxy as the shell's proxy (what wright-tools does for the server).
#[derive(Debug)]
struct TestProxy(Egress);

impl ShellProxy for TestProxy {
    fn serve(&self, listener: tokio::net::UnixListener) -> Result<Box<dyn Send + Sync>, String> {
        let proxy: UnixSocketProxy =
            self.0.serve_proxy_on(listener, self.0.config().proxy.clone()).map_err(|error| error.to_string())?;
        Ok(Box::new(proxy))
    }
}

fn network(allow: &[String], resolver: StaticResolver) -> ShellNetwork {
    let config = EgressConfig { allow: allow.to_vec(), ..EgressConfig::default() };
    let egress = Egress::with_resolver(config, Arc::new(resolver)).expect("egress");
    ShellNetwork {
        proxy: Arc::new(TestProxy(egress)),
        forwarder: Forwarder { program: forwarder_program(), arguments: Vec::new() },
    }
}

/// The forwarder cargo built, or a copy (`scripts/test.sh` runs these tests again as an
/// unprivileged user, from copies that user can reach).
fn forwarder_program() -> std::path::PathBuf {
    std::env::var_os("WRIGHT_TEST_SHELL_FORWARD")
        .map_or_else(|| env!("CARGO_BIN_EXE_wright-shell-forward").into(), std::path::PathBuf::from)
}

fn networked(allow: &[String], resolver: StaticResolver) -> Fixture {
    Fixture::build(|config| config.shell.network = true, Some(network(allow, resolver)))
}

fn run(fixture: &Fixture, command: &str) -> ShellOutcome {
    assert_eq!(fixture.workspace.shell_status(), &ShellStatus::Available, "the networked shell must be available");
    assert!(fixture.workspace.shell_network(), "the shell must have network");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest { command: command.to_owned(), timeout_ms: Some(20_000), cwd: None };
    runtime.block_on(fixture.workspace.run(&request)).expect("run")
}

/// A plain HTTP server on the host's loopback: answers every request with `body` and the
/// request line it got, except `/hold`, which it keeps open (reading) until the client goes,
/// then records that the connection closed.
struct Site {
    address: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
    closed_holds: Arc<AtomicUsize>,
}

impl Site {
    fn start(body: &'static str) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let closed_holds = Arc::new(AtomicUsize::new(0));
        let (counted, seen, closed) = (Arc::clone(&connections), Arc::clone(&requests), Arc::clone(&closed_holds));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let (seen, closed) = (Arc::clone(&seen), Arc::clone(&closed));
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
                    seen.lock().expect("requests").push(line.clone());
                    if line.contains("/hold") {
                        stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\nholding\n").ok();
                        let mut rest = Vec::new();
                        stream.read_to_end(&mut rest).ok();
                        closed.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    let text = format!("{body} ({line})\n");
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                    stream.write_all(response.as_bytes()).ok();
                });
            }
        });
        Site { address, connections, requests, closed_holds }
    }

    fn allow(&self) -> String {
        format!("127.0.0.1:{}", self.address.port())
    }
}

#[test]
fn an_allowlisted_server_is_reached_only_through_the_proxy() {
    let site = Site::start("SITE-BODY-42");
    let fixture = networked(&[site.allow()], StaticResolver::new());
    let port = site.address.port();
    // Python's urllib, as an ordinary program would, finds the proxy in the environment; a
    // raw CONNECT tunnel through the forwarder carries a request too; then direct connections:
    // to the site's own address (the host's loopback is not this namespace's), and outside.
    let outcome = run(
        &fixture,
        &format!(
            "env | grep -i '_proxy=' | sort; \
             python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/via-python').read().decode(), end='')\"; \
             exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n' >&3 && read -r status <&3 && echo \"tunnel: $status\" && read -r _ <&3 \
               && printf 'GET /via-tunnel HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3 && tail -n 1 <&3; exec 3>&-; \
             (exec 4<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo DIRECT-LOOPBACK-REACHED; \
             (exec 4<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo DIRECT-INTERNET-REACHED; \
             tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
        ),
    );
    let proxy = "http://127.0.0.1:3128";
    let expected = [
        format!("ALL_PROXY={proxy}"),
        format!("HTTPS_PROXY={proxy}"),
        format!("HTTP_PROXY={proxy}"),
        format!("all_proxy={proxy}"),
        format!("http_proxy={proxy}"),
        format!("https_proxy={proxy}"),
        "SITE-BODY-42 (GET /via-python HTTP/1.1)".to_owned(),
        "tunnel: HTTP/1.1 200 Connection established".to_owned(),
        "SITE-BODY-42 (GET /via-tunnel HTTP/1.1)".to_owned(),
        "lo".to_owned(),
    ];
    assert_eq!(outcome.stdout.lines().collect::<Vec<_>>(), expected, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert_eq!(site.connections.load(Ordering::SeqCst), 2, "only the two proxied requests reached the site");
}

#[test]
fn the_proxy_refuses_what_the_egress_policy_denies() {
    let site = Site::start("ALLOWED");
    let other = Site::start("NOT-ALLOWED");
    // A name whose DNS answer is loopback (rebinding to the host), and one whose answers mix a
    // public and a private address: the proxy resolves each once and judges every address.
    let resolver = StaticResolver::new()
        .with("rebound.test", &["127.0.0.1".parse().expect("ip")])
        .with("mixed.test", &["93.184.216.34".parse().expect("ip"), "10.0.0.1".parse().expect("ip")]);
    let fixture = networked(&[site.allow()], resolver);
    let other_port = other.address.port();
    let request = |target: &str| {
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'GET {target} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3 \
             && response=$(tr -d '\\r' <&3) && echo \"${{response%%$'\\n'*}}\" \
             && grep -i '^x-wright-egress-reason' <<< \"$response\"; exec 3>&-; "
        )
    };
    let command = [
        request(&format!("http://127.0.0.1:{other_port}/")),
        request(&format!("http://rebound.test:{other_port}/")),
        request("http://mixed.test/"),
        request("http://10.0.0.1/"),
        request("http://[::1]/"),
        request("http://169.254.169.254/latest/meta-data/"),
        // No proxy variables: curl-like clients that ignore them get nowhere either.
        format!("(exec 4<>/dev/tcp/127.0.0.1/{other_port}) 2>/dev/null && echo DIRECT-REACHED; "),
    ]
    .concat();
    let outcome = run(&fixture, &command);
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert_eq!(lines.len(), 12, "{outcome:?}");
    for (index, reason) in [
        format!("127.0.0.1:{other_port}/: 127.0.0.1 is loopback"),
        "127.0.0.1 is loopback".to_owned(),
        "10.0.0.1 is private".to_owned(),
        "10.0.0.1 is private".to_owned(),
        "::1 is loopback".to_owned(),
        "169.254.169.254 is cloud metadata".to_owned(),
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(lines[2 * index], "HTTP/1.1 403 Forbidden", "{outcome:?}");
        assert!(lines[2 * index + 1].contains(reason.as_str()), "expected {reason:?} in {:?}", lines[2 * index + 1]);
    }
    assert_eq!(other.connections.load(Ordering::SeqCst), 0, "ESCAPE: a denied server saw a connection");
    assert_eq!(site.connections.load(Ordering::SeqCst), 0);
}

#[test]
fn a_command_is_unchanged_behind_the_forwarder_and_its_tunnels_end_with_the_call() {
    let site = Site::start("HOLD");
    let fixture = networked(&[site.allow()], StaticResolver::new());
    let port = site.address.port();
    let started = Instant::now();
    // A background process holds a connection through the proxy open past the command's end;
    // the command's own exit status, streams and SIGPIPE behaviour are what they are without
    // the forwarder.
    let outcome = run(
        &fixture,
        &format!(
            "(exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET http://127.0.0.1:{port}/hold HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; \
               read -r line <&3; echo \"background: $line\" > /workspace/held.txt; exec sleep 100 <&3) >/dev/null 2>&1 & \
             while [ ! -s /workspace/held.txt ]; do sleep 0.05; done; \
             yes | head -n 1; echo to-stderr >&2; exit 7"
        ),
    );
    assert_eq!((outcome.stdout.as_str(), outcome.stderr.as_str()), ("y\n", "to-stderr\n"), "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(7));
    assert!(std::fs::read_to_string(fixture.host("held.txt")).expect("held").starts_with("background: HTTP/1.1 200"));
    // The call has returned: the held connection is closed (the namespace and the command's
    // proxy are gone), long before its background process would have ended.
    while site.closed_holds.load(Ordering::SeqCst) == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "ESCAPE: a tunnel outlived its call");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(site.requests.lock().expect("requests").as_slice(), ["GET /hold HTTP/1.1"]);
    // The command's socket is gone from the host.
    let sockets = fixture.temp.path().join("data/run/shell");
    assert_eq!(std::fs::read_dir(&sockets).expect("sockets dir").count(), 0, "a proxy socket was left behind");
}

#[test]
fn without_network_or_without_its_forwarder_the_shell_has_no_network() {
    // Network off (the default): no proxy variables, no socket, nothing mounted for it, even
    // when the server hands the workspace a proxy.
    let site = Site::start("NEVER");
    let off = Fixture::build(|_| {}, Some(network(&[site.allow()], StaticResolver::new())));
    assert!(!off.workspace.shell_network());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest {
        command:
            "env | grep -ci proxy; ls /run/wright 2>&1; (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && echo REACHED"
                .into(),
        timeout_ms: Some(10_000),
        cwd: None,
    };
    let outcome = runtime.block_on(off.workspace.run(&request)).expect("run");
    assert_eq!(outcome.stdout.lines().next(), Some("0"), "{outcome:?}");
    assert!(outcome.stdout.contains("No such file") && !outcome.stdout.contains("REACHED"), "{outcome:?}");
    assert_eq!(site.connections.load(Ordering::SeqCst), 0);

    // Network on but no proxy given: the shell is off rather than networkless or unconfined.
    let unattached = Fixture::with(|config| config.shell.network = true);
    let ShellStatus::Unavailable { reason } = unattached.workspace.shell_status() else {
        panic!("expected the shell off, got {:?}", unattached.workspace.shell_status());
    };
    assert!(reason.contains("no egress proxy"), "{reason}");
    assert!(matches!(runtime.block_on(unattached.workspace.run(&request)), Err(WorkspaceError::ShellUnavailable(_))));

    // Network on and a forwarder that cannot run in the sandbox: the probe says so at start.
    let mut broken = network(&[], StaticResolver::new());
    broken.forwarder.program = "/nonexistent/forwarder".into();
    let broken = Fixture::build(|config| config.shell.network = true, Some(broken));
    assert!(
        matches!(broken.workspace.shell_status(), ShellStatus::Unavailable { .. }),
        "{:?}",
        broken.workspace.shell_status()
    );
    assert!(!broken.workspace.shell_network());
}
