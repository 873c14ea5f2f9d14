//! The text protocol for models without native tool calls (seed 003, generalised to every
//! tool): the system message teaches a delimited call format, the reply is scanned for it,
//! and the call is turned into an ordinary [`StreamEvent::ToolCall`], so the loop cannot
//! tell it from a native one.
//!
//! ```text
//! <||TOOL.CALL>{"name": "fetch_url", "arguments": {"url": "https://example.com"}}<TOOL.CALL||>
//! <||TOOL.OUTPUT>{"status": 200, …}<TOOL.OUTPUT||>
//! ```
//!
//! Guarantees of the [`Scanner`]:
//! - delimiters are found wherever the chunks split them (text that could still become a
//!   delimiter is held back, never shown half);
//! - generation stops at the first closing delimiter: the request is dropped, so the server
//!   stops generating, and the block runs once — later text, even another block, is never
//!   scanned, and history is never rescanned;
//! - configured stop strings end generation outside a block but are ignored inside one (a
//!   JSON argument may contain `<|im_end|>`);
//! - a block longer than `max_block_bytes` is abandoned and reported as a call with invalid
//!   arguments, which the loop turns into an error result the model can recover from.
//!
//! After the tool runs, its output goes back as a user message holding an output block, and
//! the model continues from there on the next request.
//!
//! Seed 003's shell blocks are understood too, when the agent has the `bash` tool:
//! `<||SYSTEM.EXEC>ls -la<SYSTEM.EXEC||>` is a call of `bash` with that command — the same
//! confined shell, the same approval — and a `bash` call in history is written back the same way.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_core::{Event, EventBody, EventKind, ToolSpec};

use crate::LlmError;
use crate::canonical::{
    EventStream, Finish, FinishReason, HistoryItem, Request, StreamEvent, ToolCallEvent, made_up_call_id, output_text,
};
use crate::provider::Provider;

/// The protocol's delimiters and limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TextProtocol {
    pub call_open: String,
    pub call_close: String,
    pub output_open: String,
    pub output_close: String,
    /// Seed 003's shell block: its body is a `bash` command. Empty turns shell blocks off.
    pub shell_open: String,
    pub shell_close: String,
    /// A call block longer than this is abandoned.
    pub max_block_bytes: usize,
    /// End-of-turn markers some local servers leak into text; generation ends at one
    /// outside a block.
    pub stop_strings: Vec<String>,
}

impl Default for TextProtocol {
    fn default() -> Self {
        Self {
            call_open: "<||TOOL.CALL>".to_owned(),
            call_close: "<TOOL.CALL||>".to_owned(),
            output_open: "<||TOOL.OUTPUT>".to_owned(),
            output_close: "<TOOL.OUTPUT||>".to_owned(),
            shell_open: "<||SYSTEM.EXEC>".to_owned(),
            shell_close: "<SYSTEM.EXEC||>".to_owned(),
            max_block_bytes: 64 * 1024,
            stop_strings: vec!["<|im_end|>".to_owned(), "<|eot_id|>".to_owned(), "<|endoftext|>".to_owned()],
        }
    }
}

impl TextProtocol {
    /// The part of the system message that teaches the protocol and lists the tools.
    pub fn instructions(&self, tools: &[ToolSpec]) -> String {
        let mut text = format!(
            "## Tools\n\nYou can call tools. To call one, write a single block like this and then stop writing:\n\n\
             {open}{{\"name\": \"TOOL_NAME\", \"arguments\": {{ ... }}}}{close}\n\n\
             The arguments are a JSON object that matches the tool's parameters. Write one call per block and nothing \
             after the closing tag. The system runs the tool and replies with its result as\n\n\
             {out_open}RESULT{out_close}\n\nThen continue. Never write a {out_open} block yourself.\n\nAvailable tools:\n",
            open = self.call_open,
            close = self.call_close,
            out_open = self.output_open,
            out_close = self.output_close,
        );
        for tool in tools {
            text.push_str(&format!("\n- {}: {}\n  parameters: {}\n", tool.name, tool.description, tool.parameters));
        }
        if self.shells_enabled(tools) {
            text.push_str(&format!(
                "\nTo run a shell command you may also write {open}command{close} and stop writing: it runs as the \
                 bash tool, and its result comes back in a {out_open} block.\n",
                open = self.shell_open,
                close = self.shell_close,
                out_open = self.output_open,
            ));
        }
        text
    }

    /// Shell blocks are read only when configured and when the agent has a `bash` tool.
    fn shells_enabled(&self, tools: &[ToolSpec]) -> bool {
        !self.shell_open.is_empty() && !self.shell_close.is_empty() && tools.iter().any(|tool| tool.name == SHELL_TOOL)
    }

    /// The delimiters the scanner looks for with these tools: shell blocks only with `bash`.
    pub fn for_tools(&self, tools: &[ToolSpec]) -> TextProtocol {
        let mut protocol = self.clone();
        if !self.shells_enabled(tools) {
            protocol.shell_open.clear();
            protocol.shell_close.clear();
        }
        protocol
    }

    fn call_block(&self, name: &str, arguments: &Value) -> String {
        // A bash call that is only a command goes back the way seed 003 writes it.
        if name == SHELL_TOOL
            && !self.shell_open.is_empty()
            && let Some(command) = arguments
                .as_object()
                .filter(|fields| fields.len() == 1)
                .and_then(|fields| fields.get("command"))
                .and_then(Value::as_str)
        {
            return format!("{}{}{}", self.shell_open, command, self.shell_close);
        }
        // Written by hand so `name` comes first whatever serde_json's key order is.
        format!("{}{{\"name\":{},\"arguments\":{}}}{}", self.call_open, json!(name), arguments, self.call_close)
    }

    /// Rewrites a request for a model without tools: the protocol joins the system message,
    /// calls become blocks in the assistant's text, results become user messages holding
    /// output blocks.
    pub fn rewrite(&self, request: &Request) -> Request {
        let mut history: Vec<Event> = Vec::new();
        let mut push = |kind: EventKind, text: String| match history.last_mut() {
            Some(last) if last.kind() == kind => {
                last.content.push_str(if kind == EventKind::User { "\n" } else { "" });
                last.content.push_str(&text);
                last.body = text_body(kind, last.content.clone());
            }
            _ => history.push(Event { seq: 0, content: text.clone(), body: text_body(kind, text) }),
        };
        for item in HistoryItem::all(&request.history) {
            match item {
                HistoryItem::User(text) => push(EventKind::User, text),
                HistoryItem::Assistant { text, .. } => push(EventKind::Assistant, text),
                HistoryItem::ToolCall { name, arguments, .. } => {
                    push(EventKind::Assistant, self.call_block(&name, &arguments))
                }
                HistoryItem::ToolResult { output, success, .. } => {
                    let body = if success { output_text(&output) } else { json!({ "error": output }).to_string() };
                    push(EventKind::User, format!("{}{}{}", self.output_open, body, self.output_close));
                }
            }
        }
        let mut system = request.system.clone();
        if !request.tools.is_empty() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&self.instructions(&request.tools));
        }
        Request { system, history, tools: Arc::default(), ..request.clone() }
    }
}

/// What the scanner finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scanned {
    /// Text outside any block, safe to show.
    Text(String),
    /// A closed block's body. Generation should stop.
    Call(String),
    /// A closed shell block's body (seed 003): the command of a `bash` call.
    Shell(String),
    /// A block that outgrew the cap: its first bytes. Generation should stop.
    Oversized(String),
    /// A stop string outside a block. Generation should stop.
    Stop,
}

/// The tool seed 003's shell blocks call.
const SHELL_TOOL: &str = "bash";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    Inside(Block),
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Call,
    Shell,
}

/// Finds call blocks in streamed text (guarantees in the module header).
#[derive(Debug)]
pub struct Scanner {
    protocol: TextProtocol,
    state: State,
    /// Outside: text not yet released (it may begin a delimiter). Inside: the block so far.
    pending: String,
}

impl Scanner {
    pub fn new(protocol: TextProtocol) -> Self {
        Self { protocol, state: State::Outside, pending: String::new() }
    }

    /// Whether a block or stop string ended generation.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    pub fn feed(&mut self, delta: &str) -> Vec<Scanned> {
        let mut out = Vec::new();
        if self.state == State::Done {
            return out;
        }
        self.pending.push_str(delta);
        loop {
            match self.state {
                State::Done => return out,
                State::Outside => {
                    let call = self.pending.find(&self.protocol.call_open).map(|at| (at, Some(Block::Call)));
                    let shell = (!self.protocol.shell_open.is_empty())
                        .then(|| self.pending.find(&self.protocol.shell_open).map(|at| (at, Some(Block::Shell))))
                        .flatten();
                    let open = match (call, shell) {
                        (Some(call), Some(shell)) => Some(if shell.0 < call.0 { shell } else { call }),
                        (found, None) | (None, found) => found,
                    };
                    let stop = self
                        .protocol
                        .stop_strings
                        .iter()
                        .filter(|stop| !stop.is_empty())
                        .filter_map(|stop| self.pending.find(stop.as_str()).map(|at| (at, None)))
                        .min_by_key(|(at, _)| *at);
                    let first = match (open, stop) {
                        (Some(open), Some(stop)) => Some(if stop.0 < open.0 { stop } else { open }),
                        (found, None) | (None, found) => found,
                    };
                    match first {
                        Some((at, Some(block))) => {
                            push_text(&mut out, &self.pending[..at]);
                            let open = match block {
                                Block::Call => self.protocol.call_open.len(),
                                Block::Shell => self.protocol.shell_open.len(),
                            };
                            self.pending.drain(..at + open);
                            self.state = State::Inside(block);
                        }
                        Some((at, None)) => {
                            push_text(&mut out, &self.pending[..at]);
                            out.push(Scanned::Stop);
                            self.finish_scan();
                        }
                        None => {
                            let keep = self.held_back();
                            let release = self.pending.len() - keep;
                            push_text(&mut out, &self.pending[..release]);
                            self.pending.drain(..release);
                            return out;
                        }
                    }
                }
                State::Inside(block) => {
                    let close = match block {
                        Block::Call => &self.protocol.call_close,
                        Block::Shell => &self.protocol.shell_close,
                    };
                    if let Some(at) = self.pending.find(close.as_str()) {
                        let body = self.pending[..at].to_owned();
                        out.push(match block {
                            Block::Call => Scanned::Call(body),
                            Block::Shell => Scanned::Shell(body),
                        });
                        self.finish_scan();
                    } else if self.pending.len() > self.protocol.max_block_bytes {
                        let mut end = 200.min(self.pending.len());
                        while !self.pending.is_char_boundary(end) {
                            end -= 1;
                        }
                        out.push(Scanned::Oversized(self.pending[..end].to_owned()));
                        self.finish_scan();
                    } else {
                        return out;
                    }
                }
            }
        }
    }

    /// The input ended. Held-back text is released; a block still open is given back as the
    /// text it was, unless its body is already a whole call (the model ended its turn where
    /// the closing delimiter belonged: an end-of-turn inside a block does not lose the call).
    pub fn finish(&mut self) -> Vec<Scanned> {
        let mut out = Vec::new();
        match self.state {
            State::Outside => push_text(&mut out, &self.pending),
            // An unclosed shell block may be a command cut short: shown, never run.
            State::Inside(Block::Shell) => {
                push_text(&mut out, &format!("{}{}", self.protocol.shell_open, self.pending));
            }
            State::Inside(Block::Call) => {
                if parse_call(&self.pending).is_some() {
                    out.push(Scanned::Call(self.pending.clone()));
                } else {
                    push_text(&mut out, &format!("{}{}", self.protocol.call_open, self.pending));
                }
            }
            State::Done => {}
        }
        self.finish_scan();
        out
    }

    fn finish_scan(&mut self) {
        self.state = State::Done;
        self.pending.clear();
    }

    /// How many bytes at the end of `pending` could be the start of the open delimiter or a
    /// stop string, and so must wait for more text.
    fn held_back(&self) -> usize {
        let candidates = [&self.protocol.call_open, &self.protocol.shell_open]
            .into_iter()
            .filter(|marker| !marker.is_empty())
            .chain(self.protocol.stop_strings.iter());
        let mut keep = 0;
        for marker in candidates {
            for length in (1..marker.len()).rev() {
                if length <= keep {
                    break;
                }
                let start = self.pending.len().saturating_sub(length);
                if self.pending.len() >= length
                    && self.pending.is_char_boundary(start)
                    && marker.is_char_boundary(length)
                    && marker.as_bytes()[..length] == self.pending.as_bytes()[start..]
                {
                    keep = length;
                    break;
                }
            }
        }
        keep
    }
}

fn push_text(out: &mut Vec<Scanned>, text: &str) {
    if !text.is_empty() {
        out.push(Scanned::Text(text.to_owned()));
    }
}

/// `{"name": …, "arguments": {…}}` → (name, arguments).
fn parse_call(body: &str) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = value.get("arguments").or_else(|| value.get("parameters")).cloned().unwrap_or_else(|| json!({}));
    Some((name, arguments))
}

/// The name in a block that is not valid JSON, so the error the model gets names its tool.
fn name_in_broken_block(body: &str) -> Option<String> {
    let after = &body[body.find("\"name\"")? + 6..];
    let after = after.trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    Some(after[..after.find('"')?].to_owned())
}

/// A scanned block → the call event the loop sees.
pub fn call_event(scanned: &Scanned, protocol: &TextProtocol) -> Option<ToolCallEvent> {
    let (name, arguments_json) = match scanned {
        Scanned::Call(body) => match parse_call(body) {
            Some((name, arguments)) => {
                let arguments_json = match arguments {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                (name, arguments_json)
            }
            // Invalid JSON keeps its text: the loop answers with an invalid-arguments error.
            None => (name_in_broken_block(body).unwrap_or_else(|| "invalid_tool_call".to_owned()), body.clone()),
        },
        Scanned::Shell(command) => (SHELL_TOOL.to_owned(), json!({ "command": command.trim() }).to_string()),
        Scanned::Oversized(head) => (
            name_in_broken_block(head).unwrap_or_else(|| "invalid_tool_call".to_owned()),
            format!("tool call block longer than {} bytes was cut off: {head}…", protocol.max_block_bytes),
        ),
        Scanned::Text(_) | Scanned::Stop => return None,
    };
    Some(ToolCallEvent {
        id: made_up_call_id(),
        name,
        arguments_json,
        provider_data: json!({ "provider": "text_protocol" }),
    })
}

/// Wraps a provider whose model has no native tool calls.
pub struct TextProtocolProvider {
    inner: Arc<dyn Provider>,
    protocol: TextProtocol,
}

impl TextProtocolProvider {
    pub fn new(inner: Arc<dyn Provider>, protocol: TextProtocol) -> Self {
        Self { inner, protocol }
    }
}

struct Scan {
    /// None once generation was stopped: dropping the inner stream ends the request.
    inner: Option<EventStream>,
    scanner: Scanner,
    protocol: TextProtocol,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
}

impl Scan {
    fn take(&mut self, scanned: Vec<Scanned>) -> bool {
        let mut stopped = false;
        for item in scanned {
            match &item {
                Scanned::Text(text) => self.queue.push_back(Ok(StreamEvent::TextDelta(text.clone()))),
                Scanned::Stop => {
                    stopped = true;
                    self.queue.push_back(Ok(StreamEvent::Finish(Finish {
                        reason: FinishReason::Stop,
                        raw: "stop_string".to_owned(),
                    })));
                }
                Scanned::Call(_) | Scanned::Shell(_) | Scanned::Oversized(_) => {
                    stopped = true;
                    if let Some(call) = call_event(&item, &self.protocol) {
                        self.queue.push_back(Ok(StreamEvent::ToolCall(call)));
                    }
                    self.queue.push_back(Ok(StreamEvent::Finish(Finish {
                        reason: FinishReason::ToolCalls,
                        raw: "tool_call_block".to_owned(),
                    })));
                }
            }
        }
        stopped
    }
}

impl Provider for TextProtocolProvider {
    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        let protocol = self.protocol.for_tools(&request.tools);
        let rewritten = protocol.rewrite(&request);
        let scan = Scan {
            inner: Some(self.inner.stream(rewritten, cancel)),
            scanner: Scanner::new(protocol.clone()),
            protocol,
            queue: VecDeque::new(),
        };
        Box::pin(futures::stream::unfold(scan, |mut scan| async move {
            loop {
                if let Some(item) = scan.queue.pop_front() {
                    return Some((item, scan));
                }
                let inner = scan.inner.as_mut()?;
                match inner.next().await {
                    Some(Ok(StreamEvent::TextDelta(delta))) => {
                        let scanned = scan.scanner.feed(&delta);
                        if scan.take(scanned) {
                            scan.inner = None;
                        }
                    }
                    Some(Ok(StreamEvent::Finish(finish))) => {
                        let scanned = scan.scanner.finish();
                        if !scan.take(scanned) {
                            scan.queue.push_back(Ok(StreamEvent::Finish(finish)));
                        }
                        scan.inner = None;
                    }
                    Some(Ok(other)) => scan.queue.push_back(Ok(other)),
                    Some(Err(error)) => {
                        scan.queue.push_back(Err(error));
                        scan.inner = None;
                    }
                    None => scan.inner = None,
                }
            }
        }))
    }

    fn label(&self) -> String {
        format!("{} (text protocol)", self.inner.label())
    }

    fn context_window(&self) -> futures::future::BoxFuture<'_, Option<u32>> {
        self.inner.context_window()
    }

    fn server_facts(&self) -> futures::future::BoxFuture<'_, crate::ServerFacts> {
        self.inner.server_facts()
    }
}

#[cfg(test)]
mod tests;

/// A plain user or assistant message body.
fn text_body(kind: EventKind, text: String) -> EventBody {
    if kind == EventKind::User {
        EventBody::User { text, component: None }
    } else {
        EventBody::Assistant { text, provider: Value::Null }
    }
}
