//! Compaction: the older part of a long conversation summarised by the model, stored as a
//! notice; events are never deleted, and a cut only ever falls just before a user message.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wright_core::{Event, EventBody, EventKind, NewEvent, Notice};

use super::stored;
use super::view::{ModelView, size};
use crate::AgentError;
use crate::ports::{Model, ModelError, ModelRequest, Transcript};

/// Summarises the older part of the history and stores the summary as a compaction notice;
/// the caller rebuilds its view from the stored events. Returns false when there is no safe
/// place to cut (a cut only ever falls just before a user message, so a tool call is never
/// separated from its result) or the summary was cancelled.
pub(super) async fn compact(
    model: &dyn Model,
    transcript: &dyn Transcript,
    view: &ModelView,
    keep_recent_chars: usize,
    cancel: &CancellationToken,
    fence: impl FnOnce(&mut [Event]),
) -> Result<bool, AgentError> {
    let history = &view.history;
    let mut kept = 0;
    let mut cut = None;
    for (index, event) in history.iter().enumerate().rev() {
        kept += size(event);
        if event.kind() == EventKind::User && index > 0 {
            cut = Some(index);
            if kept >= keep_recent_chars {
                break;
            }
        }
    }
    let Some(cut) = cut else { return Ok(false) };
    let mut older = history[..cut].to_vec();
    // The summary becomes part of the system message: outside content is fenced here too.
    fence(&mut older);
    let instruction = match &view.summary {
        Some(summary) => format!(
            "Here is the summary of even earlier turns:\n{summary}\n\nWrite one summary of everything above, for yourself, \
             to continue this conversation later: the user's goals, decisions, facts learned, open tasks and the state of the work. \
             Be complete but brief."
        ),
        None => "Write a summary of the conversation above, for yourself, to continue it later: the user's goals, decisions, \
                 facts learned, open tasks and the state of the work. Be complete but brief."
            .to_owned(),
    };
    older.push(Event { seq: 0, content: String::new(), body: EventBody::User { text: instruction, component: None } });
    let request = ModelRequest {
        system: "You summarise conversations between a person and their agent, faithfully and briefly.".to_owned(),
        history: &older,
        tools: Arc::default(),
        temperature: None,
        max_output_tokens: None,
        require_tool_call: false,
        tail: String::new(),
    };
    let quiet = |_: &str| {};
    let reply = match model.reply(request, &quiet, cancel).await {
        Ok(reply) => reply,
        Err(ModelError::Cancelled) => return Ok(false),
        Err(error) => return Err(error.into()),
    };
    let through_seq = history[cut - 1].seq;
    transcript
        .append(vec![NewEvent::notice(Notice::Compaction { summary: reply.text, through_seq })])
        .await
        .map_err(stored)?;
    Ok(true)
}
