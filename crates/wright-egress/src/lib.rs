//! `wright-egress`: the one path for every outbound request the agent causes — `fetch_url`,
//! the sandbox's `fetch`, browser navigation — and the web search backends.
//!
//! ```text
//! Egress::new(EgressConfig)            system resolver (hickory, /etc/resolv.conf)
//! Egress::with_resolver(config, r)     injected answers (tests, `StaticResolver`)
//! egress.check(url)       -> Verdict   allow/deny, the addresses, the rule that decided
//! egress.fetch(request)   -> Result<EgressResponse, EgressError>
//! response.to_fetch_url_result()       {status, headers, body, ok, truncated, encoding?}
//! egress.start_proxy(ProxyLimits)     -> EgressProxy on 127.0.0.1 for a browser's --proxy-server
//! egress.serve_proxy_on(unix, limits) -> UnixSocketProxy: the same on a socket the caller bound
//! egress.web_search(&SearchRequest)   -> Result<SearchResults, EgressError>
//! ```
//!
//! Guarantees (see `policy` for the rules themselves):
//!
//! - **One parse.** The URL is parsed once by the `url` crate and that value is what reqwest
//!   sends, so userinfo tricks, odd IPv4 spellings, IDNA and trailing dots are judged exactly
//!   as the connector will read them.
//! - **One lookup, pinned.** A name is resolved once per hop by our resolver; every address
//!   must pass; the approved addresses are pinned and reqwest's resolver hook can only return
//!   pinned addresses. IP literals are judged directly (reqwest never resolves them). DNS
//!   rebinding gets one answer, and that answer is the one checked.
//! - **No side doors.** The client has no proxy (environment proxies would resolve names
//!   themselves), no automatic redirects, no `resolve` overrides.
//! - **Redirects are ours.** Each hop is judged again; at most `max_redirects`; 303 (and 301/
//!   302 after POST) become GET; credentials are dropped when the origin changes.
//! - **Bounded.** Connect timeout per hop, one total deadline, a header-size cap, and a body
//!   cap that truncates (`truncated: true`) instead of failing.
//!
//! Web search endpoints are configured by the operator and do not go through the policy
//! (DESIGN §6); see `search`. `Egress` is `Clone + Send + Sync` and cheap to clone (one `Arc`):
//! build one at start-up and hand clones to every caller.
//!
//! **Invariant:** nothing in this crate knows about tools, models or the sandbox; it reads no
//! environment variables.

mod config;
mod error;
mod fetch;
mod policy;
mod proxy;
mod render;
mod resolver;
mod search;
mod secrets;

use std::sync::{Arc, Once, OnceLock};

pub use config::{EgressConfig, SearchBackend, SearchConfig};
pub use error::EgressError;
pub use fetch::{EgressRequest, EgressResponse};
pub use policy::{AddressVerdict, Classification, Verdict, classify};
pub use proxy::{EgressProxy, ProxyLimits, UnixSocketProxy};
pub use render::{FetchUrlResult, is_textual_media_type};
pub use resolver::{LookupFuture, NameResolver, StaticResolver, SystemResolver};
pub use search::{DEFAULT_MAX_RESULTS, MAX_RESULTS, SearchKind, SearchRequest, SearchResult, SearchResults};
pub use secrets::Secrets;

use policy::Policy;
use resolver::{PinTable, PinnedResolver};

/// The guarded client. Cheap to clone; all clones share the resolver, pins and connection pools.
#[derive(Clone)]
pub struct Egress {
    inner: Arc<Inner>,
}

struct Inner {
    config: EgressConfig,
    policy: Policy,
    resolver: Arc<dyn NameResolver>,
    pins: Arc<PinTable>,
    /// For agent-caused requests: resolves only through `pins`.
    client: reqwest::Client,
    /// For operator-configured endpoints (web search): ordinary resolution, no policy.
    provider_client: reqwest::Client,
    /// The secrets no agent-caused request may carry (set once, at start-up).
    secrets: OnceLock<Arc<dyn Secrets>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

/// reqwest is built without a default rustls provider (ring instead of aws-lc); it must be
/// installed once per process before a client is built. Another crate may have done it first.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::ring::default_provider().install_default().is_err() {
            tracing::debug!("a rustls crypto provider was already installed");
        }
    });
}

impl Egress {
    /// With the system resolver (hickory reading `/etc/resolv.conf`).
    pub fn new(config: EgressConfig) -> Result<Self, EgressError> {
        let resolver = SystemResolver::new()?;
        Self::with_resolver(config, Arc::new(resolver))
    }

    /// With any resolver, e.g. a [`StaticResolver`] holding the answers a test needs.
    pub fn with_resolver(config: EgressConfig, resolver: Arc<dyn NameResolver>) -> Result<Self, EgressError> {
        install_crypto_provider();
        let policy = Policy::new(&config.allow)?;
        config.proxy.check()?;
        let pins = Arc::new(PinTable::default());
        let build_error =
            |error: reqwest::Error| EgressError::Config { reason: format!("HTTP client: {}", error::chain(&error)) };
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .dns_resolver(Arc::new(PinnedResolver(Arc::clone(&pins))))
            .connect_timeout(config.connect_timeout())
            .user_agent(config.user_agent.clone())
            .http2_max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
            .build()
            .map_err(build_error)?;
        let provider_client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout())
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(build_error)?;
        Ok(Egress {
            inner: Arc::new(Inner {
                config,
                policy,
                resolver,
                pins,
                client,
                provider_client,
                secrets: OnceLock::new(),
            }),
        })
    }

    pub fn config(&self) -> &EgressConfig {
        &self.inner.config
    }

    /// From now on, for every clone: a request whose URL, headers or body carry one of
    /// `secrets` (also encoded) is refused. Set once; a later call is ignored.
    pub fn refuse_secrets(&self, secrets: Arc<dyn Secrets>) {
        if self.inner.secrets.set(secrets).is_err() {
            tracing::warn!("the egress's secrets were already set");
        }
    }

    /// Why a request with these parts may not leave, if it carries a secret.
    fn carried_secret(&self, url: &str, headers: &[(String, String)], body: &[u8]) -> Option<String> {
        let secrets = self.inner.secrets.get()?;
        secrets::find(secrets, url, headers, body).map(|found| found.reason())
    }
}
