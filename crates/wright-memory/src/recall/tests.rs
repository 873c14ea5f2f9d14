//! Recall against a real database file and a fixed clock: ranking, filters, fusion's inputs.

use std::sync::Arc;

use wright_core::{AgentId, FixedClock, MemoryLayer};
use wright_store::{MemoryActor, MemoryConfig, MemoryFilter, NewMemory, StateLimits, Store};

use crate::Memories;

const T0: i64 = 1_790_000_000_000;
const DAY_MS: i64 = 86_400_000;

async fn open(config: MemoryConfig) -> (tempfile::TempDir, Memories, Arc<FixedClock>) {
    let directory = tempfile::tempdir().unwrap();
    let clock = Arc::new(FixedClock::at(T0));
    let store = Store::open(&directory.path().join("wright.db"), StateLimits::default())
        .await
        .unwrap()
        .with_memory(config, clock.clone());
    (directory, Memories::new(store), clock)
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
        let found = store.recall(&agent(), query, &active(), 10).await.unwrap();
        assert!(!found.is_empty(), "nothing found for {query:?}");
        assert_eq!(found[0].id, ids[*expected], "{query:?} found first {:?}", found[0].content);
        let relevances: Vec<f64> = found.iter().map(|memory| memory.relevance.unwrap()).collect();
        assert!(relevances.windows(2).all(|pair| pair[0] >= pair[1]), "{relevances:?}");
        assert!(relevances.iter().all(|relevance| (0.0..=1.0).contains(relevance)));
    }
    // Layer and limit filters; FTS syntax in a query is text.
    let mid = MemoryFilter { layer: Some(MemoryLayer::Mid), ..active() };
    let found = store.recall(&agent(), "lisbon", &mid, 10).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![ids[6]]);
    assert_eq!(store.recall(&agent(), "auth", &active(), 1).await.unwrap().len(), 1);
    assert!(store.recall(&agent(), "\"*) OR NEAR(", &active(), 10).await.unwrap().is_empty());
    assert!(store.recall(&agent(), "  ", &active(), 10).await.unwrap().is_empty());
    // Session memories of another session are not recalled there.
    let elsewhere = MemoryFilter { session_id: Some(i64::MAX), ..active() };
    assert!(store.recall(&agent(), "pull request", &elsewhere, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn recall_prefers_the_more_lasting_and_the_more_recent_of_equal_matches() {
    let (_directory, store, clock) = open(MemoryConfig::default()).await;
    let actor = MemoryActor::agent(None);
    let short = store.store_memory(&agent(), &new(MemoryLayer::Short, "note", "tea with lemon"), &actor).await.unwrap();
    let long = store.store_memory(&agent(), &new(MemoryLayer::Long, "note", "tea with honey"), &actor).await.unwrap();
    let found = store.recall(&agent(), "tea", &active(), 10).await.unwrap();
    assert_eq!(found[0].id, long.id);
    assert_eq!(found[1].id, short.id);
    // An old long-term memory against a fresh one of the same layer: the fresh one wins.
    clock.advance_ms(200 * DAY_MS);
    let fresh = store.store_memory(&agent(), &new(MemoryLayer::Long, "note", "tea with milk"), &actor).await.unwrap();
    let found = store.recall(&agent(), "tea", &active(), 10).await.unwrap();
    assert_eq!(found[0].id, fresh.id);
}

/// Regression: recall ranks inside the index and filters after; matches that rank higher but
/// belong to another agent (or layer) must not crowd out the one this agent has.
#[tokio::test]
async fn a_filtered_recall_finds_a_low_ranked_match_behind_many_filtered_out() {
    let (_directory, store, _clock) = open(MemoryConfig::default()).await;
    let other = AgentId::parse("other").unwrap();
    store.store().create_agent(&other, Some("Other")).await.unwrap();
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
    let found = store.recall(&agent(), "tea", &active(), 10).await.unwrap();
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
    let found = store.recall(&agent(), "apple", &active(), 5).await.unwrap();
    assert_eq!(found.len(), 5);
    assert_eq!(found[0].id, best.id);
    let long_only = MemoryFilter { layer: Some(MemoryLayer::Long), ..active() };
    let found = store.recall(&agent(), "apple", &long_only, 5).await.unwrap();
    assert_eq!(found.iter().map(|memory| memory.id).collect::<Vec<_>>(), vec![best.id]);
    // Only short memories beyond the recent window: the filter falls back to every match.
    let short_only = MemoryFilter { layer: Some(MemoryLayer::Short), ..active() };
    assert_eq!(store.recall(&agent(), "apple", &short_only, 100).await.unwrap().len(), 100);
}
