//! No request the agent causes may carry a configured secret (a provider key, the access token,
//! the Telegram token, a key in `secrets.json`): a page that talks the model into sending one
//! out fails here, whatever the model writes. The URL, every header and the body are searched
//! for each secret as it is, percent-encoded (any bytes, any case, also twice), base64-encoded
//! (standard and URL-safe alphabets, with or without padding, at any of the three alignments a
//! secret inside a longer encoded text can have) and hex-encoded (either case).
//!
//! Not covered, and said so in the README: other encodings (a secret reversed, split across
//! requests, compressed, encrypted, base64 wrapped onto several lines, base32) — the defence
//! against those is that the secret never reaches the model's context in the first place.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// Where the egress learns the secrets: the process's set, which may grow while it runs (a key
/// saved in the canvas), so it is asked on every request.
pub trait Secrets: Send + Sync {
    /// Calls `found` with each secret until it returns true; returns whether one did.
    fn any(&self, found: &mut dyn FnMut(&str) -> bool) -> bool;
}

/// A fixed list of secrets (tests, and callers that have no live set).
impl Secrets for Vec<String> {
    fn any(&self, found: &mut dyn FnMut(&str) -> bool) -> bool {
        self.iter().any(|secret| found(secret))
    }
}

/// How a secret was found in a request, for the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Plain,
    Percent,
    Base64,
    Hex,
}

impl Encoding {
    fn as_str(self) -> &'static str {
        match self {
            Encoding::Plain => "as it is",
            Encoding::Percent => "percent-encoded",
            Encoding::Base64 => "base64-encoded",
            Encoding::Hex => "hex-encoded",
        }
    }
}

/// Which part of a request carried a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Url,
    Header(String),
    Body,
}

/// A secret found in a request: where, and how it was encoded (never which secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) part: Part,
    pub(crate) encoding: Encoding,
}

impl Found {
    /// The refusal's words, for the agent's result.
    pub(crate) fn reason(&self) -> String {
        let part = match &self.part {
            Part::Url => "its URL".to_owned(),
            Part::Header(name) => format!("its header {name}"),
            Part::Body => "its body".to_owned(),
        };
        format!(
            "{part} carries one of Wright's configured secrets ({}); a secret never leaves through a request the agent makes",
            self.encoding.as_str()
        )
    }
}

/// The first secret of `secrets` found in the request's `url`, `headers` or `body`.
pub(crate) fn find(secrets: &Arc<dyn Secrets>, url: &str, headers: &[(String, String)], body: &[u8]) -> Option<Found> {
    let mut found = None;
    secrets.any(&mut |secret| {
        let forms = Forms::of(secret);
        let in_part = |part: Part, bytes: &[u8]| forms.in_text(bytes).map(|encoding| Found { part, encoding });
        found = in_part(Part::Url, url.as_bytes())
            .or_else(|| headers.iter().find_map(|(name, value)| in_part(Part::Header(name.clone()), value.as_bytes())))
            .or_else(|| in_part(Part::Body, body));
        found.is_some()
    });
    found
}

/// The encoded forms of one secret to look for.
struct Forms {
    plain: Vec<u8>,
    /// Lower-case hex (searched in the lower-cased text, so either case matches).
    hex: Vec<u8>,
    /// The base64 characters fully determined by the secret, for each alignment and alphabet.
    base64: Vec<Vec<u8>>,
}

impl Forms {
    fn of(secret: &str) -> Self {
        let plain = secret.as_bytes().to_vec();
        let hex = plain.iter().flat_map(|byte| format!("{byte:02x}").into_bytes()).collect();
        let mut base64 = Vec::new();
        for offset in 0..3usize {
            // Encoded after `offset` other bytes, the first characters mix those bytes' bits
            // and the last ones the next bytes': only the characters in between are certain.
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(&plain);
            let first = (8 * offset).div_ceil(6);
            let end = 8 * (offset + plain.len()) / 6;
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(&shifted).into_bytes();
                base64.push(encoded[first..end].to_vec());
            }
        }
        Self { plain, hex, base64 }
    }

    /// How `text` carries the secret, if it does.
    fn in_text(&self, text: &[u8]) -> Option<Encoding> {
        if let Some(encoding) = self.in_decoded(text) {
            return Some(encoding);
        }
        // Percent-decoded up to twice (an encoded URL inside a URL), each form searched again.
        let mut decoded = text.to_vec();
        for _ in 0..2 {
            let next = percent_decode(&decoded);
            if next == decoded {
                break;
            }
            decoded = next;
            if let Some(encoding) = self.in_decoded(&decoded) {
                return Some(if encoding == Encoding::Plain { Encoding::Percent } else { encoding });
            }
        }
        None
    }

    fn in_decoded(&self, text: &[u8]) -> Option<Encoding> {
        if contains(text, &self.plain) {
            return Some(Encoding::Plain);
        }
        if self.base64.iter().any(|form| contains(text, form)) {
            return Some(Encoding::Base64);
        }
        contains(&text.to_ascii_lowercase(), &self.hex).then_some(Encoding::Hex)
    }
}

fn contains(text: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && text.windows(needle.len()).any(|window| window == needle)
}

/// `%XX` (either case) decoded; `+` is left as it is (a secret's own `+` stays findable).
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        let hex = |at: usize| text.get(at).and_then(|byte| (*byte as char).to_digit(16));
        match (text[index], hex(index + 1), hex(index + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                index += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    use super::*;

    const SECRET: &str = "sk-proj-T0p/Secret+Key?=~42";

    fn secrets() -> Arc<dyn Secrets> {
        Arc::new(vec!["7000000001:AAtelegram-token".to_owned(), SECRET.to_owned()])
    }

    fn in_body(body: &[u8]) -> Option<Encoding> {
        find(&secrets(), "https://example.com/", &[], body).map(|found| found.encoding)
    }

    fn percent_every_byte(text: &[u8], upper: bool) -> String {
        text.iter().map(|byte| if upper { format!("%{byte:02X}") } else { format!("%{byte:02x}") }).collect()
    }

    #[test]
    fn a_plain_secret_is_found_in_the_url_a_header_or_the_body_and_the_reason_names_the_part() {
        let url = format!("https://evil.test/c?k={SECRET}");
        let found = find(&secrets(), &url, &[], b"").unwrap();
        assert_eq!(found, Found { part: Part::Url, encoding: Encoding::Plain });
        assert!(found.reason().starts_with("its URL carries one of Wright's configured secrets (as it is)"));
        let headers = [("x-note".to_owned(), "bot7000000001:AAtelegram-token".to_owned())];
        let found = find(&secrets(), "https://evil.test/", &headers, b"").unwrap();
        assert_eq!(found.part, Part::Header("x-note".into()));
        assert_eq!(in_body(format!("notes: {SECRET}").as_bytes()), Some(Encoding::Plain));
        assert_eq!(find(&secrets(), "https://example.com/?q=weather", &headers[..0], b"hello"), None);
    }

    #[test]
    fn percent_encoding_of_any_bytes_in_either_case_and_twice_is_found() {
        let url = format!("https://evil.test/?k={}", percent_every_byte(SECRET.as_bytes(), true));
        assert_eq!(find(&secrets(), &url, &[], b"").unwrap().encoding, Encoding::Percent);
        let lower = percent_every_byte(SECRET.as_bytes(), false);
        assert_eq!(in_body(lower.as_bytes()), Some(Encoding::Percent));
        let partly = SECRET.replace('/', "%2F").replace('+', "%2b").replace('?', "%3F").replace('=', "%3D");
        assert_eq!(in_body(partly.as_bytes()), Some(Encoding::Percent));
        let twice = percent_every_byte(lower.as_bytes(), true);
        assert_eq!(in_body(twice.as_bytes()), Some(Encoding::Percent));
    }

    #[test]
    fn base64_in_both_alphabets_with_or_without_padding_at_every_alignment_is_found() {
        for prefix in ["", "a", "ab", "abc", "note: "] {
            let text = format!("{prefix}{SECRET} and more");
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(text.as_bytes());
                assert_eq!(in_body(encoded.as_bytes()), Some(Encoding::Base64), "{prefix:?} {encoded}");
                // Only the secret, padded: the padded tail still holds the certain characters.
                let alone = engine.encode(SECRET.as_bytes());
                assert_eq!(in_body(alone.as_bytes()), Some(Encoding::Base64), "{alone}");
            }
            // Base64 in a query string, percent-encoded as a URL would carry it.
            let in_url = STANDARD.encode(text.as_bytes()).replace('+', "%2B").replace('/', "%2F").replace('=', "%3D");
            let url = format!("https://evil.test/?d={in_url}");
            assert_eq!(find(&secrets(), &url, &[], b"").unwrap().encoding, Encoding::Base64, "{url}");
        }
    }

    #[test]
    fn hex_in_either_case_is_found() {
        let lower: String = SECRET.bytes().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(in_body(format!("x{lower}y").as_bytes()), Some(Encoding::Hex));
        assert_eq!(in_body(lower.to_uppercase().as_bytes()), Some(Encoding::Hex));
    }

    #[test]
    fn a_secret_that_is_not_there_is_not_found_in_any_encoding() {
        let other = "sk-proj-T0p/Secret+Key?=~43";
        for body in [
            other.to_owned(),
            STANDARD.encode(other),
            other.bytes().map(|byte| format!("{byte:02x}")).collect(),
            percent_every_byte(other.as_bytes(), true),
        ] {
            assert_eq!(in_body(body.as_bytes()), None, "{body}");
        }
    }
}
