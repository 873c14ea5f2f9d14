//! Ollama's own API (`/api/...`), as opposed to the Chat Completions it serves under `/v1`
//! (spoken by the OpenAI-compatible adapter): the model list and embeddings.

pub(crate) mod wire;
