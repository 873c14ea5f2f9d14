//! Delivers notifications: every one stored (by `notify`, the scheduler, another process) is
//! published on its agent's hub topic for the canvas, pushed to the person's subscribed
//! browsers (Web Push, [`crate::push`]), then handed to Telegram when it is
//! configured (the `notifications` table is the outbox; without Telegram they are marked
//! skipped, so enabling it later does not send a backlog).
//!
//! One task, owned by the runtime, stopped by the server's shutdown token. It wakes when this
//! process stores a notification and every two seconds (for rows another process wrote).

use std::sync::Arc;
use std::time::Duration;

use wright_store::TelegramDelivery;

use crate::AppState;
use crate::domain::hub::{Update, notifications_topic};
use crate::telegram::TelegramChannel;

/// How often rows written by another process (the CLI) are looked for.
const LOOK_EVERY: Duration = Duration::from_secs(2);

pub fn spawn(state: AppState, telegram: Option<Arc<TelegramChannel>>) {
    tokio::spawn(async move {
        // What the canvas already has is replayed from the store by its stream.
        let mut published = match state.store.last_notification_id().await {
            Ok(id) => id,
            Err(error) => {
                tracing::error!(%error, "cannot read notifications; none will be delivered");
                return;
            }
        };
        loop {
            // Armed before looking, so a notification stored while we deliver wakes the next look.
            let stored = state.store.notification_stored();
            tokio::pin!(stored);
            stored.as_mut().enable();
            match state.store.notifications_after(published, 200).await {
                Ok(notifications) => {
                    for notification in notifications {
                        published = notification.id;
                        if let Some(pusher) = &state.push {
                            let (pusher, store) = (Arc::clone(pusher), state.store.clone());
                            let message = crate::push::notification_message(&notification);
                            tokio::spawn(async move { pusher.send_to_all(&store, &message).await });
                        }
                        state
                            .hub
                            .publish(&notifications_topic(&notification.agent_id), Update::Notification(notification));
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot read new notifications"),
            }
            match &telegram {
                Some(telegram) => telegram.deliver_notifications(&state).await,
                None => skip_telegram(&state).await,
            }
            tokio::select! {
                () = &mut stored => {}
                () = tokio::time::sleep(LOOK_EVERY) => {}
                () = state.shutdown.cancelled() => return,
            }
        }
    });
}

async fn skip_telegram(state: &AppState) {
    let Ok(pending) = state.store.notifications_for_telegram(200).await else { return };
    for notification in pending {
        if let Err(error) = state.store.set_notification_telegram(notification.id, TelegramDelivery::Skipped).await {
            tracing::warn!(%error, "cannot mark a notification");
        }
    }
}
