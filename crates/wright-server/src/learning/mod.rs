//! Learning from experience, proven by replay (issue 31).
//!
//! - The person rates answers ([`rate`]) and turns conversations into cases ([`create_case`]);
//!   a case made from a conversation is judged on the live data at once, which sets that run's
//!   outcome (source `check`).
//! - A learning round ([`start_round`], in the background; `wright learn`; nightly when the
//!   person turned it on) gathers candidates from recent runs (`gather`), replays the
//!   held-out cases — those no candidate of the round was learned from — without any candidate
//!   and with each (`replay`, in a scratch copy of the agent's data; with a candidate, only what
//!   can change its decision: the failing cases first, then the passing ones until one breaks),
//!   and accepts a candidate only if held-out passes rise, no case that passed fails, and it
//!   fits the token budget.
//!   An accepted item goes live as a new version of the item, or waits for the person's
//!   approval when the agent's settings say so or when it was learned from a run whose
//!   context held outside content.
//! - Live items enter requests through the loop's policy (wright-agent `policy/learned.rs`);
//!   their counters (`domain/runs.rs`) roll them back when they show harm.

mod gather;
pub(crate) mod replay;

use std::collections::BTreeSet;
use std::time::Duration;

use wright_agent::{LearnedText, choose_learned, item_tokens};
use wright_core::{
    AgentId, CandidateDecision, CaseCheck, ItemAuthor, ItemStatus, LearnedKind, Outcome, OutcomeSource, Rating,
    ReplayPhase, RoundStatus, RoundTrigger,
};
use wright_store::{Case, LearnedItem, NewRunOutcome, Replay, Round, RunOutcomeRecord, RunRef};

use crate::AppState;
use crate::domain::DomainError;

/// Stores the person's rating of the run that produced the answer at `seq` (the latest run
/// when `None`), which becomes the run's outcome; items the run carried are rolled back when
/// their counters now show harm.
pub async fn rate(
    state: &AppState,
    conversation_id: &str,
    seq: Option<i64>,
    rating: Rating,
    comment: Option<&str>,
) -> Result<RunOutcomeRecord, DomainError> {
    let conversation = state.store.conversation(conversation_id).await?;
    let agent = AgentId::parse(&conversation.agent_id)?;
    let Some(run) = state.store.run_at(conversation_id, seq).await? else {
        return Err(DomainError::Invalid("no finished run of this conversation to rate yet".into()));
    };
    if let Some(comment) = comment
        && comment.len() > 4000
    {
        return Err(DomainError::Invalid("a comment is at most 4000 bytes".into()));
    }
    let reference = RunRef { conversation_id: conversation_id.to_owned(), user_seq: run.user_seq };
    state.store.rate_run(&reference, rating, comment).await?;
    state.runs.roll_back_harmful(&agent, &reference).await;
    state
        .store
        .run_at(conversation_id, Some(run.user_seq))
        .await?
        .ok_or_else(|| DomainError::Internal("the rated run disappeared".into()))
}

/// Where a case's message comes from.
pub enum CaseSource {
    /// The first message of this conversation; the check is judged on the live data now and
    /// becomes the outcome of that conversation's first run.
    Conversation(String),
    Message(String),
}

pub async fn create_case(
    state: &AppState,
    agent: &AgentId,
    source: CaseSource,
    check: &CaseCheck,
) -> Result<Case, DomainError> {
    match source {
        CaseSource::Message(message) => Ok(state.store.create_case(agent, &message, check, None).await?),
        CaseSource::Conversation(conversation_id) => {
            let conversation = state.store.conversation(&conversation_id).await?;
            if conversation.agent_id != agent.as_str() {
                return Err(DomainError::Invalid("the conversation belongs to another agent".into()));
            }
            let events = state.store.events_after(&conversation_id, 0).await?;
            let Some((seq, message)) = events.iter().find_map(|stored| match &stored.event.body {
                wright_core::EventBody::User { text, .. } => Some((stored.event.seq, text.clone())),
                _ => None,
            }) else {
                return Err(DomainError::Invalid("the conversation has no message from the person yet".into()));
            };
            let case = state.store.create_case(agent, &message, check, Some(&conversation_id)).await?;
            let verdict =
                replay::judge(&state.store, state.tools.services(), agent, Some(&conversation_id), check).await;
            let outcome = if verdict.passed { Outcome::Success } else { Outcome::Failure };
            let run = RunRef { conversation_id, user_seq: seq };
            if !state.store.set_run_outcome(&run, outcome, OutcomeSource::Check).await? {
                // The run has not ended: it waits for the person (a question, an approval). The
                // check is judged on what it did so far and recorded now; its end keeps it.
                let specs = state.tools.specs(agent).await.map_err(|error| DomainError::Internal(error.to_string()))?;
                let run_events: Vec<&wright_core::Event> =
                    events.iter().map(|stored| &stored.event).filter(|event| event.seq >= seq).collect();
                state
                    .store
                    .record_run_outcome(&NewRunOutcome {
                        agent,
                        end_seq: run_events.last().map_or(seq, |event| event.seq),
                        read_outside: crate::domain::outcomes::read_outside(&run_events, &specs),
                        run,
                        outcome,
                        source: OutcomeSource::Check,
                        request: &message,
                    })
                    .await?;
            }
            Ok(case)
        }
    }
}

/// Starts a learning round in the background and returns it as started.
pub async fn start_round(state: &AppState, agent: &AgentId, trigger: RoundTrigger) -> Result<Round, DomainError> {
    let round = state.store.start_round(agent, trigger).await?;
    let background = state.clone();
    let agent = agent.clone();
    let id = round.id;
    tokio::spawn(async move {
        if let Err(error) = run_round(&background, &agent, id).await {
            tracing::warn!(%error, round = id, "a learning round failed");
            let message = format!("{error:#}");
            if let Err(error) = background.store.finish_round(id, RoundStatus::Failed, None, Some(&message)).await {
                tracing::error!(%error, round = id, "could not record a failed learning round");
            }
        }
    });
    Ok(round)
}

/// Replays `case` (with the items `with_live` live in the scratch copy) and records it.
async fn replay_case(
    state: &AppState,
    agent: &AgentId,
    round: i64,
    case: &Case,
    phase: ReplayPhase,
    with_live: &[i64],
) -> anyhow::Result<bool> {
    let verdict = replay::replay(state, agent, &case.message, &case.check, with_live).await?;
    let item_id = (phase == ReplayPhase::Candidate).then(|| with_live.first().copied()).flatten();
    let replay = Replay { case_id: case.id, item_id, phase, passed: verdict.passed, detail: verdict.detail };
    state.store.add_replay(round, &replay).await?;
    Ok(verdict.passed)
}

async fn run_round(state: &AppState, agent: &AgentId, round: i64) -> anyhow::Result<()> {
    let candidates = gather_candidates(state, agent).await?;
    let held_out = held_out_cases(state, agent, &candidates).await?;
    for item in &candidates {
        state.store.add_round_candidate(round, item.id, i64::try_from(item_tokens(&item.text))?).await?;
    }
    let mut progress = Progress::new(state, round, held_out.len(), candidates.len()).await?;

    let mut before = Vec::new();
    for case in &held_out {
        before.push(replay_case(state, agent, round, case, ReplayPhase::Before, &[]).await?);
        progress.step().await?;
    }
    let settings = state.store.learning_settings(agent).await?;
    let mut accepted = Vec::new();
    for item in &candidates {
        let verdict = judge(state, agent, round, item, &held_out, &before, &mut progress).await?;
        if let Some(live) = decide(state, agent, round, item, verdict, settings.require_approval).await? {
            accepted.push(live);
        }
    }
    // The learning curve's point: the held-out cases with every accepted item live together.
    let passed_before = i64::try_from(before.iter().filter(|passed| **passed).count())?;
    let passed_after = if accepted.is_empty() {
        passed_before
    } else {
        progress.add(held_out.len()).await?;
        let mut passed = 0;
        for case in &held_out {
            if replay_case(state, agent, round, case, ReplayPhase::After, &accepted).await? {
                passed += 1;
            }
            progress.step().await?;
        }
        passed
    };
    state.store.finish_round(round, RoundStatus::Finished, Some((passed_before, passed_after)), None).await?;
    Ok(())
}

/// The round's candidates: drafts from the agent's recent runs, stored (an item drafted before
/// is found again, not duplicated); at most `[learning] max_candidates` still undecided.
async fn gather_candidates(state: &AppState, agent: &AgentId) -> anyhow::Result<Vec<LearnedItem>> {
    let config = &state.config.learning;
    let recent = state.store.recent_runs(agent, config.recent_runs).await?;
    let drafts = gather::gather(state, &recent, config.max_candidates.saturating_mul(3)).await?;
    let mut candidates = Vec::new();
    for draft in drafts {
        let (item, _) = state
            .store
            .add_candidate(agent, draft.kind, &draft.trigger, &draft.text, &draft.sources, draft.read_outside)
            .await?;
        if item.status == ItemStatus::Candidate && candidates.len() < config.max_candidates {
            candidates.push(item);
        }
    }
    Ok(candidates)
}

/// The held-out cases: those no candidate of the round was learned from.
async fn held_out_cases(state: &AppState, agent: &AgentId, candidates: &[LearnedItem]) -> anyhow::Result<Vec<Case>> {
    let sources: BTreeSet<&str> =
        candidates.iter().flat_map(|item| item.source_runs.iter().map(|run| run.conversation_id.as_str())).collect();
    Ok(state
        .store
        .cases(agent)
        .await?
        .into_iter()
        .filter(|case| case.conversation_id.as_deref().is_none_or(|conversation| !sources.contains(conversation)))
        .collect())
}

/// A round's replays done and to do, as the canvas shows them. The total shrinks when a
/// candidate is judged without replaying every case.
struct Progress<'a> {
    state: &'a AppState,
    round: i64,
    held: i64,
    done: i64,
    total: i64,
}

impl<'a> Progress<'a> {
    async fn new(state: &'a AppState, round: i64, held: usize, candidates: usize) -> anyhow::Result<Self> {
        let held = i64::try_from(held)?;
        let progress = Progress { state, round, held, done: 0, total: held * (1 + i64::try_from(candidates)?) };
        progress.save().await?;
        Ok(progress)
    }

    async fn step(&mut self) -> anyhow::Result<()> {
        self.done += 1;
        self.save().await
    }

    async fn add(&mut self, replays: usize) -> anyhow::Result<()> {
        self.total += i64::try_from(replays)?;
        self.save().await
    }

    async fn skip(&mut self, replays: usize) -> anyhow::Result<()> {
        self.total -= i64::try_from(replays)?;
        self.save().await
    }

    async fn save(&self) -> anyhow::Result<()> {
        Ok(self.state.store.round_progress(self.round, self.done, self.total, self.held).await?)
    }
}

/// A held-out case and whether it passed without the candidate.
type CaseBefore<'a> = (&'a Case, bool);

/// What replaying the held-out cases with one candidate showed.
enum Verdict {
    NoCases,
    OverBudget {
        tokens: usize,
        budget: usize,
    },
    /// A learned skill whose name one of the agent's skills already has.
    SkillNameTaken {
        name: String,
    },
    /// Every case passed without it: there is nothing it could raise.
    NothingToRaise,
    /// It fits none of the `failing` held-out cases that fail without it (its trigger shares
    /// too few words with their messages), so it cannot change them.
    FitsNoFailing {
        failing: usize,
    },
    /// None of the cases it fits that failed without it passes with it.
    NoRise {
        failed_before: usize,
    },
    /// It raises `raised` of the `failed` cases that fail without it, but a case that passed
    /// without it fails with it.
    Breaks {
        raised: usize,
        failed: usize,
        case: i64,
    },
    Rises {
        rise: String,
    },
}

/// Replays the held-out cases with `item` live, in the order that decides soonest: the cases
/// that failed without it first (only they can raise the passes; if none does, the rest need
/// not be replayed), then those that passed, stopping at the first one it breaks; a case the
/// item does not fit (it would not be said in its requests) keeps its baseline verdict. With
/// a small local model a replay takes a minute, so a round replays what can change its
/// decision and nothing else; the cases left out show no "after" for the candidate.
async fn judge(
    state: &AppState,
    agent: &AgentId,
    round: i64,
    item: &LearnedItem,
    held_out: &[Case],
    before: &[bool],
    progress: &mut Progress<'_>,
) -> anyhow::Result<Verdict> {
    let held = held_out.len();
    if held == 0 {
        return Ok(Verdict::NoCases);
    }
    if item.kind == LearnedKind::Skill
        && let Ok(file) = wright_core::SkillFile::parse(&item.text)
        && state.store.skill(agent, &file.name).await.is_ok()
    {
        progress.skip(held).await?;
        return Ok(Verdict::SkillNameTaken { name: file.name });
    }
    let budget = state.config.agent.learned_budget_tokens.min(gather::ITEM_MAX_TOKENS);
    let tokens = item_tokens(&item.text);
    if tokens > budget {
        progress.skip(held).await?;
        return Ok(Verdict::OverBudget { tokens, budget });
    }
    if before.iter().all(|passed| *passed) {
        progress.skip(held).await?;
        return Ok(Verdict::NothingToRaise);
    }
    // A case the item does not fit gets the same request with it as without it, so the same
    // reply at temperature 0: its verdict is the baseline's, and it is not replayed. A skill
    // changes every request (the system message lists it); a notes edit fits every request.
    let as_text = LearnedText { id: item.id, kind: item.kind, trigger: item.trigger.clone(), text: item.text.clone() };
    let fits = |case: &Case| {
        item.kind == LearnedKind::Skill
            || !choose_learned(std::slice::from_ref(&as_text), &case.message, usize::MAX).is_empty()
    };
    let (failed, passed): (Vec<CaseBefore<'_>>, Vec<CaseBefore<'_>>) =
        held_out.iter().zip(before.iter().copied()).filter(|(case, _)| fits(case)).partition(|(_, passed)| !passed);
    progress.skip(held - failed.len() - passed.len()).await?;
    if failed.is_empty() {
        progress.skip(passed.len()).await?;
        return Ok(Verdict::FitsNoFailing { failing: before.iter().filter(|passed| !**passed).count() });
    }
    let mut raised = 0;
    for (case, _) in &failed {
        if replay_case(state, agent, round, case, ReplayPhase::Candidate, &[item.id]).await? {
            raised += 1;
        }
        progress.step().await?;
    }
    if raised == 0 {
        progress.skip(passed.len()).await?;
        return Ok(Verdict::NoRise { failed_before: failed.len() });
    }
    let passed_before = before.iter().filter(|passed| **passed).count();
    let rise = format!("held-out passes {passed_before} → {} of {held}", passed_before + raised);
    for (index, (case, _)) in passed.iter().enumerate() {
        let still = replay_case(state, agent, round, case, ReplayPhase::Candidate, &[item.id]).await?;
        progress.step().await?;
        if !still {
            progress.skip(passed.len() - index - 1).await?;
            return Ok(Verdict::Breaks { raised, failed: failed.len(), case: case.id });
        }
    }
    Ok(Verdict::Rises { rise })
}

/// Records the round's decision on `item` from its verdict; returns its id when it went live
/// or waits for the person's approval (it counts as accepted for the round's "after").
async fn decide(
    state: &AppState,
    agent: &AgentId,
    round: i64,
    item: &LearnedItem,
    verdict: Verdict,
    require_approval: bool,
) -> anyhow::Result<Option<i64>> {
    let refusal = match verdict {
        Verdict::NoCases => {
            let reason = "no held-out case to validate it on (make cases from conversations)";
            // Left a candidate: a later round with cases may validate it.
            state.store.decide_candidate(round, item.id, CandidateDecision::Refused, reason).await?;
            return Ok(None);
        }
        Verdict::OverBudget { tokens, budget } => {
            format!("it adds {tokens} tokens to a request, over the budget of {budget}")
        }
        Verdict::SkillNameTaken { name } => format!("the agent already has a skill named {name}"),
        Verdict::NothingToRaise => "every held-out case passes without it: there is nothing for it to raise".to_owned(),
        Verdict::FitsNoFailing { failing } => format!(
            "no rise: it fits none of the {failing} held-out cases that fail without it (their requests do not \
             share its trigger's words)"
        ),
        Verdict::NoRise { failed_before } => {
            format!("no rise: none of the {failed_before} held-out cases it fits that fail without it passes with it")
        }
        Verdict::Breaks { raised, failed, case } => format!(
            "it makes {raised} of the {failed} failing held-out cases pass, but case #{case} passed without it and \
             fails with it"
        ),
        Verdict::Rises { rise } => {
            let tokens = item_tokens(&item.text);
            let (decision, status, reason) = if require_approval || item.read_outside {
                let why = if item.read_outside {
                    "it was learned from a run whose context held outside content"
                } else {
                    "the agent's settings ask for approval"
                };
                let reason = format!("{rise}, no case broke; waits for the person's approval: {why}");
                (CandidateDecision::AwaitingApproval, ItemStatus::AwaitingApproval, reason)
            } else {
                let reason = format!("accepted by learning round {round}: {rise}, no case broke, {tokens} tokens");
                (CandidateDecision::Accepted, ItemStatus::Live, reason)
            };
            state.store.decide_candidate(round, item.id, decision, &reason).await?;
            state.store.set_item_status(agent, item.id, status, ItemAuthor::Learning, &reason).await?;
            return Ok(Some(item.id));
        }
    };
    state.store.decide_candidate(round, item.id, CandidateDecision::Refused, &refusal).await?;
    state.store.set_item_status(agent, item.id, ItemStatus::Refused, ItemAuthor::Learning, &refusal).await?;
    Ok(None)
}

/// What the person may do with a learned item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemAction {
    /// An item awaiting approval (or a refused or rolled-back one) goes live.
    Approve,
    /// An item awaiting approval, or a candidate, is set aside.
    Reject,
    /// A live item stops entering requests.
    RollBack,
}

pub async fn act_on_item(
    state: &AppState,
    agent: &AgentId,
    id: i64,
    action: ItemAction,
    reason: Option<&str>,
) -> Result<LearnedItem, DomainError> {
    let item = state
        .store
        .learned_item(agent, id)
        .await?
        .ok_or(wright_store::StoreError::ItemNotFound { kind: "learned item", name: id.to_string() })?;
    let (allowed, status, said) = match action {
        ItemAction::Approve => (item.status != ItemStatus::Live, ItemStatus::Live, "approved by the person"),
        ItemAction::Reject => (
            matches!(item.status, ItemStatus::AwaitingApproval | ItemStatus::Candidate),
            ItemStatus::Rejected,
            "rejected by the person",
        ),
        ItemAction::RollBack => (item.status == ItemStatus::Live, ItemStatus::RolledBack, "rolled back by the person"),
    };
    if !allowed {
        return Err(DomainError::Invalid(format!("the item is {}; that cannot be done to it", item.status)));
    }
    let reason = match reason {
        Some(reason) if !reason.trim().is_empty() => format!("{said}: {reason}"),
        _ => said.to_owned(),
    };
    Ok(state.store.set_item_status(agent, id, status, ItemAuthor::Person, &reason).await?)
}

/// Starts the nightly rounds of the agents that turned them on, once a day after
/// `[learning] nightly_hour` (UTC), until the server shuts down. Rounds a server left running
/// when it stopped are marked failed first (rounds run in the server that started them).
pub fn spawn_nightly(state: AppState) {
    tokio::spawn(async move {
        if let Err(error) = state.store.fail_abandoned_rounds().await {
            tracing::warn!(%error, "could not end the learning rounds a stopped server left");
        }
        loop {
            if let Err(error) = nightly_once(&state).await {
                tracing::warn!(%error, "the nightly learning check failed");
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(300)) => {}
                () = state.shutdown.cancelled() => return,
            }
        }
    });
}

async fn nightly_once(state: &AppState) -> anyhow::Result<()> {
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    if (seconds % 86_400) / 3_600 < u64::from(state.config.learning.nightly_hour) {
        return Ok(());
    }
    // Days since the epoch, zero-padded: ordered as text like as numbers.
    let day = format!("{:08}", seconds / 86_400);
    for agent in state.store.take_nightly_agents(&day).await? {
        if let Err(error) = start_round(state, &agent, RoundTrigger::Schedule).await {
            tracing::warn!(%error, %agent, "could not start the nightly learning round");
        }
    }
    Ok(())
}
