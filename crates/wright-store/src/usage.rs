//! The usage ledger, budgets and prices: what every model request used and cost, what a
//! request in flight may still spend, and the limits the person set.
//!
//! Invariants:
//! - A ledger row is only inserted, never updated; its cost is computed by the caller at the
//!   price of the moment and stored, so a price change does not rewrite the past.
//! - The budget check and the reservation are one `BEGIN IMMEDIATE` transaction
//!   ([`Store::reserve_usage`]): two requests at once cannot both pass the last of a budget.
//!   Settling ([`Store::settle_usage`]) deletes the reservation and inserts the row in one
//!   transaction, so a request is never counted twice nor not at all.
//! - A reservation older than [`STALE_RESERVATION_MS`] belongs to a process that died before
//!   settling it and no longer counts.
//! - A lease ([`Store::lease_usage`]) is a reservation row a process holds for many requests:
//!   its value is what the process was granted less the real use of its requests already
//!   written (the writer lowers it in the transaction that writes each row,
//!   [`Store::record_usage_batch`]), so the ledger's totals plus the reservations count every
//!   request once. It lapses at `expires_at` unless its holder renews it.
//! - Days and months are UTC.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::{UsageCaller, UsagePurpose};

use crate::{Store, StoreError};

/// A reservation not settled within an hour was left by a process that died.
pub const STALE_RESERVATION_MS: i64 = 3_600_000;

/// How long a lease counts without its holder renewing it: a process that died holding one
/// returns its slice to the others this long after.
pub const LEASE_TTL_MS: i64 = 60_000;

/// One model request, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRecord {
    pub agent_id: Option<String>,
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub caller: UsageCaller,
    pub purpose: UsagePurpose,
    pub connection: String,
    pub model: String,
    /// Every prompt token, cached ones included.
    pub prompt_tokens: i64,
    pub cached_prompt_tokens: i64,
    pub completion_tokens: i64,
    pub reasoning_tokens: Option<i64>,
    pub request_id: Option<String>,
    pub duration_ms: i64,
    pub cost_usd: f64,
    /// The wire reported no usage; the counts are an estimate.
    pub estimated: bool,
    /// The response never finished (cut, failed, cancelled); the row holds what it used.
    pub cut: bool,
}

/// The length of a budget's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    Day,
    Month,
}

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMeasure {
    /// Prompt and completion tokens.
    Tokens,
    Usd,
}

/// One limit to hold: over all agents (`agent: None`) or one agent's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetLimit {
    pub agent: Option<String>,
    pub period: BudgetPeriod,
    pub measure: BudgetMeasure,
    pub limit: f64,
    /// Notify once when this share of the limit is spent (reserved included).
    pub notify_at_percent: Option<u8>,
}

impl BudgetLimit {
    /// The key's name as config.toml spells it (`usd_per_day`, `tokens_per_month`, …).
    pub fn key(&self) -> &'static str {
        match (self.measure, self.period) {
            (BudgetMeasure::Tokens, BudgetPeriod::Day) => "tokens_per_day",
            (BudgetMeasure::Tokens, BudgetPeriod::Month) => "tokens_per_month",
            (BudgetMeasure::Usd, BudgetPeriod::Day) => "usd_per_day",
            (BudgetMeasure::Usd, BudgetPeriod::Month) => "usd_per_month",
        }
    }

    /// Where it is set: `[budget]` or `[agents.<id>.budget]`.
    pub fn section(&self) -> String {
        match &self.agent {
            None => "[budget]".to_owned(),
            Some(agent) => format!("[agents.{agent}.budget]"),
        }
    }

    /// The budget's stable name, for notices given once: `all/usd_per_day`.
    pub fn name(&self) -> String {
        match &self.agent {
            None => format!("all/{}", self.key()),
            Some(agent) => format!("agent:{agent}/{}", self.key()),
        }
    }
}

/// What a request in flight may spend at most: its prompt and its output cap.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageReservation {
    pub agent_id: Option<String>,
    pub tokens: i64,
    pub cost_usd: f64,
}

/// A limit and how much of it is spent, reserved included.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetStanding {
    pub limit: BudgetLimit,
    /// Spent and reserved before this request.
    pub spent: f64,
    /// This request's reservation in the budget's measure.
    pub asked: f64,
    /// The period, as notices name it (`2026-11-27`, `2026-11`).
    pub period: String,
}

/// The answer to a reservation.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// Within every budget; the id settles it. `standings` are the limits after it.
    Granted { id: i64, standings: Vec<BudgetStanding> },
    /// The first limit the request would pass; nothing was reserved.
    Refused(BudgetStanding),
}

/// An amount of use in both measures a budget can count.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageAmount {
    pub tokens: f64,
    pub cost_usd: f64,
}

impl UsageAmount {
    /// The amount in `measure`.
    pub fn of(self, measure: BudgetMeasure) -> f64 {
        measured_f(measure, self.tokens, self.cost_usd)
    }

    pub fn plus(self, other: UsageAmount) -> UsageAmount {
        UsageAmount { tokens: self.tokens + other.tokens, cost_usd: self.cost_usd + other.cost_usd }
    }

    pub fn minus(self, other: UsageAmount) -> UsageAmount {
        UsageAmount { tokens: self.tokens - other.tokens, cost_usd: self.cost_usd - other.cost_usd }
    }
}

/// A lease as its holder knows it, for the store's exact check.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseHeld {
    /// Its reservation row; None before the first slice.
    pub id: Option<i64>,
    pub agent_id: Option<String>,
    /// All it was granted (the row holds this less its requests' use already written).
    pub granted: UsageAmount,
    /// Its requests' use: reservations of those in flight, real use of those settled.
    pub used: UsageAmount,
}

/// One limit as a lease sees it: what is spent and reserved outside the lease.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitOutside {
    pub limit: BudgetLimit,
    pub outside: f64,
    /// The period, as notices name it.
    pub period: String,
}

/// The answer to a lease's check.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseAnswer {
    /// The request fits, and the lease's row `id` grew (or shrank, when negative) by `grown`.
    Granted { id: i64, grown: UsageAmount, limits: Vec<LimitOutside> },
    /// The first limit the request would pass; the lease is unchanged.
    Refused(BudgetStanding),
    /// The lease's row lapsed (its holder did not renew it in time): start a new lease.
    Lost,
}

/// How the summary groups its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageGrouping {
    Agent,
    Model,
    Day,
    Caller,
}

/// Sums of a set of ledger rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    pub requests: i64,
    pub prompt_tokens: i64,
    pub cached_prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_usd: f64,
    /// Rows whose counts are estimates.
    pub estimated_requests: i64,
}

/// One group of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    /// The agent, `provider model`, the UTC day or the caller; `-` when there is none (an
    /// embedding of no agent, a connection test).
    pub key: String,
    #[serde(flatten)]
    pub totals: UsageTotals,
}

/// A conversation's usage: its sums and its last request's prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConversationUsage {
    #[serde(flatten)]
    pub totals: UsageTotals,
    /// The prompt tokens of the conversation's last request (what the context held).
    pub last_prompt_tokens: Option<i64>,
    /// Its completion tokens (the reply, which the next request sends too).
    pub last_completion_tokens: Option<i64>,
}

/// A price per million tokens, set on the Settings page for a connection and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    pub connection: String,
    pub model: String,
    pub input_per_mtok: f64,
    pub cached_input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// Budgets of one scope as the Settings page sets them; `None` is no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetSettings {
    pub tokens_per_day: Option<i64>,
    pub tokens_per_month: Option<i64>,
    pub usd_per_day: Option<f64>,
    pub usd_per_month: Option<f64>,
    pub notify_at_percent: Option<u8>,
}

/// Where a budget set on the Settings page applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetScope {
    All,
    Agent(String),
}

impl BudgetScope {
    fn key(&self) -> String {
        match self {
            BudgetScope::All => "all".to_owned(),
            BudgetScope::Agent(agent) => format!("agent:{agent}"),
        }
    }

    fn parse(key: &str) -> Option<Self> {
        if key == "all" {
            return Some(BudgetScope::All);
        }
        key.strip_prefix("agent:").map(|agent| BudgetScope::Agent(agent.to_owned()))
    }
}

/// The scope of `usage_totals` that counts every agent.
const ALL_AGENTS: &str = "*";

fn measure_index(measure: BudgetMeasure) -> usize {
    match measure {
        BudgetMeasure::Tokens => 0,
        BudgetMeasure::Usd => 1,
    }
}

/// A period as `usage_totals` names it.
fn period_name(period: BudgetPeriod) -> &'static str {
    match period {
        BudgetPeriod::Day => "day",
        BudgetPeriod::Month => "month",
    }
}

/// When `period` began that holds `now_ms`, and its name (UTC).
pub fn period_start(now_ms: i64, period: BudgetPeriod) -> (i64, String) {
    let date = TimeZone::UTC.to_datetime(Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH)).date();
    let (first, name) = match period {
        BudgetPeriod::Day => (date, date.to_string()),
        BudgetPeriod::Month => (date.first_of_month(), format!("{:04}-{:02}", date.year(), date.month())),
    };
    let start = TimeZone::UTC
        .to_ambiguous_timestamp(first.to_datetime(jiff::civil::Time::midnight()))
        .compatible()
        .map(|start| start.as_millisecond())
        .unwrap_or(0);
    (start, name)
}

/// When a usage report begins: `7d`, `24h` (ago), a UTC day `2026-11-01`, or an RFC 3339 time.
/// None: the start of the current UTC month.
pub fn parse_since(since: Option<&str>, now_ms: i64) -> Result<i64, String> {
    let Some(since) = since.map(str::trim).filter(|since| !since.is_empty()) else {
        return Ok(period_start(now_ms, BudgetPeriod::Month).0);
    };
    let ago = |count: &str, unit_ms: i64| {
        count.parse::<i64>().ok().filter(|count| *count >= 0).map(|count| now_ms - count.saturating_mul(unit_ms))
    };
    let relative = if let Some(days) = since.strip_suffix('d') {
        ago(days, 86_400_000)
    } else if let Some(hours) = since.strip_suffix('h') {
        ago(hours, 3_600_000)
    } else {
        None
    };
    if let Some(at) = relative {
        return Ok(at);
    }
    if let Ok(date) = since.parse::<jiff::civil::Date>() {
        return jiff::tz::TimeZone::UTC
            .to_ambiguous_timestamp(date.to_datetime(jiff::civil::Time::midnight()))
            .compatible()
            .map(|at| at.as_millisecond())
            .map_err(|error| error.to_string());
    }
    since.parse::<jiff::Timestamp>().map(|at| at.as_millisecond()).map_err(|_| {
        format!("`since` is `7d`, `24h`, a day like `2026-11-01` or a time like `2026-11-01T08:00:00Z`, not {since:?}")
    })
}

fn measured(measure: BudgetMeasure, tokens: i64, cost_usd: f64) -> f64 {
    measured_f(measure, tokens as f64, cost_usd)
}

fn measured_f(measure: BudgetMeasure, tokens: f64, cost_usd: f64) -> f64 {
    match measure {
        BudgetMeasure::Tokens => tokens,
        BudgetMeasure::Usd => cost_usd,
    }
}

/// Drops reservations that no longer count: a request's left for an hour, a lease not renewed.
async fn sweep_reservations(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM usage_reservations WHERE (expires_at IS NULL AND at < ?) OR expires_at < ?")
        .bind(now - STALE_RESERVATION_MS)
        .bind(now)
        .execute(&mut **transaction)
        .await?;
    Ok(())
}

/// What `limit`'s period has spent (its running total, one row kept by every insert) plus
/// what is reserved, in its measure; and the period's name.
async fn spent_and_reserved(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    limit: &BudgetLimit,
    now: i64,
) -> Result<(f64, String), StoreError> {
    let (start, period) = period_start(now, limit.period);
    let row = sqlx::query(
        "SELECT \
           (SELECT COALESCE(SUM(tokens), 0) FROM usage_totals WHERE scope = ?1 AND period = ?2 AND start = ?3) \
         + (SELECT COALESCE(SUM(tokens), 0) FROM usage_reservations WHERE (?4 IS NULL OR agent_id = ?4)) \
           AS tokens, \
           (SELECT COALESCE(SUM(cost_usd), 0.0) FROM usage_totals WHERE scope = ?1 AND period = ?2 AND start = ?3) \
         + (SELECT COALESCE(SUM(cost_usd), 0.0) FROM usage_reservations WHERE (?4 IS NULL OR agent_id = ?4)) \
           AS cost_usd",
    )
    .bind(limit.agent.as_deref().unwrap_or(ALL_AGENTS))
    .bind(period_name(limit.period))
    .bind(start)
    .bind(&limit.agent)
    .fetch_one(&mut **transaction)
    .await?;
    Ok((measured(limit.measure, row.try_get("tokens")?, row.try_get("cost_usd")?), period))
}

const TOTALS: &str = "COUNT(*) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, \
     COALESCE(SUM(cached_prompt_tokens), 0) AS cached_prompt_tokens, \
     COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_usd), 0.0) AS cost_usd, \
     COALESCE(SUM(estimated), 0) AS estimated_requests";

fn totals_of(row: &sqlx::sqlite::SqliteRow) -> Result<UsageTotals, StoreError> {
    Ok(UsageTotals {
        requests: row.try_get("requests")?,
        prompt_tokens: row.try_get("prompt_tokens")?,
        cached_prompt_tokens: row.try_get("cached_prompt_tokens")?,
        completion_tokens: row.try_get("completion_tokens")?,
        cost_usd: row.try_get("cost_usd")?,
        estimated_requests: row.try_get("estimated_requests")?,
    })
}

impl Store {
    /// Checks `limits` against what is spent and reserved in their periods plus `reservation`,
    /// and reserves it when all hold — one transaction.
    pub async fn reserve_usage(
        &self,
        reservation: &UsageReservation,
        limits: &[BudgetLimit],
    ) -> Result<Reserved, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        sweep_reservations(&mut transaction, now).await?;
        let mut standings = Vec::with_capacity(limits.len());
        for limit in limits {
            if limit.agent.is_some() && limit.agent != reservation.agent_id {
                continue;
            }
            let (spent, period) = spent_and_reserved(&mut transaction, limit, now).await?;
            let asked = measured(limit.measure, reservation.tokens, reservation.cost_usd);
            let standing = BudgetStanding { limit: limit.clone(), spent, asked, period };
            if spent + asked > limit.limit {
                transaction.rollback().await?;
                return Ok(Reserved::Refused(standing));
            }
            standings.push(standing);
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO usage_reservations (at, agent_id, tokens, cost_usd) VALUES (?, ?, ?, ?) RETURNING id",
        )
        .bind(now)
        .bind(&reservation.agent_id)
        .bind(reservation.tokens)
        .bind(reservation.cost_usd)
        .fetch_one(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(Reserved::Granted { id, standings })
    }

    /// Checks a request of `asked` against `limits` for the holder of a lease — exactly: the
    /// request fits when everything spent and reserved outside the lease, plus the lease's
    /// own use, plus `asked` stays within every limit — and resizes the lease's row (creating
    /// it) so that what it has left is `share` of the room left, and at least `asked`. One
    /// transaction, so two processes' leases cannot together pass a budget.
    pub async fn lease_usage(
        &self,
        held: &LeaseHeld,
        asked: UsageAmount,
        limits: &[BudgetLimit],
        share: f64,
    ) -> Result<LeaseAnswer, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let (free, outside) = match check_lease(&mut transaction, held, asked, limits, now).await? {
            Ok(fits) => fits,
            Err(answer) => {
                transaction.commit().await?;
                return Ok(answer);
            }
        };
        let left = held.granted.minus(held.used);
        let grow = |measure: BudgetMeasure| -> f64 {
            // A measure no limit of the lease counts: the row holds the lease's use not yet
            // written and this request, nothing more, so a process that does count the measure
            // sees them.
            let Some(free) = free[measure_index(measure)] else { return asked.of(measure) - left.of(measure) };
            // What the lease could still admit, and what it keeps of it.
            let room = free + left.of(measure);
            let mut kept = (room * share).max(asked.of(measure));
            if measure == BudgetMeasure::Tokens {
                kept = kept.floor().max(asked.of(measure));
            }
            kept - left.of(measure)
        };
        let grown = UsageAmount { tokens: grow(BudgetMeasure::Tokens), cost_usd: grow(BudgetMeasure::Usd) };
        let expires_at = now + LEASE_TTL_MS;
        let id = match held.id {
            Some(id) => {
                sqlx::query(
                    "UPDATE usage_reservations SET tokens = tokens + ?, cost_usd = cost_usd + ?, expires_at = ? \
                     WHERE id = ?",
                )
                .bind(grown.tokens as i64)
                .bind(grown.cost_usd)
                .bind(expires_at)
                .bind(id)
                .execute(&mut *transaction)
                .await?;
                id
            }
            None => {
                sqlx::query_scalar(
                    "INSERT INTO usage_reservations (at, agent_id, tokens, cost_usd, expires_at) \
                     VALUES (?, ?, ?, ?, ?) RETURNING id",
                )
                .bind(now)
                .bind(&held.agent_id)
                .bind(grown.tokens as i64)
                .bind(grown.cost_usd)
                .bind(expires_at)
                .fetch_one(&mut *transaction)
                .await?
            }
        };
        transaction.commit().await?;
        Ok(LeaseAnswer::Granted { id, grown, limits: outside })
    }

    /// Whether a request of `asked` fits now for the holder of a lease, as
    /// [`Store::lease_usage`] checks it, reserving nothing: None when it fits, else the
    /// refusal (or the lease's lapse).
    pub async fn check_lease_usage(
        &self,
        held: &LeaseHeld,
        asked: UsageAmount,
        limits: &[BudgetLimit],
    ) -> Result<Option<LeaseAnswer>, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let answer = check_lease(&mut transaction, held, asked, limits, now).await?.err();
        transaction.commit().await?;
        Ok(answer)
    }

    /// Keeps a lease counting for another [`LEASE_TTL_MS`]; false when it already lapsed.
    pub async fn renew_usage_lease(&self, id: i64) -> Result<bool, StoreError> {
        let renewed = sqlx::query("UPDATE usage_reservations SET expires_at = ? WHERE id = ?")
            .bind(self.clock.now_ms() + LEASE_TTL_MS)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Returns what a lease holds beyond its requests' use (`unused`): the row keeps only the
    /// use not yet written, which the writer then takes off, and lapses soon after.
    pub async fn return_usage_lease(&self, id: i64, unused: UsageAmount) -> Result<(), StoreError> {
        sqlx::query("UPDATE usage_reservations SET tokens = tokens - ?, cost_usd = cost_usd - ? WHERE id = ?")
            .bind(unused.tokens as i64)
            .bind(unused.cost_usd)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Writes a request's row and drops its reservation (when it had one), together.
    pub async fn settle_usage(&self, reservation: Option<i64>, record: &UsageRecord) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        if let Some(id) = reservation {
            sqlx::query("DELETE FROM usage_reservations WHERE id = ?").bind(id).execute(&mut *transaction).await?;
        }
        insert_record(&mut transaction, record, now).await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Writes rows in one transaction (the ledger's writer batches them, so each costs an
    /// insert, not a commit); a row admitted under a lease lowers the lease's row by its real
    /// use in the same transaction, so the use is counted once.
    pub async fn record_usage_batch(&self, records: &[(UsageRecord, Option<i64>)]) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        // The leases' use in this batch, summed: one update a lease, not one a row.
        let mut leased: Vec<(i64, i64, f64)> = Vec::new();
        for (record, lease) in records {
            insert_record(&mut transaction, record, now).await?;
            if let Some(lease) = *lease {
                let tokens = record.prompt_tokens + record.completion_tokens;
                match leased.iter_mut().find(|(id, _, _)| *id == lease) {
                    Some((_, sum_tokens, sum_cost)) => {
                        *sum_tokens += tokens;
                        *sum_cost += record.cost_usd;
                    }
                    None => leased.push((lease, tokens, record.cost_usd)),
                }
            }
        }
        for (lease, tokens, cost_usd) in leased {
            sqlx::query("UPDATE usage_reservations SET tokens = tokens - ?, cost_usd = cost_usd - ? WHERE id = ?")
                .bind(tokens)
                .bind(cost_usd)
                .bind(lease)
                .execute(&mut *transaction)
                .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Records that a budget notice of `level` (`soft`, `exceeded`) was given for `budget` in
    /// `period`; false when it already was (the caller then says nothing).
    pub async fn first_budget_notice(&self, budget: &str, period: &str, level: &str) -> Result<bool, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO budget_notices (budget, period, level, at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (budget, period, level) DO NOTHING",
        )
        .bind(budget)
        .bind(period)
        .bind(level)
        .bind(self.clock.now_ms())
        .execute(&self.writer)
        .await?;
        Ok(inserted.rows_affected() == 1)
    }

    /// The ledger since `since_ms`, grouped, with the totals of all of it.
    pub async fn usage_summary(
        &self,
        since_ms: i64,
        by: UsageGrouping,
    ) -> Result<(Vec<UsageRow>, UsageTotals), StoreError> {
        let key = match by {
            UsageGrouping::Agent => "COALESCE(agent_id, '-')",
            UsageGrouping::Model => "connection || ' ' || model",
            // `at` is in milliseconds; the day is UTC's.
            UsageGrouping::Day => "date(at / 1000, 'unixepoch')",
            UsageGrouping::Caller => "caller",
        };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {key} AS key, {TOTALS} FROM usage_records WHERE at >= ? GROUP BY 1 ORDER BY 1"
        )))
        .bind(since_ms)
        .fetch_all(&self.reader)
        .await?;
        let rows = rows
            .iter()
            .map(|row| Ok(UsageRow { key: row.try_get("key")?, totals: totals_of(row)? }))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let all = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {TOTALS} FROM usage_records WHERE at >= ?")))
            .bind(since_ms)
            .fetch_one(&self.reader)
            .await?;
        Ok((rows, totals_of(&all)?))
    }

    /// A conversation's usage so far.
    pub async fn conversation_usage(&self, conversation_id: &str) -> Result<ConversationUsage, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TOTALS}, \
               (SELECT prompt_tokens FROM usage_records WHERE conversation_id = ?1 AND purpose = 'turn' \
                  ORDER BY id DESC LIMIT 1) AS last_prompt_tokens, \
               (SELECT completion_tokens FROM usage_records WHERE conversation_id = ?1 AND purpose = 'turn' \
                  ORDER BY id DESC LIMIT 1) AS last_completion_tokens \
             FROM usage_records WHERE conversation_id = ?1"
        )))
        .bind(conversation_id)
        .fetch_one(&self.reader)
        .await?;
        Ok(ConversationUsage {
            totals: totals_of(&row)?,
            last_prompt_tokens: row.try_get("last_prompt_tokens")?,
            last_completion_tokens: row.try_get("last_completion_tokens")?,
        })
    }

    /// Every ledger row since `since_ms`, oldest first (the CSV export).
    pub async fn usage_records(&self, since_ms: i64) -> Result<Vec<(i64, UsageRecord)>, StoreError> {
        let rows = sqlx::query(
            "SELECT at, agent_id, conversation_id, run_id, caller, purpose, connection, model, prompt_tokens, \
               cached_prompt_tokens, completion_tokens, reasoning_tokens, request_id, duration_ms, cost_usd, \
               estimated, cut FROM usage_records WHERE at >= ? ORDER BY id",
        )
        .bind(since_ms)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                let caller: String = row.try_get("caller")?;
                let purpose: String = row.try_get("purpose")?;
                let corrupt = |error: wright_core::CoreError| StoreError::Database(sqlx::Error::Decode(error.into()));
                Ok((
                    row.try_get("at")?,
                    UsageRecord {
                        agent_id: row.try_get("agent_id")?,
                        conversation_id: row.try_get("conversation_id")?,
                        run_id: row.try_get("run_id")?,
                        caller: UsageCaller::parse(&caller).map_err(corrupt)?,
                        purpose: UsagePurpose::parse(&purpose).map_err(corrupt)?,
                        connection: row.try_get("connection")?,
                        model: row.try_get("model")?,
                        prompt_tokens: row.try_get("prompt_tokens")?,
                        cached_prompt_tokens: row.try_get("cached_prompt_tokens")?,
                        completion_tokens: row.try_get("completion_tokens")?,
                        reasoning_tokens: row.try_get("reasoning_tokens")?,
                        request_id: row.try_get("request_id")?,
                        duration_ms: row.try_get("duration_ms")?,
                        cost_usd: row.try_get("cost_usd")?,
                        estimated: row.try_get("estimated")?,
                        cut: row.try_get("cut")?,
                    },
                ))
            })
            .collect()
    }

    /// The prices set on the Settings page.
    pub async fn model_prices(&self) -> Result<Vec<ModelPrice>, StoreError> {
        let rows = sqlx::query(
            "SELECT connection, model, input_per_mtok, cached_input_per_mtok, output_per_mtok FROM model_prices \
             ORDER BY connection, model",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ModelPrice {
                    connection: row.try_get("connection")?,
                    model: row.try_get("model")?,
                    input_per_mtok: row.try_get("input_per_mtok")?,
                    cached_input_per_mtok: row.try_get("cached_input_per_mtok")?,
                    output_per_mtok: row.try_get("output_per_mtok")?,
                })
            })
            .collect()
    }

    /// Sets the price of a connection's model; later requests are costed at it.
    pub async fn set_model_price(&self, price: &ModelPrice) -> Result<(), StoreError> {
        let valid = [price.input_per_mtok, price.cached_input_per_mtok, price.output_per_mtok]
            .iter()
            .all(|value| value.is_finite() && *value >= 0.0);
        if !valid {
            return Err(StoreError::InvalidEdit("a price is a number of dollars, 0 or more".into()));
        }
        sqlx::query(
            "INSERT INTO model_prices (connection, model, input_per_mtok, cached_input_per_mtok, output_per_mtok, \
               updated_at) VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (connection, model) DO UPDATE SET input_per_mtok = excluded.input_per_mtok, \
               cached_input_per_mtok = excluded.cached_input_per_mtok, output_per_mtok = excluded.output_per_mtok, \
               updated_at = excluded.updated_at",
        )
        .bind(&price.connection)
        .bind(&price.model)
        .bind(price.input_per_mtok)
        .bind(price.cached_input_per_mtok)
        .bind(price.output_per_mtok)
        .bind(self.clock.now_ms())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The budgets set on the Settings page, by scope.
    pub async fn budget_settings(&self) -> Result<Vec<(BudgetScope, BudgetSettings)>, StoreError> {
        let rows = sqlx::query(
            "SELECT scope, tokens_per_day, tokens_per_month, usd_per_day, usd_per_month, notify_at_percent \
             FROM budgets ORDER BY scope",
        )
        .fetch_all(&self.reader)
        .await?;
        let mut settings = Vec::with_capacity(rows.len());
        for row in &rows {
            let scope: String = row.try_get("scope")?;
            let scope = BudgetScope::parse(&scope).ok_or_else(|| {
                StoreError::Database(sqlx::Error::Decode(format!("a budget of an unknown scope {scope:?}").into()))
            })?;
            let percent: Option<i64> = row.try_get("notify_at_percent")?;
            settings.push((
                scope,
                BudgetSettings {
                    tokens_per_day: row.try_get("tokens_per_day")?,
                    tokens_per_month: row.try_get("tokens_per_month")?,
                    usd_per_day: row.try_get("usd_per_day")?,
                    usd_per_month: row.try_get("usd_per_month")?,
                    notify_at_percent: percent.and_then(|percent| u8::try_from(percent).ok()),
                },
            ));
        }
        Ok(settings)
    }

    /// Sets the budgets of a scope (they replace config.toml's for it).
    pub async fn set_budget_settings(&self, scope: &BudgetScope, settings: &BudgetSettings) -> Result<(), StoreError> {
        let negative = settings.tokens_per_day.is_some_and(|value| value < 0)
            || settings.tokens_per_month.is_some_and(|value| value < 0)
            || settings.usd_per_day.is_some_and(|value| !value.is_finite() || value < 0.0)
            || settings.usd_per_month.is_some_and(|value| !value.is_finite() || value < 0.0);
        if negative {
            return Err(StoreError::InvalidEdit("a budget is 0 or more".into()));
        }
        if settings.notify_at_percent.is_some_and(|percent| !(1..=100).contains(&percent)) {
            return Err(StoreError::InvalidEdit("notify_at_percent is between 1 and 100".into()));
        }
        sqlx::query(
            "INSERT INTO budgets (scope, tokens_per_day, tokens_per_month, usd_per_day, usd_per_month, \
               notify_at_percent, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (scope) DO UPDATE SET tokens_per_day = excluded.tokens_per_day, \
               tokens_per_month = excluded.tokens_per_month, usd_per_day = excluded.usd_per_day, \
               usd_per_month = excluded.usd_per_month, notify_at_percent = excluded.notify_at_percent, \
               updated_at = excluded.updated_at",
        )
        .bind(scope.key())
        .bind(settings.tokens_per_day)
        .bind(settings.tokens_per_month)
        .bind(settings.usd_per_day)
        .bind(settings.usd_per_month)
        .bind(settings.notify_at_percent.map(i64::from))
        .bind(self.clock.now_ms())
        .execute(&self.writer)
        .await?;
        Ok(())
    }
}

/// Room per measure (the least any of its limits leaves beyond everything the store counts,
/// the lease's whole row included; None when no limit counts the measure), and the limits as
/// the lease sees them.
type LeaseRoom = ([Option<f64>; 2], Vec<LimitOutside>);

/// The check of [`Store::lease_usage`], inside its transaction: the room when the request
/// fits, else the refusal (or the lease's lapse).
async fn check_lease(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    held: &LeaseHeld,
    asked: UsageAmount,
    limits: &[BudgetLimit],
    now: i64,
) -> Result<Result<LeaseRoom, LeaseAnswer>, StoreError> {
    sweep_reservations(transaction, now).await?;
    if let Some(id) = held.id {
        let present: Option<i64> = sqlx::query_scalar("SELECT id FROM usage_reservations WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut **transaction)
            .await?;
        if present.is_none() {
            return Ok(Err(LeaseAnswer::Lost));
        }
    }
    let left = held.granted.minus(held.used);
    let mut free: [Option<f64>; 2] = [None, None];
    let mut outside = Vec::with_capacity(limits.len());
    for limit in limits {
        if limit.agent.is_some() && limit.agent != held.agent_id {
            continue;
        }
        let (counted, period) = spent_and_reserved(transaction, limit, now).await?;
        // The row holds what was granted less what is written, the totals what is written:
        // what is not the lease's is the rest.
        let beyond = counted - held.granted.of(limit.measure);
        let measure = limit.measure;
        let room = limit.limit - counted;
        if asked.of(measure) - left.of(measure) > room {
            return Ok(Err(LeaseAnswer::Refused(BudgetStanding {
                limit: limit.clone(),
                spent: beyond + held.used.of(measure),
                asked: asked.of(measure),
                period,
            })));
        }
        let slot = &mut free[measure_index(measure)];
        *slot = Some(slot.map_or(room, |free: f64| free.min(room)));
        outside.push(LimitOutside { limit: limit.clone(), outside: beyond, period });
    }
    Ok(Ok((free, outside)))
}

/// One ledger row, inside the caller's transaction.
async fn insert_record(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    record: &UsageRecord,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO usage_records (at, agent_id, conversation_id, run_id, caller, purpose, connection, model, \
               prompt_tokens, cached_prompt_tokens, completion_tokens, reasoning_tokens, request_id, duration_ms, \
               cost_usd, estimated, cut) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(now)
    .bind(&record.agent_id)
    .bind(&record.conversation_id)
    .bind(&record.run_id)
    .bind(record.caller.as_str())
    .bind(record.purpose.as_str())
    .bind(&record.connection)
    .bind(&record.model)
    .bind(record.prompt_tokens)
    .bind(record.cached_prompt_tokens)
    .bind(record.completion_tokens)
    .bind(record.reasoning_tokens)
    .bind(&record.request_id)
    .bind(record.duration_ms)
    .bind(record.cost_usd)
    .bind(record.estimated)
    .bind(record.cut)
    .execute(&mut **transaction)
    .await?;
    // The running totals the budget checks read, in the same transaction.
    let tokens = record.prompt_tokens + record.completion_tokens;
    let mut scopes = vec![ALL_AGENTS];
    if let Some(agent) = record.agent_id.as_deref() {
        scopes.push(agent);
    }
    for scope in scopes {
        for period in [BudgetPeriod::Day, BudgetPeriod::Month] {
            sqlx::query(
                "INSERT INTO usage_totals (scope, period, start, tokens, cost_usd) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT (scope, period, start) DO UPDATE SET tokens = tokens + excluded.tokens, \
                 cost_usd = cost_usd + excluded.cost_usd",
            )
            .bind(scope)
            .bind(period_name(period))
            .bind(period_start(now, period).0)
            .bind(tokens)
            .bind(record.cost_usd)
            .execute(&mut **transaction)
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_begin_at_utc_midnight_and_the_first_of_the_month() {
        // 2026-11-27T17:30:00Z
        let now = 1_795_800_600_000;
        let (day, day_name) = period_start(now, BudgetPeriod::Day);
        let (month, month_name) = period_start(now, BudgetPeriod::Month);
        assert_eq!(day_name, "2026-11-27");
        assert_eq!(month_name, "2026-11");
        assert_eq!(now - day, (17 * 60 + 30) * 60_000);
        assert_eq!(day - month, 26 * 86_400_000);
    }

    fn record(agent: &str, prompt: i64, completion: i64) -> UsageRecord {
        UsageRecord {
            agent_id: Some(agent.to_owned()),
            conversation_id: None,
            run_id: None,
            caller: UsageCaller::Person,
            purpose: UsagePurpose::Turn,
            connection: "env:openai".to_owned(),
            model: "m".to_owned(),
            prompt_tokens: prompt,
            cached_prompt_tokens: 0,
            completion_tokens: completion,
            reasoning_tokens: None,
            request_id: None,
            duration_ms: 1,
            cost_usd: 0.0,
            estimated: false,
            cut: false,
        }
    }

    /// Two requests at once against the last of a budget: the reservation of the first counts
    /// for the second, which is refused; settling replaces the reservation with the real use.
    #[tokio::test]
    async fn a_reservation_counts_until_it_is_settled_and_a_budget_refuses_what_would_pass_it() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(&directory.path().join("wright.db"), crate::StateLimits::default()).await.unwrap();
        let limit = BudgetLimit {
            agent: Some("a".to_owned()),
            period: BudgetPeriod::Day,
            measure: BudgetMeasure::Tokens,
            limit: 100.0,
            notify_at_percent: Some(80),
        };
        store.settle_usage(None, &record("a", 30, 10)).await.unwrap();
        let ask = UsageReservation { agent_id: Some("a".to_owned()), tokens: 50, cost_usd: 0.0 };
        let Reserved::Granted { id, standings } =
            store.reserve_usage(&ask, std::slice::from_ref(&limit)).await.unwrap()
        else {
            panic!("40 spent + 50 asked fits 100");
        };
        assert_eq!((standings[0].spent, standings[0].asked), (40.0, 50.0));
        // The first request is in flight: 40 + 50 reserved + 50 > 100.
        let Reserved::Refused(standing) = store.reserve_usage(&ask, std::slice::from_ref(&limit)).await.unwrap() else {
            panic!("the reservation in flight counts");
        };
        assert_eq!(standing.spent, 90.0);
        // Another agent's requests do not count against this agent's budget.
        let other = UsageReservation { agent_id: Some("b".to_owned()), tokens: 50, cost_usd: 0.0 };
        assert!(matches!(
            store.reserve_usage(&other, std::slice::from_ref(&limit)).await.unwrap(),
            Reserved::Granted { .. }
        ));
        // Settled with less than reserved: 40 + 10 spent, and 50 more fits again, to the token.
        store.settle_usage(Some(id), &record("a", 5, 5)).await.unwrap();
        assert!(matches!(store.reserve_usage(&ask, &[limit]).await.unwrap(), Reserved::Granted { .. }));
        let (rows, totals) = store.usage_summary(0, UsageGrouping::Agent).await.unwrap();
        assert_eq!((totals.requests, totals.prompt_tokens, totals.completion_tokens), (2, 35, 15));
        assert_eq!(rows.len(), 1);
        assert!(store.first_budget_notice("agent:a/tokens_per_day", "2026-11-27", "soft").await.unwrap());
        assert!(!store.first_budget_notice("agent:a/tokens_per_day", "2026-11-27", "soft").await.unwrap());
    }
}
