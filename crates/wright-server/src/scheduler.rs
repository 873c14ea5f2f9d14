//! The scheduler: on every tick (`[schedules] tick_ms`) it asks the store which schedules came
//! due by the clock ([`Store::fire_due_schedules`](wright_store::Store::fire_due_schedules),
//! which applies the missed-run policy and the limits and records each decision), starts a run
//! for each time that runs — a new conversation of the agent, the prompt as its first message —
//! and, when a run it started has stopped, sends its result to the person as a notification.
//!
//! Everything it knows is in the store, so a restart loses nothing: a run whose conversation was
//! not made yet is started on the next tick; a run that was interrupted is reported when its
//! conversation is idle again; the result and the run's end are one transaction, sent once.
//!
//! One task, owned by the runtime, stopped by the server's shutdown token.

use std::time::Duration;

use wright_core::{AgentId, ConversationStatus, EventBody, UsageCaller};
use wright_store::{NewNotification, NotificationSource, RunOutcome, Schedule, ScheduleRun};

use crate::AppState;
use crate::domain::runs::Sender;

/// Starts the scheduler's task.
pub fn spawn(state: AppState) {
    let tick = Duration::from_millis(state.config.schedules.tick_ms.max(10));
    tokio::spawn(async move {
        loop {
            if let Err(error) = tick_once(&state).await {
                tracing::warn!(%error, "the scheduler's tick failed; trying again next tick");
            }
            tokio::select! {
                () = tokio::time::sleep(tick) => {}
                () = state.shutdown.cancelled() => return,
            }
        }
    });
}

/// One look at the store: start what came due, report what stopped.
pub async fn tick_once(state: &AppState) -> anyhow::Result<()> {
    for firing in state.schedules.fire_due().await? {
        match firing.run.outcome {
            RunOutcome::Started => {
                tracing::info!(schedule = firing.schedule.id, late_by_ms = firing.late_by_ms, "a schedule came due");
                start(state, &firing.schedule, &firing.run).await;
            }
            outcome => {
                tracing::info!(schedule = firing.schedule.id, ?outcome, "a schedule's time did not run");
            }
        }
    }
    for (schedule, run) in state.store.open_schedule_runs().await? {
        match &run.conversation_id {
            // Decided, but the process stopped before the run began: begin it now.
            None => start(state, &schedule, &run).await,
            Some(conversation_id) => report_if_stopped(state, &schedule, &run, conversation_id).await?,
        }
    }
    Ok(())
}

/// The first message of a scheduled run: says it is one, so the model knows nobody typed it.
fn prompt_message(schedule: &Schedule, run: &ScheduleRun) -> String {
    format!(
        "⏰ Scheduled task “{}” (due {}). Your answer will be sent to the person as a notification.\n\n{}",
        schedule.name,
        crate::domain::channel::when(run.due_at),
        schedule.prompt
    )
}

async fn start(state: &AppState, schedule: &Schedule, run: &ScheduleRun) {
    let Ok(agent) = AgentId::parse(&schedule.agent_id) else { return };
    // A budget already spent: the time is skipped and the person told, rather than a run
    // started only to stop at its first request.
    match state.ledger.spent_budget(&agent, state.config.agent.reserve_output_tokens as u64).await {
        Ok(Some(why)) => {
            let notification = NewNotification {
                source: NotificationSource::Schedule,
                title: format!("⏰ {} skipped: over budget", schedule.name),
                text: why,
                conversation_id: None,
                schedule_id: Some(schedule.id),
            };
            match state.store.complete_schedule_run(&agent, run.id, RunOutcome::SkippedBudget, &notification).await {
                Ok(_) => tracing::info!(schedule = schedule.id, "a scheduled run was skipped: a budget is spent"),
                Err(error) => tracing::warn!(%error, "could not record a scheduled run skipped over budget"),
            }
            return;
        }
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "cannot check the budgets before a scheduled run; running it"),
    }
    let conversation_id = uuid::Uuid::now_v7().to_string();
    let title = format!("⏰ {}", schedule.name);
    let started = async {
        state.store.create_conversation(&agent, &conversation_id, &title).await?;
        state.store.set_schedule_run_conversation(run.id, &conversation_id).await?;
        Ok::<_, wright_store::StoreError>(())
    }
    .await;
    if let Err(error) = started {
        tracing::warn!(%error, schedule = schedule.id, "could not open the scheduled run's conversation");
        return;
    }
    if let Err(error) = state
        .runs
        .send_message(&conversation_id, &prompt_message(schedule, run), Sender::Person, UsageCaller::Schedule)
        .await
    {
        // No model, most likely: the person hears why at once.
        let notification = NewNotification {
            source: NotificationSource::Schedule,
            title: format!("⏰ {} could not run", schedule.name),
            text: error.to_string(),
            conversation_id: Some(conversation_id),
            schedule_id: Some(schedule.id),
        };
        if let Err(error) = state.store.complete_schedule_run(&agent, run.id, RunOutcome::Failed, &notification).await {
            tracing::warn!(%error, "could not record a scheduled run that did not start");
        }
    }
}

/// When the run's conversation is no longer running, sends its last answer to the person and
/// ends the run — once.
async fn report_if_stopped(
    state: &AppState,
    schedule: &Schedule,
    run: &ScheduleRun,
    conversation_id: &str,
) -> anyhow::Result<()> {
    let agent = AgentId::parse(&schedule.agent_id)?;
    // A run whose process died is ended first, so it does not count as running forever.
    state.runs.recover_if_orphaned(conversation_id).await.map_err(|error| anyhow::anyhow!("{error}"))?;
    let conversation = match state.store.conversation(conversation_id).await {
        Ok(conversation) => conversation,
        Err(wright_store::StoreError::ConversationNotFound(_)) => {
            // The person deleted it meanwhile: nothing to report.
            state.store.finish_schedule_run(run.id, RunOutcome::Failed).await?;
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    let (outcome, text) = match conversation.status {
        ConversationStatus::Running => return Ok(()),
        ConversationStatus::Waiting => {
            (RunOutcome::Finished, "It is waiting for your answer: open the conversation to reply.".to_owned())
        }
        ConversationStatus::Error => (RunOutcome::Failed, last_words(state, conversation_id, true).await?),
        ConversationStatus::Idle => (RunOutcome::Finished, last_words(state, conversation_id, false).await?),
    };
    let max = state.store.notify_config().max_chars.max(16);
    let text = if text.chars().count() > max { text.chars().take(max - 1).collect::<String>() + "…" } else { text };
    let notification = NewNotification {
        source: NotificationSource::Schedule,
        title: format!("⏰ {}", schedule.name),
        text,
        conversation_id: Some(conversation_id.to_owned()),
        schedule_id: Some(schedule.id),
    };
    state.store.complete_schedule_run(&agent, run.id, outcome, &notification).await?;
    Ok(())
}

/// The run's last answer (or, after a failure, its last notice).
async fn last_words(state: &AppState, conversation_id: &str, failed: bool) -> anyhow::Result<String> {
    let events = state.store.events_after(conversation_id, 0).await?;
    let answer = events.iter().rev().find_map(|stored| match &stored.event.body {
        EventBody::Assistant { .. } if !stored.event.content.trim().is_empty() && !failed => {
            Some(stored.event.content.clone())
        }
        EventBody::Notice(_) if failed => Some(stored.event.content.clone()),
        EventBody::User { .. } => Some(String::new()),
        _ => None,
    });
    Ok(match answer {
        Some(text) if !text.is_empty() => text,
        _ if failed => "The run failed.".to_owned(),
        _ => "The run ended without an answer.".to_owned(),
    })
}
