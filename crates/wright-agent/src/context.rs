//! The system message: who the agent is (its prompt), what it has learned (its notes), what
//! it keeps (state keys, its own database's tables) and, after compaction, what was said
//! before. Pure: the parts are read by the caller.

/// Longest learned notes put in the context, as seed 000 caps its memory blob; the agent can
/// always read them whole with `read_learned_notes`.
pub const MAX_NOTES_CHARS: usize = 4_000;
/// At most this many state keys are listed.
pub const MAX_STATE_KEYS: usize = 50;

/// What the system message is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemParts {
    pub prompt: String,
    pub notes: String,
    pub state_keys: Vec<String>,
    /// One line per table of the agent's own database, e.g. `expenses (42 rows)`.
    pub database_summary: String,
    /// The summary of compacted turns, if the conversation was compacted.
    pub earlier_summary: Option<String>,
}

pub fn system_message(parts: &SystemParts) -> String {
    let mut message = parts.prompt.trim().to_owned();
    let notes = parts.notes.trim();
    if !notes.is_empty() {
        message.push_str("\n\n## Learned notes\n");
        let cut: String = notes.chars().take(MAX_NOTES_CHARS).collect();
        message.push_str(&cut);
        if cut.len() < notes.len() {
            message.push_str("\n[notes cut here; read_learned_notes returns them whole]");
        }
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
    if !database.is_empty() {
        message.push_str("\n\n## Your database\n");
        message.push_str(database);
    }
    if let Some(summary) = &parts.earlier_summary {
        message.push_str("\n\n## Earlier in this conversation (summary)\n");
        message.push_str(summary.trim());
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
        });
        assert!(full.contains("## Learned notes") && full.contains("[notes cut here"));
        assert!(full.contains("k49") && !full.contains("k50,") && full.contains("and 10 more"));
        assert!(full.contains("## Your database\nexpenses (3 rows)"));
        assert!(full.ends_with("They asked about taxes."));
    }
}
