//! Tools an agent wrote: typed views over the [`catalog`](crate::catalog) engine.
//!
//! The store keeps what it is given; checking a tool (its name, that its schema is a JSON
//! Schema, that its code compiles) is the tool layer's job and happens before it gets here.

use serde::Serialize;
use serde_json::Value;
use wright_core::{AgentId, Author};

use crate::catalog::{Catalog, Item, ItemVersion, parse_json};
use crate::documents::VersionMeta;
use crate::{Store, StoreError};

const TOOLS: Catalog = Catalog {
    table: "agent_tools",
    versions: "agent_tool_versions",
    content: &["description", "parameter_schema", "code", "limits"],
    label: "tool",
};

/// A tool's current definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentTool {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
    /// The tool's own run limits (e.g. `{"deadline_ms": 5000}`), or null for the defaults.
    pub limits: Value,
    pub enabled: bool,
    pub version: i64,
    /// Where an installed tool came from (listing, version, hash); None if written here.
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
    /// Run limits of this tool (`{"deadline_ms": …}`), or null for the defaults.
    pub limits: Value,
}

/// A partial update: `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPatch {
    pub description: Option<String>,
    pub parameter_schema: Option<Value>,
    pub code: Option<String>,
    pub limits: Option<Value>,
}

/// One version of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolVersion {
    pub version: i64,
    pub description: String,
    pub parameter_schema: Value,
    pub code: String,
    pub limits: Value,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

fn tool(item: Item) -> Result<AgentTool, StoreError> {
    let [description, schema, code, limits]: [String; 4] = item.content.try_into().map_err(|_| content_shape())?;
    Ok(AgentTool {
        id: item.id,
        name: item.name,
        description,
        parameter_schema: parse_json(&schema)?,
        code,
        limits: parse_json(&limits)?,
        enabled: item.enabled,
        version: item.version,
        provenance: item.provenance.as_deref().map(parse_json).transpose()?,
        created_at: item.created_at,
        updated_at: item.updated_at,
    })
}

fn tool_version(version: ItemVersion) -> Result<ToolVersion, StoreError> {
    let [description, schema, code, limits]: [String; 4] = version.content.try_into().map_err(|_| content_shape())?;
    Ok(ToolVersion {
        version: version.version,
        description,
        parameter_schema: parse_json(&schema)?,
        code,
        limits: parse_json(&limits)?,
        author: version.author,
        reason: version.reason,
        conversation_id: version.conversation_id,
        tool_call_id: version.tool_call_id,
        created_at: version.created_at,
    })
}

fn content_shape() -> StoreError {
    StoreError::Database(sqlx::Error::Protocol("catalog row has the wrong number of content columns".into()))
}

impl Store {
    /// The live tool called `name`, if any.
    pub async fn agent_tool(&self, agent: &AgentId, name: &str) -> Result<Option<AgentTool>, StoreError> {
        TOOLS.get(self, agent, name).await?.map(tool).transpose()
    }

    /// The agent's live tools by name, enabled ones only unless `include_disabled`.
    pub async fn list_agent_tools(
        &self,
        agent: &AgentId,
        include_disabled: bool,
    ) -> Result<Vec<AgentTool>, StoreError> {
        TOOLS.list(self, agent, include_disabled).await?.into_iter().map(tool).collect()
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
        let columns = [
            content.description.clone(),
            content.parameter_schema.to_string(),
            content.code.clone(),
            content.limits.to_string(),
        ];
        tool(TOOLS.create(self, agent, name, &columns, enabled, provenance, meta).await?)
    }

    /// Applies `patch` as a new version; a patch that changes nothing still makes one, so every
    /// call leaves a trace.
    pub async fn update_agent_tool(
        &self,
        agent: &AgentId,
        name: &str,
        patch: &ToolPatch,
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<AgentTool, StoreError> {
        let columns = [
            patch.description.clone(),
            patch.parameter_schema.as_ref().map(Value::to_string),
            patch.code.clone(),
            patch.limits.as_ref().map(Value::to_string),
        ];
        tool(TOOLS.update(self, agent, name, &columns, provenance, meta).await?)
    }

    /// Deletes the live tool called `name`; its history stays. `false` if there was none.
    pub async fn delete_agent_tool(&self, agent: &AgentId, name: &str) -> Result<bool, StoreError> {
        TOOLS.delete(self, agent, name).await
    }

    pub async fn set_agent_tool_enabled(
        &self,
        agent: &AgentId,
        name: &str,
        enabled: bool,
    ) -> Result<AgentTool, StoreError> {
        tool(TOOLS.set_enabled(self, agent, name, enabled).await?)
    }

    /// The history of the live tool called `name`, newest first.
    pub async fn agent_tool_versions(&self, agent: &AgentId, name: &str) -> Result<Vec<ToolVersion>, StoreError> {
        TOOLS.versions(self, agent, name).await?.into_iter().map(tool_version).collect()
    }

    /// Writes a new version whose content equals version `to_version`'s.
    pub async fn rollback_agent_tool(
        &self,
        agent: &AgentId,
        name: &str,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<AgentTool, StoreError> {
        tool(TOOLS.rollback(self, agent, name, to_version, reason).await?)
    }
}
