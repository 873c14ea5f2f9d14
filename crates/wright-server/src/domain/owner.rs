//! This process as the owner of runs: a random id, and a lock file that proves it is alive.
//!
//! Each process that runs the loop (`wright serve`, `wright chat`) takes an id and holds an
//! exclusive `flock` on `<data>/run-owners/<id>.lock` for as long as it lives. The kernel
//! releases the lock when the process ends, however it ends (SIGKILL included), so another
//! process can tell at once that an owner is gone — by taking its lock — instead of waiting
//! for its lease to run out. A lock that cannot be taken means the owner is alive, and its
//! runs are left alone.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

/// This process's claim to own runs. Dropping it releases the lock and removes the file.
pub struct RunOwner {
    id: String,
    directory: PathBuf,
    /// Held, locked, for the life of the process: the proof that this owner is alive.
    _lock: File,
}

impl RunOwner {
    /// Takes a fresh id and locks its file under `data_dir`.
    pub fn acquire(data_dir: &Path) -> io::Result<Self> {
        let directory = data_dir.join("run-owners");
        std::fs::create_dir_all(&directory)?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let lock = File::create(directory.join(format!("{id}.lock")))?;
        lock.try_lock().map_err(|error| match error {
            TryLockError::Error(error) => error,
            TryLockError::WouldBlock => io::Error::other("a fresh lock file was already locked"),
        })?;
        Ok(Self { id, directory, _lock: lock })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the process that owns `owner`'s runs is alive. An id that is not one of ours
    /// (not 32 hex digits) or has no lock file belongs to no live process; a lock file that
    /// can be locked was left by a process that ended (it is removed).
    pub fn is_alive(&self, owner: &str) -> bool {
        if owner == self.id {
            return true;
        }
        if owner.len() != 32 || !owner.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return false;
        }
        let path = self.directory.join(format!("{owner}.lock"));
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return false,
            // Cannot tell: treat it as alive, so a live run is never taken over.
            Err(_) => return true,
        };
        match file.try_lock() {
            Ok(()) => {
                if let Err(error) = std::fs::remove_file(&path) {
                    tracing::debug!(%error, "could not remove a dead owner's lock file");
                }
                false
            }
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(_)) => true,
        }
    }
}

impl Drop for RunOwner {
    fn drop(&mut self) {
        // The lock goes with the file handle; the file is only tidied away.
        if let Err(error) = std::fs::remove_file(self.directory.join(format!("{}.lock", self.id))) {
            tracing::debug!(%error, "could not remove this process's lock file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_alive_while_its_holder_lives_and_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunOwner::acquire(dir.path()).unwrap();
        let second = RunOwner::acquire(dir.path()).unwrap();
        assert!(second.is_alive(first.id()));
        let gone = first.id().to_owned();
        drop(first);
        assert!(!second.is_alive(&gone));
        assert!(!second.is_alive("not-an-owner"), "ids that are not ours belong to nobody");
        assert!(second.is_alive(second.id()));
    }
}
