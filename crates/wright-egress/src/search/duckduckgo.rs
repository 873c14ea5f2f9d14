//! DuckDuckGo's HTML results page (`html.duckduckgo.com/html/?q=…`): the search that works
//! with no setup.
//!
//! The page is parsed with `scraper` (html5ever, the HTML5 parsing algorithm browsers use), so
//! markup quirks parse the way a browser would parse them. What is read, and why each rule:
//!
//! - a hit is a `div.result` holding an `a.result__a` (title and link) and optionally a
//!   `.result__snippet`; `div.result--ad` blocks are ads and skipped;
//! - links point at DuckDuckGo's redirect, `//duckduckgo.com/l/?uddg=<encoded target>&rut=…`;
//!   the target is taken from `uddg`, so the agent gets the real address and DuckDuckGo does
//!   not see which result it follows;
//! - "no results" is a page with `.no-results` and no hit: an empty list;
//! - DuckDuckGo's bot check (`#challenge-form`, `.anomaly-modal`) is reported as such;
//! - anything else — no hit and no marker, or result blocks whose links cannot be found —
//!   means the page changed shape, and is an error naming what was missing. An empty list
//!   there would tell the model "nothing exists" when the truth is "the parser is out of date".

use scraper::{ElementRef, Html, Selector};
use url::Url;

use super::SearchResult;

/// Why a page did not give results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PageError {
    /// DuckDuckGo showed its bot check instead of results.
    Challenge,
    /// The page is not the layout this parser knows.
    UnknownLayout { missing: &'static str },
}

impl PageError {
    pub(crate) fn reason(&self) -> String {
        match self {
            PageError::Challenge => "DuckDuckGo answered with its bot check instead of results (too many searches \
                                     from this address): try again later, or configure searxng_url, \
                                     brave_api_key or tavily_api_key in [egress.search]"
                .to_owned(),
            PageError::UnknownLayout { missing } => format!(
                "the results page has a layout this version of Wright does not recognise ({missing}); \
                 configure another backend in [egress.search] until Wright is updated"
            ),
        }
    }
}

struct Selectors {
    result: Selector,
    link: Selector,
    snippet: Selector,
    no_results: Selector,
    challenge: Selector,
}

impl Selectors {
    fn new() -> Selectors {
        // Constant, valid selectors: parsing cannot fail, and a typo here fails every test.
        let parse = |text: &str| Selector::parse(text).unwrap_or_else(|error| panic!("selector {text:?}: {error}"));
        Selectors {
            result: parse("div.result"),
            link: parse("a.result__a"),
            snippet: parse(".result__snippet"),
            no_results: parse(".no-results"),
            challenge: parse("#challenge-form, .anomaly-modal"),
        }
    }
}

/// The hits on one results page, in page order, ads left out.
pub(crate) fn parse_results_page(html: &str) -> Result<Vec<SearchResult>, PageError> {
    let selectors = Selectors::new();
    let document = Html::parse_document(html);
    if document.select(&selectors.challenge).next().is_some() {
        return Err(PageError::Challenge);
    }
    let mut blocks = 0;
    let mut results = Vec::new();
    for block in document.select(&selectors.result) {
        if has_class(block, "result--ad") || block.select(&selectors.no_results).next().is_some() {
            continue;
        }
        blocks += 1;
        let Some(link) = block.select(&selectors.link).next() else { continue };
        let Some(url) = link.value().attr("href").and_then(target_url) else { continue };
        let snippet = block.select(&selectors.snippet).next().map(text_of).unwrap_or_default();
        results.push(SearchResult { title: text_of(link), url, snippet, date: None });
    }
    if results.is_empty() {
        if blocks > 0 {
            return Err(PageError::UnknownLayout {
                missing: "result blocks without an a.result__a link to a web page",
            });
        }
        if document.select(&selectors.no_results).next().is_none() {
            return Err(PageError::UnknownLayout { missing: "no div.result and no .no-results marker" });
        }
    }
    Ok(results)
}

fn has_class(element: ElementRef<'_>, class: &str) -> bool {
    element.value().classes().any(|name| name == class)
}

/// An element's text with whitespace collapsed (titles and snippets wrap matches in `<b>`).
fn text_of(element: ElementRef<'_>) -> String {
    element.text().flat_map(str::split_whitespace).collect::<Vec<_>>().join(" ")
}

/// The web page a result link leads to: `uddg` of DuckDuckGo's redirect, or the link itself
/// when it is already an outside address. DuckDuckGo's own pages (ads' `y.js`, internal
/// links) and non-http(s) targets are not results.
fn target_url(href: &str) -> Option<String> {
    let base = Url::parse("https://duckduckgo.com/").ok()?;
    let link = base.join(href.trim()).ok()?;
    let target = if is_duckduckgo(&link) {
        if link.path() != "/l/" {
            return None;
        }
        let (_, target) = link.query_pairs().find(|(name, _)| name == "uddg")?;
        Url::parse(&target).ok()?
    } else {
        link
    };
    (matches!(target.scheme(), "http" | "https") && !is_duckduckgo(&target)).then(|| target.into())
}

fn is_duckduckgo(url: &Url) -> bool {
    url.host_str().is_some_and(|host| host == "duckduckgo.com" || host.ends_with(".duckduckgo.com"))
}
