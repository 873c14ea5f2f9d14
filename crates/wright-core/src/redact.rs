//! Secrets kept out of text that came from outside: a provider's or an MCP server's error may
//! quote the key it was sent (`Incorrect API key provided: Bearer sk-…`), and that text is
//! stored, logged, shown in the canvas and sent to Telegram.
//!
//! One [`Redactor`] per process holds every configured secret (provider keys from the
//! environment and `secrets.json`, the access token, the Telegram token); clones share it, so
//! a key added in the canvas later is redacted by every provider built before. Whoever makes
//! an error out of foreign text calls [`Redactor::redact`] once, there.
//!
//! Invariant: a secret shorter than [`Redactor::MIN_LEN`] characters is not held — replacing
//! every `abc` in a text would garble it and protect nothing.

use std::sync::{Arc, RwLock};

/// What a redacted secret reads as.
pub const REDACTED: &str = "[redacted]";

/// The set of secrets to remove from foreign text. Cheap to clone; clones share the set.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Written when a secret is configured (start-up, a key saved in the canvas), read for
    /// every error; a std lock, never held across an await.
    secrets: Arc<RwLock<Vec<String>>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secrets themselves never reach a log.
        formatter.debug_struct("Redactor").field("secrets", &self.read().len()).finish()
    }
}

impl PartialEq for Redactor {
    /// Two redactors are equal when they hold the same secrets (configs that hold one compare
    /// by what they would do).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.secrets, &other.secrets) || *self.read() == *other.read()
    }
}

impl Redactor {
    /// Secrets shorter than this are not held (see the module's invariant).
    pub const MIN_LEN: usize = 8;

    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let redactor = Self::default();
        for secret in secrets {
            redactor.add(secret.as_ref());
        }
        redactor
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        self.secrets.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Holds `secret` (trimmed) from now on, for every clone.
    pub fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() < Self::MIN_LEN {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !secrets.iter().any(|held| held == secret) {
            secrets.push(secret.to_owned());
            // Longest first: a secret that contains another is replaced whole.
            secrets.sort_by_key(|held| std::cmp::Reverse(held.len()));
        }
    }

    /// `text` with every held secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let secrets = self.read();
        let mut text = text.to_owned();
        for secret in secrets.iter() {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    /// Calls `found` with each held secret until it returns true; returns whether one did
    /// (the egress searches requests for them, also encoded).
    pub fn any(&self, found: &mut dyn FnMut(&str) -> bool) -> bool {
        self.read().iter().any(|secret| found(secret))
    }

    /// Whether `text` holds a secret (for checks and tests).
    pub fn finds_secret_in(&self, text: &str) -> bool {
        self.read().iter().any(|secret| text.contains(secret.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_held_secret_is_replaced_and_short_ones_are_not_held() {
        let redactor = Redactor::new(["sk-proj-SECRET-abcd", "short"]);
        let shared = redactor.clone();
        shared.add("7000000001:AAtest-bot-token");
        let text = "Incorrect API key provided: Bearer sk-proj-SECRET-abcd; token 7000000001:AAtest-bot-token; short";
        assert_eq!(
            redactor.redact(text),
            "Incorrect API key provided: Bearer [redacted]; token [redacted]; short",
            "a secret added to a clone is redacted by every clone"
        );
        assert!(!redactor.finds_secret_in(&redactor.redact(text)));
    }

    #[test]
    fn a_secret_inside_another_is_replaced_with_the_longer_whole() {
        let redactor = Redactor::new(["abcdefgh", "xxabcdefghyy"]);
        assert_eq!(redactor.redact("key=xxabcdefghyy"), "key=[redacted]");
    }
}
