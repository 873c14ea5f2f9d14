//! Browser sessions: one row per login, keyed by the SHA-256 of the random id its cookie
//! carries (a copy of the database cannot be replayed as a cookie). A session ends when it
//! expires, when logout deletes it, or when the access token it was opened with changes (its
//! fingerprint no longer matches).

use std::time::Duration;

use crate::{Store, StoreError};

impl Store {
    /// Records a new session valid for `lifetime`; expired sessions are swept on the way.
    pub async fn create_session(
        &self,
        id_hash: &str,
        token_fingerprint: &str,
        lifetime: Duration,
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query("DELETE FROM sessions WHERE expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
            .execute(&mut *transaction)
            .await?;
        sqlx::query(
            "INSERT INTO sessions (id_hash, token_fingerprint, expires_at) \
             VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?))",
        )
        .bind(id_hash)
        .bind(token_fingerprint)
        .bind(format!("+{} seconds", lifetime.as_secs()))
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Whether a live session with this id hash was opened with this token.
    pub async fn session_is_valid(&self, id_hash: &str, token_fingerprint: &str) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = sqlx::query_as(
            "SELECT 1 FROM sessions WHERE id_hash = ? AND token_fingerprint = ? \
             AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(id_hash)
        .bind(token_fingerprint)
        .fetch_optional(&self.reader)
        .await?;
        Ok(row.is_some())
    }

    /// Ends a session; true if there was one.
    pub async fn delete_session(&self, id_hash: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE id_hash = ?").bind(id_hash).execute(&self.writer).await?;
        Ok(done.rows_affected() > 0)
    }

    /// This installation's id, made once by the migration that introduced it.
    pub async fn installation_id(&self) -> Result<String, StoreError> {
        let (id,): (String,) = sqlx::query_as("SELECT id FROM installation").fetch_one(&self.reader).await?;
        Ok(id)
    }
}
