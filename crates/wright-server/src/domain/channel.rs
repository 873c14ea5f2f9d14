//! The one way into a conversation, whichever channel the person talks through — the canvas
//! (the HTTP API) or Telegram. A message is read here: a command (`/newsession [name]`,
//! `/cancel`, `/codestats`, `/codefailures [n] [conversation|session]`, `/usage [since]`, `/help`) is carried out and answered with
//! text; anything else starts a run through [`Runs`](crate::domain::runs::Runs). Answers to pending
//! calls and cancels go through the same functions, so a conversation's runs, pauses, limits
//! and "answered once" behave the same from either place: the store decides, whichever place
//! answers first wins, the other gets `already answered`.
//!
//! What the agent says goes back out through the [`Hub`](crate::domain::hub::Hub): the canvas's event
//! stream and the Telegram chat bound to the conversation both follow it.

use serde_json::Value;
use wright_core::{AgentId, UsageCaller, iso_from_ms};
use wright_store::{ExecutionFilter, ExecutionStats, StoredExecution};

use super::DomainError;
use super::sessions::{NewSession, start_for_person};
use crate::AppState;
use crate::domain::runs::Sender;

/// The commands a person can type in any channel (seed 001's Telegram commands).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/newsession [name]`: end the session, start a new one and a conversation in it.
    NewSession(Option<String>),
    /// `/cancel`: stop the run in this conversation.
    Cancel,
    /// `/codestats`: the last 7 days of tool calls.
    CodeStats,
    /// `/codefailures [n] [conversation|session]`: the last n failed calls (default 5, at most
    /// 20) of the agent, or only of this conversation or of its session.
    CodeFailures { count: usize, scope: FailureScope },
    /// `/usage [since]`: tokens and cost by agent, since the start of the month (or `7d`, a day).
    Usage(Option<String>),
    /// `/help` (and Telegram's `/start`).
    Help,
}

/// Which failures `/codefailures` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureScope {
    /// Every conversation of the agent.
    Agent,
    /// The conversation the command was typed in.
    Conversation,
    /// The conversations of that conversation's session.
    Session,
}

pub const DEFAULT_FAILURES: usize = 5;
pub const MAX_FAILURES: usize = 20;

/// The command `text` is, if it is one. `bot` is the bot's username, for Telegram's
/// `/command@bot` form; a command addressed to another bot is not ours.
pub fn parse_command(text: &str, bot: Option<&str>) -> Option<Command> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (word, argument) = match rest.find(char::is_whitespace) {
        Some(at) => (&rest[..at], rest[at..].trim()),
        None => (rest, ""),
    };
    let name = match word.split_once('@') {
        Some((name, addressee)) if bot.is_some_and(|bot| bot.eq_ignore_ascii_case(addressee)) => name,
        Some(_) => return None,
        None => word,
    };
    Some(match name {
        "newsession" => Command::NewSession((!argument.is_empty()).then(|| argument.to_owned())),
        "cancel" => Command::Cancel,
        "codestats" => Command::CodeStats,
        "codefailures" => {
            let mut count = DEFAULT_FAILURES;
            let mut scope = FailureScope::Agent;
            for word in argument.split_whitespace() {
                match word {
                    "conversation" | "here" => scope = FailureScope::Conversation,
                    "session" => scope = FailureScope::Session,
                    number => count = number.parse::<usize>().unwrap_or(DEFAULT_FAILURES),
                }
            }
            Command::CodeFailures { count: count.clamp(1, MAX_FAILURES), scope }
        }
        "usage" => Command::Usage((!argument.is_empty()).then(|| argument.to_owned())),
        "help" | "start" => Command::Help,
        _ => return None,
    })
}

/// What came of a message.
#[derive(Debug)]
pub enum Reply {
    /// A run started; its progress arrives on the hub.
    RunStarted,
    /// `/newsession`: a session and a conversation in it.
    SessionStarted(NewSession),
    /// A command's answer: one or more texts (Markdown), each its own message in a chat.
    Text(Vec<String>),
}

/// Reads the person's (or a component's) message to a conversation: a command is carried out,
/// anything else is sent to the agent. Only the person's messages can be commands.
pub async fn send(
    state: &AppState,
    conversation_id: &str,
    text: &str,
    sender: Sender,
    caller: UsageCaller,
) -> Result<Reply, DomainError> {
    if matches!(sender, Sender::Person)
        && let Some(command) = parse_command(text, None)
    {
        return run_command(state, conversation_id, command).await;
    }
    state.runs.send_message(conversation_id, text, sender, caller).await?;
    Ok(Reply::RunStarted)
}

/// Carries out a command in the conversation's context.
pub async fn run_command(state: &AppState, conversation_id: &str, command: Command) -> Result<Reply, DomainError> {
    let conversation = state.store.conversation(conversation_id).await?;
    let agent = AgentId::parse(&conversation.agent_id)?;
    match command {
        Command::NewSession(name) => {
            let started = start_for_person(&state.store, &agent, name.as_deref()).await?;
            Ok(Reply::SessionStarted(started))
        }
        Command::Cancel => {
            let running = state.store.conversation(conversation_id).await?.status;
            cancel(state, conversation_id).await?;
            Ok(Reply::Text(vec![match running {
                wright_core::ConversationStatus::Running => "Cancelling the run.".to_owned(),
                _ => "Nothing is running.".to_owned(),
            }]))
        }
        Command::CodeStats => Ok(Reply::Text(vec![code_stats(&state.store.execution_stats(&agent, 7).await?)])),
        Command::CodeFailures { count, scope } => {
            let mut filter =
                ExecutionFilter { success: Some(false), limit: Some(count as i64), ..ExecutionFilter::default() };
            match scope {
                FailureScope::Agent => {}
                FailureScope::Conversation => filter.conversation_id = Some(conversation_id.to_owned()),
                FailureScope::Session => match state.store.session_of_conversation(conversation_id).await? {
                    Some(session) => filter.session_id = Some(session),
                    // Not in a session: its session is this conversation alone.
                    None => filter.conversation_id = Some(conversation_id.to_owned()),
                },
            }
            Ok(Reply::Text(code_failures(&state.store.list_executions(&agent, &filter).await?)))
        }
        Command::Usage(since) => {
            let since = match wright_store::usage::parse_since(since.as_deref(), state.store.clock().now_ms()) {
                Ok(since) => since,
                Err(problem) => return Ok(Reply::Text(vec![problem])),
            };
            state.ledger.written(std::time::Duration::from_secs(1)).await;
            let (rows, totals) = state.store.usage_summary(since, wright_store::UsageGrouping::Agent).await?;
            let mut text = crate::domain::usage::report_text(&rows, &totals, wright_store::UsageGrouping::Agent, since);
            let this = state.store.conversation_usage(conversation_id).await?;
            text.push_str(&format!(
                "This conversation: {} prompt tokens ({} cached), {} completion tokens, ${:.4}",
                this.totals.prompt_tokens,
                this.totals.cached_prompt_tokens,
                this.totals.completion_tokens,
                this.totals.cost_usd
            ));
            Ok(Reply::Text(vec![text]))
        }
        Command::Help => Ok(Reply::Text(vec![HELP.to_owned()])),
    }
}

/// Answers a call that waits for the person; accepted once, from whichever place answers first.
pub async fn answer(
    state: &AppState,
    conversation_id: &str,
    tool_call_id: &str,
    answer: Value,
) -> Result<(), DomainError> {
    state.runs.answer_pending(conversation_id, tool_call_id, answer).await
}

/// Stops the conversation's run, if one is going.
pub async fn cancel(state: &AppState, conversation_id: &str) -> Result<(), DomainError> {
    state.runs.cancel(conversation_id).await
}

pub const HELP: &str = "Talk to me as you would in the canvas. Commands:\n\
/newsession [name] — start a new session (and a new conversation)\n\
/cancel — stop what I am doing\n\
/codestats — tool calls of the last 7 days\n\
/codefailures [n] [conversation|session] — the last n failed tool calls (default 5), of all or only here\n\
/usage [since] — tokens and cost by agent (this month, or 7d, 24h, a day)\n\
/help — this list";

/// Seed 001's `/codestats` text, over the tool calls the admin page counts.
pub fn code_stats(stats: &ExecutionStats) -> String {
    let mut text = format!(
        "📊 Code Execution Stats ({} days)\n\nTotal: {}\n✅ Success: {}\n❌ Failed: {}\n⏱ Avg duration: {}ms\n\nTop error categories:",
        stats.days,
        stats.total,
        stats.successful,
        stats.failed,
        stats.avg_duration_ms.round() as i64
    );
    if stats.top_error_categories.is_empty() {
        text.push_str("\n  • none");
    }
    for (category, count) in &stats.top_error_categories {
        text.push_str(&format!("\n  • {category}: {count}"));
    }
    text
}

/// Seed 001's `/codefailures` texts: one message per failure, its code (the `code` argument,
/// else the arguments as JSON) and its error, cut at 500 and 300 characters.
pub fn code_failures(failures: &[StoredExecution]) -> Vec<String> {
    if failures.is_empty() {
        return vec!["No recent failures! 🎉".to_owned()];
    }
    failures
        .iter()
        .map(|failure| {
            let (code, language) = match failure.args.get("code").and_then(Value::as_str) {
                Some(code) => (code.to_owned(), "javascript"),
                None => (serde_json::to_string_pretty(&failure.args).unwrap_or_default(), "json"),
            };
            let error = failure.error.clone().unwrap_or_default();
            format!(
                "❌ {} #{}\nCategory: {}\nTime: {}\n\nCode:\n```{language}\n{}\n```\n\nError:\n```\n{}\n```",
                failure.tool_name,
                failure.id,
                failure.error_category.as_deref().unwrap_or("unknown"),
                failure.created_at,
                fence_safe(&cut(&code, 500)),
                fence_safe(&cut(&error, 300)),
            )
        })
        .collect()
}

/// The first `max` characters of `text`, with `...` when cut (as the seed does).
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push_str("...");
    cut
}

/// A text that cannot close the code fence it is shown in.
fn fence_safe(text: &str) -> String {
    text.replace("```", "ˋˋˋ")
}

/// A time for a person: UTC, to the minute.
pub fn when(ms: i64) -> String {
    let iso = iso_from_ms(ms);
    format!("{} UTC", iso.get(..16).unwrap_or(&iso).replace('T', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_as_telegram_and_the_canvas_send_them() {
        assert_eq!(parse_command("/newsession Tax return", None), Some(Command::NewSession(Some("Tax return".into()))));
        assert_eq!(parse_command("/newsession", None), Some(Command::NewSession(None)));
        let failures = |count, scope| Some(Command::CodeFailures { count, scope });
        assert_eq!(parse_command("/codefailures 3", None), failures(3, FailureScope::Agent));
        assert_eq!(parse_command("/codefailures 999", None), failures(MAX_FAILURES, FailureScope::Agent));
        assert_eq!(parse_command("/codefailures", None), failures(DEFAULT_FAILURES, FailureScope::Agent));
        assert_eq!(parse_command("/codefailures 2 session", None), failures(2, FailureScope::Session));
        assert_eq!(
            parse_command("/codefailures conversation", None),
            failures(DEFAULT_FAILURES, FailureScope::Conversation)
        );
        assert_eq!(parse_command("/cancel@wright_bot", Some("wright_bot")), Some(Command::Cancel));
        assert_eq!(parse_command("/cancel@other_bot", Some("wright_bot")), None);
        assert_eq!(parse_command("/start", None), Some(Command::Help));
        assert_eq!(parse_command("/usage", None), Some(Command::Usage(None)));
        assert_eq!(parse_command("/usage 7d", None), Some(Command::Usage(Some("7d".into()))));
        assert_eq!(parse_command("/newsessions", None), None);
        assert_eq!(parse_command("please /cancel", None), None);
    }
}
