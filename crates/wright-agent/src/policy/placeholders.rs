//! Arguments that hold a placeholder instead of a value. Asked to "read the key town from your
//! state, then add it to your notes", the real 1.5B wrote `"my home town is <town>"` into the
//! notes before it read the state: the person's notes got a template. A string argument with a
//! placeholder (`<town>`, `<your name>`) that names something of the person's request is refused
//! before it runs, with a note saying to get the value first.

use serde_json::Value;
use wright_core::{ErrorCategory, ToolFailure, ToolOutcome};

use super::steps::steps_of;
use super::{CallDecision, CallRule, CallView};
use crate::surface::{fitting, keywords};

/// Most words a placeholder holds (`<the person's home town>` is still one).
const MAX_PLACEHOLDER_WORDS: usize = 4;

/// Refuses a call whose string arguments hold a placeholder naming what the request is about.
pub(crate) struct RefusePlaceholders;

impl CallRule for RefusePlaceholders {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        let Ok(arguments) = &view.call.arguments else { return CallDecision::Run };
        let Some(request) = view.run.last_request() else { return CallDecision::Run };
        let asked = keywords(request);
        let mut strings = Vec::new();
        strings_of(arguments, None, &mut strings);
        for (field, text) in strings {
            let found = placeholders(text).find(|inner| keywords(inner).iter().any(|word| asked.contains(word)));
            if let Some(inner) = found {
                // Where the value is, when the request says it ("read the key town from your
                // state"): the tool that reads it, not a question to the person.
                // The step of the request that names it says where ("read the key town from
                // your state", not "add it to your learned notes").
                let run = &view.run;
                let named = keywords(inner);
                let steps = steps_of(request, |_| true);
                let step = steps.iter().find(|step| keywords(step).iter().any(|word| named.contains(word)));
                let reader = fitting(run.all_tools, run.settings, step.map_or(request, String::as_str), 1, |spec| {
                    spec.effects.reads_only
                });
                let first = match reader.first() {
                    Some(reader) => format!("read it first with `{}`, as the person's request says", reader.name),
                    None => "get it first (ask the person if nothing you have holds it)".to_owned(),
                };
                return CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
                    ErrorCategory::InvalidArguments,
                    format!(
                        "`{field}` holds the placeholder `<{inner}>` instead of the real value; nothing was done. \
                         The value: {first}; then send this call again with the value itself in place of `<{inner}>`."
                    ),
                )));
            }
        }
        CallDecision::Run
    }
}

/// The string values of `value` with the name of the field that holds them (the nearest).
fn strings_of<'a>(value: &'a Value, field: Option<&'a str>, out: &mut Vec<(&'a str, &'a str)>) {
    match value {
        Value::String(text) => out.push((field.unwrap_or("arguments"), text)),
        Value::Array(items) => items.iter().for_each(|item| strings_of(item, field, out)),
        Value::Object(object) => object.iter().for_each(|(key, inner)| strings_of(inner, Some(key), out)),
        _ => {}
    }
}

/// The text inside each `<…>` of `text` that reads as words standing for a value: letters,
/// spaces, `_`, `'` and `-`, at most [`MAX_PLACEHOLDER_WORDS`] words. A tag is not one: `<b>`
/// closed by `</b>` in the same text is markup, and `<br/>` or `<a href=…>` hold other signs.
fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.split('<').skip(1).filter_map(move |after| {
        let inner = &after[..after.find('>')?];
        let words = inner.split([' ', '_', '-']).filter(|word| !word.is_empty()).count();
        let wordy = inner.chars().all(|c| c.is_alphabetic() || matches!(c, ' ' | '_' | '\'' | '-'));
        let closed = text.contains(&format!("</{inner}>"));
        (wordy && (1..=MAX_PLACEHOLDER_WORDS).contains(&words) && !closed).then_some(inner)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, call, spec_with};

    fn decide(request: &str, arguments: Value) -> CallDecision {
        let scene = Scene::new(&[request]);
        RefusePlaceholders.decide(&scene.call_view(&call("c", "edit_learned_notes", arguments), None))
    }

    /// What the real 1.5B sent before it read the state.
    #[test]
    fn a_placeholder_for_what_the_request_names_is_refused_with_what_to_do() {
        let request = "Read the key town from your state, then add it to your learned notes as my home town.";
        let CallDecision::Answered(outcome) =
            decide(request, json!({"operation": "append", "content": "my home town is <town>"}))
        else {
            panic!("not refused")
        };
        let error = outcome.output["error"].as_str().unwrap();
        assert!(error.starts_with("`content` holds the placeholder `<town>` instead of the real value"), "{error}");
        assert!(error.contains("get it first (ask the person if nothing you have holds it)"), "{error}");
        // With a tool that reads what the request names, that tool is the way to the value.
        let mut scene = Scene::new(&[request]);
        let mut get_state = spec_with("get_state", "Read a value from your key-value state.", json!({}));
        get_state.effects.reads_only = true;
        let mut read_notes = spec_with("read_learned_notes", "Read your learned notes.", json!({}));
        read_notes.effects.reads_only = true;
        scene.all_tools =
            vec![read_notes, get_state, spec_with("set_state", "Save a value in your key-value state.", json!({}))];
        let placeholder = call("c", "edit_learned_notes", json!({"content": "my home town is <town>"}));
        let CallDecision::Answered(outcome) = RefusePlaceholders.decide(&scene.call_view(&placeholder, None)) else {
            panic!("not refused")
        };
        let error = outcome.output["error"].as_str().unwrap();
        assert!(error.contains("read it first with `get_state`, as the person's request says"), "{error}");
        assert!(matches!(
            decide(request, json!({"edit": {"content": "home: <home town>"}})),
            CallDecision::Answered(_)
        ));
    }

    #[test]
    fn markup_values_and_placeholders_of_other_things_run() {
        let request = "Add a bold town heading to the page in notes.html";
        for arguments in [
            json!({"content": "My home town is Tromso."}),
            json!({"content": "<b>town</b> and <town>Tromso</town>"}),
            json!({"content": "<br/> <a href=\"town.html\">town</a>"}),
            json!({"code": "if (a <town && b> c) {}"}),
            json!({"content": "<name> goes here"}),
            json!({"count": 3, "flag": true}),
        ] {
            assert!(matches!(decide(request, arguments.clone()), CallDecision::Run), "{arguments}");
        }
    }
}
