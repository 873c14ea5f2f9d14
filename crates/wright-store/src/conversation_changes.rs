//! What the person does to a conversation as a whole: rename it, archive it (it leaves the
//! list, nothing is lost) and delete it (its events and waiting calls go with it).
//!
//! Invariant: a conversation whose run is going is not deleted (the run would write into a
//! conversation that no longer exists); stop it first. Execution records and memory history
//! keep the conversation's id as a plain reference, so they outlive it.

use wright_core::AgentId;

use crate::conversations::Conversation;
use crate::{Store, StoreError};

const MAX_TITLE_CHARS: usize = 200;

impl Store {
    pub async fn rename_conversation(&self, id: &str, title: &str) -> Result<Conversation, StoreError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(StoreError::InvalidEdit("a conversation's title must not be empty".into()));
        }
        if title.chars().count() > MAX_TITLE_CHARS {
            return Err(StoreError::LimitExceeded(format!(
                "a conversation's title is at most {MAX_TITLE_CHARS} characters"
            )));
        }
        let mut transaction = self.begin_write().await?;
        let changed = sqlx::query("UPDATE conversations SET title = ? WHERE id = ?")
            .bind(title)
            .bind(id)
            .execute(&mut *transaction)
            .await?
            .rows_affected();
        if changed == 0 {
            return Err(StoreError::ConversationNotFound(id.to_owned()));
        }
        transaction.commit().await?;
        self.conversation(id).await
    }

    /// Archives (`true`) or brings back (`false`) a conversation.
    pub async fn set_conversation_archived(&self, id: &str, archived: bool) -> Result<Conversation, StoreError> {
        let mut transaction = self.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE conversations SET archived_at = CASE WHEN ? THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END \
             WHERE id = ?",
        )
        .bind(archived)
        .bind(id)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(StoreError::ConversationNotFound(id.to_owned()));
        }
        transaction.commit().await?;
        self.conversation(id).await
    }

    /// The agent's archived conversations, most recently active first.
    pub async fn list_archived_conversations(&self, agent: &AgentId) -> Result<Vec<Conversation>, StoreError> {
        self.require_agent(agent).await?;
        let ids: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM conversations WHERE agent_id = ? AND archived_at IS NOT NULL ORDER BY updated_at DESC, id DESC",
        )
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        let mut conversations = Vec::with_capacity(ids.len());
        for (id,) in ids {
            conversations.push(self.conversation(&id).await?);
        }
        Ok(conversations)
    }

    /// Deletes a conversation with its events and waiting calls, in one transaction.
    pub async fn delete_conversation(&self, id: &str) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        let status: Option<(String,)> = sqlx::query_as("SELECT status FROM conversations WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut *transaction)
            .await?;
        match status {
            None => return Err(StoreError::ConversationNotFound(id.to_owned())),
            Some((status,)) if status == "running" => {
                return Err(StoreError::InvalidEdit(
                    "this conversation's run is going; stop it before deleting the conversation".into(),
                ));
            }
            Some(_) => {}
        }
        for statement in [
            "DELETE FROM pending_calls WHERE conversation_id = ?",
            "DELETE FROM events WHERE conversation_id = ?",
            "DELETE FROM conversations WHERE id = ?",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *transaction).await?;
        }
        transaction.commit().await?;
        Ok(())
    }
}
