//! The `fetch_url` tool result, rendered from an [`EgressResponse`].
//!
//! Shape (seed 002 plus the additions): `{status, headers, body, ok, truncated}`, and
//! `encoding: "base64"` when the body is not text. A body is sent as text when its media type
//! is textual (or absent) and its bytes are UTF-8; anything else (images, archives, text in a
//! legacy charset) is sent as base64, so the agent never receives mangled bytes that look
//! like text.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Serialize;

use crate::EgressResponse;

/// What the `fetch_url` tool returns to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FetchUrlResult {
    pub status: u16,
    /// Lower-cased names; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    pub body: String,
    pub ok: bool,
    pub truncated: bool,
    /// `"base64"` when `body` is base64; absent for text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<&'static str>,
}

impl FetchUrlResult {
    pub fn from_response(response: &EgressResponse) -> Self {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &response.headers {
            headers
                .entry(name.clone())
                .and_modify(|joined| {
                    joined.push_str(", ");
                    joined.push_str(value);
                })
                .or_insert_with(|| value.clone());
        }
        let (body, encoding) = match text_body(response) {
            Some(text) => (text, None),
            None => (base64::engine::general_purpose::STANDARD.encode(&response.body), Some("base64")),
        };
        FetchUrlResult {
            status: response.status,
            headers,
            body,
            ok: response.ok(),
            truncated: response.truncated,
            encoding,
        }
    }

    /// As a JSON value, for tool results.
    pub fn to_json(&self) -> serde_json::Value {
        // Cannot fail: string keys and plain values only.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Whether a media type is text a model can read.
pub fn is_textual_media_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    if kind == "text" || subtype.ends_with("+json") || subtype.ends_with("+xml") {
        return true;
    }
    kind == "application"
        && matches!(
            subtype,
            "json"
                | "xml"
                | "javascript"
                | "ecmascript"
                | "x-javascript"
                | "x-www-form-urlencoded"
                | "x-ndjson"
                | "ndjson"
                | "graphql"
                | "x-yaml"
                | "yaml"
                | "toml"
                | "csv"
                | "x-sh"
        )
}

/// The body as text, or `None` when it should go out as base64.
fn text_body(response: &EgressResponse) -> Option<String> {
    if response.header("content-type").is_some_and(|content_type| !is_textual_media_type(content_type)) {
        return None;
    }
    match std::str::from_utf8(&response.body) {
        Ok(text) => Some(text.to_owned()),
        // A cut in the middle of a multi-byte character at the very end of a truncated body:
        // drop the partial character rather than call the whole body binary.
        Err(error) if response.truncated && error.error_len().is_none() => {
            Some(String::from_utf8_lossy(&response.body[..error.valid_up_to()]).into_owned())
        }
        Err(_) => None,
    }
}
