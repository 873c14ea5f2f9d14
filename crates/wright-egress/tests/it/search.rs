//! `web_search` against local fakes of SearXNG, Brave Search and Tavily that check the request
//! the way the real services do and answer in their real response formats (abridged from
//! their documentation: unknown fields included on purpose).

use std::collections::HashMap;

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use wright_egress::{
    EgressConfig, EgressError, SearchBackend, SearchConfig, SearchKind, SearchRequest, StaticResolver,
};

use crate::{egress_with, serve};

fn with_search(search: SearchConfig) -> wright_egress::Egress {
    // No allowlist: the search endpoints on 127.0.0.1 are reached because the operator
    // configured them, not through the egress policy.
    egress_with(EgressConfig { search, ..EgressConfig::default() }, StaticResolver::new())
}

fn request(query: &str, kind: SearchKind, max_results: u32) -> SearchRequest {
    SearchRequest { query: query.to_owned(), kind, max_results }
}

async fn searxng(Query(params): Query<HashMap<String, String>>) -> Response {
    if params.get("format").map(String::as_str) != Some("json") {
        // What SearXNG does when the format is not enabled in settings.yml.
        return (StatusCode::FORBIDDEN, "Forbidden").into_response();
    }
    let news = params.get("categories").map(String::as_str) == Some("news");
    let query = params["q"].clone();
    let results: Vec<Value> = (1..=12)
        .map(|n| {
            json!({
                "url": format!("https://example.org/{query}/{n}"),
                "title": format!("Result {n} &amp; more"),
                "content": format!("About {query}, number {n}."),
                "engine": "duckduckgo",
                "parsed_url": ["https", "example.org", format!("/{n}"), "", "", ""],
                "template": "default.html",
                "engines": ["duckduckgo", "brave"],
                "positions": [n, n],
                "score": 1.0 / n as f64,
                "category": if news { "news" } else { "general" },
                "publishedDate": if news { json!("2026-11-20T08:00:00") } else { Value::Null },
            })
        })
        .collect();
    axum::Json(json!({
        "query": query,
        "number_of_results": 0,
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": ["a suggestion"],
        "unresponsive_engines": [],
    }))
    .into_response()
}

#[tokio::test]
async fn searxng_web_and_news() {
    let address = serve(Router::new().route("/searx/search", get(searxng))).await;
    let egress =
        with_search(SearchConfig { searxng_url: Some(format!("http://{address}/searx/")), ..SearchConfig::default() });
    let results = egress.web_search(&request("rust lang", SearchKind::Web, 5)).await.unwrap();
    assert_eq!(results.results.len(), 5);
    let first = &results.results[0];
    assert_eq!(first.url, "https://example.org/rust lang/1");
    assert_eq!(first.title, "Result 1 & more");
    assert_eq!(first.snippet, "About rust lang, number 1.");
    assert_eq!(first.date, None);
    let json = serde_json::to_value(&results).unwrap();
    assert!(json["results"][0].get("date").is_none(), "date is omitted, not null");

    let results = egress.web_search(&request("rust", SearchKind::News, 10)).await.unwrap();
    assert_eq!(results.results.len(), 10);
    assert_eq!(results.results[0].date.as_deref(), Some("2026-11-20T08:00:00"));
}

#[tokio::test]
async fn searxng_without_json_format_explains_the_fix() {
    let address = serve(Router::new().route("/search", get(|| async { (StatusCode::FORBIDDEN, "Forbidden") }))).await;
    let egress =
        with_search(SearchConfig { searxng_url: Some(format!("http://{address}")), ..SearchConfig::default() });
    let error = egress.web_search(&SearchRequest::new("x")).await.unwrap_err();
    assert!(
        matches!(&error, EgressError::Search { backend: "searxng", reason } if reason.contains("search.formats")),
        "{error}"
    );
}

async fn brave(path: &'static str, headers: HeaderMap, params: HashMap<String, String>) -> Response {
    if headers.get("x-subscription-token").and_then(|value| value.to_str().ok()) != Some("brave-key") {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401, "detail": "The provided subscription token is invalid."}})),
        )
            .into_response();
    }
    let count: usize = params["count"].parse().unwrap();
    let query = &params["q"];
    let result = |n: usize| {
        json!({
            "type": if path == "news" { "news_result" } else { "search_result" },
            "title": format!("<strong>{query}</strong> hit {n}"),
            "url": format!("https://brave.example/{n}"),
            "is_source_local": false,
            "description": format!("The <strong>{query}</strong> page &quot;{n}&quot;"),
            "age": "2 days ago",
            "page_age": if n == 1 { json!("2026-11-20T10:00:00") } else { Value::Null },
            "language": "en",
            "family_friendly": true,
            "meta_url": {"scheme": "https", "netloc": "brave.example", "hostname": "brave.example", "path": format!("› {n}")},
        })
    };
    let results: Vec<Value> = (1..=count).map(result).collect();
    let body = if path == "news" {
        json!({"type": "news", "query": {"original": query}, "results": results})
    } else {
        json!({
            "type": "search",
            "query": {"original": query, "more_results_available": true},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
            "web": {"type": "search", "results": results, "family_friendly": true},
        })
    };
    axum::Json(body).into_response()
}

#[tokio::test]
async fn brave_web_and_news() {
    let router = Router::new()
        .route(
            "/res/v1/web/search",
            get(|headers: HeaderMap, Query(params): Query<HashMap<String, String>>| brave("web", headers, params)),
        )
        .route(
            "/res/v1/news/search",
            get(|headers: HeaderMap, Query(params): Query<HashMap<String, String>>| brave("news", headers, params)),
        );
    let address = serve(router).await;
    let egress = with_search(SearchConfig {
        brave_api_key: Some("brave-key".to_owned()),
        brave_url: format!("http://{address}/res/v1"),
        ..SearchConfig::default()
    });
    let results = egress.web_search(&request("tokio", SearchKind::Web, 3)).await.unwrap();
    assert_eq!(results.results.len(), 3);
    assert_eq!(results.results[0].title, "tokio hit 1");
    assert_eq!(results.results[0].snippet, "The tokio page \"1\"");
    assert_eq!(results.results[0].url, "https://brave.example/1");
    assert_eq!(results.results[0].date.as_deref(), Some("2026-11-20T10:00:00"));
    assert_eq!(results.results[1].date.as_deref(), Some("2 days ago"));

    let results = egress.web_search(&request("tokio", SearchKind::News, 2)).await.unwrap();
    assert_eq!(results.results.len(), 2);
    assert_eq!(results.results[0].title, "tokio hit 1");

    let egress = with_search(SearchConfig {
        brave_api_key: Some("wrong".to_owned()),
        brave_url: format!("http://{address}/res/v1"),
        ..SearchConfig::default()
    });
    let error = egress.web_search(&SearchRequest::new("x")).await.unwrap_err();
    assert!(
        matches!(&error, EgressError::Search { backend: "brave", reason } if reason.contains("401") && reason.contains("API key")),
        "{error}"
    );
    assert!(!error.to_string().contains("wrong"), "the key never appears in errors");
}

async fn tavily(headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if headers.get("authorization").and_then(|value| value.to_str().ok()) != Some("Bearer tvly-key") {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"detail": {"error": "Unauthorized: missing or invalid API key."}})),
        )
            .into_response();
    }
    let news = body["topic"] == "news";
    let max_results = body["max_results"].as_u64().unwrap() as usize;
    let results: Vec<Value> = (1..=max_results)
        .map(|n| {
            let mut result = json!({
                "url": format!("https://tavily.example/{n}"),
                "title": format!("{} {n}", body["query"].as_str().unwrap()),
                "content": format!("Content {n}"),
                "score": 0.9,
                "raw_content": null,
            });
            if news {
                result["published_date"] = json!("Wed, 20 Nov 2026 10:00:00 GMT");
            }
            result
        })
        .collect();
    axum::Json(json!({
        "query": body["query"],
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": results,
        "response_time": 1.05,
        "request_id": "123e4567-e89b-12d3-a456-426614174111",
    }))
    .into_response()
}

#[tokio::test]
async fn tavily_web_and_news() {
    let address = serve(Router::new().route("/search", post(tavily))).await;
    let egress = with_search(SearchConfig {
        tavily_api_key: Some("tvly-key".to_owned()),
        tavily_url: format!("http://{address}"),
        ..SearchConfig::default()
    });
    let results = egress.web_search(&request("wright", SearchKind::Web, 4)).await.unwrap();
    assert_eq!(results.results.len(), 4);
    assert_eq!(results.results[3].title, "wright 4");
    assert_eq!(results.results[3].snippet, "Content 4");
    assert_eq!(results.results[0].date, None);

    let results = egress.web_search(&request("wright", SearchKind::News, 1)).await.unwrap();
    assert_eq!(results.results.len(), 1);
    assert_eq!(results.results[0].date.as_deref(), Some("Wed, 20 Nov 2026 10:00:00 GMT"));
}

#[tokio::test]
async fn backend_choice_and_configuration_errors() {
    let egress = with_search(SearchConfig { backend: Some(SearchBackend::Searxng), ..SearchConfig::default() });
    let error = egress.web_search(&SearchRequest::new("x")).await.unwrap_err();
    assert!(matches!(error, EgressError::NotConfigured { .. }));
    let message = error.to_string();
    for needle in ["web search is not configured", "searxng_url", "DuckDuckGo"] {
        assert!(message.contains(needle), "{message}");
    }

    let egress = with_search(SearchConfig {
        backend: Some(SearchBackend::Brave),
        searxng_url: Some("http://localhost:1".to_owned()),
        ..SearchConfig::default()
    });
    let message = egress.web_search(&SearchRequest::new("x")).await.unwrap_err().to_string();
    assert!(message.contains("\"brave\"") && message.contains("brave_api_key"), "{message}");

    let config = SearchConfig {
        searxng_url: Some("http://s".to_owned()),
        brave_api_key: Some("b".to_owned()),
        tavily_api_key: Some("t".to_owned()),
        ..SearchConfig::default()
    };
    assert_eq!(config.selected(), Some(SearchBackend::Searxng));
    assert_eq!(
        SearchConfig { backend: Some(SearchBackend::Tavily), ..config.clone() }.selected(),
        Some(SearchBackend::Tavily)
    );

    let egress = with_search(config);
    for max_results in [0, 11] {
        let error = egress.web_search(&request("x", SearchKind::Web, max_results)).await.unwrap_err();
        assert!(matches!(error, EgressError::InvalidRequest { .. }), "{error}");
    }
    let error = egress.web_search(&request("  ", SearchKind::Web, 5)).await.unwrap_err();
    assert!(matches!(error, EgressError::InvalidRequest { .. }), "{error}");
}

#[test]
fn search_arguments_deserialize_with_defaults() {
    let parsed: SearchRequest = serde_json::from_str(r#"{"query": "q"}"#).unwrap();
    assert_eq!(parsed, SearchRequest::new("q"));
    let parsed: SearchRequest = serde_json::from_str(r#"{"query": "q", "type": "news", "max_results": 3}"#).unwrap();
    assert_eq!(parsed.kind, SearchKind::News);
    assert_eq!(parsed.max_results, 3);
}

/// A stand-in for `https://html.duckduckgo.com/html/` serving the saved pages in
/// `duckduckgo/` (reconstructed by hand: see its README). The query picks the page, and the
/// request must look like the one DuckDuckGo gets: `GET /html/?q=…`, asking for HTML.
async fn duckduckgo(Query(params): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    if headers.get("accept").and_then(|value| value.to_str().ok()) != Some("text/html") {
        return (StatusCode::NOT_ACCEPTABLE, "wants text/html").into_response();
    }
    let html = |status: StatusCode, body: &'static str| {
        (status, [("content-type", "text/html; charset=UTF-8")], body).into_response()
    };
    match params.get("q").map(String::as_str) {
        Some("qzxvkjqwpoeiruty zzqqxx") => html(StatusCode::OK, include_str!("duckduckgo/no_results.html")),
        Some("redesign") => html(StatusCode::OK, include_str!("duckduckgo/changed_layout.html")),
        Some("bots") => html(StatusCode::ACCEPTED, include_str!("duckduckgo/challenge.html")),
        Some("news") if params.get("df").map(String::as_str) != Some("w") => {
            (StatusCode::BAD_REQUEST, "news asks for the past week").into_response()
        }
        Some("rust lang" | "news") => html(StatusCode::OK, include_str!("duckduckgo/results.html")),
        Some("teapot") => (StatusCode::IM_A_TEAPOT, "no").into_response(),
        _ => (StatusCode::BAD_REQUEST, "unexpected query").into_response(),
    }
}

/// Egress with no backend configured and DuckDuckGo pointed at `address`, which the policy
/// would refuse (loopback) unless `allow` names it.
fn with_duckduckgo(address: std::net::SocketAddr, allow: bool) -> wright_egress::Egress {
    let search = SearchConfig { duckduckgo_url: format!("http://{address}/html/"), ..SearchConfig::default() };
    let allow = if allow { vec![address.to_string()] } else { Vec::new() };
    egress_with(EgressConfig { search, allow, ..EgressConfig::default() }, StaticResolver::new())
}

#[tokio::test]
async fn duckduckgo_answers_when_nothing_is_configured() {
    assert_eq!(SearchConfig::default().selected(), Some(SearchBackend::Duckduckgo));
    let address = serve(Router::new().route("/html/", get(duckduckgo))).await;
    let egress = with_duckduckgo(address, true);
    let results = egress.web_search(&request("rust lang", SearchKind::Web, 5)).await.unwrap().results;
    // The ad is left out; redirect links are resolved to their targets (query string of the
    // target kept whole); a direct link is taken as it is; a hit without a snippet has "".
    let expected = [
        (
            "Rust Programming Language",
            "https://www.rust-lang.org/",
            "A language empowering everyone to build reliable and efficient software. Rust is blazingly fast & memory-efficient.",
        ),
        (
            "Rust (programming language) - Wikipedia",
            "https://en.wikipedia.org/wiki/Rust_(programming_language)?a=1&b=2",
            "Rust is a general-purpose programming language emphasizing performance, type safety, and concurrency.",
        ),
        ("The Rust Programming Language - The Rust Book", "https://doc.rust-lang.org/book/", ""),
    ];
    let got: Vec<(&str, &str, &str)> =
        results.iter().map(|hit| (hit.title.as_str(), hit.url.as_str(), hit.snippet.as_str())).collect();
    assert_eq!(got, expected);
    assert!(results.iter().all(|hit| hit.date.is_none()));

    let results = egress.web_search(&request("rust lang", SearchKind::Web, 2)).await.unwrap().results;
    assert_eq!(results.len(), 2);
    // News: the page has no news vertical; the past week's pages are asked for (`df=w`).
    let results = egress.web_search(&request("news", SearchKind::News, 5)).await.unwrap().results;
    assert_eq!(results.len(), 3);
}

#[tokio::test]
async fn duckduckgo_no_results_is_an_empty_list() {
    let address = serve(Router::new().route("/html/", get(duckduckgo))).await;
    let egress = with_duckduckgo(address, true);
    let results = egress.web_search(&SearchRequest::new("qzxvkjqwpoeiruty zzqqxx")).await.unwrap();
    assert_eq!(results.results, Vec::new());
}

#[tokio::test]
async fn duckduckgo_changed_layout_is_an_error_not_an_empty_list() {
    let address = serve(Router::new().route("/html/", get(duckduckgo))).await;
    let egress = with_duckduckgo(address, true);
    let error = egress.web_search(&SearchRequest::new("redesign")).await.unwrap_err();
    assert!(
        matches!(&error, EgressError::Search { backend: "duckduckgo", reason }
            if reason.contains("layout") && reason.contains("div.result")),
        "{error}"
    );

    let error = egress.web_search(&SearchRequest::new("bots")).await.unwrap_err();
    assert!(
        matches!(&error, EgressError::Search { backend: "duckduckgo", reason } if reason.contains("bot check")),
        "{error}"
    );
    let error = egress.web_search(&SearchRequest::new("teapot")).await.unwrap_err();
    assert!(
        matches!(&error, EgressError::Search { backend: "duckduckgo", reason } if reason.contains("418")),
        "{error}"
    );
}

#[tokio::test]
async fn duckduckgo_goes_through_the_egress_policy() {
    // Nobody configured DuckDuckGo, so unlike the operator's backends it is an agent-caused
    // request: a loopback address is refused unless the allowlist names it.
    let address = serve(Router::new().route("/html/", get(duckduckgo))).await;
    let egress = with_duckduckgo(address, false);
    let error = egress.web_search(&SearchRequest::new("rust lang")).await.unwrap_err();
    assert!(matches!(error, EgressError::Denied { .. }), "{error}");
}
