//! Sessions: spans of an agent's conversations (seed 001, "Session Division"). At most one is
//! open per agent. A new one starts automatically at a configured local time in a configured
//! time zone (`daily`, `weekly`, or `none`), when the person types `/newsession [name]`, or
//! when the model asks; the open one ends then, and its session-layer memories end with it
//! (archived as expired, with a history row by the system).
//!
//! Invariants: the division is decided from the store's clock and the session's start, by
//! [`SessionSchedule::next_start_after`] — a pure function, tested across midnight in a
//! non-UTC zone and across DST changes. A conversation is listed under the session open when
//! it was created (a division never moves it); session memories belong to the agent's open
//! session, so a conversation that goes on past a division sees only the new session's.

use jiff::Timestamp;
use jiff::civil::{Time, Weekday};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use wright_core::{AgentId, MemoryAction, MemoryAuthor};

use crate::{Store, StoreError};

/// How sessions divide by themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoDivide {
    Daily,
    Weekly,
    None,
}

/// `[sessions]` in config.toml (seed 001's `SessionConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    pub auto_divide: AutoDivide,
    /// Local time of the division, `HH:MM`.
    pub auto_divide_time: String,
    /// An IANA time zone name (`Europe/Berlin`), or `UTC`.
    pub time_zone: String,
    /// The day a weekly division falls on (`monday` … `sunday`).
    pub weekly_on: String,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            auto_divide: AutoDivide::Daily,
            auto_divide_time: "00:00".into(),
            time_zone: "UTC".into(),
            weekly_on: "monday".into(),
        }
    }
}

/// A checked [`SessionConfig`]: the zone found, the time and weekday parsed.
#[derive(Debug, Clone)]
pub struct SessionSchedule {
    auto_divide: AutoDivide,
    at: Time,
    weekday: Weekday,
    time_zone: TimeZone,
}

impl SessionConfig {
    /// Checks the config; an unknown zone, time or weekday is an error naming it.
    pub fn schedule(&self) -> Result<SessionSchedule, StoreError> {
        let invalid =
            |what: &str, value: &str| StoreError::InvalidEdit(format!("[sessions] {what} {value:?} is not valid"));
        let at: Time =
            self.auto_divide_time.parse().map_err(|_| invalid("auto_divide_time", &self.auto_divide_time))?;
        let time_zone = TimeZone::get(&self.time_zone).map_err(|_| invalid("time_zone", &self.time_zone))?;
        let weekday = match self.weekly_on.to_ascii_lowercase().as_str() {
            "monday" => Weekday::Monday,
            "tuesday" => Weekday::Tuesday,
            "wednesday" => Weekday::Wednesday,
            "thursday" => Weekday::Thursday,
            "friday" => Weekday::Friday,
            "saturday" => Weekday::Saturday,
            "sunday" => Weekday::Sunday,
            _ => return Err(invalid("weekly_on", &self.weekly_on)),
        };
        Ok(SessionSchedule { auto_divide: self.auto_divide, at, weekday, time_zone })
    }
}

impl Default for SessionSchedule {
    fn default() -> Self {
        SessionConfig::default().schedule().expect("the default session config is valid")
    }
}

/// The weekdays' English names, Monday first (jiff's `to_monday_zero_offset` order).
const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}

impl SessionSchedule {
    /// When the next session starts after one that started at `started_ms`: the first
    /// division time strictly after it, in the zone's local time. A local time that does not
    /// exist that day (skipped by a DST change) resolves forward, as clocks do (02:30 on a
    /// spring-forward night is 03:30); one that exists twice takes the first. `None` when
    /// sessions do not divide by themselves.
    pub fn next_start_after(&self, started_ms: i64) -> Option<i64> {
        if self.auto_divide == AutoDivide::None {
            return None;
        }
        let started = Timestamp::from_millisecond(started_ms).ok()?;
        let mut day = self.time_zone.to_datetime(started).date();
        loop {
            let matches_day = self.auto_divide == AutoDivide::Daily || day.weekday() == self.weekday;
            if matches_day {
                // `to_timestamp` resolves a gap forward and a fold to its first instance.
                let candidate = self.time_zone.to_timestamp(day.to_datetime(self.at)).ok()?;
                let candidate_ms = candidate.as_millisecond();
                if candidate_ms > started_ms {
                    return Some(candidate_ms);
                }
            }
            day = day.tomorrow().ok()?;
        }
    }

    /// The zone's name as configured in `[sessions]` (`Europe/Berlin`, `UTC`).
    pub fn time_zone_name(&self) -> String {
        self.time_zone.iana_name().unwrap_or("UTC").to_owned()
    }

    /// `now_ms` as a person reads it in the zone, with what a model needs to work out
    /// "tomorrow at 9" or "next Monday": `Friday 2026-11-27 16:04, time zone Europe/Berlin
    /// (UTC+01:00)`.
    pub fn local_time_line(&self, now_ms: i64) -> String {
        let zone = self.time_zone_name();
        match Timestamp::from_millisecond(now_ms) {
            Ok(now) => {
                let local = now.to_zoned_datetime(self.time_zone.clone());
                format!("{}, time zone {zone} (UTC{})", local.strftime("%A %Y-%m-%d %H:%M"), local.strftime("%:z"))
            }
            Err(_) => format!("time zone {zone}"),
        }
    }

    /// The dates the days a message names fall on, counted from `at_ms` in the zone (English
    /// words): `tomorrow is Saturday 2026-11-28`, `the day after tomorrow is …`, `next Monday is
    /// 2026-11-30` (a weekday is the first one after today). A small model told "today is
    /// Friday 2026-11-27" does not work out next Monday's date; the host does, once per message.
    pub fn days_named(&self, text: &str, at_ms: i64) -> Vec<String> {
        let Ok(at) = Timestamp::from_millisecond(at_ms) else { return Vec::new() };
        let today = self.time_zone.to_datetime(at).date();
        let words: Vec<String> =
            text.split(|c: char| !c.is_alphabetic()).filter(|word| !word.is_empty()).map(str::to_lowercase).collect();
        let shown = |date: jiff::civil::Date| format!("{} {date}", date.strftime("%A"));
        let mut named = Vec::new();
        let mut add = |line: String| {
            if !named.contains(&line) {
                named.push(line);
            }
        };
        for (index, word) in words.iter().enumerate() {
            let before = |back: usize| index.checked_sub(back).and_then(|at| words.get(at)).map(String::as_str);
            if word == "tomorrow" {
                let after = before(1) == Some("after") && before(2) == Some("day");
                let (days, said) = if after { (2, "the day after tomorrow") } else { (1, "tomorrow") };
                if let Ok(date) = today.checked_add(jiff::Span::new().days(days)) {
                    add(format!("{said} is {}", shown(date)));
                }
                continue;
            }
            let Some(weekday) = WEEKDAYS.iter().position(|name| name == word) else { continue };
            let mut date = today;
            for _ in 0..7 {
                let Ok(next) = date.tomorrow() else { break };
                date = next;
                if date.weekday().to_monday_zero_offset() as usize == weekday {
                    break;
                }
            }
            let said = if before(1) == Some("next") { "next " } else { "" };
            add(format!("{said}{} is {}", capitalised(word), shown(date)));
        }
        named
    }

    /// A name for a session the schedule starts: its local date (`2026-11-24`).
    fn name_at(&self, now_ms: i64) -> String {
        match Timestamp::from_millisecond(now_ms) {
            Ok(now) => self.time_zone.to_datetime(now).date().to_string(),
            Err(_) => "session".into(),
        }
    }
}

/// Who started a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStarter {
    Schedule,
    Person,
    Agent,
}

impl SessionStarter {
    fn as_str(self) -> &'static str {
        match self {
            SessionStarter::Schedule => "schedule",
            SessionStarter::Person => "person",
            SessionStarter::Agent => "agent",
        }
    }

    fn parse(raw: &str) -> Result<Self, StoreError> {
        match raw {
            "schedule" => Ok(SessionStarter::Schedule),
            "person" => Ok(SessionStarter::Person),
            "agent" => Ok(SessionStarter::Agent),
            other => {
                Err(StoreError::Database(sqlx::Error::Decode(format!("unknown session starter {other:?}").into())))
            }
        }
    }
}

/// A session of an agent. Times are milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    pub id: i64,
    pub name: String,
    pub started_by: SessionStarter,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    /// The conversations that started in it, newest first.
    pub conversation_ids: Vec<String>,
}

fn decode(row: &sqlx::sqlite::SqliteRow) -> Result<Session, StoreError> {
    Ok(Session {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        started_by: SessionStarter::parse(row.try_get("started_by")?)?,
        started_at: row.try_get("started_at")?,
        ended_at: row.try_get("ended_at")?,
        conversation_ids: Vec::new(),
    })
}

type Transaction = sqlx::Transaction<'static, sqlx::Sqlite>;

impl Store {
    /// The `[sessions]` time zone's name: the person's zone as configured.
    pub fn time_zone_name(&self) -> String {
        self.session_schedule.time_zone_name()
    }

    /// A stored time (`created_at`, UTC ISO 8601) as a person reads it in the `[sessions]`
    /// zone, with the dates of the days the message `text` names (see
    /// [`SessionSchedule::days_named`]); `None` when it does not parse.
    pub fn local_time_of(&self, stored: &str, text: &str) -> Option<String> {
        let at = stored.parse::<Timestamp>().ok()?.as_millisecond();
        let mut line = self.session_schedule.local_time_line(at);
        for named in self.session_schedule.days_named(text, at) {
            line.push_str("; ");
            line.push_str(&named);
        }
        Some(line)
    }

    /// The agent's open session, after dividing if the schedule says a new one has begun
    /// since it started (or starting the first one).
    pub async fn current_session(&self, agent: &AgentId) -> Result<Session, StoreError> {
        let now = self.clock.now_ms();
        let mut transaction = self.begin_write().await?;
        let open = open_session(&mut transaction, agent).await?;
        let id = match open {
            Some(session)
                if self.session_schedule.next_start_after(session.started_at).is_none_or(|next| now < next) =>
            {
                session.id
            }
            Some(session) => {
                end_session(&mut transaction, session.id, now).await?;
                let name = self.session_schedule.name_at(now);
                insert_session(&mut transaction, agent, &name, SessionStarter::Schedule, now).await?
            }
            None => {
                self.require_agent_in(&mut transaction, agent).await?;
                let name = self.session_schedule.name_at(now);
                insert_session(&mut transaction, agent, &name, SessionStarter::Schedule, now).await?
            }
        };
        transaction.commit().await?;
        self.session(agent, id).await
    }

    /// Ends the open session (its session memories end with it) and starts a new one.
    pub async fn start_session(
        &self,
        agent: &AgentId,
        name: Option<&str>,
        started_by: SessionStarter,
    ) -> Result<Session, StoreError> {
        let now = self.clock.now_ms();
        let name = name.map(str::trim).filter(|name| !name.is_empty());
        if let Some(name) = name
            && name.chars().count() > 200
        {
            return Err(StoreError::LimitExceeded("a session name is at most 200 characters".into()));
        }
        let mut transaction = self.begin_write().await?;
        self.require_agent_in(&mut transaction, agent).await?;
        if let Some(open) = open_session(&mut transaction, agent).await? {
            end_session(&mut transaction, open.id, now).await?;
        }
        let name = name.map(str::to_owned).unwrap_or_else(|| self.session_schedule.name_at(now));
        let id = insert_session(&mut transaction, agent, &name, started_by, now).await?;
        transaction.commit().await?;
        self.session(agent, id).await
    }

    /// One session with its conversations.
    pub async fn session(&self, agent: &AgentId, id: i64) -> Result<Session, StoreError> {
        let row = sqlx::query(
            "SELECT id, name, started_by, started_at, ended_at FROM conversation_sessions WHERE agent_id = ? AND id = ?",
        )
        .bind(agent.as_str())
        .bind(id)
        .fetch_optional(&self.writer)
        .await?
        .ok_or_else(|| StoreError::ItemNotFound { kind: "session", name: id.to_string() })?;
        let mut session = decode(&row)?;
        let conversations: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM conversations WHERE session_id = ? ORDER BY created_at DESC")
                .bind(id)
                .fetch_all(&self.writer)
                .await?;
        session.conversation_ids = conversations.into_iter().map(|(id,)| id).collect();
        Ok(session)
    }

    /// The agent's sessions, newest first, each with its conversations.
    pub async fn list_sessions(&self, agent: &AgentId, limit: usize) -> Result<Vec<Session>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, started_by, started_at, ended_at FROM conversation_sessions WHERE agent_id = ? \
             ORDER BY started_at DESC, id DESC LIMIT ?",
        )
        .bind(agent.as_str())
        .bind(limit as i64)
        .fetch_all(&self.reader)
        .await?;
        let mut sessions = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
        for session in &mut sessions {
            let conversations: Vec<(String,)> =
                sqlx::query_as("SELECT id FROM conversations WHERE session_id = ? ORDER BY created_at DESC")
                    .bind(session.id)
                    .fetch_all(&self.reader)
                    .await?;
            session.conversation_ids = conversations.into_iter().map(|(id,)| id).collect();
        }
        Ok(sessions)
    }

    async fn require_agent_in(&self, transaction: &mut Transaction, agent: &AgentId) -> Result<(), StoreError> {
        let exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM agents WHERE id = ?")
            .bind(agent.as_str())
            .fetch_optional(&mut **transaction)
            .await?;
        exists.map(|_| ()).ok_or_else(|| StoreError::AgentNotFound(agent.to_string()))
    }
}

async fn open_session(transaction: &mut Transaction, agent: &AgentId) -> Result<Option<Session>, StoreError> {
    let row = sqlx::query(
        "SELECT id, name, started_by, started_at, ended_at FROM conversation_sessions WHERE agent_id = ? AND ended_at IS NULL",
    )
    .bind(agent.as_str())
    .fetch_optional(&mut **transaction)
    .await?;
    row.as_ref().map(decode).transpose()
}

async fn insert_session(
    transaction: &mut Transaction,
    agent: &AgentId,
    name: &str,
    started_by: SessionStarter,
    now: i64,
) -> Result<i64, StoreError> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO conversation_sessions (agent_id, name, started_by, started_at) VALUES (?, ?, ?, ?) RETURNING id",
    )
    .bind(agent.as_str())
    .bind(name)
    .bind(started_by.as_str())
    .bind(now)
    .fetch_one(&mut **transaction)
    .await?;
    Ok(id)
}

/// Ends a session and archives its active session memories as expired, each with a history
/// row by the system, in the caller's transaction.
async fn end_session(transaction: &mut Transaction, id: i64, now: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE conversation_sessions SET ended_at = ? WHERE id = ?")
        .bind(now)
        .bind(id)
        .execute(&mut **transaction)
        .await?;
    let ending: Vec<(i64,)> =
        sqlx::query_as("SELECT id FROM memories WHERE session_id = ? AND layer = 'session' AND archived_at IS NULL")
            .bind(id)
            .fetch_all(&mut **transaction)
            .await?;
    for (memory_id,) in ending {
        sqlx::query("UPDATE memories SET archived_at = ?, archived_reason = 'expire', updated_at = ? WHERE id = ?")
            .bind(now)
            .bind(now)
            .bind(memory_id)
            .execute(&mut **transaction)
            .await?;
        let system = crate::MemoryActor { author: MemoryAuthor::System, conversation_id: None };
        crate::memory::record(transaction, memory_id, MemoryAction::Expire, &system, now).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
