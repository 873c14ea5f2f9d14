//! Runs of the agent loop: at most one per conversation, many conversations at once, and
//! one owner for each.
//!
//! Who runs a conversation is decided in the store (wright-store `conversations`): a claim
//! names this process ([`RunOwner`]) and a lease that a heartbeat renews. Starting a run with
//! the person's message, answering the last pending call, parking and finishing are each one
//! transaction there, so the claim, the status and the pending calls can never disagree — not
//! between two requests, and not between `wright serve` and a `wright chat` beside it.
//!
//! What this process keeps in memory is only what cannot be stored: the cancellation token of
//! each run it is running, removed by a drop guard when the run's task ends however it ends.
//! A run that panics is ended in the store with an error notice (its open calls get results);
//! a run whose owner died (a crash, SIGKILL) is ended as interrupted by the next process that
//! finds it — at start, when the conversation is loaded, or when a message or answer arrives.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_agent::profile::ProfileOverride;
use wright_agent::{
    ContextMemory, ContextSkill, Finish, LoopConfig, ParkedCall, RunContext, RunOutcome, SystemParts, Transcript,
};
use wright_core::{
    AgentId, ApprovedCall, ConversationStatus, DecidedBy, DocumentKind, Event, EventBody, NewEvent, Notice,
    PendingKind, ToolPolicy, ToolSettings, Unfinished,
};
use wright_core::{Invocation, UsageCaller, UsagePurpose};
use wright_core::{ItemAuthor, ItemStatus, Outcome, OutcomeSource};
use wright_store::{
    AnswerResult, Answered, Claim, Finished, Lease, NewRunOutcome, RunEnd, RunRef, Store, StoreError, StoredEvent,
};
use wright_tools::ToolRegistry;

use wright_core::{ApprovalAnswer, ApprovalDecision, ErrorCategory, ToolFailure};

use super::{DomainError, outcomes};
use crate::config::{LearningConfig, RunsConfig};
use crate::domain::hub::{Hub, Update};
use crate::domain::models::{ConfiguredModel, Models};
use crate::domain::owner::RunOwner;
use crate::domain::usage::{Ledger, MeteredProvider, Metering};

/// The loop's settings for a model: compaction starts before the history outgrows the model's
/// context window. About four characters make a token; three per token leaves room for the
/// system prompt, the tool schemas and the reply.
fn fitted_to(config: &LoopConfig, context_window: Option<u32>) -> LoopConfig {
    let mut fitted = config.clone();
    if let Some(tokens) = context_window {
        let budget = (tokens as usize).saturating_mul(3);
        fitted.compact_above_chars = fitted.compact_above_chars.min(budget);
        fitted.keep_recent_chars = fitted.keep_recent_chars.min(fitted.compact_above_chars / 4);
    }
    fitted
}

/// Who is speaking in a new message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    Person,
    /// A component in the canvas, by name: marked in the store and for the model, and
    /// limited per conversation.
    Component(String),
}

/// The run this process is running in a conversation: its token, and a number that tells
/// this run's guard from a later run's.
struct ActiveRun {
    run: u64,
    cancel: CancellationToken,
}

pub struct Runs {
    store: Store,
    /// The usage ledger and budgets every run's requests pass.
    ledger: Arc<Ledger>,
    hub: Arc<Hub>,
    tools: Arc<ToolRegistry>,
    models: Arc<Models>,
    config: LoopConfig,
    runs_config: RunsConfig,
    /// `[agents.<id>.tools]` from config.toml: an agent's tool settings until the API sets them.
    configured_tools: BTreeMap<String, ToolSettings>,
    /// `[model_profiles]` from config.toml.
    profiles: BTreeMap<String, ProfileOverride>,
    owner: RunOwner,
    /// Runs this process is running, by conversation. Held only to insert, remove or look up,
    /// never across an await.
    active: Mutex<HashMap<String, ActiveRun>>,
    /// Numbers runs, so a finished run's guard never removes a newer run's entry.
    next_run: std::sync::atomic::AtomicU64,
    /// When components sent their recent messages, per conversation (a sliding minute).
    /// Held only to check and record, never across an await.
    component_messages: Mutex<HashMap<String, VecDeque<Instant>>>,
    /// The temperature of every request, whatever the profile says (replays run at 0).
    forced_temperature: Option<f32>,
    /// `[learning]`: when counters roll a live learned item back.
    learning: LearningConfig,
}

impl Runs {
    pub fn new(
        store: Store,
        hub: Arc<Hub>,
        tools: Arc<ToolRegistry>,
        models: Arc<Models>,
        ledger: Arc<Ledger>,
        config: LoopConfig,
        runs_config: RunsConfig,
        owner: RunOwner,
    ) -> Self {
        Self {
            store,
            ledger,
            hub,
            tools,
            models,
            config,
            runs_config,
            configured_tools: BTreeMap::new(),
            profiles: BTreeMap::new(),
            owner,
            active: Mutex::new(HashMap::new()),
            next_run: std::sync::atomic::AtomicU64::new(0),
            component_messages: Mutex::new(HashMap::new()),
            forced_temperature: None,
            learning: LearningConfig::default(),
        }
    }

    /// Every request at this temperature (a replay of a case runs at 0).
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.forced_temperature = Some(temperature);
        self
    }

    /// `[learning]` from config.toml.
    pub fn with_learning(mut self, learning: LearningConfig) -> Self {
        self.learning = learning;
        self
    }

    /// The agents' tool settings from config.toml (`[agents.<id>.tools]`).
    /// Uses `[model_profiles]` from config.toml.
    pub fn with_profiles(mut self, profiles: BTreeMap<String, ProfileOverride>) -> Self {
        self.profiles = profiles;
        self
    }

    /// The profile `model` gets, with the loop settings of this installation and what the
    /// Settings page set for it. Settings that no longer read (a field renamed since) are
    /// left out, with a warning: a run must not fail on them.
    pub async fn profile_of(&self, model: &ConfiguredModel) -> wright_agent::profile::ChosenProfile {
        let saved = self.saved_profile(&model.key()).await;
        model.profile(&self.profiles, saved.as_ref(), &self.config).await
    }

    /// The profile settings the Settings page keeps for `model_key` (`provider/model`).
    pub async fn saved_profile(&self, model_key: &str) -> Option<ProfileOverride> {
        match self.store.model_profile_override(model_key).await {
            Ok(Some(value)) => match serde_json::from_value(value) {
                Ok(saved) => Some(saved),
                Err(error) => {
                    tracing::warn!(%error, model = model_key, "the saved profile settings do not read; left out");
                    None
                }
            },
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, model = model_key, "the saved profile settings could not be read");
                None
            }
        }
    }

    /// Saves (or with None removes) the profile settings of `model_key` (`provider/model`).
    pub async fn save_profile(&self, model_key: &str, saved: Option<&ProfileOverride>) -> Result<(), DomainError> {
        if let Some(problem) = saved.and_then(ProfileOverride::problem) {
            return Err(DomainError::Invalid(problem));
        }
        let value =
            saved.map(serde_json::to_value).transpose().map_err(|error| DomainError::Internal(error.to_string()))?;
        self.store.set_model_profile_override(model_key, value.as_ref()).await?;
        Ok(())
    }

    pub fn with_configured_tools(mut self, configured_tools: BTreeMap<String, ToolSettings>) -> Self {
        self.configured_tools = configured_tools;
        self
    }

    /// The agent's tool settings: as the API last set them, else as config.toml says, else
    /// the defaults.
    pub async fn tool_settings(&self, agent: &AgentId) -> Result<ToolSettings, StoreError> {
        Ok(match self.store.tool_settings(agent).await? {
            Some(settings) => settings,
            None => self.configured_tools.get(agent.as_str()).cloned().unwrap_or_default(),
        })
    }

    /// `(kind, model)` of the agent's next run, or what to tell the person when there is none.
    pub async fn provider_info(&self, agent: &AgentId) -> Result<(String, String), String> {
        self.models.for_agent(agent).await.map(|configured| (configured.kind, configured.name))
    }

    fn lease(&self) -> Lease<'_> {
        Lease { owner: self.owner.id(), seconds: self.runs_config.lease_seconds.max(3) }
    }

    /// Ends, as interrupted, every run whose owner is gone (its lease ran out, or its lock file
    /// is free). Runs of live owners — a server beside this CLI — are left alone. Called at
    /// start; safe to call any time.
    pub async fn recover_orphaned(&self) -> Result<(), DomainError> {
        for claimed in self.store.claimed_runs().await? {
            if claimed.owner != self.owner.id() && (claimed.expired || !self.owner.is_alive(&claimed.owner)) {
                self.recover(&claimed.conversation_id, &claimed.owner).await?;
            }
        }
        Ok(())
    }

    /// Recovers the conversation's run if its owner is gone; does nothing otherwise.
    pub async fn recover_if_orphaned(&self, conversation_id: &str) -> Result<(), DomainError> {
        if let Some(claimed) = self.store.claimed_run(conversation_id).await?
            && claimed.owner != self.owner.id()
            && (claimed.expired || !self.owner.is_alive(&claimed.owner))
        {
            self.recover(conversation_id, &claimed.owner).await?;
        }
        Ok(())
    }

    /// Ends a dead owner's run: its open calls get "interrupted" results, a notice says so,
    /// and the conversation is idle again — one transaction.
    async fn recover(&self, conversation_id: &str, dead_owner: &str) -> Result<(), DomainError> {
        let end = RunEnd {
            closing: vec![NewEvent::notice(Notice::Interrupted)],
            status: ConversationStatus::Idle,
            close_open_calls: Some(Unfinished::Interrupted),
        };
        match self.store.finish_run(conversation_id, dead_owner, &end).await {
            Ok(Finished::Ended(events) | Finished::Continue(events)) => {
                tracing::info!(conversation_id, dead_owner, "recovered a run whose owner is gone");
                self.publish_events(conversation_id, events);
                self.publish_status(conversation_id, ConversationStatus::Idle, None);
                Ok(())
            }
            // Recovered by another process meanwhile.
            Err(StoreError::RunNotOwned(_)) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Renews this process's leases until the process ends. Spawned once by `AppState::open`.
    pub fn spawn_heartbeat(self: &Arc<Self>) {
        let runs = Arc::downgrade(self);
        let every = Duration::from_secs((self.runs_config.lease_seconds / 3).max(1));
        // Owned by the runtime; stops when `Runs` is dropped (the weak reference fails).
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(runs) = runs.upgrade() else { return };
                if let Err(error) = runs.store.renew_leases(runs.lease()).await {
                    tracing::warn!(%error, "could not renew run leases");
                }
            }
        });
    }

    fn no_model(problem: String) -> DomainError {
        DomainError::NoModel(problem)
    }

    fn busy() -> DomainError {
        DomainError::RunInProgress
    }

    /// Counts a component's message against its conversation's limit, or refuses it.
    fn admit_component_message(&self, conversation_id: &str, component: &str) -> Result<(), DomainError> {
        let limit = self.runs_config.component_messages_per_minute;
        let mut sent = self.component_messages.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let recent = sent.entry(conversation_id.to_owned()).or_default();
        while recent.front().is_some_and(|at| now.duration_since(*at) > Duration::from_secs(60)) {
            recent.pop_front();
        }
        if recent.len() >= limit {
            return Err(DomainError::RateLimited(format!(
                "the component {component:?} sent {limit} messages in this conversation in the last minute, \
                     the limit ([runs] component_messages_per_minute); the person can still type"
            )));
        }
        recent.push_back(now);
        Ok(())
    }

    /// Stores the message and starts a run, in one transaction with the claim. Calls still
    /// waiting are dismissed first.
    pub async fn send_message(
        self: &Arc<Self>,
        conversation_id: &str,
        text: &str,
        sender: Sender,
        caller: UsageCaller,
    ) -> Result<(), DomainError> {
        let conversation = self.store.conversation(conversation_id).await?;
        let agent = AgentId::parse(&conversation.agent_id)?;
        let model = self.models.for_agent(&agent).await.map_err(Self::no_model)?;
        let component = match sender {
            Sender::Person => None,
            Sender::Component(name) => {
                self.admit_component_message(conversation_id, &name)?;
                Some(name)
            }
        };
        if component.is_none() && outcomes::is_correction(text) {
            // The person correcting the answer says the run before went wrong.
            if let Some(previous) = self.store.run_at(conversation_id, None).await?
                && previous.outcome == Outcome::Unknown
            {
                let run = RunRef { conversation_id: conversation_id.to_owned(), user_seq: previous.user_seq };
                self.store.set_run_outcome(&run, Outcome::Failure, OutcomeSource::Correction).await?;
                self.roll_back_harmful(&agent, &run).await;
            }
        }
        let message = NewEvent::new(text, EventBody::User { text: text.to_owned(), component });
        let mut claim = self.store.start_run_with_message(conversation_id, self.lease(), &message).await?;
        if let Claim::Busy { owner } = &claim
            && !self.owner.is_alive(owner)
        {
            self.recover(conversation_id, &owner.clone()).await?;
            claim = self.store.start_run_with_message(conversation_id, self.lease(), &message).await?;
        }
        let Claim::Claimed(events) = claim else { return Err(Self::busy()) };
        self.publish_events(conversation_id, events);
        self.spawn_run(agent, conversation_id.to_owned(), model, caller);
        Ok(())
    }

    /// Stops this process's run in the conversation. A run whose owner is gone is ended as
    /// interrupted instead, so Stop always unsticks a conversation.
    pub async fn cancel(&self, conversation_id: &str) -> Result<(), DomainError> {
        let token = {
            let active = self.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            active.get(conversation_id).map(|run| run.cancel.clone())
        };
        match token {
            Some(token) => token.cancel(),
            None => self.recover_if_orphaned(conversation_id).await?,
        }
        Ok(())
    }

    /// Stores the answer of a pending call as its result (one transaction). When it was the
    /// last call waiting, the run resumes: here, or — when the answer came while the turn
    /// still runs — in the run that holds the conversation.
    pub async fn answer_pending(
        self: &Arc<Self>,
        conversation_id: &str,
        tool_call_id: &str,
        answer: Value,
    ) -> Result<(), DomainError> {
        let conversation = self.store.conversation(conversation_id).await?;
        let agent = AgentId::parse(&conversation.agent_id)?;
        let waiting = self.store.pending_calls(conversation_id).await?;
        let result = match waiting.iter().find(|call| call.tool_call_id == tool_call_id) {
            Some(call) if call.kind == PendingKind::Approval => {
                self.approval_result(&agent, conversation_id, call, &answer).await?
            }
            _ => AnswerResult::TheAnswer,
        };
        let (answered, events) =
            self.store.answer_pending_call(conversation_id, tool_call_id, &answer, result, self.lease()).await?;
        self.publish_events(conversation_id, events);
        match answered {
            Answered::StillWaiting => Ok(()),
            Answered::RunGoing { owner } if self.owner.is_alive(&owner) => Ok(()),
            Answered::RunGoing { owner } => {
                // The run that parked it died mid-turn: end it, then resume from the answers.
                self.recover(conversation_id, &owner).await?;
                match self.store.claim_run(conversation_id, self.lease()).await? {
                    Claim::Claimed(_) => self.resume(agent, conversation_id).await,
                    Claim::Busy { .. } => Ok(()),
                }
            }
            Answered::Resume => self.resume(agent, conversation_id).await,
        }
    }

    /// What the person's decision on an approval makes of the call: run it (approve; always
    /// allow also sets the agent's policy for the tool), or a refusal the model reads (deny,
    /// recorded in the execution log as the person's). Edited arguments must be an object.
    async fn approval_result(
        &self,
        agent: &AgentId,
        conversation_id: &str,
        call: &wright_store::PendingCall,
        answer: &Value,
    ) -> Result<AnswerResult, DomainError> {
        let approval: ApprovalAnswer = serde_json::from_value(answer.clone()).map_err(|error| {
            let edited_not_an_object = answer.get("arguments").is_some_and(|arguments| !arguments.is_object());
            DomainError::Invalid(if edited_not_an_object {
                "`arguments` must be a JSON object: the call's edited arguments".to_owned()
            } else {
                format!(
                    "an approval is answered with {{\"decision\": \"approve\" | \"deny\" | \"always\", \"arguments\"?: {{…}}}} ({error})"
                )
            })
        })?;
        match approval.decision {
            ApprovalDecision::Approve => Ok(AnswerResult::RunTheCall),
            ApprovalDecision::Always => {
                self.store.set_tool_policy(agent, &call.tool_name, Some(ToolPolicy::Allow)).await?;
                Ok(AnswerResult::RunTheCall)
            }
            ApprovalDecision::Deny => {
                let message = format!("the person did not approve this call of `{}`; it did not run", call.tool_name);
                let invocation = Invocation {
                    agent: agent.clone(),
                    name: call.tool_name.clone(),
                    args: answer.get("arguments").cloned().unwrap_or_else(|| call.args.clone()),
                    caller: wright_core::Caller::Agent,
                    conversation_id: Some(conversation_id.to_owned()),
                    tool_call_id: Some(call.tool_call_id.clone()),
                    decided_by: Some(DecidedBy::Person),
                };
                self.tools.record_refusal(invocation, message.clone()).await;
                let output = ToolFailure::new(ErrorCategory::Denied, message).to_output();
                Ok(AnswerResult::Event(wright_store::tool_result_event(
                    &call.tool_call_id,
                    &call.tool_name,
                    output,
                    false,
                )))
            }
        }
    }

    /// Starts the claimed run, or — with no model — releases it with the setup hint.
    async fn resume(self: &Arc<Self>, agent: AgentId, conversation_id: &str) -> Result<(), DomainError> {
        match self.models.for_agent(&agent).await {
            Ok(model) => {
                // A run resumed by an answer is the person's.
                self.spawn_run(agent, conversation_id.to_owned(), model, UsageCaller::Person);
                Ok(())
            }
            Err(problem) => {
                let end = RunEnd { closing: Vec::new(), status: ConversationStatus::Idle, close_open_calls: None };
                self.store.finish_run(conversation_id, self.owner.id(), &end).await?;
                self.publish_status(conversation_id, ConversationStatus::Idle, Some(problem));
                Ok(())
            }
        }
    }

    /// Runs the loop on a task for a run this process has claimed in the store.
    fn spawn_run(
        self: &Arc<Self>,
        agent: AgentId,
        conversation_id: String,
        model: ConfiguredModel,
        caller: UsageCaller,
    ) {
        let run = self.next_run.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let cancel = CancellationToken::new();
        self.active
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(conversation_id.clone(), ActiveRun { run, cancel: cancel.clone() });
        self.publish_status(&conversation_id, ConversationStatus::Running, None);
        let runs = Arc::clone(self);
        // The task owns the run until the loop ends it in the store; its guard removes the
        // cancellation token however the task ends, a panic included.
        tokio::spawn(async move {
            let _guard = ActiveGuard { runs: Arc::clone(&runs), conversation_id: conversation_id.clone(), run };
            // A store error here leaves the defaults: the run is better served than refused, and
            // the same error will surface on the transcript's first write.
            let tool_settings = runs.tool_settings(&agent).await.unwrap_or_else(|error| {
                tracing::warn!(%error, %agent, "cannot read the agent's tool settings; using the defaults");
                ToolSettings::default()
            });
            let transcript = StoreTranscript {
                store: runs.store.clone(),
                databases: Arc::clone(runs.tools.services()),
                hub: Arc::clone(&runs.hub),
                agent: agent.clone(),
                conversation_id: conversation_id.clone(),
                owner: runs.owner.id().to_owned(),
                toolsets: tool_settings.toolsets.clone(),
                learned: Mutex::new(Vec::new()),
            };
            let profile = runs.profile_of(&model).await;
            let mut loop_config = fitted_to(&profile.apply(&runs.config), model.context_window);
            if let Some(temperature) = runs.forced_temperature {
                loop_config.temperature = Some(temperature);
            }
            // Every request of this run (its turns and compaction summaries) is metered: the
            // budgets and the loop guard hold before it is sent, and the ledger records it.
            let window = match model.context_window {
                Some(window) => Some(u64::from(window)),
                None => model.provider.context_window().await.map(u64::from),
            };
            let metering = Metering {
                agent: Some(agent.as_str().to_owned()),
                conversation_id: Some(conversation_id.clone()),
                run_id: Some(uuid::Uuid::now_v7().to_string()),
                caller,
                purpose: UsagePurpose::Turn,
                connection: model.connection.clone(),
                kind: model.kind.clone(),
                model: model.name.clone(),
                default_output_cap: loop_config.reserve_output_tokens as u64,
                max_run_tokens: Some(loop_config.run_token_limit(window)),
            };
            let metered = MeteredProvider::new(Arc::clone(&model.provider), Arc::clone(&runs.ledger), metering);
            let metered_model = wright_agent::ProviderModel(Arc::new(metered));
            let context = RunContext {
                agent: &agent,
                conversation_id: &conversation_id,
                tools: runs.tools.as_ref(),
                config: &loop_config,
                tool_settings: &tool_settings,
                cancel: &cancel,
            };
            let outcome =
                AssertUnwindSafe(wright_agent::run(&metered_model, &transcript, context)).catch_unwind().await;
            let failure = match outcome {
                Ok(Ok(outcome)) => {
                    let learned = transcript.learned.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
                    let budget = loop_config.learned_budget_tokens;
                    if let Err(error) = runs.record_outcome(&agent, &conversation_id, &outcome, &learned, budget).await
                    {
                        tracing::warn!(%error, conversation_id, "could not record the run's outcome");
                    }
                    return;
                }
                Ok(Err(error)) => error.to_string(),
                Err(panic) => {
                    let reason = panic
                        .downcast_ref::<&str>()
                        .map(|text| (*text).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(conversation_id, %reason, "a run panicked");
                    format!("The run failed unexpectedly (a bug in Wright: {reason}). Send a message to continue.")
                }
            };
            runs.abandon(&conversation_id, failure).await;
        });
    }

    /// Ends a run the loop could not end itself (the store failed, or the task panicked):
    /// open calls get results, an error notice, status error — one transaction.
    async fn abandon(&self, conversation_id: &str, message: String) {
        let end = RunEnd {
            closing: vec![NewEvent::notice(Notice::Error { message: message.clone() })],
            status: ConversationStatus::Error,
            close_open_calls: Some(Unfinished::Failed),
        };
        match self.store.finish_run(conversation_id, self.owner.id(), &end).await {
            Ok(Finished::Ended(events) | Finished::Continue(events)) => {
                self.publish_events(conversation_id, events);
                self.publish_status(conversation_id, ConversationStatus::Error, Some(message));
            }
            Err(error) => tracing::error!(%error, conversation_id, "could not end a failed run"),
        }
    }

    /// Records how the run that just ended went (a parked run has not ended), which live
    /// learned items its requests carried, and rolls back those whose counters now show harm.
    async fn record_outcome(
        &self,
        agent: &AgentId,
        conversation_id: &str,
        outcome: &RunOutcome,
        learned: &[wright_agent::LearnedText],
        budget_tokens: usize,
    ) -> Result<(), DomainError> {
        if *outcome == RunOutcome::Parked {
            return Ok(());
        }
        let events = self.store.events_after(conversation_id, 0).await?;
        let events: Vec<Event> = events.into_iter().map(|stored| stored.event).collect();
        let Some((user_seq, request)) = outcomes::run_start(&events) else { return Ok(()) };
        let specs = self.tools.specs(agent).await.map_err(|error| DomainError::Internal(error.to_string()))?;
        let run_events: Vec<&Event> = events.iter().filter(|event| event.seq >= user_seq).collect();
        let (result, source) = outcomes::judge_run(outcome, &run_events);
        let read_outside = outcomes::read_outside(&run_events, &specs);
        let run = RunRef { conversation_id: conversation_id.to_owned(), user_seq };
        self.store
            .record_run_outcome(&NewRunOutcome {
                agent,
                run: run.clone(),
                end_seq: events.last().map_or(user_seq, |event| event.seq),
                outcome: result,
                source,
                request: &request,
                read_outside,
            })
            .await?;
        let used: Vec<i64> =
            wright_agent::choose_learned(learned, &request, budget_tokens).iter().map(|item| item.id).collect();
        self.store.record_item_uses(&run, &used).await?;
        self.roll_back_harmful(agent, &run).await;
        Ok(())
    }

    /// Rolls back the live items `run` carried whose counters show harm: at least
    /// `[learning] rollback_min_failures` failed runs, more than the runs that succeeded.
    pub async fn roll_back_harmful(&self, agent: &AgentId, run: &RunRef) {
        let items = match self.store.learned_items(agent, Some(ItemStatus::Live)).await {
            Ok(items) => items,
            Err(error) => return tracing::warn!(%error, "could not read the live learned items"),
        };
        for item in items {
            let carried = self.store.item_was_used(item.id, run).await.unwrap_or(false);
            if carried
                && item.used_failure >= self.learning.rollback_min_failures
                && item.used_failure > item.used_success
            {
                let reason = format!(
                    "rolled back by its counters: {} later runs that carried it failed, {} succeeded",
                    item.used_failure, item.used_success
                );
                if let Err(error) = self
                    .store
                    .set_item_status(agent, item.id, ItemStatus::RolledBack, ItemAuthor::Counters, &reason)
                    .await
                {
                    tracing::warn!(%error, item = item.id, "could not roll back a learned item");
                }
            }
        }
    }

    fn publish_status(&self, conversation_id: &str, status: ConversationStatus, error: Option<String>) {
        self.hub.publish(conversation_id, Update::Status { status, error });
    }

    fn publish_events(&self, conversation_id: &str, events: Vec<StoredEvent>) {
        for event in events {
            self.hub.publish(conversation_id, Update::Event(event));
        }
    }
}

/// Removes a run's cancellation token when its task ends, a panic included — but only its
/// own entry, never that of a later run of the same conversation.
struct ActiveGuard {
    runs: Arc<Runs>,
    conversation_id: String,
    run: u64,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let mut active = self.runs.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if active.get(&self.conversation_id).is_some_and(|entry| entry.run == self.run) {
            active.remove(&self.conversation_id);
        }
    }
}

/// The loop's view of one conversation: the store for what lasts, the hub for what streams.
pub struct StoreTranscript {
    store: Store,
    /// The tools' services, for the agent database's summary and the workspace in the system
    /// message.
    databases: Arc<wright_tools::Services>,
    hub: Arc<Hub>,
    agent: AgentId,
    conversation_id: String,
    /// This process's owner id: the run's claim in the store.
    owner: String,
    /// The agent's toolsets: the system message describes only what the agent has.
    toolsets: Vec<wright_core::Toolset>,
    /// The live learned items the run read (to count the runs each was used in).
    learned: Mutex<Vec<wright_agent::LearnedText>>,
}

/// What the system message says of the agent's workspace, roots and shell (and whether its
/// commands reach the network, through the egress proxy).
fn workspace_parts(workspaces: &wright_workspace::Workspaces) -> wright_agent::WorkspaceParts {
    wright_agent::WorkspaceParts {
        path: wright_workspace::WORKSPACE_MOUNT.to_owned(),
        roots: workspaces.config().roots.iter().map(|root| (root.path.display().to_string(), root.writable)).collect(),
        shell: workspaces.shell_status().is_available(),
        network: workspaces.shell_network(),
    }
}

fn message(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl Transcript for StoreTranscript {
    fn system_parts(&self) -> BoxFuture<'_, Result<SystemParts, String>> {
        Box::pin(async move {
            let prompt = self.store.document(&self.agent, DocumentKind::SystemPrompt).await.map_err(message)?;
            let notes = self.store.document(&self.agent, DocumentKind::LearnedNotes).await.map_err(message)?;
            let state_keys = self.store.list_state_keys(&self.agent, None).await.map_err(message)?;
            let max_memory_chars = self.store.memory_config().context_chars;
            let memories = self.store.context_memories(&self.agent, max_memory_chars).await.map_err(message)?;
            let memories = memories
                .into_iter()
                .map(|memory| ContextMemory {
                    id: memory.id,
                    layer: memory.layer,
                    category: memory.category,
                    content: memory.content,
                })
                .collect();
            let has = |toolset| self.toolsets.contains(&toolset);
            let database_summary = if has(wright_core::Toolset::Database) {
                self.databases.databases.summary(&self.agent).await.unwrap_or_else(|error| {
                    tracing::warn!(%error, "could not summarise the agent database");
                    String::new()
                })
            } else {
                String::new()
            };
            let database_notes = if has(wright_core::Toolset::Database) {
                self.store.document(&self.agent, DocumentKind::DbNotes).await.map_err(message)?.content
            } else {
                String::new()
            };
            let skills = if has(wright_core::Toolset::Skills) {
                let enabled = self.store.enabled_skills(&self.agent).await.map_err(message)?;
                enabled.into_iter().map(|(name, description)| ContextSkill { name, description }).collect()
            } else {
                Vec::new()
            };
            let learned: Vec<wright_agent::LearnedText> = self
                .store
                .learned_items(&self.agent, Some(ItemStatus::Live))
                .await
                .map_err(message)?
                .into_iter()
                .map(|item| wright_agent::LearnedText {
                    id: item.id,
                    kind: item.kind,
                    trigger: item.trigger,
                    text: item.text,
                })
                .collect();
            *self.learned.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = learned.clone();
            Ok(SystemParts {
                learned,
                prompt: prompt.content,
                notes: notes.content,
                memories,
                max_memory_chars,
                state_keys,
                database_summary,
                database_notes,
                skills,
                earlier_summary: None,
                workspace: has(wright_core::Toolset::Workspace).then(|| workspace_parts(&self.databases.workspaces)),
            })
        })
    }

    fn skill_body<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            if !self.toolsets.contains(&wright_core::Toolset::Skills) {
                return Ok(None);
            }
            match self.store.skill(&self.agent, name).await {
                Ok(skill) if skill.enabled => Ok(Some(skill.body)),
                Ok(_) | Err(StoreError::ItemNotFound { .. }) => Ok(None),
                Err(error) => Err(message(error)),
            }
        })
    }

    fn events(&self) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            let stored = self.store.events_after(&self.conversation_id, 0).await.map_err(message)?;
            Ok(stored.into_iter().map(|stored| stored.event).collect())
        })
    }

    fn sent_at(&self) -> BoxFuture<'_, Result<BTreeMap<i64, String>, String>> {
        Box::pin(async move {
            let stored = self.store.events_after(&self.conversation_id, 0).await.map_err(message)?;
            Ok(stored
                .iter()
                .filter_map(|stored| match &stored.event.body {
                    wright_core::EventBody::User { text, .. } => {
                        Some((stored.event.seq, self.store.local_time_of(&stored.created_at, text)?))
                    }
                    _ => None,
                })
                .collect())
        })
    }

    fn append(&self, events: Vec<NewEvent>) -> BoxFuture<'_, Result<Vec<Event>, String>> {
        Box::pin(async move {
            let stored = self.store.append_events(&self.conversation_id, &events).await.map_err(message)?;
            let plain = stored.iter().map(|stored| stored.event.clone()).collect();
            for event in stored {
                self.hub.publish(&self.conversation_id, Update::Event(event));
            }
            Ok(plain)
        })
    }

    fn park<'a>(&'a self, call: &'a ParkedCall) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.store
                .create_pending_call(
                    &self.conversation_id,
                    &call.tool_call_id,
                    &call.tool_name,
                    call.kind,
                    &call.arguments,
                    &call.render,
                )
                .await
                .map_err(message)
        })
    }

    fn approved_calls(&self) -> BoxFuture<'_, Result<Vec<ApprovedCall>, String>> {
        Box::pin(async move { self.store.approved_calls(&self.conversation_id).await.map_err(message) })
    }

    fn finish(&self, outcome: &RunOutcome, closing: Vec<NewEvent>) -> BoxFuture<'_, Result<Finish, String>> {
        let (status, close_open_calls, error) = match outcome {
            RunOutcome::Completed | RunOutcome::TurnLimit => (ConversationStatus::Idle, None, None),
            RunOutcome::Parked => (ConversationStatus::Waiting, None, None),
            RunOutcome::Cancelled => (ConversationStatus::Idle, Some(Unfinished::Cancelled), None),
            RunOutcome::Failed { message } => {
                (ConversationStatus::Error, Some(Unfinished::Failed), Some(message.clone()))
            }
        };
        Box::pin(async move {
            let end = RunEnd { closing, status, close_open_calls };
            let finished = self.store.finish_run(&self.conversation_id, &self.owner, &end).await.map_err(message)?;
            let (events, finish) = match finished {
                Finished::Ended(events) => (events, Finish::Ended),
                Finished::Continue(events) => (events, Finish::Continue),
            };
            for event in events {
                self.hub.publish(&self.conversation_id, Update::Event(event));
            }
            if finish == Finish::Ended {
                self.hub.publish(&self.conversation_id, Update::Status { status, error });
                if status == ConversationStatus::Waiting {
                    self.hub.publish(
                        crate::domain::hub::WAITING_TOPIC,
                        Update::Waiting {
                            agent_id: self.agent.to_string(),
                            conversation_id: self.conversation_id.clone(),
                        },
                    );
                }
            }
            Ok(finish)
        })
    }

    fn text_delta(&self, text: &str) {
        self.hub.publish(&self.conversation_id, Update::Delta { text: text.to_owned() });
    }
}
