//! One tool call of the model, turned into a result (or a parked call). Every failure the
//! model can cause becomes an error result it can read and recover from.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_core::AgentId;
use wright_tools::{Invocation, ToolRegistry};

use crate::run::ModelToolCall;

/// What became of one call.
pub(crate) enum Dispatched {
    /// The call ran (or was refused); its result goes back to the model.
    Finished { output: Value, success: bool },
    /// A valid pausing call: the run parks until the person answers.
    Park { arguments: Value, render: Value },
}

pub(crate) struct CallSite<'a> {
    pub(crate) tools: &'a ToolRegistry,
    pub(crate) agent: &'a AgentId,
    pub(crate) conversation_id: &'a str,
    pub(crate) max_output_size: usize,
    /// Stops the running tool when the run is cancelled.
    pub(crate) cancel: &'a CancellationToken,
}

fn failure(message: String, category: &str) -> Dispatched {
    Dispatched::Finished { output: json!({ "error": message, "category": category }), success: false }
}

fn tool_failure(error: &wright_tools::ToolError) -> Dispatched {
    Dispatched::Finished { output: error.to_model_output(), success: false }
}

pub(crate) async fn dispatch(site: &CallSite<'_>, call: &ModelToolCall) -> Dispatched {
    let arguments = match &call.arguments {
        Ok(Value::Null) => json!({}),
        Ok(arguments) => arguments.clone(),
        Err(raw) => {
            let shown: String = raw.chars().take(200).collect();
            return failure(
                format!("the arguments of `{}` are not valid JSON ({shown:?}); send one JSON object", call.name),
                "invalid_arguments",
            );
        }
    };
    if site.tools.pauses(&call.name) {
        return match site.tools.prepare_pause(site.agent, &call.name, &arguments).await {
            Ok(render) => Dispatched::Park { arguments, render },
            Err(error) => tool_failure(&error),
        };
    }
    let invocation = Invocation {
        agent: site.agent.clone(),
        name: call.name.clone(),
        args: arguments,
        caller: "agent".into(),
        conversation_id: Some(site.conversation_id.to_owned()),
        tool_call_id: Some(call.id.clone()),
    };
    match site.tools.invoke_cancellable(invocation, site.cancel).await {
        Ok(output) => Dispatched::Finished { output: cap_output(output, site.max_output_size), success: true },
        Err(error) => tool_failure(&error),
    }
}

/// A result no longer than `limit` bytes of JSON: a longer one becomes its first bytes as a
/// string, with a marker saying how much was cut.
pub(crate) fn cap_output(output: Value, limit: usize) -> Value {
    let text = output.to_string();
    if text.len() <= limit {
        return output;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Value::String(format!("{}\n[output truncated: {} of {} bytes cut]", &text[..end], text.len() - end, text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_outputs_pass_and_large_ones_are_cut_with_a_marker() {
        assert_eq!(cap_output(json!({"a": 1}), 100), json!({"a": 1}));
        let cut = cap_output(json!("é".repeat(100)), 51);
        let text = cut.as_str().unwrap();
        assert!(text.ends_with("[output truncated: 151 of 202 bytes cut]"), "{text}");
        assert!(text.starts_with("\"é"));
    }
}
