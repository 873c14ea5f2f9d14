//! Repeated calls: a call identical to one that ran earlier in this run (same tool, same
//! arguments, and no other call has succeeded since) is not run again — its result repeats
//! the earlier one and asks for the answer; a pausing call (`ask_user`) asked again after the
//! person answered is answered from that answer, so the person is not asked twice.

use serde_json::Value;
use wright_core::{Event, EventBody, EventKind, ToolOutcome};

use super::{CallDecision, CallRule, CallView};

/// The calls that ran in this run since the last one that succeeded with other arguments,
/// with their results: what a repeated call is answered from. A call that succeeds clears
/// the earlier ones, because it may have changed what they would return (a write, a click).
#[derive(Debug, Default)]
pub(crate) struct RecentCalls {
    calls: Vec<RecentCall>,
}

#[derive(Debug)]
struct RecentCall {
    name: String,
    arguments: Value,
    output: Value,
    success: bool,
}

impl RecentCalls {
    /// The result of an earlier call with this name and these arguments, and whether it succeeded.
    pub(crate) fn earlier(&self, name: &str, arguments: &Value) -> Option<(&Value, bool)> {
        self.calls
            .iter()
            .find(|call| call.name == name && call.arguments == *arguments)
            .map(|call| (&call.output, call.success))
    }

    pub(crate) fn record(&mut self, name: &str, arguments: &Value, output: &Value, success: bool) {
        if success {
            self.calls.clear();
        }
        self.calls.push(RecentCall {
            name: name.to_owned(),
            arguments: arguments.clone(),
            output: output.clone(),
            success,
        });
    }
}

/// [`LoopConfig::refuse_repeated_calls`](crate::LoopConfig::refuse_repeated_calls).
pub(crate) struct AnswerRepeats;

impl CallRule for AnswerRepeats {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        let call = view.call;
        let Ok(arguments) = &call.arguments else { return CallDecision::Run };
        if !view.run.config.refuse_repeated_calls {
            return CallDecision::Run;
        }
        let request = view.run.last_request();
        let pauses = view.spec.is_some_and(|spec| spec.pauses.is_some());
        let earlier = if pauses {
            earlier_answer(view.run.history, &call.id, &call.name, arguments).map(|output| (output, true))
        } else {
            view.run.facts.recent_calls.earlier(&call.name, arguments)
        };
        match earlier {
            Some((output, success)) => {
                CallDecision::Repeat(ToolOutcome::answered(repeated_result(&call.name, output, request), success))
            }
            None => CallDecision::Run,
        }
    }
}

/// The person's answer to an earlier call of a pausing tool (`ask_user`, a form) with these
/// exact arguments since their last message, other than `call_id` itself.
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, call, spec};

    #[test]
    fn a_repeat_of_a_call_that_worked_is_answered_from_its_result_with_the_request() {
        let mut scene = Scene::new(&["what is k?"]);
        scene.facts.recent_calls.record("get_state", &json!({"key": "k"}), &json!(1), true);
        let again = call("c2", "get_state", json!({"key": "k"}));
        let CallDecision::Repeat(outcome) = AnswerRepeats.decide(&scene.call_view(&again, None)) else {
            panic!("ran again")
        };
        assert!(outcome.success);
        assert_eq!(
            (outcome.output["repeated_call"].clone(), outcome.output["result"].clone()),
            (json!(true), json!(1))
        );
        assert!(outcome.output["note"].as_str().unwrap().contains("The person asked: \"what is k?\""));
        let other = call("c3", "get_state", json!({"key": "j"}));
        assert_eq!(AnswerRepeats.decide(&scene.call_view(&other, None)), CallDecision::Run);
    }

    #[test]
    fn a_call_that_succeeds_clears_what_came_before() {
        let mut recent = RecentCalls::default();
        recent.record("get_state", &json!({"key": "k"}), &json!(1), true);
        recent.record("set_state", &json!({"key": "k", "value": 2}), &json!("ok"), true);
        assert!(recent.earlier("get_state", &json!({"key": "k"})).is_none());
        recent.record("get_state", &json!({"key": "x"}), &json!({"error": "no"}), false);
        assert_eq!(recent.earlier("get_state", &json!({"key": "x"})).map(|(_, success)| success), Some(false));
    }

    #[test]
    fn a_question_asked_again_after_its_answer_gets_that_answer() {
        let mut scene = Scene::new(&["ask me"]);
        let question = json!({"question": "Colour?"});
        scene.call_and_result("q1", "ask_user", question.clone(), json!({"answer": "green"}), true);
        let mut ask = spec("ask_user");
        ask.pauses = Some(wright_core::Presentation::Question);
        let again = call("q2", "ask_user", question);
        let CallDecision::Repeat(outcome) = AnswerRepeats.decide(&scene.call_view(&again, Some(&ask))) else {
            panic!("asked twice")
        };
        assert_eq!(outcome.output["result"], json!({"answer": "green"}));
        // After a new message from the person, the question is asked again.
        scene.user("ask again");
        assert_eq!(AnswerRepeats.decide(&scene.call_view(&again, Some(&ask))), CallDecision::Run);
    }

    #[test]
    fn repeats_run_again_when_the_config_says_so() {
        let mut scene = Scene::new(&["what is k?"]);
        scene.facts.recent_calls.record("get_state", &json!({"key": "k"}), &json!(1), true);
        scene.config.refuse_repeated_calls = false;
        let again = call("c2", "get_state", json!({"key": "k"}));
        assert_eq!(AnswerRepeats.decide(&scene.call_view(&again, None)), CallDecision::Run);
    }
}
