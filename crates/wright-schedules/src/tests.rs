//! The policy against a real SQLite store and a fixed clock.

use std::sync::Arc;

use jiff::Timestamp;
use wright_core::FixedClock;
use wright_store::{MemoryConfig, StateLimits};

use super::*;
use crate::timing::{parse_cron, shortest_gap, zone};

async fn open(start: &str, config: ScheduleConfig) -> (tempfile::TempDir, Schedules, Arc<FixedClock>) {
    let directory = tempfile::tempdir().unwrap();
    let clock = Arc::new(FixedClock::at(ms(start)));
    let store = Store::open(&directory.path().join("wright.db"), StateLimits::default())
        .await
        .unwrap()
        .with_memory(MemoryConfig::default(), clock.clone());
    (directory, Schedules::new(store, config), clock)
}

fn new(name: &str, timing: Timing, zone: &str) -> NewSchedule {
    NewSchedule {
        name: name.into(),
        prompt: format!("do {name}"),
        timing,
        time_zone: zone.into(),
        created_by: ScheduleAuthor::Agent,
        conversation_id: None,
    }
}

#[tokio::test]
async fn a_due_time_fires_once_and_a_time_missed_long_ago_is_recorded_not_run() {
    let (_directory, store, clock) = open("2026-11-24T06:00:00Z", ScheduleConfig::default()).await;
    let agent = AgentId::default_agent();
    // 08:00 in Tokyo (UTC+9) is 23:00 UTC the day before.
    let daily = store.create(&agent, &new("digest", Timing::Cron("0 8 * * *".into()), "Asia/Tokyo")).await.unwrap();
    assert_eq!(daily.next_run_at, Some(ms("2026-11-24T23:00:00Z")));
    clock.set(ms("2026-11-24T22:59:59Z"));
    assert!(store.fire_due().await.unwrap().is_empty());
    clock.set(ms("2026-11-24T23:00:00Z"));
    let firings = store.fire_due().await.unwrap();
    assert_eq!(firings.len(), 1);
    assert_eq!((firings[0].run.outcome, firings[0].late_by_ms), (RunOutcome::Started, 0));
    assert_eq!(firings[0].schedule.next_run_at, Some(ms("2026-11-25T23:00:00Z")));
    assert!(store.fire_due().await.unwrap().is_empty(), "a time fires once");
    // Down for three days: three times passed; none runs, one missed row says so.
    clock.set(ms("2026-11-28T06:00:00Z"));
    let firings = store.fire_due().await.unwrap();
    assert_eq!(firings.len(), 1);
    assert_eq!((firings[0].run.outcome, firings[0].run.missed_count), (RunOutcome::Missed, 3));
    assert_eq!(firings[0].schedule.next_run_at, Some(ms("2026-11-28T23:00:00Z")));
    // Down for twenty minutes over a time: it still runs, late.
    clock.set(ms("2026-11-28T23:20:00Z"));
    let firings = store.fire_due().await.unwrap();
    assert_eq!((firings[0].run.outcome, firings[0].late_by_ms), (RunOutcome::Started, 20 * MINUTE_MS));
}

#[tokio::test]
async fn one_offs_end_and_cancelled_or_paused_schedules_do_not_fire() {
    let (_directory, store, clock) = open("2026-11-24T06:00:00Z", ScheduleConfig::default()).await;
    let agent = AgentId::default_agent();
    let once = store.create(&agent, &new("call", Timing::Once(ms("2026-11-24T07:00:00Z")), "UTC")).await.unwrap();
    let cancelled = store.create(&agent, &new("gone", Timing::Once(ms("2026-11-24T07:00:00Z")), "UTC")).await.unwrap();
    let paused = store.create(&agent, &new("later", Timing::Cron("0 * * * *".into()), "UTC")).await.unwrap();
    store.store.cancel_schedule(&agent, cancelled.id).await.unwrap();
    store.set_paused(&agent, paused.id, true).await.unwrap();
    assert!(
        store.create(&agent, &new("call", Timing::Once(ms("2026-11-25T07:00:00Z")), "UTC")).await.is_err(),
        "a live name is taken"
    );
    clock.set(ms("2026-11-24T07:00:01Z"));
    let firings = store.fire_due().await.unwrap();
    assert_eq!(firings.len(), 1);
    assert_eq!(firings[0].schedule.id, once.id);
    assert_eq!(store.store.schedule(&agent, once.id).await.unwrap().status, ScheduleStatus::Done);
    // Resumed, a paused schedule counts from now: the hours it was paused are not missed.
    clock.set(ms("2026-11-24T10:30:00Z"));
    let resumed = store.set_paused(&agent, paused.id, false).await.unwrap();
    assert_eq!(resumed.next_run_at, Some(ms("2026-11-24T11:00:00Z")));
    assert!(store.fire_due().await.unwrap().is_empty());
}

#[tokio::test]
async fn limits_on_count_frequency_and_runs_per_day_hold() {
    let config = ScheduleConfig { max_per_agent: 2, max_runs_per_day: 1, ..ScheduleConfig::default() };
    let (_directory, store, clock) = open("2026-11-24T06:00:00Z", config).await;
    let agent = AgentId::default_agent();
    let too_often = store.create(&agent, &new("spam", Timing::Cron("* * * * *".into()), "UTC")).await;
    assert!(matches!(too_often, Err(ScheduleError::Limit(_))), "{too_often:?}");
    assert!(store.create(&agent, &new("past", Timing::Once(ms("2026-11-24T05:00:00Z")), "UTC")).await.is_err());
    store.create(&agent, &new("a", Timing::Cron("0 7 * * *".into()), "UTC")).await.unwrap();
    store.create(&agent, &new("b", Timing::Cron("0 7 * * *".into()), "UTC")).await.unwrap();
    let third = store.create(&agent, &new("c", Timing::Cron("0 7 * * *".into()), "UTC")).await;
    assert!(matches!(third, Err(ScheduleError::Limit(_))), "{third:?}");
    clock.set(ms("2026-11-24T07:00:00Z"));
    let outcomes: Vec<RunOutcome> = store.fire_due().await.unwrap().iter().map(|firing| firing.run.outcome).collect();
    assert_eq!(outcomes, vec![RunOutcome::Started, RunOutcome::SkippedLimit]);
}

fn ms(text: &str) -> i64 {
    text.parse::<Timestamp>().unwrap().as_millisecond()
}

#[test]
fn a_cron_time_is_local_to_its_zone_across_dst() {
    // 08:30 in Oslo: UTC+1 in winter, UTC+2 in summer.
    let timing = Timing::Cron("30 8 * * *".into());
    assert_eq!(
        next_time(&timing, "Europe/Oslo", ms("2026-01-10T12:00:00Z")).unwrap(),
        Some(ms("2026-01-11T07:30:00Z"))
    );
    assert_eq!(
        next_time(&timing, "Europe/Oslo", ms("2026-07-10T12:00:00Z")).unwrap(),
        Some(ms("2026-07-11T06:30:00Z"))
    );
    // 02:30 does not exist in Oslo on 2026-03-29 (clocks jump from 02:00 to 03:00).
    let skipped = Timing::Cron("30 2 * * *".into());
    let next = next_time(&skipped, "Europe/Oslo", ms("2026-03-28T12:00:00Z")).unwrap().unwrap();
    assert_ne!(next, ms("2026-03-29T01:30:00Z"));
    assert!(next > ms("2026-03-29T00:00:00Z"));
    assert!(next_time(&timing, "Mars/Olympus", 0).is_err());
    assert!(next_time(&Timing::Cron("every day".into()), "UTC", 0).is_err());
}

#[test]
fn the_shortest_gap_of_an_expression_is_found() {
    let zone = zone("UTC").unwrap();
    let every_minute_twice_an_hour = parse_cron("0,1 * * * *").unwrap();
    assert_eq!(shortest_gap(&every_minute_twice_an_hour, &zone, 0, 500), Some(MINUTE_MS));
    let daily = parse_cron("0 9 * * *").unwrap();
    assert_eq!(shortest_gap(&daily, &zone, 0, 10), Some(DAY_MS));
}

/// A one-off time that has passed is refused with what to send instead, in the schedule's
/// zone: the next such time, or a daily cron (a small model asked in the evening for "every
/// day at 8:00" wrote today's 08:00 as `at`).
#[test]
fn a_past_one_off_time_is_refused_with_the_next_such_time_and_a_daily_cron() {
    let now = ms("2026-11-27T20:36:00Z");
    let at = ms("2026-11-27T07:00:00Z"); // 08:00 in Paris (UTC+1)
    let error = plan_new(&new("water", Timing::Once(at), "Europe/Paris"), now, &ScheduleConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        error
            .ends_with("for the next 08:00 send at \"2026-11-28T08:00\", or cron \"0 8 * * *\" to repeat it every day"),
        "{error}"
    );
}

/// The real 1.5B, asked for "a daily 22:00 schedule", sent `at: "22:00"`.
#[test]
fn a_time_of_day_without_a_date_is_refused_with_the_daily_cron() {
    let error = crate::local_time("22:00", "UTC").unwrap_err().to_string();
    assert!(
        error.ends_with(
            "\"22:00\" is a time of day without a date: send cron \"0 22 * * *\" (and no at) to repeat it every day \
             at 22:00, or at with the date for once, like \"2026-12-24T22:00\""
        ),
        "{error}"
    );
    let error = crate::local_time("tomorrow", "UTC").unwrap_err().to_string();
    assert!(error.ends_with("\"tomorrow\" is not a date and time like 2026-12-24T18:00"), "{error}");
}
