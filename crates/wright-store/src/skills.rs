//! Skills: per agent, folders in the Agent Skills layout (`SKILL.md` and text resource files),
//! versioned as documents are ([`crate::documents`]): every write is one `BEGIN IMMEDIATE`
//! transaction that reads the current state, builds the next one, checks it, and writes it
//! with a version row carrying author, reason, conversation and tool call. A delete is a
//! version too (the skill is marked deleted; its history stays and a rollback restores it).
//! History rows are never updated (triggers in migration 0017).
//!
//! What is checked before anything is written: the name (the Agent Skills rule, and the
//! `name` in SKILL.md's front matter must be the skill's), the front matter (a description),
//! resource paths (relative, inside the folder), and the caps in [`TextLimits`]: SKILL.md's
//! size, one resource's size, the number of resources, the folder's total, the skills an
//! agent may have.

use std::collections::BTreeMap;

use serde::Serialize;
use wright_core::{AgentId, Author, SkillFile, check_resource_path, check_skill_name};

use crate::documents::{DocumentEdit, VersionMeta, VersionSummary, check_reason};
use crate::limits::check_size;
use crate::{Store, StoreError};

/// A skill's files: path → text. Binary files are not kept (resources are read as text).
pub type SkillResources = BTreeMap<String, String>;

/// A skill as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// SKILL.md, whole (front matter and body).
    pub content: String,
    /// The Markdown after the front matter.
    pub body: String,
    pub resources: SkillResources,
    pub enabled: bool,
    pub version: i64,
    pub updated_at: String,
}

/// One line of an agent's skill list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    pub enabled: bool,
    pub version: i64,
    pub updated_at: String,
    /// Paths of the resource files.
    pub resources: Vec<String>,
}

/// One version of a skill in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillVersion {
    pub version: i64,
    pub content: String,
    pub resources: SkillResources,
    pub enabled: bool,
    /// This version deleted the skill.
    pub deleted: bool,
    pub author: Author,
    pub reason: Option<String>,
    pub conversation_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub created_at: String,
}

/// A change to one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillChange {
    /// A new skill, switched on or not (one installed from the marketplace starts off until a
    /// person has read it): fails with [`StoreError::ItemExists`] when one of this name exists.
    Create { content: String, resources: SkillResources, enabled: bool },
    /// Write SKILL.md whole (creating the skill if it does not exist, or was deleted). With
    /// `resources`, they replace all the skill's files; `None` keeps them.
    Write { content: String, resources: Option<SkillResources> },
    /// Edit SKILL.md as a document is edited; the name in its front matter must stay.
    Edit(DocumentEdit),
    /// Write one resource file (`Some`) or remove it (`None`).
    Resource { path: String, content: Option<String> },
    /// Switch the skill on or off: only enabled skills are listed to the model.
    Enable(bool),
    /// Delete the skill (a version; a rollback restores it).
    Delete,
}

/// version, author, reason, conversation id, tool call id, time, size in bytes.
type VersionSummaryRow = (i64, String, Option<String>, Option<String>, Option<String>, String, i64);

/// The state of a skill as one version stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    content: String,
    resources: SkillResources,
    enabled: bool,
    deleted: bool,
}

impl Store {
    /// The agent's skills (not deleted), by name.
    pub async fn skills(&self, agent: &AgentId) -> Result<Vec<SkillSummary>, StoreError> {
        self.require_agent(agent).await?;
        let rows: Vec<(String, String, String, i64, i64, String)> = sqlx::query_as(
            "SELECT name, content, resources, enabled, version, updated_at FROM skills \
             WHERE agent_id = ? AND deleted = 0 ORDER BY name",
        )
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(name, content, resources, enabled, version, updated_at)| {
                let description = SkillFile::parse(&content).map(|file| file.description).unwrap_or_default();
                Ok(SkillSummary {
                    name,
                    description,
                    enabled: enabled != 0,
                    version,
                    updated_at,
                    resources: parse_resources(&resources)?.into_keys().collect(),
                })
            })
            .collect()
    }

    /// One skill as it is now; a deleted one is not found.
    pub async fn skill(&self, agent: &AgentId, name: &str) -> Result<Skill, StoreError> {
        self.require_agent(agent).await?;
        let row: Option<(String, String, i64, i64, i64, String)> = sqlx::query_as(
            "SELECT content, resources, enabled, deleted, version, updated_at FROM skills WHERE agent_id = ? AND name = ?",
        )
        .bind(agent.as_str())
        .bind(name)
        .fetch_optional(&self.reader)
        .await?;
        match row {
            Some((content, resources, enabled, 0, version, updated_at)) => {
                let file = SkillFile::parse(&content).map_err(invalid)?;
                Ok(Skill {
                    name: name.to_owned(),
                    description: file.description,
                    body: file.body,
                    content,
                    resources: parse_resources(&resources)?,
                    enabled: enabled != 0,
                    version,
                    updated_at,
                })
            }
            _ => Err(not_found(name)),
        }
    }

    /// Applies `change` to the skill `name` and writes a new version; returns its number.
    pub async fn change_skill(
        &self,
        agent: &AgentId,
        name: &str,
        change: SkillChange,
        meta: &VersionMeta,
    ) -> Result<i64, StoreError> {
        check_skill_name(name).map_err(invalid)?;
        check_reason(meta, &self.text_limits)?;
        let limits = &self.text_limits;
        // Refuse an oversized write before queueing for the write lock.
        if let SkillChange::Write { content, .. }
        | SkillChange::Create { content, .. }
        | SkillChange::Edit(DocumentEdit::Replace { content }) = &change
        {
            check_size("SKILL.md", content.len() as u64, limits.max_skill_bytes, "max_skill_bytes")?;
        }
        let mut transaction = self.begin_write().await?;
        let version = self.apply_skill_change(&mut transaction, agent, name, change, meta).await?;
        transaction.commit().await?;
        Ok(version)
    }

    /// [`change_skill`](Self::change_skill) inside the caller's write transaction (a learned
    /// item's status and its skill change together).
    pub(crate) async fn apply_skill_change(
        &self,
        transaction: &mut sqlx::SqliteConnection,
        agent: &AgentId,
        name: &str,
        change: SkillChange,
        meta: &VersionMeta,
    ) -> Result<i64, StoreError> {
        let limits = &self.text_limits;
        let exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&mut *transaction)
            .await?;
        exists.ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))?;
        let current = read_state(&mut *transaction, agent, name).await?;
        let live = current.as_ref().filter(|(_, state)| !state.deleted);
        let next = match (change, live) {
            (SkillChange::Create { .. }, Some(_)) => {
                return Err(StoreError::ItemExists { kind: "skill", name: name.to_owned() });
            }
            (SkillChange::Create { content, resources, enabled }, None) => {
                State { content, resources, enabled, deleted: false }
            }
            (SkillChange::Write { content, resources }, live) => {
                let resources = match (resources, live) {
                    (Some(resources), _) => resources,
                    (None, Some((_, state))) => state.resources.clone(),
                    (None, None) => SkillResources::new(),
                };
                // A new skill starts enabled; a rewrite keeps the switch where it was.
                let enabled = live.is_none_or(|(_, state)| state.enabled);
                State { content, resources, enabled, deleted: false }
            }
            (_, None) => return Err(not_found(name)),
            (SkillChange::Edit(edit), Some((_, state))) => {
                let content = edit
                    .apply(&state.content, limits.max_skill_bytes, wright_core::DocumentKind::LearnedNotes)
                    .map_err(|error| match error {
                        // The document's wording names the notes; say what it is.
                        StoreError::LimitExceeded(_) => StoreError::LimitExceeded(format!(
                            "SKILL.md would be over {} bytes ([limits] max_skill_bytes)",
                            limits.max_skill_bytes
                        )),
                        other => other,
                    })?;
                State { content, ..state.clone() }
            }
            (SkillChange::Resource { path, content }, Some((_, state))) => {
                check_resource_path(&path).map_err(invalid)?;
                let mut resources = state.resources.clone();
                match content {
                    Some(content) => {
                        resources.insert(path, content);
                    }
                    None => {
                        if resources.remove(&path).is_none() {
                            return Err(StoreError::ItemNotFound { kind: "skill resource", name: path });
                        }
                    }
                }
                State { resources, ..state.clone() }
            }
            (SkillChange::Enable(enabled), Some((_, state))) => State { enabled, ..state.clone() },
            (SkillChange::Delete, Some((_, state))) => State { deleted: true, ..state.clone() },
        };
        self.check_state(name, &next)?;
        if current.as_ref().is_none_or(|(_, state)| state.deleted) {
            let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM skills WHERE agent_id = ? AND deleted = 0")
                .bind(agent.as_str())
                .fetch_one(&mut *transaction)
                .await?;
            if count as u64 >= limits.max_skills as u64 {
                return Err(StoreError::LimitExceeded(format!(
                    "the agent has {count} skills; the limit is {} ([limits] max_skills)",
                    limits.max_skills
                )));
            }
        }
        let version = current.map_or(0, |(version, _)| version) + 1;
        write_state(&mut *transaction, agent, name, version, &next, meta).await?;
        Ok(version)
    }

    /// Whether `agent` has a skill named `name` (not deleted).
    pub(crate) async fn skill_exists(
        transaction: &mut sqlx::SqliteConnection,
        agent: &AgentId,
        name: &str,
    ) -> Result<bool, StoreError> {
        Ok(read_state(transaction, agent, name).await?.is_some_and(|(_, state)| !state.deleted))
    }

    /// Writes a new version whose folder, switch and deletion equal version `to_version`'s.
    pub async fn rollback_skill(
        &self,
        agent: &AgentId,
        name: &str,
        to_version: i64,
        reason: Option<String>,
    ) -> Result<i64, StoreError> {
        let reason = reason.or_else(|| Some(format!("rollback to version {to_version}")));
        let meta = VersionMeta::new(Author::Rollback).with_reason(reason);
        check_reason(&meta, &self.text_limits)?;
        let mut transaction = self.begin_write().await?;
        let (version, _) = read_state(&mut transaction, agent, name).await?.ok_or_else(|| not_found(name))?;
        let old = read_version(&mut transaction, agent, name, to_version).await?;
        let state =
            State { content: old.content, resources: old.resources, enabled: old.enabled, deleted: old.deleted };
        // An old version may predate lowered caps; rolling back to it is a write like any other.
        self.check_state(name, &state)?;
        write_state(&mut transaction, agent, name, version + 1, &state, &meta).await?;
        transaction.commit().await?;
        Ok(version + 1)
    }

    /// The skill's history, newest first (`size`: bytes of SKILL.md and resources).
    pub async fn skill_versions(&self, agent: &AgentId, name: &str) -> Result<Vec<VersionSummary>, StoreError> {
        self.require_agent(agent).await?;
        let rows: Vec<VersionSummaryRow> = sqlx::query_as(
            "SELECT version, author, reason, conversation_id, tool_call_id, created_at, \
             length(CAST(content AS BLOB)) + length(CAST(resources AS BLOB)) \
             FROM skill_versions WHERE agent_id = ? AND name = ? ORDER BY version DESC",
        )
        .bind(agent.as_str())
        .bind(name)
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() {
            return Err(not_found(name));
        }
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

    pub async fn skill_version(&self, agent: &AgentId, name: &str, version: i64) -> Result<SkillVersion, StoreError> {
        self.require_agent(agent).await?;
        let mut connection = self.reader.acquire().await?;
        read_version(&mut connection, agent, name, version).await
    }

    /// A unified diff of the folder from version `from` to `to`: SKILL.md, then each
    /// resource under a header line, then the switch.
    pub async fn skill_diff(&self, agent: &AgentId, name: &str, from: i64, to: i64) -> Result<String, StoreError> {
        let old = self.skill_version(agent, name, from).await?;
        let new = self.skill_version(agent, name, to).await?;
        self.diff(&folder_text(&old), &folder_text(&new), &format!("{name} v{from}"), &format!("{name} v{to}")).await
    }

    /// The enabled skills' names and descriptions, for the system message.
    pub async fn enabled_skills(&self, agent: &AgentId) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .skills(agent)
            .await?
            .into_iter()
            .filter(|skill| skill.enabled)
            .map(|skill| (skill.name, skill.description))
            .collect())
    }

    fn check_state(&self, name: &str, state: &State) -> Result<(), StoreError> {
        let limits = &self.text_limits;
        check_size("SKILL.md", state.content.len() as u64, limits.max_skill_bytes, "max_skill_bytes")?;
        let file = SkillFile::parse(&state.content).map_err(invalid)?;
        if file.name != name {
            return Err(StoreError::InvalidEdit(format!(
                "SKILL.md names the skill {:?}, but it is the skill {name:?}: the front matter's name must stay the \
                 folder's name",
                file.name
            )));
        }
        if state.resources.len() > limits.max_skill_files {
            return Err(StoreError::LimitExceeded(format!(
                "the skill would have {} resource files; the limit is {} ([limits] max_skill_files)",
                state.resources.len(),
                limits.max_skill_files
            )));
        }
        let mut total = state.content.len() as u64;
        for (path, content) in &state.resources {
            check_resource_path(path).map_err(invalid)?;
            check_size(
                &format!("the resource {path}"),
                content.len() as u64,
                limits.max_skill_bytes,
                "max_skill_bytes",
            )?;
            total += content.len() as u64;
        }
        check_size("the skill's folder", total, limits.max_skill_folder_bytes, "max_skill_folder_bytes")
    }
}

/// The folder as one text, for diffs.
fn folder_text(version: &SkillVersion) -> String {
    let mut text = version.content.clone();
    for (path, content) in &version.resources {
        text.push_str(&format!("\n\n===== {path} =====\n{content}"));
    }
    text.push_str(&format!(
        "\n\n===== state =====\n{}{}\n",
        if version.enabled { "enabled" } else { "disabled" },
        if version.deleted { ", deleted" } else { "" }
    ));
    text
}

async fn read_state(
    connection: &mut sqlx::SqliteConnection,
    agent: &AgentId,
    name: &str,
) -> Result<Option<(i64, State)>, StoreError> {
    let row: Option<(i64, String, String, i64, i64)> = sqlx::query_as(
        "SELECT version, content, resources, enabled, deleted FROM skills WHERE agent_id = ? AND name = ?",
    )
    .bind(agent.as_str())
    .bind(name)
    .fetch_optional(&mut *connection)
    .await?;
    row.map(|(version, content, resources, enabled, deleted)| {
        Ok((
            version,
            State { content, resources: parse_resources(&resources)?, enabled: enabled != 0, deleted: deleted != 0 },
        ))
    })
    .transpose()
}

async fn read_version(
    connection: &mut sqlx::SqliteConnection,
    agent: &AgentId,
    name: &str,
    version: i64,
) -> Result<SkillVersion, StoreError> {
    type Row = (String, String, i64, i64, String, Option<String>, Option<String>, Option<String>, String);
    let row: Option<Row> = sqlx::query_as(
        "SELECT content, resources, enabled, deleted, author, reason, conversation_id, tool_call_id, created_at \
         FROM skill_versions WHERE agent_id = ? AND name = ? AND version = ?",
    )
    .bind(agent.as_str())
    .bind(name)
    .bind(version)
    .fetch_optional(&mut *connection)
    .await?;
    let (content, resources, enabled, deleted, author, reason, conversation_id, tool_call_id, created_at) =
        row.ok_or(StoreError::VersionNotFound { kind: "skill", version })?;
    Ok(SkillVersion {
        version,
        content,
        resources: parse_resources(&resources)?,
        enabled: enabled != 0,
        deleted: deleted != 0,
        author: parse_author(&author)?,
        reason,
        conversation_id,
        tool_call_id,
        created_at,
    })
}

async fn write_state(
    connection: &mut sqlx::SqliteConnection,
    agent: &AgentId,
    name: &str,
    version: i64,
    state: &State,
    meta: &VersionMeta,
) -> Result<(), StoreError> {
    let resources =
        serde_json::to_string(&state.resources).map_err(|error| StoreError::InvalidEdit(error.to_string()))?;
    sqlx::query(
        "INSERT INTO skills (agent_id, name, content, resources, enabled, deleted, version) VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (agent_id, name) DO UPDATE SET content = excluded.content, resources = excluded.resources, \
         enabled = excluded.enabled, deleted = excluded.deleted, version = excluded.version, \
         updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
    )
    .bind(agent.as_str())
    .bind(name)
    .bind(&state.content)
    .bind(&resources)
    .bind(state.enabled)
    .bind(state.deleted)
    .bind(version)
    .execute(&mut *connection)
    .await?;
    sqlx::query(
        "INSERT INTO skill_versions (agent_id, name, version, content, resources, enabled, deleted, author, reason, \
         conversation_id, tool_call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(agent.as_str())
    .bind(name)
    .bind(version)
    .bind(&state.content)
    .bind(&resources)
    .bind(state.enabled)
    .bind(state.deleted)
    .bind(meta.author.as_str())
    .bind(meta.reason.as_deref())
    .bind(meta.conversation_id.as_deref())
    .bind(meta.tool_call_id.as_deref())
    .execute(&mut *connection)
    .await?;
    Ok(())
}

fn parse_resources(raw: &str) -> Result<SkillResources, StoreError> {
    serde_json::from_str(raw).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
}

fn parse_author(raw: &str) -> Result<Author, StoreError> {
    Author::parse(raw).map_err(|error| StoreError::Database(sqlx::Error::Decode(Box::new(error))))
}

fn invalid(error: wright_core::CoreError) -> StoreError {
    StoreError::InvalidEdit(error.to_string())
}

fn not_found(name: &str) -> StoreError {
    StoreError::ItemNotFound { kind: "skill", name: name.to_owned() }
}
