//! A reply whose every call repeats a call that already failed in this run (same tool, same
//! arguments): a model decoding greedily writes the same failing call every time it is asked.
//! The reply is dropped and the turn asked again with the errors restated, at a higher
//! temperature, a few times a run.

use serde_json::Value;

use super::{Counter, NextRequest, ReplyDecision, ReplyRule, ReplyView};
use crate::config::RESAMPLE_TEMPERATURE;

/// [`LoopConfig::resample_failed_repeats`](crate::LoopConfig::resample_failed_repeats).
pub(crate) struct ResampleFailedRepeats;

impl ReplyRule for ResampleFailedRepeats {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let config = view.run.config;
        let calls = &view.reply.calls;
        if !config.refuse_repeated_calls
            || calls.is_empty()
            || view.run.facts.count(Counter::Resamples) >= config.resample_failed_repeats
        {
            return ReplyDecision::Pass;
        }
        let failed_again: Vec<(&str, &Value)> = calls
            .iter()
            .filter_map(|call| {
                let arguments = call.arguments.as_ref().ok()?;
                match view.run.facts.recent_calls.earlier(&call.name, arguments) {
                    Some((output, false)) => Some((call.name.as_str(), output)),
                    _ => None,
                }
            })
            .collect();
        if failed_again.len() != calls.len() {
            return ReplyDecision::Pass;
        }
        let next = NextRequest {
            note: Some(failed_again_note(&failed_again)),
            temperature: Some(RESAMPLE_TEMPERATURE),
            ..NextRequest::default()
        };
        ReplyDecision::AskAgain { counter: Counter::Resamples, next }
    }
}

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::Reply;
    use crate::policy::testing::{Scene, call};

    #[test]
    fn a_reply_that_only_repeats_failed_calls_is_asked_again_hotter_with_the_errors() {
        let mut scene = Scene::new(&["save it"]);
        let failed = json!({"error": "missing value", "category": "invalid_arguments"});
        scene.facts.recent_calls.record("set_state", &json!({"key": "k"}), &failed, false);
        let reply = Reply { calls: vec![call("c2", "set_state", json!({"key": "k"}))], ..Reply::default() };
        let ReplyDecision::AskAgain { counter: Counter::Resamples, next } =
            ResampleFailedRepeats.decide(&scene.reply_view(&reply, &[]))
        else {
            panic!("not resampled")
        };
        assert_eq!(next.temperature, Some(RESAMPLE_TEMPERATURE));
        assert!(next.note.unwrap().contains("`set_state` failed with: missing value"));
        // Spent: the repeat goes on to be answered like any other.
        scene.facts.counts.insert(Counter::Resamples, scene.config.resample_failed_repeats);
        assert_eq!(ResampleFailedRepeats.decide(&scene.reply_view(&reply, &[])), ReplyDecision::Pass);
    }

    #[test]
    fn a_reply_with_one_new_call_is_not_resampled() {
        let mut scene = Scene::new(&["save it"]);
        scene.facts.recent_calls.record("set_state", &json!({"key": "k"}), &json!({"error": "x"}), false);
        let reply = Reply {
            calls: vec![call("c2", "set_state", json!({"key": "k"})), call("c3", "get_state", json!({"key": "k"}))],
            ..Reply::default()
        };
        assert_eq!(ResampleFailedRepeats.decide(&scene.reply_view(&reply, &[])), ReplyDecision::Pass);
    }
}
