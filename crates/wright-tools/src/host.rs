//! What agent-written JavaScript reaches of the world: the agent's own KV state (through the
//! store, with its limits) and `fetch` (through the egress policy). Nothing else.

use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;
use wright_core::AgentId;
use wright_egress::{Egress, EgressRequest};
use wright_sandbox::{FetchRequest, FetchResponse, HostFuture, SandboxHost};
use wright_store::Store;

/// The host of one sandbox call for one agent.
pub(crate) struct AgentHost {
    pub(crate) store: Store,
    pub(crate) egress: Egress,
    pub(crate) agent: AgentId,
    /// When the call's deadline passes; a fetch never outlives it.
    pub(crate) deadline: Instant,
    /// The hosts the code fetched from (also refused or failed fetches: the request left or
    /// was meant to), in order, each once: the result says so (outside content).
    pub(crate) fetched: Mutex<Vec<String>>,
}

impl AgentHost {
    pub(crate) fn new(services: &crate::Services, agent: &AgentId, deadline: Instant) -> Self {
        Self {
            store: services.store.clone(),
            egress: services.egress.clone(),
            agent: agent.clone(),
            deadline,
            fetched: Mutex::new(Vec::new()),
        }
    }

    /// The hosts fetched from so far.
    pub(crate) fn fetched(&self) -> Vec<String> {
        self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

fn message(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl SandboxHost for AgentHost {
    fn state_get<'a>(&'a self, key: &'a str) -> HostFuture<'a, Option<Value>> {
        Box::pin(async move { self.store.get_state(&self.agent, key).await.map_err(message) })
    }

    fn state_set<'a>(&'a self, key: &'a str, value: Value) -> HostFuture<'a, ()> {
        Box::pin(async move { self.store.set_state(&self.agent, key, &value).await.map_err(message) })
    }

    fn state_delete<'a>(&'a self, key: &'a str) -> HostFuture<'a, bool> {
        Box::pin(async move { self.store.delete_state(&self.agent, key).await.map_err(message) })
    }

    fn state_list<'a>(&'a self, prefix: Option<&'a str>) -> HostFuture<'a, Vec<String>> {
        Box::pin(async move { self.store.list_state_keys(&self.agent, prefix).await.map_err(message) })
    }

    fn fetch<'a>(&'a self, request: FetchRequest) -> HostFuture<'a, FetchResponse> {
        Box::pin(async move {
            let host = url::Url::parse(&request.url).ok().and_then(|url| url.host_str().map(str::to_lowercase));
            if let Some(host) = host {
                let mut fetched = self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if !fetched.contains(&host) {
                    fetched.push(host);
                }
            }
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err("the call's deadline has passed".to_owned());
            }
            let response = self
                .egress
                .fetch(EgressRequest {
                    method: request.method,
                    url: request.url,
                    headers: request.headers,
                    body: request.body.map(bytes::Bytes::from),
                    timeout: Some(remaining),
                })
                .await
                .map_err(message)?;
            Ok(FetchResponse {
                status: response.status,
                status_text: String::new(),
                redirected: response.redirects > 0,
                url: response.url.clone(),
                body: response.text().into_owned(),
                headers: response.headers,
            })
        })
    }
}
