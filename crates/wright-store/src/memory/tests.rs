//! Memory in the store, against a real database file and a fixed clock.

use std::sync::Arc;

use wright_core::{AgentId, FixedClock, MemoryAction, MemoryAuthor, MemoryLayer};

use super::*;
use crate::{StateLimits, Store};

const T0: i64 = 1_790_000_000_000;

async fn open(config: MemoryConfig) -> (tempfile::TempDir, Store, Arc<FixedClock>) {
    let directory = tempfile::tempdir().unwrap();
    let clock = Arc::new(FixedClock::at(T0));
    let store = Store::open(&directory.path().join("wright.db"), StateLimits::default())
        .await
        .unwrap()
        .with_memory(config, clock.clone());
    (directory, store, clock)
}

fn new(layer: MemoryLayer, category: &str, content: &str) -> NewMemory {
    NewMemory { layer, category: Some(category.into()), certainty: None, content: content.into() }
}

fn agent() -> AgentId {
    AgentId::default_agent()
}

fn active() -> MemoryFilter {
    MemoryFilter::default()
}

async fn active_ids(store: &Store) -> Vec<i64> {
    let mut ids: Vec<i64> =
        store.list_memories(&agent(), &active(), 100).await.unwrap().into_iter().map(|memory| memory.id).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn fts5_is_compiled_into_the_bundled_sqlite() {
    let (_directory, store, _clock) = open(MemoryConfig::default()).await;
    let (enabled,): (i64,) =
        sqlx::query_as("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetch_one(&store.reader).await.unwrap();
    assert_eq!(enabled, 1);
}

#[tokio::test]
async fn each_layer_expires_after_its_configured_lifetime_and_is_archived_not_deleted() {
    let config = MemoryConfig {
        long_ttl_days: None,
        mid_ttl_days: Some(90),
        short_ttl_days: Some(14),
        session_ttl_days: Some(1),
        ..MemoryConfig::default()
    };
    let (_directory, store, clock) = open(config).await;
    let actor = MemoryActor::agent(Some("c1".into()));
    let long = store.store_memory(&agent(), &new(MemoryLayer::Long, "fact", "Works at Acme"), &actor).await.unwrap();
    let mid = store.store_memory(&agent(), &new(MemoryLayer::Mid, "goal", "Learning Rust"), &actor).await.unwrap();
    let short =
        store.store_memory(&agent(), &new(MemoryLayer::Short, "summary", "Debugged auth"), &actor).await.unwrap();
    let session = store.store_memory(&agent(), &new(MemoryLayer::Session, "task", "On the PR"), &actor).await.unwrap();
    assert_eq!(long.expires_at, None);
    assert_eq!(mid.expires_at, Some(T0 + 90 * DAY_MS));
    // A session memory belongs to the agent's open session.
    let open = store.current_session(&agent()).await.unwrap();
    assert_eq!(session.session_id, Some(open.id));

    let day = DAY_MS;
    // Just before the session bound: all four active, nothing to sweep.
    clock.set(T0 + day - 1);
    assert_eq!(store.expire_memories().await.unwrap(), 0);
    assert_eq!(active_ids(&store).await, vec![long.id, mid.id, short.id, session.id]);
    // At each expiry the memory leaves the active set even before a sweep runs ...
    clock.set(T0 + day);
    assert_eq!(active_ids(&store).await, vec![long.id, mid.id, short.id]);
    assert_eq!(store.expire_memories().await.unwrap(), 1);
    clock.set(T0 + 14 * day);
    assert_eq!(store.expire_memories().await.unwrap(), 1);
    assert_eq!(active_ids(&store).await, vec![long.id, mid.id]);
    clock.set(T0 + 90 * day);
    assert_eq!(store.expire_memories().await.unwrap(), 1);
    clock.set(T0 + 10_000 * day);
    assert_eq!(store.expire_memories().await.unwrap(), 0);
    assert_eq!(active_ids(&store).await, vec![long.id]);

    // ... and is kept, archived as expired, with a history row by the system.
    let archived = store.list_memories(&agent(), &MemoryFilter { archived: true, ..active() }, 100).await.unwrap();
    assert_eq!(archived.len(), 3);
    assert!(archived.iter().all(|memory| memory.archived_reason == Some(ArchivedReason::Expire)));
    let history = store.memory_history(&agent(), short.id).await.unwrap();
    let actions: Vec<(MemoryAction, MemoryAuthor)> =
        history.iter().map(|change| (change.action, change.author)).collect();
    assert_eq!(actions, vec![(MemoryAction::Store, MemoryAuthor::Agent), (MemoryAction::Expire, MemoryAuthor::System)]);
    assert_eq!(history[0].conversation_id.as_deref(), Some("c1"));
}

#[tokio::test]
async fn a_restored_memory_is_active_again_with_a_fresh_lifetime() {
    let (_directory, store, clock) = open(MemoryConfig::default()).await;
    let short = store
        .store_memory(
            &agent(),
            &new(MemoryLayer::Short, "summary", "Discussed vacation plans"),
            &MemoryActor::agent(None),
        )
        .await
        .unwrap();
    clock.set(T0 + 15 * DAY_MS);
    assert_eq!(store.expire_memories().await.unwrap(), 1);
    assert!(active_ids(&store).await.is_empty());

    let restored = store.restore_memory(&agent(), short.id, &MemoryActor::admin()).await.unwrap();
    assert_eq!(restored.archived_at, None);
    assert_eq!(restored.expires_at, Some(T0 + 29 * DAY_MS));
    assert_eq!(active_ids(&store).await, vec![short.id]);
    assert_eq!(store.expire_memories().await.unwrap(), 0);
    // Restoring what is not archived says so.
    let error = store.restore_memory(&agent(), short.id, &MemoryActor::admin()).await.unwrap_err();
    assert!(error.to_string().contains("not archived"), "{error}");

    // Forget, then restore a forgotten one: its lifetime is unchanged (it had not run out).
    store.forget_memory(&agent(), short.id, &MemoryActor::agent(None)).await.unwrap();
    let error = store.forget_memory(&agent(), short.id, &MemoryActor::agent(None)).await.unwrap_err();
    assert!(error.to_string().contains("already archived (forgotten)"), "{error}");
    let again = store.restore_memory(&agent(), short.id, &MemoryActor::admin()).await.unwrap();
    assert_eq!(again.expires_at, Some(T0 + 29 * DAY_MS));
    let actions: Vec<MemoryAction> =
        store.memory_history(&agent(), short.id).await.unwrap().into_iter().map(|change| change.action).collect();
    assert_eq!(
        actions,
        vec![
            MemoryAction::Store,
            MemoryAction::Expire,
            MemoryAction::Restore,
            MemoryAction::Forget,
            MemoryAction::Restore
        ]
    );
}

#[tokio::test]
async fn edits_are_kept_in_history_and_history_is_append_only() {
    let (_directory, store, clock) = open(MemoryConfig::default()).await;
    let memory = store
        .store_memory(&agent(), &new(MemoryLayer::Short, "plan", "Trip to Lisbon"), &MemoryActor::agent(None))
        .await
        .unwrap();
    clock.advance_ms(1000);
    let patch =
        MemoryPatch { layer: Some(MemoryLayer::Mid), content: Some("Trip to Porto".into()), ..Default::default() };
    let edited = store.edit_memory(&agent(), memory.id, &patch, &MemoryActor::admin()).await.unwrap();
    assert_eq!(edited.content, "Trip to Porto");
    assert_eq!(edited.expires_at, Some(T0 + 1000 + 90 * DAY_MS), "a new layer restarts the lifetime");
    let history = store.memory_history(&agent(), memory.id).await.unwrap();
    assert_eq!(history[1].content, "Trip to Porto");
    assert_eq!(history[1].author, MemoryAuthor::Admin);
    // The full-text index follows the edit.
    let words = |word: &str| vec![word.to_owned()];
    assert_eq!(store.memory_word_matches(&words("porto"), -1).await.unwrap().matches, vec![vec![memory.id]]);
    assert_eq!(store.memory_word_matches(&words("lisbon"), -1).await.unwrap().matches, vec![Vec::<i64>::new()]);

    let update = sqlx::query("UPDATE memory_history SET content = 'x'").execute(&store.writer).await.unwrap_err();
    assert!(update.to_string().contains("append-only"), "{update}");
    let delete = sqlx::query("DELETE FROM memory_history").execute(&store.writer).await.unwrap_err();
    assert!(delete.to_string().contains("append-only"), "{delete}");
}

#[tokio::test]
async fn invalid_memories_are_refused_before_anything_is_written() {
    let config = MemoryConfig { max_content_chars: 10, ..MemoryConfig::default() };
    let (_directory, store, _clock) = open(config).await;
    let actor = MemoryActor::agent(None);
    let long = store.store_memory(&agent(), &new(MemoryLayer::Long, "fact", "x".repeat(11).as_str()), &actor).await;
    assert!(matches!(long, Err(StoreError::LimitExceeded(_))), "{long:?}");
    let blank = store.store_memory(&agent(), &new(MemoryLayer::Long, "fact", "  "), &actor).await;
    assert!(matches!(blank, Err(StoreError::InvalidEdit(_))), "{blank:?}");
    let sure = NewMemory { certainty: Some(1.5), ..new(MemoryLayer::Mid, "goal", "ok") };
    assert!(matches!(store.store_memory(&agent(), &sure, &actor).await, Err(StoreError::InvalidEdit(_))));
    let nobody = AgentId::parse("nobody").unwrap();
    let missing = store.store_memory(&nobody, &new(MemoryLayer::Long, "fact", "ok"), &actor).await;
    assert!(matches!(missing, Err(StoreError::AgentNotFound(_))), "{missing:?}");
    assert!(active_ids(&store).await.is_empty());
}

#[tokio::test]
async fn context_memories_are_long_then_mid_and_stop_at_the_cap() {
    let (_directory, store, clock) = open(MemoryConfig::default()).await;
    let actor = MemoryActor::agent(None);
    let mut long_ids = Vec::new();
    for index in 0..5 {
        let content = format!("long fact {index} {}", "x".repeat(80));
        long_ids
            .push(store.store_memory(&agent(), &new(MemoryLayer::Long, "fact", &content), &actor).await.unwrap().id);
        clock.advance_ms(1);
    }
    let mid = store.store_memory(&agent(), &new(MemoryLayer::Mid, "goal", "a goal"), &actor).await.unwrap();
    store.store_memory(&agent(), &new(MemoryLayer::Short, "summary", "short, never in context"), &actor).await.unwrap();
    let all = store.context_memories(&agent(), 10_000).await.unwrap();
    let ids: Vec<i64> = all.iter().map(|memory| memory.id).collect();
    let mut expected: Vec<i64> = long_ids.iter().rev().copied().collect();
    expected.push(mid.id);
    assert_eq!(ids, expected);
    // Each long memory is about 92 characters: a 200-character cap holds two.
    assert_eq!(store.context_memories(&agent(), 200).await.unwrap().len(), 2);
    // A forgotten or expired mid-term memory leaves the context.
    store.forget_memory(&agent(), mid.id, &actor).await.unwrap();
    assert!(!store.context_memories(&agent(), 10_000).await.unwrap().iter().any(|memory| memory.id == mid.id));
}
