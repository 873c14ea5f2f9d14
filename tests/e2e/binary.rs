//! The real `wright` binary: `serve` on an empty data directory, `tool call`, and the
//! prompt/notes commands an admin uses at a terminal.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub(crate) const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");

fn wright(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(WRIGHT).arg("--data-dir").arg(data_dir).args(args).env_remove("WRIGHT_TOKEN").output().unwrap()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stdout)))
}

pub(crate) struct Server {
    child: Child,
    pub(crate) address: String,
    first_line: String,
}

impl Server {
    pub(crate) fn start(data_dir: &Path, token: Option<&str>) -> Self {
        Self::start_in(data_dir, token, Path::new("."))
    }

    /// Started with `working_dir` as its working directory, as an installed binary may be.
    pub(crate) fn start_in(data_dir: &Path, token: Option<&str>, working_dir: &Path) -> Self {
        let mut command = Command::new(WRIGHT);
        command
            .current_dir(working_dir)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        match token {
            Some(token) => command.env("WRIGHT_TOKEN", token),
            None => command.env_remove("WRIGHT_TOKEN"),
        };
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first_line = lines.next().unwrap().unwrap();
        let listening = lines.next().unwrap().unwrap();
        let address = listening.rsplit(' ').next().unwrap().to_owned();
        Self { child, address, first_line }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

pub(crate) fn client() -> reqwest::Client {
    rustls::crypto::ring::default_provider().install_default().ok();
    reqwest::Client::new()
}

#[tokio::test]
async fn serve_on_an_empty_data_directory_prints_the_token_and_guards_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), None);
    let token = std::fs::read_to_string(dir.path().join("token")).unwrap().trim().to_owned();
    assert_eq!(token.len(), 64);
    assert!(server.first_line.contains(&token), "the generated token is printed: {}", server.first_line);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("token")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let client = client();
    let health = client.get(format!("{}/api/health", server.address)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let denied = client.get(format!("{}/api/agents", server.address)).send().await.unwrap();
    assert_eq!(denied.status(), 401);
    let agents: Value = client
        .get(format!("{}/api/agents", server.address))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(agents[0]["id"], "default");
    drop(server);
    // A second start reuses the stored token and does not print it again.
    let server = Server::start(dir.path(), None);
    assert!(!server.first_line.contains(&token), "{}", server.first_line);
    let agents = client.get(format!("{}/api/agents", server.address)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(agents.status(), 200);
}

/// Issue 30, item 5: the canvas is in the binary, so `wright serve` started anywhere serves it
/// (from the repository's root only, it used to answer `/` with a JSON 404). A binary built
/// before the canvas was (a fresh clone) answers with a page that says how to build it.
#[tokio::test]
async fn serve_from_any_directory_serves_the_canvas_built_into_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), Some("t"), elsewhere.path());
    let page = client().get(format!("{}/", server.address)).send().await.unwrap();
    let status = page.status();
    let cache_control = page.headers().get("cache-control").map(|value| value.to_str().unwrap().to_owned());
    let body = page.text().await.unwrap();
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../frontend/dist");
    match std::fs::read_to_string(dist.join("index.html")) {
        Ok(index) => {
            assert_eq!((status.as_u16(), cache_control.as_deref()), (200, Some("no-cache")), "{body}");
            assert_eq!(body, index);
            // and a route of the app gets the same page, for the app to route
            let route = client().get(format!("{}/agents/default/c/1", server.address)).send().await.unwrap();
            assert_eq!(route.text().await.unwrap(), index);
        }
        Err(_) => {
            assert_eq!(status.as_u16(), 503, "{body}");
            assert!(body.contains("npm run build"), "{body}");
        }
    }
}

/// `[server] frontend_dir` overrides the embedded canvas; one that names no built canvas stops
/// the start with a message, rather than a server that answers `/` with a JSON 404.
#[test]
fn a_frontend_dir_without_a_canvas_is_a_start_up_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[server]\nfrontend_dir = \"no/such/dist\"\n").unwrap();
    let mut child = Command::new(WRIGHT)
        .current_dir(dir.path())
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("WRIGHT_TOKEN", "t")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A server that starts anyway runs until it is stopped: give it ten seconds to refuse.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let exited = child.try_wait().unwrap();
    if exited.is_none() {
        child.kill().ok();
    }
    let output = child.wait_with_output().unwrap();
    assert!(exited.is_some_and(|status| !status.success()), "wright serve started with a missing frontend_dir");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("frontend_dir") && stderr.contains("no/such/dist"), "{stderr}");
}

#[tokio::test]
async fn wright_token_overrides_the_stored_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), Some("from-env"));
    assert!(server.first_line.contains("WRIGHT_TOKEN"));
    let client = client();
    let ok = client.get(format!("{}/api/agents", server.address)).bearer_auth("from-env").send().await.unwrap();
    assert_eq!(ok.status(), 200);
    assert!(!dir.path().join("token").exists());
}

#[test]
fn a_find_that_is_absent_fails_with_a_clear_message_and_keeps_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let output = wright(
        dir.path(),
        &[
            "tool",
            "call",
            "edit_system_prompt",
            "--args",
            r#"{"operation":"find_replace","find":"not there","replace":"y"}"#,
        ],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the text \"not there\" was not found"), "{stderr}");
    assert_eq!(json_of(&output)["category"], "rejected");
    let read = wright(dir.path(), &["tool", "call", "read_system_prompt"]);
    assert!(read.status.success());
    assert_eq!(json_of(&read)["version"], 1);
}

#[test]
fn each_other_operation_succeeds_and_bumps_the_version_then_rollback_restores() {
    let dir = tempfile::tempdir().unwrap();
    let operations = [
        r#"{"operation":"replace","content":"one two"}"#,
        r#"{"operation":"find_replace","find":"two","replace":"three"}"#,
        r#"{"operation":"append","content":"four"}"#,
        r#"{"operation":"prepend","content":"zero"}"#,
        r#"{"operation":"delete","content":"zero\n"}"#,
    ];
    for (index, args) in operations.iter().enumerate() {
        let output = wright(dir.path(), &["tool", "call", "edit_system_prompt", "--args", args]);
        assert!(output.status.success(), "{args}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(json_of(&output)["version"], index as i64 + 2);
    }
    let read = json_of(&wright(dir.path(), &["tool", "call", "read_system_prompt"]));
    assert_eq!(read["prompt"], "one three\nfour");
    let rollback = wright(dir.path(), &["prompt", "rollback", "2", "--reason", "too much"]);
    assert!(rollback.status.success(), "{}", String::from_utf8_lossy(&rollback.stderr));
    assert!(String::from_utf8_lossy(&rollback.stdout).contains("version 7"));
    let show = wright(dir.path(), &["prompt", "show"]);
    assert_eq!(String::from_utf8_lossy(&show.stdout).trim_end(), "one two");
    let old = wright(dir.path(), &["prompt", "show", "4"]);
    assert_eq!(String::from_utf8_lossy(&old.stdout).trim_end(), "one three\nfour");
    let log = String::from_utf8_lossy(&wright(dir.path(), &["prompt", "log"]).stdout).into_owned();
    assert_eq!(log.lines().count(), 7, "{log}");
    assert!(log.lines().next().unwrap().contains("rollback") && log.contains("too much"), "{log}");
    let diff = String::from_utf8_lossy(&wright(dir.path(), &["prompt", "diff", "6", "7"]).stdout).into_owned();
    assert!(diff.contains("+one two"), "{diff}");
}

#[test]
fn notes_commands_and_unknown_tools_and_bad_json() {
    let dir = tempfile::tempdir().unwrap();
    let edit = wright(
        dir.path(),
        &["tool", "call", "edit_learned_notes", "--args", r#"{"operation":"append","content":"likes tea"}"#],
    );
    assert!(edit.status.success());
    assert_eq!(String::from_utf8_lossy(&wright(dir.path(), &["notes", "show"]).stdout).trim_end(), "likes tea");
    let unknown = wright(dir.path(), &["tool", "call", "nope"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown tool `nope`"));
    let bad = wright(dir.path(), &["tool", "call", "get_state", "--args", "{oops"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--args is not valid JSON"));
    let missing = wright(dir.path(), &["notes", "show", "9"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("learned_notes version 9 does not exist"));
}

#[test]
fn market_commands_publish_install_export_and_import() {
    let dir = tempfile::tempdir().unwrap();
    let create = r#"{"name":"shout","description":"Upper-cases text.","parameter_schema":{"type":"object","properties":{"text":{"type":"string"}}},"code":"return args.text.toUpperCase();"}"#;
    assert!(wright(dir.path(), &["tool", "call", "create_tool", "--args", create]).status.success());
    let published = wright(dir.path(), &["market", "publish", "shout"]);
    assert!(String::from_utf8_lossy(&published.stdout).contains("published tool shout v1 sha256:"), "{published:?}");
    let listed = String::from_utf8_lossy(&wright(dir.path(), &["market", "list", "upper"]).stdout).into_owned();
    assert!(listed.contains("shout"), "{listed}");
    let conflict = wright(dir.path(), &["market", "install", "shout"]);
    assert!(!conflict.status.success());
    assert!(String::from_utf8_lossy(&conflict.stderr).contains("already has a tool named"));
    let renamed = wright(dir.path(), &["market", "install", "shout", "--rename-to", "shout2"]);
    assert!(String::from_utf8_lossy(&renamed.stdout).contains("disabled"), "{renamed:?}");
    let file = dir.path().join("shout.json");
    assert!(wright(dir.path(), &["market", "export", "shout", "--output", file.to_str().unwrap()]).status.success());
    let other = tempfile::tempdir().unwrap();
    let imported = wright(other.path(), &["market", "import", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&imported.stdout).into_owned();
    assert!(text.contains("imported tool shout v1") && text.contains("toUpperCase"), "{text}");
    let mut tampered: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    tampered["bundle"]["description"] = Value::String("changed".into());
    std::fs::write(&file, tampered.to_string()).unwrap();
    let refused = wright(other.path(), &["market", "import", file.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("hash does not match"));
}

#[test]
fn sandbox_run_uses_the_binary_as_its_own_worker_and_reports_timings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("double.js");
    std::fs::write(&file, "await state.set('seen', true); return args.n * 2;").unwrap();
    let output = wright(
        dir.path(),
        &["sandbox", "run", file.to_str().unwrap(), "--args", r#"{"n":21}"#, "--repeat", "5", "--json"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = json_of(&output);
    assert_eq!(report["result"], 42);
    assert_eq!(report["runs"], 5);
    assert!(report["median_ms"].as_f64().unwrap() > 0.0);
    let state = json_of(&wright(dir.path(), &["tool", "call", "get_state", "--args", r#"{"key":"seen"}"#]));
    assert_eq!(state["value"], true);
    std::fs::write(&file, "throw new TypeError('nope')").unwrap();
    let failed = wright(dir.path(), &["sandbox", "run", file.to_str().unwrap()]);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stdout).contains("nope"));
}

#[test]
fn egress_check_prints_the_verdict_and_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let denied = wright(dir.path(), &["egress", "check", "http://[::ffff:169.254.169.254]/latest"]);
    assert!(!denied.status.success());
    let text = String::from_utf8_lossy(&denied.stdout).into_owned();
    assert!(text.starts_with("deny ") && text.contains("metadata"), "{text}");
    std::fs::write(dir.path().join("config.toml"), "[egress]\nallow = [\"127.0.0.1:9\"]\n").unwrap();
    let allowed = wright(dir.path(), &["egress", "check", "http://127.0.0.1:9/"]);
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stdout));
    assert!(String::from_utf8_lossy(&allowed.stdout).starts_with("allow "));
}

/// The first request with the default tool settings is a fraction of one with every schema,
/// on every wire; `[agents.<id>.tools]` in config.toml changes it.
#[test]
fn tool_surface_reports_the_first_request_on_every_wire() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = |output: Output| -> Vec<(String, usize, usize)> {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .skip(1)
            .map(|line| {
                let (wire, rest) = line.split_at(18);
                let numbers: Vec<usize> = rest
                    .split(|c: char| !c.is_ascii_digit())
                    .filter(|part| !part.is_empty())
                    .map(|part| part.parse().unwrap())
                    .collect();
                (wire.trim().to_owned(), numbers[0], numbers[2])
            })
            .collect()
    };
    let defaults = sizes(wright(dir.path(), &["tool", "surface"]));
    assert_eq!(defaults.len(), 6);
    for (wire, every_schema, default) in &defaults {
        assert!(every_schema / default >= 3, "{wire}: {every_schema} vs {default}");
        // The goal: at most 1,500 tokens of system message and tools (4 bytes a token). The
        // text protocol adds its instructions for writing calls (about 125 tokens) on top of
        // the same catalogue, so it is held to 1,650. (Issue 31 added five catalogue lines —
        // skills, the execution log, table notes — that the text protocol had no room left for.)
        let goal = if wire == "text protocol" { 1_650 } else { 1_500 };
        assert!(*default < goal * 4, "{wire}: {default}");
    }
    std::fs::write(dir.path().join("config.toml"), "[agents.default.tools]\nloading = \"all\"\n").unwrap();
    let all = sizes(wright(dir.path(), &["tool", "surface"]));
    assert!(all.iter().zip(&defaults).all(|(all, default)| all.2 > default.2 * 2), "{all:?}");
}

#[test]
fn memory_commands_list_recall_forget_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let stored = wright(
        dir.path(),
        &[
            "tool",
            "call",
            "memory",
            "--args",
            r#"{"action":"store","layer":"long","category":"fact","content":"Works at Acme"}"#,
        ],
    );
    assert!(stored.status.success(), "{}", String::from_utf8_lossy(&stored.stderr));
    let id = json_of(&stored)["memories"][0]["id"].as_str().unwrap().to_owned();
    let text = |output: Output| String::from_utf8_lossy(&output.stdout).into_owned();
    let listed = text(wright(dir.path(), &["memory", "list", "--layer", "long"]));
    assert!(
        listed.contains(&format!("#{id}")) && listed.contains("long/fact") && listed.contains("permanent"),
        "{listed}"
    );
    assert!(listed.contains("Works at Acme"));
    let recalled = text(wright(dir.path(), &["memory", "recall", "acme"]));
    assert!(recalled.contains("Works at Acme"), "{recalled}");
    assert!(text(wright(dir.path(), &["memory", "forget", &id])).contains("forgotten"));
    assert!(text(wright(dir.path(), &["memory", "list"])).trim().is_empty());
    assert!(text(wright(dir.path(), &["memory", "list", "--archived"])).contains("Works at Acme"));
    assert!(text(wright(dir.path(), &["memory", "restore", &id])).contains("permanent"));
    let bad_layer = wright(dir.path(), &["memory", "list", "--layer", "forever"]);
    assert!(!bad_layer.status.success());
    assert!(String::from_utf8_lossy(&bad_layer.stderr).contains("unknown memory layer \"forever\""));
}

/// With `[memory.embeddings]`, the CLI embeds what it stores and recalls by meaning too, through
/// the same connection as the server (here the environment's Ollama: the fake provider).
#[test]
fn the_cli_recalls_by_meaning_with_embeddings_configured() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(wright_llm::testing::FakeProvider::start(Vec::new()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[memory.embeddings]\nconnection = \"env:ollama\"\nmodel = \"fake-embed\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(WRIGHT)
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("WRIGHT_TOKEN")
            .env("OLLAMA_HOST", fake.url())
            .output()
            .unwrap()
    };
    for content in ["Tom sold his old vehicle", "Tea with lemon in the afternoon"] {
        let arguments = serde_json::json!({"action": "store", "layer": "long", "content": content}).to_string();
        let stored = run(&["tool", "call", "memory", "--args", &arguments]);
        assert!(stored.status.success(), "{}", String::from_utf8_lossy(&stored.stderr));
    }
    let recalled = run(&["memory", "recall", "automobile"]);
    let recalled = String::from_utf8_lossy(&recalled.stdout);
    assert!(recalled.contains("Tom sold his old vehicle") && !recalled.contains("Tea"), "{recalled}");
    let embedded: Vec<String> = fake
        .embedding_requests()
        .iter()
        .filter_map(|request| request.body["input"][0].as_str().map(str::to_owned))
        .collect();
    assert_eq!(embedded, ["Tom sold his old vehicle", "Tea with lemon in the afternoon", "automobile"]);
}

/// `wright tool call bash` with `[workspace.shell] network` on: the binary is its own forwarder
/// inside the sandbox (hidden subcommand), and the egress policy of config.toml decides what a
/// command reaches — an allowlisted local server through the proxy, nothing directly. With
/// network off (the default) the same command reaches nothing.
#[test]
fn bash_reaches_the_network_only_through_the_egress_proxy_when_the_operator_allows_it() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).map(|read| read == 1).unwrap_or(false) {
                head.push(byte[0]);
            }
            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\nlocal-site\n").ok();
        }
    });
    let command = format!(
        "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/').read().decode(), end='')\" 2>&1 | tail -n 1; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo DIRECT-REACHED"
    );
    let args = serde_json::json!({ "command": command, "timeout_ms": 20_000 }).to_string();

    let on = tempfile::tempdir().unwrap();
    let config = format!("[egress]\nallow = [\"127.0.0.1:{port}\"]\n\n[workspace.shell]\nnetwork = true\n");
    std::fs::write(on.path().join("config.toml"), config).unwrap();
    let output = wright(on.path(), &["tool", "call", "bash", "--args", &args]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json_of(&output);
    assert_eq!(result["stdout"], "local-site\n", "{result}");

    let off = tempfile::tempdir().unwrap();
    std::fs::write(off.path().join("config.toml"), format!("[egress]\nallow = [\"127.0.0.1:{port}\"]\n")).unwrap();
    let output = wright(off.path(), &["tool", "call", "bash", "--args", &args]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json_of(&output);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("URLError") && !stdout.contains("local-site") && !stdout.contains("REACHED"), "{result}");
}

/// Issue 33 item 12: `wright serve` says at start which capabilities are off and why — here a
/// host without bubblewrap and without the configured Chromium.
#[test]
fn serve_says_at_start_which_capabilities_are_off_and_why() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[workspace.shell]\nbwrap_path = \"/nonexistent/bwrap\"\n\n[browser]\nchromium_path = \"/nonexistent/chromium\"\n",
    )
    .unwrap();
    let log_path = dir.path().join("serve.log");
    let mut child = Command::new(WRIGHT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("WRIGHT_TOKEN", "capabilities-token")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()))
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    lines.next();
    let listening = lines.next().unwrap().unwrap();
    child.kill().ok();
    child.wait().ok();
    assert!(listening.contains("listening"), "{listening}");
    // Said before the server listens.
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("bash is OFF: confinement is unavailable") && log.contains("/nonexistent/bwrap"), "{log}");
    assert!(log.contains("network for bash is OFF: bash is off"), "{log}");
    assert!(
        log.contains("browser is OFF: [browser] chromium_path /nonexistent/chromium is not an executable"),
        "{log}"
    );
}
