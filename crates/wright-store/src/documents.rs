//! Versioned documents: the system prompt, the learned notes and the database notes of each
//! agent.
//!
//! An edit is read-modify-write inside one `BEGIN IMMEDIATE` transaction on the single writer
//! connection: read the current text, apply the [`DocumentEdit`], write the new text and a
//! version row. Edits that cannot apply (text to find is absent, a field missing) fail before
//! anything is written. The length of an edit's result is computed from its parts and checked
//! against [`TextLimits::max_document_bytes`] before the new text is built.

use serde::{Deserialize, Serialize};
use wright_core::{AgentId, Author, DocumentKind};

use crate::limits::check_size;
use crate::{Store, StoreError, TextLimits};

/// The current text of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Document {
    pub content: String,
    pub version: i64,
    pub updated_at: String,
}

/// One version in a document's history, without its content (for timelines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionSummary {
    pub version: i64,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
    /// Length of the content in bytes.
    pub size: i64,
}

/// One version in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentVersion {
    pub version: i64,
    pub content: String,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

/// Who makes a version and why; stored on the version row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMeta {
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
}

impl VersionMeta {
    pub fn new(author: Author) -> Self {
        Self { author, reason: None, conversation_id: None, tool_call_id: None }
    }

    pub fn with_reason(mut self, reason: Option<String>) -> Self {
        self.reason = reason;
        self
    }
}

/// One edit of a document, as the `edit_*` tools and the admin API describe it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum DocumentEdit {
    /// Replace the whole text.
    Replace { content: String },
    /// Replace the first occurrence of `find` (or every one) with `replace`.
    FindReplace {
        find: String,
        replace: String,
        #[serde(default)]
        replace_all: bool,
    },
    /// Add text at the end, on a line of its own.
    Append { content: String },
    /// Add text at the beginning, on a line of its own.
    Prepend { content: String },
    /// Remove the first occurrence of `content`.
    Delete { content: String },
}

impl DocumentEdit {
    /// Applies the edit to `current`, or says why it cannot apply. Pure: nothing is written.
    /// Refuses a result longer than `max_bytes` before building it.
    pub fn apply(&self, current: &str, max_bytes: usize, kind: DocumentKind) -> Result<String, StoreError> {
        self.check_result_length(current, max_bytes, kind)?;
        match self {
            DocumentEdit::Replace { content } => Ok(content.clone()),
            DocumentEdit::FindReplace { find, replace, replace_all } => {
                if find.is_empty() {
                    return Err(StoreError::InvalidEdit("`find` must not be empty".into()));
                }
                if !current.contains(find.as_str()) {
                    return Err(StoreError::InvalidEdit(format!(
                        "find_replace failed: the text {find:?} was not found; nothing was changed \
                         (read the current version first, the match is exact and case-sensitive)"
                    )));
                }
                Ok(if *replace_all {
                    current.replace(find.as_str(), replace)
                } else {
                    current.replacen(find.as_str(), replace, 1)
                })
            }
            DocumentEdit::Append { content } => Ok(join_lines(current, content)),
            DocumentEdit::Prepend { content } => Ok(join_lines(content, current)),
            DocumentEdit::Delete { content } => {
                if content.is_empty() {
                    return Err(StoreError::InvalidEdit("`content` must not be empty for delete".into()));
                }
                if !current.contains(content.as_str()) {
                    return Err(StoreError::InvalidEdit(format!(
                        "delete failed: the text {content:?} was not found; nothing was changed \
                         (read the current version first, the match is exact and case-sensitive)"
                    )));
                }
                Ok(current.replacen(content.as_str(), "", 1))
            }
        }
    }
}

impl DocumentEdit {
    /// The length the result would have, from the lengths of the parts alone: a find/replace
    /// counts its matches (the same non-overlapping ones `str::replace` would take) and adds
    /// the length change once per match. Saturating arithmetic: a product too large for u64 is
    /// over any cap anyway.
    fn check_result_length(&self, current: &str, max_bytes: usize, kind: DocumentKind) -> Result<(), StoreError> {
        let current_len = current.len() as u64;
        let length = match self {
            DocumentEdit::Replace { content } => content.len() as u64,
            DocumentEdit::FindReplace { find, replace, replace_all } => {
                if find.is_empty() {
                    return Ok(()); // refused by `apply` with a clearer message
                }
                let matches = if *replace_all {
                    current.matches(find.as_str()).count() as u64
                } else {
                    u64::from(current.contains(find.as_str()))
                };
                let removed = matches.saturating_mul(find.len() as u64);
                let added = matches.saturating_mul(replace.len() as u64);
                current_len.saturating_sub(removed).saturating_add(added)
            }
            // One line break may be added between the two.
            DocumentEdit::Append { content } | DocumentEdit::Prepend { content } => {
                current_len.saturating_add(content.len() as u64).saturating_add(1)
            }
            DocumentEdit::Delete { .. } => return Ok(()),
        };
        check_size(&format!("the {kind}"), length, max_bytes, "max_document_bytes")
    }
}

/// Fails unless the reason stored with a version is within its cap.
pub(crate) fn check_reason(meta: &VersionMeta, limits: &TextLimits) -> Result<(), StoreError> {
    let size = meta.reason.as_ref().map_or(0, String::len) as u64;
    check_size("the reason", size, limits.max_reason_bytes, "max_reason_bytes")
}

/// `first` then `second`, with a line break between them unless one is empty or `first`
/// already ends with one, so appended notes never run into the previous line.
fn join_lines(first: &str, second: &str) -> String {
    if first.is_empty() || second.is_empty() || first.ends_with('\n') {
        format!("{first}{second}")
    } else {
        format!("{first}\n{second}")
    }
}

/// The tables a document lives in: the prompt and the notes in `documents`, the database
/// notes in their own pair with the same columns (see migration 0018). Only these literal
/// names are ever formatted into SQL.
pub(crate) fn tables(kind: DocumentKind) -> (&'static str, &'static str) {
    match kind {
        DocumentKind::SystemPrompt | DocumentKind::LearnedNotes => ("documents", "document_versions"),
        DocumentKind::DbNotes => ("db_notes", "db_note_versions"),
    }
}

type VersionRow = (i64, String, String, Option<String>, Option<String>, Option<String>, String);

fn version_from_row(row: VersionRow) -> Result<DocumentVersion, StoreError> {
    let (version, content, author, reason, conversation_id, tool_call_id, created_at) = row;
    Ok(DocumentVersion {
        version,
        content,
        author: parse_author(&author)?,
        reason,
        conversation_id,
        tool_call_id,
        created_at,
    })
}

fn parse_author(raw: &str) -> Result<Author, StoreError> {
    Author::parse(raw).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
}

/// version, author, reason, conversation id, tool call id, time, size in bytes.
type VersionSummaryRow = (i64, String, Option<String>, Option<String>, Option<String>, String, i64);

impl Store {
    /// The current text and version.
    pub async fn document(&self, agent: &AgentId, kind: DocumentKind) -> Result<Document, StoreError> {
        let (current, _) = tables(kind);
        let row: Option<(String, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT content, version, updated_at FROM {current} WHERE agent_id = ? AND kind = ?"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .fetch_optional(&self.reader)
        .await?;
        row.map(|(content, version, updated_at)| Document { content, version, updated_at })
            .ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))
    }

    /// Applies `edit` and writes a new version; returns the new version number.
    pub async fn edit_document(
        &self,
        agent: &AgentId,
        kind: DocumentKind,
        edit: &DocumentEdit,
        meta: &VersionMeta,
    ) -> Result<i64, StoreError> {
        check_reason(meta, &self.text_limits)?;
        // The edit's own text alone may already be over the cap: refuse before queueing
        // for the write lock.
        if let DocumentEdit::Replace { content }
        | DocumentEdit::Append { content }
        | DocumentEdit::Prepend { content } = edit
        {
            check_size(
                &format!("the {kind}"),
                content.len() as u64,
                self.text_limits.max_document_bytes,
                "max_document_bytes",
            )?;
        }
        let mut transaction = self.begin_write().await?;
        let (table, _) = tables(kind);
        let current: Option<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT content, version FROM {table} WHERE agent_id = ? AND kind = ?"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .fetch_optional(&mut *transaction)
        .await?;
        let (content, version) = current.ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))?;
        let new_content = edit.apply(&content, self.text_limits.max_document_bytes, kind)?;
        let new_version = version + 1;
        write_version(&mut transaction, agent, kind, new_version, &new_content, meta).await?;
        transaction.commit().await?;
        Ok(new_version)
    }

    /// Writes a new version whose content equals version `to_version`'s. History is kept.
    pub async fn rollback_document(
        &self,
        agent: &AgentId,
        kind: DocumentKind,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<i64, StoreError> {
        let mut transaction = self.begin_write().await?;
        let (table, history) = tables(kind);
        let current: Option<(i64,)> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT version FROM {table} WHERE agent_id = ? AND kind = ?")))
                .bind(agent.as_str())
                .bind(kind.as_str())
                .fetch_optional(&mut *transaction)
                .await?;
        let (version,) = current.ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))?;
        let old: Option<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT content FROM {history} WHERE agent_id = ? AND kind = ? AND version = ?"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .bind(to_version)
        .fetch_optional(&mut *transaction)
        .await?;
        let (content,) = old.ok_or(StoreError::VersionNotFound { kind: kind.as_str(), version: to_version })?;
        // An old version may predate a lowered cap; rolling back to it is an edit like any other.
        check_size(
            &format!("the {kind}"),
            content.len() as u64,
            self.text_limits.max_document_bytes,
            "max_document_bytes",
        )?;
        let reason = reason.or_else(|| Some(format!("rollback to version {to_version}")));
        let meta = VersionMeta::new(Author::Rollback).with_reason(reason);
        check_reason(&meta, &self.text_limits)?;
        let new_version = version + 1;
        write_version(&mut transaction, agent, kind, new_version, &content, &meta).await?;
        transaction.commit().await?;
        Ok(new_version)
    }

    /// The history, newest first.
    pub async fn document_versions(
        &self,
        agent: &AgentId,
        kind: DocumentKind,
    ) -> Result<Vec<VersionSummary>, StoreError> {
        self.require_agent(agent).await?;
        let (_, history) = tables(kind);
        let rows: Vec<VersionSummaryRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT version, author, reason, conversation_id, tool_call_id, created_at, length(CAST(content AS BLOB)) \
             FROM {history} WHERE agent_id = ? AND kind = ? ORDER BY version DESC"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(version, author, reason, conversation_id, tool_call_id, created_at, size)| {
                Ok(VersionSummary {
                    version,
                    author: parse_author(&author)?,
                    reason,
                    conversation_id,
                    tool_call_id,
                    created_at,
                    size,
                })
            })
            .collect()
    }

    pub async fn document_version(
        &self,
        agent: &AgentId,
        kind: DocumentKind,
        version: i64,
    ) -> Result<DocumentVersion, StoreError> {
        self.require_agent(agent).await?;
        let (_, history) = tables(kind);
        let row: Option<VersionRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT version, content, author, reason, conversation_id, tool_call_id, created_at \
             FROM {history} WHERE agent_id = ? AND kind = ? AND version = ?"
        )))
        .bind(agent.as_str())
        .bind(kind.as_str())
        .bind(version)
        .fetch_optional(&self.reader)
        .await?;
        version_from_row(row.ok_or(StoreError::VersionNotFound { kind: kind.as_str(), version })?)
    }

    /// A unified diff from version `from` to version `to`, bounded as [`Store::diff`] is.
    pub async fn document_diff(
        &self,
        agent: &AgentId,
        kind: DocumentKind,
        from: i64,
        to: i64,
    ) -> Result<String, StoreError> {
        let old = self.document_version(agent, kind, from).await?;
        let new = self.document_version(agent, kind, to).await?;
        self.diff(&old.content, &new.content, &format!("{kind} v{from}"), &format!("{kind} v{to}")).await
    }
}

async fn write_version(
    transaction: &mut sqlx::SqliteConnection,
    agent: &AgentId,
    kind: DocumentKind,
    version: i64,
    content: &str,
    meta: &VersionMeta,
) -> Result<(), StoreError> {
    let (table, history) = tables(kind);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE {table} SET content = ?, version = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
         WHERE agent_id = ? AND kind = ?"
    )))
    .bind(content)
    .bind(version)
    .bind(agent.as_str())
    .bind(kind.as_str())
    .execute(&mut *transaction)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {history} (agent_id, kind, version, content, author, reason, conversation_id, tool_call_id) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )))
    .bind(agent.as_str())
    .bind(kind.as_str())
    .bind(version)
    .bind(content)
    .bind(meta.author.as_str())
    .bind(meta.reason.as_deref())
    .bind(meta.conversation_id.as_deref())
    .bind(meta.tool_call_id.as_deref())
    .execute(&mut *transaction)
    .await?;
    Ok(())
}
