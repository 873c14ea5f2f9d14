//! What the model sees of the conversation, kept current as the run appends.

use std::collections::BTreeMap;

use wright_core::{Event, EventBody, EventKind, Notice};

use crate::ports::Transcript;

/// What the model sees of the conversation: the latest compaction summary, the events after
/// it that a model request carries, and their size in characters (what compaction watches).
/// Built from the stored events once per run and after each compaction, then kept current
/// with what the run appends, so a turn costs the same on a long conversation as on a short one.
#[derive(Default)]
pub(crate) struct ModelView {
    pub(crate) summary: Option<String>,
    pub(crate) history: Vec<Event>,
    pub(crate) chars: usize,
    /// When each of the person's messages was sent, by `seq` (see `Transcript::sent_at`).
    pub(crate) sent_at: BTreeMap<i64, String>,
}

impl ModelView {
    /// The view of the stored events, with when the person's messages were sent.
    pub(crate) async fn load(transcript: &dyn Transcript) -> Result<Self, String> {
        let mut view = Self::of(transcript.events().await?);
        view.sent_at = transcript.sent_at().await?;
        Ok(view)
    }

    /// The history as the model reads it: each of the person's messages headed by when it was
    /// sent. Derived from stored data only, so every request of a conversation sends an
    /// earlier message byte for byte as before.
    pub(crate) fn as_sent(&self) -> Vec<Event> {
        let mut sent = self.history.clone();
        for event in &mut sent {
            if let (EventBody::User { text, .. }, Some(at)) = (&mut event.body, self.sent_at.get(&event.seq)) {
                *text = format!("[{at}]\n{text}");
            }
        }
        sent
    }

    pub(crate) fn of(events: Vec<Event>) -> Self {
        let compaction = events.iter().rev().find_map(|event| match &event.body {
            EventBody::Notice(Notice::Compaction { summary, through_seq }) => Some((summary.clone(), *through_seq)),
            _ => None,
        });
        let (summary, after) = match compaction {
            Some((summary, through_seq)) => (Some(summary), through_seq),
            None => (None, 0),
        };
        let mut view = Self { summary, ..Self::default() };
        view.extend(events.into_iter().filter(|event| event.seq > after));
        view
    }

    /// Adds newly stored events; only the kinds a model request carries are kept.
    pub(crate) fn extend(&mut self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            if event.kind() != EventKind::Notice {
                self.chars += size(&event);
                self.history.push(event);
            }
        }
    }
}

pub(crate) fn size(event: &Event) -> usize {
    let body = match &event.body {
        EventBody::User { text, .. } | EventBody::Assistant { text, .. } => text.len(),
        EventBody::ToolCall { arguments, .. } => arguments.to_string().len(),
        EventBody::ToolResult { output, .. } => output.to_string().len(),
        EventBody::Notice(_) => 0,
    };
    event.content.len() + body
}
