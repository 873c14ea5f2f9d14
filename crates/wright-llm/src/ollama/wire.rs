//! Ollama's native JSON, as typed serde structs.

use serde::{Deserialize, Serialize};

/// `GET /api/tags`: `{"models": [{"name": "qwen3:8b", "model", "size", …}]}`.
#[derive(Deserialize)]
pub(crate) struct Tags {
    #[serde(default)]
    pub models: Vec<Tag>,
}

#[derive(Deserialize)]
pub(crate) struct Tag {
    pub name: String,
}

/// `POST /api/embed`: `{"model", "input": [..], "dimensions"?}`. Ollama truncates an input
/// longer than the model's context unless `truncate` is false; its default is kept (a memory
/// is short, and a truncated one still has a useful vector).
#[derive(Debug, Serialize)]
pub(crate) struct EmbedRequest<'a> {
    pub model: &'a str,
    pub input: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
}

/// `{"model", "embeddings": [[..], ..], "total_duration", "load_duration", "prompt_eval_count"}`.
#[derive(Debug, Deserialize)]
pub(crate) struct EmbedResponse {
    #[serde(default)]
    pub embeddings: Vec<Vec<f32>>,
    /// Ollama's own count of the tokens it read.
    pub prompt_eval_count: Option<u64>,
}
