//! `web_search`: one query to the operator's search backend, results in one shape.
//!
//! Backends: SearXNG (its JSON API, `GET /search?format=json`; the self-hosted default), Brave
//! Search (`GET /web/search`, `/news/search` with `X-Subscription-Token`), Tavily
//! (`POST /search` with a bearer key) and, when none of them is configured, DuckDuckGo's HTML
//! results page (`duckduckgo`: no key, parsed with html5ever). The vendor JSON lives in typed
//! structs in this module and nowhere else; every backend maps to
//! `{results: [{title, url, snippet, date?}]}`.
//!
//! SearXNG, Brave and Tavily endpoints are configured by the operator, so they are *not*
//! subject to the egress policy (DESIGN §6: provider endpoints the operator configures do not
//! go through it); the agent controls only the query text, which travels as a query parameter
//! or JSON string and cannot change the endpoint. Requests use a separate client with no
//! proxy, no redirects, the configured timeouts and a body cap. DuckDuckGo, the default nobody
//! configured, goes through `Egress::fetch` and so through the policy, pinning and redirect
//! checks like `fetch_url`.

use serde::{Deserialize, Serialize};
use url::Url;

use crate::config::{SearchBackend, SearchConfig};
use crate::error::chain;
use crate::{Egress, EgressError, EgressRequest};

mod duckduckgo;

/// `web` or `news`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    #[default]
    Web,
    News,
}

/// The `web_search` tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchRequest {
    pub query: String,
    #[serde(rename = "type", default)]
    pub kind: SearchKind,
    /// 1..=10; default 5.
    #[serde(default = "default_max_results")]
    pub max_results: u32,
}

/// The default number of results.
pub const DEFAULT_MAX_RESULTS: u32 = 5;
/// The most results one search may ask for.
pub const MAX_RESULTS: u32 = 10;

fn default_max_results() -> u32 {
    DEFAULT_MAX_RESULTS
}

impl SearchRequest {
    /// A web search for `query` with the default number of results.
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest { query: query.into(), kind: SearchKind::Web, max_results: DEFAULT_MAX_RESULTS }
    }
}

/// The `web_search` tool's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
}

/// One hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    /// Plain text (HTML markup from the backend removed).
    pub snippet: String,
    /// Publication date or age as the backend gives it (ISO 8601 where it has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// Search responses larger than this are refused (a result page is a few KiB).
const MAX_SEARCH_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

/// `backend = "…"` names a backend whose key or URL is missing. (With no `backend`, the first
/// configured one answers, and DuckDuckGo needs nothing, so that is the only way to get here.)
fn not_configured(config: &SearchConfig) -> EgressError {
    let field = match config.backend {
        Some(SearchBackend::Searxng) | None => "searxng_url",
        Some(SearchBackend::Brave) => "brave_api_key",
        Some(SearchBackend::Tavily) => "tavily_api_key",
        Some(SearchBackend::Duckduckgo) => "duckduckgo_url",
    };
    let name = config.backend.map_or("searxng", SearchBackend::name);
    let hint = format!(
        "[egress.search] backend is \"{name}\" but {field} is not set; set it in the config, or remove \
         `backend` to use the first configured backend (DuckDuckGo when none is)"
    );
    EgressError::NotConfigured { what: "web search".to_owned(), hint }
}

impl Egress {
    /// Runs one search on the configured backend.
    pub async fn web_search(&self, request: &SearchRequest) -> Result<SearchResults, EgressError> {
        let query = request.query.trim();
        if query.is_empty() {
            return Err(EgressError::InvalidRequest { reason: "query is empty".to_owned() });
        }
        if !(1..=MAX_RESULTS).contains(&request.max_results) {
            return Err(EgressError::InvalidRequest {
                reason: format!("max_results must be 1..={MAX_RESULTS}, got {}", request.max_results),
            });
        }
        let config = &self.inner.config.search;
        let backend = config.selected().ok_or_else(|| not_configured(config))?;
        let deadline = self.inner.config.total_timeout();
        let search = async {
            match backend {
                SearchBackend::Searxng => self.searxng(config, query, request).await,
                SearchBackend::Brave => self.brave(config, query, request).await,
                SearchBackend::Tavily => self.tavily(config, query, request).await,
                SearchBackend::Duckduckgo => self.duckduckgo(config, query, request, deadline).await,
            }
        };
        let mut results = match tokio::time::timeout(deadline, search).await {
            Ok(results) => results?,
            Err(_elapsed) => return Err(EgressError::Timeout { after: deadline }),
        };
        results.retain(|result| !result.url.is_empty());
        results.truncate(request.max_results as usize);
        Ok(SearchResults { results })
    }

    async fn searxng(
        &self,
        config: &SearchConfig,
        query: &str,
        request: &SearchRequest,
    ) -> Result<Vec<SearchResult>, EgressError> {
        let base = config.searxng_url.as_deref().unwrap_or_default();
        let mut url = endpoint(SearchBackend::Searxng, base, "search")?;
        let category = match request.kind {
            SearchKind::Web => "general",
            SearchKind::News => "news",
        };
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json")
            .append_pair("categories", category)
            .append_pair("pageno", "1");
        let builder = self.inner.provider_client.get(url).header("accept", "application/json");
        let response: wire::SearxngResponse = self.call(SearchBackend::Searxng, builder).await?;
        Ok(response
            .results
            .into_iter()
            .map(|result| SearchResult {
                title: plain_text(&result.title),
                url: result.url,
                snippet: plain_text(result.content.as_deref().unwrap_or_default()),
                date: result.published_date.as_ref().and_then(date_text),
            })
            .collect())
    }

    async fn brave(
        &self,
        config: &SearchConfig,
        query: &str,
        request: &SearchRequest,
    ) -> Result<Vec<SearchResult>, EgressError> {
        let key = config.brave_api_key.as_deref().unwrap_or_default();
        let path = match request.kind {
            SearchKind::Web => "web/search",
            SearchKind::News => "news/search",
        };
        let mut url = endpoint(SearchBackend::Brave, &config.brave_url, path)?;
        url.query_pairs_mut().append_pair("q", query).append_pair("count", &request.max_results.to_string());
        let builder = self
            .inner
            .provider_client
            .get(url)
            .header("accept", "application/json")
            .header("x-subscription-token", key);
        let response: wire::BraveResponse = self.call(SearchBackend::Brave, builder).await?;
        // Web results sit under `web.results`; the news endpoint returns `results` at the top.
        let results = match request.kind {
            SearchKind::Web => response.web.map(|web| web.results).unwrap_or_default(),
            SearchKind::News => response.results,
        };
        Ok(results
            .into_iter()
            .map(|result| SearchResult {
                title: plain_text(&result.title),
                url: result.url,
                snippet: plain_text(result.description.as_deref().unwrap_or_default()),
                date: result.page_age.or(result.age).filter(|date| !date.is_empty()),
            })
            .collect())
    }

    async fn tavily(
        &self,
        config: &SearchConfig,
        query: &str,
        request: &SearchRequest,
    ) -> Result<Vec<SearchResult>, EgressError> {
        let key = config.tavily_api_key.as_deref().unwrap_or_default();
        let url = endpoint(SearchBackend::Tavily, &config.tavily_url, "search")?;
        let body = wire::TavilyRequest {
            query,
            topic: match request.kind {
                SearchKind::Web => "general",
                SearchKind::News => "news",
            },
            max_results: request.max_results,
            search_depth: "basic",
            include_answer: false,
            include_raw_content: false,
            include_images: false,
        };
        let builder = self.inner.provider_client.post(url).bearer_auth(key).json(&body);
        let response: wire::TavilyResponse = self.call(SearchBackend::Tavily, builder).await?;
        Ok(response
            .results
            .into_iter()
            .map(|result| SearchResult {
                title: plain_text(&result.title),
                url: result.url,
                snippet: plain_text(result.content.as_deref().unwrap_or_default()),
                date: result.published_date.filter(|date| !date.is_empty()),
            })
            .collect())
    }

    async fn duckduckgo(
        &self,
        config: &SearchConfig,
        query: &str,
        request: &SearchRequest,
        deadline: std::time::Duration,
    ) -> Result<Vec<SearchResult>, EgressError> {
        let failed = |reason: String| EgressError::Search { backend: SearchBackend::Duckduckgo.name(), reason };
        let base = config.duckduckgo_url.trim();
        let mut url = Url::parse(base)
            .map_err(|error| EgressError::Config { reason: format!("duckduckgo URL {base:?}: {error}") })?;
        url.query_pairs_mut().append_pair("q", query);
        // The HTML page has no news vertical; the closest it offers is the past week's pages.
        if request.kind == SearchKind::News {
            url.query_pairs_mut().append_pair("df", "w");
        }
        let mut egress_request = EgressRequest::get(url.as_str());
        egress_request.headers.push(("accept".to_owned(), "text/html".to_owned()));
        egress_request.timeout = Some(deadline);
        let response = self.fetch(egress_request).await?;
        if !response.ok() {
            // A throttled address usually gets a 202 with a bot check (parsed below); some
            // front ends answer 403 or 429 instead.
            let hint = if matches!(response.status, 403 | 429) { " (rate limited: try again later)" } else { "" };
            return Err(failed(format!("HTTP {}{hint}", response.status)));
        }
        if response.truncated {
            return Err(failed(format!(
                "results page larger than max_body_bytes ({} bytes)",
                self.inner.config.max_body_bytes
            )));
        }
        let page = response.text();
        duckduckgo::parse_results_page(&page).map_err(|error| failed(error.reason()))
    }

    /// Sends, checks the status, reads a bounded body and decodes it.
    async fn call<T: for<'de> Deserialize<'de>>(
        &self,
        backend: SearchBackend,
        builder: reqwest::RequestBuilder,
    ) -> Result<T, EgressError> {
        let failed = |reason: String| EgressError::Search { backend: backend.name(), reason };
        let mut response = builder.send().await.map_err(|error| {
            if error.is_timeout() {
                EgressError::Timeout { after: self.inner.config.connect_timeout() }
            } else {
                failed(format!("could not reach the backend: {}", chain(&error)))
            }
        })?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) =
            response.chunk().await.map_err(|error| failed(format!("reading the response: {}", chain(&error))))?
        {
            if body.len() + chunk.len() > MAX_SEARCH_RESPONSE_BYTES {
                return Err(failed(format!("response larger than {MAX_SEARCH_RESPONSE_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            let hint = match (backend, status.as_u16()) {
                (SearchBackend::Searxng, 403) => {
                    " (the instance refuses format=json: add `json` to search.formats in its settings.yml)"
                }
                (SearchBackend::Brave | SearchBackend::Tavily, 401 | 403) => {
                    " (the API key was refused: check it in [egress.search])"
                }
                (_, 429) => " (rate limited: try again later)",
                _ => "",
            };
            return Err(failed(format!("HTTP {status}{hint}: {}", excerpt.trim())));
        }
        serde_json::from_slice(&body).map_err(|error| failed(format!("unexpected response format: {error}")))
    }
}

/// `base` + `/` + `path`, keeping any path prefix of `base` (`http://host/searx` →
/// `http://host/searx/search`).
fn endpoint(backend: SearchBackend, base: &str, path: &str) -> Result<Url, EgressError> {
    let joined = format!("{}/{path}", base.trim().trim_end_matches('/'));
    let url = Url::parse(&joined)
        .map_err(|error| EgressError::Config { reason: format!("{} URL {base:?}: {error}", backend.name()) })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EgressError::Config { reason: format!("{} URL {base:?} is not http(s)", backend.name()) });
    }
    Ok(url)
}

fn date_text(value: &serde_json::Value) -> Option<String> {
    value.as_str().filter(|text| !text.is_empty()).map(str::to_owned)
}

/// Removes HTML tags (Brave wraps matches in `<strong>`), decodes the common entities and
/// collapses whitespace. A `<` not followed by a tag-like character is kept (`a < b`).
pub(crate) fn plain_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut chars = html.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '<' && chars.peek().is_some_and(|next| next.is_ascii_alphabetic() || *next == '/' || *next == '!') {
            for skipped in chars.by_ref() {
                if skipped == '>' {
                    break;
                }
            }
            continue;
        }
        text.push(c);
    }
    let decoded = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&apos;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The backends' JSON, as far as we read it. Unknown fields are ignored: these APIs add
/// fields often, and a new one must not break search.
mod wire {
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize)]
    pub(super) struct SearxngResponse {
        #[serde(default)]
        pub results: Vec<SearxngResult>,
    }

    #[derive(Deserialize)]
    pub(super) struct SearxngResult {
        #[serde(default)]
        pub url: String,
        #[serde(default)]
        pub title: String,
        #[serde(default)]
        pub content: Option<String>,
        /// A string, or null; typed loosely because engines differ.
        #[serde(default, rename = "publishedDate")]
        pub published_date: Option<serde_json::Value>,
    }

    #[derive(Deserialize)]
    pub(super) struct BraveResponse {
        /// Web search: `{"type": "search", "web": {"results": [...]}}`.
        #[serde(default)]
        pub web: Option<BraveWeb>,
        /// News search: `{"type": "news", "results": [...]}`.
        #[serde(default)]
        pub results: Vec<BraveResult>,
    }

    #[derive(Deserialize)]
    pub(super) struct BraveWeb {
        #[serde(default)]
        pub results: Vec<BraveResult>,
    }

    #[derive(Deserialize)]
    pub(super) struct BraveResult {
        #[serde(default)]
        pub title: String,
        #[serde(default)]
        pub url: String,
        #[serde(default)]
        pub description: Option<String>,
        /// Relative, e.g. "2 days ago".
        #[serde(default)]
        pub age: Option<String>,
        /// ISO 8601 when Brave knows it.
        #[serde(default)]
        pub page_age: Option<String>,
    }

    #[derive(Serialize)]
    pub(super) struct TavilyRequest<'a> {
        pub query: &'a str,
        pub topic: &'static str,
        pub max_results: u32,
        pub search_depth: &'static str,
        pub include_answer: bool,
        pub include_raw_content: bool,
        pub include_images: bool,
    }

    #[derive(Deserialize)]
    pub(super) struct TavilyResponse {
        #[serde(default)]
        pub results: Vec<TavilyResult>,
    }

    #[derive(Deserialize)]
    pub(super) struct TavilyResult {
        #[serde(default)]
        pub title: String,
        #[serde(default)]
        pub url: String,
        #[serde(default)]
        pub content: Option<String>,
        /// Present for `topic: "news"`.
        #[serde(default)]
        pub published_date: Option<String>,
    }
}
