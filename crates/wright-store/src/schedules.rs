//! Schedules' rows: prompts an agent (or the person) asked to run later, stored durably, and
//! what became of each time one came due (`schedule_runs`).
//!
//! Only SQL lives here. When a schedule is due, whether a missed time runs, and the limits of a
//! new schedule are decided above the store (`wright-schedules`): [`Store::fire_due_schedules`]
//! asks that policy about each due schedule inside its transaction.
//!
//! Invariants: a due time is decided and the schedule advanced in one transaction, so a time
//! never fires twice (not across a restart, not between two processes); the live-schedule count
//! is checked in the insert's transaction; times come from the store's clock.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::AgentId;

use crate::{Store, StoreError};

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
    pub fn as_str(self) -> &'static str {
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

/// A new schedule's row, checked and timed above the store.
#[derive(Debug, Clone)]
pub struct ScheduleRow {
    pub name: String,
    pub prompt: String,
    /// The cron expression, or None for a one-off at `run_at`.
    pub cron: Option<String>,
    pub run_at: Option<i64>,
    /// An IANA zone name (`Europe/Oslo`) or `UTC`.
    pub time_zone: String,
    pub next_run_at: i64,
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

/// What the scheduler must do about a time that came due, as decided by the policy given to
/// [`Store::fire_due_schedules`] and recorded there.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    pub schedule: Schedule,
    pub run: ScheduleRun,
    /// For a run that starts: how late it is, milliseconds (0 when on time).
    pub late_by_ms: i64,
}

/// What the policy of [`Store::fire_due_schedules`] is told about a due schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub now: i64,
    /// Runs of the schedule's agent that started in the last 24 hours.
    pub runs_today: i64,
}

/// What the policy decided about a due schedule: the run row to record and how the schedule
/// moves on.
#[derive(Debug, Clone, PartialEq)]
pub struct FiringPlan {
    pub outcome: RunOutcome,
    /// Earlier due times folded into this one.
    pub missed_count: i64,
    pub due_at: i64,
    pub status: ScheduleStatus,
    /// Kept only while the status is active.
    pub next_run_at: Option<i64>,
    /// Told to the person in the same transaction (a time that does not run).
    pub notice: Option<crate::NewNotification>,
}

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
    /// Stores a new schedule whose times were decided above the store, unless the agent already
    /// has `max_live` live (active or paused) schedules — counted in the insert's transaction,
    /// so two requests at once cannot pass the limit together.
    pub async fn insert_schedule(
        &self,
        agent: &AgentId,
        row: &ScheduleRow,
        max_live: usize,
    ) -> Result<Schedule, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let live: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM schedules WHERE agent_id = ? AND status IN ('active', 'paused')")
                .bind(agent.as_str())
                .fetch_one(&mut *transaction)
                .await?;
        if live as usize >= max_live {
            return Err(StoreError::LimitExceeded(format!(
                "the agent has {live} schedules, the limit ([schedules] max_per_agent); cancel one first"
            )));
        }
        let inserted = sqlx::query(
            "INSERT INTO schedules (agent_id, name, prompt, cron, run_at, time_zone, status, next_run_at, created_by, \
             conversation_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)",
        )
        .bind(agent.as_str())
        .bind(&row.name)
        .bind(&row.prompt)
        .bind(row.cron.as_deref())
        .bind(row.run_at)
        .bind(&row.time_zone)
        .bind(row.next_run_at)
        .bind(match row.created_by {
            ScheduleAuthor::Agent => "agent",
            ScheduleAuthor::Admin => "admin",
        })
        .bind(row.conversation_id.as_deref())
        .bind(now)
        .bind(now)
        .execute(&mut *transaction)
        .await;
        let id = match inserted {
            Ok(done) => done.last_insert_rowid(),
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                return Err(StoreError::ItemExists { kind: "schedule", name: row.name.clone() });
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

    /// Moves a schedule from status `from` to `to` with this next time; false (nothing
    /// changed) when it is no longer in `from`.
    pub async fn set_schedule_status(
        &self,
        agent: &AgentId,
        id: i64,
        from: ScheduleStatus,
        to: ScheduleStatus,
        next_run_at: Option<i64>,
    ) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE schedules SET status = ?, next_run_at = ?, updated_at = ? WHERE agent_id = ? AND id = ? AND status = ?",
        )
        .bind(to.as_str())
        .bind(next_run_at)
        .bind(self.clock.now_ms())
        .bind(agent.as_str())
        .bind(id)
        .bind(from.as_str())
        .execute(&self.writer)
        .await?;
        Ok(changed.rows_affected() == 1)
    }

    /// For every active schedule due by now (at most 100 a call), asks `plan` what happens,
    /// records the run row, moves the schedule on and stores the plan's notice — one
    /// transaction. The scheduler then starts the runs whose outcome is `started`. A schedule
    /// the plan says nothing about (None) is left as it is.
    pub async fn fire_due_schedules(
        &self,
        mut plan: impl FnMut(&Schedule, Due) -> Option<FiringPlan>,
    ) -> Result<Vec<Firing>, StoreError> {
        const DAY_MS: i64 = 86_400_000;
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SCHEDULE} WHERE s.status = 'active' AND s.next_run_at <= ? ORDER BY s.next_run_at, s.id LIMIT 100"
        )))
        .bind(now)
        .fetch_all(&mut *transaction)
        .await?;
        let mut firings = Vec::new();
        let mut notified = false;
        for row in rows {
            let schedule = schedule_from_row(&row)?;
            let runs_today: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id \
                 WHERE s.agent_id = ? AND r.outcome IN ('started', 'finished', 'failed') AND r.fired_at > ?",
            )
            .bind(&schedule.agent_id)
            .bind(now - DAY_MS)
            .fetch_one(&mut *transaction)
            .await?;
            let Some(decided) = plan(&schedule, Due { now, runs_today }) else { continue };
            let next = decided.next_run_at.filter(|_| decided.status == ScheduleStatus::Active);
            sqlx::query("UPDATE schedules SET status = ?, next_run_at = ?, updated_at = ? WHERE id = ?")
                .bind(decided.status.as_str())
                .bind(next)
                .bind(now)
                .bind(schedule.id)
                .execute(&mut *transaction)
                .await?;
            let run_id = sqlx::query(
                "INSERT INTO schedule_runs (schedule_id, due_at, fired_at, outcome, missed_count) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(schedule.id)
            .bind(decided.due_at)
            .bind(now)
            .bind(decided.outcome.as_str())
            .bind(decided.missed_count)
            .execute(&mut *transaction)
            .await?
            .last_insert_rowid();
            let run = ScheduleRun {
                id: run_id,
                schedule_id: schedule.id,
                due_at: decided.due_at,
                fired_at: now,
                outcome: decided.outcome,
                missed_count: decided.missed_count,
                conversation_id: None,
            };
            if let Some(notice) = &decided.notice {
                let agent =
                    AgentId::parse(&schedule.agent_id).map_err(|error| StoreError::InvalidEdit(error.to_string()))?;
                crate::notifications::insert_notification(&mut transaction, &agent, notice, now).await?;
                notified = true;
            }
            let late_by_ms = if decided.outcome == RunOutcome::Started { now - decided.due_at } else { 0 };
            let schedule = Schedule { status: decided.status, next_run_at: next, ..schedule };
            firings.push(Firing { schedule, run, late_by_ms });
        }
        transaction.commit().await?;
        if notified {
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
