//! Skills in the open Agent Skills layout: a folder holding `SKILL.md` — YAML front matter with
//! at least `name` and `description`, then a Markdown body — and optional resource files.
//!
//! This module reads only what Wright needs from the front matter, with a small parser of the
//! YAML subset skill files use (no YAML library): top-level `key: value` pairs, values plain,
//! single- or double-quoted, or block scalars (`|`, `>`, with `-`/`+`); indented lines under a
//! key (a nested `metadata:` map, an `allowed-tools` list) belong to that key and are kept in
//! the stored text as written but not interpreted. Anything else (a line without `key:` at the
//! top level, an unclosed quote, front matter that never ends) is an error naming the line, so
//! a skill that would be read differently elsewhere is refused rather than guessed at.
//!
//! A skill's name follows the Agent Skills rule: 1–64 characters of lowercase ASCII letters,
//! digits and hyphens, not starting or ending with a hyphen, without two in a row.

use crate::CoreError;

/// The longest skill name the Agent Skills layout allows.
pub const MAX_SKILL_NAME_CHARS: usize = 64;
/// The longest description the Agent Skills layout allows, in characters.
pub const MAX_SKILL_DESCRIPTION_CHARS: usize = 1024;

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// Checks a skill's name against the Agent Skills rule.
pub fn check_skill_name(name: &str) -> Result<(), CoreError> {
    let fits = !name.is_empty()
        && name.chars().count() <= MAX_SKILL_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if fits {
        Ok(())
    } else {
        Err(CoreError::InvalidSkill(format!(
            "the name {name:?} is not a skill name: use 1-{MAX_SKILL_NAME_CHARS} lowercase letters, digits and \
             single hyphens, not starting or ending with a hyphen"
        )))
    }
}

/// A resource file's path inside a skill folder: relative, `/`-separated, no `.`/`..` parts,
/// no empty parts, printable, not `SKILL.md` itself, at most 200 bytes.
pub fn check_resource_path(path: &str) -> Result<(), CoreError> {
    let parts_ok = path.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
    let fits = !path.is_empty()
        && path.len() <= 200
        && parts_ok
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path != SKILL_FILE;
    if fits {
        Ok(())
    } else {
        Err(CoreError::InvalidSkill(format!(
            "the resource path {path:?} is not allowed: use a relative path like references/guide.md (no '..', \
             no leading '/', not SKILL.md, at most 200 bytes)"
        )))
    }
}

/// What Wright reads of a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    /// The Markdown after the front matter, as written.
    pub body: String,
}

impl SkillFile {
    /// Reads and checks a `SKILL.md`: front matter with a valid `name` and a non-empty
    /// `description` (at most [`MAX_SKILL_DESCRIPTION_CHARS`]), then the body.
    pub fn parse(text: &str) -> Result<Self, CoreError> {
        let invalid = |message: String| CoreError::InvalidSkill(message);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or_default();
        if first.trim_end() != "---" {
            return Err(invalid(
                "SKILL.md must start with front matter: a line '---', then 'name: …' and 'description: …', then '---'"
                    .into(),
            ));
        }
        let mut front = Vec::new();
        let mut closed = false;
        let mut consumed = first.len();
        for line in lines.by_ref() {
            consumed += line.len();
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            front.push(line.trim_end_matches(['\n', '\r']));
        }
        if !closed {
            return Err(invalid("the front matter of SKILL.md never ends: close it with a line '---'".into()));
        }
        let pairs = front_matter(&front)?;
        let field = |key: &str| pairs.iter().find(|(name, _)| name == key).map(|(_, value)| value.clone());
        let name = field("name").ok_or_else(|| invalid("the front matter has no 'name'".into()))?;
        check_skill_name(&name)?;
        let description = field("description").unwrap_or_default().trim().to_owned();
        if description.is_empty() {
            return Err(invalid(
                "the front matter has no 'description': say what the skill does and when to use it".into(),
            ));
        }
        if description.chars().count() > MAX_SKILL_DESCRIPTION_CHARS {
            return Err(invalid(format!(
                "the description has {} characters; at most {MAX_SKILL_DESCRIPTION_CHARS}",
                description.chars().count()
            )));
        }
        let body = text[consumed..].trim_start_matches(['\n', '\r']).to_owned();
        Ok(Self { name, description, body })
    }

    /// A `SKILL.md` with this name, description and body (the description double-quoted, so
    /// any character it holds reads back the same).
    pub fn render(name: &str, description: &str, body: &str) -> String {
        let quoted = description.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', " ");
        format!("---\nname: {name}\ndescription: \"{quoted}\"\n---\n\n{}", body.trim_start_matches('\n'))
    }
}

/// The top-level `key: value` pairs of front matter lines.
fn front_matter(lines: &[&str]) -> Result<Vec<(String, String)>, CoreError> {
    let mut pairs = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let number = index + 2; // 1-based, after the opening '---'
        index += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // Belongs to the key above (a nested map or list); kept in the text, not read.
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(CoreError::InvalidSkill(format!(
                "line {number} of the front matter is not 'key: value': {line:?}"
            )));
        };
        let key = key.trim().to_owned();
        let value = value.trim();
        let value = if let Some(style) = value.strip_prefix(['|', '>']) {
            // A block scalar: the indented lines that follow.
            let folded = value.starts_with('>');
            let keep_end = style.contains('+');
            let mut block = Vec::new();
            while index < lines.len() && (lines[index].starts_with([' ', '\t']) || lines[index].trim().is_empty()) {
                block.push(lines[index].trim());
                index += 1;
            }
            while !keep_end && block.last().is_some_and(|line| line.is_empty()) {
                block.pop();
            }
            if folded { block.join(" ").trim().to_owned() } else { block.join("\n") }
        } else if let Some(inner) = value.strip_prefix('"') {
            double_quoted(inner).ok_or_else(|| {
                CoreError::InvalidSkill(format!("line {number} of the front matter has an unclosed '\"'"))
            })?
        } else if let Some(inner) = value.strip_prefix('\'') {
            let end = single_quote_end(inner).ok_or_else(|| {
                CoreError::InvalidSkill(format!("line {number} of the front matter has an unclosed \"'\""))
            })?;
            inner[..end].replace("''", "'")
        } else {
            // A plain scalar: a ' #' starts a comment.
            value.split(" #").next().unwrap_or_default().trim().to_owned()
        };
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// The text of a double-quoted scalar up to its closing quote, with `\"`, `\\`, `\n`, `\t`
/// read; `None` when it does not close on its line.
fn double_quoted(inner: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            other => out.push(other),
        }
    }
    None
}

/// Where a single-quoted scalar ends (`''` is a quote inside it).
fn single_quote_end(inner: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'\'' {
            if bytes.get(at + 1) == Some(&b'\'') {
                at += 2;
                continue;
            }
            return Some(at);
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rule() {
        for good in ["pdf", "expense-report", "a1", &"a".repeat(64)] {
            assert!(check_skill_name(good).is_ok(), "{good}");
        }
        for bad in
            ["", "PDF", "expense_report", "-pdf", "pdf-", "two--hyphens", "with space", "ümlaut", &"a".repeat(65)]
        {
            assert!(check_skill_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resource_paths_stay_inside_the_folder() {
        assert!(check_resource_path("references/guide.md").is_ok());
        assert!(check_resource_path("scripts/fill_form.py").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "SKILL.md", "a\\b", "a\nb"] {
            assert!(check_resource_path(bad).is_err(), "{bad:?}");
        }
    }

    // The shapes of real SKILL.md files published in the Agent Skills layout (anthropics/skills
    // and others): a plain description, a license line, a nested metadata map, an
    // allowed-tools list, quoted and folded descriptions.
    #[test]
    fn real_front_matter_shapes_are_read() {
        let plain = "---\nname: pdf\ndescription: Comprehensive PDF manipulation toolkit for extracting text and tables. \
                     When Claude needs to fill in a PDF form.\nlicense: Proprietary. LICENSE.txt has complete terms\n---\n\n\
                     # PDF Processing Guide\n\nUse pypdf.\n";
        let skill = SkillFile::parse(plain).unwrap();
        assert_eq!(skill.name, "pdf");
        assert!(skill.description.starts_with("Comprehensive PDF") && skill.description.ends_with("PDF form."));
        assert_eq!(skill.body, "# PDF Processing Guide\n\nUse pypdf.\n");

        let nested = "---\nname: brand-guidelines\ndescription: \"Applies the brand's colors: \\\"navy\\\" and gold.\"\n\
                      metadata:\n  version: \"1.2\"\n  author: someone\nallowed-tools:\n  - Read\n  - Write\n---\nBody";
        let skill = SkillFile::parse(nested).unwrap();
        assert_eq!(skill.description, "Applies the brand's colors: \"navy\" and gold.");
        assert_eq!(skill.body, "Body");

        let folded = "---\r\nname: 'web-research'\r\ndescription: >-\r\n  Finds sources on the web\r\n  and cites them.\r\n\r\n---\r\n# Steps\r\n";
        let skill = SkillFile::parse(folded).unwrap();
        assert_eq!(
            (skill.name.as_str(), skill.description.as_str()),
            ("web-research", "Finds sources on the web and cites them.")
        );
        assert_eq!(skill.body, "# Steps\r\n");

        let literal = "---\nname: notes\ndescription: |\n  Line one\n  Line two\n---\n";
        assert_eq!(SkillFile::parse(literal).unwrap().description, "Line one\nLine two");
        let single = "---\nname: x\ndescription: 'It''s fine' # a comment after\n---\n";
        assert_eq!(SkillFile::parse(single).unwrap().description, "It's fine");
        let comment = "---\nname: x\ndescription: Plain text # a comment\n---\n";
        assert_eq!(SkillFile::parse(comment).unwrap().description, "Plain text");
    }

    #[test]
    fn malformed_skill_files_are_refused_with_a_reason() {
        let cases = [
            ("# no front matter", "must start with front matter"),
            ("---\nname: x\ndescription: y\n", "never ends"),
            ("---\ndescription: y\n---\n", "no 'name'"),
            ("---\nname: x\n---\n", "no 'description'"),
            ("---\nname: Bad_Name\ndescription: y\n---\n", "not a skill name"),
            ("---\nname: x\ndescription: \"open\n---\n", "unclosed"),
            ("---\nname: x\njust words\ndescription: y\n---\n", "line 3"),
        ];
        for (text, expected) in cases {
            let error = SkillFile::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let long = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(MAX_SKILL_DESCRIPTION_CHARS + 1));
        assert!(SkillFile::parse(&long).unwrap_err().to_string().contains("at most 1024"));
    }

    #[test]
    fn a_rendered_skill_reads_back_the_same() {
        let description = "Quotes \" and backslashes \\ and: colons";
        let text = SkillFile::render("round-trip", description, "# Body\n");
        let skill = SkillFile::parse(&text).unwrap();
        assert_eq!(
            (skill.name.as_str(), skill.description.as_str(), skill.body.as_str()),
            ("round-trip", description, "# Body\n")
        );
    }
}
