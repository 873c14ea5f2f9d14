//! Headless Chromium for the agent (seed 002 "Browser"; DESIGN.md §1, §6).
//!
//! [`Browsers`] owns one Chromium — launched lazily with server-fit switches, or reached at a
//! configured CDP URL — and gives each conversation its own isolated browser context (no
//! shared cookies, storage or cache), kept across calls until `browser_close`, the end of the
//! conversation, `idle_timeout`, or eviction at `max_contexts`. A browser that died is started
//! again on the next call, whose reply carries `session_lost`.
//!
//! **Egress.** Every request Chromium makes — the navigation, each redirect hop, sub-resources,
//! fetch/XHR, iframes (also cross-site ones in their own process), workers, popups — is paused
//! by CDP `Fetch` interception on the browser session and put to the [`RequestPolicy`] the
//! tool layer supplies; refused ones fail with `BlockedByClient` and are listed in the reply's
//! `blocked` (or, for the page itself, returned as [`BrowserError::Denied`]).
//! Not covered: WebSocket connections (CDP Fetch does not see them), and Chromium resolves
//! allowed names itself, so a checked name could resolve differently at connect time (no
//! address pinning as in `wright-egress`).
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
pub use policy::{BlockedRequest, RequestPolicy};
pub use shapes::Reply;

#[cfg(test)]
mod tests;
