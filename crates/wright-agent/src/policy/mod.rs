//! The loop's policy: every behaviour that shapes a request or reacts to a reply, as a named
//! rule. A rule is a type with one pure function from a read-only view (the history as the
//! model sees it, the run's facts, the settings) to a decision; the driver (`engine`) only
//! sequences the phases and applies what the rules decide. A new behaviour — a small-model
//! fix, a skill, a budget, an untrusted-content rule — is a new rule in [`Policy::standard`],
//! not a new branch in the driver.
//!
//! The phases, in the order of a turn:
//! - [`StartRule`]: once, when a run starts (which schemas to send whole, whether the first
//!   reply must call a tool);
//! - [`ReplyRule`]: on each model reply, in order; a rule may amend the reply (recovered
//!   calls, a corrected name) or drop it and ask again with a note;
//! - [`CallRule`]: before each call runs; a rule may answer it without running it;
//! - [`ResultRule`]: after a call ran; a rule may add hints to its result;
//! - [`TurnRule`]: after a turn's calls; a rule may withhold tools from the next request or
//!   add a note to it;
//! - [`EndRule`]: when a reply without calls ends the run; a rule may replace its text.
//!
//! Invariant: rules never do IO and never mutate the run; the facts they read
//! ([`RunFacts`]) are kept by the driver.

mod answer_now;
mod arguments;
mod echo;
mod learned;
mod named;
mod names;
mod placeholders;
mod preselection;
mod repeats;
mod repetition;
mod resample;
mod silence;
mod skills;
mod steps;
mod text_calls;
mod unanswered;
mod untrusted;
mod withhold;

use std::collections::{BTreeMap, BTreeSet};

use wright_core::{Event, EventBody, Hint, ToolOutcome, ToolSettings, ToolSpec};

use crate::config::LoopConfig;
use crate::ports::ModelToolCall;
use crate::surface::Loaded;

pub(crate) use answer_now::ANSWER_NOTE;
pub use echo::ECHO_NOTE;
pub use learned::{LearnedText, choose_learned, content_words, error_fix_text, item_tokens};
pub use named::mentions;
pub(crate) use names::name_note;
pub(crate) use repeats::RecentCalls;
pub(crate) use repetition::{repeating_tail, without_repeats};
pub(crate) use untrusted::{origin_of_call, result_origin};

/// What the run has done so far that rules read: kept by the driver, one turn to the next.
#[derive(Debug, Default)]
pub(crate) struct RunFacts {
    /// Model turns that made tool calls.
    pub(crate) tool_turns: usize,
    /// The calls since the last one that succeeded, with their results.
    pub(crate) recent_calls: RecentCalls,
    /// The tools loaded in this run (preselected, or by `load_tools`), in order; their
    /// schemas are sent until it ends.
    pub(crate) loaded: Loaded,
    /// The one tool every call of the last turns named, and in how many turns in a row.
    pub(crate) streak: Option<(String, usize)>,
    /// How often each counted decision was taken in this run.
    pub(crate) counts: BTreeMap<Counter, usize>,
    /// The agent's prompt and notes as the run read them.
    pub(crate) documents: Documents,
    /// The agent's enabled skills as the run read them.
    pub(crate) skills: Vec<crate::context::ContextSkill>,
    /// The agent's live learned items as the run read them.
    pub(crate) learned: Vec<LearnedText>,
    /// Said after the history in every request of the run (the start rules' standing notes).
    pub(crate) standing_note: Option<String>,
}

/// The agent's versioned documents as a run read them (for rules that judge edits of them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Documents {
    pub(crate) prompt: String,
    pub(crate) notes: String,
}

impl RunFacts {
    pub(crate) fn count(&self, counter: Counter) -> usize {
        self.counts.get(&counter).copied().unwrap_or(0)
    }
}

/// What rules count over a run, to take a decision at most so many times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Counter {
    /// Replies dropped for parroting a result.
    EchoRetries,
    /// Replies dropped for repeating failed calls, asked again at a higher temperature.
    Resamples,
    /// Requests for the answer without tools (once a run).
    AnswerRequests,
    /// Replies that only called tools the request withheld.
    StuckReplies,
    /// Turns whose calls all only read, for a request that asks for a change, answered by
    /// requiring a call of the tool that makes it (once a run).
    ReadOnlyNudges,
    /// Replies without a call after a fixable failure, asked again with a call required (once
    /// a run).
    ErrorRetries,
}

/// What every rule may read.
#[derive(Clone, Copy)]
pub(crate) struct RunView<'a> {
    /// The conversation as the model sees it (after the latest compaction).
    pub(crate) history: &'a [Event],
    pub(crate) config: &'a LoopConfig,
    /// The settings this run uses (loading may have switched to on-demand to fit the window).
    pub(crate) settings: &'a ToolSettings,
    /// Every tool of the agent, enabled or not.
    pub(crate) all_tools: &'a [ToolSpec],
    pub(crate) facts: &'a RunFacts,
}

impl<'a> RunView<'a> {
    /// The text of the person's last message.
    pub(crate) fn last_request(&self) -> Option<&'a str> {
        last_request(self.history)
    }
}

/// The text of the person's last message in `history`.
pub(crate) fn last_request(history: &[Event]) -> Option<&str> {
    history.iter().rev().find_map(|event| match &event.body {
        EventBody::User { text, .. } => Some(text.as_str()),
        _ => None,
    })
}

/// What the next request adds to what it would carry anyway.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct NextRequest {
    /// A note said after the history (never in the system message: that stays cached).
    pub(crate) note: Option<String>,
    /// Sampling temperature instead of the configured one.
    pub(crate) temperature: Option<f32>,
    /// Ask for the answer: no tools, and [`ANSWER_NOTE`].
    pub(crate) answer_now: bool,
    /// Tools not offered (their note is added by the driver).
    pub(crate) withhold: BTreeSet<String>,
    /// The reply must call a tool.
    pub(crate) require_call: bool,
}

// ---- start ----

pub(crate) struct StartView<'a> {
    pub(crate) run: RunView<'a>,
    /// The run was started by the person's message (not by an answer or an approval).
    pub(crate) started_by_message: bool,
}

#[derive(Debug, Default, PartialEq)]
pub(crate) struct StartDecision {
    /// Tools sent whole from the first request.
    pub(crate) preload: Vec<String>,
    pub(crate) require_call: bool,
    /// Skills whose instructions the host puts in the run's system message, in this order.
    pub(crate) skills: Vec<String>,
    /// Said after the history in every request of the run.
    pub(crate) standing_note: Option<String>,
}

pub(crate) trait StartRule: Send + Sync {
    fn decide(&self, view: &StartView<'_>) -> StartDecision;
}

// ---- reply ----

/// One model reply, as the rules see and amend it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Reply {
    pub(crate) text: String,
    pub(crate) calls: Vec<ModelToolCall>,
    /// `(call id, name the model used)` of calls renamed to the tool it meant.
    pub(crate) renamed: Vec<(String, String)>,
    /// The model fell into repeating itself and was stopped; `text` keeps one copy.
    pub(crate) stopped_repeating: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct ReplyView<'a> {
    pub(crate) run: RunView<'a>,
    pub(crate) reply: &'a Reply,
    /// The tools this request offered.
    pub(crate) offered: &'a [ToolSpec],
    /// The tools this request withheld.
    pub(crate) withheld: &'a BTreeSet<String>,
    /// Whether this request offered tools at all.
    pub(crate) tools_enabled: bool,
}

#[derive(Debug, PartialEq)]
pub(crate) enum ReplyDecision {
    Pass,
    /// Go on with this reply instead.
    Amend(Reply),
    /// Note it happened, and go on.
    Count(Counter),
    /// Drop the reply (it is not stored) and ask again.
    AskAgain {
        counter: Counter,
        next: NextRequest,
    },
}

pub(crate) trait ReplyRule: Send + Sync {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision;
}

// ---- calls ----

pub(crate) struct CallView<'a> {
    pub(crate) run: RunView<'a>,
    pub(crate) call: &'a ModelToolCall,
    /// The spec of the tool called, if it exists.
    pub(crate) spec: Option<&'a ToolSpec>,
    pub(crate) withheld: &'a BTreeSet<String>,
}

#[derive(Debug, PartialEq)]
pub(crate) enum CallDecision {
    Run,
    /// Not run: answered by the host (a refusal, or the loop's own meta-tool).
    Answered(ToolOutcome),
    /// Not run: answered from an earlier call of this run.
    Repeat(ToolOutcome),
    /// Not run yet: it waits for the person's approval, whatever its policy says, for this
    /// reason (shown on the approval card).
    Ask {
        reason: String,
    },
}

pub(crate) trait CallRule: Send + Sync {
    fn decide(&self, view: &CallView<'_>) -> CallDecision;
}

// ---- results ----

pub(crate) struct ResultView<'a> {
    pub(crate) run: RunView<'a>,
    /// The tool called.
    pub(crate) tool: &'a str,
    pub(crate) outcome: &'a ToolOutcome,
    /// The tool was called from the catalogue before it was loaded.
    pub(crate) unloaded: Option<&'a ToolSpec>,
}

pub(crate) trait ResultRule: Send + Sync {
    fn hints(&self, view: &ResultView<'_>) -> Vec<Hint>;
}

// ---- turns ----

pub(crate) struct TurnView<'a> {
    pub(crate) run: RunView<'a>,
    /// The tools of this turn's calls that were answered as repeats of calls that worked.
    pub(crate) repeated: &'a BTreeSet<String>,
    /// Whether every call of the turn was such a repeat.
    pub(crate) only_repeats: bool,
}

#[derive(Debug, Default, PartialEq)]
pub(crate) struct TurnDecision {
    pub(crate) withhold: BTreeSet<String>,
    /// The streak of one tool ends here (it was withheld for it).
    pub(crate) end_streak: bool,
    /// A note for the next request (said after the history).
    pub(crate) note: Option<String>,
    /// Tools to load: their schemas are sent from the next request on.
    pub(crate) load: Vec<String>,
    /// The next reply must call a tool.
    pub(crate) require_call: bool,
    /// Ask for the answer next (no calls taken).
    pub(crate) answer_now: bool,
    /// What the rule did that it counts, to do it at most so many times a run.
    pub(crate) counted: Vec<Counter>,
}

pub(crate) trait TurnRule: Send + Sync {
    fn decide(&self, view: &TurnView<'_>) -> TurnDecision;
}

// ---- end ----

/// The run is about to end with the model's last reply, without calls.
pub(crate) struct EndView<'a> {
    pub(crate) run: RunView<'a>,
    /// The reply's text, as it would be stored.
    pub(crate) text: &'a str,
}

/// A rule on the answer a run ends with: `Some` replaces the text stored and shown.
pub(crate) trait EndRule: Send + Sync {
    fn answer(&self, view: &EndView<'_>) -> Option<String>;
}

/// The rules of a run, in the order they apply within each phase.
pub(crate) struct Policy {
    pub(crate) start: Vec<Box<dyn StartRule>>,
    pub(crate) reply: Vec<Box<dyn ReplyRule>>,
    pub(crate) call: Vec<Box<dyn CallRule>>,
    pub(crate) result: Vec<Box<dyn ResultRule>>,
    pub(crate) turn: Vec<Box<dyn TurnRule>>,
    pub(crate) end: Vec<Box<dyn EndRule>>,
}

impl Policy {
    /// Wright's rules; each reads its own switch in [`LoopConfig`].
    pub(crate) fn standard() -> Self {
        Self {
            start: vec![
                Box::new(preselection::Preselect),
                Box::new(preselection::RequireFirstCall),
                Box::new(skills::PreloadSkills),
                Box::new(learned::ApplyLearned),
            ],
            reply: vec![
                Box::new(repetition::AskAgainAfterLoop),
                Box::new(text_calls::RecoverTextCalls),
                Box::new(echo::AskAgainAfterEcho),
                Box::new(echo::DropParrotedText),
                Box::new(names::ResolveInventedNames),
                Box::new(resample::ResampleFailedRepeats),
                Box::new(unanswered::RetryAfterError),
                Box::new(answer_now::AnswerWhenStuck),
                Box::new(answer_now::AnswerAfterEmptyReply),
            ],
            call: vec![
                Box::new(names::AnswerUnknownTool),
                Box::new(withhold::RefuseSwitchedOff),
                Box::new(withhold::RefuseWithheld),
                Box::new(arguments::RefuseSchemaText),
                Box::new(placeholders::RefusePlaceholders),
                Box::new(named::UseTheNamedTool),
                Box::new(arguments::GuardDocumentReplace),
                Box::new(repeats::AnswerRepeats),
                Box::new(untrusted::AskAfterOutsideContent),
            ],
            result: vec![
                Box::new(names::SchemaOfUnloadedTool),
                Box::new(names::ToolsForUnknownName),
                Box::new(learned::SayLearnedFix),
            ],
            turn: vec![
                Box::new(withhold::WithholdRepeated),
                Box::new(withhold::WithholdStreak),
                Box::new(steps::NameUndoneSteps),
            ],
            end: vec![Box::new(silence::AnswerFromWhatHappened)],
        }
    }

    pub(crate) fn start(&self, view: &StartView<'_>) -> StartDecision {
        let mut decision = StartDecision::default();
        for rule in &self.start {
            let StartDecision { preload, require_call, skills, standing_note } = rule.decide(view);
            decision.preload.extend(preload);
            decision.require_call |= require_call;
            decision.skills.extend(skills);
            decision.standing_note = match (decision.standing_note.take(), standing_note) {
                (Some(first), Some(second)) => Some(format!("{first}\n\n{second}")),
                (first, second) => first.or(second),
            };
        }
        decision
    }

    /// Runs the reply rules in order: amendments apply for the rules after them; the first
    /// that asks again ends the phase. Returns the reply to go on with, the counts to add,
    /// and the request to ask again with, if one did.
    /// `view` is the reply's view; each rule sees the reply as amended by the rules before it.
    pub(crate) fn reply(
        &self,
        mut reply: Reply,
        view: &ReplyView<'_>,
    ) -> (Reply, Vec<Counter>, Option<(Counter, NextRequest)>) {
        let mut counted = Vec::new();
        for rule in &self.reply {
            let view = ReplyView { reply: &reply, ..*view };
            match rule.decide(&view) {
                ReplyDecision::Pass => {}
                ReplyDecision::Amend(amended) => reply = amended,
                ReplyDecision::Count(counter) => counted.push(counter),
                ReplyDecision::AskAgain { counter, next } => return (reply, counted, Some((counter, next))),
            }
        }
        (reply, counted, None)
    }

    /// The first rule that does not let the call run decides.
    pub(crate) fn call(&self, view: &CallView<'_>) -> CallDecision {
        self.call
            .iter()
            .map(|rule| rule.decide(view))
            .find(|decision| *decision != CallDecision::Run)
            .unwrap_or(CallDecision::Run)
    }

    pub(crate) fn result_hints(&self, view: &ResultView<'_>) -> Vec<Hint> {
        self.result.iter().flat_map(|rule| rule.hints(view)).collect()
    }

    /// The first rule that replaces the last reply's text decides.
    pub(crate) fn end(&self, view: &EndView<'_>) -> Option<String> {
        self.end.iter().find_map(|rule| rule.answer(view))
    }

    pub(crate) fn turn(&self, view: &TurnView<'_>) -> TurnDecision {
        let mut decision = TurnDecision::default();
        for rule in &self.turn {
            let TurnDecision { withhold, end_streak, note, load, require_call, answer_now, counted } =
                rule.decide(view);
            decision.answer_now |= answer_now;
            decision.counted.extend(counted);
            decision.withhold.extend(withhold);
            decision.end_streak |= end_streak;
            decision.load.extend(load);
            decision.require_call |= require_call;
            decision.note = match (decision.note.take(), note) {
                (Some(first), Some(second)) => Some(format!("{first}\n\n{second}")),
                (first, second) => first.or(second),
            };
        }
        decision
    }
}

#[cfg(test)]
pub(crate) mod testing;
