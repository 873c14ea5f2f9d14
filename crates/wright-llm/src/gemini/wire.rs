//! Gemini `generateContent` / `streamGenerateContent` JSON (v1beta), as typed serde structs.
//! The same `Content`/`Part` shapes go out in requests and come back in responses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateRequest {
    pub contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDeclarations>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
    /// `{"functionCallingConfig": {"mode": "ANY"}}` when the reply must call a tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Content {
    /// `user` or `model`; absent on the system instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// True on a thought-summary text part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Opaque; must be echoed back on the same part next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionCall {
    pub name: String,
    /// Always a whole object; Gemini never streams partial arguments.
    #[serde(default)]
    pub args: Value,
    /// Sent by gemini-3, absent from 2.x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionResponse {
    pub name: String,
    /// Must be an object (a protobuf Struct).
    pub response: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolDeclarations {
    pub function_declarations: Vec<FunctionDeclaration>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionDeclaration {
    pub name: String,
    pub description: String,
    /// JSON Schema in the subset this field documents (`tool_schema::SchemaDialect::Gemini`);
    /// `parameters` would take only Google's older OpenAPI subset.
    pub parameters_json_schema: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

/// One streamed event or a whole response.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateResponse {
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    pub usage_metadata: Option<UsageMetadata>,
    /// The provider's id of the request, the same in every chunk.
    pub response_id: Option<String>,
    pub prompt_feedback: Option<PromptFeedback>,
    pub error: Option<GoogleError>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    pub content: Option<Content>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    pub prompt_token_count: Option<u64>,
    pub candidates_token_count: Option<u64>,
    pub total_token_count: Option<u64>,
    pub thoughts_token_count: Option<u64>,
    /// Prompt tokens served from a cached context; part of `prompt_token_count`.
    pub cached_content_token_count: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    pub block_reason: Option<String>,
}

/// `{"error": {code, message, status, details[]}}` (google.rpc.Status).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub error: Option<GoogleError>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct GoogleError {
    pub code: Option<u16>,
    #[serde(default)]
    pub message: String,
    pub status: Option<String>,
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

/// One of `ErrorInfo` (reason), `RetryInfo` (retryDelay), `QuotaFailure`, … — only the
/// fields we act on.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErrorDetail {
    pub reason: Option<String>,
    pub retry_delay: Option<String>,
}

/// `GET /v1beta/models`: `{"models": [{"name": "models/gemini-2.5-flash", "inputTokenLimit",
/// "supportedGenerationMethods": ["generateContent", …]}], "nextPageToken"}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelList {
    #[serde(default)]
    pub models: Vec<ListedModel>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListedModel {
    pub name: String,
    #[serde(default)]
    pub input_token_limit: Option<u32>,
    #[serde(default)]
    pub supported_generation_methods: Vec<String>,
}

/// `POST /v1beta/models/{model}:batchEmbedContents`: one request per text, each naming the
/// model again (`models/{model}`, which must be the model of the path). At most 100 a batch.
#[derive(Debug, Serialize)]
pub(crate) struct BatchEmbedRequest {
    pub requests: Vec<EmbedContentRequest>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmbedContentRequest {
    pub model: String,
    pub content: Content,
    /// `RETRIEVAL_QUERY` for what is searched with, `RETRIEVAL_DOCUMENT` for what is searched.
    pub task_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_dimensionality: Option<u32>,
}

/// `{"embeddings": [{"values": [..]}]}`, in the order of the requests.
#[derive(Debug, Deserialize)]
pub(crate) struct BatchEmbedResponse {
    #[serde(default)]
    pub embeddings: Vec<ContentEmbedding>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ContentEmbedding {
    #[serde(default)]
    pub values: Vec<f32>,
}
