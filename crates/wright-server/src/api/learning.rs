//! Learning from experience (issue 31) over HTTP: ratings of answers, the runs' outcomes,
//! cases, learning rounds with each candidate's per-case before/after, learned items and the
//! person's decisions on them, and the agent's learning settings.
//!
//! A rating attaches to a **run**: the run that produced the answer the person rated, named by
//! the seq of any of its events (the answer's), or the conversation's latest run when no seq is
//! given. The latest rating of a run is its outcome.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wright_core::{CaseCheck, Rating, ReplayPhase, RoundTrigger};
use wright_store::{Case, ItemChange, LearnedItem, LearningSettings, Round, RunOutcomeRecord};

use super::agents::existing_agent;
use super::{ApiError, ApiJson};
use crate::AppState;
use crate::learning::{CaseSource, ItemAction};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Feedback {
    pub rating: Rating,
    pub comment: Option<String>,
    /// The seq of the rated answer (any event of its run); the latest run when absent.
    pub seq: Option<i64>,
}

/// Rates the run that gave an answer: up makes its outcome a success, down a failure.
#[utoipa::path(
    post, path = "/api/conversations/{id}/feedback", tag = "learning", params(("id" = String, Path)),
    request_body = Feedback,
    responses((status = 200, body = RunOutcomeRecord), (status = 400, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn feedback(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Feedback>,
) -> Result<Json<RunOutcomeRecord>, ApiError> {
    let comment = body.comment.as_deref().map(str::trim).filter(|comment| !comment.is_empty());
    Ok(Json(crate::learning::rate(&state, &id, body.seq, body.rating, comment).await?))
}

/// The finished runs of a conversation with their outcomes and ratings, in order.
#[utoipa::path(
    get, path = "/api/conversations/{id}/outcomes", tag = "learning", params(("id" = String, Path)),
    responses((status = 200, body = Vec<RunOutcomeRecord>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn outcomes(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<RunOutcomeRecord>>, ApiError> {
    state.store.conversation(&id).await?;
    Ok(Json(state.store.conversation_runs(&id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewCase {
    /// The case replays this conversation's first message; give this or `message`.
    pub conversation_id: Option<String>,
    pub message: Option<String>,
    pub check: CaseCheck,
}

/// The agent's cases, each marked training (an item was learned from its conversation) or
/// held-out.
#[utoipa::path(
    get, path = "/api/agents/{agent}/cases", tag = "learning", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<Case>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn list_cases(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<Case>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.cases(&agent).await?))
}

/// Makes a case from a conversation (its first message; the check is judged on the data now
/// and becomes that run's outcome) or from a message.
#[utoipa::path(
    post, path = "/api/agents/{agent}/cases", tag = "learning", params(("agent" = String, Path)), request_body = NewCase,
    responses((status = 201, body = Case), (status = 400, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn create_case(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(body): ApiJson<NewCase>,
) -> Result<(StatusCode, Json<Case>), ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let source = match (body.conversation_id, body.message) {
        (Some(conversation), None) => CaseSource::Conversation(conversation),
        (None, Some(message)) => CaseSource::Message(message),
        _ => return Err(ApiError::bad_request("give either `conversation_id` or `message`")),
    };
    let case = crate::learning::create_case(&state, &agent, source, &body.check).await?;
    Ok((StatusCode::CREATED, Json(case)))
}

#[derive(Serialize, ToSchema)]
pub(super) struct Deleted {
    pub deleted: bool,
}

#[utoipa::path(
    delete, path = "/api/agents/{agent}/cases/{id}", tag = "learning", params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = Deleted), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn delete_case(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<Deleted>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    if !state.store.delete_case(&agent, id).await? {
        return Err(wright_store::StoreError::ItemNotFound { kind: "case", name: id.to_string() }.into());
    }
    Ok(Json(Deleted { deleted: true }))
}

/// The agent's learning rounds, oldest first: the learning curve is their held-out passes.
#[utoipa::path(
    get, path = "/api/agents/{agent}/learning/rounds", tag = "learning", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<Round>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn list_rounds(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<Round>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.rounds(&agent).await?))
}

/// Starts a learning round in the background (409 while one runs); its progress is in the
/// round.
#[utoipa::path(
    post, path = "/api/agents/{agent}/learning/rounds", tag = "learning", params(("agent" = String, Path)),
    responses((status = 202, body = Round), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn start_round(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<(StatusCode, Json<Round>), ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let round = crate::learning::start_round(&state, &agent, RoundTrigger::Person).await?;
    Ok((StatusCode::ACCEPTED, Json(round)))
}

/// One case in a candidate's replays: whether it passed without the candidate and with it.
#[derive(Serialize, ToSchema)]
pub(super) struct CaseResult {
    pub case_id: i64,
    pub message: Option<String>,
    pub before: Option<bool>,
    pub before_detail: Option<String>,
    pub after: Option<bool>,
    pub after_detail: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct CandidateView {
    pub item: LearnedItem,
    pub decision: Option<wright_core::CandidateDecision>,
    pub reason: Option<String>,
    pub added_tokens: i64,
    pub cases: Vec<CaseResult>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct RoundDetail {
    pub round: Round,
    pub candidates: Vec<CandidateView>,
    /// Each held-out case before any candidate and after, with every accepted one (after is
    /// absent when none was accepted).
    pub cases: Vec<CaseResult>,
}

/// A round with each candidate's per-case before/after.
#[utoipa::path(
    get, path = "/api/agents/{agent}/learning/rounds/{id}", tag = "learning", params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = RoundDetail), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn round_detail(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<RoundDetail>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let round = state
        .store
        .round(&agent, id)
        .await?
        .ok_or(wright_store::StoreError::ItemNotFound { kind: "learning round", name: id.to_string() })?;
    let replays = state.store.round_replays(id).await?;
    let cases = state.store.cases(&agent).await?;
    let message = |case_id: i64| cases.iter().find(|case| case.id == case_id).map(|case| case.message.clone());
    let of_phase = |phase: ReplayPhase| replays.iter().filter(move |replay| replay.phase == phase);
    let baseline: Vec<_> = of_phase(ReplayPhase::Before).collect();
    let candidates = state
        .store
        .round_candidates(&agent, id)
        .await?
        .into_iter()
        .map(|candidate| {
            let cases = baseline
                .iter()
                .map(|before| {
                    let after = of_phase(ReplayPhase::Candidate)
                        .find(|replay| replay.item_id == Some(candidate.item.id) && replay.case_id == before.case_id);
                    CaseResult {
                        case_id: before.case_id,
                        message: message(before.case_id),
                        before: Some(before.passed),
                        before_detail: Some(before.detail.clone()),
                        after: after.map(|replay| replay.passed),
                        after_detail: after.map(|replay| replay.detail.clone()),
                    }
                })
                .collect();
            CandidateView {
                item: candidate.item,
                decision: candidate.decision,
                reason: candidate.reason,
                added_tokens: candidate.added_tokens,
                cases,
            }
        })
        .collect();
    let overall = baseline
        .iter()
        .map(|before| {
            let after = of_phase(ReplayPhase::After).find(|replay| replay.case_id == before.case_id);
            CaseResult {
                case_id: before.case_id,
                message: message(before.case_id),
                before: Some(before.passed),
                before_detail: Some(before.detail.clone()),
                after: after.map(|replay| replay.passed),
                after_detail: after.map(|replay| replay.detail.clone()),
            }
        })
        .collect();
    Ok(Json(RoundDetail { round, candidates, cases: overall }))
}

/// The agent's learned items (every status), newest first, with their counters.
#[utoipa::path(
    get, path = "/api/agents/{agent}/learning/items", tag = "learning", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<LearnedItem>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn list_items(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<LearnedItem>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.learned_items(&agent, None).await?))
}

/// Every change of an item's status: its versions, with who made each and why.
#[utoipa::path(
    get, path = "/api/agents/{agent}/learning/items/{id}/changes", tag = "learning",
    params(("agent" = String, Path), ("id" = i64, Path)),
    responses((status = 200, body = Vec<ItemChange>), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn item_changes(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
) -> Result<Json<Vec<ItemChange>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state
        .store
        .learned_item(&agent, id)
        .await?
        .ok_or(wright_store::StoreError::ItemNotFound { kind: "learned item", name: id.to_string() })?;
    Ok(Json(state.store.item_changes(id).await?))
}

/// What the person decides about a learned item.
#[derive(Deserialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum ItemDecision {
    Approve,
    Reject,
    RollBack,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ItemDecisionBody {
    pub action: ItemDecision,
    pub reason: Option<String>,
}

/// Approves an item (it goes live), rejects one, or rolls a live one back; each a new version.
#[utoipa::path(
    post, path = "/api/agents/{agent}/learning/items/{id}/decision", tag = "learning",
    params(("agent" = String, Path), ("id" = i64, Path)), request_body = ItemDecisionBody,
    responses((status = 200, body = LearnedItem), (status = 400, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn decide_item(
    State(state): State<AppState>,
    Path((agent, id)): Path<(String, i64)>,
    ApiJson(body): ApiJson<ItemDecisionBody>,
) -> Result<Json<LearnedItem>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let action = match body.action {
        ItemDecision::Approve => ItemAction::Approve,
        ItemDecision::Reject => ItemAction::Reject,
        ItemDecision::RollBack => ItemAction::RollBack,
    };
    Ok(Json(crate::learning::act_on_item(&state, &agent, id, action, body.reason.as_deref()).await?))
}

#[utoipa::path(
    get, path = "/api/agents/{agent}/learning/settings", tag = "learning", params(("agent" = String, Path)),
    responses((status = 200, body = LearningSettings), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn get_settings(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<LearningSettings>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(state.store.learning_settings(&agent).await?))
}

/// Sets whether accepted items wait for approval and whether a round runs nightly.
#[utoipa::path(
    put, path = "/api/agents/{agent}/learning/settings", tag = "learning", params(("agent" = String, Path)),
    request_body = LearningSettings,
    responses((status = 200, body = LearningSettings), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn set_settings(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(settings): ApiJson<LearningSettings>,
) -> Result<Json<LearningSettings>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    state.store.set_learning_settings(&agent, settings).await?;
    Ok(Json(settings))
}
