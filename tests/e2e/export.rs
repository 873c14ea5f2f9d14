//! A conversation leaves Wright: the real binary's export route and `wright conversation
//! export` write the same Markdown and JSON for a conversation with a tool call in it.

use std::process::Command;

use serde_json::{Value, json};
use wright_llm::testing::{FakeCall, FakeProvider, Turn};

use crate::model_loop::{Server, TOKEN, WRIGHT, Wire};

#[tokio::test]
async fn a_conversation_exports_as_markdown_and_json_from_the_api_and_the_cli() {
    let script = vec![
        Turn::ToolCalls {
            text: String::new(),
            calls: vec![FakeCall::new("set_state", json!({"key": "city", "value": "Oslo"}))],
        },
        Turn::text("Saved **Oslo**."),
    ];
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Openai);
    let id = server.conversation().await;
    let detail = server.say(&id, "remember Oslo").await;
    assert_eq!(detail["conversation"]["status"], "idle", "{detail}");

    let get = |format: &'static str| {
        let request = server.client.get(format!("{}/api/conversations/{id}/export?format={format}", server.url));
        async move { request.bearer_auth(TOKEN).send().await.unwrap() }
    };
    let response = get("markdown").await;
    assert_eq!(response.status(), 200);
    let header = |response: &reqwest::Response, name: &str| {
        response.headers().get(name).map(|value| value.to_str().unwrap().to_owned()).unwrap_or_default()
    };
    assert!(header(&response, "content-type").starts_with("text/markdown"));
    let short_id: String = id.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    assert_eq!(header(&response, "content-disposition"), format!("attachment; filename=\"loop-{short_id}.md\""));
    assert_eq!(header(&response, "cache-control"), "no-store");
    let markdown = response.text().await.unwrap();
    assert!(markdown.starts_with("# loop\n"), "{markdown}");
    assert!(markdown.contains("## You · ") && markdown.contains("\n\nremember Oslo\n"), "{markdown}");
    assert!(markdown.contains("<details>\n<summary>Tool call <code>set_state</code> · ok</summary>"), "{markdown}");
    assert!(markdown.contains("\"value\": \"Oslo\""), "{markdown}");
    assert!(markdown.contains("Result:"), "{markdown}");
    assert!(markdown.contains("## Assistant · ") && markdown.contains("Saved **Oslo**."), "{markdown}");

    let response = get("json").await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), "application/json");
    assert!(header(&response, "content-disposition").ends_with(".json\""));
    let json_text = response.text().await.unwrap();
    let export: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(export["wright_export"], 1);
    assert_eq!(export["conversation"]["id"], id.as_str());
    // The typed events, as the conversation's own route sends them.
    let kinds: Vec<&str> =
        export["events"].as_array().unwrap().iter().map(|event| event["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_call", "tool_result", "assistant"], "{export}");
    for (exported, shown) in export["events"].as_array().unwrap().iter().zip(detail["events"].as_array().unwrap()) {
        assert_eq!(exported, shown);
    }

    let (status, body) = {
        let response = server
            .client
            .get(format!("{}/api/conversations/nope/export", server.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    };
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
    let unauthenticated =
        server.client.get(format!("{}/api/conversations/{id}/export", server.url)).send().await.unwrap();
    assert_eq!(unauthenticated.status(), 401);

    // The command line writes the same bytes, beside the running server.
    let cli = |args: &[&str]| Command::new(WRIGHT).arg("--data-dir").arg(dir.path()).args(args).output().unwrap();
    let output = cli(&["conversation", "export", &id]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), markdown);
    let file = dir.path().join("out.json");
    let output = cli(&["conversation", "export", &id, "--format", "json", "-o", file.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), json_text);
    let output = cli(&["conversation", "export", "no-such-conversation"]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no-such-conversation"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
