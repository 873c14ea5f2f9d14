//! Learning from experience, proven by replay (issue 31).
//!
//! - The person rates answers ([`rate`]) and turns conversations into cases ([`create_case`]);
//!   a case made from a conversation is judged on the live data at once, which sets that run's
//!   outcome (source `check`).
//! - A learning round ([`start_round`], in the background; `wright learn`; nightly when the
//!   person turned it on) gathers candidates from recent runs (`gather`), replays the
//!   held-out cases — those no candidate of the round was learned from — without any candidate
//!   and with each (`replay`, in a scratch copy of the agent's data), and accepts a candidate
//!   only if held-out passes rise, no case that passed fails, and it fits the token budget.
//!   An accepted item goes live as a new version of the item, or waits for the person's
//!   approval when the agent's settings say so or when it was learned from a run whose
//!   context held outside content.
//! - Live items enter requests through the loop's policy (wright-agent `policy/learned.rs`);
//!   their counters (`domain/runs.rs`) roll them back when they show harm.

mod gather;
pub(crate) mod replay;

use std::collections::BTreeSet;
use std::time::Duration;

use wright_agent::item_tokens;
use wright_core::{
    AgentId, CandidateDecision, CaseCheck, ItemAuthor, ItemStatus, Outcome, OutcomeSource, Rating, ReplayPhase,
    RoundStatus, RoundTrigger,
};
use wright_store::{Case, LearnedItem, Replay, Round, RunOutcomeRecord, RunRef};

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
            state.store.set_run_outcome(&run, outcome, OutcomeSource::Check).await?;
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
    let config = &state.config.learning;
    let recent = state.store.recent_runs(agent, config.recent_runs).await?;
    let drafts = gather::gather(state, &recent, config.max_candidates.saturating_mul(3)).await?;
    let mut candidates: Vec<LearnedItem> = Vec::new();
    for draft in drafts {
        let (item, _) = state
            .store
            .add_candidate(agent, draft.kind, &draft.trigger, &draft.text, &draft.sources, draft.read_outside)
            .await?;
        if item.status == ItemStatus::Candidate && candidates.len() < config.max_candidates {
            candidates.push(item);
        }
    }
    let sources: BTreeSet<String> =
        candidates.iter().flat_map(|item| item.source_runs.iter().map(|run| run.conversation_id.clone())).collect();
    let held_out: Vec<Case> = state
        .store
        .cases(agent)
        .await?
        .into_iter()
        .filter(|case| case.conversation_id.as_ref().is_none_or(|conversation| !sources.contains(conversation)))
        .collect();
    let held = i64::try_from(held_out.len())?;
    for item in &candidates {
        state.store.add_round_candidate(round, item.id, i64::try_from(item_tokens(&item.text))?).await?;
    }
    let mut total = held * (1 + i64::try_from(candidates.len())?);
    let mut done = 0;
    state.store.round_progress(round, done, total, held).await?;

    let mut before = Vec::new();
    for case in &held_out {
        before.push(replay_case(state, agent, round, case, ReplayPhase::Before, &[]).await?);
        done += 1;
        state.store.round_progress(round, done, total, held).await?;
    }
    let passed_before = i64::try_from(before.iter().filter(|passed| **passed).count())?;
    let budget = state.config.agent.learned_budget_tokens.min(gather::ITEM_MAX_TOKENS);
    let settings = state.store.learning_settings(agent).await?;
    let mut accepted = Vec::new();
    for item in &candidates {
        let refuse = |reason: String| async move {
            state.store.decide_candidate(round, item.id, CandidateDecision::Refused, &reason).await?;
            state.store.set_item_status(agent, item.id, ItemStatus::Refused, ItemAuthor::Learning, &reason).await?;
            anyhow::Ok(())
        };
        let tokens = item_tokens(&item.text);
        if held_out.is_empty() {
            let reason = "no held-out case to validate it on (make cases from conversations)".to_owned();
            // Left a candidate: a later round with cases may validate it.
            state.store.decide_candidate(round, item.id, CandidateDecision::Refused, &reason).await?;
            continue;
        }
        if tokens > budget {
            done += held;
            state.store.round_progress(round, done, total, held).await?;
            refuse(format!("it adds {tokens} tokens to a request, over the budget of {budget}")).await?;
            continue;
        }
        let mut after = Vec::new();
        for case in &held_out {
            after.push(replay_case(state, agent, round, case, ReplayPhase::Candidate, &[item.id]).await?);
            done += 1;
            state.store.round_progress(round, done, total, held).await?;
        }
        let passed_after = after.iter().filter(|passed| **passed).count();
        let broken: Vec<i64> = held_out
            .iter()
            .zip(before.iter().zip(&after))
            .filter(|(_, (before, after))| **before && !**after)
            .map(|(case, _)| case.id)
            .collect();
        let rise = format!("held-out passes {passed_before} → {passed_after} of {held}");
        if !broken.is_empty() {
            let cases: Vec<String> = broken.iter().map(|id| format!("#{id}")).collect();
            refuse(format!("{rise}, but case {} passed without it and fails with it", cases.join(", "))).await?;
        } else if i64::try_from(passed_after)? <= passed_before {
            refuse(format!("{rise}: no rise")).await?;
        } else if settings.require_approval || item.read_outside {
            let why = if item.read_outside {
                "it was learned from a run whose context held outside content"
            } else {
                "the agent's settings ask for approval"
            };
            let reason = format!("{rise}, no case broke; waits for the person's approval: {why}");
            state.store.decide_candidate(round, item.id, CandidateDecision::AwaitingApproval, &reason).await?;
            state
                .store
                .set_item_status(agent, item.id, ItemStatus::AwaitingApproval, ItemAuthor::Learning, &reason)
                .await?;
            accepted.push(item.id);
        } else {
            let reason = format!("accepted by learning round {round}: {rise}, no case broke, {tokens} tokens");
            state.store.decide_candidate(round, item.id, CandidateDecision::Accepted, &reason).await?;
            state.store.set_item_status(agent, item.id, ItemStatus::Live, ItemAuthor::Learning, &reason).await?;
            accepted.push(item.id);
        }
    }
    // The learning curve's point: the held-out cases with every accepted item live together.
    let passed_after = if accepted.is_empty() {
        passed_before
    } else {
        total += held;
        let mut passed = 0;
        for case in &held_out {
            if replay_case(state, agent, round, case, ReplayPhase::After, &accepted).await? {
                passed += 1;
            }
            done += 1;
            state.store.round_progress(round, done, total, held).await?;
        }
        passed
    };
    state.store.finish_round(round, RoundStatus::Finished, Some((passed_before, passed_after)), None).await?;
    Ok(())
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
