//! The tool-management tools of seed 002: the agent writes, versions, enables and reads its
//! own tools. A tool is checked before anything is stored: its name is snake_case and does
//! not shadow a built-in, its parameter schema is a JSON Schema of an object, and its code
//! compiles in the sandbox.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_core::Author;
use wright_store::{AgentTool, ToolContent, ToolPatch, VersionMeta};

use crate::builtin::{Builtin, CHANGES_AGENT, Tool, with_effects};
use crate::{Services, ToolContext, ToolError};

/// Limits on what an agent may store as a tool; generous for real tools, small enough that a
/// runaway loop cannot fill the database with one call.
const MAX_CODE_BYTES: usize = 256 * 1024;
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CreateArgs {
    /// Unique snake_case tool name (a-z, 0-9, _; starts with a letter; at most 64 characters).
    name: String,
    /// What the tool does and when to use it, written for a model.
    description: String,
    /// JSON Schema of the tool's arguments (an object schema).
    parameter_schema: Value,
    /// JavaScript run in the QuickJS sandbox: the body of an async function. `args` holds the
    /// validated arguments; `state.get/set/delete/list`, `fetch` and `console.log` are available.
    /// Must `return` a JSON value or call `resolve(value)`.
    code: String,
    /// Deadline of one call of this tool in milliseconds (default: the sandbox's, 30000).
    #[schemars(range(min = 1, max = 300000))]
    timeout_ms: Option<u64>,
    /// Why you are making this tool; kept with the version.
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct UpdateArgs {
    /// Name of the tool to update.
    name: String,
    /// New description (omit to keep).
    description: Option<String>,
    /// New parameter JSON Schema (omit to keep).
    parameter_schema: Option<Value>,
    /// New code (omit to keep).
    code: Option<String>,
    /// New deadline of one call in milliseconds (omit to keep).
    #[schemars(range(min = 1, max = 300000))]
    timeout_ms: Option<u64>,
    /// Why you are changing it; kept with the version.
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct NameArgs {
    /// Name of the tool.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ListArgs {
    /// Include disabled tools in the list. Default: false.
    include_disabled: Option<bool>,
}

fn reject(message: String) -> ToolError {
    ToolError::Rejected(message)
}

/// Refuses names that are not snake_case or that belong to a built-in tool.
pub(crate) fn check_name(name: &str) -> Result<(), ToolError> {
    let snake = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !snake {
        return Err(reject(format!(
            "tool name {name:?} is not snake_case: use a-z, 0-9 and _, start with a letter, at most 64 characters"
        )));
    }
    if crate::registry::builtin_names().contains(name) {
        return Err(reject(format!("tool name {name:?} is the name of a built-in tool; choose another name")));
    }
    // MCP servers' tools are called by these names; an agent tool must not shadow one.
    if name.starts_with(wright_mcp::TOOL_PREFIX) {
        let prefix = wright_mcp::TOOL_PREFIX;
        return Err(reject(format!("tool names starting with {prefix:?} belong to MCP servers; choose another name")));
    }
    Ok(())
}

/// Refuses a parameter schema that is not a JSON Schema of an object.
pub(crate) fn check_schema(schema: &Value) -> Result<(), ToolError> {
    if schema.to_string().len() > MAX_SCHEMA_BYTES {
        return Err(reject(format!("parameter_schema is larger than {MAX_SCHEMA_BYTES} bytes")));
    }
    if !schema.is_object() {
        return Err(reject(
            "parameter_schema must be a JSON Schema object such as {\"type\": \"object\", \"properties\": {...}}"
                .into(),
        ));
    }
    if let Err(error) = jsonschema::meta::validate(schema) {
        return Err(reject(format!(
            "parameter_schema is not a valid JSON Schema: {error} (at {})",
            error.instance_path()
        )));
    }
    if let Err(error) = jsonschema::validator_for(schema) {
        return Err(reject(format!("parameter_schema cannot be used: {error}")));
    }
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => Ok(()),
        None if schema.get("properties").is_some() => Ok(()),
        _ => Err(reject("parameter_schema must describe an object: set \"type\": \"object\"".into())),
    }
}

/// Refuses an empty description or one over the installation's cap.
fn check_description(services: &Services, description: &str) -> Result<(), ToolError> {
    if description.trim().is_empty() {
        return Err(reject("description must not be empty: say what the tool does, for a model".into()));
    }
    check_description_size(services, description)
}

/// Refuses a description over the installation's cap (`[limits] max_description_bytes`);
/// tools, components and bundles share it.
pub(crate) fn check_description_size(services: &Services, description: &str) -> Result<(), ToolError> {
    let limit = services.store.text_limits().max_description_bytes;
    if description.len() > limit {
        return Err(ToolError::LimitExceeded(format!(
            "the description is {} bytes; the limit is {limit} bytes ([limits] max_description_bytes)",
            description.len()
        )));
    }
    Ok(())
}

/// Refuses code that is too large or does not compile, with the line and column.
pub(crate) fn check_code(_services: &Services, code: &str) -> Result<(), ToolError> {
    if code.len() > MAX_CODE_BYTES {
        return Err(reject(format!("code is larger than {MAX_CODE_BYTES} bytes")));
    }
    wright_sandbox::check_syntax(code).map_err(|error| reject(format!("the code does not compile: {error}")))
}

/// The agent's code as stored, and what was added to it. Both real small models write a tool's
/// code as a function declaration (`async function greet(args) { … }`), which, as the body of the
/// tool's function, declares and returns nothing: the tool returned `null`. Refused, the 1.5B sent
/// the same code again and gave up; so the call the model meant is added — `return await
/// greet(args);`, or `shout(args.text)` when its one parameter is one of the schema's properties —
/// and said in the result. The version stored shows the line, like any other.
fn completed_code(code: String, schema: &Value) -> (String, Option<String>) {
    let Some((name, parameters)) = only_declares(&code) else { return (code, None) };
    let parameter = parameters.trim();
    let is_property = schema["properties"].get(parameter).is_some();
    let argument = if is_property && !parameter.contains([',', ' ', '=', '{', '[']) {
        format!("args.{parameter}")
    } else {
        "args".to_owned()
    };
    let call = format!("return await {name}({argument});");
    let note = format!(
        "the code only declared `{name}`; `{call}` was added at its end, since the code is the body of the tool's \
         own function (`args` holds the arguments)"
    );
    (format!("{code}\n{call}"), Some(note))
}

/// The one function `code` is made of, with its parameters' text, when nothing calls it:
/// `async function greet(args) { … }` or `const shout = (text) => { … }`. Only code that starts
/// with the declaration, ends with its `}` and names the function once.
fn only_declares(code: &str) -> Option<(&str, &str)> {
    let code = code.trim();
    let declared = code.strip_prefix("async ").unwrap_or(code).trim_start();
    let name_and_rest = if let Some(rest) = declared.strip_prefix("function") {
        rest.trim_start()
    } else {
        ["const ", "let ", "var "].iter().find_map(|keyword| declared.strip_prefix(keyword))?.trim_start()
    };
    let end = name_and_rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))?;
    let (name, rest) = name_and_rest.split_at(end);
    let rest = rest.trim_start();
    let arrow = rest.strip_prefix('=').filter(|after| after.contains("=>"));
    let after_name =
        if rest.starts_with('(') { rest } else { arrow?.trim_start().trim_start_matches("async").trim_start() };
    let parameters = after_name.strip_prefix('(')?.split_once(')')?.0;
    let named_once = code.matches(name).count() == 1;
    (!name.is_empty() && code.ends_with('}') && named_once).then_some((name, parameters))
}

/// `result` with `note` when something was added to the agent's code.
fn with_note(mut result: Value, note: Option<String>) -> Value {
    if let (Some(note), Value::Object(fields)) = (note, &mut result) {
        fields.insert("note".into(), Value::String(note));
    }
    result
}

/// A tool's stored run limits: its own deadline, or null for the sandbox's default.
fn limits(timeout_ms: Option<u64>) -> Value {
    timeout_ms.map_or(Value::Null, |deadline_ms| json!({ "deadline_ms": deadline_ms }))
}

fn agent_meta(context: &ToolContext, reason: Option<String>) -> VersionMeta {
    VersionMeta {
        author: Author::Agent,
        reason,
        conversation_id: context.conversation_id.clone(),
        tool_call_id: context.tool_call_id.clone(),
    }
}

fn full_view(tool: &AgentTool) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "parameter_schema": tool.parameter_schema,
        "code": tool.code,
        "timeout_ms": tool.limits.get("deadline_ms"),
        "enabled": tool.enabled,
        "version": tool.version,
    })
}

fn not_found(name: &str) -> ToolError {
    ToolError::NotFound(format!("no tool named {name:?}; list_tools shows the tools you have"))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        with_effects(
            Builtin::<CreateArgs>::boxed(
                "create_tool",
                "Create a new tool of your own, in JavaScript, that you (and later conversations) can call like any \
             other tool. The code is the body of an async function run in a sandbox: read `args`, use \
             `state.get/set/delete/list`, `fetch(url, {method, headers, body})` and `console.log`, then `return` a \
             JSON value. Test logic with run_sandbox_code first. Returns {name, version: 1}.",
                |context, args| {
                    Box::pin(async move {
                        check_name(&args.name)?;
                        check_description(&context.services, &args.description)?;
                        check_schema(&args.parameter_schema)?;
                        check_code(&context.services, &args.code)?;
                        let (code, added) = completed_code(args.code, &args.parameter_schema);
                        let content = ToolContent {
                            description: args.description,
                            parameter_schema: args.parameter_schema,
                            code,
                            limits: limits(args.timeout_ms),
                        };
                        let meta = agent_meta(&context, args.reason);
                        let tool = context
                            .services
                            .store
                            .create_agent_tool(&context.agent, &args.name, &content, true, None, &meta)
                            .await?;
                        Ok(with_note(json!({ "name": tool.name, "version": tool.version }), added))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<UpdateArgs>::boxed(
                "update_tool",
                "Update one of your tools: only the fields you give change. Every update is a new version an admin can \
             roll back. Returns {name, version}.",
                |context, args| {
                    Box::pin(async move {
                        if let Some(description) = &args.description {
                            check_description(&context.services, description)?;
                        }
                        if let Some(schema) = &args.parameter_schema {
                            check_schema(schema)?;
                        }
                        if let Some(code) = &args.code {
                            check_code(&context.services, code)?;
                        }
                        let Some(stored) = context.services.store.agent_tool(&context.agent, &args.name).await? else {
                            return Err(not_found(&args.name));
                        };
                        let schema = args.parameter_schema.as_ref().unwrap_or(&stored.parameter_schema);
                        let (code, added) = match args.code {
                            Some(code) => {
                                let (code, added) = completed_code(code, schema);
                                (Some(code), added)
                            }
                            None => (None, None),
                        };
                        let patch = ToolPatch {
                            description: args.description,
                            parameter_schema: args.parameter_schema,
                            code,
                            limits: args.timeout_ms.map(|timeout| limits(Some(timeout))),
                        };
                        let meta = agent_meta(&context, args.reason);
                        let tool = context
                            .services
                            .store
                            .update_agent_tool(&context.agent, &args.name, &patch, None, &meta)
                            .await?;
                        Ok(with_note(json!({ "name": tool.name, "version": tool.version }), added))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<NameArgs>::boxed(
                "delete_tool",
                "Delete one of your tools (its history is kept for the admin). Returns {deleted: false} if there was none.",
                |context, args| {
                    Box::pin(async move {
                        let deleted = context.services.store.delete_agent_tool(&context.agent, &args.name).await?;
                        Ok(json!({ "deleted": deleted }))
                    })
                },
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<NameArgs>::boxed(
                "enable_tool",
                "Enable one of your tools so it is offered in your tool set. Returns {name, enabled: true}.",
                |context, args| Box::pin(set_enabled(context, args.name, true)),
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<NameArgs>::boxed(
                "disable_tool",
                "Disable one of your tools without deleting it; it is no longer offered until enabled again.",
                |context, args| Box::pin(set_enabled(context, args.name, false)),
            ),
            CHANGES_AGENT,
        ),
        Builtin::<ListArgs>::reading(
            "list_tools",
            "List the tools you wrote (not the built-in ones): name, description, enabled, version.",
            |context, args| {
                Box::pin(async move {
                    let tools = context
                        .services
                        .store
                        .list_agent_tools(&context.agent, args.include_disabled.unwrap_or(false))
                        .await?;
                    let tools: Vec<Value> = tools
                        .iter()
                        .map(|tool| {
                            json!({"name": tool.name, "description": tool.description, "enabled": tool.enabled, "version": tool.version})
                        })
                        .collect();
                    Ok(json!({ "tools": tools }))
                })
            },
        ),
        Builtin::<NameArgs>::reading(
            "read_tool",
            "Read the full definition of one of your tools: description, parameter_schema, code, enabled, version.",
            |context, args| {
                Box::pin(async move {
                    let tool = context.services.store.agent_tool(&context.agent, &args.name).await?;
                    tool.map(|tool| full_view(&tool)).ok_or_else(|| not_found(&args.name))
                })
            },
        ),
    ]
}

async fn set_enabled(context: ToolContext, name: String, enabled: bool) -> Result<Value, ToolError> {
    if context.services.store.agent_tool(&context.agent, &name).await?.is_none() {
        return Err(not_found(&name));
    }
    let tool = context.services.store.set_agent_tool_enabled(&context.agent, &name, enabled).await?;
    Ok(json!({ "name": tool.name, "enabled": tool.enabled }))
}
