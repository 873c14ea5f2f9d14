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
    // The index follows the edit.
    let found = store.recall_memories(&agent(), "porto", &active(), 10).await.unwrap();
    assert_eq!(found.len(), 1);
    assert!(store.recall_memories(&agent(), "lisbon", &active(), 10).await.unwrap().is_empty());

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

/// A fixed corpus and, for each query, the memory that must come first.
#[tokio::test]
async fn recall_puts_the_right_memory_first_on_a_fixed_corpus() {
    // The corpus is written a day apart; the session memory must outlive that.
    let (_directory, store, clock) = open(MemoryConfig { session_ttl_days: Some(30), ..MemoryConfig::default() }).await;
    let actor = MemoryActor::agent(Some("c1".into()));
    let corpus = [
        (MemoryLayer::Long, "fact", "Works at Acme Corp as a backend engineer"),
        (MemoryLayer::Long, "relationship", "Married to Sam, who is a nurse"),
        (MemoryLayer::Long, "preference", "Prefers dark mode in every editor"),
        (MemoryLayer::Long, "preference", "Drinks coffee black, no sugar"),
        (MemoryLayer::Mid, "goal", "Learning Rust to rewrite the billing service"),
        (MemoryLayer::Mid, "project", "Launching the mobile app in Q1"),
        (MemoryLayer::Mid, "plan", "Saving for a house in Lisbon"),
        (MemoryLayer::Short, "summary", "Was debugging an auth issue with expired tokens"),
        (MemoryLayer::Short, "summary", "Discussed vacation plans for Lisbon in June"),
        (MemoryLayer::Short, "summary", "Mentioned the editor theme looked washed out"),
        (MemoryLayer::Session, "task", "Working on the pull request for the auth refactor"),
    ];
    let mut ids = Vec::new();
    for (layer, category, content) in corpus {
        ids.push(store.store_memory(&agent(), &new(layer, category, content), &actor).await.unwrap().id);
        clock.advance_ms(DAY_MS);
    }
    let cases: &[(&str, usize)] = &[
        ("what do they work as, engineer?", 0),
        ("who is Sam", 1),
        ("dark mode", 2),
        ("coffee", 3),
        ("rust", 4),
        ("mobile app launch", 5),
        ("house", 6),
        // A fact about Lisbon in the long-lived plan outranks the passing remark only when the
        // words fit it as well; here the vacation words decide.
        ("vacation in Lisbon", 8),
        ("expired tokens", 7),
        ("relationship", 1),
        ("pull request", 10),
    ];
    for (query, expected) in cases {
        let found = store.recall_memories(&agent(), query, &active(), 10).await.unwrap();
        assert!(!found.is_empty(), "nothing found for {query:?}");
        assert_eq!(found[0].id, ids[*expected], "{query:?} found first {:?}", found[0].content);
        let relevances: Vec<f64> = found.iter().map(|memory| memory.relevance.unwrap()).collect();
        assert!(relevances.windows(2).all(|pair| pair[0] >= pair[1]), "{relevances:?}");
        assert!(relevances.iter().all(|relevance| (0.0..=1.0).contains(relevance)));
    }
    // Layer and limit filters; FTS syntax in a query is text.
    let mid = MemoryFilter { layer: Some(MemoryLayer::Mid), ..active() };
    let found = store.recall_memories(&agent(), "lisbon", &mid, 10).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![ids[6]]);
    assert_eq!(store.recall_memories(&agent(), "auth", &active(), 1).await.unwrap().len(), 1);
    assert!(store.recall_memories(&agent(), "\"*) OR NEAR(", &active(), 10).await.unwrap().is_empty());
    assert!(store.recall_memories(&agent(), "  ", &active(), 10).await.unwrap().is_empty());
    // Session memories of another session are not recalled there.
    let elsewhere = MemoryFilter { session_id: Some(i64::MAX), ..active() };
    assert!(store.recall_memories(&agent(), "pull request", &elsewhere, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn recall_prefers_the_more_lasting_and_the_more_recent_of_equal_matches() {
    let (_directory, store, clock) = open(MemoryConfig::default()).await;
    let actor = MemoryActor::agent(None);
    let short = store.store_memory(&agent(), &new(MemoryLayer::Short, "note", "tea with lemon"), &actor).await.unwrap();
    let long = store.store_memory(&agent(), &new(MemoryLayer::Long, "note", "tea with honey"), &actor).await.unwrap();
    let found = store.recall_memories(&agent(), "tea", &active(), 10).await.unwrap();
    assert_eq!(found[0].id, long.id);
    assert_eq!(found[1].id, short.id);
    // An old long-term memory against a fresh one of the same layer: the fresh one wins.
    clock.advance_ms(200 * DAY_MS);
    let fresh = store.store_memory(&agent(), &new(MemoryLayer::Long, "note", "tea with milk"), &actor).await.unwrap();
    let found = store.recall_memories(&agent(), "tea", &active(), 10).await.unwrap();
    assert_eq!(found[0].id, fresh.id);
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

/// Regression: recall ranks inside the index and filters after; matches that rank higher but
/// belong to another agent (or layer) must not crowd out the one this agent has.
#[tokio::test]
async fn a_filtered_recall_finds_a_low_ranked_match_behind_many_filtered_out() {
    let (_directory, store, _clock) = open(MemoryConfig::default()).await;
    let other = AgentId::parse("other").unwrap();
    store.create_agent(&other, Some("Other")).await.unwrap();
    // More than the first scan (640 for a limit of 10) ranks before ours.
    for _ in 0..700 {
        store
            .store_memory(&other, &new(MemoryLayer::Long, "drink", "tea tea tea"), &MemoryActor::agent(None))
            .await
            .unwrap();
    }
    let mine = store
        .store_memory(
            &agent(),
            &new(MemoryLayer::Long, "food", "tea with biscuits and a long story besides"),
            &MemoryActor::agent(None),
        )
        .await
        .unwrap();
    let found = store.recall_memories(&agent(), "tea", &active(), 10).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![mine.id]);
}

/// A word in more memories than `rank_all_below` scores only the most recent matches; the
/// answer is still ranked, limited and filtered.
#[tokio::test]
async fn a_common_word_is_ranked_among_the_most_recent_matches() {
    let config = MemoryConfig { rank_all_below: 10, ..MemoryConfig::default() };
    let (_directory, store, clock) = open(config).await;
    let actor = MemoryActor::agent(None);
    for index in 0..200 {
        let content = format!("apple number {index} with a few more words to make it long");
        store.store_memory(&agent(), &new(MemoryLayer::Short, "note", &content), &actor).await.unwrap();
        clock.advance_ms(1000);
    }
    let best = store.store_memory(&agent(), &new(MemoryLayer::Long, "fact", "apple apple"), &actor).await.unwrap();
    let found = store.recall_memories(&agent(), "apple", &active(), 5).await.unwrap();
    assert_eq!(found.len(), 5);
    assert_eq!(found[0].id, best.id);
    let long_only = MemoryFilter { layer: Some(MemoryLayer::Long), ..active() };
    let found = store.recall_memories(&agent(), "apple", &long_only, 5).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![best.id]);
    // Only short memories beyond the recent window: the filter falls back to every match.
    let short_only = MemoryFilter { layer: Some(MemoryLayer::Short), ..active() };
    assert_eq!(store.recall_memories(&agent(), "apple", &short_only, 100).await.unwrap().len(), 100);
}
