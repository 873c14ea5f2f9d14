//! The start of a run started by the person's message: the schemas of the catalogue tools the
//! message is about are sent whole from the first request (small models answer in prose
//! rather than call `load_tools`), and, when configured, the first reply must call a tool.

use serde_json::Value;
use wright_core::EventBody;

use super::{StartDecision, StartRule, StartView};
use crate::surface::{LOAD_TOOLS, Loaded, fitting, preselect};

/// [`LoopConfig::preload_tools`](crate::LoopConfig::preload_tools): the tools each of the
/// person's messages in the conversation is about, in the order of the messages (a message
/// whose best tool is already there adds none), then what `load_tools` loaded earlier in it. A later run of the conversation so sends the tools an
/// earlier one sent, in the same order, and adds the new message's at the end: the prompt an
/// earlier run sent stays a prefix the server has cached, unless the new message needs new
/// tools.
pub(crate) struct Preselect;

impl StartRule for Preselect {
    fn decide(&self, view: &StartView<'_>) -> StartDecision {
        let run = &view.run;
        let mut preload = Loaded::default();
        for event in run.history {
            match &event.body {
                EventBody::User { text, .. } => {
                    // A message whose best tool is already sent adds none: each schema added
                    // makes the server read the whole conversation again.
                    let picks = preselect(run.all_tools, run.settings, text, run.config.preload_tools);
                    if picks.first().is_some_and(|best| !preload.contains(best)) {
                        preload.extend(picks);
                    }
                }
                EventBody::ToolCall { name, arguments, .. } if name == LOAD_TOOLS => {
                    let names = arguments.get("names").and_then(Value::as_array).into_iter().flatten();
                    let known = |name: &&str| run.all_tools.iter().any(|spec| spec.name == *name);
                    preload.extend(names.filter_map(Value::as_str).filter(known).map(str::to_owned));
                }
                _ => {}
            }
        }
        StartDecision { preload: preload.names().to_vec(), ..StartDecision::default() }
    }
}

/// [`LoopConfig::require_first_call`](crate::LoopConfig::require_first_call): a message that
/// names what some tool does must be answered with a call.
pub(crate) struct RequireFirstCall;

impl StartRule for RequireFirstCall {
    fn decide(&self, view: &StartView<'_>) -> StartDecision {
        let run = &view.run;
        let require_call = run.config.require_first_call
            && view.started_by_message
            && run
                .last_request()
                .is_some_and(|request| !fitting(run.all_tools, run.settings, request, 1, |_| true).is_empty());
        StartDecision { require_call, ..StartDecision::default() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, spec_with};

    fn scene(message: &str) -> Scene {
        let mut scene = Scene::new(&[message]);
        let parameters = json!({"type": "object", "properties": {"sql": {"type": "string"}}});
        scene.all_tools = vec![
            spec_with("db_sql", "Run SQL on the agent's own database tables.", parameters.clone()),
            spec_with("fetch_url", "Fetch a web page by its URL.", parameters),
        ];
        scene.settings.loading = wright_core::ToolLoading::OnDemand;
        scene
    }

    #[test]
    fn the_message_preselects_the_tools_it_is_about() {
        let scene = scene("create a table of my books in the database");
        assert_eq!(Preselect.decide(&scene.start_view(true)).preload, vec!["db_sql".to_owned()]);
        let mut off = scene;
        off.config.preload_tools = 0;
        assert!(Preselect.decide(&off.start_view(true)).preload.is_empty());
    }

    #[test]
    fn a_later_message_keeps_what_earlier_ones_preselected_and_adds_its_own_at_the_end() {
        let mut scene = scene("create a table of my books in the database");
        scene.user("now fetch the page with my reading list by its URL");
        assert_eq!(Preselect.decide(&scene.start_view(true)).preload, ["db_sql", "fetch_url"]);
        // A follow-up whose best tool is already sent adds nothing, not even its second best.
        let mut follow_up = self::scene("create a table of my books in the database");
        let message = "insert one more row into the database table, the book from that page";
        follow_up.user(message);
        assert_eq!(preselect(&follow_up.all_tools, &follow_up.settings, message, 2), ["db_sql", "fetch_url"]);
        assert_eq!(Preselect.decide(&follow_up.start_view(true)).preload, ["db_sql"]);
        let mut loaded = self::scene("hello there");
        loaded.call_and_result("l", LOAD_TOOLS, json!({"names": ["fetch_url", "nope"]}), json!({}), true);
        loaded.user("thanks");
        assert_eq!(Preselect.decide(&loaded.start_view(true)).preload, ["fetch_url"]);
    }

    #[test]
    fn a_first_call_is_required_only_when_configured_started_by_a_message_and_about_a_tool() {
        let mut scene = scene("create a table of my books in the database");
        assert!(!RequireFirstCall.decide(&scene.start_view(true)).require_call);
        scene.config.require_first_call = true;
        assert!(RequireFirstCall.decide(&scene.start_view(true)).require_call);
        assert!(!RequireFirstCall.decide(&scene.start_view(false)).require_call);
        let chat = {
            let mut chat = self::scene("hello there, how are you");
            chat.config.require_first_call = true;
            chat
        };
        assert!(!RequireFirstCall.decide(&chat.start_view(true)).require_call);
    }
}
