//! The model's Markdown as Telegram HTML, in messages that fit Telegram's limit.
//!
//! A model writes CommonMark-ish text: `**bold**`, `*italic*`/`_italic_`, `` `code` ``, fenced
//! code blocks, `[links](https://…)`, `#` headings, `-` lists. Telegram reads a small HTML
//! dialect ([`crate::entities`]), so the text is converted line by line; anything that does not
//! close (a `**` still streaming, a lone `*`) stays literal text, so a partial answer renders as
//! validly as a whole one. `<`, `>` and `&` are always escaped, never passed through.
//!
//! [`render`] packs whole lines into messages of at most `limit` characters of visible text;
//! a line longer than that is cut (a text line loses its formatting, as plain escaped text; a
//! code line stays code), and a code block cut across two messages is closed and reopened.

use crate::entities::utf16_len;

/// `text` escaped for Telegram HTML.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '&' => escaped.push_str("&amp;"),
            '"' => escaped.push_str("&quot;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Plain `text` (no Markdown) as escaped messages of at most `limit` visible characters.
pub fn plain(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(16);
    cut(text, limit).into_iter().filter(|piece| !piece.trim().is_empty()).map(escape).collect()
}

/// One rendered line: its HTML and the length of its visible text.
#[derive(Debug, Clone)]
struct Line {
    html: String,
    visible: usize,
    /// Inside a fenced code block: the block's number and language.
    code: Option<(usize, String)>,
}

/// `markdown` as Telegram HTML messages of at most `limit` visible characters (UTF-16 code
/// units), in order. Empty input gives no message.
pub fn render(markdown: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(16);
    let mut lines = Vec::new();
    let mut block: Option<(usize, String)> = None;
    let mut blocks = 0;
    for raw in markdown.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(fence) = raw.trim_start().strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => {
                    blocks += 1;
                    let language: String = fence
                        .trim()
                        .chars()
                        .filter(|character| character.is_ascii_alphanumeric() || "+-_#".contains(*character))
                        .collect();
                    Some((blocks, language))
                }
            };
            continue;
        }
        match &block {
            Some(code) => {
                for piece in cut(raw, limit) {
                    lines.push(Line { html: escape(piece), visible: utf16_len(piece), code: Some(code.clone()) });
                }
            }
            None => {
                let visible_text = visible(raw);
                if utf16_len(&visible_text) <= limit {
                    lines.push(Line { html: line_html(raw), visible: utf16_len(&visible_text), code: None });
                } else {
                    for piece in cut(raw, limit) {
                        lines.push(Line { html: escape(piece), visible: utf16_len(piece), code: None });
                    }
                }
            }
        }
    }
    // Trailing blank lines (a stream between paragraphs) are not sent.
    while lines.last().is_some_and(|line| line.visible == 0 && line.code.is_none()) {
        lines.pop();
    }
    pack(lines, limit)
}

/// Packs lines into messages: a line joins the current message when it fits with its newline.
fn pack(lines: Vec<Line>, limit: usize) -> Vec<String> {
    let mut messages = Vec::new();
    let mut current: Vec<Line> = Vec::new();
    let mut used = 0;
    for line in lines {
        let separator = usize::from(!current.is_empty());
        if !current.is_empty() && used + separator + line.visible > limit {
            messages.push(assemble(&current));
            current.clear();
            used = 0;
        }
        used += usize::from(!current.is_empty()) + line.visible;
        current.push(line);
    }
    if !current.is_empty() {
        messages.push(assemble(&current));
    }
    // Telegram refuses a message whose text is only whitespace.
    messages.retain(|message| crate::entities::parse_html(message).is_ok_and(|parsed| !parsed.text.trim().is_empty()));
    messages
}

/// One message's HTML: text lines as they are, runs of one code block inside `<pre>`.
fn assemble(lines: &[Line]) -> String {
    let mut html = String::new();
    let mut index = 0;
    while index < lines.len() {
        if index > 0 {
            html.push('\n');
        }
        match &lines[index].code {
            None => {
                html.push_str(&lines[index].html);
                index += 1;
            }
            Some((block, language)) => {
                if language.is_empty() {
                    html.push_str("<pre>");
                } else {
                    html.push_str(&format!("<pre><code class=\"language-{language}\">"));
                }
                let mut first = true;
                while index < lines.len() && lines[index].code.as_ref().is_some_and(|(other, _)| other == block) {
                    if !first {
                        html.push('\n');
                    }
                    first = false;
                    html.push_str(&lines[index].html);
                    index += 1;
                }
                html.push_str(if language.is_empty() { "</pre>" } else { "</code></pre>" });
            }
        }
    }
    html
}

/// `text` in pieces of at most `limit` UTF-16 units, cut at whitespace where there is some.
fn cut(text: &str, limit: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while utf16_len(rest) > limit {
        let mut end = 0;
        let mut units = 0;
        let mut last_space = None;
        for (at, character) in rest.char_indices() {
            if units + character.len_utf16() > limit {
                break;
            }
            units += character.len_utf16();
            end = at + character.len_utf8();
            if character.is_whitespace() {
                last_space = Some(end);
            }
        }
        let end = match last_space {
            Some(space) if space > end / 2 => space,
            _ => end,
        };
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// The HTML of one line outside code blocks: headings bold, list bullets, inline formatting.
fn line_html(line: &str) -> String {
    let trimmed = line.trim_start();
    let hashes = trimmed.chars().take_while(|character| *character == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        return format!("<b>{}</b>", inline(trimmed[hashes..].trim()));
    }
    let indent = &line[..line.len() - trimmed.len()];
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = trimmed.strip_prefix(bullet) {
            return format!("{indent}• {}", inline(item));
        }
    }
    inline(line)
}

/// The visible text of a line as [`line_html`] renders it (for measuring).
fn visible(line: &str) -> String {
    crate::entities::parse_html(&line_html(line)).map(|parsed| parsed.text).unwrap_or_else(|_| line.to_owned())
}

/// Inline Markdown as HTML. Markers that do not close are literal text.
fn inline(text: &str) -> String {
    let characters: Vec<char> = text.chars().collect();
    let mut html = String::new();
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        // `code`: nothing inside is formatting.
        if character == '`'
            && let Some(close) = find(&characters, index + 1, &['`'])
            && close > index + 1
        {
            let code: String = characters[index + 1..close].iter().collect();
            html.push_str(&format!("<code>{}</code>", escape(&code)));
            index = close + 1;
            continue;
        }
        // [label](https://…)
        if character == '['
            && let Some((label, url, next)) = link(&characters, index)
        {
            html.push_str(&format!("<a href=\"{}\">{}</a>", escape(&url), inline(&label)));
            index = next;
            continue;
        }
        let mut matched = false;
        for (marker, tag) in [("**", "b"), ("__", "b"), ("~~", "s"), ("*", "i"), ("_", "i")] {
            let marker: Vec<char> = marker.chars().collect();
            if characters[index..].starts_with(&marker)
                && opens(&characters, index, marker.len())
                && let Some(close) = closing(&characters, index + marker.len(), &marker)
            {
                let inner: String = characters[index + marker.len()..close].iter().collect();
                html.push_str(&format!("<{tag}>{}</{tag}>", inline(&inner)));
                index = close + marker.len();
                matched = true;
                break;
            }
        }
        if !matched {
            html.push_str(&escape(&character.to_string()));
            index += 1;
        }
    }
    html
}

fn find(characters: &[char], from: usize, target: &[char]) -> Option<usize> {
    (from..characters.len()).find(|at| characters[*at..].starts_with(target))
}

/// A marker opens when the next character is not whitespace; `_` also needs no word before it
/// (so snake_case stays text).
fn opens(characters: &[char], at: usize, length: usize) -> bool {
    let next = characters.get(at + length);
    let before = at.checked_sub(1).map(|before| characters[before]);
    next.is_some_and(|next| !next.is_whitespace())
        && !(characters[at] == '_' && before.is_some_and(char::is_alphanumeric))
}

/// Where `marker` closes: after a non-space, and (for `_`) not inside a word.
fn closing(characters: &[char], from: usize, marker: &[char]) -> Option<usize> {
    let mut at = from + 1;
    while at + marker.len() <= characters.len() {
        if characters[at..].starts_with(marker) && !characters[at - 1].is_whitespace() {
            let after = characters.get(at + marker.len());
            let word_after = marker[0] == '_' && after.is_some_and(|after| after.is_alphanumeric());
            // `**` must not close a single `*`.
            let longer = marker.len() == 1 && after == Some(&marker[0]);
            if !word_after && !longer {
                return Some(at);
            }
        }
        if characters[at] == '`' {
            // Skip code spans: their markers are not formatting.
            if let Some(close) = find(characters, at + 1, &['`']) {
                at = close + 1;
                continue;
            }
        }
        at += 1;
    }
    None
}

/// `[label](url)` at `at`, with an http(s) URL: the label, the URL and the index after it.
fn link(characters: &[char], at: usize) -> Option<(String, String, usize)> {
    let label_end = find(characters, at + 1, &[']'])?;
    if characters.get(label_end + 1) != Some(&'(') {
        return None;
    }
    let url_end = find(characters, label_end + 2, &[')'])?;
    let url: String = characters[label_end + 2..url_end].iter().collect();
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains(char::is_whitespace) {
        return None;
    }
    let label: String = characters[at + 1..label_end].iter().collect();
    (!label.is_empty()).then_some((label, url, url_end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MESSAGE_LIMIT;
    use crate::entities::parse_html;

    fn one(markdown: &str) -> String {
        let messages = render(markdown, MESSAGE_LIMIT);
        assert_eq!(messages.len(), 1, "{messages:?}");
        messages[0].clone()
    }

    #[test]
    fn markdown_becomes_telegram_html() {
        assert_eq!(
            one("**Hi** *there* `a<b` & [docs](https://example.com/?a=1&b=2)"),
            "<b>Hi</b> <i>there</i> <code>a&lt;b</code> &amp; <a href=\"https://example.com/?a=1&amp;b=2\">docs</a>"
        );
        assert_eq!(one("# Title\n- one\n- two"), "<b>Title</b>\n• one\n• two");
        assert_eq!(one("```rust\nfn main() {}\n```"), "<pre><code class=\"language-rust\">fn main() {}</code></pre>");
        assert_eq!(one("snake_case_name and 2 * 3 * 4"), "snake_case_name and 2 * 3 * 4");
    }

    #[test]
    fn unfinished_markers_stay_text_so_a_stream_always_parses() {
        let answer = "Here is **bold** and `code` and a [link](https://example.com) and ```py\nprint(1)\n```";
        for end in 1..=answer.len() {
            let Some(prefix) = answer.get(..end) else { continue };
            for message in render(prefix, MESSAGE_LIMIT) {
                assert!(parse_html(&message).is_ok(), "{prefix:?} rendered {message:?}");
            }
        }
        assert_eq!(one("**bol"), "**bol");
    }

    #[test]
    fn long_answers_split_into_messages_that_fit_and_parse() {
        let mut markdown = String::new();
        for index in 0..400 {
            markdown.push_str(&format!("Line {index} with **bold** & <angles> 😀\n"));
        }
        markdown.push_str("```\n");
        markdown.push_str(&"x".repeat(9000));
        markdown.push_str("\n```\n");
        markdown.push_str(&"word ".repeat(2000));
        let messages = render(&markdown, MESSAGE_LIMIT);
        assert!(messages.len() > 4, "{}", messages.len());
        let mut visible = String::new();
        for message in &messages {
            let parsed = parse_html(message).unwrap_or_else(|error| panic!("{error}: {message}"));
            assert!(parsed.utf16_len() <= MESSAGE_LIMIT, "{}", parsed.utf16_len());
            visible.push_str(&parsed.text);
        }
        assert_eq!(visible.matches("😀").count(), 400, "nothing is lost");
        assert_eq!(visible.matches('x').count(), 9000, "the code block is whole across messages");
    }
}
