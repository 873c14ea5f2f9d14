//! JSON ⇄ SQLite values, the one mapping used for params and for result rows.
//!
//! Params: `null` → NULL, `true`/`false` → 1/0 (SQLite has no boolean), integers → INTEGER,
//! other numbers → REAL, strings → TEXT, arrays and objects → TEXT holding their JSON (so
//! `json_extract(?, '$.a')` works on them). An integer outside SQLite's signed 64-bit range is
//! refused rather than silently rounded.
//!
//! Results: NULL → `null`, INTEGER and REAL → numbers (±infinity, which JSON cannot hold, as the
//! strings `"Infinity"` / `"-Infinity"`), TEXT → string (invalid UTF-8 replaced), BLOB →
//! `{"blob_hex": "…"}` (read it back with `unhex(?)`).

use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use serde_json::{Map, Number, Value};

use crate::AgentDbError;

/// The SQLite value for one JSON param; `index` is 1-based, for the error message.
pub(crate) fn to_sql(index: usize, param: &Value) -> Result<ToSqlOutput<'_>, AgentDbError> {
    Ok(match param {
        Value::Null => ToSqlOutput::Owned(SqlValue::Null),
        Value::Bool(flag) => ToSqlOutput::Owned(SqlValue::Integer(i64::from(*flag))),
        Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                ToSqlOutput::Owned(SqlValue::Integer(integer))
            } else if number.is_u64() {
                return Err(AgentDbError::Params {
                    message: format!(
                        "param {index}: the integer {number} is outside SQLite's range \
                         (-9223372036854775808 to 9223372036854775807); pass it as a string"
                    ),
                });
            } else {
                // Neither i64 nor u64: serde_json holds it as f64.
                ToSqlOutput::Owned(SqlValue::Real(number.as_f64().unwrap_or(f64::NAN)))
            }
        }
        Value::String(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
        Value::Array(_) | Value::Object(_) => ToSqlOutput::Owned(SqlValue::Text(param.to_string())),
    })
}

/// One result value and the bytes it adds to the result's JSON text. The count is close to
/// exact for numbers and blobs and a lower bound for text (escapes are not counted): cheap
/// enough for every value of a 1,000-row scan, and precise enough for a cap of megabytes.
pub(crate) fn from_sql(value: ValueRef<'_>) -> (Value, usize) {
    match value {
        ValueRef::Null => (Value::Null, 4),
        ValueRef::Integer(integer) => (Value::Number(integer.into()), decimal_digits(integer)),
        ValueRef::Real(real) => match Number::from_f64(real) {
            Some(number) => (Value::Number(number), 24),
            None if real > 0.0 => (Value::String("Infinity".to_owned()), 10),
            None if real < 0.0 => (Value::String("-Infinity".to_owned()), 11),
            None => (Value::Null, 4),
        },
        ValueRef::Text(bytes) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let size = text.len() + 2;
            (Value::String(text), size)
        }
        ValueRef::Blob(bytes) => {
            let size = bytes.len() * 2 + 16;
            let mut object = Map::with_capacity(1);
            object.insert("blob_hex".to_owned(), Value::String(hex(bytes)));
            (Value::Object(object), size)
        }
    }
}

fn decimal_digits(integer: i64) -> usize {
    let sign = usize::from(integer < 0);
    sign + integer.unsigned_abs().checked_ilog10().map_or(1, |log| log as usize + 1)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}
