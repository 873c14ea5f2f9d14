//! An error left unanswered. The real 1.5B, told "only one SQL statement per call … send this one
//! first, alone: CREATE TABLE expenses …", answered the person with the SQL in a code block and
//! ended the run with nothing done; told a schedule's `at` "is not a date and time", it answered
//! with a lesson instead of calling again. When a reply with no call follows a call that failed
//! in a way the model can fix (its arguments, what the tool refused, its own code), and no call
//! of the person's request has worked yet, the reply is dropped and the model asked once a run
//! to call that tool again, changed as the error says. A reply that asks the person something
//! is kept: the model may need what only the person knows.

use wright_core::{ErrorCategory, EventBody};

use super::{Counter, NextRequest, ReplyDecision, ReplyRule, ReplyView};

/// Longest error quoted in the note.
const ERROR_CHARS: usize = 300;

/// What a failure says the model can change: the call's arguments, what the tool refused, or
/// the model's own code. Not the host's refusals, limits, the network or a person's "no".
const FIXABLE: [ErrorCategory; 5] = [
    ErrorCategory::InvalidArguments,
    ErrorCategory::Rejected,
    ErrorCategory::NotFound,
    ErrorCategory::Syntax,
    ErrorCategory::Runtime,
];

/// [`ReplyRule`]: a reply without calls after a fixable failure, with nothing done yet, is
/// asked again once a run with a call required.
pub(crate) struct RetryAfterError;

impl ReplyRule for RetryAfterError {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let reply = view.reply;
        let asks_the_person = reply.text.trim_end().ends_with('?');
        if !reply.calls.is_empty() || asks_the_person || !view.tools_enabled {
            return ReplyDecision::Pass;
        }
        if view.run.facts.count(Counter::ErrorRetries) > 0 {
            return ReplyDecision::Pass;
        }
        let since = view.run.history.iter().rposition(|event| matches!(event.body, EventBody::User { .. }));
        let recent = &view.run.history[since.map_or(0, |at| at + 1)..];
        let mut results = recent.iter().filter_map(|event| match &event.body {
            EventBody::ToolResult { name, output, success, .. } => Some((name, output, *success)),
            _ => None,
        });
        if results.clone().any(|(_, _, success)| success) {
            return ReplyDecision::Pass;
        }
        let Some((tool, output, _)) = results.next_back() else { return ReplyDecision::Pass };
        let fixable = output["category"]
            .as_str()
            .and_then(|category| ErrorCategory::parse(category).ok())
            .is_some_and(|category| FIXABLE.contains(&category));
        let offered = view.offered.iter().any(|spec| &spec.name == tool) && !view.withheld.contains(tool);
        if !fixable || !offered {
            return ReplyDecision::Pass;
        }
        let error: String = output["error"].as_str().unwrap_or_default().chars().take(ERROR_CHARS).collect();
        let note = format!(
            "## The last call failed\n`{tool}` failed: {error}\nNothing the person asked for is done yet. Call \
             `{tool}` again now, changed as the error says; do not answer with the call written as text."
        );
        ReplyDecision::AskAgain {
            counter: Counter::ErrorRetries,
            next: NextRequest { note: Some(note), require_call: true, ..NextRequest::default() },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::Reply;
    use crate::policy::testing::{Scene, spec};

    const SQL_ERROR: &str = "only one SQL statement per call is allowed, and nothing ran; send each statement in its \
                             own call. Send this one first, alone: CREATE TABLE expenses (item TEXT, amount REAL)";

    fn failed(scene: &mut Scene, category: &str) {
        let output = json!({"category": category, "error": SQL_ERROR});
        scene.call_and_result(
            "a",
            "db_sql",
            json!({"sql": "CREATE TABLE expenses (item TEXT); INSERT …"}),
            output,
            false,
        );
    }

    fn text(text: &str) -> Reply {
        Reply { text: text.into(), ..Reply::default() }
    }

    #[test]
    fn a_text_reply_after_a_fixable_error_is_asked_again_with_a_call_required() {
        let mut scene = Scene::new(&["Create a table expenses (item TEXT) and add coffee."]);
        failed(&mut scene, "rejected");
        let offered = [spec("db_sql")];
        let reply = text("You can use the following SQL:\n```sql\nCREATE TABLE expenses …\n```");
        let ReplyDecision::AskAgain { counter, next } = RetryAfterError.decide(&scene.reply_view(&reply, &offered))
        else {
            panic!("asked again")
        };
        assert_eq!(counter, Counter::ErrorRetries);
        assert!(next.require_call);
        let note = next.note.unwrap();
        assert!(note.starts_with("## The last call failed\n`db_sql` failed: only one SQL statement"), "{note}");
        assert!(note.contains("Call `db_sql` again now"), "{note}");
        // Once a run.
        scene.facts.counts.insert(Counter::ErrorRetries, 1);
        assert_eq!(RetryAfterError.decide(&scene.reply_view(&reply, &offered)), ReplyDecision::Pass);
    }

    #[test]
    fn a_question_a_call_that_worked_or_an_error_the_model_cannot_fix_is_left_alone() {
        let offered = [spec("db_sql")];
        let mut scene = Scene::new(&["Create a table expenses (item TEXT) and add coffee."]);
        failed(&mut scene, "rejected");
        let question = text("Which columns should the table have?");
        assert_eq!(RetryAfterError.decide(&scene.reply_view(&question, &offered)), ReplyDecision::Pass);
        let calls = Reply { calls: vec![crate::policy::testing::call("b", "db_sql", json!({}))], ..text("") };
        assert_eq!(RetryAfterError.decide(&scene.reply_view(&calls, &offered)), ReplyDecision::Pass);
        assert_eq!(RetryAfterError.decide(&scene.reply_view(&text("Done."), &[])), ReplyDecision::Pass, "not offered");
        for category in ["denied", "network", "limit", "timeout"] {
            let mut host = Scene::new(&["Create a table expenses (item TEXT) and add coffee."]);
            failed(&mut host, category);
            assert_eq!(RetryAfterError.decide(&host.reply_view(&text("Done."), &offered)), ReplyDecision::Pass);
        }
        let mut worked = Scene::new(&["Create a table expenses (item TEXT) and add coffee."]);
        worked.call_and_result("z", "db_sql", json!({"sql": "CREATE TABLE expenses (item TEXT)"}), json!({}), true);
        failed(&mut worked, "rejected");
        assert_eq!(RetryAfterError.decide(&worked.reply_view(&text("Done."), &offered)), ReplyDecision::Pass);
    }
}
