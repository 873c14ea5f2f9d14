//! A directory walk by file descriptor, for glob and grep.
//!
//! Each directory is opened from its parent's fd with one plain name and
//! `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`, so the walk never follows a symlink and never
//! leaves the directory it started in, whatever is renamed or swapped while it runs. Entries
//! are handed out as (directory fd, name): a caller opens the file from that fd, never by path.
//! Like ripgrep by default, hidden entries are skipped unless asked for, `.git` always, and
//! `.gitignore` files are honoured.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};

/// Largest `.gitignore` read, bytes; a larger one is ignored rather than parsed.
const MAX_GITIGNORE_BYTES: u64 = 1024 * 1024;

/// One file found by the walk.
pub(crate) struct WalkEntry {
    /// The directory holding it, opened by the walk.
    pub(crate) directory: Arc<OwnedFd>,
    pub(crate) name: PathBuf,
    /// Relative to where the walk started, with `/` separators.
    pub(crate) relative: PathBuf,
}

pub(crate) struct WalkOptions {
    pub(crate) hidden: bool,
    pub(crate) max_entries: usize,
    pub(crate) deadline: Instant,
}

/// Whether the walk stopped early (entry cap, deadline, or the visitor said stop).
pub(crate) struct WalkEnd {
    pub(crate) truncated: bool,
}

struct Pending {
    directory: OwnedFd,
    relative: PathBuf,
    ignores: Vec<Arc<Gitignore>>,
}

/// Walks the directory `start` depth-first in name order, calling `visit` for each regular
/// file (and symlink-free non-directories, which the caller's own checks refuse). `visit`
/// returns false to stop.
pub(crate) fn walk(start: OwnedFd, options: &WalkOptions, mut visit: impl FnMut(WalkEntry) -> bool) -> WalkEnd {
    let mut stack = vec![Pending { directory: start, relative: PathBuf::new(), ignores: Vec::new() }];
    let mut visited = 0usize;
    while let Some(pending) = stack.pop() {
        let directory = Arc::new(pending.directory);
        let mut ignores = pending.ignores;
        if let Some(gitignore) = read_gitignore(&directory, &pending.relative) {
            ignores.push(Arc::new(gitignore));
        }
        let Ok(entries) = Dir::read_from(&*directory) else { continue };
        let mut names: Vec<(PathBuf, FileType)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = OsStr::from_bytes(entry.file_name().to_bytes());
                (name != "." && name != "..").then(|| (PathBuf::from(name), entry.file_type()))
            })
            .collect();
        names.sort_by(|left, right| left.0.cmp(&right.0));
        let mut subdirectories = Vec::new();
        for (name, mut kind) in names {
            visited += 1;
            if visited > options.max_entries || Instant::now() > options.deadline {
                return WalkEnd { truncated: true };
            }
            let hidden = name.as_os_str().as_bytes().first() == Some(&b'.');
            if name.as_os_str() == ".git" || (hidden && !options.hidden) {
                continue;
            }
            if kind == FileType::Unknown {
                match rustix::fs::statat(&*directory, &name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => kind = FileType::from_raw_mode(stat.st_mode),
                    Err(_) => continue,
                }
            }
            let relative = pending.relative.join(&name);
            let is_directory = kind == FileType::Directory;
            if ignored(&ignores, &relative, is_directory) {
                continue;
            }
            match kind {
                FileType::Directory => subdirectories.push((name, relative)),
                FileType::RegularFile if !visit(WalkEntry { directory: directory.clone(), name, relative }) => {
                    return WalkEnd { truncated: true };
                }
                // Symlinks are not followed; devices, FIFOs and sockets have no text to find.
                _ => {}
            }
        }
        // Pushed in reverse so the stack pops them in name order.
        for (name, relative) in subdirectories.into_iter().rev() {
            let opened = rustix::fs::openat2(
                &*directory,
                &name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            );
            // A directory swapped for a symlink (or removed) since it was listed is skipped.
            if let Ok(fd) = opened {
                stack.push(Pending { directory: fd, relative, ignores: ignores.clone() });
            }
        }
    }
    WalkEnd { truncated: false }
}

/// The deepest `.gitignore` with an opinion decides, as in git.
fn ignored(ignores: &[Arc<Gitignore>], relative: &Path, is_directory: bool) -> bool {
    let absolute = Path::new("/").join(relative);
    for gitignore in ignores.iter().rev() {
        match gitignore.matched(&absolute, is_directory) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

fn read_gitignore(directory: &OwnedFd, relative: &Path) -> Option<Gitignore> {
    let fd = rustix::fs::openat(
        directory,
        ".gitignore",
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd).take(MAX_GITIGNORE_BYTES).read_to_string(&mut text).ok()?;
    // Matched against `/`-rooted relative paths, so the walk's start is the root of the rules.
    let mut builder = GitignoreBuilder::new(Path::new("/").join(relative));
    for line in text.lines() {
        // A line git would not understand is skipped, as git does.
        if builder.add_line(None, line).is_err() {
            continue;
        }
    }
    builder.build().ok()
}
