//! Telegram's reading of a message in HTML parse mode, after the Bot API's "HTML style" rules:
//! the supported tags (`b strong i em u ins s strike del tg-spoiler span.tg-spoiler a[href]
//! code pre blockquote[expandable] tg-emoji`), the four named entities (`&lt; &gt; &amp;
//! &quot;`) and numeric ones; every other `<`, `>` and `&` must be escaped; tags nest properly;
//! `pre` and `code` hold no other formatting (but `pre` may wrap one `code` with a
//! `language-…` class). The length limits count the parsed text in UTF-16 code units.
//!
//! Used by the fake Bot API to refuse what Telegram refuses ("can't parse entities: … at byte
//! offset N"), and by tests to check that what Wright renders always parses.

/// A message's text as Telegram understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The visible text: tags removed, entities decoded.
    pub text: String,
    /// The formatting, as `(kind, offset, length)` in UTF-16 code units of `text`.
    pub entities: Vec<(String, usize, usize)>,
}

impl Parsed {
    /// The length Telegram's limits count: UTF-16 code units.
    pub fn utf16_len(&self) -> usize {
        utf16_len(&self.text)
    }
}

pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

struct Open {
    tag: &'static str,
    kind: String,
    start: usize,
    byte: usize,
}

/// Parses `html` as Telegram does, or says why Telegram would refuse it (the text after
/// "Bad Request: can't parse entities: ").
pub fn parse_html(html: &str) -> Result<Parsed, String> {
    let bytes = html.as_bytes();
    let mut text = String::new();
    let mut text_utf16 = 0usize;
    let mut entities = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'<' => {
                let end = html[index..]
                    .find('>')
                    .map(|at| index + at)
                    .ok_or_else(|| format!("Unclosed start tag at byte offset {index}"))?;
                let inside = &html[index + 1..end];
                if let Some(name) = inside.strip_prefix('/') {
                    let name = name.trim().to_ascii_lowercase();
                    let open = stack.pop().ok_or_else(|| format!("Unexpected end tag at byte offset {index}"))?;
                    if canonical(&name) != Some(open.tag) {
                        return Err(format!(
                            "Can't find end tag corresponding to start tag \"{}\" at byte offset {}",
                            open.tag, open.byte
                        ));
                    }
                    if text_utf16 > open.start || open.tag == "pre" || open.tag == "code" {
                        entities.push((open.kind, open.start, text_utf16 - open.start));
                    }
                } else {
                    let (name, attributes) = match inside.find(|character: char| character.is_ascii_whitespace()) {
                        Some(at) => (&inside[..at], inside[at..].trim()),
                        None => (inside, ""),
                    };
                    let name = name.to_ascii_lowercase();
                    let tag = canonical(&name)
                        .ok_or_else(|| format!("Unsupported start tag \"{name}\" at byte offset {index}"))?;
                    let attributes =
                        parse_attributes(attributes).map_err(|problem| format!("{problem} at byte offset {index}"))?;
                    if let Some(parent) = stack.last() {
                        let code_in_pre = parent.tag == "pre" && tag == "code";
                        if (parent.tag == "pre" || parent.tag == "code") && !code_in_pre {
                            return Err(format!(
                                "Entity \"{tag}\" can't be nested in \"{}\" at byte offset {index}",
                                parent.tag
                            ));
                        }
                        if stack.iter().any(|open| open.tag == tag) && tag != "span" {
                            return Err(format!("Entity \"{tag}\" can't be nested in itself at byte offset {index}"));
                        }
                    }
                    let kind = match tag {
                        "a" => {
                            let href = attributes
                                .iter()
                                .find(|(key, _)| key == "href")
                                .map(|(_, value)| value.clone())
                                .ok_or_else(|| format!("Can't find URL of the link at byte offset {index}"))?;
                            format!("text_link:{href}")
                        }
                        "code" => {
                            let class = attributes.iter().find(|(key, _)| key == "class").map(|(_, value)| value);
                            match class {
                                Some(class) if stack.last().is_some_and(|parent| parent.tag == "pre") => {
                                    let language = class.strip_prefix("language-").ok_or_else(|| {
                                        format!("Unsupported class \"{class}\" of code at byte offset {index}")
                                    })?;
                                    format!("pre:{language}")
                                }
                                Some(_) => {
                                    return Err(format!(
                                        "Programming language can't be specified for a standalone code tag at byte offset {index}"
                                    ));
                                }
                                None => "code".to_owned(),
                            }
                        }
                        "span" => {
                            let class = attributes.iter().find(|(key, _)| key == "class").map(|(_, value)| value);
                            if class.map(String::as_str) != Some("tg-spoiler") {
                                return Err(format!("Unsupported span class at byte offset {index}"));
                            }
                            "spoiler".to_owned()
                        }
                        other => other.to_owned(),
                    };
                    stack.push(Open { tag, kind, start: text_utf16, byte: index });
                }
                index = end + 1;
            }
            b'>' => return Err(format!("Unexpected end of tag at byte offset {index}")),
            b'&' => {
                let (decoded, length) = decode_entity(&html[index..])
                    .ok_or_else(|| format!("Character entity expected at byte offset {index}"))?;
                text.push(decoded);
                text_utf16 += decoded.len_utf16();
                index += length;
            }
            _ => {
                let character = html[index..].chars().next().unwrap_or('\u{fffd}');
                text.push(character);
                text_utf16 += character.len_utf16();
                index += character.len_utf8();
            }
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{}\" at byte offset {}",
            open.tag, open.byte
        ));
    }
    Ok(Parsed { text, entities })
}

/// The tag a name stands for, or None for a tag Telegram does not support.
fn canonical(name: &str) -> Option<&'static str> {
    Some(match name {
        "b" | "strong" => "b",
        "i" | "em" => "i",
        "u" | "ins" => "u",
        "s" | "strike" | "del" => "s",
        "tg-spoiler" => "spoiler",
        "span" => "span",
        "a" => "a",
        "code" => "code",
        "pre" => "pre",
        "blockquote" => "blockquote",
        "tg-emoji" => "tg-emoji",
        _ => return None,
    })
}

fn parse_attributes(mut text: &str) -> Result<Vec<(String, String)>, String> {
    let mut attributes = Vec::new();
    loop {
        text = text.trim_start();
        if text.is_empty() {
            return Ok(attributes);
        }
        let name_end =
            text.find(|character: char| character == '=' || character.is_ascii_whitespace()).unwrap_or(text.len());
        let name = text[..name_end].to_ascii_lowercase();
        text = text[name_end..].trim_start();
        let Some(rest) = text.strip_prefix('=') else {
            // A bare attribute (`expandable`).
            attributes.push((name, String::new()));
            continue;
        };
        let rest = rest.trim_start();
        let quote = rest.chars().next().filter(|quote| *quote == '"' || *quote == '\'');
        let (raw, after) = match quote {
            Some(quote) => {
                let close = rest[1..].find(quote).ok_or("Unclosed attribute value")?;
                (&rest[1..1 + close], &rest[close + 2..])
            }
            None => {
                let end = rest.find(|character: char| character.is_ascii_whitespace()).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        let mut value = String::new();
        let mut position = 0;
        while position < raw.len() {
            if raw.as_bytes()[position] == b'&' {
                let (decoded, length) = decode_entity(&raw[position..]).ok_or("Character entity expected")?;
                value.push(decoded);
                position += length;
            } else {
                let character = raw[position..].chars().next().unwrap_or('\u{fffd}');
                value.push(character);
                position += character.len_utf8();
            }
        }
        attributes.push((name, value));
        text = after;
    }
}

/// Decodes the entity at the start of `text` (which starts with `&`): the character and the
/// entity's length in bytes.
fn decode_entity(text: &str) -> Option<(char, usize)> {
    let end = text.find(';')?;
    let name = &text[1..end];
    let decoded = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse::<u32>().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((decoded, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegram_html_is_read_as_telegram_reads_it() {
        let parsed =
            parse_html("<b>bold</b> &lt;tag&gt; &amp; <pre><code class=\"language-rust\">let x;</code></pre>").unwrap();
        assert_eq!(parsed.text, "bold <tag> & let x;");
        assert!(parsed.entities.contains(&("b".to_owned(), 0, 4)));
        assert!(parsed.entities.contains(&("pre:rust".to_owned(), 13, 6)));
        assert_eq!(utf16_len("😀"), 2);
    }

    #[test]
    fn what_telegram_refuses_is_refused() {
        for bad in [
            "a < b",
            "x & y",
            "<foo>x</foo>",
            "<b>open",
            "</b>",
            "<b><i>x</b></i>",
            "<code class=\"language-x\">y</code>",
            "<pre><b>x</b></pre>",
            "<a>no href</a>",
            "1 > 0",
        ] {
            assert!(parse_html(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
