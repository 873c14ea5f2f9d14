//! The self-modification tools of seed 002: read and edit the system prompt and the learned
//! notes. Every successful edit is a new version authored by the agent, carrying the
//! conversation and tool-call ids of the call that made it.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_core::{Author, DocumentKind};
use wright_store::{DocumentEdit, VersionMeta};

use crate::builtin::{Builtin, NoArgs, Tool};
use crate::{ToolContext, ToolError};

/// The operations of `edit_system_prompt` and `edit_learned_notes`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EditOperation {
    Replace,
    FindReplace,
    Append,
    Prepend,
    Delete,
}

impl EditOperation {
    fn as_str(self) -> &'static str {
        match self {
            EditOperation::Replace => "replace",
            EditOperation::FindReplace => "find_replace",
            EditOperation::Append => "append",
            EditOperation::Prepend => "prepend",
            EditOperation::Delete => "delete",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EditArgs {
    /// The type of edit to perform.
    operation: EditOperation,
    /// For replace: the new full text. For append/prepend: the text to add (it goes on a line
    /// of its own). For delete: the exact text to remove (first occurrence).
    content: Option<String>,
    /// For find_replace: the exact substring to find (case-sensitive).
    find: Option<String>,
    /// For find_replace: the replacement text.
    replace: Option<String>,
    /// For find_replace: replace all occurrences instead of just the first. Default: false.
    replace_all: Option<bool>,
    /// Why you are making this change; kept with the version so an admin can review it.
    reason: Option<String>,
}

impl EditArgs {
    /// The store's edit, or an error naming the field the operation needs.
    fn into_edit(self, tool: &str) -> Result<(DocumentEdit, Option<String>), ToolError> {
        let operation = self.operation.as_str();
        let require =
            |value: Option<String>, field: &str| value.ok_or_else(|| ToolError::missing_field(tool, operation, field));
        let edit = match self.operation {
            EditOperation::Replace => DocumentEdit::Replace { content: require(self.content, "content")? },
            EditOperation::Append => DocumentEdit::Append { content: require(self.content, "content")? },
            EditOperation::Prepend => DocumentEdit::Prepend { content: require(self.content, "content")? },
            EditOperation::Delete => DocumentEdit::Delete { content: require(self.content, "content")? },
            EditOperation::FindReplace => DocumentEdit::FindReplace {
                find: require(self.find, "find")?,
                replace: require(self.replace, "replace")?,
                replace_all: self.replace_all.unwrap_or(false),
            },
        };
        Ok((edit, self.reason))
    }
}

async fn read(context: ToolContext, kind: DocumentKind, field: &str) -> Result<Value, ToolError> {
    let document = context.services.store.document(&context.agent, kind).await?;
    Ok(json!({ field: document.content, "version": document.version }))
}

async fn edit(context: ToolContext, kind: DocumentKind, tool: &str, args: EditArgs) -> Result<Value, ToolError> {
    let (edit, reason) = args.into_edit(tool)?;
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
        Builtin::<NoArgs>::boxed(
            "read_system_prompt",
            "Read your current stored system prompt and its version. The prompt in your context may \
             be older if you edited it during this conversation: read it before a surgical edit.",
            |context, _| Box::pin(read(context, DocumentKind::SystemPrompt, "prompt")),
        ),
        Builtin::<EditArgs>::boxed(
            "edit_system_prompt",
            "Edit your own system prompt (your behavioural instructions). Operations: replace (content = \
             the whole new prompt), find_replace (find, replace, optional replace_all), append and prepend \
             (content goes on a line of its own), delete (content = exact text to remove). find_replace and \
             delete fail without changing anything when the text is not found. Every edit is a new version \
             an admin can review and roll back; give a short reason. Returns the new version.",
            |context, args| Box::pin(edit(context, DocumentKind::SystemPrompt, "edit_system_prompt", args)),
        ),
        Builtin::<NoArgs>::boxed(
            "read_learned_notes",
            "Read your learned notes (what you know about the user and their world) and their version.",
            |context, _| Box::pin(read(context, DocumentKind::LearnedNotes, "notes")),
        ),
        Builtin::<EditArgs>::boxed(
            "edit_learned_notes",
            "Edit your learned notes: durable facts and preferences about the user. Same operations as \
             edit_system_prompt: replace, find_replace, append, prepend, delete. Keep notes short and \
             current; never store secrets. Returns the new version.",
            |context, args| Box::pin(edit(context, DocumentKind::LearnedNotes, "edit_learned_notes", args)),
        ),
    ]
}
