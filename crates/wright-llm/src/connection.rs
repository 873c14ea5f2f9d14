//! A provider connection as a person adds it in the canvas: a vendor, a base URL and a key,
//! with no model yet ([`Connection`]). From it come the models the provider lists
//! ([`Connection::list_models`], each vendor's own list endpoint) and, once a model is
//! picked, a [`ProviderConfig`] ([`Connection::provider_config`]).
//!
//! Listing is also how a connection is tested: it is a real, small, authenticated request, and
//! its failure carries the provider's own error, classified as every other request's is.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::LlmError;
use crate::config::{ProviderConfig, ProviderKind, ToolCallMode, ollama_base_url, wire_for};
use crate::transport::{error_chain, http_client};

/// The vendors a connection can be made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionKind {
    Openai,
    Anthropic,
    Gemini,
    /// llama.cpp, vLLM, LM Studio and other servers of Chat Completions; the base URL ends
    /// in `/v1`.
    OpenaiCompatible,
    /// Ollama; the base URL is the host (`http://127.0.0.1:11434`), as `OLLAMA_HOST` is.
    Ollama,
}

impl ConnectionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::Openai => "openai",
            ConnectionKind::Anthropic => "anthropic",
            ConnectionKind::Gemini => "gemini",
            ConnectionKind::OpenaiCompatible => "openai_compatible",
            ConnectionKind::Ollama => "ollama",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
    }

    /// Where the vendor's public API (or a local server's usual address) is.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ConnectionKind::Openai => ProviderKind::Openai.default_base_url(),
            ConnectionKind::Anthropic => ProviderKind::Anthropic.default_base_url(),
            ConnectionKind::Gemini => ProviderKind::Gemini.default_base_url(),
            ConnectionKind::OpenaiCompatible => "http://127.0.0.1:8080/v1",
            ConnectionKind::Ollama => crate::DEFAULT_OLLAMA_HOST,
        }
    }

    /// Whether the vendor refuses every request without a key.
    pub fn needs_key(self) -> bool {
        matches!(self, ConnectionKind::Openai | ConnectionKind::Anthropic | ConnectionKind::Gemini)
    }
}

/// One model a provider lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedModel {
    pub id: String,
    /// Input tokens the model takes, where the provider says (Gemini, vLLM, llama.cpp).
    pub context_window: Option<u32>,
}

/// A vendor, where it is and the key it takes. The key is never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Connection {
    pub kind: ConnectionKind,
    /// None: [`ConnectionKind::default_base_url`].
    pub base_url: Option<String>,
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Connection {
    pub(crate) fn base_url(&self) -> String {
        let base = self.base_url.as_deref().map(str::trim).filter(|base| !base.is_empty());
        base.unwrap_or(self.kind.default_base_url()).trim_end_matches('/').to_owned()
    }

    pub(crate) fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|key| !key.is_empty())
    }

    /// The provider configuration for `model` on this connection.
    pub fn provider_config(&self, model: &str, tool_calls: ToolCallMode) -> ProviderConfig {
        let (kind, base_url) = match self.kind {
            ConnectionKind::Openai => (ProviderKind::Openai, self.base_url()),
            ConnectionKind::Anthropic => (ProviderKind::Anthropic, self.base_url()),
            ConnectionKind::Gemini => (ProviderKind::Gemini, self.base_url()),
            ConnectionKind::OpenaiCompatible => (ProviderKind::OpenaiCompatible, self.base_url()),
            // Ollama serves Chat Completions under /v1 of its host.
            ConnectionKind::Ollama => {
                (ProviderKind::OpenaiCompatible, format!("{}/v1", ollama_base_url(&self.base_url())))
            }
        };
        let mut config = ProviderConfig::new(kind, model).with_base_url(base_url);
        config.api_key = self.key().map(str::to_owned);
        config.tool_calls = tool_calls;
        config
    }

    /// The secrets removed from this connection's errors: its own key, the one it sends.
    pub(crate) fn redactor(&self) -> wright_core::Redactor {
        wright_core::Redactor::new(self.key())
    }

    /// The models the provider lists, sorted by id. An error is the provider's own, classified
    /// as a model request's would be (a bad key is [`LlmError::Authentication`], a wrong path
    /// [`LlmError::NotFound`], no answer [`LlmError::Transport`]), with the key it was sent
    /// redacted.
    pub async fn list_models(&self, timeout: Duration) -> Result<Vec<ListedModel>, LlmError> {
        self.list_models_as_sent(timeout).await.map_err(|error| error.redacted(&self.redactor()))
    }

    async fn list_models_as_sent(&self, timeout: Duration) -> Result<Vec<ListedModel>, LlmError> {
        if self.kind.needs_key() && self.key().is_none() {
            return Err(LlmError::Config(format!("the {} provider needs an API key", self.kind.as_str())));
        }
        let base = self.base_url();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!("base URL {base:?} must start with http:// or https://")));
        }
        let client = http_client(timeout, timeout)?;
        let request = match self.kind {
            ConnectionKind::Openai | ConnectionKind::OpenaiCompatible => {
                let request = client.get(format!("{base}/models"));
                match self.key() {
                    Some(key) => request.bearer_auth(key),
                    None => request,
                }
            }
            ConnectionKind::Anthropic => client
                .get(format!("{base}/v1/models?limit=1000"))
                .header("x-api-key", self.key().unwrap_or_default())
                .header("anthropic-version", "2023-06-01"),
            // The key in a header rather than the query, so it cannot end up in a logged URL.
            ConnectionKind::Gemini => client
                .get(format!("{base}/v1beta/models?pageSize=1000"))
                .header("x-goog-api-key", self.key().unwrap_or_default()),
            ConnectionKind::Ollama => client.get(format!("{}/api/tags", ollama_base_url(&base))),
        };
        let response =
            request.timeout(timeout).send().await.map_err(|error| LlmError::Transport(error_chain(&error)))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|error| LlmError::Transport(error_chain(&error)))?;
        if !(200..300).contains(&status) {
            // Each vendor's error body is read by the same code that reads its chat errors.
            let wire = wire_for(&self.provider_config("list", ToolCallMode::Native));
            return Err(wire.classify(status, &headers, &body));
        }
        let invalid = |error: serde_json::Error| LlmError::InvalidResponse(format!("model list: {error}"));
        let mut models: Vec<ListedModel> = match self.kind {
            ConnectionKind::Openai | ConnectionKind::OpenaiCompatible => {
                let list: crate::openai::wire::ModelList = serde_json::from_slice(&body).map_err(invalid)?;
                list.data
                    .into_iter()
                    .map(|model| ListedModel {
                        context_window: model.max_model_len.or(model.meta.and_then(|meta| meta.n_ctx_train)),
                        id: model.id,
                    })
                    .collect()
            }
            ConnectionKind::Anthropic => {
                let list: crate::anthropic::wire::ModelList = serde_json::from_slice(&body).map_err(invalid)?;
                list.data.into_iter().map(|model| ListedModel { id: model.id, context_window: None }).collect()
            }
            ConnectionKind::Gemini => {
                let list: crate::gemini::wire::ModelList = serde_json::from_slice(&body).map_err(invalid)?;
                list.models
                    .into_iter()
                    // Embedding and other models that cannot chat are left out.
                    .filter(|model| model.supported_generation_methods.iter().any(|method| method == "generateContent"))
                    .map(|model| ListedModel {
                        id: model.name.strip_prefix("models/").unwrap_or(&model.name).to_owned(),
                        context_window: model.input_token_limit,
                    })
                    .collect()
            }
            ConnectionKind::Ollama => {
                let tags: crate::ollama::wire::Tags = serde_json::from_slice(&body).map_err(invalid)?;
                tags.models.into_iter().map(|tag| ListedModel { id: tag.name, context_window: None }).collect()
            }
        };
        models.sort_by(|left, right| left.id.cmp(&right.id));
        Ok(models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_connections_chat_under_v1_of_the_host_and_keys_stay_out_of_debug() {
        let connection = Connection {
            kind: ConnectionKind::Ollama,
            base_url: Some("http://gpu-box:11434/".into()),
            api_key: Some("secret-key".into()),
        };
        let config = connection.provider_config("qwen3:8b", ToolCallMode::Text);
        assert_eq!(config.base_url.as_deref(), Some("http://gpu-box:11434/v1"));
        assert_eq!((config.kind, config.tool_calls), (ProviderKind::OpenaiCompatible, ToolCallMode::Text));
        assert!(!format!("{connection:?}").contains("secret-key"));
        assert_eq!(ConnectionKind::parse("openai_compatible"), Some(ConnectionKind::OpenaiCompatible));
        assert_eq!(ConnectionKind::parse("nope"), None);
    }
}
