//! How a finished run went, from what it stored (issue 31): the hard signals — an error left
//! unanswered, a cancel, the turn limit, a failure — and the person correcting the answer in
//! the next message. A rating or a check may set the outcome later (wright-store `learning`).
//!
//! Pure functions over events, so the rules are tested without a server.

use wright_agent::RunOutcome;
use wright_core::{Event, EventBody, Outcome, OutcomeSource, ToolSpec};

/// The seq and text of the person's message that started the latest run.
pub(crate) fn run_start(events: &[Event]) -> Option<(i64, String)> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::User { text, .. } => Some((event.seq, text.clone())),
        _ => None,
    })
}

/// The outcome the run's own ending says. A completed run whose last call of some tool failed
/// (an error the model did not answer with a call that worked) is a failure; any other
/// completed run is unknown until a rating, a check or a correction says more.
pub(crate) fn judge_run(outcome: &RunOutcome, run: &[&Event]) -> (Outcome, OutcomeSource) {
    match outcome {
        RunOutcome::Cancelled => (Outcome::Failure, OutcomeSource::Cancel),
        RunOutcome::TurnLimit => (Outcome::Failure, OutcomeSource::TurnLimit),
        RunOutcome::Failed { .. } => (Outcome::Failure, OutcomeSource::RunFailed),
        RunOutcome::Completed | RunOutcome::Parked => {
            if unanswered_errors(run) {
                (Outcome::Failure, OutcomeSource::ErrorsUnanswered)
            } else {
                (Outcome::Unknown, OutcomeSource::Completed)
            }
        }
    }
}

/// Whether some tool's last result in the run is a failure.
fn unanswered_errors(run: &[&Event]) -> bool {
    let mut last: std::collections::BTreeMap<&str, bool> = std::collections::BTreeMap::new();
    for event in run {
        if let EventBody::ToolResult { name, success, .. } = &event.body {
            last.insert(name.as_str(), *success);
        }
    }
    last.values().any(|success| !success)
}

/// Whether the run called a tool that brings outside content into the context.
pub(crate) fn read_outside(run: &[&Event], specs: &[ToolSpec]) -> bool {
    run.iter().any(|event| match &event.body {
        EventBody::ToolCall { name, .. } => {
            specs.iter().any(|spec| spec.name == *name && spec.effects.reads_outside)
                // Every MCP tool's result is outside content, whether its server is up or not.
                || name.starts_with("mcp__")
        }
        _ => false,
    })
}

/// Openings with which a person corrects the answer before (compared lowercased, on the
/// message's first words). Deliberately narrow: a false correction marks a good run failed.
const CORRECTIONS: &[&str] = &[
    "no,",
    "no.",
    "no!",
    "nope",
    "wrong",
    "that's wrong",
    "that is wrong",
    "that's not",
    "that is not",
    "not what i",
    "you didn't",
    "you did not",
    "it didn't",
    "it did not",
    "actually,",
    "incorrect",
];

/// Whether the message reads as the person correcting the answer before it.
pub(crate) fn is_correction(text: &str) -> bool {
    let start = text.trim_start().to_lowercase();
    CORRECTIONS.iter().any(|opening| start.starts_with(opening)) || start == "no"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(seq: i64, name: &str, success: bool) -> Event {
        Event {
            seq,
            content: String::new(),
            body: EventBody::ToolResult {
                tool_call_id: format!("c{seq}"),
                name: name.into(),
                output: json!({}),
                success,
                outside_origin: None,
            },
        }
    }

    #[test]
    fn a_completed_run_fails_when_an_error_was_left_unanswered() {
        let fixed = [result(2, "db_sql", false), result(4, "db_sql", true)];
        let left = [result(2, "db_sql", true), result(4, "set_state", false)];
        let fixed: Vec<&Event> = fixed.iter().collect();
        let left: Vec<&Event> = left.iter().collect();
        assert_eq!(judge_run(&RunOutcome::Completed, &fixed), (Outcome::Unknown, OutcomeSource::Completed));
        assert_eq!(judge_run(&RunOutcome::Completed, &left), (Outcome::Failure, OutcomeSource::ErrorsUnanswered));
        assert_eq!(judge_run(&RunOutcome::Cancelled, &fixed), (Outcome::Failure, OutcomeSource::Cancel));
        assert_eq!(judge_run(&RunOutcome::TurnLimit, &fixed), (Outcome::Failure, OutcomeSource::TurnLimit));
    }

    #[test]
    fn corrections_are_told_from_ordinary_messages() {
        for text in ["No, I said tea", "that's wrong", "Actually, it is 5", "you didn't save it", "no"] {
            assert!(is_correction(text), "{text}");
        }
        for text in ["Now add milk", "nothing else", "notes please", "thanks"] {
            assert!(!is_correction(text), "{text}");
        }
    }
}
