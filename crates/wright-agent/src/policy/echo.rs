//! Replies that parrot the last tool result instead of answering: small models repeat a
//! result's JSON. Such a reply is dropped and asked again (a few times a run); a reply that
//! calls a tool and also parrots keeps only its calls (stored, the text would be read back as
//! an answer).

use serde_json::Value;
use wright_core::{Event, EventBody};

use super::{Counter, NextRequest, Reply, ReplyDecision, ReplyRule, ReplyView};

/// What the request after a parroted result adds to the system message.
pub const ECHO_NOTE: &str = "## Your last reply\nYour last reply only repeated the tool result. Do not repeat results. \
Either call a tool again with correct arguments, or answer the person in plain words.";

/// [`LoopConfig::max_echo_retries`](crate::LoopConfig::max_echo_retries).
pub(crate) struct AskAgainAfterEcho;

impl ReplyRule for AskAgainAfterEcho {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let parrots = view.reply.calls.is_empty()
            && view.tools_enabled
            && view.run.facts.count(Counter::EchoRetries) < view.run.config.max_echo_retries
            && echoes_last_result(&view.reply.text, view.run.history);
        if !parrots {
            return ReplyDecision::Pass;
        }
        let next = NextRequest { note: Some(ECHO_NOTE.to_owned()), ..NextRequest::default() };
        ReplyDecision::AskAgain { counter: Counter::EchoRetries, next }
    }
}

/// A reply with calls whose text parrots the last result keeps only the calls.
pub(crate) struct DropParrotedText;

impl ReplyRule for DropParrotedText {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        if view.reply.calls.is_empty() || !echoes_last_result(&view.reply.text, view.run.history) {
            return ReplyDecision::Pass;
        }
        ReplyDecision::Amend(Reply { text: String::new(), ..view.reply.clone() })
    }
}

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, call, spec};

    fn after_result() -> Scene {
        let mut scene = Scene::new(&["what is k?"]);
        scene.call_and_result("c1", "get_state", json!({"key": "k"}), json!({"key": "k", "value": 1}), true);
        scene
    }

    #[test]
    fn a_reply_that_only_repeats_the_result_is_asked_again_until_the_retries_are_spent() {
        let mut scene = after_result();
        let reply = Reply { text: r#"{"key": "k", "value": 1}"#.into(), ..Reply::default() };
        let offered = [spec("get_state")];
        assert!(matches!(
            AskAgainAfterEcho.decide(&scene.reply_view(&reply, &offered)),
            ReplyDecision::AskAgain { counter: Counter::EchoRetries, next } if next.note.as_deref() == Some(ECHO_NOTE)
        ));
        // Part of it counts too.
        let part = Reply { text: r#"{"value": 1}"#.into(), ..Reply::default() };
        assert!(matches!(AskAgainAfterEcho.decide(&scene.reply_view(&part, &offered)), ReplyDecision::AskAgain { .. }));
        scene.facts.counts.insert(Counter::EchoRetries, scene.config.max_echo_retries);
        assert_eq!(AskAgainAfterEcho.decide(&scene.reply_view(&reply, &offered)), ReplyDecision::Pass);
    }

    #[test]
    fn an_answer_in_words_is_not_an_echo() {
        let scene = after_result();
        let reply = Reply { text: "k is 1.".into(), ..Reply::default() };
        assert_eq!(AskAgainAfterEcho.decide(&scene.reply_view(&reply, &[spec("get_state")])), ReplyDecision::Pass);
    }

    #[test]
    fn a_reply_that_calls_and_parrots_keeps_only_the_call() {
        let scene = after_result();
        let reply = Reply {
            text: r#"{"value": 1}"#.into(),
            calls: vec![call("c2", "set_state", json!({"key": "k", "value": 2}))],
            ..Reply::default()
        };
        let ReplyDecision::Amend(amended) = DropParrotedText.decide(&scene.reply_view(&reply, &[])) else {
            panic!("text kept")
        };
        assert_eq!((amended.text.as_str(), amended.calls.len()), ("", 1));
    }
}
