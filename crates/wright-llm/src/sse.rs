//! An incremental Server-Sent Events parser (the WHATWG event-stream grammar), fed whatever
//! byte chunks the network delivers.
//!
//! Guarantees, each one a quirk seen in the wire fixtures:
//! - a chunk may end anywhere: inside `\r\n`, inside a field name, inside a multi-byte UTF-8
//!   sequence — bytes are kept until their line is whole, and lines are split on bytes
//!   (`\r` and `\n` never occur inside a UTF-8 sequence), so text is decoded only once whole;
//! - lines end in `\n`, `\r\n` or `\r` (Gemini uses `\r\n\r\n`);
//! - comment lines (`: OPENROUTER PROCESSING`) are counted and skipped;
//! - several `data:` lines join with `\n`; exactly one space after the colon is stripped;
//! - an event still open at end of input is delivered, since some servers close the body
//!   without the final blank line.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if the server sent one.
    pub event: Option<String>,
    pub data: String,
    pub id: Option<String>,
}

/// The parser state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet terminated.
    partial: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` first in the next chunk belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    comment_lines: usize,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many comment lines were skipped so far.
    pub fn comment_lines(&self) -> usize {
        self.comment_lines
    }

    /// Parses a chunk, pushing every event it completes onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|&byte| byte == b'\n' || byte == b'\r') {
            let line_bytes = &rest[..end];
            if self.partial.is_empty() {
                self.line(line_bytes, out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line_bytes);
                self.line(&whole, out);
                whole.clear();
                self.partial = whole;
            }
            let mut next = end + 1;
            if rest[end] == b'\r' {
                match rest.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            rest = &rest[next..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the input: a last unterminated line is taken as a line, and an open event is
    /// delivered.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            self.comment_lines += 1;
            return;
        }
        let (field, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                match std::str::from_utf8(value) {
                    Ok(text) => self.data.push_str(text),
                    Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
                }
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" => self.id = Some(String::from_utf8_lossy(value).into_owned()),
            // `retry:` and unknown fields are ignored, as the grammar says.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data), id: self.id.take() });
        } else {
            // An event with no data is not dispatched; its name does not carry over.
            self.event = None;
        }
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> (Vec<SseEvent>, usize) {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            parser.feed(chunk, &mut out);
        }
        parser.finish(&mut out);
        (out, parser.comment_lines())
    }

    fn data(events: &[SseEvent]) -> Vec<(Option<&str>, &str)> {
        events.iter().map(|event| (event.event.as_deref(), event.data.as_str())).collect()
    }

    #[test]
    fn line_endings_comments_and_multiline_data_in_every_split() {
        let input = ": keep-alive\r\n\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata:  spaced\n\ndata: x\rdata: y\r\r: c\n\ndata: ä€😀\n\n";
        for piece in 1..input.len() {
            let (events, comments) = parse_in_pieces(input.as_bytes(), piece);
            assert_eq!(
                data(&events),
                vec![(Some("a"), "one\ntwo"), (None, " spaced"), (None, "x\ny"), (None, "ä€😀")],
                "piece size {piece}"
            );
            assert_eq!(comments, 2);
        }
    }

    #[test]
    fn an_open_event_at_eof_is_delivered_and_an_event_without_data_is_not() {
        let (events, _) = parse_in_pieces(b"event: ping\n\ndata: last", 3);
        assert_eq!(data(&events), vec![(None, "last")]);
    }
}
