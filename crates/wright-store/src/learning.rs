//! Learning from experience (issue 31): the outcome of every finished run and the person's
//! ratings, cases, learned items with their versioned changes and counters, learning rounds
//! and the person's learning settings.
//!
//! A run is named by its conversation and the seq of the person's message that started it
//! ([`RunRef`]). Invariants: feedback and item changes are append-only (triggers refuse
//! updates); an item's counters are computed from the outcomes of the runs that carried it,
//! never kept as numbers that could drift from them; an item's status and its change row are
//! one transaction.

use serde::Serialize;
use serde_json::Value;
use sqlx::Row;
use utoipa::ToSchema;
use wright_core::{
    AgentId, Author, CandidateDecision, CaseCheck, ItemAuthor, ItemStatus, LearnedKind, Outcome, OutcomeSource, Rating,
    ReplayPhase, RoundStatus, RoundTrigger,
};

use crate::catalog::decode;
use crate::documents::VersionMeta;
use crate::skills::SkillChange;
use crate::{Store, StoreError};

const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// One run: its conversation and the seq of the person's message that started it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize, ToSchema)]
pub struct RunRef {
    pub conversation_id: String,
    pub user_seq: i64,
}

/// A finished run's outcome, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunOutcomeRecord {
    pub conversation_id: String,
    pub user_seq: i64,
    pub end_seq: i64,
    pub outcome: Outcome,
    pub source: OutcomeSource,
    /// The person's message that started the run.
    pub request: String,
    /// The run's context held outside content (web pages, search results, MCP results).
    pub read_outside: bool,
    /// The latest rating the person gave this run, if any.
    pub rating: Option<Rating>,
    pub comment: Option<String>,
    pub finished_at: String,
}

/// What a finished run records.
#[derive(Debug, Clone)]
pub struct NewRunOutcome<'a> {
    pub agent: &'a AgentId,
    pub run: RunRef,
    pub end_seq: i64,
    pub outcome: Outcome,
    pub source: OutcomeSource,
    pub request: &'a str,
    pub read_outside: bool,
}

/// A case: a message to replay and the check that judges the replay.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Case {
    pub id: i64,
    pub message: String,
    pub check: CaseCheck,
    /// The conversation it was made from, if any.
    pub conversation_id: Option<String>,
    /// Training when a learned item names a run of its conversation; held-out otherwise.
    pub training: bool,
    pub created_at: String,
}

/// A learned item with its counters.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LearnedItem {
    pub id: i64,
    pub kind: LearnedKind,
    /// The words of the requests it is for.
    pub trigger: String,
    pub text: String,
    pub source_runs: Vec<RunRef>,
    /// Learned from a run whose context held outside content: never live without approval.
    pub read_outside: bool,
    pub status: ItemStatus,
    /// Its current version (one per change of status).
    pub version: i64,
    /// Later runs that carried it and succeeded, and that failed.
    pub used_success: i64,
    pub used_failure: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// One change of a learned item's status.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ItemChange {
    pub version: i64,
    pub status: ItemStatus,
    pub author: ItemAuthor,
    pub reason: String,
    pub created_at: String,
}

/// A learning round as listed: its progress and held-out pass counts before and after.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Round {
    pub id: i64,
    pub status: RoundStatus,
    pub trigger: RoundTrigger,
    pub replays_done: i64,
    pub replays_total: i64,
    pub held_out_total: i64,
    /// Held-out cases that passed with the items live before the round.
    pub passed_before: Option<i64>,
    /// Held-out cases that passed with the accepted candidates added.
    pub passed_after: Option<i64>,
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

/// One replay of a case in a round.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Replay {
    pub case_id: i64,
    /// The candidate of a `candidate` replay.
    pub item_id: Option<i64>,
    pub phase: ReplayPhase,
    pub passed: bool,
    pub detail: String,
}

/// A candidate of a round and what the round decided.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RoundCandidate {
    pub item: LearnedItem,
    pub decision: Option<CandidateDecision>,
    pub reason: Option<String>,
    pub added_tokens: i64,
}

/// The person's learning settings for an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema, Default)]
pub struct LearningSettings {
    /// Accepted items wait for the person's approval before they go live.
    pub require_approval: bool,
    /// A learning round runs every night.
    pub nightly: bool,
}

fn text_of(row: &sqlx::sqlite::SqliteRow, column: &str) -> Result<String, StoreError> {
    Ok(row.try_get::<String, _>(column)?)
}

impl Store {
    // ---- outcomes ----

    /// Records a finished run's outcome (replacing an earlier record of the same run: a run
    /// resumed after a pause finishes again), except that a check's or the person's verdict
    /// recorded earlier (a case made while the run waited) is kept over the run's own signals.
    pub async fn record_run_outcome(&self, new: &NewRunOutcome<'_>) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO run_outcomes (conversation_id, user_seq, agent_id, end_seq, outcome, source, request, read_outside)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (conversation_id, user_seq) DO UPDATE SET end_seq = excluded.end_seq,
                 outcome = CASE WHEN run_outcomes.source IN ('check', 'rating') THEN run_outcomes.outcome
                                ELSE excluded.outcome END,
                 source = CASE WHEN run_outcomes.source IN ('check', 'rating') THEN run_outcomes.source
                               ELSE excluded.source END,
                 read_outside = MAX(run_outcomes.read_outside, excluded.read_outside), updated_at = {NOW}"
        )))
        .bind(&new.run.conversation_id)
        .bind(new.run.user_seq)
        .bind(new.agent.as_str())
        .bind(new.end_seq)
        .bind(new.outcome.as_str())
        .bind(new.source.as_str())
        .bind(new.request)
        .bind(new.read_outside)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Sets the outcome of a recorded run (a check, a correction). Returns whether it existed.
    pub async fn set_run_outcome(
        &self,
        run: &RunRef,
        outcome: Outcome,
        source: OutcomeSource,
    ) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let changed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE run_outcomes SET outcome = ?, source = ?, updated_at = {NOW} WHERE conversation_id = ? AND user_seq = ?"
        )))
        .bind(outcome.as_str())
        .bind(source.as_str())
        .bind(&run.conversation_id)
        .bind(run.user_seq)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        transaction.commit().await?;
        Ok(changed > 0)
    }

    /// The recorded run of the conversation that holds event `seq` (the latest run that
    /// started at or before it), or the latest run when `seq` is `None`.
    pub async fn run_at(
        &self,
        conversation_id: &str,
        seq: Option<i64>,
    ) -> Result<Option<RunOutcomeRecord>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{OUTCOME_SELECT} WHERE o.conversation_id = ? AND o.user_seq <= ? ORDER BY o.user_seq DESC LIMIT 1"
        )))
        .bind(conversation_id)
        .bind(seq.unwrap_or(i64::MAX))
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(outcome_from_row).transpose()
    }

    /// Every recorded run of a conversation, in order.
    pub async fn conversation_runs(&self, conversation_id: &str) -> Result<Vec<RunOutcomeRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{OUTCOME_SELECT} WHERE o.conversation_id = ? ORDER BY o.user_seq"
        )))
        .bind(conversation_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(outcome_from_row).collect()
    }

    /// The agent's most recent finished runs, newest first.
    pub async fn recent_runs(&self, agent: &AgentId, limit: i64) -> Result<Vec<RunOutcomeRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{OUTCOME_SELECT} WHERE o.agent_id = ? ORDER BY o.finished_at DESC, o.user_seq DESC LIMIT ?"
        )))
        .bind(agent.as_str())
        .bind(limit)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(outcome_from_row).collect()
    }

    /// Stores the person's rating of a run and makes it the run's outcome (up: success, down:
    /// failure), one transaction.
    pub async fn rate_run(&self, run: &RunRef, rating: Rating, comment: Option<&str>) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query("INSERT INTO run_feedback (conversation_id, user_seq, rating, comment) VALUES (?, ?, ?, ?)")
            .bind(&run.conversation_id)
            .bind(run.user_seq)
            .bind(rating.as_str())
            .bind(comment)
            .execute(&mut *transaction)
            .await?;
        let outcome = match rating {
            Rating::Up => Outcome::Success,
            Rating::Down => Outcome::Failure,
        };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE run_outcomes SET outcome = ?, source = 'rating', updated_at = {NOW}
             WHERE conversation_id = ? AND user_seq = ?"
        )))
        .bind(outcome.as_str())
        .bind(&run.conversation_id)
        .bind(run.user_seq)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    // ---- cases ----

    pub async fn create_case(
        &self,
        agent: &AgentId,
        message: &str,
        check: &CaseCheck,
        conversation_id: Option<&str>,
    ) -> Result<Case, StoreError> {
        let limit = self.text_limits.max_document_bytes;
        if message.trim().is_empty() || message.len() > limit {
            return Err(StoreError::InvalidEdit(format!("a case's message must be 1 to {limit} bytes")));
        }
        let check_json = serde_json::to_string(check).map_err(decode)?;
        let mut transaction = self.begin_write().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO learning_cases (agent_id, message, check_json, conversation_id) VALUES (?, ?, ?, ?) RETURNING id",
        )
        .bind(agent.as_str())
        .bind(message)
        .bind(check_json)
        .bind(conversation_id)
        .fetch_one(&mut *transaction)
        .await?;
        transaction.commit().await?;
        self.case(agent, id).await?.ok_or(StoreError::ItemNotFound { kind: "case", name: id.to_string() })
    }

    pub async fn case(&self, agent: &AgentId, id: i64) -> Result<Option<Case>, StoreError> {
        Ok(self.cases(agent).await?.into_iter().find(|case| case.id == id))
    }

    /// The agent's cases, oldest first, each marked training or held-out.
    pub async fn cases(&self, agent: &AgentId) -> Result<Vec<Case>, StoreError> {
        let rows = sqlx::query(
            "SELECT c.id, c.message, c.check_json, c.conversation_id, c.created_at,
                    EXISTS (SELECT 1 FROM learned_items i, json_each(i.source_runs) s
                            WHERE i.agent_id = c.agent_id AND s.value ->> '$[0]' = c.conversation_id) AS training
             FROM learning_cases c WHERE c.agent_id = ? ORDER BY c.id",
        )
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Case {
                    id: row.try_get("id")?,
                    message: text_of(row, "message")?,
                    check: serde_json::from_str(&text_of(row, "check_json")?).map_err(decode)?,
                    conversation_id: row.try_get("conversation_id")?,
                    training: row.try_get("training")?,
                    created_at: text_of(row, "created_at")?,
                })
            })
            .collect()
    }

    pub async fn delete_case(&self, agent: &AgentId, id: i64) -> Result<bool, StoreError> {
        let mut transaction = self.begin_write().await?;
        let deleted = sqlx::query("DELETE FROM learning_cases WHERE agent_id = ? AND id = ?")
            .bind(agent.as_str())
            .bind(id)
            .execute(&mut *transaction)
            .await?
            .rows_affected();
        transaction.commit().await?;
        Ok(deleted > 0)
    }

    // ---- learned items ----

    /// Adds a candidate, or returns the item of the same kind and text the agent already has
    /// (`false`: it was not new).
    pub async fn add_candidate(
        &self,
        agent: &AgentId,
        kind: LearnedKind,
        trigger: &str,
        text: &str,
        sources: &[RunRef],
        read_outside: bool,
    ) -> Result<(LearnedItem, bool), StoreError> {
        let sources_json =
            Value::Array(sources.iter().map(|run| serde_json::json!([run.conversation_id, run.user_seq])).collect());
        let mut transaction = self.begin_write().await?;
        let inserted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO learned_items (agent_id, kind, trigger, text, source_runs, read_outside, status)
             VALUES (?, ?, ?, ?, ?, ?, 'candidate') ON CONFLICT DO NOTHING RETURNING id",
        )
        .bind(agent.as_str())
        .bind(kind.as_str())
        .bind(trigger)
        .bind(text)
        .bind(sources_json.to_string())
        .bind(read_outside)
        .fetch_optional(&mut *transaction)
        .await?;
        let id = match inserted {
            Some(id) => {
                sqlx::query(
                    "INSERT INTO learned_item_changes (item_id, version, status, author, reason)
                     VALUES (?, 1, 'candidate', 'learning', 'gathered from a run')",
                )
                .bind(id)
                .execute(&mut *transaction)
                .await?;
                id
            }
            None => {
                sqlx::query_scalar("SELECT id FROM learned_items WHERE agent_id = ? AND kind = ? AND text = ?")
                    .bind(agent.as_str())
                    .bind(kind.as_str())
                    .bind(text)
                    .fetch_one(&mut *transaction)
                    .await?
            }
        };
        transaction.commit().await?;
        let item = self
            .learned_item(agent, id)
            .await?
            .ok_or(StoreError::ItemNotFound { kind: "learned item", name: id.to_string() })?;
        Ok((item, inserted.is_some()))
    }

    /// Changes an item's status and records the change (one transaction); returns the item.
    /// A skill item's skill follows it in the same transaction: written as one of the agent's
    /// skills (a new version, author `agent`) when it goes live, deleted (a new version too)
    /// when it stops being live. A skill item cannot go live over a skill the agent already has.
    pub async fn set_item_status(
        &self,
        agent: &AgentId,
        id: i64,
        status: ItemStatus,
        author: ItemAuthor,
        reason: &str,
    ) -> Result<LearnedItem, StoreError> {
        let mut transaction = self.begin_write().await?;
        self.skill_follows_item(&mut transaction, agent, id, status, author, reason).await?;
        let changed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE learned_items SET status = ?, updated_at = {NOW} WHERE agent_id = ? AND id = ?"
        )))
        .bind(status.as_str())
        .bind(agent.as_str())
        .bind(id)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(StoreError::ItemNotFound { kind: "learned item", name: id.to_string() });
        }
        sqlx::query(
            "INSERT INTO learned_item_changes (item_id, version, status, author, reason)
             SELECT ?, COALESCE(MAX(version), 0) + 1, ?, ?, ? FROM learned_item_changes WHERE item_id = ?",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(author.as_str())
        .bind(reason)
        .bind(id)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        self.learned_item(agent, id)
            .await?
            .ok_or(StoreError::ItemNotFound { kind: "learned item", name: id.to_string() })
    }

    /// A skill item's skill follows its status, in the caller's transaction: written as one of
    /// the agent's skills when the item goes live (refused over a skill the agent already
    /// has), deleted when a live one leaves. Other kinds, and changes that keep the item on the
    /// same side of live, touch nothing.
    async fn skill_follows_item(
        &self,
        transaction: &mut sqlx::SqliteConnection,
        agent: &AgentId,
        id: i64,
        status: ItemStatus,
        author: ItemAuthor,
        reason: &str,
    ) -> Result<(), StoreError> {
        let before: Option<(String, String, String)> =
            sqlx::query_as("SELECT kind, status, text FROM learned_items WHERE agent_id = ? AND id = ?")
                .bind(agent.as_str())
                .bind(id)
                .fetch_optional(&mut *transaction)
                .await?;
        let Some((kind, previous, text)) = before else { return Ok(()) };
        let (was_live, going_live) = (previous == ItemStatus::Live.as_str(), status == ItemStatus::Live);
        if kind != LearnedKind::Skill.as_str() || was_live == going_live {
            return Ok(());
        }
        let name = wright_core::SkillFile::parse(&text)
            .map_err(|error| StoreError::InvalidEdit(format!("learned skill #{id}: {error}")))?
            .name;
        let by = if author == ItemAuthor::Person { Author::Admin } else { Author::Agent };
        let meta =
            VersionMeta { reason: Some(format!("learned item #{id} ({author}): {reason}")), ..VersionMeta::new(by) };
        let exists = Self::skill_exists(&mut *transaction, agent, &name).await?;
        match (going_live, exists) {
            (true, true) => return Err(StoreError::ItemExists { kind: "skill", name }),
            (true, false) => {
                let change = SkillChange::Write { content: text, resources: None };
                self.apply_skill_change(&mut *transaction, agent, &name, change, &meta).await?;
            }
            (false, true) => {
                self.apply_skill_change(&mut *transaction, agent, &name, SkillChange::Delete, &meta).await?;
            }
            // The person deleted it already: nothing to take away.
            (false, false) => {}
        }
        Ok(())
    }

    pub async fn learned_item(&self, agent: &AgentId, id: i64) -> Result<Option<LearnedItem>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{ITEM_SELECT} WHERE i.agent_id = ? AND i.id = ?")))
            .bind(agent.as_str())
            .bind(id)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(item_from_row).transpose()
    }

    /// The agent's learned items, newest first; only those in `status` when given.
    pub async fn learned_items(
        &self,
        agent: &AgentId,
        status: Option<ItemStatus>,
    ) -> Result<Vec<LearnedItem>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{ITEM_SELECT} WHERE i.agent_id = ? AND (? IS NULL OR i.status = ?) ORDER BY i.id DESC"
        )))
        .bind(agent.as_str())
        .bind(status.map(ItemStatus::as_str))
        .bind(status.map(ItemStatus::as_str))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(item_from_row).collect()
    }

    pub async fn item_changes(&self, id: i64) -> Result<Vec<ItemChange>, StoreError> {
        let rows = sqlx::query(
            "SELECT version, status, author, reason, created_at FROM learned_item_changes WHERE item_id = ? ORDER BY version",
        )
        .bind(id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ItemChange {
                    version: row.try_get("version")?,
                    status: ItemStatus::parse(&text_of(row, "status")?).map_err(decode)?,
                    author: ItemAuthor::parse(&text_of(row, "author")?).map_err(decode)?,
                    reason: text_of(row, "reason")?,
                    created_at: text_of(row, "created_at")?,
                })
            })
            .collect()
    }

    /// Records that a run's requests carried these items.
    pub async fn record_item_uses(&self, run: &RunRef, items: &[i64]) -> Result<(), StoreError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut transaction = self.begin_write().await?;
        for item in items {
            sqlx::query(
                "INSERT OR IGNORE INTO learned_item_uses (item_id, conversation_id, user_seq) VALUES (?, ?, ?)",
            )
            .bind(item)
            .bind(&run.conversation_id)
            .bind(run.user_seq)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Whether `run`'s requests carried item `id`.
    pub async fn item_was_used(&self, id: i64, run: &RunRef) -> Result<bool, StoreError> {
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM learned_item_uses WHERE item_id = ? AND conversation_id = ? AND user_seq = ?",
        )
        .bind(id)
        .bind(&run.conversation_id)
        .bind(run.user_seq)
        .fetch_optional(&self.reader)
        .await?;
        Ok(found.is_some())
    }

    // ---- rounds ----

    /// Starts a round, unless one of the agent's rounds is still running.
    pub async fn start_round(&self, agent: &AgentId, trigger: RoundTrigger) -> Result<Round, StoreError> {
        let mut transaction = self.begin_write().await?;
        let running: Option<i64> =
            sqlx::query_scalar("SELECT id FROM learning_rounds WHERE agent_id = ? AND status = 'running'")
                .bind(agent.as_str())
                .fetch_optional(&mut *transaction)
                .await?;
        if let Some(id) = running {
            return Err(StoreError::ItemExists { kind: "running learning round", name: id.to_string() });
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO learning_rounds (agent_id, status, trigger) VALUES (?, 'running', ?) RETURNING id",
        )
        .bind(agent.as_str())
        .bind(trigger.as_str())
        .fetch_one(&mut *transaction)
        .await?;
        transaction.commit().await?;
        self.round(agent, id).await?.ok_or(StoreError::ItemNotFound { kind: "learning round", name: id.to_string() })
    }

    /// Ends, as failed, rounds left running by a process that is gone (called at start).
    pub async fn fail_abandoned_rounds(&self) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE learning_rounds SET status = 'failed', error = 'the server stopped during the round',
             finished_at = {NOW} WHERE status = 'running'"
        )))
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn round_progress(&self, id: i64, done: i64, total: i64, held_out: i64) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query("UPDATE learning_rounds SET replays_done = ?, replays_total = ?, held_out_total = ? WHERE id = ?")
            .bind(done)
            .bind(total)
            .bind(held_out)
            .bind(id)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn finish_round(
        &self,
        id: i64,
        status: RoundStatus,
        passed: Option<(i64, i64)>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE learning_rounds SET status = ?, passed_before = ?, passed_after = ?, error = ?, finished_at = {NOW}
             WHERE id = ?"
        )))
        .bind(status.as_str())
        .bind(passed.map(|(before, _)| before))
        .bind(passed.map(|(_, after)| after))
        .bind(error)
        .bind(id)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn add_round_candidate(&self, round: i64, item: i64, added_tokens: i64) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "INSERT OR IGNORE INTO learning_round_candidates (round_id, item_id, added_tokens) VALUES (?, ?, ?)",
        )
        .bind(round)
        .bind(item)
        .bind(added_tokens)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn decide_candidate(
        &self,
        round: i64,
        item: i64,
        decision: CandidateDecision,
        reason: &str,
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query("UPDATE learning_round_candidates SET decision = ?, reason = ? WHERE round_id = ? AND item_id = ?")
            .bind(decision.as_str())
            .bind(reason)
            .bind(round)
            .bind(item)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn add_replay(&self, round: i64, replay: &Replay) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO learning_replays (round_id, case_id, item_id, phase, passed, detail) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(round)
        .bind(replay.case_id)
        .bind(replay.item_id)
        .bind(replay.phase.as_str())
        .bind(replay.passed)
        .bind(&replay.detail)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn rounds(&self, agent: &AgentId) -> Result<Vec<Round>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{ROUND_SELECT} WHERE agent_id = ? ORDER BY id")))
            .bind(agent.as_str())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(round_from_row).collect()
    }

    pub async fn round(&self, agent: &AgentId, id: i64) -> Result<Option<Round>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{ROUND_SELECT} WHERE agent_id = ? AND id = ?")))
            .bind(agent.as_str())
            .bind(id)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(round_from_row).transpose()
    }

    pub async fn round_candidates(&self, agent: &AgentId, round: i64) -> Result<Vec<RoundCandidate>, StoreError> {
        let rows = sqlx::query(
            "SELECT item_id, decision, reason, added_tokens FROM learning_round_candidates WHERE round_id = ? ORDER BY item_id",
        )
        .bind(round)
        .fetch_all(&self.reader)
        .await?;
        let mut candidates = Vec::new();
        for row in rows {
            let item_id: i64 = row.try_get("item_id")?;
            let Some(item) = self.learned_item(agent, item_id).await? else { continue };
            let decision: Option<String> = row.try_get("decision")?;
            candidates.push(RoundCandidate {
                item,
                decision: decision.as_deref().map(CandidateDecision::parse).transpose().map_err(decode)?,
                reason: row.try_get("reason")?,
                added_tokens: row.try_get("added_tokens")?,
            });
        }
        Ok(candidates)
    }

    pub async fn round_replays(&self, round: i64) -> Result<Vec<Replay>, StoreError> {
        let rows = sqlx::query(
            "SELECT case_id, item_id, phase, passed, detail FROM learning_replays WHERE round_id = ? ORDER BY id",
        )
        .bind(round)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Replay {
                    case_id: row.try_get("case_id")?,
                    item_id: row.try_get("item_id")?,
                    phase: ReplayPhase::parse(&text_of(row, "phase")?).map_err(decode)?,
                    passed: row.try_get("passed")?,
                    detail: text_of(row, "detail")?,
                })
            })
            .collect()
    }

    // ---- settings ----

    pub async fn learning_settings(&self, agent: &AgentId) -> Result<LearningSettings, StoreError> {
        let row: Option<(bool, bool)> =
            sqlx::query_as("SELECT require_approval, nightly FROM learning_settings WHERE agent_id = ?")
                .bind(agent.as_str())
                .fetch_optional(&self.reader)
                .await?;
        Ok(row.map(|(require_approval, nightly)| LearningSettings { require_approval, nightly }).unwrap_or_default())
    }

    pub async fn set_learning_settings(&self, agent: &AgentId, settings: LearningSettings) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO learning_settings (agent_id, require_approval, nightly) VALUES (?, ?, ?)
             ON CONFLICT (agent_id) DO UPDATE SET require_approval = excluded.require_approval, nightly = excluded.nightly",
        )
        .bind(agent.as_str())
        .bind(settings.require_approval)
        .bind(settings.nightly)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// The agents whose nightly round has not run on `day` (`YYYY-MM-DD`), marking each as run
    /// on that day (one transaction, so two processes never both start it).
    pub async fn take_nightly_agents(&self, day: &str) -> Result<Vec<AgentId>, StoreError> {
        let mut transaction = self.begin_write().await?;
        let agents: Vec<String> = sqlx::query_scalar(
            "UPDATE learning_settings SET last_nightly_day = ?
             WHERE nightly = 1 AND (last_nightly_day IS NULL OR last_nightly_day < ?) RETURNING agent_id",
        )
        .bind(day)
        .bind(day)
        .fetch_all(&mut *transaction)
        .await?;
        transaction.commit().await?;
        agents.iter().map(|agent| AgentId::parse(agent).map_err(decode)).collect()
    }
}

const OUTCOME_SELECT: &str = "SELECT o.conversation_id, o.user_seq, o.end_seq, o.outcome, o.source, o.request,
        o.read_outside, o.finished_at,
        (SELECT rating FROM run_feedback f WHERE f.conversation_id = o.conversation_id AND f.user_seq = o.user_seq
         ORDER BY f.id DESC LIMIT 1) AS rating,
        (SELECT comment FROM run_feedback f WHERE f.conversation_id = o.conversation_id AND f.user_seq = o.user_seq
         ORDER BY f.id DESC LIMIT 1) AS comment
    FROM run_outcomes o";

fn outcome_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<RunOutcomeRecord, StoreError> {
    let rating: Option<String> = row.try_get("rating")?;
    Ok(RunOutcomeRecord {
        conversation_id: text_of(row, "conversation_id")?,
        user_seq: row.try_get("user_seq")?,
        end_seq: row.try_get("end_seq")?,
        outcome: Outcome::parse(&text_of(row, "outcome")?).map_err(decode)?,
        source: OutcomeSource::parse(&text_of(row, "source")?).map_err(decode)?,
        request: text_of(row, "request")?,
        read_outside: row.try_get("read_outside")?,
        rating: rating.as_deref().map(Rating::parse).transpose().map_err(decode)?,
        comment: row.try_get("comment")?,
        finished_at: text_of(row, "finished_at")?,
    })
}

const ITEM_SELECT: &str = "SELECT i.id, i.kind, i.trigger, i.text, i.source_runs, i.read_outside, i.status,
        i.created_at, i.updated_at,
        (SELECT COALESCE(MAX(version), 1) FROM learned_item_changes c WHERE c.item_id = i.id) AS version,
        (SELECT COUNT(*) FROM learned_item_uses u JOIN run_outcomes o
            ON o.conversation_id = u.conversation_id AND o.user_seq = u.user_seq
         WHERE u.item_id = i.id AND o.outcome = 'success') AS used_success,
        (SELECT COUNT(*) FROM learned_item_uses u JOIN run_outcomes o
            ON o.conversation_id = u.conversation_id AND o.user_seq = u.user_seq
         WHERE u.item_id = i.id AND o.outcome = 'failure') AS used_failure
    FROM learned_items i";

fn item_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<LearnedItem, StoreError> {
    let sources: Vec<(String, i64)> = serde_json::from_str(&text_of(row, "source_runs")?).map_err(decode)?;
    Ok(LearnedItem {
        id: row.try_get("id")?,
        kind: LearnedKind::parse(&text_of(row, "kind")?).map_err(decode)?,
        trigger: text_of(row, "trigger")?,
        text: text_of(row, "text")?,
        source_runs: sources
            .into_iter()
            .map(|(conversation_id, user_seq)| RunRef { conversation_id, user_seq })
            .collect(),
        read_outside: row.try_get("read_outside")?,
        status: ItemStatus::parse(&text_of(row, "status")?).map_err(decode)?,
        version: row.try_get("version")?,
        used_success: row.try_get("used_success")?,
        used_failure: row.try_get("used_failure")?,
        created_at: text_of(row, "created_at")?,
        updated_at: text_of(row, "updated_at")?,
    })
}

const ROUND_SELECT: &str = "SELECT id, status, trigger, replays_done, replays_total, held_out_total, passed_before,
        passed_after, error, started_at, finished_at FROM learning_rounds";

fn round_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Round, StoreError> {
    Ok(Round {
        id: row.try_get("id")?,
        status: RoundStatus::parse(&text_of(row, "status")?).map_err(decode)?,
        trigger: RoundTrigger::parse(&text_of(row, "trigger")?).map_err(decode)?,
        replays_done: row.try_get("replays_done")?,
        replays_total: row.try_get("replays_total")?,
        held_out_total: row.try_get("held_out_total")?,
        passed_before: row.try_get("passed_before")?,
        passed_after: row.try_get("passed_after")?,
        error: row.try_get("error")?,
        started_at: text_of(row, "started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}
