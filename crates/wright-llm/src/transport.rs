//! The HTTP side shared by every wire: send, retry with backoff, branch on status and
//! content type, frame the body (SSE, a streamed JSON array, or one JSON document), and hand
//! each frame to the wire's decoder.
//!
//! A wire ([`Wire`]) only converts: canonical request → HTTP call, error body → [`LlmError`],
//! frames → [`StreamEvent`]s. Everything here is the same for all of them, so retry and
//! cancellation behave alike across providers.
//!
//! Retry rule: a retryable error ([`LlmError::is_retryable`]) is retried only while nothing
//! has been delivered to the caller — a retry after text streamed would show it twice — and
//! only when the provider's `retry-after` hint is within `max_delay`. A server error while
//! streaming, before anything was delivered, is retried with the request asked whole when the
//! wire has that form ([`Wire::build_whole`]): llama.cpp's streaming tool-call parser fails
//! ("Invalid diff: now finding less tool calls!") on answers its whole-response path reads.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::LlmError;
use crate::canonical::{EventStream, Request, StreamEvent};
use crate::json_array::JsonArraySplitter;
use crate::sse::{SseEvent, SseParser};

/// How failed requests are retried. Delays are in milliseconds in config files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// The first backoff delay; each next one doubles.
    pub initial_delay_ms: u64,
    /// No backoff is longer than this; a provider asking for a longer wait is not retried.
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 3, initial_delay_ms: 1_000, max_delay_ms: 60_000 }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        Self { max_retries: 0, ..Self::default() }
    }

    /// The wait before retry number `attempt` (0-based), or None when the provider's hint is
    /// longer than we are willing to wait.
    pub fn delay(&self, attempt: u32, hint: Option<Duration>) -> Option<Duration> {
        let max = Duration::from_millis(self.max_delay_ms);
        if let Some(hint) = hint {
            return (hint <= max).then_some(hint);
        }
        let backoff = self.initial_delay_ms.saturating_mul(1u64 << attempt.min(30));
        Some(Duration::from_millis(backoff).min(max))
    }
}

/// One HTTP request, as a wire builds it.
#[derive(Debug, Clone)]
pub(crate) struct HttpCall {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// Whether a streamed body is asked for (decides how a JSON body is read).
    pub streaming: bool,
}

/// Turns a provider's frames into events. One decoder per attempt.
pub(crate) trait Decoder: Send {
    /// One SSE event or one element of a streamed JSON array. Returns true when the provider
    /// signalled the end (`[DONE]`, `message_stop`, `response.completed`).
    fn event(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError>;
    /// The end of the body (or of the stream, after `event` returned true): usage and finish,
    /// calls not yet emitted, or [`LlmError::Incomplete`] when the provider never finished.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
}

/// One provider's wire format.
pub(crate) trait Wire: Send + Sync + 'static {
    fn build(&self, request: &Request) -> Result<HttpCall, LlmError>;
    /// The same request asked whole (not streamed), tried when streaming it failed with a
    /// server error before anything was delivered; `None` when the wire has no such fallback.
    fn build_whole(&self, _request: &Request) -> Option<Result<HttpCall, LlmError>> {
        None
    }
    /// Classifies a non-2xx response.
    fn classify(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError;
    fn decoder(&self) -> Box<dyn Decoder>;
    /// Reads a whole (non-streamed) response body.
    fn whole(&self, body: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
}

/// Error bodies are read up to this size; the rest is not needed to classify them.
const ERROR_BODY_LIMIT: usize = 1 << 20;

/// Builds the shared HTTP client. reqwest's TLS uses the ring provider, which must be
/// installed once per process; a second install fails harmlessly.
pub(crate) fn http_client(connect_timeout: Duration, idle_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    if rustls::crypto::ring::default_provider().install_default().is_err() {
        // Already installed in this process (by us or the binary): that is all we need.
    }
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        // An idle timeout, not a total one: a long answer may stream for many minutes.
        .read_timeout(idle_timeout)
        .build()
        .map_err(|error| LlmError::Config(format!("cannot build the HTTP client: {}", error_chain(&error))))
}

pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Runs one model turn over HTTP and streams its events. Every error is redacted
/// (`redactor`) before it is logged or sent: this is where provider errors are made.
///
/// The work happens in a spawned task that owns the connection and sends events through a
/// bounded channel; it stops when the body ends, when the cancellation token fires, or when
/// the returned stream is dropped (the channel closes).
pub(crate) fn run(
    client: reqwest::Client,
    wire: Arc<dyn Wire>,
    retry: RetryPolicy,
    redactor: wright_core::Redactor,
    request: Request,
    cancel: CancellationToken,
) -> EventStream {
    let (sender, mut receiver) = mpsc::channel(64);
    tokio::spawn(async move {
        let outcome = match wire.build(&request) {
            Ok(call) => {
                let whole = if call.streaming { wire.build_whole(&request).and_then(Result::ok) } else { None };
                attempts(&client, wire.as_ref(), &retry, &redactor, call, whole, &sender, &cancel).await
            }
            Err(error) => Err(error.redacted(&redactor)),
        };
        if let Err(error) = outcome
            && sender.send(Err(error)).await.is_err()
        {
            // The stream was dropped: nobody is left to tell.
        }
    });
    Box::pin(futures::stream::poll_fn(move |context| receiver.poll_recv(context)))
}

type Sender = mpsc::Sender<Result<StreamEvent, LlmError>>;

#[allow(clippy::too_many_arguments, reason = "one attempt loop; bundling these would only hide them")]
async fn attempts(
    client: &reqwest::Client,
    wire: &dyn Wire,
    retry: &RetryPolicy,
    redactor: &wright_core::Redactor,
    mut call: HttpCall,
    mut whole: Option<HttpCall>,
    sender: &Sender,
    cancel: &CancellationToken,
) -> Result<(), LlmError> {
    let mut attempt = 0;
    loop {
        let mut delivered = false;
        let error = match once(client, wire, &call, sender, cancel, &mut delivered).await {
            Ok(()) => return Ok(()),
            // Before anything logs it.
            Err(error) => error.redacted(redactor),
        };
        if delivered || !error.is_retryable() || attempt >= retry.max_retries {
            return Err(error);
        }
        if matches!(error, LlmError::ServerError { .. })
            && let Some(whole) = whole.take()
        {
            tracing::info!(%error, "the server failed to stream the answer: asking for it whole");
            call = whole;
        }
        let Some(delay) = retry.delay(attempt, error.retry_after()) else { return Err(error) };
        tracing::info!(attempt = attempt + 1, ?delay, %error, "retrying model request");
        attempt += 1;
        tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// How the body of a 2xx response is framed.
enum Framing {
    Sse(SseParser),
    JsonArray(JsonArraySplitter),
    /// Not yet known (a streamed JSON body: array or single document?) or a whole document.
    Whole(Vec<u8>),
}

/// Reads the body of a 2xx response, chunk by chunk, into events. Synchronous, so the same
/// code serves the network and offline replays.
pub(crate) struct BodyReader {
    framing: Framing,
    decoder: Box<dyn Decoder>,
    streaming: bool,
    frames: Vec<SseEvent>,
    elements: Vec<String>,
    finished: bool,
}

impl BodyReader {
    pub(crate) fn new(wire: &dyn Wire, content_type: &str, streaming: bool) -> Self {
        let framing = if content_type.to_ascii_lowercase().starts_with("text/event-stream") {
            Framing::Sse(SseParser::new())
        } else {
            Framing::Whole(Vec::new())
        };
        Self { framing, decoder: wire.decoder(), streaming, frames: Vec::new(), elements: Vec::new(), finished: false }
    }

    /// Whether the provider signalled the end: nothing more needs reading.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    pub(crate) fn feed(&mut self, chunk: &[u8], events: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished {
            return Ok(());
        }
        if self.streaming
            && let Framing::Whole(buffered) = &mut self.framing
            && buffered.iter().chain(chunk.iter()).find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[')
        {
            // A streamed JSON array (Gemini without alt=sse): read element by element.
            let head = std::mem::take(buffered);
            let mut splitter = JsonArraySplitter::default();
            splitter.feed(&head, &mut self.elements);
            self.framing = Framing::JsonArray(splitter);
        }
        self.finished = match &mut self.framing {
            Framing::Sse(parser) => {
                parser.feed(chunk, &mut self.frames);
                decode_frames(self.decoder.as_mut(), self.frames.drain(..), events)?
            }
            Framing::JsonArray(splitter) => {
                splitter.feed(chunk, &mut self.elements);
                let as_frames = self.elements.drain(..).map(|data| SseEvent { event: None, data, id: None });
                decode_frames(self.decoder.as_mut(), as_frames, events)?
            }
            Framing::Whole(buffered) => {
                buffered.extend_from_slice(chunk);
                false
            }
        };
        Ok(())
    }

    /// The body ended (or the provider signalled the end).
    pub(crate) fn end(&mut self, wire: &dyn Wire, events: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        match &mut self.framing {
            Framing::Sse(parser) => {
                if !self.finished {
                    parser.finish(&mut self.frames);
                    decode_frames(self.decoder.as_mut(), self.frames.drain(..), events)?;
                }
                self.decoder.end(events)
            }
            Framing::JsonArray(splitter) => {
                if !self.finished && splitter.inside_element() {
                    return Err(LlmError::Incomplete("the JSON array stream ended inside an element".to_owned()));
                }
                self.decoder.end(events)
            }
            Framing::Whole(buffered) => wire.whole(buffered, events),
        }
    }
}

/// Decodes a recorded body offline, chunk by chunk, as [`once`] does over the network.
pub(crate) fn decode_offline(
    wire: &dyn Wire,
    streaming: bool,
    status: u16,
    content_type: &str,
    chunks: &[&[u8]],
) -> Vec<Result<StreamEvent, LlmError>> {
    if !(200..300).contains(&status) {
        return vec![Err(wire.classify(status, &HeaderMap::new(), &chunks.concat()))];
    }
    let mut reader = BodyReader::new(wire, content_type, streaming);
    let mut events = Vec::new();
    let mut results = Vec::new();
    for chunk in chunks {
        let fed = reader.feed(chunk, &mut events);
        results.extend(events.drain(..).map(Ok));
        if let Err(error) = fed {
            results.push(Err(error));
            return results;
        }
        if reader.finished() {
            break;
        }
    }
    let ended = reader.end(wire, &mut events);
    results.extend(events.drain(..).map(Ok));
    if let Err(error) = ended {
        results.push(Err(error));
    }
    results
}

async fn once(
    client: &reqwest::Client,
    wire: &dyn Wire,
    call: &HttpCall,
    sender: &Sender,
    cancel: &CancellationToken,
    delivered: &mut bool,
) -> Result<(), LlmError> {
    let mut builder = client.post(&call.url).header(CONTENT_TYPE, "application/json").body(call.body.clone());
    for (name, value) in &call.headers {
        builder = builder.header(*name, value);
    }
    let response = tokio::select! {
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
        response = builder.send() => response.map_err(|error| LlmError::Transport(error_chain(&error)))?,
    };
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = response.bytes_stream();
    if !(200..300).contains(&status) {
        let mut bytes = Vec::new();
        loop {
            let chunk = tokio::select! {
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                chunk = body.next() => chunk,
            };
            match chunk {
                Some(Ok(chunk)) if bytes.len() < ERROR_BODY_LIMIT => bytes.extend_from_slice(&chunk),
                Some(Ok(_)) | None | Some(Err(_)) => break,
            }
        }
        return Err(wire.classify(status, &headers, &bytes));
    }
    let content_type = headers.get(CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    let mut reader = BodyReader::new(wire, content_type, call.streaming);
    let mut events = Vec::new();
    while !reader.finished() {
        let chunk: Option<Result<Bytes, reqwest::Error>> = tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            () = sender.closed() => return Ok(()),
            chunk = body.next() => chunk,
        };
        let Some(chunk) = chunk else { break };
        let chunk = chunk.map_err(|error| LlmError::Transport(error_chain(&error)))?;
        let fed = reader.feed(&chunk, &mut events);
        // What decoded before an error is delivered first: text that streamed stays shown.
        deliver(sender, &mut events, delivered).await?;
        fed?;
    }
    let ended = reader.end(wire, &mut events);
    deliver(sender, &mut events, delivered).await?;
    ended
}

/// Feeds frames to the decoder; true once the provider signalled the end.
fn decode_frames(
    decoder: &mut dyn Decoder,
    frames: impl Iterator<Item = SseEvent>,
    events: &mut Vec<StreamEvent>,
) -> Result<bool, LlmError> {
    for frame in frames {
        if decoder.event(frame.event.as_deref(), &frame.data, events)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Sends decoded events to the caller. A closed receiver is not an error: the caller left.
/// Only what shows counts as delivered: whitespace and token counts sent before an error do
/// not stop a retry (llama.cpp streams a newline, then fails on the call after it).
async fn deliver(sender: &Sender, events: &mut Vec<StreamEvent>, delivered: &mut bool) -> Result<(), LlmError> {
    for event in events.drain(..) {
        *delivered |= match &event {
            StreamEvent::TextDelta(text) | StreamEvent::ThinkingDelta(text) => !text.trim().is_empty(),
            StreamEvent::Usage(_) => false,
            StreamEvent::Thinking(_) | StreamEvent::ToolCall(_) | StreamEvent::Finish(_) => true,
        };
        if sender.send(Ok(event)).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}
