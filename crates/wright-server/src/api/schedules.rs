//! The agents' schedules for the admin page: the list with each one's last run, pausing and
//! resuming, deleting (cancelling: the history stays), and a schedule's recent runs.

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wright_core::iso_from_ms;
use wright_store::{RunOutcome, Schedule, ScheduleAuthor, ScheduleRun, ScheduleStatus};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;

#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum ScheduleStatusView {
    Active,
    Paused,
    /// A one-off that ran.
    Done,
    /// A one-off whose time passed while Wright was not running.
    Missed,
    Cancelled,
}

#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum RunOutcomeView {
    /// Its run started and has not ended yet.
    Started,
    Finished,
    Failed,
    /// Not run: Wright was not running then.
    Missed,
    /// Not run: the agent's runs per day were used up.
    SkippedLimit,
    /// Not run: a usage budget was spent.
    SkippedBudget,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ScheduleRunView {
    pub id: i64,
    pub due_at: String,
    pub fired_at: String,
    pub outcome: RunOutcomeView,
    /// For a missed row: how many times were missed.
    pub missed_count: i64,
    pub conversation_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ScheduleView {
    pub id: i64,
    pub name: String,
    pub prompt: String,
    /// The cron expression of a repeating schedule.
    pub cron: Option<String>,
    /// The time of a one-off.
    pub run_at: Option<String>,
    pub time_zone: String,
    pub status: ScheduleStatusView,
    pub next_run_at: Option<String>,
    /// `agent` or `admin`.
    pub created_by: String,
    pub created_at: String,
    pub last_run: Option<ScheduleRunView>,
}

impl From<ScheduleRun> for ScheduleRunView {
    fn from(run: ScheduleRun) -> Self {
        Self {
            id: run.id,
            due_at: iso_from_ms(run.due_at),
            fired_at: iso_from_ms(run.fired_at),
            outcome: match run.outcome {
                RunOutcome::Started => RunOutcomeView::Started,
                RunOutcome::Finished => RunOutcomeView::Finished,
                RunOutcome::Failed => RunOutcomeView::Failed,
                RunOutcome::Missed => RunOutcomeView::Missed,
                RunOutcome::SkippedLimit => RunOutcomeView::SkippedLimit,
                RunOutcome::SkippedBudget => RunOutcomeView::SkippedBudget,
            },
            missed_count: run.missed_count,
            conversation_id: run.conversation_id,
        }
    }
}

impl From<Schedule> for ScheduleView {
    fn from(schedule: Schedule) -> Self {
        Self {
            id: schedule.id,
            name: schedule.name,
            prompt: schedule.prompt,
            cron: schedule.cron,
            run_at: schedule.run_at.map(iso_from_ms),
            time_zone: schedule.time_zone,
            status: match schedule.status {
                ScheduleStatus::Active => ScheduleStatusView::Active,
                ScheduleStatus::Paused => ScheduleStatusView::Paused,
                ScheduleStatus::Done => ScheduleStatusView::Done,
                ScheduleStatus::Missed => ScheduleStatusView::Missed,
                ScheduleStatus::Cancelled => ScheduleStatusView::Cancelled,
            },
            next_run_at: schedule.next_run_at.map(iso_from_ms),
            created_by: match schedule.created_by {
                ScheduleAuthor::Agent => "agent".into(),
                ScheduleAuthor::Admin => "admin".into(),
            },
            created_at: iso_from_ms(schedule.created_at),
            last_run: schedule.last_run.map(ScheduleRunView::from),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SchedulesQuery {
    /// Also the schedules that ended (done, missed, cancelled).
    pub all: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
pub(super) struct SetPaused {
    pub paused: bool,
}

/// The agent's schedules, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/schedules", tag = "schedules", params(("agent" = String, Path), SchedulesQuery),
    responses((status = 200, body = Vec<ScheduleView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    Query(query): Query<SchedulesQuery>,
) -> Result<Json<Vec<ScheduleView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let schedules = state.store.list_schedules(&agent, query.all.unwrap_or(false)).await?;
    Ok(Json(schedules.into_iter().map(ScheduleView::from).collect()))
}

/// Pauses a schedule or resumes it (counting from now: times passed while paused are not run).
#[utoipa::path(
    put, path = "/api/agents/{agent}/schedules/{id}/paused", tag = "schedules",
    params(("agent" = String, Path), ("id" = i64, Path)), request_body = SetPaused,
    responses((status = 200, body = ScheduleView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn set_paused(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
    ApiJson(request): ApiJson<SetPaused>,
) -> Result<Json<ScheduleView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.schedules.set_paused(&agent, id, request.paused).await?.into()))
}

/// Deletes a schedule: it never runs again; its history stays.
#[utoipa::path(
    delete, path = "/api/agents/{agent}/schedules/{id}", tag = "schedules",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = ScheduleView), (status = 404, body = super::error::ErrorBody),
               (status = 422, body = super::error::ErrorBody)),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<ScheduleView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.cancel_schedule(&agent, id).await?.into()))
}

/// A schedule's recent due times and what became of each, newest first.
#[utoipa::path(
    get, path = "/api/agents/{agent}/schedules/{id}/runs", tag = "schedules",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = Vec<ScheduleRunView>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn runs(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<Vec<ScheduleRunView>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state.store.schedule(&agent, id).await?;
    Ok(Json(state.store.schedule_runs(id, 50).await?.into_iter().map(ScheduleRunView::from).collect()))
}
