//! Issue 31, end to end against the real binary and the scripted provider: skills written by
//! the agent's tools, listed in the system message, loaded, edited, versioned and rolled back;
//! a folder in the Agent Skills layout imported with `wright skill import` and through the API,
//! exported again; a small-model run whose first request already carries the matching skill;
//! the agent reading its own execution log with filters (and `/codefailures` per
//! conversation); the agent's notes on its database tables in its context; a skill published
//! to the marketplace and installed into another agent, off until the person switches it on.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use wright_llm::testing::{FakeProvider, Turn};

use crate::model_loop::{Server, TOKEN, WRIGHT, Wire, calls, results};

/// The system message of the `index`th request the fake received.
fn system_of(fake: &FakeProvider, index: usize) -> String {
    let body = &fake.requests()[index].body;
    let content = &body["messages"][0]["content"];
    match content {
        Value::String(text) => text.clone(),
        // Content given as parts.
        Value::Array(parts) => parts.iter().filter_map(|part| part["text"].as_str()).collect::<Vec<_>>().join(""),
        other => panic!("no system message in {other}"),
    }
}

/// Every schema sent whole, so loading a tool does not change the system message.
fn all_tools_config(dir: &Path, extra: &str) {
    std::fs::write(dir.join("config.toml"), format!("[agents.default.tools]\nloading = \"all\"\n{extra}")).unwrap();
}

async fn put(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let response =
        server.client.put(format!("{}{path}", server.url)).bearer_auth(TOKEN).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn delete(server: &Server, path: &str) -> u16 {
    server.client.delete(format!("{}{path}", server.url)).bearer_auth(TOKEN).send().await.unwrap().status().as_u16()
}

async fn status_of(server: &Server, path: &str) -> u16 {
    server.client.get(format!("{}{path}", server.url)).bearer_auth(TOKEN).send().await.unwrap().status().as_u16()
}

const EXPENSE_BODY: &str = "# Steps\n1. Query the expenses table for the month.\n2. Sum by category.\n";

#[tokio::test]
async fn a_skill_written_by_the_agent_is_listed_loaded_edited_versioned_and_rolled_back() {
    let wire = Wire::Openai;
    let mut script = calls(
        wire,
        vec![(
            "write_skill",
            json!({
                "name": "expense-report",
                "description": "Summarise the month's expenses from the expenses table into a report.",
                "body": EXPENSE_BODY,
                "reason": "the person showed me how"
            }),
        )],
    );
    script.push(Turn::text("Written."));
    script.extend(calls(wire, vec![("load_skill", json!({"name": "expense-report"}))]));
    script.push(Turn::text("Here is your report."));
    script.extend(calls(
        wire,
        vec![(
            "edit_skill",
            json!({
                "operation": "find_replace",
                "name": "expense-report",
                "find": "1. Query the expenses table",
                "replace": "1. SELECT the month's rows from the expenses table",
                "reason": "the person prefers SQL words"
            }),
        )],
    ));
    script.push(Turn::text("Changed."));
    script.push(Turn::text("Still here."));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    all_tools_config(dir.path(), "");
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;

    let detail = server.say(&id, "Write down how you make my expense report as a skill").await;
    let written = &results(&detail)[0]["output"];
    assert_eq!((written["version"].as_i64(), written["created"].as_bool()), (Some(1), Some(true)), "{detail}");
    assert!(!system_of(&fake, 0).contains("## Your skills"), "no skills yet: {}", system_of(&fake, 0));

    let detail = server.say(&id, "Make my expense report for November").await;
    let system = system_of(&fake, 2);
    assert!(
        system.contains(
            "## Your skills\nLoad a skill with load_skill before a task it fits, then follow its instructions:\n\
             - expense-report: Summarise the month's expenses from the expenses table into a report."
        ),
        "{system}"
    );
    let loaded = &results(&detail)[1]["output"];
    assert_eq!(loaded["instructions"], EXPENSE_BODY, "{loaded}");
    assert_eq!(loaded["files"], json!([]));

    server.say(&id, "Say SELECT in the first step").await;
    let skill = server.get("/api/agents/default/skills/expense-report").await;
    assert_eq!(skill["version"], 2, "{skill}");
    assert!(skill["body"].as_str().unwrap().starts_with("# Steps\n1. SELECT the month's rows"), "{skill}");
    assert!(skill["content"].as_str().unwrap().starts_with("---\nname: expense-report\n"), "{skill}");

    let versions = server.get("/api/agents/default/skills/expense-report/versions").await;
    let authors: Vec<(i64, &str, &str)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (entry["version"].as_i64().unwrap(), entry["author"].as_str().unwrap(), entry["reason"].as_str().unwrap())
        })
        .collect();
    assert_eq!(authors, [(2, "agent", "the person prefers SQL words"), (1, "agent", "the person showed me how")]);
    assert_eq!(versions[0]["conversation_id"], id.as_str(), "{versions}");
    let diff = server.get("/api/agents/default/skills/expense-report/diff?from=1&to=2").await;
    let diff = diff["diff"].as_str().unwrap();
    assert!(diff.contains("-1. Query the expenses table") && diff.contains("+1. SELECT the month's rows"), "{diff}");

    let (status, rolled) =
        server.post("/api/agents/default/skills/expense-report/rollback", json!({"version": 1})).await;
    assert_eq!((status, rolled["version"].as_i64()), (200, Some(3)), "{rolled}");
    let skill = server.get("/api/agents/default/skills/expense-report").await;
    assert_eq!(skill["body"], EXPENSE_BODY, "{skill}");
    let versions = server.get("/api/agents/default/skills/expense-report/versions").await;
    assert_eq!(
        (versions[0]["author"].as_str(), versions[0]["reason"].as_str()),
        (Some("rollback"), Some("rollback to version 1"))
    );

    // A delete is a version too: the skill leaves the list and the system message, and a
    // rollback brings it back.
    assert_eq!(delete(&server, "/api/agents/default/skills/expense-report?reason=tidy").await, 200);
    assert_eq!(status_of(&server, "/api/agents/default/skills/expense-report").await, 404);
    assert_eq!(server.get("/api/agents/default/skills").await, json!([]));
    server.say(&id, "anything else?").await;
    assert!(!system_of(&fake, 6).contains("expense-report"), "{}", system_of(&fake, 6));
    let (status, restored) =
        server.post("/api/agents/default/skills/expense-report/rollback", json!({"version": 3})).await;
    assert_eq!((status, restored["version"].as_i64()), (200, Some(5)), "{restored}");
    assert_eq!(server.get("/api/agents/default/skills").await[0]["name"], "expense-report");
}

/// A realistic skill folder as published in the Agent Skills layout: front matter with a
/// license and nested metadata, a reference file, a script (never run) and a binary asset.
fn write_fixture(root: &Path) -> std::path::PathBuf {
    let folder = root.join("downloads/pdf-forms");
    for sub in ["references", "scripts", "assets"] {
        std::fs::create_dir_all(folder.join(sub)).unwrap();
    }
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: pdf-forms\ndescription: Fill in PDF forms from the person's details. Use when the person asks to \
         fill, complete or check a PDF form.\nlicense: Apache-2.0\nmetadata:\n  author: example-org\n  version: \"1.0\"\n\
         ---\n\n# Filling PDF forms\n\n1. Read `references/fields.md` for the field names.\n2. Do not run \
         `scripts/fill.py` on the host; write the values with your own tools.\n",
    )
    .unwrap();
    std::fs::write(folder.join("references/fields.md"), "# Fields\n\n- name: full legal name\n- tax_id: 11 digits\n")
        .unwrap();
    std::fs::write(folder.join("scripts/fill.py"), "import sys\nprint('filling', sys.argv[1])\n").unwrap();
    std::fs::write(folder.join("assets/logo.png"), [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe])
        .unwrap();
    folder
}

fn wright(data_dir: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(WRIGHT)
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_clear()
        .env("WRIGHT_TOKEN", TOKEN)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

#[tokio::test]
async fn a_skill_folder_is_imported_by_the_cli_and_the_api_loaded_switched_off_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    all_tools_config(dir.path(), "");
    let folder = write_fixture(dir.path());
    let (ok, said) = wright(dir.path(), &["skill", "import", folder.to_str().unwrap()]);
    assert!(ok, "{said}");
    assert!(said.contains("skill pdf-forms of default is now version 1"), "{said}");
    assert!(said.contains("left out: assets/logo.png (not text"), "{said}");

    let wire = Wire::Openai;
    let mut script = calls(wire, vec![("load_skill", json!({"name": "pdf-forms", "resource": "scripts/fill.py"}))]);
    script.push(Turn::text("I will fill it with my own tools."));
    script.push(Turn::text("Only the PDF skill now."));
    let fake = FakeProvider::start(script).await;
    let server = Server::start(dir.path(), &fake, wire);
    let listed = server.get("/api/agents/default/skills").await;
    assert_eq!(listed[0]["name"], "pdf-forms", "{listed}");
    assert_eq!(listed[0]["resources"], json!(["references/fields.md", "scripts/fill.py"]));
    let versions = server.get("/api/agents/default/skills/pdf-forms/versions").await;
    assert_eq!(versions[0]["author"], "admin");
    assert!(versions[0]["reason"].as_str().unwrap().starts_with("imported from "), "{versions}");

    // Another skill, as an API client sends a folder: its files under the folder's name.
    let (status, imported) = server
        .post(
            "/api/agents/default/skills/import",
            json!({"files": {
                "letter-style/SKILL.md": "---\nname: letter-style\ndescription: 'Write formal letters the way the person likes: short, no ''Dear Sir''.'\n---\nKeep it to five sentences.\n",
                "letter-style/examples/landlord.md": "Hello Ms Berg, ...",
            }}),
        )
        .await;
    assert_eq!((status, imported["name"].as_str(), imported["version"].as_i64()), (200, Some("letter-style"), Some(1)));
    let (status, refused) = server
        .post(
            "/api/agents/default/skills/import",
            json!({"files": {"SKILL.md": "---\nname: Letter_Style\ndescription: x\n---\n"}}),
        )
        .await;
    assert!((400..500).contains(&status), "{status} {refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("not a skill name"), "{refused}");
    let (status, _) = server
        .post("/api/agents/default/skills", json!({"content": "---\nname: letter-style\ndescription: again\n---\n"}))
        .await;
    assert_eq!(status, 409, "a skill of that name exists");

    let id = server.conversation().await;
    let detail = server.say(&id, "Please fill in my tax PDF form").await;
    let system = system_of(&fake, 0);
    assert!(system.contains("- pdf-forms: Fill in PDF forms from the person's details."), "{system}");
    assert!(
        system.contains("- letter-style: Write formal letters the way the person likes: short, no 'Dear Sir'."),
        "{system}"
    );
    // The script is read as text, never run.
    let read = &results(&detail)[0]["output"];
    assert_eq!(read["content"], "import sys\nprint('filling', sys.argv[1])\n", "{read}");

    let (status, _) =
        put(&server, "/api/agents/default/skills/letter-style", json!({"enabled": false, "reason": "not now"})).await;
    assert_eq!(status, 200);
    server.say(&id, "and now?").await;
    let system = system_of(&fake, 2);
    assert!(system.contains("pdf-forms") && !system.contains("letter-style"), "{system}");

    let exported = server.get("/api/agents/default/skills/pdf-forms/export").await;
    assert_eq!(
        exported["files"]["references/fields.md"],
        std::fs::read_to_string(folder.join("references/fields.md")).unwrap()
    );
    let out = dir.path().join("exported");
    let (ok, said) = wright(dir.path(), &["skill", "export", "pdf-forms", out.to_str().unwrap()]);
    assert!(ok, "{said}");
    for file in ["SKILL.md", "references/fields.md", "scripts/fill.py"] {
        assert_eq!(
            std::fs::read_to_string(out.join("pdf-forms").join(file)).unwrap(),
            std::fs::read_to_string(folder.join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(!out.join("pdf-forms/assets/logo.png").exists());

    // The same folder zipped by Python's zipfile (deflated), as skills are shared: through the
    // API's upload and the CLI. The imported skill is the same, as a new version.
    let archive = dir.path().join("pdf-forms.zip");
    let zipped = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile, pathlib\n\
             root = pathlib.Path(sys.argv[1])\n\
             with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as archive:\n\
             \x20   for path in sorted(root.rglob('*')):\n\
             \x20       archive.write(path, path.relative_to(root.parent))\n",
        )
        .arg(&folder)
        .arg(&archive)
        .status()
        .unwrap();
    assert!(zipped.success());
    let response = server
        .client
        .post(format!("{}/api/agents/default/skills/import-zip?reason=shared%20as%20a%20zip", server.url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/zip")
        .body(std::fs::read(&archive).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let imported: Value = response.json().await.unwrap();
    assert_eq!((imported["name"].as_str(), imported["version"].as_i64()), (Some("pdf-forms"), Some(2)), "{imported}");
    assert_eq!(imported["skipped"], json!(["assets/logo.png (not text: resources are read as text, never run)"]));
    let skill = server.get("/api/agents/default/skills/pdf-forms").await;
    assert_eq!(skill["content"], std::fs::read_to_string(folder.join("SKILL.md")).unwrap().as_str());
    assert_eq!(skill["resources"].as_object().unwrap().len(), 2, "{skill}");
    let (ok, said) = wright(dir.path(), &["skill", "import", archive.to_str().unwrap(), "--agent", "default"]);
    assert!(ok && said.contains("skill pdf-forms of default is now version 3"), "{said}");
    let not_zip = server
        .client
        .post(format!("{}/api/agents/default/skills/import-zip", server.url))
        .bearer_auth(TOKEN)
        .body("not a zip")
        .send()
        .await
        .unwrap();
    assert_eq!(not_zip.status().as_u16(), 400);
}

#[tokio::test]
async fn a_small_model_run_carries_the_matching_skill_in_its_first_request() {
    let fake = FakeProvider::start(vec![Turn::text("Here is the report."), Turn::text("Hello!")]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[model_profiles.fake-model]\nprofile = \"small_local\"\n").unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Compatible);
    let profile = server.get("/api/agents/default/model/profile").await;
    assert_eq!(profile["settings"]["preload_skill_tokens"], 1024, "{profile}");
    for (name, description, body) in [
        ("expense-report", "Summarise the month's expenses from the expenses table into a report.", EXPENSE_BODY),
        ("reading-list", "Keep the person's books to read in a table, with authors.", "Insert one row per book.\n"),
    ] {
        let content = format!("---\nname: {name}\ndescription: {description}\n---\n{body}");
        let (status, created) = server.post("/api/agents/default/skills", json!({"content": content})).await;
        assert_eq!(status, 201, "{created}");
    }

    let id = server.conversation().await;
    server.say(&id, "Make my expense report for November").await;
    assert_eq!(fake.requests().len(), 1, "no extra model turn to load the skill");
    let system = system_of(&fake, 0);
    assert!(
        system.contains(&format!(
            "## Skill expense-report (loaded for this request: follow it)\n{}",
            EXPENSE_BODY.trim()
        )),
        "{system}"
    );
    assert!(!system.contains("Insert one row per book"), "only the matching skill: {system}");

    let other = server.conversation().await;
    server.say(&other, "hello there").await;
    let system = system_of(&fake, 1);
    assert!(!system.contains("(loaded for this request"), "{system}");
    assert!(system.contains("- expense-report: "), "the list is there all the same: {system}");
}

#[tokio::test]
async fn the_agent_reads_its_own_execution_log_with_filters_and_codefailures_reads_one_conversation() {
    let wire = Wire::Openai;
    let mut script = calls(
        wire,
        vec![("db_sql", json!({"sql": "SELEC nothing"})), ("set_state", json!({"key": "colour", "value": "green"}))],
    );
    script.push(Turn::text("One failed."));
    script.extend(calls(
        wire,
        vec![
            ("read_execution_log", json!({"success": false})),
            ("read_execution_log", json!({"tool": "set_state"})),
            ("read_execution_log", json!({"since": "2999-01-01"})),
            ("read_execution_log", json!({"error_category": "nonsense"})),
        ],
    ));
    script.push(Turn::text("Read."));
    script.extend(calls(wire, vec![("set_state", json!({"key": "size", "value": 3}))]));
    script.extend(calls(wire, vec![("read_execution_log", json!({"scope": "conversation"}))]));
    script.push(Turn::text("Only this conversation."));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    all_tools_config(dir.path(), "");
    let server = Server::start(dir.path(), &fake, wire);
    let first = server.conversation().await;
    let detail = server.say(&first, "Run a broken query and save my colour").await;
    assert_eq!(results(&detail)[0]["success"], false, "{detail}");
    let failed = server.get("/api/agents/default/executions?success=false").await;
    let category = failed[0]["error_category"].as_str().unwrap().to_owned();

    let detail = server.say(&first, "What went wrong before?").await;
    let read = results(&detail);
    let failures = &read[2]["output"];
    assert_eq!(failures["count"], 1, "{failures}");
    let failure = &failures["executions"][0];
    assert_eq!((failure["tool"].as_str(), failure["success"].as_bool()), (Some("db_sql"), Some(false)), "{failure}");
    assert_eq!(failure["error_category"], category.as_str());
    assert_eq!(failure["args"], json!({"sql": "SELEC nothing"}));
    assert_eq!(failure["conversation_id"], first.as_str());
    let by_tool = &read[3]["output"];
    assert_eq!((by_tool["count"].as_i64(), by_tool["executions"][0]["tool"].as_str()), (Some(1), Some("set_state")));
    assert_eq!(read[4]["output"]["count"], 0, "nothing after 2999: {}", read[4]);
    assert_eq!(read[5]["success"], false, "an unknown category is refused: {}", read[5]);
    assert!(read[5]["output"]["error"].as_str().unwrap().contains("unknown error_category"), "{}", read[5]);

    let second = server.conversation().await;
    let detail = server.say(&second, "Save my size, then show me only what you did here").await;
    let here = &results(&detail)[1]["output"];
    assert_eq!(here["count"], 1, "only this conversation's call: {here}");
    assert_eq!(here["executions"][0]["tool"], "set_state");

    // The same filter in the person's command.
    let (status, reply) = server
        .post(&format!("/api/conversations/{second}/messages"), json!({"text": "/codefailures conversation"}))
        .await;
    assert_eq!((status, reply["reply"].as_str()), (200, Some("No recent failures! 🎉")), "{reply}");
    let (status, reply) =
        server.post(&format!("/api/conversations/{first}/messages"), json!({"text": "/codefailures 5 session"})).await;
    assert_eq!(status, 200);
    assert!(reply["reply"].as_str().unwrap().contains("❌ db_sql"), "{reply}");
    let executions = server.get(&format!("/api/agents/default/executions?conversation_id={second}")).await;
    assert_eq!(executions.as_array().unwrap().len(), 2, "set_state and read_execution_log: {executions}");
}

#[tokio::test]
async fn the_agents_notes_on_its_tables_reach_its_context_versioned_like_its_notes() {
    let wire = Wire::Openai;
    let mut script =
        calls(wire, vec![("db_sql", json!({"sql": "CREATE TABLE expenses (id INTEGER PRIMARY KEY, amount REAL)"}))]);
    script.extend(calls(
        wire,
        vec![(
            "describe_db_table",
            json!({"table": "expenses", "purpose": "one row per expense the person reports, amount in euros", "reason": "new table"}),
        )],
    ));
    script.push(Turn::text("Table made."));
    script.extend(calls(wire, vec![("db_schema", json!({}))]));
    script.push(Turn::text("It holds expenses."));
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    all_tools_config(dir.path(), "");
    let server = Server::start(dir.path(), &fake, wire);
    let id = server.conversation().await;
    let detail = server.say(&id, "Make a table for my expenses").await;
    assert_eq!(results(&detail)[1]["output"]["version"], 2, "{detail}");

    let detail = server.say(&id, "What is in my database?").await;
    let system = system_of(&fake, 3);
    assert!(system.contains("## Your database\nexpenses"), "{system}");
    assert!(
        system.contains(
            "What each table is for (your notes, describe_db_table):\n- expenses: one row per expense the person reports, amount in euros"
        ),
        "{system}"
    );
    let schema = &results(&detail)[2]["output"];
    assert_eq!(
        schema["table_notes"], "- expenses: one row per expense the person reports, amount in euros",
        "{schema}"
    );

    let notes = server.get("/api/agents/default/documents/db_notes").await;
    assert_eq!(notes["version"], 2, "{notes}");
    let versions = server.get("/api/agents/default/documents/db_notes/versions").await;
    assert_eq!((versions[0]["author"].as_str(), versions[0]["reason"].as_str()), (Some("agent"), Some("new table")));
    let (status, _) = server.post("/api/agents/default/documents/db_notes/rollback", json!({"version": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(server.get("/api/agents/default/documents/db_notes").await["content"], "");
}

#[tokio::test]
async fn a_skill_from_the_marketplace_is_pinned_by_hash_and_off_until_switched_on() {
    let fake = FakeProvider::start(vec![Turn::text("No skill yet."), Turn::text("Now I have it.")]).await;
    let dir = tempfile::tempdir().unwrap();
    all_tools_config(dir.path(), "");
    let server = Server::start(dir.path(), &fake, Wire::Openai);
    let content = format!(
        "---\nname: expense-report\ndescription: Summarise the month's expenses into a report.\n---\n{EXPENSE_BODY}"
    );
    let (status, _) = server
        .post(
            "/api/agents/default/skills",
            json!({"content": content, "resources": {"template.md": "| category | total |"}}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, published) = server
        .post("/api/market/publish", json!({"agent": "default", "kind": "skill", "name": "expense-report"}))
        .await;
    assert_eq!(status, 200, "{published}");
    let hash = published["hash"].as_str().unwrap().to_owned();
    let listing = server.get("/api/market/listings/skill/expense-report").await;
    assert_eq!(listing["versions"][0]["bundle"]["content"], content.as_str(), "{listing}");
    assert_eq!(listing["listing"]["latest_hash"], hash.as_str());

    let (status, _) = server.post("/api/agents", json!({"id": "shopper"})).await;
    assert_eq!(status, 201);
    let (status, installed) = server
        .post("/api/market/install", json!({"agent": "shopper", "kind": "skill", "listing": "expense-report"}))
        .await;
    assert_eq!(status, 200, "{installed}");
    assert_eq!((installed["enabled"].as_bool(), installed["hash"].as_str()), (Some(false), Some(hash.as_str())));
    let skill = server.get("/api/agents/shopper/skills/expense-report").await;
    assert_eq!(
        (skill["enabled"].as_bool(), skill["content"].as_str()),
        (Some(false), Some(content.as_str())),
        "{skill}"
    );
    assert_eq!(skill["resources"], json!({"template.md": "| category | total |"}));
    let versions = server.get("/api/agents/shopper/skills/expense-report/versions").await;
    assert_eq!(versions[0]["author"], "install");
    assert_eq!(versions[0]["reason"], format!("installed expense-report v1 (sha256 {hash})").as_str());

    let (status, created) = server.post("/api/agents/shopper/conversations", json!({"title": "shop"})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    server.say(&id, "Make my expense report").await;
    assert!(!system_of(&fake, 0).contains("expense-report"), "not listed before review: {}", system_of(&fake, 0));
    let (status, _) =
        put(&server, "/api/agents/shopper/skills/expense-report", json!({"enabled": true, "reason": "read it"})).await;
    assert_eq!(status, 200);
    server.say(&id, "Make my expense report").await;
    assert!(system_of(&fake, 1).contains("- expense-report: Summarise"), "{}", system_of(&fake, 1));
    let (status, again) = server
        .post("/api/market/install", json!({"agent": "shopper", "kind": "skill", "listing": "expense-report"}))
        .await;
    assert!((400..500).contains(&status), "{status} {again}");
}
