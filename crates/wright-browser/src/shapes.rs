//! Arguments and results of the browser tools, with seed 002's names and shapes. Arguments
//! deserialize from the model's JSON (and derive a JSON Schema for the tool registry); results
//! serialize to exactly the documented fields, plus two optional ones every result may carry:
//! `blocked` (requests the egress policy refused since the last call) and `session_lost`
//! (this conversation's earlier browser state is gone, and why).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::policy::BlockedRequest;

/// When a navigation counts as complete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitUntil {
    /// The `load` event: the page and its sub-resources have loaded.
    #[default]
    Load,
    /// The `DOMContentLoaded` event: the HTML is parsed; images may still be loading.
    Domcontentloaded,
    /// No network connections for 500 ms after load started.
    Networkidle,
}

/// `browser_navigate` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NavigateArgs {
    /// URL to navigate to
    pub url: String,
    /// When to consider navigation complete. Default: load.
    #[serde(default)]
    pub wait_until: WaitUntil,
}

/// `browser_navigate` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Navigated {
    /// Where the page ended up, after redirects.
    pub url: String,
    pub title: String,
    /// HTTP status of the main document; 0 when there was no HTTP response (about:blank).
    pub status: i64,
}

/// `browser_screenshot` arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ScreenshotArgs {
    /// CSS selector to screenshot a specific element. If omitted, captures the full viewport.
    #[serde(default)]
    pub selector: Option<String>,
    /// Capture the entire scrollable page. Default: false.
    #[serde(default)]
    pub full_page: bool,
}

/// `browser_screenshot` result: a PNG, base64-encoded, and its size in pixels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Screenshot {
    pub image: String,
    pub width: u32,
    pub height: u32,
}

/// `browser_click` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ClickArgs {
    /// CSS selector of the element to click
    pub selector: String,
}

/// `browser_type` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TypeArgs {
    /// CSS selector of the input element
    pub selector: String,
    /// Text to type
    pub text: String,
    /// Clear existing content before typing. Default: false.
    #[serde(default)]
    pub clear_first: bool,
}

/// `browser_extract_text` arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ExtractTextArgs {
    /// CSS selector to extract from. If omitted, extracts from the entire page body.
    #[serde(default)]
    pub selector: Option<String>,
}

/// `browser_extract_text` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Text {
    pub text: String,
}

/// `browser_extract_html` arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ExtractHtmlArgs {
    /// CSS selector. Defaults to body.
    #[serde(default)]
    pub selector: Option<String>,
    /// Include the element's own tag. Default: false (innerHTML only).
    #[serde(default)]
    pub outer: bool,
}

/// `browser_extract_html` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Html {
    pub html: String,
}

/// `browser_evaluate` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EvaluateArgs {
    /// JavaScript to evaluate in the page context. The return value is serialized as JSON.
    /// An expression, or a function body using `return` (awaited if it is a promise).
    pub code: String,
}

/// `browser_evaluate` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluated {
    pub result: serde_json::Value,
}

/// `browser_click`, `browser_type` and `browser_close` result: `{ok: true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Done {
    pub ok: bool,
}

impl Done {
    pub(crate) const OK: Done = Done { ok: true };
}

/// What every browser operation returns: the tool's own fields, flattened, plus what the agent
/// should know about the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reply<T> {
    #[serde(flatten)]
    pub value: T,
    /// Requests of this conversation's page that the egress policy refused since the last call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedRequest>,
    /// Set when this call had to start a new session: the earlier pages, cookies and logins of
    /// the conversation are gone, and this says why (browser crashed, idle, evicted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_lost: Option<String>,
}

impl<T: Serialize> Reply<T> {
    /// The reply as the JSON value a tool returns.
    pub fn to_json(&self) -> serde_json::Value {
        // Serialising these plain structs cannot fail (string keys, no non-finite floats
        // outside `serde_json::Value`), so a failure here would be a bug in this crate.
        serde_json::to_value(self).unwrap_or_else(|error| serde_json::json!({ "error": error.to_string() }))
    }
}
