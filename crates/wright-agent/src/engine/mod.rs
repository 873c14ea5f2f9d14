//! The driver: one run of the loop as a sequence of turns over a [`Run`], the state a run owns
//! from one turn to the next. It sequences the phases — prepare the request, ask the model,
//! let the policy judge the reply, run the calls, let the policy judge the turn — and does
//! what the rules decide; the rules themselves live in `policy`.
//!
//! Every way a run ends goes through [`Transcript::finish`] (see `end`).

mod calls;
mod compaction;
mod fence;
mod request;
mod view;

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_core::{
    AgentId, EventBody, EventKind, Hint, NewEvent, Notice, ToolPort, ToolSettings, ToolSpec, transcript_line,
};

use self::fence::Fence;
use self::request::Prepared;
use self::view::ModelView;
use crate::AgentError;
use crate::config::{CHARS_PER_TOKEN, LoopConfig};
use crate::context::{SystemText, system_text};
use crate::dispatch::{CallSite, run_approved};
use crate::policy::{
    Documents, EndView, NextRequest, Policy, Reply, ReplyView, RunFacts, RunView, StartView, repeating_tail,
    result_origin, without_repeats,
};
use crate::ports::{Model, ModelError, ModelReply, RunOutcome, Transcript};

/// Everything a run needs besides the ports.
pub struct RunContext<'a> {
    pub agent: &'a AgentId,
    pub conversation_id: &'a str,
    pub tools: &'a dyn ToolPort,
    pub config: &'a LoopConfig,
    /// The agent's toolsets and how their schemas are sent (read when the run starts).
    pub tool_settings: &'a ToolSettings,
    pub cancel: &'a CancellationToken,
}

/// Runs the loop until the model is done, a call parks, the turn limit is reached, the model
/// fails, or the run is cancelled; each of those ends the run through [`Transcript::finish`].
/// An error means the transcript could not be written: the caller must end the run itself.
pub async fn run(
    model: &dyn Model,
    transcript: &dyn Transcript,
    context: RunContext<'_>,
) -> Result<RunOutcome, AgentError> {
    let mut run = Run::start(model, transcript, context).await?;
    loop {
        if let Some(outcome) = run.turn().await? {
            return Ok(outcome);
        }
    }
}

/// The state of one run.
struct Run<'a> {
    model: &'a dyn Model,
    transcript: &'a dyn Transcript,
    config: &'a LoopConfig,
    cancel: &'a CancellationToken,
    site: CallSite<'a>,
    policy: Policy,
    /// What the model sees. Read once; the run keeps it current with what it appends (the run
    /// owns the conversation, so only answers to its own parked calls are written by others,
    /// and it reloads after those).
    view: ModelView,
    /// The system message, read at the start of a run and again when the conversation is
    /// compacted (seed 002: a mid-conversation edit of the prompt reaches the context then).
    system: SystemText,
    /// The skills the host loaded for this run (`policy::skills`), as they end the system
    /// message; kept so a compaction's fresh system message ends with them too.
    loaded_skills: String,
    /// The settings this run uses: switched to on-demand loading when every schema would not fit.
    settings: ToolSettings,
    /// The request's room in the model's window, in characters, with room for the answer;
    /// `None` when neither the server nor the config says.
    budget_chars: Option<usize>,
    max_output_tokens: Option<u32>,
    facts: RunFacts,
    /// What the next request adds, as the policy decided.
    next: NextRequest,
    /// The marker outside content is fenced with in this run's requests.
    fence: Fence,
}

/// How a model turn came back.
enum Turned {
    /// The reply, and whether it was stopped for repeating itself.
    Reply(ModelReply, bool),
    Ended(RunOutcome),
}

impl<'a> Run<'a> {
    async fn start(
        model: &'a dyn Model,
        transcript: &'a dyn Transcript,
        context: RunContext<'a>,
    ) -> Result<Self, AgentError> {
        let config = context.config;
        let window = model.context_window().await.or(config.context_window);
        // The profile's budget may only narrow the window, never widen it.
        let window = match (window, config.context_budget) {
            (Some(window), Some(budget)) => Some(window.min(budget)),
            (window, budget) => window.or(budget),
        };
        let view = ModelView::load(transcript).await.map_err(stored)?;
        let (system, documents, skills, learned) = system_for(transcript, &view, config).await?;
        let mut run = Self {
            model,
            transcript,
            config,
            cancel: context.cancel,
            site: CallSite {
                tools: context.tools,
                agent: context.agent,
                conversation_id: context.conversation_id,
                max_output_size: config.max_output_size,
                cancel: context.cancel,
            },
            policy: Policy::standard(),
            view,
            system,
            loaded_skills: String::new(),
            settings: context.tool_settings.clone(),
            budget_chars: window
                .map(|tokens| tokens.saturating_sub(config.reserve_output_tokens).saturating_mul(CHARS_PER_TOKEN)),
            max_output_tokens: window.map(|_| u32::try_from(config.reserve_output_tokens).unwrap_or(u32::MAX)),
            facts: RunFacts { documents, skills, learned, ..RunFacts::default() },
            next: NextRequest::default(),
            fence: Fence::random(),
        };
        run.run_approved_calls().await?;
        let all_tools = run.specs().await?;
        let started_by_message = run.view.history.last().is_some_and(|event| event.kind() == EventKind::User);
        let decision = run.policy.start(&StartView { run: run.run_view(&all_tools), started_by_message });
        run.facts.loaded.extend(decision.preload);
        run.facts.loaded.started();
        run.next.require_call = decision.require_call;
        run.loaded_skills = loaded_skills(transcript, &decision.skills, config.preload_skill_tokens).await?;
        run.system.changing = with_skills(&run.system.changing, &run.loaded_skills);
        run.facts.standing_note = decision.standing_note;
        Ok(run)
    }

    fn run_view<'v>(&'v self, all_tools: &'v [ToolSpec]) -> RunView<'v> {
        RunView {
            history: &self.view.history,
            config: self.config,
            settings: &self.settings,
            all_tools,
            facts: &self.facts,
        }
    }

    async fn specs(&self) -> Result<Arc<[ToolSpec]>, AgentError> {
        self.site.tools.specs(self.site.agent).await.map_err(|failure| stored(failure.message))
    }

    /// One turn: `Some` when the run ended.
    async fn turn(&mut self) -> Result<Option<RunOutcome>, AgentError> {
        if self.cancel.is_cancelled() {
            return self.end(RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await.map(Some);
        }
        let all_tools = self.specs().await?;
        let prepared = self.prepare(&all_tools).await?;
        let (reply, provider) = match self.ask(&prepared, &all_tools).await? {
            Turned::Reply(ModelReply { text, tool_calls, data }, stopped_repeating) => {
                let calls = if prepared.tools_enabled { tool_calls } else { Vec::new() };
                (Reply { text, calls, renamed: Vec::new(), stopped_repeating }, data)
            }
            Turned::Ended(outcome) => return Ok(Some(outcome)),
        };
        let as_sent = reply.clone();
        // For an operator asking why a reply left no trace (`RUST_LOG=wright_agent=debug`):
        // dropped replies are never stored.
        tracing::debug!(
            offered = ?prepared.offered.iter().map(|spec| spec.name.as_str()).collect::<Vec<_>>(),
            text = %as_sent.text,
            calls = ?as_sent.calls.iter().map(|call| (call.name.as_str(), &call.arguments)).collect::<Vec<_>>(),
            "model reply"
        );
        let view = ReplyView {
            run: self.run_view(&all_tools),
            reply: &as_sent,
            offered: &prepared.offered,
            withheld: &prepared.withheld,
            tools_enabled: prepared.tools_enabled,
        };
        let (reply, counted, ask_again) = self.policy.reply(reply, &view);
        for counter in counted {
            *self.facts.counts.entry(counter).or_default() += 1;
        }
        if let Some((counter, next)) = ask_again {
            // The reply is dropped: not stored, and the request asked again as the rule said.
            tracing::debug!(?counter, note = ?next.note, "reply dropped, asked again");
            *self.facts.counts.entry(counter).or_default() += 1;
            self.next = next;
            return Ok(None);
        }
        if reply.calls.is_empty() {
            // The person always gets an answer to read.
            let text = self
                .policy
                .end(&EndView { run: self.run_view(&all_tools), text: &reply.text })
                .unwrap_or_else(|| reply.text.clone());
            let assistant = NewEvent::new(text.clone(), EventBody::Assistant { text, provider });
            // The answer and the status it leaves are one write.
            if !prepared.turns_left {
                let notice = NewEvent::notice(Notice::TurnLimit { max_tool_turns: self.config.max_tool_turns });
                return self.end(RunOutcome::TurnLimit, vec![assistant, notice]).await.map(Some);
            }
            return self.end(RunOutcome::Completed, vec![assistant]).await.map(Some);
        }
        let assistant = NewEvent::new(reply.text.clone(), EventBody::Assistant { text: reply.text.clone(), provider });
        self.store_calls(assistant, &reply).await?;
        self.run_calls(&reply, &prepared, &all_tools).await
    }

    /// Asks the model. The reply is watched as it streams: a model that has fallen into
    /// repeating itself is stopped (its own token, under the run's) and keeps what it wrote up
    /// to the repeats.
    async fn ask(&self, prepared: &Prepared, all_tools: &[ToolSpec]) -> Result<Turned, AgentError> {
        let request_cancel = self.cancel.child_token();
        let streamed = std::sync::Mutex::new(String::new());
        let watch = |text: &str| {
            self.transcript.text_delta(text);
            let mut so_far = streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            so_far.push_str(text);
            if repeating_tail(&so_far).is_some() {
                request_cancel.cancel();
            }
        };
        let mut history = self.view.as_sent();
        self.fenced(&mut history, all_tools);
        let outcome = self.model.reply(prepared.request(&history), &watch, &request_cancel).await;
        let so_far = std::mem::take(&mut *streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        let stopped_repeating = request_cancel.is_cancelled() && !self.cancel.is_cancelled();
        Ok(match outcome {
            Ok(mut reply) if stopped_repeating => {
                reply.text = without_repeats(&so_far);
                Turned::Reply(reply, true)
            }
            Ok(reply) => Turned::Reply(reply, false),
            Err(ModelError::Cancelled) if stopped_repeating => {
                let text = without_repeats(&so_far);
                Turned::Reply(ModelReply { text, tool_calls: Vec::new(), data: Value::Null }, true)
            }
            Err(ModelError::Cancelled) => {
                Turned::Ended(self.end(RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await?)
            }
            Err(error) => {
                // A request Wright held back says so itself (which limit, how to raise it).
                let message = match error {
                    ModelError::NotSent(message) => message,
                    error => AgentError::from(error).to_string(),
                };
                let notice = NewEvent::notice(Notice::Error { message: message.clone() });
                Turned::Ended(self.end(RunOutcome::Failed { message }, vec![notice]).await?)
            }
        })
    }

    /// Stores the assistant's reply with its calls, before any of them runs.
    async fn store_calls(&mut self, assistant: NewEvent, reply: &Reply) -> Result<(), AgentError> {
        let mut new_events = vec![assistant];
        for call in &reply.calls {
            let arguments = match &call.arguments {
                Ok(arguments) => arguments.clone(),
                Err(raw) => Value::String(raw.clone()),
            };
            let content = format!("{}({})", call.name, transcript_line(&arguments));
            new_events.push(NewEvent::new(
                content,
                EventBody::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments,
                    provider: call.data.clone(),
                },
            ));
        }
        self.view.extend(self.transcript.append(new_events).await.map_err(stored)?);
        Ok(())
    }

    /// Runs the calls the person approved since the run last stopped, storing each result, so
    /// the model sees them answered. A cancel stops here; the run's end closes what is left.
    async fn run_approved_calls(&mut self) -> Result<(), AgentError> {
        for approved in self.transcript.approved_calls().await.map_err(stored)? {
            if self.cancel.is_cancelled() {
                return Ok(());
            }
            // The stored call keeps the model's arguments (events are append-only): when the
            // person edited them, the result says what really ran, for the model and the canvas.
            let edited = self.view.history.iter().any(|event| {
                matches!(&event.body, EventBody::ToolCall { id, arguments, .. }
                    if *id == approved.tool_call_id && *arguments != approved.arguments)
            });
            let ran_with = edited.then(|| approved.arguments.clone());
            let arguments = approved.arguments.clone();
            let mut outcome =
                run_approved(&self.site, &approved.tool_call_id, &approved.tool_name, approved.arguments).await;
            if let Some(arguments) = ran_with {
                outcome.hints.push(Hint::ArgumentsEditedByPerson(arguments));
            }
            let success = outcome.success;
            let output = outcome.into_output();
            let specs = self.specs().await?;
            let spec = specs.iter().find(|spec| spec.name == approved.tool_name);
            let outside_origin = result_origin(spec, Some(&arguments), &output);
            let result = NewEvent::new(
                transcript_line(&output),
                EventBody::ToolResult {
                    tool_call_id: approved.tool_call_id,
                    name: approved.tool_name,
                    output,
                    success,
                    outside_origin,
                },
            );
            self.view.extend(self.transcript.append(vec![result]).await.map_err(stored)?);
        }
        Ok(())
    }

    /// Fences the outside content of `events` (as sent), unless switched off.
    fn fenced(&self, events: &mut [wright_core::Event], all_tools: &[ToolSpec]) {
        if self.config.untrusted.fence_outside_content {
            self.fence.apply(events, all_tools);
        }
    }

    /// Ends the run with `outcome` (anything but parking, which may continue).
    async fn end(&self, outcome: RunOutcome, closing: Vec<NewEvent>) -> Result<RunOutcome, AgentError> {
        self.transcript.finish(&outcome, closing).await.map_err(stored)?;
        Ok(outcome)
    }
}

fn stored(error: String) -> AgentError {
    AgentError::Transcript(error)
}

/// The skills the host loads into a run's system message (see [`fit_skills`]); a name whose
/// skill is gone or switched off is passed over.
async fn loaded_skills(transcript: &dyn Transcript, names: &[String], tokens: usize) -> Result<String, AgentError> {
    if tokens == 0 {
        return Ok(String::new());
    }
    let mut bodies = Vec::new();
    for name in names {
        if let Some(body) = transcript.skill_body(name).await.map_err(stored)? {
            bodies.push((name.clone(), body));
        }
    }
    Ok(fit_skills(&bodies, tokens))
}

/// Each skill's instructions under its name, in order, within `tokens` in all; the first that
/// does not fit whole is cut (if a useful part fits) with a note that `load_skill` returns it
/// whole, and the rest are left out.
fn fit_skills(bodies: &[(String, String)], tokens: usize) -> String {
    let mut room = tokens.saturating_mul(CHARS_PER_TOKEN);
    let mut section = String::new();
    for (name, body) in bodies {
        let heading = format!("\n\n## Skill {name} (loaded for this request: follow it)\n");
        let body = body.trim();
        let whole = heading.len() + body.len();
        if whole <= room {
            section.push_str(&heading);
            section.push_str(body);
            room -= whole;
            continue;
        }
        let note = format!("\n[cut here; load_skill {name} returns it whole]");
        // A cut below a few lines would mislead more than help.
        if room > heading.len() + note.len() + MIN_SKILL_CUT_CHARS {
            let mut end = room - heading.len() - note.len();
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            section.push_str(&heading);
            section.push_str(&body[..end]);
            section.push_str(&note);
        }
        break;
    }
    section
}

/// The least of a skill worth loading cut, in characters.
const MIN_SKILL_CUT_CHARS: usize = 200;

/// The changing part of the system message with the loaded skills at its end.
fn with_skills(changing: &str, loaded_skills: &str) -> String {
    format!("{changing}{loaded_skills}").trim().to_owned()
}

/// The system message, read fresh from the store, with the view's compaction summary.
/// Also the agent's prompt and notes as they are now, for the rules that judge edits of them,
/// its enabled skills, and its live learned items (for the rule that says those that fit).
async fn system_for(
    transcript: &dyn Transcript,
    view: &ModelView,
    config: &LoopConfig,
) -> Result<(SystemText, Documents, Vec<crate::context::ContextSkill>, Vec<crate::LearnedText>), AgentError> {
    let mut parts = transcript.system_parts().await.map_err(stored)?;
    parts.earlier_summary = view.summary.clone();
    if !config.list_agent_data {
        parts.state_keys.clear();
        parts.database_summary.clear();
        parts.database_notes.clear();
    }
    let documents = Documents { prompt: parts.prompt.clone(), notes: parts.notes.clone() };
    let skills = parts.skills.clone();
    let learned = std::mem::take(&mut parts.learned);
    Ok((system_text(&parts), documents, skills, learned))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod scripted_tools;
