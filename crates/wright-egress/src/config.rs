//! `EgressConfig`: limits, the operator allowlist and the web search backend.
//!
//! Deserialized from the `[egress]` table of the server's config (strict: unknown keys are an
//! error, so a typo does not silently leave a limit at its default). Every field has a
//! default; `EgressConfig::default()` is what an empty table gives.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ProxyLimits;

/// Limits, allowlist and search backend for all outbound requests the agent causes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct EgressConfig {
    /// Time to establish a TCP (and TLS) connection, per hop. Default 10 000 ms.
    pub connect_timeout_ms: u64,
    /// Time for the whole request: every redirect hop and the body. Default 30 000 ms.
    pub total_timeout_ms: u64,
    /// Response bodies are cut at this many bytes and reported `truncated`. Default 5 MiB.
    pub max_body_bytes: usize,
    /// Total size of the response header block (names + values) before the response is
    /// refused. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Redirects followed before giving up. Default 5.
    pub max_redirects: usize,
    /// How many requests one sandbox call may make (enforced by the caller, which knows what
    /// a call is). Default 20.
    pub max_requests_per_call: usize,
    /// Hosts and networks allowed even though the policy would deny them: `nas.lan`,
    /// `*.home.arpa`, `192.168.1.0/24`, `127.0.0.1:8080`, `[::1]:3000`. A `:port` suffix
    /// limits the entry to that port. Default empty.
    pub allow: Vec<String>,
    /// The `User-Agent` sent with every request unless the request sets its own.
    pub user_agent: String,
    /// The web search backend.
    pub search: SearchConfig,
    /// The forward proxy a launched browser connects through.
    pub proxy: ProxyLimits,
}

impl Default for EgressConfig {
    fn default() -> Self {
        EgressConfig {
            connect_timeout_ms: 10_000,
            total_timeout_ms: 30_000,
            max_body_bytes: 5 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            max_redirects: 5,
            max_requests_per_call: 20,
            allow: Vec::new(),
            user_agent: concat!("Wright/", env!("CARGO_PKG_VERSION")).to_owned(),
            search: SearchConfig::default(),
            proxy: ProxyLimits::default(),
        }
    }
}

impl EgressConfig {
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    pub fn total_timeout(&self) -> Duration {
        Duration::from_millis(self.total_timeout_ms)
    }
}

/// Which search service answers `web_search`.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Debug)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    Searxng,
    Brave,
    Tavily,
    /// DuckDuckGo's HTML results page: no key, no instance; the default when nothing else is
    /// configured. Reached through the egress policy like any agent-caused request.
    Duckduckgo,
}

impl SearchBackend {
    pub fn name(self) -> &'static str {
        match self {
            SearchBackend::Searxng => "searxng",
            SearchBackend::Brave => "brave",
            SearchBackend::Tavily => "tavily",
            SearchBackend::Duckduckgo => "duckduckgo",
        }
    }
}

/// The web search backend. Set one of `searxng_url`, `brave_api_key`, `tavily_api_key`; when
/// more than one is set, `backend` picks (otherwise SearXNG, then Brave, then Tavily). With
/// none of them set, DuckDuckGo's HTML results page answers (`duckduckgo_url`), so search
/// works with no setup at all.
///
/// SearXNG, Brave and Tavily endpoints are chosen by the operator, so requests to them do
/// **not** go through the egress policy (a SearXNG on localhost is the normal case); they do
/// get the same timeouts, body cap and no-proxy client. DuckDuckGo is the fallback nobody
/// chose, so it goes through the policy like `fetch_url` (a public host passes; a local
/// stand-in needs an `allow` entry). Result URLs are never fetched here.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    pub backend: Option<SearchBackend>,
    /// Base URL of a SearXNG instance with `json` in `search.formats`, e.g.
    /// `http://localhost:8888`.
    pub searxng_url: Option<String>,
    pub brave_api_key: Option<String>,
    /// Brave API base; default `https://api.search.brave.com/res/v1`.
    pub brave_url: String,
    pub tavily_api_key: Option<String>,
    /// Tavily API base; default `https://api.tavily.com`.
    pub tavily_url: String,
    /// DuckDuckGo's HTML results page; default `https://html.duckduckgo.com/html/`. The query
    /// is added as `?q=`. Changed only to point at a mirror or a test server.
    pub duckduckgo_url: String,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            backend: None,
            searxng_url: None,
            brave_api_key: None,
            brave_url: "https://api.search.brave.com/res/v1".to_owned(),
            tavily_api_key: None,
            tavily_url: "https://api.tavily.com".to_owned(),
            duckduckgo_url: "https://html.duckduckgo.com/html/".to_owned(),
        }
    }
}

/// Hand-written so API keys never reach a log line.
impl fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |key: &Option<String>| key.as_ref().map(|_| "<redacted>");
        f.debug_struct("SearchConfig")
            .field("backend", &self.backend)
            .field("searxng_url", &self.searxng_url)
            .field("brave_api_key", &redact(&self.brave_api_key))
            .field("brave_url", &self.brave_url)
            .field("tavily_api_key", &redact(&self.tavily_api_key))
            .field("tavily_url", &self.tavily_url)
            .field("duckduckgo_url", &self.duckduckgo_url)
            .finish()
    }
}

impl SearchConfig {
    /// The backend `web_search` will use: the one `backend` names if it is configured (`None`
    /// when it is not), else the first configured of SearXNG, Brave and Tavily, else
    /// DuckDuckGo, which needs no configuration.
    pub fn selected(&self) -> Option<SearchBackend> {
        let configured = |backend: SearchBackend| match backend {
            SearchBackend::Searxng => self.searxng_url.as_deref().is_some_and(|url| !url.is_empty()),
            SearchBackend::Brave => self.brave_api_key.as_deref().is_some_and(|key| !key.is_empty()),
            SearchBackend::Tavily => self.tavily_api_key.as_deref().is_some_and(|key| !key.is_empty()),
            SearchBackend::Duckduckgo => !self.duckduckgo_url.trim().is_empty(),
        };
        match self.backend {
            Some(backend) => configured(backend).then_some(backend),
            None => [SearchBackend::Searxng, SearchBackend::Brave, SearchBackend::Tavily, SearchBackend::Duckduckgo]
                .into_iter()
                .find(|&backend| configured(backend)),
        }
    }
}
