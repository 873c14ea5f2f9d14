//! The loop's own overhead per tool turn: a model that answers at once (a tool call on every
//! turn but the last), a cheap built-in tool, and a transcript over a real app database file.
//! Overhead per turn = (wall time of the run − the tools' own time as recorded in
//! tool_executions) / turns. Medians over repeated runs.
//!
//! `cargo bench -p wright-agent --bench loop_overhead` (release).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_agent::{
    Finish, LoopConfig, Model, ModelError, ModelReply, ModelRequest, ModelToolCall, ParkedCall, RunContext, RunOutcome,
    SystemParts, Transcript, run,
};
use wright_core::{
    AgentId, ApprovedCall, ConversationStatus, DocumentKind, Event, EventBody, NewEvent, ToolLoading, ToolSettings,
    Toolset,
};
use wright_store::{ExecutionFilter, Lease, RunEnd, StateLimits, Store};
use wright_tools::{Services, ToolRegistry};

const TURNS: usize = 40;
const RUNS: usize = 15;

/// Calls `list_state_keys` on every turn until `TURNS`, then answers.
struct InstantModel {
    turn: Mutex<usize>,
}

impl Model for InstantModel {
    fn reply<'a>(
        &'a self,
        _request: ModelRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            let turn = {
                let mut turn = self.turn.lock().unwrap();
                *turn += 1;
                *turn
            };
            on_text("ok");
            let tool_calls = if turn <= TURNS {
                vec![ModelToolCall {
                    id: format!("t{turn}"),
                    name: "list_state_keys".into(),
                    arguments: Ok(json!({})),
                    data: Value::Null,
                }]
            } else {
                Vec::new()
            };
            Ok(ModelReply { text: "ok".into(), tool_calls, data: Value::Null })
        })
    }
}

struct StoreTranscript {
    store: Store,
    conversation: String,
    /// Time spent storing events, µs: part of the loop's overhead, reported on its own.
    append_us: Mutex<f64>,
}

fn message(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl Transcript for StoreTranscript {
    fn system_parts(&self) -> BoxFuture<'_, Result<SystemParts, String>> {
        Box::pin(async move {
            let agent = AgentId::default_agent();
            let prompt = self.store.document(&agent, DocumentKind::SystemPrompt).await.map_err(message)?;
            let notes = self.store.document(&agent, DocumentKind::LearnedNotes).await.map_err(message)?;
            let state_keys = self.store.list_state_keys(&agent, None).await.map_err(message)?;
            Ok(SystemParts { prompt: prompt.content, notes: notes.content, state_keys, ..SystemParts::default() })
        })
    }
    fn events(&self) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            Ok(self
                .store
                .events_after(&self.conversation, 0)
                .await
                .map_err(message)?
                .into_iter()
                .map(|stored| stored.event)
                .collect())
        })
    }
    fn append(&self, events: Vec<NewEvent>) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            let started = Instant::now();
            let stored = self.store.append_events(&self.conversation, &events).await.map_err(message)?;
            *self.append_us.lock().unwrap() += started.elapsed().as_secs_f64() * 1e6;
            Ok(stored.into_iter().map(|stored| stored.event).collect())
        })
    }
    fn park<'a>(&'a self, _call: &'a ParkedCall) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    fn approved_calls(&self) -> BoxFuture<'_, Result<Vec<ApprovedCall>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn finish(&self, _outcome: &RunOutcome, closing: Vec<NewEvent>) -> BoxFuture<'_, Result<Finish, String>> {
        Box::pin(async move {
            let end = RunEnd { closing, status: ConversationStatus::Idle, close_open_calls: None };
            self.store.finish_run(&self.conversation, OWNER, &end).await.map_err(message)?;
            Ok(Finish::Ended)
        })
    }
    fn text_delta(&self, _text: &str) {}
}

const OWNER: &str = "bench";

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("wright.db"), StateLimits::default()).await.unwrap();
    let sandbox = wright_sandbox::Sandbox::new(wright_sandbox::SandboxConfig {
        pool_size: 0,
        worker_command: vec!["unused".into()],
        ..Default::default()
    })
    .unwrap();
    let egress = wright_egress::Egress::new(Default::default()).unwrap();
    let databases = wright_agentdb::AgentDatabases::new(dir.path().join("agents"), Default::default());
    let browsers = wright_browser::Browsers::new(Default::default(), wright_tools::browser::request_policy(&egress));
    let tools = ToolRegistry::new(Arc::new(Services {
        store: store.clone(),
        sandbox,
        egress,
        databases,
        browsers,
        workspaces: wright_workspace::Workspaces::new(dir.path(), Default::default()).unwrap(),
    }));
    let agent = AgentId::default_agent();
    // The model calls the same tool every turn: measure running it, not answering a repeat.
    let config = LoopConfig { refuse_repeated_calls: false, ..LoopConfig::default() };
    // Every schema in every request, as before toolsets: the overhead measured is the loop's.
    let tool_settings =
        ToolSettings { toolsets: Toolset::ALL.to_vec(), loading: ToolLoading::All, always_loaded: Vec::new() };
    let (mut overheads, mut totals, mut appends, mut specs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for index in 0..RUNS {
        let conversation = format!("c{index}");
        store.create_conversation(&agent, &conversation, "bench").await.unwrap();
        let go = NewEvent::new("go", EventBody::User { text: "go".into(), component: None });
        store.start_run_with_message(&conversation, Lease { owner: OWNER, seconds: 60 }, &go).await.unwrap();
        let transcript =
            StoreTranscript { store: store.clone(), conversation: conversation.clone(), append_us: Mutex::new(0.0) };
        let model = InstantModel { turn: Mutex::new(0) };
        let cancel = CancellationToken::new();
        let context = RunContext {
            agent: &agent,
            conversation_id: &conversation,
            tools: &tools,
            config: &config,
            tool_settings: &tool_settings,
            cancel: &cancel,
        };
        let started = Instant::now();
        run(&model, &transcript, context).await.unwrap();
        let total_us = started.elapsed().as_secs_f64() * 1e6;
        let executions = store
            .list_executions(&agent, &ExecutionFilter { limit: Some(1000), ..Default::default() })
            .await
            .unwrap()
            .into_iter()
            .filter(|execution| execution.conversation_id.as_deref() == Some(conversation.as_str()))
            .map(|execution| execution.duration_us as f64)
            .sum::<f64>();
        overheads.push((total_us - executions) / TURNS as f64);
        appends.push(*transcript.append_us.lock().unwrap() / TURNS as f64);
        let started = Instant::now();
        for _ in 0..TURNS {
            tools.specs(&agent).await.unwrap();
        }
        specs.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
        totals.push(total_us / TURNS as f64);
    }
    println!(
        "loop overhead per tool turn (median of {RUNS} runs of {TURNS} turns): {:.3} ms besides the tool; {:.3} ms per turn in all",
        median(&mut overheads) / 1000.0,
        median(&mut totals) / 1000.0
    );
    println!(
        "  of which storing events {:.3} ms and listing tool specs {:.3} ms per turn",
        median(&mut appends) / 1000.0,
        median(&mut specs) / 1000.0
    );
}
