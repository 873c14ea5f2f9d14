//! `read_execution_log`: the agent reads its own tool calls from the execution log (seed 001:
//! the log is there "for system prompt improvement"), filtered by tool, success, error
//! category, conversation or session and time. The answer is bounded: at most
//! [`MAX_ENTRIES`] calls, each field of a call cut at [`MAX_FIELD_CHARS`] characters, so a
//! call with a large result cannot fill the context.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_core::ErrorCategory;
use wright_store::ExecutionFilter;

use crate::builtin::{Builtin, Tool};
use crate::{ToolContext, ToolError};

/// The most calls one answer lists.
pub(crate) const MAX_ENTRIES: i64 = 50;
/// Calls listed when the model does not say.
const DEFAULT_ENTRIES: i64 = 10;
/// The most characters of a call's arguments, result or error shown.
pub(crate) const MAX_FIELD_CHARS: usize = 400;

/// Which conversations' calls to read.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    /// Every conversation.
    All,
    /// Only this conversation.
    Conversation,
    /// The conversations of this conversation's session.
    Session,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogArgs {
    /// Only calls of this tool.
    tool: Option<String>,
    /// true: only calls that worked; false: only failures.
    success: Option<bool>,
    /// Only failures of this category, e.g. `invalid_arguments`, `runtime`, `not_found`, `timeout`.
    error_category: Option<String>,
    /// Which conversations: `all` (default), this `conversation`, or this `session`.
    scope: Option<Scope>,
    /// Only calls at or after this time, ISO-8601 UTC (`2026-11-27` or `2026-11-27T09:00:00Z`).
    since: Option<String>,
    /// How many, newest first (default 10, at most 50).
    limit: Option<i64>,
}

/// `text` cut at `max` characters, saying how long it was.
fn cut(text: &str, max: usize) -> String {
    let length = text.chars().count();
    if length <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… [{length} characters in all]")
}

fn shown(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(cut(text, MAX_FIELD_CHARS)),
        other => {
            let text = other.to_string();
            if text.chars().count() <= MAX_FIELD_CHARS {
                other.clone()
            } else {
                Value::String(cut(&text, MAX_FIELD_CHARS))
            }
        }
    }
}

async fn read_log(context: ToolContext, args: LogArgs) -> Result<Value, ToolError> {
    let error_category = match args.error_category {
        Some(raw) => Some(ErrorCategory::parse(&raw).map_err(|_| ToolError::InvalidArguments {
            tool: "read_execution_log".into(),
            problems: vec![format!(
                "unknown error_category {raw:?}; use one of: invalid_arguments, unknown_tool, not_found, rejected, \
                 limit, runtime, syntax, timeout, network, denied, internal"
            )],
        })?),
        None => None,
    };
    if let Some(since) = &args.since {
        let looks_like_time = since.len() >= 10 && since.as_bytes()[4] == b'-' && since.as_bytes()[7] == b'-';
        if !looks_like_time {
            return Err(ToolError::InvalidArguments {
                tool: "read_execution_log".into(),
                problems: vec![format!(
                    "since {since:?} is not a date or time like 2026-11-27 or 2026-11-27T09:00:00Z"
                )],
            });
        }
    }
    let mut filter = ExecutionFilter {
        tool_name: args.tool,
        success: args.success,
        error_category: error_category.map(|category| category.as_str().to_owned()),
        since: args.since,
        limit: Some(args.limit.unwrap_or(DEFAULT_ENTRIES).clamp(1, MAX_ENTRIES)),
        ..ExecutionFilter::default()
    };
    let scope = args.scope.unwrap_or(Scope::All);
    if scope != Scope::All {
        let conversation = context.conversation_id.clone().ok_or_else(|| {
            ToolError::Rejected("this call is not part of a conversation: use scope `all`".to_owned())
        })?;
        match scope {
            Scope::Session => match context.services.store.session_of_conversation(&conversation).await? {
                Some(session) => filter.session_id = Some(session),
                None => filter.conversation_id = Some(conversation),
            },
            _ => filter.conversation_id = Some(conversation),
        }
    }
    let executions = context.services.store.list_executions(&context.agent, &filter).await?;
    let entries: Vec<Value> = executions
        .iter()
        .map(|execution| {
            let mut entry = json!({
                "id": execution.id,
                "tool": execution.tool_name,
                "success": execution.success,
                "args": shown(&execution.args),
                "conversation_id": execution.conversation_id,
                "at": execution.created_at,
                "duration_ms": execution.duration_us / 1000,
            });
            if let Some(error) = &execution.error {
                entry["error"] = Value::String(cut(error, MAX_FIELD_CHARS));
                entry["error_category"] = json!(execution.error_category);
            }
            if let Some(result) = &execution.result {
                entry["result"] = shown(result);
            }
            entry
        })
        .collect();
    Ok(json!({"count": entries.len(), "executions": entries}))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![Builtin::<LogArgs>::reading(
        "read_execution_log",
        "Read your past tool calls. Newest first, each with the tool, its arguments, whether it worked, its \
         result or error. Filter by tool, success, error_category, scope (all, conversation, session) and since. Use it to \
         find what went wrong before and do better (then note the lesson or write a skill).",
        |context, args| Box::pin(read_log(context, args)),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_fields_are_cut_and_say_their_length() {
        let long = "x".repeat(MAX_FIELD_CHARS + 5);
        let shown_text = cut(&long, MAX_FIELD_CHARS);
        assert!(shown_text.ends_with(&format!("… [{} characters in all]", MAX_FIELD_CHARS + 5)));
        assert_eq!(cut("short", MAX_FIELD_CHARS), "short");
        let object = json!({"sql": "y".repeat(MAX_FIELD_CHARS)});
        assert!(shown(&object).as_str().is_some_and(|text| text.contains("characters in all")));
        assert_eq!(shown(&json!({"a": 1})), json!({"a": 1}));
    }
}
