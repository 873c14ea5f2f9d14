//! Asking for the answer: once a run, the request after a reply that left the person without
//! an answer goes out with no tools and [`ANSWER_NOTE`] — after an empty reply that followed
//! tool results, or the second reply stuck on tools the request withheld.

use wright_core::EventBody;

use super::{Counter, NextRequest, ReplyDecision, ReplyRule, ReplyView};

/// What a request for the answer adds to the system message (it offers no tools): after an
/// empty reply, or a reply stuck on a step that is done.
pub(crate) const ANSWER_NOTE: &str = "## Answer now\nNo tools in this turn: the results of your calls are above. \
Answer the person now in plain words: what you did, what came of it, and anything left to do.";

fn ask_for_answer() -> ReplyDecision {
    ReplyDecision::AskAgain {
        counter: Counter::AnswerRequests,
        next: NextRequest { answer_now: true, ..NextRequest::default() },
    }
}

/// Only calls of tools this request withheld (a server without a grammar lets a model call
/// what it was not offered): the first time they are refused, so the model can still take
/// another step; the second time the model is stuck on a step it has done, or on one tool —
/// not stored, and asked once for the answer, without tools.
pub(crate) struct AnswerWhenStuck;

impl ReplyRule for AnswerWhenStuck {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let calls = &view.reply.calls;
        let stuck = !calls.is_empty() && calls.iter().all(|call| view.withheld.contains(&call.name));
        if !stuck || !view.tools_enabled {
            return ReplyDecision::Pass;
        }
        let facts = view.run.facts;
        if facts.count(Counter::StuckReplies) >= 1 && facts.count(Counter::AnswerRequests) == 0 {
            return ask_for_answer();
        }
        ReplyDecision::Count(Counter::StuckReplies)
    }
}

/// An empty reply after tool calls leaves the person without an answer: asked once more,
/// without tools; the empty reply is not stored.
pub(crate) struct AnswerAfterEmptyReply;

impl ReplyRule for AnswerAfterEmptyReply {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let after_results =
            matches!(view.run.history.last().map(|event| &event.body), Some(EventBody::ToolResult { .. }));
        let empty = view.reply.calls.is_empty() && view.reply.text.trim().is_empty();
        if empty && view.tools_enabled && after_results && view.run.facts.count(Counter::AnswerRequests) == 0 {
            return ask_for_answer();
        }
        ReplyDecision::Pass
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::policy::Reply;
    use crate::policy::testing::{Scene, call};

    #[test]
    fn an_empty_reply_after_results_asks_for_the_answer_once() {
        let mut scene = Scene::new(&["what is k?"]);
        let empty = Reply::default();
        // Before any result, an empty reply is an answer (an empty one).
        assert_eq!(AnswerAfterEmptyReply.decide(&scene.reply_view(&empty, &[])), ReplyDecision::Pass);
        scene.call_and_result("c1", "get_state", json!({"key": "k"}), json!(1), true);
        assert!(matches!(
            AnswerAfterEmptyReply.decide(&scene.reply_view(&empty, &[])),
            ReplyDecision::AskAgain { counter: Counter::AnswerRequests, next } if next.answer_now
        ));
        scene.facts.counts.insert(Counter::AnswerRequests, 1);
        assert_eq!(AnswerAfterEmptyReply.decide(&scene.reply_view(&empty, &[])), ReplyDecision::Pass);
    }

    #[test]
    fn the_second_reply_stuck_on_withheld_tools_asks_for_the_answer() {
        let mut scene = Scene::new(&["fetch it"]);
        scene.withheld = BTreeSet::from(["fetch_url".to_owned()]);
        let stuck = Reply { calls: vec![call("c1", "fetch_url", json!({"url": "https://a"}))], ..Reply::default() };
        assert_eq!(AnswerWhenStuck.decide(&scene.reply_view(&stuck, &[])), ReplyDecision::Count(Counter::StuckReplies));
        scene.facts.counts.insert(Counter::StuckReplies, 1);
        assert!(matches!(AnswerWhenStuck.decide(&scene.reply_view(&stuck, &[])), ReplyDecision::AskAgain { .. }));
        let other = Reply { calls: vec![call("c2", "get_state", json!({"key": "k"}))], ..Reply::default() };
        assert_eq!(AnswerWhenStuck.decide(&scene.reply_view(&other, &[])), ReplyDecision::Pass);
    }
}
