//! The web tools: `fetch_url` (seed 002) and `web_search` (seed 001), both through the egress
//! guard — every request the agent causes passes its policy.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use wright_egress::{EgressError, EgressRequest, SearchKind, SearchRequest};

use crate::ToolError;
use crate::builtin::{Builtin, READS_OUTSIDE, REQUESTS_URL, Tool, with_effects};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct FetchArgs {
    /// The URL to fetch (http or https; private and local addresses are refused).
    url: String,
    /// HTTP method. Default: GET.
    method: Option<Method>,
    /// Request headers as key-value pairs.
    headers: Option<Map<String, Value>>,
    /// Request body (for POST/PUT/PATCH).
    body: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Web,
    News,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SearchArgs {
    /// What to search for.
    query: String,
    /// web (default) or news.
    #[serde(rename = "type")]
    kind: Option<Kind>,
    /// How many results, 1 to 10. Default: 5.
    #[schemars(range(min = 1, max = 10))]
    max_results: Option<u32>,
}

pub(crate) fn egress_error(error: EgressError) -> ToolError {
    match error {
        EgressError::Denied { .. } => ToolError::Denied(error.to_string()),
        EgressError::InvalidUrl { .. } | EgressError::InvalidRequest { .. } => ToolError::Rejected(error.to_string()),
        EgressError::NotConfigured { .. } => ToolError::NotConfigured(error.to_string()),
        EgressError::Timeout { .. } => ToolError::Timeout(error.to_string()),
        _ => ToolError::Network(error.to_string()),
    }
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        with_effects(
            Builtin::<FetchArgs>::boxed(
                "fetch_url",
                "Make an HTTP request and get {status, headers, body, ok, truncated}; a non-text body comes back \
             base64-encoded with encoding: \"base64\". Private, local and cloud-metadata addresses are refused. \
             Bodies over the limit (5 MiB by default) are cut and marked truncated.",
                |context, args| {
                    Box::pin(async move {
                        let method = match args.method.unwrap_or(Method::Get) {
                            Method::Get => "GET",
                            Method::Post => "POST",
                            Method::Put => "PUT",
                            Method::Patch => "PATCH",
                            Method::Delete => "DELETE",
                            Method::Head => "HEAD",
                        };
                        let headers = args
                            .headers
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(name, value)| {
                                (name, value.as_str().map_or_else(|| value.to_string(), str::to_owned))
                            })
                            .collect();
                        let request = EgressRequest {
                            method: method.to_owned(),
                            url: args.url,
                            headers,
                            body: args.body.map(bytes::Bytes::from),
                            timeout: None,
                        };
                        let response = context.services.egress.fetch(request).await.map_err(egress_error)?;
                        Ok(response.to_fetch_url_result().to_json())
                    })
                },
            ),
            REQUESTS_URL,
        ),
        with_effects(
            Builtin::<SearchArgs>::boxed(
                "web_search",
                "Search the web (or news) and get {results: [{title, url, snippet, date?}]}. Use fetch_url to read a result.",
                |context, args| {
                    Box::pin(async move {
                        let request = SearchRequest {
                            query: args.query,
                            kind: match args.kind {
                                Some(Kind::News) => SearchKind::News,
                                _ => SearchKind::Web,
                            },
                            max_results: args.max_results.unwrap_or(wright_egress::DEFAULT_MAX_RESULTS),
                        };
                        let results = context.services.egress.web_search(&request).await.map_err(egress_error)?;
                        serde_json::to_value(results).map_err(|error| ToolError::Internal(error.to_string()))
                    })
                },
            ),
            READS_OUTSIDE,
        ),
    ]
}
