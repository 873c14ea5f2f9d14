//! The access token, and the ids of the browser sessions opened with it.
//!
//! The token is 32 random bytes in hex, generated on first start into `<data-dir>/token`
//! (mode 0600) unless `WRIGHT_TOKEN` gives one. A login opens a session: a fresh random id in
//! the cookie, its SHA-256 in the app database (`sessions`), so logout can end it and a
//! leaked cookie is never the token. Sessions carry the token's fingerprint, so changing the
//! token ends every session.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const SESSION_COOKIE: &str = "wright_session";

/// How a request may prove it is the owner.
pub struct Auth {
    token: String,
    fingerprint: String,
}

/// Where the token came from, so `serve` can say so once.
pub enum TokenSource {
    Environment,
    Generated,
    File,
}

impl Auth {
    pub fn new(token: String) -> Self {
        let fingerprint = hex::encode(Sha256::digest(format!("wright-session\0{token}").as_bytes()));
        Self { token, fingerprint }
    }

    /// The token from `WRIGHT_TOKEN` (passed in by the binary), else from the data directory,
    /// else a new one written there.
    pub fn load_or_create(data_dir: &Path, from_environment: Option<String>) -> anyhow::Result<(Self, TokenSource)> {
        if let Some(token) = from_environment.filter(|token| !token.trim().is_empty()) {
            return Ok((Self::new(token.trim().to_owned()), TokenSource::Environment));
        }
        let path = data_dir.join("token");
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => return Ok((Self::new(text.trim().to_owned()), TokenSource::File)),
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }
        std::fs::create_dir_all(data_dir)?;
        let token = hex::encode(rand::random::<[u8; 32]>());
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        writeln!(file, "{token}")?;
        Ok((Self::new(token), TokenSource::Generated))
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Names the token without revealing it; stored with each session.
    pub fn token_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn accepts_token(&self, candidate: &str) -> bool {
        candidate.as_bytes().ct_eq(self.token.as_bytes()).into()
    }
}

/// A new session id for a cookie: 32 random bytes in hex.
pub fn new_session_id() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// What the database keeps of a session id.
pub fn session_id_hash(session_id: &str) -> String {
    hex::encode(Sha256::digest(session_id.as_bytes()))
}
