//! Anthropic Messages: `tool_use` blocks streamed as `input_json_delta`, thinking blocks
//! with their signatures, `redacted_thinking`, and errors inside a 200 stream.
//!
//! One `index` counter covers every block type, so blocks are tracked by index. Tool input
//! fragments are concatenated and emitted at `content_block_stop`; an empty concatenation
//! means `{}`. Thinking and redacted-thinking blocks are emitted whole as
//! [`ThinkingBlock`]s, and sent back first in the assistant message on the next turn, as the
//! API requires when tools are in use. Server-side tools (`server_tool_use`,
//! `*_tool_result`) are not client calls: they are skipped. Usage: `input_tokens` from
//! `message_start` (or a later `message_delta`), `output_tokens` replaced, never summed.

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::LlmError;
use crate::canonical::{
    Finish, FinishReason, HistoryItem, Request, StreamEvent, ThinkingBlock, ToolCallEvent, Usage, finish_reason_of,
    made_up_call_id, output_text,
};
use crate::config::Settings;
use crate::error::{Class, ErrorInfo, mentions_context_overflow, retry_after_header};
use crate::tool_schema::{self, SchemaDialect};
use crate::transport::{Decoder, HttpCall, Wire};
use wire::{
    Block, ContentBlock, ErrorEnvelope, ErrorObject, Message, MessageResponse, MessagesRequest,
    StreamEvent as WireEvent, ThinkingConfig, Tool, WireUsage,
};

pub(crate) const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when the configuration sets none.
const DEFAULT_MAX_TOKENS: u32 = 8192;

pub(crate) struct MessagesWire {
    pub settings: Settings,
}

/// Canonical → Messages request. Pure.
pub(crate) fn build_request(settings: &Settings, request: &Request) -> MessagesRequest {
    let budget = settings.thinking_budget;
    let mut max_tokens = request.max_output_tokens.or(settings.max_output_tokens).unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(budget) = budget
        && max_tokens <= budget
    {
        // The API refuses a thinking budget that leaves no room for the answer.
        max_tokens = budget + DEFAULT_MAX_TOKENS;
    }
    MessagesRequest {
        model: request.model.clone().unwrap_or_else(|| settings.model.clone()),
        max_tokens,
        system: (!request.system.is_empty()).then(|| request.system.clone()),
        messages: messages(&HistoryItem::all(&request.history)),
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool_schema::translate(&tool.parameters, SchemaDialect::Anthropic),
            })
            .collect(),
        stream: settings.streaming,
        thinking: budget.map(|budget_tokens| ThinkingConfig { kind: "enabled", budget_tokens }),
        // Extended thinking refuses any temperature but the default.
        temperature: if budget.is_some() { None } else { request.temperature.or(settings.temperature) },
        // Extended thinking takes only `auto`.
        tool_choice: (request.require_tool_call && !request.tools.is_empty() && budget.is_none())
            .then(|| serde_json::json!({"type": "any"})),
    }
}

/// History → alternating messages: thinking, text and tool_use blocks of one assistant turn
/// in one message; tool results (and a user message right after them) in one user message.
pub(crate) fn messages(history: &[HistoryItem]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut push = |role: &'static str, block: ContentBlock| match messages.last_mut() {
        Some(last) if last.role == role => last.content.push(block),
        _ => messages.push(Message { role, content: vec![block] }),
    };
    for item in history {
        match item {
            HistoryItem::User(text) => push("user", ContentBlock::Text { text: text.clone() }),
            HistoryItem::Assistant { text, thinking } => {
                for block in thinking.iter().filter(|block| block.provider == PROVIDER) {
                    if let Some(data) = &block.redacted {
                        push("assistant", ContentBlock::RedactedThinking { data: data.clone() });
                    } else if let Some(signature) = &block.signature {
                        push(
                            "assistant",
                            ContentBlock::Thinking { thinking: block.text.clone(), signature: signature.clone() },
                        );
                    }
                }
                // The API refuses empty text blocks.
                if !text.is_empty() {
                    push("assistant", ContentBlock::Text { text: text.clone() });
                }
            }
            HistoryItem::ToolCall { id, name, arguments, .. } => {
                let input = match arguments {
                    Value::Object(_) => arguments.clone(),
                    // Invalid arguments were kept as text; the API wants an object.
                    other => json!({ "invalid_arguments": other }),
                };
                push("assistant", ContentBlock::ToolUse { id: id.clone(), name: name.clone(), input });
            }
            HistoryItem::ToolResult { tool_call_id, output, success, .. } => push(
                "user",
                ContentBlock::ToolResult {
                    tool_use_id: tool_call_id.clone(),
                    content: output_text(output),
                    is_error: !success,
                },
            ),
        }
    }
    messages
}

impl Wire for MessagesWire {
    fn build(&self, request: &Request) -> Result<HttpCall, LlmError> {
        let body = serde_json::to_vec(&build_request(&self.settings, request))
            .map_err(|error| LlmError::InvalidResponse(format!("cannot encode the request: {error}")))?;
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        if let Some(key) = self.settings.api_key.as_deref().filter(|key| !key.is_empty()) {
            headers.push(("x-api-key", key.to_owned()));
        }
        Ok(HttpCall {
            url: format!("{}/v1/messages", self.settings.base_url.trim_end_matches('/')),
            headers,
            body,
            streaming: self.settings.streaming,
        })
    }

    fn classify(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
        let error = serde_json::from_slice::<ErrorEnvelope>(body).ok().and_then(|envelope| envelope.error);
        let error = error
            .unwrap_or_else(|| ErrorObject { kind: None, message: String::from_utf8_lossy(body).trim().to_owned() });
        classify(error, Some(status), retry_after_header(headers))
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(MessagesDecoder::default())
    }

    fn whole(&self, body: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let response: MessageResponse =
            serde_json::from_slice(body).map_err(|error| LlmError::InvalidResponse(format!("message: {error}")))?;
        if let Some(error) = response.error {
            return Err(classify(error, None, None));
        }
        let mut had_calls = false;
        for block in response.content {
            match block.kind.as_str() {
                "text" => out.extend(block.text.filter(|text| !text.is_empty()).map(StreamEvent::TextDelta)),
                "thinking" => {
                    let text = block.thinking.unwrap_or_default();
                    if !text.is_empty() {
                        out.push(StreamEvent::ThinkingDelta(text.clone()));
                    }
                    out.push(StreamEvent::Thinking(ThinkingBlock {
                        provider: PROVIDER.to_owned(),
                        text,
                        signature: block.signature,
                        redacted: None,
                    }));
                }
                "redacted_thinking" => out.push(StreamEvent::Thinking(ThinkingBlock {
                    provider: PROVIDER.to_owned(),
                    text: String::new(),
                    signature: None,
                    redacted: block.data,
                })),
                "tool_use" => {
                    had_calls = true;
                    out.push(StreamEvent::ToolCall(ToolCallEvent {
                        id: block.id.filter(|id| !id.is_empty()).unwrap_or_else(made_up_call_id),
                        name: block.name.unwrap_or_default(),
                        arguments_json: block.input.map(|input| input.to_string()).unwrap_or_else(|| "{}".to_owned()),
                        provider_data: Value::Null,
                    }));
                }
                _ => {}
            }
        }
        if let Some(usage) = response.usage {
            out.push(StreamEvent::Usage(usage_of(usage, response.id)));
        }
        let raw = response.stop_reason.unwrap_or_else(|| "end_turn".to_owned());
        out.push(StreamEvent::Finish(finish(raw, had_calls)));
        Ok(())
    }
}

fn finish(raw: String, had_calls: bool) -> Finish {
    Finish { reason: if had_calls { FinishReason::ToolCalls } else { finish_reason_of(&raw) }, raw }
}

/// Anthropic counts cached prompt tokens apart from `input_tokens`; the canonical count holds
/// them all.
fn usage_of(usage: WireUsage, request_id: Option<String>) -> Usage {
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    let written = usage.cache_creation_input_tokens.unwrap_or(0);
    Usage {
        input_tokens: usage.input_tokens.unwrap_or(0) + read + written,
        output_tokens: usage.output_tokens.unwrap_or(0),
        total_tokens: None,
        reasoning_tokens: None,
        cached_input_tokens: usage.cache_read_input_tokens,
        cache_write_tokens: usage.cache_creation_input_tokens,
        request_id,
    }
}

/// Classifies by the error type, which is precise on Anthropic; context overflow has no type
/// of its own, only a message beginning "prompt is too long".
fn classify(error: ErrorObject, http_status: Option<u16>, retry_after: Option<std::time::Duration>) -> LlmError {
    let class = match error.kind.as_deref() {
        Some("invalid_request_error") if mentions_context_overflow(&error.message) => Class::Context,
        Some("invalid_request_error") => Class::InvalidRequest,
        Some("authentication_error" | "permission_error") => Class::Authentication,
        Some("not_found_error") => Class::NotFound,
        Some("rate_limit_error") => Class::RateLimit,
        Some("overloaded_error") => Class::Overloaded,
        Some("api_error" | "timeout_error") => Class::Server,
        Some("billing_error") => Class::Quota,
        Some("request_too_large") => Class::Context,
        _ => match http_status {
            Some(status) => Class::from_status(status),
            None => Class::Provider,
        },
    };
    let info = ErrorInfo {
        http_status,
        error_type: error.kind,
        code: None,
        status: None,
        param: None,
        message: error.message,
    };
    class.into_error(info, retry_after)
}

#[derive(Debug)]
enum OpenBlock {
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Redacted {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Option<Value>,
        json: String,
    },
    /// Text (streamed as it comes) and server-side or unknown blocks (skipped).
    Passive,
}

#[derive(Debug, Default)]
struct MessagesDecoder {
    blocks: BTreeMap<u32, OpenBlock>,
    usage: Option<WireUsage>,
    request_id: Option<String>,
    stop_reason: Option<String>,
    had_calls: bool,
}

impl Decoder for MessagesDecoder {
    fn event(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError> {
        let event: WireEvent = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(_) if name == Some("error") => {
                return Err(classify(ErrorObject { kind: None, message: data.to_owned() }, None, None));
            }
            Err(error) => return Err(LlmError::InvalidResponse(format!("message event: {error}: {data}"))),
        };
        match event {
            WireEvent::MessageStart { message } => {
                self.request_id = message.id;
                if let Some(usage) = message.usage {
                    self.usage = Some(usage);
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => {
                let block = self.open(content_block, out);
                self.blocks.insert(index, block);
            }
            WireEvent::ContentBlockDelta { index, delta } => match (self.blocks.get_mut(&index), delta.kind.as_str()) {
                (_, "text_delta") => out.extend(delta.text.filter(|text| !text.is_empty()).map(StreamEvent::TextDelta)),
                (Some(OpenBlock::Thinking { text, .. }), "thinking_delta") => {
                    if let Some(fragment) = delta.thinking.filter(|fragment| !fragment.is_empty()) {
                        text.push_str(&fragment);
                        out.push(StreamEvent::ThinkingDelta(fragment));
                    }
                }
                (Some(OpenBlock::Thinking { signature, .. }), "signature_delta") => {
                    if let Some(fragment) = delta.signature {
                        signature.get_or_insert_with(String::new).push_str(&fragment);
                    }
                }
                (Some(OpenBlock::ToolUse { json, .. }), "input_json_delta") => {
                    json.push_str(delta.partial_json.as_deref().unwrap_or_default());
                }
                _ => {}
            },
            WireEvent::ContentBlockStop { index } => {
                if let Some(block) = self.blocks.remove(&index) {
                    self.close(block, out);
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    // Cumulative counts: the latest replaces, never adds.
                    let mut latest = self.usage.unwrap_or_default();
                    latest.input_tokens = usage.input_tokens.or(latest.input_tokens);
                    latest.output_tokens = usage.output_tokens.or(latest.output_tokens);
                    latest.cache_read_input_tokens = usage.cache_read_input_tokens.or(latest.cache_read_input_tokens);
                    latest.cache_creation_input_tokens =
                        usage.cache_creation_input_tokens.or(latest.cache_creation_input_tokens);
                    self.usage = Some(latest);
                }
            }
            WireEvent::MessageStop => return Ok(true),
            WireEvent::Error { error } => return Err(classify(error, None, None)),
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(raw) = self.stop_reason.take() else {
            return Err(LlmError::Incomplete("the message stream ended without a stop_reason".to_owned()));
        };
        // Blocks the server never closed are closed here rather than lost.
        for block in std::mem::take(&mut self.blocks).into_values() {
            self.close(block, out);
        }
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage_of(usage, self.request_id.take())));
        }
        out.push(StreamEvent::Finish(finish(raw, self.had_calls)));
        Ok(())
    }
}

impl MessagesDecoder {
    fn open(&mut self, block: Block, out: &mut Vec<StreamEvent>) -> OpenBlock {
        match block.kind.as_str() {
            "text" => {
                out.extend(block.text.filter(|text| !text.is_empty()).map(StreamEvent::TextDelta));
                OpenBlock::Passive
            }
            "thinking" => {
                let text = block.thinking.unwrap_or_default();
                if !text.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(text.clone()));
                }
                OpenBlock::Thinking { text, signature: block.signature.filter(|signature| !signature.is_empty()) }
            }
            "redacted_thinking" => OpenBlock::Redacted { data: block.data.unwrap_or_default() },
            "tool_use" => OpenBlock::ToolUse {
                id: block.id.filter(|id| !id.is_empty()).unwrap_or_else(made_up_call_id),
                name: block.name.unwrap_or_default(),
                input: block.input,
                json: String::new(),
            },
            _ => OpenBlock::Passive,
        }
    }

    fn close(&mut self, block: OpenBlock, out: &mut Vec<StreamEvent>) {
        match block {
            OpenBlock::Thinking { text, signature } => out.push(StreamEvent::Thinking(ThinkingBlock {
                provider: PROVIDER.to_owned(),
                text,
                signature,
                redacted: None,
            })),
            OpenBlock::Redacted { data } => out.push(StreamEvent::Thinking(ThinkingBlock {
                provider: PROVIDER.to_owned(),
                text: String::new(),
                signature: None,
                redacted: Some(data),
            })),
            OpenBlock::ToolUse { id, name, input, json } => {
                self.had_calls = true;
                // The start's `input: {}` is a placeholder when deltas follow; it counts only
                // when no fragment came at all and it is not empty.
                let arguments_json = if !json.trim().is_empty() {
                    json
                } else {
                    input
                        .filter(|input| input.as_object().is_some_and(|object| !object.is_empty()))
                        .map(|input| input.to_string())
                        .unwrap_or_else(|| "{}".to_owned())
                };
                out.push(StreamEvent::ToolCall(ToolCallEvent { id, name, arguments_json, provider_data: Value::Null }));
            }
            OpenBlock::Passive => {}
        }
    }
}
