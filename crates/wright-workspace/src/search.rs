//! glob and grep over a root, on the fd walk (`walk.rs`) and ripgrep's own crates:
//! `globset` for patterns, `grep-regex` + `grep-searcher` for content (binary files skipped at
//! the first NUL, as ripgrep does). grep searches files on a few threads while the walk runs.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::WorkspaceError;
use crate::files::regular;
use crate::paths::{Links, Root, Workspace};
use crate::walk::{WalkEntry, WalkOptions, walk};

/// Files handed from the walk to the searching threads at most this far ahead of them.
const QUEUE_DEPTH: usize = 1024;
/// Searching threads: more than the machine's cores only adds switching.
const MAX_SEARCH_THREADS: usize = 8;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GlobOutcome {
    /// Newest first.
    pub paths: Vec<String>,
    /// How many files matched (more than `paths` when capped).
    pub count: usize,
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrepMode {
    /// `path:line:text` for each matching line.
    #[default]
    Content,
    /// The paths of files with a match.
    FilesWithMatches,
    /// `path:count` for each file with a match.
    Count,
}

#[derive(Debug, Clone, Default)]
pub struct GrepRequest {
    pub pattern: String,
    pub path: Option<String>,
    /// Only files matching this glob (by name, or by path when it contains `/`).
    pub glob: Option<String>,
    pub mode: GrepMode,
    pub case_insensitive: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GrepOutcome {
    /// One line per match, file or count, by path.
    pub output: String,
    /// Matching lines (content, count) or files (files_with_matches).
    pub count: usize,
    pub files_searched: usize,
    pub truncated: bool,
}

impl Workspace {
    /// Files under `path` (default `/workspace`) whose path relative to it matches `pattern`.
    pub fn glob(&self, pattern: &str, path: Option<&str>) -> Result<GlobOutcome, WorkspaceError> {
        let (root, relative) = self.resolve(path.unwrap_or(""))?;
        let base_shown = root.show(&relative);
        let pattern = relative_pattern(pattern, &base_shown)?;
        let matcher = compile_glob(pattern)?;
        let start = open_directory(root, &relative)?;
        let options = WalkOptions {
            hidden: pattern.starts_with('.') || pattern.contains("/."),
            max_entries: self.limits.walk_max_entries,
            deadline: Instant::now() + Duration::from_millis(self.limits.search_deadline_ms),
        };
        let mut found: Vec<(i64, String)> = Vec::new();
        let end = walk(start, &options, |entry| {
            if matcher.is_match(&entry.relative) {
                let modified = rustix::fs::statat(&*entry.directory, &entry.name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(0, |stat| stat.st_mtime);
                found.push((modified, join_shown(&base_shown, &entry.relative)));
            }
            true
        });
        found.sort_by(|left, right| right.0.cmp(&left.0).then_with(|| left.1.cmp(&right.1)));
        let count = found.len();
        let capped = count > self.limits.glob_max_results;
        found.truncate(self.limits.glob_max_results);
        Ok(GlobOutcome {
            paths: found.into_iter().map(|(_, path)| path).collect(),
            count,
            truncated: end.truncated || capped,
        })
    }

    /// Lines matching a regular expression (Rust regex syntax, as ripgrep) under `path`.
    pub fn grep(&self, request: &GrepRequest) -> Result<GrepOutcome, WorkspaceError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(request.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&request.pattern)
            .map_err(|error| WorkspaceError::Invalid(format!("invalid pattern: {error}")))?;
        let filter = request
            .glob
            .as_deref()
            .map(|glob| compile_glob(glob).map(|matcher| (matcher, glob.contains('/'))))
            .transpose()?;
        let (root, relative) = self.resolve(request.path.as_deref().unwrap_or(""))?;
        let base_shown = root.show(&relative);
        let opened = root.open_beneath(&relative, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&opened).map_err(|errno| WorkspaceError::errno(&base_shown, errno))?;
        let limits = &self.limits;
        let collector = Collector {
            links: root.links,
            mode: request.mode,
            max_results: limits.grep_max_results,
            max_line_chars: limits.grep_max_line_chars,
            max_file_bytes: limits.grep_max_file_bytes,
            results: Mutex::new(Vec::new()),
            emitted: AtomicUsize::new(0),
            searched: AtomicUsize::new(0),
            full: AtomicBool::new(false),
        };
        let mut truncated = false;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            let options = WalkOptions {
                hidden: false,
                max_entries: limits.walk_max_entries,
                deadline: Instant::now() + Duration::from_millis(limits.search_deadline_ms),
            };
            let threads =
                std::thread::available_parallelism().map_or(2, |count| count.get()).clamp(1, MAX_SEARCH_THREADS);
            let (sender, receiver) = mpsc::sync_channel::<WalkEntry>(QUEUE_DEPTH);
            let receiver = Mutex::new(receiver);
            std::thread::scope(|scope| {
                for _ in 0..threads {
                    scope.spawn(|| {
                        // One searcher per thread: its buffers are reused for every file.
                        let mut searcher = new_searcher();
                        loop {
                            // Held only to take the next file, never while searching it.
                            let next = receiver.lock().map(|receiver| receiver.recv());
                            let Ok(Ok(entry)) = next else { break };
                            if collector.full.load(Ordering::Relaxed) {
                                continue;
                            }
                            let shown = join_shown(&base_shown, &entry.relative);
                            let opened = rustix::fs::openat(
                                &*entry.directory,
                                &entry.name,
                                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
                                Mode::empty(),
                            );
                            if let Ok(fd) = opened {
                                collector.search(&mut searcher, &matcher, fd, shown);
                            }
                        }
                    });
                }
                let end = walk(opened, &options, |entry| {
                    let wanted = filter.as_ref().is_none_or(|(glob, by_path)| {
                        if *by_path { glob.is_match(&entry.relative) } else { glob.is_match(&entry.name) }
                    });
                    !wanted || (sender.send(entry).is_ok() && !collector.full.load(Ordering::Relaxed))
                });
                truncated = end.truncated;
                drop(sender);
            });
        } else {
            collector.search(&mut new_searcher(), &matcher, opened, base_shown);
        }
        let mut results = collector.results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        results.sort_by(|left, right| left.0.cmp(&right.0));
        let mut output = String::new();
        let mut count = 0;
        let mut lines = 0;
        for (_, file_lines, file_count) in results {
            count += file_count;
            for line in file_lines {
                if lines >= limits.grep_max_results {
                    truncated = true;
                    break;
                }
                output.push_str(&line);
                output.push('\n');
                lines += 1;
            }
        }
        let truncated = truncated || collector.full.load(Ordering::Relaxed);
        Ok(GrepOutcome { output, count, files_searched: collector.searched.into_inner(), truncated })
    }
}

/// Results of the searching threads; each file's lines stay together and are sorted by path
/// at the end, so the output does not depend on which thread finished first.
struct Collector {
    /// The searched root's rule for files with several names.
    links: Links,
    mode: GrepMode,
    max_results: usize,
    max_line_chars: usize,
    max_file_bytes: u64,
    results: Mutex<Vec<(String, Vec<String>, usize)>>,
    /// Output lines produced so far; past `max_results` the search stops early.
    emitted: AtomicUsize,
    searched: AtomicUsize,
    full: AtomicBool,
}

impl Collector {
    fn search(&self, searcher: &mut Searcher, matcher: &grep_regex::RegexMatcher, fd: OwnedFd, shown: String) {
        // Devices, FIFOs, hard links and huge files are skipped, never read.
        let Ok(stat) = rustix::fs::fstat(&fd) else { return };
        if regular(&stat, &shown, self.links).is_err() || stat.st_size as u64 > self.max_file_bytes {
            return;
        }
        self.searched.fetch_add(1, Ordering::Relaxed);
        let file = std::fs::File::from(fd);
        let mut lines = Vec::new();
        let mut matched = 0usize;
        let mode = self.mode;
        let max_line_chars = self.max_line_chars;
        let sink = Lossy(|number, line: &str| {
            matched += 1;
            match mode {
                GrepMode::Content => {
                    let line = line.trim_end_matches(['\n', '\r']);
                    let cut: String = line.chars().take(max_line_chars).collect();
                    let marker = if cut.len() < line.len() { " […]" } else { "" };
                    lines.push(format!("{shown}:{number}:{cut}{marker}"));
                    let total = self.emitted.fetch_add(1, Ordering::Relaxed) + 1;
                    if total >= self.max_results {
                        self.full.store(true, Ordering::Relaxed);
                        return Ok(false);
                    }
                    Ok(true)
                }
                GrepMode::FilesWithMatches => Ok(false),
                GrepMode::Count => Ok(true),
            }
        });
        if searcher.search_file(matcher, &file, sink).is_err() || matched == 0 {
            return;
        }
        match mode {
            GrepMode::Content => {}
            GrepMode::FilesWithMatches | GrepMode::Count => {
                lines.push(if mode == GrepMode::Count { format!("{shown}:{matched}") } else { shown.clone() });
                if self.emitted.fetch_add(1, Ordering::Relaxed) + 1 >= self.max_results {
                    self.full.store(true, Ordering::Relaxed);
                }
            }
        }
        let counted = if mode == GrepMode::FilesWithMatches { 1 } else { matched };
        if let Ok(mut results) = self.results.lock() {
            results.push((shown, lines, counted));
        }
    }
}

/// Binary files are left at their first NUL, as ripgrep does by default.
fn new_searcher() -> Searcher {
    SearcherBuilder::new().binary_detection(BinaryDetection::quit(b'\x00')).line_number(true).build()
}

fn compile_glob(pattern: &str) -> Result<GlobMatcher, WorkspaceError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| WorkspaceError::Invalid(format!("invalid glob `{pattern}`: {error}")))
}

/// Models often repeat the directory in the pattern (`/workspace/src/**/*.rs`); that prefix is
/// dropped. Any other absolute pattern is refused with what to do instead.
fn relative_pattern<'a>(pattern: &'a str, base_shown: &str) -> Result<&'a str, WorkspaceError> {
    if !pattern.starts_with('/') {
        return Ok(pattern);
    }
    pattern.strip_prefix(base_shown).and_then(|rest| rest.strip_prefix('/')).ok_or_else(|| {
        WorkspaceError::Invalid(format!(
            "glob `{pattern}` is absolute; give a pattern relative to `path` ({base_shown})"
        ))
    })
}

fn open_directory(root: &Root, relative: &Path) -> Result<OwnedFd, WorkspaceError> {
    root.open_beneath(relative, OFlags::RDONLY | OFlags::DIRECTORY)
}

fn join_shown(base: &str, relative: &Path) -> String {
    let mut joined = PathBuf::from(base);
    joined.push(relative);
    joined.display().to_string()
}
