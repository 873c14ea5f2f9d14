//! The agent's skills (toolset `skills`): instructions in the Agent Skills layout it loads when
//! a task fits one (`load_skill`, which also lists and reads resource files as text — a
//! resource is never run on the host: code a skill needs runs in the agent's own sandboxed
//! tools), writes as it learns (`write_skill`), and edits, adds files to and deletes
//! (`edit_skill`, one operation a call). Every write is a version authored by the agent with the
//! conversation and tool call that made it, which the person can review and roll back.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_core::{Author, SkillFile};
use wright_store::{DocumentEdit, SkillChange, StoreError, VersionMeta};

use crate::builtin::{Builtin, CHANGES_AGENT, Tool, with_effects};
use crate::{ToolContext, ToolError};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadArgs {
    /// The skill's name, as the list of skills in your instructions shows it.
    name: String,
    /// A resource file of the skill to read as text (e.g. `references/guide.md`); leave it
    /// out to get the skill's instructions and the list of its files.
    resource: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// Lowercase letters, digits and hyphens, e.g. `monthly-expense-report`.
    name: String,
    /// One or two sentences: what the skill does and when to use it (shown in your
    /// instructions; it is how you will find the skill later).
    description: String,
    /// The instructions in Markdown: the steps, the tools to call, what to check.
    body: String,
    /// Why you are writing it; kept with the version so the person can review it.
    reason: Option<String>,
}

// One shape per operation, tagged by `operation`, as the document edit tools are: a server
// that turns schemas into a grammar then only lets a model write a complete edit.
/// One change to a skill: `operation` says which, and which fields it takes.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "operation", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum EditArgs {
    /// Replace an exact text of the skill's SKILL.md (case-sensitive).
    FindReplace {
        /// The skill to edit.
        name: String,
        /// The exact text to replace.
        find: String,
        /// The replacement text.
        replace: String,
        /// Replace every occurrence instead of the first. Default: false.
        replace_all: Option<bool>,
        /// Why you are changing it; kept with the version.
        reason: Option<String>,
    },
    /// Add or replace a text file in the skill's folder (a checklist, a template, reference
    /// notes its instructions point to); an empty content removes the file.
    WriteFile {
        /// The skill the file belongs to.
        name: String,
        /// The file's path inside the skill's folder, e.g. `references/checklist.md`.
        path: String,
        /// The file's text; empty removes the file.
        content: String,
        /// Why; kept with the version.
        reason: Option<String>,
    },
    /// Delete the skill (the person can restore it).
    Delete {
        /// The skill to delete.
        name: String,
        /// Why; kept with the version.
        reason: Option<String>,
    },
}

fn meta(context: &ToolContext, reason: Option<String>) -> VersionMeta {
    VersionMeta {
        author: Author::Agent,
        reason,
        conversation_id: context.conversation_id.clone(),
        tool_call_id: context.tool_call_id.clone(),
    }
}

/// A skill that is not there: say which are, so the next call names a real one.
async fn missing(context: &ToolContext, name: &str) -> ToolError {
    let names: Vec<String> = match context.services.store.enabled_skills(&context.agent).await {
        Ok(skills) => skills.into_iter().map(|(name, _)| name).collect(),
        Err(error) => return error.into(),
    };
    let known = if names.is_empty() {
        "you have no skills yet".to_owned()
    } else {
        format!("your skills: {}", names.join(", "))
    };
    ToolError::NotFound(format!("no skill named {name:?}; {known}"))
}

async fn load(context: ToolContext, args: LoadArgs) -> Result<Value, ToolError> {
    let skill = match context.services.store.skill(&context.agent, &args.name).await {
        Ok(skill) if skill.enabled => skill,
        Ok(_) => {
            return Err(ToolError::Rejected(format!("the skill {:?} is switched off by the person", args.name)));
        }
        Err(StoreError::ItemNotFound { .. }) => return Err(missing(&context, &args.name).await),
        Err(error) => return Err(error.into()),
    };
    let files: Vec<&String> = skill.resources.keys().collect();
    match args.resource {
        None => Ok(json!({
            "name": skill.name,
            "description": skill.description,
            "instructions": skill.body,
            "files": files,
            "version": skill.version,
        })),
        Some(path) => match skill.resources.get(&path) {
            Some(content) => Ok(json!({"name": skill.name, "path": path, "content": content})),
            None => Err(ToolError::NotFound(format!(
                "the skill {:?} has no file {path:?}; its files: {}",
                skill.name,
                if files.is_empty() {
                    "none".to_owned()
                } else {
                    files.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
                }
            ))),
        },
    }
}

async fn write(context: ToolContext, args: WriteArgs) -> Result<Value, ToolError> {
    wright_core::check_skill_name(&args.name).map_err(|error| ToolError::Rejected(error.to_string()))?;
    let content = SkillFile::render(&args.name, &args.description, &args.body);
    let change = SkillChange::Write { content, resources: None };
    let version =
        context.services.store.change_skill(&context.agent, &args.name, change, &meta(&context, args.reason)).await?;
    Ok(json!({"name": args.name, "version": version, "created": version == 1}))
}

async fn edit(context: ToolContext, args: EditArgs) -> Result<Value, ToolError> {
    let (name, change, reason, done) = match args {
        EditArgs::FindReplace { name, find, replace, replace_all, reason } => {
            let edit = DocumentEdit::FindReplace { find, replace, replace_all: replace_all.unwrap_or(false) };
            (name, SkillChange::Edit(edit), reason, json!({}))
        }
        EditArgs::WriteFile { name, path, content, reason } => {
            let removed = content.is_empty();
            let content = (!removed).then_some(content);
            let done = json!({"path": path, "removed": removed});
            (name, SkillChange::Resource { path, content }, reason, done)
        }
        EditArgs::Delete { name, reason } => (name, SkillChange::Delete, reason, json!({"deleted": true})),
    };
    match context.services.store.change_skill(&context.agent, &name, change, &meta(&context, reason)).await {
        Ok(version) => {
            let mut answer = done;
            answer["name"] = json!(name);
            answer["version"] = json!(version);
            Ok(answer)
        }
        Err(StoreError::ItemNotFound { kind: "skill", .. }) => Err(missing(&context, &name).await),
        Err(error) => Err(error.into()),
    }
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<LoadArgs>::reading(
            "load_skill",
            "Load a skill. Load one of yours (listed under \"Your skills\" in your instructions) before a task it \
             fits: returns its instructions and the names of its files; with `resource`, that file's text. Files \
             are only read, never run: do what a skill's code does with your own tools.",
            |context, args| Box::pin(load(context, args)),
        ),
        with_effects(
            Builtin::<WriteArgs>::boxed(
                "write_skill",
                "Write a skill. A skill is reusable instructions for a kind of task that you \
                 worked out, to follow the next time instead of working it out from scratch. Creates the skill or replaces its instructions \
                 (its files stay). Every write is a version the person can review and roll back. Returns the \
                 version.",
                |context, args| Box::pin(write(context, args)),
            ),
            CHANGES_AGENT,
        ),
        with_effects(
            Builtin::<EditArgs>::boxed(
                "edit_skill",
                "Edit or delete a skill. Operations: find_replace (exact text of SKILL.md; fails without changing \
                 anything when it is not found), write_file (add, replace or, with an empty content, remove a \
                 text file of the skill), delete (the person can restore it). Returns the new version.",
                |context, args| Box::pin(edit(context, args)),
            ),
            CHANGES_AGENT,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_edit_operation_requires_its_own_fields_in_the_schema() {
        let schema = crate::schema::schema_for::<EditArgs>();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&json!({"operation": "find_replace", "name": "a", "find": "x", "replace": "y"})));
        assert!(validator.is_valid(&json!({"operation": "write_file", "name": "a", "path": "p.md", "content": ""})));
        assert!(validator.is_valid(&json!({"operation": "delete", "name": "a"})));
        assert!(!validator.is_valid(&json!({"operation": "find_replace", "name": "a", "find": "x"})));
        assert!(!validator.is_valid(&json!({"operation": "write_file", "name": "a", "content": "x"})));
        assert!(!validator.is_valid(&json!({"operation": "rename", "name": "a"})));
    }
}
