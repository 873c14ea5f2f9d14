//! The tool the person named. Asked to "show me a form with render_blocks", the real 1.5B
//! called `create_ui_component` and spent its time on JSX that did not compile. When the
//! person's message names exactly one of the agent's tools by its exact name (a name with an
//! underscore: nobody writes `render_blocks` in passing), a call of another tool that changes
//! something, made before the named one was called in this run, is refused with a note naming
//! the tool to call. Reads still run: looking before acting is fine.

use wright_core::{ErrorCategory, EventBody, ToolFailure, ToolOutcome, ToolSpec};

use super::{CallDecision, CallRule, CallView};

/// Refuses another tool's change before the tool the person named was called.
pub(crate) struct UseTheNamedTool;

impl CallRule for UseTheNamedTool {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        let run = &view.run;
        let Some(request) = run.last_request() else { return CallDecision::Run };
        let named: Vec<&ToolSpec> = run
            .all_tools
            .iter()
            .filter(|spec| {
                spec.name.contains('_') && run.settings.enables(spec.toolset) && mentions(request, &spec.name)
            })
            .collect();
        let [named] = named.as_slice() else { return CallDecision::Run };
        let reads = view.spec.is_some_and(|spec| spec.effects.reads_only);
        if view.call.name == named.name || reads || called_since_the_request(run.history, &named.name) {
            return CallDecision::Run;
        }
        CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
            ErrorCategory::InvalidArguments,
            format!(
                "the person asked for `{named}` by name; nothing was done. Call `{named}` for this request, \
                 not `{called}`.",
                named = named.name,
                called = view.call.name
            ),
        )))
    }
}

/// Whether `text` holds `name` as a word of its own (`render_blocks`, not `render_blocks_x`):
/// a tool named in the person's request, or in a learned item's draft.
pub fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == name)
}

/// Whether a call of `tool` was made since the person's last message.
fn called_since_the_request(history: &[wright_core::Event], tool: &str) -> bool {
    history
        .iter()
        .rev()
        .take_while(|event| !matches!(event.body, EventBody::User { .. }))
        .any(|event| matches!(&event.body, EventBody::ToolCall { name, .. } if name == tool))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, call, spec_with};

    fn scene(request: &str) -> Scene {
        let mut scene = Scene::new(&[request]);
        let mut schema = spec_with("list_ui_components", "List your components.", json!({}));
        schema.effects.reads_only = true;
        scene.all_tools = vec![
            spec_with("render_blocks", "Show blocks in the canvas: a form.", json!({})),
            spec_with("create_ui_component", "Create a React component.", json!({})),
            schema,
        ];
        scene
    }

    fn decide(scene: &Scene, tool: &str) -> CallDecision {
        let spec = scene.all_tools.iter().find(|spec| spec.name == tool);
        UseTheNamedTool.decide(&scene.call_view(&call("c", tool, json!({})), spec))
    }

    #[test]
    fn another_tools_change_before_the_named_tool_is_refused_with_its_name() {
        let mut scene = scene("Show me a form with render_blocks that asks for my name.");
        let CallDecision::Answered(outcome) = decide(&scene, "create_ui_component") else { panic!("ran") };
        let error = outcome.output["error"].as_str().unwrap();
        assert_eq!(
            error,
            "the person asked for `render_blocks` by name; nothing was done. Call `render_blocks` for this request, \
             not `create_ui_component`."
        );
        assert_eq!(decide(&scene, "render_blocks"), CallDecision::Run);
        assert_eq!(decide(&scene, "list_ui_components"), CallDecision::Run, "a read runs");
        // Once the named tool was called, the run goes on as the model sees fit.
        scene.call_and_result("r", "render_blocks", json!({}), json!({"action": "submit"}), true);
        assert_eq!(decide(&scene, "create_ui_component"), CallDecision::Run);
    }

    #[test]
    fn a_message_that_names_no_tool_or_two_leaves_the_choice_to_the_model() {
        for request in [
            "Show me a form that asks for my name.",
            "Use render_blocks or create_ui_component, as you like.",
            "Show me render_blocksy things.",
        ] {
            assert_eq!(decide(&scene(request), "create_ui_component"), CallDecision::Run, "{request}");
        }
    }
}
