//! The browser tools (seed 002 "Browser") over wright-browser: one isolated browser context
//! per conversation, every request of a page judged by the same egress policy as `fetch_url`.

use std::sync::Arc;

use futures::future::BoxFuture;
use wright_browser::shapes::{
    ClickArgs, EvaluateArgs, ExtractHtmlArgs, ExtractTextArgs, NavigateArgs, ScreenshotArgs, TypeArgs,
};
use wright_browser::{BrowserError, PolicyProxy, RequestPolicy};
use wright_egress::Egress;

use crate::builtin::{Builtin, NoArgs, READS_OUTSIDE, REQUESTS_URL, Tool, with_effects};
use crate::{ToolContext, ToolError};

/// The egress policy as the browser's request policy: a page reaches only what `fetch_url`
/// could reach.
pub struct EgressPolicy(pub Egress);

impl RequestPolicy for EgressPolicy {
    fn check<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let verdict = self.0.check(url).await;
            if verdict.allowed { Ok(()) } else { Err(verdict.reason()) }
        })
    }

    fn start_proxy(&self) -> BoxFuture<'_, Result<PolicyProxy, String>> {
        Box::pin(async move {
            let proxy = self.0.start_proxy(self.0.config().proxy.clone()).await.map_err(|error| error.to_string())?;
            Ok(PolicyProxy { address: proxy.address(), guard: Box::new(proxy) })
        })
    }
}

/// Builds the request policy the browser needs from the egress client.
pub fn request_policy(egress: &Egress) -> Arc<dyn RequestPolicy> {
    Arc::new(EgressPolicy(egress.clone()))
}

fn browser_error(error: BrowserError) -> ToolError {
    match error {
        BrowserError::Denied { .. } => ToolError::Denied(error.to_string()),
        BrowserError::Timeout { .. } => ToolError::Timeout(error.to_string()),
        BrowserError::SelectorNotFound { .. } => ToolError::NotFound(error.to_string()),
        BrowserError::Launch(_) | BrowserError::Protocol(_) => ToolError::Internal(error.to_string()),
        _ => ToolError::Rejected(error.to_string()),
    }
}

/// The browser session key: the conversation, or one per agent outside conversations (CLI).
fn session(context: &ToolContext) -> String {
    context.conversation_id.clone().unwrap_or_else(|| format!("agent:{}", context.agent))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        with_effects(
            Builtin::<NavigateArgs>::boxed(
                "browser_navigate",
                "Open a URL in your headless browser (one session per conversation, kept across calls). Returns \
             {url, title, status}; requests the egress policy refuses are listed in `blocked`.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .navigate(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            REQUESTS_URL,
        ),
        with_effects(
            Builtin::<ScreenshotArgs>::boxed(
                "browser_screenshot",
                "Take a PNG screenshot of the page, an element (selector) or the full page; returns {image (base64), width, height}.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .screenshot(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        with_effects(
            Builtin::<ClickArgs>::asking(
                "browser_click",
                "Click the element matching a CSS selector (waits briefly for it to appear). Returns {ok: true}.",
                |context, args| {
                    Box::pin(async move {
                        let reply =
                            context.services.browsers.click(&session(&context), &args).await.map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        with_effects(
            Builtin::<TypeArgs>::asking(
                "browser_type",
                "Type text into the input matching a CSS selector, optionally clearing it first. Returns {ok: true}.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .type_text(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        with_effects(
            Builtin::<ExtractTextArgs>::boxed(
                "browser_extract_text",
                "Get the visible text of the page or of the element matching a CSS selector: {text}.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .extract_text(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        with_effects(
            Builtin::<ExtractHtmlArgs>::boxed(
                "browser_extract_html",
                "Get the HTML of an element (default body), inner or outer: {html}.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .extract_html(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        with_effects(
            Builtin::<EvaluateArgs>::asking(
                "browser_evaluate",
                "Run JavaScript in the page and get its JSON result: {result}.",
                |context, args| {
                    Box::pin(async move {
                        let reply = context
                            .services
                            .browsers
                            .evaluate(&session(&context), &args)
                            .await
                            .map_err(browser_error)?;
                        Ok(reply.to_json())
                    })
                },
            ),
            READS_OUTSIDE,
        ),
        Builtin::<NoArgs>::boxed(
            "browser_close",
            "Close your browser session for this conversation and free its resources. Returns {ok: true}.",
            |context, _| {
                Box::pin(async move {
                    let reply = context.services.browsers.close(&session(&context)).await.map_err(browser_error)?;
                    Ok(reply.to_json())
                })
            },
        ),
    ]
}
