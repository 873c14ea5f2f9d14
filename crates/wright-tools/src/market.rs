//! The marketplace: publish an agent's tool, component or skill as a bundle, install a pinned
//! version into another agent, update explicitly with a diff, uninstall, and move bundles
//! between installations as files.
//!
//! A bundle is JSON that can carry only sandbox code, JSON Schemas and text — nothing that
//! runs outside the sandbox or the component frame (a skill's files are text the agent reads,
//! never runs). Its hash is the SHA-256 of its canonical
//! form (keys sorted at every level, no whitespace). Every bundle is checked the same way on
//! publish, import and install — name, schema, code — before anything is written, and an
//! installed tool starts disabled until a person enables it after seeing its code.
//!
//! An import records only what this installation knows (see `wright_store::market`): the
//! file's `publisher_agent` and any other claim outside the hashed bundle are ignored, and an
//! import becomes a version of a listing published here only when the person asks for it.

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use wright_core::{AgentId, Author};
use wright_store::{ComponentContent, ListingVersion, PublishSource, ToolContent, ToolPatch, VersionMeta};

use crate::builtin::{Builtin, SENDS_OUT, with_effects};
use crate::{Services, ToolError};

/// The bundle format this build writes and reads.
pub const BUNDLE_FORMAT: &str = "wright-bundle/1";

/// What to do when the agent already has something of the listing's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnConflict {
    Refuse,
    Rename(String),
}

/// The result of an install or update.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub kind: String,
    pub name: String,
    pub listing: String,
    pub version: i64,
    pub hash: String,
    pub enabled: bool,
}

/// The diff an update would apply, shown before it is.
#[derive(Debug, Clone, Serialize)]
pub struct UpdatePreview {
    pub name: String,
    pub from_version: i64,
    pub to_version: i64,
    pub diff: String,
}

/// A bundle exported to a file: the bundle, its hash, and where it came from. Informative
/// only: an import reads nothing but `bundle` and `hash`.
#[derive(Debug, Clone, Serialize)]
pub struct ExportedBundle {
    pub bundle: Value,
    pub hash: String,
    pub listing_version: i64,
    pub publisher_agent: String,
}

/// Who publishes: an agent itself or the admin on its behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    Agent,
    Admin,
}

/// Keys sorted at every level, no whitespace: the form the hash is taken of.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|key| (key.clone(), sorted(&map[key]))).collect::<Map<_, _>>())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

pub fn bundle_hash(bundle: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(bundle).as_bytes()))
}

fn reject(message: impl Into<String>) -> ToolError {
    ToolError::Rejected(message.into())
}

fn text_field<'a>(bundle: &'a Value, field: &str) -> Result<&'a str, ToolError> {
    bundle.get(field).and_then(Value::as_str).ok_or_else(|| reject(format!("the bundle has no text field `{field}`")))
}

/// Checks a bundle as publish, import and install all do; returns its kind.
pub fn check_bundle(services: &Services, bundle: &Value) -> Result<&'static str, ToolError> {
    let Some(object) = bundle.as_object() else { return Err(reject("a bundle is a JSON object")) };
    if object.get("format").and_then(Value::as_str) != Some(BUNDLE_FORMAT) {
        return Err(reject(format!("the bundle's format is not {BUNDLE_FORMAT:?}")));
    }
    let allowed: &[&str] = match text_field(bundle, "kind")? {
        "tool" => &["format", "kind", "name", "description", "parameter_schema", "code"],
        "component" => &["format", "kind", "name", "description", "code", "props_schema"],
        "skill" => &["format", "kind", "name", "description", "content", "resources"],
        other => return Err(reject(format!("unknown bundle kind {other:?}: expected tool, component or skill"))),
    };
    if let Some(extra) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(reject(format!("the bundle has a field `{extra}` that bundles do not carry")));
    }
    let name = text_field(bundle, "name")?;
    let description = text_field(bundle, "description")?;
    if description.trim().is_empty() {
        return Err(reject("the bundle's description is empty"));
    }
    crate::tool_management::check_description_size(services, description)?;
    if text_field(bundle, "kind")? == "skill" {
        check_skill_bundle(bundle, name, description)?;
        return Ok("skill");
    }
    let code = text_field(bundle, "code")?;
    if text_field(bundle, "kind")? == "tool" {
        crate::tool_management::check_name(name)?;
        crate::tool_management::check_schema(bundle.get("parameter_schema").unwrap_or(&Value::Null))?;
        crate::tool_management::check_code(services, code)?;
        Ok("tool")
    } else {
        crate::components::check_name(name)?;
        match bundle.get("props_schema") {
            None | Some(Value::Null) => {}
            Some(Value::Object(schema)) => {
                crate::components::check_props_schema(schema)?;
            }
            Some(_) => return Err(reject("props_schema must be a JSON Schema object or null")),
        }
        crate::components::compile(code)?;
        Ok("component")
    }
}

/// A skill bundle: SKILL.md (`content`) that names the skill as the bundle does and says the
/// bundle's description, and `resources` as path → text with paths inside the folder. The
/// store checks the caps when it is installed.
fn check_skill_bundle(bundle: &Value, name: &str, description: &str) -> Result<(), ToolError> {
    let file =
        wright_core::SkillFile::parse(text_field(bundle, "content")?).map_err(|error| reject(error.to_string()))?;
    if file.name != name || file.description != description {
        return Err(reject("the skill bundle's name and description must be those of its SKILL.md"));
    }
    let Some(resources) = bundle.get("resources").and_then(Value::as_object) else {
        return Err(reject("the skill bundle's resources must be an object of path -> text"));
    };
    for (path, text) in resources {
        wright_core::check_resource_path(path).map_err(|error| reject(error.to_string()))?;
        if !text.is_string() {
            return Err(reject(format!("the skill bundle's file {path:?} is not text")));
        }
    }
    Ok(())
}

/// Publishes the agent's current tool, component or skill `name` as the next version of its
/// listing.
pub async fn publish(
    services: &Services,
    agent: &AgentId,
    kind: &str,
    name: &str,
    publisher: Publisher,
) -> Result<(String, i64, String), ToolError> {
    let store = &services.store;
    let bundle = match kind {
        "tool" => {
            let tool = store
                .agent_tool(agent, name)
                .await?
                .ok_or_else(|| ToolError::NotFound(format!("no tool named {name:?}")))?;
            json!({"format": BUNDLE_FORMAT, "kind": "tool", "name": tool.name, "description": tool.description,
                   "parameter_schema": tool.parameter_schema, "code": tool.code})
        }
        "component" => {
            let component = store
                .ui_component(agent, name)
                .await?
                .ok_or_else(|| ToolError::NotFound(format!("no component named {name:?}")))?;
            json!({"format": BUNDLE_FORMAT, "kind": "component", "name": component.name, "description": component.description,
                   "code": component.code, "props_schema": component.props_schema})
        }
        "skill" => {
            let skill = store.skill(agent, name).await?;
            json!({"format": BUNDLE_FORMAT, "kind": "skill", "name": skill.name, "description": skill.description,
                   "content": skill.content, "resources": skill.resources})
        }
        other => return Err(reject(format!("unknown kind {other:?}: expected tool, component or skill"))),
    };
    check_bundle(services, &bundle)?;
    let hash = bundle_hash(&bundle);
    let description = text_field(&bundle, "description")?;
    let source = match publisher {
        Publisher::Agent => PublishSource::Agent(agent.as_str()),
        Publisher::Admin => PublishSource::Admin(agent.as_str()),
    };
    let (listing, version) =
        store.publish_listing_version(kind, name, description, &canonical_json(&bundle), &hash, source).await?;
    Ok((listing.name, version, hash))
}

async fn listing_version(
    services: &Services,
    kind: &str,
    listing: &str,
    version: Option<i64>,
) -> Result<ListingVersion, ToolError> {
    let found = services
        .store
        .listing(kind, listing)
        .await?
        .ok_or_else(|| ToolError::NotFound(format!("no {kind} listing named {listing:?}")))?;
    let versions = services.store.listing_versions(found.id).await?;
    let wanted = version.unwrap_or(found.latest_version);
    let picked = versions
        .into_iter()
        .find(|candidate| candidate.version == wanted)
        .ok_or_else(|| ToolError::NotFound(format!("listing {listing:?} has no version {wanted}")))?;
    // Defence in depth: what is stored must still be what was hashed.
    if bundle_hash(&picked.bundle) != picked.hash {
        return Err(ToolError::Internal(format!("listing {listing:?} version {wanted} does not match its hash")));
    }
    Ok(picked)
}

fn provenance(kind: &str, listing: &str, version: &ListingVersion) -> Value {
    json!({"kind": kind, "listing": listing, "version": version.version, "hash": version.hash})
}

/// Installs a pinned version (the latest when `version` is None) into `agent`, disabled.
pub async fn install(
    services: &Services,
    agent: &AgentId,
    kind: &str,
    listing: &str,
    version: Option<i64>,
    on_conflict: &OnConflict,
) -> Result<Installed, ToolError> {
    services.store.require_agent(agent).await?;
    let picked = listing_version(services, kind, listing, version).await?;
    check_bundle(services, &picked.bundle)?;
    let name = match on_conflict {
        OnConflict::Refuse => listing.to_owned(),
        OnConflict::Rename(new_name) => new_name.clone(),
    };
    if kind == "skill" {
        return install_skill(services, agent, listing, &picked, &name).await;
    }
    let exists = match kind {
        "tool" => {
            crate::tool_management::check_name(&name)?;
            services.store.agent_tool(agent, &name).await?.is_some()
        }
        _ => {
            crate::components::check_name(&name)?;
            services.store.ui_component(agent, &name).await?.is_some()
        }
    };
    if exists {
        return Err(reject(format!(
            "agent {agent} already has a {kind} named {name:?}; uninstall it or install under another name"
        )));
    }
    let bundle = &picked.bundle;
    let meta = VersionMeta::new(Author::Install).with_reason(Some(format!("installed {listing} v{}", picked.version)));
    let origin = provenance(kind, listing, &picked);
    if kind == "tool" {
        let content = ToolContent {
            description: text_field(bundle, "description")?.to_owned(),
            parameter_schema: bundle["parameter_schema"].clone(),
            code: text_field(bundle, "code")?.to_owned(),
            limits: Value::Null,
        };
        services.store.create_agent_tool(agent, &name, &content, false, Some(&origin), &meta).await?;
    } else {
        let code = text_field(bundle, "code")?.to_owned();
        let content = ComponentContent {
            description: text_field(bundle, "description")?.to_owned(),
            compiled_js: crate::components::compile(&code)?,
            code,
            props_schema: bundle.get("props_schema").cloned().unwrap_or(Value::Null),
        };
        services.store.create_ui_component(agent, &name, &content, false, Some(&origin), &meta).await?;
    }
    Ok(Installed {
        kind: kind.to_owned(),
        name,
        listing: listing.to_owned(),
        version: picked.version,
        hash: picked.hash,
        enabled: false,
    })
}

/// Installs a skill bundle as a new skill of `agent`, switched off until a person has read it
/// and switched it on; the version names the listing version and the hash it was pinned by.
/// A skill's name is its SKILL.md's, so it installs under the listing's name only.
async fn install_skill(
    services: &Services,
    agent: &AgentId,
    listing: &str,
    picked: &ListingVersion,
    name: &str,
) -> Result<Installed, ToolError> {
    if name != listing {
        return Err(reject(
            "a skill installs under its own name (its SKILL.md names it): rename the existing skill instead",
        ));
    }
    let bundle = &picked.bundle;
    let resources: wright_store::SkillResources = serde_json::from_value(bundle["resources"].clone())
        .map_err(|error| reject(format!("the skill bundle's resources: {error}")))?;
    let change = wright_store::SkillChange::Create {
        content: text_field(bundle, "content")?.to_owned(),
        resources,
        enabled: false,
    };
    let reason = format!("installed {listing} v{} (sha256 {})", picked.version, picked.hash);
    let meta = VersionMeta::new(Author::Install).with_reason(Some(reason));
    services.store.change_skill(agent, name, change, &meta).await.map_err(|error| match error {
        wright_store::StoreError::ItemExists { .. } => {
            reject(format!("agent {agent} already has a skill named {name:?}; delete it first"))
        }
        other => other.into(),
    })?;
    Ok(Installed {
        kind: "skill".to_owned(),
        name: name.to_owned(),
        listing: listing.to_owned(),
        version: picked.version,
        hash: picked.hash.clone(),
        enabled: false,
    })
}

/// The installed tool's provenance: `(listing, version)`; an error if it was not installed.
async fn installed_from(services: &Services, agent: &AgentId, name: &str) -> Result<(String, i64, String), ToolError> {
    let tool = services
        .store
        .agent_tool(agent, name)
        .await?
        .ok_or_else(|| ToolError::NotFound(format!("no tool named {name:?}")))?;
    let origin =
        tool.provenance.ok_or_else(|| reject(format!("tool {name:?} was not installed from the marketplace")))?;
    let listing = origin["listing"].as_str().unwrap_or_default().to_owned();
    let version = origin["version"].as_i64().unwrap_or_default();
    Ok((listing, version, tool.code))
}

/// The diff an update of installed tool `name` to `to_version` (default: latest) would apply.
pub async fn update_preview(
    services: &Services,
    agent: &AgentId,
    name: &str,
    to_version: Option<i64>,
) -> Result<UpdatePreview, ToolError> {
    let (listing, from_version, current_code) = installed_from(services, agent, name).await?;
    let target = listing_version(services, "tool", &listing, to_version).await?;
    let new_code = text_field(&target.bundle, "code")?;
    let schema_old =
        services.store.agent_tool(agent, name).await?.map(|tool| tool.parameter_schema).unwrap_or(Value::Null);
    let schema_new = &target.bundle["parameter_schema"];
    let store = &services.store;
    let mut diff = store
        .diff(
            &current_code,
            new_code,
            &format!("{name} v{from_version} code"),
            &format!("{listing} v{} code", target.version),
        )
        .await?;
    if &schema_old != schema_new {
        let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
        diff.push_str(
            &store
                .diff(
                    &pretty(&schema_old),
                    &pretty(schema_new),
                    "parameter_schema (installed)",
                    "parameter_schema (new)",
                )
                .await?,
        );
    }
    Ok(UpdatePreview { name: name.to_owned(), from_version, to_version: target.version, diff })
}

/// Updates installed tool `name` to `to_version` (default: latest) as a new version.
pub async fn update(
    services: &Services,
    agent: &AgentId,
    name: &str,
    to_version: Option<i64>,
) -> Result<Installed, ToolError> {
    let (listing, _, _) = installed_from(services, agent, name).await?;
    let target = listing_version(services, "tool", &listing, to_version).await?;
    check_bundle(services, &target.bundle)?;
    let bundle = &target.bundle;
    let patch = ToolPatch {
        description: Some(text_field(bundle, "description")?.to_owned()),
        parameter_schema: Some(bundle["parameter_schema"].clone()),
        code: Some(text_field(bundle, "code")?.to_owned()),
        limits: None,
    };
    let meta = VersionMeta::new(Author::Install).with_reason(Some(format!("updated to {listing} v{}", target.version)));
    let tool = services
        .store
        .update_agent_tool(agent, name, &patch, Some(&provenance("tool", &listing, &target)), &meta)
        .await?;
    Ok(Installed {
        kind: "tool".into(),
        name: tool.name,
        listing,
        version: target.version,
        hash: target.hash,
        enabled: tool.enabled,
    })
}

/// Removes an installed tool (its history stays for the admin).
pub async fn uninstall(services: &Services, agent: &AgentId, name: &str) -> Result<bool, ToolError> {
    installed_from(services, agent, name).await?;
    Ok(services.store.delete_agent_tool(agent, name).await?)
}

/// A listing version as a file to carry to another installation.
pub async fn export(
    services: &Services,
    kind: &str,
    listing: &str,
    version: Option<i64>,
) -> Result<ExportedBundle, ToolError> {
    let picked = listing_version(services, kind, listing, version).await?;
    Ok(ExportedBundle {
        bundle: picked.bundle,
        hash: picked.hash,
        listing_version: picked.version,
        publisher_agent: picked.publisher_agent,
    })
}

/// Imports an exported bundle file as a listing version, after checking its hash and content.
/// Nothing is installed or enabled: installing is a separate, explicit step. The version is
/// added to a listing published here of the same name only with `into_local_listing`.
pub async fn import(
    services: &Services,
    file: &Value,
    into_local_listing: bool,
) -> Result<(String, String, i64, String), ToolError> {
    let bundle = file.get("bundle").ok_or_else(|| reject("the file has no `bundle`"))?;
    let claimed = file.get("hash").and_then(Value::as_str).ok_or_else(|| reject("the file has no `hash`"))?;
    let actual = bundle_hash(bundle);
    if claimed != actual {
        return Err(reject(format!(
            "the bundle's hash does not match: the file says {claimed}, its content hashes to {actual}"
        )));
    }
    let kind = check_bundle(services, bundle)?;
    let name = text_field(bundle, "name")?;
    let (listing, version) = services
        .store
        .publish_listing_version(
            kind,
            name,
            text_field(bundle, "description")?,
            &canonical_json(bundle),
            &actual,
            PublishSource::Import { into_local_listing },
        )
        .await?;
    Ok((kind.to_owned(), listing.name, version, actual))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct PublishArgs {
    /// Name of your tool (or component) to publish.
    name: String,
    /// `tool` (default), `component` or `skill`.
    kind: Option<String>,
}

pub(crate) fn tools() -> Vec<Box<dyn crate::builtin::Tool>> {
    vec![with_effects(
        Builtin::<PublishArgs>::asking(
            "publish_tool",
            "Publish one of your tools (or, with kind \"component\", a UI component; with kind \"skill\", a skill) to this installation's marketplace \
         so other agents can install it. Publishes its current version as the listing's next version, pinned by hash. \
         Returns {listing, kind, version, hash}.",
            |context, args| {
                Box::pin(async move {
                    let kind = args.kind.unwrap_or_else(|| "tool".to_owned());
                    let (listing, version, hash) =
                        publish(&context.services, &context.agent, &kind, &args.name, Publisher::Agent).await?;
                    Ok(json!({ "listing": listing, "kind": kind, "version": version, "hash": hash }))
                })
            },
        ),
        SENDS_OUT,
    )]
}
