//! Name resolution: our own resolver, and the pin table that makes the client connect only to
//! addresses the policy approved.
//!
//! [`NameResolver`] is the one place names become addresses. [`SystemResolver`] is hickory
//! with the system's configuration (`/etc/resolv.conf`, `/etc/hosts`); [`StaticResolver`]
//! answers from a table, for tests and for checking a URL against given answers.
//!
//! The client (reqwest) never resolves anything itself. Before each request, `fetch` resolves
//! the host once, judges every address, and *pins* the approved addresses under the host name
//! in a [`PinTable`]; reqwest's resolver hook ([`PinnedResolver`]) only reads that table. A name
//! that was not pinned fails to resolve, so there is no second lookup for DNS rebinding to
//! answer differently, and no path by which an unapproved address reaches the connector.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::EgressError;
use crate::policy::normalize_host;

/// The future a [`NameResolver`] returns.
pub type LookupFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<IpAddr>, EgressError>> + Send + 'a>>;

/// Turns a host name into addresses. Implementations return every address they found (the
/// policy judges them all) and [`EgressError::Dns`] when there are none.
pub trait NameResolver: Send + Sync {
    fn lookup<'a>(&'a self, name: &'a str) -> LookupFuture<'a>;
}

/// hickory-resolver with the operating system's configuration. Lookups are cached by hickory
/// (TTL-bound); the policy is applied to every answer, cached or not.
pub struct SystemResolver {
    resolver: hickory_resolver::TokioResolver,
}

impl SystemResolver {
    /// Reads the system configuration (`/etc/resolv.conf` on Unix). Fails if it cannot be
    /// read; there is deliberately no fallback to a public resolver, which would send every
    /// name the agent looks up to a third party.
    pub fn new() -> Result<Self, EgressError> {
        let config_error = |error: &dyn std::error::Error| EgressError::Config {
            reason: format!("system DNS configuration: {}", crate::error::chain(error)),
        };
        let builder = hickory_resolver::TokioResolver::builder_tokio().map_err(|error| config_error(&error))?;
        let resolver = builder.build().map_err(|error| config_error(&error))?;
        Ok(SystemResolver { resolver })
    }
}

impl NameResolver for SystemResolver {
    fn lookup<'a>(&'a self, name: &'a str) -> LookupFuture<'a> {
        Box::pin(async move {
            let answer = self.resolver.lookup_ip(name).await.map_err(|error| EgressError::Dns {
                host: name.to_owned(),
                reason: if error.is_no_records_found() {
                    "no such name or no addresses".to_owned()
                } else {
                    crate::error::chain(&error)
                },
            })?;
            let addresses: Vec<IpAddr> = answer.iter().collect();
            if addresses.is_empty() {
                return Err(EgressError::Dns { host: name.to_owned(), reason: "no addresses".to_owned() });
            }
            Ok(addresses)
        })
    }
}

/// Answers from a table, by normalized name. A name can be given a sequence of answers: each
/// lookup takes the next, and the last one repeats (how tests play a rebinding DNS server).
/// Unknown names fail as "no such name". Counts lookups, so tests can assert there was no
/// second one.
#[derive(Default)]
pub struct StaticResolver {
    // Held only for the duration of a map access, never across an await.
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    lookups: AtomicUsize,
}

impl StaticResolver {
    pub fn new() -> Self {
        StaticResolver::default()
    }

    /// `name` always resolves to `addresses`.
    pub fn with(self, name: &str, addresses: &[IpAddr]) -> Self {
        self.with_sequence(name, vec![addresses.to_vec()])
    }

    /// `name` resolves to each of `answers` in turn; the last one repeats.
    pub fn with_sequence(self, name: &str, answers: Vec<Vec<IpAddr>>) -> Self {
        self.lock().insert(normalize_host(name), answers.into());
        self
    }

    /// How many lookups have been made, across all names.
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<Vec<IpAddr>>>> {
        // A panic while holding this lock cannot leave the map half-updated; keep serving.
        self.answers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl NameResolver for StaticResolver {
    fn lookup<'a>(&'a self, name: &'a str) -> LookupFuture<'a> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let answer = {
            let mut answers = self.lock();
            answers
                .get_mut(&normalize_host(name))
                .and_then(|queue| if queue.len() > 1 { queue.pop_front() } else { queue.front().cloned() })
        };
        Box::pin(async move {
            match answer {
                Some(addresses) if !addresses.is_empty() => Ok(addresses),
                _ => Err(EgressError::Dns { host: name.to_owned(), reason: "no such name or no addresses".to_owned() }),
            }
        })
    }
}

/// Pinned address sets by host name, each tagged with the id of the guard that owns it.
type Pins = HashMap<String, Vec<(u64, Arc<[IpAddr]>)>>;

/// Addresses approved for in-flight requests, by host name exactly as the URL spells it (the
/// same string reqwest hands its resolver).
#[derive(Default)]
pub(crate) struct PinTable {
    next_id: AtomicU64,
    // Owned by the `Egress`; entries are added by `pin` and removed when their `PinGuard`
    // drops. Locked only for map access, never across an await.
    pins: Mutex<Pins>,
}

impl PinTable {
    /// Approves `addresses` for `host` until the returned guard is dropped. Concurrent pins of
    /// one name coexist; the resolver hook answers with their union (each set was approved).
    pub(crate) fn pin(self: &Arc<Self>, host: &str, addresses: &[IpAddr]) -> PinGuard {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().entry(host.to_owned()).or_default().push((id, addresses.into()));
        PinGuard { table: Arc::clone(self), host: host.to_owned(), id }
    }

    fn addresses(&self, host: &str) -> Vec<IpAddr> {
        let pins = self.lock();
        let mut addresses: Vec<IpAddr> = Vec::new();
        for (_, set) in pins.get(host).into_iter().flatten() {
            for address in set.iter() {
                if !addresses.contains(address) {
                    addresses.push(*address);
                }
            }
        }
        addresses
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pins> {
        self.pins.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Keeps a pin alive for the duration of one request hop.
pub(crate) struct PinGuard {
    table: Arc<PinTable>,
    host: String,
    id: u64,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let mut pins = self.table.lock();
        if let Some(sets) = pins.get_mut(&self.host) {
            sets.retain(|(id, _)| *id != self.id);
            if sets.is_empty() {
                pins.remove(&self.host);
            }
        }
    }
}

/// The error reqwest's resolver hook returns for a name nobody pinned. `fetch` never sends a
/// request without pinning first, so seeing this means a bug or a race lost safely.
#[derive(Debug)]
pub(crate) struct NotPinned(pub(crate) String);

impl std::fmt::Display for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} was not approved by the egress policy", self.0)
    }
}

impl std::error::Error for NotPinned {}

/// reqwest's resolver hook: answers only with pinned addresses, never looks anything up.
pub(crate) struct PinnedResolver(pub(crate) Arc<PinTable>);

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addresses = self.0.addresses(name.as_str());
        let host = name.as_str().to_owned();
        Box::pin(async move {
            if addresses.is_empty() {
                return Err(Box::new(NotPinned(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            // Port 0: reqwest substitutes the URL's port (or the scheme's default).
            let addrs: reqwest::dns::Addrs = Box::new(addresses.into_iter().map(|address| SocketAddr::new(address, 0)));
            Ok(addrs)
        })
    }
}
