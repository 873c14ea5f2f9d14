//! The words of learning from experience (issue 31): how a run ended and who said so, the
//! person's rating, a case's check, learned items and learning rounds. Closed sets, stored
//! and sent with one spelling each.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::CoreError;
use std::fmt;

string_enum!(
    /// How a finished run went.
    Outcome, "outcome" {
        Success => "success",
        Failure => "failure",
        Unknown => "unknown",
    }
);

string_enum!(
    /// Where a run's outcome came from: the run itself (it completed; it left a tool error
    /// unanswered; it was cancelled; it hit the turn limit; it failed), a check, the person's
    /// rating, or the person correcting the answer in the next message.
    OutcomeSource, "outcome source" {
        Completed => "completed",
        Check => "check",
        Rating => "rating",
        ErrorsUnanswered => "errors_unanswered",
        Cancel => "cancel",
        TurnLimit => "turn_limit",
        RunFailed => "run_failed",
        Correction => "correction",
    }
);

string_enum!(
    /// The person's thumbs on an answer.
    Rating, "rating" {
        Up => "up",
        Down => "down",
    }
);

string_enum!(
    /// What a learned item is: the compressed call sequence of a successful run, a failed call
    /// and the call that fixed it, or what the model drafted from a failing run: an addition
    /// to the agent's notes, or a skill (a `SKILL.md`; while live, one of the agent's skills).
    LearnedKind, "learned item kind" {
        Exemplar => "exemplar",
        ErrorFix => "error_fix",
        NotesEdit => "notes_edit",
        Skill => "skill",
    }
);

string_enum!(
    /// Where a learned item stands. Only `live` items enter requests.
    ItemStatus, "learned item status" {
        Candidate => "candidate",
        AwaitingApproval => "awaiting_approval",
        Live => "live",
        Refused => "refused",
        Rejected => "rejected",
        RolledBack => "rolled_back",
    }
);

string_enum!(
    /// Who changed a learned item's status.
    ItemAuthor, "learned item author" {
        Learning => "learning",
        Person => "person",
        Counters => "counters",
    }
);

string_enum!(
    /// What a learning round decided for one candidate.
    CandidateDecision, "candidate decision" {
        Accepted => "accepted",
        AwaitingApproval => "awaiting_approval",
        Refused => "refused",
    }
);

string_enum!(
    /// Which replay of a held-out case in a round: before any candidate, with one candidate,
    /// or after, with every accepted candidate.
    ReplayPhase, "replay phase" {
        Before => "before",
        Candidate => "candidate",
        After => "after",
    }
);

string_enum!(
    /// A learning round's state.
    RoundStatus, "round status" {
        Running => "running",
        Finished => "finished",
        Failed => "failed",
    }
);

string_enum!(
    /// What started a learning round.
    RoundTrigger, "round trigger" {
        Person => "person",
        Schedule => "schedule",
        Cli => "cli",
    }
);

/// A case's check, judged from the data a run left (never from what the model said).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CaseCheck {
    /// The agent's state holds `value` at `key`.
    StateEquals { key: String, value: Value },
    /// The agent's learned notes contain `text`.
    NotesContain { text: String },
    /// A read-only query of the agent's database returns a count of at least `min` (the first
    /// column of the first row).
    DbCount { sql: String, min: i64 },
    /// A call of `tool` succeeded in the run.
    ToolSucceeded { tool: String },
    /// The file at `path` in the agent's workspace contains `text`.
    FileContains { path: String, text: String },
    /// The run left a call of `tool` waiting for the person.
    PendingCall { tool: String },
}
