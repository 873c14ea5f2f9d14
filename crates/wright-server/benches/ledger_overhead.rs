//! What the usage ledger adds to one model request of the loop (issue 34): the same request
//! through the loop's `ProviderModel` over a provider that answers at once (text, usage,
//! finish), bare and wrapped in `MeteredProvider` over a real app database file — without a
//! budget (the row written beside the stream) and with three (the check and reservation
//! against the process's budget lease, then the settle, on the request's path; the row beside
//! it). The request is a run's: the real built-in tool specs and a twenty-event history.
//! Medians over repeated batches, per request; before each metered measurement the ledger's
//! writer has written every earlier row, so one path's rows do not load the next's figure.
//!
//! `cargo bench -p wright-server --bench ledger_overhead` (release).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use wright_agent::{Model, ModelRequest, ProviderModel};
use wright_core::{Event, EventBody, UsageCaller, UsagePurpose};
use wright_llm::{EventStream, Finish, FinishReason, Provider, Request, StreamEvent, Usage};
use wright_server::domain::usage::{Ledger, MeteredProvider, Metering};
use wright_store::{BudgetScope, BudgetSettings, StateLimits, Store};

const REQUESTS: usize = 200;
const BATCHES: usize = 15;

/// Answers every request at once, as a provider that had the reply ready would.
struct InstantProvider;

impl Provider for InstantProvider {
    fn stream(&self, _request: Request, _cancel: CancellationToken) -> EventStream {
        let usage = Usage {
            input_tokens: 1200,
            output_tokens: 20,
            cached_input_tokens: Some(1000),
            request_id: Some("chatcmpl-bench".into()),
            ..Usage::default()
        };
        futures::stream::iter([
            Ok(StreamEvent::TextDelta("ok".into())),
            Ok(StreamEvent::Usage(usage)),
            Ok(StreamEvent::Finish(Finish { reason: FinishReason::Stop, raw: "stop".into() })),
        ])
        .boxed()
    }
}

fn history() -> Vec<Event> {
    (0..20)
        .map(|seq| {
            let text = format!("message {seq}: {}", "some words of a conversation ".repeat(8));
            let body = if seq % 2 == 0 {
                EventBody::User { text, component: None }
            } else {
                EventBody::Assistant { text, provider: serde_json::Value::Null }
            };
            Event { seq, content: String::new(), body }
        })
        .collect()
}

async fn median_per_request(model: &dyn Model, history: &[Event], tools: &Arc<[wright_core::ToolSpec]>) -> f64 {
    let cancel = CancellationToken::new();
    let quiet = |_: &str| {};
    let mut batches = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let started = Instant::now();
        for _ in 0..REQUESTS {
            let request = ModelRequest {
                system: "You are a helpful agent.".repeat(40),
                history,
                tools: Arc::clone(tools),
                temperature: None,
                max_output_tokens: Some(1024),
                require_tool_call: false,
                tail: String::new(),
            };
            model.reply(request, &quiet, &cancel).await.expect("a reply");
        }
        batches.push(started.elapsed().as_secs_f64() * 1e6 / REQUESTS as f64);
    }
    batches.sort_by(f64::total_cmp);
    batches[BATCHES / 2]
}

/// Waits until the ledger holds `rows` rows (its writer has caught up).
async fn drained(store: &Store, rows: i64) {
    loop {
        let (_, totals) = store.usage_summary(0, wright_store::UsageGrouping::Agent).await.unwrap();
        if totals.requests >= rows {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn metering(agent: &str) -> Metering {
    Metering {
        agent: Some(agent.into()),
        conversation_id: Some("bench".into()),
        run_id: Some("bench-run".into()),
        caller: UsageCaller::Person,
        purpose: UsagePurpose::Turn,
        connection: "env:openai".into(),
        kind: "openai".into(),
        model: "gpt-4o-mini".into(),
        default_output_cap: 2048,
        max_run_tokens: None,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(&directory.path().join("wright.db"), StateLimits::default()).await.unwrap();
        let tools: Arc<[wright_core::ToolSpec]> = wright_tools::builtin_specs().into();
        let history = history();
        let inner: Arc<dyn Provider> = Arc::new(InstantProvider);

        let bare = ProviderModel(Arc::clone(&inner));
        let ledger = Arc::new(Ledger::new(store.clone(), BudgetSettings::default(), Default::default()));
        let unbudgeted =
            ProviderModel(Arc::new(MeteredProvider::new(Arc::clone(&inner), Arc::clone(&ledger), metering("default"))));
        let budgeted_ledger = Arc::new(Ledger::new(
            store.clone(),
            BudgetSettings {
                tokens_per_day: Some(i64::MAX / 4),
                usd_per_month: Some(1e12),
                ..BudgetSettings::default()
            },
            Default::default(),
        ));
        store
            .set_budget_settings(
                // Another agent's: the unbudgeted provider's agent ("default") has none.
                &BudgetScope::Agent("budgeted".into()),
                &BudgetSettings { tokens_per_month: Some(i64::MAX / 4), ..BudgetSettings::default() },
            )
            .await
            .unwrap();
        budgeted_ledger.settings_changed();
        let budgeted =
            ProviderModel(Arc::new(MeteredProvider::new(Arc::clone(&inner), budgeted_ledger, metering("budgeted"))));

        // Warm up every path once (SQLite's page cache, the statement cache).
        median_per_request(&bare, &history, &tools).await;
        median_per_request(&unbudgeted, &history, &tools).await;
        median_per_request(&budgeted, &history, &tools).await;

        let per_run = (BATCHES * REQUESTS) as i64;
        drained(&store, 2 * per_run).await;
        let bare_us = median_per_request(&bare, &history, &tools).await;
        let unbudgeted_us = median_per_request(&unbudgeted, &history, &tools).await;
        drained(&store, 3 * per_run).await;
        let budgeted_us = median_per_request(&budgeted, &history, &tools).await;
        drained(&store, 4 * per_run).await;
        let (rows, totals) = store.usage_summary(0, wright_store::UsageGrouping::Agent).await.unwrap();
        println!("model request through ProviderModel, median of {BATCHES} batches of {REQUESTS}:");
        println!("  bare provider:                     {bare_us:8.1} µs/request");
        println!(
            "  metered, no budget:                {unbudgeted_us:8.1} µs/request  (ledger adds {:+.1} µs)",
            unbudgeted_us - bare_us
        );
        println!(
            "  metered, three budgets (lease):    {budgeted_us:8.1} µs/request  (ledger adds {:+.1} µs)",
            budgeted_us - bare_us
        );
        println!("  rows written: {} ({} groups)", totals.requests, rows.len());
    });
}
