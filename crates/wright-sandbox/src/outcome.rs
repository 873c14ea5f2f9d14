//! What a call returns: [`RunOutcome`], serialised to seed 002's shapes — `{result, logs}` on
//! success, `{error, kind, logs}` (plus `stack` when there is one) on failure.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a call failed. The model sees it as `kind`; the tool layer records it as the execution's
/// error category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The code does not compile.
    Syntax,
    /// The code threw, or its result is not JSON, or the worker running it died.
    Runtime,
    /// The code ran past its deadline.
    Timeout,
    /// The code ran out of its memory limit.
    Memory,
    /// The result's JSON is larger than the cap.
    OutputTooLarge,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Memory => "memory",
            ErrorKind::OutputTooLarge => "output_too_large",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The outcome of one call. Failures of the agent's code are outcomes, not Rust errors: the model
/// must hear them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunOutcome {
    Success {
        result: Value,
        logs: Vec<String>,
    },
    Failure {
        error: String,
        kind: ErrorKind,
        /// Stack frames in the agent's code (`tool.js:LINE:COLUMN`), when the error had any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stack: Option<String>,
        logs: Vec<String>,
    },
}

impl RunOutcome {
    pub(crate) fn failure(kind: ErrorKind, error: impl Into<String>, logs: Vec<String>) -> Self {
        RunOutcome::Failure { error: error.into(), kind, stack: None, logs }
    }

    pub fn is_success(&self) -> bool {
        matches!(self, RunOutcome::Success { .. })
    }

    /// The failure's kind, `None` on success.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            RunOutcome::Success { .. } => None,
            RunOutcome::Failure { kind, .. } => Some(*kind),
        }
    }

    pub fn logs(&self) -> &[String] {
        match self {
            RunOutcome::Success { logs, .. } | RunOutcome::Failure { logs, .. } => logs,
        }
    }

    /// The seed-002 JSON shape the model sees.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
