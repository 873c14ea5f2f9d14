//! Requests of more than one step ("compute 17 × 23, then save it", "ask me my city, then
//! save it", "fetch the page and save the word on it"). A small model does the first step and
//! then repeats it. After a turn, the person's request is cut into its steps at the words that
//! sequence them; a step is done when a call of this run that worked fits it (by the words the
//! tools are preselected by, or its own words in the call's arguments). The next request says
//! what is done and names the step still undone — or, when all are done, asks for the answer.
//! Steps are done in order: a step's call may not come before the call that did the step before.
//! When every call so far only read (tools declare it) and a step starts with a verb of change,
//! the request is not done: the tool that makes the change is required next, once a run.
//! A step that acts on what the run made ("create a tool greet, then use it for Ada") is done by
//! a call of the tool made, and names it.
//! Judged from the request's words and the calls made, never from tool names in a list.

use std::collections::BTreeSet;

use wright_core::{Event, EventBody, ToolSpec};

use super::{Counter, RunView, TurnDecision, TurnRule, TurnView};
use crate::surface::{fitting, keywords};

/// How many of the best-fitting tools of a step count as doing it.
const TOOLS_PER_STEP: usize = 3;

/// The verbs that start a step asking for a change, as [`keywords`] cuts them ("store", "keep",
/// "remember" are `save`; "insert", "append" are `add`; "remove" is `delet`).
const CHANGE_VERBS: [&str; 14] = [
    "add", "save", "creat", "write", "updat", "set", "make", "delet", "chang", "renam", "remin", "sched", "edit", "log",
];

/// Words that start the next step of a request.
const SEQUENCERS: [&str; 6] = [" and then ", ", then ", " then ", " after that ", "; ", ". "];

/// [`LoopConfig::name_undone_steps`](crate::LoopConfig::name_undone_steps).
pub(crate) struct NameUndoneSteps;

impl TurnRule for NameUndoneSteps {
    fn decide(&self, view: &TurnView<'_>) -> TurnDecision {
        let run = &view.run;
        if !run.config.name_undone_steps {
            return TurnDecision::default();
        }
        let Some(request) = run.last_request() else { return TurnDecision::default() };
        let worked = calls_that_worked(run.history);
        if worked.is_empty() {
            return TurnDecision::default();
        }
        let steps = steps_of(request, |part| {
            refers_back(part) || !fitting(run.all_tools, run.settings, part, 1, |_| true).is_empty()
        });
        // The tools the whole request is about: a step's words alone may point elsewhere
        // ("record a fern", after "create a table plants", fits the notes).
        let for_request: BTreeSet<&str> = fitting(run.all_tools, run.settings, request, TOOLS_PER_STEP, |_| true)
            .into_iter()
            .map(|spec| spec.name.as_str())
            .collect();
        let made = made_tools(run.all_tools, &worked);
        let (undone, used) = undone_steps(run, &steps, &for_request, &worked, &made);
        let mut done: Vec<String> = Vec::new();
        for (name, _) in &worked {
            let shown = format!("`{name}`");
            if !done.contains(&shown) {
                done.push(shown);
            }
        }
        if undone.is_empty()
            && let Some(nudge) = read_only_nudge(run, request, &steps, &worked, &done)
        {
            return nudge;
        }
        if undone.is_empty() {
            // The answer is asked for with no call taken: a small model told it is done still
            // calls again, and copies the note into the call (into the person's prompt).
            let note = format!(
                "## The request is done\n{} worked. Every part of the person's request is done: answer the person \
                 now in a sentence or two, saying what you did.",
                done.join(", ")
            );
            return TurnDecision { note: Some(note), answer_now: true, ..TurnDecision::default() };
        }
        // The tool that fits the next undone step best is loaded (its schema is sent from the
        // next request on: a server's grammar lets a model call only what it was sent), and
        // the next reply must call a tool. It is named only when the whole request is about it
        // too (else the step's words may point anywhere: "record a fern" fits the notes, "log a
        // run" the execution log); a step that asks for a change is not done by a read.
        // A step that acts on what the run made ("then call it with 21", after `create_tool`)
        // is done with the tool made, which no word of the request's could have preselected.
        let asks_change = change_verb(undone[0]).is_some();
        let next_tool = match made.first() {
            Some(made) if refers_back(undone[0]) => Some((*made).to_owned()),
            _ => fitting(run.all_tools, run.settings, undone[0], 1, |spec| {
                let read_for_a_change = asks_change && spec.effects.reads_only;
                !used.contains(spec.name.as_str()) && !read_for_a_change
            })
            .first()
            .filter(|spec| for_request.contains(spec.name.as_str()))
            .map(|spec| spec.name.clone()),
        };
        let with = next_tool.as_ref().map(|name| format!(" with `{name}`")).unwrap_or_default();
        let note = format!(
            "## Still to do\n{} worked. Not done yet from the person's request: \"{}\". Do that next{with}, using \
             what the results above gave you; do not repeat a call that already worked.",
            done.join(", "),
            undone.join("\", \"")
        );
        TurnDecision {
            note: Some(note),
            require_call: true,
            load: next_tool.into_iter().collect(),
            ..TurnDecision::default()
        }
    }
}

/// The steps of `steps` not done by the calls that `worked`, in order, and the tools of the
/// calls that did the others. A step that acts on what the step before made ("use it for
/// Ada") may be done by a tool the run `made`.
fn undone_steps<'s>(
    run: &RunView<'s>,
    steps: &'s [String],
    for_request: &BTreeSet<&str>,
    worked: &'s [(String, String)],
    made: &[&'s str],
) -> (Vec<&'s str>, BTreeSet<&'s str>) {
    // The steps in order: a step is done by a call not before the one that did the step before
    // it (the 0.5B saved "single word" in state, then fetched the page; the 1.5B wrote the
    // note, then read the state: the later step's call came too early to use the result).
    let mut cursor = 0;
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut undone: Vec<&str> = Vec::new();
    for step in steps {
        let mut tools: BTreeSet<&str> = fitting(run.all_tools, run.settings, step, TOOLS_PER_STEP, |_| true)
            .into_iter()
            .map(|spec| spec.name.as_str())
            .collect();
        if refers_back(step) {
            tools.extend(made.iter().copied());
        }
        // A step no tool fits ("what is my favourite colour?") is not judged: it is
        // answered in words, and holding the model to a call for it makes it loop.
        if tools.is_empty() {
            continue;
        }
        // Its words, and its numbers (`17`, `23`), which keywords leave out.
        let mut words = keywords(step);
        words.extend(step.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).map(str::to_owned));
        let carries_its_words = |arguments: &str| words.iter().any(|word| arguments.contains(word.as_str()));
        // Done by a tool that fits it, unless the step names something that tool's arguments
        // do not carry (the same tool may be the right one for two steps); or by a change of
        // a tool the request is about that carries the step's words (`INSERT INTO plants …
        // 'fern'` records the fern).
        let does = |(name, arguments): &(String, String)| {
            let changes = !reads_only(run.all_tools, name);
            (tools.contains(name.as_str()) && (steps.len() == 1 || carries_its_words(arguments)))
                || (changes && for_request.contains(name.as_str()) && carries_its_words(arguments))
        };
        match worked.iter().enumerate().skip(cursor).find(|(_, call)| does(call)) {
            Some((at, (name, _))) => {
                // The same call may do the next step too (one `CREATE TABLE` names both
                // columns of "… with the columns title and author").
                cursor = at;
                used.insert(name.as_str());
            }
            None => undone.push(step.as_str()),
        }
    }
    (undone, used)
}

/// The turn after a request for a change was met only with reads ("Add the book Dune … to the
/// books table" answered with `db_schema {}`): not done. The tool that changes what the request
/// is about is required next, once a run (a second read in reply ends it as before, never a
/// loop). `None` when a call changed something, a step does not start with a change, or the
/// run was nudged already.
fn read_only_nudge(
    run: &RunView<'_>,
    request: &str,
    steps: &[String],
    worked: &[(String, String)],
    done: &[String],
) -> Option<TurnDecision> {
    let only_read = worked.iter().all(|(name, _)| reads_only(run.all_tools, name));
    if !only_read || run.facts.count(Counter::ReadOnlyNudges) > 0 {
        return None;
    }
    let next = tool_for_the_change(run.all_tools, run.settings, request, steps)?;
    let note = format!(
        "## Still to do\n{} worked: {} only read, and nothing the person asked for is changed yet. Do it now \
         with `{}`, using what you read.",
        done.join(", "),
        if done.len() == 1 { "it" } else { "they" },
        next.name
    );
    Some(TurnDecision {
        note: Some(note),
        require_call: true,
        load: vec![next.name.clone()],
        counted: vec![Counter::ReadOnlyNudges],
        ..TurnDecision::default()
    })
}

/// The tool that makes the change a request asks for, when a step of it starts with a verb of
/// change: the best-fitting tool that changes something and says that verb ("add" is `db_sql`'s
/// "insert", not `describe_db_table`'s note on a table), else the best that changes something.
fn tool_for_the_change<'a>(
    all_tools: &'a [ToolSpec],
    settings: &wright_core::ToolSettings,
    request: &str,
    steps: &[String],
) -> Option<&'a ToolSpec> {
    let verb = steps.iter().find_map(|step| change_verb(step))?;
    let changes = |spec: &ToolSpec| !spec.effects.reads_only;
    let says_verb = |spec: &ToolSpec| changes(spec) && keywords(&spec.description).contains(&verb);
    fitting(all_tools, settings, request, 1, says_verb)
        .first()
        .or(fitting(all_tools, settings, request, 1, changes).first())
        .copied()
}

/// The verb of change `step` starts with: its first word that can name a tool, when it is one of
/// [`CHANGE_VERBS`]. Only the first: in "Read the value stored under the key city", `stored`
/// asks for nothing.
fn change_verb(step: &str) -> Option<String> {
    let first = step.split_whitespace().find_map(|word| keywords(word).into_iter().next());
    first.filter(|word| CHANGE_VERBS.contains(&word.as_str()))
}

/// Whether `step` acts on what the step before it made or found: its verb's object is "it" or
/// "them" ("call it with 21", "use it on hello", "save them").
fn refers_back(step: &str) -> bool {
    matches!(step.split_whitespace().nth(1), Some("it" | "them"))
}

/// The agent's tools that calls of this run made or changed, latest first: a call that worked
/// and changes something named one of them as its `name` (`create_tool {"name": "greet", …}`).
fn made_tools<'a>(all_tools: &'a [ToolSpec], worked: &[(String, String)]) -> Vec<&'a str> {
    let mut made: Vec<&str> = Vec::new();
    for (called, arguments) in worked.iter().rev() {
        if reads_only(all_tools, called) {
            continue;
        }
        for spec in all_tools {
            let named = format!("\"name\":\"{}\"", spec.name.to_lowercase());
            if &spec.name != called && arguments.contains(&named) && !made.contains(&spec.name.as_str()) {
                made.push(spec.name.as_str());
            }
        }
    }
    made
}

/// Whether the tool `name` declares that its calls only read ([`Effects::reads_only`](wright_core::Effects)).
fn reads_only(all_tools: &[ToolSpec], name: &str) -> bool {
    all_tools.iter().any(|spec| spec.name == name && spec.effects.reads_only)
}

/// `(tool, arguments as lowercase JSON)` of the calls since the person's last message whose
/// results say they worked, in order.
fn calls_that_worked(history: &[Event]) -> Vec<(String, String)> {
    let since = history.iter().rposition(|event| matches!(event.body, EventBody::User { .. })).map_or(0, |at| at + 1);
    let recent = &history[since..];
    recent
        .iter()
        .filter_map(|event| {
            let EventBody::ToolResult { tool_call_id, name, success: true, .. } = &event.body else { return None };
            let arguments = recent.iter().find_map(|call| match &call.body {
                EventBody::ToolCall { id, arguments, .. } if id == tool_call_id => {
                    Some(arguments.to_string().to_lowercase())
                }
                _ => None,
            });
            Some((name.clone(), arguments.unwrap_or_default()))
        })
        .collect()
}

/// The steps of a request: its parts between sequencing words, in order (one when it has
/// none). `and` joins steps only when the part after it is about a tool by itself
/// (`about_a_tool`): "fetch the page and save the word" is two steps, "tea and coffee" one.
pub(super) fn steps_of(request: &str, about_a_tool: impl Fn(&str) -> bool) -> Vec<String> {
    let mut steps = vec![request.trim().to_lowercase()];
    for sequencer in SEQUENCERS {
        steps = steps
            .iter()
            .flat_map(|step| step.split(sequencer).map(str::to_owned).collect::<Vec<_>>())
            .map(|step| step.trim().trim_end_matches('.').to_owned())
            .filter(|step| !step.is_empty())
            .collect();
    }
    let mut joined: Vec<String> = Vec::new();
    for step in steps {
        for (index, part) in step.split(" and ").enumerate() {
            match joined.last_mut() {
                Some(previous) if index > 0 && !about_a_tool(part) => {
                    previous.push_str(" and ");
                    previous.push_str(part);
                }
                _ => joined.push(part.trim().to_owned()),
            }
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::testing::{Scene, spec_with};

    fn scene(request: &str) -> Scene {
        let mut scene = Scene::new(&[request]);
        scene.config.name_undone_steps = true;
        let key_value = json!({"type": "object", "properties": {"key": {"type": "string"}, "value": {}}});
        scene.all_tools = vec![
            spec_with("run_sandbox_code", "Run JavaScript code in the sandbox to compute a result.", json!({})),
            spec_with("set_state", "Save a value under a key in your state.", key_value),
            spec_with("fetch_url", "Fetch a web page by its URL.", json!({})),
        ];
        scene
    }

    fn note(scene: &Scene) -> Option<String> {
        NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false)).note
    }

    #[test]
    fn the_tool_for_the_undone_step_is_loaded_and_a_call_required() {
        let mut scene =
            scene("Use run_sandbox_code to compute 17 * 23, then save the result in your state under the key product.");
        scene.call_and_result("a", "run_sandbox_code", json!({"code": "return 17 * 23"}), json!({"result": 391}), true);
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        assert_eq!(decision.load, ["set_state"]);
        assert!(decision.require_call);
        assert!(decision.note.unwrap().contains("Do that next with `set_state`"));
    }

    #[test]
    fn after_the_first_step_of_two_the_second_is_named() {
        let mut scene =
            scene("Use run_sandbox_code to compute 17 * 23, then save the result in your state under the key product.");
        scene.call_and_result("a", "run_sandbox_code", json!({"code": "return 17 * 23"}), json!({"result": 391}), true);
        let note = note(&scene).unwrap();
        assert!(note.starts_with("## Still to do\n`run_sandbox_code` worked."), "{note}");
        assert!(note.contains("\"save the result in your state under the key product\""), "{note}");
        scene.call_and_result("b", "set_state", json!({"key": "product", "value": 391}), json!({"ok": true}), true);
        let done = self::note(&scene).unwrap();
        assert!(done.starts_with("## The request is done\n`run_sandbox_code`, `set_state` worked."), "{done}");
        assert!(NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false)).answer_now, "no call taken next");
    }

    #[test]
    fn a_failed_call_does_not_count_and_nothing_is_said_without_a_call_that_worked() {
        let mut scene =
            scene("Fetch the page http://x.test/ and save the word on it in your state under the key secret.");
        assert_eq!(note(&scene), None);
        scene.call_and_result("a", "fetch_url", json!({"url": "http://x.test/"}), json!({"error": "down"}), false);
        assert_eq!(note(&scene), None);
        scene.call_and_result("b", "fetch_url", json!({"url": "http://x.test/"}), json!({"body": "periwinkle"}), true);
        // "and save …" is a step of its own: not done by the fetch.
        let note = note(&scene).unwrap();
        assert!(note.contains("Not done yet from the person's request: \"save the word on it in your state"), "{note}");
        let mut off = self::scene("Save 1 under the key a");
        off.config.name_undone_steps = false;
        off.call_and_result("b", "set_state", json!({"key": "a", "value": 1}), json!({"ok": true}), true);
        assert_eq!(self::note(&off), None);
    }

    /// What both real models did with "Add the book Dune … to the books table": `db_schema {}`,
    /// then an answer (the 1.5B's: "I added the book", after it was told the request was done).
    #[test]
    fn calls_that_only_read_do_not_do_a_request_for_a_change() {
        let with_tables = |request: &str| {
            let mut scene = scene(request);
            let mut schema =
                spec_with("db_schema", "List the tables of your own database and their columns.", json!({}));
            schema.effects.reads_only = true;
            scene.all_tools.push(schema);
            scene.all_tools.push(spec_with("describe_db_table", "Note what a database table is for.", json!({})));
            scene.all_tools.push(spec_with("db_sql", "Run SQL on your database: insert rows into a table.", json!({})));
            scene.call_and_result("a", "db_schema", json!({}), json!({"tables": [{"name": "books"}]}), true);
            scene
        };
        let mut scene = with_tables("Add the book Dune by Frank Herbert to the books table in your database.");
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        let note = decision.note.clone().unwrap();
        assert!(note.starts_with("## Still to do\n`db_schema` worked: it only read"), "{note}");
        assert!(note.ends_with("Do it now with `db_sql`, using what you read."), "{note}");
        assert_eq!((decision.load, decision.require_call), (vec!["db_sql".to_owned()], true));
        assert_eq!(decision.counted, [Counter::ReadOnlyNudges]);
        // Once a run: a second read in reply is not nudged again.
        scene.facts.counts.insert(Counter::ReadOnlyNudges, 1);
        assert!(NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false)).answer_now);
        scene.facts.counts.clear();
        scene.call_and_result("b", "db_sql", json!({"sql": "INSERT INTO books VALUES ('Dune')"}), json!({}), true);
        assert!(NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false)).answer_now, "a change was made");
        // A request that only asks to read is done by the read ("stored" is not its verb).
        for question in ["Which tables are in your database?", "Read the value stored in the books table."] {
            let read = with_tables(question);
            assert!(NameUndoneSteps.decide(&read.turn_view(&BTreeSet::new(), false)).answer_now, "{question}");
        }
        // A read of a tool that does not declare it only reads is judged as before.
        let mut undeclared = self::scene("Add the book Dune by Frank Herbert to the books table in your database.");
        undeclared.all_tools.push(spec_with("db_schema", "List the tables of your own database.", json!({})));
        undeclared.call_and_result("a", "db_schema", json!({}), json!({"tables": []}), true);
        assert!(NameUndoneSteps.decide(&undeclared.turn_view(&BTreeSet::new(), false)).answer_now);
    }

    /// The learning evaluation's table tasks, with the real specs: after the table is created,
    /// "record a fern" is not sent to the notes; the insert that carries the fern does it.
    #[test]
    fn a_step_whose_words_point_away_from_the_request_names_no_tool() {
        let mut scene = Scene::new(&["In your database, create a table plants (name TEXT) and record a fern."]);
        scene.config.name_undone_steps = true;
        scene.all_tools = crate::engine::scripted_tools::builtin_specs().to_vec();
        scene.call_and_result("a", "db_sql", json!({"sql": "CREATE TABLE plants (name TEXT)"}), json!({}), true);
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        let note = decision.note.unwrap();
        assert!(note.contains("Not done yet from the person's request: \"record a fern\". Do that next,"), "{note}");
        assert!(decision.load.is_empty() && decision.require_call, "no tool named, a call required");
        let insert = json!({"sql": "INSERT INTO plants (name) VALUES ('fern')"});
        scene.call_and_result("b", "db_sql", insert, json!({"changes": 1}), true);
        assert!(NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false)).answer_now, "the insert did it");
        // Two steps whose tools the request is about are named as before, with the real specs.
        let mut town =
            Scene::new(&["Read the key town from your state, then add it to your learned notes as my home town."]);
        town.config.name_undone_steps = true;
        town.all_tools = crate::engine::scripted_tools::builtin_specs().to_vec();
        town.call_and_result("a", "get_state", json!({"key": "town"}), json!({"value": "Tromso"}), true);
        let decision = NameUndoneSteps.decide(&town.turn_view(&BTreeSet::new(), false));
        assert_eq!(decision.load, ["edit_learned_notes"], "{:?}", decision.note);
    }

    /// What the 0.5B did with "Fetch the page … and save the single word on it …": it saved
    /// first. A later step's call made before the earlier step's cannot use its result.
    #[test]
    fn a_step_is_done_only_by_a_call_after_the_step_before_it() {
        let mut scene =
            scene("Fetch the page http://x.test/ and save the single word on it in your state under the key secret.");
        let early = json!({"key": "secret", "value": "single word"});
        scene.call_and_result("a", "set_state", early, json!({"ok": true}), true);
        scene.call_and_result("b", "fetch_url", json!({"url": "http://x.test/"}), json!({"body": "periwinkle"}), true);
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        let note = decision.note.unwrap();
        assert!(note.starts_with("## Still to do\n`set_state`, `fetch_url` worked."), "{note}");
        assert!(note.contains("\"save the single word on it in your state under the key secret\""), "{note}");
        assert_eq!(decision.load, ["set_state"], "the tool that saved too early is the one to call again");
        let late = json!({"key": "secret", "value": "periwinkle"});
        scene.call_and_result("c", "set_state", late, json!({"ok": true}), true);
        let done = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        assert!(done.answer_now, "{:?}", done.note);
        assert!(done.note.unwrap().starts_with("## The request is done\n`set_state`, `fetch_url` worked."));
    }

    /// The 1.5B's `db_create_table`: "… with the columns title and author in your database" is
    /// cut into two steps, and one `CREATE TABLE` does both.
    #[test]
    fn one_call_may_do_two_steps_in_a_row() {
        let mut scene =
            Scene::new(&["Create a table called books with the columns title and author in your database."]);
        scene.config.name_undone_steps = true;
        scene.all_tools = crate::engine::scripted_tools::builtin_specs().to_vec();
        let create = json!({"sql": "CREATE TABLE books (title TEXT, author TEXT)"});
        scene.call_and_result("a", "db_sql", create, json!({"changes": 0}), true);
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        assert!(decision.answer_now, "{:?}", decision.note);
    }

    /// The learning evaluation's tool tasks on the real 1.5B: it made the tool, then said it had
    /// called it ("use it for Ada" fits no tool by its words), or called another one.
    #[test]
    fn a_step_that_uses_what_the_run_made_is_done_by_the_tool_made() {
        for (request, made, arguments) in [
            (
                "Write a tool greet that returns 'hi ' plus a name argument, then use it for Ada.",
                "greet",
                json!({"name": "Ada"}),
            ),
            (
                "Make a tool celsius_to_f converting argument c to Fahrenheit and call it with 100.",
                "celsius_to_f",
                json!({"c": 100}),
            ),
        ] {
            let mut scene = Scene::new(&[request]);
            scene.config.name_undone_steps = true;
            scene.all_tools = crate::engine::scripted_tools::builtin_specs().to_vec();
            let create = json!({"name": made, "description": "Made by the agent.", "code": "async function f(a) {}"});
            scene.call_and_result("a", "create_tool", create, json!({"name": made, "version": 1}), true);
            scene.all_tools.push(spec_with(made, "Made by the agent.", json!({"type": "object"})));
            let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
            let note = decision.note.unwrap();
            assert!(note.contains(&format!("Do that next with `{made}`")), "{note}");
            assert_eq!((decision.load, decision.require_call), (vec![made.to_owned()], true));
            scene.call_and_result("b", made, arguments, json!({"result": "done"}), true);
            let done = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
            assert!(done.answer_now, "{:?}", done.note);
        }
        // Reading a tool names it too, but makes nothing.
        let mut specs = crate::engine::scripted_tools::builtin_specs().to_vec();
        specs.push(spec_with("greet", "Made by the agent.", json!({})));
        assert_eq!(made_tools(&specs, &[("read_tool".into(), r#"{"name":"greet"}"#.into())]), Vec::<&str>::new());
        assert_eq!(made_tools(&specs, &[("create_tool".into(), r#"{"name":"greet"}"#.into())]), ["greet"]);
    }

    /// With the real built-in specs and default toolsets.
    #[test]
    fn the_tool_for_a_change_says_the_requests_verb() {
        let specs = crate::engine::scripted_tools::builtin_specs();
        let settings = wright_core::ToolSettings::default();
        let tool = |request: &str| {
            let steps = steps_of(request, |_| true);
            tool_for_the_change(&specs, &settings, request, &steps).map(|spec| spec.name.clone())
        };
        let dune = "Add the book Dune by Frank Herbert to the books table in your database.";
        assert_eq!(tool(dune).as_deref(), Some("db_sql"));
        assert_eq!(
            tool("Add to your learned notes that I prefer metric units.").as_deref(),
            Some("edit_learned_notes")
        );
        assert_eq!(tool("Save my favourite colour, green, in your state.").as_deref(), Some("set_state"));
        assert_eq!(tool("Read the value stored in your state under the key city."), None, "no change asked");
    }

    #[test]
    fn a_step_no_tool_fits_is_answered_not_called_for() {
        let mut scene = scene("What is my favourite colour?");
        scene.call_and_result("a", "set_state", json!({"key": "colour"}), json!({"value": "green"}), true);
        let decision = NameUndoneSteps.decide(&scene.turn_view(&BTreeSet::new(), false));
        assert!(decision.answer_now && !decision.require_call, "{decision:?}");
    }

    #[test]
    fn a_request_is_cut_at_the_words_that_sequence_its_steps() {
        let any = |_: &str| true;
        assert_eq!(steps_of("Compute 2+2, then save it. Thanks", any), ["compute 2+2", "save it", "thanks"]);
        assert_eq!(steps_of("Ask me my city and then save my answer", any), ["ask me my city", "save my answer"]);
        assert_eq!(steps_of("Save green under colour", any), ["save green under colour"]);
        let about_saving = |part: &str| part.contains("save");
        assert_eq!(
            steps_of("Fetch the page and save the word on it", about_saving),
            ["fetch the page", "save the word on it"]
        );
        assert_eq!(steps_of("Note that I like tea and coffee", about_saving), ["note that i like tea and coffee"]);
        let refers = |part: &str| refers_back(part);
        assert_eq!(steps_of("Make a tool shout and use it on hello", refers), ["make a tool shout", "use it on hello"]);
    }
}
