//! What a model's tokens cost: the price set on the Settings page for a connection and model,
//! else the vendor's list price for the hosted models the Settings page lists, else nothing
//! (a local server costs 0 unless the person sets a price).
//!
//! Invariant: a cost is computed when its ledger row is written and stored with it, so a price
//! changed later does not rewrite the past.

use wright_store::ModelPrice;

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
}

impl Price {
    pub const FREE: Price = Price { input: 0.0, cached_input: 0.0, output: 0.0 };

    /// The cost of a request. Cached prompt tokens are billed at the cached price; tokens
    /// written to a cache (Anthropic) at the input price and a quarter (the vendor's rate for
    /// its five-minute cache); the rest of the prompt at the input price.
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        let cached = tokens.cached_prompt.min(tokens.prompt);
        let written = tokens.cache_written.min(tokens.prompt - cached);
        let plain = tokens.prompt - cached - written;
        (plain as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.input * 1.25
            + tokens.completion as f64 * self.output)
            / 1_000_000.0
    }
}

impl From<&ModelPrice> for Price {
    fn from(price: &ModelPrice) -> Self {
        Price { input: price.input_per_mtok, cached_input: price.cached_input_per_mtok, output: price.output_per_mtok }
    }
}

/// A request's tokens, as priced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Every prompt token, cached and cache-written ones included.
    pub prompt: u64,
    pub cached_prompt: u64,
    pub cache_written: u64,
    /// Every generated token, reasoning included.
    pub completion: u64,
}

/// The hosted vendors' list prices (dollars per million tokens: input, cached input, output),
/// by the model id's prefix; the longest matching prefix wins (`gpt-4o-mini` before `gpt-4o`),
/// so dated ids (`claude-sonnet-4-20250514`) find theirs.
const LIST_PRICES: &[(&str, &str, f64, f64, f64)] = &[
    ("openai", "gpt-5-nano", 0.05, 0.005, 0.40),
    ("openai", "gpt-5-mini", 0.25, 0.025, 2.00),
    ("openai", "gpt-5", 1.25, 0.125, 10.00),
    ("openai", "gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("openai", "gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("openai", "gpt-4.1", 2.00, 0.50, 8.00),
    ("openai", "gpt-4o-mini", 0.15, 0.075, 0.60),
    ("openai", "gpt-4o", 2.50, 1.25, 10.00),
    ("openai", "o4-mini", 1.10, 0.275, 4.40),
    ("openai", "o3-mini", 1.10, 0.55, 4.40),
    ("openai", "o3", 2.00, 0.50, 8.00),
    ("openai", "text-embedding-3-small", 0.02, 0.02, 0.0),
    ("openai", "text-embedding-3-large", 0.13, 0.13, 0.0),
    ("anthropic", "claude-opus-4-5", 5.00, 0.50, 25.00),
    ("anthropic", "claude-opus-4", 15.00, 1.50, 75.00),
    ("anthropic", "claude-sonnet-4", 3.00, 0.30, 15.00),
    ("anthropic", "claude-3-7-sonnet", 3.00, 0.30, 15.00),
    ("anthropic", "claude-haiku-4-5", 1.00, 0.10, 5.00),
    ("anthropic", "claude-3-5-haiku", 0.80, 0.08, 4.00),
    ("gemini", "gemini-2.5-pro", 1.25, 0.31, 10.00),
    ("gemini", "gemini-2.5-flash-lite", 0.10, 0.025, 0.40),
    ("gemini", "gemini-2.5-flash", 0.30, 0.075, 2.50),
    ("gemini", "gemini-2.0-flash-lite", 0.075, 0.075, 0.30),
    ("gemini", "gemini-2.0-flash", 0.10, 0.025, 0.40),
];

/// The vendor whose list prices apply to a provider kind (`openai_responses` is OpenAI's);
/// none for local and compatible servers.
fn vendor_of(kind: &str) -> Option<&'static str> {
    match kind {
        "openai" | "openai_responses" => Some("openai"),
        "anthropic" => Some("anthropic"),
        "gemini" => Some("gemini"),
        _ => None,
    }
}

/// The list price of `model` at a vendor of `kind`, when Wright knows one.
pub fn list_price(kind: &str, model: &str) -> Option<Price> {
    let vendor = vendor_of(kind)?;
    // Gemini's ids come as `models/gemini-…` from its list endpoint.
    let model = model.strip_prefix("models/").unwrap_or(model);
    LIST_PRICES
        .iter()
        .filter(|(listed_vendor, prefix, ..)| *listed_vendor == vendor && model.starts_with(prefix))
        .max_by_key(|(_, prefix, ..)| prefix.len())
        .map(|(_, _, input, cached_input, output)| Price {
            input: *input,
            cached_input: *cached_input,
            output: *output,
        })
}

/// The default prices the Settings page shows, as (vendor, model prefix, price).
pub fn list_prices() -> impl Iterator<Item = (&'static str, &'static str, Price)> {
    LIST_PRICES.iter().map(|(vendor, prefix, input, cached_input, output)| {
        (*vendor, *prefix, Price { input: *input, cached_input: *cached_input, output: *output })
    })
}

/// The price of a request to `model` over `connection` (of provider `kind`): the one set for
/// them, else the list price, else free.
pub fn price_of(set: &[ModelPrice], connection: &str, kind: &str, model: &str) -> Price {
    set.iter()
        .find(|price| price.connection == connection && price.model == model)
        .map(Price::from)
        .or_else(|| list_price(kind, model))
        .unwrap_or(Price::FREE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_local_servers_are_free_unless_priced() {
        assert_eq!(list_price("openai", "gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(list_price("openai_responses", "gpt-4o").unwrap().input, 2.50);
        assert_eq!(list_price("anthropic", "claude-sonnet-4-20250514").unwrap().output, 15.00);
        assert_eq!(list_price("gemini", "models/gemini-2.5-flash-lite").unwrap().input, 0.10);
        assert_eq!(list_price("openai_compatible", "gpt-4o"), None);
        let set = [ModelPrice {
            connection: "local".into(),
            model: "qwen3".into(),
            input_per_mtok: 1.0,
            cached_input_per_mtok: 0.5,
            output_per_mtok: 2.0,
        }];
        assert_eq!(price_of(&set, "local", "openai_compatible", "qwen3").output, 2.0);
        assert_eq!(price_of(&set, "other", "openai_compatible", "qwen3"), Price::FREE);
    }

    #[test]
    fn cached_and_written_prompt_tokens_are_billed_at_their_own_rates() {
        let price = Price { input: 2.0, cached_input: 0.5, output: 10.0 };
        let tokens = Tokens { prompt: 1_000_000, cached_prompt: 400_000, cache_written: 100_000, completion: 100_000 };
        // 500k plain × 2 + 400k cached × 0.5 + 100k written × 2.5 + 100k out × 10
        let expected = 1.0 + 0.2 + 0.25 + 1.0;
        assert!((price.cost(&tokens) - expected).abs() < 1e-9, "{}", price.cost(&tokens));
    }
}
