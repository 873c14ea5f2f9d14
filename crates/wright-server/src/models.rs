//! Which model each agent talks to. Read once at start from the environment the binary passes
//! in (each provider's own SDK variables, `WRIGHT_MODEL=provider/model`) and `[models]` in
//! config.toml (agent id → `provider/model`), with a local Ollama found on its default address
//! when nothing else is configured.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wright_agent::ProviderModel;
use wright_core::AgentId;
use wright_llm::{LlmError, ProviderConfig, ProviderEnv, config_from_env};

use crate::runs::ConfiguredModel;

/// The models of an installation: a default and per-agent choices.
#[derive(Clone, Default)]
pub struct Models {
    default: Option<ConfiguredModel>,
    per_agent: BTreeMap<String, ConfiguredModel>,
    /// Why there is no default model, for the canvas and the CLI.
    problem: Option<String>,
}

fn configured(config: &ProviderConfig) -> Result<ConfiguredModel, LlmError> {
    let provider = config.build()?;
    Ok(ConfiguredModel {
        model: Arc::new(ProviderModel(provider)),
        kind: config.kind.as_str().to_owned(),
        name: config.model.clone(),
    })
}

impl Models {
    /// No model at all (tests, and commands that need none).
    pub fn none() -> Self {
        Self::default()
    }

    /// One model for every agent (tests against a fake provider).
    pub fn single(config: &ProviderConfig) -> Result<Self, LlmError> {
        Ok(Self { default: Some(configured(config)?), per_agent: BTreeMap::new(), problem: None })
    }

    /// From the environment and `[models]`; a local Ollama is probed only when nothing else
    /// is configured.
    pub async fn from_environment(env: &ProviderEnv, per_agent: &BTreeMap<String, String>) -> Self {
        let mut models = Self::default();
        match config_from_env(env) {
            Ok(config) => match configured(&config) {
                Ok(model) => models.default = Some(model),
                Err(error) => models.problem = Some(error.to_string()),
            },
            Err(error) => {
                let nothing_set = env.wright_model.is_none() && env.ollama_host.is_none();
                match local_ollama(nothing_set).await {
                    Some(model) => models.default = Some(model),
                    None => models.problem = Some(error.to_string()),
                }
            }
        }
        for (agent, choice) in per_agent {
            let mut agent_env = env.clone();
            agent_env.wright_model = Some(choice.clone());
            match config_from_env(&agent_env).and_then(|config| configured(&config)) {
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

    pub fn for_agent(&self, agent: &AgentId) -> Option<ConfiguredModel> {
        self.per_agent.get(agent.as_str()).or(self.default.as_ref()).cloned()
    }

    pub fn default_model(&self) -> Option<&ConfiguredModel> {
        self.default.as_ref()
    }

    /// Why no model is configured, if none is.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }
}

/// The first model of an Ollama on its default address, if one answers quickly.
async fn local_ollama(probe: bool) -> Option<ConfiguredModel> {
    if !probe {
        return None;
    }
    let host = wright_llm::DEFAULT_OLLAMA_HOST;
    let names = wright_llm::ollama_models(host, Duration::from_millis(300)).await.ok()?;
    let first = names.first()?;
    configured(&wright_llm::ollama_config(host, first)).ok()
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
    }
}
