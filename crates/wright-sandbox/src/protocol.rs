//! The messages between the pool and a worker: one JSON object per line on the worker's
//! stdin/stdout, except that a `Run` line is followed by the call's code and input as raw UTF-8
//! (their lengths are in the line): as JSON strings, a 10 KB input of JSON text cost the worker
//! ~0.4 M instructions a call to unescape (and the host as much to escape). Likewise a `Done`
//! line of a success is followed by the result's JSON text, raw (its length is in the line): as
//! a JSON string it was escaped by the worker and unescaped by the host before the host parsed
//! it. Nothing else may be written to the worker's stdout.
//!
//! A call is `Run` → any number of (`Call` → `Reply`) → `Done`. The worker blocks on each
//! `Reply`, so at most one host call is outstanding per worker and no ids are needed.
//!
//! The enums are externally tagged (`{"run": {...}}`), which serde reads in one pass, without
//! first buffering the whole message to find an internal tag.

use crate::config::Limits;
use crate::host::FetchRequest;
use crate::outcome::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// Followed by `code_bytes` bytes of code, then `input_bytes` bytes of input.
    Run { code_bytes: usize, input_bytes: Option<usize>, args: Value, limits: Limits },
    /// `deadline_passed`: the host gave up waiting for its own answer at the call's deadline.
    Reply {
        reply: Result<Value, String>,
        #[serde(default)]
        deadline_passed: bool,
    },
}

impl ToWorker {
    /// The bytes to write to the worker for a call: the `Run` line, the code, the input.
    pub(crate) fn encode_run(
        code: &str,
        input: Option<&str>,
        args: &Value,
        limits: Limits,
    ) -> Result<Vec<u8>, serde_json::Error> {
        let header = ToWorkerRef::Run { code_bytes: code.len(), input_bytes: input.map(str::len), args, limits };
        // The header first, then one buffer of the exact size: growing a buffer that already
        // holds the code and a large input would copy them again.
        let header = serde_json::to_vec(&header)?;
        let mut bytes = Vec::with_capacity(header.len() + 1 + code.len() + input.map_or(0, str::len));
        bytes.extend_from_slice(&header);
        bytes.push(b'\n');
        bytes.extend_from_slice(code.as_bytes());
        bytes.extend_from_slice(input.unwrap_or_default().as_bytes());
        Ok(bytes)
    }

    /// A message that is one line (a `Reply`), newline included.
    pub(crate) fn encode_line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut bytes = serde_json::to_vec(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// `ToWorker::Run` borrowing its `args`, so the host need not clone them to send them.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum ToWorkerRef<'a> {
    Run { code_bytes: usize, input_bytes: Option<usize>, args: &'a Value, limits: Limits },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorker {
    Call {
        call: HostCall,
    },
    /// A success is followed by `result_bytes` bytes of its result ([`ResultText`]).
    Done {
        outcome: DoneOutcome,
    },
}

/// The outcome as its `Done` line carries it: a success without its result text.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DoneOutcome {
    Ok {
        result_bytes: usize,
        /// The bytes are the result string itself, not JSON ([`ResultText::String`]).
        #[serde(default)]
        string: bool,
        logs: Vec<String>,
    },
    Err {
        kind: ErrorKind,
        error: String,
        stack: Option<String>,
        logs: Vec<String>,
    },
}

/// `FromWorker::Done` borrowing the outcome's parts, so the worker need not copy them to send.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum FromWorkerRef<'a> {
    Done { outcome: DoneOutcomeRef<'a> },
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum DoneOutcomeRef<'a> {
    Ok { result_bytes: usize, string: bool, logs: &'a [String] },
    Err { kind: ErrorKind, error: &'a str, stack: Option<&'a str>, logs: &'a [String] },
}

impl FromWorker {
    /// The bytes a worker writes at the end of a call: the `Done` line, then (for a success)
    /// the result's JSON text.
    pub(crate) fn encode_done(outcome: &WireOutcome) -> Result<Vec<u8>, serde_json::Error> {
        let (header, result) = match outcome {
            WireOutcome::Ok { result, logs } => {
                let string = matches!(result, ResultText::String(_));
                (DoneOutcomeRef::Ok { result_bytes: result.text().len(), string, logs }, result.text())
            }
            WireOutcome::Err { kind, error, stack, logs } => {
                (DoneOutcomeRef::Err { kind: *kind, error, stack: stack.as_deref(), logs }, "")
            }
        };
        let mut bytes = Vec::with_capacity(64 + result.len());
        serde_json::to_writer(&mut bytes, &FromWorkerRef::Done { outcome: header })?;
        bytes.push(b'\n');
        bytes.extend_from_slice(result.as_bytes());
        Ok(bytes)
    }

    /// A message that is one line (a `Call`), newline included.
    pub(crate) fn encode_line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut bytes = serde_json::to_vec(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// A host call as the prelude's parts make it (`request(op, payload)` in `state.js`, `fetch.js`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum HostCall {
    StateGet { key: String },
    StateSet { key: String, value: Value },
    StateDelete { key: String },
    StateList { prefix: Option<String> },
    Fetch(FetchRequest),
}

/// A call's outcome as the engine produces it and the host receives it: the result stays text
/// until the host parses it once.
#[derive(Debug, Clone)]
pub(crate) enum WireOutcome {
    Ok { result: ResultText, logs: Vec<String> },
    Err { kind: ErrorKind, error: String, stack: Option<String>, logs: Vec<String> },
}

/// A successful call's result on its way to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResultText {
    /// The result's JSON text.
    Json(String),
    /// A result that is a string, as the string itself: escaping it into JSON in the worker and
    /// parsing it again in the host would cost a text-returning tool twice its length's work.
    String(String),
}

impl ResultText {
    pub(crate) fn text(&self) -> &str {
        match self {
            ResultText::Json(text) | ResultText::String(text) => text,
        }
    }

    /// The length of the result as JSON text, which the result limit counts.
    pub(crate) fn json_len(&self) -> usize {
        match self {
            ResultText::Json(text) => text.len(),
            ResultText::String(text) => json_string_len(text),
        }
    }

    /// The result as JSON text (for tests and embedders that want the text).
    #[cfg(test)]
    pub(crate) fn into_json(self) -> String {
        match self {
            ResultText::Json(text) => text,
            ResultText::String(text) => serde_json::to_string(&text).unwrap_or_default(),
        }
    }
}

/// The length of `text` as a JSON string, quotes included, escaped as JSON.stringify and
/// serde_json escape it: `"` and `\\` and the control characters with a short escape take two
/// bytes, the other control characters six (`\\u00XX`).
fn json_string_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::json_string_len;

    #[test]
    fn a_strings_json_length_is_counted_as_serde_json_writes_it() {
        for text in ["", "plain", "\"quoted\" \\ back", "tab\tnew\nline\r\u{8}\u{c}", "\u{0}\u{1f}\u{7f}", "ünï ✓ 🚀"]
        {
            assert_eq!(json_string_len(text), serde_json::to_string(text).unwrap().len(), "{text:?}");
        }
    }
}
