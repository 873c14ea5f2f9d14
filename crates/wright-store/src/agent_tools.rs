//! Tools an agent wrote: their current definition and every version of it.
//!
//! The store keeps what it is given; checking a tool (its name, that its schema is a JSON
//! Schema, that its code compiles) is the tool layer's job and happens before it gets here.
//! Enabling and disabling are not versions: they change whether a tool is offered, not what
//! it is.

use serde::Serialize;
use serde_json::Value;
use wright_core::{AgentId, Author};

use crate::documents::VersionMeta;
use crate::{Store, StoreError};

/// A tool's current definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentTool {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
    pub enabled: bool,
    pub version: i64,
    /// Where an installed tool came from (marketplace listing, version, hash); None if the
    /// agent wrote it here.
    pub provenance: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// The content of a tool: what a version holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolContent {
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
}

/// A partial update: `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPatch {
    pub description: Option<String>,
    pub parameter_schema: Option<Value>,
    pub code: Option<String>,
}

/// One version of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolVersion {
    pub version: i64,
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

type ToolRow = (i64, String, String, String, String, i64, i64, Option<String>, String, String);

const TOOL_COLUMNS: &str =
    "id, name, description, parameter_schema, code, enabled, version, provenance, created_at, updated_at";

fn decode(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(Box::new(error)))
}

fn tool_from_row(row: ToolRow) -> Result<AgentTool, StoreError> {
    let (id, name, description, schema, code, enabled, version, provenance, created_at, updated_at) = row;
    Ok(AgentTool {
        id,
        name,
        description,
        parameter_schema: serde_json::from_str(&schema).map_err(decode)?,
        code,
        enabled: enabled != 0,
        version,
        provenance: provenance.as_deref().map(serde_json::from_str).transpose().map_err(decode)?,
        created_at,
        updated_at,
    })
}

impl Store {
    /// The live tool called `name`, if any.
    pub async fn agent_tool(&self, agent: &AgentId, name: &str) -> Result<Option<AgentTool>, StoreError> {
        let row: Option<ToolRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TOOL_COLUMNS} FROM agent_tools WHERE agent_id = ? AND name = ? AND deleted_at IS NULL"
        )))
        .bind(agent.as_str())
        .bind(name)
        .fetch_optional(&self.reader)
        .await?;
        row.map(tool_from_row).transpose()
    }

    async fn require_agent_tool(&self, agent: &AgentId, name: &str) -> Result<AgentTool, StoreError> {
        self.agent_tool(agent, name).await?.ok_or_else(|| StoreError::ToolNotFound(name.to_owned()))
    }

    /// The agent's live tools by name, enabled ones only unless `include_disabled`.
    pub async fn list_agent_tools(
        &self,
        agent: &AgentId,
        include_disabled: bool,
    ) -> Result<Vec<AgentTool>, StoreError> {
        let rows: Vec<ToolRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TOOL_COLUMNS} FROM agent_tools WHERE agent_id = ? AND deleted_at IS NULL \
             AND (enabled = 1 OR ?) ORDER BY name"
        )))
        .bind(agent.as_str())
        .bind(include_disabled)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(tool_from_row).collect()
    }

    /// Creates a tool at version 1. Refuses a name a live tool of the agent already has.
    pub async fn create_agent_tool(
        &self,
        agent: &AgentId,
        name: &str,
        content: &ToolContent,
        enabled: bool,
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<AgentTool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let taken: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM agent_tools WHERE agent_id = ? AND name = ? AND deleted_at IS NULL")
                .bind(agent.as_str())
                .bind(name)
                .fetch_optional(&mut *transaction)
                .await?;
        if taken.is_some() {
            return Err(StoreError::ToolExists(name.to_owned()));
        }
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO agent_tools (agent_id, name, description, parameter_schema, code, enabled, version, provenance) \
             VALUES (?, ?, ?, ?, ?, ?, 1, ?) RETURNING id",
        )
        .bind(agent.as_str())
        .bind(name)
        .bind(&content.description)
        .bind(content.parameter_schema.to_string())
        .bind(&content.code)
        .bind(enabled)
        .bind(provenance.map(Value::to_string))
        .fetch_one(&mut *transaction)
        .await
        .map_err(|error| match &error {
            sqlx::Error::Database(database) if database.is_foreign_key_violation() => {
                StoreError::AgentNotFound(agent.to_string())
            }
            _ => StoreError::Database(error),
        })?;
        insert_tool_version(&mut transaction, id, 1, content, meta).await?;
        transaction.commit().await?;
        self.require_agent_tool(agent, name).await
    }

    /// Applies `patch` as a new version. A patch that changes nothing still makes a version,
    /// so every call the agent makes leaves a trace.
    pub async fn update_agent_tool(
        &self,
        agent: &AgentId,
        name: &str,
        patch: &ToolPatch,
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<AgentTool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let current: Option<ToolRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TOOL_COLUMNS} FROM agent_tools WHERE agent_id = ? AND name = ? AND deleted_at IS NULL"
        )))
        .bind(agent.as_str())
        .bind(name)
        .fetch_optional(&mut *transaction)
        .await?;
        let current = tool_from_row(current.ok_or_else(|| StoreError::ToolNotFound(name.to_owned()))?)?;
        let content = ToolContent {
            description: patch.description.clone().unwrap_or(current.description),
            parameter_schema: patch.parameter_schema.clone().unwrap_or(current.parameter_schema),
            code: patch.code.clone().unwrap_or(current.code),
        };
        let version = current.version + 1;
        sqlx::query(
            "UPDATE agent_tools SET description = ?, parameter_schema = ?, code = ?, version = ?, \
             provenance = COALESCE(?, provenance), updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
        )
        .bind(&content.description)
        .bind(content.parameter_schema.to_string())
        .bind(&content.code)
        .bind(version)
        .bind(provenance.map(Value::to_string))
        .bind(current.id)
        .execute(&mut *transaction)
        .await?;
        insert_tool_version(&mut transaction, current.id, version, &content, meta).await?;
        transaction.commit().await?;
        self.require_agent_tool(agent, name).await
    }

    /// Deletes the live tool called `name`; its history stays. `false` if there was none.
    pub async fn delete_agent_tool(&self, agent: &AgentId, name: &str) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let deleted = sqlx::query(
            "UPDATE agent_tools SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE agent_id = ? AND name = ? AND deleted_at IS NULL",
        )
        .bind(agent.as_str())
        .bind(name)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(deleted.rows_affected() > 0)
    }

    pub async fn set_agent_tool_enabled(
        &self,
        agent: &AgentId,
        name: &str,
        enabled: bool,
    ) -> Result<AgentTool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let updated = sqlx::query(
            "UPDATE agent_tools SET enabled = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE agent_id = ? AND name = ? AND deleted_at IS NULL",
        )
        .bind(enabled)
        .bind(agent.as_str())
        .bind(name)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::ToolNotFound(name.to_owned()));
        }
        self.require_agent_tool(agent, name).await
    }

    /// The history of the live tool called `name`, newest first.
    pub async fn agent_tool_versions(&self, agent: &AgentId, name: &str) -> Result<Vec<ToolVersion>, StoreError> {
        let tool = self.require_agent_tool(agent, name).await?;
        let rows: Vec<ToolVersionRow> = sqlx::query_as(
            "SELECT version, description, parameter_schema, code, author, reason, conversation_id, tool_call_id, created_at \
             FROM agent_tool_versions WHERE tool_id = ? ORDER BY version DESC",
        )
        .bind(tool.id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(tool_version_from_row).collect()
    }

    /// Writes a new version whose content equals version `to_version`'s.
    pub async fn rollback_agent_tool(
        &self,
        agent: &AgentId,
        name: &str,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<AgentTool, StoreError> {
        let versions = self.agent_tool_versions(agent, name).await?;
        let old = versions
            .into_iter()
            .find(|version| version.version == to_version)
            .ok_or(StoreError::VersionNotFound { kind: "tool", version: to_version })?;
        let patch = ToolPatch {
            description: Some(old.description),
            parameter_schema: Some(old.parameter_schema),
            code: Some(old.code),
        };
        let reason = reason.or_else(|| Some(format!("rollback to version {to_version}")));
        self.update_agent_tool(agent, name, &patch, None, &VersionMeta::new(Author::Rollback).with_reason(reason)).await
    }
}

type ToolVersionRow = (i64, String, String, String, String, Option<String>, Option<String>, Option<String>, String);

fn tool_version_from_row(row: ToolVersionRow) -> Result<ToolVersion, StoreError> {
    let (version, description, schema, code, author, reason, conversation_id, tool_call_id, created_at) = row;
    Ok(ToolVersion {
        version,
        description,
        parameter_schema: serde_json::from_str(&schema).map_err(decode)?,
        code,
        author: Author::parse(&author).map_err(decode)?,
        reason,
        conversation_id,
        tool_call_id,
        created_at,
    })
}

async fn insert_tool_version(
    transaction: &mut sqlx::SqliteConnection,
    tool_id: i64,
    version: i64,
    content: &ToolContent,
    meta: &VersionMeta,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO agent_tool_versions (tool_id, version, description, parameter_schema, code, author, reason, \
         conversation_id, tool_call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(tool_id)
    .bind(version)
    .bind(&content.description)
    .bind(content.parameter_schema.to_string())
    .bind(&content.code)
    .bind(meta.author.as_str())
    .bind(meta.reason.as_deref())
    .bind(meta.conversation_id.as_deref())
    .bind(meta.tool_call_id.as_deref())
    .execute(&mut *transaction)
    .await?;
    Ok(())
}
