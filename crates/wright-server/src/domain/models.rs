//! Which model each agent talks to, decided again for every run, so a change made on the
//! Settings page applies to the next run without a restart.
//!
//! Two sources, and the more specific choice wins; at the same level the canvas wins:
//! 1. the agent's own model picked in the canvas (`model_choices` in the store),
//! 2. the agent's model in `[models]` of config.toml (agent id → `provider/model`),
//! 3. the default model picked in the canvas,
//! 4. the environment of `wright serve` (each provider's SDK variables and
//!    `WRIGHT_MODEL=provider/model`, read once at start), with a local Ollama found on its
//!    default address when nothing else is configured.
//!
//! Connections added in the canvas keep their keys in [`Secrets`]; the environment's providers
//! are shown beside them as read-only connections (ids `env:<kind>`) and can be picked too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wright_agent::ProviderModel;
use wright_agent::profile::{ModelFacts, ProfileOverride};
use wright_core::AgentId;
use wright_llm::{Connection, ConnectionKind, LlmError, ProviderConfig, ProviderEnv, config_from_env};
use wright_store::{ChoiceTarget, ModelChoice, Store, StoreError};

use super::DomainError;
use crate::secrets::Secrets;

/// The configured model and how to name it.
#[derive(Clone)]
pub struct ConfiguredModel {
    pub model: Arc<dyn wright_agent::Model>,
    /// The provider under `model`, for a run to meter ([`crate::domain::usage`]).
    pub provider: Arc<dyn wright_llm::Provider>,
    /// The connection's id: a Settings page connection, or `env:<kind>`.
    pub connection: String,
    pub kind: String,
    pub name: String,
    /// Tokens the model takes, where the person said (the provider's list, or by hand); the
    /// run compacts history to fit it.
    pub context_window: Option<u32>,
    /// Where its requests go, when configured (a local server's address).
    pub base_url: Option<String>,
    /// The temperature the machine set for every model (`WRIGHT_TEMPERATURE`).
    pub temperature: Option<f32>,
}

impl ConfiguredModel {
    /// `provider/model`: how the Settings page's profile settings are keyed.
    pub fn key(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// The profile this model gets (see wright-agent's `profile`): chosen from what its server
    /// says, with `[model_profiles]` (by model name, or `provider/model`), then the Settings
    /// page's settings (`saved`), then `WRIGHT_TEMPERATURE` on top.
    pub async fn profile(
        &self,
        overrides: &BTreeMap<String, ProfileOverride>,
        saved: Option<&ProfileOverride>,
        base: &wright_agent::LoopConfig,
    ) -> wright_agent::profile::ChosenProfile {
        let facts = ModelFacts {
            provider: self.kind.clone(),
            model: self.name.clone(),
            base_url: self.base_url.clone(),
            server: self.model.server_facts().await,
        };
        let over = overrides
            .get(&format!("{}/{}", self.kind, self.name))
            .or_else(|| overrides.get(&self.name))
            .cloned()
            .unwrap_or_default();
        let set_by_hand = over.temperature.is_some() || saved.is_some_and(|saved| saved.temperature.is_some());
        let mut sources = vec![("config.toml", &over)];
        if let Some(saved) = saved {
            sources.push(("the Settings page", saved));
        }
        let mut chosen = wright_agent::profile::choose(&facts, &sources, base);
        if let Some(temperature) = self.temperature.filter(|_| !set_by_hand) {
            chosen.settings.temperature = Some(temperature);
            chosen.reasons.push(format!("WRIGHT_TEMPERATURE sets temperature {temperature}"));
        }
        chosen
    }
}

/// Where the canvas's model settings live once the app is open: the store and the keys file.
#[derive(Clone)]
struct Settings {
    store: Store,
    secrets: Arc<Secrets>,
}

/// The models of an installation.
#[derive(Clone, Default)]
pub struct Models {
    /// From the environment, built once at start.
    default: Option<ConfiguredModel>,
    per_agent: BTreeMap<String, ConfiguredModel>,
    /// Why the environment's model cannot be used, when it names one that cannot.
    problem: Option<String>,
    env: ProviderEnv,
    settings: Option<Settings>,
    /// `[learning] draft_model`: the model that drafts notes edits and skills from failing
    /// runs, when the person configured a stronger one than the agent's.
    drafting: Option<ConfiguredModel>,
    /// Every configured secret, shared with each provider built here so its errors are
    /// redacted where they are made (the environment's keys from the start; the access token,
    /// the Telegram token and `secrets.json` join when the app opens).
    redactor: wright_core::Redactor,
}

/// A provider of the environment, shown as a read-only connection.
#[derive(Debug, Clone)]
pub struct EnvConnection {
    /// `env:<kind>`.
    pub id: String,
    /// The variables it comes from, for the canvas to name.
    pub variables: &'static str,
    pub connection: Connection,
}

fn configured(
    config: &ProviderConfig,
    connection: Option<&str>,
    context_window: Option<u32>,
    redactor: &wright_core::Redactor,
) -> Result<ConfiguredModel, LlmError> {
    let mut config = config.clone();
    config.redactor = redactor.clone();
    let provider = config.build()?;
    Ok(ConfiguredModel {
        model: Arc::new(ProviderModel(Arc::clone(&provider))),
        provider,
        connection: connection.map_or_else(|| format!("env:{}", config.kind.as_str()), str::to_owned),
        kind: config.kind.as_str().to_owned(),
        name: config.model.clone(),
        context_window,
        base_url: config.base_url.clone(),
        temperature: config.temperature,
    })
}

/// What to tell a person who has no model yet: the Settings page first, the variables second.
pub const SETUP_HINT: &str = "No model is configured. Add a provider connection on the **Settings** page \
(Admin → Settings) and pick a model there — OpenAI, Anthropic, Gemini, an OpenAI-compatible server (llama.cpp, vLLM, \
LM Studio) or Ollama. Or set one in the environment of `wright serve`: OPENAI_API_KEY (and OPENAI_BASE_URL for an \
OpenAI-compatible server), ANTHROPIC_API_KEY, GEMINI_API_KEY, or OLLAMA_HOST for Ollama (a local Ollama on \
http://127.0.0.1:11434 is found by itself); WRIGHT_MODEL=provider/model picks the model, e.g. \
WRIGHT_MODEL=ollama/qwen3:8b.";

impl Models {
    /// No model at all (tests, and commands that need none); settings attach when the app opens.
    pub fn none() -> Self {
        Self::default()
    }

    /// One model for every agent (tests against a fake provider).
    pub fn single(config: &ProviderConfig) -> Result<Self, LlmError> {
        let redactor = wright_core::Redactor::default();
        Ok(Self { default: Some(configured(config, None, None, &redactor)?), redactor, ..Self::default() })
    }

    /// From the environment and `[models]`; a local Ollama is probed only when nothing else
    /// is configured.
    pub async fn from_environment(env: &ProviderEnv, per_agent: &BTreeMap<String, String>) -> Self {
        let redactor = wright_core::Redactor::new(
            [&env.openai_api_key, &env.anthropic_api_key, &env.gemini_api_key].into_iter().flatten(),
        );
        let mut models = Self { env: env.clone(), redactor: redactor.clone(), ..Self::default() };
        match config_from_env(env) {
            Ok(config) => match configured(&config, None, None, &redactor) {
                Ok(model) => models.default = Some(model),
                Err(error) => models.problem = Some(error.to_string()),
            },
            Err(error) => {
                let nothing_set = env.wright_model.is_none() && env.ollama_host.is_none();
                match local_ollama(nothing_set, &redactor).await {
                    Some(model) => models.default = Some(model),
                    // Nothing configured is not a problem to report, only a hint to give.
                    None if is_nothing_configured(&error) => {}
                    None => models.problem = Some(error.to_string()),
                }
            }
        }
        for (agent, choice) in per_agent {
            let mut agent_env = env.clone();
            agent_env.wright_model = Some(choice.clone());
            match config_from_env(&agent_env).and_then(|config| configured(&config, None, None, &redactor)) {
                Ok(model) => {
                    models.per_agent.insert(agent.clone(), model);
                }
                Err(error) => {
                    tracing::warn!(%agent, %choice, %error, "the model configured for this agent cannot be used")
                }
            }
        }
        models
    }

    /// Sets the model that drafts learned items (`[learning] draft_model`, `provider/model`
    /// like `WRIGHT_MODEL`, with the environment's keys and addresses). A choice that cannot be
    /// used is logged and the agent's own model drafts.
    pub fn with_drafting(mut self, choice: Option<&str>) -> Self {
        let Some(choice) = choice else { return self };
        let mut env = self.env.clone();
        env.wright_model = Some(choice.to_owned());
        match config_from_env(&env).and_then(|config| configured(&config, None, None, &self.redactor)) {
            Ok(model) => self.drafting = Some(model),
            Err(error) => {
                tracing::warn!(%choice, %error, "[learning] draft_model cannot be used; the agent's model drafts")
            }
        }
        self
    }

    /// The model that drafts learned items for `agent`: `[learning] draft_model`, else the
    /// agent's own.
    pub async fn for_drafting(&self, agent: &AgentId) -> Result<ConfiguredModel, String> {
        match &self.drafting {
            Some(model) => Ok(model.clone()),
            None => self.for_agent(agent).await,
        }
    }

    /// Reads the canvas's choices from `store` and keys from `secrets` from now on.
    pub fn with_settings(mut self, store: Store, secrets: Arc<Secrets>) -> Self {
        self.settings = Some(Settings { store, secrets });
        self
    }

    /// The model of the agent's next run, or what to tell the person when there is none.
    pub async fn for_agent(&self, agent: &AgentId) -> Result<ConfiguredModel, String> {
        if let Some(settings) = &self.settings {
            let choice = settings.store.model_choice_for(agent.as_str()).await.map_err(|error| {
                tracing::error!(%error, "the model choices cannot be read");
                "The model settings cannot be read; see the server's log.".to_owned()
            })?;
            match choice {
                // config.toml's choice for this agent is more specific than the canvas default.
                Some(choice)
                    if choice.target == ChoiceTarget::Default && self.per_agent.contains_key(agent.as_str()) => {}
                Some(choice) => return self.chosen(&choice).await,
                None => {}
            }
        }
        self.per_agent.get(agent.as_str()).or(self.default.as_ref()).cloned().ok_or_else(|| self.setup_hint())
    }

    async fn chosen(&self, choice: &ModelChoice) -> Result<ConfiguredModel, String> {
        let whose = match &choice.target {
            ChoiceTarget::Default => "The default model".to_owned(),
            ChoiceTarget::Agent(agent) => format!("The model of agent {agent}"),
        };
        let cannot = |reason: String| {
            format!("{whose} ({}) cannot be used: {reason}. Change it on the Settings page.", choice.model)
        };
        let found = self.connection(&choice.connection_id).await.map_err(|error| cannot(error.to_string()))?;
        let Some(found) = found else {
            return Err(cannot(format!("its connection {:?} no longer exists", choice.connection_id)));
        };
        let tool_calls = choice.tool_calls;
        let mut config = found.provider_config(&choice.model, tool_calls);
        // `WRIGHT_TEMPERATURE` is the machine's choice for every model, chosen here or not.
        config.temperature = self.env.temperature().map_err(|error| cannot(error.to_string()))?;
        configured(&config, Some(&choice.connection_id), choice.context_window, &self.redactor)
            .map_err(|error| cannot(error.to_string()))
    }

    /// The secrets every provider of these models redacts from its errors (shared: a secret
    /// added later is redacted by providers built before).
    pub fn redactor(&self) -> &wright_core::Redactor {
        &self.redactor
    }

    /// The hint shown when no model is configured, with the environment's problem first when
    /// it names a model that cannot be used.
    pub fn setup_hint(&self) -> String {
        match &self.problem {
            Some(problem) => format!("The model of the environment cannot be used: {problem}\n\n{SETUP_HINT}"),
            None => SETUP_HINT.to_owned(),
        }
    }

    /// The environment's providers, as read-only connections.
    pub fn env_connections(&self) -> Vec<EnvConnection> {
        env_connections(&self.env)
    }

    /// A connection by id: `env:<kind>` from the environment, else a stored one with its key.
    /// None when there is no such connection.
    pub async fn connection(&self, id: &str) -> Result<Option<Connection>, DomainError> {
        if id.starts_with("env:") {
            return Ok(self.env_connections().into_iter().find(|env| env.id == id).map(|env| env.connection));
        }
        let Some(settings) = &self.settings else { return Ok(None) };
        let stored = match settings.store.provider_connection(id).await {
            Ok(stored) => stored,
            Err(StoreError::ItemNotFound { .. }) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        // The server writes only kinds it parses; another kind is a damaged database.
        let kind = ConnectionKind::parse(&stored.kind)
            .ok_or_else(|| DomainError::Internal(format!("connection {id:?} has an unknown kind {:?}", stored.kind)))?;
        let api_key =
            settings.secrets.key(id).map_err(|error| DomainError::Internal(format!("the keys file: {error}")))?;
        Ok(Some(Connection { kind, base_url: stored.base_url, api_key }))
    }
}

fn is_nothing_configured(error: &LlmError) -> bool {
    matches!(error, LlmError::Config(message) if message == wright_llm::HOW_TO_CONFIGURE)
}

fn env_connections(env: &ProviderEnv) -> Vec<EnvConnection> {
    let set =
        |value: &Option<String>| value.as_deref().map(str::trim).filter(|value| !value.is_empty()).map(str::to_owned);
    let mut connections = Vec::new();
    if let Some(key) = set(&env.openai_api_key) {
        let base_url = set(&env.openai_base_url);
        // Another endpoint with a key (Groq, OpenRouter, …) speaks the compatible dialect, as
        // `config_from_env` decides.
        let official = base_url.as_deref().is_none_or(|base| base.contains("api.openai.com"));
        let kind = if official { ConnectionKind::Openai } else { ConnectionKind::OpenaiCompatible };
        connections.push(EnvConnection {
            id: "env:openai".to_owned(),
            variables: "OPENAI_API_KEY, OPENAI_BASE_URL",
            connection: Connection { kind, base_url, api_key: Some(key) },
        });
    } else if let Some(base_url) = set(&env.openai_base_url) {
        connections.push(EnvConnection {
            id: "env:openai_compatible".to_owned(),
            variables: "OPENAI_BASE_URL",
            connection: Connection { kind: ConnectionKind::OpenaiCompatible, base_url: Some(base_url), api_key: None },
        });
    }
    if let Some(key) = set(&env.anthropic_api_key) {
        connections.push(EnvConnection {
            id: "env:anthropic".to_owned(),
            variables: "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL",
            connection: Connection {
                kind: ConnectionKind::Anthropic,
                base_url: set(&env.anthropic_base_url),
                api_key: Some(key),
            },
        });
    }
    if let Some(key) = set(&env.gemini_api_key) {
        connections.push(EnvConnection {
            id: "env:gemini".to_owned(),
            variables: "GEMINI_API_KEY, GEMINI_BASE_URL",
            connection: Connection {
                kind: ConnectionKind::Gemini,
                base_url: set(&env.gemini_base_url),
                api_key: Some(key),
            },
        });
    }
    if let Some(host) = set(&env.ollama_host) {
        connections.push(EnvConnection {
            id: "env:ollama".to_owned(),
            variables: "OLLAMA_HOST",
            connection: Connection { kind: ConnectionKind::Ollama, base_url: Some(host), api_key: None },
        });
    }
    connections
}

/// The first model of an Ollama on its default address, if one answers quickly.
async fn local_ollama(probe: bool, redactor: &wright_core::Redactor) -> Option<ConfiguredModel> {
    if !probe {
        return None;
    }
    let host = wright_llm::DEFAULT_OLLAMA_HOST;
    let names = wright_llm::ollama_models(host, Duration::from_millis(300)).await.ok()?;
    let first = names.first()?;
    configured(&wright_llm::ollama_config(host, first), None, None, redactor).ok()
}

/// The provider variables of the environment, read here, in the binary, once.
pub fn provider_env_from_process() -> ProviderEnv {
    let var = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    ProviderEnv {
        openai_api_key: var("OPENAI_API_KEY"),
        openai_base_url: var("OPENAI_BASE_URL"),
        anthropic_api_key: var("ANTHROPIC_API_KEY"),
        anthropic_base_url: var("ANTHROPIC_BASE_URL"),
        gemini_api_key: var("GEMINI_API_KEY").or_else(|| var("GOOGLE_API_KEY")),
        gemini_base_url: var("GEMINI_BASE_URL"),
        ollama_host: var("OLLAMA_HOST"),
        wright_model: var("WRIGHT_MODEL"),
        tool_calls: var("WRIGHT_TOOL_CALLS"),
        temperature: var("WRIGHT_TEMPERATURE"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environments_providers_are_read_only_connections_with_their_variables() {
        let env = ProviderEnv {
            openai_base_url: Some("http://127.0.0.1:8080/v1".into()),
            gemini_api_key: Some("gemini-key".into()),
            ollama_host: Some("gpu-box".into()),
            ..ProviderEnv::default()
        };
        let ids: Vec<String> = env_connections(&env).into_iter().map(|env| env.id).collect();
        assert_eq!(ids, ["env:openai_compatible", "env:gemini", "env:ollama"]);
        assert!(env_connections(&ProviderEnv::default()).is_empty());
    }
}
