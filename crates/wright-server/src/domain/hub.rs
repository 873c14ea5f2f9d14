//! Live updates of conversations: one broadcast channel per conversation that has listeners,
//! fed by the run and read by every open page's event stream and by channels (Telegram); and
//! of each agent's notifications, on a topic of their own.
//!
//! The channel only carries what happens from now on; a page that connects late first reads
//! the stored events after the last one it has, then follows the channel, so nothing is lost
//! between the two (the stream drops channel items it already replayed).
//!
//! Invariant: a channel exists exactly while a [`Subscription`] to it does. It is made by the
//! first subscriber (publishing to a conversation nobody follows allocates nothing) and removed
//! when the last subscription is dropped, so opening and closing the streams of many
//! conversations leaves no memory behind.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    /// A notification for the person (on an agent's notification topic, [`notifications_topic`]).
    Notification(wright_store::Notification),
    /// A run parked on a question or an approval (on [`WAITING_TOPIC`] only, for Web Push).
    Waiting { agent_id: String, conversation_id: String },
}

/// The topic on which every run that parks waiting for the person is announced. Not a UUID,
/// so no conversation can have this name.
pub const WAITING_TOPIC: &str = "waiting";

/// The hub topic of an agent's notifications. Conversation ids are UUIDs, so no conversation
/// can have this name.
pub fn notifications_topic(agent: &str) -> String {
    format!("notifications:{agent}")
}

/// Room for a burst of deltas from a fast model; a page that falls this far behind gets a
/// `Lagged` error and reloads from the store.
const CHANNEL_CAPACITY: usize = 1024;

#[derive(Default)]
pub struct Hub {
    /// Held only to look up, create or remove a sender, never across an await.
    channels: Mutex<HashMap<String, broadcast::Sender<Update>>>,
}

/// A page's receiving end; dropping the last one of a conversation frees its channel.
pub struct Subscription {
    hub: Arc<Hub>,
    conversation_id: String,
    /// Always Some until `drop`, which takes it so the receiver is gone before the count is read.
    receiver: Option<broadcast::Receiver<Update>>,
}

impl Hub {
    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<String, broadcast::Sender<Update>>> {
        self.channels.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn subscribe(self: &Arc<Self>, conversation_id: &str) -> Subscription {
        let receiver = self
            .channels()
            .entry(conversation_id.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe();
        Subscription { hub: Arc::clone(self), conversation_id: conversation_id.to_owned(), receiver: Some(receiver) }
    }

    /// Sends to current listeners; with none, the update is simply not delivered (the store
    /// has everything that matters).
    pub fn publish(&self, conversation_id: &str, update: Update) {
        if let Some(sender) = self.channels().get(conversation_id) {
            // An error means no receiver: the last subscription is being dropped right now
            // and removes the channel itself.
            sender.send(update).ok();
        }
    }

    /// How many conversations have a channel now (for tests and diagnostics).
    pub fn channel_count(&self) -> usize {
        self.channels().len()
    }
}

impl Subscription {
    pub async fn recv(&mut self) -> Result<Update, broadcast::error::RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(broadcast::error::RecvError::Closed),
        }
    }

    /// The next update if one is already there (to drain a burst of deltas before acting).
    pub fn try_recv(&mut self) -> Result<Update, broadcast::error::TryRecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.try_recv(),
            None => Err(broadcast::error::TryRecvError::Closed),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Take the lock first: `subscribe` holds it while adding a receiver, so the count read
        // here cannot miss a subscriber that is joining at this moment.
        let mut channels = self.hub.channels();
        drop(self.receiver.take());
        if channels.get(&self.conversation_id).is_some_and(|sender| sender.receiver_count() == 0) {
            channels.remove(&self.conversation_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_lives_exactly_as_long_as_its_subscriptions() {
        let hub = Arc::new(Hub::default());
        hub.publish("a", Update::Delta { text: "nobody listens".into() });
        assert_eq!(hub.channel_count(), 0, "publishing allocates nothing");
        let first = hub.subscribe("a");
        let second = hub.subscribe("a");
        let other = hub.subscribe("b");
        assert_eq!(hub.channel_count(), 2);
        drop(first);
        assert_eq!(hub.channel_count(), 2, "one subscriber of a is left");
        drop(second);
        drop(other);
        assert_eq!(hub.channel_count(), 0);
    }
}
