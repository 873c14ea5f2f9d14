//! The loop's settings (`[agent]` in config.toml): its limits and which small-model rules are on.

/// Limits of the loop; each is a config knob (`[agent]` in config.toml).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The loop guard: a run that has spent this many tokens (prompt and completion, every
    /// request of the run, compaction included) ends with a notice before its next request,
    /// whatever the budgets say. Unset: [`RUN_TOKENS_PER_WINDOW`] times the model's context
    /// window (or 128k tokens when it is unknown). Enforced where requests are metered (the
    /// server), not by the driver.
    pub max_run_tokens: Option<u64>,
    /// The sampling temperature of every request (a turn asked again samples wider); the
    /// provider's configured one when unset. The model profile sets 0 for small local models.
    pub temperature: Option<f32>,
    /// The most of the window a request may use, in tokens (the model profile's context
    /// budget: a small model follows a long context poorly and reads it slowly). Narrows the
    /// window, never widens it; with no window known, it is the window.
    pub context_budget: Option<usize>,
    /// A whole-document replace of the notes or the prompt that keeps almost nothing of the
    /// current text is refused unless the person's message asked to replace or clear it: a
    /// small model reaches for `replace` and writes one sentence over the person's notes.
    pub guard_document_replace: bool,
    /// After a turn whose calls succeeded, when the person's request names more than those
    /// calls did, the next request says which of its steps are still undone: a small model
    /// repeats the first step of "compute, then save" instead of doing the second.
    pub name_undone_steps: bool,
    /// With on-demand loading, each catalogue line says what its tool does (about 25 tokens
    /// a tool); off, the catalogue only names them. The small-model profile turns it off: a
    /// small local server reads the first message's prompt at tens of tokens a second.
    pub catalogue_descriptions: bool,
    /// Every request of a run lists the same tools: a request that withholds tools refuses
    /// their calls instead of leaving them out, and one that asks for the answer ignores calls
    /// instead of sending none. A local server compares each prompt with the one before and
    /// re-reads all after the first difference — the tools come before the history, so a
    /// shorter list costs the whole conversation, and the person's next message pays again.
    pub stable_tool_list: bool,
    /// The system message lists the agent's state keys and its database's tables. They
    /// change as the agent works (a `set_state` adds a key), and a local server re-reads
    /// everything after the first change: the small-model profile leaves them out (the agent
    /// reaches them with `list_state_keys` and `db_schema`; a small model ignored the list).
    pub list_agent_data: bool,
    /// The host loads the skill that best fits each of the person's messages (by its words, as
    /// tools are preselected) into the run's system message, up to this many tokens of skill
    /// text in all: a small model then follows a skill without spending a turn on
    /// `load_skill`, which it rarely calls. 0 turns this off (the standard profile: a capable
    /// model loads what it needs).
    pub preload_skill_tokens: usize,
    /// What the host decides once a run's context holds content from outside (`[agent.untrusted]`).
    pub untrusted: UntrustedConfig,
    /// The most tokens the agent's learned items may add to a request (issue 31); a learning
    /// round refuses a candidate that would not fit beside the live ones.
    pub learned_budget_tokens: usize,
}

/// `[agent.untrusted]`: the rules about content from outside Wright (web pages, search results,
/// browser pages, MCP results) in a run's context.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UntrustedConfig {
    /// While outside content is in the context, a call that changes the agent, can send data out
    /// or sets up later runs waits for the person's approval, with the reason on the card.
    pub ask_after_outside_content: bool,
    /// Results of tools that read outside reach the model between random per-run markers,
    /// after a line saying they are data and that instructions in them are not the person's.
    pub fence_outside_content: bool,
}

impl Default for UntrustedConfig {
    fn default() -> Self {
        Self { ask_after_outside_content: true, fence_outside_content: true }
    }
}

/// How many full context windows a run may spend when `max_run_tokens` is not set: a run that
/// fills its window this many times over is looping, not working.
pub const RUN_TOKENS_PER_WINDOW: u64 = 20;

impl LoopConfig {
    /// The loop guard's limit for a model with `context_window` tokens (see `max_run_tokens`).
    pub fn run_token_limit(&self, context_window: Option<u64>) -> u64 {
        self.max_run_tokens.unwrap_or_else(|| {
            context_window.or(self.context_window.map(|window| window as u64)).unwrap_or(128_000)
                * RUN_TOKENS_PER_WINDOW
        })
    }
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
            temperature: None,
            max_run_tokens: None,
            context_budget: None,
            guard_document_replace: false,
            name_undone_steps: false,
            catalogue_descriptions: true,
            stable_tool_list: false,
            list_agent_data: true,
            preload_skill_tokens: 0,
            untrusted: UntrustedConfig::default(),
            learned_budget_tokens: 500,
        }
    }
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

/// The temperature of a turn asked again because its calls repeated calls that failed: a
/// model decoding greedily (or nearly) writes the same failing call every time it is asked.
pub const RESAMPLE_TEMPERATURE: f32 = 1.0;
