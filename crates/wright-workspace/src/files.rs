//! The file engines: read with numbered lines, write, and exact-text edit.
//!
//! Reads follow symlinks only where the kernel keeps them beneath the root. Writes and edits
//! open the parent directory beneath the root and then act on one name in it, without
//! following a symlink there, and replace the entry by rename: the content lands in a new
//! inode, never in a file that another name (a hard link) also points to.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::Serialize;

use crate::WorkspaceError;
use crate::paths::{Links, Root, Workspace, open_beneath};

/// How many leading bytes decide that a file is binary (a NUL among them), as git and ripgrep do.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReadOutcome {
    pub path: String,
    /// `cat -n` style: the line number right-aligned in six columns, a tab, the line.
    pub content: String,
    /// The first line shown (1-based).
    pub start_line: usize,
    pub lines: usize,
    pub total_lines: usize,
    /// Lines were left out (past the limit or the output cap) or a line was cut.
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WriteOutcome {
    pub path: String,
    pub bytes: usize,
    /// The file did not exist before.
    pub created: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EditOutcome {
    pub path: String,
    pub replacements: usize,
    pub bytes: usize,
}

impl Workspace {
    /// Lines `offset..offset + limit` (1-based) of a text file.
    pub fn read(&self, path: &str, offset: Option<usize>, limit: Option<usize>) -> Result<ReadOutcome, WorkspaceError> {
        let (root, relative) = self.resolve(path)?;
        let shown = root.show(&relative);
        let fd = root.open_beneath(&relative, OFlags::RDONLY | OFlags::NONBLOCK)?;
        check_regular(&fd, &shown, root.links)?;
        let start_line = offset.unwrap_or(1).max(1);
        let limit = limit.unwrap_or(self.limits.read_default_lines).max(1);
        let mut reader = BufReader::new(std::fs::File::from(fd));
        refuse_binary(&mut reader, &shown)?;
        let mut content = String::new();
        let mut truncated = false;
        // The output cap or the line limit was reached: later lines are only counted.
        let mut full = false;
        let mut total_lines = 0;
        let mut lines = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line).map_err(|error| WorkspaceError::io(&shown, error))?;
            if read == 0 {
                break;
            }
            total_lines += 1;
            if total_lines < start_line {
                continue;
            }
            if lines >= limit || full {
                // Keep counting so the model learns how long the file is.
                truncated = true;
                continue;
            }
            let text = std::str::from_utf8(&line).map_err(|_| not_text(&shown, "is not UTF-8 text"))?;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            let cut: String = text.chars().take(self.limits.read_max_line_chars).collect();
            let shown_line = if cut.len() < text.len() {
                truncated = true;
                format!("{total_lines:>6}\t{cut} [line cut at {} characters]\n", self.limits.read_max_line_chars)
            } else {
                format!("{total_lines:>6}\t{cut}\n")
            };
            if content.len() + shown_line.len() > self.limits.read_max_output_bytes {
                truncated = true;
                full = true;
                continue;
            }
            content.push_str(&shown_line);
            lines += 1;
        }
        Ok(ReadOutcome { path: shown, content, start_line, lines, total_lines, truncated })
    }

    /// Writes `content` to `path`, creating missing parent directories, replacing the file if
    /// it exists (its permissions kept).
    pub fn write(&self, path: &str, content: &str) -> Result<WriteOutcome, WorkspaceError> {
        let (root, relative) = self.writable_root(path)?;
        if content.len() > self.limits.max_write_bytes {
            return Err(WorkspaceError::Limit(format!(
                "content is {} bytes; the limit is {} bytes",
                content.len(),
                self.limits.max_write_bytes
            )));
        }
        let (parent, name) = split_for_write(path, &relative)?;
        let shown = root.show(&relative);
        let directory = ensure_directory(root, &parent)?;
        let existing = existing_file(&directory, &name, &shown)?;
        replace(&directory, &name, content.as_bytes(), existing.map(|stat| stat.mode), &shown)?;
        Ok(WriteOutcome { path: shown, bytes: content.len(), created: existing.is_none() })
    }

    /// Replaces `old` with `new` in `path`; `old` must occur exactly once unless `replace_all`.
    pub fn edit(&self, path: &str, old: &str, new: &str, replace_all: bool) -> Result<EditOutcome, WorkspaceError> {
        if old.is_empty() {
            return Err(WorkspaceError::Invalid("old_string is empty; use file_write to create a file".to_owned()));
        }
        if old == new {
            return Err(WorkspaceError::Invalid(
                "old_string and new_string are the same; nothing to change".to_owned(),
            ));
        }
        let (root, relative) = self.writable_root(path)?;
        let (parent, name) = split_for_write(path, &relative)?;
        let shown = root.show(&relative);
        let directory = root.open_beneath(&parent, OFlags::PATH | OFlags::DIRECTORY)?;
        // One name in an already-opened directory, never through a symlink: the file read is
        // the entry that the rename below replaces.
        let fd = rustix::fs::openat(
            &directory,
            name.as_path(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| WorkspaceError::errno(&shown, errno))?;
        let stat = check_regular(&fd, &shown, root.links)?;
        if stat.size > self.limits.max_write_bytes as u64 {
            return Err(WorkspaceError::Limit(format!(
                "the file is {} bytes; file_edit works on files up to {} bytes",
                stat.size, self.limits.max_write_bytes
            )));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd).read_to_end(&mut bytes).map_err(|error| WorkspaceError::io(&shown, error))?;
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return Err(not_text(&shown, "is a binary file"));
        }
        let text = String::from_utf8(bytes).map_err(|_| not_text(&shown, "is not UTF-8 text"))?;
        let count = text.matches(old).count();
        if count == 0 {
            return Err(WorkspaceError::Invalid(format!(
                "old_string was not found in `{shown}`; it must match the file exactly (whitespace included) — read the file again"
            )));
        }
        if count > 1 && !replace_all {
            return Err(WorkspaceError::Invalid(format!(
                "old_string occurs {count} times in `{shown}`; add surrounding lines to make it unique, or set replace_all"
            )));
        }
        let replacements = if replace_all { count } else { 1 };
        // The result's length is known before it is built, so no edit allocates past the cap.
        let new_length = text.len() - replacements * old.len() + replacements * new.len();
        if new_length > self.limits.max_write_bytes {
            return Err(WorkspaceError::Limit(format!(
                "the edited file would be {new_length} bytes; the limit is {} bytes",
                self.limits.max_write_bytes
            )));
        }
        let edited = if replace_all { text.replace(old, new) } else { text.replacen(old, new, 1) };
        replace(&directory, &name, edited.as_bytes(), Some(stat.mode), &shown)?;
        Ok(EditOutcome { path: shown, replacements, bytes: edited.len() })
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RegularFile {
    pub(crate) size: u64,
    pub(crate) mode: u32,
}

/// Only a regular file is worked on (a device or FIFO is not a file's content), and one with
/// several names only where the root's [`Links`] rule accepts it: a hard link may be a name for
/// a file outside the roots.
pub(crate) fn check_regular(fd: &impl AsFd, shown: &str, links: Links) -> Result<RegularFile, WorkspaceError> {
    let stat = rustix::fs::fstat(fd).map_err(|errno| WorkspaceError::errno(shown, errno))?;
    regular(&stat, shown, links)
}

pub(crate) fn regular(stat: &rustix::fs::Stat, shown: &str, links: Links) -> Result<RegularFile, WorkspaceError> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(not_text(shown, "is a directory (use glob to list it)")),
        FileType::Symlink => return Err(not_text(shown, "is a symlink")),
        other => return Err(not_text(shown, &format!("is not a regular file ({other:?}); refused"))),
    }
    let accepted = stat.st_nlink <= 1 || links == Links::OwnedBy(stat.st_uid);
    if !accepted {
        return Err(not_text(
            shown,
            "has more than one hard link; refused, since another name may point at it from outside the roots",
        ));
    }
    Ok(RegularFile { size: stat.st_size as u64, mode: stat.st_mode & 0o7777 })
}

fn not_text(shown: &str, reason: &str) -> WorkspaceError {
    WorkspaceError::Unsupported { path: shown.to_owned(), reason: reason.to_owned() }
}

fn refuse_binary(reader: &mut BufReader<std::fs::File>, shown: &str) -> Result<(), WorkspaceError> {
    let head = reader.fill_buf().map_err(|error| WorkspaceError::io(shown, error))?;
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(not_text(shown, "is a binary file; file_read shows text only"));
    }
    Ok(())
}

/// The directory part and the one file name of a path to write. `..` is refused outright here:
/// directories are created one component at a time, and a name must be a plain name.
fn split_for_write(path: &str, relative: &Path) -> Result<(PathBuf, PathBuf), WorkspaceError> {
    if relative.components().any(|component| !matches!(component, Component::Normal(_) | Component::CurDir)) {
        return Err(WorkspaceError::Invalid(format!("`{path}`: name the file without `..`")));
    }
    let name = relative.file_name().ok_or_else(|| WorkspaceError::Invalid(format!("`{path}` names no file")))?;
    let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((parent, PathBuf::from(name)))
}

/// Opens `parent` beneath the root, creating each missing directory inside the last one that
/// was opened (so creation never leaves the root either).
fn ensure_directory(root: &Root, parent: &Path) -> Result<OwnedFd, WorkspaceError> {
    let flags = OFlags::PATH | OFlags::DIRECTORY;
    match open_beneath(root.fd(), parent, flags) {
        Ok(fd) => return Ok(fd),
        Err(errno) if errno == rustix::io::Errno::NOENT => {}
        Err(errno) => return Err(WorkspaceError::errno(&root.show(parent), errno)),
    }
    let mut current = root.open_beneath(Path::new("."), flags)?;
    let mut prefix = PathBuf::new();
    for component in parent.components() {
        let Component::Normal(name) = component else { continue };
        prefix.push(name);
        match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(errno) if errno == rustix::io::Errno::EXIST => {}
            Err(errno) => return Err(WorkspaceError::errno(&root.show(&prefix), errno)),
        }
        // From the root again, so an existing symlink inside the root still works and one that
        // leaves it is refused by the kernel.
        current = root.open_beneath(&prefix, flags)?;
    }
    Ok(current)
}

/// What is at `name` now: nothing, or a regular file (anything else is refused).
fn existing_file(directory: &OwnedFd, name: &Path, shown: &str) -> Result<Option<RegularFile>, WorkspaceError> {
    match rustix::fs::statat(directory, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => Err(not_text(shown, "is a symlink; write to the file it points to")),
            FileType::RegularFile => Ok(Some(RegularFile { size: stat.st_size as u64, mode: stat.st_mode & 0o7777 })),
            // Whatever it is, it is not a file to replace; says what it is.
            _ => regular(&stat, shown, Links::Single).map(Some),
        },
        Err(errno) if errno == rustix::io::Errno::NOENT => Ok(None),
        Err(errno) => Err(WorkspaceError::errno(shown, errno)),
    }
}

/// Writes a temporary file beside `name` and renames it over `name`: readers see the old or
/// the new content, never half, and the old inode (and any other name of it) is untouched.
fn replace(
    directory: &OwnedFd,
    name: &Path,
    content: &[u8],
    mode: Option<u32>,
    shown: &str,
) -> Result<(), WorkspaceError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let temporary =
        format!(".{}.wright-{}-{}", name.display(), std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let fd = rustix::fs::openat(
        directory,
        temporary.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode.unwrap_or(0o644)),
    )
    .map_err(|errno| WorkspaceError::errno(shown, errno))?;
    let written = (|| {
        let mut file = std::fs::File::from(fd);
        file.write_all(content)?;
        if let Some(mode) = mode {
            // The umask applied at creation; give the file back exactly its old permissions.
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
        }
        rustix::fs::renameat(directory, temporary.as_str(), directory, name)?;
        Ok::<(), std::io::Error>(())
    })();
    if let Err(error) = written {
        if let Err(cleanup) = rustix::fs::unlinkat(directory, temporary.as_str(), AtFlags::empty()) {
            tracing::warn!(%cleanup, temporary, "could not remove the temporary file of a failed write");
        }
        return Err(WorkspaceError::io(shown, error));
    }
    Ok(())
}
