//! Live updates of conversations: one broadcast channel per conversation that has listeners
//! or a run, fed by the run and read by every open page's event stream.
//!
//! The channel only carries what happens from now on; a page that connects late first reads
//! the stored events after the last one it has, then follows the channel, so nothing is lost
//! between the two (the stream drops channel items it already replayed).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use tokio::sync::broadcast;
use wright_core::ConversationStatus;
use wright_store::StoredEvent;

/// One thing a page is told about a conversation.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Update {
    /// A stored event.
    Event(StoredEvent),
    /// Assistant text as it streams; the stored assistant event replaces it.
    Delta { text: String },
    /// The conversation's status changed.
    Status { status: ConversationStatus, error: Option<String> },
}

/// Room for a burst of deltas from a fast model; a page that falls this far behind gets a
/// `Lagged` error and reloads from the store.
const CHANNEL_CAPACITY: usize = 1024;

#[derive(Default)]
pub struct Hub {
    /// Held only to look up or create a sender, never across an await.
    channels: Mutex<HashMap<String, broadcast::Sender<Update>>>,
}

impl Hub {
    pub fn subscribe(&self, conversation_id: &str) -> broadcast::Receiver<Update> {
        let mut channels = self.channels.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        channels.entry(conversation_id.to_owned()).or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0).subscribe()
    }

    /// Sends to current listeners; with none, the update is simply not delivered (the store
    /// has everything that matters) and the idle channel is dropped.
    pub fn publish(&self, conversation_id: &str, update: Update) {
        let mut channels = self.channels.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(sender) = channels.get(conversation_id)
            && sender.send(update).is_err()
        {
            channels.remove(conversation_id);
        }
    }
}
