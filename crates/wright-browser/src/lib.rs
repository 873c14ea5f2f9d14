//! Headless Chromium for the agent (seed 002 "Browser"; DESIGN.md §1, §6).
//!
//! [`Browsers`] owns one Chromium — launched lazily with server-fit switches, or reached at a
//! configured CDP URL — and gives each conversation its own isolated browser context (no
//! shared cookies, storage or cache), kept across calls until `browser_close`, the end of the
//! conversation, `idle_timeout`, or eviction at `max_contexts`. A browser that died is started
//! again on the next call, whose reply carries `session_lost`.
//!
//! **Egress**, in two layers, both from the [`RequestPolicy`] the tool layer supplies:
//!
//! - Every request Chromium makes — the navigation, each redirect hop, sub-resources,
//!   fetch/XHR, iframes (also cross-site ones in their own process), workers, popups — is
//!   paused by CDP `Fetch` interception on the browser session and put to
//!   [`RequestPolicy::check`]; refused ones fail with `BlockedByClient` and are listed in the
//!   reply's `blocked` (or, for the page itself, returned as [`BrowserError::Denied`]). This is
//!   what tells the agent what was blocked and why.
//! - A launched Chromium has no direct network access: it is started with
//!   `--proxy-server` pointing at the policy's proxy ([`RequestPolicy::start_proxy`]) and
//!   `--proxy-bypass-list=<-loopback>` (without it Chromium skips the proxy for loopback), so
//!   every connection — WebSockets included, which CDP Fetch does not see — is judged again by
//!   the proxy, which resolves the name itself and connects to the address it approved (no DNS
//!   rebinding between check and connect). A WebSocket the proxy refuses fails in the page
//!   (`onerror`); the page's own sockets are also judged by [`RequestPolicy::check`] when
//!   created, so a denied one is listed in `blocked` (resource type `websocket`); sockets of
//!   out-of-process frames and workers are refused but not listed.
//!
//! A browser reached at `cdp_url` was launched by someone else, without our proxy: only the
//! CDP layer applies there (WebSockets are not checked, and Chromium resolves names itself).
//! Deployments that need the full guarantee launch Chromium themselves with
//! `--proxy-server` pointing at a proxy that applies the policy, or let Wright launch it.
//!
//! The operations ([`Browsers::navigate`] …) take the tool arguments of [`shapes`] and return
//! [`Reply`]s that serialise to seed 002's result shapes. This crate knows nothing of tools,
//! models or the egress crate.

mod browsers;
mod config;
mod error;
mod instance;
mod policy;
mod session;
pub mod shapes;

pub use browsers::Browsers;
pub use config::{BrowserConfig, Viewport, find_chromium};
pub use error::BrowserError;
pub use policy::{BlockedRequest, PolicyProxy, RequestPolicy};
pub use shapes::Reply;

#[cfg(test)]
mod tests;
