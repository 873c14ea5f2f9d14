//! Notifications: messages to the person outside a run — the agent's `notify`, a schedule's
//! result, a schedule that was missed. The canvas lists them and receives new ones live; a
//! channel (Telegram) sends each once, reading this table as its outbox.
//!
//! Invariants: the agent's own notifications are rate-limited here, counted and inserted in
//! one transaction (`[notify] max_per_hour`, `max_chars`), so two calls at once cannot both
//! pass the last free slot; a notification goes to a channel at most once (`telegram` moves
//! from `pending` exactly once, by a conditional UPDATE); times come from the store's clock.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::AgentId;

use crate::{Store, StoreError};

/// `[notify]` in config.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// Notifications an agent may send with `notify` per rolling hour.
    pub max_per_hour: i64,
    /// The longest notification text.
    pub max_chars: usize,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self { max_per_hour: 10, max_chars: 2000 }
    }
}

/// Where a notification comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationSource {
    /// The agent's `notify` tool: rate-limited.
    Agent,
    /// The scheduler: a schedule's result, or a missed schedule. Bounded by the schedules' own
    /// limits, so not counted against `notify`.
    Schedule,
    /// A usage budget: its soft threshold reached, or spent. Once per budget and period.
    Budget,
}

impl NotificationSource {
    fn as_str(self) -> &'static str {
        match self {
            NotificationSource::Agent => "agent",
            NotificationSource::Schedule => "schedule",
            NotificationSource::Budget => "budget",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification {
    pub source: NotificationSource,
    pub title: String,
    pub text: String,
    /// The conversation to open for more (a schedule's run, the conversation that notified).
    pub conversation_id: Option<String>,
    pub schedule_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notification {
    pub id: i64,
    pub agent_id: String,
    pub source: NotificationSource,
    pub title: String,
    pub text: String,
    pub conversation_id: Option<String>,
    pub schedule_id: Option<i64>,
    pub created_at: i64,
    pub read_at: Option<i64>,
}

fn from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Notification, StoreError> {
    let source: String = row.try_get("source")?;
    Ok(Notification {
        id: row.try_get("id")?,
        agent_id: row.try_get("agent_id")?,
        source: match source.as_str() {
            "schedule" => NotificationSource::Schedule,
            "budget" => NotificationSource::Budget,
            _ => NotificationSource::Agent,
        },
        title: row.try_get("title")?,
        text: row.try_get("text")?,
        conversation_id: row.try_get("conversation_id")?,
        schedule_id: row.try_get("schedule_id")?,
        created_at: row.try_get("created_at")?,
        read_at: row.try_get("read_at")?,
    })
}

const COLUMNS: &str = "id, agent_id, source, title, text, conversation_id, schedule_id, created_at, read_at";

const HOUR_MS: i64 = 3_600_000;

impl Store {
    pub fn notify_config(&self) -> &NotifyConfig {
        &self.notify_config
    }

    /// The same store with these notification limits.
    pub fn with_notify(mut self, notify_config: NotifyConfig) -> Self {
        self.notify_config = notify_config;
        self
    }

    /// Stores a notification; the agent's are refused past `max_per_hour` (RateLimited, saying
    /// when the next one may go).
    pub async fn add_notification(&self, agent: &AgentId, new: &NewNotification) -> Result<Notification, StoreError> {
        let config = &self.notify_config;
        let now = self.clock.now_ms();
        if new.text.trim().is_empty() {
            return Err(StoreError::InvalidEdit("the notification's text is empty".into()));
        }
        if new.text.chars().count() > config.max_chars {
            return Err(StoreError::LimitExceeded(format!(
                "the text has {} characters; [notify] max_chars is {}",
                new.text.chars().count(),
                config.max_chars
            )));
        }
        let mut transaction = self.begin_write().await?;
        if new.source == NotificationSource::Agent {
            let recent: Vec<i64> = sqlx::query_scalar(
                "SELECT created_at FROM notifications WHERE agent_id = ? AND source = 'agent' AND created_at > ? \
                 ORDER BY created_at",
            )
            .bind(agent.as_str())
            .bind(now - HOUR_MS)
            .fetch_all(&mut *transaction)
            .await?;
            if recent.len() as i64 >= config.max_per_hour {
                let oldest = recent.first().copied().unwrap_or(now);
                let retry_after_secs = ((oldest + HOUR_MS - now) / 1000).max(1);
                return Err(StoreError::RateLimited {
                    message: format!(
                        "{} notifications were sent in the last hour, the limit ([notify] max_per_hour); \
                         the next may go in {retry_after_secs} s",
                        recent.len()
                    ),
                    retry_after_secs,
                });
            }
        }
        let id = insert_notification(&mut transaction, agent, new, now).await?;
        transaction.commit().await?;
        self.notification_signal.notify_waiters();
        self.notification(id).await
    }

    /// Resolves when a notification is stored in this process (the delivery loop waits on it,
    /// and also looks now and then for rows another process wrote).
    pub fn notification_stored(&self) -> tokio::sync::futures::Notified<'_> {
        self.notification_signal.notified()
    }

    pub async fn notification(&self, id: i64) -> Result<Notification, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM notifications WHERE id = ?")))
            .bind(id)
            .fetch_optional(&self.reader)
            .await?
            .ok_or_else(|| StoreError::ItemNotFound { kind: "notification", name: id.to_string() })?;
        from_row(&row)
    }

    /// The agent's notifications with an id above `after`, newest first (at most `limit`).
    pub async fn list_notifications(
        &self,
        agent: &AgentId,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Notification>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notifications WHERE agent_id = ? AND id > ? ORDER BY id DESC LIMIT ?"
        )))
        .bind(agent.as_str())
        .bind(after)
        .bind(limit.clamp(1, 500))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// Every agent's notifications with an id above `after`, oldest first (the delivery loop's
    /// feed of the live hub).
    pub async fn notifications_after(&self, after: i64, limit: i64) -> Result<Vec<Notification>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notifications WHERE id > ? ORDER BY id LIMIT ?"
        )))
        .bind(after)
        .bind(limit.clamp(1, 500))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// The highest notification id (0 when there is none).
    pub async fn last_notification_id(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM notifications").fetch_one(&self.reader).await?)
    }

    /// Marks a notification read (once; later calls keep the first time).
    pub async fn mark_notification_read(&self, agent: &AgentId, id: i64) -> Result<Notification, StoreError> {
        sqlx::query("UPDATE notifications SET read_at = COALESCE(read_at, ?) WHERE agent_id = ? AND id = ?")
            .bind(self.clock.now_ms())
            .bind(agent.as_str())
            .bind(id)
            .execute(&self.writer)
            .await?;
        let notification = self.notification(id).await?;
        if notification.agent_id != agent.as_str() {
            return Err(StoreError::ItemNotFound { kind: "notification", name: id.to_string() });
        }
        Ok(notification)
    }

    /// Notifications Telegram has not had yet, oldest first.
    pub async fn notifications_for_telegram(&self, limit: i64) -> Result<Vec<Notification>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notifications WHERE telegram = 'pending' ORDER BY id LIMIT ?"
        )))
        .bind(limit.clamp(1, 500))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// Records what became of a notification on Telegram (`sent`, `failed`, `skipped`): once.
    pub async fn set_notification_telegram(&self, id: i64, state: TelegramDelivery) -> Result<bool, StoreError> {
        let state = match state {
            TelegramDelivery::Sent => "sent",
            TelegramDelivery::Failed => "failed",
            TelegramDelivery::Skipped => "skipped",
        };
        let changed = sqlx::query("UPDATE notifications SET telegram = ? WHERE id = ? AND telegram = 'pending'")
            .bind(state)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(changed.rows_affected() == 1)
    }
}

/// Inserts a notification inside the caller's transaction; its id.
pub(crate) async fn insert_notification(
    transaction: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    agent: &AgentId,
    new: &NewNotification,
    now: i64,
) -> Result<i64, StoreError> {
    Ok(sqlx::query(
        "INSERT INTO notifications (agent_id, source, title, text, conversation_id, schedule_id, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(agent.as_str())
    .bind(new.source.as_str())
    .bind(new.title.trim())
    .bind(&new.text)
    .bind(new.conversation_id.as_deref())
    .bind(new.schedule_id)
    .bind(now)
    .execute(&mut **transaction)
    .await?
    .last_insert_rowid())
}

/// What became of a notification on Telegram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelegramDelivery {
    Sent,
    /// Telegram refused it for good (the person blocked the bot).
    Failed,
    /// Telegram is not configured, or the agent has no chat there.
    Skipped,
}
