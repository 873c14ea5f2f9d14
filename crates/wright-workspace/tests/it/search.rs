//! glob and grep: ordering, modes, filters, .gitignore and caps.

use std::time::{Duration, SystemTime};

use wright_workspace::{GrepMode, GrepRequest};

use crate::Fixture;
use crate::files::grep_request;

fn touch(fixture: &Fixture, relative: &str, content: &str, age_seconds: u64) {
    let path = fixture.host(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, content).expect("write");
    let file = std::fs::File::options().write(true).open(&path).expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs(age_seconds)).expect("mtime");
}

#[test]
fn glob_lists_matches_newest_first_and_caps_them() {
    let fixture = Fixture::with(|config| config.limits.glob_max_results = 2);
    touch(&fixture, "src/old.rs", "", 300);
    touch(&fixture, "src/deep/new.rs", "", 10);
    touch(&fixture, "src/mid.rs", "", 100);
    touch(&fixture, "src/readme.md", "", 1);
    let glob = fixture.workspace.glob("**/*.rs", None).expect("glob");
    assert_eq!(glob.paths, ["/workspace/src/deep/new.rs", "/workspace/src/mid.rs"]);
    assert_eq!((glob.count, glob.truncated), (3, true));
    let in_src = fixture.workspace.glob("*.rs", Some("/workspace/src")).expect("glob in src");
    assert_eq!(in_src.paths, ["/workspace/src/mid.rs", "/workspace/src/old.rs"], "`*` does not cross `/`");
    let absolute = fixture.workspace.glob("/workspace/src/deep/*.rs", Some("/workspace/src")).expect("repeated prefix");
    assert_eq!(absolute.paths, ["/workspace/src/deep/new.rs"], "the repeated directory is dropped");
    assert!(fixture.workspace.glob("/etc/*", Some("/workspace/src")).is_err(), "another absolute pattern is refused");
}

#[test]
fn grep_modes_filters_and_gitignore() {
    let fixture = Fixture::new();
    touch(&fixture, "a.rs", "fn main() {}\n// TODO one\n// todo two\n", 5);
    touch(&fixture, "b.txt", "TODO three\n", 5);
    touch(&fixture, "target/gen.rs", "TODO generated\n", 5);
    touch(&fixture, ".gitignore", "target/\n", 5);
    touch(&fixture, ".hidden.rs", "TODO hidden\n", 5);
    let content = fixture.workspace.grep(&grep_request("TODO")).expect("grep");
    assert_eq!(content.output, "/workspace/a.rs:2:// TODO one\n/workspace/b.txt:1:TODO three\n");
    assert_eq!((content.count, content.truncated), (2, false));
    let insensitive = fixture
        .workspace
        .grep(&GrepRequest { case_insensitive: true, glob: Some("*.rs".into()), ..grep_request("todo") })
        .expect("grep -i");
    assert_eq!(insensitive.output, "/workspace/a.rs:2:// TODO one\n/workspace/a.rs:3:// todo two\n");
    let files = fixture
        .workspace
        .grep(&GrepRequest { mode: GrepMode::FilesWithMatches, ..grep_request("TODO") })
        .expect("files");
    assert_eq!(files.output, "/workspace/a.rs\n/workspace/b.txt\n");
    let counts = fixture
        .workspace
        .grep(&GrepRequest { mode: GrepMode::Count, case_insensitive: true, ..grep_request("todo") })
        .expect("count");
    assert_eq!(counts.output, "/workspace/a.rs:2\n/workspace/b.txt:1\n");
    let one_file = fixture
        .workspace
        .grep(&GrepRequest { path: Some("target/gen.rs".into()), ..grep_request("TODO") })
        .expect("file");
    assert_eq!(
        one_file.output, "/workspace/target/gen.rs:1:TODO generated\n",
        "a named file is searched even if ignored"
    );
    assert!(fixture.workspace.grep(&grep_request("(")).is_err(), "an invalid regex is an error");
}

#[test]
fn grep_output_is_capped() {
    let fixture = Fixture::with(|config| {
        config.limits.grep_max_results = 3;
        config.limits.grep_max_line_chars = 4;
    });
    touch(&fixture, "many.txt", &"match this line\n".repeat(50), 5);
    let grep = fixture.workspace.grep(&grep_request("match")).expect("grep");
    assert_eq!(
        grep.output,
        "/workspace/many.txt:1:matc […]\n/workspace/many.txt:2:matc […]\n/workspace/many.txt:3:matc […]\n"
    );
    assert!(grep.truncated);
}
