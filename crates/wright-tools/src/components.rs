//! The UI component tools of seed 002: the agent writes React components (JSX or TSX) that
//! the canvas renders. Code is compiled when it is saved, so a syntax error comes back to the
//! agent at once with its line and column, and nothing is stored.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use wright_core::Author;
use wright_store::{ComponentContent, ComponentPatch, VersionMeta};

use crate::builtin::{Builtin, CHANGES_AGENT, Tool, with_effects};
use crate::{ToolContext, ToolError};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CreateArgs {
    /// Unique component name (letters, digits, - and _; starts with a letter).
    name: String,
    /// What this component does.
    description: String,
    /// React/JSX (or TSX) source. It must `export default` the component, may import from 'react'
    /// and 'wright' only, and receives its props plus injected helpers (React, hooks, UI primitives,
    /// useAgentState, callTool, sendMessage, importModule).
    code: String,
    /// Optional JSON Schema describing the expected props.
    props_schema: Option<Map<String, Value>>,
    /// Why you are making it; kept with the version.
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct UpdateArgs {
    /// Name of the component to update.
    name: String,
    description: Option<String>,
    code: Option<String>,
    props_schema: Option<Map<String, Value>>,
    /// Why you are changing it; kept with the version.
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct NameArgs {
    /// Name of the component.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

pub(crate) fn check_name(name: &str) -> Result<(), ToolError> {
    let valid = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(ToolError::Rejected(format!(
            "component name {name:?} is not valid: use letters, digits, - and _, start with a letter, at most 64 characters"
        )))
    }
}

pub(crate) fn check_props_schema(schema: &Map<String, Value>) -> Result<Value, ToolError> {
    let schema = Value::Object(schema.clone());
    if let Err(error) = jsonschema::meta::validate(&schema) {
        return Err(ToolError::Rejected(format!("props_schema is not a valid JSON Schema: {error}")));
    }
    Ok(schema)
}

/// Compiles component source, turning a compile error into an error the agent can fix.
pub(crate) fn compile(code: &str) -> Result<String, ToolError> {
    wright_jsx::compile(code).map_err(|error| ToolError::Rejected(format!("the component does not compile: {error}")))
}

fn meta(context: &ToolContext, reason: Option<String>) -> VersionMeta {
    VersionMeta {
        author: Author::Agent,
        reason,
        conversation_id: context.conversation_id.clone(),
        tool_call_id: context.tool_call_id.clone(),
    }
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        with_effects(
            Builtin::<CreateArgs>::boxed(
                "create_ui_component",
                "Create a reusable React component that render_and_wait can show in the canvas. The code is JSX or TSX \
             that `export default`s the component; it is compiled now and a syntax error comes back with its line \
             and column. It runs without a DOM: no document, window, links, images or iframes; refs are handles \
             (focus, blur, scrollIntoView, select). Returns {name, version: 1}.",
                |context, args| {
                    Box::pin(async move {
                        check_name(&args.name)?;
                        crate::tool_management::check_description_size(&context.services, &args.description)?;
                        let props_schema =
                            args.props_schema.as_ref().map(check_props_schema).transpose()?.unwrap_or(Value::Null);
                        let compiled_js = compile(&args.code)?;
                        let content = ComponentContent {
                            description: args.description,
                            code: args.code,
                            compiled_js,
                            props_schema,
                        };
                        let meta = meta(&context, args.reason);
                        let component = context
                            .services
                            .store
                            .create_ui_component(&context.agent, &args.name, &content, true, None, &meta)
                            .await?;
                        Ok(json!({ "name": component.name, "version": component.version }))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<UpdateArgs>::boxed(
                "update_ui_component",
                "Update one of your UI components; only the fields you give change, and new code is compiled first. \
             Returns {name, version}.",
                |context, args| {
                    Box::pin(async move {
                        if let Some(description) = &args.description {
                            crate::tool_management::check_description_size(&context.services, description)?;
                        }
                        let props_schema = args.props_schema.as_ref().map(check_props_schema).transpose()?;
                        let code = match args.code {
                            Some(code) => {
                                let compiled = compile(&code)?;
                                Some((code, compiled))
                            }
                            None => None,
                        };
                        let patch = ComponentPatch { description: args.description, code, props_schema };
                        let meta = meta(&context, args.reason);
                        let component = context
                            .services
                            .store
                            .update_ui_component(&context.agent, &args.name, &patch, &meta)
                            .await?;
                        Ok(json!({ "name": component.name, "version": component.version }))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<NameArgs>::boxed(
                "delete_ui_component",
                "Delete one of your UI components (its history is kept). Returns {deleted: false} if there was none.",
                |context, args| {
                    Box::pin(async move {
                        let deleted = context.services.store.delete_ui_component(&context.agent, &args.name).await?;
                        Ok(json!({ "deleted": deleted }))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        Builtin::<NoArgs>::reading(
            "list_ui_components",
            "List your stored UI components: name, description, version.",
            |context, _| {
                Box::pin(async move {
                    let components = context.services.store.list_ui_components(&context.agent).await?;
                    let components: Vec<Value> = components
                        .iter()
                        .map(|component| json!({"name": component.name, "description": component.description, "version": component.version}))
                        .collect();
                    Ok(json!({ "components": components }))
                })
            },
        ),
    ]
}
