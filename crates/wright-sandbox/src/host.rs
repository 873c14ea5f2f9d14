//! The host side of the sandbox's bindings: [`SandboxHost`] is what `state.*` and `fetch` reach.
//! The tool layer implements it over the app store and the egress client; this crate only
//! carries the requests across the worker boundary and counts them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// A boxed future, so that [`SandboxHost`] stays object-safe (`Arc<dyn SandboxHost>`).
pub type HostFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// A request made by the agent's `fetch(url, {method, headers, body})`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// Upper-cased; `GET` when the code gave none.
    pub method: String,
    pub url: String,
    /// In the order given; names as the code wrote them.
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// What the agent's code sees as a `Response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchResponse {
    pub status: u16,
    #[serde(default)]
    pub status_text: String,
    /// The final URL after redirects.
    pub url: String,
    #[serde(default)]
    pub redirected: bool,
    pub headers: Vec<(String, String)>,
    /// The body as text (the egress client caps and decodes it).
    pub body: String,
}

/// The host functions a call may use. Errors are messages for the agent's code: they are thrown
/// there as `Error(message)`, so say what went wrong in words the model can act on.
///
/// Every future is raced against the call's deadline: a host call that outlives it fails the
/// call with kind `timeout`.
pub trait SandboxHost: Send + Sync {
    fn state_get<'a>(&'a self, key: &'a str) -> HostFuture<'a, Option<Value>>;
    fn state_set<'a>(&'a self, key: &'a str, value: Value) -> HostFuture<'a, ()>;
    /// Whether the key existed.
    fn state_delete<'a>(&'a self, key: &'a str) -> HostFuture<'a, bool>;
    /// Keys, sorted, optionally only those starting with `prefix`.
    fn state_list<'a>(&'a self, prefix: Option<&'a str>) -> HostFuture<'a, Vec<String>>;
    fn fetch<'a>(&'a self, request: FetchRequest) -> HostFuture<'a, FetchResponse>;
}

/// An in-memory host: state in a map, `fetch` refused. For `wright sandbox run`, benchmarks and
/// tests.
#[derive(Debug, Default)]
pub struct MemoryHost {
    /// Guards the map only for the length of one operation; never held across an await.
    state: Mutex<BTreeMap<String, Value>>,
}

impl MemoryHost {
    pub fn new() -> Self {
        MemoryHost::default()
    }

    /// A copy of the state, for assertions.
    pub fn snapshot(&self) -> BTreeMap<String, Value> {
        self.state.lock().map(|state| state.clone()).unwrap_or_default()
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut BTreeMap<String, Value>) -> T) -> Result<T, String> {
        let mut state = self.state.lock().map_err(|_| "the state store is unavailable".to_string())?;
        Ok(f(&mut state))
    }
}

impl SandboxHost for MemoryHost {
    fn state_get<'a>(&'a self, key: &'a str) -> HostFuture<'a, Option<Value>> {
        Box::pin(async move { self.with_state(|state| state.get(key).cloned()) })
    }

    fn state_set<'a>(&'a self, key: &'a str, value: Value) -> HostFuture<'a, ()> {
        Box::pin(async move {
            self.with_state(|state| {
                state.insert(key.to_string(), value);
            })
        })
    }

    fn state_delete<'a>(&'a self, key: &'a str) -> HostFuture<'a, bool> {
        Box::pin(async move { self.with_state(|state| state.remove(key).is_some()) })
    }

    fn state_list<'a>(&'a self, prefix: Option<&'a str>) -> HostFuture<'a, Vec<String>> {
        Box::pin(async move {
            self.with_state(|state| {
                state.keys().filter(|key| prefix.is_none_or(|prefix| key.starts_with(prefix))).cloned().collect()
            })
        })
    }

    fn fetch<'a>(&'a self, _request: FetchRequest) -> HostFuture<'a, FetchResponse> {
        Box::pin(async move { Err("fetch is not available here".to_string()) })
    }
}
