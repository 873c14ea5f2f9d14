//! The keys of provider connections: `secrets.json` in the data directory, created with mode
//! 0600 (only the owner reads it), never in the app database, so neither a copy of the
//! database nor an export carries a key.
//!
//! Invariants:
//! - Every key read from or written to the file joins the process's [`Redactor`], so a
//!   provider that quotes it back in an error has it redacted.
//! - A key leaves this module only to build a provider ([`Secrets::key`]) and as a hint of
//!   its last four characters ([`key_hint`]); nothing here logs or formats a key.
//! - Every write replaces the file whole: the new content goes to a temporary file (0600)
//!   beside it, which is then renamed over it, so a crash never leaves half a file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use wright_core::Redactor;

/// The file's content: connection id → key.
#[derive(Default, Serialize, Deserialize)]
struct SecretsFile {
    #[serde(default)]
    connections: BTreeMap<String, String>,
}

pub struct Secrets {
    path: PathBuf,
    /// Serializes read-modify-write of the file within this process; held only around the
    /// synchronous file work, never across an await.
    write_lock: Mutex<()>,
    redactor: Redactor,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets").field("path", &self.path).finish_non_exhaustive()
    }
}

/// How the API shows a key: whether one is set and its last four characters (a key of fewer
/// than twelve characters shows none of them, so a short key is not half given away).
pub fn key_hint(key: &str) -> Option<String> {
    let characters: Vec<char> = key.chars().collect();
    (characters.len() >= 12).then(|| characters[characters.len() - 4..].iter().collect())
}

impl Secrets {
    /// The keys file of `data_dir`; the keys already in it join `redactor` now, those set
    /// later when they are set.
    pub fn new(data_dir: &std::path::Path, redactor: Redactor) -> Self {
        let secrets = Self { path: data_dir.join("secrets.json"), write_lock: Mutex::new(()), redactor };
        match secrets.read() {
            Ok(file) => file.connections.values().for_each(|key| secrets.redactor.add(key)),
            // Reported when a key is read for a request; nothing to redact from an unreadable file.
            Err(error) => tracing::warn!(%error, "the keys file cannot be read"),
        }
        secrets
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn read(&self) -> std::io::Result<SecretsFile> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(SecretsFile::default()),
            Err(error) => Err(error),
        }
    }

    /// The key of a connection, if one is stored.
    pub fn key(&self, connection_id: &str) -> std::io::Result<Option<String>> {
        Ok(self.read()?.connections.remove(connection_id))
    }

    /// Sets (Some) or removes (None) a connection's key.
    pub fn set_key(&self, connection_id: &str, key: Option<&str>) -> std::io::Result<()> {
        let _guard = self.write_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut file = self.read()?;
        if let Some(key) = key {
            self.redactor.add(key);
        }
        match key {
            Some(key) => file.connections.insert(connection_id.to_owned(), key.to_owned()),
            None => file.connections.remove(connection_id),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string()))?;
        let temporary = self.path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut handle = options.open(&temporary)?;
        // A temporary file left by an older process may have other permissions: set them again.
        #[cfg(unix)]
        handle.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        handle.write_all(&bytes)?;
        handle.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }
}
