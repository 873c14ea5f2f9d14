//! The `memory` tool of seed 001: store, recall, list and forget memories at four time scales;
//! and `start_session`, the model's way to begin a new session (seed 001, "Session Division").
//!
//! Returns `{success, memories: [{id, layer, content, category, certainty, created_at,
//! expires_at, relevance}]}` for every action. Memories whose time has run out are archived
//! (never deleted) before each call, so the agent never sees one as active; the person can
//! restore them from the memory page.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wright_core::{MemoryLayer, iso_from_ms};
use wright_store::{Memory, MemoryActor, MemoryFilter, NewMemory, SessionStarter};

use crate::ToolError;
use crate::builtin::{Builtin, CHANGES_AGENT, Tool, with_effects};

const TOOL: &str = "memory";
const DEFAULT_LIMIT: usize = 10;

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    Store,
    Recall,
    List,
    Forget,
}

/// A layer, as the model names it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Layer {
    /// Permanent: facts, preferences, relationships.
    Long,
    /// About three months: goals, plans, projects.
    Mid,
    /// About two weeks: recent context, summaries.
    Short,
    /// The current session only (it ends at the next session division or new session).
    Session,
}

impl From<Layer> for MemoryLayer {
    fn from(layer: Layer) -> Self {
        match layer {
            Layer::Long => MemoryLayer::Long,
            Layer::Mid => MemoryLayer::Mid,
            Layer::Short => MemoryLayer::Short,
            Layer::Session => MemoryLayer::Session,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct MemoryArgs {
    /// store a memory, recall memories matching a query, list memories, or forget one.
    action: Action,
    /// store: the layer to keep it in (required). recall/list: only this layer.
    layer: Option<Layer>,
    /// store: the memory itself, one fact per memory.
    content: Option<String>,
    /// store: e.g. fact, preference, relationship (long); goal, plan, project (mid); summary (short).
    category: Option<String>,
    /// store: how sure you are, 0 to 1 (for goals and plans).
    #[schemars(range(min = 0.0, max = 1.0))]
    certainty: Option<f64>,
    /// recall: words to search for in content and category.
    query: Option<String>,
    /// recall/list: at most this many memories (default 10).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u32>,
    /// forget: the id of the memory, as store, recall or list returned it.
    memory_id: Option<String>,
}

/// One memory as the model reads it.
#[derive(Serialize)]
struct MemoryView {
    id: String,
    layer: MemoryLayer,
    content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    certainty: Option<f64>,
    created_at: String,
    /// Null for a memory that never expires.
    expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    relevance: Option<f64>,
}

impl From<Memory> for MemoryView {
    fn from(memory: Memory) -> Self {
        Self {
            id: memory.id.to_string(),
            layer: memory.layer,
            content: memory.content,
            category: memory.category,
            certainty: memory.certainty,
            created_at: iso_from_ms(memory.created_at),
            expires_at: memory.expires_at.map(iso_from_ms),
            // Three decimals are all a model can use, and they keep the result short.
            relevance: memory.relevance.map(|relevance| (relevance * 1000.0).round() / 1000.0),
        }
    }
}

#[derive(Serialize)]
struct MemoryResult {
    success: bool,
    memories: Vec<MemoryView>,
}

fn result(memories: Vec<Memory>) -> Result<Value, ToolError> {
    let result = MemoryResult { success: true, memories: memories.into_iter().map(MemoryView::from).collect() };
    serde_json::to_value(result).map_err(|error| ToolError::Internal(error.to_string()))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct StartSessionArgs {
    /// A name for the new session, e.g. its topic. Defaults to today's date.
    name: Option<String>,
}

#[derive(Serialize)]
struct SessionView {
    id: String,
    name: String,
    started_at: String,
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<StartSessionArgs>::boxed(
            "start_session",
            "Start a new session, e.g. when the person turns to a new topic or asks to start fresh. \
             The current session ends and your session-layer memories end with it; long, mid and short \
             memories stay. Returns {success, session: {id, name, started_at}}.",
            |context, args| {
                Box::pin(async move {
                    let store = &context.services.store;
                    let session =
                        store.start_session(&context.agent, args.name.as_deref(), SessionStarter::Agent).await?;
                    let view = SessionView {
                        id: session.id.to_string(),
                        name: session.name,
                        started_at: iso_from_ms(session.started_at),
                    };
                    Ok(serde_json::json!({ "success": true, "session": view }))
                })
            },
        ),
        with_effects(
            Builtin::<MemoryArgs>::boxed(
                TOOL,
                "Store and recall what you learn about the person at different time scales. Layers: long \
         (permanent facts, preferences, relationships), mid (goals, plans, projects; about 3 months), \
         short (recent context, summaries; about 2 weeks), session (until the current session ends). \
         action=store needs layer and content (one fact per memory); recall finds memories by words in \
         `query`, most relevant first; list shows the newest; forget archives the memory `memory_id`. \
         Your long and mid memories are already in your instructions; recall the rest when they may help.",
                |context, args| {
                    Box::pin(async move {
                        let store = &context.services.store;
                        // Archive what has run out first, so a list never shows an expired memory as
                        // kept and the history says when it expired.
                        store.expire_memories().await?;
                        let limit = args.limit.map_or(DEFAULT_LIMIT, |limit| limit as usize);
                        // Session memories of other sessions are not this conversation's business.
                        let session = store.current_session(&context.agent).await?.id;
                        let filter = MemoryFilter {
                            layer: args.layer.map(MemoryLayer::from),
                            archived: false,
                            session_id: Some(session),
                        };
                        let actor = MemoryActor::agent(context.conversation_id.clone());
                        match args.action {
                            Action::Store => {
                                let layer =
                                    args.layer.ok_or_else(|| ToolError::missing_field(TOOL, "store", "layer"))?;
                                let content =
                                    args.content.ok_or_else(|| ToolError::missing_field(TOOL, "store", "content"))?;
                                let memory = NewMemory {
                                    layer: layer.into(),
                                    category: args.category.filter(|category| !category.trim().is_empty()),
                                    certainty: args.certainty,
                                    content,
                                };
                                let stored =
                                    context.services.memories.store_memory(&context.agent, &memory, &actor).await?;
                                result(vec![stored])
                            }
                            Action::Recall => {
                                let query =
                                    args.query.ok_or_else(|| ToolError::missing_field(TOOL, "recall", "query"))?;
                                result(context.services.memories.recall(&context.agent, &query, &filter, limit).await?)
                            }
                            Action::List => result(store.list_memories(&context.agent, &filter, limit).await?),
                            Action::Forget => {
                                let raw = args
                                    .memory_id
                                    .ok_or_else(|| ToolError::missing_field(TOOL, "forget", "memory_id"))?;
                                let id: i64 = raw.trim().parse().map_err(|_| ToolError::InvalidArguments {
                                    tool: TOOL.into(),
                                    problems: vec![format!(
                                        "memory_id {raw:?} is not an id that store, recall or list returned"
                                    )],
                                })?;
                                let forgotten = store.forget_memory(&context.agent, id, &actor).await?;
                                result(vec![forgotten])
                            }
                        }
                    })
                },
            ),
            CHANGES_AGENT,
        ),
    ]
}
