//! Integration tests of wright-llm: every recorded wire fixture replayed through the real
//! HTTP client (whole, one byte at a time, random split points) and offline; the scripted
//! fake provider end to end for each adapter (parallel calls, split arguments, retries,
//! errors, cancellation); the text protocol over a real stream.

mod embeddings;
mod fake;
mod fixtures;
mod text_protocol;
