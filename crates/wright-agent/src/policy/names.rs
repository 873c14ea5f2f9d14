//! Tool names the model got wrong: an invented name whose meaning is unambiguous is called by
//! its real name (and the result says so); a call of a tool from the catalogue that failed
//! its schema gets the schema; an unknown name gets the tools that fit the person's request.

use serde_json::json;
use wright_core::{CLOSEST_NAMES, ErrorCategory, Hint, ToolFailure, ToolOutcome, closest_names};

use super::{CallDecision, CallRule, CallView, Reply, ReplyDecision, ReplyRule, ReplyView, ResultRule, ResultView};
use crate::surface::{fitting, fitting_tools, meant_tool};

/// A call of a tool the agent does not have is answered here, not by the tools port: the
/// names suggested instead are only the agent's own (its enabled toolsets and tools), those
/// that fit the person's request first, then those named most alike. The port would suggest
/// from every tool Wright has (`browser_type` to an agent without a browser).
pub(crate) struct AnswerUnknownTool;

impl CallRule for AnswerUnknownTool {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        if view.spec.is_some() {
            return CallDecision::Run;
        }
        let run = &view.run;
        let enabled = || run.all_tools.iter().filter(|spec| run.settings.enables(spec.toolset));
        let mut closest: Vec<String> = run
            .last_request()
            .map(|request| fitting(run.all_tools, run.settings, request, CLOSEST_NAMES, |_| true))
            .unwrap_or_default()
            .into_iter()
            .map(|spec| spec.name.clone())
            .collect();
        for name in closest_names(&view.call.name, enabled().map(|spec| spec.name.as_str())) {
            if closest.len() < CLOSEST_NAMES && !closest.contains(&name) {
                closest.push(name);
            }
        }
        let message = format!("unknown tool `{}`; the closest real tools are: {}", view.call.name, closest.join(", "));
        let mut outcome = ToolOutcome::failure(&ToolFailure::new(ErrorCategory::UnknownTool, message));
        outcome.output["closest"] = json!(closest);
        outcome.hints = ToolsForUnknownName.hints(&ResultView {
            run: *run,
            tool: &view.call.name,
            outcome: &outcome,
            unloaded: None,
        });
        CallDecision::Answered(outcome)
    }
}

/// Calls of invented names are renamed to the one tool they meant, when only one fits
/// (`surface::meant_tool`); the stored call carries the real name.
pub(crate) struct ResolveInventedNames;

impl ReplyRule for ResolveInventedNames {
    fn decide(&self, view: &ReplyView<'_>) -> ReplyDecision {
        let mut reply = view.reply.clone();
        let mut renamed_any = false;
        for call in &mut reply.calls {
            if let Ok(arguments) = &call.arguments
                && let Some(meant) = meant_tool(&call.name, arguments, view.run.all_tools, view.run.settings)
            {
                reply.renamed.push((call.id.clone(), std::mem::replace(&mut call.name, meant)));
                renamed_any = true;
            }
        }
        if renamed_any { ReplyDecision::Amend(reply) } else { ReplyDecision::Pass }
    }
}

/// The hint on the result of a call renamed by [`ResolveInventedNames`].
pub(crate) fn name_note(reply: &Reply, call_id: &str, ran: &str) -> Option<Hint> {
    let (_, called) = reply.renamed.iter().find(|(id, _)| id == call_id)?;
    Some(Hint::NameNote(format!(
        "There is no tool `{called}`; `{ran}` ran instead, the one tool named like it that takes these \
         arguments. Call tools by their exact names."
    )))
}

/// A tool called before it was loaded whose arguments failed its schema: the result carries
/// the schema, so the next try can match it.
pub(crate) struct SchemaOfUnloadedTool;

impl ResultRule for SchemaOfUnloadedTool {
    fn hints(&self, view: &ResultView<'_>) -> Vec<Hint> {
        let Some(spec) = view.unloaded else { return Vec::new() };
        if view.outcome.success || view.outcome.category != Some(ErrorCategory::InvalidArguments) {
            return Vec::new();
        }
        vec![
            Hint::Parameters(spec.parameters.clone()),
            Hint::Note(format!(
                "`{}` was not loaded; its full description is loaded now and its parameters are above. \
                 Call it again with arguments that match them.",
                spec.name
            )),
        ]
    }
}

/// A name the model made up: the closest names may all be wrong (a small model's
/// `save_favourite_colour` is `set_state`), so it also gets every tool it has — names only, a
/// few tokens each — and the ones that fit the person's request.
pub(crate) struct ToolsForUnknownName;

impl ResultRule for ToolsForUnknownName {
    fn hints(&self, view: &ResultView<'_>) -> Vec<Hint> {
        if view.outcome.success || view.outcome.category != Some(ErrorCategory::UnknownTool) {
            return Vec::new();
        }
        let run = &view.run;
        let names = run
            .all_tools
            .iter()
            .filter(|spec| run.settings.enables(spec.toolset))
            .map(|spec| spec.name.clone())
            .collect();
        let mut hints = vec![Hint::Available(names)];
        if let Some(request) = run.last_request() {
            let fitting = fitting_tools(run.all_tools, run.settings, request, 3);
            if fitting.as_array().is_some_and(|fitting| !fitting.is_empty()) {
                hints.push(Hint::ForTheRequest(fitting));
                hints.push(Hint::Note(
                    "Tools that fit the person's request are in `for_the_request`; call one of them \
                     (or another tool of `available`) by its exact name."
                        .to_owned(),
                ));
            }
        }
        hints
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wright_core::{ToolFailure, ToolOutcome};

    use super::*;
    use crate::policy::testing::{Scene, call, spec_with};

    fn state_tools() -> Vec<wright_core::ToolSpec> {
        let key = json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]});
        let key_value = json!({"type": "object", "properties": {"key": {"type": "string"}, "value": {}}, "required": ["key", "value"]});
        vec![
            spec_with("get_state", "Read a value of the agent's state.", key.clone()),
            spec_with("delete_state", "Delete a value of the agent's state.", key),
            spec_with("set_state", "Store a value in the agent's state.", key_value),
        ]
    }

    #[test]
    fn an_invented_name_that_only_one_close_tool_takes_is_renamed() {
        let mut scene = Scene::new(&["save k"]);
        scene.all_tools = state_tools();
        let reply =
            Reply { calls: vec![call("c1", "save_state", json!({"key": "k", "value": 1}))], ..Reply::default() };
        let ReplyDecision::Amend(amended) = ResolveInventedNames.decide(&scene.reply_view(&reply, &[])) else {
            panic!("not renamed")
        };
        assert_eq!(amended.calls[0].name, "set_state");
        assert_eq!(amended.renamed, vec![("c1".to_owned(), "save_state".to_owned())]);
        assert!(
            matches!(name_note(&amended, "c1", "set_state"), Some(Hint::NameNote(note)) if note.contains("save_state"))
        );
    }

    #[test]
    fn an_invented_name_two_tools_would_take_is_left_alone() {
        let mut scene = Scene::new(&["remove k"]);
        scene.all_tools = state_tools();
        let reply = Reply { calls: vec![call("c1", "remove_state", json!({"key": "k"}))], ..Reply::default() };
        assert_eq!(ResolveInventedNames.decide(&scene.reply_view(&reply, &[])), ReplyDecision::Pass);
    }

    #[test]
    fn an_unknown_tool_gets_every_name_and_those_that_fit_the_request() {
        let mut scene = Scene::new(&["store my favourite colour in the state"]);
        scene.all_tools = state_tools();
        let outcome = ToolOutcome::failure(&ToolFailure::new(ErrorCategory::UnknownTool, "unknown tool"));
        let hints = ToolsForUnknownName.hints(&scene.result_view("save_colour", &outcome, None));
        assert!(matches!(&hints[0], Hint::Available(names) if names.len() == 3));
        assert!(matches!(&hints[1], Hint::ForTheRequest(tools) if tools.to_string().contains("set_state")));
        let success = ToolOutcome::success(json!(1));
        assert!(ToolsForUnknownName.hints(&scene.result_view("set_state", &success, None)).is_empty());
    }

    #[test]
    fn an_unknown_tool_is_told_only_the_agents_tools_those_for_the_request_first() {
        let mut scene = Scene::new(&["Save my favourite colour, green, in your state."]);
        scene.all_tools = state_tools();
        let mut browser = spec_with("browser_type", "Type into a page.", json!({"type": "object"}));
        browser.toolset = Some(wright_core::Toolset::Browser);
        scene.all_tools.push(browser);
        scene.settings.toolsets.retain(|toolset| *toolset != wright_core::Toolset::Browser);
        let invented = call("c", "browser_typer", json!({"text": "green"}));
        let CallDecision::Answered(outcome) = AnswerUnknownTool.decide(&scene.call_view(&invented, None)) else {
            panic!("an unknown tool is answered");
        };
        let closest: Vec<String> = serde_json::from_value(outcome.output["closest"].clone()).unwrap();
        assert!(closest.contains(&"set_state".to_owned()), "{closest:?}");
        assert!(!closest.contains(&"browser_type".to_owned()), "{closest:?}");
        assert!(outcome.hints.iter().any(|hint| matches!(hint, Hint::ForTheRequest(_))));
        let known = call("c", "set_state", json!({}));
        assert_eq!(AnswerUnknownTool.decide(&scene.call_view(&known, Some(&scene.all_tools[2]))), CallDecision::Run);
    }

    #[test]
    fn an_unloaded_tool_called_with_bad_arguments_gets_its_schema() {
        let scene = Scene::new(&["hello"]);
        let tools = state_tools();
        let outcome = ToolOutcome::failure(&ToolFailure::new(ErrorCategory::InvalidArguments, "missing key"));
        let hints = SchemaOfUnloadedTool.hints(&scene.result_view(&tools[0].name, &outcome, Some(&tools[0])));
        assert!(matches!(&hints[0], Hint::Parameters(parameters) if *parameters == tools[0].parameters));
        assert!(SchemaOfUnloadedTool.hints(&scene.result_view(&tools[0].name, &outcome, None)).is_empty());
    }
}
