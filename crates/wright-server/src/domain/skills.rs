//! Skills coming in and going out as folders in the Agent Skills layout: a set of files
//! (`SKILL.md` and resources, by path) becomes a skill of an agent, and a skill becomes those
//! files again. The API (a JSON of files), the CLI (a directory) and exports share this.
//!
//! What a folder may hold is decided here before the store checks the skill: `SKILL.md` at
//! its root (or under one top folder, as a folder copied whole arrives), text files only (a
//! binary file — an image, a compiled script — is left out and named in the answer, since
//! resources are only ever read as text), no hidden files (`.DS_Store`, `.git`).

use std::collections::BTreeMap;

use wright_core::{AgentId, Author, SKILL_FILE, SkillFile};
use wright_store::{SkillChange, SkillResources, Store, VersionMeta};

use super::DomainError;

/// A skill folder read from files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    pub name: String,
    pub content: String,
    pub resources: SkillResources,
    /// Files left out, with why.
    pub skipped: Vec<String>,
}

/// Reads a folder from its files (path → bytes).
pub fn folder(files: BTreeMap<String, Vec<u8>>) -> Result<Folder, DomainError> {
    let files: BTreeMap<String, Vec<u8>> = files
        .into_iter()
        .map(|(path, bytes)| (path.replace('\\', "/").trim_start_matches("./").to_owned(), bytes))
        .collect();
    // A folder copied whole arrives as `name/SKILL.md`, `name/references/…`: strip that top.
    let prefix = if files.contains_key(SKILL_FILE) {
        String::new()
    } else {
        let tops: Vec<&str> = files.keys().filter_map(|path| path.split_once('/').map(|(top, _)| top)).collect();
        match tops.first() {
            Some(top)
                if tops.iter().all(|other| other == top) && files.contains_key(&format!("{top}/{SKILL_FILE}")) =>
            {
                format!("{top}/")
            }
            _ => {
                return Err(DomainError::Invalid(format!(
                    "no {SKILL_FILE} at the folder's root: a skill is a folder with {SKILL_FILE} (front matter with \
                     name and description, then instructions) and optional resource files"
                )));
            }
        }
    };
    let mut content = None;
    let mut resources = SkillResources::new();
    let mut skipped = Vec::new();
    for (path, bytes) in files {
        let Some(relative) = path.strip_prefix(&prefix) else { continue };
        if relative.split('/').any(|part| part.starts_with('.')) {
            skipped.push(format!("{relative} (hidden)"));
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            skipped.push(format!("{relative} (not text: resources are read as text, never run)"));
            continue;
        };
        if relative == SKILL_FILE {
            content = Some(text);
        } else {
            wright_core::check_resource_path(relative)?;
            resources.insert(relative.to_owned(), text);
        }
    }
    let content = content.ok_or_else(|| DomainError::Invalid(format!("{SKILL_FILE} is not text")))?;
    let name = SkillFile::parse(&content)?.name;
    Ok(Folder { name, content, resources, skipped })
}

/// Imports a folder as a skill of `agent`: a new skill, or a new version of the one of that
/// name (its files replaced). Returns the version written.
pub async fn import(
    store: &Store,
    agent: &AgentId,
    folder: &Folder,
    reason: Option<String>,
) -> Result<i64, DomainError> {
    let reason = reason.or_else(|| Some("imported".to_owned()));
    let meta = VersionMeta::new(Author::Admin).with_reason(reason);
    let change = SkillChange::Write { content: folder.content.clone(), resources: Some(folder.resources.clone()) };
    Ok(store.change_skill(agent, &folder.name, change, &meta).await?)
}

/// The files of a skill as it is now (path → text), `SKILL.md` first by name.
pub async fn export(store: &Store, agent: &AgentId, name: &str) -> Result<BTreeMap<String, String>, DomainError> {
    let skill = store.skill(agent, name).await?;
    let mut files = skill.resources;
    files.insert(SKILL_FILE.to_owned(), skill.content);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(entries: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
        entries.iter().map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec())).collect()
    }

    const SKILL: &[u8] = b"---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# Steps\n";

    #[test]
    fn a_folder_at_the_root_or_under_one_top_folder_is_read_and_binaries_are_left_out() {
        let root = folder(files(&[("SKILL.md", SKILL), ("reference.md", b"notes"), ("logo.png", &[0xff, 0xd8, 0xff])]))
            .unwrap();
        assert_eq!(root.name, "pdf-forms");
        assert_eq!(root.resources.keys().collect::<Vec<_>>(), ["reference.md"]);
        assert_eq!(root.skipped, ["logo.png (not text: resources are read as text, never run)"]);
        let nested = folder(files(&[
            ("pdf-forms/SKILL.md", SKILL),
            ("pdf-forms/scripts/fill.py", b"print(1)"),
            ("pdf-forms/.DS_Store", b"x"),
        ]))
        .unwrap();
        assert_eq!(nested.resources.keys().collect::<Vec<_>>(), ["scripts/fill.py"]);
        assert_eq!(nested.skipped, [".DS_Store (hidden)"]);
    }

    #[test]
    fn a_folder_without_skill_md_or_with_a_bad_one_is_refused() {
        assert!(folder(files(&[("README.md", b"hi")])).unwrap_err().to_string().contains("no SKILL.md"));
        assert!(folder(files(&[("a/SKILL.md", SKILL), ("b/SKILL.md", SKILL)])).is_err());
        let bad = folder(files(&[("SKILL.md", b"---\nname: Bad Name\ndescription: x\n---\n")])).unwrap_err();
        assert!(bad.to_string().contains("not a skill name"), "{bad}");
    }
}
