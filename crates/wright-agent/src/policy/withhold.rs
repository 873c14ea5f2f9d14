//! Tools not offered: a toolset switched off is never run; a tool called again and again is
//! withheld from the next request (then offered again), so a server's tool grammar makes a
//! small model take the next step or answer instead of calling `fetch_url` five times or
//! feeding a result back into the same tool (`double(21)`, `double(42)`, …).

use std::collections::BTreeSet;

use wright_core::{ErrorCategory, ToolFailure, ToolOutcome};

use super::{CallDecision, CallRule, CallView, TurnDecision, TurnRule, TurnView};

/// A call of a tool whose toolset is switched off for the agent is refused.
pub(crate) struct RefuseSwitchedOff;

impl CallRule for RefuseSwitchedOff {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        let switched_off =
            view.spec.and_then(|spec| spec.toolset.filter(|toolset| !view.run.settings.enables(Some(*toolset))));
        match switched_off {
            Some(toolset) => CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
                ErrorCategory::Denied,
                format!("`{}` is in the toolset `{toolset}`, which is switched off for this agent", view.call.name),
            ))),
            None => CallDecision::Run,
        }
    }
}

/// A call of a tool this request withheld is refused (a server without a grammar lets a model
/// call what it was not offered).
pub(crate) struct RefuseWithheld;

impl CallRule for RefuseWithheld {
    fn decide(&self, view: &CallView<'_>) -> CallDecision {
        if !view.withheld.contains(&view.call.name) {
            return CallDecision::Run;
        }
        CallDecision::Answered(ToolOutcome::failure(&ToolFailure::new(
            ErrorCategory::Withheld,
            format!(
                "`{}` is not offered in this turn: its results are above. Do the next step of the person's request \
                 with another tool, or answer the person.",
                view.call.name
            ),
        )))
    }
}

/// A turn whose every call repeated a call that worked: those tools are not offered next.
pub(crate) struct WithholdRepeated;

impl TurnRule for WithholdRepeated {
    fn decide(&self, view: &TurnView<'_>) -> TurnDecision {
        let withhold = if view.only_repeats { view.repeated.clone() } else { BTreeSet::new() };
        TurnDecision { withhold, ..TurnDecision::default() }
    }
}

/// [`LoopConfig::max_same_tool_turns`](crate::LoopConfig::max_same_tool_turns) turns in a row
/// calling only one tool: it is not offered next, and the streak starts again.
pub(crate) struct WithholdStreak;

impl TurnRule for WithholdStreak {
    fn decide(&self, view: &TurnView<'_>) -> TurnDecision {
        let max = view.run.config.max_same_tool_turns;
        match &view.run.facts.streak {
            Some((name, turns)) if max > 0 && *turns >= max => {
                TurnDecision { withhold: BTreeSet::from([name.clone()]), end_streak: true, ..TurnDecision::default() }
            }
            _ => TurnDecision::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wright_core::Toolset;

    use super::*;
    use crate::policy::testing::{Scene, call, spec};

    #[test]
    fn a_tool_of_a_switched_off_toolset_is_refused_and_others_run() {
        let scene = Scene::new(&["click it"]);
        let mut click = spec("browser_click");
        click.toolset = Some(Toolset::Browser);
        let clicking = call("c1", "browser_click", json!({"selector": "a"}));
        let CallDecision::Answered(outcome) = RefuseSwitchedOff.decide(&scene.call_view(&clicking, Some(&click)))
        else {
            panic!("ran")
        };
        assert_eq!(outcome.category, Some(ErrorCategory::Denied));
        assert!(outcome.output["error"].as_str().unwrap().contains("toolset `browser`"));
        let mut state = spec("get_state");
        state.toolset = Some(Toolset::State);
        let reading = call("c2", "get_state", json!({"key": "k"}));
        assert_eq!(RefuseSwitchedOff.decide(&scene.call_view(&reading, Some(&state))), CallDecision::Run);
    }

    #[test]
    fn a_withheld_tool_is_refused_with_its_own_category() {
        let mut scene = Scene::new(&["fetch it"]);
        scene.withheld = BTreeSet::from(["fetch_url".to_owned()]);
        let fetching = call("c1", "fetch_url", json!({"url": "https://a"}));
        assert!(matches!(
            RefuseWithheld.decide(&scene.call_view(&fetching, None)),
            CallDecision::Answered(outcome) if outcome.category == Some(ErrorCategory::Withheld)
        ));
    }

    #[test]
    fn only_a_turn_of_repeats_withholds_and_a_long_streak_withholds_its_tool() {
        let mut scene = Scene::new(&["double it"]);
        let repeated = BTreeSet::from(["get_state".to_owned()]);
        assert_eq!(WithholdRepeated.decide(&scene.turn_view(&repeated, true)).withhold, repeated);
        assert!(WithholdRepeated.decide(&scene.turn_view(&repeated, false)).withhold.is_empty());
        let max = scene.config.max_same_tool_turns;
        scene.facts.streak = Some(("double".to_owned(), max - 1));
        assert_eq!(WithholdStreak.decide(&scene.turn_view(&BTreeSet::new(), false)), TurnDecision::default());
        scene.facts.streak = Some(("double".to_owned(), max));
        let decision = WithholdStreak.decide(&scene.turn_view(&BTreeSet::new(), false));
        assert_eq!((decision.withhold, decision.end_streak), (BTreeSet::from(["double".to_owned()]), true));
    }
}
