//! One tool call of the model, turned into a result (or a parked call). Every failure the
//! model can cause becomes an error result it can read and recover from.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wright_core::{
    AgentId, Caller, DecidedBy, ErrorCategory, Invocation, PendingKind, ToolFailure, ToolOutcome, ToolPolicy, ToolPort,
};

use crate::ports::ModelToolCall;

/// What became of one call.
pub(crate) enum Dispatched {
    /// The call ran (or was refused); its result goes back to the model.
    Finished(ToolOutcome),
    /// A valid pausing call, or a call its policy says to ask about: the run parks until the
    /// person answers (or approves).
    Park { arguments: Value, render: Value, kind: PendingKind },
}

pub(crate) struct CallSite<'a> {
    pub(crate) tools: &'a dyn ToolPort,
    pub(crate) agent: &'a AgentId,
    pub(crate) conversation_id: &'a str,
    pub(crate) max_output_size: usize,
    /// Stops the running tool when the run is cancelled.
    pub(crate) cancel: &'a CancellationToken,
}

fn failure(failure: &ToolFailure) -> Dispatched {
    Dispatched::Finished(ToolOutcome::failure(failure))
}

/// Runs, parks or refuses one call; `pauses` is the property of the tool's spec.
pub(crate) async fn dispatch(site: &CallSite<'_>, call: &ModelToolCall, pauses: bool) -> Dispatched {
    dispatch_with(site, call, pauses, None).await
}

/// Like [`dispatch`], for a call the loop's policy says must wait for the person's approval
/// whatever the tool's own policy (a deny still refuses it): it parks as an approval whose
/// card says `reason`.
pub(crate) async fn dispatch_asking(site: &CallSite<'_>, call: &ModelToolCall, reason: &str) -> Dispatched {
    dispatch_with(site, call, false, Some(reason)).await
}

async fn dispatch_with(site: &CallSite<'_>, call: &ModelToolCall, pauses: bool, ask: Option<&str>) -> Dispatched {
    let arguments = match &call.arguments {
        Ok(Value::Null) => json!({}),
        Ok(arguments) => arguments.clone(),
        Err(raw) => {
            let shown: String = raw.chars().take(200).collect();
            return failure(&ToolFailure::new(
                ErrorCategory::InvalidArguments,
                format!("the arguments of `{}` are not valid JSON ({shown:?}); send one JSON object", call.name),
            ));
        }
    };
    if pauses {
        return match site.tools.prepare_pause(site.agent, &call.name, &arguments).await {
            Ok(render) => Dispatched::Park { arguments, render, kind: PendingKind::Question },
            Err(error) => failure(&error),
        };
    }
    let policy = match site.tools.policy(site.agent, &call.name, &arguments).await {
        Ok(policy) => policy,
        Err(error) => return failure(&error),
    };
    let render = ask.map_or(Value::Null, |reason| json!({ "reason": reason }));
    match policy {
        ToolPolicy::Allow if ask.is_none() => run(site, &call.id, &call.name, arguments, DecidedBy::Policy).await,
        ToolPolicy::Deny => {
            let message = format!(
                "the person's policy for `{}` is deny: it does not run in this agent; do without it or ask the person",
                call.name
            );
            let invocation = invocation(site, &call.id, &call.name, arguments, DecidedBy::Policy);
            site.tools.record_refusal(invocation, message.clone()).await;
            failure(&ToolFailure::new(ErrorCategory::Denied, message))
        }
        ToolPolicy::Allow | ToolPolicy::Ask => match site.tools.validate(&call.name, &arguments) {
            // The person is asked only about a call that could run.
            Err(error) if error.category == ErrorCategory::InvalidArguments => failure(&error),
            _ => Dispatched::Park { arguments, render, kind: PendingKind::Approval },
        },
    }
}

/// Runs a call the person approved (with their edit of its arguments, if any).
pub(crate) async fn run_approved(site: &CallSite<'_>, id: &str, name: &str, arguments: Value) -> ToolOutcome {
    match run(site, id, name, arguments, DecidedBy::Person).await {
        Dispatched::Finished(outcome) => outcome,
        Dispatched::Park { .. } => unreachable!("running a call never parks it"),
    }
}

fn invocation(site: &CallSite<'_>, id: &str, name: &str, arguments: Value, decided_by: DecidedBy) -> Invocation {
    Invocation {
        agent: site.agent.clone(),
        name: name.to_owned(),
        args: arguments,
        caller: Caller::Agent,
        conversation_id: Some(site.conversation_id.to_owned()),
        tool_call_id: Some(id.to_owned()),
        decided_by: Some(decided_by),
    }
}

async fn run(site: &CallSite<'_>, id: &str, name: &str, arguments: Value, decided_by: DecidedBy) -> Dispatched {
    let invocation = invocation(site, id, name, arguments, decided_by);
    match site.tools.invoke(invocation, site.cancel).await {
        Ok(output) => Dispatched::Finished(ToolOutcome::success(cap_output(output, site.max_output_size))),
        Err(error) => failure(&error),
    }
}

/// A result no longer than `limit` bytes of JSON: a longer one becomes its first bytes as a
/// string, with a marker saying how much was cut.
pub fn cap_output(output: Value, limit: usize) -> Value {
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
