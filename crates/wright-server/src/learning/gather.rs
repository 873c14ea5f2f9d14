//! Candidates from recent runs: (a) an exemplar — the compressed call sequence of a
//! successful run, with no model call; (b) an error→fix rule — a failed call and the call that
//! worked after it in the same run; (c) a notes edit the agent's model drafts from a failing
//! run and its execution log. Each names the runs it came from and is at most
//! [`ITEM_MAX_TOKENS`] tokens in a request.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_agent::{ModelRequest, item_tokens};
use wright_core::{Event, EventBody, LearnedKind, Outcome};
use wright_store::{ExecutionFilter, RunOutcomeRecord, RunRef};

use crate::AppState;

/// The most tokens one learned item adds to a request.
pub(crate) const ITEM_MAX_TOKENS: usize = 250;

/// The longest a call's arguments are shown in an item.
const ARGUMENT_CHARS: usize = 160;

/// A candidate before it is stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draft {
    pub(crate) kind: LearnedKind,
    pub(crate) trigger: String,
    pub(crate) text: String,
    pub(crate) sources: Vec<RunRef>,
    pub(crate) read_outside: bool,
}

/// The events of one recorded run.
async fn run_events(state: &AppState, run: &RunOutcomeRecord) -> anyhow::Result<Vec<Event>> {
    let stored = state.store.events_after(&run.conversation_id, run.user_seq - 1).await?;
    Ok(stored.into_iter().map(|stored| stored.event).filter(|event| event.seq <= run.end_seq).collect())
}

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(chars).collect();
    cut.push('…');
    cut
}

fn shown_call(name: &str, arguments: &Value) -> String {
    format!("{name} {}", cut(&arguments.to_string(), ARGUMENT_CHARS))
}

/// Keeps an item within [`ITEM_MAX_TOKENS`].
fn capped(text: String) -> String {
    let mut text = text;
    while item_tokens(&text) > ITEM_MAX_TOKENS {
        let keep = text.chars().count() * 9 / 10;
        text = cut(&text, keep);
    }
    text
}

/// The run's calls in order, each with its result's success and output. A call's result is
/// the first result after it with its id (providers may reuse an id in a later turn).
fn paired_calls(events: &[Event]) -> Vec<(String, Value, bool, Value)> {
    events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match &event.body {
            EventBody::ToolCall { id, name, arguments, .. } => {
                let (success, output) = events[index + 1..].iter().find_map(|later| match &later.body {
                    EventBody::ToolResult { tool_call_id, success, output, .. } if tool_call_id == id => {
                        Some((*success, output.clone()))
                    }
                    _ => None,
                })?;
                Some((name.clone(), arguments.clone(), success, output))
            }
            _ => None,
        })
        .collect()
}

/// The calls of a run whose results succeeded, in order.
fn successful_calls(events: &[Event]) -> Vec<(String, Value)> {
    paired_calls(events)
        .into_iter()
        .filter(|(_, _, success, _)| *success)
        .map(|(name, arguments, _, _)| (name, arguments))
        .collect()
}

/// (a) The successful run's calls as one line: what to do for a request like it.
pub(crate) fn exemplar(run: &RunOutcomeRecord, events: &[Event]) -> Option<Draft> {
    if run.outcome != Outcome::Success {
        return None;
    }
    let calls = successful_calls(events);
    if calls.is_empty() {
        return None;
    }
    let steps: Vec<String> = calls.iter().map(|(name, arguments)| shown_call(name, arguments)).collect();
    let text =
        capped(format!("For a request like {:?}, this worked: {}.", cut(&run.request, 120), steps.join(", then ")));
    Some(Draft {
        kind: LearnedKind::Exemplar,
        trigger: run.request.clone(),
        text,
        sources: vec![RunRef { conversation_id: run.conversation_id.clone(), user_seq: run.user_seq }],
        read_outside: run.read_outside,
    })
}

/// (b) The first failed call followed, later in the run, by a call of the same tool that
/// worked.
pub(crate) fn error_fix(run: &RunOutcomeRecord, events: &[Event]) -> Option<Draft> {
    let calls = paired_calls(events);
    for (index, (name, arguments, success, output)) in calls.iter().enumerate() {
        if *success {
            continue;
        }
        let fix = calls[index + 1..].iter().find(|(later, _, worked, _)| later == name && *worked);
        if let Some((_, fixed, _, _)) = fix {
            let error = output.get("error").and_then(Value::as_str).map_or_else(|| output.to_string(), str::to_owned);
            let text = capped(format!(
                "When {} failed with {:?}, what worked was {}.",
                shown_call(name, arguments),
                cut(&error, 160),
                shown_call(name, fixed)
            ));
            return Some(Draft {
                kind: LearnedKind::ErrorFix,
                trigger: format!("{} {name}", run.request),
                text,
                sources: vec![RunRef { conversation_id: run.conversation_id.clone(), user_seq: run.user_seq }],
                read_outside: run.read_outside,
            });
        }
    }
    None
}

const DRAFT_SYSTEM: &str = "You improve the notes of an assistant that works with tools. You are shown a request \
the assistant failed, what it did, and its execution log. Write one or two short sentences (under 60 words) to add to \
its notes so that it handles this kind of request correctly next time: name the tool and what to pass. Reply with \
only the sentences.";

/// (c) A notes edit the agent's own model drafts from a failing run and its execution log.
async fn notes_edit(state: &AppState, run: &RunOutcomeRecord, events: &[Event]) -> anyhow::Result<Option<Draft>> {
    if run.outcome != Outcome::Failure {
        return Ok(None);
    }
    let agent = wright_core::AgentId::parse(&state.store.conversation(&run.conversation_id).await?.agent_id)?;
    let model = state.models.for_agent(&agent).await.map_err(|problem| anyhow::anyhow!(problem))?;
    let mut shown = Vec::new();
    for event in events {
        let line = match &event.body {
            EventBody::User { text, .. } => format!("person: {}", cut(text, 400)),
            EventBody::Assistant { text, .. } => format!("assistant: {}", cut(text, 400)),
            EventBody::ToolCall { name, arguments, .. } => format!("call: {}", shown_call(name, arguments)),
            EventBody::ToolResult { name, output, success, .. } => {
                format!(
                    "result of {name} ({}): {}",
                    if *success { "ok" } else { "failed" },
                    cut(&output.to_string(), 300)
                )
            }
            EventBody::Notice(notice) => format!("notice: {}", cut(&serde_json::to_string(notice)?, 200)),
        };
        shown.push(line);
    }
    let filter = ExecutionFilter { success: Some(false), limit: Some(200), ..ExecutionFilter::default() };
    let failures: Vec<String> = state
        .store
        .list_executions(&agent, &filter)
        .await?
        .into_iter()
        .filter(|execution| execution.conversation_id.as_deref() == Some(run.conversation_id.as_str()))
        .take(10)
        .map(|execution| {
            format!(
                "{} failed ({}): {}",
                execution.tool_name,
                execution.error_category.unwrap_or_default(),
                cut(&execution.error.unwrap_or_default(), 200)
            )
        })
        .collect();
    let text = format!(
        "The request: {}\n\nWhat happened:\n{}\n\nExecution log (failed calls):\n{}\n\nWhy it failed: {}",
        cut(&run.request, 400),
        shown.join("\n"),
        if failures.is_empty() { "none".to_owned() } else { failures.join("\n") },
        run.source
    );
    let history = [Event { seq: 1, content: text.clone(), body: EventBody::User { text, component: None } }];
    let request = ModelRequest {
        system: DRAFT_SYSTEM.to_owned(),
        history: &history,
        tools: std::sync::Arc::default(),
        temperature: Some(0.0),
        max_output_tokens: Some(200),
        require_tool_call: false,
        tail: String::new(),
    };
    let reply = model.model.reply(request, &|_| {}, &CancellationToken::new()).await?;
    let drafted = reply.text.trim();
    if drafted.is_empty() {
        return Ok(None);
    }
    Ok(Some(Draft {
        kind: LearnedKind::NotesEdit,
        trigger: run.request.clone(),
        text: capped(drafted.to_owned()),
        sources: vec![RunRef { conversation_id: run.conversation_id.clone(), user_seq: run.user_seq }],
        read_outside: run.read_outside,
    }))
}

/// The drafts the agent's recent runs give, newest run first, at most `max`.
pub(crate) async fn gather(state: &AppState, runs: &[RunOutcomeRecord], max: usize) -> anyhow::Result<Vec<Draft>> {
    let mut drafts: Vec<Draft> = Vec::new();
    for run in runs {
        if drafts.len() >= max {
            break;
        }
        let events = run_events(state, run).await?;
        let mut found: Vec<Draft> = exemplar(run, &events).into_iter().chain(error_fix(run, &events)).collect();
        if found.is_empty() {
            match notes_edit(state, run, &events).await {
                Ok(draft) => found.extend(draft),
                Err(error) => tracing::warn!(%error, "could not draft a notes edit from a failing run"),
            }
        }
        for draft in found {
            if !drafts.iter().any(|known| known.kind == draft.kind && known.text == draft.text) {
                drafts.push(draft);
            }
        }
    }
    drafts.truncate(max);
    Ok(drafts)
}
