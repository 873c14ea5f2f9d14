//! OpenAI Responses API JSON (`/v1/responses`), as typed serde structs. Streamed events are
//! one struct with optional fields, dispatched on `type`; `sequence_number` is not required.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest {
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub input: Vec<InputItem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<FunctionTool>,
    pub stream: bool,
    /// The conversation is kept by Wright, not stored at OpenAI.
    pub store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// `"required"` when the reply must call a tool; absent (`auto`) otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputItem {
    Message { role: &'static str, content: String },
    FunctionCall { call_id: String, name: String, arguments: String },
    FunctionCallOutput { call_id: String, output: String },
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionTool {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// Strict mode demands schemas without optional properties; ours have them.
    pub strict: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StreamEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub delta: Option<String>,
    pub output_index: Option<u32>,
    pub item_id: Option<String>,
    pub item: Option<OutputItem>,
    pub arguments: Option<String>,
    pub response: Option<ResponseObject>,
    /// The `error` event: nested here in real recordings …
    pub error: Option<ErrorObject>,
    /// … and flat in the API reference.
    pub code: Option<Value>,
    pub message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(rename = "type")]
    pub kind: String,
    /// The item id (`fc_…`); tool results reference `call_id` instead.
    pub id: Option<String>,
    pub call_id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
    #[serde(default)]
    pub content: Vec<ContentPart>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseObject {
    /// `resp_…`: the provider's id of the request.
    pub id: Option<String>,
    pub status: Option<String>,
    pub usage: Option<ResponsesUsage>,
    pub error: Option<ErrorObject>,
    #[serde(default)]
    pub output: Vec<OutputItem>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct ResponsesUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub output_tokens_details: Option<OutputTokensDetails>,
    pub input_tokens_details: Option<InputTokensDetails>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct InputTokensDetails {
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct OutputTokensDetails {
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorObject {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub code: Option<Value>,
    #[serde(default)]
    pub message: String,
}
