//! Size caps on the text the app database stores, and the one bounded diff.
//!
//! Every cap is checked before the work it guards: an edit's result length is computed from
//! its parts (a find/replace counts occurrences × the length change) before any string is
//! built, so one request can never make the process allocate more than the cap allows.
//!
//! Diffs are quadratic in the worst case, so [`Store::diff`] refuses inputs over
//! [`TextLimits::max_diff_lines`] / [`TextLimits::max_diff_bytes`], runs on tokio's blocking
//! pool (never on the async threads that answer other requests), at most
//! [`TextLimits::max_concurrent_diffs`] at once, and tells the algorithm a deadline after which
//! it settles for a coarser diff that is still correct (it applies; it is just less minimal).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use similar::TextDiff;

use crate::{Store, StoreError};

/// Caps on stored text and on diffs; `[limits]` in config.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TextLimits {
    /// Largest system prompt or learned notes, in bytes of UTF-8. Both go into every model
    /// request, so anything near this is already far past a useful size.
    pub max_document_bytes: usize,
    /// Longest agent name or marketplace listing name, in bytes.
    pub max_name_bytes: usize,
    /// Longest description of a tool, component or listing, in bytes.
    pub max_description_bytes: usize,
    /// Longest reason stored with a version, in bytes.
    pub max_reason_bytes: usize,
    /// A diff refuses a side with more lines than this ("too large to diff").
    pub max_diff_lines: usize,
    /// A diff refuses a side larger than this, in bytes.
    pub max_diff_bytes: usize,
    /// After this long the diff algorithm stops looking for the minimal diff.
    pub diff_timeout_ms: u64,
    /// Diffs computed at the same time, each on a blocking thread; others wait their turn.
    pub max_concurrent_diffs: usize,
    /// Largest `SKILL.md` of a skill, and largest one of its resource files, in bytes.
    pub max_skill_bytes: usize,
    /// Most resource files one skill may hold.
    pub max_skill_files: usize,
    /// Largest skill folder (SKILL.md and every resource), in bytes.
    pub max_skill_folder_bytes: usize,
    /// Most skills one agent may have (a large library makes a model pick the wrong one).
    pub max_skills: usize,
}

impl Default for TextLimits {
    fn default() -> Self {
        Self {
            max_document_bytes: 512 * 1024,
            max_name_bytes: 256,
            max_description_bytes: 4 * 1024,
            max_reason_bytes: 2 * 1024,
            max_diff_lines: 20_000,
            max_diff_bytes: 2 * 1024 * 1024,
            diff_timeout_ms: 2_000,
            max_concurrent_diffs: 2,
            max_skill_bytes: 64 * 1024,
            max_skill_files: 32,
            max_skill_folder_bytes: 512 * 1024,
            max_skills: 200,
        }
    }
}

impl TextLimits {
    pub fn diff_timeout(&self) -> Duration {
        Duration::from_millis(self.diff_timeout_ms)
    }
}

/// Fails with [`StoreError::LimitExceeded`] naming `what`, its size, the cap and its knob.
pub(crate) fn check_size(what: &str, size: u64, limit: usize, knob: &str) -> Result<(), StoreError> {
    if size > limit as u64 {
        return Err(StoreError::LimitExceeded(format!(
            "{what} would be {size} bytes; the limit is {limit} bytes ([limits] {knob})"
        )));
    }
    Ok(())
}

/// A name a person reads in a list: not empty, no control characters, within the cap.
pub(crate) fn check_name(what: &str, name: &str, limits: &TextLimits) -> Result<(), StoreError> {
    check_size(what, name.len() as u64, limits.max_name_bytes, "max_name_bytes")?;
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(StoreError::InvalidEdit(format!("{what} must not be empty or contain control characters")));
    }
    Ok(())
}

/// A unified diff with three lines of context; empty when the texts are equal. Unbounded:
/// only [`Store::diff`] calls it, after the size checks, on a blocking thread.
fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str, timeout: Duration) -> String {
    TextDiff::configure()
        .timeout(timeout)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

impl Store {
    pub fn text_limits(&self) -> &TextLimits {
        &self.text_limits
    }

    /// The store with these caps instead of the defaults.
    pub fn with_text_limits(mut self, text_limits: TextLimits) -> Self {
        self.diff_permits = Arc::new(tokio::sync::Semaphore::new(text_limits.max_concurrent_diffs.max(1)));
        self.text_limits = text_limits;
        self
    }

    /// A unified diff from `old` to `new`, bounded in input size and time, computed off the
    /// async threads. Refuses with [`StoreError::TooLargeToDiff`] before doing any work when a
    /// side is over the caps.
    pub async fn diff(&self, old: &str, new: &str, old_label: &str, new_label: &str) -> Result<String, StoreError> {
        let limits = &self.text_limits;
        for (label, text) in [(old_label, old), (new_label, new)] {
            let lines = text.lines().count();
            if lines > limits.max_diff_lines || text.len() > limits.max_diff_bytes {
                return Err(StoreError::TooLargeToDiff(format!(
                    "{label} has {lines} lines and {} bytes; diffs are limited to {} lines and {} bytes a side \
                     ([limits] max_diff_lines, max_diff_bytes): read the versions whole instead",
                    text.len(),
                    limits.max_diff_lines,
                    limits.max_diff_bytes
                )));
            }
        }
        // The semaphore is never closed, so acquiring fails only if it were; the permit moves
        // into the blocking task and is released when the diff is done, even if the request
        // that asked for it has gone away.
        let permit = Arc::clone(&self.diff_permits)
            .acquire_owned()
            .await
            .map_err(|error| StoreError::DiffFailed(error.to_string()))?;
        let (old, new) = (old.to_owned(), new.to_owned());
        let (old_label, new_label) = (old_label.to_owned(), new_label.to_owned());
        let timeout = limits.diff_timeout();
        tokio::task::spawn_blocking(move || {
            let diff = unified_diff(&old, &new, &old_label, &new_label, timeout);
            drop(permit);
            diff
        })
        .await
        .map_err(|error| StoreError::DiffFailed(error.to_string()))
    }
}
