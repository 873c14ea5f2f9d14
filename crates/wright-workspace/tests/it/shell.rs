//! The confined shell: what a command can reach and how it ends. Each escape test fails
//! loudly ("ESCAPE") if the confinement weakens. These tests need bubblewrap
//! (`scripts/test.sh` installs it); without it they fail, they do not skip.

use std::time::{Duration, Instant};

use wright_workspace::{ShellOutcome, ShellRequest, ShellStatus, WorkspaceError};

use crate::{Fixture, SECRET, path_text};

fn shell(fixture: &Fixture, command: &str, timeout_ms: u64) -> ShellOutcome {
    assert_eq!(
        fixture.workspace.shell_status(),
        &ShellStatus::Available,
        "bubblewrap must work on the test machine (scripts/test.sh installs it)"
    );
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest { command: command.to_owned(), timeout_ms: Some(timeout_ms), cwd: None };
    runtime.block_on(fixture.workspace.run(&request)).expect("run")
}

/// No process of the host's process table carries `marker` on its command line: a command's
/// processes did not outlive its call. The kernel tears a PID namespace down asynchronously
/// (every process gets SIGKILL, then is reaped), so this allows it a few seconds.
#[track_caller]
fn assert_no_process_with(marker: &str) {
    let started = Instant::now();
    loop {
        let survivors: Vec<String> = std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().bytes().all(|byte| byte.is_ascii_digit()))
            .filter_map(|entry| {
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
                let state = status
                    .lines()
                    .filter(|line| {
                        line.starts_with("State")
                            || line.starts_with("PPid")
                            || line.starts_with("NSpid")
                            || line.starts_with("Sig")
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                Some(format!(
                    "{} [{}] {state}",
                    String::from_utf8_lossy(&cmdline).replace('\0', " "),
                    entry.file_name().to_string_lossy()
                ))
            })
            .filter(|line| line.contains(marker))
            .collect();
        if survivors.is_empty() {
            eprintln!("{marker}: gone {:?} after the call", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "ESCAPE: {} processes outlived the call: {:?}",
            survivors.len(),
            &survivors[..1]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn runs_in_the_workspace_with_exit_codes_and_both_streams() {
    let fixture = Fixture::new();
    let outcome = shell(&fixture, "pwd; echo hi > made.txt; echo oops >&2; id -u; exit 3", 10_000);
    assert_eq!(outcome.stdout, "/workspace\n1000\n");
    assert_eq!(outcome.stderr, "oops\n");
    assert_eq!((outcome.exit_code, outcome.truncated, outcome.timed_out), (Some(3), false, false));
    assert_eq!(std::fs::read_to_string(fixture.host("made.txt")).expect("made"), "hi\n");
    let ro = path_text(&fixture.root("shared-ro"));
    let outcome = shell(&fixture, &format!("cat {ro}/readme.txt"), 10_000);
    assert_eq!(outcome.stdout, "read only\n", "operator roots are mounted at their own paths");
}

#[test]
fn cwd_is_resolved_beneath_a_root() {
    let fixture = Fixture::new();
    std::fs::create_dir(fixture.host("sub")).expect("sub");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let run = |cwd: &str| {
        let request = ShellRequest { command: "pwd".into(), timeout_ms: Some(10_000), cwd: Some(cwd.into()) };
        runtime.block_on(fixture.workspace.run(&request))
    };
    assert_eq!(run("sub").expect("sub").stdout, "/workspace/sub\n");
    assert!(run("../..").is_err(), "ESCAPE: cwd outside the workspace");
    assert!(run("/etc").is_err(), "ESCAPE: cwd outside the roots");
}

#[test]
fn the_network_is_unreachable() {
    let fixture = Fixture::new();
    // A server on the host's loopback: the sandbox has a loopback of its own, so even this
    // fails; a real outside address fails for want of any route.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let outcome = shell(
        &fixture,
        &format!(
            "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo LOOPBACK-REACHED; \
             (exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo INTERNET-REACHED; \
             cat /proc/net/dev | tail -n +3 | cut -d: -f1"
        ),
        10_000,
    );
    assert!(!outcome.stdout.contains("REACHED"), "ESCAPE: the network was reachable: {}", outcome.stdout);
    assert_eq!(outcome.stdout.trim(), "lo", "the only interface is the sandbox's own loopback");
    assert!(listener.accept().is_err(), "ESCAPE: the host listener accepted a connection");
}

#[test]
fn host_files_outside_the_roots_are_not_visible() {
    let fixture = Fixture::new();
    let secret = path_text(&fixture.outside().join("secret.txt"));
    let outcome = shell(
        &fixture,
        &format!("cat {secret}; cat /etc/passwd; cat /etc/shadow; ls /root /home; cat /proc/1/environ"),
        10_000,
    );
    assert!(!outcome.stdout.contains(SECRET), "ESCAPE: read a host file: {}", outcome.stdout);
    assert!(!outcome.stdout.contains("root:"), "ESCAPE: read the host's /etc/passwd: {}", outcome.stdout);
    assert!(outcome.stderr.contains("No such file"), "{}", outcome.stderr);
}

#[test]
fn writes_outside_the_workspace_fail() {
    let fixture = Fixture::new();
    let ro = path_text(&fixture.root("shared-ro"));
    let outside = path_text(&fixture.outside());
    let marker = format!("wright-escape-{}", std::process::id());
    let outcome = shell(
        &fixture,
        &format!(
            "echo pwned > {outside}/secret.txt; echo pwned > {ro}/readme.txt; echo pwned > /usr/{marker}; \
             echo pwned > /etc/{marker}; ln /usr/bin/bash hard-bash; ln {ro}/readme.txt hard-readme; \
             echo in-tmp > /tmp/{marker}; cat /tmp/{marker}"
        ),
        10_000,
    );
    assert_eq!(outcome.stdout, "in-tmp\n", "only the sandbox's own /tmp is writable besides the workspace");
    fixture.assert_secret_intact();
    assert_eq!(
        std::fs::read_to_string(fixture.root("shared-ro/readme.txt")).expect("ro"),
        "read only\n",
        "ESCAPE: wrote a read-only root"
    );
    for host_path in [format!("/usr/{marker}"), format!("/etc/{marker}"), format!("/tmp/{marker}")] {
        assert!(!std::path::Path::new(&host_path).exists(), "ESCAPE: wrote {host_path} on the host");
    }
    assert!(
        !fixture.host("hard-bash").exists() && !fixture.host("hard-readme").exists(),
        "ESCAPE: hard-linked a file from outside"
    );
}

#[test]
fn a_fork_bomb_is_contained_and_killed() {
    let fixture = Fixture::with(|config| config.shell.max_processes = 64);
    let marker = format!("forkbomb{}", std::process::id());
    let started = Instant::now();
    // After a second of the bomb, the shell counts the processes of its PID namespace with
    // builtins only (a fork could fail): never more than the limit.
    let outcome = shell(
        &fixture,
        &format!(
            "mkfifo /tmp/wait && exec 3<>/tmp/wait; b() {{ b | b & }}; b; read -t 1 -u 3; \
             processes=(/proc/[0-9]*); echo COUNT ${{#processes[@]}}; exec -a {marker} sleep 100"
        ),
        3_000,
    );
    assert!(started.elapsed() < Duration::from_secs(20), "the call outlived its deadline: {:?}", started.elapsed());
    assert!(outcome.timed_out || outcome.exit_code != Some(0), "{outcome:?}");
    let count: usize = outcome
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("COUNT "))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("the shell did not count its processes: {outcome:?}"));
    assert!(count <= 64, "ESCAPE: the fork bomb reached {count} processes past the limit of 64");
    assert_no_process_with(&marker);
    // The host can still start processes.
    assert!(std::process::Command::new("true").status().expect("spawn after the bomb").success());
}

#[test]
fn background_processes_do_not_outlive_the_call() {
    let fixture = Fixture::new();
    let marker = format!("background{}", std::process::id());
    let started = Instant::now();
    let outcome = shell(
        &fixture,
        &format!(
            "(sleep 2; echo late > /workspace/late.txt) & disown; nohup bash -c 'exec -a {marker} sleep 100' >/dev/null 2>&1 & echo started"
        ),
        20_000,
    );
    assert_eq!(outcome.stdout, "started\n");
    assert!(started.elapsed() < Duration::from_secs(2), "the call waited for its background processes");
    assert_no_process_with(&marker);
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(!fixture.host("late.txt").exists(), "ESCAPE: a background process ran on after the call");
}

#[test]
fn output_floods_are_cut_and_stopped() {
    let fixture = Fixture::with(|config| config.shell.max_output_bytes = 64 * 1024);
    let started = Instant::now();
    let outcome = shell(&fixture, "yes flood & yes flood >&2", 30_000);
    assert!(outcome.truncated, "{:?}", outcome.stdout.len());
    assert!(outcome.stdout.len() + outcome.stderr.len() <= 64 * 1024);
    assert!(started.elapsed() < Duration::from_secs(10), "a flood was not stopped at the cap");
    assert!(!outcome.timed_out);
}

#[test]
fn a_command_ignoring_sigterm_is_killed_at_the_deadline() {
    let fixture = Fixture::new();
    let marker = format!("stubborn{}", std::process::id());
    let started = Instant::now();
    let outcome = shell(
        &fixture,
        &format!("trap '' TERM INT HUP; exec -a {marker} bash -c \"trap '' TERM; while :; do sleep 1; done\""),
        1_000,
    );
    assert!(outcome.timed_out, "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    assert_no_process_with(&marker);
}

#[test]
fn memory_and_file_size_limits_hold() {
    let fixture = Fixture::with(|config| {
        config.shell.memory_limit_bytes = 256 * 1024 * 1024;
        config.shell.max_file_bytes = 1024 * 1024;
    });
    let outcome = shell(&fixture, "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}", 30_000);
    assert!(!outcome.stdout.contains("400000000"), "the memory limit did not hold: {outcome:?}");
    let outcome = shell(&fixture, "head -c 2000000 /dev/zero > big.bin; stat -c %s big.bin", 30_000);
    assert_eq!(outcome.stdout.trim(), "1048576", "the file size limit did not hold: {outcome:?}");
    let outcome = shell(&fixture, "ulimit -Hv unlimited && echo RAISED", 10_000);
    assert!(!outcome.stdout.contains("RAISED"), "ESCAPE: the command raised its own limit");
}

#[test]
fn without_bubblewrap_the_shell_is_off_never_unconfined() {
    let fixture = Fixture::with(|config| config.shell.bwrap_path = "/nonexistent/bwrap".into());
    let ShellStatus::Unavailable { reason } = fixture.workspace.shell_status() else {
        panic!("expected the shell to be unavailable, got {:?}", fixture.workspace.shell_status());
    };
    assert!(reason.contains("bubblewrap"), "{reason}");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest { command: "true".into(), timeout_ms: None, cwd: None };
    assert!(matches!(runtime.block_on(fixture.workspace.run(&request)), Err(WorkspaceError::ShellUnavailable(_))));
    let off = Fixture::with(|config| config.shell.enabled = false);
    assert_eq!(off.workspace.shell_status(), &ShellStatus::Disabled);
}

#[test]
fn a_timeout_above_the_limit_is_refused() {
    let fixture = Fixture::with(|config| config.shell.max_timeout_ms = 5_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest { command: "true".into(), timeout_ms: Some(5_001), cwd: None };
    assert!(matches!(runtime.block_on(fixture.workspace.run(&request)), Err(WorkspaceError::Limit(_))));
}
