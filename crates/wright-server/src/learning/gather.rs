//! Candidates from recent runs: (a) an exemplar — the compressed call sequence of a
//! successful run, with no model call; (b) an error→fix rule — a failed call and the call that
//! worked after it in the same run; (c) a notes edit and a skill the agent's model drafts from
//! a failing run and its execution log. Each names the runs it came from and is at most
//! [`ITEM_MAX_TOKENS`] tokens in a request.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_agent::{ModelRequest, error_fix_text, item_tokens};
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

/// The call a run ended waiting on (a question to the person, an approval): it has no result
/// yet, and it is the run's last event.
fn waiting_call(events: &[Event]) -> Option<(String, Value)> {
    match &events.last()?.body {
        EventBody::ToolCall { name, arguments, .. } => Some((name.clone(), arguments.clone())),
        _ => None,
    }
}

/// (a) The successful run's calls as one line: what to do for a request like it (a call it
/// ended waiting on included: asking the person was the work). A call the same as one before
/// it is left out: a small model that sends a call again after its result loops, and an
/// exemplar that showed the loop ("run_sandbox_code {…}, then run_sandbox_code {…}, then …",
/// as the 0.5B's did) would teach it.
pub(crate) fn exemplar(run: &RunOutcomeRecord, events: &[Event]) -> Option<Draft> {
    if run.outcome != Outcome::Success {
        return None;
    }
    let mut calls: Vec<(String, Value)> = Vec::new();
    for call in successful_calls(events).into_iter().chain(waiting_call(events)) {
        if !calls.contains(&call) {
            calls.push(call);
        }
    }
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

/// (b) The first failed call followed, later in the run, by a call of the same tool with
/// other arguments that worked. The same call working later fixed nothing the model could
/// learn: what failed was the moment (a tool not offered in that turn, a busy service), and
/// the 0.5B's rule "when run_sandbox_code {…} failed with 'not offered in this turn', what
/// worked was run_sandbox_code {…}" (the same call) only taught it to send the call again.
pub(crate) fn error_fix(run: &RunOutcomeRecord, events: &[Event]) -> Option<Draft> {
    let calls = paired_calls(events);
    for (index, (name, arguments, success, output)) in calls.iter().enumerate() {
        if *success {
            continue;
        }
        let fix =
            calls[index + 1..].iter().find(|(later, fixed, worked, _)| later == name && *worked && fixed != arguments);
        if let Some((_, fixed, _, _)) = fix {
            let error = output.get("error").and_then(Value::as_str).map_or_else(|| output.to_string(), str::to_owned);
            let text =
                capped(error_fix_text(&shown_call(name, arguments), &cut(&error, 160), &shown_call(name, fixed)));
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
the assistant failed, what it did, and its execution log. Write one or two short instructions (under 60 words) to add \
to its notes so that it handles this kind of request correctly next time. Write them as orders to the assistant, \
starting with a verb, naming the tool and what to pass, for example: \"To keep a value for later, call set_state with \
the key and the value.\" Do not explain what went wrong. Reply with only the instructions.";

const SKILL_SYSTEM: &str = "You write skills for an assistant that works with tools: short instructions it loads \
when a request needs them. You are shown a request the assistant failed, what it did, and its execution log. Write a \
skill for this kind of request, in exactly this form:\nname: a lowercase name with hyphens, e.g. save-a-preference\n\
description: one sentence saying when to use the skill\n\nthen the steps, under 80 words: which tool to call, with \
which arguments, in which order. Reply with only the skill.";

/// What happened in a failing run, for a model to draft from: the run's events, the failed
/// calls the execution log holds for its conversation, and why it counts as failed.
async fn failure_story(
    state: &AppState,
    agent: &wright_core::AgentId,
    run: &RunOutcomeRecord,
    events: &[Event],
) -> anyhow::Result<String> {
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
        .list_executions(agent, &filter)
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
    Ok(format!(
        "The request: {}\n\nWhat happened:\n{}\n\nExecution log (failed calls):\n{}\n\nWhy it failed: {}",
        cut(&run.request, 400),
        shown.join("\n"),
        if failures.is_empty() { "none".to_owned() } else { failures.join("\n") },
        run.source
    ))
}

/// The drafting model's answer to `system` about `story`, at temperature 0: `[learning]
/// draft_model` when the person configured a stronger one, else the agent's own.
async fn draft_with_model(
    state: &AppState,
    agent: &wright_core::AgentId,
    system: &str,
    story: String,
    max_tokens: u32,
) -> anyhow::Result<String> {
    let configured = state.models.for_drafting(agent).await.map_err(|problem| anyhow::anyhow!(problem))?;
    // Metered as caller `learning`, under the agent's budgets, like the round's replays.
    let model = crate::domain::usage::learning_model(&state.ledger, &configured, agent, &state.config.agent);
    let history = [Event { seq: 1, content: story.clone(), body: EventBody::User { text: story, component: None } }];
    let request = ModelRequest {
        system: system.to_owned(),
        history: &history,
        tools: std::sync::Arc::default(),
        temperature: Some(0.0),
        max_output_tokens: Some(max_tokens),
        require_tool_call: false,
        tail: String::new(),
    };
    let reply = wright_agent::Model::reply(&model, request, &|_| {}, &CancellationToken::new()).await?;
    Ok(reply.text.trim().to_owned())
}

/// (c) What the agent's own model drafts from a failing run and its execution log: an
/// addition to its notes, and a skill for this kind of request (kept only when it reads as
/// a valid `SKILL.md` within the item budget).
async fn model_drafts(state: &AppState, run: &RunOutcomeRecord, events: &[Event]) -> anyhow::Result<Vec<Draft>> {
    if run.outcome != Outcome::Failure {
        return Ok(Vec::new());
    }
    let agent = wright_core::AgentId::parse(&state.store.conversation(&run.conversation_id).await?.agent_id)?;
    let story = failure_story(state, &agent, run, events).await?;
    let specs = state.tools.specs(&agent).await?;
    let tools: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
    let sources = vec![RunRef { conversation_id: run.conversation_id.clone(), user_seq: run.user_seq }];
    let mut drafts = Vec::new();
    let notes = draft_with_model(state, &agent, DRAFT_SYSTEM, story.clone(), 200).await?;
    match unusable(&notes, &tools) {
        None => drafts.push(Draft {
            kind: LearnedKind::NotesEdit,
            trigger: run.request.clone(),
            text: capped(notes),
            sources: sources.clone(),
            read_outside: run.read_outside,
        }),
        Some(why) => tracing::info!(reply = %cut(&notes, 200), why, "a drafted notes edit was left out"),
    }
    let reply = draft_with_model(state, &agent, SKILL_SYSTEM, story, 300).await?;
    let skill = skill_file(&reply).ok_or("it did not read as a skill").and_then(|text| match unusable(&text, &tools) {
        Some(why) => Err(why),
        None if item_tokens(&text) > ITEM_MAX_TOKENS => Err("it was over the item budget"),
        None => Ok(text),
    });
    match skill {
        Ok(text) => drafts.push(Draft {
            kind: LearnedKind::Skill,
            trigger: run.request.clone(),
            text,
            sources,
            read_outside: run.read_outside,
        }),
        Err(why) => tracing::info!(reply = %cut(&reply, 200), why, "a drafted skill was left out"),
    }
    Ok(drafts)
}

/// Why a drafted instruction could not help, if it could not: it is empty, it names none of
/// the agent's tools (both drafting prompts ask for the tool; the 0.5B's drafts that named none
/// were accounts of the failure — "The request failed because the sandbox code was not
/// executed correctly" — each of which a round replays against every failing held-out case,
/// minutes a replay on a small model, only to refuse), or it says a sentence twice (a small
/// model's reply that loops). Names are matched as whole words (`wright_agent::mentions`).
fn unusable(draft: &str, tools: &[&str]) -> Option<&'static str> {
    if draft.trim().is_empty() {
        return Some("it is empty");
    }
    if !tools.iter().any(|tool| wright_agent::mentions(draft, tool)) {
        return Some("it names none of the agent's tools");
    }
    let mut sentences: Vec<String> = Vec::new();
    for sentence in draft.split(['.', '\n']).map(|sentence| sentence.trim().to_lowercase()) {
        if sentence.split_whitespace().count() >= 3 && sentences.contains(&sentence) {
            return Some("it says the same sentence twice");
        }
        sentences.push(sentence);
    }
    None
}

/// The `SKILL.md` a model's reply in [`SKILL_SYSTEM`]'s form makes: `name:` and
/// `description:` lines (a Markdown fence or front matter around them tolerated), then the
/// steps. `None` when the name is not a valid skill name or a part is missing.
pub(crate) fn skill_file(reply: &str) -> Option<String> {
    let lines: Vec<&str> =
        reply.lines().map(str::trim_end).filter(|line| !line.starts_with("```") && line.trim() != "---").collect();
    let field = |key: &str| {
        lines.iter().position(|line| line.trim_start().to_lowercase().starts_with(&format!("{key}:"))).map(|at| {
            let line = lines[at].trim_start();
            (at, line[key.len() + 1..].trim().trim_matches(['"', '\'', '`']).to_owned())
        })
    };
    let (name_at, name) = field("name")?;
    let (description_at, description) = field("description")?;
    wright_core::check_skill_name(&name).ok()?;
    let body = lines[name_at.max(description_at) + 1..].join("\n").trim().to_owned();
    if description.is_empty() || body.is_empty() {
        return None;
    }
    let text = wright_core::SkillFile::render(&name, &description, &body);
    wright_core::SkillFile::parse(&text).ok().map(|_| text)
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
            match model_drafts(state, run, &events).await {
                Ok(drafted) => found.extend(drafted),
                Err(error) => tracing::warn!(%error, "could not draft from a failing run"),
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wright_core::OutcomeSource;

    use super::*;

    fn run(outcome: Outcome) -> RunOutcomeRecord {
        RunOutcomeRecord {
            conversation_id: "c".into(),
            user_seq: 1,
            end_seq: 99,
            outcome,
            source: OutcomeSource::Check,
            request: "Use run_sandbox_code to compute 1234 * 5678.".into(),
            read_outside: false,
            rating: None,
            comment: None,
            finished_at: String::new(),
        }
    }

    /// A run's events: each (tool, arguments, worked) is a call and its result.
    fn events(calls: &[(&str, Value, bool)]) -> Vec<Event> {
        let mut events = Vec::new();
        for (index, (name, arguments, worked)) in calls.iter().enumerate() {
            let id = format!("call-{index}");
            let body = EventBody::ToolCall {
                id: id.clone(),
                name: (*name).into(),
                arguments: arguments.clone(),
                provider: Value::Null,
            };
            events.push(Event { seq: events.len() as i64 + 2, content: String::new(), body });
            let output = if *worked { json!({ "result": 1 }) } else { json!({ "error": "not offered in this turn" }) };
            let body = EventBody::ToolResult {
                tool_call_id: id,
                name: (*name).into(),
                output,
                success: *worked,
                outside_origin: None,
            };
            events.push(Event { seq: events.len() as i64 + 2, content: String::new(), body });
        }
        events
    }

    #[test]
    fn an_exemplar_shows_each_call_once_and_an_error_fix_needs_a_call_that_changed() {
        let code = json!({ "code": "1234 * 5678" });
        let looped = events(&[
            ("run_sandbox_code", code.clone(), true),
            ("run_sandbox_code", code.clone(), true),
            ("set_state", json!({ "key": "product", "value": 7006652 }), true),
            ("run_sandbox_code", code.clone(), true),
        ]);
        let exemplar = exemplar(&run(Outcome::Success), &looped).expect("an exemplar");
        assert_eq!(exemplar.text.matches("run_sandbox_code").count(), 2, "{}", exemplar.text); // the request's and one call
        assert!(
            exemplar.text.ends_with("then set_state {\"key\":\"product\",\"value\":7006652}."),
            "{}",
            exemplar.text
        );

        // The same call refused, then working: the moment failed, not the call.
        let refused_then_same =
            events(&[("run_sandbox_code", code.clone(), false), ("run_sandbox_code", code.clone(), true)]);
        assert_eq!(error_fix(&run(Outcome::Success), &refused_then_same), None);
        // A later failure with a call that changed is still found after one that did not.
        let fixed = events(&[
            ("run_sandbox_code", code.clone(), false),
            ("run_sandbox_code", code.clone(), true),
            ("db_sql", json!({ "sql": "CREATE TABLE t (a); INSERT INTO t VALUES (1)" }), false),
            ("db_sql", json!({ "sql": "CREATE TABLE t (a)" }), true),
        ]);
        let rule = error_fix(&run(Outcome::Success), &fixed).expect("a rule");
        assert!(
            rule.text.contains("INSERT") && rule.text.contains(r#"db_sql {"sql":"CREATE TABLE t (a)"}"#),
            "{}",
            rule.text
        );
    }

    #[test]
    fn a_draft_that_names_no_tool_or_repeats_itself_is_left_out() {
        let tools = ["set_state", "db_sql", "run_sandbox_code"];
        assert_eq!(unusable("To keep a value for later, call set_state with the key and the value.", &tools), None);
        assert_eq!(
            unusable("Create the table with db_sql first, then insert the rows in a second call.", &tools),
            None
        );
        for (draft, why) in [
            ("", "it is empty"),
            // What the 0.5B drafted instead of an instruction.
            (
                "The request failed because the sandbox code was not executed correctly. The sandbox code was \
                 supposed to sum the numbers from 1 to 100, but it was not executed.",
                "it names none of the agent's tools",
            ),
            // A tool's name inside another word is not the tool.
            ("Use my_set_state_helper for that.", "it names none of the agent's tools"),
            (
                "Call db_sql once. The tool was not loaded because you asked. The tool was not loaded because you asked.",
                "it says the same sentence twice",
            ),
        ] {
            assert_eq!(unusable(draft, &tools), Some(why), "{draft}");
        }
    }

    #[test]
    fn a_drafted_skill_becomes_a_skill_file_when_it_has_a_valid_name_a_description_and_steps() {
        let reply = "```\nname: tables-with-rows\ndescription: Use when asked to create a table and add rows.\n\n\
                     1. Call db_sql with the CREATE TABLE statement alone.\n2. Call db_sql with the INSERT.\n```";
        let text = skill_file(reply).expect("a skill");
        let file = wright_core::SkillFile::parse(&text).unwrap();
        assert_eq!(file.name, "tables-with-rows");
        assert_eq!(file.description, "Use when asked to create a table and add rows.");
        assert!(file.body.starts_with("1. Call db_sql") && file.body.ends_with("the INSERT."), "{}", file.body);
        // Front matter as the model may copy it, and quotes around the values.
        let quoted = "---\nName: \"save-a-value\"\ndescription: 'When a value must be kept.'\n---\nCall set_state.";
        assert_eq!(wright_core::SkillFile::parse(&skill_file(quoted).unwrap()).unwrap().name, "save-a-value");
        for bad in [
            "Just call db_sql twice.",
            "name: Tables With Rows\ndescription: x\n\nsteps",
            "name: tables\n\nsteps without a description",
            "name: tables\ndescription: when\n",
        ] {
            assert_eq!(skill_file(bad), None, "{bad}");
        }
    }
}
