//! Splits a streamed JSON array (`[{…},\n{…}]`) into its elements as their bytes arrive.
//!
//! Gemini's `streamGenerateContent` without `alt=sse` sends one pretty-printed array and
//! delivers it element by element; waiting for the closing `]` would lose streaming. The
//! splitter tracks only depth, strings and escapes: it does not validate — each element is
//! parsed by serde afterwards.

#[derive(Debug, Default)]
pub(crate) struct JsonArraySplitter {
    /// Nesting depth counting the outer array as 1.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Bytes of the element being read (depth ≥ 2).
    element: Vec<u8>,
}

impl JsonArraySplitter {
    /// Feeds bytes; every element they complete is pushed onto `out` as its JSON text.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<String>) {
        for &byte in chunk {
            if self.depth >= 2 {
                self.element.push(byte);
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth == 2 {
                        self.element.push(byte);
                    }
                }
                b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 1 {
                        let element = std::mem::take(&mut self.element);
                        out.push(String::from_utf8_lossy(&element).into_owned());
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether the input ended inside an element (the array was cut short).
    pub(crate) fn inside_element(&self) -> bool {
        self.depth >= 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_come_out_whole_in_any_split() {
        let input = "[{\n \"a\": \"x]}\\\"\"},\r\n{\"b\": [1, {\"c\": 2}]}\n]";
        for piece in 1..input.len() {
            let mut splitter = JsonArraySplitter::default();
            let mut out = Vec::new();
            for chunk in input.as_bytes().chunks(piece) {
                splitter.feed(chunk, &mut out);
            }
            let values: Vec<serde_json::Value> = out.iter().map(|text| serde_json::from_str(text).unwrap()).collect();
            assert_eq!(values, vec![serde_json::json!({"a": "x]}\""}), serde_json::json!({"b": [1, {"c": 2}]})]);
            assert!(!splitter.inside_element());
        }
    }
}
