//! Calls written as text: a reply that made no call but wrote one (bare JSON, a ```json block,
//! `<tool_call>` tags, the text protocol's blocks) has it recovered into a real call.

use serde_json::Value;
use wright_core::ToolSpec;

use super::{Reply, ReplyDecision, ReplyRule, ReplyView};
use crate::ports::ModelToolCall;

/// [`LoopConfig::recover_text_calls`](crate::LoopConfig::recover_text_calls).
pub(crate) struct RecoverTextCalls;

impl ReplyRule for RecoverTextCalls {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        if !view.reply.calls.is_empty() || !view.tools_enabled || !view.run.config.recover_text_calls {
            return ReplyDecision::Pass;
        }
        match recovered_calls(&view.reply.text, view.offered) {
            Some((text, calls)) => ReplyDecision::Amend(Reply { text, calls, ..view.reply.clone() }),
            None => ReplyDecision::Pass,
        }
    }
}

/// The calls written as text in `text`, of tools that were offered, and the text without them.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{Scene, spec};

    #[test]
    fn a_call_written_as_json_becomes_a_call_of_an_offered_tool() {
        let scene = Scene::new(&["hello"]);
        let offered = [spec("get_state")];
        let reply = Reply { text: r#"{"name": "get_state", "arguments": {"key": "k"}}"#.into(), ..Reply::default() };
        let ReplyDecision::Amend(amended) = RecoverTextCalls.decide(&scene.reply_view(&reply, &offered)) else {
            panic!("not recovered")
        };
        assert_eq!(amended.calls[0].name, "get_state");
        assert_eq!(amended.calls[0].arguments, Ok(serde_json::json!({"key": "k"})));
    }

    #[test]
    fn text_stays_text_when_recovery_is_off_or_is_prose() {
        let mut scene = Scene::new(&["hello"]);
        let prose = Reply { text: "I would call get_state for that.".into(), ..Reply::default() };
        assert_eq!(RecoverTextCalls.decide(&scene.reply_view(&prose, &[spec("get_state")])), ReplyDecision::Pass);
        let reply = Reply { text: r#"{"name": "get_state", "arguments": {"key": "k"}}"#.into(), ..Reply::default() };
        scene.config.recover_text_calls = false;
        assert_eq!(RecoverTextCalls.decide(&scene.reply_view(&reply, &[spec("get_state")])), ReplyDecision::Pass);
    }
}
