//! The file engines and their escape tests: each names a way out and fails loudly if it works.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wright_workspace::{GrepRequest, Place, ShellRequest, WorkspaceError};

use crate::{Fixture, SECRET, path_text};

#[track_caller]
fn assert_refused<T: std::fmt::Debug>(result: Result<T, WorkspaceError>, what: &str) -> WorkspaceError {
    match result {
        Ok(value) => panic!("ESCAPE: {what} succeeded: {value:?}"),
        Err(error) => {
            assert!(!error.to_string().contains(SECRET), "{what}: the error leaks the secret: {error}");
            error
        }
    }
}

#[test]
fn write_read_edit_round_trip_with_numbered_lines() {
    let fixture = Fixture::new();
    let written = fixture.workspace.write("notes/todo.txt", "one\ntwo\nthree\n").expect("write");
    assert_eq!((written.path.as_str(), written.bytes, written.created), ("/workspace/notes/todo.txt", 14, true));
    let read = fixture.workspace.read("/workspace/notes/todo.txt", Some(2), Some(1)).expect("read");
    assert_eq!(read.content, "     2\ttwo\n");
    assert_eq!((read.start_line, read.lines, read.total_lines, read.truncated), (2, 1, 3, true));
    let edited = fixture.workspace.edit("notes/todo.txt", "two", "TWO", false).expect("edit");
    assert_eq!(edited.replacements, 1);
    assert_eq!(std::fs::read_to_string(fixture.host("notes/todo.txt")).expect("host"), "one\nTWO\nthree\n");
    let rewritten = fixture.workspace.write("notes/todo.txt", "x").expect("rewrite");
    assert!(!rewritten.created);
}

#[test]
fn edit_requires_exactly_one_match_unless_replace_all() {
    let fixture = Fixture::new();
    fixture.workspace.write("a.txt", "x y x").expect("write");
    let error = assert_refused(fixture.workspace.edit("a.txt", "x", "z", false), "ambiguous edit");
    assert!(error.to_string().contains("occurs 2 times"), "{error}");
    assert_refused(fixture.workspace.edit("a.txt", "missing", "z", false), "edit of missing text");
    assert_refused(fixture.workspace.edit("a.txt", "", "z", false), "edit with empty old text");
    assert_eq!(fixture.workspace.edit("a.txt", "x", "z", true).expect("replace all").replacements, 2);
    assert_eq!(std::fs::read_to_string(fixture.host("a.txt")).expect("host"), "z y z");
}

#[test]
fn binary_files_are_refused_clearly() {
    let fixture = Fixture::new();
    std::fs::write(fixture.host("blob.bin"), b"abc\0def").expect("blob");
    let error = assert_refused(fixture.workspace.read("blob.bin", None, None), "reading a binary file");
    assert!(error.to_string().contains("binary"), "{error}");
    std::fs::write(fixture.host("latin1.txt"), b"caf\xe9\n").expect("latin1");
    assert_refused(fixture.workspace.read("latin1.txt", None, None), "reading non-UTF-8 text");
}

#[test]
fn dot_dot_cannot_leave_a_root() {
    let fixture = Fixture::new();
    for path in ["../../../outside/secret.txt", "/workspace/../../../../outside/secret.txt", "sub/../../x", ".."] {
        assert_refused(fixture.workspace.read(path, None, None), &format!("read {path}"));
    }
    let error = assert_refused(fixture.workspace.read("../../../outside/secret.txt", None, None), "read ../");
    assert!(matches!(error, WorkspaceError::Escape { .. }), "{error:?}");
    assert_refused(fixture.workspace.write("../../../outside/secret.txt", "pwned"), "write ../");
    assert_refused(fixture.workspace.write("a/../../../../outside/secret.txt", "pwned"), "write a/../");
    assert_refused(fixture.workspace.edit("../../../outside/secret.txt", SECRET, "pwned", false), "edit ../");
    let ro = path_text(&fixture.root("shared-ro"));
    assert_refused(fixture.workspace.read(&format!("{ro}/../outside/secret.txt"), None, None), "read root/../");
    fixture.assert_secret_intact();
}

#[test]
fn absolute_paths_outside_the_roots_are_refused() {
    let fixture = Fixture::new();
    let secret = path_text(&fixture.outside().join("secret.txt"));
    for path in [secret.as_str(), "/etc/passwd", "/", "/workspacex/a"] {
        let error = assert_refused(fixture.workspace.read(path, None, None), &format!("read {path}"));
        assert!(matches!(error, WorkspaceError::OutsideRoots { .. }), "{path}: {error:?}");
    }
    assert_refused(fixture.workspace.write(&secret, "pwned"), "write absolute");
    assert_refused(fixture.workspace.glob("*", Some("/etc")), "glob /etc");
    fixture.assert_secret_intact();
}

#[test]
fn symlinks_cannot_lead_out() {
    let fixture = Fixture::new();
    symlink(fixture.outside().join("secret.txt"), fixture.host("absolute-link")).expect("symlink");
    symlink("../../../../outside/secret.txt", fixture.host("relative-link")).expect("symlink");
    symlink(fixture.outside(), fixture.host("dir-link")).expect("symlink");
    std::fs::write(fixture.host("inside.txt"), "inside\n").expect("inside");
    symlink("inside.txt", fixture.host("ok-link")).expect("symlink");
    for path in ["absolute-link", "relative-link", "dir-link/secret.txt"] {
        let error = assert_refused(fixture.workspace.read(path, None, None), &format!("read through {path}"));
        assert!(matches!(error, WorkspaceError::Escape { .. }), "{path}: {error:?}");
        assert_refused(fixture.workspace.write(path, "pwned"), &format!("write through {path}"));
        assert_refused(fixture.workspace.edit(path, SECRET, "pwned", false), &format!("edit through {path}"));
    }
    assert_refused(fixture.workspace.write("dir-link/new.txt", "pwned"), "create through a dir symlink");
    assert!(!fixture.outside().join("new.txt").exists(), "ESCAPE: a file was created outside");
    // A symlink that stays inside still works for reading.
    assert_eq!(fixture.workspace.read("ok-link", None, None).expect("inside link").content, "     1\tinside\n");
    let grep = fixture.workspace.grep(&grep_request(SECRET)).expect("grep");
    assert_eq!(grep.count, 0, "ESCAPE: grep followed a symlink out: {}", grep.output);
    let glob = fixture.workspace.glob("**/*", None).expect("glob");
    assert!(
        glob.paths.iter().all(|path| !path.contains("secret")),
        "ESCAPE: glob listed through a symlink: {:?}",
        glob.paths
    );
    fixture.assert_secret_intact();
}

#[test]
fn proc_self_root_is_not_a_way_out() {
    let fixture = Fixture::new();
    assert_refused(fixture.workspace.read("/proc/self/root/etc/passwd", None, None), "read /proc/self/root");
    symlink("/proc/self/root", fixture.host("proc-root")).expect("symlink");
    symlink("/proc/self/cwd", fixture.host("proc-cwd")).expect("symlink");
    let error =
        assert_refused(fixture.workspace.read("proc-root/etc/passwd", None, None), "read via a /proc/self/root link");
    assert!(matches!(error, WorkspaceError::Escape { .. }), "{error:?}");
    assert_refused(fixture.workspace.read("proc-cwd/Cargo.toml", None, None), "read via a /proc/self/cwd link");
}

#[test]
fn hard_links_to_outside_files_are_neither_read_nor_written_through() {
    let fixture = Fixture::new();
    // In an operator root (which other users of the host may be able to write), a file with a
    // second name is refused whoever owns it.
    let shared = fixture.root("shared-rw");
    std::fs::hard_link(fixture.outside().join("secret.txt"), shared.join("hard.txt")).expect("hard link");
    let hard = path_text(&shared.join("hard.txt"));
    let error = assert_refused(fixture.workspace.read(&hard, None, None), "read a hard link in an operator root");
    assert!(error.to_string().contains("hard link"), "{error}");
    assert_refused(fixture.workspace.edit(&hard, SECRET, "pwned", false), "edit a hard link");
    let grep =
        fixture.workspace.grep(&GrepRequest { path: Some(path_text(&shared)), ..grep_request(SECRET) }).expect("grep");
    assert_eq!(grep.count, 0, "ESCAPE: grep read a hard link: {}", grep.output);
    // A write replaces the root's name with a new file; the outside file is untouched.
    fixture.workspace.write(&hard, "mine").expect("write replaces the entry");
    assert_eq!(std::fs::read_to_string(shared.join("hard.txt")).expect("host"), "mine");
    fixture.assert_secret_intact();

    // In the agent's own workspace, a file of another owner linked in is refused too. Making
    // one needs root (chown); without root, the kernel's protected_hardlinks refuses to make
    // such a link at all (a file this user neither owns nor can write), which is what the
    // workspace's rule stands on.
    let foreign = fixture.outside().join("foreign.txt");
    std::fs::write(&foreign, SECRET).expect("foreign");
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&foreign, Some(4242), Some(4242)).expect("chown");
        std::fs::hard_link(&foreign, fixture.host("foreign.txt")).expect("hard link");
        let error = assert_refused(fixture.workspace.read("foreign.txt", None, None), "read another owner's link");
        assert!(error.to_string().contains("hard link"), "{error}");
        assert_refused(fixture.workspace.edit("foreign.txt", SECRET, "pwned", false), "edit another owner's link");
        let grep = fixture.workspace.grep(&grep_request(SECRET)).expect("grep");
        assert_eq!(grep.count, 0, "ESCAPE: grep read another owner's hard link: {}", grep.output);
    } else {
        let error = std::fs::hard_link("/usr/bin/bash", fixture.host("foreign.txt")).expect_err("linked a root file");
        assert!(matches!(error.raw_os_error(), Some(1) | Some(18)), "EPERM or EXDEV expected: {error}");
    }
}

/// Hard links the shell makes (a `git clone` of a local repository does) are both inside the
/// workspace: such files are read, searched and edited, and an edit replaces only the name
/// edited.
#[test]
fn hard_links_made_inside_the_workspace_are_read() {
    let fixture = Fixture::new();
    std::fs::write(fixture.host("first.txt"), "shared text\n").expect("file");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let request = ShellRequest {
        command: "ln first.txt second.txt && stat -c %h second.txt".into(),
        timeout_ms: Some(10_000),
        cwd: None,
    };
    let outcome = runtime.block_on(fixture.workspace.run(&request)).expect("run");
    assert_eq!(outcome.stdout, "2\n", "{outcome:?}");
    assert_eq!(fixture.workspace.read("second.txt", None, None).expect("read").content, "     1\tshared text\n");
    let grep = fixture.workspace.grep(&grep_request("shared text")).expect("grep");
    assert_eq!(grep.count, 2, "{}", grep.output);
    fixture.workspace.edit("second.txt", "shared", "edited", false).expect("edit");
    assert_eq!(std::fs::read_to_string(fixture.host("second.txt")).expect("second"), "edited text\n");
    assert_eq!(std::fs::read_to_string(fixture.host("first.txt")).expect("first"), "shared text\n");
}

#[test]
fn devices_and_fifos_are_refused_without_blocking() {
    let fixture = Fixture::new();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fixture.host("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    // Opening a FIFO for reading would block until a writer came; the refusal is immediate.
    let error = assert_refused(fixture.workspace.read("fifo", None, None), "read a FIFO");
    assert!(error.to_string().contains("not a regular file"), "{error}");
    symlink("/dev/zero", fixture.host("zero")).expect("symlink");
    assert_refused(fixture.workspace.read("zero", None, None), "read /dev/zero through a link");
    if rustix::process::geteuid().is_root() {
        // /dev/null's numbers (1, 3): a real character device inside the workspace.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fixture.host("null"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .expect("mknod as root");
        assert_refused(fixture.workspace.read("null", None, None), "read a character device");
        assert_refused(fixture.workspace.edit("null", "a", "b", false), "edit a character device");
    }
    let grep = fixture.workspace.grep(&grep_request("x")).expect("grep skips special files");
    assert_eq!(grep.count, 0);
}

#[test]
fn a_symlink_swapped_during_calls_never_reveals_the_outside() {
    let fixture = Fixture::new();
    std::fs::create_dir(fixture.host("real")).expect("dir");
    std::fs::write(fixture.host("real/f.txt"), "inside\n").expect("inside");
    symlink(fixture.outside(), fixture.host("evil")).expect("symlink");
    std::fs::write(fixture.outside().join("f.txt"), SECRET).expect("outside f");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (real, evil, target) = (fixture.host("real"), fixture.host("evil"), fixture.host("d"));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // rename(2) is atomic: `d` is the real directory, then the symlink out.
                std::fs::rename(&real, &target).expect("swap in dir");
                std::fs::rename(&target, &real).expect("swap back");
                std::fs::rename(&evil, &target).expect("swap in symlink");
                std::fs::rename(&target, &evil).expect("swap back");
                swaps += 1;
            }
            swaps
        })
    };
    let mut inside_reads = 0;
    for _ in 0..3000 {
        if let Ok(read) = fixture.workspace.read("d/f.txt", None, None) {
            assert!(!read.content.contains(SECRET), "ESCAPE: read through a swapped symlink");
            inside_reads += 1;
        }
        if let Ok(grep) = fixture
            .workspace
            .grep(&wright_workspace::GrepRequest { path: Some("d".into()), ..grep_request("SECRET|inside") })
        {
            assert!(!grep.output.contains(SECRET), "ESCAPE: grep through a swapped symlink: {}", grep.output);
        }
        assert!(
            fixture.workspace.edit("d/f.txt", SECRET, "pwned", false).is_err(),
            "ESCAPE: edited through a swapped symlink"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 10, "the swapper barely ran ({swaps} swaps); the test proved nothing");
    assert!(inside_reads > 0, "no read ever saw the real directory; the test proved nothing");
    fixture.assert_secret_intact();
}

#[test]
fn read_only_roots_refuse_writes() {
    let fixture = Fixture::new();
    let ro = path_text(&fixture.root("shared-ro"));
    assert_eq!(fixture.workspace.read(&format!("{ro}/readme.txt"), None, None).expect("read").lines, 1);
    let error =
        assert_refused(fixture.workspace.write(&format!("{ro}/readme.txt"), "changed"), "write to a read-only root");
    assert!(matches!(error, WorkspaceError::ReadOnly { .. }), "{error:?}");
    assert_refused(
        fixture.workspace.edit(&format!("{ro}/readme.txt"), "read", "write", false),
        "edit in a read-only root",
    );
    let rw = path_text(&fixture.root("shared-rw"));
    fixture.workspace.write(&format!("{rw}/new.txt"), "ok").expect("write to a read-write root");
    assert!(fixture.root("shared-rw/new.txt").exists());
}

#[test]
fn read_and_write_limits_are_configurable() {
    let fixture = Fixture::with(|config| {
        config.limits.max_write_bytes = 10;
        config.limits.read_default_lines = 2;
        config.limits.read_max_line_chars = 3;
    });
    assert!(matches!(fixture.workspace.write("big.txt", "01234567890"), Err(WorkspaceError::Limit(_))));
    std::fs::write(fixture.host("lines.txt"), "abcdef\n2\n3\n").expect("lines");
    let read = fixture.workspace.read("lines.txt", None, None).expect("read");
    assert_eq!(read.lines, 2);
    assert!(read.truncated);
    assert!(read.content.starts_with("     1\tabc [line cut at 3 characters]\n"), "{}", read.content);
    std::fs::write(fixture.host("edit.txt"), "aaaa").expect("edit file");
    assert!(matches!(fixture.workspace.edit("edit.txt", "a", "bbb", true), Err(WorkspaceError::Limit(_))));
}

pub(crate) fn grep_request(pattern: &str) -> wright_workspace::GrepRequest {
    wright_workspace::GrepRequest { pattern: pattern.to_owned(), ..Default::default() }
}

/// What the tools' approval rule rests on: a write into the agent's own workspace runs without
/// asking, one into an operator's root asks, so `place` must name the root the kernel will
/// resolve the path beneath, however the path is spelled.
#[test]
fn place_names_the_root_a_path_resolves_beneath() {
    let fixture = Fixture::new();
    let shared = path_text(&fixture.root("shared-rw"));
    for own in ["todo.txt", "./notes/a.md", "/workspace/x", "/workspace", "notes/../b.txt"] {
        assert_eq!(fixture.workspace.place(own), Place::Own, "{own}");
    }
    for other in [format!("{shared}/a.txt"), shared.clone(), format!("{shared}/../shared-rw/a.txt")] {
        assert_eq!(fixture.workspace.place(&other), Place::OperatorRoot, "{other}");
    }
    // A path in no root leads nowhere (the write fails on its own, nothing to ask about), and a
    // relative path that climbs out still resolves beneath the workspace, where the kernel refuses it.
    assert_eq!(fixture.workspace.place(&path_text(&fixture.outside().join("secret.txt"))), Place::Nowhere);
    assert_eq!(fixture.workspace.place("/workspacex/a"), Place::Nowhere);
    assert_eq!(fixture.workspace.place("../outside/secret.txt"), Place::Own);
    assert_refused(fixture.workspace.write("../outside/secret.txt", "x"), "a relative write climbing out");
    fixture.assert_secret_intact();
}
