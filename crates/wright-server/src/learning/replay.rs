//! Replaying a case in a scratch copy of the agent's data, and judging a check.
//!
//! A replay never touches the live data. Its scratch place is a directory under
//! `data/scratch/<id>` holding a copy of the app database (`VACUUM INTO`, a consistent
//! snapshot taken by SQLite) and of the agent's own directory (its database, closed first so
//! its write-ahead log is folded in, and its workspace; symbolic links are copied as links,
//! never followed, so a link the agent made cannot pull a host file into the copy). A second
//! set of services (store, sandbox, agent databases, workspaces) and its own `Runs` work on
//! that directory with the live agent's model at temperature 0; the directory is removed when
//! the replay ends, however it ends. MCP servers are not started for a replay: their tools are
//! absent from it. What the check looks for is taken out of the copy before the replay
//! (`undone`): the copy holds what the person's own run left, and a pass must be the replay's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use wright_core::{AgentId, CaseCheck, ConversationStatus, DocumentKind, ItemAuthor, ItemStatus};
use wright_store::{ExecutionFilter, Store};
use wright_tools::{Services, ToolRegistry};

use crate::AppState;
use crate::domain::hub::Hub;
use crate::domain::owner::RunOwner;
use crate::domain::runs::{Runs, Sender};

/// How a check came out, and what was seen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) passed: bool,
    pub(crate) detail: String,
}

impl Verdict {
    fn new(passed: bool, detail: impl Into<String>) -> Self {
        Self { passed, detail: detail.into() }
    }
}

/// Removes the scratch directory when the replay ends, however it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!(%error, path = %self.0.display(), "could not remove a replay's scratch directory");
        }
    }
}

/// Replays `message` as the agent's person would send it, in a scratch copy of the agent's
/// data where the items `with_live` are live too, and judges `check` there.
pub(crate) async fn replay(
    state: &AppState,
    agent: &AgentId,
    message: &str,
    check: &CaseCheck,
    with_live: &[i64],
) -> anyhow::Result<Verdict> {
    let root = state.config.data_dir.join("scratch").join(uuid::Uuid::new_v4().simple().to_string());
    std::fs::create_dir_all(root.join("agents"))?;
    let scratch = Scratch(root.clone());
    state.store.copy_database_to(&root.join("wright.db")).await?;
    // Closing folds the agent database's write-ahead log into the file before it is copied.
    state.tools.services().databases.close(agent).await;
    let from = state.config.data_dir.join("agents").join(agent.as_str());
    let to = root.join("agents").join(agent.as_str());
    tokio::task::spawn_blocking(move || if from.exists() { copy_tree(&from, &to) } else { Ok(()) }).await??;

    let mut config = (*state.config).clone();
    config.data_dir = root.clone();
    let services = crate::open_services(&config).await?;
    let store = services.store.clone();
    for id in with_live {
        store.set_item_status(agent, *id, ItemStatus::Live, ItemAuthor::Learning, "live in this replay").await?;
    }
    let check = &undone(&store, &services, agent, check).await?;
    let tools = Arc::new(ToolRegistry::new(Arc::new(services)));
    let runs = Arc::new(
        Runs::new(
            store.clone(),
            Arc::new(Hub::default()),
            Arc::clone(&tools),
            Arc::clone(&state.models),
            // A replay's requests are metered in the live ledger (caller `learning`) and held to
            // the agent's budgets like any other run's: a ledger on the scratch copy would count
            // them against a copy of the totals and lose them with the copy.
            Arc::clone(&state.ledger),
            config.agent.clone(),
            config.runs.clone(),
            RunOwner::acquire(&root)?,
        )
        .with_configured_tools(
            config.agents.iter().map(|(agent, section)| (agent.clone(), section.tools.clone())).collect(),
        )
        .with_profiles(config.model_profiles.clone())
        .with_learning(config.learning.clone())
        .with_temperature(0.0),
    );
    let conversation = uuid::Uuid::new_v4().to_string();
    store.create_conversation(agent, &conversation, "replay").await?;
    runs.send_message(&conversation, message, Sender::Person, wright_core::UsageCaller::Learning).await?;
    let deadline = Duration::from_secs(state.config.learning.replay_timeout_secs.max(1));
    let started = Instant::now();
    let settled = loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if store.conversation(&conversation).await?.status != ConversationStatus::Running {
            break true;
        }
        if started.elapsed() > deadline {
            runs.cancel(&conversation).await?;
            break false;
        }
    };
    let verdict = if settled {
        judge(&store, tools.services(), agent, Some(&conversation), check).await
    } else {
        Verdict::new(false, format!("the replay ran longer than {} s and was stopped", deadline.as_secs()))
    };
    // Let the cancelled run's task end before its files go.
    if !settled {
        let stop = Instant::now();
        while store.conversation(&conversation).await?.status == ConversationStatus::Running
            && stop.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tools.services().databases.close(agent).await;
    store.close().await;
    drop(runs);
    drop(tools);
    drop(scratch);
    Ok(verdict)
}

/// Makes the copy not pass `check` before the replay, so that a pass proves the replay did
/// it: the copy holds what the person's own run left (the state it set, the text it wrote).
/// The state key is removed, the text taken out of the notes or of the file (through the
/// workspace's confined paths); a count cannot be undone, so when it already holds, the replay
/// must raise it by `min` more. Returns the check to judge the replay by.
async fn undone(store: &Store, services: &Services, agent: &AgentId, check: &CaseCheck) -> anyhow::Result<CaseCheck> {
    if !judge(store, services, agent, None, check).await.passed {
        return Ok(check.clone());
    }
    match check {
        CaseCheck::StateEquals { key, .. } => {
            store.delete_state(agent, key).await?;
        }
        CaseCheck::NotesContain { text } => {
            let edit = wright_store::DocumentEdit::FindReplace {
                find: text.clone(),
                replace: String::new(),
                replace_all: true,
            };
            let meta = wright_store::VersionMeta::new(wright_core::Author::Admin)
                .with_reason(Some("a replay starts without the text its case checks for".into()));
            store.edit_document(agent, DocumentKind::LearnedNotes, &edit, &meta).await?;
        }
        CaseCheck::FileContains { path, text } => {
            services.workspaces.open(agent)?.edit(path, text, "", true)?;
        }
        CaseCheck::DbCount { sql, min } => {
            let result = services.databases.query(agent, sql).await?;
            let before = result["rows"].get(0).and_then(|row| row.get(0)).and_then(Value::as_i64).unwrap_or(0);
            return Ok(CaseCheck::DbCount { sql: sql.clone(), min: before.saturating_add(*min) });
        }
        CaseCheck::ToolSucceeded { .. } | CaseCheck::PendingCall { .. } => {}
    }
    Ok(check.clone())
}

/// Copies a directory tree; symbolic links stay links (never followed), other special files
/// are left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() && !entry.file_name().to_string_lossy().ends_with("-shm") {
            // A SQLite `-shm` file is shared memory of the processes that have the database open
            // (its locks included): the copy's first connection rebuilds it from the `-wal`.
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Judges `check` from the stored data of `agent` (and of `conversation`, for the checks about
/// a run's calls). Confinement is the services' own: SQL through the agent database's
/// read-only path, files through the workspace's kernel-resolved paths.
pub(crate) async fn judge(
    store: &Store,
    services: &Services,
    agent: &AgentId,
    conversation: Option<&str>,
    check: &CaseCheck,
) -> Verdict {
    match judged(store, services, agent, conversation, check).await {
        Ok(verdict) => verdict,
        Err(error) => Verdict::new(false, format!("the check could not be judged: {error}")),
    }
}

async fn judged(
    store: &Store,
    services: &Services,
    agent: &AgentId,
    conversation: Option<&str>,
    check: &CaseCheck,
) -> anyhow::Result<Verdict> {
    Ok(match check {
        CaseCheck::StateEquals { key, value } => {
            let stored = store.get_state(agent, key).await?;
            match stored {
                Some(stored) if stored == *value => Verdict::new(true, format!("state {key:?} is {value}")),
                Some(stored) => Verdict::new(false, format!("state {key:?} is {stored}, not {value}")),
                None => Verdict::new(false, format!("no state {key:?}")),
            }
        }
        CaseCheck::NotesContain { text } => {
            let notes = store.document(agent, DocumentKind::LearnedNotes).await?;
            let found = notes.content.contains(text.as_str());
            Verdict::new(found, if found { "the notes contain it" } else { "the notes do not contain it" })
        }
        CaseCheck::DbCount { sql, min } => {
            let result = services.databases.query(agent, sql).await?;
            let count = result["rows"].get(0).and_then(|row| row.get(0)).and_then(Value::as_i64);
            match count {
                Some(count) => {
                    Verdict::new(count >= *min, format!("the query counted {count} (at least {min} wanted)"))
                }
                None => Verdict::new(false, "the query returned no number in its first row and column"),
            }
        }
        CaseCheck::ToolSucceeded { tool } => {
            let filter = ExecutionFilter {
                tool_name: Some(tool.clone()),
                success: Some(true),
                limit: Some(1000),
                ..ExecutionFilter::default()
            };
            let executions = store.list_executions(agent, &filter).await?;
            let found = executions.iter().any(|execution| execution.conversation_id.as_deref() == conversation);
            Verdict::new(
                found,
                if found { format!("{tool} succeeded") } else { format!("no successful call of {tool}") },
            )
        }
        CaseCheck::FileContains { path, text } => {
            let workspace = services.workspaces.open(agent)?;
            match workspace.read(path, None, Some(100_000)) {
                Ok(read) => {
                    // The read is numbered like `cat -n`: the line starts after the first tab.
                    let content: Vec<&str> =
                        read.content.lines().map(|line| line.split_once('\t').map_or(line, |(_, rest)| rest)).collect();
                    let found = content.join("\n").contains(text.as_str());
                    Verdict::new(
                        found,
                        if found { format!("{path} contains it") } else { format!("{path} does not contain it") },
                    )
                }
                Err(error) => Verdict::new(false, format!("{path}: {error}")),
            }
        }
        CaseCheck::PendingCall { tool } => {
            let Some(conversation) = conversation else {
                return Ok(Verdict::new(false, "no conversation to look for a waiting call in"));
            };
            let pending = store.pending_calls(conversation).await?;
            let found = pending.iter().any(|call| call.tool_name == *tool);
            Verdict::new(
                found,
                if found { format!("a call of {tool} waits") } else { format!("no call of {tool} waits") },
            )
        }
    })
}
