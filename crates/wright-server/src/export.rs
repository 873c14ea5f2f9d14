//! A conversation taken out of Wright: as Markdown for a person (what was said, each tool
//! call folded with its result in a `<details>` element) or as JSON (the typed events, the
//! same union the API serves). Served by `GET /api/conversations/{id}/export` and written by
//! `wright conversation export`; both call [`export`], so the two cannot differ.
//!
//! Everything in a conversation may come from the agent or a web page it read, and a Markdown
//! viewer renders HTML: text that is placed inside HTML (a summary line) is escaped, and code
//! is fenced with a fence longer than any run of backticks inside it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use wright_core::{ConversationStatus, EventBody};
use wright_store::{Conversation, Store, StoreError, StoredEvent};

/// The forms a conversation can be exported in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, ToSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// Markdown: what was said, tool calls and results folded.
    #[value(alias = "md")]
    #[serde(alias = "md")]
    Markdown,
    /// JSON: the conversation and its typed events ([`ConversationExport`]).
    Json,
}

impl ExportFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "text/markdown; charset=utf-8",
            ExportFormat::Json => "application/json",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::Json => "json",
        }
    }
}

/// The version of [`ConversationExport`]'s shape; a change that breaks a reader raises it.
pub const EXPORT_VERSION: u32 = 1;

/// A conversation as JSON: its header and every stored event, in order.
#[derive(Serialize, ToSchema)]
pub struct ConversationExport {
    /// The shape's version ([`EXPORT_VERSION`]).
    pub wright_export: u32,
    pub conversation: ExportedConversation,
    pub events: Vec<ExportedEvent>,
}

#[derive(Serialize, ToSchema)]
pub struct ExportedConversation {
    pub id: String,
    pub agent_id: String,
    pub title: String,
    pub status: ConversationStatus,
    pub created_at: String,
    pub updated_at: String,
}

/// One event: its number, time and line for a person, and its body — a union tagged by
/// `kind` whose fields are the event's own (as `GET /api/conversations/{id}` sends it).
#[derive(Serialize, ToSchema)]
pub struct ExportedEvent {
    pub seq: i64,
    pub content: String,
    pub created_at: String,
    #[serde(flatten)]
    pub body: EventBody,
}

/// An exported conversation: its bytes, their type and a file name to save them under.
pub struct Exported {
    pub body: String,
    pub content_type: &'static str,
    pub filename: String,
}

/// Reads the conversation (one snapshot) and renders it in `format`.
pub async fn export(store: &Store, id: &str, format: ExportFormat) -> Result<Exported, StoreError> {
    let (conversation, events, _) = store.conversation_snapshot(id).await?;
    let filename = filename(&conversation, format);
    let body = match format {
        ExportFormat::Markdown => markdown(&conversation, &events),
        ExportFormat::Json => {
            let export = json(conversation, events);
            serde_json::to_string_pretty(&export).expect("an export always serializes")
        }
    };
    Ok(Exported { body, content_type: format.content_type(), filename })
}

fn json(conversation: Conversation, events: Vec<StoredEvent>) -> ConversationExport {
    ConversationExport {
        wright_export: EXPORT_VERSION,
        conversation: ExportedConversation {
            id: conversation.id,
            agent_id: conversation.agent_id,
            title: conversation.title,
            status: conversation.status,
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
        },
        events: events
            .into_iter()
            .map(|stored| ExportedEvent {
                seq: stored.event.seq,
                content: stored.event.content,
                created_at: stored.created_at,
                body: stored.event.body,
            })
            .collect(),
    }
}

/// A file name safe in a header and on any file system: the title's letters and digits,
/// joined by dashes, and the start of the id, so two exports of "New conversation" differ.
fn filename(conversation: &Conversation, format: ExportFormat) -> String {
    let mut slug = String::new();
    for character in conversation.title.chars() {
        if character.is_ascii_alphanumeric() {
            slug.push(character.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= 48 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug = if slug.is_empty() { "conversation" } else { slug };
    let short_id: String = conversation.id.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    format!("{slug}-{short_id}.{}", format.extension())
}

/// The conversation as Markdown: a heading, then each event in order. A tool call and its
/// result are one folded `<details>` block at the place of the call.
fn markdown(conversation: &Conversation, events: &[StoredEvent]) -> String {
    let mut results: HashMap<&str, (&Value, bool)> = HashMap::new();
    for stored in events {
        if let EventBody::ToolResult { tool_call_id, output, success, .. } = &stored.event.body {
            results.insert(tool_call_id.as_str(), (output, *success));
        }
    }
    let mut out = format!(
        "# {}\n\nAgent `{}` · conversation `{}` · started {}\n",
        one_line(&conversation.title),
        conversation.agent_id,
        conversation.id,
        conversation.created_at
    );
    for stored in events {
        let time = &stored.created_at;
        match &stored.event.body {
            EventBody::User { text, component } => {
                let who = match component {
                    Some(component) => format!("You, through the component `{}`", one_line(component)),
                    None => "You".to_owned(),
                };
                out.push_str(&format!("\n## {who} · {time}\n\n{}\n", text.trim_end()));
            }
            EventBody::Assistant { text, .. } => {
                if !text.trim().is_empty() {
                    out.push_str(&format!("\n## Assistant · {time}\n\n{}\n", text.trim_end()));
                }
            }
            EventBody::ToolCall { id, name, arguments, .. } => {
                let outcome = match results.get(id.as_str()) {
                    Some((_, true)) => "ok",
                    Some((_, false)) => "failed",
                    None => "no result",
                };
                out.push_str(&format!(
                    "\n<details>\n<summary>Tool call <code>{}</code> · {outcome}</summary>\n\nArguments:\n\n{}",
                    escape_html(name),
                    fenced(arguments)
                ));
                if let Some((output, _)) = results.get(id.as_str()) {
                    out.push_str(&format!("\nResult:\n\n{}", fenced(output)));
                }
                out.push_str("\n</details>\n");
            }
            // Shown with its call.
            EventBody::ToolResult { .. } => {}
            EventBody::Notice(notice) => {
                out.push_str(&format!("\n> *{}* ({time})\n", one_line(&notice.sentence())));
            }
        }
    }
    out
}

/// A JSON value (or a string as it is) in a fenced code block whose fence no content closes.
fn fenced(value: &Value) -> String {
    let (text, language) = match value {
        Value::String(text) => (text.clone(), ""),
        other => (serde_json::to_string_pretty(other).unwrap_or_default(), "json"),
    };
    let mut longest = 0;
    let mut run = 0;
    for character in text.chars() {
        run = if character == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{language}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Text for a heading or a quoted line: one line, so it cannot start a block of its own.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wright_core::{Event, Notice};

    fn conversation(title: &str) -> Conversation {
        Conversation {
            id: "0193a1b2-c3d4-7e5f".to_owned(),
            agent_id: "default".to_owned(),
            title: title.to_owned(),
            status: ConversationStatus::Idle,
            created_at: "2026-11-27T10:00:00Z".to_owned(),
            updated_at: "2026-11-27T10:01:00Z".to_owned(),
        }
    }

    fn stored(seq: i64, body: EventBody) -> StoredEvent {
        StoredEvent { event: Event { seq, content: String::new(), body }, created_at: format!("t{seq}") }
    }

    #[test]
    fn markdown_folds_each_call_with_its_result_and_fences_what_it_quotes() {
        let events = vec![
            stored(1, EventBody::User { text: "save ```this```".to_owned(), component: None }),
            stored(
                2,
                EventBody::ToolCall {
                    id: "c1".to_owned(),
                    name: "set_state<script>".to_owned(),
                    arguments: json!({"key": "city"}),
                    provider: Value::Null,
                },
            ),
            stored(
                3,
                EventBody::ToolResult {
                    tool_call_id: "c1".to_owned(),
                    name: "set_state".to_owned(),
                    output: json!("a ``` b"),
                    success: true,
                    outside_origin: None,
                },
            ),
            stored(4, EventBody::Assistant { text: "Saved.".to_owned(), provider: Value::Null }),
            stored(5, EventBody::Notice(Notice::Cancelled)),
        ];
        let text = markdown(&conversation("Trip\n# planning"), &events);
        assert!(text.starts_with("# Trip # planning\n"), "{text}");
        assert!(text.contains("## You · t1\n\nsave ```this```\n"), "{text}");
        assert!(text.contains("<summary>Tool call <code>set_state&lt;script&gt;</code> · ok</summary>"), "{text}");
        assert!(text.contains("```json\n{\n  \"key\": \"city\"\n}\n```"), "{text}");
        assert!(text.contains("Result:\n\n````\na ``` b\n````"), "{text}");
        assert!(text.contains("## Assistant · t4\n\nSaved.\n"), "{text}");
        assert!(text.contains("> *Cancelled.* (t5)"), "{text}");
        // The result is shown once, inside its call's block.
        assert_eq!(text.matches("a ``` b").count(), 1, "{text}");
    }

    #[test]
    fn a_call_without_a_result_says_so() {
        let events = vec![stored(
            1,
            EventBody::ToolCall {
                id: "c1".to_owned(),
                name: "ask_user".to_owned(),
                arguments: json!({}),
                provider: Value::Null,
            },
        )];
        let text = markdown(&conversation("t"), &events);
        assert!(text.contains("· no result</summary>") && !text.contains("Result:"), "{text}");
    }

    #[test]
    fn the_file_name_keeps_letters_and_digits_of_the_title_and_the_start_of_the_id() {
        assert_eq!(
            filename(&conversation("Trip: Oslo → Bergen!"), ExportFormat::Markdown),
            "trip-oslo-bergen-0193a1b2.md"
        );
        assert_eq!(filename(&conversation("\"; rm -rf"), ExportFormat::Json), "rm-rf-0193a1b2.json");
        assert_eq!(filename(&conversation("→→"), ExportFormat::Json), "conversation-0193a1b2.json");
    }
}
