//! OpenAI Chat Completions JSON (`/v1/chat/completions`), as typed serde structs. Also what
//! OpenAI-compatible servers (Ollama, llama.cpp, vLLM, LM Studio, Groq, OpenRouter, Azure)
//! send: every response field is optional, and unknown fields are ignored, never refused.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ChatTool>,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// OpenAI's own models take `max_completion_tokens`; compatible servers `max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// `"required"` when the reply must call a tool; absent (the default, `auto`) otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// Null next to tool calls when there is no text, as OpenAI itself sends it.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChatToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: ChatFunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChatFunctionCall {
    pub name: String,
    /// A JSON text, not an object.
    pub arguments: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChatTool {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: ChatFunction,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChatFunction {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One `chat.completion.chunk`. Azure's first chunk has `choices: []`; the usage chunk too.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatChunk {
    /// `chatcmpl-…`: the provider's id of the request, the same in every chunk.
    pub id: Option<String>,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    pub usage: Option<ChatUsage>,
    /// llama.cpp's own counts, on the last chunk, whether usage was asked for or not.
    pub timings: Option<Timings>,
    /// OpenRouter puts an error object inside an otherwise normal chunk.
    pub error: Option<ErrorField>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    pub delta: Option<ChunkDelta>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChunkDelta {
    pub content: Option<String>,
    /// Groq and OpenRouter.
    pub reasoning: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    pub reasoning_content: Option<String>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    /// Missing in older Ollama.
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    /// Missing altogether in vLLM's header delta; an object in some servers' whole calls.
    pub arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChatUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PromptTokensDetails {
    pub cached_tokens: Option<u64>,
}

/// llama.cpp's `timings`: `prompt_n` tokens were evaluated, `cache_n` came from its prompt
/// cache, `predicted_n` were generated.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct Timings {
    pub cache_n: Option<u64>,
    pub prompt_n: Option<u64>,
    pub predicted_n: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionTokensDetails {
    pub reasoning_tokens: Option<u64>,
}

/// A whole `chat.completion`.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatCompletion {
    pub id: Option<String>,
    #[serde(default)]
    pub choices: Vec<CompletionChoice>,
    pub usage: Option<ChatUsage>,
    pub timings: Option<Timings>,
    pub error: Option<ErrorField>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionChoice {
    pub message: CompletionMessage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionMessage {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub reasoning_content: Option<String>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// An error body: `{"error": {...}}` (OpenAI, Groq, llama.cpp), `{"error": "text"}` (Ollama),
/// or the fields at top level (vLLM).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub error: Option<ErrorField>,
    pub message: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub code: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ErrorField {
    Object(ErrorObject),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorObject {
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// A string on OpenAI, a number on OpenRouter and llama.cpp, null on 500s.
    pub code: Option<Value>,
    pub param: Option<Value>,
}

/// llama.cpp's `GET /props`: the context size of the loaded model, per slot.
#[derive(Debug, Deserialize)]
pub(crate) struct LlamaProps {
    pub default_generation_settings: Option<LlamaGenerationSettings>,
    /// Some versions put it at the top level.
    pub n_ctx: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LlamaGenerationSettings {
    pub n_ctx: Option<u32>,
}

/// Ollama's `POST /api/show`: `parameters` is Modelfile text (`num_ctx 8192` when set);
/// `model_info` holds `<architecture>.context_length`, the model's trained maximum.
#[derive(Debug, Deserialize)]
pub(crate) struct OllamaShow {
    pub parameters: Option<String>,
    pub model_info: Option<serde_json::Map<String, Value>>,
    /// `parameter_size` such as `"7.6B"`, when `model_info` has no `general.parameter_count`.
    #[serde(default)]
    pub details: Option<OllamaDetails>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OllamaDetails {
    #[serde(default)]
    pub parameter_size: Option<String>,
}

/// `GET /v1/models`: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`.
/// vLLM adds `max_model_len`; llama.cpp adds `meta.n_ctx_train` — the context window where
/// the server says it.
#[derive(Debug, Deserialize)]
pub(crate) struct ModelList {
    pub data: Vec<ListedModel>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListedModel {
    pub id: String,
    /// vLLM writes its own name here (`"vllm"`); OpenAI answers `openai` or `system`.
    #[serde(default)]
    pub owned_by: Option<String>,
    /// vLLM: the weights behind the served name.
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub max_model_len: Option<u32>,
    #[serde(default)]
    pub meta: Option<ListedModelMeta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListedModelMeta {
    #[serde(default)]
    pub n_ctx_train: Option<u32>,
    /// llama.cpp: the model's parameter count and the GGUF's size in bytes.
    #[serde(default)]
    pub n_params: Option<u64>,
    #[serde(default)]
    pub size: Option<u64>,
}

/// LM Studio's own REST API (0.3.6 and later): `GET /api/v0/models`.
#[derive(Debug, Deserialize)]
pub(crate) struct LmStudioModels {
    pub data: Vec<LmStudioModel>,
}

/// One model of LM Studio's list; `max_context_length` is LM Studio's own field (a list
/// without it is some other server's).
#[derive(Debug, Deserialize)]
pub(crate) struct LmStudioModel {
    pub id: String,
    pub max_context_length: u32,
    /// The context it was loaded with, when loaded (newer versions).
    #[serde(default)]
    pub loaded_context_length: Option<u32>,
    /// `loaded` or `not-loaded`.
    #[serde(default)]
    pub state: Option<String>,
}

/// `POST /v1/embeddings` (OpenAI and the compatible servers: vLLM, llama.cpp, LM Studio):
/// `{"model", "input": [..], "encoding_format": "float", "dimensions"?}`.
#[derive(Debug, Serialize)]
pub(crate) struct EmbeddingRequest<'a> {
    pub model: &'a str,
    pub input: &'a [&'a str],
    /// Floats as JSON numbers (the default of the API, but some compatible servers default
    /// to base64 when asked by the official SDK; saying it keeps the answer readable).
    pub encoding_format: &'static str,
    /// Only models that can shorten their vectors take it (OpenAI's text-embedding-3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
}

/// `{"object": "list", "data": [{"object": "embedding", "index", "embedding": [..]}], "model", "usage"}`.
#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingResponse {
    pub data: Vec<EmbeddingData>,
    /// `{"prompt_tokens", "total_tokens"}`; some compatible servers leave it out.
    pub usage: Option<EmbeddingUsage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingUsage {
    pub prompt_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingData {
    /// Which input this vector is for; the API keeps input order, but says so.
    pub index: usize,
    pub embedding: Vec<f32>,
}
