//! `wright chat`: the same loop as the canvas, in a terminal. It runs in process (no HTTP):
//! the conversation lives in the app database like any other, so the canvas shows it too.
//! Text streams as it arrives; every tool call and result is shown; a question the agent asks
//! (`ask_user`, a form) is answered at the prompt.

use std::io::{BufRead, Write};

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use wright_core::{AgentId, ConversationStatus, EventBody, Shown};

use crate::AppState;
use crate::domain::hub::Update;

/// Runs an interactive chat with `agent` until end of input.
pub async fn chat(state: AppState, agent: &AgentId) -> anyhow::Result<()> {
    if let Err(problem) = state.runs.provider_info(agent).await {
        anyhow::bail!("{problem}");
    }
    let id = uuid::Uuid::now_v7().to_string();
    let conversation = state.store.create_conversation(agent, &id, "Terminal chat").await?;
    eprintln!("Chatting with {agent} (conversation {}). End with Ctrl-D.", conversation.id);
    let mut lines = std::io::stdin().lock().lines();
    loop {
        eprint!("\n> ");
        let Some(line) = lines.next().transpose()? else { break };
        if line.trim().is_empty() {
            continue;
        }
        let mut updates = state.hub.subscribe(&id);
        state
            .runs
            .send_message(&id, &line, crate::domain::runs::Sender::Person, wright_core::UsageCaller::Person)
            .await
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        loop {
            match follow_run(&mut updates).await {
                RunEnd::Idle | RunEnd::Error => break,
                RunEnd::Waiting => {
                    for call in state.store.pending_calls(&id).await? {
                        let presentation = state.tools.presentation(&call.tool_name);
                        let shown = Shown::of(call.kind, presentation, &call.tool_name, &call.args, &call.render);
                        let answer = match shown {
                            Some(Shown::Approval { tool, arguments, reason }) => {
                                if let Some(reason) = reason {
                                    eprintln!("\n  ({reason})");
                                }
                                approve(&tool, &arguments, &mut lines)?
                            }
                            Some(shown) => ask(&shown, &mut lines)?,
                            None => ask_any(&call.tool_name, &call.args, &mut lines)?,
                        };
                        state
                            .runs
                            .answer_pending(&id, &call.tool_call_id, answer)
                            .await
                            .map_err(|error| anyhow::anyhow!("{error}"))?;
                    }
                }
            }
        }
    }
    Ok(())
}

enum RunEnd {
    Idle,
    Waiting,
    Error,
}

/// Prints the run's updates until its status says it stopped.
async fn follow_run(updates: &mut crate::domain::hub::Subscription) -> RunEnd {
    let mut stdout = std::io::stdout();
    loop {
        match updates.recv().await {
            Ok(Update::Delta { text }) => {
                print!("{text}");
                stdout.flush().ok();
            }
            Ok(Update::Event(stored)) => match stored.event.body {
                EventBody::ToolCall { .. } => eprintln!("\n  ⚙ {}", stored.event.content),
                EventBody::ToolResult { success, .. } => {
                    let marker = if success { "→" } else { "✗" };
                    eprintln!("  {marker} {}", stored.event.content);
                }
                EventBody::Notice(_) => eprintln!("\n  ℹ {}", stored.event.content),
                EventBody::User { .. } | EventBody::Assistant { .. } => {}
            },
            Ok(Update::Status { status, error }) => match status {
                ConversationStatus::Idle => {
                    println!();
                    return RunEnd::Idle;
                }
                ConversationStatus::Waiting => return RunEnd::Waiting,
                ConversationStatus::Error => {
                    eprintln!("\n  error: {}", error.unwrap_or_default());
                    return RunEnd::Error;
                }
                ConversationStatus::Running => {}
            },
            Ok(Update::Notification(_) | Update::Waiting { .. }) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return RunEnd::Error,
        }
    }
}

/// Asks the person at the terminal whether a call its policy marks `ask` may run.
fn approve(
    tool: &str,
    args: &Value,
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<Value> {
    eprint!("\n  The agent wants to run {tool}({args}). Run it? [y]es / [n]o / [a]lways for {tool}: ");
    let reply = lines.next().transpose()?.unwrap_or_default();
    let decision = match reply.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => "approve",
        "a" | "always" => "always",
        _ => "deny",
    };
    Ok(json!({ "decision": decision }))
}

/// Asks the person at the terminal what a pausing call asks, and shapes the answer as the
/// canvas would.
fn ask(shown: &Shown, lines: &mut impl Iterator<Item = std::io::Result<String>>) -> anyhow::Result<Value> {
    let mut read = |prompt: &str| -> anyhow::Result<String> {
        eprint!("{prompt}");
        Ok(lines.next().transpose()?.unwrap_or_default())
    };
    match shown {
        Shown::Question { question, options } => {
            eprintln!("\n? {question}");
            if options.is_empty() {
                return Ok(json!({ "answer": read("answer: ")? }));
            }
            for (index, option) in options.iter().enumerate() {
                eprintln!("  {}. {option}", index + 1);
            }
            let picked = read("choose a number: ")?;
            let index: usize = picked.trim().parse().unwrap_or(1);
            let answer = options.get(index.saturating_sub(1)).cloned().unwrap_or_default();
            Ok(json!({ "answer": answer }))
        }
        Shown::Form { blocks, .. } => {
            eprintln!("\n{}", serde_json::to_string_pretty(blocks)?);
            let Some(form) = blocks.iter().find(|block| block["type"] == "form") else {
                read("(press Enter to dismiss) ")?;
                return Ok(json!({ "action": "dismissed" }));
            };
            let mut data = serde_json::Map::new();
            for field in form["fields"].as_array().into_iter().flatten() {
                let name = field["name"].as_str().unwrap_or_default();
                let raw = read(&format!("{}: ", field["label"].as_str().unwrap_or(name)))?;
                let value = match field["type"].as_str() {
                    Some("number") => raw.trim().parse::<f64>().map(Value::from).unwrap_or(Value::Null),
                    Some("checkbox") => Value::Bool(matches!(raw.trim(), "y" | "yes" | "true" | "1")),
                    _ => Value::String(raw),
                };
                data.insert(name.to_owned(), value);
            }
            Ok(json!({ "action": "submit", "data": data }))
        }
        Shown::Component { name, title, props, .. } => {
            let what = title.as_deref().or(name.as_deref()).unwrap_or("A component");
            eprintln!("\n{what} (shown in the canvas) with {}", serde_json::to_string_pretty(props)?);
            answer_as_json(&mut read)
        }
        Shown::Approval { tool, arguments, .. } => {
            eprintln!("\n{tool} waits for approval with {}", serde_json::to_string_pretty(arguments)?);
            answer_as_json(&mut read)
        }
    }
}

/// A waiting call of a tool that no longer pauses: shown as its arguments, answered as JSON.
fn ask_any(
    tool: &str,
    args: &Value,
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<Value> {
    eprintln!("\n{tool} wants an answer (shown in the canvas): {}", serde_json::to_string_pretty(args)?);
    answer_as_json(&mut |prompt: &str| -> anyhow::Result<String> {
        eprint!("{prompt}");
        Ok(lines.next().transpose()?.unwrap_or_default())
    })
}

fn answer_as_json(read: &mut impl FnMut(&str) -> anyhow::Result<String>) -> anyhow::Result<Value> {
    let raw = read("answer as JSON (empty to dismiss): ")?;
    Ok(if raw.trim().is_empty() { json!({ "action": "dismissed" }) } else { serde_json::from_str(&raw)? })
}
