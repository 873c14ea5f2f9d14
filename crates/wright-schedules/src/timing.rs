//! Time of schedules: cron expressions read by `croner` (five fields: minute hour day-of-month
//! month day-of-week, with names, ranges, steps, `L`, `W`, `#`), searched on jiff's `Zoned`
//! through [`ZonedTime`], so a local time is a local time across DST changes (a time skipped by
//! a spring-forward does not happen that day; one that happens twice fires once); and the
//! times people and models write.

use std::cmp::Ordering;

use croner::errors::CronError;
use croner::parser::{CronParser, Seconds};
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

use crate::ScheduleError;

/// When a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timing {
    /// A five-field cron expression, read in the schedule's time zone.
    Cron(String),
    /// Once, at this time (milliseconds since the epoch).
    Once(i64),
}

impl Timing {
    /// A stored schedule's timing; None for a row with neither (never written by Wright).
    pub fn of(schedule: &wright_store::Schedule) -> Option<Self> {
        match (&schedule.cron, schedule.run_at) {
            (Some(cron), _) => Some(Timing::Cron(cron.clone())),
            (None, Some(at)) => Some(Timing::Once(at)),
            (None, None) => None,
        }
    }
}

/// A jiff `ZonedDateTime` as croner's searchable time (croner's own jiff support is for an older jiff).
#[derive(Debug, Clone)]
struct ZonedTime(ZonedDateTime);

impl CronDateTime for ZonedTime {
    fn to_civil(&self) -> CivilDateTime {
        let datetime = self.0.datetime();
        // jiff keeps every part in range, so they are taken as they are.
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(i32::from(datetime.year()), datetime.month() as u32, datetime.day() as u32),
            CivilTime::from_parts_unchecked(datetime.hour() as u32, datetime.minute() as u32, datetime.second() as u32),
        )
    }

    fn civil_weekday(&self) -> croner::Weekday {
        croner::Weekday::from_days_from_sunday(self.0.weekday().to_sunday_zero_offset() as u32)
    }

    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let year = i16::try_from(civil.year()).map_err(|_| CronError::InvalidDate)?;
        let datetime = jiff::civil::DateTime::new(
            year,
            civil.month() as i8,
            civil.day() as i8,
            civil.hour() as i8,
            civil.minute() as i8,
            civil.second() as i8,
            0,
        )
        .map_err(|_| CronError::InvalidDate)?;
        let ambiguous = self.0.time_zone().to_ambiguous_zoned_datetime(datetime);
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => {
                Resolution::Single(ZonedTime(ambiguous.unambiguous().map_err(|_| CronError::InvalidTime)?))
            }
            AmbiguousOffset::Fold { .. } => {
                let earlier = ambiguous.clone().earlier().map_err(|_| CronError::InvalidTime)?;
                let later = ambiguous.later().map_err(|_| CronError::InvalidTime)?;
                Resolution::Ambiguous(ZonedTime(earlier), ZonedTime(later))
            }
            AmbiguousOffset::Gap { .. } => Resolution::Gap,
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(SignedDuration::from_secs(seconds)).ok().map(ZonedTime)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.timestamp().cmp(&other.0.timestamp())
    }
}

pub(crate) fn parse_cron(expression: &str) -> Result<Cron, ScheduleError> {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .build()
        .parse(expression.trim())
        .map_err(|error| ScheduleError::Invalid(format!("{expression:?} is not a cron expression: {error}")))
}

pub(crate) fn zone(name: &str) -> Result<TimeZone, ScheduleError> {
    TimeZone::get(name.trim()).map_err(|_| {
        ScheduleError::Invalid(format!("{name:?} is not an IANA time zone (like Europe/Oslo, America/New_York or UTC)"))
    })
}

/// The first time of `cron` in `zone` strictly after `after_ms`.
pub(crate) fn cron_next(cron: &Cron, zone: &TimeZone, after_ms: i64) -> Option<i64> {
    let after = Timestamp::from_millisecond(after_ms).ok()?.to_zoned_datetime(zone.clone());
    let next = cron.find_next_occurrence(&ZonedTime(after), false).ok()?;
    Some(next.0.timestamp().as_millisecond())
}

/// When `timing` is due next strictly after `after_ms`, in `time_zone`; None when never again.
pub fn next_time(timing: &Timing, time_zone: &str, after_ms: i64) -> Result<Option<i64>, ScheduleError> {
    match timing {
        Timing::Once(at) => Ok((*at > after_ms).then_some(*at)),
        Timing::Cron(expression) => Ok(cron_next(&parse_cron(expression)?, &zone(time_zone)?, after_ms)),
    }
}

/// A time the model or the person wrote: RFC 3339 with an offset (`2026-12-24T17:00:00Z`), or
/// a local date and time read in `time_zone` (`2026-12-24T18:00`, `2026-12-24 18:00`).
pub fn local_time(text: &str, time_zone: &str) -> Result<i64, ScheduleError> {
    let text = text.trim();
    if let Ok(timestamp) = text.parse::<Timestamp>() {
        return Ok(timestamp.as_millisecond());
    }
    let datetime: jiff::civil::DateTime = text.replacen(' ', "T", 1).parse().map_err(|_| {
        // A time of day alone ("22:00" for "a daily 22:00 reminder", as the real 1.5B sent):
        // say the cron that repeats it, and how a one-off is written.
        let Ok(time) = text.parse::<jiff::civil::Time>() else {
            return ScheduleError::Invalid(format!("{text:?} is not a date and time like 2026-12-24T18:00"));
        };
        let (hour, minute) = (time.hour(), time.minute());
        ScheduleError::Invalid(format!(
            "{text:?} is a time of day without a date: send cron \"{minute} {hour} * * *\" (and no at) to repeat it \
             every day at {hour:02}:{minute:02}, or at with the date for once, like \"2026-12-24T{hour:02}:{minute:02}\""
        ))
    })?;
    let zoned = zone(time_zone)?
        .to_ambiguous_zoned_datetime(datetime)
        .compatible()
        .map_err(|error| ScheduleError::Invalid(format!("{text:?} in {time_zone}: {error}")))?;
    Ok(zoned.timestamp().as_millisecond())
}

/// The shortest gap between two of the next `count` times of `cron` after `from_ms`.
pub(crate) fn shortest_gap(cron: &Cron, zone: &TimeZone, from_ms: i64, count: usize) -> Option<i64> {
    let mut previous = cron_next(cron, zone, from_ms)?;
    let mut shortest: Option<i64> = None;
    for _ in 0..count {
        let Some(next) = cron_next(cron, zone, previous) else { break };
        shortest = Some(shortest.map_or(next - previous, |gap| gap.min(next - previous)));
        previous = next;
    }
    shortest
}
