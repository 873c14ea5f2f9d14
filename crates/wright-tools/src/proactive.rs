//! The agent acting on its own (seed 001's future `notify`; issue 19): `notify` sends the
//! person a message outside a run — to the canvas, and to Telegram when it is configured —
//! and `schedule` makes, lists and cancels prompts that run later, on a cron expression in a
//! time zone or once at a time. The server's scheduler starts those runs; their results reach
//! the person as notifications.
//!
//! Both only write the store (a notification row is also the channels' outbox; a schedule row
//! is what the scheduler reads), so they behave the same from the CLI, the API and a run, and
//! their limits are checked in the store's transaction: `[notify]` and `[schedules]`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wright_core::iso_from_ms;
use wright_schedules::{NewSchedule, Timing};
use wright_store::{NewNotification, NotificationSource, Schedule, ScheduleAuthor};

use crate::ToolError;
use crate::builtin::{Builtin, SCHEDULES, SENDS_OUT, Tool, with_effects};

const SCHEDULE: &str = "schedule";

#[derive(Deserialize, JsonSchema)]
pub(crate) struct NotifyArgs {
    /// The message, short and self-contained: the person may read it on a phone, outside this
    /// conversation. Markdown is allowed.
    text: String,
    /// A few words saying what it is about (shown as the notification's title).
    title: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ScheduleAction {
    Create,
    List,
    Cancel,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ScheduleArgs {
    /// create a schedule, list the live ones, or cancel one.
    action: ScheduleAction,
    /// create: a short unique name (e.g. "morning digest"). cancel: the name or id to cancel.
    name: Option<String>,
    /// create: what to do when it runs, written as the person's request to you (you will get it
    /// as a message then, in a new conversation; its result is sent to the person).
    prompt: Option<String>,
    /// create, repeating: a five-field cron expression, minute hour day-of-month month
    /// day-of-week, e.g. "0 8 * * 1-5" for 08:00 on weekdays. Give `cron` or `at`, not both.
    cron: Option<String>,
    /// create, once: a local date and time in `time_zone`, e.g. "2026-12-24T18:00".
    at: Option<String>,
    /// The IANA time zone `cron` and `at` are read in, e.g. "Europe/Oslo"; default the
    /// person's zone (the one the current time in your context is given in).
    time_zone: Option<String>,
}

/// A schedule as the model reads it.
#[derive(Serialize)]
struct ScheduleView {
    id: i64,
    name: String,
    prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cron: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    time_zone: String,
    status: wright_store::ScheduleStatus,
    /// UTC.
    next_run_at: Option<String>,
}

impl From<Schedule> for ScheduleView {
    fn from(schedule: Schedule) -> Self {
        Self {
            id: schedule.id,
            name: schedule.name,
            prompt: schedule.prompt,
            cron: schedule.cron,
            at: schedule.run_at.map(iso_from_ms),
            time_zone: schedule.time_zone,
            status: schedule.status,
            next_run_at: schedule.next_run_at.map(iso_from_ms),
        }
    }
}

fn to_value(value: impl Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|error| ToolError::Internal(error.to_string()))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        with_effects(
            Builtin::<NotifyArgs>::boxed(
                "notify",
                "Send the person a notification: shown in the canvas and sent to their Telegram when it is \
             set up, even when they are not looking at this conversation. Use it for what they asked to \
             be told about (a result of a scheduled task, something they wait for), not for replies \
             here. Rate-limited per hour. Returns {success, notification_id}.",
                |context, args| {
                    Box::pin(async move {
                        let store = &context.services.store;
                        let title =
                            args.title.filter(|title| !title.trim().is_empty()).unwrap_or_else(|| "Message".into());
                        let notification = NewNotification {
                            source: NotificationSource::Agent,
                            title,
                            text: args.text,
                            conversation_id: context.conversation_id.clone(),
                            schedule_id: None,
                        };
                        let stored = store.add_notification(&context.agent, &notification).await?;
                        Ok(json!({ "success": true, "notification_id": stored.id }))
                    })
                },
            ),
            SENDS_OUT,
        ),
        with_effects(
            Builtin::<ScheduleArgs>::boxed(
                SCHEDULE,
                "Run a prompt later, by yourself: a reminder or a task, repeating on a cron expression or \
             once at a local time, in a time zone (the person's own unless given). At the time you get the prompt as a message in a new conversation, and \
             your answer is sent to the person as a notification. action=create needs name, prompt and \
             cron or at; list shows the live schedules; cancel needs name (or the id). Schedules are \
             limited in number and in how often they run. Returns {success, schedule} or \
             {success, schedules}.",
                |context, args| {
                    Box::pin(async move {
                        let store = &context.services.store;
                        let missing = |field| ToolError::missing_field(SCHEDULE, "create", field);
                        match args.action {
                            ScheduleAction::Create => {
                                let name = args.name.ok_or_else(|| missing("name"))?;
                                let prompt = args.prompt.ok_or_else(|| missing("prompt"))?;
                                // The person's zone ([sessions]): "tomorrow at 9" means their 9.
                                let time_zone = args.time_zone.unwrap_or_else(|| store.time_zone_name());
                                // An empty field is an absent one: models fill every field of a schema
                                // and write `"cron": ""` beside the `at` they mean.
                                let given = |field: Option<String>| field.filter(|value| !value.trim().is_empty());
                                let timing = match (given(args.cron), given(args.at)) {
                                    (Some(cron), None) => Timing::Cron(cron),
                                    (None, Some(at)) => Timing::Once(wright_schedules::local_time(&at, &time_zone)?),
                                    (cron, at) => {
                                        // Both, as the real 1.5B sent after being told the cron: say
                                        // which to keep for which request.
                                        let problem = match (cron, at) {
                                            (Some(cron), Some(at)) => format!(
                                                "create takes one of `cron` or `at`, and both were sent: send `cron` \
                                                 {cron:?} alone to repeat it, or `at` {at:?} alone for once"
                                            ),
                                            _ => "create needs `cron` (repeating) or `at` (once)".to_owned(),
                                        };
                                        return Err(ToolError::InvalidArguments {
                                            tool: SCHEDULE.into(),
                                            problems: vec![problem],
                                        });
                                    }
                                };
                                let new = NewSchedule {
                                    name,
                                    prompt,
                                    timing,
                                    time_zone,
                                    created_by: ScheduleAuthor::Agent,
                                    conversation_id: context.conversation_id.clone(),
                                };
                                let schedule = context.services.schedules.create(&context.agent, &new).await?;
                                Ok(json!({ "success": true, "schedule": to_value(ScheduleView::from(schedule))? }))
                            }
                            ScheduleAction::List => {
                                let schedules: Vec<ScheduleView> = store
                                    .list_schedules(&context.agent, false)
                                    .await?
                                    .into_iter()
                                    .map(ScheduleView::from)
                                    .collect();
                                Ok(json!({ "success": true, "schedules": to_value(schedules)? }))
                            }
                            ScheduleAction::Cancel => {
                                let name =
                                    args.name.ok_or_else(|| ToolError::missing_field(SCHEDULE, "cancel", "name"))?;
                                let found = store.find_live_schedule(&context.agent, &name).await?;
                                let cancelled = store.cancel_schedule(&context.agent, found.id).await?;
                                Ok(json!({ "success": true, "schedule": to_value(ScheduleView::from(cancelled))? }))
                            }
                        }
                    })
                },
            ),
            SCHEDULES,
        ),
    ]
}
