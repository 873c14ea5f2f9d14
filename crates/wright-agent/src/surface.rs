//! The tool surface of one request: which schemas go to the model, and what the system
//! message says about the rest.
//!
//! An agent's [`ToolSettings`] switch toolsets on or off and choose how schemas are sent. With
//! [`ToolLoading::OnDemand`] the model first sees a one-line catalogue and the `load_tools`
//! meta-tool; the tools it loads are sent whole for the rest of the run. The built-in schemas
//! together are thousands of tokens — more than a small local model reads in two minutes —
//! while the catalogue is a few hundred (`wright tool surface` measures both).
//!
//! Invariants: a tool of a toolset that is off is never offered nor run; a tool of an enabled
//! toolset that was not loaded still runs when called (loading only decides what the model
//! is told); the catalogue and `load_tools` are the same in every request of an agent (a
//! loaded tool keeps its line), and the tools sent change only when one is loaded, so a
//! server's prompt cache holds across the turns of a run and the conversations of an agent.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use wright_core::{ToolLoading, ToolSettings, ToolSpec};

/// The name of the meta-tool that loads full schemas.
pub const LOAD_TOOLS: &str = "load_tools";

/// Longest catalogue line description, in characters.
const CATALOGUE_LINE_CHARS: usize = 80;

/// The tools loaded in a run, in the order they were loaded: those loaded when the run
/// started are sent before `load_tools`, those loaded later after it, so a tool loaded later
/// is added at the end of the list and what was sent before stays a prefix.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    names: Vec<String>,
    /// How many were loaded when the run started.
    at_start: usize,
}

impl Loaded {
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|loaded| loaded == name)
    }

    /// Adds `name` at the end unless it is loaded already.
    pub(crate) fn insert(&mut self, name: String) {
        if !self.contains(&name) {
            self.names.push(name);
        }
    }

    /// What is loaded now was loaded at the start: the rest goes after `load_tools`.
    pub(crate) fn started(&mut self) {
        self.at_start = self.names.len();
    }

    pub(crate) fn extend(&mut self, names: impl IntoIterator<Item = String>) {
        for name in names {
            self.insert(name);
        }
    }

    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }
}

impl<const N: usize> From<[&str; N]> for Loaded {
    fn from(names: [&str; N]) -> Self {
        let mut loaded = Self::default();
        loaded.extend(names.map(str::to_owned));
        loaded
    }
}

/// What one request offers.
pub(crate) struct Surface {
    /// The specs sent (with `load_tools` when anything is left to load).
    pub(crate) offered: Arc<[ToolSpec]>,
    /// The system message's catalogue section, empty when every tool is sent whole.
    pub(crate) catalogue: String,
}

/// The surface for `all` (every tool of the agent), given the settings and the tools loaded in
/// this run.
/// `described`: each catalogue line says what the tool does; else the catalogue only names
/// them (a small model's profile: the lines cost about 25 tokens a tool, read on every first
/// message, and a small model picks by the preselected schemas anyway).
pub(crate) fn surface(all: &[ToolSpec], settings: &ToolSettings, loaded: &Loaded, described: bool) -> Surface {
    let enabled = all.iter().filter(|spec| settings.enables(spec.toolset));
    if settings.loading == ToolLoading::All {
        return Surface { offered: enabled.cloned().collect(), catalogue: String::new() };
    }
    let enabled: Vec<&ToolSpec> = enabled.collect();
    let always = |spec: &ToolSpec| settings.always_loaded.contains(&spec.name);
    // Always-loaded tools first (fixed by the settings), then the loaded ones in load order,
    // `load_tools` between those loaded at the start and those loaded later.
    let mut offered: Vec<ToolSpec> = enabled.iter().filter(|spec| always(spec)).map(|spec| (*spec).clone()).collect();
    let specs_of = |names: &[String]| -> Vec<ToolSpec> {
        names
            .iter()
            .filter_map(|name| {
                enabled.iter().find(|spec| spec.name == *name && !always(spec)).map(|spec| (*spec).clone())
            })
            .collect()
    };
    let (at_start, later) = loaded.names.split_at(loaded.at_start.min(loaded.names.len()));
    offered.extend(specs_of(at_start));
    // The catalogue lists every tool that is not always sent, loaded in this run or not: it
    // is then the same in every request of an agent (a loaded tool's line stays), so the
    // system message is a prefix the server caches across turns and conversations.
    let catalogued: Vec<&ToolSpec> = enabled.iter().copied().filter(|spec| !always(spec)).collect();
    if catalogued.is_empty() {
        offered.extend(specs_of(later));
        return Surface { offered: offered.into(), catalogue: String::new() };
    }
    let names: Vec<&str> = catalogued.iter().map(|spec| spec.name.as_str()).collect();
    offered.push(load_tools_spec(&names));
    offered.extend(specs_of(later));
    let mut catalogue = format!(
        "## More tools\nThese tools are available; those not among your functions yet must be loaded first: call \
         {LOAD_TOOLS} with the name (several at once if you need them), then call it.\n"
    );
    if described {
        for spec in catalogued {
            catalogue.push_str(&format!("- {}: {}\n", spec.name, first_sentence(&spec.description)));
        }
    } else {
        catalogue.push_str(&names.join(", "));
    }
    Surface { offered: offered.into(), catalogue: catalogue.trim_end().to_owned() }
}

/// What the first request of a run sends for `all` under `settings`: the specs, and the
/// system message's catalogue section (empty when every tool is sent whole). For measuring
/// request sizes (`wright tool surface`).
pub fn first_request_tools(all: &[ToolSpec], settings: &ToolSettings) -> (Arc<[ToolSpec]>, String) {
    let surface = surface(all, settings, &Loaded::default(), true);
    (surface.offered, surface.catalogue)
}

/// The meta-tool's spec. Its names are an enum, so a grammar-constrained model can only
/// name tools that exist.
fn load_tools_spec(names: &[&str]) -> ToolSpec {
    ToolSpec {
        name: LOAD_TOOLS.to_owned(),
        description: "Load the full descriptions of tools listed under \"More tools\", so you can call them."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string", "enum": names}, "minItems": 1}},
            "required": ["names"],
        }),
        pauses: None,
        effects: wright_core::Effects::default(),
        // Loading a schema reads Wright's own list: nothing to approve.
        policy: wright_core::ToolPolicy::Allow,
        toolset: None,
    }
}

/// A `load_tools` call: adds the enabled tools it names to `loaded` and says what happened.
/// The result is the tools' full descriptions too, so a model that cannot see the next
/// request's tool list (the text protocol repeats it; native servers do) still learns them.
pub(crate) fn load(arguments: &Value, all: &[ToolSpec], settings: &ToolSettings, loaded: &mut Loaded) -> (Value, bool) {
    let names: Vec<&str> = arguments
        .get("names")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        return (
            json!({"error": "give the names of the tools to load: {\"names\": [\"tool_name\"]}", "category": "invalid_arguments"}),
            false,
        );
    }
    let mut done = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        match all.iter().find(|spec| spec.name == name && settings.enables(spec.toolset)) {
            Some(spec) => {
                loaded.insert(spec.name.clone());
                done.push(json!({"name": spec.name, "description": spec.description}));
            }
            None => unknown.push(name.to_owned()),
        }
    }
    let mut output = json!({"loaded": done, "note": "Call the loaded tools directly now."});
    if !unknown.is_empty() {
        let enabled = all.iter().filter(|spec| settings.enables(spec.toolset)).map(|spec| spec.name.as_str());
        let closest: Vec<Vec<String>> =
            unknown.iter().map(|name| wright_core::closest_names(name, enabled.clone())).collect();
        output["unknown"] = json!(unknown);
        output["closest"] = json!(closest);
    }
    let success = unknown.is_empty();
    (output, success)
}

/// The tool a call of an invented name meant, when that is unambiguous: of the enabled tools
/// with the closest names, the only one that takes the call's arguments exactly (valid, and
/// nothing it would ignore). A small model's `save_state(key, value)` is `set_state`; a
/// `remove_state(key)` fits both `get_state` and `delete_state`, so it is not guessed. A call
/// without arguments says too little to pick a tool by. The tool chosen runs under its own
/// policy, so a tool that asks before it runs still asks.
pub(crate) fn meant_tool(name: &str, arguments: &Value, all: &[ToolSpec], settings: &ToolSettings) -> Option<String> {
    if arguments.as_object().is_none_or(serde_json::Map::is_empty) {
        return None;
    }
    let enabled = || all.iter().filter(|spec| settings.enables(spec.toolset));
    if name == LOAD_TOOLS || enabled().any(|spec| spec.name == name) {
        return None;
    }
    let closest = wright_core::closest_names(name, enabled().map(|spec| spec.name.as_str()));
    let mut taking =
        enabled().filter(|spec| closest.contains(&spec.name)).filter(|spec| takes_exactly(&spec.parameters, arguments));
    let meant = taking.next()?;
    taking.next().is_none().then(|| meant.name.clone())
}

/// Whether a tool with `schema` takes `args` as they are: they are valid against it, and every
/// argument is one of its declared properties (an extra argument that validation lets through
/// would be silently dropped, so a tool that ignores part of a call is not the one it meant).
/// An invalid schema takes nothing.
fn takes_exactly(schema: &Value, args: &Value) -> bool {
    let Some(given) = args.as_object() else { return false };
    let declared = schema.get("properties").and_then(Value::as_object);
    let all_declared = given.keys().all(|name| declared.is_some_and(|declared| declared.contains_key(name)));
    all_declared && jsonschema::validator_for(schema).is_ok_and(|validator| validator.is_valid(args))
}

/// Words too common in requests to say which tool is meant.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "from", "your", "you", "this", "that", "what", "then", "into", "under", "called",
    "please", "tell", "use", "using", "can", "could", "would", "will", "have", "has", "are", "was", "its", "it's",
    "about", "there", "their", "them", "they", "all", "any", "some", "one", "two", "now", "just", "also", "my",
];

/// Words people use for one act, as cut by [`keywords`], and the word it is scored as: a person
/// "stores", "keeps" or "puts" what a tool's description "saves", and "removes" or "forgets"
/// what it "deletes". Without this, "store my shoe size in your key-value state" shares more
/// words with `delete_state` ("Delete a key from your key-value state") than with `set_state`.
const SAME_ACT: &[(&str, &[&str])] = &[
    ("save", &["store", "keep", "keeps", "put", "puts", "recor", "remem", "saves", "saved"]),
    ("delet", &["remov", "forge", "erase", "drop", "drops", "unset"]),
    // "Add the book to the table" is an insert; "add it to your notes" an append.
    ("add", &["adds", "added", "inser", "appen"]),
];

/// The verbs that start the names of tools that destroy or switch off (`delete_state`,
/// `disable_tool`): such a tool is chosen for a request only when the request says so.
const DESTRUCTIVE_VERBS: &[&str] = &["delete", "disable"];

/// The words of `text` that can name a tool: lowercase, at least three letters, not a
/// stopword, cut to five characters so `tables` meets `table` and `stored` meets `store`,
/// words for the same act scored as one ([`SAME_ACT`]), and a file's name as `file`.
pub(crate) fn keywords(text: &str) -> BTreeSet<String> {
    // A file's name says "file", not its stem: "create notes.md" is not about the notes.
    let names_file = text.split_whitespace().any(names_a_file);
    let text: String = text.split_whitespace().filter(|word| !names_a_file(word)).collect::<Vec<_>>().join(" ");
    let mut words: BTreeSet<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !STOPWORDS.contains(&word.as_str()))
        .map(|word| {
            let cut: String = word.chars().take(5).collect();
            let act = SAME_ACT.iter().find(|(_, said)| said.contains(&cut.as_str()));
            act.map_or(cut, |(act, _)| (*act).to_owned())
        })
        .collect();
    if names_file {
        words.insert("file".to_owned());
    }
    words
}

/// Extensions that make a word a file's name: "create notes.md" is about a file, not notes.
const FILE_EXTENSIONS: &[&str] = &[
    "txt", "md", "json", "csv", "tsv", "py", "js", "ts", "rs", "html", "css", "yaml", "yml", "toml", "sh", "log",
    "xml", "sql", "ini", "cfg",
];

/// Whether `word` (as written, punctuation around it allowed) is a file name like `todo.txt`.
fn names_a_file(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    word.rsplit_once('.').is_some_and(|(stem, extension)| {
        !stem.is_empty() && FILE_EXTENSIONS.contains(&extension.to_lowercase().as_str())
    })
}

/// Whether a request that says `wanted` may be about the tool `name`: a tool that destroys
/// or switches off only when the request names that act.
fn says_the_act_of(name: &str, wanted: &BTreeSet<String>) -> bool {
    let verb = name.split('_').next().unwrap_or(name);
    !DESTRUCTIVE_VERBS.contains(&verb) || keywords(verb).iter().all(|act| wanted.contains(act))
}

/// Up to `limit` tools of the catalogue that `message` (the person's request) is about, best
/// first: sent whole from the run's first request, so a small model that answers in prose
/// rather than call `load_tools` sees the schema it needs. A word of the message scores its
/// rarity among the catalogue's tools (`ln(1 + n/df)`), twice when it is part of the tool's
/// name; tools that share no word are never chosen. No model call: words only.
pub(crate) fn preselect(all: &[ToolSpec], settings: &ToolSettings, message: &str, limit: usize) -> Vec<String> {
    if limit == 0 || settings.loading == ToolLoading::All {
        return Vec::new();
    }
    let catalogue = |spec: &ToolSpec| !settings.always_loaded.contains(&spec.name);
    fitting(all, settings, message, limit, catalogue).into_iter().map(|spec| spec.name.clone()).collect()
}

/// Up to `limit` enabled tools that fit the person's request, with the one-line description
/// of each: what a call of an invented tool is told (its name is often no guide — a small
/// model's `add_book` is `db_sql`, its `compute_product` is the `run_sandbox_code` the person
/// named).
pub(crate) fn fitting_tools(all: &[ToolSpec], settings: &ToolSettings, message: &str, limit: usize) -> Value {
    let fitting = fitting(all, settings, message, limit, |_| true);
    json!(
        fitting
            .iter()
            .map(|spec| json!({"name": spec.name, "does": first_sentence(&spec.description)}))
            .collect::<Vec<_>>()
    )
}

/// The scoring of [`preselect`] over the enabled tools that `include` admits, best first.
pub(crate) fn fitting<'a>(
    all: &'a [ToolSpec],
    settings: &ToolSettings,
    message: &str,
    limit: usize,
    include: impl Fn(&ToolSpec) -> bool,
) -> Vec<&'a ToolSpec> {
    let wanted = keywords(message);
    let specs: Vec<&ToolSpec> = all
        .iter()
        .filter(|spec| settings.enables(spec.toolset) && include(spec) && says_the_act_of(&spec.name, &wanted))
        .collect();
    let words: Vec<(BTreeSet<String>, BTreeSet<String>)> =
        specs.iter().map(|spec| (keywords(&spec.name.replace('_', " ")), keywords(&spec.description))).collect();
    let mut scored: Vec<(f64, &ToolSpec)> =
        word_scores(&words, message).into_iter().zip(specs).filter(|(score, _)| *score > 0.0).collect();
    // Stable: equal scores keep the registry's order.
    scored.sort_by(|left, right| right.0.total_cmp(&left.0));
    scored.into_iter().take(limit).map(|(_, spec)| spec).collect()
}

/// How well each candidate — the words of its name and of its description — fits `message`:
/// a word of the message scores its rarity among the candidates (`ln(1 + n/df)`), twice when
/// it is part of the name. 0: no word shared.
pub(crate) fn word_scores(candidates: &[(BTreeSet<String>, BTreeSet<String>)], message: &str) -> Vec<f64> {
    let wanted = keywords(message);
    let count = candidates.len() as f64;
    candidates
        .iter()
        .map(|(name, description)| {
            wanted
                .iter()
                .map(|word| {
                    let weight = if name.contains(word) {
                        2.0
                    } else if description.contains(word) {
                        1.0
                    } else {
                        return 0.0;
                    };
                    let df = candidates.iter().filter(|(n, d)| n.contains(word) || d.contains(word)).count() as f64;
                    weight * (1.0 + count / df).ln()
                })
                .sum::<f64>()
        })
        .collect()
}

/// The first sentence of a description, at most [`CATALOGUE_LINE_CHARS`] characters.
fn first_sentence(description: &str) -> String {
    let sentence = description.split(". ").next().unwrap_or(description).trim_end_matches('.');
    let mut line: String = sentence.chars().take(CATALOGUE_LINE_CHARS).collect();
    if line.len() < sentence.len() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use wright_core::Toolset;

    use super::*;

    fn spec(name: &str, toolset: Option<Toolset>) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: format!("Does {name}. More detail here."),
            parameters: json!({"type": "object"}),
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: wright_core::ToolPolicy::Allow,
            toolset,
        }
    }

    fn all() -> Vec<ToolSpec> {
        vec![
            spec("get_state", Some(Toolset::State)),
            spec("set_state", Some(Toolset::State)),
            spec("browser_click", Some(Toolset::Browser)),
            spec("my_tool", None),
        ]
    }

    fn names(surface: &Surface) -> Vec<&str> {
        surface.offered.iter().map(|spec| spec.name.as_str()).collect()
    }

    #[test]
    fn all_sends_every_enabled_tool_and_no_catalogue() {
        let settings = ToolSettings { loading: ToolLoading::All, ..ToolSettings::default() };
        let surface = surface(&all(), &settings, &Loaded::default(), true);
        assert_eq!(names(&surface), ["get_state", "set_state", "my_tool"], "browser is off by default");
        assert!(surface.catalogue.is_empty());
    }

    #[test]
    fn on_demand_sends_a_catalogue_and_the_loaded_tools() {
        let settings = ToolSettings { always_loaded: vec!["get_state".into()], ..ToolSettings::default() };
        let mut loaded = Loaded::default();
        let first = surface(&all(), &settings, &loaded, true);
        assert_eq!(names(&first), ["get_state", LOAD_TOOLS]);
        assert_eq!(
            first.catalogue.lines().skip(2).collect::<Vec<_>>(),
            ["- set_state: Does set_state", "- my_tool: Does my_tool"]
        );
        assert_eq!(
            first.offered[1].parameters["properties"]["names"]["items"]["enum"],
            json!(["set_state", "my_tool"])
        );

        let (output, success) =
            load(&json!({"names": ["set_state", "browser_click", "nope"]}), &all(), &settings, &mut loaded);
        assert!(!success);
        assert_eq!(output["loaded"][0]["name"], "set_state");
        assert_eq!(
            output["unknown"],
            json!(["browser_click", "nope"]),
            "a tool of a toolset that is off is not loaded"
        );
        // A small model's profile: the catalogue only names the tools.
        let named = surface(&all(), &settings, &Loaded::default(), false);
        assert!(named.catalogue.ends_with("then call it.\nset_state, my_tool"), "{}", named.catalogue);
        let second = surface(&all(), &settings, &loaded, true);
        // Loaded after the start: after the meta-tool, so the list before it stays as sent.
        assert_eq!(names(&second), ["get_state", LOAD_TOOLS, "set_state"]);
        // The catalogue and the meta-tool do not change as tools load: they stay cached.
        assert_eq!(second.catalogue, first.catalogue);
        assert_eq!(second.offered[1], first.offered[1]);

        load(&json!({"names": ["my_tool"]}), &all(), &settings, &mut loaded);
        let third = surface(&all(), &settings, &loaded, true);
        assert_eq!(names(&third), ["get_state", LOAD_TOOLS, "set_state", "my_tool"]);
        // Loaded when the run started: before the meta-tool.
        let mut at_start = Loaded::from(["my_tool"]);
        at_start.started();
        at_start.insert("set_state".into());
        assert_eq!(
            names(&surface(&all(), &settings, &at_start, true)),
            ["get_state", "my_tool", LOAD_TOOLS, "set_state"]
        );
        assert_eq!(third.catalogue, first.catalogue);
    }

    #[test]
    fn a_load_without_names_says_how() {
        let (output, success) = load(&json!({}), &all(), &ToolSettings::default(), &mut Loaded::default());
        assert!(!success && output["error"].as_str().unwrap().contains("names"));
    }

    #[test]
    fn the_request_preselects_the_tools_it_names() {
        let mut tools = all();
        tools[0].description = "Read a value from your persistent key-value state.".into();
        tools[1].description = "Save any JSON value under a key in your persistent key-value state.".into();
        tools.push(ToolSpec {
            description: "Run one SQL statement on your own SQLite database: tables, rows and columns.".into(),
            ..spec("db_sql", Some(Toolset::Database))
        });
        let settings = ToolSettings::default();
        assert_eq!(
            preselect(&tools, &settings, "Create a table called books in your database.", 2),
            ["db_sql"],
            "only tools that share a word"
        );
        assert_eq!(
            preselect(&tools, &settings, "Save my favourite colour in your state: set it under the key colour", 1),
            ["set_state"],
            "a word of the name counts twice"
        );
        assert!(preselect(&tools, &settings, "hello there", 3).is_empty());
        // What a real 1.5B did: asked to "store" a value in its "key-value state", it was sent
        // `delete_state` first (more words shared) and called it.
        tools.push(ToolSpec {
            description: "Delete a key from your key-value state.".into(),
            ..spec("delete_state", Some(Toolset::State))
        });
        let store = "Please store my shoe size, 42, in your key-value state as shoe_size.";
        assert_eq!(preselect(&tools, &settings, store, 1), ["set_state"], "store is the act of saving");
        assert!(!preselect(&tools, &settings, store, 5).contains(&"delete_state".to_owned()), "nobody asked to delete");
        assert_eq!(
            preselect(&tools, &settings, "Remove the key shoe_size from your state", 1),
            ["delete_state"],
            "a request that says it"
        );
        assert!(
            preselect(&tools, &settings, "Click the browser button", 3).is_empty(),
            "tools of a toolset that is off are never chosen"
        );
        assert!(preselect(&tools, &settings, "set state", 0).is_empty());
        let all_loading = ToolSettings { loading: ToolLoading::All, ..ToolSettings::default() };
        assert!(preselect(&tools, &all_loading, "set state", 3).is_empty(), "everything is sent anyway");
    }

    /// The messages of the real-model evaluations (and their paraphrases), against the real
    /// built-in specs and the default toolsets: the tool each needs is among the two schemas
    /// preselected, and no tool that destroys is sent when nobody asked for it.
    #[test]
    fn the_evaluations_messages_preselect_the_tool_they_need_with_the_real_specs() {
        let specs = crate::engine::scripted_tools::builtin_specs();
        let settings = ToolSettings::default();
        let cases = [
            ("Please store my shoe size, 42, in your key-value state as shoe_size.", "set_state"),
            ("Store true under the state key newsletter_opt_in.", "set_state"),
            ("Keep in your state that my favourite drink is tea (key favourite_drink).", "set_state"),
            ("Put the list [\"milk\", \"eggs\"] in state under shopping_list.", "set_state"),
            ("Save the number 3 as state key kids_count.", "set_state"),
            ("Make a database table books (title TEXT) and insert the book Dune.", "db_sql"),
            ("Write a file todo.txt in your workspace containing the line buy bread.", "file_write"),
            ("Create notes.md in the workspace with the text hello world.", "file_write"),
            ("Calculate 2 to the power of 20 with run_sandbox_code.", "run_sandbox_code"),
            ("Schedule a reminder every day at 8:00 to drink water.", "schedule"),
            ("Add to your learned notes that I prefer metric units.", "edit_learned_notes"),
            ("Add the book Dune by Frank Herbert to the books table in your database.", "db_sql"),
            ("Add the sentence 'Always answer in English.' to the end of your system prompt.", "edit_system_prompt"),
        ];
        for (message, needed) in cases {
            let picks = preselect(&specs, &settings, message, 2);
            assert!(picks.iter().any(|pick| pick == needed), "{message}: {picks:?}");
            assert!(picks.iter().all(|pick| !pick.starts_with("delete_")), "{message}: {picks:?}");
        }
    }

    #[test]
    fn catalogue_lines_are_short() {
        assert_eq!(first_sentence("Reads it. Then more."), "Reads it");
        assert_eq!(first_sentence(&"x".repeat(200)).chars().count(), CATALOGUE_LINE_CHARS + 1);
    }
}
