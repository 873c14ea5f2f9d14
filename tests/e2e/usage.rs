//! Usage, cost and budgets end to end (issue 34): the real `wright serve` against the scripted
//! fake provider on every wire — the ledger's sums against what the fake reported, a budget
//! that stops the next request while another conversation's request is in flight, a cut stream
//! recorded, the soft threshold told once — and `wright usage` beside it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wright_llm::testing::{FAKE_USAGE, FakeProvider, Turn};

use crate::model_loop::{Server, TOKEN, WIRES, Wire, calls};

const WRIGHT: &str = env!("CARGO_BIN_EXE_wright");

/// The connection a wire's environment makes (`env:<provider kind>`).
fn connection(wire: Wire) -> &'static str {
    match wire {
        Wire::Openai => "env:openai",
        Wire::Responses => "env:openai_responses",
        Wire::Anthropic => "env:anthropic",
        Wire::Gemini => "env:gemini",
        Wire::Compatible | Wire::Text => "env:openai_compatible",
    }
}

/// Whether the fake reports usage on this wire (compatible servers are not asked for it).
fn reports_usage(wire: Wire) -> bool {
    matches!(wire, Wire::Openai | Wire::Responses | Wire::Anthropic | Wire::Gemini)
}

async fn put(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let response =
        server.client.put(format!("{}{path}", server.url)).bearer_auth(TOKEN).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn wright_usage(data_dir: &Path, args: &[&str]) -> Value {
    let output =
        Command::new(WRIGHT).arg("--data-dir").arg(data_dir).args(["usage", "--json"]).args(args).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn the_ledgers_sums_equal_what_the_fake_reported_cached_tokens_included_on_every_wire() {
    for wire in WIRES {
        let mut script = calls(wire, vec![("list_state_keys", json!({}))]);
        script.push(Turn::text("No keys yet."));
        let fake = FakeProvider::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let id = server.conversation().await;
        let detail = server.say(&id, "what do you remember?").await;
        assert_eq!(detail["conversation"]["status"], "idle", "{wire:?}: {detail}");
        let requests = fake.requests().len() as i64;
        assert_eq!(requests, 2, "{wire:?}");

        let report = server.get("/api/usage?by=agent").await;
        let totals = &report["totals"];
        assert_eq!(totals["requests"], requests, "{wire:?}: {report}");
        if reports_usage(wire) {
            let expected = json!({
                "prompt_tokens": FAKE_USAGE.prompt_tokens as i64 * requests,
                "cached_prompt_tokens": FAKE_USAGE.cached_prompt_tokens as i64 * requests,
                "completion_tokens": FAKE_USAGE.completion_tokens as i64 * requests,
            });
            for key in ["prompt_tokens", "cached_prompt_tokens", "completion_tokens"] {
                assert_eq!(totals[key], expected[key], "{wire:?} {key}: {report}");
            }
            assert_eq!(totals["estimated_requests"], 0, "{wire:?}: {report}");
        } else {
            // No usage on the wire: estimated from what was sent and received, and marked.
            assert_eq!(totals["estimated_requests"], requests, "{wire:?}: {report}");
            assert!(totals["prompt_tokens"].as_i64().unwrap() > 100, "{wire:?}: the prompt is estimated: {report}");
            assert!(totals["completion_tokens"].as_i64().unwrap() > 0, "{wire:?}: {report}");
        }
        assert_eq!(report["rows"][0]["key"], "default", "{wire:?}: {report}");
        assert_eq!(report["rows"][0]["prompt_tokens"], totals["prompt_tokens"], "{wire:?}");
        let by_caller = server.get("/api/usage?by=caller").await;
        assert_eq!(by_caller["rows"][0]["key"], "person", "{wire:?}: {by_caller}");
        let by_model = server.get("/api/usage?by=model").await;
        assert_eq!(by_model["rows"][0]["key"], format!("{} fake-model", connection(wire)), "{wire:?}: {by_model}");

        // The conversation's own sums, and its context meter: what the last request sent and
        // received, which the next one sends again.
        let conversation = server.get(&format!("/api/conversations/{id}/usage")).await;
        assert_eq!(conversation["prompt_tokens"], totals["prompt_tokens"], "{wire:?}: {conversation}");
        assert!(conversation["context_tokens"].as_i64().unwrap() > 0, "{wire:?}: {conversation}");

        // The terminal reads the same ledger.
        let printed = wright_usage(dir.path(), &["--by", "agent"]);
        assert_eq!(printed["totals"], report["totals"], "{wire:?}");

        let csv =
            server.client.get(format!("{}/api/usage/export", server.url)).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
        let csv = csv.text().await.unwrap();
        assert_eq!(csv.lines().count(), 3, "{wire:?}: a header and a line per request: {csv}");
        assert!(csv.lines().nth(1).unwrap().contains(",person,turn,"), "{wire:?}: {csv}");
    }
}

async fn wait_for_requests(fake: &FakeProvider, count: usize) {
    let started = Instant::now();
    while fake.requests().len() < count {
        assert!(started.elapsed() < Duration::from_secs(20), "the fake got {} requests", fake.requests().len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn budget_notifications(list: &Value) -> Vec<Value> {
    list.as_array().unwrap().iter().filter(|item| item["source"] == "budget").cloned().collect()
}

/// A dollar a completion token and nothing for the prompt; a request reserves its output cap
/// (10 tokens: $10) and the fake's five completion tokens cost $5. With $20 a day: two
/// requests spend $10; a third ($10 + $10 reserved = $20) goes; while it is in flight, the
/// other conversation's next request ($10 + $10 + $10) is not sent; a request the stream of
/// which was cut is still recorded.
#[tokio::test]
async fn a_budget_stops_the_next_request_while_another_conversation_runs_and_a_cut_stream_is_recorded() {
    for wire in [Wire::Openai, Wire::Responses, Wire::Anthropic, Wire::Gemini] {
        let fake = FakeProvider::start(vec![
            Turn::text("first"),
            Turn::text("second"),
            Turn::Hang { text: "partial answer".into() },
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[agent]\nreserve_output_tokens = 10\n\n[budget]\nusd_per_day = 20.0\nnotify_at_percent = 80\n",
        )
        .unwrap();
        let server = Server::start(dir.path(), &fake, wire);
        let price = json!({"connection": connection(wire), "model": "fake-model", "input_per_mtok": 0.0,
            "cached_input_per_mtok": 0.0, "output_per_mtok": 1_000_000.0});
        let (status, body) = put(&server, "/api/settings/prices", price).await;
        assert_eq!(status, 200, "{body}");

        let a = server.conversation().await;
        let b = server.conversation().await;
        server.say(&a, "one").await;
        server.say(&b, "two").await;
        let report = server.get("/api/usage").await;
        assert_eq!(report["totals"]["cost_usd"], 10.0, "{wire:?}: {report}");
        let notifications = server.get("/api/agents/default/notifications").await;
        assert!(budget_notifications(&notifications).is_empty(), "{wire:?}: $15 of $20 is below 80 %: {notifications}");

        // A's third request goes and hangs, holding its reservation.
        let (status, _) = server.post(&format!("/api/conversations/{a}/messages"), json!({"text": "three"})).await;
        assert_eq!(status, 202);
        wait_for_requests(&fake, 3).await;
        // B's next request would pass the budget with A's in flight: not sent.
        let detail = server.say(&b, "four").await;
        assert_eq!(fake.requests().len(), 3, "{wire:?}: B's request was not sent");
        let notice = detail["events"].as_array().unwrap().last().unwrap().clone();
        let text = notice["content"].as_str().unwrap_or_default();
        assert!(
            text.contains("usd_per_day") && text.contains("[budget]") && text.contains("Settings"),
            "{wire:?}: the notice names the budget and how to raise it: {notice}"
        );

        // A is cancelled mid-stream: its request is recorded, cut, estimated from what came.
        let (status, _) = server.post(&format!("/api/conversations/{a}/cancel"), json!({})).await;
        assert_eq!(status, 200, "{wire:?}");
        server.settle(&a).await;
        let started = Instant::now();
        let cut = loop {
            let csv = server
                .client
                .get(format!("{}/api/usage/export", server.url))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if csv.lines().count() == 4 {
                break csv.lines().last().unwrap().to_owned();
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{wire:?}: the cut request is not recorded: {csv}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(cut.ends_with(",true,true"), "{wire:?}: estimated and cut: {cut}");
        assert!(cut.contains(&a), "{wire:?}: {cut}");

        // Told once of each: the soft threshold (reached by the third request) and the spent
        // budget (B refused), however often B asks again.
        server.say(&b, "five").await;
        assert_eq!(fake.requests().len(), 3, "{wire:?}");
        let notifications = server.get("/api/agents/default/notifications").await;
        let budget = budget_notifications(&notifications);
        let titles: Vec<&str> = budget.iter().map(|item| item["title"].as_str().unwrap()).collect();
        assert_eq!(budget.len(), 2, "{wire:?}: {titles:?}");
        assert!(titles.iter().any(|title| title.contains("100 %")), "{wire:?}: {titles:?}");
        assert!(titles.iter().any(|title| title.contains("is reached")), "{wire:?}: {titles:?}");
    }
}

/// `[agent] max_run_tokens`: a run that would pass it ends with a notice naming it, whatever
/// the budgets (there are none here).
#[tokio::test]
async fn the_loop_guard_ends_a_run_that_would_pass_max_run_tokens() {
    let wire = Wire::Openai;
    let mut script = Vec::new();
    for _ in 0..5 {
        script.extend(calls(wire, vec![("list_state_keys", json!({}))]));
    }
    script.push(Turn::text("done"));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), "[agent]\nmax_run_tokens = 1\n");
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;
    let detail = server.say(&id, "loop").await;
    assert_eq!(fake.requests().len(), 0, "not even the first request fits one token");
    let notice = detail["events"].as_array().unwrap().last().unwrap().clone();
    assert!(notice["content"].as_str().unwrap_or_default().contains("max_run_tokens"), "{notice}");
}

fn server_config(dir: &Path, text: &str) {
    std::fs::write(dir.join("config.toml"), text).unwrap();
}
