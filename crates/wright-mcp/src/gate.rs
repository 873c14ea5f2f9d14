//! `HttpGate`: who decides whether an HTTP MCP server may be reached, and at which addresses.
//!
//! This crate knows nothing of the egress policy; the caller hands [`McpClients::start`] a gate
//! (Wright's is the egress policy, in `wright-tools`). Before every connection to an HTTP server
//! the gate judges the URL once and names the addresses that passed; the connection's client
//! then resolves the host only to those addresses ([`PinnedResolver`]) and follows no
//! redirects and no proxy, so there is no second lookup for DNS rebinding to answer
//! differently. An IP-literal URL is judged as it is and never resolved.
//!
//! [`McpClients::start`]: crate::McpClients::start

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

/// The future an [`HttpGate`] returns.
pub type AdmitFuture<'a> = Pin<Box<dyn Future<Output = Result<Admission, String>> + Send + 'a>>;

/// Judges an HTTP MCP server's URL before each connection to it.
pub trait HttpGate: Send + Sync {
    /// The addresses `url` may be reached at, or why it may not (a sentence, shown as the
    /// server's error). Called once per connection attempt, never per request.
    fn admit<'a>(&'a self, url: &'a str) -> AdmitFuture<'a>;
}

/// Where an admitted URL may be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The host name as the URL parser normalizes it (lowercase, punycode) when the URL names
    /// one; `None` for an IP literal, which is connected to as it is.
    pub host: Option<String>,
    /// Every address the host may be reached at: the connection uses these and no others.
    pub addresses: Vec<IpAddr>,
}

/// reqwest's resolver for one connection: the admitted host resolves to the admitted
/// addresses, and every other name fails.
pub(crate) struct PinnedResolver(pub(crate) Admission);

#[derive(Debug, thiserror::Error)]
#[error("{0} was not admitted for this MCP connection")]
struct NotAdmitted(String);

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let admitted = self.0.host.as_deref().is_some_and(|host| host.eq_ignore_ascii_case(name.as_str()));
        let addresses = if admitted { self.0.addresses.clone() } else { Vec::new() };
        let name = name.as_str().to_owned();
        Box::pin(async move {
            if addresses.is_empty() {
                return Err(Box::new(NotAdmitted(name)) as Box<dyn std::error::Error + Send + Sync>);
            }
            // Port 0: reqwest uses the URL's port (or the scheme's default).
            let addresses: reqwest::dns::Addrs =
                Box::new(addresses.into_iter().map(|address| SocketAddr::new(address, 0)));
            Ok(addresses)
        })
    }
}
