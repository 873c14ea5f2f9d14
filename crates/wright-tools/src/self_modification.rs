//! The self-modification tools of seed 002: read and edit the system prompt and the learned
//! notes. Every successful edit is a new version authored by the agent, carrying the
//! conversation and tool-call ids of the call that made it.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_core::{Author, DocumentKind};
use wright_store::{DocumentEdit, VersionMeta};

use crate::builtin::{Builtin, CHANGES_AGENT, NoArgs, Tool, with_effects};
use crate::{ToolContext, ToolError};

// One shape per operation: the schema is a `oneOf` tagged by `operation`, so each operation's
// fields are required in the schema itself. A server that turns schemas into a grammar
// (llama.cpp) then only lets a model write a complete edit — a 0.5B model otherwise sends
// `replace` with the text in the wrong field, again and again. Providers that refuse a `oneOf`
// at the root get the variants merged (`wright_llm::tool_schema`). The mildest operation comes
// first: a weak model held to the grammar tends to take the first alternative.
/// One edit: `operation` says which, and which fields it takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "operation", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum EditArgs {
    /// Add text at the end, on a line of its own.
    Append {
        /// The text to add.
        content: String,
        /// Why you are making this change; kept with the version so an admin can review it.
        reason: Option<String>,
    },
    /// Add text at the start, on a line of its own.
    Prepend {
        /// The text to add.
        content: String,
        /// Why you are making this change; kept with the version so an admin can review it.
        reason: Option<String>,
    },
    /// Replace an exact substring (case-sensitive).
    FindReplace {
        /// The exact substring to find.
        find: String,
        /// The replacement text.
        replace: String,
        /// Replace all occurrences instead of just the first. Default: false.
        replace_all: Option<bool>,
        /// Why you are making this change; kept with the version so an admin can review it.
        reason: Option<String>,
    },
    /// Replace the whole text.
    Replace {
        /// The new full text.
        content: String,
        /// Why you are making this change; kept with the version so an admin can review it.
        reason: Option<String>,
    },
    /// Remove the first occurrence of an exact text.
    Delete {
        /// The exact text to remove.
        content: String,
        /// Why you are making this change; kept with the version so an admin can review it.
        reason: Option<String>,
    },
}

impl EditArgs {
    /// The store's edit and the reason given.
    fn into_edit(self) -> (DocumentEdit, Option<String>) {
        match self {
            EditArgs::Append { content, reason } => (DocumentEdit::Append { content }, reason),
            EditArgs::Prepend { content, reason } => (DocumentEdit::Prepend { content }, reason),
            EditArgs::FindReplace { find, replace, replace_all, reason } => {
                (DocumentEdit::FindReplace { find, replace, replace_all: replace_all.unwrap_or(false) }, reason)
            }
            EditArgs::Replace { content, reason } => (DocumentEdit::Replace { content }, reason),
            EditArgs::Delete { content, reason } => (DocumentEdit::Delete { content }, reason),
        }
    }
}

async fn read(context: ToolContext, kind: DocumentKind, field: &str) -> Result<Value, ToolError> {
    let document = context.services.store.document(&context.agent, kind).await?;
    Ok(json!({ field: document.content, "version": document.version }))
}

async fn edit(context: ToolContext, kind: DocumentKind, args: EditArgs) -> Result<Value, ToolError> {
    let (edit, reason) = args.into_edit();
    let meta = VersionMeta {
        author: Author::Agent,
        reason,
        conversation_id: context.conversation_id.clone(),
        tool_call_id: context.tool_call_id.clone(),
    };
    let version = context.services.store.edit_document(&context.agent, kind, &edit, &meta).await?;
    Ok(json!({ "version": version }))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<NoArgs>::reading(
            "read_system_prompt",
            "Read your current stored system prompt and its version. The prompt in your context may \
             be older if you edited it during this conversation: read it before a surgical edit.",
            |context, _| Box::pin(read(context, DocumentKind::SystemPrompt, "prompt")),
        ),
        with_effects(
            Builtin::<EditArgs>::boxed(
                "edit_system_prompt",
                "Edit your own system prompt (your behavioural instructions). Operations: append and prepend \
             (content goes on a line of its own), find_replace (find, replace, optional replace_all), replace \
             (content = the whole new prompt), delete (content = exact text to remove). find_replace and \
             delete fail without changing anything when the text is not found. Every edit is a new version \
             an admin can review and roll back; give a short reason. Returns the new version.",
                |context, args| Box::pin(edit(context, DocumentKind::SystemPrompt, args)),
            ),
            CHANGES_AGENT,
        ),
        Builtin::<NoArgs>::reading(
            "read_learned_notes",
            "Read your learned notes (what you know about the user and their world) and their version.",
            |context, _| Box::pin(read(context, DocumentKind::LearnedNotes, "notes")),
        ),
        with_effects(
            Builtin::<EditArgs>::boxed(
                "edit_learned_notes",
                "Edit your learned notes: durable facts and preferences about the user. Same operations as \
             edit_system_prompt: append, prepend, find_replace, replace, delete. Keep notes short and \
             current; never store secrets. Returns the new version.",
                |context, args| Box::pin(edit(context, DocumentKind::LearnedNotes, args)),
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
        let variants = schema["oneOf"].as_array().expect("a oneOf of the operations");
        let shapes: Vec<(Value, Value)> = variants
            .iter()
            .map(|variant| (variant["properties"]["operation"]["const"].clone(), variant["required"].clone()))
            .collect();
        assert_eq!(
            shapes,
            [
                (json!("append"), json!(["operation", "content"])),
                (json!("prepend"), json!(["operation", "content"])),
                (json!("find_replace"), json!(["operation", "find", "replace"])),
                (json!("replace"), json!(["operation", "content"])),
                (json!("delete"), json!(["operation", "content"])),
            ]
        );
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&json!({"operation": "append", "content": "Prefers tea."})));
        assert!(!validator.is_valid(&json!({"operation": "replace", "replace": "tea", "replace_all": false})));
        assert!(!validator.is_valid(&json!({"operation": "rewrite", "content": "x"})));
    }
}
