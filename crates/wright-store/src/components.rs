//! React components an agent wrote, with their compiled JavaScript: typed views over the
//! [`catalog`](crate::catalog) engine. The tool layer compiles before it stores.

use serde::Serialize;
use serde_json::Value;
use wright_core::{AgentId, Author};

use crate::catalog::{Catalog, Item, ItemVersion, parse_json};
use crate::documents::VersionMeta;
use crate::{Store, StoreError};

const COMPONENTS: Catalog = Catalog {
    table: "agent_ui_components",
    versions: "agent_ui_component_versions",
    content: &["description", "code", "compiled_js", "props_schema"],
    label: "component",
};

/// A component's current definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiComponent {
    pub id: i64,
    pub name: String,
    pub description: String,
    /// The JSX/TSX the agent wrote.
    pub code: String,
    /// What the canvas frame runs.
    pub compiled_js: String,
    /// JSON Schema of the props, or null.
    pub props_schema: Value,
    pub enabled: bool,
    pub version: i64,
    pub provenance: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// The content of a component version.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentContent {
    pub description: String,
    pub code: String,
    pub compiled_js: String,
    pub props_schema: Value,
}

/// A partial update: `None` keeps the current value. `code` and `compiled_js` go together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentPatch {
    pub description: Option<String>,
    pub code: Option<(String, String)>,
    pub props_schema: Option<Value>,
}

/// One version of a component.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentVersion {
    pub version: i64,
    pub description: String,
    pub code: String,
    pub compiled_js: String,
    pub props_schema: Value,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

fn shape() -> StoreError {
    StoreError::Database(sqlx::Error::Protocol("catalog row has the wrong number of content columns".into()))
}

fn component(item: Item) -> Result<UiComponent, StoreError> {
    let [description, code, compiled_js, props]: [String; 4] = item.content.try_into().map_err(|_| shape())?;
    Ok(UiComponent {
        id: item.id,
        name: item.name,
        description,
        code,
        compiled_js,
        props_schema: parse_json(&props)?,
        enabled: item.enabled,
        version: item.version,
        provenance: item.provenance.as_deref().map(parse_json).transpose()?,
        created_at: item.created_at,
        updated_at: item.updated_at,
    })
}

fn component_version(version: ItemVersion) -> Result<ComponentVersion, StoreError> {
    let [description, code, compiled_js, props]: [String; 4] = version.content.try_into().map_err(|_| shape())?;
    Ok(ComponentVersion {
        version: version.version,
        description,
        code,
        compiled_js,
        props_schema: parse_json(&props)?,
        author: version.author,
        reason: version.reason,
        conversation_id: version.conversation_id,
        tool_call_id: version.tool_call_id,
        created_at: version.created_at,
    })
}

impl Store {
    pub async fn ui_component(&self, agent: &AgentId, name: &str) -> Result<Option<UiComponent>, StoreError> {
        COMPONENTS.get(self, agent, name).await?.map(component).transpose()
    }

    pub async fn list_ui_components(&self, agent: &AgentId) -> Result<Vec<UiComponent>, StoreError> {
        COMPONENTS.list(self, agent, true).await?.into_iter().map(component).collect()
    }

    pub async fn create_ui_component(
        &self,
        agent: &AgentId,
        name: &str,
        content: &ComponentContent,
        enabled: bool,
        provenance: Option<&Value>,
        meta: &VersionMeta,
    ) -> Result<UiComponent, StoreError> {
        let columns = [
            content.description.clone(),
            content.code.clone(),
            content.compiled_js.clone(),
            content.props_schema.to_string(),
        ];
        component(COMPONENTS.create(self, agent, name, &columns, enabled, provenance, meta).await?)
    }

    pub async fn update_ui_component(
        &self,
        agent: &AgentId,
        name: &str,
        patch: &ComponentPatch,
        meta: &VersionMeta,
    ) -> Result<UiComponent, StoreError> {
        let (code, compiled_js) = match &patch.code {
            Some((code, compiled_js)) => (Some(code.clone()), Some(compiled_js.clone())),
            None => (None, None),
        };
        let columns = [patch.description.clone(), code, compiled_js, patch.props_schema.as_ref().map(Value::to_string)];
        component(COMPONENTS.update(self, agent, name, &columns, None, meta).await?)
    }

    pub async fn set_ui_component_enabled(
        &self,
        agent: &AgentId,
        name: &str,
        enabled: bool,
    ) -> Result<UiComponent, StoreError> {
        component(COMPONENTS.set_enabled(self, agent, name, enabled).await?)
    }

    pub async fn delete_ui_component(&self, agent: &AgentId, name: &str) -> Result<bool, StoreError> {
        COMPONENTS.delete(self, agent, name).await
    }

    pub async fn ui_component_versions(
        &self,
        agent: &AgentId,
        name: &str,
    ) -> Result<Vec<ComponentVersion>, StoreError> {
        COMPONENTS.versions(self, agent, name).await?.into_iter().map(component_version).collect()
    }

    pub async fn rollback_ui_component(
        &self,
        agent: &AgentId,
        name: &str,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<UiComponent, StoreError> {
        component(COMPONENTS.rollback(self, agent, name, to_version, reason).await?)
    }
}
