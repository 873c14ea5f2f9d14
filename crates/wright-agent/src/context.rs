//! The system message: who the agent is (its prompt), what it has learned (its notes), which
//! skills it can load (one line each), what it remembers (long-term and active mid-term
//! memories), what it keeps (state keys, its own database's tables with its notes on what each
//! is for), where it can work on the host (its workspace, allowed roots, shell, network) and,
//! after compaction, what was said before. Pure: the parts are read by the caller.

use wright_core::MemoryLayer;

/// Longest learned notes put in the context, as seed 000 caps its memory blob; the agent can
/// always read them whole with `read_learned_notes`.
pub(crate) const MAX_NOTES_CHARS: usize = 4_000;
/// At most this many state keys are listed.
pub(crate) const MAX_STATE_KEYS: usize = 50;
/// At most this many skills are listed (the store caps how many an agent has, higher).
pub(crate) const MAX_SKILLS_LISTED: usize = 50;
/// Longest skill description in the list, in characters (the layout allows 1,024).
pub(crate) const MAX_SKILL_LINE_CHARS: usize = 240;
/// Longest database notes put in the context; `db_schema` returns them whole.
pub(crate) const MAX_DB_NOTES_CHARS: usize = 2_000;

/// One enabled skill as the system message lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSkill {
    pub name: String,
    pub description: String,
}

/// Characters of memory in the system message unless configured (`[memory] context_chars`);
/// seed 000 caps its memory blob at 4,000.
pub const DEFAULT_MEMORY_CHARS: usize = 4_000;

/// One memory as the system message shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextMemory {
    pub id: i64,
    pub layer: MemoryLayer,
    pub category: Option<String>,
    pub content: String,
}

/// What the system message is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemParts {
    pub prompt: String,
    pub notes: String,
    /// Long-term, then active mid-term memories, in the order to show them.
    pub memories: Vec<ContextMemory>,
    /// The cap on the memory section, in characters of the lines written.
    pub max_memory_chars: usize,
    pub state_keys: Vec<String>,
    /// One line per table of the agent's own database, e.g. `expenses (42 rows)`.
    pub database_summary: String,
    /// The agent's notes on what each of its tables is for (one line a table).
    pub database_notes: String,
    /// The enabled skills, by name.
    pub skills: Vec<ContextSkill>,
    /// The summary of compacted turns, if the conversation was compacted.
    pub earlier_summary: Option<String>,
    /// The agent's files and shell; none where the caller has no workspace to describe.
    pub workspace: Option<WorkspaceParts>,
    /// The agent's live learned items. Not part of the system message: the policy says those
    /// that fit the request after the history (`policy/learned.rs`).
    pub learned: Vec<crate::LearnedText>,
}

/// Where the agent works on the host, as the workspace tools see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceParts {
    /// The agent's own directory as the tools name it (`/workspace`).
    pub path: String,
    /// Other directories the operator allowed: (path, writable).
    pub roots: Vec<(String, bool)>,
    /// Whether `bash` runs here (confinement works and the operator left it on).
    pub shell: bool,
    /// Whether commands can reach the network.
    pub network: bool,
}

impl Default for SystemParts {
    fn default() -> Self {
        Self {
            prompt: String::new(),
            notes: String::new(),
            memories: Vec::new(),
            max_memory_chars: DEFAULT_MEMORY_CHARS,
            state_keys: Vec::new(),
            database_summary: String::new(),
            database_notes: String::new(),
            skills: Vec::new(),
            earlier_summary: None,
            workspace: None,
            learned: Vec::new(),
        }
    }
}

/// The memory section: one line per memory (`- [long/fact #12] Works at Acme`), whole lines
/// only, until the next would pass the cap; then a line saying how many more the tool holds.
fn memory_section(memories: &[ContextMemory], max_chars: usize) -> String {
    let mut section = String::new();
    let mut used = 0;
    for (shown, memory) in memories.iter().enumerate() {
        let label = match &memory.category {
            Some(category) => format!("{}/{category}", memory.layer),
            None => memory.layer.to_string(),
        };
        // One memory is one line: a newline inside one would let it pass for several.
        let content = memory.content.replace(['\n', '\r'], " ");
        let line = format!("- [{label} #{}] {}\n", memory.id, content.trim());
        let chars = line.chars().count();
        if used + chars > max_chars {
            section.push_str(&format!(
                "[{} more not shown; memory action=recall or list finds them]\n",
                memories.len() - shown
            ));
            break;
        }
        used += chars;
        section.push_str(&line);
    }
    section
}

/// The system message in two parts, in the order a server's prompt cache wants them: what
/// changes only with the operator's settings and the agent's prompt first (`fixed`: the
/// prompt, the workspace), then what the agent changes as it works (`changing`: notes,
/// memories, state keys, its database) and what belongs to this conversation (the summary of
/// compacted turns). The driver puts the tool catalogue between them; the time and the turn's
/// notes go after the history, never here, so the message is byte-identical across the turns
/// of a run and across conversations of an agent whose data did not change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SystemText {
    pub fixed: String,
    pub changing: String,
}

impl SystemText {
    /// The whole message with `catalogue` between the fixed and the changing part.
    pub(crate) fn with(&self, catalogue: &str) -> String {
        [self.fixed.as_str(), catalogue, self.changing.as_str()]
            .into_iter()
            .filter(|section| !section.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The system message without a catalogue (for commands that show it).
pub fn system_message(parts: &SystemParts) -> String {
    system_text(parts).with("")
}

pub(crate) fn system_text(parts: &SystemParts) -> SystemText {
    let mut fixed = parts.prompt.trim().to_owned();
    if let Some(workspace) = &parts.workspace {
        fixed.push_str("\n\n## Your workspace\n");
        fixed.push_str(&workspace_section(workspace));
    }
    let mut message = String::new();
    let notes = parts.notes.trim();
    if !notes.is_empty() {
        message.push_str("\n\n## Learned notes\n");
        let cut: String = notes.chars().take(MAX_NOTES_CHARS).collect();
        message.push_str(&cut);
        if cut.len() < notes.len() {
            message.push_str("\n[notes cut here; read_learned_notes returns them whole]");
        }
    }
    if !parts.skills.is_empty() {
        message.push_str("\n\n## Your skills\n");
        message.push_str(&skills_section(&parts.skills));
    }
    if !parts.memories.is_empty() {
        message.push_str("\n\n## Memories\n");
        message.push_str(memory_section(&parts.memories, parts.max_memory_chars).trim_end());
    }
    if !parts.state_keys.is_empty() {
        message.push_str("\n\n## State keys\n");
        let shown: Vec<&str> = parts.state_keys.iter().take(MAX_STATE_KEYS).map(String::as_str).collect();
        message.push_str(&shown.join(", "));
        if parts.state_keys.len() > MAX_STATE_KEYS {
            message.push_str(&format!(" … and {} more (list_state_keys)", parts.state_keys.len() - MAX_STATE_KEYS));
        }
    }
    let database = parts.database_summary.trim();
    let database_notes = parts.database_notes.trim();
    if !database.is_empty() || !database_notes.is_empty() {
        message.push_str("\n\n## Your database\n");
        message.push_str(database);
        if !database_notes.is_empty() {
            message.push_str(if database.is_empty() { "" } else { "\n" });
            message.push_str("What each table is for (your notes, describe_db_table):\n");
            let cut: String = database_notes.chars().take(MAX_DB_NOTES_CHARS).collect();
            message.push_str(&cut);
            if cut.len() < database_notes.len() {
                message.push_str("\n[notes cut here; db_schema returns them whole]");
            }
        }
    }
    if let Some(summary) = &parts.earlier_summary {
        message.push_str("\n\n## Earlier in this conversation (summary)\n");
        message.push_str(summary.trim());
    }
    SystemText { fixed: fixed.trim().to_owned(), changing: message.trim().to_owned() }
}

/// One line per skill (`- name: description`), each cut to [`MAX_SKILL_LINE_CHARS`], at most
/// [`MAX_SKILLS_LISTED`].
fn skills_section(skills: &[ContextSkill]) -> String {
    let mut section = "Load a skill with load_skill before a task it fits, then follow its instructions:".to_owned();
    for skill in skills.iter().take(MAX_SKILLS_LISTED) {
        let description = skill.description.replace(['\n', '\r'], " ");
        let mut line: String = description.chars().take(MAX_SKILL_LINE_CHARS).collect();
        if line.len() < description.len() {
            line.push('…');
        }
        section.push_str(&format!("\n- {}: {}", skill.name, line.trim()));
    }
    if skills.len() > MAX_SKILLS_LISTED {
        section.push_str(&format!("\n… and {} more", skills.len() - MAX_SKILLS_LISTED));
    }
    section
}

fn workspace_section(workspace: &WorkspaceParts) -> String {
    let mut message = format!(
        "Your files live in {} (read-write); relative paths in glob, grep, file_read, file_write and file_edit start there.",
        workspace.path
    );
    for (path, writable) in &workspace.roots {
        message.push_str(&format!("\nAlso allowed: {path} ({}).", if *writable { "read-write" } else { "read-only" }));
    }
    message.push_str(if workspace.shell {
        "\nbash runs in a sandbox: only your workspace (and read-write roots) can be written."
    } else {
        "\nYou have no shell here: bash is unavailable."
    });
    if workspace.shell {
        message.push_str(if workspace.network {
            " Commands reach the web only through an HTTP proxy (http_proxy and https_proxy are set; tools \
             that honour them work): names are resolved by the proxy, and local and private addresses are \
             refused."
        } else {
            " Commands have no network; use fetch_url for the web."
        });
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_included_only_when_present_and_notes_are_capped() {
        let bare = system_message(&SystemParts { prompt: "You help.".into(), ..Default::default() });
        assert_eq!(bare, "You help.");
        let full = system_message(&SystemParts {
            prompt: "You help.".into(),
            notes: "x".repeat(MAX_NOTES_CHARS + 10),
            state_keys: (0..60).map(|index| format!("k{index}")).collect(),
            database_summary: "expenses (3 rows)".into(),
            earlier_summary: Some("They asked about taxes.".into()),
            workspace: Some(WorkspaceParts {
                path: "/workspace".into(),
                roots: vec![("/srv/notes".into(), false)],
                shell: true,
                network: false,
            }),
            ..Default::default()
        });
        assert!(full.contains("## Your workspace\nYour files live in /workspace (read-write)"), "{full}");
        assert!(full.contains("Also allowed: /srv/notes (read-only)."));
        assert!(full.contains("Commands have no network"));
        let no_shell = system_message(&SystemParts {
            workspace: Some(WorkspaceParts { path: "/workspace".into(), ..Default::default() }),
            ..Default::default()
        });
        assert!(no_shell.contains("You have no shell here"), "{no_shell}");
        let networked = system_message(&SystemParts {
            workspace: Some(WorkspaceParts {
                path: "/workspace".into(),
                shell: true,
                network: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(networked.contains("Commands reach the web only through an HTTP proxy"), "{networked}");
        assert!(!networked.contains("no network"), "{networked}");
        assert!(full.contains("## Learned notes") && full.contains("[notes cut here"));
        assert!(full.contains("k49") && !full.contains("k50,") && full.contains("and 10 more"));
        assert!(full.contains("## Your database\nexpenses (3 rows)"));
        assert!(full.ends_with("They asked about taxes."));
        // What the operator set comes before what the agent changes as it works (the cached
        // prefix lasts longer).
        assert!(full.find("## Your workspace") < full.find("## Learned notes"), "{full}");
    }

    #[test]
    fn skills_are_listed_one_line_each_and_database_notes_follow_the_tables() {
        let skills = vec![
            ContextSkill { name: "expense-report".into(), description: "Monthly expenses\nas a table.".into() },
            ContextSkill { name: "long".into(), description: "d".repeat(MAX_SKILL_LINE_CHARS + 10) },
        ];
        let message = system_message(&SystemParts {
            prompt: "You help.".into(),
            skills,
            database_summary: "expenses (3 rows): id, amount".into(),
            database_notes: "- expenses: one row per expense, in euros".into(),
            ..Default::default()
        });
        assert!(message.contains("## Your skills\nLoad a skill with load_skill"), "{message}");
        assert!(message.contains("\n- expense-report: Monthly expenses as a table."), "{message}");
        assert!(message.contains(&format!("- long: {}…", "d".repeat(MAX_SKILL_LINE_CHARS))), "{message}");
        assert!(
            message.contains(
                "## Your database\nexpenses (3 rows): id, amount\nWhat each table is for (your notes, describe_db_table):\n\
                 - expenses: one row per expense, in euros"
            ),
            "{message}"
        );
        let many: Vec<ContextSkill> = (0..MAX_SKILLS_LISTED + 3)
            .map(|index| ContextSkill { name: format!("s{index}"), description: "x".into() })
            .collect();
        let listed = system_message(&SystemParts { skills: many, ..Default::default() });
        assert!(listed.contains("… and 3 more") && !listed.contains(&format!("s{MAX_SKILLS_LISTED}:")), "{listed}");
    }

    fn memory(id: i64, layer: MemoryLayer, content: &str) -> ContextMemory {
        ContextMemory { id, layer, category: Some("fact".into()), content: content.into() }
    }

    #[test]
    fn memories_are_shown_one_per_line_within_the_cap() {
        let memories = vec![
            memory(1, MemoryLayer::Long, "Works at Acme"),
            memory(2, MemoryLayer::Mid, "Learning\nRust"),
            memory(3, MemoryLayer::Mid, &"x".repeat(100)),
        ];
        let parts = SystemParts { prompt: "You help.".into(), memories: memories.clone(), ..Default::default() };
        let message = system_message(&parts);
        assert!(
            message.contains(
                "## Memories\n- [long/fact #1] Works at Acme\n- [mid/fact #2] Learning Rust\n- [mid/fact #3] xxx"
            ),
            "{message}"
        );
        // Lines 1 and 2 are 32 and 31 characters; a cap of 70 holds them and not the third.
        let capped = system_message(&SystemParts { max_memory_chars: 70, ..parts.clone() });
        assert!(capped.contains("#2] Learning Rust\n[1 more not shown"), "{capped}");
        assert!(!capped.contains("#3]"));
        let section = memory_section(&memories, 70);
        let shown: usize =
            section.lines().filter(|line| line.starts_with("- ")).map(|line| line.chars().count() + 1).sum();
        assert!(shown <= 70, "{shown}");
        // A cap below the first line shows none and says so.
        let none = system_message(&SystemParts { max_memory_chars: 10, ..parts });
        assert!(none.contains("## Memories\n[3 more not shown"), "{none}");
    }
}
