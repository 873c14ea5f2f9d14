//! When schedules run — the policy above the store's schedule rows.
//!
//! [`Schedules`] checks a new schedule against `[schedules]` and computes its first time;
//! pauses and resumes; and on every scheduler tick decides, for each schedule the store finds
//! due, what happens ([`plan_firing`]), inside the store's transaction
//! ([`Store::fire_due_schedules`](wright_store::Store::fire_due_schedules)).
//!
//! **Missed runs.** A time that came due less than `catch_up_minutes` ago (default 60) starts
//! one run, late if need be; times further back — Wright was not running — are not run: they
//! are recorded as one `missed` row (with how many there were), the person is told, and the
//! schedule moves on to its next time in the future. However many times were missed, a schedule
//! starts at most one run per tick; a one-off whose time was missed ends as `missed`.
//!
//! **Limits** (`[schedules]`): live schedules per agent (`max_per_agent`, 20, counted by the
//! store in the insert's transaction); the shortest gap between two times of a cron expression
//! (`min_interval_minutes`, 5), checked over its next 500 times; runs per agent per day
//! (`max_runs_per_day`, 48) — a time due beyond that is recorded as `skipped_limit`; a one-off
//! at most `max_days_ahead` (366) away; the prompt's and the name's length.

mod timing;

use serde::{Deserialize, Serialize};
use wright_core::AgentId;
use wright_store::{
    Due, Firing, FiringPlan, NewNotification, NotificationSource, RunOutcome, Schedule, ScheduleAuthor, ScheduleRow,
    ScheduleStatus, Store, StoreError,
};

pub use timing::{Timing, local_time, next_time};

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

/// The one error of schedules: the request was wrong, a limit holds, or the store failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// What was asked cannot be a schedule (a bad cron expression or zone, a past time); the
    /// message says what to write instead.
    #[error("{0}")]
    Invalid(String),
    /// A `[schedules]` limit would be exceeded; the message names it.
    #[error("{0}")]
    Limit(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

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

/// Schedules as the tools, the API and the scheduler use them: the store's rows under
/// `[schedules]`' policy. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Schedules {
    store: Store,
    config: ScheduleConfig,
}

impl Schedules {
    pub fn new(store: Store, config: ScheduleConfig) -> Self {
        Self { store, config }
    }

    pub fn config(&self) -> &ScheduleConfig {
        &self.config
    }

    /// Checks and stores a new schedule; its first time is computed from the store's clock.
    pub async fn create(&self, agent: &AgentId, new: &NewSchedule) -> Result<Schedule, ScheduleError> {
        let row = plan_new(new, self.store.clock().now_ms(), &self.config)?;
        match self.store.insert_schedule(agent, &row, self.config.max_per_agent).await {
            Err(StoreError::LimitExceeded(message)) => Err(ScheduleError::Limit(message)),
            inserted => Ok(inserted?),
        }
    }

    /// Pauses a schedule, or resumes it: a resumed schedule's next time is computed from now,
    /// so the times that passed while it was paused are neither run nor reported as missed.
    pub async fn set_paused(&self, agent: &AgentId, id: i64, paused: bool) -> Result<Schedule, ScheduleError> {
        let now = self.store.clock().now_ms();
        let schedule = self.store.schedule(agent, id).await?;
        let (from, to) = if paused {
            (ScheduleStatus::Active, ScheduleStatus::Paused)
        } else {
            (ScheduleStatus::Paused, ScheduleStatus::Active)
        };
        if schedule.status != from {
            if schedule.status == to {
                return Ok(schedule);
            }
            return Err(ScheduleError::Invalid(format!("schedule {id} is {}", schedule.status.as_str())));
        }
        let next = if paused {
            schedule.next_run_at
        } else {
            match Timing::of(&schedule) {
                Some(timing @ Timing::Cron(_)) => next_time(&timing, &schedule.time_zone, now)?,
                Some(Timing::Once(at)) if at > now => Some(at),
                _ => {
                    return Err(ScheduleError::Invalid(format!(
                        "schedule {id} was a one-off whose time has passed; make a new one"
                    )));
                }
            }
        };
        // A change in between (a cancel, a tick) wins; the answer shows the schedule as it is.
        self.store.set_schedule_status(agent, id, from, to, next).await?;
        Ok(self.store.schedule(agent, id).await?)
    }

    /// Decides and records every due time (see the crate's policy); the scheduler starts the
    /// runs whose outcome is `started` and the person is told about the rest.
    pub async fn fire_due(&self) -> Result<Vec<Firing>, ScheduleError> {
        Ok(self.store.fire_due_schedules(|schedule, due| plan_firing(schedule, due, &self.config)).await?)
    }
}

/// What to send instead of a one-off time that has passed, in the schedule's zone: the same
/// time on the first day it is still ahead, or a daily cron at that time (a small model asked
/// for "every day at 8:00" in the evening writes today's 08:00 as `at`).
fn later_instead(at: i64, now: i64, time_zone: &jiff::tz::TimeZone) -> String {
    let Ok(at) = jiff::Timestamp::from_millisecond(at) else { return String::new() };
    let local = at.to_zoned_datetime(time_zone.clone());
    let mut later = local.clone();
    // Whole days of 24 hours: the date is what is said; the hour and minute are the asked ones.
    while later.timestamp().as_millisecond() <= now {
        match later.checked_add(jiff::SignedDuration::from_hours(24)) {
            Ok(next) => later = next,
            Err(_) => return String::new(),
        }
    }
    let (time, day) = (local.datetime(), later.datetime());
    format!(
        "; for the next {:02}:{:02} send at \"{:04}-{:02}-{:02}T{:02}:{:02}\", or cron \"{} {} * * *\" to repeat it every day",
        time.hour(),
        time.minute(),
        day.year(),
        day.month(),
        day.day(),
        time.hour(),
        time.minute(),
        time.minute(),
        time.hour()
    )
}

/// A new schedule checked against `config` and timed from `now`.
fn plan_new(new: &NewSchedule, now: i64, config: &ScheduleConfig) -> Result<ScheduleRow, ScheduleError> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > config.max_name_chars {
        return Err(ScheduleError::Invalid(format!(
            "a schedule's name must have 1 to {} characters",
            config.max_name_chars
        )));
    }
    if new.prompt.trim().is_empty() {
        return Err(ScheduleError::Invalid("the prompt of a schedule is empty".into()));
    }
    if new.prompt.chars().count() > config.max_prompt_chars {
        return Err(ScheduleError::Limit(format!(
            "the prompt has {} characters; [schedules] max_prompt_chars is {}",
            new.prompt.chars().count(),
            config.max_prompt_chars
        )));
    }
    let time_zone = timing::zone(&new.time_zone)?;
    let (cron, run_at, next_run_at) = match &new.timing {
        Timing::Cron(expression) => {
            let cron = timing::parse_cron(expression)?;
            let next = timing::cron_next(&cron, &time_zone, now)
                .ok_or_else(|| ScheduleError::Invalid(format!("the cron expression {expression:?} never comes due")))?;
            if let Some(gap) = timing::shortest_gap(&cron, &time_zone, now, 500)
                && gap < config.min_interval_minutes * MINUTE_MS
            {
                return Err(ScheduleError::Limit(format!(
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
                return Err(ScheduleError::Invalid(format!(
                    "the time {} has already passed (now is {}){}",
                    wright_core::iso_from_ms(*at),
                    wright_core::iso_from_ms(now),
                    later_instead(*at, now, &time_zone)
                )));
            }
            if *at - now > config.max_days_ahead * DAY_MS {
                return Err(ScheduleError::Limit(format!(
                    "a one-off schedule may be at most {} days ahead ([schedules] max_days_ahead)",
                    config.max_days_ahead
                )));
            }
            (None, Some(*at), *at)
        }
    };
    Ok(ScheduleRow {
        name: name.to_owned(),
        prompt: new.prompt.clone(),
        cron,
        run_at,
        time_zone: new.time_zone.trim().to_owned(),
        next_run_at,
        created_by: new.created_by,
        conversation_id: new.conversation_id.clone(),
    })
}

/// What happens to a due schedule: the missed-run and runs-per-day policy. None for a row
/// with no timing or whose stored expression no longer reads (left for the person to see).
pub fn plan_firing(schedule: &Schedule, due: Due, config: &ScheduleConfig) -> Option<FiringPlan> {
    let first_due = schedule.next_run_at?;
    let timing = Timing::of(schedule)?;
    let Due { now, runs_today } = due;
    // Every time due by now: the latest one is the one that may still run.
    let mut latest = first_due;
    let mut count = 1i64;
    while let Ok(Some(next)) = next_time(&timing, &schedule.time_zone, latest)
        && next <= now
    {
        latest = next;
        count += 1;
        if count > 100_000 {
            break;
        }
    }
    let (outcome, missed_count) = if now - latest > config.catch_up_minutes * MINUTE_MS {
        (RunOutcome::Missed, count)
    } else if runs_today >= config.max_runs_per_day {
        (RunOutcome::SkippedLimit, count - 1)
    } else {
        (RunOutcome::Started, count - 1)
    };
    let next = next_time(&timing, &schedule.time_zone, now.max(latest)).ok()?;
    let status = match (&timing, outcome) {
        (Timing::Cron(_), _) => ScheduleStatus::Active,
        (Timing::Once(_), RunOutcome::Missed) => ScheduleStatus::Missed,
        (Timing::Once(_), _) => ScheduleStatus::Done,
    };
    let next_text = match (status, next) {
        (ScheduleStatus::Active, Some(next)) => format!("Next: {}.", wright_core::iso_from_ms(next)),
        _ => "It will not run again.".to_owned(),
    };
    let text = match outcome {
        RunOutcome::Missed => Some(format!(
            "“{}” did not run: {} time(s) passed while Wright was not running (the last at {}). {next_text}",
            schedule.name,
            missed_count,
            wright_core::iso_from_ms(latest),
        )),
        RunOutcome::SkippedLimit => Some(format!(
            "“{}” did not run at {}: the agent's schedules already ran {} times in the last 24 hours \
             ([schedules] max_runs_per_day). {next_text}",
            schedule.name,
            wright_core::iso_from_ms(latest),
            runs_today,
        )),
        _ => None,
    };
    Some(FiringPlan {
        outcome,
        missed_count,
        due_at: latest,
        status,
        next_run_at: next.filter(|_| status == ScheduleStatus::Active),
        notice: text.map(|text| NewNotification {
            source: NotificationSource::Schedule,
            title: format!("⏰ {} was missed", schedule.name),
            text,
            conversation_id: None,
            schedule_id: Some(schedule.id),
        }),
    })
}

#[cfg(test)]
mod tests;
