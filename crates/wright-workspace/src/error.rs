//! The one error of the workspace, with variants a caller (the tools) can act on.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The path names no allowed root (an absolute path elsewhere on the host).
    #[error("`{path}` is outside the allowed roots ({roots})")]
    OutsideRoots { path: String, roots: String },
    /// The kernel refused to resolve the path beneath its root: `..` past the root, an
    /// absolute or escaping symlink, a magic link.
    #[error("`{path}` leads outside its root (through `..` or a symlink); refused")]
    Escape { path: String },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    /// A write or edit beneath a root the operator made read-only.
    #[error("`{path}` is in a read-only root")]
    ReadOnly { path: String },
    /// Not something the operation works on: a directory where a file was expected, a device,
    /// a FIFO, a socket, a hard link, a binary file.
    #[error("`{path}`: {reason}")]
    Unsupported { path: String, reason: String },
    /// The arguments cannot be acted on: an invalid pattern, an edit whose old text is missing
    /// or ambiguous.
    #[error("{0}")]
    Invalid(String),
    /// A configured limit was reached before the work was done.
    #[error("{0}")]
    Limit(String),
    /// The shell is off on this host; the reason says why.
    #[error("the shell is unavailable: {0}")]
    ShellUnavailable(String),
    #[error("`{path}`: {source}")]
    Io { path: String, source: io::Error },
}

impl WorkspaceError {
    /// Maps an error of an operation on `path` to what the caller can act on.
    pub(crate) fn io(path: &str, error: io::Error) -> Self {
        match error.raw_os_error() {
            Some(code) if code == rustix::io::Errno::XDEV.raw_os_error() => Self::Escape { path: path.to_owned() },
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                Self::Unsupported { path: path.to_owned(), reason: "a symlink where none is followed".to_owned() }
            }
            Some(code) if code == rustix::io::Errno::NOENT.raw_os_error() => Self::NotFound { path: path.to_owned() },
            Some(code) if code == rustix::io::Errno::NOTDIR.raw_os_error() => {
                Self::Unsupported { path: path.to_owned(), reason: "a part of the path is not a directory".to_owned() }
            }
            Some(code) if code == rustix::io::Errno::ISDIR.raw_os_error() => {
                Self::Unsupported { path: path.to_owned(), reason: "is a directory".to_owned() }
            }
            Some(code) if code == rustix::io::Errno::ROFS.raw_os_error() => Self::ReadOnly { path: path.to_owned() },
            _ => Self::Io { path: path.to_owned(), source: error },
        }
    }

    pub(crate) fn errno(path: &str, errno: rustix::io::Errno) -> Self {
        Self::io(path, errno.into())
    }
}
