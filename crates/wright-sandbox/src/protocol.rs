//! The messages between the pool and a worker: one JSON object per line on the worker's
//! stdin/stdout. Nothing else may be written to the worker's stdout.
//!
//! A call is `Run` → any number of (`Call` → `Reply`) → `Done`. The worker blocks on each
//! `Reply`, so at most one host call is outstanding per worker and no ids are needed.

use crate::config::Limits;
use crate::host::FetchRequest;
use crate::outcome::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum ToWorker {
    Run {
        code: String,
        args: Value,
        input: Option<String>,
        limits: Limits,
    },
    /// `deadline_passed`: the host gave up waiting for its own answer at the call's deadline.
    Reply {
        reply: Result<Value, String>,
        #[serde(default)]
        deadline_passed: bool,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum FromWorker {
    Call { call: HostCall },
    Done { outcome: WireOutcome },
}

/// A host call as the prelude makes it (`native.host(op, payloadJson)`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum HostCall {
    StateGet { key: String },
    StateSet { key: String, value: Value },
    StateDelete { key: String },
    StateList { prefix: Option<String> },
    Fetch(FetchRequest),
}

/// The outcome as it crosses the pipe: the result stays JSON text until the host parses it once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum WireOutcome {
    Ok { result_json: String, logs: Vec<String> },
    Err { kind: ErrorKind, error: String, stack: Option<String>, logs: Vec<String> },
}
