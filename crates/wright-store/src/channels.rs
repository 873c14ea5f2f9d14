//! What a channel (Telegram) keeps across restarts: where its poller stopped, and which
//! conversation each chat talks to now.
//!
//! Invariant: the cursor only moves forward (`MAX`), so an update is never asked for again
//! once it was handled, whichever process wrote last.

use sqlx::Row;
use wright_core::AgentId;

use crate::{Store, StoreError};

/// A chat of a channel, bound to an agent and its current conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelChat {
    pub chat_id: String,
    pub user_id: String,
    pub agent_id: String,
    pub conversation_id: Option<String>,
}

/// The channels there are; a closed set, as the schema's CHECK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Telegram,
}

impl ChannelKind {
    fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Telegram => "telegram",
        }
    }
}

impl Store {
    /// The next update the channel asks for (0 before the first).
    pub async fn channel_cursor(&self, channel: ChannelKind) -> Result<i64, StoreError> {
        let position: Option<i64> = sqlx::query_scalar("SELECT position FROM channel_cursors WHERE channel = ?")
            .bind(channel.as_str())
            .fetch_optional(&self.reader)
            .await?;
        Ok(position.unwrap_or(0))
    }

    /// Moves the cursor to `position` (never back).
    pub async fn set_channel_cursor(&self, channel: ChannelKind, position: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO channel_cursors (channel, position) VALUES (?1, ?2) \
             ON CONFLICT (channel) DO UPDATE SET position = MAX(position, ?2)",
        )
        .bind(channel.as_str())
        .bind(position)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    pub async fn channel_chat(&self, channel: ChannelKind, chat_id: &str) -> Result<Option<ChannelChat>, StoreError> {
        let row = sqlx::query(
            "SELECT chat_id, user_id, agent_id, conversation_id FROM channel_chats WHERE channel = ? AND chat_id = ?",
        )
        .bind(channel.as_str())
        .bind(chat_id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|row| {
            Ok(ChannelChat {
                chat_id: row.try_get("chat_id")?,
                user_id: row.try_get("user_id")?,
                agent_id: row.try_get("agent_id")?,
                conversation_id: row.try_get("conversation_id")?,
            })
        })
        .transpose()
    }

    /// The chats of an agent on a channel (where its notifications go).
    pub async fn channel_chats(&self, channel: ChannelKind, agent: &AgentId) -> Result<Vec<ChannelChat>, StoreError> {
        let rows = sqlx::query(
            "SELECT chat_id, user_id, agent_id, conversation_id FROM channel_chats WHERE channel = ? AND agent_id = ? \
             ORDER BY created_at",
        )
        .bind(channel.as_str())
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ChannelChat {
                    chat_id: row.try_get("chat_id")?,
                    user_id: row.try_get("user_id")?,
                    agent_id: row.try_get("agent_id")?,
                    conversation_id: row.try_get("conversation_id")?,
                })
            })
            .collect()
    }

    /// Binds the chat to `conversation_id` (creating the chat's row on first contact).
    pub async fn bind_channel_chat(&self, channel: ChannelKind, chat: &ChannelChat) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        sqlx::query(
            "INSERT INTO channel_chats (channel, chat_id, user_id, agent_id, conversation_id, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (channel, chat_id) DO UPDATE SET \
             user_id = ?3, agent_id = ?4, conversation_id = ?5, updated_at = ?6",
        )
        .bind(channel.as_str())
        .bind(&chat.chat_id)
        .bind(&chat.user_id)
        .bind(&chat.agent_id)
        .bind(chat.conversation_id.as_deref())
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }
}
