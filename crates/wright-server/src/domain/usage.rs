//! The usage ledger at the seam where Wright calls a model: [`MeteredProvider`] wraps the
//! provider a run (or a learning round) talks to, so every request the loop makes — turns and
//! compaction summaries alike — passes through it, and the driver knows nothing of it.
//!
//! For each request, in order:
//! 1. the loop guard: a run that has spent `[agent] max_run_tokens` is not sent further;
//! 2. the budgets ([`Ledger::limits`]: `[budget]`, `[agents.<id>.budget]`, or the Settings
//!    page's in their place) are checked against what is spent plus this request's prompt and
//!    output cap, and that much reserved — one step, against the process's budget lease
//!    ([`crate::domain::lease`]: a slice of the budgets taken in one store transaction, so two
//!    runs or two processes at once cannot overspend together). A request that would pass a
//!    budget is not sent: the run ends with a notice that names the budget and how to raise
//!    it, and the person is told once;
//! 3. the request streams through untouched; its usage is read as the wire reports it;
//! 4. the reservation is settled with the real use in the lease, before the stream's last
//!    event reaches the loop (so the next request's check sees it), also when the stream was
//!    cut or dropped; the row goes to the ledger's writer. A wire that reported no usage (or a
//!    cut stream) is estimated from characters and marked.
//!
//! Without any budget the check is skipped (there is nothing to hold). Either way the row is
//! written beside the stream, off the loop's path.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use wright_core::{AgentId, EventBody, UsageCaller, UsagePurpose};
use wright_llm::{EventStream, LlmError, Provider, Request, ServerFacts, StreamEvent};
use wright_store::{
    BudgetLimit, BudgetMeasure, BudgetPeriod, BudgetScope, BudgetSettings, BudgetStanding, ModelPrice, NewNotification,
    NotificationSource, Store, StoreError, UsageAmount, UsageRecord,
};

use crate::domain::lease::{Admission, Admitted, Leases, asked};
use crate::domain::prices::{Price, Tokens, price_of};

/// The share of a budget at which the person is told, when a budget is set without
/// `notify_at_percent`.
pub const DEFAULT_NOTIFY_AT_PERCENT: u8 = 80;

/// Most rows the ledger's writer puts in one transaction.
const WRITE_BATCH: usize = 256;

/// Characters per token when a request's tokens are estimated (the wire reported none).
const CHARS_PER_TOKEN: u64 = 4;

/// The budgets of config.toml, and the store where the Settings page's and the ledger live.
pub struct Ledger {
    store: Store,
    /// `[budget]`.
    all: BudgetSettings,
    /// `[agents.<id>.budget]`, by agent.
    agents: BTreeMap<String, BudgetSettings>,
    /// The Settings page's prices and budgets, read once and kept until the page changes one
    /// ([`Ledger::settings_changed`]), so a request's path reads no table for them. Held only
    /// to read or replace, never across an await.
    cached: Mutex<Option<Arc<SettingsRead>>>,
    /// Every request's row goes to one writer task that writes what has queued in one
    /// transaction (with the lease it was admitted by, whose row it lowers): nothing waits on
    /// them, and a commit is paid per batch, not per request. Started on the first row (a
    /// runtime is there then).
    writer: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<(UsageRecord, Option<i64>)>>,
    /// Rows queued for the writer, and rows it has handled (written, or failed and logged):
    /// [`Ledger::close`] waits for the one to reach the other.
    queued: AtomicU64,
    handled: Arc<AtomicU64>,
    /// The budget leases requests are admitted against.
    leases: Arc<Leases>,
    /// Budget notices known to be given (budget, period, level): asked of the store once.
    noticed: Mutex<HashSet<(String, String, &'static str)>>,
}

/// What the Settings page set, as last read.
struct SettingsRead {
    prices: Vec<ModelPrice>,
    budgets: Vec<(BudgetScope, BudgetSettings)>,
}

impl Ledger {
    pub fn new(store: Store, all: BudgetSettings, agents: BTreeMap<String, BudgetSettings>) -> Self {
        Self {
            leases: Arc::new(Leases::new(store.clone())),
            store,
            all,
            agents,
            cached: Mutex::new(None),
            writer: std::sync::OnceLock::new(),
            queued: AtomicU64::new(0),
            handled: Arc::new(AtomicU64::new(0)),
            noticed: Mutex::new(HashSet::new()),
        }
    }

    /// The Settings page changed a price or a budget: read them again at the next request,
    /// and check the leases under them.
    pub fn settings_changed(&self) {
        self.leases.settings_changed();
        *self.cached.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// Waits (for `within` at most) until the writer has written the rows queued so far;
    /// false when it did not in time. A usage report reads after it, so it shows the requests
    /// this process finished before it was asked.
    pub async fn written(&self, within: std::time::Duration) -> bool {
        let queued = self.queued.load(Ordering::Acquire);
        let started = Instant::now();
        while self.handled.load(Ordering::Acquire) < queued {
            if started.elapsed() >= within {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        true
    }

    /// At the process's end: waits (for `within` at most) until the writer has written the
    /// rows queued so far, then returns the unused slices of the budget leases that have
    /// nothing in flight (the keeper does it for leases idle a while; a lease not returned
    /// lapses a minute later).
    pub async fn close(&self, within: std::time::Duration) {
        if !self.written(within).await {
            tracing::warn!("the usage ledger's writer did not finish in time; rows are lost");
        }
        if let Err(error) = self.leases.keep(std::time::Duration::ZERO).await {
            tracing::warn!(%error, "cannot return the budget leases");
        }
    }

    async fn settings(&self) -> Result<Arc<SettingsRead>, StoreError> {
        if let Some(read) = self.cached.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone() {
            return Ok(read);
        }
        let read = Arc::new(SettingsRead {
            prices: self.store.model_prices().await?,
            budgets: self.store.budget_settings().await?,
        });
        *self.cached.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&read));
        Ok(read)
    }

    /// Queues a row for the writer task, with the lease its request was admitted by.
    fn record_later(&self, record: UsageRecord, lease: Option<i64>) {
        let writer = self.writer.get_or_init(|| {
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(UsageRecord, Option<i64>)>();
            let store = self.store.clone();
            let handled = Arc::clone(&self.handled);
            tokio::spawn(async move {
                while let Some(first) = receiver.recv().await {
                    let mut batch = vec![first];
                    while batch.len() < WRITE_BATCH
                        && let Ok(next) = receiver.try_recv()
                    {
                        batch.push(next);
                    }
                    if let Err(error) = store.record_usage_batch(&batch).await {
                        tracing::error!(%error, rows = batch.len(), "model requests could not be written to the usage ledger");
                    }
                    handled.fetch_add(batch.len() as u64, Ordering::Release);
                }
            });
            sender
        });
        self.queued.fetch_add(1, Ordering::AcqRel);
        if let Err(unsent) = writer.send((record, lease)) {
            self.handled.fetch_add(1, Ordering::AcqRel);
            tracing::error!(request = ?(unsent.0).0.request_id, "the usage ledger's writer is gone; a row is lost");
        }
    }

    /// With the budgets of `config` (`[budget]`, `[agents.<id>.budget]`).
    pub fn for_config(store: Store, config: &crate::config::Config) -> Self {
        Self::new(
            store,
            config.budget.settings(),
            config.agents.iter().map(|(agent, section)| (agent.clone(), section.budget.settings())).collect(),
        )
    }

    /// The limits a request of `agent` is held to: all agents' and the agent's own, each
    /// from the Settings page when set there, else from config.toml.
    pub async fn limits(&self, agent: Option<&str>) -> Result<Vec<BudgetLimit>, StoreError> {
        let read = self.settings().await?;
        let set = &read.budgets;
        let of = |scope: &BudgetScope| set.iter().find(|(set_scope, _)| set_scope == scope).map(|(_, set)| set.clone());
        let mut limits = limits_of(None, &of(&BudgetScope::All).unwrap_or_else(|| self.all.clone()));
        if let Some(agent) = agent {
            let configured = self.agents.get(agent).cloned().unwrap_or_default();
            let settings = of(&BudgetScope::Agent(agent.to_owned())).unwrap_or(configured);
            limits.extend(limits_of(Some(agent), &settings));
        }
        Ok(limits)
    }

    /// The budgets as config.toml sets them, by scope (for the Settings page to show).
    pub fn configured(&self) -> Vec<(BudgetScope, BudgetSettings)> {
        let mut configured = vec![(BudgetScope::All, self.all.clone())];
        configured
            .extend(self.agents.iter().map(|(agent, settings)| (BudgetScope::Agent(agent.clone()), settings.clone())));
        configured
    }

    /// The price of `model` over `connection` now.
    pub async fn price(&self, connection: &str, kind: &str, model: &str) -> Result<Price, StoreError> {
        Ok(price_of(&self.settings().await?.prices, connection, kind, model))
    }

    /// Why `agent` may not start anything now — a budget with less left than a reply's
    /// `output_cap` tokens, so no request could fit — or None. For the scheduler, which skips
    /// a scheduled run rather than start one that stops at its first request.
    pub async fn spent_budget(&self, agent: &AgentId, output_cap: u64) -> Result<Option<String>, StoreError> {
        let generation = self.leases.generation();
        let limits = self.limits(Some(agent.as_str())).await?;
        if limits.is_empty() {
            return Ok(None);
        }
        // The smallest request there is: no prompt, a reply of the output cap, the smallest sum
        // of money (the model's price is the run's to know).
        let probe = asked(output_cap, f64::MIN_POSITIVE);
        let refused = self.leases.check(Some(agent.as_str()), probe, &limits, generation).await?;
        Ok(refused.as_ref().map(refusal_text))
    }

    /// Checks the budgets of `agent` (all agents' with None) for a request of `tokens` and
    /// `cost_usd` at most, and reserves it: its admission, None when no budget applies, or the
    /// refusal's text (the person told once). For requests made outside a run (embeddings);
    /// a run's go through [`MeteredProvider`].
    pub async fn reserve(&self, agent: Option<&str>, tokens: u64, cost_usd: f64) -> Result<Option<Admission>, String> {
        let generation = self.leases.generation();
        let limits =
            self.limits(agent).await.map_err(|error| format!("Not sent: the budgets cannot be read ({error})"))?;
        if limits.is_empty() {
            return Ok(None);
        }
        match self.leases.admit(agent, asked(tokens, cost_usd), &limits, generation).await {
            Ok(Admitted::Granted { admission, .. }) => Ok(Some(admission)),
            Ok(Admitted::Refused(standing)) => {
                let notified = agent.unwrap_or(AgentId::DEFAULT);
                self.notify_once(notified, &standing, NoticeLevel::Exceeded).await;
                Err(refusal_text(&standing))
            }
            Err(error) => Err(format!("Not sent: the budgets cannot be checked ({error})")),
        }
    }

    /// Settles a request's admission with its real use and writes its row (at once when it
    /// had none, through the writer when it had).
    pub async fn record(&self, admission: Option<Admission>, record: &UsageRecord) {
        match admission {
            Some(admission) => self.settle(&admission, record.clone()).await,
            None => {
                if let Err(error) = self.store.settle_usage(None, record).await {
                    tracing::error!(%error, "a model request could not be written to the usage ledger");
                }
            }
        }
    }

    /// Replaces an admitted request's reservation with its real use in the lease (so the
    /// next check in this process sees it), and queues its row.
    async fn settle(&self, admission: &Admission, record: UsageRecord) {
        let real =
            UsageAmount { tokens: (record.prompt_tokens + record.completion_tokens) as f64, cost_usd: record.cost_usd };
        self.leases.settle(admission, real).await;
        self.record_later(record, Some(admission.lease()));
    }

    /// Tells the person, once per budget and period, that a budget reached its soft
    /// threshold or was spent (canvas and Telegram, through the notifications).
    async fn notify_once(&self, agent: &str, standing: &BudgetStanding, level: NoticeLevel) {
        let name = standing.limit.name();
        let key = (name, standing.period.clone(), level.as_str());
        if self.noticed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&key) {
            return;
        }
        let name = &key.0;
        let first = match self.store.first_budget_notice(name, &standing.period, level.as_str()).await {
            Ok(first) => {
                self.noticed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.clone());
                first
            }
            Err(error) => {
                tracing::warn!(%error, budget = %name, "cannot record a budget notice");
                return;
            }
        };
        if !first {
            return;
        }
        let Ok(agent_id) = AgentId::parse(agent) else { return };
        let (title, text) = match level {
            NoticeLevel::Soft => (
                format!("💰 {} of {} used", percent(standing), budget_title(&standing.limit)),
                format!(
                    "{} spent of {} ({} in {}). Requests stop when it is spent; raise it on the Settings page or in \
                     config.toml.",
                    amount(standing.limit.measure, standing.spent + standing.asked),
                    amount(standing.limit.measure, standing.limit.limit),
                    standing.limit.key(),
                    standing.limit.section()
                ),
            ),
            NoticeLevel::Exceeded => {
                (format!("⛔ {} is reached", budget_title(&standing.limit)), refusal_text(standing))
            }
        };
        let notification = NewNotification {
            source: NotificationSource::Budget,
            title,
            text,
            conversation_id: None,
            schedule_id: None,
        };
        if let Err(error) = self.store.add_notification(&agent_id, &notification).await {
            tracing::warn!(%error, budget = %name, "cannot store a budget notification");
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum NoticeLevel {
    Soft,
    Exceeded,
}

impl NoticeLevel {
    fn as_str(self) -> &'static str {
        match self {
            NoticeLevel::Soft => "soft",
            NoticeLevel::Exceeded => "exceeded",
        }
    }
}

fn limits_of(agent: Option<&str>, settings: &BudgetSettings) -> Vec<BudgetLimit> {
    let percent = Some(settings.notify_at_percent.unwrap_or(DEFAULT_NOTIFY_AT_PERCENT));
    let limit = |period, measure, value: Option<f64>| {
        value.map(|limit| BudgetLimit {
            agent: agent.map(str::to_owned),
            period,
            measure,
            limit,
            notify_at_percent: percent,
        })
    };
    [
        limit(BudgetPeriod::Day, BudgetMeasure::Tokens, settings.tokens_per_day.map(|value| value as f64)),
        limit(BudgetPeriod::Month, BudgetMeasure::Tokens, settings.tokens_per_month.map(|value| value as f64)),
        limit(BudgetPeriod::Day, BudgetMeasure::Usd, settings.usd_per_day),
        limit(BudgetPeriod::Month, BudgetMeasure::Usd, settings.usd_per_month),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn amount(measure: BudgetMeasure, value: f64) -> String {
    match measure {
        BudgetMeasure::Tokens => format!("{} tokens", value.round() as i64),
        BudgetMeasure::Usd => format!("${value:.4}"),
    }
}

fn percent(standing: &BudgetStanding) -> String {
    let share = if standing.limit.limit > 0.0 { (standing.spent + standing.asked) / standing.limit.limit } else { 1.0 };
    format!("{:.0} %", share * 100.0)
}

fn budget_title(limit: &BudgetLimit) -> String {
    let period = match limit.period {
        BudgetPeriod::Day => "daily",
        BudgetPeriod::Month => "monthly",
    };
    let measure = match limit.measure {
        BudgetMeasure::Tokens => "token",
        BudgetMeasure::Usd => "spending",
    };
    match &limit.agent {
        None => format!("the {period} {measure} budget of all agents"),
        Some(agent) => format!("the {period} {measure} budget of agent {agent}"),
    }
}

/// The notice a refused request ends its run with.
fn refusal_text(standing: &BudgetStanding) -> String {
    let limit = &standing.limit;
    let next = match limit.period {
        BudgetPeriod::Day => "tomorrow (UTC)",
        BudgetPeriod::Month => "next month (UTC)",
    };
    format!(
        "Not sent: {} ({}, `{}` in {}) would be passed — {} spent, and this request may take up to {}. Raise `{}` on \
         the Settings page (Budgets) or in {} of config.toml, or wait until {next}.",
        budget_title(limit),
        amount(limit.measure, limit.limit),
        limit.key(),
        limit.section(),
        amount(limit.measure, standing.spent),
        amount(limit.measure, standing.asked),
        limit.key(),
        limit.section(),
    )
}

/// Who a metered provider's requests are for.
#[derive(Debug, Clone)]
pub struct Metering {
    pub agent: Option<String>,
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub caller: UsageCaller,
    pub purpose: UsagePurpose,
    /// The connection's id (`env:openai`, a Settings page connection).
    pub connection: String,
    /// The provider kind (`openai`, `anthropic`, …), for the list prices.
    pub kind: String,
    pub model: String,
    /// The output cap a request without its own is reserved for.
    pub default_output_cap: u64,
    /// The loop guard: tokens this provider's requests may spend together (a run); None for
    /// no guard.
    pub max_run_tokens: Option<u64>,
}

/// A provider whose every request is checked against the budgets and written to the ledger.
pub struct MeteredProvider {
    inner: Arc<dyn Provider>,
    ledger: Arc<Ledger>,
    metering: Arc<Metering>,
    /// Tokens spent by this provider's requests so far (the run's, for the loop guard).
    spent: Arc<AtomicU64>,
    /// The estimated size of the last tool list, keyed by its tools' names: the loop sends the
    /// same list turn after turn, so it is measured once.
    tools_chars: Arc<Mutex<Option<(usize, u64)>>>,
}

impl MeteredProvider {
    pub fn new(inner: Arc<dyn Provider>, ledger: Arc<Ledger>, metering: Metering) -> Self {
        Self {
            inner,
            ledger,
            metering: Arc::new(metering),
            spent: Arc::new(AtomicU64::new(0)),
            tools_chars: Arc::new(Mutex::new(None)),
        }
    }

    /// Tokens this provider's requests have spent.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    /// The prompt's size in characters (system, history, tool schemas), for estimates.
    fn prompt_chars(&self, request: &Request) -> u64 {
        let history: usize = request.history.iter().map(event_chars).sum();
        // The tool list is rebuilt for every request (its address changes), but a run sends the
        // same tools request after request: keyed by their names, the schemas are measured once
        // a list, not serialised again on every request's path.
        let tools_key = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            for tool in request.tools.iter() {
                tool.name.hash(&mut hasher);
            }
            hasher.finish() as usize
        };
        let tools = {
            let mut cached = self.tools_chars.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match *cached {
                Some((key, chars)) if key == tools_key => chars,
                _ => {
                    let chars = request
                        .tools
                        .iter()
                        .map(|tool| {
                            (tool.name.len() + tool.description.len() + tool.parameters.to_string().len()) as u64
                        })
                        .sum();
                    *cached = Some((tools_key, chars));
                    chars
                }
            }
        };
        (request.system.len() + history) as u64 + tools
    }
}

fn event_chars(event: &wright_core::Event) -> usize {
    match &event.body {
        EventBody::User { text, .. } => text.len(),
        EventBody::Assistant { text, .. } => text.len(),
        EventBody::ToolCall { name, arguments, .. } => name.len() + arguments.to_string().len(),
        EventBody::ToolResult { output, .. } => match output {
            serde_json::Value::String(text) => text.len(),
            other => other.to_string().len(),
        },
        _ => 0,
    }
}

/// What streamed of one request, for its row.
#[derive(Default)]
struct Seen {
    usage: Option<wright_llm::Usage>,
    output_chars: u64,
}

impl Seen {
    fn see(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(text) | StreamEvent::ThinkingDelta(text) => self.output_chars += text.len() as u64,
            StreamEvent::ToolCall(call) => self.output_chars += (call.name.len() + call.arguments_json.len()) as u64,
            StreamEvent::Usage(usage) => self.usage = Some(usage.clone()),
            StreamEvent::Thinking(_) | StreamEvent::Finish(_) => {}
        }
    }

    /// The tokens to record, whether they were estimated, and the provider's id.
    fn tokens(&self, prompt_chars: u64) -> (Tokens, Option<u64>, bool, Option<String>) {
        match &self.usage {
            Some(usage) => {
                // Gemini counts reasoning apart from the answer (its total says so); it is
                // generated, and billed, all the same.
                let reasoning_apart = usage.reasoning_tokens.is_some_and(|reasoning| {
                    usage.total_tokens == Some(usage.input_tokens + usage.output_tokens + reasoning)
                });
                let completion =
                    usage.output_tokens + if reasoning_apart { usage.reasoning_tokens.unwrap_or(0) } else { 0 };
                let tokens = Tokens {
                    prompt: usage.input_tokens,
                    cached_prompt: usage.cached_input_tokens.unwrap_or(0),
                    cache_written: usage.cache_write_tokens.unwrap_or(0),
                    completion,
                };
                (tokens, usage.reasoning_tokens, false, usage.request_id.clone())
            }
            None => {
                let tokens = Tokens {
                    prompt: prompt_chars.div_ceil(CHARS_PER_TOKEN),
                    completion: self.output_chars.div_ceil(CHARS_PER_TOKEN),
                    ..Tokens::default()
                };
                (tokens, None, true, None)
            }
        }
    }
}

/// One request between its check and its row.
struct Pending {
    ledger: Arc<Ledger>,
    metering: Arc<Metering>,
    spent: Arc<AtomicU64>,
    price: Price,
    admission: Option<Admission>,
    prompt_chars: u64,
    started: Instant,
    seen: Seen,
}

impl Pending {
    /// Writes the row and settles the reservation; `cut` when the stream did not finish.
    async fn settle(self, cut: bool) {
        let (tokens, reasoning, estimated, request_id) = self.seen.tokens(self.prompt_chars);
        self.spent.fetch_add(tokens.prompt + tokens.completion, Ordering::Relaxed);
        let metering = &self.metering;
        let record = UsageRecord {
            agent_id: metering.agent.clone(),
            conversation_id: metering.conversation_id.clone(),
            run_id: metering.run_id.clone(),
            caller: metering.caller,
            purpose: metering.purpose,
            connection: metering.connection.clone(),
            model: metering.model.clone(),
            prompt_tokens: tokens.prompt as i64,
            cached_prompt_tokens: tokens.cached_prompt as i64,
            completion_tokens: tokens.completion as i64,
            reasoning_tokens: reasoning.map(|reasoning| reasoning as i64),
            request_id,
            duration_ms: self.started.elapsed().as_millis() as i64,
            cost_usd: self.price.cost(&tokens),
            estimated,
            cut,
        };
        match &self.admission {
            // A budget's next check must see this use with its reservation gone: in the lease,
            // now; the row follows through the writer.
            Some(admission) => self.ledger.settle(admission, record).await,
            None => self.ledger.record_later(record, None),
        }
    }
}

/// Whether a request may be sent: the loop guard, then the budgets (checked and reserved in
/// one step against the lease). The price it is costed at and its admission, or the refusal
/// the loop reads as "not sent".
async fn admit(
    ledger: &Ledger,
    metering: &Metering,
    spent: &AtomicU64,
    prompt_chars: u64,
    output_cap: u64,
) -> Result<(Price, Option<Admission>), LlmError> {
    let prompt_tokens = prompt_chars.div_ceil(CHARS_PER_TOKEN);
    let reserved_tokens = prompt_tokens + output_cap;
    if let Some(limit) = metering.max_run_tokens {
        let so_far = spent.load(Ordering::Relaxed);
        if so_far + reserved_tokens > limit {
            let message = format!(
                "Not sent: this run has used {so_far} tokens, and the next request may take up to \
                 {reserved_tokens} more, past the run's limit of {limit} (`max_run_tokens` in [agent] of \
                 config.toml). The run ends here; send a message to go on, or raise the limit."
            );
            return Err(LlmError::NotSent(message));
        }
    }
    let price = match ledger.price(&metering.connection, &metering.kind, &metering.model).await {
        Ok(price) => price,
        Err(error) => {
            tracing::error!(%error, "cannot read the prices; the request is costed at 0");
            Price::FREE
        }
    };
    let generation = ledger.leases.generation();
    let limits = match ledger.limits(metering.agent.as_deref()).await {
        Ok(limits) => limits,
        Err(error) => return Err(LlmError::NotSent(format!("Not sent: the budgets cannot be read ({error})"))),
    };
    let mut admitted = None;
    if !limits.is_empty() {
        let request = asked(
            reserved_tokens,
            price.cost(&Tokens { prompt: prompt_tokens, completion: output_cap, ..Tokens::default() }),
        );
        match ledger.leases.admit(metering.agent.as_deref(), request, &limits, generation).await {
            Ok(Admitted::Granted { admission, standings }) => {
                admitted = Some(admission);
                for standing in standings {
                    let threshold = f64::from(standing.limit.notify_at_percent.unwrap_or(100)) / 100.0;
                    if standing.spent + standing.asked >= standing.limit.limit * threshold
                        && let Some(agent) = &metering.agent
                    {
                        ledger.notify_once(agent, &standing, NoticeLevel::Soft).await;
                    }
                }
            }
            Ok(Admitted::Refused(standing)) => {
                if let Some(agent) = &metering.agent {
                    ledger.notify_once(agent, &standing, NoticeLevel::Exceeded).await;
                }
                return Err(LlmError::NotSent(refusal_text(&standing)));
            }
            Err(error) => {
                return Err(LlmError::NotSent(format!("Not sent: the budgets cannot be checked ({error})")));
            }
        }
    }
    Ok((price, admitted))
}

impl Provider for MeteredProvider {
    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        let inner = Arc::clone(&self.inner);
        let ledger = Arc::clone(&self.ledger);
        let metering = Arc::clone(&self.metering);
        let spent = Arc::clone(&self.spent);
        let prompt_chars = self.prompt_chars(&request);
        let output_cap = request.max_output_tokens.map(u64::from).unwrap_or(metering.default_output_cap);
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<StreamEvent, LlmError>>(64);
        // The task owns the request from its check to its row: it ends when the provider's
        // stream ends, or when the loop drops the stream (the receiver), which drops the
        // provider's stream and so the HTTP request; either way the row is written.
        tokio::spawn(async move {
            let (price, admission) = match admit(&ledger, &metering, &spent, prompt_chars, output_cap).await {
                Ok(admitted) => admitted,
                Err(refusal) => {
                    sender.send(Err(refusal)).await.ok();
                    return;
                }
            };
            let mut pending = Pending {
                ledger,
                metering,
                spent,
                price,
                admission,
                prompt_chars,
                started: Instant::now(),
                seen: Seen::default(),
            };
            let mut stream = inner.stream(request, cancel);
            while let Some(item) = stream.next().await {
                let last = matches!(item, Ok(StreamEvent::Finish(_)) | Err(_));
                if let Ok(event) = &item {
                    pending.seen.see(event);
                }
                if last {
                    let cut = item.is_err();
                    // A budget's next check must see this use: settled in the lease before the
                    // loop hears the end. The row itself is queued for the ledger's writer.
                    pending.settle(cut).await;
                    sender.send(item).await.ok();
                    return;
                }
                if sender.send(item).await.is_err() {
                    // The loop went away mid-stream (cancelled, or it stopped a repeating
                    // reply): what streamed so far is recorded as a cut request.
                    drop(stream);
                    pending.settle(true).await;
                    return;
                }
            }
            // The provider's stream ended without a finish or an error (it never does, by its
            // contract; recorded as cut all the same).
            pending.settle(true).await;
        });
        futures::stream::unfold(
            receiver,
            |mut receiver| async move { receiver.recv().await.map(|item| (item, receiver)) },
        )
        .boxed()
    }

    fn label(&self) -> String {
        self.inner.label()
    }

    fn context_window(&self) -> BoxFuture<'_, Option<u32>> {
        self.inner.context_window()
    }

    fn server_facts(&self) -> BoxFuture<'_, ServerFacts> {
        self.inner.server_facts()
    }
}

/// A usage report as text, for a terminal or a chat: one line per group and the totals.
pub fn report_text(
    rows: &[wright_store::UsageRow],
    totals: &wright_store::UsageTotals,
    by: wright_store::UsageGrouping,
    since_ms: i64,
) -> String {
    let by = match by {
        wright_store::UsageGrouping::Agent => "agent",
        wright_store::UsageGrouping::Model => "model",
        wright_store::UsageGrouping::Day => "day",
        wright_store::UsageGrouping::Caller => "caller",
    };
    let since = wright_core::iso_from_ms(since_ms);
    let mut text = format!("Usage since {} UTC, by {by}:\n", since.get(..16).unwrap_or(&since).replace('T', " "));
    let line = |key: &str, totals: &wright_store::UsageTotals| {
        let estimated = if totals.estimated_requests > 0 {
            format!(" ({} estimated)", totals.estimated_requests)
        } else {
            String::new()
        };
        format!(
            "{key}: {} requests{estimated}, {} prompt tokens ({} cached), {} completion tokens, ${:.4}\n",
            totals.requests,
            totals.prompt_tokens,
            totals.cached_prompt_tokens,
            totals.completion_tokens,
            totals.cost_usd
        )
    };
    if rows.is_empty() {
        text.push_str("no model requests\n");
    }
    for row in rows {
        text.push_str(&format!("  {}", line(&row.key, &row.totals)));
    }
    text.push_str(&line("Total", totals));
    text
}

/// The model a learning round drafts with: metered as caller `learning` and purpose
/// `learning`, under the agent's budgets and the loop guard, like a run's (replays are runs and
/// are metered as such).
pub fn learning_model(
    ledger: &Arc<Ledger>,
    model: &crate::domain::models::ConfiguredModel,
    agent: &AgentId,
    loop_config: &wright_agent::LoopConfig,
) -> wright_agent::ProviderModel {
    let metering = Metering {
        agent: Some(agent.as_str().to_owned()),
        conversation_id: None,
        run_id: None,
        caller: UsageCaller::Learning,
        purpose: UsagePurpose::Learning,
        connection: model.connection.clone(),
        kind: model.kind.clone(),
        model: model.name.clone(),
        default_output_cap: loop_config.reserve_output_tokens as u64,
        max_run_tokens: Some(loop_config.run_token_limit(model.context_window.map(u64::from))),
    };
    wright_agent::ProviderModel(Arc::new(MeteredProvider::new(
        Arc::clone(&model.provider),
        Arc::clone(ledger),
        metering,
    )))
}
