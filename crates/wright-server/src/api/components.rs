//! UI components, for the canvas frame: list, and one with its compiled JavaScript.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::ApiError;
use super::agents::existing_agent;
use crate::AppState;

#[derive(Serialize, ToSchema)]
pub(super) struct ComponentSummary {
    pub name: String,
    pub description: String,
    pub version: i64,
    /// Installed components start disabled until a person has read them and enabled them.
    pub enabled: bool,
    /// Where an installed component came from (listing, version, hash); null if written here.
    pub provenance: Option<Value>,
}

impl From<wright_store::UiComponent> for ComponentSummary {
    fn from(component: wright_store::UiComponent) -> Self {
        ComponentSummary {
            name: component.name,
            description: component.description,
            version: component.version,
            enabled: component.enabled,
            provenance: component.provenance,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(super) struct ComponentDetail {
    pub name: String,
    pub description: String,
    pub version: i64,
    pub enabled: bool,
    /// The JSX/TSX the agent wrote.
    pub code: String,
    /// The compiled ES module the frame runs.
    pub compiled_js: String,
    /// JSON Schema of the props, or null.
    pub props_schema: Value,
}

/// The agent's components.
#[utoipa::path(
    get, path = "/api/agents/{agent}/components", tag = "components", params(("agent" = String, Path)),
    responses((status = 200, body = Vec<ComponentSummary>)),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Path(agent): Path<String>,
) -> Result<Json<Vec<ComponentSummary>>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let components = state.store.list_ui_components(&agent).await?;
    Ok(Json(components.into_iter().map(ComponentSummary::from).collect()))
}

/// One component with its source and compiled code.
#[utoipa::path(
    get, path = "/api/agents/{agent}/components/{name}", tag = "components",
    params(("agent" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = ComponentDetail), (status = 404, body = super::error::ErrorBody)),
)]
pub(super) async fn detail(
    State(state): State<AppState>,
    Path((agent, name)): Path<(String, String)>,
) -> Result<Json<ComponentDetail>, ApiError> {
    let agent = existing_agent(&state, &agent).await?;
    let component = state.store.ui_component(&agent, &name).await?.ok_or_else(|| {
        ApiError::new(axum::http::StatusCode::NOT_FOUND, "not_found", format!("no component named {name:?}"))
    })?;
    Ok(Json(ComponentDetail {
        name: component.name,
        description: component.description,
        version: component.version,
        enabled: component.enabled,
        code: component.code,
        compiled_js: component.compiled_js,
        props_schema: component.props_schema,
    }))
}
