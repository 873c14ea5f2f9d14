//! A reply that repeats itself: a small model decoding greedily writes the same call or
//! sentence until its output limit (2,048 tokens, 80 s of a local server's time, for nothing).
//! The driver watches the stream with [`repeating_tail`] and stops the request; the reply is
//! kept up to one copy ([`without_repeats`]), and the turn is asked again at a higher
//! temperature ([`AskAgainAfterLoop`]): at temperature 0 the same request loops the same way,
//! and what was kept is a fragment (the real 1.5B's `render_blocks` call written as text,
//! repeating one image block until it was stopped).

use std::collections::BTreeSet;

use super::{Counter, NextRequest, ReplyDecision, ReplyRule, ReplyView};
use crate::config::RESAMPLE_TEMPERATURE;

/// Most characters of the looping reply quoted back to the model.
const QUOTED_CHARS: usize = 200;

/// A reply stopped for repeating itself is dropped and asked again, hotter, with a note,
/// within the run's resamples ([`LoopConfig::resample_failed_repeats`](crate::LoopConfig)).
pub(crate) struct AskAgainAfterLoop;

impl ReplyRule for AskAgainAfterLoop {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let config = view.run.config;
        if !view.reply.stopped_repeating || view.run.facts.count(Counter::Resamples) >= config.resample_failed_repeats {
            return ReplyDecision::Pass;
        }
        let quoted: String = view.reply.text.chars().take(QUOTED_CHARS).collect();
        let note = format!(
            "## Your last reply\nYour last reply repeated the same part over and over until it was stopped; it \
             began: \"{}\". Write it again, saying each thing once: if you meant to call a tool, call it with \
             its arguments (one of each, not a list of copies); otherwise answer the person briefly.",
            quoted.trim()
        );
        let next = NextRequest { note: Some(note), temperature: Some(RESAMPLE_TEMPERATURE), ..NextRequest::default() };
        ReplyDecision::AskAgain { counter: Counter::Resamples, next }
    }
}

/// Shortest and longest run of text that counts as a repeated unit, in bytes.
const REPEAT_UNIT: std::ops::RangeInclusive<usize> = 16..=400;
/// How many times in a row a unit must appear at the end of a reply to stop it.
const REPEATS_TO_STOP: usize = 4;

/// The length of the unit `text` ends with [`REPEATS_TO_STOP`] copies of, if it does.
pub(crate) fn repeating_tail(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    REPEAT_UNIT.take_while(|unit| unit * REPEATS_TO_STOP <= bytes.len()).find(|&unit| {
        let end = bytes.len();
        let last = &bytes[end - unit..];
        // A rule of `=` or a row of dashes is layout, not a model stuck in a loop.
        let distinct = last.iter().collect::<BTreeSet<_>>().len();
        distinct >= 6 && (2..=REPEATS_TO_STOP).all(|copy| &bytes[end - copy * unit..end - (copy - 1) * unit] == last)
    })
}

/// `text` with the repeats at its end cut down to one copy.
pub(crate) fn without_repeats(text: &str) -> String {
    let Some(unit) = repeating_tail(text) else { return text.to_owned() };
    let bytes = text.as_bytes();
    let last = &bytes[bytes.len() - unit..];
    // Back over every copy, then keep one.
    let mut start = bytes.len() - unit;
    while start >= unit && &bytes[start - unit..start] == last {
        start -= unit;
    }
    let mut end = start + unit;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    text[..end].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_stopped_for_looping_is_asked_again_hotter_within_the_resamples() {
        use crate::policy::testing::Scene;
        use crate::policy::{Counter, Reply, ReplyDecision, ReplyRule};
        let mut scene = Scene::new(&["Show me a form with render_blocks that asks for my name."]);
        let fragment = "```json\n{\"name\": \"render_blocks\", \"arguments\": {\"blocks\": [{\"type\": \"image\"}";
        let looped = Reply { text: fragment.into(), stopped_repeating: true, ..Reply::default() };
        let ReplyDecision::AskAgain { counter: Counter::Resamples, next } =
            AskAgainAfterLoop.decide(&scene.reply_view(&looped, &[]))
        else {
            panic!("not asked again")
        };
        assert_eq!(next.temperature, Some(crate::config::RESAMPLE_TEMPERATURE));
        let note = next.note.unwrap();
        assert!(note.contains("repeated the same part") && note.contains("\"type\": \"image\""), "{note}");
        let plain = Reply { text: fragment.into(), ..Reply::default() };
        assert_eq!(AskAgainAfterLoop.decide(&scene.reply_view(&plain, &[])), ReplyDecision::Pass);
        scene.facts.counts.insert(Counter::Resamples, scene.config.resample_failed_repeats);
        assert_eq!(AskAgainAfterLoop.decide(&scene.reply_view(&looped, &[])), ReplyDecision::Pass, "spent");
    }

    #[test]
    fn a_reply_that_repeats_itself_is_cut_to_one_copy() {
        let call = "{\"name\": \"set_state\", \"arguments\": {\"key\": \"k\"}} ";
        let looping = format!("Saving it. {}", call.repeat(4));
        assert_eq!(repeating_tail(&looping), Some(call.len()));
        assert_eq!(without_repeats(&looping), format!("Saving it. {}", call.trim_end()));
        assert_eq!(repeating_tail(&format!("Saving it. {}", call.repeat(3))), None, "three copies may be a list");
        let rule = "=".repeat(200);
        assert_eq!(repeating_tail(&rule), None, "layout is not a loop");
        assert_eq!(without_repeats("A plain answer."), "A plain answer.");
    }
}
