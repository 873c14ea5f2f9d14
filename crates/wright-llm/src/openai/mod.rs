//! OpenAI Chat Completions, and the OpenAI-compatible servers that speak it (Ollama,
//! llama.cpp, vLLM, LM Studio, Groq, OpenRouter, Azure).
//!
//! Tool calls are accumulated across chunks and emitted whole at the end. The accumulator is
//! keyed by `index` when the server sends one; without one (older Ollama) a delta with an id
//! not seen before starts a new call, and anything else extends the last call. Servers that
//! send a call whole in one delta, no `arguments` key (vLLM's header) or an arguments object
//! all land in the same place. Text is passed through as sent — including tool markup that
//! llama.cpp leaks into `content` before its parser switches to `tool_calls`.

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::LlmError;
use crate::canonical::{
    Finish, FinishReason, HistoryItem, Request, StreamEvent, ToolCallEvent, Usage, arguments_text, finish_reason_of,
    made_up_call_id, output_text,
};
use crate::config::Settings;
use crate::error::{Class, ErrorInfo, mentions_context_overflow, retry_after_header, retry_hint_in_message};
use crate::provider::{LocalServer, ServerFacts};
use crate::tool_schema::{self, SchemaDialect};
use crate::transport::{Decoder, HttpCall, Wire};
use wire::{
    ChatChunk, ChatCompletion, ChatFunction, ChatFunctionCall, ChatMessage, ChatRequest, ChatTool, ChatToolCall,
    ChatUsage, ErrorEnvelope, ErrorField, ErrorObject, StreamOptions, Timings, ToolCallDelta,
};

/// Which dialect: OpenAI's own API, or a compatible server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    OpenAi,
    Compatible,
}

impl Flavor {
    /// OpenAI takes JSON Schema; the compatible servers that constrain calls with a grammar
    /// (llama.cpp, Ollama) refuse schemas without a type, so they all get the grammar subset,
    /// which the hosted compatible APIs accept too.
    pub(crate) fn schema_dialect(self) -> SchemaDialect {
        match self {
            Flavor::OpenAi => SchemaDialect::OpenAi,
            Flavor::Compatible => SchemaDialect::Grammar,
        }
    }
}

pub(crate) struct ChatWire {
    pub settings: Settings,
    pub flavor: Flavor,
}

/// Canonical → Chat Completions request. Pure.
pub(crate) fn build_request(settings: &Settings, flavor: Flavor, request: &Request) -> ChatRequest {
    ChatRequest {
        model: request.model.clone().unwrap_or_else(|| settings.model.clone()),
        messages: messages(&request.system, &HistoryItem::all(&request.history)),
        tools: request
            .tools
            .iter()
            .map(|tool| ChatTool {
                kind: "function",
                function: ChatFunction {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool_schema::translate(&tool.parameters, flavor.schema_dialect()),
                },
            })
            .collect(),
        stream: settings.streaming,
        // Only OpenAI is asked for the usage chunk: some older compatible servers refuse
        // unknown options, and the ones that accept it often ignore it anyway.
        stream_options: (settings.streaming && flavor == Flavor::OpenAi)
            .then_some(StreamOptions { include_usage: true }),
        max_completion_tokens: if flavor == Flavor::OpenAi {
            request.max_output_tokens.or(settings.max_output_tokens)
        } else {
            None
        },
        max_tokens: if flavor == Flavor::Compatible {
            request.max_output_tokens.or(settings.max_output_tokens)
        } else {
            None
        },
        temperature: request.temperature.or(settings.temperature),
        tool_choice: (request.require_tool_call && !request.tools.is_empty()).then_some("required"),
    }
}

/// History → messages: an assistant event and the tool calls after it become one assistant
/// message; each tool result its own `tool` message.
pub(crate) fn messages(system: &str, history: &[HistoryItem]) -> Vec<ChatMessage> {
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(ChatMessage::System { content: system.to_owned() });
    }
    for item in history {
        match item {
            HistoryItem::User(text) => messages.push(ChatMessage::User { content: text.clone() }),
            HistoryItem::Assistant { text, .. } => {
                messages.push(ChatMessage::Assistant { content: Some(text.clone()), tool_calls: Vec::new() })
            }
            HistoryItem::ToolCall { id, name, arguments, .. } => {
                let call = ChatToolCall {
                    id: id.clone(),
                    kind: "function",
                    function: ChatFunctionCall { name: name.clone(), arguments: arguments_text(arguments) },
                };
                match messages.last_mut() {
                    Some(ChatMessage::Assistant { content, tool_calls }) => {
                        if content.as_deref() == Some("") {
                            *content = None;
                        }
                        tool_calls.push(call);
                    }
                    _ => messages.push(ChatMessage::Assistant { content: None, tool_calls: vec![call] }),
                }
            }
            HistoryItem::ToolResult { tool_call_id, output, .. } => {
                messages.push(ChatMessage::Tool { tool_call_id: tool_call_id.clone(), content: output_text(output) })
            }
        }
    }
    messages
}

impl Wire for ChatWire {
    fn build(&self, request: &Request) -> Result<HttpCall, LlmError> {
        let body = serde_json::to_vec(&build_request(&self.settings, self.flavor, request))
            .map_err(|error| LlmError::InvalidResponse(format!("cannot encode the request: {error}")))?;
        let mut headers = Vec::new();
        if let Some(key) = self.settings.api_key.as_deref().filter(|key| !key.is_empty()) {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        Ok(HttpCall {
            url: format!("{}/chat/completions", self.settings.base_url.trim_end_matches('/')),
            headers,
            body,
            streaming: self.settings.streaming,
        })
    }

    /// Local compatible servers only: llama.cpp's streaming parser can fail on tool calls its
    /// whole-response parser reads. OpenAI's own API streams reliably.
    fn build_whole(&self, request: &Request) -> Option<Result<HttpCall, LlmError>> {
        (self.flavor == Flavor::Compatible && self.settings.streaming).then(|| {
            let wire =
                ChatWire { settings: Settings { streaming: false, ..self.settings.clone() }, flavor: self.flavor };
            wire.build(request)
        })
    }

    fn classify(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
        classify_http(status, headers, body)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(ChatDecoder::default())
    }

    fn whole(&self, body: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let completion: ChatCompletion = serde_json::from_slice(body)
            .map_err(|error| LlmError::InvalidResponse(format!("chat completion: {error}")))?;
        if let Some(error) = completion.error {
            return Err(classify_in_stream(error));
        }
        let Some(choice) = completion.choices.into_iter().next() else {
            return Err(LlmError::InvalidResponse("chat completion without choices".to_owned()));
        };
        if let Some(reasoning) =
            choice.message.reasoning_content.or(choice.message.reasoning).filter(|text| !text.is_empty())
        {
            out.push(StreamEvent::ThinkingDelta(reasoning));
        }
        if let Some(text) = choice.message.content.filter(|text| !text.is_empty()) {
            out.push(StreamEvent::TextDelta(text));
        }
        let mut accumulator = CallAccumulator::default();
        for delta in choice.message.tool_calls.unwrap_or_default() {
            accumulator.add(delta);
        }
        let calls = accumulator.finish();
        let had_calls = !calls.is_empty();
        out.extend(calls.into_iter().map(StreamEvent::ToolCall));
        if let Some(usage) = usage_reported(completion.usage.as_ref(), completion.timings, completion.id) {
            out.push(StreamEvent::Usage(usage));
        }
        let raw = choice.finish_reason.unwrap_or_else(|| "stop".to_owned());
        out.push(StreamEvent::Finish(finish(raw, had_calls)));
        Ok(())
    }
}

pub(crate) fn finish(raw: String, had_calls: bool) -> Finish {
    let reason = if had_calls { FinishReason::ToolCalls } else { finish_reason_of(&raw) };
    Finish { reason, raw }
}

/// The usage a response reported: the `usage` object, else llama.cpp's `timings` (its own
/// counts, sent without being asked), else none.
fn usage_reported(usage: Option<&ChatUsage>, timings: Option<Timings>, request_id: Option<String>) -> Option<Usage> {
    let mut usage = match (usage, timings) {
        (Some(usage), timings) => {
            let mut counted = usage_of(usage);
            // llama.cpp's usage object has no cache details; its timings do.
            if counted.cached_input_tokens.is_none() {
                counted.cached_input_tokens = timings.and_then(|timings| timings.cache_n);
            }
            counted
        }
        (None, Some(timings)) => usage_of_timings(timings),
        (None, None) => return None,
    };
    usage.request_id = request_id;
    Some(usage)
}

fn usage_of(usage: &ChatUsage) -> Usage {
    let input_tokens = usage.prompt_tokens.unwrap_or(0);
    let output_tokens = usage.completion_tokens.unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: Some(usage.total_tokens.unwrap_or(input_tokens + output_tokens)),
        reasoning_tokens: usage.completion_tokens_details.as_ref().and_then(|details| details.reasoning_tokens),
        cached_input_tokens: usage.prompt_tokens_details.as_ref().and_then(|details| details.cached_tokens),
        ..Usage::default()
    }
}

/// llama.cpp's counts: the prompt is what it evaluated plus what its cache held.
fn usage_of_timings(timings: Timings) -> Usage {
    let cached = timings.cache_n.unwrap_or(0);
    let input_tokens = timings.prompt_n.unwrap_or(0) + cached;
    let output_tokens = timings.predicted_n.unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: Some(input_tokens + output_tokens),
        cached_input_tokens: timings.cache_n,
        ..Usage::default()
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Accumulates tool-call deltas into whole calls (the rule is in the module header).
#[derive(Debug, Default)]
pub(crate) struct CallAccumulator {
    calls: Vec<PartialCall>,
}

impl CallAccumulator {
    pub(crate) fn add(&mut self, delta: ToolCallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let position = match delta.index {
            Some(index) => self.calls.iter().position(|call| call.index == Some(index)),
            None => match &id {
                Some(id) if !self.calls.iter().any(|call| call.id.as_ref() == Some(id)) => None,
                Some(id) => self.calls.iter().position(|call| call.id.as_ref() == Some(id)),
                None => self.calls.len().checked_sub(1),
            },
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push(PartialCall { index: delta.index, ..PartialCall::default() });
            self.calls.len() - 1
        });
        let call = &mut self.calls[position];
        if id.is_some() && call.id.is_none() {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = name;
            }
            match function.arguments {
                Some(Value::String(fragment)) => call.arguments.push_str(&fragment),
                Some(Value::Null) | None => {}
                // A whole arguments object (some servers outside streaming).
                Some(object) => call.arguments = object.to_string(),
            }
        }
    }

    /// The whole calls in index order, ids made up where none came.
    pub(crate) fn finish(&mut self) -> Vec<ToolCallEvent> {
        let mut calls = std::mem::take(&mut self.calls);
        // Stable: calls without an index keep their arrival order.
        calls.sort_by_key(|call| call.index.unwrap_or(u32::MAX));
        calls
            .into_iter()
            .map(|call| ToolCallEvent {
                id: call.id.unwrap_or_else(made_up_call_id),
                name: call.name,
                arguments_json: call.arguments,
                provider_data: Value::Null,
            })
            .collect()
    }
}

#[derive(Debug, Default)]
struct ChatDecoder {
    calls: CallAccumulator,
    finish_reason: Option<String>,
    usage: Option<ChatUsage>,
    timings: Option<Timings>,
    request_id: Option<String>,
}

impl Decoder for ChatDecoder {
    fn event(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        if name == Some("error") {
            // Groq ends a failed stream with `event: error` and an error envelope.
            let envelope: ErrorEnvelope = serde_json::from_str(data).unwrap_or_default();
            return Err(classify_in_stream(envelope_field(envelope, data)));
        }
        let chunk: ChatChunk = serde_json::from_str(data)
            .map_err(|error| LlmError::InvalidResponse(format!("chat completion chunk: {error}: {data}")))?;
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        if self.request_id.is_none() {
            self.request_id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(error) = chunk.error {
            return Err(classify_in_stream(error));
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning).filter(|text| !text.is_empty()) {
                    out.push(StreamEvent::ThinkingDelta(reasoning));
                }
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    out.push(StreamEvent::TextDelta(text));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.calls.add(call);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(raw) = self.finish_reason.take() else {
            return Err(LlmError::Incomplete("the chat completion stream ended without a finish_reason".to_owned()));
        };
        let calls = self.calls.finish();
        let had_calls = !calls.is_empty();
        out.extend(calls.into_iter().map(StreamEvent::ToolCall));
        if let Some(usage) = usage_reported(self.usage.as_ref(), self.timings, self.request_id.take()) {
            out.push(StreamEvent::Usage(usage));
        }
        out.push(StreamEvent::Finish(finish(raw, had_calls)));
        Ok(())
    }
}

fn envelope_field(envelope: ErrorEnvelope, raw: &str) -> ErrorField {
    match envelope.error {
        Some(field) => field,
        None => ErrorField::Object(ErrorObject {
            message: envelope.message.unwrap_or_else(|| raw.to_owned()),
            kind: envelope.kind,
            code: envelope.code,
            param: None,
        }),
    }
}

fn code_text(code: &Option<Value>) -> Option<String> {
    match code {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    }
}

fn info_of(field: ErrorField, http_status: Option<u16>) -> ErrorInfo {
    match field {
        ErrorField::Text(message) => ErrorInfo { http_status, message, ..ErrorInfo::default() },
        ErrorField::Object(object) => ErrorInfo {
            http_status,
            code: code_text(&object.code),
            param: object.param.as_ref().and_then(Value::as_str).map(str::to_owned),
            error_type: object.kind,
            status: None,
            message: object.message,
        },
    }
}

/// The class an OpenAI-style type or code names, whatever the status.
pub(crate) fn class_of_marks(error_type: Option<&str>, code: Option<&str>) -> Option<Class> {
    let marks = [error_type, code];
    let has = |wanted: &[&str]| marks.iter().flatten().any(|mark| wanted.contains(mark));
    if has(&["context_length_exceeded", "exceed_context_size_error", "string_above_max_length"]) {
        Some(Class::Context)
    } else if has(&["insufficient_quota", "billing_hard_limit_reached", "billing_not_active"]) {
        Some(Class::Quota)
    } else if has(&["invalid_api_key", "authentication_error", "permission_error", "invalid_authentication"]) {
        Some(Class::Authentication)
    } else if has(&["model_not_found", "not_found_error", "NotFoundError"]) {
        Some(Class::NotFound)
    } else if has(&["rate_limit_exceeded", "rate_limit_error", "requests", "tokens"]) {
        Some(Class::RateLimit)
    } else if has(&["overloaded_error", "server_overloaded", "engine_overloaded"]) {
        Some(Class::Overloaded)
    } else if has(&["server_error", "api_error", "internal_error"]) {
        Some(Class::Server)
    } else {
        None
    }
}

/// Classifies a non-2xx Chat Completions response: the code decides where it is precise
/// (a 401 still says `invalid_request_error` as its type), the status otherwise.
pub(crate) fn classify_http(status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
    let text = String::from_utf8_lossy(body);
    let field = match serde_json::from_slice::<ErrorEnvelope>(body) {
        Ok(envelope) => envelope_field(envelope, text.trim()),
        Err(_) => ErrorField::Text(text.trim().to_owned()),
    };
    let info = info_of(field, Some(status));
    let by_code = class_of_marks(None, info.code.as_deref())
        .or_else(|| class_of_marks(info.error_type.as_deref(), None).filter(|class| *class != Class::InvalidRequest));
    let class = match (status, by_code) {
        (401 | 403, _) => Class::Authentication,
        (_, Some(class)) => class,
        (400 | 413, None) if mentions_context_overflow(&info.message) => Class::Context,
        (404, None) => Class::NotFound,
        (_, None) => Class::from_status(status),
    };
    let retry_after = retry_after_header(headers).or_else(|| retry_hint_in_message(&info.message));
    class.into_error(info, retry_after)
}

/// Classifies an error that arrived inside a 200 stream: only an explicit type or code
/// names a class (Groq's `invalid_request_error`); anything else is a provider error
/// (OpenRouter's `{"code": 400, "message": "Token limit reached"}`).
pub(crate) fn classify_in_stream(field: ErrorField) -> LlmError {
    let info = info_of(field, None);
    let class = class_of_marks(info.error_type.as_deref(), info.code.as_deref())
        .or_else(|| (info.error_type.as_deref() == Some("invalid_request_error")).then_some(Class::InvalidRequest))
        .unwrap_or(Class::Provider);
    let retry_after = retry_hint_in_message(&info.message);
    class.into_error(info, retry_after)
}

/// What a local server says of itself and its model: llama.cpp's `/props` (`n_ctx`) and then
/// its `/v1/models` (`meta.n_params`, `meta.size`); else Ollama's `/api/show` (`num_ctx` or the
/// model's `context_length`, `general.parameter_count`); else LM Studio's `/api/v0/models`
/// (the loaded or maximum context); else a `/v1/models` that vLLM wrote (`owned_by: "vllm"`,
/// `max_model_len`, the weights' name in `root`). Nothing when the server says none of these —
/// the hosted APIs are never asked (only `openai_compatible` connections probe).
pub(crate) async fn probe_server(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    api_key: Option<&str>,
) -> ServerFacts {
    let root = base_url.trim_end_matches('/').trim_end_matches("/v1");
    let timeout = std::time::Duration::from_secs(5);
    let get = |path: &str| {
        let request = client.get(format!("{root}{path}")).timeout(timeout);
        match api_key.filter(|key| !key.is_empty()) {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    };
    let listed = || async {
        let response = get("/v1/models").send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let list = response.json::<wire::ModelList>().await.ok()?;
        // The model asked for, else the first (a single-model server such as llama.cpp names
        // its model by the file, not by what the request calls it).
        let index = list.data.iter().position(|listed| listed.id == model).unwrap_or(0);
        list.data.into_iter().nth(index)
    };
    if let Ok(response) = get("/props").send().await
        && response.status().is_success()
        && let Ok(props) = response.json::<wire::LlamaProps>().await
    {
        let listed = listed().await;
        let meta = listed.as_ref().and_then(|listed| listed.meta.as_ref());
        return ServerFacts {
            server: Some(LocalServer::LlamaCpp),
            context_window: props.default_generation_settings.and_then(|settings| settings.n_ctx).or(props.n_ctx),
            parameters: meta.and_then(|meta| meta.n_params),
            size_bytes: meta.and_then(|meta| meta.size),
            weights: None,
        };
    }
    if let Ok(response) = client
        .post(format!("{root}/api/show"))
        .json(&serde_json::json!({ "model": model }))
        .timeout(timeout)
        .send()
        .await
        && response.status().is_success()
        && let Ok(show) = response.json::<wire::OllamaShow>().await
    {
        return ServerFacts {
            server: Some(LocalServer::Ollama),
            context_window: ollama_context_window(&show),
            parameters: ollama_parameters(&show),
            size_bytes: None,
            weights: None,
        };
    }
    if let Ok(response) = get("/api/v0/models").send().await
        && response.status().is_success()
        && let Ok(list) = response.json::<wire::LmStudioModels>().await
        && !list.data.is_empty()
    {
        let entry = list
            .data
            .iter()
            .find(|entry| entry.id == model)
            .or_else(|| list.data.iter().find(|entry| entry.state.as_deref() == Some("loaded")))
            .unwrap_or(&list.data[0]);
        return ServerFacts {
            server: Some(LocalServer::LmStudio),
            context_window: entry.loaded_context_length.or(Some(entry.max_context_length)),
            parameters: None,
            size_bytes: None,
            weights: None,
        };
    }
    if let Some(listed) = listed().await
        && listed.owned_by.as_deref() == Some("vllm")
    {
        return ServerFacts {
            server: Some(LocalServer::Vllm),
            context_window: listed.max_model_len,
            parameters: None,
            size_bytes: None,
            weights: listed.root.filter(|root| root != &listed.id),
        };
    }
    ServerFacts::default()
}

/// Ollama's parameter count: `general.parameter_count`, else `details.parameter_size`
/// (`"7.6B"`, `"494.03M"`).
pub(crate) fn ollama_parameters(show: &wire::OllamaShow) -> Option<u64> {
    let counted = show.model_info.as_ref().and_then(|info| info.get("general.parameter_count")?.as_u64());
    counted.or_else(|| {
        let size = show.details.as_ref()?.parameter_size.as_deref()?.trim();
        let (number, scale) = match size.chars().last()? {
            'B' | 'b' => (&size[..size.len() - 1], 1e9),
            'M' | 'm' => (&size[..size.len() - 1], 1e6),
            'K' | 'k' => (&size[..size.len() - 1], 1e3),
            _ => (size, 1.0),
        };
        let value = number.trim().parse::<f64>().ok()? * scale;
        // A count is far below 2^53: the cast is exact enough and never negative here.
        (value.is_finite() && value >= 0.0).then(|| value.round() as u64)
    })
}

/// `num_ctx` from the Modelfile parameters, else the largest `*.context_length`.
pub(crate) fn ollama_context_window(show: &wire::OllamaShow) -> Option<u32> {
    let from_parameters = show.parameters.as_deref().and_then(|text| {
        text.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok()).flatten()
        })
    });
    from_parameters.or_else(|| {
        show.model_info
            .as_ref()?
            .iter()
            .filter(|(key, _)| key.ends_with(".context_length"))
            .find_map(|(_, value)| value.as_u64().and_then(|length| u32::try_from(length).ok()))
    })
}
