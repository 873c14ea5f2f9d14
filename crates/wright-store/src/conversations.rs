//! Conversations, their canonical events, the tool calls that wait for the person, and who
//! owns each conversation's run.
//!
//! Events are append-only and numbered from 1 per conversation; the number is taken inside
//! the write, so concurrent appends never collide. Bodies are [`EventBody`]: one typed form,
//! stored as its JSON without the `kind` tag (the `kind` column).
//!
//! A run is owned through the store. A running conversation names its owner (a process) and
//! a lease time; claiming, finishing, parking and answering are each one transaction that
//! checks and moves those columns. Hence:
//! - two requests, or two processes, never both run a conversation;
//! - an answer given while the turn still runs is stored and the run that owns the
//!   conversation goes on instead of parking (the park and the answer are serialized by the
//!   write lock: whichever commits second sees the other);
//! - the result that closes a turn and the status change commit together;
//! - **the pairing invariant**: whenever a run ends other than by parking (cancel, failure,
//!   a dead owner's recovery), every tool call without a result gets one that says why, and
//!   calls still waiting are closed, so every call a model sees has exactly one result right
//!   after its assistant message.
//!
//! A pending call is answered at most once: the `UPDATE … WHERE status = 'pending'` that
//! answers it is the only check, so two answers racing from two tabs cannot both win.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::SqliteConnection;
use wright_core::{
    AgentId, ApprovedCall, ConversationStatus, Event, EventBody, EventKind, NewEvent, PendingKind, ToolPolicy,
    Unfinished, transcript_line,
};

use crate::{Store, StoreError};

/// A conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conversation {
    pub id: String,
    pub agent_id: String,
    pub title: String,
    pub status: ConversationStatus,
    pub created_at: String,
    pub updated_at: String,
}

/// A stored event with its time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    #[serde(flatten)]
    pub event: Event,
    pub created_at: String,
}

/// A tool call waiting for the person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingCall {
    /// The row's number: a short, stable handle (a Telegram button carries it).
    pub id: i64,
    pub tool_call_id: String,
    pub tool_name: String,
    /// An answer to give, or an approval to run the call.
    pub kind: PendingKind,
    pub args: Value,
    /// What the canvas renders (render_and_wait's compiled component), or null.
    pub render: Value,
    pub created_at: String,
}

/// Who claims a run, and for how long the claim holds unless renewed.
#[derive(Debug, Clone, Copy)]
pub struct Lease<'a> {
    pub owner: &'a str,
    pub seconds: u64,
}

impl Lease<'_> {
    fn until_modifier(&self) -> String {
        format!("+{} seconds", self.seconds)
    }
}

/// A conversation whose run another process (or this one) owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedRun {
    pub conversation_id: String,
    pub owner: String,
    /// The lease ran out without being renewed: its owner is gone or stuck.
    pub expired: bool,
}

/// The outcome of trying to take a conversation's run.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The run is ours; the events stored with the claim, in order.
    Claimed(Vec<StoredEvent>),
    /// Another live claim holds it.
    Busy { owner: String },
}

/// What answering a pending call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// It was the last call waiting and no run held the conversation: the run is now claimed
    /// for the caller, who resumes it.
    Resume,
    /// A run holds the conversation (the answer came while its turn still runs); it picks the
    /// answer up. `owner` is the holder.
    RunGoing { owner: String },
    /// Other calls still wait.
    StillWaiting,
}

/// What becomes the result of an answered pending call.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerResult {
    /// The answer itself (ask_user, a form, a component).
    TheAnswer,
    /// This event (an approval the person refused).
    Event(NewEvent),
    /// Nothing yet: the call was approved and the run that resumes runs it.
    RunTheCall,
}

/// How a run ends: the events that close it and the status they leave.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// Stored after any results the sweep adds.
    pub closing: Vec<NewEvent>,
    pub status: ConversationStatus,
    /// Close every call still open (without a result, waiting or not) with this reason.
    pub close_open_calls: Option<Unfinished>,
}

/// What finishing a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finished {
    /// The run is over and released; the events stored, in order.
    Ended(Vec<StoredEvent>),
    /// The run was to park, but every call it parked was answered meanwhile: it keeps the
    /// conversation and goes on.
    Continue(Vec<StoredEvent>),
}

type ConversationRow = (String, String, String, String, String, String);

fn conversation_from_row(
    (id, agent_id, title, status, created_at, updated_at): ConversationRow,
) -> Result<Conversation, StoreError> {
    let status = ConversationStatus::parse(&status).map_err(decode)?;
    Ok(Conversation { id, agent_id, title, status, created_at, updated_at })
}

fn decode(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(Box::new(error)))
}

const CONVERSATION_COLUMNS: &str = "id, agent_id, title, status, created_at, updated_at";
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// A tool result as stored: the line a person reads and its body.
pub fn tool_result_event(tool_call_id: &str, name: &str, output: Value, success: bool) -> NewEvent {
    NewEvent::new(
        transcript_line(&output),
        EventBody::ToolResult {
            tool_call_id: tool_call_id.to_owned(),
            name: name.to_owned(),
            output,
            success,
            outside_origin: None,
        },
    )
}

/// Appends events in order and returns them with their numbers and times.
///
/// One statement numbers and inserts them all (the MAX is read under the statement's own
/// write lock), so several events — a reply and its tool calls — land together or not at all
/// without BEGIN and COMMIT, and any number of them is one round trip to SQLite: the loop
/// stores a few per tool turn and this is its main cost. The conversation's `updated_at`
/// follows by trigger.
async fn insert_events(
    connection: &mut SqliteConnection,
    conversation_id: &str,
    events: &[NewEvent],
) -> Result<Vec<StoredEvent>, StoreError> {
    const INSERT: &str = "WITH base(last) AS (SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = ?1) \
         INSERT INTO events (conversation_id, seq, kind, content, data_json) \
         SELECT ?1, base.last + 1 + batch.key, batch.value ->> '$[0]', batch.value ->> '$[1]', batch.value ->> '$[2]' \
         FROM base, json_each(?2) AS batch ORDER BY batch.key \
         RETURNING seq, created_at";
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let batch = Value::Array(
        events
            .iter()
            .map(|event| json!([event.body.kind().as_str(), event.content, event.body.to_data_json().to_string()]))
            .collect(),
    )
    .to_string();
    let mut rows: Vec<(i64, String)> =
        sqlx::query_as(INSERT).bind(conversation_id).bind(batch).fetch_all(&mut *connection).await.map_err(
            |error| match &error {
                sqlx::Error::Database(database) if database.is_foreign_key_violation() => {
                    StoreError::ConversationNotFound(conversation_id.to_owned())
                }
                _ => StoreError::Database(error),
            },
        )?;
    // RETURNING comes in no promised order; seq is the order.
    rows.sort_unstable_by_key(|(seq, _)| *seq);
    if rows.len() != events.len() {
        let message = format!("stored {} of {} events", rows.len(), events.len());
        return Err(StoreError::Database(sqlx::Error::Protocol(message)));
    }
    Ok(rows
        .into_iter()
        .zip(events)
        .map(|((seq, created_at), event)| StoredEvent {
            event: Event { seq, content: event.content.clone(), body: event.body.clone() },
            created_at,
        })
        .collect())
}

/// Takes the run if no live claim holds it: one conditional UPDATE decides.
async fn claim_in(
    connection: &mut SqliteConnection,
    conversation_id: &str,
    lease: Lease<'_>,
) -> Result<Claim, StoreError> {
    let claimed = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE conversations SET status = 'running', run_owner = ?, run_lease_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?), \
         updated_at = {NOW} WHERE id = ? AND (run_owner IS NULL OR run_lease_until < {NOW})"
    )))
    .bind(lease.owner)
    .bind(lease.until_modifier())
    .bind(conversation_id)
    .execute(&mut *connection)
    .await?;
    if claimed.rows_affected() == 1 {
        return Ok(Claim::Claimed(Vec::new()));
    }
    let owner: Option<(Option<String>,)> = sqlx::query_as("SELECT run_owner FROM conversations WHERE id = ?")
        .bind(conversation_id)
        .fetch_optional(&mut *connection)
        .await?;
    match owner {
        None => Err(StoreError::ConversationNotFound(conversation_id.to_owned())),
        Some((owner,)) => Ok(Claim::Busy { owner: owner.unwrap_or_default() }),
    }
}

/// Gives every open call of the conversation's latest turns a result with `reason`, and
/// closes the calls among them that were still waiting. A call is open when it has no
/// result after it (ids are matched in order: providers may reuse an id in a later turn).
async fn close_open_calls(
    connection: &mut SqliteConnection,
    conversation_id: &str,
    reason: Unfinished,
) -> Result<Vec<StoredEvent>, StoreError> {
    // Calls can only be open after the person's last message: a message closes every
    // call before it (dismissing those that wait) in the transaction that stores it.
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT kind, data_json FROM events WHERE conversation_id = ?1 AND kind IN ('tool_call', 'tool_result') \
         AND seq > (SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = ?1 AND kind = 'user') ORDER BY seq",
    )
    .bind(conversation_id)
    .fetch_all(&mut *connection)
    .await?;
    let mut open: Vec<(String, String)> = Vec::new();
    for (kind, data_json) in rows {
        let kind = EventKind::parse(&kind).map_err(decode)?;
        let data = serde_json::from_str(&data_json).map_err(decode)?;
        match EventBody::from_stored(kind, data).map_err(decode)? {
            EventBody::ToolCall { id, name, .. } => open.push((id, name)),
            EventBody::ToolResult { tool_call_id, .. } => {
                if let Some(index) = open.iter().position(|(id, _)| *id == tool_call_id) {
                    open.remove(index);
                }
            }
            _ => {}
        }
    }
    let mut results = Vec::with_capacity(open.len());
    for (id, name) in &open {
        let body = EventBody::unfinished_result(id, name, reason);
        let output = match &body {
            EventBody::ToolResult { output, .. } => output.clone(),
            _ => Value::Null,
        };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE pending_calls SET status = 'dismissed', answer = ?, answered_at = {NOW} \
             WHERE conversation_id = ? AND tool_call_id = ? AND status = 'pending'"
        )))
        .bind(output.to_string())
        .bind(conversation_id)
        .bind(id)
        .execute(&mut *connection)
        .await?;
        results.push(NewEvent::new(transcript_line(&output), body));
    }
    // A pending row whose call event is missing (a crash between the two writes) is closed too.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE pending_calls SET status = 'dismissed', answer = 'null', answered_at = {NOW} \
         WHERE conversation_id = ? AND status = 'pending'"
    )))
    .bind(conversation_id)
    .execute(&mut *connection)
    .await?;
    insert_events(connection, conversation_id, &results).await
}

async fn conversation_in<'e>(executor: impl sqlx::SqliteExecutor<'e>, id: &str) -> Result<Conversation, StoreError> {
    let row: Option<ConversationRow> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?")))
            .bind(id)
            .fetch_optional(executor)
            .await?;
    row.map(conversation_from_row).transpose()?.ok_or_else(|| StoreError::ConversationNotFound(id.to_owned()))
}

async fn events_in<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    conversation_id: &str,
    after: i64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows: Vec<(i64, String, String, String, String)> = sqlx::query_as(
        "SELECT seq, kind, content, data_json, created_at FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq",
    )
    .bind(conversation_id)
    .bind(after)
    .fetch_all(executor)
    .await?;
    rows.into_iter()
        .map(|(seq, kind, content, data_json, created_at)| {
            let kind = EventKind::parse(&kind).map_err(decode)?;
            let data = serde_json::from_str(&data_json).map_err(decode)?;
            let body = EventBody::from_stored(kind, data).map_err(decode)?;
            Ok(StoredEvent { event: Event { seq, content, body }, created_at })
        })
        .collect()
}

async fn pending_in<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    conversation_id: &str,
) -> Result<Vec<PendingCall>, StoreError> {
    let rows: Vec<PendingRow> = sqlx::query_as(
        "SELECT id, tool_call_id, tool_name, kind, args, render, created_at FROM pending_calls \
         WHERE conversation_id = ? AND status = 'pending' ORDER BY id",
    )
    .bind(conversation_id)
    .fetch_all(executor)
    .await?;
    rows.into_iter().map(pending_from_row).collect()
}

type PendingRow = (i64, String, String, String, String, String, String);

fn pending_from_row(row: PendingRow) -> Result<PendingCall, StoreError> {
    let (id, tool_call_id, tool_name, kind, args, render, created_at) = row;
    Ok(PendingCall {
        id,
        tool_call_id,
        tool_name,
        kind: PendingKind::parse(&kind).map_err(decode)?,
        args: serde_json::from_str(&args).map_err(decode)?,
        render: serde_json::from_str(&render).map_err(decode)?,
        created_at,
    })
}

async fn pending_count(connection: &mut SqliteConnection, conversation_id: &str) -> Result<i64, StoreError> {
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM pending_calls WHERE conversation_id = ? AND status = 'pending'")
            .bind(conversation_id)
            .fetch_one(&mut *connection)
            .await?;
    Ok(count)
}

impl Store {
    pub async fn create_conversation(
        &self,
        agent: &AgentId,
        id: &str,
        title: &str,
    ) -> Result<Conversation, StoreError> {
        self.require_agent(agent).await?;
        // A conversation belongs to the session open when it starts (dividing first if the
        // schedule says a new session has begun).
        let session = self.current_session(agent).await?;
        let mut transaction = self.begin_write().await?;
        sqlx::query("INSERT INTO conversations (id, agent_id, title, session_id) VALUES (?, ?, ?, ?)")
            .bind(id)
            .bind(agent.as_str())
            .bind(title)
            .bind(session.id)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        self.conversation(id).await
    }

    /// The session a conversation belongs to (None for one older than sessions).
    pub async fn conversation_session_id(&self, id: &str) -> Result<Option<i64>, StoreError> {
        let session: Option<Option<i64>> = sqlx::query_scalar("SELECT session_id FROM conversations WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.reader)
            .await?;
        session.ok_or_else(|| StoreError::ConversationNotFound(id.to_owned()))
    }

    pub async fn conversation(&self, id: &str) -> Result<Conversation, StoreError> {
        conversation_in(&self.reader, id).await
    }

    /// The conversation, its events and its waiting calls as of one moment (one read
    /// transaction), so a status is never read from before a run's end and its events from
    /// after (the end writes both at once).
    pub async fn conversation_snapshot(
        &self,
        id: &str,
    ) -> Result<(Conversation, Vec<StoredEvent>, Vec<PendingCall>), StoreError> {
        let mut transaction = self.reader.begin().await?;
        let conversation = conversation_in(&mut *transaction, id).await?;
        let events = events_in(&mut *transaction, id, 0).await?;
        let pending = pending_in(&mut *transaction, id).await?;
        transaction.commit().await?;
        Ok((conversation, events, pending))
    }

    /// The agent's conversations, most recently active first, archived ones left out.
    pub async fn list_conversations(&self, agent: &AgentId) -> Result<Vec<Conversation>, StoreError> {
        self.require_agent(agent).await?;
        let rows: Vec<ConversationRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE agent_id = ? AND archived_at IS NULL \
             ORDER BY updated_at DESC, id DESC"
        )))
        .bind(agent.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(conversation_from_row).collect()
    }

    /// Appends events in order (one statement) and returns them numbered.
    pub async fn append_events(
        &self,
        conversation_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let mut connection = self.writer.acquire().await?;
        insert_events(&mut connection, conversation_id, events).await
    }

    /// Events with `seq > after`, in order.
    pub async fn events_after(&self, conversation_id: &str, after: i64) -> Result<Vec<StoredEvent>, StoreError> {
        events_in(&self.reader, conversation_id, after).await
    }

    /// Records a call that waits for the person.
    pub async fn create_pending_call(
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        kind: PendingKind,
        args: &Value,
        render: &Value,
    ) -> Result<(), StoreError> {
        let mut transaction = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO pending_calls (conversation_id, tool_call_id, tool_name, kind, args, render) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(conversation_id)
        .bind(tool_call_id)
        .bind(tool_name)
        .bind(kind.as_str())
        .bind(args.to_string())
        .bind(render.to_string())
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Calls of the conversation still waiting, oldest first.
    pub async fn pending_calls(&self, conversation_id: &str) -> Result<Vec<PendingCall>, StoreError> {
        pending_in(&self.reader, conversation_id).await
    }

    /// A pending call by its row number, answered or not: its conversation, the call, and
    /// whether it still waits. None when there is no such row.
    pub async fn pending_call_by_id(&self, id: i64) -> Result<Option<(String, PendingCall, bool)>, StoreError> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT conversation_id, status FROM pending_calls WHERE id = ?")
                .bind(id)
                .fetch_optional(&self.reader)
                .await?;
        let Some((conversation_id, status)) = row else { return Ok(None) };
        let call: PendingRow = sqlx::query_as(
            "SELECT id, tool_call_id, tool_name, kind, args, render, created_at FROM pending_calls WHERE id = ?",
        )
        .bind(id)
        .fetch_one(&self.reader)
        .await?;
        Ok(Some((conversation_id, pending_from_row(call)?, status == "pending")))
    }

    /// Takes the conversation's run for `lease.owner`, or says who holds it.
    pub async fn claim_run(&self, conversation_id: &str, lease: Lease<'_>) -> Result<Claim, StoreError> {
        let mut transaction = self.begin_write().await?;
        let claim = claim_in(&mut transaction, conversation_id, lease).await?;
        transaction.commit().await?;
        Ok(claim)
    }

    /// Claims the run and stores the person's message, in one transaction. Calls still
    /// waiting are dismissed first, each with its `{"action": "dismissed"}` result, so the
    /// message never separates a call from its result.
    pub async fn start_run_with_message(
        &self,
        conversation_id: &str,
        lease: Lease<'_>,
        message: &NewEvent,
    ) -> Result<Claim, StoreError> {
        let mut transaction = self.begin_write().await?;
        if let busy @ Claim::Busy { .. } = claim_in(&mut transaction, conversation_id, lease).await? {
            return Ok(busy);
        }
        let waiting: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT tool_call_id, tool_name, kind FROM pending_calls WHERE conversation_id = ? AND status = 'pending' \
             ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&mut *transaction)
        .await?;
        let dismissed = json!({"action": "dismissed"});
        let mut events: Vec<NewEvent> = Vec::with_capacity(waiting.len() + 1);
        for (tool_call_id, tool_name, kind) in &waiting {
            events.push(if kind == PendingKind::Approval.as_str() {
                // The call never ran: say so, as a failure the model can read.
                let refused = json!({
                    "error": "not run: the person sent a new message instead of approving this call",
                    "category": "dismissed",
                });
                tool_result_event(tool_call_id, tool_name, refused, false)
            } else {
                tool_result_event(tool_call_id, tool_name, dismissed.clone(), true)
            });
        }
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE pending_calls SET status = 'dismissed', answer = ?, answered_at = {NOW} \
             WHERE conversation_id = ? AND status = 'pending'"
        )))
        .bind(dismissed.to_string())
        .bind(conversation_id)
        .execute(&mut *transaction)
        .await?;
        events.push(message.clone());
        let stored = insert_events(&mut transaction, conversation_id, &events).await?;
        transaction.commit().await?;
        Ok(Claim::Claimed(stored))
    }

    /// Answers a pending call: closes it, stores its result, and — when it was the last call
    /// waiting and no run holds the conversation — claims the run for `lease.owner`, all in
    /// one transaction. The result is the answer itself (a question), `result` when given (a
    /// refused approval), or none yet (an approved call: the run that resumes runs it; see
    /// [`approved_calls`](Self::approved_calls)). Fails with [`StoreError::AlreadyAnswered`]
    /// if it was closed before, and [`StoreError::PendingNotFound`] if there is no such call.
    pub async fn answer_pending_call(
        &self,
        conversation_id: &str,
        tool_call_id: &str,
        answer: &Value,
        result: AnswerResult,
        lease: Lease<'_>,
    ) -> Result<(Answered, Vec<StoredEvent>), StoreError> {
        let mut transaction = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE pending_calls SET status = 'answered', answer = ?, answered_at = {NOW} \
             WHERE conversation_id = ? AND tool_call_id = ? AND status = 'pending' RETURNING tool_name"
        )))
        .bind(answer.to_string())
        .bind(conversation_id)
        .bind(tool_call_id)
        .fetch_optional(&mut *transaction)
        .await?;
        let Some((tool_name,)) = row else {
            let exists: Option<(i64,)> =
                sqlx::query_as("SELECT 1 FROM pending_calls WHERE conversation_id = ? AND tool_call_id = ?")
                    .bind(conversation_id)
                    .bind(tool_call_id)
                    .fetch_optional(&mut *transaction)
                    .await?;
            return Err(if exists.is_some() {
                StoreError::AlreadyAnswered(tool_call_id.to_owned())
            } else {
                StoreError::PendingNotFound(tool_call_id.to_owned())
            });
        };
        let result = match result {
            AnswerResult::TheAnswer => Some(tool_result_event(tool_call_id, &tool_name, answer.clone(), true)),
            AnswerResult::Event(event) => Some(event),
            AnswerResult::RunTheCall => None,
        };
        let stored = insert_events(&mut transaction, conversation_id, result.as_slice()).await?;
        let answered = if pending_count(&mut transaction, conversation_id).await? > 0 {
            Answered::StillWaiting
        } else {
            match claim_in(&mut transaction, conversation_id, lease).await? {
                Claim::Claimed(_) => Answered::Resume,
                Claim::Busy { owner } => Answered::RunGoing { owner },
            }
        };
        transaction.commit().await?;
        Ok((answered, stored))
    }

    /// Ends the run `owner` holds: stores `end`'s closing events (after the results of any
    /// calls it closes) and its status together, and releases the run. A run that would park
    /// with no call left waiting (all were answered during its turn) keeps the conversation
    /// and gets [`Finished::Continue`]. Fails with [`StoreError::RunNotOwned`] when `owner`
    /// does not hold the run (its lease ran out and another process recovered it).
    pub async fn finish_run(&self, conversation_id: &str, owner: &str, end: &RunEnd) -> Result<Finished, StoreError> {
        let mut transaction = self.begin_write().await?;
        let holder: Option<(Option<String>,)> = sqlx::query_as("SELECT run_owner FROM conversations WHERE id = ?")
            .bind(conversation_id)
            .fetch_optional(&mut *transaction)
            .await?;
        match holder {
            None => return Err(StoreError::ConversationNotFound(conversation_id.to_owned())),
            Some((Some(holder),)) if holder == owner => {}
            Some(_) => return Err(StoreError::RunNotOwned(conversation_id.to_owned())),
        }
        let mut stored = match end.close_open_calls {
            Some(reason) => close_open_calls(&mut transaction, conversation_id, reason).await?,
            None => Vec::new(),
        };
        stored.extend(insert_events(&mut transaction, conversation_id, &end.closing).await?);
        if end.status == ConversationStatus::Waiting && pending_count(&mut transaction, conversation_id).await? == 0 {
            transaction.commit().await?;
            return Ok(Finished::Continue(stored));
        }
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE conversations SET status = ?, run_owner = NULL, run_lease_until = NULL, updated_at = {NOW} WHERE id = ?"
        )))
        .bind(end.status.as_str())
        .bind(conversation_id)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(Finished::Ended(stored))
    }

    /// Extends the lease of every run `lease.owner` holds; returns how many.
    pub async fn renew_leases(&self, lease: Lease<'_>) -> Result<u64, StoreError> {
        let mut transaction = self.begin_write().await?;
        let renewed = sqlx::query(
            "UPDATE conversations SET run_lease_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?) WHERE run_owner = ?",
        )
        .bind(lease.until_modifier())
        .bind(lease.owner)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(renewed.rows_affected())
    }

    /// Calls the person approved whose result is not stored yet, oldest first. The arguments
    /// are the edited ones when the answer carries `arguments`.
    pub async fn approved_calls(&self, conversation_id: &str) -> Result<Vec<ApprovedCall>, StoreError> {
        // A call id may come back in a later turn: a result counts only after the latest
        // call event with that id.
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT p.tool_call_id, p.tool_name, p.args, p.answer FROM pending_calls p \
             WHERE p.conversation_id = ?1 AND p.kind = 'approval' AND p.status = 'answered' \
             AND p.answer ->> '$.decision' IN ('approve', 'always') \
             AND NOT EXISTS (SELECT 1 FROM events r WHERE r.conversation_id = ?1 AND r.kind = 'tool_result' \
                 AND r.data_json ->> '$.tool_call_id' = p.tool_call_id \
                 AND r.seq > (SELECT COALESCE(MAX(c.seq), 0) FROM events c WHERE c.conversation_id = ?1 \
                     AND c.kind = 'tool_call' AND c.data_json ->> '$.id' = p.tool_call_id)) \
             AND EXISTS (SELECT 1 FROM events c WHERE c.conversation_id = ?1 AND c.kind = 'tool_call' \
                 AND c.data_json ->> '$.id' = p.tool_call_id) \
             ORDER BY p.id",
        )
        .bind(conversation_id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(tool_call_id, tool_name, args, answer)| {
                let answer: Value = serde_json::from_str(&answer).map_err(decode)?;
                let arguments = match answer.get("arguments") {
                    Some(edited) if edited.is_object() => edited.clone(),
                    _ => serde_json::from_str(&args).map_err(decode)?,
                };
                Ok(ApprovedCall { tool_call_id, tool_name, arguments })
            })
            .collect()
    }

    /// The agent's own policies, by tool name (tools without one follow their default).
    pub async fn tool_policies(&self, agent: &AgentId) -> Result<Vec<(String, ToolPolicy)>, StoreError> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT tool_name, policy FROM tool_policies WHERE agent_id = ? ORDER BY tool_name")
                .bind(agent.as_str())
                .fetch_all(&self.reader)
                .await?;
        rows.into_iter().map(|(name, policy)| Ok((name, ToolPolicy::parse(&policy).map_err(decode)?))).collect()
    }

    /// The agent's own policy for one tool, if it set one.
    pub async fn tool_policy(&self, agent: &AgentId, tool_name: &str) -> Result<Option<ToolPolicy>, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT policy FROM tool_policies WHERE agent_id = ? AND tool_name = ?")
                .bind(agent.as_str())
                .bind(tool_name)
                .fetch_optional(&self.reader)
                .await?;
        row.map(|(policy,)| ToolPolicy::parse(&policy).map_err(decode)).transpose()
    }

    /// Sets the agent's policy for a tool, or (None) removes it so the tool's default applies.
    pub async fn set_tool_policy(
        &self,
        agent: &AgentId,
        tool_name: &str,
        policy: Option<ToolPolicy>,
    ) -> Result<(), StoreError> {
        self.require_agent(agent).await?;
        let mut transaction = self.begin_write().await?;
        match policy {
            Some(policy) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO tool_policies (agent_id, tool_name, policy) VALUES (?, ?, ?) \
                     ON CONFLICT (agent_id, tool_name) DO UPDATE SET policy = excluded.policy, updated_at = {NOW}"
                )))
                .bind(agent.as_str())
                .bind(tool_name)
                .bind(policy.as_str())
                .execute(&mut *transaction)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM tool_policies WHERE agent_id = ? AND tool_name = ?")
                    .bind(agent.as_str())
                    .bind(tool_name)
                    .execute(&mut *transaction)
                    .await?;
            }
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The claim on one conversation's run, if it is held.
    pub async fn claimed_run(&self, conversation_id: &str) -> Result<Option<ClaimedRun>, StoreError> {
        let row: Option<(String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT run_owner, COALESCE(run_lease_until < {NOW}, 1) FROM conversations \
             WHERE id = ? AND run_owner IS NOT NULL"
        )))
        .bind(conversation_id)
        .fetch_optional(&self.reader)
        .await?;
        Ok(row.map(|(owner, expired)| ClaimedRun { conversation_id: conversation_id.to_owned(), owner, expired }))
    }

    /// Every conversation whose run is held, with its owner and whether the lease ran out.
    pub async fn claimed_runs(&self) -> Result<Vec<ClaimedRun>, StoreError> {
        let rows: Vec<(String, String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, run_owner, COALESCE(run_lease_until < {NOW}, 1) FROM conversations \
             WHERE run_owner IS NOT NULL ORDER BY id"
        )))
        .fetch_all(&self.reader)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(conversation_id, owner, expired)| ClaimedRun { conversation_id, owner, expired })
            .collect())
    }
}
