//! The workspace tools (seed 004, extended): `glob`, `file_read`, `grep`, `file_write`,
//! `file_edit` and `bash`, over `wright-workspace`. Paths are in the agent's namespace:
//! `/workspace/...` (or relative) for its own directory, and the operator's roots at their
//! host paths. The filesystem work runs on the blocking pool; `bash` is awaited directly, so a
//! cancelled call drops it and its sandbox is killed. [`shell_proxy`] gives the shell the egress
//! proxy as its way out when the operator allows network.
//!
//! Writes into the agent's own workspace and `bash` without network run without asking; writes
//! into an operator's root and `bash` with network ask (the registry judges each call, see
//! [`AskWhen`]); after outside content every write and command asks (their effects).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wright_egress::Egress;
use wright_workspace::{GrepMode, GrepRequest, ShellProxy, ShellRequest, Workspace, WorkspaceError};

use crate::builtin::{AskWhen, Builtin, SENDS_OUT, Tool, WRITES_FILES, asking_when, with_effects};
use crate::{ToolContext, ToolError};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GlobArgs {
    /// A glob such as `**/*.rs` or `src/*.md`, relative to `path`. `*` stays within one
    /// directory; `**` crosses directories.
    pattern: String,
    /// The directory to search (default `/workspace`).
    path: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ReadArgs {
    /// The file: `/workspace/...`, a path relative to `/workspace`, or a path in an allowed root.
    path: String,
    /// The first line to return, 1-based. Default 1.
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// How many lines to return. Default 2000.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputMode {
    /// `path:line:text` for each matching line (default).
    Content,
    /// Only the paths of files with a match.
    FilesWithMatches,
    /// `path:count` per file.
    Count,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GrepArgs {
    /// A regular expression (Rust/ripgrep syntax), e.g. `fn\s+main` or `TODO|FIXME`.
    pattern: String,
    /// A file or directory to search (default `/workspace`).
    path: Option<String>,
    /// Only files matching this glob, e.g. `*.rs` (by name) or `src/**/*.ts` (by path).
    glob: Option<String>,
    /// content (default), files_with_matches or count.
    output_mode: Option<OutputMode>,
    /// Match regardless of case. Default false.
    case_insensitive: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct WriteArgs {
    /// The file to create or replace; missing parent directories are created.
    path: String,
    /// The whole new content of the file.
    content: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EditArgs {
    /// The file to edit.
    path: String,
    /// The exact text to replace, whitespace included; it must occur exactly once unless
    /// replace_all is set. Read the file first.
    old_string: String,
    /// The text to put in its place.
    new_string: String,
    /// Replace every occurrence. Default false.
    replace_all: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct BashArgs {
    /// A bash command line, run with `bash -c`.
    command: String,
    /// Deadline in milliseconds (default 30000). The command and everything it started are
    /// killed when it passes.
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
    /// The working directory (default `/workspace`).
    cwd: Option<String>,
}

/// The egress proxy as the confined shell's one way out (`[workspace.shell] network`): each
/// command's socket is served with `[egress.proxy]`'s limits and the egress policy, exactly as
/// the browser's proxy.
#[derive(Debug)]
struct EgressShellProxy(Egress);

impl ShellProxy for EgressShellProxy {
    fn serve(&self, listener: tokio::net::UnixListener) -> Result<Box<dyn Send + Sync>, String> {
        let proxy =
            self.0.serve_proxy_on(listener, self.0.config().proxy.clone()).map_err(|error| error.to_string())?;
        Ok(Box::new(proxy))
    }
}

/// Builds the shell's proxy from the egress client.
pub fn shell_proxy(egress: &Egress) -> Arc<dyn ShellProxy> {
    Arc::new(EgressShellProxy(egress.clone()))
}

fn workspace_error(error: WorkspaceError) -> ToolError {
    match error {
        WorkspaceError::OutsideRoots { .. } | WorkspaceError::Escape { .. } | WorkspaceError::ReadOnly { .. } => {
            ToolError::Denied(error.to_string())
        }
        WorkspaceError::NotFound { .. } => ToolError::NotFound(error.to_string()),
        WorkspaceError::Unsupported { .. } | WorkspaceError::Invalid(_) | WorkspaceError::Io { .. } => {
            ToolError::Rejected(error.to_string())
        }
        WorkspaceError::Limit(message) => ToolError::LimitExceeded(message),
        WorkspaceError::ShellUnavailable(_) => ToolError::NotConfigured(error.to_string()),
    }
}

fn to_json(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|error| ToolError::Internal(error.to_string()))
}

/// Opens the agent's workspace and runs `work` on the blocking pool (file IO, walks).
async fn on_workspace<T: Send + 'static>(
    context: &ToolContext,
    work: impl FnOnce(&Workspace) -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, ToolError> {
    let services = context.services.clone();
    let agent = context.agent.clone();
    tokio::task::spawn_blocking(move || {
        let workspace = services.workspaces.open(&agent)?;
        work(&workspace)
    })
    .await
    .map_err(|error| ToolError::Internal(format!("workspace task failed: {error}")))?
    .map_err(workspace_error)
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<GlobArgs>::reading(
            "glob",
            "Find files by name pattern. Searches your workspace (/workspace) or an allowed root; returns \
             {output: paths one per line, newest first, count, truncated}. Hidden files and paths in .gitignore \
             are skipped unless the pattern starts with a dot.",
            |context, args| {
                Box::pin(async move {
                    let outcome =
                        on_workspace(&context, move |workspace| workspace.glob(&args.pattern, args.path.as_deref()))
                            .await?;
                    Ok(
                        json!({ "output": outcome.paths.join("\n"), "count": outcome.count, "truncated": outcome.truncated }),
                    )
                })
            },
        ),
        Builtin::<ReadArgs>::reading(
            "file_read",
            "Read a text file with numbered lines. Returns (like cat -n) {output, path, start_line, lines, \
             total_lines, truncated}. Use offset and limit for long files. Binary files, devices and hard links are refused.",
            |context, args| {
                Box::pin(async move {
                    let outcome =
                        on_workspace(&context, move |workspace| workspace.read(&args.path, args.offset, args.limit))
                            .await?;
                    Ok(json!({
                        "output": outcome.content,
                        "path": outcome.path,
                        "start_line": outcome.start_line,
                        "lines": outcome.lines,
                        "total_lines": outcome.total_lines,
                        "truncated": outcome.truncated,
                    }))
                })
            },
        ),
        Builtin::<GrepArgs>::reading(
            "grep",
            "Search file contents with a regular expression. Ripgrep's engine; returns {output, count, \
             files_searched, truncated}. output_mode: content (path:line:text, default), files_with_matches, count. Hidden files, \
             .gitignore'd paths and binary files are skipped.",
            |context, args| {
                Box::pin(async move {
                    let request = GrepRequest {
                        pattern: args.pattern,
                        path: args.path,
                        glob: args.glob,
                        mode: match args.output_mode {
                            None | Some(OutputMode::Content) => GrepMode::Content,
                            Some(OutputMode::FilesWithMatches) => GrepMode::FilesWithMatches,
                            Some(OutputMode::Count) => GrepMode::Count,
                        },
                        case_insensitive: args.case_insensitive.unwrap_or(false),
                    };
                    to_json(on_workspace(&context, move |workspace| workspace.grep(&request)).await?)
                })
            },
        ),
        own_workspace_write(Builtin::<WriteArgs>::boxed(
            "file_write",
            "Create or replace a file in your workspace with the given content. Parent directories are \
             created; returns {output, path, bytes, created}. Read-only roots refuse writes.",
            |context, args| {
                Box::pin(async move {
                    let outcome =
                        on_workspace(&context, move |workspace| workspace.write(&args.path, &args.content)).await?;
                    Ok(json!({
                        "output": format!("Wrote {} bytes to {}", outcome.bytes, outcome.path),
                        "path": outcome.path,
                        "bytes": outcome.bytes,
                        "created": outcome.created,
                    }))
                })
            },
        )),
        own_workspace_write(Builtin::<EditArgs>::boxed(
            "file_edit",
            "Replace exact text in a file in your workspace. old_string must occur exactly once (or set \
             replace_all); returns {output, path, replacements, bytes}. Read the file first so the text \
             matches exactly.",
            |context, args| {
                Box::pin(async move {
                    let replace_all = args.replace_all.unwrap_or(false);
                    let outcome = on_workspace(&context, move |workspace| {
                        workspace.edit(&args.path, &args.old_string, &args.new_string, replace_all)
                    })
                    .await?;
                    Ok(json!({
                        "output": format!("Replaced {} occurrence(s) in {}", outcome.replacements, outcome.path),
                        "path": outcome.path,
                        "replacements": outcome.replacements,
                        "bytes": outcome.bytes,
                    }))
                })
            },
        )),
        asking_when(
            with_effects(
                Builtin::<BashArgs>::boxed(
                    "bash",
                    "Run a bash command in a sandbox. Your workspace is at /workspace (the only writable place besides \
             /tmp), allowed roots at their paths, read-only system tools; network only if the system message says so, \
             through an HTTP proxy (http_proxy/https_proxy are set). Returns {stdout, stderr, exit_code, \
             duration_ms, truncated, timed_out}; exit_code is null when the command was killed (deadline or \
             output cap). Background processes end with the command.",
                    |context, args| {
                        Box::pin(async move {
                            let services = context.services.clone();
                            let agent = context.agent.clone();
                            let workspace = tokio::task::spawn_blocking(move || services.workspaces.open(&agent))
                                .await
                                .map_err(|error| ToolError::Internal(format!("workspace task failed: {error}")))?
                                .map_err(workspace_error)?;
                            let request =
                                ShellRequest { command: args.command, timeout_ms: args.timeout_ms, cwd: args.cwd };
                            to_json(workspace.run(&request).await.map_err(workspace_error)?)
                        })
                    },
                ),
                SENDS_OUT,
            ),
            AskWhen::ShellHasNetwork,
        ),
    ]
}

/// A write tool: its calls into the agent's own workspace run, those into an operator's root
/// ask; after outside content every call asks (a dictated file may be a script run later).
fn own_workspace_write(tool: Box<dyn Tool>) -> Box<dyn Tool> {
    asking_when(with_effects(tool, WRITES_FILES), AskWhen::WritesOutsideOwnWorkspace)
}
