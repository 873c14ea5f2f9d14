//! Arguments that are not what the person asked for. A small model fills a field with the
//! schema's own text (`reason: "Why, in a sentence: shown in the history."`) and reaches for
//! a whole-document `replace` that writes one sentence over the person's notes. Both are
//! refused before they run, with a note saying what the field is for or which operation to
//! use; the model reads it on its next turn.

use serde_json::{Map, Value};
use wright_core::{ErrorCategory, ToolFailure, ToolOutcome};

use super::{CallDecision, CallRule, CallView};

/// Shortest argument compared with the schema's descriptions: shorter strings (`"append"`,
/// a key) match a description's words by chance.
const MIN_COPIED_CHARS: usize = 16;

/// Shortest description whose whole text inside a longer argument counts as copied (the 0.5B
/// appended `content`'s description to the person's sentence); shorter ones ("The table's
/// name.") may be said in a real value.
const MIN_CARRIED_CHARS: usize = 40;

/// A call whose string argument repeats a description from the tool's schema (of that field
/// or another, or of a variant), or a note Wright itself wrote to the model, is refused as
/// invalid arguments.
pub(crate) struct RefuseSchemaText;

/// Sentences of the notes the loop writes to the model (its own words, so known here): an
/// argument that carries one was copied from the request, not given by the person.
pub(crate) const HOST_NOTE_MARKS: [&str; 7] = [
    "the person's request is done",
    "not done yet from the person's request",
    "you already called `",
    "is not offered in this turn",
    "answer the person now",
    "do not repeat a call that already worked",
    "if a step of that is still to do",
];

impl CallRule for RefuseSchemaText {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        let (Some(spec), Ok(Value::Object(arguments))) = (view.spec, &view.call.arguments) else {
            return CallDecision::Run;
        };
        let mut descriptions = Vec::new();
        collect_descriptions(&spec.parameters, None, &mut descriptions);
        // The tool's own description, sentence by sentence (a small model copies those too).
        descriptions.extend(spec.description.split(". ").map(|sentence| (None, sentence.to_owned())));
        for (field, value) in arguments {
            let Value::String(text) = value else { continue };
            let said = normalized(text);
            if said.chars().count() < MIN_COPIED_CHARS {
                continue;
            }
            let asked_for_it = view.run.last_request().is_some_and(|request| normalized(request).contains(&said));
            // What the person's request says is theirs, whatever a description holds.
            let copied = HOST_NOTE_MARKS.iter().any(|mark| said.contains(mark))
                || (!asked_for_it
                    && descriptions.iter().any(|(_, description)| {
                        let whole = normalized(description);
                        whole == said
                            || (whole.contains(&said) && said.chars().count() * 2 >= whole.len())
                            || (whole.chars().count() >= MIN_CARRIED_CHARS && said.contains(&whole))
                            || quoted_examples(description).any(|example| normalized(example) == said)
                    }));
            if copied {
                let purpose = descriptions
                    .iter()
                    .find(|(name, _)| name.as_deref() == Some(field.as_str()))
                    .map(|(_, description)| format!(" `{field}` is for: {description}"))
                    .unwrap_or_default();
                // The request is where the value comes from: quoting it gives a small model
                // something better to copy than the schema.
                let asked = view
                    .run
                    .last_request()
                    .map(|request| format!(" The person asked: \"{}\".", request.trim()))
                    .unwrap_or_default();
                return CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
                    ErrorCategory::InvalidArguments,
                    format!(
                        "`{field}` repeats the text of the tool's description instead of giving a value; nothing \
                         was done.{purpose} Write the value from the person's request.{asked}",
                    ),
                )));
            }
        }
        CallDecision::Run
    }
}

/// Every `description` in a schema, with the property it describes (`None` for the schema's
/// own or a variant's), through `properties`, `items` and `oneOf`/`anyOf`/`allOf`.
fn collect_descriptions(schema: &Value, name: Option<&str>, out: &mut Vec<(Option<String>, String)>) {
    let Value::Object(schema) = schema else { return };
    if let Some(Value::String(description)) = schema.get("description") {
        out.push((name.map(str::to_owned), description.clone()));
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (property, inner) in properties {
            collect_descriptions(inner, Some(property), out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_descriptions(items, name, out);
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for variant in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            collect_descriptions(variant, None, out);
        }
    }
}

/// The examples a description quotes (`(e.g. "one row per expense …")`): a small model copies
/// one as the value.
fn quoted_examples(description: &str) -> impl Iterator<Item = &str> {
    description.split('"').skip(1).step_by(2)
}

/// Lowercase words, single spaces, no trailing punctuation: copies differ in little else.
fn normalized(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.join(" ").trim_end_matches(['.', ':', ';', ',']).to_lowercase()
}

/// [`LoopConfig::guard_document_replace`](crate::LoopConfig::guard_document_replace): a
/// `replace` of the learned notes or the system prompt that keeps almost nothing of the current
/// text is refused unless the person's message asked to replace, rewrite or clear it.
pub(crate) struct GuardDocumentReplace;

/// The tools whose `replace` writes a whole document (wright-tools' self-modification).
const DOCUMENT_TOOLS: [(&str, &str); 2] =
    [("edit_learned_notes", "read_learned_notes"), ("edit_system_prompt", "read_system_prompt")];

/// A replace keeps "almost nothing" when fewer than this share of the current text's words
/// are in the new text.
const KEPT_AT_LEAST: f64 = 0.5;

/// Words of a request that asks for the whole document to go.
const ASKED_TO_REPLACE: [&str; 9] =
    ["replace", "rewrite", "overwrite", "clear", "erase", "wipe", "empty", "start over", "from scratch"];

impl CallRule for GuardDocumentReplace {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        if !view.run.config.guard_document_replace {
            return CallDecision::Run;
        }
        let Some((tool, reader)) = DOCUMENT_TOOLS.iter().find(|(tool, _)| *tool == view.call.name) else {
            return CallDecision::Run;
        };
        let Ok(Value::Object(arguments)) = &view.call.arguments else { return CallDecision::Run };
        if !is_replace(arguments) {
            return CallDecision::Run;
        }
        let documents = &view.run.facts.documents;
        let current = if *tool == "edit_learned_notes" { &documents.notes } else { &documents.prompt };
        let new_text = arguments.get("content").and_then(Value::as_str).unwrap_or_default();
        if kept_share(current, new_text) >= KEPT_AT_LEAST {
            return CallDecision::Run;
        }
        let asked = view.run.last_request().is_some_and(|request| {
            let request = request.to_lowercase();
            ASKED_TO_REPLACE.iter().any(|word| request.contains(word))
        });
        if asked {
            return CallDecision::Run;
        }
        CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
            ErrorCategory::InvalidArguments,
            format!(
                "`replace` would write over the whole document, and the person did not ask for that; nothing was \
                 changed. To add something, call `{tool}` with operation `append` and only the new text; to change \
                 a part, use `find_replace` (`{reader}` shows the current text)."
            ),
        )))
    }
}

/// The share of `current`'s distinct words that `new_text` still has (1 when there were none).
fn kept_share(current: &str, new_text: &str) -> f64 {
    let words = |text: &str| -> std::collections::BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric()).filter(|word| word.len() > 2).map(str::to_lowercase).collect()
    };
    let (before, after) = (words(current), words(new_text));
    if before.is_empty() {
        return 1.0;
    }
    // Word counts are far below 2^52: exact as floats.
    #[allow(clippy::cast_precision_loss)]
    let share = before.intersection(&after).count() as f64 / before.len() as f64;
    share
}

/// Whether the arguments ask for the whole document to be replaced (`operation: "replace"`,
/// or an `edit` object tagged so).
fn is_replace(arguments: &Map<String, Value>) -> bool {
    let says_replace = |object: &Map<String, Value>| {
        ["operation", "op", "mode", "action"]
            .iter()
            .any(|key| object.get(*key).and_then(Value::as_str) == Some("replace"))
    };
    says_replace(arguments) || arguments.values().any(|value| value.as_object().is_some_and(says_replace))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, call, spec_with};

    fn notes_spec() -> wright_core::ToolSpec {
        spec_with(
            "edit_learned_notes",
            "Edit your learned notes.",
            json!({"type": "object", "properties": {
                "operation": {"type": "string", "enum": ["append", "replace", "find_replace"]},
                "content": {"type": "string", "description": "append: the text to add at the end, on a line of its own."},
                "reason": {"type": "string", "description": "Why, in a sentence: shown in the history."},
            }}),
        )
    }

    #[test]
    fn an_argument_that_copies_the_schemas_description_is_refused_with_what_the_field_is_for() {
        let scene = Scene::new(&["Remember that I prefer tea over coffee."]);
        let spec = notes_spec();
        let copied = call(
            "c",
            "edit_learned_notes",
            json!({"operation": "append", "content": "Prefers tea.", "reason": "why, in a sentence: shown in the history"}),
        );
        match RefuseSchemaText.decide(&scene.call_view(&copied, Some(&spec))) {
            CallDecision::Answered(outcome) => {
                let error = outcome.output["error"].as_str().unwrap().to_owned();
                assert!(error.contains("`reason` repeats") && error.contains("`reason` is for: Why"), "{error}");
                assert!(error.ends_with("The person asked: \"Remember that I prefer tea over coffee.\"."), "{error}");
            }
            other => panic!("{other:?}"),
        }
        // A note of the loop's own, copied into the person's document, is refused too.
        let note = call(
            "c",
            "edit_learned_notes",
            json!({"operation": "append", "content": "The request is done. Every part of the person's request is done: answer the person now."}),
        );
        assert!(matches!(RefuseSchemaText.decide(&scene.call_view(&note, Some(&spec))), CallDecision::Answered(_)));
        // Another field's description, copied in part, is refused as well.
        let other_field =
            call("c", "edit_learned_notes", json!({"content": "The text to add at the end, on a line of its own"}));
        assert!(matches!(
            RefuseSchemaText.decide(&scene.call_view(&other_field, Some(&spec))),
            CallDecision::Answered(_)
        ));
        // A description carried whole inside the value, after the person's words (the 0.5B).
        let carried = call(
            "c",
            "edit_learned_notes",
            json!({"operation": "append", "content": "I prefer tea. Append: the text to add at the end, on a line of its own."}),
        );
        assert!(matches!(RefuseSchemaText.decide(&scene.call_view(&carried, Some(&spec))), CallDecision::Answered(_)));
        let mut described = notes_spec();
        described.description =
            "Edit your learned notes. This is a durable fact and preferences about the user. Returns the new version."
                .into();
        let from_the_tool = call(
            "c",
            "edit_learned_notes",
            json!({"operation": "append", "content": "I prefer tea over coffee. This is a durable fact and preferences about the user."}),
        );
        assert!(matches!(
            RefuseSchemaText.decide(&scene.call_view(&from_the_tool, Some(&described))),
            CallDecision::Answered(_)
        ));
        // The example a description quotes, copied as the value (what a real 1.5B did with
        // describe_db_table), is refused — unless the person's request says it.
        let table_spec = spec_with(
            "describe_db_table",
            "Note what a table is for.",
            json!({"type": "object", "properties": {"purpose": {"type": "string", "description":
                "What the table is for, in one line (e.g. \"one row per expense the person reports; amount in euros\")."}}}),
        );
        let example = call(
            "c",
            "describe_db_table",
            json!({"purpose": "one row per expense the person reports; amount in euros"}),
        );
        assert!(matches!(
            RefuseSchemaText.decide(&scene.call_view(&example, Some(&table_spec))),
            CallDecision::Answered(_)
        ));
        let said = Scene::new(&["Note that expenses is one row per expense the person reports; amount in euros."]);
        assert_eq!(RefuseSchemaText.decide(&said.call_view(&example, Some(&table_spec))), CallDecision::Run);
        // A real value runs, short values are never compared, and so does a value that only
        // shares a few words with a description.
        for arguments in [
            json!({"operation": "append", "content": "Prefers tea over coffee.", "reason": "The person said so."}),
            json!({"operation": "append", "content": "history"}),
            json!({"content": "Shown in the history of the person's tea preferences, since 2020."}),
        ] {
            let ok = call("c", "edit_learned_notes", arguments);
            assert_eq!(RefuseSchemaText.decide(&scene.call_view(&ok, Some(&spec))), CallDecision::Run);
        }
    }

    #[test]
    fn a_whole_document_replace_is_refused_for_small_models_unless_the_person_asked() {
        let mut scene = Scene::new(&["Remember in your learned notes that I prefer tea over coffee."]);
        scene.facts.documents.notes = "The person lives in Bergen and works as a nurse.".into();
        let spec = notes_spec();
        let replace = call("c", "edit_learned_notes", json!({"operation": "replace", "content": "Prefers tea."}));
        assert_eq!(GuardDocumentReplace.decide(&scene.call_view(&replace, Some(&spec))), CallDecision::Run, "off");
        scene.config.guard_document_replace = true;
        match GuardDocumentReplace.decide(&scene.call_view(&replace, Some(&spec))) {
            CallDecision::Answered(outcome) => {
                assert!(outcome.output["error"].as_str().unwrap().contains("operation `append`"));
            }
            other => panic!("{other:?}"),
        }
        let tagged = call("c", "edit_learned_notes", json!({"edit": {"op": "replace", "content": "x"}}));
        assert!(matches!(
            GuardDocumentReplace.decide(&scene.call_view(&tagged, Some(&spec))),
            CallDecision::Answered(_)
        ));
        // A replace that keeps the notes and adds to them is an edit, not a loss.
        let kept = call(
            "c",
            "edit_learned_notes",
            json!({"operation": "replace", "content": "The person lives in Bergen and works as a nurse. Prefers tea."}),
        );
        assert_eq!(GuardDocumentReplace.decide(&scene.call_view(&kept, Some(&spec))), CallDecision::Run);
        let append = call("c", "edit_learned_notes", json!({"operation": "append", "content": "Prefers tea."}));
        assert_eq!(GuardDocumentReplace.decide(&scene.call_view(&append, Some(&spec))), CallDecision::Run);
        let mut asked = Scene::new(&["Clear your notes and write only: prefers tea."]);
        asked.config.guard_document_replace = true;
        asked.facts.documents.notes = scene.facts.documents.notes.clone();
        assert_eq!(GuardDocumentReplace.decide(&asked.call_view(&replace, Some(&spec))), CallDecision::Run);
        // Empty notes lose nothing.
        let mut empty = Scene::new(&["Remember that I prefer tea."]);
        empty.config.guard_document_replace = true;
        assert_eq!(GuardDocumentReplace.decide(&empty.call_view(&replace, Some(&spec))), CallDecision::Run);
    }
}
