//! Budget leases: how a request is checked against the budgets without a SQLite transaction
//! on its path.
//!
//! A process holds, per budget scope (an agent, or none), a lease: one reservation row in the
//! store worth a slice of the room the budgets leave. Taking or resizing the slice is one
//! transaction ([`Store::lease_usage`]) that checks every limit exactly, so the slices of two
//! processes on one data directory cannot together pass a budget. Requests are then admitted
//! against the slice in memory, check and reservation one step under the table's lock, and
//! settled in memory (real use replaces the request's reservation); their rows go through the
//! ledger's writer, which lowers the lease's row by each row's use as it writes it.
//!
//! - A request that does not fit what the slice has left goes to the store before it is
//!   refused: the check there is exact (the room outside the lease plus what the lease has
//!   left), so within one process a budget refuses the same request it did with one
//!   reservation per request. The slice kept is [`SLICE_SHARE`] of the room left, at least the
//!   request: near a limit the slices shrink to the request, and every request is checked
//!   in the store.
//! - A lease is checked again in the store every [`RECHECK`] (what other processes spent, the
//!   period's name, the row's expiry); a change of the budgets' settings voids the in-memory
//!   answer at once ([`Leases::settings_changed`]).
//! - The keeper task returns a lease's unused slice when it has been idle for [`IDLE_RETURN`],
//!   and renews the row's expiry while requests are in flight; a process that dies loses its
//!   lease after `LEASE_TTL_MS` (a minute).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use wright_store::{BudgetLimit, BudgetStanding, LeaseAnswer, LeaseHeld, LimitOutside, Store, StoreError, UsageAmount};

/// The share of the room a budget leaves that a lease keeps (at least the request asking).
pub(crate) const SLICE_SHARE: f64 = 0.25;

/// How long a lease admits requests in memory before it is checked in the store again.
pub(crate) const RECHECK: Duration = Duration::from_secs(5);

/// How long a lease with nothing in flight is kept before its unused slice is returned.
pub(crate) const IDLE_RETURN: Duration = Duration::from_secs(2);

/// How often the keeper looks at the leases.
const KEEPER_TICK: Duration = Duration::from_secs(1);

/// How often a lease in use renews its row's expiry (a quarter of `LEASE_TTL_MS`).
const RENEW_EVERY: Duration = Duration::from_millis(wright_store::usage::LEASE_TTL_MS as u64 / 4);

/// The leases of one process (one [`crate::domain::usage::Ledger`]), by scope.
pub(crate) struct Leases {
    store: Store,
    table: tokio::sync::Mutex<HashMap<Option<String>, Lease>>,
    /// Bumped by every change of the budgets' settings; a lease checked under another admits
    /// nothing in memory.
    settings: AtomicU64,
    /// Tells leases apart across a lapse (a request settles into the lease it was admitted by).
    serials: AtomicU64,
    keeper: OnceLock<()>,
    /// How long the keeper leaves an idle lease ([`IDLE_RETURN`]).
    idle_return: Duration,
}

/// One scope's lease.
struct Lease {
    serial: u64,
    /// Its reservation row; None until the first slice.
    id: Option<i64>,
    granted: UsageAmount,
    used: UsageAmount,
    in_flight: usize,
    /// The settings' generation it was last checked under.
    settings: u64,
    /// The limits as last checked, with what was spent and reserved outside the lease.
    limits: Vec<LimitOutside>,
    checked: Instant,
    renewed: Instant,
    last_used: Instant,
}

impl Lease {
    fn new(serial: u64) -> Self {
        let now = Instant::now();
        Self {
            serial,
            id: None,
            granted: UsageAmount::default(),
            used: UsageAmount::default(),
            in_flight: 0,
            settings: 0,
            limits: Vec::new(),
            checked: now,
            renewed: now,
            last_used: now,
        }
    }

    fn left(&self) -> UsageAmount {
        self.granted.minus(self.used)
    }

    /// `asked` fits what is left in every measure a limit counts.
    fn fits(&self, asked: UsageAmount) -> bool {
        let left = self.left();
        self.limits.iter().all(|limit| asked.of(limit.limit.measure) <= left.of(limit.limit.measure))
    }

    /// Takes `asked` from the lease: the limits' standings with it.
    fn take(&mut self, asked: UsageAmount) -> Vec<BudgetStanding> {
        let standings = self
            .limits
            .iter()
            .map(|limit| BudgetStanding {
                limit: limit.limit.clone(),
                spent: limit.outside + self.used.of(limit.limit.measure),
                asked: asked.of(limit.limit.measure),
                period: limit.period.clone(),
            })
            .collect();
        self.used = self.used.plus(asked);
        self.in_flight += 1;
        self.last_used = Instant::now();
        standings
    }

    fn held(&self, agent: &Option<String>) -> LeaseHeld {
        LeaseHeld { id: self.id, agent_id: agent.clone(), granted: self.granted, used: self.used }
    }
}

/// A request admitted under a lease, until it is settled.
#[derive(Debug)]
pub struct Admission {
    scope: Option<String>,
    serial: u64,
    lease: i64,
    reserved: UsageAmount,
}

impl Admission {
    /// The lease's reservation row, which the request's ledger row lowers by its use.
    pub(crate) fn lease(&self) -> i64 {
        self.lease
    }
}

/// The answer to a request.
pub(crate) enum Admitted {
    /// Within every budget; `standings` are the limits with the request (for the soft notices).
    Granted { admission: Admission, standings: Vec<BudgetStanding> },
    /// The first limit the request would pass; nothing was taken.
    Refused(BudgetStanding),
}

impl Leases {
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store,
            table: tokio::sync::Mutex::new(HashMap::new()),
            settings: AtomicU64::new(1),
            serials: AtomicU64::new(1),
            keeper: OnceLock::new(),
            idle_return: IDLE_RETURN,
        }
    }

    /// The budgets' settings changed: no lease admits in memory until checked under them.
    pub(crate) fn settings_changed(&self) {
        self.settings.fetch_add(1, Ordering::AcqRel);
    }

    /// The settings' generation, read before the limits a request is checked against.
    pub(crate) fn generation(&self) -> u64 {
        self.settings.load(Ordering::Acquire)
    }

    /// Checks a request of `asked` against `limits` (those of `agent`'s scope, read under
    /// `generation`) and takes it from the scope's lease: in memory when it fits the lease,
    /// else through the store's exact check, which resizes the lease.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        agent: Option<&str>,
        asked: UsageAmount,
        limits: &[BudgetLimit],
        generation: u64,
    ) -> Result<Admitted, StoreError> {
        let scope = agent.map(str::to_owned);
        let mut table = self.table.lock().await;
        if let Some(lease) = table.get_mut(&scope)
            && let Some(id) = lease.id
            && lease.settings == generation
            && lease.checked.elapsed() < RECHECK
            && lease.fits(asked)
        {
            let standings = lease.take(asked);
            let admission = Admission { scope, serial: lease.serial, lease: id, reserved: asked };
            return Ok(Admitted::Granted { admission, standings });
        }
        // Twice at most: a lease that lapsed is replaced by a new one, which cannot lapse.
        loop {
            let lease = table.entry(scope.clone()).or_insert_with(|| Lease::new(self.next_serial()));
            let held = lease.held(&scope);
            match self.store.lease_usage(&held, asked, limits, SLICE_SHARE).await? {
                LeaseAnswer::Lost => {
                    *lease = Lease::new(self.next_serial());
                }
                LeaseAnswer::Refused(standing) => {
                    if lease.id.is_none() {
                        table.remove(&scope);
                    }
                    return Ok(Admitted::Refused(standing));
                }
                LeaseAnswer::Granted { id, grown, limits: outside } => {
                    let now = Instant::now();
                    lease.id = Some(id);
                    lease.granted = lease.granted.plus(grown);
                    lease.settings = generation;
                    lease.limits = outside;
                    lease.checked = now;
                    lease.renewed = now;
                    let standings = lease.take(asked);
                    let admission = Admission { scope, serial: lease.serial, lease: id, reserved: asked };
                    drop(table);
                    self.start_keeper();
                    return Ok(Admitted::Granted { admission, standings });
                }
            }
        }
    }

    /// Whether a request of `asked` would fit now, taking nothing: the limit it would pass, or
    /// None.
    pub(crate) async fn check(
        &self,
        agent: Option<&str>,
        asked: UsageAmount,
        limits: &[BudgetLimit],
        generation: u64,
    ) -> Result<Option<BudgetStanding>, StoreError> {
        let scope = agent.map(str::to_owned);
        let mut table = self.table.lock().await;
        let held = match table.get(&scope) {
            Some(lease) if lease.id.is_some() && lease.settings == generation && lease.fits(asked) => return Ok(None),
            Some(lease) => lease.held(&scope),
            None => Lease::new(0).held(&scope),
        };
        let mut answer = self.store.check_lease_usage(&held, asked, limits).await?;
        if answer == Some(LeaseAnswer::Lost) {
            // The lease lapsed: what it held no longer counts.
            table.remove(&scope);
            answer = self.store.check_lease_usage(&Lease::new(0).held(&scope), asked, limits).await?;
        }
        Ok(match answer {
            Some(LeaseAnswer::Refused(standing)) => Some(standing),
            None | Some(LeaseAnswer::Granted { .. } | LeaseAnswer::Lost) => None,
        })
    }

    /// A request admitted by `admission` used `real`: that replaces its reservation.
    pub(crate) async fn settle(&self, admission: &Admission, real: UsageAmount) {
        let mut table = self.table.lock().await;
        if let Some(lease) = table.get_mut(&admission.scope)
            && lease.serial == admission.serial
        {
            lease.used = lease.used.minus(admission.reserved).plus(real);
            lease.in_flight = lease.in_flight.saturating_sub(1);
            lease.last_used = Instant::now();
        }
    }

    /// Returns the unused slices of leases with nothing in flight for `idle`, and renews the
    /// others' rows when due.
    pub(crate) async fn keep(&self, idle: Duration) -> Result<(), StoreError> {
        let mut table = self.table.lock().await;
        let mut gone = Vec::new();
        for (scope, lease) in table.iter_mut() {
            let Some(id) = lease.id else { continue };
            if lease.in_flight == 0 && lease.last_used.elapsed() >= idle {
                // What is left goes back; the row keeps the use its writer has yet to write.
                self.store.return_usage_lease(id, lease.left()).await?;
                gone.push(scope.clone());
            } else if lease.renewed.elapsed() >= RENEW_EVERY {
                if self.store.renew_usage_lease(id).await? {
                    lease.renewed = Instant::now();
                } else {
                    gone.push(scope.clone());
                }
            }
        }
        for scope in gone {
            table.remove(&scope);
        }
        Ok(())
    }

    fn next_serial(&self) -> u64 {
        self.serials.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts the task that returns idle leases and renews busy ones; it ends with the leases.
    fn start_keeper(self: &Arc<Self>) {
        self.keeper.get_or_init(|| {
            let leases: Weak<Leases> = Arc::downgrade(self);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(KEEPER_TICK);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(leases) = leases.upgrade() else { return };
                    if let Err(error) = leases.keep(leases.idle_return).await {
                        tracing::warn!(%error, "cannot return or renew a budget lease");
                    }
                }
            });
        });
    }
}

/// A request's size in both measures.
pub(crate) fn asked(tokens: u64, cost_usd: f64) -> UsageAmount {
    UsageAmount { tokens: tokens as f64, cost_usd }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wright_store::{BudgetMeasure, BudgetPeriod, StateLimits, UsageRecord};

    fn tokens_per_day(limit: f64) -> Vec<BudgetLimit> {
        vec![BudgetLimit {
            agent: Some("a".to_owned()),
            period: BudgetPeriod::Day,
            measure: BudgetMeasure::Tokens,
            limit,
            notify_at_percent: Some(80),
        }]
    }

    /// Leases of one "process": its own store handle on the shared file; the keeper never
    /// returns a lease on its own here (the tests return them).
    async fn process(path: &std::path::Path) -> Arc<Leases> {
        let store = Store::open(path, StateLimits::default()).await.unwrap();
        Arc::new(Leases { idle_return: Duration::MAX, ..Leases::new(store) })
    }

    async fn take(leases: &Arc<Leases>, tokens: u64, limits: &[BudgetLimit]) -> Result<Admission, BudgetStanding> {
        match leases.admit(Some("a"), asked(tokens, 0.0), limits, leases.generation()).await.unwrap() {
            Admitted::Granted { admission, .. } => Ok(admission),
            Admitted::Refused(standing) => Err(standing),
        }
    }

    /// The largest request another process could still be granted, to the token.
    async fn room_seen_by_another(leases: &Leases, limits: &[BudgetLimit]) -> u64 {
        let (mut low, mut high) = (0_u64, 100_000_u64);
        while low < high {
            let mid = (low + high).div_ceil(2);
            let refused = leases.check(Some("a"), asked(mid, 0.0), limits, leases.generation()).await.unwrap();
            if refused.is_none() {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        low
    }

    fn record(tokens: i64) -> UsageRecord {
        UsageRecord {
            agent_id: Some("a".to_owned()),
            conversation_id: None,
            run_id: None,
            caller: wright_core::UsageCaller::Person,
            purpose: wright_core::UsagePurpose::Turn,
            connection: "env:openai".to_owned(),
            model: "m".to_owned(),
            prompt_tokens: tokens,
            cached_prompt_tokens: 0,
            completion_tokens: 0,
            reasoning_tokens: None,
            request_id: None,
            duration_ms: 1,
            cost_usd: 0.0,
            estimated: false,
            cut: false,
        }
    }

    #[tokio::test]
    async fn a_lease_takes_a_slice_in_the_store_admits_in_memory_and_counts_written_use_once() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("wright.db");
        let (one, other) = (process(&path).await, process(&path).await);
        let limits = tokens_per_day(1000.0);

        // The first request takes a quarter of the room (250), which the other process sees.
        let first = take(&one, 100, &limits).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 750);
        // The next fits what is left of the slice: admitted in memory, the store unchanged.
        let second = take(&one, 100, &limits).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 750);

        // Settled with less than reserved; the row, once written, lowers the lease's row by
        // its use: the use is counted once, so the other process sees the same room.
        one.settle(&first, asked(30, 0.0)).await;
        one.store.record_usage_batch(&[(record(30), Some(first.lease()))]).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 750);

        // Returned with a request still settling: only the written use and the use not yet
        // written stay counted.
        one.settle(&second, asked(20, 0.0)).await;
        one.keep(Duration::ZERO).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 1000 - 30 - 20);
        one.store.record_usage_batch(&[(record(20), Some(second.lease()))]).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 950);
    }

    #[tokio::test]
    async fn within_one_process_a_budget_refuses_exactly_the_request_that_would_pass_it() {
        let directory = tempfile::tempdir().unwrap();
        let one = process(&directory.path().join("wright.db")).await;
        let limits = tokens_per_day(1000.0);
        let mut in_flight = Vec::new();
        for _ in 0..10 {
            in_flight.push(take(&one, 100, &limits).await.expect("ten requests of 100 fit 1000"));
        }
        let refused = take(&one, 1, &limits).await.expect_err("the eleventh passes the budget");
        assert_eq!((refused.spent, refused.asked), (1000.0, 1.0));
        // One settles with 60 of its 100: exactly 40 fit again, not 41.
        one.settle(&in_flight.pop().unwrap(), asked(60, 0.0)).await;
        assert!(take(&one, 41, &limits).await.is_err());
        take(&one, 40, &limits).await.unwrap();
        assert!(take(&one, 1, &limits).await.is_err());
    }

    #[tokio::test]
    async fn two_processes_cannot_together_pass_a_budget_and_a_returned_slice_is_used_by_the_other() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("wright.db");
        let (one, other) = (process(&path).await, process(&path).await);
        let limits = tokens_per_day(1000.0);
        let (mut first, mut second) = (Vec::new(), Vec::new());
        loop {
            let a = take(&one, 100, &limits).await;
            let b = take(&other, 100, &limits).await;
            if a.is_err() && b.is_err() {
                break;
            }
            first.extend(a);
            second.extend(b);
        }
        assert!((first.len() + second.len()) * 100 <= 1000, "{} + {} requests of 100", first.len(), second.len());
        // The first process's requests end having used nothing and its lease is returned:
        // the other is granted what is left, to the request, and refused after it.
        for admission in &first {
            one.settle(admission, asked(0, 0.0)).await;
        }
        one.keep(Duration::ZERO).await.unwrap();
        while let Ok(admission) = take(&other, 100, &limits).await {
            second.push(admission);
        }
        assert_eq!(second.len(), 10, "the other process has the whole budget, to the request");
        assert_eq!(room_seen_by_another(&one, &limits).await, 0);
    }

    /// A lease holds only the measures its limits count, but its row still carries the use of
    /// the other measure, for a process that counts that one.
    #[tokio::test]
    async fn a_lease_of_token_limits_shows_its_spending_to_a_dollar_limit_elsewhere() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("wright.db");
        let (one, other) = (process(&path).await, process(&path).await);
        let Admitted::Granted { .. } =
            one.admit(Some("a"), asked(100, 1.0), &tokens_per_day(1000.0), one.generation()).await.unwrap()
        else {
            panic!("100 tokens fit 1000");
        };
        let dollars = vec![BudgetLimit {
            agent: Some("a".to_owned()),
            period: BudgetPeriod::Day,
            measure: BudgetMeasure::Usd,
            limit: 1.5,
            notify_at_percent: None,
        }];
        let refused = other.check(Some("a"), asked(0, 1.0), &dollars, other.generation()).await.unwrap();
        assert_eq!(refused.map(|standing| standing.spent), Some(1.0), "the dollar in flight counts");
        assert!(other.check(Some("a"), asked(0, 0.5), &dollars, other.generation()).await.unwrap().is_none());
    }

    /// A process killed holding a lease (it never returns it nor renews it): the others get
    /// its slice back once the lease lapses; a holder whose lease lapsed starts a new one.
    #[tokio::test]
    async fn a_lease_not_renewed_lapses_and_its_slice_counts_no_more() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("wright.db");
        // 2026-11-27T12:00:00Z: the lapse stays within the day.
        let clock = Arc::new(wright_core::FixedClock::at(1_795_780_800_000));
        let open = |clock: Arc<wright_core::FixedClock>| {
            let path = path.clone();
            async move {
                let store = Store::open(&path, StateLimits::default()).await.unwrap();
                let store = store.with_memory(wright_store::MemoryConfig::default(), clock);
                Arc::new(Leases { idle_return: Duration::MAX, ..Leases::new(store) })
            }
        };
        let (killed, other) = (open(Arc::clone(&clock)).await, open(Arc::clone(&clock)).await);
        let limits = tokens_per_day(1000.0);
        take(&killed, 100, &limits).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 750);
        clock.advance_ms(wright_store::usage::LEASE_TTL_MS - 1);
        assert_eq!(room_seen_by_another(&other, &limits).await, 750, "not lapsed yet");
        clock.advance_ms(2);
        assert_eq!(room_seen_by_another(&other, &limits).await, 1000);
        // Had the process lived on (stalled past the lapse), its next check in the store finds
        // the lease gone and takes a new one, counted afresh. (The store's clock is fixed here,
        // the lease's re-check interval is not: a settings change sends it to the store now.)
        killed.settings_changed();
        take(&killed, 100, &limits).await.unwrap();
        assert_eq!(room_seen_by_another(&other, &limits).await, 750);
    }

    #[tokio::test]
    async fn a_change_of_the_budgets_is_checked_in_the_store_before_the_next_request() {
        let directory = tempfile::tempdir().unwrap();
        let one = process(&directory.path().join("wright.db")).await;
        take(&one, 100, &tokens_per_day(1000.0)).await.unwrap();
        // The lease has 150 left in memory, but the budget is now 150 in all.
        one.settings_changed();
        let refused = take(&one, 100, &tokens_per_day(150.0)).await.expect_err("100 + 100 passes 150");
        assert_eq!((refused.spent, refused.asked), (100.0, 100.0));
        take(&one, 50, &tokens_per_day(150.0)).await.unwrap();
    }
}
