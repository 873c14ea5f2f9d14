use serde_json::{Value, json};

use super::*;

/// Schemas shaped like the ones that broke llama.cpp: untyped "any value" properties, bare
/// `true`, `$ref`s into `$defs`, keywords the converter has no rule for.
fn awkward() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "value": {"description": "Any JSON value."},
            "anything": true,
            "schema": {"description": "JSON Schema of the tool's arguments (an object schema)."},
            "mode": {"const": "fast"},
            "flag": {"type": ["boolean", "null"]},
            "when": {"type": "string", "format": "uri", "pattern": "^h"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "count": {"type": "integer", "minimum": 1},
            "item": {"$ref": "#/$defs/item", "description": "One item."},
            "tree": {"$ref": "#/$defs/node"},
            "pair": {"type": "array", "items": [{"type": "string"}, true]},
            "choice": {"enum": ["a", 1, null]},
            "not_this": {"not": {"type": "string"}}
        },
        "required": ["value"],
        "$defs": {
            "item": {"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": true},
            "node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        }
    })
}

#[test]
fn grammar_dialect_gives_every_schema_a_rule() {
    let translated = translate(&awkward(), SchemaDialect::Grammar);
    assert_eq!(violations(&translated, SchemaDialect::Grammar), Vec::<String>::new(), "{translated:#}");
    let properties = &translated["properties"];
    assert_eq!(properties["value"], json!({"type": ANY_TYPE, "description": "Any JSON value."}));
    assert_eq!(properties["anything"], json!({"type": ANY_TYPE}));
    assert_eq!(properties["mode"], json!({"const": "fast"}));
    assert_eq!(properties["when"], json!({"type": "string"}), "unknown format and pattern dropped");
    assert_eq!(properties["ratio"], json!({"type": "number"}), "bounds kept for integers only");
    assert_eq!(properties["count"], json!({"type": "integer", "minimum": 1}));
    assert_eq!(
        properties["item"],
        json!({"type": "object", "description": "One item.", "properties": {"id": {"type": "integer"}}, "additionalProperties": true})
    );
    assert_eq!(properties["pair"]["prefixItems"], json!([{"type": "string"}, {"type": ANY_TYPE}]));
    assert_eq!(properties["not_this"], json!({"type": ANY_TYPE}));
    assert!(translated.get("$schema").is_none() && translated.get("$defs").is_none());
    assert_eq!(translated["required"], json!(["value"]));
}

#[test]
fn recursive_refs_are_cut_off_with_any_value() {
    let translated = translate(&awkward(), SchemaDialect::Grammar);
    let mut node = &translated["properties"]["tree"];
    let mut depth = 0;
    while let Some(items) = node.pointer("/properties/children/items") {
        node = items;
        depth += 1;
    }
    assert!((2..=MAX_REF_DEPTH).contains(&depth), "followed {depth} levels");
    assert_eq!(node["type"], json!(ANY_TYPE));
    assert!(!translated.to_string().contains("$ref"));
}

#[test]
fn gemini_dialect_stays_inside_its_subset() {
    let translated = translate(&awkward(), SchemaDialect::Gemini);
    assert_eq!(violations(&translated, SchemaDialect::Gemini), Vec::<String>::new(), "{translated:#}");
    let properties = &translated["properties"];
    assert_eq!(properties["value"], json!({"description": "Any JSON value."}));
    assert_eq!(properties["mode"], json!({"enum": ["fast"]}));
    assert_eq!(properties["flag"], json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]}));
    assert_eq!(properties["choice"], json!({}), "an enum with null is dropped, not sent");
    assert_eq!(properties["when"], json!({"type": "string", "format": "uri"}));
}

#[test]
fn the_checkers_catch_what_the_servers_refuse() {
    let untyped = json!({"type": "object", "properties": {"x": {"description": "d"}, "y": true}});
    let grammar = violations(&untyped, SchemaDialect::Grammar);
    assert_eq!(grammar.len(), 2, "{grammar:?}");
    assert!(grammar[0].starts_with("/properties/x: unrecognized schema"), "{grammar:?}");
    let gemini = violations(&json!({"type": ["string", "null"], "const": 1, "$ref": "#"}), SchemaDialect::Gemini);
    assert_eq!(gemini.len(), 3, "{gemini:?}");
    assert!(violations(&untyped, SchemaDialect::OpenAi).is_empty());
}

#[test]
fn openai_and_anthropic_keep_json_schema_and_lose_only_the_meta_keyword() {
    for dialect in [SchemaDialect::OpenAi, SchemaDialect::Anthropic] {
        let translated = translate(&awkward(), dialect);
        assert!(translated.get("$schema").is_none());
        assert_eq!(translated["properties"]["anything"], json!({}));
        assert_eq!(translated["properties"]["when"], json!({"type": "string", "format": "uri", "pattern": "^h"}));
        assert_eq!(translated["properties"]["item"]["properties"]["id"], json!({"type": "integer"}), "$ref inlined");
    }
}

#[test]
fn the_root_is_always_an_object_schema() {
    for dialect in [SchemaDialect::OpenAi, SchemaDialect::Anthropic, SchemaDialect::Gemini, SchemaDialect::Grammar] {
        assert_eq!(translate(&json!({}), dialect), json!({"type": "object", "properties": {}}), "{dialect:?}");
        assert_eq!(translate(&json!(true), dialect), json!({"type": "object", "properties": {}}), "{dialect:?}");
    }
}

/// A union tagged by `operation`, as the document-edit tools have.
fn tagged() -> Value {
    json!({
        "description": "One edit.",
        "oneOf": [
            {"type": "object", "description": "Add at the end.", "additionalProperties": false,
             "properties": {"operation": {"type": "string", "const": "append"}, "content": {"type": "string"}},
             "required": ["operation", "content"]},
            {"type": "object", "description": "Swap text.", "additionalProperties": false,
             "properties": {"operation": {"type": "string", "const": "find_replace"}, "find": {"type": "string"},
                            "replace": {"type": "string"}},
             "required": ["operation", "find", "replace"]}
        ],
        "properties": {},
        "required": []
    })
}

#[test]
fn a_tagged_union_stays_one_for_the_grammar_and_is_merged_for_the_apis() {
    let grammar = translate(&tagged(), SchemaDialect::Grammar);
    assert_eq!(violations(&grammar, SchemaDialect::Grammar), Vec::<String>::new(), "{grammar:#}");
    assert!(grammar.get("properties").is_none() && grammar.get("required").is_none(), "{grammar:#}");
    assert_eq!(grammar["oneOf"][1]["required"], json!(["operation", "find", "replace"]));
    for dialect in [SchemaDialect::OpenAi, SchemaDialect::Anthropic, SchemaDialect::Gemini] {
        let merged = translate(&tagged(), dialect);
        assert_eq!(violations(&merged, dialect), Vec::<String>::new(), "{dialect:?}: {merged:#}");
        assert!(merged.get("oneOf").is_none(), "no combinator at the root: {merged:#}");
        assert_eq!(merged["type"], "object");
        assert_eq!(merged["required"], json!(["operation"]), "what every operation needs");
        assert_eq!(
            merged["properties"]["operation"],
            json!({"type": "string", "enum": ["append", "find_replace"],
                   "description": "append: Add at the end; find_replace: Swap text"})
        );
        let names: Vec<&String> = merged["properties"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["content", "find", "operation", "replace"]);
    }
}
