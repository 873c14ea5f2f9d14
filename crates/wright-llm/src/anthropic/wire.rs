//! Anthropic Messages JSON (`/v1/messages`), as typed serde structs. Response structs accept
//! unknown fields (`caller`, `stop_details`, `inference_geo`, …) and unknown block types
//! (`server_tool_use`, `*_tool_result`), which are counted and skipped, never dispatched.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest {
    pub model: String,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// `{"type": "any"}` when the reply must call a tool; absent (`auto`) otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ThinkingConfig {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub budget_tokens: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Message {
    pub role: &'static str,
    pub content: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// Always an object.
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
pub(crate) struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One streamed event, dispatched on its JSON `type` (always equal to the `event:` name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorObject,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessageStart {
    /// `msg_…`: the provider's id of the request.
    pub id: Option<String>,
    pub usage: Option<WireUsage>,
}

/// A content block, as `content_block_start` opens it or a whole response holds it. A
/// struct rather than an enum so that unknown block types keep their name.
#[derive(Debug, Deserialize)]
pub(crate) struct Block {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub thinking: Option<String>,
    pub signature: Option<String>,
    /// `redacted_thinking`'s opaque payload.
    pub data: Option<String>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delta {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub thinking: Option<String>,
    pub signature: Option<String>,
    pub partial_json: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessageDeltaBody {
    pub stop_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct WireUsage {
    /// Prompt tokens neither read from nor written to the cache.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
}

/// A whole (non-streamed) response.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageResponse {
    pub id: Option<String>,
    #[serde(default)]
    pub content: Vec<Block>,
    pub stop_reason: Option<String>,
    pub usage: Option<WireUsage>,
    pub error: Option<ErrorObject>,
}

/// `{"type":"error","error":{"type","message"},"request_id"}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorObject {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message: String,
}

/// `GET /v1/models`: `{"data": [{"type": "model", "id", "display_name", "created_at"}],
/// "has_more", "first_id", "last_id"}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ModelList {
    pub data: Vec<ListedModel>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListedModel {
    pub id: String,
}
