//! Gemini `generateContent` and `streamGenerateContent`: `functionCall` parts that arrive
//! whole, several per event, usually without ids; `thoughtSignature`s to echo back;
//! `functionResponse` parts for results.
//!
//! Ids are made up where the API sends none (Gemini 2.x, even for two calls of the same
//! function) and are then never sent back — only ids the API gave are. A call's signature
//! goes into its `provider_data` and back onto the same `functionCall` part next turn; a
//! signature on a text part becomes a [`ThinkingBlock`] and goes back on the text part.
//! `finishReason` is `STOP` after function calls too: the calls decide, not the reason. The
//! empty text part gemini-3 sends with its final `STOP` is not text. `usageMetadata` repeats
//! in every event with changing values: the last one wins.

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::LlmError;
use crate::canonical::{
    Finish, FinishReason, HistoryItem, Request, StreamEvent, ThinkingBlock, ToolCallEvent, Usage, finish_reason_of,
    made_up_call_id,
};
use crate::config::Settings;
use crate::error::{Class, ErrorInfo, mentions_context_overflow, parse_duration_text, retry_after_header};
use crate::tool_schema::{self, SchemaDialect};
use crate::transport::{Decoder, HttpCall, Wire};
use wire::{
    Content, ErrorEnvelope, FunctionCall, FunctionDeclaration, FunctionResponse, GenerateRequest, GenerateResponse,
    GenerationConfig, GoogleError, Part, ToolDeclarations, UsageMetadata,
};

pub(crate) const PROVIDER: &str = "gemini";

pub(crate) struct GeminiWire {
    pub settings: Settings,
}

/// Canonical → generateContent request. Pure.
pub(crate) fn build_request(settings: &Settings, request: &Request) -> GenerateRequest {
    let max_output_tokens = request.max_output_tokens.or(settings.max_output_tokens);
    let temperature = request.temperature.or(settings.temperature);
    GenerateRequest {
        contents: contents(&HistoryItem::all(&request.history)),
        system_instruction: (!request.system.is_empty()).then(|| Content {
            role: None,
            parts: vec![Part { text: Some(request.system.clone()), ..Part::default() }],
        }),
        tools: if request.tools.is_empty() {
            Vec::new()
        } else {
            vec![ToolDeclarations {
                function_declarations: request
                    .tools
                    .iter()
                    .map(|tool| FunctionDeclaration {
                        name: tool.name.clone(),
                        description: tool.description.clone(),
                        parameters_json_schema: tool_schema::translate(&tool.parameters, SchemaDialect::Gemini),
                    })
                    .collect(),
            }]
        },
        generation_config: (max_output_tokens.is_some() || temperature.is_some())
            .then_some(GenerationConfig { max_output_tokens, temperature }),
        tool_config: (request.require_tool_call && !request.tools.is_empty())
            .then(|| serde_json::json!({"functionCallingConfig": {"mode": "ANY"}})),
    }
}

fn gemini_data<'a>(provider: &'a Value, key: &str) -> Option<&'a Value> {
    (provider.get("provider").and_then(Value::as_str) == Some(PROVIDER)).then(|| provider.get(key)).flatten()
}

/// History → contents, consecutive parts of one role merged into one content (parallel
/// calls in one `model` content, their responses in one `user` content).
pub(crate) fn contents(history: &[HistoryItem]) -> Vec<Content> {
    let mut contents: Vec<Content> = Vec::new();
    let mut push = |role: &str, part: Part| match contents.last_mut() {
        Some(last) if last.role.as_deref() == Some(role) => last.parts.push(part),
        _ => contents.push(Content { role: Some(role.to_owned()), parts: vec![part] }),
    };
    // Ids the API itself gave, by call id, so that only those are sent back.
    let mut api_ids: HashMap<String, String> = HashMap::new();
    for item in history {
        match item {
            HistoryItem::User(text) => push("user", Part { text: Some(text.clone()), ..Part::default() }),
            HistoryItem::Assistant { text, thinking } => {
                let signature = thinking
                    .iter()
                    .filter(|block| block.provider == PROVIDER)
                    .find_map(|block| block.signature.clone());
                if !text.is_empty() || signature.is_some() {
                    push("model", Part { text: Some(text.clone()), thought_signature: signature, ..Part::default() });
                }
            }
            HistoryItem::ToolCall { id, name, arguments, provider } => {
                let api_id = gemini_data(provider, "api_id").and_then(Value::as_bool).unwrap_or(false);
                if api_id {
                    api_ids.insert(id.clone(), name.clone());
                }
                let args = match arguments {
                    Value::Object(_) => arguments.clone(),
                    other => json!({ "invalid_arguments": other }),
                };
                push(
                    "model",
                    Part {
                        function_call: Some(FunctionCall { name: name.clone(), args, id: api_id.then(|| id.clone()) }),
                        thought_signature: gemini_data(provider, "thought_signature")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        ..Part::default()
                    },
                );
            }
            HistoryItem::ToolResult { tool_call_id, name, output, success } => {
                // The response must be an object: the documented keys are `output` and `error`.
                let response = if *success { json!({ "output": output }) } else { json!({ "error": output }) };
                let name =
                    if name.is_empty() { api_ids.get(tool_call_id).cloned().unwrap_or_default() } else { name.clone() };
                push(
                    "user",
                    Part {
                        function_response: Some(FunctionResponse {
                            name,
                            response,
                            id: api_ids.contains_key(tool_call_id).then(|| tool_call_id.clone()),
                        }),
                        ..Part::default()
                    },
                );
            }
        }
    }
    contents
}

impl GeminiWire {
    fn url(&self, model: &str) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        let versioned = ["/v1beta", "/v1", "/v1alpha"].iter().any(|version| base.ends_with(version));
        let base = if versioned { base.to_owned() } else { format!("{base}/v1beta") };
        let model = model.strip_prefix("models/").unwrap_or(model);
        if self.settings.streaming {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }
}

impl Wire for GeminiWire {
    fn build(&self, request: &Request) -> Result<HttpCall, LlmError> {
        let body = serde_json::to_vec(&build_request(&self.settings, request))
            .map_err(|error| LlmError::InvalidResponse(format!("cannot encode the request: {error}")))?;
        let mut headers = Vec::new();
        if let Some(key) = self.settings.api_key.as_deref().filter(|key| !key.is_empty()) {
            headers.push(("x-goog-api-key", key.to_owned()));
        }
        let model = request.model.as_deref().unwrap_or(&self.settings.model);
        Ok(HttpCall { url: self.url(model), headers, body, streaming: self.settings.streaming })
    }

    fn classify(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
        let error = serde_json::from_slice::<ErrorEnvelope>(body).ok().and_then(|envelope| envelope.error);
        let error = error.unwrap_or_else(|| GoogleError {
            message: String::from_utf8_lossy(body).trim().to_owned(),
            ..GoogleError::default()
        });
        classify(error, Some(status), retry_after_header(headers))
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(GeminiDecoder::default())
    }

    fn whole(&self, body: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let text = std::str::from_utf8(body).map_err(|error| LlmError::InvalidResponse(error.to_string()))?;
        let mut decoder = GeminiDecoder::default();
        // A streaming request answered with a complete JSON array is read the same way.
        match serde_json::from_str::<Vec<Value>>(text) {
            Ok(elements) => {
                for element in elements {
                    decoder.event(None, &element.to_string(), out)?;
                }
            }
            Err(_) => {
                decoder.event(None, text, out)?;
            }
        }
        decoder.end(out)
    }
}

/// Classifies a google.rpc error. A bad key is a 400 `INVALID_ARGUMENT` whose only mark is
/// `details[].reason: API_KEY_INVALID`; a retry delay is a duration string (`"34.4s"`).
fn classify(error: GoogleError, http_status: Option<u16>, header_retry: Option<std::time::Duration>) -> LlmError {
    let reasons: Vec<&str> = error.details.iter().filter_map(|detail| detail.reason.as_deref()).collect();
    let retry_after = error
        .details
        .iter()
        .find_map(|detail| detail.retry_delay.as_deref().and_then(parse_duration_text))
        .or(header_retry);
    let status = error.status.as_deref();
    let class = if reasons.iter().any(|reason| matches!(*reason, "API_KEY_INVALID" | "API_KEY_EXPIRED")) {
        Class::Authentication
    } else {
        match status {
            Some("UNAUTHENTICATED" | "PERMISSION_DENIED") => Class::Authentication,
            Some("NOT_FOUND") => Class::NotFound,
            Some("RESOURCE_EXHAUSTED") => Class::RateLimit,
            Some("UNAVAILABLE") => Class::Overloaded,
            Some("INTERNAL" | "DEADLINE_EXCEEDED" | "UNKNOWN") => Class::Server,
            Some("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE")
                if mentions_context_overflow(&error.message) =>
            {
                Class::Context
            }
            Some("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE") => Class::InvalidRequest,
            _ => match http_status.or(error.code) {
                Some(code) => Class::from_status(code),
                None => Class::Provider,
            },
        }
    };
    let info = ErrorInfo {
        http_status,
        error_type: None,
        code: error.code.map(|code| code.to_string()),
        status: error.status,
        param: None,
        message: error.message,
    };
    class.into_error(info, retry_after)
}

#[derive(Debug, Default)]
struct GeminiDecoder {
    finish_reason: Option<String>,
    usage: Option<UsageMetadata>,
    request_id: Option<String>,
    text_signature: Option<String>,
    had_calls: bool,
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, _name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let response: GenerateResponse = serde_json::from_str(data)
            .map_err(|error| LlmError::InvalidResponse(format!("generateContent response: {error}: {data}")))?;
        if let Some(error) = response.error {
            return Err(classify(error, None, None));
        }
        if let Some(usage) = response.usage_metadata {
            self.usage = Some(usage);
        }
        if response.response_id.is_some() {
            self.request_id = response.response_id;
        }
        if response.candidates.is_empty()
            && let Some(reason) = response.prompt_feedback.and_then(|feedback| feedback.block_reason)
        {
            // The prompt itself was blocked: no candidate will come.
            self.finish_reason = Some(reason);
        }
        let Some(candidate) = response.candidates.into_iter().next() else { return Ok(false) };
        for part in candidate.content.map(|content| content.parts).unwrap_or_default() {
            if let Some(call) = part.function_call {
                self.had_calls = true;
                let api_id = call.id.as_ref().is_some_and(|id| !id.is_empty());
                let mut provider_data = json!({ "provider": PROVIDER, "api_id": api_id });
                if let Some(signature) = &part.thought_signature {
                    provider_data["thought_signature"] = json!(signature);
                }
                out.push(StreamEvent::ToolCall(ToolCallEvent {
                    id: call.id.filter(|id| !id.is_empty()).unwrap_or_else(made_up_call_id),
                    name: call.name,
                    arguments_json: if call.args.is_null() { "{}".to_owned() } else { call.args.to_string() },
                    provider_data,
                }));
                continue;
            }
            if let Some(signature) = part.thought_signature {
                self.text_signature = Some(signature);
            }
            match part.text.filter(|text| !text.is_empty()) {
                Some(text) if part.thought == Some(true) => out.push(StreamEvent::ThinkingDelta(text)),
                Some(text) => out.push(StreamEvent::TextDelta(text)),
                None => {}
            }
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish_reason = Some(reason);
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(raw) = self.finish_reason.take() else {
            return Err(LlmError::Incomplete("the Gemini stream ended without a finishReason".to_owned()));
        };
        if let Some(signature) = self.text_signature.take() {
            out.push(StreamEvent::Thinking(ThinkingBlock {
                provider: PROVIDER.to_owned(),
                text: String::new(),
                signature: Some(signature),
                redacted: None,
            }));
        }
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: usage.prompt_token_count.unwrap_or(0),
                output_tokens: usage.candidates_token_count.unwrap_or(0),
                total_tokens: usage.total_token_count,
                reasoning_tokens: usage.thoughts_token_count,
                cached_input_tokens: usage.cached_content_token_count,
                cache_write_tokens: None,
                request_id: self.request_id.take(),
            }));
        }
        let reason = if self.had_calls { FinishReason::ToolCalls } else { finish_reason_of(&raw) };
        out.push(StreamEvent::Finish(Finish { reason, raw }));
        Ok(())
    }
}
