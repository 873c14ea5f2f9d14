//! Named, versioned things an agent writes: tools and UI components share one engine.
//!
//! A [`Catalog`] names a table of live items and a table of their versions, and the content
//! columns a version holds (all TEXT; JSON is stored as its text). Every create or update
//! writes a version row in the same transaction; rollback writes a new version with old
//! content; delete only marks the item, so history stays and the name can be used again by
//! a new item (new id, version 1). Enabling is not a version: it changes whether an item is
//! offered, not what it is.

use serde_json::Value;
use wright_core::{AgentId, Author};

use crate::documents::VersionMeta;
use crate::{Store, StoreError};

/// Which tables, and what a version holds.
pub(crate) struct Catalog {
    pub(crate) table: &'static str,
    pub(crate) versions: &'static str,
    /// Content columns, in the order of [`Item::content`].
    pub(crate) content: &'static [&'static str],
    /// What the items are called in errors: "tool", "component".
    pub(crate) label: &'static str,
}

/// A live item with its content as stored text, in the catalog's column order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) content: Vec<String>,
    pub(crate) enabled: bool,
    pub(crate) version: i64,
    pub(crate) provenance: Option<String>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
}

/// One stored version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemVersion {
    pub(crate) version: i64,
    pub(crate) content: Vec<String>,
    pub(crate) author: Author,
    pub(crate) reason: Option<String>,
    pub(crate) conversation_id: Option<String>,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) created_at: String,
}

pub(crate) fn decode(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(Box::new(error)))
}

pub(crate) fn parse_json(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(decode)
}

use sqlx::Row;

impl Catalog {
    fn not_found(&self, name: &str) -> StoreError {
        StoreError::ItemNotFound { kind: self.label, name: name.to_owned() }
    }

    fn item_select(&self, filter: &str) -> sqlx::AssertSqlSafe<String> {
        sqlx::AssertSqlSafe(format!(
            "SELECT id, name, {}, enabled, version, provenance, created_at, updated_at FROM {} WHERE {filter}",
            self.content.join(", "),
            self.table
        ))
    }

    fn item_from_row(&self, row: &sqlx::sqlite::SqliteRow) -> Result<Item, StoreError> {
        let columns = self.content.len();
        let content = (0..columns).map(|index| row.try_get::<String, _>(2 + index)).collect::<Result<Vec<_>, _>>()?;
        Ok(Item {
            id: row.try_get(0)?,
            name: row.try_get(1)?,
            content,
            enabled: row.try_get::<i64, _>(2 + columns)? != 0,
            version: row.try_get(3 + columns)?,
            provenance: row.try_get(4 + columns)?,
            created_at: row.try_get(5 + columns)?,
            updated_at: row.try_get(6 + columns)?,
        })
    }

    pub(crate) async fn get(&self, store: &Store, agent: &AgentId, name: &str) -> Result<Option<Item>, StoreError> {
        let row = sqlx::query(self.item_select("agent_id = ? AND name = ? AND deleted_at IS NULL"))
            .bind(agent.as_str())
            .bind(name)
            .fetch_optional(&store.reader)
            .await?;
        row.map(|row| self.item_from_row(&row)).transpose()
    }

    pub(crate) async fn require(&self, store: &Store, agent: &AgentId, name: &str) -> Result<Item, StoreError> {
        self.get(store, agent, name).await?.ok_or_else(|| self.not_found(name))
    }

    pub(crate) async fn list(
        &self,
        store: &Store,
        agent: &AgentId,
        include_disabled: bool,
    ) -> Result<Vec<Item>, StoreError> {
        let rows =
            sqlx::query(self.item_select("agent_id = ? AND deleted_at IS NULL AND (enabled = 1 OR ?) ORDER BY name"))
                .bind(agent.as_str())
                .bind(include_disabled)
                .fetch_all(&store.reader)
                .await?;
        rows.iter().map(|row| self.item_from_row(row)).collect()
    }

    #[allow(clippy::too_many_arguments, reason = "one item's worth of columns, as in market.rs")]
    pub(crate) async fn create(
        &self,
        store: &Store,
        agent: &AgentId,
        name: &str,
        content: &[String],
        enabled: bool,
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<Item, StoreError> {
        let mut transaction = store.begin_write().await?;
        let taken = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT 1 FROM {} WHERE agent_id = ? AND name = ? AND deleted_at IS NULL",
            self.table
        )))
        .bind(agent.as_str())
        .bind(name)
        .fetch_optional(&mut *transaction)
        .await?;
        if taken.is_some() {
            return Err(StoreError::ItemExists { kind: self.label, name: name.to_owned() });
        }
        let placeholders = vec!["?"; self.content.len()].join(", ");
        let mut insert = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {} (agent_id, name, {}, enabled, version, provenance) VALUES (?, ?, {placeholders}, ?, 1, ?) RETURNING id",
            self.table,
            self.content.join(", ")
        )))
        .bind(agent.as_str())
        .bind(name);
        for value in content {
            insert = insert.bind(value.as_str());
        }
        let row =
            insert.bind(enabled).bind(provenance.map(Value::to_string)).fetch_one(&mut *transaction).await.map_err(
                |error| match &error {
                    sqlx::Error::Database(database) if database.is_foreign_key_violation() => {
                        StoreError::AgentNotFound(agent.to_string())
                    }
                    _ => StoreError::Database(error),
                },
            )?;
        let id: i64 = row.try_get(0)?;
        self.insert_version(&mut transaction, id, 1, content, meta).await?;
        transaction.commit().await?;
        self.require(store, agent, name).await
    }

    /// Writes `content` (a `None` keeps that column) as the next version.
    pub(crate) async fn update(
        &self,
        store: &Store,
        agent: &AgentId,
        name: &str,
        patch: &[Option<String>],
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<Item, StoreError> {
        let mut transaction = store.begin_write().await?;
        let row = sqlx::query(self.item_select("agent_id = ? AND name = ? AND deleted_at IS NULL"))
            .bind(agent.as_str())
            .bind(name)
            .fetch_optional(&mut *transaction)
            .await?;
        let current = self.item_from_row(&row.ok_or_else(|| self.not_found(name))?)?;
        let content: Vec<String> =
            current.content.iter().zip(patch).map(|(old, new)| new.clone().unwrap_or_else(|| old.clone())).collect();
        let version = current.version + 1;
        let assignments: String = self.content.iter().map(|column| format!("{column} = ?, ")).collect();
        let mut update = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {} SET {assignments}version = ?, provenance = COALESCE(?, provenance), \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
            self.table
        )));
        for value in &content {
            update = update.bind(value.as_str());
        }
        update.bind(version).bind(provenance.map(Value::to_string)).bind(current.id).execute(&mut *transaction).await?;
        self.insert_version(&mut transaction, current.id, version, &content, meta).await?;
        transaction.commit().await?;
        self.require(store, agent, name).await
    }

    pub(crate) async fn delete(&self, store: &Store, agent: &AgentId, name: &str) -> Result<bool, StoreError> {
        let mut transaction = store.begin_write().await?;
        let deleted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {} SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE agent_id = ? AND name = ? AND deleted_at IS NULL",
            self.table
        )))
        .bind(agent.as_str())
        .bind(name)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(deleted.rows_affected() > 0)
    }

    pub(crate) async fn set_enabled(
        &self,
        store: &Store,
        agent: &AgentId,
        name: &str,
        enabled: bool,
    ) -> Result<Item, StoreError> {
        let mut transaction = store.begin_write().await?;
        let updated = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {} SET enabled = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE agent_id = ? AND name = ? AND deleted_at IS NULL",
            self.table
        )))
        .bind(enabled)
        .bind(agent.as_str())
        .bind(name)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        if updated.rows_affected() == 0 {
            return Err(self.not_found(name));
        }
        self.require(store, agent, name).await
    }

    /// The history of the live item called `name`, newest first.
    pub(crate) async fn versions(
        &self,
        store: &Store,
        agent: &AgentId,
        name: &str,
    ) -> Result<Vec<ItemVersion>, StoreError> {
        let item = self.require(store, agent, name).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT version, {}, author, reason, conversation_id, tool_call_id, created_at FROM {} \
             WHERE item_id = ? ORDER BY version DESC",
            self.content.join(", "),
            self.versions
        )))
        .bind(item.id)
        .fetch_all(&store.reader)
        .await?;
        let columns = self.content.len();
        rows.iter()
            .map(|row| {
                Ok(ItemVersion {
                    version: row.try_get(0)?,
                    content: (0..columns)
                        .map(|index| row.try_get::<String, _>(1 + index))
                        .collect::<Result<Vec<_>, _>>()?,
                    author: Author::parse(&row.try_get::<String, _>(1 + columns)?).map_err(decode)?,
                    reason: row.try_get(2 + columns)?,
                    conversation_id: row.try_get(3 + columns)?,
                    tool_call_id: row.try_get(4 + columns)?,
                    created_at: row.try_get(5 + columns)?,
                })
            })
            .collect()
    }

    /// Writes a new version whose content equals version `to_version`'s.
    pub(crate) async fn rollback(
        &self,
        store: &Store,
        agent: &AgentId,
        name: &str,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<Item, StoreError> {
        let old = self
            .versions(store, agent, name)
            .await?
            .into_iter()
            .find(|version| version.version == to_version)
            .ok_or(StoreError::VersionNotFound { kind: self.label, version: to_version })?;
        let patch: Vec<Option<String>> = old.content.into_iter().map(Some).collect();
        let reason = reason.or_else(|| Some(format!("rollback to version {to_version}")));
        self.update(store, agent, name, &patch, None, &VersionMeta::new(Author::Rollback).with_reason(reason)).await
    }

    async fn insert_version(
        &self,
        transaction: &mut sqlx::SqliteConnection,
        id: i64,
        version: i64,
        content: &[String],
        meta: &VersionMeta,
    ) -> Result<(), StoreError> {
        let placeholders = vec!["?"; self.content.len()].join(", ");
        let mut insert = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {} (item_id, version, {}, author, reason, conversation_id, tool_call_id) \
             VALUES (?, ?, {placeholders}, ?, ?, ?, ?)",
            self.versions,
            self.content.join(", ")
        )))
        .bind(id)
        .bind(version);
        for value in content {
            insert = insert.bind(value.as_str());
        }
        insert
            .bind(meta.author.as_str())
            .bind(meta.reason.as_deref())
            .bind(meta.conversation_id.as_deref())
            .bind(meta.tool_call_id.as_deref())
            .execute(&mut *transaction)
            .await?;
        Ok(())
    }
}
