//! Tool calls a model wrote as text instead of making them.
//!
//! Small local models asked for native tool calls often write the call into their text: a
//! bare JSON object `{"name": …, "arguments": …}`, the same in a ```json block, inside Hermes
//! `<tool_call>` tags, or in the text protocol's blocks — and a current llama.cpp passes that
//! text through as `content` rather than `tool_calls`. [`recover_calls`] finds such calls in a
//! reply that made none, so the loop can run them as real calls (stored as `tool_call` events,
//! shown as calls in the canvas).
//!
//! Guarantees: only a JSON object whose `name` is a tool that was offered — or an object that
//! is nothing but `name` and `arguments`, which is a call whatever the name — is taken for a
//! call, so JSON the model shows the person (an example, a data sample) is left alone; the
//! text around recovered calls is kept, the calls' own text is removed.

use serde_json::{Map, Value};

use crate::canonical::{ToolCallEvent, made_up_call_id};
use crate::text_protocol::TextProtocol;

/// What [`recover_calls`] found: the calls in the order written, and the text left around them.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub calls: Vec<ToolCallEvent>,
    pub text: String,
}

/// The calls written as text in `text`, if any. `offered` tells whether a name is one of the
/// tools of the request.
pub fn recover_calls(text: &str, protocol: &TextProtocol, offered: &dyn Fn(&str) -> bool) -> Option<Recovered> {
    let mut calls = Vec::new();
    let mut kept = String::new();
    let mut rest = text;
    while let Some((start, end, call)) = next_call(rest, protocol, offered) {
        kept.push_str(&rest[..start]);
        calls.push(call);
        rest = &rest[end..];
    }
    if calls.is_empty() {
        return None;
    }
    kept.push_str(rest);
    Some(Recovered { calls, text: kept.trim().to_owned() })
}

/// The first call in `text`: its byte span (with its wrapping: tags, fences, blocks) and the call.
fn next_call(
    text: &str,
    protocol: &TextProtocol,
    offered: &dyn Fn(&str) -> bool,
) -> Option<(usize, usize, ToolCallEvent)> {
    let wrappers: [(&str, &str); 4] = [
        (protocol.call_open.as_str(), protocol.call_close.as_str()),
        ("<tool_call>", "</tool_call>"),
        ("```json", "```"),
        ("```", "```"),
    ];
    let mut best: Option<(usize, usize, ToolCallEvent)> = None;
    let mut consider = |found: Option<(usize, usize, ToolCallEvent)>| {
        if let Some(found) = found
            && best.as_ref().is_none_or(|best| found.0 < best.0)
        {
            best = Some(found);
        }
    };
    for (open, close) in wrappers {
        let mut from = 0;
        while let Some(offset) = text[from..].find(open) {
            let start = from + offset;
            let body_start = start + open.len();
            // A missing close (the model stopped there) ends the body at the end of the text.
            let (body_end, end) = match text[body_start..].find(close) {
                Some(offset) => (body_start + offset, body_start + offset + close.len()),
                None => (text.len(), text.len()),
            };
            if let Some(call) = call_in(&text[body_start..body_end], offered) {
                consider(Some((start, end, call)));
                break;
            }
            from = body_start;
        }
    }
    // A bare object anywhere in the text.
    let mut from = 0;
    while let Some(offset) = text[from..].find('{') {
        let start = from + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = stream.next() {
            let end = start + stream.byte_offset();
            if let Some(call) = call_of(&value, offered) {
                consider(Some((start, end, call)));
                break;
            }
        }
        from = start + 1;
    }
    best
}

/// The one JSON object that fills `body`, as a call.
fn call_in(body: &str, offered: &dyn Fn(&str) -> bool) -> Option<ToolCallEvent> {
    call_of(&serde_json::from_str(body.trim()).ok()?, offered)
}

/// `{"name", "arguments"|"parameters"}`, or OpenAI's `{"function": {…}}` shape, as a call.
fn call_of(value: &Value, offered: &dyn Fn(&str) -> bool) -> Option<ToolCallEvent> {
    let object = value.as_object()?;
    if let Some(function) = object.get("function").and_then(Value::as_object) {
        return call_of_object(function, offered);
    }
    call_of_object(object, offered)
}

fn call_of_object(object: &Map<String, Value>, offered: &dyn Fn(&str) -> bool) -> Option<ToolCallEvent> {
    let name = object.get("name")?.as_str()?;
    let arguments = object.get("arguments").or_else(|| object.get("parameters"));
    let only_a_call = arguments.is_some()
        && object.keys().all(|key| ["name", "arguments", "parameters", "type", "id"].contains(&key.as_str()));
    if !offered(name) && !only_a_call {
        return None;
    }
    let arguments_json = match arguments {
        // Some models encode the arguments as a JSON string, as the OpenAI wire does.
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "{}".to_owned(),
    };
    Some(ToolCallEvent {
        id: made_up_call_id(),
        name: name.to_owned(),
        arguments_json,
        provider_data: serde_json::json!({ "provider": "recovered" }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recover(text: &str) -> Option<(Vec<(String, String)>, String)> {
        let offered = |name: &str| ["set_state", "get_state"].contains(&name);
        recover_calls(text, &TextProtocol::default(), &offered).map(|recovered| {
            let calls = recovered.calls.into_iter().map(|call| (call.name, call.arguments_json)).collect();
            (calls, recovered.text)
        })
    }

    fn call(name: &str, arguments: &str) -> (String, String) {
        (name.to_owned(), arguments.to_owned())
    }

    #[test]
    fn every_written_form_becomes_a_call() {
        let set = call("set_state", r#"{"key":"a","value":1}"#);
        for text in [
            r#"{"name": "set_state", "arguments": {"key": "a", "value": 1}}"#,
            "```json\n{\"name\": \"set_state\", \"arguments\": {\"key\": \"a\", \"value\": 1}}\n```",
            "<tool_call>\n{\"name\": \"set_state\", \"arguments\": {\"key\": \"a\", \"value\": 1}}\n</tool_call>",
            r#"<||TOOL.CALL>{"name": "set_state", "arguments": {"key": "a", "value": 1}}<TOOL.CALL||>"#,
            r#"{"type": "function", "function": {"name": "set_state", "arguments": "{\"key\":\"a\",\"value\":1}"}}"#,
            r#"{"name": "set_state", "parameters": {"key": "a", "value": 1}}"#,
        ] {
            assert_eq!(recover(text), Some((vec![set.clone()], String::new())), "{text}");
        }
    }

    #[test]
    fn text_around_calls_is_kept_and_several_calls_are_found_in_order() {
        let text = "I will save it.\n<tool_call>{\"name\": \"set_state\", \"arguments\": {\"key\": \"a\", \"value\": 1}}</tool_call>\n\
                    then {\"name\": \"get_state\", \"arguments\": {\"key\": \"a\"}} done";
        let (calls, rest) = recover(text).unwrap();
        assert_eq!(calls, vec![call("set_state", r#"{"key":"a","value":1}"#), call("get_state", r#"{"key":"a"}"#)]);
        assert_eq!(rest, "I will save it.\n\nthen  done");
    }

    #[test]
    fn json_that_is_not_a_call_is_left_alone() {
        assert_eq!(recover(r#"Here is your data: {"name": "Ada", "age": 36}"#), None);
        assert_eq!(recover("```json\n{\"name\": \"Ada\"}\n```"), None);
        assert_eq!(recover("No calls here."), None);
    }

    #[test]
    fn an_unknown_name_in_a_pure_call_object_is_still_a_call() {
        // So the loop can answer it with the closest real names.
        let (calls, _) = recover(r#"{"name": "save_note", "arguments": {"text": "x"}}"#).unwrap();
        assert_eq!(calls, vec![call("save_note", r#"{"text":"x"}"#)]);
    }

    #[test]
    fn an_unclosed_block_ends_at_the_end_of_the_text() {
        let (calls, _) = recover("<tool_call>{\"name\": \"get_state\", \"arguments\": {\"key\": \"k\"}}").unwrap();
        assert_eq!(calls, vec![call("get_state", r#"{"key":"k"}"#)]);
    }
}
