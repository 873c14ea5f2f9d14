//! The OpenAI Responses API (`/v1/responses`): named events, function calls as output items
//! keyed by `output_index`, usage only in `response.completed`, and failures after HTTP 200
//! as an `error` event followed by `response.failed`.
//!
//! A call's `call_id` is its canonical id (tool results must reference it); the item id
//! (`fc_…`) is kept in `provider_data`. Reasoning items (encrypted reasoning content) are not
//! requested or sent back: the conversation is not stored at OpenAI (`store: false`).

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::LlmError;
use crate::canonical::{
    Finish, FinishReason, HistoryItem, Request, StreamEvent, ToolCallEvent, Usage, arguments_text, finish_reason_of,
    made_up_call_id, output_text,
};
use crate::config::Settings;
use crate::error::{Class, ErrorInfo, retry_hint_in_message};
use crate::openai::{class_of_marks, classify_http};
use crate::tool_schema::{self, SchemaDialect};
use crate::transport::{Decoder, HttpCall, Wire};
use wire::{
    ErrorObject, FunctionTool, InputItem, OutputItem, ResponseObject, ResponsesRequest, ResponsesUsage,
    StreamEvent as WireEvent,
};

pub(crate) const PROVIDER: &str = "openai_responses";

pub(crate) struct ResponsesWire {
    pub settings: Settings,
}

/// Canonical → Responses request. Pure.
pub(crate) fn build_request(settings: &Settings, request: &Request) -> ResponsesRequest {
    let mut input = Vec::new();
    for item in HistoryItem::all(&request.history) {
        match item {
            HistoryItem::User(content) => input.push(InputItem::Message { role: "user", content }),
            HistoryItem::Assistant { text, .. } if !text.is_empty() => {
                input.push(InputItem::Message { role: "assistant", content: text })
            }
            HistoryItem::Assistant { .. } => {}
            HistoryItem::ToolCall { id, name, arguments, .. } => {
                input.push(InputItem::FunctionCall { call_id: id, name, arguments: arguments_text(&arguments) })
            }
            HistoryItem::ToolResult { tool_call_id, output, .. } => {
                input.push(InputItem::FunctionCallOutput { call_id: tool_call_id, output: output_text(&output) })
            }
        }
    }
    ResponsesRequest {
        model: request.model.clone().unwrap_or_else(|| settings.model.clone()),
        instructions: (!request.system.is_empty()).then(|| request.system.clone()),
        input,
        tools: request
            .tools
            .iter()
            .map(|tool| FunctionTool {
                kind: "function",
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool_schema::translate(&tool.parameters, SchemaDialect::OpenAi),
                strict: false,
            })
            .collect(),
        stream: settings.streaming,
        store: false,
        max_output_tokens: request.max_output_tokens.or(settings.max_output_tokens),
        temperature: request.temperature.or(settings.temperature),
        tool_choice: (request.require_tool_call && !request.tools.is_empty()).then_some("required"),
    }
}

impl Wire for ResponsesWire {
    fn build(&self, request: &Request) -> Result<HttpCall, LlmError> {
        let body = serde_json::to_vec(&build_request(&self.settings, request))
            .map_err(|error| LlmError::InvalidResponse(format!("cannot encode the request: {error}")))?;
        let mut headers = Vec::new();
        if let Some(key) = self.settings.api_key.as_deref().filter(|key| !key.is_empty()) {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        Ok(HttpCall {
            url: format!("{}/responses", self.settings.base_url.trim_end_matches('/')),
            headers,
            body,
            streaming: self.settings.streaming,
        })
    }

    fn classify(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
        classify_http(status, headers, body)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(ResponsesDecoder::default())
    }

    fn whole(&self, body: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let response: ResponseObject =
            serde_json::from_slice(body).map_err(|error| LlmError::InvalidResponse(format!("response: {error}")))?;
        if let Some(error) = response.error {
            return Err(classify_stream_error(error));
        }
        let mut had_calls = false;
        for item in response.output {
            match item.kind.as_str() {
                "message" => {
                    for part in item.content.into_iter().filter(|part| part.kind == "output_text") {
                        out.extend(part.text.filter(|text| !text.is_empty()).map(StreamEvent::TextDelta));
                    }
                }
                "function_call" => {
                    had_calls = true;
                    out.push(StreamEvent::ToolCall(call_of(item, String::new())));
                }
                _ => {}
            }
        }
        if let Some(usage) = response.usage {
            out.push(StreamEvent::Usage(usage_of(usage, response.id)));
        }
        out.push(StreamEvent::Finish(finish(response.status.unwrap_or_else(|| "completed".to_owned()), had_calls)));
        Ok(())
    }
}

fn call_of(item: OutputItem, streamed_arguments: String) -> ToolCallEvent {
    let arguments_json = item.arguments.filter(|arguments| !arguments.is_empty()).unwrap_or(streamed_arguments);
    ToolCallEvent {
        id: item.call_id.filter(|id| !id.is_empty()).unwrap_or_else(made_up_call_id),
        name: item.name.unwrap_or_default(),
        arguments_json,
        provider_data: json!({ "provider": PROVIDER, "item_id": item.id }),
    }
}

fn usage_of(usage: ResponsesUsage, request_id: Option<String>) -> Usage {
    let input_tokens = usage.input_tokens.unwrap_or(0);
    let output_tokens = usage.output_tokens.unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: Some(usage.total_tokens.unwrap_or(input_tokens + output_tokens)),
        reasoning_tokens: usage.output_tokens_details.and_then(|details| details.reasoning_tokens),
        cached_input_tokens: usage.input_tokens_details.and_then(|details| details.cached_tokens),
        cache_write_tokens: None,
        request_id,
    }
}

fn finish(raw: String, had_calls: bool) -> Finish {
    Finish { reason: if had_calls { FinishReason::ToolCalls } else { finish_reason_of(&raw) }, raw }
}

fn code_text(code: &Option<Value>) -> Option<String> {
    match code {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    }
}

fn classify_stream_error(error: ErrorObject) -> LlmError {
    let code = code_text(&error.code);
    let class = class_of_marks(error.kind.as_deref(), code.as_deref())
        .or_else(|| (error.kind.as_deref() == Some("invalid_request_error")).then_some(Class::InvalidRequest))
        .unwrap_or(Class::Provider);
    let retry_after = retry_hint_in_message(&error.message);
    let info = ErrorInfo {
        http_status: None,
        error_type: error.kind,
        code,
        status: None,
        param: None,
        message: error.message,
    };
    class.into_error(info, retry_after)
}

#[derive(Debug, Default)]
struct PendingCall {
    item: Option<OutputItem>,
    arguments: String,
}

#[derive(Debug, Default)]
struct ResponsesDecoder {
    /// Calls not yet emitted, by output index.
    calls: BTreeMap<u32, PendingCall>,
    status: Option<String>,
    usage: Option<ResponsesUsage>,
    request_id: Option<String>,
    had_calls: bool,
}

impl ResponsesDecoder {
    fn index_of(&self, event: &WireEvent) -> Option<u32> {
        event.output_index.or_else(|| {
            let item_id = event.item_id.as_ref()?;
            self.calls
                .iter()
                .find(|(_, call)| call.item.as_ref().and_then(|item| item.id.as_ref()) == Some(item_id))
                .map(|(index, _)| *index)
        })
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, _name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError> {
        let event: WireEvent = serde_json::from_str(data)
            .map_err(|error| LlmError::InvalidResponse(format!("responses event: {error}: {data}")))?;
        match event.kind.as_str() {
            "response.output_text.delta" => {
                out.extend(event.delta.filter(|delta| !delta.is_empty()).map(StreamEvent::TextDelta));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.extend(event.delta.filter(|delta| !delta.is_empty()).map(StreamEvent::ThinkingDelta));
            }
            "response.output_item.added" => {
                if let (Some(index), Some(item)) = (event.output_index, event.item)
                    && item.kind == "function_call"
                {
                    let arguments = item.arguments.clone().unwrap_or_default();
                    self.calls.insert(index, PendingCall { item: Some(item), arguments });
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(index) = self.index_of(&event)
                    && let Some(call) = self.calls.get_mut(&index)
                {
                    call.arguments.push_str(event.delta.as_deref().unwrap_or_default());
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(index) = self.index_of(&event)
                    && let Some(call) = self.calls.get_mut(&index)
                    && let Some(arguments) = event.arguments
                {
                    call.arguments = arguments;
                }
            }
            "response.output_item.done" => {
                if let (Some(index), Some(item)) = (event.output_index, event.item)
                    && item.kind == "function_call"
                {
                    let streamed = self.calls.remove(&index).map(|call| call.arguments).unwrap_or_default();
                    self.had_calls = true;
                    out.push(StreamEvent::ToolCall(call_of(item, streamed)));
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                self.usage = response.usage;
                self.request_id = response.id;
                self.status =
                    Some(response.status.unwrap_or_else(|| event.kind.trim_start_matches("response.").to_owned()));
                return Ok(true);
            }
            "response.failed" => {
                let error = event.response.and_then(|response| response.error).unwrap_or_else(|| ErrorObject {
                    message: "the response failed".to_owned(),
                    ..ErrorObject::default()
                });
                return Err(classify_stream_error(error));
            }
            "error" => {
                let error = event.error.unwrap_or_else(|| ErrorObject {
                    kind: None,
                    code: event.code,
                    message: event.message.unwrap_or_else(|| data.to_owned()),
                });
                return Err(classify_stream_error(error));
            }
            _ => {}
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(raw) = self.status.take() else {
            return Err(LlmError::Incomplete("the response stream ended before response.completed".to_owned()));
        };
        // Calls whose `output_item.done` never came are emitted from what streamed.
        for call in std::mem::take(&mut self.calls).into_values() {
            if let Some(item) = call.item {
                self.had_calls = true;
                out.push(StreamEvent::ToolCall(call_of(item, call.arguments)));
            }
        }
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(usage_of(usage, self.request_id.take())));
        }
        out.push(StreamEvent::Finish(finish(raw, self.had_calls)));
        Ok(())
    }
}
