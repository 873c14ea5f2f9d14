//! Usage, cost and budgets over HTTP: the ledger's report (`GET /api/usage`), its rows as CSV,
//! a conversation's tokens, cost and context meter, and the prices and budgets of the Settings
//! page.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wright_core::{AgentId, iso_from_ms};
use wright_store::{BudgetScope, BudgetSettings, ModelPrice, UsageGrouping, UsageRow, UsageTotals};

use super::{ApiError, ApiJson};
use crate::AppState;
use crate::domain::prices::list_prices;

/// How long a usage report waits for the ledger's writer to write the rows queued before it
/// (it then reads what is there).
const REPORT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// How a report groups its rows.
#[derive(Deserialize, Serialize, ToSchema, Clone, Copy, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GroupingView {
    Agent,
    Model,
    #[default]
    Day,
    Caller,
}

impl From<GroupingView> for UsageGrouping {
    fn from(view: GroupingView) -> Self {
        match view {
            GroupingView::Agent => UsageGrouping::Agent,
            GroupingView::Model => UsageGrouping::Model,
            GroupingView::Day => UsageGrouping::Day,
            GroupingView::Caller => UsageGrouping::Caller,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UsageQuery {
    /// `7d`, `24h`, a UTC day (`2026-11-01`) or an RFC 3339 time; the start of this month
    /// (UTC) when absent.
    pub since: Option<String>,
    /// agent, model, day (default) or caller.
    pub by: Option<GroupingView>,
}

/// Sums of model requests.
#[derive(Serialize, ToSchema, Clone)]
pub(crate) struct TotalsView {
    pub requests: i64,
    /// Every prompt token, cached ones included.
    pub prompt_tokens: i64,
    pub cached_prompt_tokens: i64,
    pub completion_tokens: i64,
    /// At the prices of the moment each request was made.
    pub cost_usd: f64,
    /// Requests whose wire reported no usage: their tokens are estimates.
    pub estimated_requests: i64,
}

impl From<&UsageTotals> for TotalsView {
    fn from(totals: &UsageTotals) -> Self {
        Self {
            requests: totals.requests,
            prompt_tokens: totals.prompt_tokens,
            cached_prompt_tokens: totals.cached_prompt_tokens,
            completion_tokens: totals.completion_tokens,
            cost_usd: totals.cost_usd,
            estimated_requests: totals.estimated_requests,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct UsageRowView {
    /// The agent, `connection model`, the UTC day or the caller; `-` for none.
    pub key: String,
    #[serde(flatten)]
    pub totals: TotalsView,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct UsageReportView {
    pub since: String,
    pub by: GroupingView,
    pub rows: Vec<UsageRowView>,
    pub totals: TotalsView,
}

pub(crate) fn report_view(since_ms: i64, by: GroupingView, rows: &[UsageRow], totals: &UsageTotals) -> UsageReportView {
    UsageReportView {
        since: iso_from_ms(since_ms),
        by,
        rows: rows
            .iter()
            .map(|row| UsageRowView { key: row.key.clone(), totals: TotalsView::from(&row.totals) })
            .collect(),
        totals: TotalsView::from(totals),
    }
}

fn since_of(state: &AppState, since: Option<&str>) -> Result<i64, ApiError> {
    wright_store::usage::parse_since(since, state.store.clock().now_ms()).map_err(ApiError::bad_request)
}

/// What model requests used and cost since a time, grouped.
#[utoipa::path(
    get, path = "/api/usage", tag = "usage", params(UsageQuery),
    responses((status = 200, body = UsageReportView), (status = 400, body = super::error::ErrorBody)),
)]
pub(crate) async fn report(
    State(state): State<AppState>,
    Query(query): Query<UsageQuery>,
) -> Result<Json<UsageReportView>, ApiError> {
    let since = since_of(&state, query.since.as_deref())?;
    let by = query.by.unwrap_or_default();
    state.ledger.written(REPORT_WAIT).await;
    let (rows, totals) = state.store.usage_summary(since, by.into()).await?;
    Ok(Json(report_view(since, by, &rows, &totals)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ExportQuery {
    /// As for the report.
    pub since: Option<String>,
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}

/// Every model request since a time, one CSV line each.
#[utoipa::path(
    get, path = "/api/usage/export", tag = "usage", params(ExportQuery),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400, body = super::error::ErrorBody)),
)]
pub(crate) async fn export(
    State(state): State<AppState>,
    Query(query): Query<ExportQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let since = since_of(&state, query.since.as_deref())?;
    let mut csv = String::from(
        "time,agent,conversation,run,caller,purpose,connection,model,prompt_tokens,cached_prompt_tokens,\
         completion_tokens,reasoning_tokens,request_id,duration_ms,cost_usd,estimated,cut\n",
    );
    state.ledger.written(REPORT_WAIT).await;
    for (at, record) in state.store.usage_records(since).await? {
        let fields = [
            iso_from_ms(at),
            record.agent_id.unwrap_or_default(),
            record.conversation_id.unwrap_or_default(),
            record.run_id.unwrap_or_default(),
            record.caller.as_str().to_owned(),
            record.purpose.as_str().to_owned(),
            record.connection,
            record.model,
            record.prompt_tokens.to_string(),
            record.cached_prompt_tokens.to_string(),
            record.completion_tokens.to_string(),
            record.reasoning_tokens.map(|tokens| tokens.to_string()).unwrap_or_default(),
            record.request_id.unwrap_or_default(),
            record.duration_ms.to_string(),
            format!("{:.6}", record.cost_usd),
            record.estimated.to_string(),
            record.cut.to_string(),
        ];
        csv.push_str(&fields.iter().map(|field| csv_field(field)).collect::<Vec<_>>().join(","));
        csv.push('\n');
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"wright-usage.csv\""),
        ],
        csv,
    ))
}

/// A conversation's usage, and how full the model's context is.
#[derive(Serialize, ToSchema)]
pub(crate) struct ConversationUsageView {
    #[serde(flatten)]
    pub totals: TotalsView,
    /// What the next request will send, about: the last request's prompt and its reply
    /// (null before the first request).
    pub context_tokens: Option<i64>,
    /// The model's context window, when known (the Settings page, the model's server, or
    /// `[agent] context_window`).
    pub context_window: Option<i64>,
}

/// The tokens and cost of a conversation, and its context meter.
#[utoipa::path(
    get, path = "/api/conversations/{id}/usage", tag = "usage", params(("id" = String, Path)),
    responses((status = 200, body = ConversationUsageView), (status = 404, body = super::error::ErrorBody)),
)]
pub(crate) async fn conversation(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ConversationUsageView>, ApiError> {
    let conversation = state.store.conversation(&id).await?;
    state.ledger.written(REPORT_WAIT).await;
    let usage = state.store.conversation_usage(&id).await?;
    let agent = AgentId::parse(&conversation.agent_id)?;
    let context_window = match state.models.for_agent(&agent).await {
        Ok(model) => match model.context_window {
            Some(window) => Some(i64::from(window)),
            None => model.provider.context_window().await.map(i64::from),
        },
        Err(_) => None,
    }
    .or(state.config.agent.context_window.map(|window| window as i64));
    Ok(Json(ConversationUsageView {
        totals: TotalsView::from(&usage.totals),
        context_tokens: usage.last_prompt_tokens.map(|prompt| prompt + usage.last_completion_tokens.unwrap_or(0)),
        context_window,
    }))
}

/// A price per million tokens.
#[derive(Serialize, Deserialize, ToSchema, Clone)]
pub(crate) struct PriceView {
    /// A connection's id (`env:openai`, or one added on this page).
    pub connection: String,
    pub model: String,
    pub input_per_mtok: f64,
    pub cached_input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// A vendor's list price, used when no price is set for a connection's model.
#[derive(Serialize, ToSchema)]
pub(crate) struct ListPriceView {
    /// openai, anthropic or gemini.
    pub vendor: String,
    /// Models whose id begins with this (the longest match wins).
    pub model_prefix: String,
    pub input_per_mtok: f64,
    pub cached_input_per_mtok: f64,
    pub output_per_mtok: f64,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct PricesView {
    /// Prices set here, by connection and model.
    pub set: Vec<PriceView>,
    /// The defaults for the hosted vendors' models; local servers cost 0 unless set.
    pub defaults: Vec<ListPriceView>,
}

/// The prices requests are costed at.
#[utoipa::path(get, path = "/api/settings/prices", tag = "settings", responses((status = 200, body = PricesView)))]
pub(crate) async fn prices(State(state): State<AppState>) -> Result<Json<PricesView>, ApiError> {
    let set = state
        .store
        .model_prices()
        .await?
        .into_iter()
        .map(|price| PriceView {
            connection: price.connection,
            model: price.model,
            input_per_mtok: price.input_per_mtok,
            cached_input_per_mtok: price.cached_input_per_mtok,
            output_per_mtok: price.output_per_mtok,
        })
        .collect();
    let defaults = list_prices()
        .map(|(vendor, prefix, price)| ListPriceView {
            vendor: vendor.to_owned(),
            model_prefix: prefix.to_owned(),
            input_per_mtok: price.input,
            cached_input_per_mtok: price.cached_input,
            output_per_mtok: price.output,
        })
        .collect();
    Ok(Json(PricesView { set, defaults }))
}

/// Sets the price of a connection's model. Requests made before keep the cost they had.
#[utoipa::path(
    put, path = "/api/settings/prices", tag = "settings", request_body = PriceView,
    responses((status = 200, body = PriceView), (status = 400, body = super::error::ErrorBody)),
)]
pub(crate) async fn set_price(
    State(state): State<AppState>,
    ApiJson(price): ApiJson<PriceView>,
) -> Result<Json<PriceView>, ApiError> {
    if price.connection.trim().is_empty() || price.model.trim().is_empty() {
        return Err(ApiError::bad_request("a price names its connection and model"));
    }
    state
        .store
        .set_model_price(&ModelPrice {
            connection: price.connection.clone(),
            model: price.model.clone(),
            input_per_mtok: price.input_per_mtok,
            cached_input_per_mtok: price.cached_input_per_mtok,
            output_per_mtok: price.output_per_mtok,
        })
        .await?;
    state.ledger.settings_changed();
    Ok(Json(price))
}

/// The budgets of one scope; null is no limit.
#[derive(Serialize, Deserialize, ToSchema, Clone, Default)]
pub(crate) struct BudgetView {
    pub tokens_per_day: Option<i64>,
    pub tokens_per_month: Option<i64>,
    pub usd_per_day: Option<f64>,
    pub usd_per_month: Option<f64>,
    /// Tell the person once when this share is spent (80 when unset).
    pub notify_at_percent: Option<u8>,
}

impl From<BudgetSettings> for BudgetView {
    fn from(settings: BudgetSettings) -> Self {
        Self {
            tokens_per_day: settings.tokens_per_day,
            tokens_per_month: settings.tokens_per_month,
            usd_per_day: settings.usd_per_day,
            usd_per_month: settings.usd_per_month,
            notify_at_percent: settings.notify_at_percent,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ScopedBudgetView {
    /// `all`, or an agent's id.
    pub scope: String,
    /// Where the budgets in force come from: `settings` (this page) or `config` (config.toml).
    pub source: String,
    pub budget: BudgetView,
}

fn scope_name(scope: &BudgetScope) -> String {
    match scope {
        BudgetScope::All => "all".to_owned(),
        BudgetScope::Agent(agent) => agent.clone(),
    }
}

/// The budgets in force, by scope: the Settings page's, else config.toml's.
#[utoipa::path(
    get, path = "/api/settings/budgets", tag = "settings", responses((status = 200, body = Vec<ScopedBudgetView>)),
)]
pub(crate) async fn budgets(State(state): State<AppState>) -> Result<Json<Vec<ScopedBudgetView>>, ApiError> {
    let set = state.store.budget_settings().await?;
    let mut views: Vec<ScopedBudgetView> = set
        .iter()
        .map(|(scope, settings)| ScopedBudgetView {
            scope: scope_name(scope),
            source: "settings".to_owned(),
            budget: settings.clone().into(),
        })
        .collect();
    for (scope, settings) in state.ledger.configured() {
        if !set.iter().any(|(set_scope, _)| *set_scope == scope) {
            views.push(ScopedBudgetView {
                scope: scope_name(&scope),
                source: "config".to_owned(),
                budget: settings.into(),
            });
        }
    }
    Ok(Json(views))
}

/// Sets the budgets of `all` agents or of one agent; they take the place of config.toml's.
#[utoipa::path(
    put, path = "/api/settings/budgets/{scope}", tag = "settings", params(("scope" = String, Path)),
    request_body = BudgetView,
    responses((status = 200, body = BudgetView), (status = 400, body = super::error::ErrorBody)),
)]
pub(crate) async fn set_budget(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    ApiJson(budget): ApiJson<BudgetView>,
) -> Result<Json<BudgetView>, ApiError> {
    let scope =
        if scope == "all" { BudgetScope::All } else { BudgetScope::Agent(AgentId::parse(&scope)?.as_str().to_owned()) };
    let settings = BudgetSettings {
        tokens_per_day: budget.tokens_per_day,
        tokens_per_month: budget.tokens_per_month,
        usd_per_day: budget.usd_per_day,
        usd_per_month: budget.usd_per_month,
        notify_at_percent: budget.notify_at_percent,
    };
    state.store.set_budget_settings(&scope, &settings).await?;
    state.ledger.settings_changed();
    Ok(Json(budget))
}
