//! One run of the loop, and the two ports it talks through: [`Model`] and [`Transcript`].

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wright_core::{
    AgentId, ApprovedCall, Event, EventBody, EventKind, NewEvent, Notice, PendingKind, ToolLoading, ToolSettings,
    ToolSpec, transcript_line,
};
use wright_tools::ToolRegistry;

use crate::AgentError;
use crate::context::{SystemParts, system_message};
use crate::dispatch::{CallSite, Dispatched, dispatch, run_approved};
use crate::surface::{LOAD_TOOLS, best_first, fitting, fitting_tools, load, meant_tool, preselect, surface};

/// Limits of the loop; each is a config knob (`[agent]` in config.toml).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopConfig {
    /// Model turns with tool calls before the final request goes out with tools disabled.
    pub max_tool_turns: usize,
    /// Largest tool result sent back to the model, in bytes of JSON.
    pub max_output_size: usize,
    /// When the history sent to the model grows past this many characters, older turns are
    /// compacted into a summary. About a quarter of a 128k-token window by default.
    pub compact_above_chars: usize,
    /// How much recent history compaction keeps verbatim, in characters.
    pub keep_recent_chars: usize,
    /// A call identical to one that ran earlier in this run (same tool, same arguments, and
    /// no other call has succeeded since) is not run again: its result repeats the earlier one
    /// and asks for the answer. Small models call a tool again after its result instead of
    /// answering; this ends the loop they would otherwise run to `max_tool_turns`.
    pub refuse_repeated_calls: bool,
    /// The model's context window in tokens when its server does not say (llama.cpp's
    /// `/props` and Ollama's `/api/show` do, and win). Unset: no fitting beyond
    /// `compact_above_chars`.
    pub context_window: Option<usize>,
    /// Tokens kept free for the model's answer when a request is fitted into the window; when
    /// the window is known, also the most one reply may take (`max_tokens`): without it a
    /// small model that falls into repeating itself writes until the window is full — six
    /// thousand tokens, minutes of a local server's time, for one turn.
    pub reserve_output_tokens: usize,
    /// When tools were offered and a reply made no call, calls written as text (bare JSON,
    /// a ```json block, `<tool_call>` tags, the text protocol's blocks) are recovered into
    /// real calls (`wright_llm::recover_calls`).
    pub recover_text_calls: bool,
    /// How many times a run asks again when the model's reply only repeats the last tool
    /// result (small models parrot a result instead of answering or fixing the call); the
    /// repeated reply is not stored. 0 turns this off.
    pub max_echo_retries: usize,
    /// With on-demand loading, how many catalogue tools the person's last message is about
    /// (by its words, `surface::preselect`) are sent whole from the run's first request.
    /// Small models answer in prose rather than call `load_tools`. 0 turns this off.
    pub preload_tools: usize,
    /// After this many turns in a row that call only one tool, that tool is not offered for
    /// the next turn (then it is again): a small model feeds a result back into the same tool
    /// (`double(21)`, `double(42)`, … to the turn limit) instead of answering. 0 turns this off.
    pub max_same_tool_turns: usize,
    /// A reply whose every call repeats a call that failed in this run (same tool, same
    /// arguments) is not stored; the turn is asked again at [`RESAMPLE_TEMPERATURE`] with the
    /// error restated, up to this many times a run. Then the repeat is answered as any other.
    pub resample_failed_repeats: usize,
    /// The first request of a run started by a message that names what some tool does (it
    /// shares a rare word with a tool's name or description, as preselection scores it) must
    /// be answered with a tool call. With a server that turns schemas into a grammar, a small
    /// model then writes a valid call of a tool it was offered, instead of prose or a made-up
    /// tool. Off by default: a capable model decides well by itself, and a message that only
    /// mentions a tool's subject would get a call it did not need.
    pub require_first_call: bool,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            max_tool_turns: 50,
            max_output_size: 1024 * 1024,
            compact_above_chars: 400_000,
            keep_recent_chars: 100_000,
            context_window: None,
            reserve_output_tokens: 2048,
            refuse_repeated_calls: true,
            recover_text_calls: true,
            max_echo_retries: 2,
            preload_tools: 2,
            max_same_tool_turns: 4,
            resample_failed_repeats: 2,
            require_first_call: false,
        }
    }
}

/// What one model turn is asked.
pub struct ModelRequest<'a> {
    pub system: String,
    /// Conversation events in order: user, assistant, tool_call and tool_result only.
    pub history: &'a [Event],
    /// Empty when tools are disabled for this turn.
    pub tools: Arc<[ToolSpec]>,
    /// Overrides the configured sampling temperature for this turn: a turn asked again after
    /// a repeated failing call samples wider ([`RESAMPLE_TEMPERATURE`]).
    pub temperature: Option<f32>,
    /// The most tokens the reply may take; `None` leaves the provider's configured limit.
    pub max_output_tokens: Option<u32>,
    /// The reply must call one of `tools` (see [`LoopConfig::require_first_call`]).
    pub require_tool_call: bool,
}

/// The temperature of a turn asked again because its calls repeated calls that failed: a
/// model decoding greedily (or nearly) writes the same failing call every time it is asked.
pub const RESAMPLE_TEMPERATURE: f32 = 1.0;

/// A tool call as the model made it. Arguments that were not valid JSON keep their raw text,
/// so the model can be told what it sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Result<Value, String>,
    /// Whatever the provider needs sent back with this call (e.g. a thought signature).
    pub data: Value,
}

/// The whole of one model turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReply {
    pub text: String,
    pub tool_calls: Vec<ModelToolCall>,
    /// Whatever the provider needs sent back with the assistant message (e.g. thinking blocks).
    pub data: Value,
}

/// Why a model turn failed after the provider's own retries.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("{kind}: {message}")]
    Failed { kind: String, message: String },
    #[error("cancelled")]
    Cancelled,
}

/// The model, as the loop sees it: one turn, with text streamed to `on_text` as it arrives.
pub trait Model: Send + Sync {
    fn reply<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;

    /// The context window in tokens, when the model's server says it.
    fn context_window(&self) -> BoxFuture<'_, Option<usize>> {
        Box::pin(async { None })
    }
}

/// The conversation, as the loop sees it; the server implements it over the store and the
/// live stream. Errors are messages: the loop can only report them.
pub trait Transcript: Send + Sync {
    /// The prompt, notes, state keys and database summary, read fresh.
    fn system_parts(&self) -> BoxFuture<'_, Result<SystemParts, String>>;
    /// Every stored event, in order.
    fn events(&self) -> BoxFuture<'_, Result<Vec<Event>, String>>;
    /// Stores events in order and returns them numbered.
    fn append(&self, events: Vec<NewEvent>) -> BoxFuture<'_, Result<Vec<Event>, String>>;
    /// Records a call that waits for the person, with what the canvas will render for it.
    fn park<'a>(&'a self, call: &'a ParkedCall) -> BoxFuture<'a, Result<(), String>>;
    /// Calls the person approved that have not run yet (their results are not stored).
    fn approved_calls(&self) -> BoxFuture<'_, Result<Vec<ApprovedCall>, String>>;
    /// Ends the run: stores `closing` and the status `outcome` leaves, together. When the
    /// outcome is [`RunOutcome::Cancelled`] or [`RunOutcome::Failed`], every call still
    /// without a result gets one that says so in the same write. A run that parks when every
    /// call it parked was already answered gets [`Finish::Continue`] and goes on.
    fn finish(&self, outcome: &RunOutcome, closing: Vec<NewEvent>) -> BoxFuture<'_, Result<Finish, String>>;
    /// Assistant text as it streams (not stored; the assistant event is).
    fn text_delta(&self, text: &str);
}

/// A call that waits for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// An answer to give, or an approval to run it.
    pub kind: PendingKind,
    pub arguments: Value,
    /// render_and_wait's compiled component (name, version, compiled_js); null otherwise.
    pub render: Value,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The model answered without calling tools.
    Completed,
    /// A pausing tool waits for the person.
    Parked,
    /// `max_tool_turns` was reached; the model gave a final answer without tools.
    TurnLimit,
    Cancelled,
    /// The model failed in a way its retries did not cure; the message is stored as a notice.
    Failed {
        message: String,
    },
}

/// What ending a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Ended,
    /// Every parked call was answered while the turn ran: the run keeps the conversation and
    /// goes on from the stored events.
    Continue,
}

/// Everything a run needs besides the ports.
pub struct RunContext<'a> {
    pub agent: &'a AgentId,
    pub conversation_id: &'a str,
    pub tools: &'a ToolRegistry,
    pub config: &'a LoopConfig,
    /// The agent's toolsets and how their schemas are sent (read when the run starts).
    pub tool_settings: &'a ToolSettings,
    pub cancel: &'a CancellationToken,
}

/// Characters per token when a request is fitted into a context window: a conservative
/// estimate (English prose is about 4, JSON schemas and code nearer 3), so a request that fits
/// by this count fits for real.
pub const CHARS_PER_TOKEN: usize = 3;

/// What the last request of a run that reached `max_tool_turns` adds to the system message
/// (seed 004's `limit_reached`): without it a model keeps trying to call tools that are gone.
pub fn limit_reached(max_tool_turns: usize) -> String {
    format!(
        "## limit_reached\nThis run has used all of its {max_tool_turns} tool turns, so no tools are available now. \
         Do not try to call a tool. Sum up for the person: what you did, what you found, and what is left to do."
    )
}

/// The calls that ran in this run since the last one that succeeded with other arguments,
/// with their results: what a repeated call is answered from. A call that succeeds clears
/// the earlier ones, because it may have changed what they would return (a write, a click).
#[derive(Default)]
struct RecentCalls {
    calls: Vec<(String, Value, Value, bool)>,
}

impl RecentCalls {
    fn earlier(&self, name: &str, arguments: &Value) -> Option<(&Value, bool)> {
        self.calls
            .iter()
            .find(|(earlier_name, earlier_arguments, _, _)| earlier_name == name && earlier_arguments == arguments)
            .map(|(_, _, output, success)| (output, *success))
    }

    fn record(&mut self, name: &str, arguments: &Value, output: &Value, success: bool) {
        if success {
            self.calls.clear();
        }
        self.calls.push((name.to_owned(), arguments.clone(), output.clone(), success));
    }
}

/// The text of the person's last message in `history`.
fn last_request(history: &[Event]) -> Option<&str> {
    history.iter().rev().find_map(|event| match &event.body {
        EventBody::User { text, .. } => Some(text.as_str()),
        _ => None,
    })
}

/// The person's answer to an earlier call of a pausing tool (`ask_user`, a form) with these
/// exact arguments since their last message, other than `call_id` itself: a small model asks
/// the same question again after the answer came back, and the person would be asked twice.
fn earlier_answer<'a>(history: &'a [Event], call_id: &str, name: &str, arguments: &Value) -> Option<&'a Value> {
    let since_request = history.iter().rposition(|event| event.kind() == EventKind::User).map_or(0, |index| index + 1);
    let recent = &history[since_request..];
    recent.iter().rev().find_map(|event| match &event.body {
        EventBody::ToolCall { id, name: earlier_name, arguments: earlier_arguments, .. }
            if id != call_id && earlier_name == name && earlier_arguments == arguments =>
        {
            recent.iter().find_map(|result| match &result.body {
                EventBody::ToolResult { tool_call_id, output, success: true, .. } if tool_call_id == id => Some(output),
                _ => None,
            })
        }
        _ => None,
    })
}

/// The result of a call that repeats an earlier one: the earlier result, why it is back, and
/// the person's request again — a small model that loops has usually lost track of it, and a
/// request of several steps needs the next call, not an answer.
fn repeated_result(name: &str, earlier: &Value, request: Option<&str>) -> Value {
    let request = match request {
        Some(request) => format!(" The person asked: \"{}\".", request.chars().take(500).collect::<String>()),
        None => String::new(),
    };
    serde_json::json!({
        "repeated_call": true,
        "note": format!(
            "You already called `{name}` with exactly these arguments in this run, so it was not run again; \
             its result is repeated below. Do not call it again.{request} If a step of that is still to do, call the \
             tool for it now; otherwise answer the person now, using this result."
        ),
        "result": earlier,
    })
}

/// What a request for the answer adds to the system message (it offers no tools): after an
/// empty reply, or a reply stuck on a step that is done.
pub const ANSWER_NOTE: &str = "## Answer now\nNo tools in this turn: the results of your calls are above. Answer \
the person now in plain words: what you did, what came of it, and anything left to do.";

/// What the request after a reply that only repeated failed calls adds to the system message.
fn failed_again_note(failed: &[(&str, &Value)]) -> String {
    let lines: Vec<String> = failed
        .iter()
        .map(|(name, output)| {
            let error = output.get("error").and_then(Value::as_str).map_or_else(|| output.to_string(), str::to_owned);
            format!("- `{name}` failed with: {error}")
        })
        .collect();
    format!(
        "## Your last reply\nYour last reply made again, with the same arguments, calls that already failed in this \
         run:\n{}\nDo not send them again as they were. Fix the arguments as the error says, use another tool, or \
         answer the person.",
        lines.join("\n")
    )
}

/// What a request that withholds the tools of repeated calls adds to the system message.
fn withheld_note(withheld: &BTreeSet<String>) -> String {
    let names: Vec<String> = withheld.iter().map(|name| format!("`{name}`")).collect();
    format!(
        "## Repeated calls\nYou called {} again and again; the results are above, so it is not offered in this \
         turn. Do the next step of the person's request with another tool, or answer the person in plain words.",
        names.join(", ")
    )
}

/// What the request after a parroted result adds to the system message.
pub const ECHO_NOTE: &str = "## Your last reply\nYour last reply only repeated the tool result. Do not repeat results. \
Either call a tool again with correct arguments, or answer the person in plain words.";

/// Whether `text` only repeats the output of the last tool result in `history`: its first
/// JSON value equals that output, or some of its fields with their values.
fn echoes_last_result(text: &str, history: &[Event]) -> bool {
    let Some(EventBody::ToolResult { output, .. }) = history.last().map(|event| &event.body) else { return false };
    let text = text.trim_start();
    if !text.starts_with('{') {
        return false;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match (values.next(), output) {
        (Some(Ok(value)), _) if &value == output => true,
        // Part of the result: a small model drops the note of a wrapped result and repeats
        // the rest (`{"repeated_call": true, "result": …}`).
        (Some(Ok(Value::Object(echoed))), Value::Object(result)) => {
            !echoed.is_empty() && echoed.iter().all(|(key, value)| result.get(key) == Some(value))
        }
        _ => false,
    }
}

/// The calls written as text in a reply that made none, if the run recovers them.
fn recovered_calls(text: &str, tools: &[ToolSpec]) -> Option<(String, Vec<ModelToolCall>)> {
    let offered = |name: &str| tools.iter().any(|tool| tool.name == name);
    let recovered = wright_llm::recover_calls(text, &wright_llm::TextProtocol::default(), &offered)?;
    let calls = recovered
        .calls
        .into_iter()
        .map(|call| ModelToolCall {
            arguments: serde_json::from_str::<Value>(&call.arguments_json).map_err(|_| call.arguments_json.clone()),
            id: call.id,
            name: call.name,
            data: call.provider_data,
        })
        .collect();
    Some((recovered.text, calls))
}

/// Shortest and longest run of text that counts as a repeated unit, in bytes.
const REPEAT_UNIT: std::ops::RangeInclusive<usize> = 16..=400;
/// How many times in a row a unit must appear at the end of a reply to stop it.
const REPEATS_TO_STOP: usize = 4;

/// The length of the unit `text` ends with [`REPEATS_TO_STOP`] copies of, if it does: a small
/// model decoding greedily writes the same call or sentence until its output limit (2,048
/// tokens, 80 s of a local server's time, for nothing).
fn repeating_tail(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    REPEAT_UNIT.take_while(|unit| unit * REPEATS_TO_STOP <= bytes.len()).find(|&unit| {
        let end = bytes.len();
        let last = &bytes[end - unit..];
        // A rule of `=` or a row of dashes is layout, not a model stuck in a loop.
        let distinct = last.iter().collect::<BTreeSet<_>>().len();
        distinct >= 6 && (2..=REPEATS_TO_STOP).all(|copy| &bytes[end - copy * unit..end - (copy - 1) * unit] == last)
    })
}

/// `text` with the repeats at its end cut down to one copy.
fn without_repeats(text: &str) -> String {
    let Some(unit) = repeating_tail(text) else { return text.to_owned() };
    let bytes = text.as_bytes();
    let last = &bytes[bytes.len() - unit..];
    // Back over every copy, then keep one.
    let mut start = bytes.len() - unit;
    while start >= unit && &bytes[start - unit..start] == last {
        start -= unit;
    }
    let mut end = start + unit;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    text[..end].trim_end().to_owned()
}

/// `output` with a note that the tool the model named does not exist and `ran` ran instead.
fn with_name_note(output: Value, called: &str, ran: &str) -> Value {
    let note = format!(
        "There is no tool `{called}`; `{ran}` ran instead, the one tool named like it that takes these \
         arguments. Call tools by their exact names."
    );
    match output {
        Value::Object(mut fields) => {
            fields.insert("name_note".to_owned(), Value::String(note));
            Value::Object(fields)
        }
        other => serde_json::json!({ "result": other, "name_note": note }),
    }
}

fn stored(error: String) -> AgentError {
    AgentError::Transcript(error)
}

/// What the model sees of the conversation: the latest compaction summary, the events after
/// it that a model request carries, and their size in characters (what compaction watches).
/// Built from the stored events once per run and after each compaction, then kept current
/// with what the run appends, so a turn costs the same on a long conversation as on a short one.
#[derive(Default)]
struct ModelView {
    summary: Option<String>,
    history: Vec<Event>,
    chars: usize,
}

impl ModelView {
    fn of(events: Vec<Event>) -> Self {
        let compaction = events.iter().rev().find_map(|event| match &event.body {
            EventBody::Notice(Notice::Compaction { summary, through_seq }) => Some((summary.clone(), *through_seq)),
            _ => None,
        });
        let (summary, after) = match compaction {
            Some((summary, through_seq)) => (Some(summary), through_seq),
            None => (None, 0),
        };
        let mut view = Self { summary, ..Self::default() };
        view.extend(events.into_iter().filter(|event| event.seq > after));
        view
    }

    /// Adds newly stored events; only the kinds a model request carries are kept.
    fn extend(&mut self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            if event.kind() != EventKind::Notice {
                self.chars += size(&event);
                self.history.push(event);
            }
        }
    }
}

fn size(event: &Event) -> usize {
    let body = match &event.body {
        EventBody::User { text, .. } | EventBody::Assistant { text, .. } => text.len(),
        EventBody::ToolCall { arguments, .. } => arguments.to_string().len(),
        EventBody::ToolResult { output, .. } => output.to_string().len(),
        EventBody::Notice(_) => 0,
    };
    event.content.len() + body
}

/// Runs the loop until the model is done, a call parks, the turn limit is reached, the model
/// fails, or the run is cancelled; each of those ends the run through [`Transcript::finish`].
/// An error means the transcript could not be written: the caller must end the run itself.
pub async fn run(
    model: &dyn Model,
    transcript: &dyn Transcript,
    context: RunContext<'_>,
) -> Result<RunOutcome, AgentError> {
    let site = CallSite {
        tools: context.tools,
        agent: context.agent,
        conversation_id: context.conversation_id,
        max_output_size: context.config.max_output_size,
        cancel: context.cancel,
    };
    let on_text = |text: &str| transcript.text_delta(text);
    let mut tool_turns = 0;
    let mut recent_calls = RecentCalls::default();
    // The tools `load_tools` loaded in this run; their schemas are sent until it ends.
    let mut loaded = BTreeSet::new();
    // The context window, in characters of request the model can take with room for its
    // answer; `None` when neither the server nor the config says.
    let window = model.context_window().await.or(context.config.context_window);
    let budget_chars = window
        .map(|tokens| tokens.saturating_sub(context.config.reserve_output_tokens).saturating_mul(CHARS_PER_TOKEN));
    let max_output_tokens = window.map(|_| u32::try_from(context.config.reserve_output_tokens).unwrap_or(u32::MAX));
    // The settings this run uses: switched to on-demand loading when every schema would not fit.
    let mut tool_settings = context.tool_settings.clone();
    let mut echo_retries = 0;
    // Set when the last reply parroted a result and was dropped: the next request says so.
    let mut echo_note = false;
    // Tools whose every call in the last turn repeated an earlier call that worked: the next
    // request does not offer them (a small model calls `fetch_url` five times rather than take
    // the next step; a server's tool grammar then makes it pick another tool or answer).
    let mut withheld: BTreeSet<String> = BTreeSet::new();
    // Set when a reply after tool calls was empty, or stuck on a step that is done: the next
    // request asks for an answer, with no tools. Once per run.
    let mut asked_for_answer = false;
    let mut answer_now = false;
    // The tool every call of the last turns named, and in how many turns in a row.
    let mut same_tool: Option<(String, usize)> = None;
    let mut resamples = 0;
    // Replies that only called withheld tools.
    let mut stuck_turns = 0;
    // Set when the last reply only repeated failed calls and was dropped: what the next
    // request adds to the system message, and that it samples wider.
    let mut resample_note: Option<String> = None;
    // Read once; the run keeps the view current with what it appends (the run owns the
    // conversation, so only answers to its own parked calls are written by others, and it
    // reloads after those).
    let mut view = ModelView::of(transcript.events().await.map_err(stored)?);
    // The system message is read at the start of a run and again when the conversation is
    // compacted (seed 002: a mid-conversation edit of the prompt reaches the context then);
    // the agent reads the stored version with read_system_prompt.
    let mut system = system_for(transcript, &view).await?;
    run_approved_calls(&site, transcript, &mut view).await?;
    // Whether the first request must be answered with a call: a run started by the person's
    // message, about what a tool does.
    let mut require_call = false;
    if let Some(request) = last_request(&view.history) {
        let all_tools = context.tools.specs(context.agent).await.map_err(|error| stored(error.to_string()))?;
        loaded.extend(preselect(&all_tools, &tool_settings, request, context.config.preload_tools));
        let started_by_message = view.history.last().is_some_and(|event| event.kind() == EventKind::User);
        require_call = context.config.require_first_call
            && started_by_message
            && !fitting(&all_tools, &tool_settings, request, 1, |_| true).is_empty();
    }
    loop {
        if context.cancel.is_cancelled() {
            return end(transcript, RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await;
        }
        let turns_left = tool_turns < context.config.max_tool_turns;
        let tools_enabled = turns_left && !answer_now;
        let all_tools: Arc<[ToolSpec]> =
            context.tools.specs(context.agent).await.map_err(|error| stored(error.to_string()))?;
        let mut fitted = fit(&all_tools, &tool_settings, &loaded, (tools_enabled, turns_left), context.config);
        // Fit the request before sending it rather than learn the window from a 400: first
        // fewer schemas (the catalogue instead of every schema), then compaction.
        let over = |fitted: &Fitted, system: &str, view: &ModelView| {
            budget_chars.is_some_and(|budget| system.len() + fitted.chars + view.chars > budget)
        };
        if over(&fitted, &system, &view) && tool_settings.loading == ToolLoading::All {
            tool_settings.loading = ToolLoading::OnDemand;
            fitted = fit(&all_tools, &tool_settings, &loaded, (tools_enabled, turns_left), context.config);
        }
        let keep_recent = match budget_chars {
            // Keep at most a third of the window verbatim, so the summary and the rest fit.
            Some(budget) if over(&fitted, &system, &view) => context.config.keep_recent_chars.min(budget / 3),
            _ => context.config.keep_recent_chars,
        };
        if (view.chars > context.config.compact_above_chars || over(&fitted, &system, &view))
            && compact(model, transcript, &view, keep_recent, context.cancel).await?
        {
            view = ModelView::of(transcript.events().await.map_err(stored)?);
            system = system_for(transcript, &view).await?;
        }
        let mut system_now = if fitted.system_addition.is_empty() {
            system.clone()
        } else {
            format!("{system}\n\n{}", fitted.system_addition)
        };
        if std::mem::take(&mut echo_note) {
            system_now = format!("{system_now}\n\n{ECHO_NOTE}");
        }
        if turns_left && std::mem::take(&mut answer_now) {
            system_now = format!("{system_now}\n\n{ANSWER_NOTE}");
        }
        let resampling = resample_note.is_some();
        if let Some(note) = resample_note.take() {
            system_now = format!("{system_now}\n\n{note}");
        }
        let withheld_now = std::mem::take(&mut withheld);
        if tools_enabled && !withheld_now.is_empty() {
            fitted.offered = fitted.offered.iter().filter(|spec| !withheld_now.contains(&spec.name)).cloned().collect();
            system_now = format!("{system_now}\n\n{}", withheld_note(&withheld_now));
        }
        let tools = fitted.offered;
        let offered = Arc::clone(&tools);
        let temperature = resampling.then_some(RESAMPLE_TEMPERATURE);
        let require_tool_call = std::mem::take(&mut require_call) && tools_enabled;
        let tools = match last_request(&view.history) {
            Some(request) if require_tool_call => best_first(&tools, &tool_settings, request),
            _ => tools,
        };
        let request = ModelRequest {
            system: system_now,
            history: &view.history,
            tools,
            temperature,
            max_output_tokens,
            require_tool_call,
        };
        // The reply is watched as it streams: a model that has fallen into repeating itself is
        // stopped (its own token, under the run's) and keeps what it wrote up to the repeats.
        let request_cancel = context.cancel.child_token();
        let streamed = std::sync::Mutex::new(String::new());
        let watch = |text: &str| {
            on_text(text);
            let mut so_far = streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            so_far.push_str(text);
            if repeating_tail(&so_far).is_some() {
                request_cancel.cancel();
            }
        };
        let outcome = model.reply(request, &watch, &request_cancel).await;
        let so_far = std::mem::take(&mut *streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        let stopped_repeating = request_cancel.is_cancelled() && !context.cancel.is_cancelled();
        let reply = match outcome {
            Ok(mut reply) if stopped_repeating => {
                reply.text = without_repeats(&so_far);
                reply
            }
            Ok(reply) => reply,
            Err(ModelError::Cancelled) if stopped_repeating => {
                ModelReply { text: without_repeats(&so_far), tool_calls: Vec::new(), data: Value::Null }
            }
            Err(ModelError::Cancelled) => {
                return end(transcript, RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await;
            }
            Err(error) => {
                let message = AgentError::from(error).to_string();
                let notice = NewEvent::notice(Notice::Error { message: message.clone() });
                return end(transcript, RunOutcome::Failed { message }, vec![notice]).await;
            }
        };
        let mut reply_text = reply.text;
        let mut calls = if tools_enabled { reply.tool_calls } else { Vec::new() };
        if calls.is_empty()
            && tools_enabled
            && context.config.recover_text_calls
            && let Some((text, recovered)) = recovered_calls(&reply_text, &offered)
        {
            reply_text = text;
            calls = recovered;
        }
        if calls.is_empty()
            && tools_enabled
            && echo_retries < context.config.max_echo_retries
            && echoes_last_result(&reply_text, &view.history)
        {
            echo_retries += 1;
            echo_note = true;
            continue;
        }
        // A reply that calls a tool and also parrots the last result: the parroted text is
        // not an answer, and stored it would be read back as one.
        if !calls.is_empty() && echoes_last_result(&reply_text, &view.history) {
            reply_text.clear();
        }
        // Invented names whose meaning is unambiguous are called by their real name, stored
        // so (the model reads its own call back correctly) and said in the result.
        let mut invented: Vec<(String, String)> = Vec::new();
        for call in &mut calls {
            if let Ok(arguments) = &call.arguments
                && let Some(meant) = meant_tool(&call.name, arguments, &all_tools, &tool_settings)
            {
                invented.push((call.id.clone(), std::mem::replace(&mut call.name, meant)));
            }
        }
        let failed_again: Vec<(&str, &Value)> = calls
            .iter()
            .filter_map(|call| {
                let arguments = call.arguments.as_ref().ok()?;
                match recent_calls.earlier(&call.name, arguments) {
                    Some((output, false)) => Some((call.name.as_str(), output)),
                    _ => None,
                }
            })
            .collect();
        if context.config.refuse_repeated_calls
            && !calls.is_empty()
            && failed_again.len() == calls.len()
            && resamples < context.config.resample_failed_repeats
        {
            resamples += 1;
            resample_note = Some(failed_again_note(&failed_again));
            continue;
        }
        // Only calls of tools this request withheld (a server without a grammar lets a model
        // call what it was not offered): the first time they are refused, so the model can
        // still take another step; the second time the model is stuck on a step it has done,
        // or on one tool — not stored, and asked once for the answer, without tools.
        let stuck = !calls.is_empty() && calls.iter().all(|call| withheld_now.contains(&call.name));
        if stuck && tools_enabled {
            stuck_turns += 1;
            if stuck_turns > 1 && !asked_for_answer {
                asked_for_answer = true;
                answer_now = true;
                continue;
            }
        }
        let after_results = matches!(view.history.last().map(|event| &event.body), Some(EventBody::ToolResult { .. }));
        if calls.is_empty() && tools_enabled && reply_text.trim().is_empty() && after_results && !asked_for_answer {
            // An empty reply after tool calls leaves the person without an answer: asked once
            // more, without tools; the empty reply is not stored.
            asked_for_answer = true;
            answer_now = true;
            continue;
        }
        let assistant =
            NewEvent::new(reply_text.clone(), EventBody::Assistant { text: reply_text, provider: reply.data });
        if calls.is_empty() {
            // The answer and the status it leaves are one write.
            if !turns_left {
                let max_tool_turns = context.config.max_tool_turns;
                let notice = NewEvent::notice(Notice::TurnLimit { max_tool_turns });
                return end(transcript, RunOutcome::TurnLimit, vec![assistant, notice]).await;
            }
            return end(transcript, RunOutcome::Completed, vec![assistant]).await;
        }
        let mut new_events = vec![assistant];
        for call in &calls {
            let arguments = match &call.arguments {
                Ok(arguments) => arguments.clone(),
                Err(raw) => Value::String(raw.clone()),
            };
            let content = format!("{}({})", call.name, transcript_line(&arguments));
            new_events.push(NewEvent::new(
                content,
                EventBody::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments,
                    provider: call.data.clone(),
                },
            ));
        }
        view.extend(transcript.append(new_events).await.map_err(stored)?);
        let mut parked = false;
        // The turn's last result is held back when the turn parks, to be stored with the
        // status change.
        let mut last_result = None;
        // The tools of this turn's calls that were refused as repeats of calls that worked,
        // and whether every call was one.
        let mut repeated: BTreeSet<String> = BTreeSet::new();
        let mut only_repeats = true;
        for (index, call) in calls.iter().enumerate() {
            if context.cancel.is_cancelled() {
                // The calls not run yet get their "cancelled" results in the closing write.
                return end(transcript, RunOutcome::Cancelled, vec![NewEvent::notice(Notice::Cancelled)]).await;
            }
            let on_demand = tool_settings.loading == ToolLoading::OnDemand;
            let switched_off = all_tools
                .iter()
                .find(|spec| spec.name == call.name)
                .and_then(|spec| spec.toolset.filter(|toolset| !tool_settings.enables(Some(*toolset))));
            let answered = match (&call.arguments, switched_off) {
                (Ok(arguments), None) if on_demand && call.name == LOAD_TOOLS => {
                    let (output, success) = load(arguments, &all_tools, &tool_settings, &mut loaded);
                    Some(Dispatched::Finished { output, success })
                }
                (_, Some(toolset)) => Some(Dispatched::Finished {
                    output: serde_json::json!({
                        "error": format!("`{}` is in the toolset `{toolset}`, which is switched off for this agent", call.name),
                        "category": "denied",
                    }),
                    success: false,
                }),
                _ if withheld_now.contains(&call.name) => Some(Dispatched::Finished {
                    output: serde_json::json!({
                        "error": format!(
                            "`{}` is not offered in this turn: its results are above. Do the next step of the \
                             person's request with another tool, or answer the person.",
                            call.name
                        ),
                        "category": "withheld",
                    }),
                    success: false,
                }),
                _ => None,
            };
            let answered_here = answered.is_some();
            let repeat = answered.or_else(|| match &call.arguments {
                Ok(arguments) if context.config.refuse_repeated_calls => {
                    let request = last_request(&view.history);
                    if context.tools.pauses(&call.name) {
                        earlier_answer(&view.history, &call.id, &call.name, arguments).map(|output| {
                            Dispatched::Finished { output: repeated_result(&call.name, output, request), success: true }
                        })
                    } else {
                        recent_calls.earlier(&call.name, arguments).map(|(output, success)| Dispatched::Finished {
                            output: repeated_result(&call.name, output, request),
                            success,
                        })
                    }
                }
                _ => None,
            });
            // A tool called before it was loaded (small models call from the catalogue, and
            // lenient servers let them): it is loaded now, and a call that failed its schema
            // gets the schema in its result, so the next try can match it.
            let unloaded = (on_demand && !offered.iter().any(|spec| spec.name == call.name))
                .then(|| all_tools.iter().find(|spec| spec.name == call.name && tool_settings.enables(spec.toolset)))
                .flatten();
            // Only a repeat of a call that worked is withheld: one that failed needs fixing,
            // with the tool still offered.
            match &repeat {
                Some(Dispatched::Finished { success: true, .. }) if !answered_here => {
                    repeated.insert(call.name.clone());
                }
                _ => only_repeats = false,
            }
            let dispatched = match repeat {
                Some(repeat) => repeat,
                None => {
                    let mut dispatched = dispatch(&site, call).await;
                    if let Some(spec) = unloaded {
                        loaded.insert(spec.name.clone());
                        if let Dispatched::Finished { output, success: false } = &mut dispatched
                            && output["category"] == "invalid_arguments"
                        {
                            output["parameters"] = spec.parameters.clone();
                            output["note"] = serde_json::json!(format!(
                                "`{}` was not loaded; its full description is loaded now and its parameters are above. \
                                 Call it again with arguments that match them.",
                                spec.name
                            ));
                        }
                    }
                    // A name the model made up: the closest names may all be wrong (a small
                    // model's `save_favourite_colour` is `set_state`), so it also gets every
                    // tool it has — names only, a few tokens each.
                    if let Dispatched::Finished { output, success: false } = &mut dispatched
                        && output["category"] == "unknown_tool"
                    {
                        let names: Vec<&str> = all_tools
                            .iter()
                            .filter(|spec| tool_settings.enables(spec.toolset))
                            .map(|spec| spec.name.as_str())
                            .collect();
                        output["available"] = serde_json::json!(names);
                        if let Some(request) = last_request(&view.history) {
                            let fitting = fitting_tools(&all_tools, &tool_settings, request, 3);
                            if fitting.as_array().is_some_and(|fitting| !fitting.is_empty()) {
                                output["for_the_request"] = fitting;
                                output["note"] = serde_json::json!(
                                    "Tools that fit the person's request are in `for_the_request`; call one of them \
                                     (or another tool of `available`) by its exact name."
                                );
                            }
                        }
                    }
                    if let (Dispatched::Finished { output, success }, Ok(arguments)) = (&dispatched, &call.arguments) {
                        recent_calls.record(&call.name, arguments, output, *success);
                    }
                    dispatched
                }
            };
            match dispatched {
                Dispatched::Finished { mut output, success } => {
                    if let Some((_, called)) = invented.iter().find(|(id, _)| *id == call.id) {
                        output = with_name_note(output, called, &call.name);
                    }
                    let result = NewEvent::new(
                        transcript_line(&output),
                        EventBody::ToolResult {
                            tool_call_id: call.id.clone(),
                            name: call.name.clone(),
                            output,
                            success,
                        },
                    );
                    if index + 1 == calls.len() && parked {
                        last_result = Some(result);
                    } else {
                        view.extend(transcript.append(vec![result]).await.map_err(stored)?);
                    }
                }
                Dispatched::Park { arguments, render, kind } => {
                    let parked_call = ParkedCall {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        kind,
                        arguments,
                        render,
                    };
                    transcript.park(&parked_call).await.map_err(stored)?;
                    parked = true;
                }
            }
        }
        tool_turns += 1;
        if only_repeats {
            withheld = repeated;
        }
        let first = &calls[0].name;
        same_tool = match same_tool.take() {
            _ if calls.iter().any(|call| call.name != *first) => None,
            Some((name, turns)) if name == *first => Some((name, turns + 1)),
            _ => Some((first.clone(), 1)),
        };
        if let Some((name, turns)) = &same_tool
            && context.config.max_same_tool_turns > 0
            && *turns >= context.config.max_same_tool_turns
        {
            withheld.insert(name.clone());
            same_tool = None;
        }
        if context.cancel.is_cancelled() {
            let mut closing: Vec<NewEvent> = last_result.into_iter().collect();
            closing.push(NewEvent::notice(Notice::Cancelled));
            return end(transcript, RunOutcome::Cancelled, closing).await;
        }
        if parked {
            match transcript.finish(&RunOutcome::Parked, last_result.into_iter().collect()).await.map_err(stored)? {
                Finish::Ended => return Ok(RunOutcome::Parked),
                // Answered during the turn: the answers were stored by another writer.
                Finish::Continue => {
                    view = ModelView::of(transcript.events().await.map_err(stored)?);
                    run_approved_calls(&site, transcript, &mut view).await?;
                }
            }
        }
    }
}

/// Runs the calls the person approved since the run last stopped, storing each result, so
/// the model sees them answered. A cancel stops here; the run's end closes what is left.
async fn run_approved_calls(
    site: &CallSite<'_>,
    transcript: &dyn Transcript,
    view: &mut ModelView,
) -> Result<(), AgentError> {
    for approved in transcript.approved_calls().await.map_err(stored)? {
        if site.cancel.is_cancelled() {
            return Ok(());
        }
        // The stored call keeps the model's arguments (events are append-only): when the
        // person edited them, the result says what really ran, for the model and the canvas.
        let edited = view.history.iter().any(|event| {
            matches!(&event.body, EventBody::ToolCall { id, arguments, .. }
                if *id == approved.tool_call_id && *arguments != approved.arguments)
        });
        let ran_with = edited.then(|| approved.arguments.clone());
        let Dispatched::Finished { mut output, success } =
            run_approved(site, &approved.tool_call_id, &approved.tool_name, approved.arguments).await
        else {
            unreachable!("an approved call runs; it never parks")
        };
        if let Some(arguments) = ran_with {
            if !output.is_object() {
                output = serde_json::json!({ "result": output });
            }
            output["arguments_edited_by_person"] = arguments;
        }
        let result = NewEvent::new(
            transcript_line(&output),
            EventBody::ToolResult { tool_call_id: approved.tool_call_id, name: approved.tool_name, output, success },
        );
        view.extend(transcript.append(vec![result]).await.map_err(stored)?);
    }
    Ok(())
}

/// The tool part of one request: the specs, what the system message says besides (the
/// catalogue, or `limit_reached`), and their size in characters.
struct Fitted {
    offered: Arc<[ToolSpec]>,
    system_addition: String,
    chars: usize,
}

fn fit(
    all_tools: &[ToolSpec],
    settings: &ToolSettings,
    loaded: &BTreeSet<String>,
    (tools_enabled, turns_left): (bool, bool),
    config: &LoopConfig,
) -> Fitted {
    if !tools_enabled {
        // Without tools because the turns are used up, or for an answer asked for (said
        // by the loop).
        let system_addition = if turns_left { String::new() } else { limit_reached(config.max_tool_turns) };
        return Fitted { offered: Arc::default(), chars: system_addition.len(), system_addition };
    }
    let surface = surface(all_tools, settings, loaded);
    let chars = surface.catalogue.len()
        + surface
            .offered
            .iter()
            .map(|spec| spec.name.len() + spec.description.len() + spec.parameters.to_string().len())
            .sum::<usize>();
    Fitted { offered: surface.offered, system_addition: surface.catalogue, chars }
}

/// Ends the run with `outcome` (anything but parking, which may continue).
async fn end(
    transcript: &dyn Transcript,
    outcome: RunOutcome,
    closing: Vec<NewEvent>,
) -> Result<RunOutcome, AgentError> {
    transcript.finish(&outcome, closing).await.map_err(stored)?;
    Ok(outcome)
}

/// The system message, read fresh from the store, with the view's compaction summary.
async fn system_for(transcript: &dyn Transcript, view: &ModelView) -> Result<String, AgentError> {
    let mut parts = transcript.system_parts().await.map_err(stored)?;
    parts.earlier_summary = view.summary.clone();
    Ok(system_message(&parts))
}

/// Summarises the older part of the history and stores the summary as a compaction notice;
/// the caller rebuilds its view from the stored events. Returns false when there is no safe
/// place to cut (a cut only ever falls just before a user message, so a tool call is never
/// separated from its result) or the summary was cancelled.
async fn compact(
    model: &dyn Model,
    transcript: &dyn Transcript,
    view: &ModelView,
    keep_recent_chars: usize,
    cancel: &CancellationToken,
) -> Result<bool, AgentError> {
    let history = &view.history;
    let mut kept = 0;
    let mut cut = None;
    for (index, event) in history.iter().enumerate().rev() {
        kept += size(event);
        if event.kind() == EventKind::User && index > 0 {
            cut = Some(index);
            if kept >= keep_recent_chars {
                break;
            }
        }
    }
    let Some(cut) = cut else { return Ok(false) };
    let mut older = history[..cut].to_vec();
    let instruction = match &view.summary {
        Some(summary) => format!(
            "Here is the summary of even earlier turns:\n{summary}\n\nWrite one summary of everything above, for yourself, \
             to continue this conversation later: the user's goals, decisions, facts learned, open tasks and the state of the work. \
             Be complete but brief."
        ),
        None => "Write a summary of the conversation above, for yourself, to continue it later: the user's goals, decisions, \
                 facts learned, open tasks and the state of the work. Be complete but brief."
            .to_owned(),
    };
    older.push(Event { seq: 0, content: String::new(), body: EventBody::User { text: instruction, component: None } });
    let request = ModelRequest {
        system: "You summarise conversations between a person and their agent, faithfully and briefly.".to_owned(),
        history: &older,
        tools: Arc::default(),
        temperature: None,
        max_output_tokens: None,
        require_tool_call: false,
    };
    let quiet = |_: &str| {};
    let reply = match model.reply(request, &quiet, cancel).await {
        Ok(reply) => reply,
        Err(ModelError::Cancelled) => return Ok(false),
        Err(error) => return Err(error.into()),
    };
    let through_seq = history[cut - 1].seq;
    transcript
        .append(vec![NewEvent::notice(Notice::Compaction { summary: reply.text, through_seq })])
        .await
        .map_err(stored)?;
    Ok(true)
}

#[cfg(test)]
mod tests;
