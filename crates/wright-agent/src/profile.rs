//! The model profile: the loop settings that suit the model a run talks to, chosen from what
//! Wright knows of it — the connection kind, what its server says (which server, the context
//! window, the parameter count or the GGUF's size) and the model's name — so a person who
//! points Wright at a small local model gets settings that work without knowing any of them.
//!
//! Two profiles ([`ModelProfileKind`]): `small_local` for a model under ~10B parameters on a
//! local server (llama.cpp, Ollama, LM Studio, vLLM), and `standard`, today's behaviour, for
//! every other (the hosted APIs, big local models). A profile is a set of [`LoopConfig`]
//! values; `config.toml` and the Settings page can override any of them per model
//! ([`ProfileOverride`], the page's on top of the file's), and the choice says why it was made,
//! for the Settings page. Pure: the facts and the overrides are read by the caller.

use serde::{Deserialize, Serialize};
pub use wright_core::ModelProfileKind;
use wright_llm::{LocalServer, ServerFacts};

use crate::config::LoopConfig;

/// Below this many parameters a local model gets the small-model profile: at 7–8B a model
/// still copies schema text into arguments and repeats calls; at 14B and up it mostly does not.
pub const SMALL_MODEL_PARAMETERS: u64 = 10_000_000_000;

/// A GGUF smaller than this is a small model when the server gives no parameter count: a
/// 10B model quantized to 4–5 bits takes about 6 GB.
pub const SMALL_MODEL_FILE_BYTES: u64 = 6_000_000_000;

/// What the small-model profile caps one reply at, in tokens: a tool call or a short answer
/// fits many times over, while a model that falls into repeating itself stops after about a
/// minute of a 2-core machine's time instead of filling the window.
pub const SMALL_REPLY_TOKENS: usize = 1024;

/// The most of a window the small-model profile uses, in tokens: a small model follows a long
/// context poorly, and every token is read at tens of tokens a second on a CPU.
pub const SMALL_CONTEXT_TOKENS: usize = 8192;

/// The skill text the small-model profile's host loads into a run's system message, in tokens:
/// a skill of a page or two, an eighth of [`SMALL_CONTEXT_TOKENS`].
pub const SMALL_SKILL_TOKENS: usize = 1024;

/// What Wright knows about a model when a run starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelFacts {
    /// The provider kind as configured (`openai`, `anthropic`, `gemini`, `openai_compatible`).
    pub provider: String,
    pub model: String,
    /// Where requests go, when configured (local servers); `None` for a hosted API's default.
    pub base_url: Option<String>,
    pub server: ServerFacts,
}

/// A model's profile and any of its settings, by hand: `config.toml`'s
/// `[model_profiles."<model>"]`, or the Settings page's (stored per `provider/model`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileOverride {
    pub profile: Option<ModelProfileKind>,
    pub temperature: Option<f32>,
    pub require_first_call: Option<bool>,
    pub preload_tools: Option<usize>,
    /// Tokens of skill text loaded into the first request.
    pub preload_skill_tokens: Option<usize>,
    /// The reply cap, in tokens.
    pub reply_tokens: Option<usize>,
    /// The context budget, in tokens (at most what the server says it has).
    pub context_tokens: Option<usize>,
}

/// The settings a profile decides, as the Settings page shows them.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProfileSettings {
    /// The sampling temperature of every request; the server's own when `None`.
    pub temperature: Option<f32>,
    pub require_first_call: bool,
    /// Catalogue tools sent whole from the first request, chosen by the message's words.
    pub preload_tools: usize,
    /// The most tokens one reply may take, when the window is known.
    pub reply_tokens: usize,
    /// The context budget in tokens (at most the server's window); unset: the whole window.
    pub context_tokens: Option<usize>,
    /// Refuse a replace of the notes or prompt that keeps almost nothing, unless asked.
    pub guard_document_replace: bool,
    /// After a step of a request succeeds, the next request names what is still undone.
    pub name_undone_steps: bool,
    /// The tool catalogue says what each tool does (else it only names them).
    pub catalogue_descriptions: bool,
    /// Every request of a run lists the same tools (the server's prompt cache holds).
    pub stable_tool_list: bool,
    /// The system message lists the agent's state keys and database tables.
    pub list_agent_data: bool,
    /// Tokens of the best-fitting skills the host loads into the run's system message (0: none).
    pub preload_skill_tokens: usize,
}

/// The profile a model got, its settings, and why.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChosenProfile {
    pub profile: ModelProfileKind,
    pub settings: ProfileSettings,
    /// Why, in a person's words: the facts that decided, then each override.
    pub reasons: Vec<String>,
}

impl ProfileOverride {
    /// What is wrong with these settings, in a person's words (None: they can be used).
    pub fn problem(&self) -> Option<String> {
        if let Some(temperature) = self.temperature
            && !(0.0..=2.0).contains(&temperature)
        {
            return Some(format!("temperature must be between 0 and 2, not {temperature}"));
        }
        if self.preload_tools.is_some_and(|preload| preload > 32) {
            return Some("preload_tools may be at most 32".into());
        }
        if self.preload_skill_tokens.is_some_and(|tokens| tokens > 8_000) {
            return Some("preload_skill_tokens may be at most 8,000".into());
        }
        if self.reply_tokens.is_some_and(|reply| !(16..=1_000_000).contains(&reply)) {
            return Some("reply_tokens must be between 16 and 1,000,000".into());
        }
        if self.context_tokens.is_some_and(|context| !(512..=10_000_000).contains(&context)) {
            return Some("context_tokens must be between 512 and 10,000,000".into());
        }
        None
    }
}

/// Chooses the profile for `facts`, then applies each override in order, each naming where it
/// comes from (`config.toml`, then the Settings page). The standard profile keeps `base`'s
/// settings (`[agent]` in config.toml); the small one sets its own.
pub fn choose(facts: &ModelFacts, overrides: &[(&str, &ProfileOverride)], base: &LoopConfig) -> ChosenProfile {
    let (mut profile, mut reasons) = judge(facts);
    for (source, over) in overrides {
        if let Some(chosen) = over.profile
            && chosen != profile
        {
            profile = chosen;
            reasons.push(format!("{source} sets the profile to {chosen}"));
        }
    }
    let window = facts.server.context_window.and_then(|tokens| usize::try_from(tokens).ok());
    let mut settings = match profile {
        ModelProfileKind::SmallLocal => ProfileSettings {
            // Greedy decoding: at llama.cpp's default 0.8 a small model's calls go astray
            // (an invented tool, a field left out) several times more often.
            temperature: Some(0.0),
            require_first_call: true,
            preload_tools: base.preload_tools,
            reply_tokens: SMALL_REPLY_TOKENS.min(base.reserve_output_tokens),
            context_tokens: Some(window.map_or(SMALL_CONTEXT_TOKENS, |window| window.min(SMALL_CONTEXT_TOKENS))),
            guard_document_replace: true,
            name_undone_steps: true,
            catalogue_descriptions: false,
            stable_tool_list: true,
            list_agent_data: false,
            preload_skill_tokens: SMALL_SKILL_TOKENS,
        },
        ModelProfileKind::Standard => ProfileSettings {
            temperature: base.temperature,
            require_first_call: base.require_first_call,
            preload_tools: base.preload_tools,
            reply_tokens: base.reserve_output_tokens,
            context_tokens: base.context_budget,
            guard_document_replace: base.guard_document_replace,
            name_undone_steps: base.name_undone_steps,
            catalogue_descriptions: base.catalogue_descriptions,
            stable_tool_list: base.stable_tool_list,
            list_agent_data: base.list_agent_data,
            preload_skill_tokens: base.preload_skill_tokens,
        },
    };
    for (source, over) in overrides {
        let overridden = over.apply_to(&mut settings, window);
        if !overridden.is_empty() {
            reasons.push(format!("{source} sets {}", overridden.join(", ")));
        }
    }
    ChosenProfile { profile, settings, reasons }
}

impl ProfileOverride {
    /// Sets what this override sets; returns the names of those settings.
    fn apply_to(&self, settings: &mut ProfileSettings, window: Option<usize>) -> Vec<&'static str> {
        let mut overridden = Vec::new();
        if let Some(temperature) = self.temperature {
            settings.temperature = Some(temperature);
            overridden.push("temperature");
        }
        if let Some(require) = self.require_first_call {
            settings.require_first_call = require;
            overridden.push("require_first_call");
        }
        if let Some(preload) = self.preload_tools {
            settings.preload_tools = preload;
            overridden.push("preload_tools");
        }
        if let Some(tokens) = self.preload_skill_tokens {
            settings.preload_skill_tokens = tokens;
            overridden.push("preload_skill_tokens");
        }
        if let Some(reply) = self.reply_tokens {
            settings.reply_tokens = reply;
            overridden.push("reply_tokens");
        }
        if let Some(context) = self.context_tokens {
            // The server's window is a hard limit: a bigger budget would only get 400s.
            settings.context_tokens = Some(window.map_or(context, |window| window.min(context)));
            overridden.push("context_tokens");
        }
        overridden
    }
}

/// The profile the facts point to, with the reasons.
fn judge(facts: &ModelFacts) -> (ModelProfileKind, Vec<String>) {
    let hosted = matches!(facts.provider.as_str(), "openai" | "openai_responses" | "anthropic" | "gemini");
    let server = facts.server.server;
    let local_address = facts.base_url.as_deref().is_some_and(is_local_address);
    if hosted || (server.is_none() && !local_address) {
        let what = if hosted { format!("the hosted {} API", facts.provider) } else { "a remote server".to_owned() };
        return (ModelProfileKind::Standard, vec![format!("{} is served by {what}", facts.model)]);
    }
    let where_ = match server {
        Some(server) => format!("{} on {}", facts.model, server.as_str()),
        None => format!("{} on a server at a local address", facts.model),
    };
    let (small, size) = if let Some(parameters) = facts.server.parameters {
        (parameters < SMALL_MODEL_PARAMETERS, format!("{:.1}B parameters, as the server says", billions(parameters)))
    } else if let Some(bytes) = facts.server.size_bytes {
        (bytes < SMALL_MODEL_FILE_BYTES, format!("a {:.1} GB model file, as the server says", gigabytes(bytes)))
    } else if let Some(parameters) = parameters_in_name(&facts.model) {
        (parameters < SMALL_MODEL_PARAMETERS, format!("{:.1}B parameters, by its name", billions(parameters)))
    } else if let Some((weights, parameters)) =
        facts.server.weights.as_deref().and_then(|weights| Some((weights, parameters_in_name(weights)?)))
    {
        (
            parameters < SMALL_MODEL_PARAMETERS,
            format!("{:.1}B parameters, by the name of its weights ({weights})", billions(parameters)),
        )
    } else if matches!(server, Some(LocalServer::LlamaCpp | LocalServer::Ollama | LocalServer::LmStudio)) {
        // llama.cpp, Ollama and LM Studio on a person's machine run small models far more
        // often than not; the small profile costs a capable model little (greedy decoding, a
        // first call when the message is about a tool).
        (true, "its size unknown (models on llama.cpp, Ollama and LM Studio are mostly small)".to_owned())
    } else {
        (false, "its size unknown (the server does not say)".to_owned())
    };
    if small {
        (ModelProfileKind::SmallLocal, vec![format!("{where_}: {size}, under ~10B")])
    } else {
        (ModelProfileKind::Standard, vec![format!("{where_}: {size}, not a small model")])
    }
}

// Display only: a parameter count or a byte size as a decimal with one place.
#[allow(clippy::cast_precision_loss)]
fn billions(parameters: u64) -> f64 {
    parameters as f64 / 1e9
}

#[allow(clippy::cast_precision_loss)]
fn gigabytes(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

/// Whether a base URL points at this machine or a private network (a server the person runs).
fn is_local_address(base_url: &str) -> bool {
    let after_scheme = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    if host.eq_ignore_ascii_case("localhost") || host.ends_with(".local") || host.ends_with(".lan") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback() || ip.is_unique_local(),
        Err(_) => false,
    }
}

/// The parameter count a model's name states (`qwen2.5-coder:1.5b`, `Llama-3.1-8B-Instruct`,
/// `phi3:3.8b`, `gemma-2-270m`): a number followed by `b` or `m` that stands as its own word.
fn parameters_in_name(name: &str) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = None;
    for (index, &byte) in bytes.iter().enumerate() {
        let scale = match byte {
            b'b' => 1e9,
            b'm' => 1e6,
            _ => continue,
        };
        let start = lower[..index].rfind(|c: char| !(c.is_ascii_digit() || c == '.')).map_or(0, |at| at + 1);
        let number = &lower[start..index];
        let before_ok = start == 0 || matches!(bytes[start - 1], b'-' | b'_' | b':' | b'/' | b' ' | b'x');
        let after_ok = bytes.get(index + 1).is_none_or(|next| !next.is_ascii_alphanumeric());
        if number.is_empty() || !before_ok || !after_ok {
            continue;
        }
        if let Ok(value) = number.parse::<f64>() {
            // The name's own count is far below 2^53 and positive.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let parameters = (value * scale).round() as u64;
            found = Some(parameters);
        }
    }
    found
}

impl ChosenProfile {
    /// The loop's settings for this profile over the configured ones.
    pub fn apply(&self, config: &LoopConfig) -> LoopConfig {
        let settings = &self.settings;
        let mut applied = config.clone();
        applied.temperature = settings.temperature;
        applied.require_first_call = settings.require_first_call;
        applied.preload_tools = settings.preload_tools;
        applied.reserve_output_tokens = settings.reply_tokens;
        applied.context_budget = settings.context_tokens;
        applied.guard_document_replace = settings.guard_document_replace;
        applied.name_undone_steps = settings.name_undone_steps;
        applied.catalogue_descriptions = settings.catalogue_descriptions;
        applied.stable_tool_list = settings.stable_tool_list;
        applied.list_agent_data = settings.list_agent_data;
        applied.preload_skill_tokens = settings.preload_skill_tokens;
        applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama(model: &str, parameters: Option<u64>, size_bytes: Option<u64>) -> ModelFacts {
        ModelFacts {
            provider: "openai_compatible".into(),
            model: model.into(),
            base_url: Some("http://127.0.0.1:18601/v1".into()),
            server: ServerFacts {
                server: Some(LocalServer::LlamaCpp),
                context_window: Some(16384),
                parameters,
                size_bytes,
                weights: None,
            },
        }
    }

    #[test]
    fn a_small_model_on_a_local_server_gets_the_small_profile_and_says_why() {
        let chosen = choose(&llama("qwen", Some(630_167_424), Some(485_452_288)), &[], &LoopConfig::default());
        assert_eq!(chosen.profile, ModelProfileKind::SmallLocal);
        assert_eq!(chosen.reasons, ["qwen on llama.cpp: 0.6B parameters, as the server says, under ~10B"]);
        assert_eq!(chosen.settings.temperature, Some(0.0));
        assert!(chosen.settings.require_first_call && chosen.settings.guard_document_replace);
        assert_eq!(chosen.settings.context_tokens, Some(SMALL_CONTEXT_TOKENS));
        let config = chosen.apply(&LoopConfig::default());
        assert!(config.require_first_call && config.name_undone_steps);
        assert!(config.stable_tool_list && !config.list_agent_data && !config.catalogue_descriptions);
        assert_eq!(config.reserve_output_tokens, SMALL_REPLY_TOKENS);
        assert_eq!(config.context_budget, Some(SMALL_CONTEXT_TOKENS));
    }

    #[test]
    fn the_size_comes_from_the_count_then_the_file_then_the_name() {
        let by_file = choose(&llama("big", None, Some(20_000_000_000)), &[], &LoopConfig::default());
        assert_eq!(by_file.profile, ModelProfileKind::Standard);
        assert!(by_file.reasons[0].contains("20.0 GB model file"), "{:?}", by_file.reasons);
        let mut by_name = llama("qwen2.5:32b-instruct", None, None);
        by_name.server.server = Some(LocalServer::Ollama);
        assert_eq!(choose(&by_name, &[], &LoopConfig::default()).profile, ModelProfileKind::Standard);
        by_name.model = "qwen2.5-coder:1.5b".into();
        let small = choose(&by_name, &[], &LoopConfig::default());
        assert_eq!(small.profile, ModelProfileKind::SmallLocal);
        assert!(small.reasons[0].contains("1.5B parameters, by its name"), "{:?}", small.reasons);
        assert_eq!(parameters_in_name("Llama-3.1-8B-Instruct"), Some(8_000_000_000));
        assert_eq!(parameters_in_name("gemma-2-270m"), Some(270_000_000));
        assert_eq!(parameters_in_name("mixtral-8x7b"), Some(7_000_000_000));
        assert_eq!(parameters_in_name("gpt-4o-mini"), None);
        assert_eq!(parameters_in_name("qwen"), None);
    }

    #[test]
    fn vllm_and_lm_studio_are_judged_by_the_names_they_give() {
        // vLLM serving Qwen's 1.5B under a name of the person's: the weights' name says the size.
        let mut served = llama("assistant", None, None);
        served.server.server = Some(LocalServer::Vllm);
        served.server.weights = Some("Qwen/Qwen2.5-1.5B-Instruct".into());
        let chosen = choose(&served, &[], &LoopConfig::default());
        assert_eq!(chosen.profile, ModelProfileKind::SmallLocal);
        assert_eq!(
            chosen.reasons,
            ["assistant on vLLM: 1.5B parameters, by the name of its weights (Qwen/Qwen2.5-1.5B-Instruct), under ~10B"]
        );
        // vLLM runs on GPU servers: a size it does not say is not assumed small.
        served.server.weights = None;
        assert_eq!(choose(&served, &[], &LoopConfig::default()).profile, ModelProfileKind::Standard);
        // LM Studio is a desktop app: mostly small models, as llama.cpp and Ollama.
        served.server.server = Some(LocalServer::LmStudio);
        assert_eq!(choose(&served, &[], &LoopConfig::default()).profile, ModelProfileKind::SmallLocal);
    }

    #[test]
    fn hosted_apis_and_remote_servers_keep_todays_behaviour() {
        let hosted = ModelFacts { provider: "anthropic".into(), model: "claude".into(), ..ModelFacts::default() };
        let chosen = choose(&hosted, &[], &LoopConfig::default());
        assert_eq!(chosen.profile, ModelProfileKind::Standard);
        let config = chosen.apply(&LoopConfig::default());
        assert_eq!(config, LoopConfig::default());
        // `[agent]` in config.toml is what the standard profile keeps.
        let tuned = LoopConfig { require_first_call: true, temperature: Some(0.3), ..LoopConfig::default() };
        assert_eq!(choose(&hosted, &[], &tuned).apply(&tuned), tuned);
        let remote = ModelFacts {
            provider: "openai_compatible".into(),
            model: "llama-3.1-8b".into(),
            base_url: Some("https://api.groq.com/openai/v1".into()),
            server: ServerFacts::default(),
        };
        assert_eq!(choose(&remote, &[], &LoopConfig::default()).profile, ModelProfileKind::Standard);
        // The same model on a server of the home network is the person's own.
        let home = ModelFacts { base_url: Some("http://192.168.1.20:8080/v1".into()), ..remote };
        assert_eq!(choose(&home, &[], &LoopConfig::default()).profile, ModelProfileKind::SmallLocal);
    }

    #[test]
    fn config_toml_overrides_the_profile_and_its_settings_and_says_so() {
        let facts = llama("qwen", Some(630_167_424), None);
        let over = ProfileOverride {
            profile: Some(ModelProfileKind::Standard),
            temperature: Some(0.2),
            context_tokens: Some(100_000),
            ..ProfileOverride::default()
        };
        let chosen = choose(&facts, &[("config.toml", &over)], &LoopConfig::default());
        assert_eq!(chosen.profile, ModelProfileKind::Standard);
        assert_eq!(chosen.settings.temperature, Some(0.2));
        // Never past the server's own window.
        assert_eq!(chosen.settings.context_tokens, Some(16384));
        assert_eq!(
            chosen.reasons[1..],
            ["config.toml sets the profile to standard", "config.toml sets temperature, context_tokens"]
        );
    }

    #[test]
    fn the_settings_page_applies_on_top_of_config_toml() {
        let facts = llama("qwen", Some(630_167_424), None);
        let file = ProfileOverride { temperature: Some(0.2), reply_tokens: Some(512), ..ProfileOverride::default() };
        let page = ProfileOverride {
            profile: Some(ModelProfileKind::Standard),
            temperature: Some(0.7),
            ..ProfileOverride::default()
        };
        let chosen = choose(&facts, &[("config.toml", &file), ("the Settings page", &page)], &LoopConfig::default());
        assert_eq!(chosen.profile, ModelProfileKind::Standard);
        assert_eq!((chosen.settings.temperature, chosen.settings.reply_tokens), (Some(0.7), 512));
        assert_eq!(
            chosen.reasons[1..],
            [
                "the Settings page sets the profile to standard",
                "config.toml sets temperature, reply_tokens",
                "the Settings page sets temperature"
            ]
        );
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let bad = |over: ProfileOverride| over.problem().unwrap();
        assert!(bad(ProfileOverride { temperature: Some(3.0), ..ProfileOverride::default() }).contains("temperature"));
        assert!(bad(ProfileOverride { reply_tokens: Some(1), ..ProfileOverride::default() }).contains("reply_tokens"));
        assert!(
            bad(ProfileOverride { context_tokens: Some(10), ..ProfileOverride::default() }).contains("context_tokens")
        );
        assert_eq!(ProfileOverride { temperature: Some(0.0), ..ProfileOverride::default() }.problem(), None);
    }
}
