//! The Telegram channel's outbox (migration 0016): each message a chat should show, and what
//! Telegram last accepted for it. The channel writes what it wants ([`Store::outbox_put`]); a
//! worker per chat reads what differs ([`Store::outbox_pending`]) and records each answer.
//!
//! Invariants: a row is `pending` exactly while what it says differs from what Telegram shows
//! (or Telegram has not shown it yet), decided in the same statement as every write (one
//! writer connection, so statements do not interleave): an answer from Telegram records what
//! was sent, and the row stays pending if it changed since it was read — no write is lost. Texts and keyboards are opaque here (Telegram HTML and the
//! Bot API's JSON, made by the channel).

use sqlx::Row;

use crate::{Store, StoreError};

/// One message of the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxItem {
    pub id: i64,
    pub chat_id: i64,
    pub slot: String,
    pub text: String,
    pub keyboard: Option<String>,
    pub fallback_text: Option<String>,
    /// Telegram's id of the message, once sent.
    pub message_id: Option<i64>,
    pub sent_text: Option<String>,
    pub sent_keyboard: Option<String>,
    pub attempts: i64,
}

const COLUMNS: &str =
    "id, chat_id, slot, text, keyboard, fallback_text, message_id, sent_text, sent_keyboard, attempts";

fn item(row: &sqlx::sqlite::SqliteRow) -> Result<OutboxItem, StoreError> {
    Ok(OutboxItem {
        id: row.try_get("id")?,
        chat_id: row.try_get("chat_id")?,
        slot: row.try_get("slot")?,
        text: row.try_get("text")?,
        keyboard: row.try_get("keyboard")?,
        fallback_text: row.try_get("fallback_text")?,
        message_id: row.try_get("message_id")?,
        sent_text: row.try_get("sent_text")?,
        sent_keyboard: row.try_get("sent_keyboard")?,
        attempts: row.try_get("attempts")?,
    })
}

impl Store {
    /// The chat should show `text` (and `keyboard`) in the message `slot`: a new message, or a
    /// change of the one already there. Superseding: only the newest content is ever sent.
    pub async fn outbox_put(
        &self,
        chat_id: i64,
        slot: &str,
        text: &str,
        keyboard: Option<&str>,
        fallback_text: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        // In SET, a column names its old value: the new one is compared with what was sent.
        sqlx::query(
            "INSERT INTO telegram_outbox (chat_id, slot, text, keyboard, fallback_text, state, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6) \
             ON CONFLICT (chat_id, slot) DO UPDATE SET text = ?3, keyboard = ?4, fallback_text = ?5, updated_at = ?6, \
             state = CASE WHEN message_id IS NOT NULL AND sent_text IS ?3 AND sent_keyboard IS ?4 \
                     THEN 'done' ELSE 'pending' END",
        )
        .bind(chat_id)
        .bind(slot)
        .bind(text)
        .bind(keyboard)
        .bind(fallback_text)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The message `slot` keeps its text and shows `keyboard` (None: its buttons go). Nothing
    /// when the chat has no such message.
    pub async fn outbox_set_keyboard(
        &self,
        chat_id: i64,
        slot: &str,
        keyboard: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        sqlx::query(
            "UPDATE telegram_outbox SET keyboard = ?3, updated_at = ?4, \
             state = CASE WHEN state = 'failed' THEN 'failed' \
                     WHEN message_id IS NOT NULL AND sent_text IS text AND sent_keyboard IS ?3 THEN 'done' \
                     ELSE 'pending' END \
             WHERE chat_id = ?1 AND slot = ?2",
        )
        .bind(chat_id)
        .bind(slot)
        .bind(keyboard)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// What the chat does not show yet, oldest first.
    /// The slot of the message Telegram numbered `message_id` in `chat_id`: what a reaction to
    /// that message is about.
    pub async fn outbox_message(&self, chat_id: i64, message_id: i64) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT slot FROM telegram_outbox WHERE chat_id = ? AND message_id = ?")
            .bind(chat_id)
            .bind(message_id)
            .fetch_optional(&self.reader)
            .await?)
    }

    pub async fn outbox_pending(&self, chat_id: i64) -> Result<Vec<OutboxItem>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM telegram_outbox WHERE chat_id = ? AND state = 'pending' ORDER BY id"
        )))
        .bind(chat_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(item).collect()
    }

    /// The chats with something pending (a restart resumes them).
    pub async fn outbox_chats(&self) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar("SELECT DISTINCT chat_id FROM telegram_outbox WHERE state = 'pending'")
            .fetch_all(&self.reader)
            .await?)
    }

    /// Telegram accepted `text` and `keyboard` for row `id` as message `message_id`. The row is
    /// done unless it changed since it was read.
    pub async fn outbox_sent(
        &self,
        id: i64,
        message_id: i64,
        text: &str,
        keyboard: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        sqlx::query(
            "UPDATE telegram_outbox SET message_id = ?2, sent_text = ?3, sent_keyboard = ?4, attempts = 0, \
             last_error = NULL, updated_at = ?5, \
             state = CASE WHEN text IS ?3 AND keyboard IS ?4 THEN 'done' ELSE 'pending' END \
             WHERE id = ?1",
        )
        .bind(id)
        .bind(message_id)
        .bind(text)
        .bind(keyboard)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Telegram refused row `id`'s keyboard: from now on it shows its fallback text (or its
    /// text) without buttons.
    pub async fn outbox_without_keyboard(&self, id: i64) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        sqlx::query(
            "UPDATE telegram_outbox SET text = COALESCE(fallback_text, text), keyboard = NULL, fallback_text = NULL, \
             updated_at = ?2, \
             state = CASE WHEN message_id IS NOT NULL AND sent_text IS COALESCE(fallback_text, text) \
                     AND sent_keyboard IS NULL THEN 'done' ELSE 'pending' END \
             WHERE id = ?1",
        )
        .bind(id)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The message of row `id` can no longer be edited (gone, too old): the next attempt sends
    /// it anew.
    pub async fn outbox_forget_message(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE telegram_outbox SET message_id = NULL, sent_text = NULL, sent_keyboard = NULL, state = 'pending' \
             WHERE id = ?",
        )
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// An attempt failed and will be repeated: counted, with why.
    pub async fn outbox_attempt_failed(&self, id: i64, error: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE telegram_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?")
            .bind(error)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Telegram refused row `id` for good; it is not tried again until it is written again.
    pub async fn outbox_failed(&self, id: i64, error: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE telegram_outbox SET state = 'failed', last_error = ?, updated_at = ? WHERE id = ?")
            .bind(error)
            .bind(self.clock.now_ms())
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Forgets rows settled before `before_ms` (Telegram lets a bot edit a message for 48 hours;
    /// older rows can only be sent anew, which nobody wants). The number removed.
    pub async fn outbox_prune(&self, before_ms: i64) -> Result<u64, StoreError> {
        let removed = sqlx::query("DELETE FROM telegram_outbox WHERE state <> 'pending' AND updated_at < ?")
            .bind(before_ms)
            .execute(&self.writer)
            .await?;
        Ok(removed.rows_affected())
    }
}
