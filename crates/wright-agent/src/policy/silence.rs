//! A run never ends in silence. When the model's last reply has no text for the person
//! (repeats refused, tools withheld, the turn limit, a reply cut short, a call written as text
//! where no call was taken), the answer stored is built from what the run did: which calls
//! worked and which failed, with their errors. The person always reads what happened.

use wright_core::{Event, EventBody};

use super::arguments::HOST_NOTE_MARKS;
use super::{EndRule, EndView};

/// Longest error quoted from a failed call.
const ERROR_CHARS: usize = 160;

/// [`EndRule`]: an empty (or call-only) last reply becomes a short account of the run.
pub(crate) struct AnswerFromWhatHappened;

impl EndRule for AnswerFromWhatHappened {
    fn answer(&self, view: &EndView<'_>) -> Option<String> {
        // With recovery off the operator wants the model's text as written, calls and all.
        if !says_nothing(view.text, view.run.config.recover_text_calls) {
            return None;
        }
        Some(account(view.run.history))
    }
}

/// Whether a reply gives the person nothing to read: blank, a note of the loop's own repeated
/// back (a small model parrots the last thing it read), or only a tool call written as JSON.
fn says_nothing(text: &str, calls_say_nothing: bool) -> bool {
    let lower = text.to_lowercase();
    if HOST_NOTE_MARKS.iter().any(|mark| lower.contains(mark)) {
        return true;
    }
    let text = text.trim().trim_start_matches("```json").trim_start_matches("```").trim_end_matches("```").trim();
    if text.is_empty() {
        return true;
    }
    calls_say_nothing
        && serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|value| value.get("name").is_some() && value.get("arguments").is_some())
}

/// What the calls since the person's last message did, in a few lines.
fn account(history: &[Event]) -> String {
    let since = history.iter().rposition(|event| matches!(event.body, EventBody::User { .. })).map_or(0, |at| at + 1);
    let mut worked: Vec<String> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for event in &history[since..] {
        let EventBody::ToolResult { tool_call_id, name, output, success, .. } = &event.body else { continue };
        let arguments = history[since..].iter().find_map(|call| match &call.body {
            EventBody::ToolCall { id, arguments, .. } if id == tool_call_id => Some(arguments.clone()),
            _ => None,
        });
        let line = format!("`{name}`{}", arguments.map(|arguments| format!(" with {arguments}")).unwrap_or_default());
        if *success {
            if !worked.contains(&line) {
                worked.push(line);
            }
        } else {
            let error = output.get("error").and_then(serde_json::Value::as_str).unwrap_or("it failed");
            let error: String = error.chars().take(ERROR_CHARS).collect();
            let line = format!("{line}: {error}");
            if !failed.contains(&line) {
                failed.push(line);
            }
        }
    }
    if worked.is_empty() && failed.is_empty() {
        return "I could not come up with an answer to that. Could you say it another way, or tell me which step \
                to take first?"
            .to_owned();
    }
    let mut answer = String::new();
    if !worked.is_empty() {
        answer.push_str(&format!("Done: {}.", worked.join("; ")));
    }
    if !failed.is_empty() {
        if !answer.is_empty() {
            answer.push('\n');
        }
        answer.push_str(&format!("Did not work: {}.", failed.join("; ")));
    }
    answer
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::Scene;

    fn answer(scene: &Scene, text: &str) -> Option<String> {
        AnswerFromWhatHappened.answer(&scene.end_view(text))
    }

    #[test]
    fn an_empty_last_reply_becomes_what_the_run_did() {
        let mut scene = Scene::new(&["Save green under colour and fetch the page"]);
        scene.call_and_result("a", "set_state", json!({"key": "colour", "value": "green"}), json!({"ok": true}), true);
        scene.call_and_result("b", "set_state", json!({"key": "colour", "value": "green"}), json!({"ok": true}), true);
        scene.call_and_result(
            "c",
            "fetch_url",
            json!({"url": "http://x.test"}),
            json!({"error": "no such host"}),
            false,
        );
        let built = answer(&scene, "  ").unwrap();
        assert_eq!(
            built,
            "Done: `set_state` with {\"key\":\"colour\",\"value\":\"green\"}.\n\
             Did not work: `fetch_url` with {\"url\":\"http://x.test\"}: no such host."
        );
        // A call written as text where none was taken says nothing to the person either.
        assert!(answer(&scene, "{\"name\": \"set_state\", \"arguments\": {}}").is_some());
        assert_eq!(answer(&scene, "Saved it."), None, "a real answer stays");
        let parroted = "The request is done. Every part of the person's request is done: answer the person now.";
        assert!(answer(&scene, parroted).unwrap().starts_with("Done: `set_state`"), "the loop's note is no answer");
        let nothing = Scene::new(&["hm"]);
        assert!(answer(&nothing, "").unwrap().starts_with("I could not come up with an answer"));
    }
}
