//! Learning from experience (issue 31) end to end: the real `wright serve` against the scripted
//! provider. Cases made from conversations (their check judged on the live data, which becomes
//! the run's outcome), the person's ratings, a learning round that accepts a helpful exemplar
//! (held-out passes rise, replayed in a scratch copy at temperature 0, the live data untouched),
//! a round that refuses an item that makes a passing case fail, an accepted item rolled back by
//! its counters after a thumbs down, and a correction in the next message.
//!
//! The scripted model answers in order, so each replay's turns are pushed in the order the
//! round replays: the baseline of every held-out case, then each candidate on every case, then
//! the accepted items together.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wright_llm::ProviderKind;
use wright_llm::testing::{FakeProvider, Turn};

const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");
const TOKEN: &str = "learning-token";

struct Server {
    child: Child,
    url: String,
    client: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `wright --data-dir DIR` with the environment that points it at `fake`.
fn wright(data_dir: &Path, fake: &FakeProvider) -> Command {
    let mut command = Command::new(WRIGHT);
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_clear()
        .env("WRIGHT_TOKEN", TOKEN)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", fake.base_url(ProviderKind::Openai))
        .env("WRIGHT_MODEL", "openai-chat/fake-model");
    command
}

impl Server {
    fn start(data_dir: &Path, fake: &FakeProvider) -> Self {
        let mut child = wright(data_dir, fake)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next();
        let listening = lines.next().unwrap().unwrap();
        let url = listening.rsplit(' ').next().unwrap().to_owned();
        rustls::crypto::ring::default_provider().install_default().ok();
        Self { child, url, client: reqwest::Client::new() }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.url)).bearer_auth(TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.send(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// A case from a message alone.
    async fn message_case(&self, message: &str, check: &Value) -> Value {
        let (status, case) = self.post("/api/agents/default/cases", json!({"message": message, "check": check})).await;
        assert_eq!(status, 201, "{case}");
        case
    }

    async fn conversation(&self) -> String {
        let (status, created) = self.post("/api/agents/default/conversations", json!({"title": "learning"})).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    async fn say(&self, id: &str, text: &str) -> Value {
        let (status, body) = self.post(&format!("/api/conversations/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 202, "{body}");
        let started = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let detail = self.get(&format!("/api/conversations/{id}")).await;
            let last = detail["events"].as_array().and_then(|events| events.last()).map(|event| event["kind"].clone());
            // The outcome is recorded just after the run's status changes.
            if detail["conversation"]["status"] != "running" && last != Some(json!("user")) {
                let outcomes = self.get(&format!("/api/conversations/{id}/outcomes")).await;
                let runs = detail["events"].as_array().unwrap().iter().filter(|event| event["kind"] == "user").count();
                if outcomes.as_array().unwrap().len() == runs {
                    return detail;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the run did not settle: {detail}");
        }
    }

    async fn round(&self) -> Value {
        let (status, started) = self.post("/api/agents/default/learning/rounds", json!({})).await;
        assert_eq!(status, 202, "{started}");
        let id = started["id"].as_i64().unwrap();
        let began = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let detail = self.get(&format!("/api/agents/default/learning/rounds/{id}")).await;
            if detail["round"]["status"] != "running" {
                assert_eq!(detail["round"]["status"], "finished", "{detail}");
                return detail;
            }
            assert!(began.elapsed() < Duration::from_secs(60), "the round did not finish: {detail}");
        }
    }
}

/// A server on a fresh data directory whose agent sends every schema (the scripted model calls
/// tools by name), with a first conversation the model answers by saving the colour, made a
/// case with its check.
async fn server_with_colour_case(fake: &FakeProvider, dir: &Path) -> (Server, String) {
    std::fs::write(dir.join("config.toml"), "[agents.default.tools]\nloading = \"all\"\n").unwrap();
    let server = Server::start(dir, fake);
    let colour = server.conversation().await;
    server.say(&colour, "Remember that my favourite colour is green").await;
    let check = json!({"type": "state_equals", "key": "favourite_colour", "value": "green"});
    let (status, _) =
        server.post("/api/agents/default/cases", json!({"conversation_id": colour, "check": check})).await;
    assert_eq!(status, 201);
    (server, colour)
}

fn set_state(key: &str, value: &str) -> Turn {
    Turn::tool_call("set_state", json!({"key": key, "value": value}))
}

/// The chat requests the fake received (not its model lists).
fn chats(fake: &FakeProvider) -> Vec<Value> {
    fake.requests().into_iter().filter(|request| request.body.get("messages").is_some()).map(|r| r.body).collect()
}

#[tokio::test]
async fn cases_rounds_that_accept_and_refuse_ratings_and_a_rollback_by_counters() {
    let fake = FakeProvider::start(vec![set_state("favourite_colour", "green"), Turn::text("Saved.")]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[agents.default.tools]\nloading = \"all\"\n\n[learning]\nrollback_min_failures = 1\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &fake);

    // A conversation that went well becomes a case; its check, judged now, is its outcome.
    let colour = server.conversation().await;
    server.say(&colour, "Remember that my favourite colour is green").await;
    let outcomes = server.get(&format!("/api/conversations/{colour}/outcomes")).await;
    assert_eq!((outcomes[0]["outcome"].as_str(), outcomes[0]["source"].as_str()), (Some("unknown"), Some("completed")));
    let check = json!({"type": "state_equals", "key": "favourite_colour", "value": "green"});
    let (status, case_a) =
        server.post("/api/agents/default/cases", json!({"conversation_id": colour, "check": check})).await;
    assert_eq!(status, 201, "{case_a}");
    assert_eq!(case_a["message"], "Remember that my favourite colour is green");
    let outcomes = server.get(&format!("/api/conversations/{colour}/outcomes")).await;
    assert_eq!((outcomes[0]["outcome"].as_str(), outcomes[0]["source"].as_str()), (Some("success"), Some("check")));

    // The person's thumbs up, with a comment, on that answer.
    let answer_seq = server.get(&format!("/api/conversations/{colour}")).await["events"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|event| event["kind"] == "assistant")
        .unwrap()["seq"]
        .as_i64()
        .unwrap();
    let (status, rated) = server
        .post(
            &format!("/api/conversations/{colour}/feedback"),
            json!({"rating": "up", "comment": "just right", "seq": answer_seq}),
        )
        .await;
    assert_eq!(status, 200, "{rated}");
    assert_eq!((rated["rating"].as_str(), rated["comment"].as_str()), (Some("up"), Some("just right")));
    assert_eq!((rated["outcome"].as_str(), rated["source"].as_str()), (Some("success"), Some("rating")));
    let (status, refused) =
        server.post(&format!("/api/conversations/{colour}/feedback"), json!({"rating": "meh"})).await;
    assert_eq!(status, 422, "a rating is up or down: {refused}");

    // A case from a message alone; and one made and deleted.
    let drink = json!({"type": "state_equals", "key": "favourite_drink", "value": "tea"});
    let case_b = server.message_case("Remember that my favourite drink is tea", &drink).await;
    let (status, extra) = server
        .post("/api/agents/default/cases", json!({"message": "x", "check": {"type": "notes_contain", "text": "x"}}))
        .await;
    assert_eq!(status, 201, "{extra}");
    let (status, _) =
        server.send(reqwest::Method::DELETE, &format!("/api/agents/default/cases/{}", extra["id"]), None).await;
    assert_eq!(status, 200);
    let (status, _) = server
        .post("/api/agents/default/cases", json!({"conversation_id": colour, "message": "both", "check": drink}))
        .await;
    assert_eq!(status, 400, "a conversation or a message, not both");

    // Round 1: the exemplar of the good run helps the held-out case (the drink).
    fake.push([
        Turn::text("I will remember that."), // baseline: the drink case fails
        set_state("favourite_drink", "tea"), // with the exemplar: it passes
        Turn::text("Saved."),
        set_state("favourite_drink", "tea"), // the accepted items together
        Turn::text("Saved."),
    ]);
    let before_round = chats(&fake).len();
    let round = server.round().await;
    assert_eq!(
        (round["round"]["passed_before"].as_i64(), round["round"]["passed_after"].as_i64()),
        (Some(0), Some(1)),
        "{round}"
    );
    assert_eq!(round["round"]["held_out_total"], 1, "the case the item was learned from is not held out: {round}");
    let candidate = &round["candidates"][0];
    assert_eq!(round["candidates"].as_array().unwrap().len(), 1, "{round}");
    assert_eq!(
        (candidate["item"]["kind"].as_str(), candidate["decision"].as_str()),
        (Some("exemplar"), Some("accepted")),
        "{round}"
    );
    assert_eq!(candidate["item"]["status"], "live");
    assert_eq!(candidate["item"]["source_runs"][0]["conversation_id"], colour.as_str());
    assert_eq!(candidate["cases"][0]["case_id"], case_b["id"]);
    assert_eq!(
        (candidate["cases"][0]["before"].as_bool(), candidate["cases"][0]["after"].as_bool()),
        (Some(false), Some(true))
    );
    let overall = &round["cases"][0];
    assert_eq!(
        (overall["before"].as_bool(), overall["after"].as_bool()),
        (Some(false), Some(true)),
        "with every accepted item: {round}"
    );
    let exemplar_id = candidate["item"]["id"].as_i64().unwrap();
    let replays = &chats(&fake)[before_round..];
    assert_eq!(replays.len(), 5, "three replays, five model turns");
    for request in replays {
        assert_eq!(request["temperature"], 0.0, "replays run at temperature 0: {request}");
    }
    assert!(!replays[0].to_string().contains("## learned"), "the baseline is without the candidate");
    assert!(replays[1].to_string().contains("this worked: set_state"), "the candidate is said: {}", replays[1]);
    // The replays worked in scratch copies: the live state never got the drink.
    let drink_state = server.get("/api/agents/default/state/favourite_drink").await;
    assert_eq!(drink_state["value"], Value::Null, "a replay never writes the live data");
    let colour_state = server.get("/api/agents/default/state/favourite_colour").await;
    assert_eq!(colour_state["value"], "green", "the live data is as the person's run left it");
    let cases = server.get("/api/agents/default/cases").await;
    assert_eq!(
        cases.as_array().unwrap().iter().map(|case| case["training"].as_bool().unwrap()).collect::<Vec<_>>(),
        vec![true, false],
        "{cases}"
    );

    // A run that fails a call and fixes it gives an error→fix rule; it carries the live exemplar.
    fake.push([
        Turn::tool_call("set_state", json!({"key": "", "value": "Paris"})),
        set_state("favourite_city", "Paris"),
        Turn::text("Saved."),
    ]);
    let city = server.conversation().await;
    server.say(&city, "Remember that my favourite city is Paris").await;
    assert!(
        chats(&fake).last().unwrap().to_string().contains("this worked: set_state"),
        "the live exemplar reaches requests"
    );

    // Round 2: the rule makes the drink case, which failed, pass, but the colour case, which
    // passed, fail: refused. The failing case is replayed first (only it can rise).
    fake.push([
        set_state("favourite_colour", "green"), // baseline: colour passes
        Turn::text("Saved."),
        Turn::text("OK."),                   // baseline: drink fails
        set_state("favourite_drink", "tea"), // with the rule: drink passes
        Turn::text("Saved."),
        Turn::text("OK."), // with the rule: colour fails
    ]);
    let before_round = chats(&fake).len();
    let round = server.round().await;
    assert_eq!(chats(&fake).len() - before_round, 6, "every scripted turn was used: {round}");
    assert_eq!(
        (round["round"]["passed_before"].as_i64(), round["round"]["passed_after"].as_i64()),
        (Some(1), Some(1)),
        "{round}"
    );
    let candidate = &round["candidates"][0];
    assert_eq!(
        (candidate["item"]["kind"].as_str(), candidate["decision"].as_str()),
        (Some("error_fix"), Some("refused")),
        "{round}"
    );
    assert!(round["cases"].as_array().unwrap().iter().all(|case| case["after"].is_null()), "none accepted: {round}");
    assert!(candidate["reason"].as_str().unwrap().contains(&format!("#{}", case_a["id"])), "{round}");
    assert_eq!(candidate["item"]["status"], "refused");
    let rounds = server.get("/api/agents/default/learning/rounds").await;
    assert_eq!(rounds.as_array().unwrap().len(), 2, "the learning curve has a point per round");

    // A later run that carried the exemplar is rated down: the counters roll it back.
    fake.push([Turn::text("I cannot do that.")]);
    let blue = server.conversation().await;
    server.say(&blue, "Remember that my favourite colour is blue").await;
    let (status, rated) = server.post(&format!("/api/conversations/{blue}/feedback"), json!({"rating": "down"})).await;
    assert_eq!((status, rated["outcome"].as_str()), (200, Some("failure")), "{rated}");
    let items = server.get("/api/agents/default/learning/items").await;
    let exemplar = items.as_array().unwrap().iter().find(|item| item["id"] == exemplar_id).unwrap();
    assert_eq!(
        (exemplar["status"].as_str(), exemplar["used_failure"].as_i64()),
        (Some("rolled_back"), Some(1)),
        "{items}"
    );
    let changes = server.get(&format!("/api/agents/default/learning/items/{exemplar_id}/changes")).await;
    let last = changes.as_array().unwrap().last().unwrap();
    assert_eq!(
        (last["author"].as_str(), last["status"].as_str()),
        (Some("counters"), Some("rolled_back")),
        "{changes}"
    );
    fake.push([Turn::text("Green.")]);
    server.say(&blue, "Remember my favourite colour").await;
    assert!(!chats(&fake).last().unwrap().to_string().contains("## learned"), "a rolled-back item leaves requests");

    // The person approves it again, then rolls it back: each a new version.
    let decide = |action: &str| json!({"action": action});
    let (status, approved) =
        server.post(&format!("/api/agents/default/learning/items/{exemplar_id}/decision"), decide("approve")).await;
    assert_eq!((status, approved["status"].as_str()), (200, Some("live")), "{approved}");
    let (status, rolled) =
        server.post(&format!("/api/agents/default/learning/items/{exemplar_id}/decision"), decide("roll_back")).await;
    assert_eq!((status, rolled["status"].as_str()), (200, Some("rolled_back")), "{rolled}");
    let (status, _) =
        server.post(&format!("/api/agents/default/learning/items/{exemplar_id}/decision"), decide("roll_back")).await;
    assert_eq!(status, 400, "only a live item rolls back");
    assert!(rolled["version"].as_i64().unwrap() > approved["version"].as_i64().unwrap());

    // The person correcting the answer in the next message marks the run before failed.
    fake.push([Turn::text("Hello!"), Turn::text("Sorry.")]);
    let hello = server.conversation().await;
    server.say(&hello, "Hi there").await;
    server.say(&hello, "No, that's wrong").await;
    let outcomes = server.get(&format!("/api/conversations/{hello}/outcomes")).await;
    assert_eq!(
        (outcomes[0]["outcome"].as_str(), outcomes[0]["source"].as_str()),
        (Some("failure"), Some("correction")),
        "{outcomes}"
    );

    // The error→fix rule, approved by the person, is said next to the same error in a later
    // run, whatever that run's request is about.
    let items = server.get("/api/agents/default/learning/items").await;
    let rule = items.as_array().unwrap().iter().find(|item| item["kind"] == "error_fix").unwrap();
    let (status, live) =
        server.post(&format!("/api/agents/default/learning/items/{}/decision", rule["id"]), decide("approve")).await;
    assert_eq!((status, live["status"].as_str()), (200, Some("live")), "{live}");
    fake.push([Turn::tool_call("set_state", json!({"key": "", "value": "blue"})), Turn::text("Done.")]);
    let sky = server.conversation().await;
    server.say(&sky, "The sky is blue today").await;
    let after_error = chats(&fake).last().unwrap().to_string();
    assert!(
        after_error.contains("learned_fix") && after_error.contains("happened in an earlier run too"),
        "{after_error}"
    );
    assert!(
        after_error.contains("what worked was set_state") && after_error.contains("favourite_city"),
        "{after_error}"
    );
}

#[tokio::test]
async fn a_check_cannot_write_the_agent_database_or_leave_the_workspace() {
    let fake = FakeProvider::start(vec![
        Turn::tool_call("db_sql", json!({"sql": "CREATE TABLE notes (body TEXT)"})),
        Turn::text("Made."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[agents.default.tools]\nloading = \"all\"\n").unwrap();
    let server = Server::start(dir.path(), &fake);
    let id = server.conversation().await;
    server.say(&id, "Make a notes table").await;
    for (check, passes) in [
        (json!({"type": "db_count", "sql": "SELECT COUNT(*) FROM sqlite_master WHERE name = 'notes'", "min": 1}), true),
        (json!({"type": "db_count", "sql": "DROP TABLE notes", "min": 0}), false),
        (json!({"type": "db_count", "sql": "INSERT INTO notes VALUES ('x') RETURNING 1", "min": 0}), false),
        (json!({"type": "db_count", "sql": "ATTACH DATABASE '/tmp/x.db' AS x", "min": 0}), false),
        (json!({"type": "file_contains", "path": "../../wright.db", "text": "SQLite"}), false),
        (json!({"type": "file_contains", "path": "/etc/passwd", "text": "root"}), false),
        (json!({"type": "tool_succeeded", "tool": "db_sql"}), true),
        (json!({"type": "pending_call", "tool": "ask_user"}), false),
    ] {
        let (status, case) =
            server.post("/api/agents/default/cases", json!({"conversation_id": id, "check": check})).await;
        assert_eq!(status, 201, "{case}");
        let outcome = &server.get(&format!("/api/conversations/{id}/outcomes")).await[0];
        assert_eq!(outcome["outcome"] == "success", passes, "{check}: {outcome}");
    }
    // The table is still there and empty: no check wrote.
    let (status, result) =
        server.post("/api/agents/default/tools/db_sql/invoke", json!({"sql": "SELECT COUNT(*) AS n FROM notes"})).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["rows"][0][0], 0, "{result}");
}

#[tokio::test]
async fn an_item_learned_from_a_run_that_read_outside_content_waits_for_approval() {
    // The run reads a page (refused by the egress policy, but its result is outside content in
    // the context all the same), then saves the colour.
    let fake = FakeProvider::start(vec![
        Turn::tool_call("fetch_url", json!({"url": "http://127.0.0.1:9/colours"})),
        set_state("favourite_colour", "green"),
        Turn::text("Saved."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (server, colour) = server_with_colour_case(&fake, dir.path()).await;
    let outcome = &server.get(&format!("/api/conversations/{colour}/outcomes")).await[0];
    assert_eq!(outcome["read_outside"], true, "{outcome}");
    let drink = json!({"type": "state_equals", "key": "favourite_drink", "value": "tea"});
    server.message_case("Remember that my favourite drink is tea", &drink).await;

    fake.push([
        Turn::text("I will remember that."), // before: fails
        set_state("favourite_drink", "tea"), // with the exemplar: passes
        Turn::text("Saved."),
        set_state("favourite_drink", "tea"), // after, with it
        Turn::text("Saved."),
    ]);
    let round = server.round().await;
    let candidate = &round["candidates"][0];
    assert_eq!(candidate["decision"], "awaiting_approval", "{round}");
    assert_eq!(
        (candidate["item"]["status"].as_str(), candidate["item"]["read_outside"].as_bool()),
        (Some("awaiting_approval"), Some(true))
    );
    assert!(candidate["reason"].as_str().unwrap().contains("outside content"), "{round}");
    let id = candidate["item"]["id"].as_i64().unwrap();

    // Not live: the next request does not carry it, until the person approves it.
    fake.push([Turn::text("Noted."), Turn::text("Noted again.")]);
    let next = server.conversation().await;
    server.say(&next, "Remember that my favourite animal is the owl").await;
    assert!(!chats(&fake).last().unwrap().to_string().contains("## learned"), "an item awaiting approval is not live");
    let (status, approved) =
        server.post(&format!("/api/agents/default/learning/items/{id}/decision"), json!({"action": "approve"})).await;
    assert_eq!((status, approved["status"].as_str()), (200, Some("live")), "{approved}");
    server.say(&next, "Remember that my favourite tree is the oak").await;
    assert!(chats(&fake).last().unwrap().to_string().contains("## learned"), "approved, it is live");

    // The person's settings: approval before anything goes live, and a nightly round.
    assert_eq!(
        server.get("/api/agents/default/learning/settings").await,
        json!({"require_approval": false, "nightly": false})
    );
    let settings = json!({"require_approval": true, "nightly": true});
    let (status, _) =
        server.send(reqwest::Method::PUT, "/api/agents/default/learning/settings", Some(settings.clone())).await;
    assert_eq!(status, 200);
    assert_eq!(server.get("/api/agents/default/learning/settings").await, settings);
}

/// `wright learn` runs a round in the terminal, on the data a stopped server left (its SQLite
/// WAL included), waits for it and prints each candidate's decision and the held-out passes;
/// it ends by itself.
#[tokio::test]
async fn wright_learn_runs_a_round_in_the_terminal_and_ends() {
    let fake = FakeProvider::start(vec![set_state("favourite_colour", "green"), Turn::text("Saved.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = server_with_colour_case(&fake, dir.path()).await;
    let drink = json!({"type": "state_equals", "key": "favourite_drink", "value": "tea"});
    server.message_case("Remember that my favourite drink is tea", &drink).await;
    // Killed, as a person's Ctrl-C or a crash would leave it.
    drop(server);

    fake.push([
        Turn::text("I will remember that."), // baseline: the drink case fails
        set_state("favourite_drink", "tea"), // with the exemplar: it passes
        Turn::text("Saved."),
        set_state("favourite_drink", "tea"), // the accepted items together
        Turn::text("Saved."),
    ]);
    let mut child =
        wright(dir.path(), &fake).arg("learn").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(90) {
            child.kill().ok();
            let output = child.wait_with_output().unwrap();
            panic!("`wright learn` hung: {}", String::from_utf8_lossy(&output.stderr));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("exemplar [accepted]"), "{stdout}");
    assert!(stdout.contains("held-out passes: 0 before, 1 after, of 1"), "{stdout}");
    assert!(stderr.contains("of 3 replays") || stderr.contains("3 of 3"), "progress is shown: {stderr}");
    // The live data is as the person's run left it; the round is on record for the canvas.
    let server = Server::start(dir.path(), &fake);
    let rounds = server.get("/api/agents/default/learning/rounds").await;
    assert_eq!(rounds[0]["trigger"], "cli", "{rounds}");
    assert_eq!(server.get("/api/agents/default/state/favourite_drink").await["value"], Value::Null);
}

/// Issue 31 item 3c: from a failing run the agent's model drafts a notes edit and a skill; the
/// round replays the failing held-out case with each, accepts the skill that makes it pass (it
/// becomes one of the agent's skills, listed in the request), refuses the notes edit that
/// raises nothing, and rolling the item back deletes the skill — each a new version.
#[tokio::test]
async fn a_skill_drafted_from_a_failing_run_is_validated_by_replay_and_becomes_a_skill() {
    let fake = FakeProvider::start(vec![Turn::text("I cannot do that.")]).await;
    let dir = tempfile::tempdir().unwrap();
    // A stronger model drafts (same wire and address here; its name tells its requests apart).
    std::fs::write(
        dir.path().join("config.toml"),
        "[agents.default.tools]\nloading = \"all\"\n\n[learning]\ndraft_model = \"openai-chat/strong-model\"\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &fake);
    let books = server.conversation().await;
    server.say(&books, "Create a table books and add the book Dune").await;
    let (status, rated) = server.post(&format!("/api/conversations/{books}/feedback"), json!({"rating": "down"})).await;
    assert_eq!((status, rated["outcome"].as_str()), (200, Some("failure")), "{rated}");
    let plants = json!({"type": "db_count", "sql": "SELECT COUNT(*) FROM plants", "min": 1});
    server.message_case("Create a table plants and add a fern", &plants).await;

    let db_sql = |sql: &str| Turn::tool_call("db_sql", json!({"sql": sql}));
    let skill = "name: tables-with-rows\ndescription: Use when asked to create a table and add rows.\n\n\
                 Call db_sql with the CREATE TABLE statement alone, then db_sql with each INSERT.";
    fake.push([
        Turn::text("Use db_sql to create tables."), // the notes edit drafted
        Turn::text(skill),                          // the skill drafted
        Turn::text("OK."),                          // baseline: the plants case fails
        Turn::text("OK."),                          // with the notes edit: still fails
        db_sql("CREATE TABLE plants (name TEXT)"),  // with the skill: it passes
        db_sql("INSERT INTO plants VALUES ('fern')"),
        Turn::text("Done."),
        db_sql("CREATE TABLE plants (name TEXT)"), // after, with the skill live
        db_sql("INSERT INTO plants VALUES ('fern')"),
        Turn::text("Done."),
    ]);
    let before_round = chats(&fake).len();
    let round = server.round().await;
    assert_eq!(chats(&fake).len() - before_round, 10, "every scripted turn was used: {round}");
    let candidates = round["candidates"].as_array().unwrap();
    let by_kind = |kind: &str| candidates.iter().find(|candidate| candidate["item"]["kind"] == kind).unwrap();
    assert_eq!(by_kind("notes_edit")["decision"], "refused", "{round}");
    assert!(by_kind("notes_edit")["reason"].as_str().unwrap().contains("no rise"), "{round}");
    let learned = by_kind("skill");
    assert_eq!((learned["decision"].as_str(), learned["item"]["status"].as_str()), (Some("accepted"), Some("live")));
    assert_eq!(
        (round["round"]["passed_before"].as_i64(), round["round"]["passed_after"].as_i64()),
        (Some(0), Some(1)),
        "{round}"
    );
    // The drafts came from the configured drafting model, the replays from the agent's, and
    // the drafting requests are in the usage ledger as the learning caller's.
    let models: Vec<String> =
        chats(&fake)[before_round..].iter().map(|request| request["model"].as_str().unwrap().to_owned()).collect();
    assert_eq!(models[..3], ["strong-model", "strong-model", "fake-model"], "{models:?}");
    let usage = server.get("/api/usage?by=caller").await;
    let learning = usage["rows"].as_array().unwrap().iter().find(|row| row["key"] == "learning");
    assert!(learning.is_some_and(|row| row["requests"].as_i64().unwrap() >= 10), "{usage}");
    // The replay with the skill listed it in its request, as one of the agent's skills.
    let replays = &chats(&fake)[before_round..];
    assert!(!replays[3].to_string().contains("tables-with-rows"), "not with the notes edit");
    assert!(replays[4].to_string().contains("tables-with-rows"), "{}", replays[4]);

    let live = server.get("/api/agents/default/skills/tables-with-rows").await;
    assert!(live["content"].as_str().unwrap().contains("CREATE TABLE statement alone"), "{live}");
    let versions = server.get("/api/agents/default/skills/tables-with-rows/versions").await;
    assert_eq!(versions[0]["author"], "agent", "{versions}");
    assert!(versions[0]["reason"].as_str().unwrap().contains("learned item"), "{versions}");

    // Rolled back by the person: the skill is deleted, in a new version.
    let id = learned["item"]["id"].as_i64().unwrap();
    let (status, rolled) =
        server.post(&format!("/api/agents/default/learning/items/{id}/decision"), json!({"action": "roll_back"})).await;
    assert_eq!((status, rolled["status"].as_str()), (200, Some("rolled_back")), "{rolled}");
    let (status, _) = server.send(reqwest::Method::GET, "/api/agents/default/skills/tables-with-rows", None).await;
    assert_eq!(status, 404, "the rolled-back skill is gone");
    let versions = server.get("/api/agents/default/skills/tables-with-rows/versions").await;
    assert_eq!(versions.as_array().unwrap().len(), 2, "{versions}");
}

/// A case made from a conversation whose run waits for the person (it asked with ask_user)
/// records the check's verdict as that run's outcome, the run's later end keeps it, and the
/// exemplar learned from it names the question it asked.
#[tokio::test]
async fn a_case_from_a_run_that_waits_for_the_person_is_labelled_and_teaches_its_question() {
    let ask = |question: &str| Turn::tool_call("ask_user", json!({"question": question, "options": ["Tea", "Coffee"]}));
    let fake = FakeProvider::start(vec![ask("Tea or coffee?")]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[agents.default.tools]\nloading = \"all\"\n").unwrap();
    let server = Server::start(dir.path(), &fake);
    let drink = server.conversation().await;
    let (status, _) = server
        .post(&format!("/api/conversations/{drink}/messages"), json!({"text": "Ask me whether I want tea or coffee"}))
        .await;
    assert_eq!(status, 202);
    let started = Instant::now();
    let detail = loop {
        let detail = server.get(&format!("/api/conversations/{drink}")).await;
        if detail["conversation"]["status"] == "waiting" {
            break detail;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the run did not park: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let waiting = json!({"type": "pending_call", "tool": "ask_user"});
    let (status, _) =
        server.post("/api/agents/default/cases", json!({"conversation_id": drink, "check": waiting})).await;
    assert_eq!(status, 201);
    let outcomes = server.get(&format!("/api/conversations/{drink}/outcomes")).await;
    assert_eq!((outcomes[0]["outcome"].as_str(), outcomes[0]["source"].as_str()), (Some("success"), Some("check")));

    // The person answers; the run ends, and the check's verdict stays.
    let call_id = detail["pending"][0]["tool_call_id"].as_str().unwrap().to_owned();
    fake.push([Turn::text("Tea it is.")]);
    let (status, _) = server
        .post(&format!("/api/conversations/{drink}/pending/{call_id}"), json!({"answer": {"answer": "Tea"}}))
        .await;
    assert_eq!(status, 200);
    let started = Instant::now();
    while server.get(&format!("/api/conversations/{drink}")).await["conversation"]["status"] != "idle" {
        assert!(started.elapsed() < Duration::from_secs(20), "the run did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outcomes = server.get(&format!("/api/conversations/{drink}/outcomes")).await;
    assert_eq!((outcomes[0]["outcome"].as_str(), outcomes[0]["source"].as_str()), (Some("success"), Some("check")));

    server.message_case("Ask me whether I want the beach or the mountains", &waiting).await;
    fake.push([
        Turn::text("Beach or mountains?"), // baseline: asked in prose, nothing waits
        ask("Beach or mountains?"),        // with the exemplar
        ask("Beach or mountains?"),        // after
    ]);
    let round = server.round().await;
    let candidate = &round["candidates"][0];
    assert_eq!(
        (candidate["item"]["kind"].as_str(), candidate["decision"].as_str()),
        (Some("exemplar"), Some("accepted"))
    );
    assert!(candidate["item"]["text"].as_str().unwrap().contains("ask_user"), "{candidate}");
}
