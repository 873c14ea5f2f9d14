//! The Settings page's API: provider connections (add, edit, test, remove, list their models)
//! and the model of each agent and the default.
//!
//! Invariants:
//! - No answer carries a key: a connection shows only whether one is set and its last four
//!   characters ([`crate::secrets::key_hint`]); a provider's error is shown with any key in it
//!   blanked out.
//! - Connections from the environment are listed read-only (`env:<kind>`); they are changed
//!   by restarting with other variables, never here.
//! - A choice names a connection that exists when it is made; deleting a connection deletes
//!   its choices.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wright_llm::{Connection, ConnectionKind, LlmError, ToolCallMode};
use wright_store::{ChoiceTarget, ConnectionFields, ModelChoice, StoredConnection};

use super::agents::existing_agent;
use super::state::OkView;
use super::{ApiError, ApiJson};
use crate::AppState;
use crate::secrets::key_hint;
use wright_agent::profile::ProfileOverride;

/// How long a test or a model list may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// A vendor (wright-llm's `ConnectionKind`, mirrored here for the OpenAPI document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Openai,
    Anthropic,
    Gemini,
    /// llama.cpp, vLLM, LM Studio: the base URL ends in `/v1`.
    OpenaiCompatible,
    /// The base URL is Ollama's host, e.g. `http://127.0.0.1:11434`.
    Ollama,
}

impl From<Kind> for ConnectionKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Openai => ConnectionKind::Openai,
            Kind::Anthropic => ConnectionKind::Anthropic,
            Kind::Gemini => ConnectionKind::Gemini,
            Kind::OpenaiCompatible => ConnectionKind::OpenaiCompatible,
            Kind::Ollama => ConnectionKind::Ollama,
        }
    }
}

impl From<ConnectionKind> for Kind {
    fn from(kind: ConnectionKind) -> Self {
        match kind {
            ConnectionKind::Openai => Kind::Openai,
            ConnectionKind::Anthropic => Kind::Anthropic,
            ConnectionKind::Gemini => Kind::Gemini,
            ConnectionKind::OpenaiCompatible => Kind::OpenaiCompatible,
            ConnectionKind::Ollama => Kind::Ollama,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(super) struct ConnectionView {
    /// A stored connection's id, or `env:<kind>` for one from the environment.
    pub id: String,
    pub name: String,
    pub kind: Kind,
    /// None: the vendor's public endpoint (`default_base_url`).
    pub base_url: Option<String>,
    pub default_base_url: String,
    pub key_set: bool,
    /// The key's last four characters; null when no key is set or it is too short to show any.
    pub key_last_four: Option<String>,
    /// Connections from the environment cannot be edited here.
    pub read_only: bool,
    /// For a connection from the environment, the variables it comes from.
    pub variables: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ConnectionsView {
    pub connections: Vec<ConnectionView>,
}

/// A connection to add or the new state of one; on an edit, an absent `api_key` keeps the
/// stored key and `clear_api_key` removes it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ConnectionInput {
    pub name: String,
    pub kind: Kind,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub clear_api_key: bool,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ModelView {
    pub id: String,
    /// Tokens, where the provider says.
    pub context_window: Option<u32>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ModelsView {
    pub models: Vec<ModelView>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct TestView {
    pub ok: bool,
    /// How many models the provider listed, when it answered.
    pub model_count: Option<usize>,
    /// The provider's own error, when it failed.
    pub error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ChoiceView {
    /// The agent, or null for the default.
    pub agent: Option<String>,
    pub connection_id: String,
    pub model: String,
    pub tool_calls: ToolCallMode,
    pub context_window: Option<u32>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ChoicesView {
    pub default: Option<ChoiceView>,
    pub agents: Vec<ChoiceView>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ChoiceInput {
    pub connection_id: String,
    pub model: String,
    #[serde(default = "native")]
    pub tool_calls: ToolCallMode,
    /// Tokens, for a provider that does not say.
    #[serde(default)]
    pub context_window: Option<u32>,
}

fn native() -> ToolCallMode {
    ToolCallMode::Native
}

fn stored_view(stored: StoredConnection, key: Option<&str>) -> Result<ConnectionView, ApiError> {
    let kind = ConnectionKind::parse(&stored.kind).ok_or_else(|| {
        ApiError::internal(&format!("connection {:?} has an unknown kind {:?}", stored.id, stored.kind))
    })?;
    Ok(ConnectionView {
        id: stored.id,
        name: stored.name,
        kind: kind.into(),
        base_url: stored.base_url,
        default_base_url: kind.default_base_url().to_owned(),
        key_set: key.is_some(),
        key_last_four: key.and_then(key_hint),
        read_only: false,
        variables: None,
    })
}

fn secrets_error(error: std::io::Error) -> ApiError {
    ApiError::internal(&format!("the keys file: {error}"))
}

/// Checks and trims what a person typed.
fn checked(input: &ConnectionInput) -> Result<(String, Option<String>, Option<String>), ApiError> {
    let name = input.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::bad_request("a connection needs a name of 1 to 100 characters"));
    }
    let base_url = input.base_url.as_deref().map(str::trim).filter(|base| !base.is_empty());
    if let Some(base) = base_url
        && !(base.starts_with("http://") || base.starts_with("https://"))
    {
        return Err(ApiError::bad_request(format!("the base URL {base:?} must start with http:// or https://")));
    }
    let api_key = input.api_key.as_deref().map(str::trim).filter(|key| !key.is_empty());
    if let Some(key) = api_key
        && (key.len() > 4096 || key.chars().any(char::is_control))
    {
        return Err(ApiError::bad_request("the API key must be one line of at most 4096 bytes"));
    }
    Ok((name.to_owned(), base_url.map(str::to_owned), api_key.map(str::to_owned)))
}

/// Every connection: the environment's first (read-only), then the stored ones by name.
#[utoipa::path(get, path = "/api/settings/connections", tag = "settings", responses((status = 200, body = ConnectionsView)))]
pub(super) async fn list_connections(State(state): State<AppState>) -> Result<Json<ConnectionsView>, ApiError> {
    let mut connections: Vec<ConnectionView> = state
        .models
        .env_connections()
        .into_iter()
        .map(|env| {
            let key = env.connection.api_key.as_deref();
            ConnectionView {
                name: format!("Environment ({})", env.connection.kind.as_str()),
                kind: env.connection.kind.into(),
                base_url: env.connection.base_url.clone(),
                default_base_url: env.connection.kind.default_base_url().to_owned(),
                key_set: key.is_some(),
                key_last_four: key.and_then(key_hint),
                read_only: true,
                variables: Some(env.variables.to_owned()),
                id: env.id,
            }
        })
        .collect();
    for stored in state.store.provider_connections().await? {
        let key = state.secrets.key(&stored.id).map_err(secrets_error)?;
        connections.push(stored_view(stored, key.as_deref())?);
    }
    Ok(Json(ConnectionsView { connections }))
}

/// Adds a connection; its key goes to the owner-only keys file, never to the database.
#[utoipa::path(
    post, path = "/api/settings/connections", tag = "settings", request_body = ConnectionInput,
    responses((status = 200, body = ConnectionView), (status = 400, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn create_connection(
    State(state): State<AppState>,
    ApiJson(input): ApiJson<ConnectionInput>,
) -> Result<Json<ConnectionView>, ApiError> {
    let (name, base_url, api_key) = checked(&input)?;
    let kind = ConnectionKind::from(input.kind);
    let fields = ConnectionFields { name: &name, kind: kind.as_str(), base_url: base_url.as_deref() };
    let stored = state.store.create_provider_connection(&fields).await?;
    state.secrets.set_key(&stored.id, api_key.as_deref()).map_err(secrets_error)?;
    Ok(Json(stored_view(stored, api_key.as_deref())?))
}

fn editable(id: &str) -> Result<(), ApiError> {
    if id.starts_with("env:") {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "read_only",
            "this connection comes from the environment of `wright serve`; change its variables and restart",
        ));
    }
    Ok(())
}

/// Changes a connection; the next run of an agent on it uses the change.
#[utoipa::path(
    put, path = "/api/settings/connections/{id}", tag = "settings", request_body = ConnectionInput,
    params(("id" = String, Path)),
    responses((status = 200, body = ConnectionView), (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn update_connection(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ConnectionInput>,
) -> Result<Json<ConnectionView>, ApiError> {
    editable(&id)?;
    let (name, base_url, api_key) = checked(&input)?;
    let kind = ConnectionKind::from(input.kind);
    let fields = ConnectionFields { name: &name, kind: kind.as_str(), base_url: base_url.as_deref() };
    let stored = state.store.update_provider_connection(&id, &fields).await?;
    if api_key.is_some() || input.clear_api_key {
        state.secrets.set_key(&id, api_key.as_deref()).map_err(secrets_error)?;
    }
    let key = state.secrets.key(&id).map_err(secrets_error)?;
    Ok(Json(stored_view(stored, key.as_deref())?))
}

/// Removes a connection, its key and every model choice made on it.
#[utoipa::path(
    delete, path = "/api/settings/connections/{id}", tag = "settings", params(("id" = String, Path)),
    responses((status = 200, body = OkView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn delete_connection(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<OkView>, ApiError> {
    editable(&id)?;
    state.store.delete_provider_connection(&id).await?;
    state.secrets.set_key(&id, None).map_err(secrets_error)?;
    Ok(Json(OkView { ok: true }))
}

async fn found(state: &AppState, id: &str) -> Result<Connection, ApiError> {
    match state.models.connection(id).await? {
        Some(connection) => Ok(connection),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no connection {id:?}"))),
    }
}

/// The provider's error as a person reads it. The connection already redacted the key it sent
/// (`Connection::list_models`); every other configured secret goes too.
fn provider_message(error: &LlmError, state: &AppState) -> String {
    state.redactor.redact(&error.to_string())
}

/// Makes a real, small request (the provider's model list) and says what the provider said.
#[utoipa::path(
    post, path = "/api/settings/connections/{id}/test", tag = "settings", params(("id" = String, Path)),
    responses((status = 200, body = TestView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn test_connection(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<TestView>, ApiError> {
    let connection = found(&state, &id).await?;
    let started = std::time::Instant::now();
    let listed = connection.list_models(PROVIDER_TIMEOUT).await;
    // The test lists the provider's models: a request to it, of no tokens, in the ledger all
    // the same (what was asked of each provider, and when, is there).
    let record = wright_store::UsageRecord {
        agent_id: None,
        conversation_id: None,
        run_id: None,
        caller: wright_core::UsageCaller::Person,
        purpose: wright_core::UsagePurpose::ConnectionTest,
        connection: id.clone(),
        model: "-".to_owned(),
        prompt_tokens: 0,
        cached_prompt_tokens: 0,
        completion_tokens: 0,
        reasoning_tokens: None,
        request_id: None,
        duration_ms: started.elapsed().as_millis() as i64,
        cost_usd: 0.0,
        estimated: false,
        cut: listed.is_err(),
    };
    state.ledger.record(None, &record).await;
    Ok(Json(match listed {
        Ok(models) => TestView { ok: true, model_count: Some(models.len()), error: None },
        Err(error) => TestView { ok: false, model_count: None, error: Some(provider_message(&error, &state)) },
    }))
}

/// The models the provider lists.
#[utoipa::path(
    get, path = "/api/settings/connections/{id}/models", tag = "settings", params(("id" = String, Path)),
    responses((status = 200, body = ModelsView), (status = 404, body = super::error::ErrorBody),
        (status = 502, description = "the provider's own error", body = super::error::ErrorBody)),
)]
pub(super) async fn list_models(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ModelsView>, ApiError> {
    let connection = found(&state, &id).await?;
    let models = connection
        .list_models(PROVIDER_TIMEOUT)
        .await
        .map_err(|error| ApiError::new(StatusCode::BAD_GATEWAY, "provider_error", provider_message(&error, &state)))?;
    let models =
        models.into_iter().map(|model| ModelView { id: model.id, context_window: model.context_window }).collect();
    Ok(Json(ModelsView { models }))
}

fn choice_view(choice: ModelChoice) -> ChoiceView {
    ChoiceView {
        agent: match choice.target {
            ChoiceTarget::Default => None,
            ChoiceTarget::Agent(agent) => Some(agent),
        },
        connection_id: choice.connection_id,
        model: choice.model,
        tool_calls: choice.tool_calls,
        context_window: choice.context_window,
    }
}

/// The default model and each agent's own.
#[utoipa::path(get, path = "/api/settings/models", tag = "settings", responses((status = 200, body = ChoicesView)))]
pub(super) async fn list_choices(State(state): State<AppState>) -> Result<Json<ChoicesView>, ApiError> {
    let mut view = ChoicesView { default: None, agents: Vec::new() };
    for choice in state.store.model_choices().await? {
        match choice.target {
            ChoiceTarget::Default => view.default = Some(choice_view(choice)),
            ChoiceTarget::Agent(_) => view.agents.push(choice_view(choice)),
        }
    }
    Ok(Json(view))
}

async fn set_choice(state: &AppState, target: ChoiceTarget, input: ChoiceInput) -> Result<Json<ChoiceView>, ApiError> {
    found(state, &input.connection_id).await?;
    let model = input.model.trim();
    if model.is_empty() {
        return Err(ApiError::bad_request("pick a model"));
    }
    if input.context_window == Some(0) {
        return Err(ApiError::bad_request("a context window is a positive number of tokens"));
    }
    let choice = ModelChoice {
        target,
        connection_id: input.connection_id,
        model: model.to_owned(),
        tool_calls: input.tool_calls,
        context_window: input.context_window,
    };
    state.store.set_model_choice(&choice).await?;
    Ok(Json(choice_view(choice)))
}

/// Sets the model of every agent without its own; the next run uses it.
#[utoipa::path(
    put, path = "/api/settings/models/default", tag = "settings", request_body = ChoiceInput,
    responses((status = 200, body = ChoiceView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn set_default_model(
    State(state): State<AppState>,
    ApiJson(input): ApiJson<ChoiceInput>,
) -> Result<Json<ChoiceView>, ApiError> {
    set_choice(&state, ChoiceTarget::Default, input).await
}

/// Removes the default choice (the environment's model applies again, if any).
#[utoipa::path(
    delete, path = "/api/settings/models/default", tag = "settings", responses((status = 200, body = OkView)),
)]
pub(super) async fn clear_default_model(State(state): State<AppState>) -> Result<Json<OkView>, ApiError> {
    Ok(Json(OkView { ok: state.store.clear_model_choice(&ChoiceTarget::Default).await? }))
}

/// Sets the agent's own model; its next run uses it.
#[utoipa::path(
    put, path = "/api/agents/{agent}/model", tag = "settings", request_body = ChoiceInput,
    params(("agent" = String, Path)),
    responses((status = 200, body = ChoiceView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn set_agent_model(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(input): ApiJson<ChoiceInput>,
) -> Result<Json<ChoiceView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    set_choice(&state, ChoiceTarget::Agent(agent.as_str().to_owned()), input).await
}

/// Removes the agent's own model; it uses the default again.
#[utoipa::path(
    delete, path = "/api/agents/{agent}/model", tag = "settings", params(("agent" = String, Path)),
    responses((status = 200, body = OkView), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn clear_agent_model(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<OkView>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    Ok(Json(OkView { ok: state.store.clear_model_choice(&ChoiceTarget::Agent(agent.as_str().to_owned())).await? }))
}

/// The profile an agent's model gets, and why (wright-agent's `profile`).
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ProfileView {
    /// `provider/model`.
    pub model: String,
    #[serde(flatten)]
    pub chosen: wright_agent::profile::ChosenProfile,
    /// What the Settings page set for this model (on top of config.toml), if anything.
    pub saved: Option<ProfileOverride>,
}

async fn agent_model(state: &AppState, agent: &str) -> Result<crate::domain::models::ConfiguredModel, ApiError> {
    let agent = existing_agent(state, agent).await?;
    state.models.for_agent(&agent).await.map_err(|message| ApiError::new(StatusCode::CONFLICT, "no_model", message))
}

async fn profile_view(state: &AppState, model: &crate::domain::models::ConfiguredModel) -> ProfileView {
    let chosen = state.runs.profile_of(model).await;
    ProfileView { model: model.key(), chosen, saved: state.runs.saved_profile(&model.key()).await }
}

/// The profile the agent's next run uses: chosen from what the model's server says, with
/// `[model_profiles]` of config.toml, the Settings page's settings and `WRIGHT_TEMPERATURE` on
/// top.
#[utoipa::path(
    get, path = "/api/agents/{agent}/model/profile", tag = "settings", params(("agent" = String, Path)),
    responses((status = 200, body = ProfileView), (status = 404, body = super::error::ErrorBody),
              (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn model_profile(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<ProfileView>, ApiError> {
    let model = agent_model(&state, &agent).await?;
    Ok(Json(profile_view(&state, &model).await))
}

/// Sets the profile of the agent's model, or any of its settings, by hand: kept per model
/// (`provider/model`), so every agent on that model gets it; the next run uses it. Fields left
/// out keep what the profile (and config.toml) decide.
#[utoipa::path(
    put, path = "/api/agents/{agent}/model/profile", tag = "settings", params(("agent" = String, Path)),
    request_body = ProfileOverride,
    responses((status = 200, body = ProfileView), (status = 400, body = super::error::ErrorBody),
              (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn set_model_profile(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    ApiJson(input): ApiJson<ProfileOverride>,
) -> Result<Json<ProfileView>, ApiError> {
    let model = agent_model(&state, &agent).await?;
    let saved = (input != ProfileOverride::default()).then_some(&input);
    state.runs.save_profile(&model.key(), saved).await?;
    Ok(Json(profile_view(&state, &model).await))
}

/// Removes what the Settings page set for the agent's model: the chosen profile applies again.
#[utoipa::path(
    delete, path = "/api/agents/{agent}/model/profile", tag = "settings", params(("agent" = String, Path)),
    responses((status = 200, body = ProfileView), (status = 404, body = super::error::ErrorBody),
              (status = 409, body = super::error::ErrorBody)),
)]
pub(super) async fn clear_model_profile(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<ProfileView>, ApiError> {
    let model = agent_model(&state, &agent).await?;
    state.runs.save_profile(&model.key(), None).await?;
    Ok(Json(profile_view(&state, &model).await))
}
