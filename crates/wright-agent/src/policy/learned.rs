//! Learned items (issue 31) in a run's requests: the live items the host passes in
//! ([`SystemParts::learned`](crate::SystemParts)) that fit the person's request are said after
//! the history in every request of the run, within
//! [`LoopConfig::learned_budget_tokens`](crate::LoopConfig::learned_budget_tokens). After the
//! history, not in the system message: which items fit changes from one message to the next,
//! and the system message must stay the prefix the server has cached.
//!
//! Which items fit is [`choose_learned`], a pure function the server calls too, to count the
//! runs each item was used in.

use std::collections::BTreeSet;

use wright_core::{Hint, LearnedKind};

use super::{ResultRule, ResultView, StartDecision, StartRule, StartView};
use crate::config::CHARS_PER_TOKEN;

/// A live learned item as a run receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedText {
    pub id: i64,
    pub kind: LearnedKind,
    /// The words of the requests it is for.
    pub trigger: String,
    pub text: String,
}

/// The share of the words of an item's trigger or of the request (the shorter) the two must
/// have in common for the item to fit the request.
const MIN_OVERLAP: f64 = 0.34;

/// The fewest words they must have in common (fewer when the trigger has fewer): one shared
/// word ("state") is not a kind of request.
const MIN_SHARED_WORDS: usize = 2;

/// Words that say nothing of what a request is about.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "you", "your", "please", "can", "could", "would", "that", "this", "with", "what", "from",
    "into", "about", "are", "was", "have", "has", "will", "just", "some", "all", "them", "then", "there", "its",
    "it's", "our", "my", "me",
];

/// The content words of a text as a request's words are matched to tools: lowercased, cut
/// to five characters, words for one act as one ("keep", "store" and "save"), a file's name as
/// `file` — so a paraphrase of a request ("Keep in your state that my favourite drink is tea")
/// fits an item learned from another ("Remember my favourite colour … in your state").
pub fn content_words(text: &str) -> BTreeSet<String> {
    crate::surface::keywords(text).into_iter().filter(|word| !STOPWORDS.contains(&word.as_str())).collect()
}

/// The tokens an item adds to a request (the conservative estimate requests are fitted by).
pub fn item_tokens(text: &str) -> usize {
    text.len().div_ceil(CHARS_PER_TOKEN) + 2
}

/// The live items that fit `request`, best first, within `budget_tokens`: notes edits always
/// (they are about the agent, not one kind of request), exemplars and error→fix rules when
/// the request holds enough of their trigger words.
pub fn choose_learned<'a>(items: &'a [LearnedText], request: &str, budget_tokens: usize) -> Vec<&'a LearnedText> {
    let words = content_words(request);
    let mut scored: Vec<(f64, &LearnedText)> = items
        .iter()
        .filter_map(|item| {
            if item.kind == LearnedKind::NotesEdit {
                return Some((2.0, item));
            }
            let trigger = content_words(&item.trigger);
            if trigger.is_empty() {
                return None;
            }
            // Over the shorter of the two: a short request ("remember my favourite drink is
            // tea") fits an item learned from a longer one when most of its words are shared.
            let shared = trigger.intersection(&words).count();
            let score = shared as f64 / trigger.len().min(words.len()).max(1) as f64;
            let enough = shared >= MIN_SHARED_WORDS.min(trigger.len());
            (enough && score >= MIN_OVERLAP).then_some((score, item))
        })
        .collect();
    scored.sort_by(|(left, a), (right, b)| right.total_cmp(left).then(a.id.cmp(&b.id)));
    let mut used = 0;
    let mut chosen = Vec::new();
    for (_, item) in scored {
        let tokens = item_tokens(&item.text);
        if used + tokens <= budget_tokens {
            used += tokens;
            chosen.push(item);
        }
    }
    chosen
}

/// The note the chosen items make. A learned skill is not said here: while live it is one of
/// the agent's skills, listed and loaded like the others (it is chosen all the same, so the
/// runs it fitted count for it).
pub(crate) fn learned_note(chosen: &[&LearnedText]) -> Option<String> {
    let lines: Vec<String> =
        chosen.iter().filter(|item| item.kind != LearnedKind::Skill).map(|item| format!("- {}", item.text)).collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!("## learned\nWhat worked in your earlier runs for requests like this one:\n{}", lines.join("\n")))
}

/// The text of an error→fix item: the call that failed, its error, and the call of the same
/// tool that worked (each call shown as `name {arguments}`). Written here and read by
/// [`SayLearnedFix`], so the shape has one owner.
pub fn error_fix_text(failed_call: &str, error: &str, fixed_call: &str) -> String {
    format!("When {failed_call} failed with {error:?}, what worked was {fixed_call}.")
}

/// The error an error→fix item of the tool `tool` was learned from, as its text says it.
fn learned_error<'a>(item: &'a LearnedText, tool: &str) -> Option<&'a str> {
    if item.kind != LearnedKind::ErrorFix {
        return None;
    }
    let rest = item.text.strip_prefix("When ")?.strip_prefix(tool)?.strip_prefix(' ')?;
    let (_, error) = rest.split_once(" failed with ")?;
    Some(error.split_once(", what worked was ").map_or(error, |(error, _)| error))
}

/// The share of the words of the shorter error that two errors must share to be the same.
const SAME_ERROR_OVERLAP: f64 = 0.6;

/// Says a live error→fix item with a failing result of its tool when the error is the one it
/// was learned from — whatever the request's words: at the start of the run it is one note
/// among many, next to the error it is the fix the model needs. The run's items are those the
/// host passed in (every live item).
pub(crate) struct SayLearnedFix;

impl ResultRule for SayLearnedFix {
    fn hints(&self, view: &ResultView<'_>) -> Vec<Hint> {
        if view.outcome.success {
            return Vec::new();
        }
        let error = view.outcome.output.get("error").and_then(serde_json::Value::as_str).unwrap_or_default();
        let words = content_words(error);
        let fix = view.run.facts.learned.iter().find(|item| {
            learned_error(item, view.tool).is_some_and(|learned| {
                let learned = content_words(learned);
                let shared = learned.intersection(&words).count();
                let shorter = learned.len().min(words.len());
                #[allow(clippy::cast_precision_loss)] // a few dozen words
                let overlap = shared as f64 / shorter.max(1) as f64;
                shorter > 0 && overlap >= SAME_ERROR_OVERLAP
            })
        });
        fix.map(|item| {
            Hint::LearnedFix(format!("This error happened in an earlier run too. {} Do the same now.", item.text))
        })
        .into_iter()
        .collect()
    }
}

/// Says the learned items that fit the person's last message in every request of the run.
pub(crate) struct ApplyLearned;

impl StartRule for ApplyLearned {
    fn decide(&self, view: &StartView<'_>) -> StartDecision {
        let run = &view.run;
        let Some(request) = run.last_request() else { return StartDecision::default() };
        let chosen = choose_learned(&run.facts.learned, request, run.config.learned_budget_tokens);
        StartDecision { standing_note: learned_note(&chosen), ..StartDecision::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: i64, kind: LearnedKind, trigger: &str, text: &str) -> LearnedText {
        LearnedText { id, kind, trigger: trigger.into(), text: text.into() }
    }

    #[test]
    fn items_fit_a_request_by_their_trigger_words_and_stay_within_the_budget() {
        let items = vec![
            item(1, LearnedKind::Exemplar, "remember my favourite colour", "call set_state {key: colour}"),
            item(2, LearnedKind::ErrorFix, "expenses table rows", "db_sql failed: no such table; create it first"),
            item(3, LearnedKind::NotesEdit, "", "Answer in one sentence."),
        ];
        let chosen: Vec<i64> = choose_learned(&items, "Please remember that my favourite colour is green", 500)
            .iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(chosen, vec![3, 1]);
        let chosen: Vec<i64> = choose_learned(&items, "what's the weather", 500).iter().map(|i| i.id).collect();
        assert_eq!(chosen, vec![3], "an unrelated request gets only the notes edit");
        let budget = item_tokens("Answer in one sentence.");
        let chosen: Vec<i64> =
            choose_learned(&items, "remember my favourite colour", budget).iter().map(|i| i.id).collect();
        assert_eq!(chosen, vec![3], "what does not fit the budget is left out");
        assert_eq!(learned_note(&[]), None);
    }

    /// The learning evaluation's families: an item learned from one request of a family fits
    /// its paraphrases, not requests of another family.
    #[test]
    fn a_paraphrase_of_the_request_fits_and_another_kind_of_request_does_not() {
        let trigger = "Remember that my favourite colour is green. Save it in your state under favourite_colour.";
        let items = [item(1, LearnedKind::Exemplar, trigger, "this worked: set_state")];
        let fits = |request: &str| !choose_learned(&items, request, 500).is_empty();
        for paraphrase in [
            "Keep in your state that my favourite drink is tea (key favourite_drink).",
            "Save my home city, Lyon, to your state under the key home_city.",
        ] {
            assert!(fits(paraphrase), "{paraphrase}");
        }
        for other in
            ["Create a table plants (name TEXT) and record a fern.", "Use ask_user to let me pick red or blue."]
        {
            assert!(!fits(other), "{other}");
        }
    }

    /// The 1.5B's table tasks: `CREATE …; INSERT …` in one `db_sql` call, refused.
    #[test]
    fn an_error_fix_is_said_with_the_same_error_of_its_tool_whatever_the_request() {
        use serde_json::json;
        use wright_core::{ErrorCategory, ToolFailure, ToolOutcome};

        use crate::policy::testing::Scene;

        let error = "only one SQL statement per call is allowed, and nothing ran; send each statement in its own \
                     call, in order. Send this one first, alone: CREATE TABLE books (title TEXT)";
        let text = error_fix_text(
            r#"db_sql {"sql":"CREATE TABLE books (title TEXT); INSERT INTO books VALUES ('Dune')"}"#,
            error,
            r#"db_sql {"sql":"CREATE TABLE books (title TEXT)"}"#,
        );
        let mut scene = Scene::new(&["Make a table plants (name TEXT) and record a fern in it."]);
        scene.facts.learned = vec![item(7, LearnedKind::ErrorFix, "books table dune db_sql", &text)];
        let same = "only one SQL statement per call is allowed, and nothing ran; send each statement in its own \
                    call, in order. Send this one first, alone: CREATE TABLE plants (name TEXT)";
        let failed = ToolOutcome::failure(&ToolFailure::new(ErrorCategory::InvalidArguments, same));
        let hints = SayLearnedFix.hints(&scene.result_view("db_sql", &failed, None));
        let [Hint::LearnedFix(said)] = hints.as_slice() else { panic!("{hints:?}") };
        assert!(said.contains("what worked was db_sql {\"sql\":\"CREATE TABLE books (title TEXT)\"}"), "{said}");
        // Another error of the tool, the same error of another tool, or a success: nothing.
        let other = ToolOutcome::failure(&ToolFailure::new(ErrorCategory::InvalidArguments, "no such table: plants"));
        assert!(SayLearnedFix.hints(&scene.result_view("db_sql", &other, None)).is_empty());
        assert!(SayLearnedFix.hints(&scene.result_view("db_query", &failed, None)).is_empty());
        let worked = ToolOutcome::success(json!({"changes": 1}));
        assert!(SayLearnedFix.hints(&scene.result_view("db_sql", &worked, None)).is_empty());
    }

    #[test]
    fn a_learned_skill_fits_by_its_trigger_but_is_not_said_in_the_note() {
        let skill = item(4, LearnedKind::Skill, "create a table and add rows", "---\nname: tables\n---\n\nSteps.");
        let exemplar = item(5, LearnedKind::Exemplar, "create a table and add rows", "this worked: db_sql");
        let items = [skill, exemplar];
        let chosen = choose_learned(&items, "Create a table books and add a row", 500);
        assert_eq!(chosen.iter().map(|item| item.id).collect::<Vec<_>>(), vec![4, 5], "both count as used");
        let note = learned_note(&chosen).unwrap();
        assert!(note.contains("this worked: db_sql") && !note.contains("name: tables"), "{note}");
        assert_eq!(learned_note(&chosen[..1]), None, "a skill alone makes no note");
    }
}
