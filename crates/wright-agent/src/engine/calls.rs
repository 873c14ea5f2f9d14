//! Running one turn's calls, in the order the model gave them: the policy may answer a call
//! without running it; the others are dispatched through the tools port, and the policy adds
//! its hints to their results. Then the turn's end: the policy decides what the next request
//! withholds, and a parked call ends the run (or it goes on, when it was answered meanwhile).

use std::collections::BTreeSet;

use wright_core::{EventBody, NewEvent, Notice, ToolLoading, ToolOutcome, ToolSpec, transcript_line};

use super::view::ModelView;
use super::{Run, stored};
use crate::AgentError;
use crate::dispatch::{Dispatched, dispatch, dispatch_asking};
use crate::policy::{CallDecision, CallView, Reply, ResultView, TurnView, name_note, result_origin};
use crate::ports::{Finish, ModelToolCall, ParkedCall, RunOutcome};
use crate::surface::{LOAD_TOOLS, load};

use super::request::Prepared;

/// What a turn's calls did, for the turn rules.
#[derive(Default)]
struct Ran {
    /// The tools of calls answered as repeats of calls that worked.
    repeated: BTreeSet<String>,
    /// Whether every call was such a repeat.
    only_repeats: bool,
}

impl Run<'_> {
    /// Runs the reply's calls and ends the turn: `Some` when the run ended.
    pub(super) async fn run_calls(
        &mut self,
        reply: &Reply,
        prepared: &Prepared,
        all_tools: &[ToolSpec],
    ) -> Result<Option<RunOutcome>, AgentError> {
        let mut parked = false;
        // The turn's last result is held back when the turn parks, to be stored with the
        // status change.
        let mut last_result = None;
        let mut ran = Ran { only_repeats: true, ..Ran::default() };
        for (index, call) in reply.calls.iter().enumerate() {
            if self.cancel.is_cancelled() {
                // The calls not run yet get their "cancelled" results in the closing write.
                return self.end(RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await.map(Some);
            }
            let dispatched = self.handle_call(call, prepared, all_tools, &mut ran).await;
            match dispatched {
                Dispatched::Finished(mut outcome) => {
                    outcome.hints.extend(name_note(reply, &call.id, &call.name));
                    let success = outcome.success;
                    let output = outcome.into_output();
                    let spec = all_tools.iter().find(|spec| spec.name == call.name);
                    let outside_origin = result_origin(spec, call.arguments.as_ref().ok(), &output);
                    let result = NewEvent::new(
                        transcript_line(&output),
                        EventBody::ToolResult {
                            tool_call_id: call.id.clone(),
                            name: call.name.clone(),
                            output,
                            success,
                            outside_origin,
                        },
                    );
                    if index + 1 == reply.calls.len() && parked {
                        last_result = Some(result);
                    } else {
                        self.view.extend(self.transcript.append(vec![result]).await.map_err(stored)?);
                    }
                }
                Dispatched::Park { arguments, render, kind } => {
                    let parked_call = ParkedCall {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        kind,
                        arguments,
                        render,
                    };
                    self.transcript.park(&parked_call).await.map_err(stored)?;
                    parked = true;
                }
            }
        }
        // The turn's rules see the tools as the calls left them: a call may have made one
        // ("create a tool greet, then use it for Ada").
        let after_calls = self.specs().await?;
        self.end_turn(reply, &ran, &after_calls);
        if self.cancel.is_cancelled() {
            let mut closing: Vec<NewEvent> = last_result.into_iter().collect();
            closing.push(NewEvent::notice(Notice::Cancelled));
            return self.end(RunOutcome::Cancelled, closing).await.map(Some);
        }
        if parked {
            let finish = self.transcript.finish(&RunOutcome::Parked, last_result.into_iter().collect());
            match finish.await.map_err(stored)? {
                Finish::Ended => return Ok(Some(RunOutcome::Parked)),
                // Answered during the turn: the answers were stored by another writer.
                Finish::Continue => {
                    self.view = ModelView::load(self.transcript).await.map_err(stored)?;
                    self.run_approved_calls().await?;
                }
            }
        }
        Ok(None)
    }

    /// Lets the policy decide about one call, and runs it when it may run: through the tools
    /// port, with the policy's hints added to its result, and remembered for repeats.
    async fn handle_call(
        &mut self,
        call: &ModelToolCall,
        prepared: &Prepared,
        all_tools: &[ToolSpec],
        ran: &mut Ran,
    ) -> Dispatched {
        let spec = all_tools.iter().find(|spec| spec.name == call.name);
        let on_demand = self.settings.loading == ToolLoading::OnDemand;
        let decision = match &call.arguments {
            // The loop's own meta-tool.
            Ok(arguments) if on_demand && call.name == LOAD_TOOLS => {
                let (output, success) = load(arguments, all_tools, &self.settings, &mut self.facts.loaded);
                CallDecision::Answered(ToolOutcome::answered(output, success))
            }
            _ => {
                self.policy.call(&CallView { run: self.run_view(all_tools), call, spec, withheld: &prepared.withheld })
            }
        };
        // A tool called before it was loaded (small models call from the catalogue, and
        // lenient servers let them) is loaded now.
        let unloaded = (on_demand && !prepared.offered.iter().any(|offered| offered.name == call.name))
            .then(|| spec.filter(|spec| self.settings.enables(spec.toolset)))
            .flatten();
        match decision {
            CallDecision::Answered(outcome) => {
                ran.only_repeats = false;
                // A refusal is remembered like a call that ran and failed: the same call sent
                // again is a repeat of a failed call, asked again hotter within the run's
                // resamples (the real 0.5B sent one refused `edit_learned_notes` eight times at
                // temperature 0).
                if !outcome.success
                    && call.name != LOAD_TOOLS
                    && let Ok(arguments) = &call.arguments
                {
                    self.facts.recent_calls.record(&call.name, arguments, &outcome.clone().into_output(), false);
                }
                Dispatched::Finished(outcome)
            }
            // Only a repeat of a call that worked is withheld: one that failed needs
            // fixing, with the tool still offered.
            CallDecision::Repeat(outcome) => {
                if outcome.success {
                    ran.repeated.insert(call.name.clone());
                } else {
                    ran.only_repeats = false;
                }
                Dispatched::Finished(outcome)
            }
            CallDecision::Ask { reason } => {
                ran.only_repeats = false;
                dispatch_asking(&self.site, call, &reason).await
            }
            CallDecision::Run => {
                ran.only_repeats = false;
                let mut dispatched = dispatch(&self.site, call, spec.is_some_and(|spec| spec.pauses.is_some())).await;
                if let Some(spec) = unloaded {
                    self.facts.loaded.insert(spec.name.clone());
                }
                if let Dispatched::Finished(outcome) = &mut dispatched {
                    let hints = self.policy.result_hints(&ResultView {
                        run: self.run_view(all_tools),
                        tool: &call.name,
                        outcome,
                        unloaded,
                    });
                    outcome.hints.extend(hints);
                    if let Ok(arguments) = &call.arguments {
                        let output = outcome.clone().into_output();
                        self.facts.recent_calls.record(&call.name, arguments, &output, outcome.success);
                    }
                }
                dispatched
            }
        }
    }

    /// Counts the turn, follows the streak of one tool, and lets the turn rules decide what
    /// the next request withholds.
    fn end_turn(&mut self, reply: &Reply, ran: &Ran, all_tools: &[ToolSpec]) {
        self.facts.tool_turns += 1;
        let first = &reply.calls[0].name;
        self.facts.streak = match self.facts.streak.take() {
            _ if reply.calls.iter().any(|call| call.name != *first) => None,
            Some((name, turns)) if name == *first => Some((name, turns + 1)),
            _ => Some((first.clone(), 1)),
        };
        let decision = self.policy.turn(&TurnView {
            run: self.run_view(all_tools),
            repeated: &ran.repeated,
            only_repeats: ran.only_repeats,
        });
        if decision.end_streak {
            self.facts.streak = None;
        }
        self.next.withhold = decision.withhold;
        self.next.note = decision.note;
        self.next.require_call = decision.require_call;
        self.next.answer_now = decision.answer_now;
        self.facts.loaded.extend(decision.load);
        for counter in decision.counted {
            *self.facts.counts.entry(counter).or_default() += 1;
        }
    }
}
