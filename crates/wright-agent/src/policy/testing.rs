//! A scene for the rules' tests: a transcript, the run's facts and the settings, from which
//! each phase's view is built — transcript in, decision out.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wright_core::{Event, EventBody, ToolOutcome, ToolPolicy, ToolSettings, ToolSpec};

use super::{CallView, EndView, Reply, ReplyView, ResultView, RunFacts, RunView, StartView, TurnView};
use crate::config::LoopConfig;
use crate::ports::ModelToolCall;

pub(crate) struct Scene {
    pub(crate) history: Vec<Event>,
    pub(crate) config: LoopConfig,
    pub(crate) settings: ToolSettings,
    pub(crate) all_tools: Vec<ToolSpec>,
    pub(crate) facts: RunFacts,
    pub(crate) withheld: BTreeSet<String>,
}

pub(crate) fn spec(name: &str) -> ToolSpec {
    spec_with(name, "A tool.", json!({"type": "object"}))
}

pub(crate) fn spec_with(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
        pauses: None,
        effects: wright_core::Effects::default(),
        policy: ToolPolicy::Allow,
        toolset: None,
    }
}

pub(crate) fn call(id: &str, name: &str, arguments: Value) -> ModelToolCall {
    ModelToolCall { id: id.to_owned(), name: name.to_owned(), arguments: Ok(arguments), data: Value::Null }
}

impl Scene {
    /// A conversation of the person's messages.
    pub(crate) fn new(messages: &[&str]) -> Self {
        let mut scene = Self {
            history: Vec::new(),
            config: LoopConfig::default(),
            settings: ToolSettings::default(),
            all_tools: Vec::new(),
            facts: RunFacts::default(),
            withheld: BTreeSet::new(),
        };
        for message in messages {
            scene.user(message);
        }
        scene
    }

    fn push(&mut self, body: EventBody) {
        let seq = i64::try_from(self.history.len()).unwrap_or(i64::MAX) + 1;
        self.history.push(Event { seq, content: String::new(), body });
    }

    pub(crate) fn user(&mut self, text: &str) {
        self.push(EventBody::User { text: text.to_owned(), component: None });
    }

    /// A call and its result, as the run stored them.
    pub(crate) fn call_and_result(&mut self, id: &str, name: &str, arguments: Value, output: Value, success: bool) {
        self.push(EventBody::ToolCall { id: id.into(), name: name.into(), arguments, provider: Value::Null });
        self.push(EventBody::ToolResult {
            tool_call_id: id.into(),
            name: name.into(),
            output,
            success,
            outside_origin: None,
        });
    }

    fn run(&self) -> RunView<'_> {
        RunView {
            history: &self.history,
            config: &self.config,
            settings: &self.settings,
            all_tools: &self.all_tools,
            facts: &self.facts,
        }
    }

    pub(crate) fn start_view(&self, started_by_message: bool) -> StartView<'_> {
        StartView { run: self.run(), started_by_message }
    }

    pub(crate) fn reply_view<'a>(&'a self, reply: &'a Reply, offered: &'a [ToolSpec]) -> ReplyView<'a> {
        ReplyView { run: self.run(), reply, offered, withheld: &self.withheld, tools_enabled: true }
    }

    pub(crate) fn call_view<'a>(&'a self, call: &'a ModelToolCall, spec: Option<&'a ToolSpec>) -> CallView<'a> {
        CallView { run: self.run(), call, spec, withheld: &self.withheld }
    }

    pub(crate) fn result_view<'a>(
        &'a self,
        tool: &'a str,
        outcome: &'a ToolOutcome,
        unloaded: Option<&'a ToolSpec>,
    ) -> ResultView<'a> {
        ResultView { run: self.run(), tool, outcome, unloaded }
    }

    pub(crate) fn end_view<'a>(&'a self, text: &'a str) -> EndView<'a> {
        EndView { run: self.run(), text }
    }

    pub(crate) fn turn_view<'a>(&'a self, repeated: &'a BTreeSet<String>, only_repeats: bool) -> TurnView<'a> {
        TurnView { run: self.run(), repeated, only_repeats }
    }
}
