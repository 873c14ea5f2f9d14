//! Schedules: prompts an agent (or the person) asked to run later — on a cron expression in an
//! IANA time zone, or once at a time — stored durably, and what became of each time one came due.
//!
//! Cron expressions are read by `croner` (five fields: minute hour day-of-month month
//! day-of-week, with names, ranges, steps, `L`, `W`, `#`); its search runs on our jiff's
//! `Zoned` through [`ZonedTime`], so a local time is a local time across DST changes (a time
//! skipped by a spring-forward does not happen that day; one that happens twice fires once).
//!
//! **Missed runs.** The scheduler asks [`Store::fire_due_schedules`] on every tick. A time that
//! came due less than `catch_up_minutes` ago (default 60) starts one run, late if need be;
//! times further back — Wright was not running — are not run: they are recorded as one
//! `missed` row (with how many there were), the person is told, and the schedule moves on to
//! its next time in the future. However many times were missed, a schedule starts at most one
//! run per tick; a one-off whose time was missed ends as `missed`.
//!
//! **Limits** (`[schedules]`, checked here, in the same transaction as the write): live
//! schedules per agent (`max_per_agent`, 20); the shortest gap between two times of a cron
//! expression (`min_interval_minutes`, 5), checked over its next 500 times; runs per agent per
//! day (`max_runs_per_day`, 48) — a time due beyond that is recorded as `skipped_limit`;
//! a one-off at most `max_days_ahead` (366) away; the prompt's length (`max_prompt_chars`).
//!
//! Invariants: a due time is decided and the schedule advanced in one transaction, so a time
//! never fires twice (not across a restart, not between two processes); times come from the
//! store's clock.

use std::cmp::Ordering;

use croner::errors::CronError;
use croner::parser::{CronParser, Seconds};
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::AgentId;

use crate::{Store, StoreError};

/// `[schedules]` in config.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Live (active or paused) schedules one agent may have.
    pub max_per_agent: usize,
    /// The shortest time between two runs of a cron schedule, minutes.
    pub min_interval_minutes: i64,
    /// Runs of one agent's schedules per 24 hours; due times beyond it are skipped.
    pub max_runs_per_day: i64,
    /// A time missed by at most this much (Wright was down or busy) still runs, once.
    pub catch_up_minutes: i64,
    /// How far ahead a one-off may be set, days.
    pub max_days_ahead: i64,
    pub max_prompt_chars: usize,
    pub max_name_chars: usize,
    /// How often the scheduler looks for due times, milliseconds.
    pub tick_ms: u64,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            max_per_agent: 20,
            min_interval_minutes: 5,
            max_runs_per_day: 48,
            catch_up_minutes: 60,
            max_days_ahead: 366,
            max_prompt_chars: 4000,
            max_name_chars: 100,
            tick_ms: 1000,
        }
    }
}

/// When a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timing {
    /// A five-field cron expression, read in the schedule's time zone.
    Cron(String),
    /// Once, at this time (milliseconds since the epoch).
    Once(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleStatus {
    Active,
    Paused,
    /// A one-off that ran.
    Done,
    /// A one-off whose time passed while Wright was not running.
    Missed,
    Cancelled,
}

impl ScheduleStatus {
    fn as_str(self) -> &'static str {
        match self {
            ScheduleStatus::Active => "active",
            ScheduleStatus::Paused => "paused",
            ScheduleStatus::Done => "done",
            ScheduleStatus::Missed => "missed",
            ScheduleStatus::Cancelled => "cancelled",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "active" => ScheduleStatus::Active,
            "paused" => ScheduleStatus::Paused,
            "done" => ScheduleStatus::Done,
            "missed" => ScheduleStatus::Missed,
            "cancelled" => ScheduleStatus::Cancelled,
            other => return Err(StoreError::InvalidEdit(format!("unknown schedule status {other:?} in the database"))),
        })
    }
}

/// Who made a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleAuthor {
    Agent,
    Admin,
}

/// What became of one due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Its run started; the result has not reached the person yet.
    Started,
    Finished,
    Failed,
    /// Not run: Wright was not running at the time (further back than `catch_up_minutes`).
    Missed,
    /// Not run: the agent's `max_runs_per_day` was used up.
    SkippedLimit,
    /// Not run: a usage budget of the agent (or of all agents) was spent.
    SkippedBudget,
}

impl RunOutcome {
    fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Started => "started",
            RunOutcome::Finished => "finished",
            RunOutcome::Failed => "failed",
            RunOutcome::Missed => "missed",
            RunOutcome::SkippedLimit => "skipped_limit",
            RunOutcome::SkippedBudget => "skipped_budget",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "started" => RunOutcome::Started,
            "finished" => RunOutcome::Finished,
            "failed" => RunOutcome::Failed,
            "missed" => RunOutcome::Missed,
            "skipped_limit" => RunOutcome::SkippedLimit,
            "skipped_budget" => RunOutcome::SkippedBudget,
            other => return Err(StoreError::InvalidEdit(format!("unknown schedule run outcome {other:?}"))),
        })
    }
}

/// A new schedule, as the tool or the API asks for it.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub name: String,
    pub prompt: String,
    pub timing: Timing,
    /// An IANA zone name (`Europe/Oslo`) or `UTC`.
    pub time_zone: String,
    pub created_by: ScheduleAuthor,
    /// The conversation the request came from, if any.
    pub conversation_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub id: i64,
    pub agent_id: String,
    pub name: String,
    pub prompt: String,
    pub cron: Option<String>,
    pub run_at: Option<i64>,
    pub time_zone: String,
    pub status: ScheduleStatus,
    pub next_run_at: Option<i64>,
    pub created_by: ScheduleAuthor,
    pub conversation_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The most recent due time and what became of it.
    pub last_run: Option<ScheduleRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleRun {
    pub id: i64,
    pub schedule_id: i64,
    pub due_at: i64,
    pub fired_at: i64,
    pub outcome: RunOutcome,
    pub missed_count: i64,
    pub conversation_id: Option<String>,
}

/// What the scheduler must do about a time that came due, decided and recorded by
/// [`Store::fire_due_schedules`].
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    pub schedule: Schedule,
    pub run: ScheduleRun,
    /// For a run that starts: how late it is, milliseconds (0 when on time).
    pub late_by_ms: i64,
}

/// A jiff `ZonedDateTime` as croner's searchable time (croner's own jiff support is for an older jiff).
#[derive(Debug, Clone)]
struct ZonedTime(ZonedDateTime);

impl CronDateTime for ZonedTime {
    fn to_civil(&self) -> CivilDateTime {
        let datetime = self.0.datetime();
        // jiff keeps every part in range, so they are taken as they are.
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(i32::from(datetime.year()), datetime.month() as u32, datetime.day() as u32),
            CivilTime::from_parts_unchecked(datetime.hour() as u32, datetime.minute() as u32, datetime.second() as u32),
        )
    }

    fn civil_weekday(&self) -> croner::Weekday {
        croner::Weekday::from_days_from_sunday(self.0.weekday().to_sunday_zero_offset() as u32)
    }

    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let year = i16::try_from(civil.year()).map_err(|_| CronError::InvalidDate)?;
        let datetime = jiff::civil::DateTime::new(
            year,
            civil.month() as i8,
            civil.day() as i8,
            civil.hour() as i8,
            civil.minute() as i8,
            civil.second() as i8,
            0,
        )
        .map_err(|_| CronError::InvalidDate)?;
        let ambiguous = self.0.time_zone().to_ambiguous_zoned_datetime(datetime);
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => {
                Resolution::Single(ZonedTime(ambiguous.unambiguous().map_err(|_| CronError::InvalidTime)?))
            }
            AmbiguousOffset::Fold { .. } => {
                let earlier = ambiguous.clone().earlier().map_err(|_| CronError::InvalidTime)?;
                let later = ambiguous.later().map_err(|_| CronError::InvalidTime)?;
                Resolution::Ambiguous(ZonedTime(earlier), ZonedTime(later))
            }
            AmbiguousOffset::Gap { .. } => Resolution::Gap,
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(SignedDuration::from_secs(seconds)).ok().map(ZonedTime)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.timestamp().cmp(&other.0.timestamp())
    }
}

fn parse_cron(expression: &str) -> Result<Cron, StoreError> {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .build()
        .parse(expression.trim())
        .map_err(|error| StoreError::InvalidEdit(format!("{expression:?} is not a cron expression: {error}")))
}

fn zone(name: &str) -> Result<TimeZone, StoreError> {
    TimeZone::get(name.trim()).map_err(|_| {
        StoreError::InvalidEdit(format!(
            "{name:?} is not an IANA time zone (like Europe/Oslo, America/New_York or UTC)"
        ))
    })
}

/// The first time of `cron` in `zone` strictly after `after_ms`.
fn cron_next(cron: &Cron, zone: &TimeZone, after_ms: i64) -> Option<i64> {
    let after = Timestamp::from_millisecond(after_ms).ok()?.to_zoned_datetime(zone.clone());
    let next = cron.find_next_occurrence(&ZonedTime(after), false).ok()?;
    Some(next.0.timestamp().as_millisecond())
}

/// When `timing` is due next strictly after `after_ms`, in `time_zone`; None when never again.
pub fn next_time(timing: &Timing, time_zone: &str, after_ms: i64) -> Result<Option<i64>, StoreError> {
    match timing {
        Timing::Once(at) => Ok((*at > after_ms).then_some(*at)),
        Timing::Cron(expression) => Ok(cron_next(&parse_cron(expression)?, &zone(time_zone)?, after_ms)),
    }
}

/// A time the model or the person wrote: RFC 3339 with an offset (`2026-12-24T17:00:00Z`), or
/// a local date and time read in `time_zone` (`2026-12-24T18:00`, `2026-12-24 18:00`).
pub fn local_time(text: &str, time_zone: &str) -> Result<i64, StoreError> {
    let text = text.trim();
    if let Ok(timestamp) = text.parse::<Timestamp>() {
        return Ok(timestamp.as_millisecond());
    }
    let datetime: jiff::civil::DateTime = text
        .replacen(' ', "T", 1)
        .parse()
        .map_err(|_| StoreError::InvalidEdit(format!("{text:?} is not a date and time like 2026-12-24T18:00")))?;
    let zoned = zone(time_zone)?
        .to_ambiguous_zoned_datetime(datetime)
        .compatible()
        .map_err(|error| StoreError::InvalidEdit(format!("{text:?} in {time_zone}: {error}")))?;
    Ok(zoned.timestamp().as_millisecond())
}

/// The shortest gap between two of the next `count` times of `cron` after `from_ms`.
fn shortest_gap(cron: &Cron, zone: &TimeZone, from_ms: i64, count: usize) -> Option<i64> {
    let mut previous = cron_next(cron, zone, from_ms)?;
    let mut shortest: Option<i64> = None;
    for _ in 0..count {
        let Some(next) = cron_next(cron, zone, previous) else { break };
        shortest = Some(shortest.map_or(next - previous, |gap| gap.min(next - previous)));
        previous = next;
    }
    shortest
}

/// "Next: …" for a notice about a schedule.
fn next_text(next: Option<i64>, status: ScheduleStatus) -> String {
    match (status, next) {
        (ScheduleStatus::Active, Some(next)) => format!("Next: {}.", wright_core::iso_from_ms(next)),
        _ => "It will not run again.".to_owned(),
    }
}

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

fn schedule_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Schedule, StoreError> {
    let created_by: String = row.try_get("created_by")?;
    let last_run = match row.try_get::<Option<i64>, _>("run_id")? {
        Some(id) => Some(ScheduleRun {
            id,
            schedule_id: row.try_get("id")?,
            due_at: row.try_get("run_due_at")?,
            fired_at: row.try_get("run_fired_at")?,
            outcome: RunOutcome::parse(&row.try_get::<String, _>("run_outcome")?)?,
            missed_count: row.try_get("run_missed_count")?,
            conversation_id: row.try_get("run_conversation_id")?,
        }),
        None => None,
    };
    Ok(Schedule {
        id: row.try_get("id")?,
        agent_id: row.try_get("agent_id")?,
        name: row.try_get("name")?,
        prompt: row.try_get("prompt")?,
        cron: row.try_get("cron")?,
        run_at: row.try_get("run_at")?,
        time_zone: row.try_get("time_zone")?,
        status: ScheduleStatus::parse(&row.try_get::<String, _>("status")?)?,
        next_run_at: row.try_get("next_run_at")?,
        created_by: if created_by == "admin" { ScheduleAuthor::Admin } else { ScheduleAuthor::Agent },
        conversation_id: row.try_get("conversation_id")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_run,
    })
}

/// Every column of a schedule and of its latest run.
const SELECT_SCHEDULE: &str = "SELECT s.id, s.agent_id, s.name, s.prompt, s.cron, s.run_at, s.time_zone, s.status, \
     s.next_run_at, s.created_by, s.conversation_id, s.created_at, s.updated_at, \
     r.id AS run_id, r.due_at AS run_due_at, r.fired_at AS run_fired_at, r.outcome AS run_outcome, \
     r.missed_count AS run_missed_count, r.conversation_id AS run_conversation_id \
     FROM schedules s LEFT JOIN schedule_runs r ON r.id = (SELECT MAX(id) FROM schedule_runs WHERE schedule_id = s.id)";

fn run_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ScheduleRun, StoreError> {
    Ok(ScheduleRun {
        id: row.try_get("id")?,
        schedule_id: row.try_get("schedule_id")?,
        due_at: row.try_get("due_at")?,
        fired_at: row.try_get("fired_at")?,
        outcome: RunOutcome::parse(&row.try_get::<String, _>("outcome")?)?,
        missed_count: row.try_get("missed_count")?,
        conversation_id: row.try_get("conversation_id")?,
    })
}

impl Store {
    pub fn schedule_config(&self) -> &ScheduleConfig {
        &self.schedule_config
    }

    /// The same store with these schedule limits.
    pub fn with_schedules(mut self, schedule_config: ScheduleConfig) -> Self {
        self.schedule_config = schedule_config;
        self
    }

    /// Checks and stores a new schedule; its first time is computed from the clock.
    pub async fn create_schedule(&self, agent: &AgentId, new: &NewSchedule) -> Result<Schedule, StoreError> {
        let config = &self.schedule_config;
        let now = self.clock.now_ms();
        let name = new.name.trim();
        if name.is_empty() || name.chars().count() > config.max_name_chars {
            return Err(StoreError::InvalidEdit(format!(
                "a schedule's name must have 1 to {} characters",
                config.max_name_chars
            )));
        }
        if new.prompt.trim().is_empty() {
            return Err(StoreError::InvalidEdit("the prompt of a schedule is empty".into()));
        }
        if new.prompt.chars().count() > config.max_prompt_chars {
            return Err(StoreError::LimitExceeded(format!(
                "the prompt has {} characters; [schedules] max_prompt_chars is {}",
                new.prompt.chars().count(),
                config.max_prompt_chars
            )));
        }
        let time_zone = zone(&new.time_zone)?;
        let (cron_text, run_at, next) = match &new.timing {
            Timing::Cron(expression) => {
                let cron = parse_cron(expression)?;
                let next = cron_next(&cron, &time_zone, now).ok_or_else(|| {
                    StoreError::InvalidEdit(format!("the cron expression {expression:?} never comes due"))
                })?;
                if let Some(gap) = shortest_gap(&cron, &time_zone, now, 500)
                    && gap < config.min_interval_minutes * MINUTE_MS
                {
                    return Err(StoreError::LimitExceeded(format!(
                        "{expression:?} would run every {} minute(s); schedules run at most every {} minutes \
                         ([schedules] min_interval_minutes)",
                        gap / MINUTE_MS,
                        config.min_interval_minutes
                    )));
                }
                (Some(expression.trim().to_owned()), None, next)
            }
            Timing::Once(at) => {
                if *at <= now {
                    return Err(StoreError::InvalidEdit(format!(
                        "the time {} has already passed (now is {})",
                        wright_core::iso_from_ms(*at),
                        wright_core::iso_from_ms(now)
                    )));
                }
                if *at - now > config.max_days_ahead * DAY_MS {
                    return Err(StoreError::LimitExceeded(format!(
                        "a one-off schedule may be at most {} days ahead ([schedules] max_days_ahead)",
                        config.max_days_ahead
                    )));
                }
                (None, Some(*at), *at)
            }
        };
        let mut transaction = self.begin_write().await?;
        let live: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM schedules WHERE agent_id = ? AND status IN ('active', 'paused')")
                .bind(agent.as_str())
                .fetch_one(&mut *transaction)
                .await?;
        if live as usize >= config.max_per_agent {
            return Err(StoreError::LimitExceeded(format!(
                "the agent has {live} schedules, the limit ([schedules] max_per_agent); cancel one first"
            )));
        }
        let inserted = sqlx::query(
            "INSERT INTO schedules (agent_id, name, prompt, cron, run_at, time_zone, status, next_run_at, created_by, \
             conversation_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)",
        )
        .bind(agent.as_str())
        .bind(name)
        .bind(&new.prompt)
        .bind(cron_text)
        .bind(run_at)
        .bind(new.time_zone.trim())
        .bind(next)
        .bind(match new.created_by {
            ScheduleAuthor::Agent => "agent",
            ScheduleAuthor::Admin => "admin",
        })
        .bind(new.conversation_id.as_deref())
        .bind(now)
        .bind(now)
        .execute(&mut *transaction)
        .await;
        let id = match inserted {
            Ok(done) => done.last_insert_rowid(),
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                return Err(StoreError::ItemExists { kind: "schedule", name: name.to_owned() });
            }
            Err(error) => return Err(error.into()),
        };
        transaction.commit().await?;
        self.schedule(agent, id).await
    }

    pub async fn schedule(&self, agent: &AgentId, id: i64) -> Result<Schedule, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_SCHEDULE} WHERE s.agent_id = ? AND s.id = ?")))
            .bind(agent.as_str())
            .bind(id)
            .fetch_optional(&self.reader)
            .await?
            .ok_or_else(|| StoreError::ItemNotFound { kind: "schedule", name: id.to_string() })?;
        schedule_from_row(&row)
    }

    /// The agent's schedules, newest first: live ones, and with `include_ended` also those that
    /// finished, were missed or cancelled (the most recent 100).
    pub async fn list_schedules(&self, agent: &AgentId, include_ended: bool) -> Result<Vec<Schedule>, StoreError> {
        let filter = if include_ended { "" } else { " AND s.status IN ('active', 'paused')" };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SCHEDULE} WHERE s.agent_id = ?{filter} ORDER BY s.id DESC LIMIT 100"
        )))
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    /// The live schedule `name_or_id` names (its id, or its name).
    pub async fn find_live_schedule(&self, agent: &AgentId, name_or_id: &str) -> Result<Schedule, StoreError> {
        let id: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM schedules WHERE agent_id = ?1 AND status IN ('active', 'paused') \
             AND (name = ?2 OR CAST(id AS TEXT) = ?2) ORDER BY id DESC LIMIT 1",
        )
        .bind(agent.as_str())
        .bind(name_or_id.trim())
        .fetch_optional(&self.reader)
        .await?;
        let id = id.ok_or_else(|| StoreError::ItemNotFound { kind: "schedule", name: name_or_id.to_owned() })?;
        self.schedule(agent, id).await
    }

    /// Cancels a live schedule (the tool's cancel, the admin page's delete). Its history stays.
    pub async fn cancel_schedule(&self, agent: &AgentId, id: i64) -> Result<Schedule, StoreError> {
        let now = self.clock.now_ms();
        let changed = sqlx::query(
            "UPDATE schedules SET status = 'cancelled', next_run_at = NULL, updated_at = ? \
             WHERE agent_id = ? AND id = ? AND status IN ('active', 'paused')",
        )
        .bind(now)
        .bind(agent.as_str())
        .bind(id)
        .execute(&self.writer)
        .await?;
        if changed.rows_affected() == 0 {
            self.schedule(agent, id).await?;
            return Err(StoreError::InvalidEdit(format!("schedule {id} is not active or paused")));
        }
        self.schedule(agent, id).await
    }

    /// Pauses a schedule, or resumes it: a resumed schedule's next time is computed from now, so
    /// the times that passed while it was paused are neither run nor reported as missed.
    pub async fn set_schedule_paused(&self, agent: &AgentId, id: i64, paused: bool) -> Result<Schedule, StoreError> {
        let now = self.clock.now_ms();
        let schedule = self.schedule(agent, id).await?;
        let (from, to) = if paused { ("active", "paused") } else { ("paused", "active") };
        if schedule.status.as_str() != from {
            if schedule.status.as_str() == to {
                return Ok(schedule);
            }
            return Err(StoreError::InvalidEdit(format!("schedule {id} is {}", schedule.status.as_str())));
        }
        let next = if paused {
            schedule.next_run_at
        } else {
            match (&schedule.cron, schedule.run_at) {
                (Some(cron), _) => next_time(&Timing::Cron(cron.clone()), &schedule.time_zone, now)?,
                (None, Some(at)) if at > now => Some(at),
                (None, _) => {
                    return Err(StoreError::InvalidEdit(format!(
                        "schedule {id} was a one-off whose time has passed; make a new one"
                    )));
                }
            }
        };
        sqlx::query("UPDATE schedules SET status = ?, next_run_at = ?, updated_at = ? WHERE id = ? AND status = ?")
            .bind(to)
            .bind(next)
            .bind(now)
            .bind(id)
            .bind(from)
            .execute(&self.writer)
            .await?;
        self.schedule(agent, id).await
    }

    /// Decides, for every active schedule due by now, what happens (see the module's policy),
    /// records it and moves the schedule on — one transaction. The scheduler then starts the
    /// runs whose outcome is `started` and tells the person about the rest.
    pub async fn fire_due_schedules(&self) -> Result<Vec<Firing>, StoreError> {
        let now = self.clock.now_ms();
        let config = &self.schedule_config;
        let mut transaction = self.begin_write().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SCHEDULE} WHERE s.status = 'active' AND s.next_run_at <= ? ORDER BY s.next_run_at, s.id LIMIT 100"
        )))
        .bind(now)
        .fetch_all(&mut *transaction)
        .await?;
        let mut firings = Vec::new();
        for row in rows {
            let schedule = schedule_from_row(&row)?;
            let Some(due) = schedule.next_run_at else { continue };
            let timing = match (&schedule.cron, schedule.run_at) {
                (Some(cron), _) => Timing::Cron(cron.clone()),
                (None, Some(at)) => Timing::Once(at),
                (None, None) => continue,
            };
            // Every time due by now: the latest one is the one that may still run.
            let mut latest = due;
            let mut count = 1i64;
            while let Some(next) = next_time(&timing, &schedule.time_zone, latest)?
                && next <= now
            {
                latest = next;
                count += 1;
                if count > 100_000 {
                    break;
                }
            }
            let catch_up = config.catch_up_minutes * MINUTE_MS;
            let runs_today: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id \
                 WHERE s.agent_id = ? AND r.outcome IN ('started', 'finished', 'failed') AND r.fired_at > ?",
            )
            .bind(&schedule.agent_id)
            .bind(now - DAY_MS)
            .fetch_one(&mut *transaction)
            .await?;
            let (outcome, missed_count, due_at) = if now - latest > catch_up {
                (RunOutcome::Missed, count, latest)
            } else if runs_today >= config.max_runs_per_day {
                (RunOutcome::SkippedLimit, count - 1, latest)
            } else {
                (RunOutcome::Started, count - 1, latest)
            };
            let next = next_time(&timing, &schedule.time_zone, now.max(latest))?;
            let status = match (&timing, outcome) {
                (Timing::Cron(_), _) => ScheduleStatus::Active,
                (Timing::Once(_), RunOutcome::Missed) => ScheduleStatus::Missed,
                (Timing::Once(_), _) => ScheduleStatus::Done,
            };
            sqlx::query("UPDATE schedules SET status = ?, next_run_at = ?, updated_at = ? WHERE id = ?")
                .bind(status.as_str())
                .bind(if status == ScheduleStatus::Active { next } else { None })
                .bind(now)
                .bind(schedule.id)
                .execute(&mut *transaction)
                .await?;
            let run_id = sqlx::query(
                "INSERT INTO schedule_runs (schedule_id, due_at, fired_at, outcome, missed_count) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(schedule.id)
            .bind(due_at)
            .bind(now)
            .bind(outcome.as_str())
            .bind(missed_count)
            .execute(&mut *transaction)
            .await?
            .last_insert_rowid();
            let run = ScheduleRun {
                id: run_id,
                schedule_id: schedule.id,
                due_at,
                fired_at: now,
                outcome,
                missed_count,
                conversation_id: None,
            };
            // A time that does not run is told to the person in the same transaction.
            let not_run = match outcome {
                RunOutcome::Missed => Some(format!(
                    "“{}” did not run: {} time(s) passed while Wright was not running (the last at {}). {}",
                    schedule.name,
                    missed_count,
                    wright_core::iso_from_ms(due_at),
                    next_text(next, status),
                )),
                RunOutcome::SkippedLimit => Some(format!(
                    "“{}” did not run at {}: the agent's schedules already ran {} times in the last 24 hours \
                     ([schedules] max_runs_per_day). {}",
                    schedule.name,
                    wright_core::iso_from_ms(due_at),
                    runs_today,
                    next_text(next, status),
                )),
                _ => None,
            };
            if let Some(text) = not_run {
                let agent =
                    AgentId::parse(&schedule.agent_id).map_err(|error| StoreError::InvalidEdit(error.to_string()))?;
                let notification = crate::NewNotification {
                    source: crate::NotificationSource::Schedule,
                    title: format!("⏰ {} was missed", schedule.name),
                    text,
                    conversation_id: None,
                    schedule_id: Some(schedule.id),
                };
                crate::notifications::insert_notification(&mut transaction, &agent, &notification, now).await?;
            }
            let late_by_ms = if outcome == RunOutcome::Started { now - due_at } else { 0 };
            let schedule =
                Schedule { status, next_run_at: next.filter(|_| status == ScheduleStatus::Active), ..schedule };
            firings.push(Firing { schedule, run, late_by_ms });
        }
        transaction.commit().await?;
        if firings.iter().any(|firing| firing.run.outcome != RunOutcome::Started) {
            self.notification_signal.notify_waiters();
        }
        Ok(firings)
    }

    /// Records the conversation a started run went into.
    pub async fn set_schedule_run_conversation(&self, run_id: i64, conversation_id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE schedule_runs SET conversation_id = ? WHERE id = ?")
            .bind(conversation_id)
            .bind(run_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Runs still `started`, oldest first, with their schedules.
    pub async fn open_schedule_runs(&self) -> Result<Vec<(Schedule, ScheduleRun)>, StoreError> {
        let rows = sqlx::query(
            "SELECT r.id, r.schedule_id, r.due_at, r.fired_at, r.outcome, r.missed_count, r.conversation_id, \
             s.agent_id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id \
             WHERE r.outcome = 'started' ORDER BY r.id LIMIT 100",
        )
        .fetch_all(&self.reader)
        .await?;
        let mut open = Vec::new();
        for row in rows {
            let run = run_from_row(&row)?;
            let agent = AgentId::parse(&row.try_get::<String, _>("agent_id")?)
                .map_err(|error| StoreError::InvalidEdit(error.to_string()))?;
            open.push((self.schedule(&agent, run.schedule_id).await?, run));
        }
        Ok(open)
    }

    /// Ends a started run with `outcome` (once: a second call changes nothing and says so).
    pub async fn finish_schedule_run(&self, run_id: i64, outcome: RunOutcome) -> Result<bool, StoreError> {
        let changed = sqlx::query("UPDATE schedule_runs SET outcome = ? WHERE id = ? AND outcome = 'started'")
            .bind(outcome.as_str())
            .bind(run_id)
            .execute(&self.writer)
            .await?;
        Ok(changed.rows_affected() == 1)
    }

    /// Ends a started run with `outcome` and stores the notification that tells the person —
    /// one transaction, so the result is sent once and never lost. False (and nothing stored)
    /// when the run was already ended.
    pub async fn complete_schedule_run(
        &self,
        agent: &AgentId,
        run_id: i64,
        outcome: RunOutcome,
        notification: &crate::NewNotification,
    ) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let changed = sqlx::query("UPDATE schedule_runs SET outcome = ? WHERE id = ? AND outcome = 'started'")
            .bind(outcome.as_str())
            .bind(run_id)
            .execute(&mut *transaction)
            .await?;
        if changed.rows_affected() == 0 {
            return Ok(false);
        }
        crate::notifications::insert_notification(&mut transaction, agent, notification, self.clock.now_ms()).await?;
        transaction.commit().await?;
        self.notification_signal.notify_waiters();
        Ok(true)
    }

    /// A schedule's recent due times, newest first.
    pub async fn schedule_runs(&self, schedule_id: i64, limit: i64) -> Result<Vec<ScheduleRun>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, schedule_id, due_at, fired_at, outcome, missed_count, conversation_id FROM schedule_runs \
             WHERE schedule_id = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(schedule_id)
        .bind(limit.clamp(1, 500))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(run_from_row).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wright_core::FixedClock;

    use super::*;
    use crate::notifications::{NewNotification, NotificationSource, NotifyConfig};
    use crate::{MemoryConfig, StateLimits};

    async fn open(start: &str, config: ScheduleConfig) -> (tempfile::TempDir, Store, Arc<FixedClock>) {
        let directory = tempfile::tempdir().unwrap();
        let clock = Arc::new(FixedClock::at(ms(start)));
        let store = Store::open(&directory.path().join("wright.db"), StateLimits::default())
            .await
            .unwrap()
            .with_memory(MemoryConfig::default(), clock.clone())
            .with_schedules(config)
            .with_notify(NotifyConfig { max_per_hour: 2, max_chars: 50 });
        (directory, store, clock)
    }

    fn new(name: &str, timing: Timing, zone: &str) -> NewSchedule {
        NewSchedule {
            name: name.into(),
            prompt: format!("do {name}"),
            timing,
            time_zone: zone.into(),
            created_by: ScheduleAuthor::Agent,
            conversation_id: None,
        }
    }

    #[tokio::test]
    async fn a_due_time_fires_once_and_a_time_missed_long_ago_is_recorded_not_run() {
        let (_directory, store, clock) = open("2026-11-24T06:00:00Z", ScheduleConfig::default()).await;
        let agent = AgentId::default_agent();
        // 08:00 in Tokyo (UTC+9) is 23:00 UTC the day before.
        let daily = store
            .create_schedule(&agent, &new("digest", Timing::Cron("0 8 * * *".into()), "Asia/Tokyo"))
            .await
            .unwrap();
        assert_eq!(daily.next_run_at, Some(ms("2026-11-24T23:00:00Z")));
        clock.set(ms("2026-11-24T22:59:59Z"));
        assert!(store.fire_due_schedules().await.unwrap().is_empty());
        clock.set(ms("2026-11-24T23:00:00Z"));
        let firings = store.fire_due_schedules().await.unwrap();
        assert_eq!(firings.len(), 1);
        assert_eq!((firings[0].run.outcome, firings[0].late_by_ms), (RunOutcome::Started, 0));
        assert_eq!(firings[0].schedule.next_run_at, Some(ms("2026-11-25T23:00:00Z")));
        assert!(store.fire_due_schedules().await.unwrap().is_empty(), "a time fires once");
        // Down for three days: three times passed; none runs, one missed row says so.
        clock.set(ms("2026-11-28T06:00:00Z"));
        let firings = store.fire_due_schedules().await.unwrap();
        assert_eq!(firings.len(), 1);
        assert_eq!((firings[0].run.outcome, firings[0].run.missed_count), (RunOutcome::Missed, 3));
        assert_eq!(firings[0].schedule.next_run_at, Some(ms("2026-11-28T23:00:00Z")));
        // Down for twenty minutes over a time: it still runs, late.
        clock.set(ms("2026-11-28T23:20:00Z"));
        let firings = store.fire_due_schedules().await.unwrap();
        assert_eq!((firings[0].run.outcome, firings[0].late_by_ms), (RunOutcome::Started, 20 * MINUTE_MS));
    }

    #[tokio::test]
    async fn one_offs_end_and_cancelled_or_paused_schedules_do_not_fire() {
        let (_directory, store, clock) = open("2026-11-24T06:00:00Z", ScheduleConfig::default()).await;
        let agent = AgentId::default_agent();
        let once =
            store.create_schedule(&agent, &new("call", Timing::Once(ms("2026-11-24T07:00:00Z")), "UTC")).await.unwrap();
        let cancelled =
            store.create_schedule(&agent, &new("gone", Timing::Once(ms("2026-11-24T07:00:00Z")), "UTC")).await.unwrap();
        let paused =
            store.create_schedule(&agent, &new("later", Timing::Cron("0 * * * *".into()), "UTC")).await.unwrap();
        store.cancel_schedule(&agent, cancelled.id).await.unwrap();
        store.set_schedule_paused(&agent, paused.id, true).await.unwrap();
        assert!(
            store.create_schedule(&agent, &new("call", Timing::Once(ms("2026-11-25T07:00:00Z")), "UTC")).await.is_err(),
            "a live name is taken"
        );
        clock.set(ms("2026-11-24T07:00:01Z"));
        let firings = store.fire_due_schedules().await.unwrap();
        assert_eq!(firings.len(), 1);
        assert_eq!(firings[0].schedule.id, once.id);
        assert_eq!(store.schedule(&agent, once.id).await.unwrap().status, ScheduleStatus::Done);
        // Resumed, a paused schedule counts from now: the hours it was paused are not missed.
        clock.set(ms("2026-11-24T10:30:00Z"));
        let resumed = store.set_schedule_paused(&agent, paused.id, false).await.unwrap();
        assert_eq!(resumed.next_run_at, Some(ms("2026-11-24T11:00:00Z")));
        assert!(store.fire_due_schedules().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn limits_on_count_frequency_and_runs_per_day_hold() {
        let config = ScheduleConfig { max_per_agent: 2, max_runs_per_day: 1, ..ScheduleConfig::default() };
        let (_directory, store, clock) = open("2026-11-24T06:00:00Z", config).await;
        let agent = AgentId::default_agent();
        let too_often = store.create_schedule(&agent, &new("spam", Timing::Cron("* * * * *".into()), "UTC")).await;
        assert!(matches!(too_often, Err(StoreError::LimitExceeded(_))), "{too_often:?}");
        assert!(
            store.create_schedule(&agent, &new("past", Timing::Once(ms("2026-11-24T05:00:00Z")), "UTC")).await.is_err()
        );
        store.create_schedule(&agent, &new("a", Timing::Cron("0 7 * * *".into()), "UTC")).await.unwrap();
        store.create_schedule(&agent, &new("b", Timing::Cron("0 7 * * *".into()), "UTC")).await.unwrap();
        let third = store.create_schedule(&agent, &new("c", Timing::Cron("0 7 * * *".into()), "UTC")).await;
        assert!(matches!(third, Err(StoreError::LimitExceeded(_))), "{third:?}");
        clock.set(ms("2026-11-24T07:00:00Z"));
        let outcomes: Vec<RunOutcome> =
            store.fire_due_schedules().await.unwrap().iter().map(|firing| firing.run.outcome).collect();
        assert_eq!(outcomes, vec![RunOutcome::Started, RunOutcome::SkippedLimit]);
    }

    #[tokio::test]
    async fn the_agents_notifications_are_rate_limited_and_the_schedulers_are_not() {
        let (_directory, store, clock) = open("2026-11-24T06:00:00Z", ScheduleConfig::default()).await;
        let agent = AgentId::default_agent();
        let note = |source| NewNotification {
            source,
            title: "t".into(),
            text: "hello".into(),
            conversation_id: None,
            schedule_id: None,
        };
        store.add_notification(&agent, &note(NotificationSource::Agent)).await.unwrap();
        clock.advance_ms(60_000);
        store.add_notification(&agent, &note(NotificationSource::Agent)).await.unwrap();
        let refused = store.add_notification(&agent, &note(NotificationSource::Agent)).await;
        match refused {
            Err(StoreError::RateLimited { retry_after_secs, .. }) => assert_eq!(retry_after_secs, 3600 - 60),
            other => panic!("{other:?}"),
        }
        store.add_notification(&agent, &note(NotificationSource::Schedule)).await.unwrap();
        clock.advance_ms(3_600_000 - 60_000 + 1);
        store.add_notification(&agent, &note(NotificationSource::Agent)).await.unwrap();
        let long = NewNotification { text: "x".repeat(51), ..note(NotificationSource::Agent) };
        assert!(matches!(store.add_notification(&agent, &long).await, Err(StoreError::LimitExceeded(_))));
        assert_eq!(store.list_notifications(&agent, 0, 10).await.unwrap().len(), 4);
    }

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn a_cron_time_is_local_to_its_zone_across_dst() {
        // 08:30 in Oslo: UTC+1 in winter, UTC+2 in summer.
        let timing = Timing::Cron("30 8 * * *".into());
        assert_eq!(
            next_time(&timing, "Europe/Oslo", ms("2026-01-10T12:00:00Z")).unwrap(),
            Some(ms("2026-01-11T07:30:00Z"))
        );
        assert_eq!(
            next_time(&timing, "Europe/Oslo", ms("2026-07-10T12:00:00Z")).unwrap(),
            Some(ms("2026-07-11T06:30:00Z"))
        );
        // 02:30 does not exist in Oslo on 2026-03-29 (clocks jump from 02:00 to 03:00).
        let skipped = Timing::Cron("30 2 * * *".into());
        let next = next_time(&skipped, "Europe/Oslo", ms("2026-03-28T12:00:00Z")).unwrap().unwrap();
        assert_ne!(next, ms("2026-03-29T01:30:00Z"));
        assert!(next > ms("2026-03-29T00:00:00Z"));
        assert!(next_time(&timing, "Mars/Olympus", 0).is_err());
        assert!(next_time(&Timing::Cron("every day".into()), "UTC", 0).is_err());
    }

    #[test]
    fn the_shortest_gap_of_an_expression_is_found() {
        let zone = zone("UTC").unwrap();
        let every_minute_twice_an_hour = parse_cron("0,1 * * * *").unwrap();
        assert_eq!(shortest_gap(&every_minute_twice_an_hour, &zone, 0, 500), Some(MINUTE_MS));
        let daily = parse_cron("0 9 * * *").unwrap();
        assert_eq!(shortest_gap(&daily, &zone, 0, 10), Some(DAY_MS));
    }
}
