//! Session division with a fixed clock, in a zone with DST.

use std::sync::Arc;

use jiff::Timestamp;
use wright_core::{AgentId, FixedClock, MemoryLayer};

use super::*;
use crate::{MemoryActor, MemoryConfig, MemoryFilter, NewMemory, StateLimits};

fn ms(iso: &str) -> i64 {
    iso.parse::<Timestamp>().unwrap().as_millisecond()
}

fn iso(ms: i64) -> String {
    Timestamp::from_millisecond(ms).unwrap().to_string()
}

fn schedule(auto_divide: AutoDivide, at: &str, zone: &str) -> SessionSchedule {
    SessionConfig { auto_divide, auto_divide_time: at.into(), time_zone: zone.into(), weekly_on: "monday".into() }
        .schedule()
        .unwrap()
}

/// `(started, next start)` in UTC for a schedule.
fn check(schedule: &SessionSchedule, started: &str, expected: Option<&str>) {
    let next = schedule.next_start_after(ms(started)).map(iso);
    assert_eq!(next.as_deref(), expected, "started {started}");
}

#[test]
fn the_local_time_line_names_the_weekday_date_time_and_zone() {
    let berlin = schedule(AutoDivide::Daily, "00:00", "Europe/Berlin");
    assert_eq!(berlin.time_zone_name(), "Europe/Berlin");
    assert_eq!(
        berlin.local_time_line(ms("2026-11-27T15:04:00Z")),
        "Friday 2026-11-27 16:04, time zone Europe/Berlin (UTC+01:00)"
    );
    // Summer time, and a date that is already the next day locally.
    assert_eq!(
        berlin.local_time_line(ms("2026-07-03T22:30:00Z")),
        "Saturday 2026-07-04 00:30, time zone Europe/Berlin (UTC+02:00)"
    );
    let utc = schedule(AutoDivide::None, "00:00", "UTC");
    assert_eq!(utc.local_time_line(ms("2026-11-27T15:04:00Z")), "Friday 2026-11-27 15:04, time zone UTC (UTC+00:00)");
}

#[test]
fn the_days_a_message_names_get_their_dates_in_the_zone() {
    let berlin = schedule(AutoDivide::Daily, "00:00", "Europe/Berlin");
    // Friday 2026-11-27, 23:30 in Berlin (22:30 UTC): "tomorrow" is Berlin's tomorrow.
    let at = ms("2026-11-27T22:30:00Z");
    assert_eq!(
        berlin.days_named("Remind me tomorrow at 9:00 to call the dentist.", at),
        ["tomorrow is Saturday 2026-11-28"]
    );
    assert_eq!(
        berlin.days_named("Next Monday at 8:30, and on friday; the day after tomorrow too.", at),
        [
            "next Monday is Monday 2026-11-30",
            "Friday is Friday 2026-12-04",
            "the day after tomorrow is Sunday 2026-11-29"
        ]
    );
    assert!(berlin.days_named("What is on the monitor today?", at).is_empty(), "no day named");
    // One minute later it is Saturday there.
    assert_eq!(berlin.days_named("tomorrow", ms("2026-11-27T23:01:00Z")), ["tomorrow is Sunday 2026-11-29"]);
}

#[test]
fn daily_division_at_local_midnight_in_a_non_utc_zone() {
    let berlin = schedule(AutoDivide::Daily, "00:00", "Europe/Berlin");
    // Winter (UTC+1): Berlin's midnight is 23:00 UTC the day before.
    check(&berlin, "2026-01-15T10:00:00Z", Some("2026-01-15T23:00:00Z"));
    // Started at 23:30 UTC, already past Berlin's midnight: the next one is a day on.
    check(&berlin, "2026-01-15T23:30:00Z", Some("2026-01-16T23:00:00Z"));
    // Exactly at the division: the next one, not the same instant.
    check(&berlin, "2026-01-15T23:00:00Z", Some("2026-01-16T23:00:00Z"));
    // Summer (UTC+2).
    check(&berlin, "2026-07-01T21:59:00Z", Some("2026-07-01T22:00:00Z"));
    let tokyo = schedule(AutoDivide::Daily, "04:00", "Asia/Tokyo");
    check(&tokyo, "2026-11-23T18:00:00Z", Some("2026-11-23T19:00:00Z"));
}

#[test]
fn daily_division_across_dst_changes() {
    let berlin = schedule(AutoDivide::Daily, "00:00", "Europe/Berlin");
    // Spring forward on 2026-03-29 (02:00 → 03:00): midnight before it is UTC+1, after it UTC+2.
    check(&berlin, "2026-03-28T12:00:00Z", Some("2026-03-28T23:00:00Z"));
    check(&berlin, "2026-03-28T23:00:00Z", Some("2026-03-29T22:00:00Z"));
    // Fall back on 2026-10-25 (03:00 → 02:00): a 25-hour day.
    check(&berlin, "2026-10-24T22:00:00Z", Some("2026-10-25T23:00:00Z"));
    // A division time the spring-forward night skips resolves forward: 02:30 is 03:30 CEST.
    let skipped = schedule(AutoDivide::Daily, "02:30", "Europe/Berlin");
    check(&skipped, "2026-03-28T12:00:00Z", Some("2026-03-29T01:30:00Z"));
    // One the fall-back night has twice takes the first (CEST, UTC+2).
    let twice = schedule(AutoDivide::Daily, "02:30", "Europe/Berlin");
    check(&twice, "2026-10-24T12:00:00Z", Some("2026-10-25T00:30:00Z"));
    // New York springs forward on 2026-03-08.
    let new_york = schedule(AutoDivide::Daily, "00:00", "America/New_York");
    check(&new_york, "2026-03-08T06:00:00Z", Some("2026-03-09T04:00:00Z"));
}

#[test]
fn weekly_and_no_division() {
    let weekly = schedule(AutoDivide::Weekly, "09:00", "Europe/Berlin");
    // 2026-11-24 is a Tuesday: the next Monday 09:00 CET is 2026-11-30T08:00Z.
    check(&weekly, "2026-11-24T10:00:00Z", Some("2026-11-30T08:00:00Z"));
    check(&weekly, "2026-11-30T07:59:00Z", Some("2026-11-30T08:00:00Z"));
    check(&schedule(AutoDivide::None, "00:00", "UTC"), "2026-11-24T10:00:00Z", None);
}

#[test]
fn bad_session_config_is_refused_with_its_name() {
    let config = SessionConfig { time_zone: "Mars/Olympus".into(), ..SessionConfig::default() };
    assert!(config.schedule().unwrap_err().to_string().contains("Mars/Olympus"));
    let config = SessionConfig { auto_divide_time: "25:00".into(), ..SessionConfig::default() };
    assert!(config.schedule().unwrap_err().to_string().contains("25:00"));
    let config = SessionConfig { weekly_on: "someday".into(), ..SessionConfig::default() };
    assert!(config.schedule().is_err());
}

async fn open(start: &str) -> (tempfile::TempDir, Store, Arc<FixedClock>) {
    let directory = tempfile::tempdir().unwrap();
    let clock = Arc::new(FixedClock::at(ms(start)));
    let store = Store::open(&directory.path().join("wright.db"), StateLimits::default())
        .await
        .unwrap()
        .with_memory(MemoryConfig::default(), clock.clone())
        .with_sessions(schedule(AutoDivide::Daily, "00:00", "Europe/Berlin"));
    (directory, store, clock)
}

#[tokio::test]
async fn conversations_join_the_open_session_and_midnight_in_berlin_starts_a_new_one() {
    let (_directory, store, clock) = open("2026-03-28T21:00:00Z").await;
    let agent = AgentId::default_agent();
    store.create_conversation(&agent, "evening", "evening").await.unwrap();
    let memory =
        NewMemory { layer: MemoryLayer::Session, category: None, certainty: None, content: "On the PR".into() };
    let stored = store.store_memory(&agent, &memory, &MemoryActor::agent(Some("evening".into()))).await.unwrap();
    let first = store.current_session(&agent).await.unwrap();
    assert_eq!(first.name, "2026-03-28");
    assert_eq!(stored.session_id, Some(first.id));

    // 22:59 UTC is still the 28th in Berlin (UTC+1 until the DST change at 01:00 UTC).
    clock.set(ms("2026-03-28T22:59:59Z"));
    store.create_conversation(&agent, "late", "late").await.unwrap();
    assert_eq!(store.current_session(&agent).await.unwrap().id, first.id);

    // Berlin's midnight: a new session; the old one ended, taking its session memory along.
    clock.set(ms("2026-03-28T23:00:00Z"));
    store.create_conversation(&agent, "night", "night").await.unwrap();
    let second = store.current_session(&agent).await.unwrap();
    assert_ne!(second.id, first.id);
    assert_eq!((second.name.as_str(), second.started_by), ("2026-03-29", SessionStarter::Schedule));
    assert_eq!(second.conversation_ids, vec!["night".to_owned()]);
    let first = store.session(&agent, first.id).await.unwrap();
    assert_eq!(first.ended_at, Some(ms("2026-03-28T23:00:00Z")));
    assert_eq!(first.conversation_ids, vec!["late".to_owned(), "evening".to_owned()]);
    let archived = store.memory(&agent, stored.id).await.unwrap();
    assert_eq!(archived.archived_reason, Some(crate::ArchivedReason::Expire));
    let history = store.memory_history(&agent, stored.id).await.unwrap();
    assert_eq!(history.last().unwrap().action, wright_core::MemoryAction::Expire);

    // The DST day is 23 hours long: the next division is at 22:00 UTC.
    clock.set(ms("2026-03-29T21:59:59Z"));
    assert_eq!(store.current_session(&agent).await.unwrap().id, second.id);
    clock.set(ms("2026-03-29T22:00:00Z"));
    assert_ne!(store.current_session(&agent).await.unwrap().id, second.id);
}

#[tokio::test]
async fn a_session_started_by_the_person_or_the_model_ends_the_open_one() {
    let (_directory, store, _clock) = open("2026-11-24T10:00:00Z").await;
    let agent = AgentId::default_agent();
    store.create_conversation(&agent, "c1", "one").await.unwrap();
    let memory =
        NewMemory { layer: MemoryLayer::Session, category: None, certainty: None, content: "Refactor mode".into() };
    let stored = store.store_memory(&agent, &memory, &MemoryActor::agent(Some("c1".into()))).await.unwrap();
    let started = store.start_session(&agent, Some("  Tax return  "), SessionStarter::Person).await.unwrap();
    assert_eq!((started.name.as_str(), started.started_by), ("Tax return", SessionStarter::Person));
    assert!(store.memory(&agent, stored.id).await.unwrap().archived_at.is_some());
    let by_model = store.start_session(&agent, None, SessionStarter::Agent).await.unwrap();
    assert_eq!(by_model.name, "2026-11-24");
    let sessions = store.list_sessions(&agent, 10).await.unwrap();
    assert_eq!(sessions.iter().map(|session| session.id).collect::<Vec<_>>()[0], by_model.id);
    assert_eq!(sessions.iter().filter(|session| session.ended_at.is_none()).count(), 1);
    // Session memories are seen only in their session.
    let filter = MemoryFilter { session_id: Some(by_model.id), ..MemoryFilter::default() };
    assert!(store.list_memories(&agent, &filter, 10).await.unwrap().is_empty());
    let missing = store.start_session(&AgentId::parse("nobody").unwrap(), None, SessionStarter::Person).await;
    assert!(matches!(missing, Err(StoreError::AgentNotFound(_))));
}

#[tokio::test]
async fn conversations_are_renamed_archived_and_deleted_with_their_events() {
    let (_directory, store, _clock) = open("2026-11-24T10:00:00Z").await;
    let agent = AgentId::default_agent();
    store.create_conversation(&agent, "c1", "one").await.unwrap();
    store.create_conversation(&agent, "c2", "two").await.unwrap();
    let hello = wright_core::EventBody::User { text: "hello".into(), component: None };
    store.append_events("c1", &[wright_core::NewEvent::new("hello", hello)]).await.unwrap();

    assert_eq!(store.rename_conversation("c1", "  Letters ").await.unwrap().title, "Letters");
    assert!(matches!(store.rename_conversation("c1", " ").await, Err(StoreError::InvalidEdit(_))));
    assert!(matches!(store.rename_conversation("nope", "x").await, Err(StoreError::ConversationNotFound(_))));

    store.set_conversation_archived("c2", true).await.unwrap();
    let listed: Vec<String> = store.list_conversations(&agent).await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(listed, vec!["c1".to_owned()]);
    let archived = store.list_archived_conversations(&agent).await.unwrap();
    assert_eq!(archived.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec!["c2"]);
    store.set_conversation_archived("c2", false).await.unwrap();
    assert_eq!(store.list_conversations(&agent).await.unwrap().len(), 2);

    store.delete_conversation("c1").await.unwrap();
    assert!(matches!(store.conversation("c1").await, Err(StoreError::ConversationNotFound(_))));
    assert!(store.events_after("c1", 0).await.unwrap().is_empty());
    assert!(matches!(store.delete_conversation("c1").await, Err(StoreError::ConversationNotFound(_))));
}
