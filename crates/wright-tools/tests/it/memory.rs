//! The `memory` tool: seed 001's contract end to end through the registry.

use serde_json::{Value, json};
use wright_core::AgentId;
use wright_store::MemoryFilter;

use super::Fixture;

fn ids(result: &Value) -> Vec<String> {
    result["memories"].as_array().unwrap().iter().map(|memory| memory["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn memory_tool_stores_recalls_lists_and_forgets_with_the_seed_shape() {
    let fixture = Fixture::new().await;
    let stored = fixture
        .call(
            "memory",
            json!({"action": "store", "layer": "mid", "category": "goal", "certainty": 0.8, "content": "Learning Rust"}),
        )
        .await
        .unwrap();
    assert_eq!(stored["success"], true);
    let memory = &stored["memories"][0];
    for field in ["id", "layer", "content", "category", "certainty", "created_at", "expires_at"] {
        assert!(memory.get(field).is_some(), "{field} missing from {memory}");
    }
    assert_eq!(memory["layer"], "mid");
    assert_eq!(memory["certainty"], 0.8);
    assert!(memory["created_at"].as_str().unwrap().ends_with('Z'));
    let id = memory["id"].as_str().unwrap().to_owned();
    fixture.call("memory", json!({"action": "store", "layer": "long", "content": "Lives in Porto"})).await.unwrap();

    let recalled = fixture.call("memory", json!({"action": "recall", "query": "rust"})).await.unwrap();
    assert_eq!(ids(&recalled), vec![id.clone()]);
    let relevance = recalled["memories"][0]["relevance"].as_f64().unwrap();
    assert!(relevance > 0.0 && relevance <= 1.0, "{relevance}");

    let listed = fixture.call("memory", json!({"action": "list", "layer": "long"})).await.unwrap();
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
    assert_eq!(listed["memories"][0]["expires_at"], Value::Null);

    let forgotten = fixture.call("memory", json!({"action": "forget", "memory_id": id})).await.unwrap();
    assert_eq!(forgotten["success"], true);
    let recalled = fixture.call("memory", json!({"action": "recall", "query": "rust"})).await.unwrap();
    assert!(ids(&recalled).is_empty());
    // Forgotten is archived, not gone, and the change names the agent and the conversation.
    let agent = AgentId::default_agent();
    let archived_filter = MemoryFilter { archived: true, ..Default::default() };
    let archived = fixture.store().list_memories(&agent, &archived_filter, 10).await.unwrap();
    assert_eq!(archived.len(), 1);
    let history = fixture.store().memory_history(&agent, archived[0].id).await.unwrap();
    assert_eq!(history.last().unwrap().conversation_id.as_deref(), Some("conv-1"));
}

#[tokio::test]
async fn memory_tool_mistakes_are_errors_the_model_can_fix() {
    let fixture = Fixture::new().await;
    let missing = fixture.call("memory", json!({"action": "store", "content": "no layer"})).await.unwrap_err();
    assert!(missing.to_string().contains("`layer`"), "{missing}");
    let bad_layer = fixture.call("memory", json!({"action": "store", "layer": "forever", "content": "x"})).await;
    assert!(matches!(bad_layer, Err(wright_tools::ToolError::InvalidArguments { .. })), "{bad_layer:?}");
    let bad_certainty =
        fixture.call("memory", json!({"action": "store", "layer": "mid", "content": "x", "certainty": 2})).await;
    assert!(matches!(bad_certainty, Err(wright_tools::ToolError::InvalidArguments { .. })), "{bad_certainty:?}");
    let bad_id = fixture.call("memory", json!({"action": "forget", "memory_id": "abc"})).await.unwrap_err();
    assert!(bad_id.to_string().contains("\"abc\""), "{bad_id}");
    let unknown = fixture.call("memory", json!({"action": "forget", "memory_id": "999"})).await.unwrap_err();
    assert_eq!(unknown.category().as_str(), "not_found");
}

#[tokio::test]
async fn the_model_starts_a_session_and_its_session_memories_end() {
    let fixture = Fixture::new().await;
    let stored =
        fixture.call("memory", json!({"action": "store", "layer": "session", "content": "In refactor mode"})).await;
    let stored = stored.unwrap();
    let listed = fixture.call("memory", json!({"action": "list", "layer": "session"})).await.unwrap();
    assert_eq!(ids(&listed), ids(&stored));
    let started = fixture.call("start_session", json!({"name": "Taxes"})).await.unwrap();
    assert_eq!((started["success"].clone(), started["session"]["name"].clone()), (json!(true), json!("Taxes")));
    let listed = fixture.call("memory", json!({"action": "list", "layer": "session"})).await.unwrap();
    assert!(ids(&listed).is_empty(), "{listed}");
    let sessions = fixture.store().list_sessions(&AgentId::default_agent(), 10).await.unwrap();
    assert_eq!(sessions[0].started_by, wright_store::SessionStarter::Agent);
    assert!(sessions[1].ended_at.is_some());
}
