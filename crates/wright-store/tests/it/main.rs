//! Integration tests of the app store against real SQLite files in a temporary directory.

use std::sync::Arc;

use serde_json::json;
use wright_core::{AgentId, Author, DocumentKind};
use wright_store::{DocumentEdit, ExecutionFilter, ExecutionRecord, StateLimits, Store, StoreError, VersionMeta};

async fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("wright.db"), StateLimits::default()).await.unwrap()
}

fn default_agent() -> AgentId {
    AgentId::default_agent()
}

fn agent_meta() -> VersionMeta {
    VersionMeta {
        author: Author::Agent,
        reason: Some("testing".into()),
        conversation_id: Some("conversation-1".into()),
        tool_call_id: Some("call-1".into()),
    }
}

#[tokio::test]
async fn first_start_creates_the_default_agent_with_prompt_and_empty_notes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agents = store.list_agents().await.unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].id, "default");
    let prompt = store.document(&default_agent(), DocumentKind::SystemPrompt).await.unwrap();
    assert_eq!(prompt.version, 1);
    assert!(prompt.content.contains("improve yourself"));
    let notes = store.document(&default_agent(), DocumentKind::LearnedNotes).await.unwrap();
    assert_eq!((notes.content.as_str(), notes.version), ("", 1));
}

#[tokio::test]
async fn migrations_apply_to_an_existing_database_without_change_or_duplication() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    store
        .edit_document(
            &default_agent(),
            DocumentKind::LearnedNotes,
            &DocumentEdit::Append { content: "kept".into() },
            &agent_meta(),
        )
        .await
        .unwrap();
    store.close().await;
    let reopened = open(&dir).await;
    assert_eq!(reopened.list_agents().await.unwrap().len(), 1);
    let notes = reopened.document(&default_agent(), DocumentKind::LearnedNotes).await.unwrap();
    assert_eq!((notes.content.as_str(), notes.version), ("kept", 2));
    let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(
            &mut sqlx::SqliteConnection::connect_with(
                &sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("wright.db")),
            )
            .await
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(journal, "wal");
}

use sqlx::Connection;

#[tokio::test]
async fn agents_can_be_created_and_listed_and_ids_are_unique() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let research = AgentId::parse("research").unwrap();
    let created = store.create_agent(&research, Some("Research")).await.unwrap();
    assert_eq!(created.name, "Research");
    assert!(matches!(store.create_agent(&research, None).await, Err(StoreError::AgentExists(_))));
    let ids: Vec<String> = store.list_agents().await.unwrap().into_iter().map(|agent| agent.id).collect();
    assert_eq!(ids, ["default", "research"]);
    assert_eq!(store.document(&research, DocumentKind::SystemPrompt).await.unwrap().version, 1);
}

#[tokio::test]
async fn every_edit_writes_a_version_row_with_its_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agent = default_agent();
    let kind = DocumentKind::SystemPrompt;
    let version = store
        .edit_document(&agent, kind, &DocumentEdit::Replace { content: "hello".into() }, &agent_meta())
        .await
        .unwrap();
    assert_eq!(version, 2);
    let stored = store.document_version(&agent, kind, 2).await.unwrap();
    assert_eq!(stored.content, "hello");
    assert_eq!(stored.author, Author::Agent);
    assert_eq!(stored.reason.as_deref(), Some("testing"));
    assert_eq!(stored.conversation_id.as_deref(), Some("conversation-1"));
    assert_eq!(stored.tool_call_id.as_deref(), Some("call-1"));
    assert!(stored.created_at.ends_with('Z'));
    let history = store.document_versions(&agent, kind).await.unwrap();
    assert_eq!(history.iter().map(|entry| entry.version).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(history[0].size, 5);
}

#[tokio::test]
async fn a_failed_edit_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agent = default_agent();
    let kind = DocumentKind::SystemPrompt;
    let before = store.document(&agent, kind).await.unwrap();
    let error = store
        .edit_document(
            &agent,
            kind,
            &DocumentEdit::FindReplace { find: "not there".into(), replace: "y".into(), replace_all: false },
            &agent_meta(),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("\"not there\" was not found"), "{error}");
    assert_eq!(store.document(&agent, kind).await.unwrap(), before);
    assert_eq!(store.document_versions(&agent, kind).await.unwrap().len(), 1);
}

#[tokio::test]
async fn rollback_writes_a_new_version_with_the_old_content_and_keeps_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agent = default_agent();
    let kind = DocumentKind::LearnedNotes;
    for text in ["one", "two", "three"] {
        store
            .edit_document(&agent, kind, &DocumentEdit::Replace { content: text.into() }, &agent_meta())
            .await
            .unwrap();
    }
    let version = store.rollback_document(&agent, kind, 2, None).await.unwrap();
    assert_eq!(version, 5);
    let current = store.document(&agent, kind).await.unwrap();
    assert_eq!((current.content.as_str(), current.version), ("one", 5));
    let history = store.document_versions(&agent, kind).await.unwrap();
    assert_eq!(history.len(), 5);
    assert_eq!(history[0].author, Author::Rollback);
    assert_eq!(history[0].reason.as_deref(), Some("rollback to version 2"));
    assert_eq!(store.document_version(&agent, kind, 4).await.unwrap().content, "three");
    assert!(matches!(
        store.rollback_document(&agent, kind, 99, None).await,
        Err(StoreError::VersionNotFound { version: 99, .. })
    ));
    let diff = store.document_diff(&agent, kind, 4, 5).await.unwrap();
    assert!(diff.contains("-three") && diff.contains("+one"), "{diff}");
}

#[tokio::test]
async fn history_cannot_be_rewritten_even_by_raw_sql() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    store.close().await;
    let mut connection = sqlx::SqliteConnection::connect_with(
        &sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("wright.db")),
    )
    .await
    .unwrap();
    for statement in ["UPDATE document_versions SET content = 'x'", "DELETE FROM document_versions"] {
        let error = sqlx::query(statement).execute(&mut connection).await.unwrap_err();
        assert!(error.to_string().contains("append-only"), "{error}");
    }
}

#[tokio::test]
async fn fifty_concurrent_appends_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir).await);
    let agent = default_agent();
    let tasks: Vec<_> = (0..50)
        .map(|index| {
            let store = Arc::clone(&store);
            let agent = agent.clone();
            tokio::spawn(async move {
                store
                    .edit_document(
                        &agent,
                        DocumentKind::LearnedNotes,
                        &DocumentEdit::Append { content: format!("note-{index:02}") },
                        &agent_meta(),
                    )
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut versions = Vec::new();
    for task in tasks {
        versions.push(task.await.unwrap());
    }
    versions.sort();
    assert_eq!(versions, (2..=51).collect::<Vec<i64>>());
    let notes = store.document(&agent, DocumentKind::LearnedNotes).await.unwrap();
    assert_eq!(notes.version, 51);
    for index in 0..50 {
        assert!(notes.content.contains(&format!("note-{index:02}")), "note-{index:02} lost");
    }
    assert_eq!(notes.content.lines().count(), 50);
}

#[tokio::test]
async fn state_round_trips_any_json_and_lists_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agent = default_agent();
    let values = [
        json!(null),
        json!(true),
        json!(1.5),
        json!("text"),
        json!([1, {"a": 2}]),
        json!({"nested": {"deep": [null]}}),
    ];
    for (index, value) in values.iter().enumerate() {
        store.set_state(&agent, &format!("k{index}"), value).await.unwrap();
        assert_eq!(store.get_state(&agent, &format!("k{index}")).await.unwrap().as_ref(), Some(value));
    }
    assert_eq!(store.get_state(&agent, "absent").await.unwrap(), None);
    store.set_state(&agent, "user%name", &json!(1)).await.unwrap();
    store.set_state(&agent, "user_id", &json!(2)).await.unwrap();
    store.set_state(&agent, "userxname", &json!(3)).await.unwrap();
    assert_eq!(store.list_state_keys(&agent, Some("user%")).await.unwrap(), ["user%name"]);
    assert_eq!(store.list_state_keys(&agent, Some("user")).await.unwrap().len(), 3);
    assert_eq!(store.list_state_keys(&agent, None).await.unwrap().len(), 9);
    assert!(store.delete_state(&agent, "k0").await.unwrap());
    assert!(!store.delete_state(&agent, "k0").await.unwrap());
}

#[tokio::test]
async fn state_limits_give_clear_errors_and_keep_the_old_value() {
    let dir = tempfile::tempdir().unwrap();
    let limits = StateLimits { max_key_bytes: 8, max_value_bytes: 100, max_total_bytes: 250 };
    let store = Store::open(&dir.path().join("wright.db"), limits).await.unwrap();
    let agent = default_agent();
    let error = store.set_state(&agent, "123456789", &json!(1)).await.unwrap_err();
    assert_eq!(error.to_string(), "state key is 9 bytes; the limit is 8 bytes");
    store.set_state(&agent, "big", &json!("small")).await.unwrap();
    let error = store.set_state(&agent, "big", &json!("x".repeat(120))).await.unwrap_err();
    assert!(error.to_string().contains("the limit is 100 bytes per value"), "{error}");
    assert_eq!(store.get_state(&agent, "big").await.unwrap(), Some(json!("small")));
    store.set_state(&agent, "a", &json!("x".repeat(90))).await.unwrap();
    store.set_state(&agent, "b", &json!("x".repeat(90))).await.unwrap();
    let error = store.set_state(&agent, "c", &json!("x".repeat(90))).await.unwrap_err();
    assert!(error.to_string().contains("the limit is 250 bytes per agent"), "{error}");
    // Replacing a value counts the new size, not old + new.
    store.set_state(&agent, "a", &json!("y".repeat(90))).await.unwrap();
    let unknown = AgentId::parse("nobody").unwrap();
    assert!(matches!(store.set_state(&unknown, "k", &json!(1)).await, Err(StoreError::AgentNotFound(_))));
}

#[tokio::test]
async fn executions_are_recorded_and_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let agent = default_agent();
    let record = |name: &str, outcome: Result<serde_json::Value, (String, String)>| ExecutionRecord {
        agent: agent.clone(),
        tool_name: name.into(),
        tool_kind: "builtin",
        tool_version: None,
        caller: "cli".into(),
        conversation_id: None,
        tool_call_id: None,
        args: json!({"key": "k"}),
        outcome,
        decided_by: None,
        duration_us: 42,
        outside_origin: None,
    };
    store.record_execution(&record("get_state", Ok(json!({"value": null})))).await.unwrap();
    store.record_execution(&record("get_state", Err(("boom".into(), "validation".into())))).await.unwrap();
    store.record_execution(&record("set_state", Ok(json!({"ok": true})))).await.unwrap();
    let all = store.list_executions(&agent, &ExecutionFilter::default()).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].tool_name, "set_state");
    let failures =
        store.list_executions(&agent, &ExecutionFilter { success: Some(false), ..Default::default() }).await.unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].error.as_deref(), Some("boom"));
    assert_eq!(failures[0].error_category.as_deref(), Some("validation"));
    assert_eq!(failures[0].args, json!({"key": "k"}));
    let by_tool = store
        .list_executions(&agent, &ExecutionFilter { tool_name: Some("get_state".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(by_tool.len(), 2);
    let agent_tool = ExecutionRecord { tool_kind: "agent", tool_version: Some(3), ..record("shout", Ok(json!("HI"))) };
    store.record_execution(&agent_tool).await.unwrap();
    let latest = store.list_executions(&agent, &ExecutionFilter::default()).await.unwrap();
    assert_eq!((latest[0].tool_version, latest[1].tool_version), (Some(3), None));
    // A result of outside content keeps its origin in the log.
    let page = ExecutionRecord { outside_origin: Some("example.com".into()), ..record("fetch_url", Ok(json!({}))) };
    store.record_execution(&page).await.unwrap();
    let latest = store.list_executions(&agent, &ExecutionFilter::default()).await.unwrap();
    assert_eq!((latest[0].outside_origin.as_deref(), latest[1].outside_origin.as_deref()), (Some("example.com"), None));
}

mod conversations {
    use super::*;
    use wright_core::{ConversationStatus, EventBody, EventKind, NewEvent, Notice, PendingKind, Unfinished};
    use wright_store::{AnswerResult, Answered, Claim, Finished, Lease, RunEnd};

    fn user(text: &str) -> NewEvent {
        NewEvent::new(text, EventBody::User { text: text.into(), component: None })
    }

    fn call(id: &str, name: &str) -> NewEvent {
        NewEvent::new(
            name,
            EventBody::ToolCall { id: id.into(), name: name.into(), arguments: json!({}), provider: json!(null) },
        )
    }

    fn lease(owner: &str) -> Lease<'_> {
        Lease { owner, seconds: 60 }
    }

    #[tokio::test]
    async fn events_append_in_order_and_reload_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let conversation = store.create_conversation(&default_agent(), "c1", "Hello").await.unwrap();
        assert_eq!(conversation.status, ConversationStatus::Idle);
        let first = store.append_events("c1", &[user("hi")]).await.unwrap();
        assert_eq!(first[0].event.seq, 1);
        let more = store
            .append_events(
                "c1",
                &[call("t1", "get_state"), wright_store::tool_result_event("t1", "get_state", json!({}), true)],
            )
            .await
            .unwrap();
        assert_eq!(more.iter().map(|stored| stored.event.seq).collect::<Vec<_>>(), [2, 3]);
        store.close().await;
        let store = open(&dir).await;
        let events = store.events_after("c1", 1).await.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event.kind(), EventKind::ToolCall);
        assert!(matches!(&events[1].event.body, EventBody::ToolResult { tool_call_id, .. } if tool_call_id == "t1"));
        assert!(matches!(store.append_events("missing", &[user("x")]).await, Err(StoreError::ConversationNotFound(_))));
        assert_eq!(store.list_conversations(&default_agent()).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_batch_of_events_lands_whole_numbered_in_order_and_exactly_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(open(&dir).await);
        store.create_conversation(&default_agent(), "c1", "Batch").await.unwrap();
        let awkward = "quotes \" and \\ backslash, ünïcode ✓ 🚀, a NUL-free $[0] path, ' and --";
        let batch: Vec<NewEvent> = (0..5)
            .map(|index| {
                let arguments =
                    json!({"index": index, "nested": {"text": awkward, "list": [1, null, true]}, "big": 1u64 << 60});
                let body = if index == 0 {
                    EventBody::Assistant { text: awkward.into(), provider: arguments }
                } else {
                    EventBody::ToolCall {
                        id: format!("c{index}"),
                        name: awkward.into(),
                        arguments,
                        provider: json!(null),
                    }
                };
                NewEvent::new(format!("{awkward} #{index}"), body)
            })
            .collect();
        let stored = store.append_events("c1", &batch).await.unwrap();
        assert_eq!(stored.iter().map(|event| event.event.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        let reloaded = store.events_after("c1", 0).await.unwrap();
        for (given, event) in batch.iter().zip(&reloaded) {
            assert_eq!((&event.event.content, &event.event.body), (&given.content, &given.body));
        }
        assert_eq!(stored, reloaded);
        // Concurrent batches interleave as wholes: each keeps its events contiguous.
        let writers = (0..20).map(|writer| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let events: Vec<_> = (0..3).map(|part| user(&format!("w{writer}p{part}"))).collect();
                store.append_events("c1", &events).await.unwrap()
            })
        });
        for writer in writers {
            let seqs: Vec<i64> = writer.await.unwrap().iter().map(|event| event.event.seq).collect();
            assert_eq!(seqs, [seqs[0], seqs[0] + 1, seqs[0] + 2]);
        }
        assert_eq!(store.events_after("c1", 0).await.unwrap().len(), 5 + 60);
        assert!(matches!(store.append_events("missing", &batch).await, Err(StoreError::ConversationNotFound(_))));
    }

    #[tokio::test]
    async fn a_pending_call_is_answered_exactly_once_and_the_last_answer_claims_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(open(&dir).await);
        store.create_conversation(&default_agent(), "c1", "t").await.unwrap();
        store.append_events("c1", &[user("hi"), call("call-1", "ask_user")]).await.unwrap();
        store
            .create_pending_call(
                "c1",
                "call-1",
                "ask_user",
                PendingKind::Question,
                &json!({"question": "?"}),
                &json!(null),
            )
            .await
            .unwrap();
        assert_eq!(store.pending_calls("c1").await.unwrap().len(), 1);
        let racers: Vec<_> = (0..10)
            .map(|index| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let owner = format!("tab-{index}");
                    store
                        .answer_pending_call(
                            "c1",
                            "call-1",
                            &json!({"answer": index}),
                            AnswerResult::TheAnswer,
                            lease(&owner),
                        )
                        .await
                })
            })
            .collect();
        let mut wins = 0;
        for racer in racers {
            match racer.await.unwrap() {
                Ok((answered, events)) => {
                    wins += 1;
                    assert_eq!(answered, Answered::Resume);
                    assert_eq!(events.len(), 1, "the result is stored with the answer");
                }
                Err(error) => assert!(matches!(error, StoreError::AlreadyAnswered(_)), "{error}"),
            }
        }
        assert_eq!(wins, 1);
        assert!(store.pending_calls("c1").await.unwrap().is_empty());
        assert_eq!(store.conversation("c1").await.unwrap().status, ConversationStatus::Running);
        assert!(matches!(
            store.answer_pending_call("c1", "nope", &json!(null), AnswerResult::TheAnswer, lease("x")).await,
            Err(StoreError::PendingNotFound(_))
        ));
    }

    #[tokio::test]
    async fn one_owner_at_a_time_and_a_dead_owners_run_is_closed_with_every_call_answered() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        store.create_conversation(&default_agent(), "c1", "t").await.unwrap();
        let claim = store.start_run_with_message("c1", lease("server"), &user("go")).await.unwrap();
        assert!(matches!(claim, Claim::Claimed(ref events) if events.len() == 1));
        assert_eq!(
            store.start_run_with_message("c1", lease("cli"), &user("me too")).await.unwrap(),
            Claim::Busy { owner: "server".into() },
            "a second owner is refused and its message is not stored"
        );
        // The server dies mid-turn: two parallel calls, one answered, one parked.
        store
            .append_events(
                "c1",
                &[
                    NewEvent::new("", EventBody::Assistant { text: String::new(), provider: json!(null) }),
                    call("a", "set_state"),
                    call("b", "ask_user"),
                    wright_store::tool_result_event("a", "set_state", json!({"ok": true}), true),
                ],
            )
            .await
            .unwrap();
        store
            .create_pending_call("c1", "b", "ask_user", PendingKind::Question, &json!({}), &json!(null))
            .await
            .unwrap();
        assert!(matches!(
            store
                .finish_run(
                    "c1",
                    "cli",
                    &RunEnd { closing: vec![], status: ConversationStatus::Idle, close_open_calls: None }
                )
                .await,
            Err(StoreError::RunNotOwned(_))
        ));
        let end = RunEnd {
            closing: vec![NewEvent::notice(Notice::Interrupted)],
            status: ConversationStatus::Idle,
            close_open_calls: Some(Unfinished::Interrupted),
        };
        let Finished::Ended(events) = store.finish_run("c1", "server", &end).await.unwrap() else { panic!() };
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[0].event.body,
            EventBody::ToolResult { tool_call_id, success: false, output, .. } if tool_call_id == "b" && output["category"] == "interrupted"));
        assert!(matches!(events[1].event.body, EventBody::Notice(Notice::Interrupted)));
        assert!(store.pending_calls("c1").await.unwrap().is_empty(), "the parked call was closed too");
        assert_eq!(store.conversation("c1").await.unwrap().status, ConversationStatus::Idle);
        assert!(store.claimed_runs().await.unwrap().is_empty());
        // A run that parks after its call was answered during the turn goes on.
        let Claim::Claimed(_) = store.start_run_with_message("c1", lease("cli"), &user("again")).await.unwrap() else {
            panic!()
        };
        store.append_events("c1", &[call("q", "ask_user")]).await.unwrap();
        store
            .create_pending_call("c1", "q", "ask_user", PendingKind::Question, &json!({}), &json!(null))
            .await
            .unwrap();
        let (answered, _) = store
            .answer_pending_call("c1", "q", &json!({"answer": "x"}), AnswerResult::TheAnswer, lease("tab"))
            .await
            .unwrap();
        assert_eq!(answered, Answered::RunGoing { owner: "cli".into() });
        let park = RunEnd { closing: vec![], status: ConversationStatus::Waiting, close_open_calls: None };
        assert!(matches!(store.finish_run("c1", "cli", &park).await.unwrap(), Finished::Continue(_)));
        assert_eq!(store.conversation("c1").await.unwrap().status, ConversationStatus::Running);
    }
}

mod agent_tools {
    use super::*;
    use wright_store::{ToolContent, ToolPatch};

    fn content(code: &str) -> ToolContent {
        ToolContent {
            description: "adds".into(),
            parameter_schema: json!({"type": "object"}),
            code: code.into(),
            limits: json!(null),
        }
    }

    #[tokio::test]
    async fn tools_are_versioned_rolled_back_and_deleted_with_history_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let agent = default_agent();
        let created =
            store.create_agent_tool(&agent, "add", &content("return 1"), true, None, &agent_meta()).await.unwrap();
        assert_eq!((created.version, created.enabled), (1, true));
        assert!(matches!(
            store.create_agent_tool(&agent, "add", &content("x"), true, None, &agent_meta()).await,
            Err(StoreError::ItemExists { .. })
        ));
        let patch = ToolPatch { code: Some("return 2".into()), ..Default::default() };
        let updated = store.update_agent_tool(&agent, "add", &patch, None, &agent_meta()).await.unwrap();
        assert_eq!((updated.version, updated.code.as_str(), updated.description.as_str()), (2, "return 2", "adds"));
        let rolled = store.rollback_agent_tool(&agent, "add", 1, None).await.unwrap();
        assert_eq!((rolled.version, rolled.code.as_str()), (3, "return 1"));
        let history = store.agent_tool_versions(&agent, "add").await.unwrap();
        assert_eq!(history.iter().map(|version| version.version).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(history[0].author, Author::Rollback);
        let disabled = store.set_agent_tool_enabled(&agent, "add", false).await.unwrap();
        assert!(!disabled.enabled);
        assert!(store.list_agent_tools(&agent, false).await.unwrap().is_empty());
        assert_eq!(store.list_agent_tools(&agent, true).await.unwrap().len(), 1);
        assert!(store.delete_agent_tool(&agent, "add").await.unwrap());
        assert!(!store.delete_agent_tool(&agent, "add").await.unwrap());
        assert!(store.agent_tool(&agent, "add").await.unwrap().is_none());
        let again =
            store.create_agent_tool(&agent, "add", &content("return 3"), true, None, &agent_meta()).await.unwrap();
        assert_eq!(again.version, 1);
        assert_ne!(again.id, created.id);
    }
}

#[tokio::test]
async fn tool_settings_are_unset_until_written_then_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    assert_eq!(store.tool_settings(&default_agent()).await.unwrap(), None);
    let mut settings = wright_core::ToolSettings { toolsets: vec![wright_core::Toolset::State], ..Default::default() };
    store.set_tool_settings(&default_agent(), &settings).await.unwrap();
    settings.loading = wright_core::ToolLoading::All;
    store.set_tool_settings(&default_agent(), &settings).await.unwrap();
    assert_eq!(store.tool_settings(&default_agent()).await.unwrap(), Some(settings.clone()));
    let missing = AgentId::parse("nobody").unwrap();
    assert!(matches!(store.set_tool_settings(&missing, &settings).await, Err(StoreError::AgentNotFound(_))));
}

mod telegram_outbox {
    use super::*;

    /// A row is pending exactly while Telegram does not show what it says; a later write of the
    /// same slot supersedes one never sent; an answer for an older text leaves the row pending.
    #[tokio::test]
    async fn a_later_write_supersedes_and_only_differences_are_pending() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        store.outbox_put(7, "answer:a:0", "Hel", None, None).await.unwrap();
        store.outbox_put(7, "answer:a:0", "Hello", None, None).await.unwrap();
        store.outbox_put(7, "question:1", "Which?", Some("[[1]]"), Some("Which? (reply)")).await.unwrap();
        let pending = store.outbox_pending(7).await.unwrap();
        assert_eq!(pending.iter().map(|item| item.text.as_str()).collect::<Vec<_>>(), ["Hello", "Which?"]);
        assert!(store.outbox_pending(8).await.unwrap().is_empty());
        assert_eq!(store.outbox_chats().await.unwrap(), [7]);

        // Sent, then changed before the answer was recorded: still pending, with the new text.
        let answer = &pending[0];
        store.outbox_put(7, "answer:a:0", "Hello world", None, None).await.unwrap();
        store.outbox_sent(answer.id, 41, "Hello", None).await.unwrap();
        let again = store.outbox_pending(7).await.unwrap();
        assert_eq!((again[0].text.as_str(), again[0].message_id), ("Hello world", Some(41)));
        store.outbox_sent(answer.id, 41, "Hello world", None).await.unwrap();
        // The same text again changes nothing: no edit Telegram would call "not modified".
        store.outbox_put(7, "answer:a:0", "Hello world", None, None).await.unwrap();
        assert_eq!(store.outbox_pending(7).await.unwrap().len(), 1, "only the question is left");

        // The keyboard refused: the fallback shows without buttons; removing buttons later is nothing.
        let question = store.outbox_pending(7).await.unwrap().remove(0);
        store.outbox_without_keyboard(question.id).await.unwrap();
        let fallback = store.outbox_pending(7).await.unwrap().remove(0);
        assert_eq!((fallback.text.as_str(), fallback.keyboard.as_deref()), ("Which? (reply)", None));
        store.outbox_sent(fallback.id, 42, "Which? (reply)", None).await.unwrap();
        store.outbox_set_keyboard(7, "question:1", None).await.unwrap();
        assert!(store.outbox_pending(7).await.unwrap().is_empty());

        // A message that can no longer be edited is sent anew; settled rows are pruned.
        store.outbox_forget_message(fallback.id).await.unwrap();
        assert_eq!(store.outbox_pending(7).await.unwrap()[0].message_id, None);
        store.outbox_failed(fallback.id, "Forbidden: bot was blocked by the user").await.unwrap();
        assert!(store.outbox_chats().await.unwrap().is_empty());
        assert_eq!(store.outbox_prune(i64::MAX).await.unwrap(), 2);
    }
}

fn skill_md(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: A skill for tests.\n---\n{body}")
}

/// Issue 31: a skill's caps have defaults and are configurable (`[limits]`); each refuses the
/// write before anything is stored, and says which knob to turn.
#[tokio::test]
async fn skill_limits_refuse_a_write_and_name_their_knob() {
    use wright_store::{SkillChange, TextLimits};
    let dir = tempfile::tempdir().unwrap();
    let defaults = TextLimits::default();
    assert_eq!(
        (defaults.max_skill_bytes, defaults.max_skill_files, defaults.max_skill_folder_bytes, defaults.max_skills),
        (64 * 1024, 32, 512 * 1024, 200)
    );
    let limits = TextLimits {
        max_skill_bytes: 200,
        max_skill_files: 1,
        max_skill_folder_bytes: 220,
        max_skills: 1,
        ..TextLimits::default()
    };
    let store = open(&dir).await.with_text_limits(limits);
    let agent = default_agent();
    let write = |name: &str, body: &str| SkillChange::Write { content: skill_md(name, body), resources: None };
    let refused = |error: StoreError, knob: &str| {
        assert!(matches!(error, StoreError::LimitExceeded(_)), "{error:?}");
        assert!(error.to_string().contains(knob), "{error}");
    };
    refused(
        store.change_skill(&agent, "big", write("big", &"x".repeat(200)), &agent_meta()).await.unwrap_err(),
        "max_skill_bytes",
    );
    assert_eq!(store.change_skill(&agent, "one", write("one", "Steps."), &agent_meta()).await.unwrap(), 1);
    refused(store.change_skill(&agent, "two", write("two", "Steps."), &agent_meta()).await.unwrap_err(), "max_skills");
    let file = |path: &str, size: usize| SkillChange::Resource { path: path.into(), content: Some("y".repeat(size)) };
    assert_eq!(store.change_skill(&agent, "one", file("a.md", 150), &agent_meta()).await.unwrap(), 2);
    refused(store.change_skill(&agent, "one", file("b.md", 10), &agent_meta()).await.unwrap_err(), "max_skill_files");
    refused(
        store.change_skill(&agent, "one", file("a.md", 199), &agent_meta()).await.unwrap_err(),
        "max_skill_folder_bytes",
    );
    // Nothing refused was written; a name the layout forbids and a front matter naming
    // another skill are refused too.
    assert_eq!(store.skill_versions(&agent, "one").await.unwrap().len(), 2);
    assert!(store.change_skill(&agent, "Bad_Name", write("bad", "x"), &agent_meta()).await.is_err());
    let renamed = store.change_skill(&agent, "one", write("other", "x"), &agent_meta()).await.unwrap_err();
    assert!(renamed.to_string().contains("must stay the folder's name"), "{renamed}");
    // After a delete the agent has room again, and the deleted one can come back by rollback
    // only while there is room.
    assert_eq!(store.change_skill(&agent, "one", SkillChange::Delete, &agent_meta()).await.unwrap(), 3);
    assert_eq!(store.change_skill(&agent, "two", write("two", "Steps."), &agent_meta()).await.unwrap(), 1);
    assert!(store.skill(&agent, "one").await.is_err());
}
