//! The one error of a tool call, with its [`ErrorCategory`] for `tool_executions` and the
//! [`ToolFailure`] the loop reads through the tools port.
//!
//! Messages are written for the model that made the call: they say what was wrong and, where
//! it helps, what to do instead.

use wright_core::{ErrorCategory, ToolFailure};
use wright_schedules::ScheduleError;
use wright_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A name no tool has; `closest` are the real names nearest to it, best first (a small
    /// model that invents `save_note` is better served by three candidates than by the whole
    /// list of tools, which costs tokens on every mistake).
    #[error("unknown tool `{name}`; the closest real tools are: {}. Call one of them by its exact name", closest.join(", "))]
    UnknownTool { name: String, closest: Vec<String> },
    /// Arguments that do not fit the tool's schema, or a field an operation requires.
    #[error("invalid arguments for `{tool}`: {}", problems.join("; "))]
    InvalidArguments { tool: String, problems: Vec<String> },
    #[error("{0}")]
    NotFound(String),
    /// A configured limit would be exceeded.
    #[error("{0}")]
    LimitExceeded(String),
    /// Too many calls in a window; the next may go after `retry_after_secs`.
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: i64 },
    /// The tool ran and refused: e.g. the text to replace was not found. Nothing changed.
    #[error("{0}")]
    Rejected(String),
    /// The agent's JavaScript failed; `outcome` is the seed's `{error, kind, logs}` shape.
    #[error("{kind} error: {message}")]
    Code { kind: ErrorCategory, message: String, outcome: serde_json::Value },
    /// The egress policy refused the request.
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Timeout(String),
    /// The network failed: DNS, connect, TLS, HTTP.
    #[error("{0}")]
    Network(String),
    /// A feature the operator has not configured (e.g. a web search backend).
    #[error("{0}")]
    NotConfigured(String),
    /// The run was cancelled while the call ran; the call was stopped.
    #[error("{0}")]
    Cancelled(String),
    /// Something broke that the caller cannot fix (a database error); logged in full.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ToolError {
    /// The category stored with a failed execution and used in statistics.
    pub fn category(&self) -> ErrorCategory {
        match self {
            ToolError::UnknownTool { .. } => ErrorCategory::UnknownTool,
            ToolError::InvalidArguments { .. } => ErrorCategory::InvalidArguments,
            ToolError::NotFound(_) => ErrorCategory::NotFound,
            ToolError::LimitExceeded(_) => ErrorCategory::Limit,
            ToolError::RateLimited { .. } => ErrorCategory::RateLimited,
            ToolError::Rejected(_) => ErrorCategory::Rejected,
            ToolError::Code { kind, .. } => *kind,
            ToolError::Denied(_) => ErrorCategory::Denied,
            ToolError::Timeout(_) => ErrorCategory::Timeout,
            ToolError::Network(_) => ErrorCategory::Network,
            ToolError::NotConfigured(_) => ErrorCategory::NotConfigured,
            ToolError::Cancelled(_) => ErrorCategory::Cancelled,
            ToolError::Internal(_) => ErrorCategory::Internal,
        }
    }

    /// What the model reads for this failure: the sandbox's own shape for code failures,
    /// `{error, category}` for the rest.
    pub fn to_model_output(&self) -> serde_json::Value {
        ToolFailure::from(self).to_output()
    }

    pub(crate) fn missing_field(tool: &str, operation: &str, field: &str) -> Self {
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            problems: vec![format!("operation `{operation}` requires the field `{field}`")],
        }
    }
}

impl From<&ToolError> for ToolFailure {
    fn from(error: &ToolError) -> Self {
        let output = match error {
            ToolError::Code { outcome, .. } => Some(outcome.clone()),
            _ => None,
        };
        ToolFailure { category: error.category(), message: error.to_string(), output }
    }
}

impl From<ScheduleError> for ToolError {
    fn from(error: ScheduleError) -> Self {
        match error {
            ScheduleError::Invalid(message) => ToolError::Rejected(message),
            ScheduleError::Limit(message) => ToolError::LimitExceeded(message),
            ScheduleError::Store(error) => error.into(),
        }
    }
}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::AgentNotFound(_)
            | StoreError::VersionNotFound { .. }
            | StoreError::ConversationNotFound(_)
            | StoreError::PendingNotFound(_)
            | StoreError::ItemNotFound { .. } => ToolError::NotFound(error.to_string()),
            StoreError::AgentExists(_)
            | StoreError::InvalidEdit(_)
            | StoreError::AlreadyAnswered(_)
            | StoreError::RunNotOwned(_)
            | StoreError::ItemExists { .. } => ToolError::Rejected(error.to_string()),
            StoreError::LimitExceeded(message) => ToolError::LimitExceeded(message),
            StoreError::RateLimited { message, retry_after_secs } => {
                ToolError::RateLimited { message, retry_after_secs }
            }
            StoreError::TooLargeToDiff(_) => ToolError::LimitExceeded(error.to_string()),
            StoreError::Database(_) | StoreError::Migration(_) | StoreError::DiffFailed(_) => {
                ToolError::Internal(error.to_string())
            }
        }
    }
}
