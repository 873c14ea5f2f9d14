//! Web Push subscriptions: the browsers the person asked to be notified on (issue 30).
//!
//! Invariants: one row per endpoint (a browser that subscribes again replaces its keys, it
//! does not add a device); at most `max` rows, so a client cannot grow the table without
//! bound; times come from the store's clock.

use sqlx::Row;

use crate::{Store, StoreError};

/// A browser's subscription, as `PushManager.subscribe` gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPushSubscription {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscription {
    pub id: i64,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub label: String,
    pub created_at: i64,
    pub last_sent_at: Option<i64>,
    pub last_error: Option<String>,
}

const COLUMNS: &str = "id, endpoint, p256dh, auth, label, created_at, last_sent_at, last_error";

fn from_row(row: &sqlx::sqlite::SqliteRow) -> Result<PushSubscription, StoreError> {
    Ok(PushSubscription {
        id: row.try_get("id")?,
        endpoint: row.try_get("endpoint")?,
        p256dh: row.try_get("p256dh")?,
        auth: row.try_get("auth")?,
        label: row.try_get("label")?,
        created_at: row.try_get("created_at")?,
        last_sent_at: row.try_get("last_sent_at")?,
        last_error: row.try_get("last_error")?,
    })
}

impl Store {
    /// Stores a browser's subscription, or renews the keys of one already stored for its
    /// endpoint. A new one beyond `max` is refused (LimitExceeded).
    pub async fn add_push_subscription(
        &self,
        new: &NewPushSubscription,
        max: usize,
    ) -> Result<PushSubscription, StoreError> {
        let mut transaction = self.begin_write().await?;
        let existing: Option<i64> = sqlx::query_scalar("SELECT id FROM push_subscriptions WHERE endpoint = ?")
            .bind(&new.endpoint)
            .fetch_optional(&mut *transaction)
            .await?;
        let id = match existing {
            Some(id) => {
                sqlx::query(
                    "UPDATE push_subscriptions SET p256dh = ?, auth = ?, label = ?, last_error = NULL WHERE id = ?",
                )
                .bind(&new.p256dh)
                .bind(&new.auth)
                .bind(&new.label)
                .bind(id)
                .execute(&mut *transaction)
                .await?;
                id
            }
            None => {
                let count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM push_subscriptions").fetch_one(&mut *transaction).await?;
                if usize::try_from(count).unwrap_or(usize::MAX) >= max {
                    return Err(StoreError::LimitExceeded(format!(
                        "{count} devices are subscribed, the limit ([push] max_subscriptions is {max}); remove one first"
                    )));
                }
                sqlx::query(
                    "INSERT INTO push_subscriptions (endpoint, p256dh, auth, label, created_at) VALUES (?, ?, ?, ?, ?)",
                )
                .bind(&new.endpoint)
                .bind(&new.p256dh)
                .bind(&new.auth)
                .bind(&new.label)
                .bind(self.clock.now_ms())
                .execute(&mut *transaction)
                .await?
                .last_insert_rowid()
            }
        };
        transaction.commit().await?;
        self.push_subscription(id).await
    }

    pub async fn push_subscription(&self, id: i64) -> Result<PushSubscription, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM push_subscriptions WHERE id = ?")))
            .bind(id)
            .fetch_optional(&self.reader)
            .await?
            .ok_or_else(|| StoreError::ItemNotFound { kind: "push subscription", name: id.to_string() })?;
        from_row(&row)
    }

    /// Every subscription, oldest first.
    pub async fn push_subscriptions(&self) -> Result<Vec<PushSubscription>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM push_subscriptions ORDER BY id")))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(from_row).collect()
    }

    pub async fn delete_push_subscription(&self, id: i64) -> Result<(), StoreError> {
        let deleted = sqlx::query("DELETE FROM push_subscriptions WHERE id = ?").bind(id).execute(&self.writer).await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::ItemNotFound { kind: "push subscription", name: id.to_string() });
        }
        Ok(())
    }

    /// Records how the last push to a subscription went: `None` for a success.
    pub async fn record_push(&self, id: i64, error: Option<&str>) -> Result<(), StoreError> {
        let query = match error {
            None => sqlx::query("UPDATE push_subscriptions SET last_sent_at = ?, last_error = NULL WHERE id = ?")
                .bind(self.clock.now_ms())
                .bind(id),
            Some(error) => {
                sqlx::query("UPDATE push_subscriptions SET last_error = ? WHERE id = ?").bind(error).bind(id)
            }
        };
        query.execute(&self.writer).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browser(endpoint: &str) -> NewPushSubscription {
        NewPushSubscription {
            endpoint: endpoint.to_owned(),
            p256dh: "key".to_owned(),
            auth: "auth".to_owned(),
            label: "Firefox on Linux".to_owned(),
        }
    }

    #[tokio::test]
    async fn a_browser_subscribes_once_per_endpoint_within_the_limit_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("app.db"), Default::default()).await.unwrap();
        let first = store.add_push_subscription(&browser("https://push.example/a"), 2).await.unwrap();
        let mut renewed = browser("https://push.example/a");
        renewed.p256dh = "new key".to_owned();
        let again = store.add_push_subscription(&renewed, 2).await.unwrap();
        assert_eq!((again.id, again.p256dh.as_str()), (first.id, "new key"));
        store.add_push_subscription(&browser("https://push.example/b"), 2).await.unwrap();
        let refused = store.add_push_subscription(&browser("https://push.example/c"), 2).await;
        assert!(matches!(refused, Err(StoreError::LimitExceeded(_))), "{refused:?}");
        store.record_push(first.id, Some("410 Gone")).await.unwrap();
        assert_eq!(store.push_subscription(first.id).await.unwrap().last_error.as_deref(), Some("410 Gone"));
        store.record_push(first.id, None).await.unwrap();
        let after = store.push_subscription(first.id).await.unwrap();
        assert!(after.last_error.is_none() && after.last_sent_at.is_some());
        store.delete_push_subscription(first.id).await.unwrap();
        assert_eq!(store.push_subscriptions().await.unwrap().len(), 1);
        assert!(matches!(store.delete_push_subscription(first.id).await, Err(StoreError::ItemNotFound { .. })));
    }
}
