//! Provider configuration: what the operator writes ([`ProviderConfig`]), how a provider is
//! built from it, and how one is picked from the environment values the binary reads
//! ([`ProviderEnv`], [`config_from_env`]). This crate never reads the environment itself.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::LlmError;
use crate::anthropic::MessagesWire;
use crate::gemini::GeminiWire;
use crate::openai::{ChatWire, Flavor};
use crate::provider::{HttpProvider, Provider};
use crate::responses::ResponsesWire;
use crate::text_protocol::{TextProtocol, TextProtocolProvider};
use crate::transport::{RetryPolicy, Wire, http_client};

/// Which wire a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions.
    Openai,
    /// The OpenAI Responses API.
    OpenaiResponses,
    Anthropic,
    Gemini,
    /// A server speaking Chat Completions: Ollama, llama.cpp, vLLM, LM Studio, Groq, OpenRouter.
    OpenaiCompatible,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::OpenaiResponses => "openai_responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenaiCompatible => "openai_compatible",
        }
    }

    /// The public endpoint, used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai | ProviderKind::OpenaiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com",
            ProviderKind::OpenaiCompatible => "http://127.0.0.1:11434/v1",
        }
    }
}

/// How the model is asked to call tools (one spelling for config, the store and the API).
pub use wright_core::ToolCallMode;

fn default_true() -> bool {
    true
}

fn default_connect_timeout() -> u64 {
    10
}

fn default_idle_timeout() -> u64 {
    300
}

/// One provider, as the operator configures it (`[agents.NAME.provider]` in config.toml).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Defaults to the public endpoint of `kind`. OpenAI-style: up to `/v1`; Anthropic and
    /// Gemini: the host.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    pub model: String,
    #[serde(default)]
    pub tool_calls: ToolCallMode,
    /// Stream the response (default) or ask for it whole.
    #[serde(default = "default_true")]
    pub streaming: bool,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Anthropic extended thinking budget, in tokens; off when unset.
    #[serde(default)]
    pub thinking_budget: Option<u32>,
    /// The sampling temperature sent with every request; the server's own default when unset.
    /// Small local models call tools far more reliably at 0 (greedy) than at llama.cpp's 0.8.
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub retry: RetryPolicy,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: u64,
    /// The longest silence tolerated inside a response.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_secs: u64,
    /// Settings of the text protocol, used when `tool_calls = "text"`.
    #[serde(default)]
    pub text_protocol: TextProtocol,
    /// The secrets removed from every error this provider makes (the binary's whole set; the
    /// provider's own key is added when it is built). Never read from a file.
    #[serde(skip)]
    pub redactor: wright_core::Redactor,
}

impl fmt::Debug for ProviderConfig {
    /// The key is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .field("tool_calls", &self.tool_calls)
            .field("streaming", &self.streaming)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("temperature", &self.temperature)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// What a wire needs from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub streaming: bool,
    pub max_output_tokens: Option<u32>,
    pub thinking_budget: Option<u32>,
    pub temperature: Option<f32>,
}

impl ProviderConfig {
    /// A config with every optional field at its default.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: None,
            api_key: None,
            model: model.into(),
            tool_calls: ToolCallMode::Native,
            streaming: true,
            max_output_tokens: None,
            thinking_budget: None,
            temperature: None,
            retry: RetryPolicy::default(),
            connect_timeout_secs: default_connect_timeout(),
            idle_timeout_secs: default_idle_timeout(),
            text_protocol: TextProtocol::default(),
            redactor: wright_core::Redactor::default(),
        }
    }

    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    pub(crate) fn settings(&self) -> Settings {
        Settings {
            base_url: self.base_url.clone().unwrap_or_else(|| self.kind.default_base_url().to_owned()),
            api_key: self.api_key.clone(),
            model: self.model.clone(),
            streaming: self.streaming,
            max_output_tokens: self.max_output_tokens,
            thinking_budget: self.thinking_budget,
            temperature: self.temperature,
        }
    }

    /// Builds the HTTP provider (without the text protocol), for inspecting request bodies.
    pub fn build_http(&self) -> Result<HttpProvider, LlmError> {
        if self.model.trim().is_empty() {
            return Err(LlmError::Config(format!("no model is set for the {} provider", self.kind.as_str())));
        }
        let base = self.settings().base_url;
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!("base URL {base:?} must start with http:// or https://")));
        }
        let needs_key = matches!(
            self.kind,
            ProviderKind::Openai | ProviderKind::OpenaiResponses | ProviderKind::Anthropic | ProviderKind::Gemini
        );
        if needs_key && self.api_key.as_deref().is_none_or(str::is_empty) {
            return Err(LlmError::Config(format!("the {} provider needs an API key", self.kind.as_str())));
        }
        let wire = wire_for(self);
        let client =
            http_client(Duration::from_secs(self.connect_timeout_secs), Duration::from_secs(self.idle_timeout_secs))?;
        let label = format!("{}/{}", self.kind.as_str(), self.model);
        // The key this provider sends is the secret it is most likely to see quoted back.
        if let Some(key) = &self.api_key {
            self.redactor.add(key);
        }
        let provider = HttpProvider::new(label, client, wire, self.retry.clone(), self.redactor.clone());
        Ok(match self.kind {
            ProviderKind::OpenaiCompatible => provider.probing_server(base, self.model.clone(), self.api_key.clone()),
            _ => provider,
        })
    }

    /// Builds the provider this config describes.
    pub fn build(&self) -> Result<Arc<dyn Provider>, LlmError> {
        let http: Arc<dyn Provider> = Arc::new(self.build_http()?);
        Ok(match self.tool_calls {
            ToolCallMode::Native => http,
            ToolCallMode::Text => Arc::new(TextProtocolProvider::new(http, self.text_protocol.clone())),
        })
    }
}

/// The wire a config speaks.
pub(crate) fn wire_for(config: &ProviderConfig) -> Arc<dyn Wire> {
    let settings = config.settings();
    match config.kind {
        ProviderKind::Openai => Arc::new(ChatWire { settings, flavor: Flavor::OpenAi }),
        ProviderKind::OpenaiCompatible => Arc::new(ChatWire { settings, flavor: Flavor::Compatible }),
        ProviderKind::OpenaiResponses => Arc::new(ResponsesWire { settings }),
        ProviderKind::Anthropic => Arc::new(MessagesWire { settings }),
        ProviderKind::Gemini => Arc::new(GeminiWire { settings }),
    }
}

/// The environment values the binary passes in, following each provider's SDK conventions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderEnv {
    /// `OPENAI_API_KEY`
    pub openai_api_key: Option<String>,
    /// `OPENAI_BASE_URL`: with a key, another OpenAI-style endpoint; without one, a local
    /// OpenAI-compatible server.
    pub openai_base_url: Option<String>,
    /// `ANTHROPIC_API_KEY`
    pub anthropic_api_key: Option<String>,
    /// `ANTHROPIC_BASE_URL`
    pub anthropic_base_url: Option<String>,
    /// `GEMINI_API_KEY` (or `GOOGLE_API_KEY`)
    pub gemini_api_key: Option<String>,
    /// `GEMINI_BASE_URL`
    pub gemini_base_url: Option<String>,
    /// `OLLAMA_HOST`, e.g. `127.0.0.1:11434` or `http://gpu-box:11434`.
    pub ollama_host: Option<String>,
    /// `WRIGHT_MODEL=provider/model`, e.g. `anthropic/claude-sonnet-4-5`, `ollama/qwen3:8b`.
    /// A value without a known provider prefix is a model name for the provider picked.
    pub wright_model: Option<String>,
    /// `WRIGHT_TOOL_CALLS=text` turns on the text protocol.
    pub tool_calls: Option<String>,
    /// `WRIGHT_TEMPERATURE`, e.g. `0`: the sampling temperature of every model (0 to 2).
    pub temperature: Option<String>,
}

/// What to tell a person who has configured no model.
pub const HOW_TO_CONFIGURE: &str = "No language model is configured. Set one of: OPENAI_API_KEY (OpenAI), \
ANTHROPIC_API_KEY (Anthropic), GEMINI_API_KEY (Google Gemini), OPENAI_BASE_URL (an OpenAI-compatible server such as \
LM Studio, llama.cpp or vLLM), or OLLAMA_HOST (Ollama; a local Ollama on 127.0.0.1:11434 is found by itself). Pick a \
model with WRIGHT_MODEL=provider/model, e.g. WRIGHT_MODEL=anthropic/claude-sonnet-4-5 or WRIGHT_MODEL=ollama/qwen3:8b.";

pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";
/// Ollama's own default address.
pub const DEFAULT_OLLAMA_HOST: &str = "http://127.0.0.1:11434";

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|value| !value.is_empty())
}

/// `OLLAMA_HOST` as Ollama's own client reads it: scheme and port optional, `0.0.0.0` (a
/// listen address) meaning this machine.
pub fn ollama_base_url(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let (scheme, rest) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", host),
    };
    let rest = rest.replace("0.0.0.0", "127.0.0.1");
    let has_port = rest.rsplit_once(':').is_some_and(|(_, port)| port.chars().all(|c| c.is_ascii_digit()));
    if has_port { format!("{scheme}://{rest}") } else { format!("{scheme}://{rest}:11434") }
}

/// The Chat Completions base URL (`…/v1`) of an Ollama host.
fn ollama_chat_base(host: &str) -> String {
    format!("{}/v1", ollama_base_url(host))
}

/// Picks a provider from environment values: `WRIGHT_MODEL`'s prefix when it names one,
/// else the first configured of OpenAI, Anthropic, Gemini, an OpenAI-compatible base URL,
/// Ollama. With nothing configured the error says how to configure one ([`HOW_TO_CONFIGURE`]);
/// finding a local Ollama on its default address is the binary's job ([`ollama_models`]).
pub fn config_from_env(env: &ProviderEnv) -> Result<ProviderConfig, LlmError> {
    let (named, model) = match set(&env.wright_model) {
        Some(value) => match value.split_once('/') {
            Some((prefix, model)) => match provider_name(prefix) {
                Some(named) => (Some(named), Some(model.to_owned())),
                None => (None, Some(value.to_owned())),
            },
            None => provider_name(value).map_or((None, Some(value.to_owned())), |named| (Some(named), None)),
        },
        None => (None, None),
    };
    let chosen = match named {
        Some(named) => named,
        None if set(&env.openai_api_key).is_some() => Named::Openai,
        None if set(&env.anthropic_api_key).is_some() => Named::Anthropic,
        None if set(&env.gemini_api_key).is_some() => Named::Gemini,
        None if set(&env.openai_base_url).is_some() => Named::Compatible,
        None if set(&env.ollama_host).is_some() => Named::Ollama,
        None => return Err(LlmError::Config(HOW_TO_CONFIGURE.to_owned())),
    };
    let need = |value: &Option<String>, variable: &str| {
        set(value)
            .map(str::to_owned)
            .ok_or_else(|| LlmError::Config(format!("{variable} is not set. {HOW_TO_CONFIGURE}")))
    };
    let need_model = |what: &str| {
        model.clone().ok_or_else(|| {
            LlmError::Config(format!("WRIGHT_MODEL is not set: name the {what} model, e.g. WRIGHT_MODEL={what}/MODEL"))
        })
    };
    let mut config = match chosen {
        Named::Openai | Named::OpenaiChat | Named::OpenaiResponses => {
            let key = need(&env.openai_api_key, "OPENAI_API_KEY")?;
            let official = set(&env.openai_base_url).is_none_or(|base| base.contains("api.openai.com"));
            let kind = match (chosen, official) {
                (Named::OpenaiResponses, _) => ProviderKind::OpenaiResponses,
                (Named::OpenaiChat, _) | (_, true) => ProviderKind::Openai,
                // Another endpoint with a key (Groq, OpenRouter, …) speaks the compatible dialect.
                (_, false) => ProviderKind::OpenaiCompatible,
            };
            let mut config =
                ProviderConfig::new(kind, model.clone().unwrap_or_else(|| DEFAULT_OPENAI_MODEL.to_owned()))
                    .with_api_key(key);
            config.base_url = set(&env.openai_base_url).map(str::to_owned);
            config
        }
        Named::Anthropic => {
            let mut config = ProviderConfig::new(
                ProviderKind::Anthropic,
                model.clone().unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.to_owned()),
            )
            .with_api_key(need(&env.anthropic_api_key, "ANTHROPIC_API_KEY")?);
            config.base_url = set(&env.anthropic_base_url).map(str::to_owned);
            config
        }
        Named::Gemini => {
            let mut config = ProviderConfig::new(
                ProviderKind::Gemini,
                model.clone().unwrap_or_else(|| DEFAULT_GEMINI_MODEL.to_owned()),
            )
            .with_api_key(need(&env.gemini_api_key, "GEMINI_API_KEY")?);
            config.base_url = set(&env.gemini_base_url).map(str::to_owned);
            config
        }
        Named::Compatible => {
            let mut config = ProviderConfig::new(ProviderKind::OpenaiCompatible, need_model("openai-compatible")?)
                .with_base_url(need(&env.openai_base_url, "OPENAI_BASE_URL")?);
            config.api_key = set(&env.openai_api_key).map(str::to_owned);
            config
        }
        Named::Ollama => {
            let host = set(&env.ollama_host).unwrap_or(DEFAULT_OLLAMA_HOST);
            ProviderConfig::new(ProviderKind::OpenaiCompatible, need_model("ollama")?)
                .with_base_url(ollama_chat_base(host))
        }
    };
    if set(&env.tool_calls) == Some("text") {
        config.tool_calls = ToolCallMode::Text;
    }
    config.temperature = env.temperature()?;
    Ok(config)
}

impl ProviderEnv {
    /// `WRIGHT_TEMPERATURE` read: unset is the server's default; anything but a number from
    /// 0 to 2 (the widest range a provider takes) is an error naming the variable.
    pub fn temperature(&self) -> Result<Option<f32>, LlmError> {
        let Some(value) = set(&self.temperature) else { return Ok(None) };
        match value.trim().parse::<f32>() {
            Ok(temperature) if (0.0..=2.0).contains(&temperature) => Ok(Some(temperature)),
            _ => Err(LlmError::Config(format!("WRIGHT_TEMPERATURE must be a number from 0 to 2, not {value:?}"))),
        }
    }
}

/// A config for Ollama at `host` (see [`ollama_base_url`]) with `model`.
pub fn ollama_config(host: &str, model: &str) -> ProviderConfig {
    ProviderConfig::new(ProviderKind::OpenaiCompatible, model).with_base_url(ollama_chat_base(host))
}

/// The models an Ollama at `host` has pulled (`GET /api/tags`); an error when nothing
/// answers. The binary uses it to find a local Ollama when nothing else is configured.
pub async fn ollama_models(host: &str, timeout: Duration) -> Result<Vec<String>, LlmError> {
    let client = http_client(timeout, timeout)?;
    let url = format!("{}/api/tags", ollama_base_url(host));
    let response = client
        .get(&url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|error| LlmError::Transport(crate::transport::error_chain(&error)))?;
    if !response.status().is_success() {
        return Err(LlmError::Transport(format!("{url} answered {}", response.status())));
    }
    let tags: crate::ollama::wire::Tags =
        response.json().await.map_err(|error| LlmError::InvalidResponse(error.to_string()))?;
    Ok(tags.models.into_iter().map(|tag| tag.name).collect())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Openai,
    /// OpenAI's own Chat Completions dialect wherever the base URL points (a gateway or proxy
    /// in front of OpenAI), where plain `openai` at another URL means the compatible dialect.
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
    Compatible,
    Ollama,
}

fn provider_name(prefix: &str) -> Option<Named> {
    Some(match prefix.to_ascii_lowercase().as_str() {
        "openai" => Named::Openai,
        "openai-chat" | "openai_chat" => Named::OpenaiChat,
        "openai-responses" | "openai_responses" => Named::OpenaiResponses,
        "anthropic" | "claude" => Named::Anthropic,
        "gemini" | "google" => Named::Gemini,
        "openai-compatible" | "openai_compatible" | "local" => Named::Compatible,
        "ollama" => Named::Ollama,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ProviderEnv {
        ProviderEnv::default()
    }

    #[test]
    fn nothing_configured_says_how_to_configure() {
        let error = config_from_env(&env()).unwrap_err();
        assert_eq!(error, LlmError::Config(HOW_TO_CONFIGURE.to_owned()));
    }

    #[test]
    fn a_key_picks_its_provider_and_wright_model_overrides_the_order() {
        let both = ProviderEnv { openai_api_key: Some("sk".into()), anthropic_api_key: Some("ak".into()), ..env() };
        let picked = config_from_env(&both).unwrap();
        assert_eq!((picked.kind, picked.model.as_str()), (ProviderKind::Openai, DEFAULT_OPENAI_MODEL));
        let named = ProviderEnv { wright_model: Some("anthropic/claude-x".into()), ..both };
        let picked = config_from_env(&named).unwrap();
        assert_eq!(
            (picked.kind, picked.model.as_str(), picked.api_key.as_deref()),
            (ProviderKind::Anthropic, "claude-x", Some("ak"))
        );
    }

    #[test]
    fn ollama_and_compatible_servers_need_a_model_and_keep_slashes_in_it() {
        let ollama =
            ProviderEnv { ollama_host: Some("0.0.0.0".into()), wright_model: Some("ollama/qwen3:8b".into()), ..env() };
        let config = config_from_env(&ollama).unwrap();
        assert_eq!(config.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
        assert_eq!(config.model, "qwen3:8b");
        let no_model = ProviderEnv { openai_base_url: Some("http://localhost:1234/v1".into()), ..env() };
        assert!(matches!(config_from_env(&no_model), Err(LlmError::Config(_))));
        let routed = ProviderEnv {
            openai_api_key: Some("k".into()),
            openai_base_url: Some("https://openrouter.ai/api/v1".into()),
            wright_model: Some("openai/meta-llama/llama-3".into()),
            tool_calls: Some("text".into()),
            ..env()
        };
        let config = config_from_env(&routed).unwrap();
        assert_eq!(
            (config.kind, config.model.as_str(), config.tool_calls),
            (ProviderKind::OpenaiCompatible, "meta-llama/llama-3", ToolCallMode::Text)
        );
        let gateway = ProviderEnv {
            openai_api_key: Some("k".into()),
            openai_base_url: Some("https://gateway.example/openai/v1".into()),
            wright_model: Some("openai-chat/gpt-4.1".into()),
            ..env()
        };
        let config = config_from_env(&gateway).unwrap();
        assert_eq!(
            (config.kind, config.model.as_str(), config.base_url.as_deref()),
            (ProviderKind::Openai, "gpt-4.1", Some("https://gateway.example/openai/v1"))
        );
    }

    #[test]
    fn configs_deserialize_with_defaults_and_hide_the_key() {
        let config: ProviderConfig = toml_like(
            r#"{"kind": "gemini", "model": "gemini-2.5-flash", "api_key": "secret", "retry": {"max_retries": 1}}"#,
        );
        assert!(config.streaming);
        assert_eq!(config.retry.max_retries, 1);
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn wright_temperature_is_sent_on_every_wire_and_a_bad_value_is_named() {
        let request = crate::Request { history: Vec::new(), ..crate::Request::default() };
        for model in ["openai/gpt-x", "openai-responses/gpt-x", "anthropic/claude-x", "gemini/gemini-x", "local/qwen"] {
            let chosen = ProviderEnv {
                openai_api_key: Some("k".into()),
                anthropic_api_key: Some("k".into()),
                gemini_api_key: Some("k".into()),
                openai_base_url: model.starts_with("local").then(|| "http://127.0.0.1:1/v1".into()),
                wright_model: Some(model.into()),
                temperature: Some(" 0 ".into()),
                ..env()
            };
            let config = config_from_env(&chosen).unwrap();
            assert_eq!(config.temperature, Some(0.0), "{model}");
            let body = crate::request_body(&config, &request).unwrap();
            let sent = body.get("temperature").or_else(|| body.pointer("/generationConfig/temperature"));
            assert_eq!(sent, Some(&serde_json::json!(0.0)), "{model}: {body}");
            let unset = config_from_env(&ProviderEnv { temperature: None, ..chosen }).unwrap();
            let body = crate::request_body(&unset, &request).unwrap();
            assert!(body.get("temperature").is_none() && body.get("generationConfig").is_none(), "{model}: {body}");
        }
        for bad in ["warm", "-0.5", "2.5", "NaN"] {
            let env = ProviderEnv { openai_api_key: Some("k".into()), temperature: Some(bad.into()), ..env() };
            let error = config_from_env(&env).unwrap_err();
            assert_eq!(
                error,
                LlmError::Config(format!("WRIGHT_TEMPERATURE must be a number from 0 to 2, not {bad:?}")),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_required_call_is_asked_for_in_each_wires_words() {
        let tool = wright_core::ToolSpec {
            name: "set_state".into(),
            description: "Writes a value.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: wright_core::ToolPolicy::Allow,
            toolset: None,
        };
        let required =
            crate::Request { tools: vec![tool].into(), require_tool_call: true, ..crate::Request::default() };
        let expected = [
            ("openai/gpt-x", "/tool_choice", serde_json::json!("required")),
            ("openai-responses/gpt-x", "/tool_choice", serde_json::json!("required")),
            ("local/qwen", "/tool_choice", serde_json::json!("required")),
            ("anthropic/claude-x", "/tool_choice", serde_json::json!({"type": "any"})),
            ("gemini/gemini-x", "/toolConfig", serde_json::json!({"functionCallingConfig": {"mode": "ANY"}})),
        ];
        for (model, pointer, choice) in expected {
            let env = ProviderEnv {
                openai_api_key: Some("k".into()),
                anthropic_api_key: Some("k".into()),
                gemini_api_key: Some("k".into()),
                openai_base_url: model.starts_with("local").then(|| "http://127.0.0.1:1/v1".into()),
                wright_model: Some(model.into()),
                ..env()
            };
            let config = config_from_env(&env).unwrap();
            let body = crate::request_body(&config, &required).unwrap();
            assert_eq!(body.pointer(pointer), Some(&choice), "{model}: {body}");
            // Not asked for, or nothing to call: the provider's default.
            let auto = crate::Request { require_tool_call: false, ..required.clone() };
            assert_eq!(crate::request_body(&config, &auto).unwrap().pointer(pointer), None, "{model}");
            let no_tools = crate::Request { tools: Vec::new().into(), ..required.clone() };
            assert_eq!(crate::request_body(&config, &no_tools).unwrap().pointer(pointer), None, "{model}");
        }
    }

    fn toml_like(json: &str) -> ProviderConfig {
        serde_json::from_str(json).unwrap()
    }
}
