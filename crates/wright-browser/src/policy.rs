//! The egress seam. This crate does not know the egress rules; the tool layer implements
//! [`RequestPolicy`] on top of `wright-egress`: every request Chromium reports over CDP is put
//! to [`RequestPolicy::check`], and every connection a launched Chromium opens goes through
//! the proxy [`RequestPolicy::start_proxy`] provides.
//! Denied requests are remembered in a [`BlockedLog`] so the operation that caused them can
//! tell the agent what was blocked and why.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::Serialize;

/// Decides whether the browser may fetch a URL. Called for the navigation itself and for
/// every request a page makes (redirect hops, sub-resources, fetch/XHR, iframes, workers).
pub trait RequestPolicy: Send + Sync {
    /// `Ok(())` to let the request go, `Err(reason)` to fail it. Must not hang: the request
    /// is held in Chromium until this answers (it is bounded by the call timeout anyway).
    fn check<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>>;

    /// Starts an HTTP forward proxy on loopback that applies the same policy to every
    /// connection (CONNECT tunnels and absolute-form `http://` requests) and connects only to
    /// addresses it resolved and approved itself. Each launched Chromium gets its own, through
    /// `--proxy-server`; it is what stops WebSockets (which CDP interception does not see) and
    /// DNS rebinding (Chromium would otherwise resolve names itself after `check`).
    fn start_proxy(&self) -> BoxFuture<'_, Result<PolicyProxy, String>>;
}

/// A running policy proxy: where it listens, and what keeps it running (dropped with the
/// browser it serves).
pub struct PolicyProxy {
    /// A loopback address; Chromium is told `--proxy-server=http://ADDRESS`.
    pub address: SocketAddr,
    pub guard: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for PolicyProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyProxy").field("address", &self.address).finish_non_exhaustive()
    }
}

/// A request the policy refused, as reported to the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedRequest {
    pub url: String,
    /// What the page wanted it for, as Chromium names it: `document`, `image`, `xhr`, `fetch` …
    pub resource_type: String,
    pub reason: String,
}

/// Denied requests of one browser, tagged with the frame that made them, until the session
/// owning that frame collects them. Bounded: entries no session claims (a frame already
/// gone) fall off the front.
#[derive(Debug, Default)]
pub(crate) struct BlockedLog {
    // std Mutex: held only to push or filter, never across an await.
    entries: Mutex<VecDeque<(String, BlockedRequest)>>,
}

const BLOCKED_LOG_CAP: usize = 512;

impl BlockedLog {
    pub(crate) fn push(&self, frame_id: String, request: BlockedRequest) {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() == BLOCKED_LOG_CAP {
            entries.pop_front();
        }
        entries.push_back((frame_id, request));
    }

    /// Removes and returns the entries made by any of `frame_ids`, oldest first.
    pub(crate) fn take_for(&self, frame_ids: &[String]) -> Vec<BlockedRequest> {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut taken = Vec::new();
        entries.retain(|(frame_id, request)| {
            if frame_ids.iter().any(|id| id == frame_id) {
                taken.push(request.clone());
                false
            } else {
                true
            }
        });
        taken
    }
}
