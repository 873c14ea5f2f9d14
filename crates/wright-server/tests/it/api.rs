//! The API router, called in process with `tower::ServiceExt::oneshot`.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use wright_server::token::Auth;
use wright_server::{AppState, Config};

const TOKEN: &str = "test-token";

struct Fixture {
    _dir: tempfile::TempDir,
    state: AppState,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::load(dir.path()).unwrap();
        let state = AppState::open(config, Auth::new(TOKEN.into()), wright_server::domain::models::Models::none())
            .await
            .unwrap();
        Self { _dir: dir, state }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        auth: Option<(&str, String)>,
    ) -> (StatusCode, Value, axum::http::HeaderMap) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some((name, value)) = auth {
            request = request.header(name, value);
        }
        let body = match body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(value.to_string())
            }
            None => Body::empty(),
        };
        let response = wright_server::api::app(self.state.clone()).oneshot(request.body(body).unwrap()).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value, headers)
    }

    /// Only the status: an event stream's body never ends.
    async fn status(&self, method: Method, path: &str, auth: Option<(&str, String)>) -> StatusCode {
        let mut request = Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, "application/json");
        if let Some((name, value)) = auth {
            request = request.header(name, value);
        }
        let response =
            wright_server::api::app(self.state.clone()).oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
        response.status()
    }

    async fn authed(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, value, _) =
            self.send(method, path, body, Some(("authorization", format!("Bearer {TOKEN}")))).await;
        (status, value)
    }
}

/// Every (method, path) in the OpenAPI document, with path parameters filled in.
fn every_route() -> Vec<(Method, String)> {
    let document = serde_json::to_value(wright_server::api::openapi()).unwrap();
    let mut routes = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{agent}", "default")
            .replace("{kind}", "system_prompt")
            .replace("{version}", "1")
            .replace("{key}", "k")
            .replace("{name}", "get_state");
        for method in item.as_object().unwrap().keys() {
            routes.push((Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(), concrete.clone()));
        }
    }
    routes
}

#[tokio::test]
async fn the_openapi_document_covers_the_routes_the_issue_names() {
    let routes = every_route();
    assert!(routes.len() >= 19, "{routes:?}");
    for expected in [
        (Method::GET, "/api/health"),
        (Method::POST, "/api/auth/login"),
        (Method::GET, "/api/agents"),
        (Method::POST, "/api/agents"),
        (Method::GET, "/api/agents/default/documents/system_prompt"),
        (Method::POST, "/api/agents/default/documents/system_prompt"),
        (Method::GET, "/api/agents/default/documents/system_prompt/versions"),
        (Method::GET, "/api/agents/default/documents/system_prompt/versions/1"),
        (Method::GET, "/api/agents/default/documents/system_prompt/diff"),
        (Method::POST, "/api/agents/default/documents/system_prompt/rollback"),
        (Method::GET, "/api/agents/default/state"),
        (Method::GET, "/api/agents/default/state/k"),
        (Method::PUT, "/api/agents/default/state/k"),
        (Method::DELETE, "/api/agents/default/state/k"),
        (Method::GET, "/api/agents/default/tools"),
        (Method::POST, "/api/agents/default/tools/get_state/invoke"),
        (Method::GET, "/api/openapi.json"),
    ] {
        assert!(
            routes.iter().any(|(method, path)| *method == expected.0 && path == expected.1),
            "{expected:?} missing"
        );
    }
}

#[tokio::test]
async fn every_route_but_health_and_login_refuses_a_request_without_the_token() {
    let fixture = Fixture::new().await;
    for (method, path) in every_route() {
        let public = path == "/api/health" || path == "/api/auth/login";
        let (status, body, headers) = fixture.send(method.clone(), &path, Some(json!({})), None).await;
        if public {
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {path} must be public");
            continue;
        }
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} answered without the token");
        assert_eq!(body["error"]["code"], "unauthorized");
        assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
        let (status, ..) =
            fixture.send(method.clone(), &path, Some(json!({})), Some(("authorization", "Bearer wrong".into()))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} accepted a wrong token");
        let (status, ..) = fixture
            .send(method.clone(), &path, Some(json!({})), Some(("cookie", "wright_session=forged".into())))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} accepted a forged cookie");
        let (status, ..) = fixture
            .send(method.clone(), &path, Some(json!({})), Some(("cookie", format!("wright_session={TOKEN}"))))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} accepted the raw token as a cookie");
        let status = fixture.status(method.clone(), &path, Some(("authorization", format!("Bearer {TOKEN}")))).await;
        assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {path} refused the right token");
    }
}

#[tokio::test]
async fn every_response_carries_the_frame_limiting_policy() {
    let fixture = Fixture::new().await;
    for path in ["/api/health", "/api/agents", "/nothing"] {
        let (_, _, headers) = fixture.send(Method::GET, path, None, None).await;
        let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.contains("frame-src 'none'") && policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
}

#[tokio::test]
async fn login_sets_a_strict_http_only_session_cookie_that_authorizes() {
    let fixture = Fixture::new().await;
    let (status, body, _) = fixture.send(Method::POST, "/api/auth/login", Some(json!({"token": "nope"})), None).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::UNAUTHORIZED, &json!("unauthorized")));
    let (status, _, headers) = fixture.send(Method::POST, "/api/auth/login", Some(json!({"token": TOKEN})), None).await;
    assert_eq!(status, StatusCode::OK);
    let cookie = headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains(TOKEN), "the cookie must not carry the token itself");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let (status, body, _) =
        fixture.send(Method::GET, "/api/agents", None, Some(("cookie", format!("theme=dark; {pair}")))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn errors_share_one_shape_for_bad_json_unknown_routes_and_bad_ids() {
    let fixture = Fixture::new().await;
    let response = wright_server::api::app(fixture.state.clone())
        .oneshot(
            Request::post("/api/agents")
                .header("authorization", format!("Bearer {TOKEN}"))
                .header("content-type", "application/json")
                .body(Body::from("{not json"))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "invalid_body");
    let (status, body) = fixture.authed(Method::GET, "/api/nothing/here", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let (status, body) = fixture.authed(Method::POST, "/api/agents", Some(json!({"id": "../etc"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().unwrap().contains("invalid agent id"));
    let (status, body) = fixture.authed(Method::GET, "/api/agents/ghost/documents/system_prompt", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let (status, body) = fixture.authed(Method::GET, "/api/agents/default/documents/diary", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = fixture.authed(Method::GET, "/api/agents/default/documents/system_prompt/versions/x", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn agents_can_be_listed_and_created() {
    let fixture = Fixture::new().await;
    let (status, body) =
        fixture.authed(Method::POST, "/api/agents", Some(json!({"id": "helper", "name": "Helper"}))).await;
    assert_eq!((status, &body["id"]), (StatusCode::CREATED, &json!("helper")));
    let (status, _) = fixture.authed(Method::POST, "/api/agents", Some(json!({"id": "helper"}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, body) = fixture.authed(Method::GET, "/api/agents", None).await;
    let ids: Vec<&str> = body.as_array().unwrap().iter().map(|agent| agent["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["default", "helper"]);
}

#[tokio::test]
async fn documents_edit_list_show_diff_and_roll_back_over_http() {
    let fixture = Fixture::new().await;
    let base = "/api/agents/default/documents/learned_notes";
    let (status, body) = fixture
        .authed(Method::POST, base, Some(json!({"operation": "replace", "content": "first", "reason": "start"})))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"version": 2})));
    fixture
        .authed(Method::POST, base, Some(json!({"operation": "find_replace", "find": "first", "replace": "second"})))
        .await;
    let (status, body) =
        fixture.authed(Method::POST, base, Some(json!({"operation": "delete", "content": "absent"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body["error"]["message"].as_str().unwrap().contains("\"absent\" was not found"));
    let (status, body) =
        fixture.authed(Method::POST, base, Some(json!({"operation": "find_replace", "find": "x"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body["error"]["message"].as_str().unwrap().contains("replace"), "{body}");
    let (_, current) = fixture.authed(Method::GET, base, None).await;
    assert_eq!((&current["content"], &current["version"]), (&json!("second"), &json!(3)));
    let (_, history) = fixture.authed(Method::GET, &format!("{base}/versions"), None).await;
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!((&history[1]["author"], &history[1]["reason"]), (&json!("admin"), &json!("start")));
    let (_, version) = fixture.authed(Method::GET, &format!("{base}/versions/2"), None).await;
    assert_eq!(version["content"], "first");
    let (_, diff) = fixture.authed(Method::GET, &format!("{base}/diff?from=2&to=3"), None).await;
    let text = diff["diff"].as_str().unwrap();
    assert!(text.contains("-first") && text.contains("+second"), "{diff}");
    let (status, body) = fixture.authed(Method::POST, &format!("{base}/rollback"), Some(json!({"version": 2}))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"version": 4})));
    let (_, current) = fixture.authed(Method::GET, base, None).await;
    assert_eq!(current["content"], "first");
    let (_, history) = fixture.authed(Method::GET, &format!("{base}/versions"), None).await;
    assert_eq!(history.as_array().unwrap().len(), 4);
    assert_eq!(history[0]["author"], "rollback");
    let (status, _) = fixture.authed(Method::POST, &format!("{base}/rollback"), Some(json!({"version": 42}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn state_routes_set_get_list_and_delete() {
    let fixture = Fixture::new().await;
    let base = "/api/agents/default/state";
    assert_eq!(
        fixture.authed(Method::PUT, &format!("{base}/color"), Some(json!({"hex": "#fff"}))).await.1,
        json!({"ok": true})
    );
    assert_eq!(fixture.authed(Method::GET, &format!("{base}/color"), None).await.1, json!({"value": {"hex": "#fff"}}));
    assert_eq!(fixture.authed(Method::GET, &format!("{base}?prefix=co"), None).await.1, json!({"keys": ["color"]}));
    assert_eq!(fixture.authed(Method::DELETE, &format!("{base}/color"), None).await.1, json!({"deleted": true}));
    assert_eq!(fixture.authed(Method::GET, &format!("{base}/color"), None).await.1, json!({"value": null}));
}

#[tokio::test]
async fn tools_are_listed_with_schemas_and_invoked_with_their_json_result() {
    let fixture = Fixture::new().await;
    let (_, tools) = fixture.authed(Method::GET, "/api/agents/default/tools", None).await;
    let edit = tools.as_array().unwrap().iter().find(|tool| tool["name"] == "edit_system_prompt").unwrap();
    assert_eq!(edit["kind"], "builtin");
    // One object schema per operation, each requiring its own fields.
    let operations: Vec<&Value> =
        edit["parameters"]["oneOf"].as_array().unwrap().iter().map(|variant| &variant["required"][0]).collect();
    assert!(operations.iter().all(|first| *first == "operation"), "{edit}");
    let invoke = |name: &str| format!("/api/agents/default/tools/{name}/invoke");
    let (status, body) = fixture
        .authed(
            Method::POST,
            &invoke("edit_system_prompt"),
            Some(json!({"operation": "append", "content": "Be brief."})),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"version": 2})));
    let (status, body) = fixture.authed(Method::POST, &invoke("nope"), Some(json!({}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("unknown_tool")));
    let (status, body) = fixture.authed(Method::POST, &invoke("get_state"), Some(json!({"key": 1}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_arguments")));
    let (_, log) = fixture.authed(Method::GET, "/api/agents/default/executions?success=false", None).await;
    assert_eq!(log.as_array().unwrap().len(), 1);
    assert_eq!(log[0]["caller"], "api");
}

#[tokio::test]
async fn an_installed_component_is_listed_disabled_with_its_origin_until_enabled() {
    let fixture = Fixture::new().await;
    let create = json!({"name": "chooser", "description": "Lets the person choose.", "code": "export default function Chooser() { return <b>pick</b>; }"});
    let (status, body) =
        fixture.authed(Method::POST, "/api/agents/default/tools/create_ui_component/invoke", Some(create)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, published) = fixture
        .authed(
            Method::POST,
            "/api/market/publish",
            Some(json!({"agent": "default", "kind": "component", "name": "chooser"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    fixture.authed(Method::POST, "/api/agents", Some(json!({"id": "second"}))).await;
    let install = json!({"agent": "second", "kind": "component", "listing": "chooser"});
    let (status, installed) = fixture.authed(Method::POST, "/api/market/install", Some(install)).await;
    assert_eq!(status, StatusCode::OK, "{installed}");
    let (_, list) = fixture.authed(Method::GET, "/api/agents/second/components", None).await;
    assert_eq!(
        (list[0]["enabled"].clone(), list[0]["provenance"]["hash"].clone()),
        (json!(false), published["hash"].clone())
    );
    let (_, own) = fixture.authed(Method::GET, "/api/agents/default/components", None).await;
    assert_eq!((own[0]["enabled"].clone(), own[0]["provenance"].clone()), (json!(true), Value::Null));
    let (status, enabled) = fixture
        .authed(Method::PUT, "/api/agents/second/components/chooser/enabled", Some(json!({"enabled": true})))
        .await;
    assert_eq!((status, enabled["enabled"].clone()), (StatusCode::OK, json!(true)));
    let (_, detail) = fixture.authed(Method::GET, "/api/agents/second/components/chooser", None).await;
    assert_eq!(detail["enabled"], true);
}

#[tokio::test]
async fn publish_install_enable_and_roll_back_a_tool_over_http() {
    let fixture = Fixture::new().await;
    let invoke = |agent: &str, name: &str| format!("/api/agents/{agent}/tools/{name}/invoke");
    let create = json!({"name": "greet", "description": "Greets someone.", "parameter_schema": {"type": "object"}, "code": "return 'hi';"});
    assert_eq!(fixture.authed(Method::POST, &invoke("default", "create_tool"), Some(create)).await.0, StatusCode::OK);
    fixture
        .authed(
            Method::POST,
            &invoke("default", "update_tool"),
            Some(json!({"name": "greet", "code": "return 'hello';"})),
        )
        .await;
    let (status, published) = fixture
        .authed(Method::POST, "/api/market/publish", Some(json!({"agent": "default", "kind": "tool", "name": "greet"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let (_, listings) = fixture.authed(Method::GET, "/api/market/listings?q=greets", None).await;
    assert_eq!(listings[0]["name"], "greet");
    let (_, detail) = fixture.authed(Method::GET, "/api/market/listings/tool/greet", None).await;
    assert_eq!(detail["versions"][0]["bundle"]["code"], "return 'hello';");
    assert_eq!(detail["versions"][0]["hash"], published["hash"]);
    fixture.authed(Method::POST, "/api/agents", Some(json!({"id": "second"}))).await;
    let (status, installed) = fixture
        .authed(
            Method::POST,
            "/api/market/install",
            Some(json!({"agent": "second", "kind": "tool", "listing": "greet"})),
        )
        .await;
    assert_eq!((status, installed["enabled"].clone()), (StatusCode::OK, json!(false)), "{installed}");
    let (_, tools) = fixture.authed(Method::GET, "/api/agents/second/agent-tools", None).await;
    assert_eq!(tools[0]["provenance"]["listing"], "greet");
    let (status, _) = fixture
        .authed(Method::PUT, "/api/agents/second/agent-tools/greet/enabled", Some(json!({"enabled": true})))
        .await;
    assert_eq!(status, StatusCode::OK);
    // The admin reads the publisher's tool history, diffs it and rolls it back.
    let (_, history) = fixture.authed(Method::GET, "/api/agents/default/agent-tools/greet/versions", None).await;
    assert_eq!(history.as_array().unwrap().len(), 2);
    let (_, diff) = fixture.authed(Method::GET, "/api/agents/default/agent-tools/greet/diff?from=1&to=2", None).await;
    assert!(diff["diff"].as_str().unwrap().contains("+return 'hello';"), "{diff}");
    let (_, rolled) = fixture
        .authed(Method::POST, "/api/agents/default/agent-tools/greet/rollback", Some(json!({"version": 1})))
        .await;
    assert_eq!((rolled["version"].clone(), rolled["code"].clone()), (json!(3), json!("return 'hi';")));
    let (_, stats) = fixture.authed(Method::GET, "/api/agents/default/stats", None).await;
    assert_eq!(stats["total"], 2, "{stats}");
    assert_eq!(stats["days"], 7);
    // Export, tamper, import: refused.
    let (_, exported) = fixture.authed(Method::GET, "/api/market/listings/tool/greet/export", None).await;
    let mut tampered = exported.clone();
    tampered["bundle"]["code"] = json!("return 'pwned';");
    let (status, body) = fixture.authed(Method::POST, "/api/market/import", Some(tampered)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body["error"]["message"].as_str().unwrap().contains("hash does not match"));
    let (status, _) = fixture.authed(Method::DELETE, "/api/agents/second/agent-tools/greet/installed", None).await;
    assert_eq!(status, StatusCode::OK);
}

/// The canvas app's API types are generated from `frontend/openapi.json`; it must be what the
/// server serves, or the types describe another API.
#[test]
fn the_frontend_openapi_snapshot_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../frontend/openapi.json");
    let snapshot: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let current = serde_json::to_value(wright_server::api::openapi()).unwrap();
    assert!(
        snapshot == current,
        "frontend/openapi.json is stale: run `cargo run --bin wright -- openapi > frontend/openapi.json && (cd frontend && npm run gen:api)`"
    );
}

/// Operation ids key the canvas's generated types: one used twice gave `/api/conversations/{id}`
/// the parameters and answer of a component's detail (issue 30, item 1).
#[test]
fn every_operation_id_is_used_once() {
    let document = serde_json::to_value(wright_server::api::openapi()).unwrap();
    let mut seen = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if let Some(id) = operation.get("operationId").and_then(Value::as_str) {
                seen.entry(id.to_owned()).or_default().push(format!("{method} {path}"));
            }
        }
    }
    let repeated: Vec<_> = seen.into_iter().filter(|(_, uses)| uses.len() > 1).collect();
    assert!(repeated.is_empty(), "{repeated:#?}");
}

/// The configuration the README documents is a configuration this build accepts.
#[test]
fn the_readme_config_example_loads() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = readme.find("```toml\n").expect("README has a toml block") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), &readme[start..end]).unwrap();
    let config = wright_server::Config::load(dir.path()).unwrap_or_else(|error| panic!("{error:#}"));
    assert_eq!(config.agent.max_tool_turns, 50);
    assert_eq!(config.sandbox.deadline_ms, 30_000);
    assert_eq!(config.egress.proxy, wright_egress::ProxyLimits::default());
    assert_eq!((config.images.max_bytes, config.images.timeout_ms), (5 * 1024 * 1024, 15_000));
    std::fs::write(dir.path().join("config.toml"), "[egress.proxy]\nmax_connections = 4\n").unwrap();
    let config = wright_server::Config::load(dir.path()).unwrap();
    assert_eq!((config.egress.proxy.max_connections, config.egress.proxy.idle_timeout_ms), (4, 300_000));
    std::fs::write(dir.path().join("config.toml"), "[sandbox]\ndeadlne_ms = 5\n").unwrap();
    let error = wright_server::Config::load(dir.path()).err().unwrap().to_string();
    assert!(error.contains("deadlne_ms"), "{error}");
}

/// `[budget]`, `[agents.NAME.budget]` and `[agent] max_run_tokens` load, with their defaults,
/// and a budget below zero or a percentage past 100 is refused with its section named.
#[test]
fn budgets_and_the_loop_guard_load_from_config_toml() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let config = wright_server::Config::load(dir.path()).unwrap();
    assert_eq!(config.budget, wright_server::config::BudgetConfig::default());
    assert_eq!(config.agent.max_run_tokens, None);
    assert_eq!(config.agent.run_token_limit(Some(32_000)), 32_000 * wright_agent::RUN_TOKENS_PER_WINDOW);
    std::fs::write(
        &path,
        "[agent]\nmax_run_tokens = 500000\n\n[budget]\nusd_per_day = 2.5\nnotify_at_percent = 90\n\n\
         [agents.research.budget]\ntokens_per_month = 1000000\n",
    )
    .unwrap();
    let config = wright_server::Config::load(dir.path()).unwrap();
    assert_eq!((config.budget.usd_per_day, config.budget.notify_at_percent), (Some(2.5), Some(90)));
    assert_eq!(config.agents["research"].budget.tokens_per_month, Some(1_000_000));
    assert_eq!(config.agent.run_token_limit(Some(32_000)), 500_000);
    std::fs::write(&path, "[agents.research.budget]\ntokens_per_day = -1\n").unwrap();
    let error = wright_server::Config::load(dir.path()).err().unwrap().to_string();
    assert!(error.contains("[agents.research.budget]"), "{error}");
    std::fs::write(&path, "[budget]\nnotify_at_percent = 150\n").unwrap();
    let error = wright_server::Config::load(dir.path()).err().unwrap().to_string();
    assert!(error.contains("notify_at_percent"), "{error}");
}

#[tokio::test]
async fn a_conversation_is_renamed_archived_brought_back_and_deleted() {
    let fixture = Fixture::new().await;
    let (status, created) = fixture.authed(Method::POST, "/api/agents/default/conversations", Some(json!({}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let path = format!("/api/conversations/{}", created["id"].as_str().unwrap());
    let (status, renamed) = fixture.authed(Method::PATCH, &path, Some(json!({"title": "Letters"}))).await;
    assert_eq!((status, renamed["title"].as_str()), (StatusCode::OK, Some("Letters")));
    let (status, _) = fixture.authed(Method::PATCH, &path, Some(json!({"title": "  "}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    fixture.authed(Method::PATCH, &path, Some(json!({"archived": true}))).await;
    let (_, listed) = fixture.authed(Method::GET, "/api/agents/default/conversations", None).await;
    assert_eq!(listed, json!([]));
    let (_, archived) = fixture.authed(Method::GET, "/api/agents/default/conversations/archived", None).await;
    assert_eq!(archived[0]["title"], "Letters");
    fixture.authed(Method::PATCH, &path, Some(json!({"archived": false}))).await;
    let (_, listed) = fixture.authed(Method::GET, "/api/agents/default/conversations", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let (status, _) = fixture.authed(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = fixture.authed(Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn commands_typed_in_the_canvas_are_answered_as_in_telegram() {
    let fixture = Fixture::new().await;
    let (_, created) = fixture.authed(Method::POST, "/api/agents/default/conversations", Some(json!({}))).await;
    let messages = format!("/api/conversations/{}/messages", created["id"].as_str().unwrap());
    let (status, stats) = fixture.authed(Method::POST, &messages, Some(json!({"text": "/codestats"}))).await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert!(stats["reply"].as_str().unwrap().starts_with("📊 Code Execution Stats (7 days)\n\nTotal: 0"), "{stats}");
    let (_, failures) = fixture.authed(Method::POST, &messages, Some(json!({"text": "/codefailures 2"}))).await;
    assert_eq!(failures["reply"], "No recent failures! 🎉");
    let (_, cancel) = fixture.authed(Method::POST, &messages, Some(json!({"text": "/cancel"}))).await;
    assert_eq!(cancel["reply"], "Nothing is running.");
    let (status, started) = fixture.authed(Method::POST, &messages, Some(json!({"text": "/newsession Taxes"}))).await;
    assert_eq!((status, started["session"]["name"].as_str()), (StatusCode::CREATED, Some("Taxes")));
    // A component cannot run commands: its text goes to the agent (and here, with no model, is refused).
    let (status, _) =
        fixture.authed(Method::POST, &messages, Some(json!({"text": "/codestats", "component": "Picker"}))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}
