//! `run_sandbox_code` (seed 002 "Code Execution") and the running of agent-made tools: both
//! run JavaScript in the QuickJS sandbox with the agent's state and the guarded `fetch`.

use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use wright_core::AgentId;
use wright_sandbox::{RunLimits, RunOutcome, RunRequest};

use crate::builtin::{Builtin, RUNS_CODE, Tool, with_effects};
use crate::host::AgentHost;
use crate::{Services, ToolError};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RunArgs {
    /// JavaScript: the body of an async function. Must `return` a JSON value or call `resolve(value)`;
    /// code that is one expression (`17 * 23`) returns its value.
    /// `state.get/set/delete/list`, `fetch(url, {method, headers, body})` and `console.log` are available.
    code: String,
    /// Deadline for this run in milliseconds (default 30000, at most 60000 unless the operator
    /// configured another bound).
    timeout_ms: Option<u64>,
}

/// Runs `code` for `agent` with `args`, under `limits`; a failing run is a
/// [`ToolError::Code`] carrying the seed's `{error, kind, logs}` shape.
pub(crate) async fn run_code(
    services: &Services,
    agent: &AgentId,
    code: String,
    args: Value,
    limits: RunLimits,
) -> Result<Value, ToolError> {
    let deadline = Instant::now() + services.sandbox.limits_for(&limits).deadline();
    let host = Arc::new(AgentHost::new(services, agent, deadline));
    let outcome =
        services.sandbox.run(RunRequest::new(code).with_args(args).with_limits(limits), Arc::clone(&host) as _).await;
    // What the code fetched is outside content: the result says from where, for the rules.
    let mut output = outcome.to_json();
    let fetched = host.fetched();
    if let (false, Some(fields)) = (fetched.is_empty(), output.as_object_mut()) {
        fields.insert(wright_core::FETCHED_FIELD.to_owned(), Value::from(fetched));
    }
    match &outcome {
        RunOutcome::Success { .. } => Ok(output),
        RunOutcome::Failure { error, kind, .. } => {
            Err(ToolError::Code { kind: sandbox_category(*kind), message: error.clone(), outcome: output })
        }
    }
}

/// The sandbox's failure kind as the error category every tool family shares.
fn sandbox_category(kind: wright_sandbox::ErrorKind) -> wright_core::ErrorCategory {
    use wright_core::ErrorCategory;
    match kind {
        wright_sandbox::ErrorKind::Syntax => ErrorCategory::Syntax,
        wright_sandbox::ErrorKind::Runtime => ErrorCategory::Runtime,
        wright_sandbox::ErrorKind::Timeout => ErrorCategory::Timeout,
        wright_sandbox::ErrorKind::Memory => ErrorCategory::Memory,
        wright_sandbox::ErrorKind::OutputTooLarge => ErrorCategory::OutputTooLarge,
    }
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![with_effects(
        Builtin::<RunArgs>::boxed(
            "run_sandbox_code",
            "Run JavaScript in the sandbox: for quick calculations, data transformation, or testing logic before you \
         save it as a tool. Same runtime as your tools (state, fetch through the egress guard, console). \
         Returns {result, logs}; a failure returns {error, kind: syntax|runtime|timeout|memory|output_too_large, logs}.",
            |context, args| {
                Box::pin(async move {
                    let bound = context.services.sandbox.config().max_deadline_ms;
                    if let Some(timeout_ms) = args.timeout_ms.filter(|timeout_ms| *timeout_ms > bound) {
                        return Err(ToolError::LimitExceeded(format!(
                            "timeout_ms {timeout_ms} is above the limit of {bound} ms ([sandbox] max_deadline_ms); \
                         ask for {bound} or less"
                        )));
                    }
                    let limits = RunLimits { deadline_ms: args.timeout_ms, ..RunLimits::default() };
                    let code = expression_returned(args.code);
                    run_code(&context.services, &context.agent, code, Value::Object(Default::default()), limits).await
                })
            },
        ),
        RUNS_CODE,
    )]
}

/// Code that is one expression (`17 * 23`, `[1, 2].map(n => n * 2)`), with or without a last
/// `;`, becomes `return (EXPRESSION\n);`: small models write the expression and expect its
/// value, where a function body would return nothing. Whether it is one expression is the
/// sandbox's own compiler's answer (the wrapped text compiles), not a guess from the text;
/// anything else runs as written. The wrapper is no boundary (the sandbox is), so code that
/// closes the parenthesis itself only runs what it could have run anyway. A runtime error's
/// column on the first line is then 8 further right.
fn expression_returned(code: String) -> String {
    let expression = code.trim().trim_end_matches(';').trim_end();
    if expression.is_empty() {
        return code;
    }
    let wrapped = format!("return ({expression}\n);");
    if wright_sandbox::check_syntax(&wrapped).is_ok() { wrapped } else { code }
}

/// `wright sandbox run FILE`: runs `code` as `agent` (its state, the guarded fetch) `repeat`
/// times after `warmup` untimed runs, and reports the outcome with timings.
pub async fn run_file(
    services: &Services,
    agent: &AgentId,
    code: String,
    args: Value,
    input: Option<String>,
    repeat: usize,
    warmup: usize,
) -> wright_sandbox::RepeatReport {
    let deadline = Instant::now()
        + services.sandbox.limits_for(&RunLimits::default()).deadline() * (repeat + warmup).max(1) as u32;
    let host = Arc::new(AgentHost::new(services, agent, deadline));
    let mut request = RunRequest::new(code).with_args(args);
    request.input = input;
    wright_sandbox::run_repeated(&services.sandbox, &request, host, repeat, warmup).await
}
