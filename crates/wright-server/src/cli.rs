//! The command line: `wright serve`, `wright tool call`, `wright prompt|notes …`,
//! `wright memory list|recall|forget|restore`, `wright conversation export`, `wright openapi`. Arguments are parsed here; the work is done by the library crates.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::Value;
use wright_core::Invocation;
use wright_core::{AgentId, DocumentKind};
use wright_store::Store;
use wright_tools::ToolRegistry;

use crate::token::{Auth, TokenSource};
use crate::{AppState, Config};

#[derive(Parser)]
#[command(name = "wright", version, about = "A self-hosted, self-modifying personal agent platform")]
pub struct Cli {
    /// Where Wright keeps its data: the app database, agent files, the token, config.toml.
    #[arg(long, global = true, env = "WRIGHT_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API and the canvas app.
    Serve {
        /// Address to listen on (default 127.0.0.1:8080, or [server] bind in config.toml).
        #[arg(long)]
        bind: Option<SocketAddr>,
    },
    /// Chat with an agent in the terminal, with every tool call shown.
    Chat {
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Call tools without a model or a server.
    Tool {
        #[command(subcommand)]
        command: ToolCommand,
    },
    /// Inspect and roll back an agent's system prompt.
    Prompt {
        #[command(subcommand)]
        command: DocumentCommand,
    },
    /// Inspect and roll back an agent's learned notes.
    Notes {
        #[command(subcommand)]
        command: DocumentCommand,
    },
    /// Inspect and roll back an agent's notes on its database tables.
    DbNotes {
        #[command(subcommand)]
        command: DocumentCommand,
    },
    /// Import, export and list an agent's skills (folders in the Agent Skills layout).
    Skill {
        #[command(subcommand)]
        command: SkillCommand,
    },
    /// Run a JavaScript file in the sandbox, with timings.
    Sandbox {
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// Ask the egress policy about a URL.
    Egress {
        #[command(subcommand)]
        command: EgressCommand,
    },
    /// The marketplace: list, publish, install, export and import bundles.
    Market {
        #[command(subcommand)]
        command: MarketCommand,
    },
    /// An agent's memories: list, recall, forget and restore (as the person: author `admin`).
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// What model requests used and cost, from the usage ledger.
    Usage {
        /// `7d`, `24h`, a UTC day (`2026-11-01`) or an RFC 3339 time; default: this month.
        #[arg(long)]
        since: Option<String>,
        /// Group by agent, model, day or caller.
        #[arg(long, default_value = "day")]
        by: String,
        /// Print the JSON of `GET /api/usage`.
        #[arg(long)]
        json: bool,
    },
    /// Run one learning round for an agent here and print its result: candidates from recent
    /// runs, replayed on the held-out cases in scratch copies of the agent's data (issue 31).
    Learn {
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Conversations: export one as Markdown or JSON.
    Conversation {
        #[command(subcommand)]
        command: ConversationCommand,
    },
    /// Print the OpenAPI document of the HTTP API.
    Openapi,
}

#[derive(Subcommand)]
enum ConversationCommand {
    /// Write a conversation as Markdown (what was said, tool calls folded) or JSON (the typed
    /// events): to standard output, or to a file with `-o`.
    Export {
        /// The conversation's id (its address in the canvas ends with it).
        id: String,
        #[arg(long, value_enum, default_value = "md")]
        format: crate::export::ExportFormat,
        /// The file to write; standard output when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Memories newest first, one per line.
    List {
        /// long, mid, short or session.
        #[arg(long)]
        layer: Option<String>,
        /// Forgotten and expired memories instead of active ones.
        #[arg(long)]
        archived: bool,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Memories matching the words of QUERY, most relevant first.
    Recall {
        query: String,
        #[arg(long)]
        layer: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Archive a memory as forgotten.
    Forget {
        id: i64,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Bring back a forgotten or expired memory.
    Restore {
        id: i64,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
}

#[derive(Subcommand)]
enum SandboxCommand {
    /// Run FILE as the body of an async function (as a tool's code) and print the result.
    Run {
        file: PathBuf,
        /// `args` for the code, as JSON.
        #[arg(long, default_value = "{}")]
        args: String,
        /// A file whose text the code reads as `input`.
        #[arg(long)]
        input: Option<PathBuf>,
        /// Run it this many times and report the median, p95 and runs per second.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Untimed runs before the timed ones.
        #[arg(long, default_value_t = 0)]
        warmup: usize,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The agent whose state the code reads and writes.
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
}

#[derive(Subcommand)]
enum EgressCommand {
    /// Print allow or deny for URL, with each address and the rule that decided.
    Check { url: String },
}

#[derive(Subcommand)]
enum MarketCommand {
    /// Listings, optionally matching words in their name or description.
    List {
        query: Option<String>,
        /// Show at most this many.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// Skip this many first.
        #[arg(long, default_value_t = 0)]
        offset: u64,
    },
    /// Publish an agent's tool (or component) as the next version of its listing.
    Publish {
        name: String,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
        #[arg(long, default_value = "tool")]
        kind: String,
    },
    /// Install a listing version into an agent; it starts disabled.
    Install {
        listing: String,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
        #[arg(long, default_value = "tool")]
        kind: String,
        /// Pin this version (default: the latest).
        #[arg(long)]
        version: Option<i64>,
        /// Install under another name when the agent already has one of the listing's name.
        #[arg(long)]
        rename_to: Option<String>,
    },
    /// Write a listing version as a bundle file (JSON carrying its hash).
    Export {
        listing: String,
        #[arg(long, default_value = "tool")]
        kind: String,
        #[arg(long)]
        version: Option<i64>,
        /// Where to write; stdout when absent.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Import a bundle file: verify its hash and content, show its code, add it as a listing.
    Import {
        file: PathBuf,
        /// Add it as a new version of the listing of the same name published here (refused
        /// without this flag).
        #[arg(long)]
        into_local_listing: bool,
    },
}

#[derive(Subcommand)]
enum ToolCommand {
    /// Run one tool and print its JSON result; exits non-zero when the tool fails.
    Call {
        name: String,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
        /// The arguments, as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
    },
    /// The size of an agent's first request on every wire: system message and tools as its
    /// tool settings send them, beside every built-in schema sent whole.
    Surface {
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
}

#[derive(Subcommand)]
enum SkillCommand {
    /// Import a skill folder (SKILL.md and resource files), or a ZIP of one, as a skill of the agent.
    Import {
        /// The folder, or a .zip file of it.
        path: std::path::PathBuf,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Write a skill's folder into DIR/<name>.
    Export {
        name: String,
        dir: std::path::PathBuf,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// The agent's skills.
    List {
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
}

#[derive(Subcommand)]
enum DocumentCommand {
    /// The history, newest first.
    Log {
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// The current text, or one version's.
    Show {
        version: Option<i64>,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// A unified diff between two versions.
    Diff {
        from: i64,
        to: i64,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
    },
    /// Make an old version current again, as a new version.
    Rollback {
        version: i64,
        #[arg(long, default_value = AgentId::DEFAULT)]
        agent: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Parses the command line and runs it; what `main` calls.
pub fn main() -> ExitCode {
    // A sandbox worker talks to its pool over stdin/stdout and must start with nothing else
    // in the way: no argument parsing, no runtime, no logging.
    if std::env::args().nth(1).as_deref() == Some(crate::config::SANDBOX_WORKER) {
        wright_sandbox::worker_main();
        return ExitCode::SUCCESS;
    }
    // Likewise the confined shell's forwarder, which runs inside a command's sandbox.
    if std::env::args().nth(1).as_deref() == Some(crate::config::SHELL_FORWARD) {
        let arguments: Vec<String> = std::env::args().skip(2).collect();
        return wright_workspace::forward_main(&arguments);
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Blocking tasks (a diff, a browser call) still running must not hold the exit up; each is
    // bounded on its own, this bounds the wait for all of them.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(&cli.data_dir)?;
    #[cfg(debug_assertions)]
    {
        config.fault_panic_tool = std::env::var("WRIGHT_FAULT_PANIC_TOOL").ok();
        if let Ok(path) = std::env::var("WRIGHT_TEST_CLOCK_FILE") {
            config.clock = Arc::new(FileClock(path.into()));
        }
    }
    if let Ok(token) = std::env::var("WRIGHT_TELEGRAM_TOKEN")
        && !token.trim().is_empty()
    {
        config.telegram.bot_token = token;
    }
    match cli.command {
        Command::Serve { bind } => serve(config, bind).await,
        Command::Chat { agent } => {
            let agent = AgentId::parse(&agent)?;
            let (auth, _) = Auth::load_or_create(&config.data_dir, std::env::var("WRIGHT_TOKEN").ok())?;
            let models = crate::domain::models::Models::from_environment(
                &crate::domain::models::provider_env_from_process(),
                &config.models,
            )
            .await;
            let state = AppState::open(config, auth, models).await?;
            let ledger = Arc::clone(&state.ledger);
            let chatted = crate::chat::chat(state, &agent).await;
            ledger.close(std::time::Duration::from_secs(5)).await;
            chatted?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tool { command: ToolCommand::Call { name, agent, args } } => {
            call_tool(config, &name, &agent, &args).await
        }
        Command::Learn { agent } => {
            let agent = AgentId::parse(&agent)?;
            let (auth, _) = Auth::load_or_create(&config.data_dir, std::env::var("WRIGHT_TOKEN").ok())?;
            let models = crate::domain::models::Models::from_environment(
                &crate::domain::models::provider_env_from_process(),
                &config.models,
            )
            .await;
            let state = AppState::open(config, auth, models).await?;
            let learned = learn(&state, &agent).await;
            state.ledger.close(std::time::Duration::from_secs(5)).await;
            learned
        }
        Command::Tool { command: ToolCommand::Surface { agent } } => tool_surface(config, &agent).await,
        Command::Prompt { command } => document_command(config, DocumentKind::SystemPrompt, command).await,
        Command::Notes { command } => document_command(config, DocumentKind::LearnedNotes, command).await,
        Command::DbNotes { command } => document_command(config, DocumentKind::DbNotes, command).await,
        Command::Skill { command } => {
            let store = open_store(&config).await?;
            let result = skill_command(&store, command).await;
            store.close().await;
            result.map(|()| ExitCode::SUCCESS)
        }
        Command::Market { command } => market_command(config, command).await,
        Command::Sandbox { command: SandboxCommand::Run { file, args, input, repeat, warmup, json, agent } } => {
            let code = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let args: Value = serde_json::from_str(&args).context("--args is not valid JSON")?;
            let input = input
                .map(|path| std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display())))
                .transpose()?;
            let services = crate::open_services(&config).await?;
            let report =
                wright_tools::run_file(&services, &AgentId::parse(&agent)?, code, args, input, repeat, warmup).await;
            services.store.close().await;
            println!("{}", if json { report.to_json().to_string() } else { report.to_text() });
            Ok(if report.outcome.is_success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Egress { command: EgressCommand::Check { url } } => {
            let egress = wright_egress::Egress::new(config.egress.clone())?;
            let verdict = egress.check(&url).await;
            println!("{verdict}");
            Ok(if verdict.allowed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Memory { command } => {
            let memories = with_embedder(open_store(&config).await?, &config).await?;
            let result = memory_command(&memories, command).await;
            memories.store().close().await;
            result.map(|()| ExitCode::SUCCESS)
        }
        Command::Usage { since, by, json } => {
            let by: crate::api::usage::GroupingView = serde_json::from_value(Value::String(by.clone()))
                .map_err(|_| anyhow::anyhow!("--by is agent, model, day or caller, not {by:?}"))?;
            let store = open_store(&config).await?;
            let since = wright_store::usage::parse_since(since.as_deref(), store.clock().now_ms())
                .map_err(|error| anyhow::anyhow!(error))?;
            let summary = store.usage_summary(since, by.into()).await;
            store.close().await;
            let (rows, totals) = summary?;
            if json {
                let report = crate::api::usage::report_view(since, by, &rows, &totals);
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", crate::domain::usage::report_text(&rows, &totals, by.into(), since));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Conversation { command: ConversationCommand::Export { id, format, output } } => {
            let store = open_store(&config).await?;
            let exported = crate::export::export(&store, &id, format).await;
            store.close().await;
            let exported = exported?;
            match output {
                Some(path) => {
                    std::fs::write(&path, exported.body).with_context(|| format!("cannot write {}", path.display()))?
                }
                None => std::io::stdout().lock().write_all(exported.body.as_bytes())?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Openapi => {
            println!("{}", serde_json::to_string_pretty(&crate::api::openapi())?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Debug builds only: a clock that reads milliseconds since the epoch from a file on every
/// call (`WRIGHT_TEST_CLOCK_FILE`), so end-to-end tests move time for the real binary — a
/// schedule comes due, a restart happens days later — without waiting for it. An unreadable
/// file reads as the system time.
#[cfg(debug_assertions)]
#[derive(Debug)]
struct FileClock(std::path::PathBuf);

#[cfg(debug_assertions)]
impl wright_core::Clock for FileClock {
    fn now_ms(&self) -> i64 {
        std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or_else(|| wright_core::SystemClock.now_ms())
    }
}

async fn serve(mut config: Config, bind: Option<SocketAddr>) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal, not in a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Some(bind) = bind {
        config.server.bind = bind;
    }
    // An override that names nothing would serve JSON 404s at `/`: better not to start.
    if let Some(frontend_dir) = &config.server.frontend_dir
        && !frontend_dir.join("index.html").is_file()
    {
        anyhow::bail!(
            "[server] frontend_dir is {}, which holds no built canvas (no index.html); build it with `npm run build` \
             in frontend/, or remove the setting to serve the canvas built into this binary",
            frontend_dir.display()
        );
    }
    if config.server.frontend_dir.is_none() && !crate::api::canvas::embedded() {
        tracing::warn!(
            "this binary was built before the canvas (frontend/dist): `/` answers with a page saying how to build it"
        );
    }
    let (auth, source) = Auth::load_or_create(&config.data_dir, std::env::var("WRIGHT_TOKEN").ok())?;
    let listener = tokio::net::TcpListener::bind(config.server.bind)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.bind))?;
    let address = listener.local_addr()?;
    let token_line = match source {
        TokenSource::Generated => format!(
            "access token (generated now, stored in {}): {}",
            config.data_dir.join("token").display(),
            auth.token()
        ),
        TokenSource::File => format!("access token: in {}", config.data_dir.join("token").display()),
        TokenSource::Environment => "access token: from WRIGHT_TOKEN".to_owned(),
    };
    let models = crate::domain::models::Models::from_environment(
        &crate::domain::models::provider_env_from_process(),
        &config.models,
    )
    .await;
    let state = AppState::open(config, auth, models).await?;
    crate::start_background(&state, &format!("http://{address}"))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{token_line}")?;
    writeln!(stdout, "Wright is listening on http://{address}")?;
    stdout.flush()?;
    drop(stdout);
    crate::serve(listener, state, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM, whichever comes first.
async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

async fn open_store(config: &Config) -> anyhow::Result<Store> {
    std::fs::create_dir_all(&config.data_dir)?;
    let store = Store::open(&config.data_dir.join("wright.db"), config.state.clone()).await?;
    Ok(store
        .with_text_limits(config.limits.clone())
        .with_memory(config.memory.clone(), Arc::clone(&config.clock))
        .with_sessions(config.session_schedule.clone())
        .with_notify(config.notify.clone()))
}

fn memory_line(memory: &wright_store::Memory) -> String {
    let label = match &memory.category {
        Some(category) => format!("{}/{category}", memory.layer),
        None => memory.layer.to_string(),
    };
    let relevance = memory.relevance.map(|relevance| format!(" {relevance:.3}")).unwrap_or_default();
    let state = match (memory.archived_reason, memory.expires_at) {
        (Some(wright_store::ArchivedReason::Forget), _) => "forgotten".to_owned(),
        (Some(wright_store::ArchivedReason::Expire), _) => "expired".to_owned(),
        (None, Some(at)) => format!("until {}", &wright_core::iso_from_ms(at)[..10]),
        (None, None) => "permanent".to_owned(),
    };
    format!("#{:<6}{relevance} {label:<20} {state:<16} {}", memory.id, memory.content.replace('\n', " "))
}

async fn memory_command(memories: &wright_memory::Memories, command: MemoryCommand) -> anyhow::Result<()> {
    let store = memories.store();
    let parse_layer = |layer: Option<String>| layer.as_deref().map(wright_core::MemoryLayer::parse).transpose();
    let admin = wright_store::MemoryActor::admin();
    store.expire_memories().await?;
    match command {
        MemoryCommand::List { layer, archived, limit, agent } => {
            let filter = wright_store::MemoryFilter { layer: parse_layer(layer)?, archived, session_id: None };
            for memory in store.list_memories(&AgentId::parse(&agent)?, &filter, limit).await? {
                println!("{}", memory_line(&memory));
            }
        }
        MemoryCommand::Recall { query, layer, limit, agent } => {
            let filter = wright_store::MemoryFilter { layer: parse_layer(layer)?, archived: false, session_id: None };
            for memory in memories.recall(&AgentId::parse(&agent)?, &query, &filter, limit).await? {
                println!("{}", memory_line(&memory));
            }
        }
        MemoryCommand::Forget { id, agent } => {
            let memory = store.forget_memory(&AgentId::parse(&agent)?, id, &admin).await?;
            println!("{}", memory_line(&memory));
        }
        MemoryCommand::Restore { id, agent } => {
            let memory = memories.restore_memory(&AgentId::parse(&agent)?, id, &admin).await?;
            println!("{}", memory_line(&memory));
        }
    }
    Ok(())
}

/// Prints, per wire, the bytes of a first request ("Hello") with every built-in schema sent
/// whole and with the agent's tool settings, and an estimate in tokens (bytes / 4; a real
/// server's `usage` is exact: scripts/eval-real-model.sh reads llama.cpp's).
async fn tool_surface(config: Config, agent: &str) -> anyhow::Result<ExitCode> {
    use wright_core::{Event, EventBody, ToolLoading, ToolSettings, Toolset};
    use wright_llm::{ProviderConfig, ProviderKind, Request, ToolCallMode};
    let agent = AgentId::parse(agent)?;
    let services = crate::open_services(&config).await?;
    let store = services.store.clone();
    let registry = ToolRegistry::new(Arc::new(services));
    let all = registry.specs(&agent).await?;
    let configured = config.agents.get(agent.as_str()).map(|section| section.tools.clone());
    let settings = store.tool_settings(&agent).await?.or(configured).unwrap_or_default();
    let prompt = store.document(&agent, DocumentKind::SystemPrompt).await?.content;
    let notes = store.document(&agent, DocumentKind::LearnedNotes).await?.content;
    store.close().await;
    let system = wright_agent::system_message(&wright_agent::SystemParts { prompt, notes, ..Default::default() });
    let everything =
        ToolSettings { toolsets: Toolset::ALL.to_vec(), loading: ToolLoading::All, always_loaded: Vec::new() };
    let hello = Event {
        seq: 1,
        content: "Hello".to_owned(),
        body: EventBody::User { text: "Hello".to_owned(), component: None },
    };
    let wires = [
        ("openai", ProviderKind::Openai, ToolCallMode::Native),
        ("openai_responses", ProviderKind::OpenaiResponses, ToolCallMode::Native),
        ("anthropic", ProviderKind::Anthropic, ToolCallMode::Native),
        ("gemini", ProviderKind::Gemini, ToolCallMode::Native),
        ("openai_compatible", ProviderKind::OpenaiCompatible, ToolCallMode::Native),
        ("text protocol", ProviderKind::OpenaiCompatible, ToolCallMode::Text),
    ];
    println!("{:<18} {:>22} {:>30}", "wire", "every schema: bytes", format!("{agent}'s settings: bytes"));
    for (label, kind, mode) in wires {
        let mut provider = ProviderConfig::new(kind, "model");
        provider.api_key = Some("key".to_owned());
        provider.tool_calls = mode;
        let size = |settings: &ToolSettings| -> anyhow::Result<usize> {
            let (tools, catalogue) = wright_agent::first_request_tools(&all, settings);
            let system = if catalogue.is_empty() { system.clone() } else { format!("{system}\n\n{catalogue}") };
            let request = Request { system, history: vec![hello.clone()], tools, ..Request::default() };
            Ok(wright_llm::request_body(&provider, &request)?.to_string().len())
        };
        let (before, after) = (size(&everything)?, size(&settings)?);
        println!("{label:<18} {before:>8} (~{:>5} tokens) {after:>14} (~{:>5} tokens)", before / 4, after / 4);
    }
    Ok(ExitCode::SUCCESS)
}

/// Memories embedded as the server does (`[memory.embeddings]`, the same connection), so the
/// CLI's recall ranks by meaning too and what it stores gets its vector.
async fn with_embedder(store: Store, config: &Config) -> anyhow::Result<wright_memory::Memories> {
    let memories = wright_memory::Memories::new(store.clone());
    let Some(embeddings) = &config.memory.embeddings else { return Ok(memories) };
    let models = crate::domain::models::Models::from_environment(
        &crate::domain::models::provider_env_from_process(),
        &config.models,
    )
    .await;
    let redactor = models.redactor().clone();
    let models =
        models.with_settings(store.clone(), Arc::new(crate::secrets::Secrets::new(&config.data_dir, redactor)));
    let ledger = Arc::new(crate::domain::usage::Ledger::for_config(store.clone(), config));
    let embedder = crate::embedder::ConnectionEmbedder::new(Arc::new(models), ledger, embeddings.clone());
    Ok(memories.with_embedder(Arc::new(embedder)).await?)
}

async fn call_tool(config: Config, name: &str, agent: &str, args: &str) -> anyhow::Result<ExitCode> {
    let agent = AgentId::parse(agent)?;
    let args: Value = serde_json::from_str(args).context("--args is not valid JSON")?;
    let mut services = crate::open_services(&config).await?;
    services.memories = with_embedder(services.store.clone(), &config).await?;
    let store = services.store.clone();
    let registry = ToolRegistry::new(Arc::new(services));
    let invocation = Invocation {
        agent,
        name: name.to_owned(),
        args,
        caller: wright_core::Caller::Cli,
        conversation_id: None,
        tool_call_id: None,
        decided_by: None,
    };
    let outcome = registry.invoke(invocation).await;
    store.close().await;
    match outcome {
        Ok(result) => {
            println!("{}", serde_json::to_string_pretty(&result)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            let body = serde_json::json!({ "error": error.to_string(), "category": error.category().as_str() });
            println!("{}", serde_json::to_string_pretty(&body)?);
            eprintln!("error: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn market_command(config: Config, command: MarketCommand) -> anyhow::Result<ExitCode> {
    use wright_tools::market::{self, OnConflict};
    let services = crate::open_services(&config).await?;
    let store = services.store.clone();
    let outcome: anyhow::Result<()> = async {
        match command {
            MarketCommand::List { query, limit, offset } => {
                let page = store.list_listings(query.as_deref(), limit, offset).await?;
                for listing in &page.listings {
                    println!(
                        "{:<9} {:<24} v{:<3} by {:<12} {}",
                        listing.kind, listing.name, listing.latest_version, listing.publisher_agent, listing.description
                    );
                }
                if page.total > offset as i64 + page.listings.len() as i64 {
                    println!("({} listings in all; --offset to see more)", page.total);
                }
            }
            MarketCommand::Publish { name, agent, kind } => {
                let (listing, version, hash) = market::publish(&services, &AgentId::parse(&agent)?, &kind, &name, market::Publisher::Admin).await?;
                println!("published {kind} {listing} v{version} sha256:{hash}");
            }
            MarketCommand::Install { listing, agent, kind, version, rename_to } => {
                let on_conflict = rename_to.map_or(OnConflict::Refuse, OnConflict::Rename);
                let installed = market::install(&services, &AgentId::parse(&agent)?, &kind, &listing, version, &on_conflict).await?;
                println!(
                    "installed {} {} (listing {} v{}, sha256:{}) into {agent}, disabled: review its code, then enable it",
                    installed.kind, installed.name, installed.listing, installed.version, installed.hash
                );
            }
            MarketCommand::Export { listing, kind, version, output } => {
                let exported = market::export(&services, &kind, &listing, version).await?;
                let text = serde_json::to_string_pretty(&exported)?;
                match output {
                    Some(path) => std::fs::write(&path, text + "\n").with_context(|| format!("cannot write {}", path.display()))?,
                    None => println!("{text}"),
                }
            }
            MarketCommand::Import { file, into_local_listing } => {
                let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
                let value: Value = serde_json::from_str(&text).context("the bundle file is not JSON")?;
                let (kind, listing, version, hash) = market::import(&services, &value, into_local_listing).await?;
                println!("imported {kind} {listing} v{version} sha256:{hash}; nothing was installed. Its code:\n");
                println!("{}", value["bundle"]["code"].as_str().unwrap_or_default());
            }
        }
        Ok(())
    }
    .await;
    store.close().await;
    outcome.map(|()| ExitCode::SUCCESS)
}

/// Most files read from a skill folder, and most bytes in all: far above what a skill may
/// hold (`[limits] max_skill_files`, `max_skill_folder_bytes`), so the store's own message
/// says what is over; this only keeps a wrong path (a home directory) from being read whole.
const MAX_FOLDER_FILES: usize = 256;
const MAX_FOLDER_BYTES: u64 = 16 * 1024 * 1024;

/// The files of a folder, path (relative, `/`-separated) → bytes; symbolic links are not
/// followed.
fn read_folder(root: &std::path::Path) -> anyhow::Result<std::collections::BTreeMap<String, Vec<u8>>> {
    if root.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("zip")) {
        let archive = std::fs::read(root).with_context(|| format!("cannot read {}", root.display()))?;
        return Ok(crate::domain::zip::unzip(&archive)?);
    }
    let mut files = std::collections::BTreeMap::new();
    let mut total = 0u64;
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).with_context(|| format!("cannot read {}", directory.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let path = entry.path();
                let relative = path
                    .strip_prefix(root)?
                    .components()
                    .map(|part| part.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                total += entry.metadata()?.len();
                if files.len() >= MAX_FOLDER_FILES || total > MAX_FOLDER_BYTES {
                    anyhow::bail!(
                        "{} holds more than {MAX_FOLDER_FILES} files or {MAX_FOLDER_BYTES} bytes: is it a skill folder?",
                        root.display()
                    );
                }
                files.insert(relative, std::fs::read(&path)?);
            }
        }
    }
    Ok(files)
}

async fn skill_command(store: &Store, command: SkillCommand) -> anyhow::Result<()> {
    match command {
        SkillCommand::Import { path, agent, reason } => {
            let agent = AgentId::parse(&agent)?;
            let folder = crate::domain::skills::folder(read_folder(&path)?)?;
            let reason = reason.or_else(|| Some(format!("imported from {}", path.display())));
            let version = crate::domain::skills::import(store, &agent, &folder, reason).await?;
            println!("skill {} of {agent} is now version {version}", folder.name);
            for skipped in folder.skipped {
                println!("  left out: {skipped}");
            }
        }
        SkillCommand::Export { name, dir, agent } => {
            let agent = AgentId::parse(&agent)?;
            let files = crate::domain::skills::export(store, &agent, &name).await?;
            let target = dir.join(&name);
            for (path, content) in files {
                // The store only keeps relative paths without `..` (check_resource_path).
                let file = target.join(&path);
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&file, content).with_context(|| format!("cannot write {}", file.display()))?;
            }
            println!("wrote {}", target.display());
        }
        SkillCommand::List { agent } => {
            let agent = AgentId::parse(&agent)?;
            for skill in store.skills(&agent).await? {
                let state = if skill.enabled { "on " } else { "off" };
                println!("{state} v{:<4} {}: {}", skill.version, skill.name, skill.description);
            }
        }
    }
    Ok(())
}

async fn document_command(config: Config, kind: DocumentKind, command: DocumentCommand) -> anyhow::Result<ExitCode> {
    let store = open_store(&config).await?;
    let result = document_command_inner(&store, kind, command).await;
    store.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn document_command_inner(store: &Store, kind: DocumentKind, command: DocumentCommand) -> anyhow::Result<()> {
    match command {
        DocumentCommand::Log { agent } => {
            let agent = AgentId::parse(&agent)?;
            for entry in store.document_versions(&agent, kind).await? {
                let reason = entry.reason.as_deref().unwrap_or("");
                println!(
                    "v{:<4} {}  {:<8} {:>7} B  {reason}",
                    entry.version, entry.created_at, entry.author, entry.size
                );
            }
        }
        DocumentCommand::Show { version, agent } => {
            let agent = AgentId::parse(&agent)?;
            let content = match version {
                Some(version) => store.document_version(&agent, kind, version).await?.content,
                None => store.document(&agent, kind).await?.content,
            };
            println!("{content}");
        }
        DocumentCommand::Diff { from, to, agent } => {
            let agent = AgentId::parse(&agent)?;
            print!("{}", store.document_diff(&agent, kind, from, to).await?);
        }
        DocumentCommand::Rollback { version, agent, reason } => {
            let agent = AgentId::parse(&agent)?;
            let new_version = store.rollback_document(&agent, kind, version, reason).await?;
            println!("{kind} of {agent} is now version {new_version}, with the content of version {version}");
        }
    }
    Ok(())
}

/// `wright learn`: one round, waited for, then each candidate's decision and the held-out
/// passes before and after.
async fn learn(state: &AppState, agent: &AgentId) -> anyhow::Result<ExitCode> {
    state.store.require_agent(agent).await?;
    // Replays are runs: what goes wrong in them is logged, as `wright serve` logs it.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .try_init()
        .ok();
    let round = crate::learning::start_round(state, agent, wright_core::RoundTrigger::Cli).await?;
    let mut shown = -1;
    let round = loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let current = state.store.round(agent, round.id).await?.ok_or_else(|| anyhow::anyhow!("the round is gone"))?;
        if current.replays_done != shown {
            shown = current.replays_done;
            eprintln!("round {}: {} of {} replays", current.id, current.replays_done, current.replays_total);
        }
        if current.status != wright_core::RoundStatus::Running {
            break current;
        }
    };
    for candidate in state.store.round_candidates(agent, round.id).await? {
        let decision = candidate.decision.map_or("undecided", |decision| decision.as_str());
        println!(
            "#{} {} [{decision}] {}\n    {}",
            candidate.item.id,
            candidate.item.kind,
            candidate.reason.unwrap_or_default(),
            candidate.item.text
        );
    }
    match (round.status, round.passed_before, round.passed_after) {
        (wright_core::RoundStatus::Finished, Some(before), Some(after)) => {
            println!("held-out passes: {before} before, {after} after, of {}", round.held_out_total);
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            eprintln!("the round {}: {}", round.status, round.error.unwrap_or_default());
            Ok(ExitCode::FAILURE)
        }
    }
}
