//! Tool schemas in the dialect each server accepts.
//!
//! Wright describes tool arguments in full JSON Schema (schemars for the built-ins, whatever
//! an agent wrote for its own tools) and validates every call against that full schema. The
//! servers that receive the schemas each take only part of JSON Schema, and refuse the whole
//! request over one keyword they do not know — llama.cpp turns tool schemas into a grammar and
//! answers 400 "Unrecognized schema" for a schema with no type (`{"description": …}`) or a bare
//! `true`. So each adapter sends [`translate`]d schemas: local `$ref`s inlined, boolean
//! schemas made explicit, keywords the dialect does not know dropped. Dropping only ever
//! loosens a schema, which is safe because the registry still checks the full one.

use serde_json::{Map, Value, json};

/// Which part of JSON Schema a server accepts for tool parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaDialect {
    /// OpenAI Chat Completions and Responses, non-strict (`strict: false`): JSON Schema with
    /// `$defs`/`$ref`; only boolean subschemas and `$schema` are normalised.
    OpenAi,
    /// Anthropic Messages `input_schema`: JSON Schema 2020-12 whose root is an object.
    Anthropic,
    /// Gemini `parametersJsonSchema`: the documented keyword subset (`type`, `format`,
    /// `title`, `description`, `enum` of strings and numbers, `items`, `prefixItems`,
    /// `minItems`, `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf`, `properties`,
    /// `additionalProperties`, `required`, `propertyOrdering`), one type per schema.
    Gemini,
    /// llama.cpp's (and Ollama's) JSON-Schema-to-grammar converter: every schema needs
    /// something it can turn into a rule (a type, an enum, a const, properties or a
    /// combinator); `pattern` must be anchored and use its regex subset, so it is dropped.
    Grammar,
}

/// Every JSON type, which is how the grammar dialect says "any value".
pub const ANY_TYPE: [&str; 7] = ["string", "number", "integer", "boolean", "object", "array", "null"];

/// How deep `$ref`s are followed when inlining; a recursive schema is cut off below this
/// depth with an "any value" schema (the registry still validates the full recursive one).
const MAX_REF_DEPTH: usize = 8;

const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

const GRAMMAR_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "const",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "anyOf",
    "oneOf",
    "allOf",
    "properties",
    "additionalProperties",
    "required",
    "format",
];

/// String formats llama.cpp has grammar rules for; any other `format` is dropped.
const GRAMMAR_FORMATS: &[&str] = &["date", "time", "date-time", "uuid"];

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &["items", "additionalProperties", "not", "contains", "if", "then", "else"];
/// Keywords whose value is a list of subschemas.
const LIST_KEYWORDS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// `schema` (a tool's parameters) in `dialect`. Pure; never fails: what cannot be expressed
/// is loosened, and the root is always an object schema.
pub fn translate(schema: &Value, dialect: SchemaDialect) -> Value {
    // Every API wants an object at the root of a tool's parameters.
    let mut root = schema.as_object().cloned().unwrap_or_default();
    root.entry("type").or_insert_with(|| json!("object"));
    let variants = root_variants(&root);
    match (&variants, dialect) {
        // The grammar converter makes the alternatives themselves the rule: each variant's
        // required fields are then required in what the model writes. Empty root properties
        // beside them would only confuse it.
        (Some(_), SchemaDialect::Grammar) => {
            root.remove("properties");
            root.remove("required");
        }
        // OpenAI and Anthropic refuse a combinator at the root; Gemini's subset is one object.
        (Some(variants), SchemaDialect::OpenAi | SchemaDialect::Anthropic | SchemaDialect::Gemini) => {
            root = merged_variants(&root, variants);
        }
        (None, _) => {}
    }
    if root.get("type") == Some(&json!("object")) && variants.is_none() {
        root.entry("properties").or_insert_with(|| json!({}));
    }
    let root = Value::Object(root);
    node(&root, &root, dialect, 0)
}

/// The object variants of a root `oneOf` (or `anyOf`) — a tagged union like the document
/// edits, one shape per operation — when every variant is an object schema with properties.
fn root_variants(root: &Map<String, Value>) -> Option<Vec<Map<String, Value>>> {
    let list = root.get("oneOf").or_else(|| root.get("anyOf"))?.as_array()?;
    let variants: Vec<Map<String, Value>> = list
        .iter()
        .map(|variant| variant.as_object().filter(|variant| variant.get("properties").is_some_and(Value::is_object)))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .cloned()
        .collect();
    (!variants.is_empty()).then_some(variants)
}

/// One object schema for the union of `variants`: every property of any variant (a property
/// that is a `const` in each variant — the tag — becomes an enum of those values, its
/// description saying what each does), required only what every variant requires. Looser
/// than the union, which is safe: the registry validates calls against the full schema.
fn merged_variants(root: &Map<String, Value>, variants: &[Map<String, Value>]) -> Map<String, Value> {
    let mut properties = Map::new();
    // The tag properties: their values and what each value does, in the variants' order.
    let mut tags: std::collections::BTreeMap<String, (Vec<Value>, Vec<String>)> = Default::default();
    for variant in variants {
        let Some(Value::Object(own)) = variant.get("properties") else { continue };
        for (name, property) in own {
            match property.get("const").filter(|value| value.is_string()) {
                Some(tag) => {
                    let meaning = variant.get("description").and_then(Value::as_str).unwrap_or_default();
                    let (values, meanings) = tags.entry(name.clone()).or_default();
                    values.push(tag.clone());
                    meanings.push(format!("{}: {}", tag.as_str().unwrap_or_default(), meaning.trim_end_matches('.')));
                }
                None => {
                    properties.entry(name.clone()).or_insert_with(|| property.clone());
                }
            }
        }
    }
    for (name, (values, meanings)) in tags {
        properties.insert(name, json!({"type": "string", "enum": values, "description": meanings.join("; ")}));
    }
    let mut required: Vec<Value> = variants[0].get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    required.retain(|name| {
        variants.iter().all(|variant| {
            variant.get("required").and_then(Value::as_array).is_some_and(|required| required.contains(name))
        })
    });
    let mut merged = Map::new();
    merged.insert("type".into(), json!("object"));
    if let Some(description) = root.get("description") {
        merged.insert("description".into(), description.clone());
    }
    merged.insert("properties".into(), Value::Object(properties));
    merged.insert("required".into(), Value::Array(required));
    merged
}

/// "Any value" in `dialect`, keeping a description when there was one.
fn any_value(dialect: SchemaDialect, description: Option<&Value>) -> Value {
    let mut schema = match dialect {
        SchemaDialect::Grammar => json!({ "type": ANY_TYPE }),
        // Gemini has no "any" type and one type per schema; a schema without keywords is
        // within its subset and means any value.
        SchemaDialect::OpenAi | SchemaDialect::Anthropic | SchemaDialect::Gemini => json!({}),
    };
    if let (Some(description), Value::Object(object)) = (description, &mut schema) {
        object.insert("description".into(), description.clone());
    }
    schema
}

fn node(schema: &Value, root: &Value, dialect: SchemaDialect, depth: usize) -> Value {
    let object = match schema {
        Value::Object(object) => object,
        // `true` (and, loosened, `false`): any value. Anything else is not a schema at all.
        _ => return any_value(dialect, None),
    };
    if let Some(Value::String(reference)) = object.get("$ref") {
        let target = if depth < MAX_REF_DEPTH { resolve(root, reference) } else { None };
        return match target {
            Some(target) => {
                // Sibling keywords of a `$ref` (a description, usually) stay on top.
                let mut merged = target.as_object().cloned().unwrap_or_default();
                for (key, value) in object.iter().filter(|(key, _)| key.as_str() != "$ref") {
                    merged.insert(key.clone(), value.clone());
                }
                node(&Value::Object(merged), root, dialect, depth + 1)
            }
            None => any_value(dialect, object.get("description")),
        };
    }
    let mut out = Map::new();
    for (key, value) in object {
        if !keeps(dialect, key) {
            continue;
        }
        let translated = match key.as_str() {
            "properties" => match value {
                Value::Object(properties) => Value::Object(
                    properties
                        .iter()
                        .map(|(name, property)| (name.clone(), node(property, root, dialect, depth)))
                        .collect(),
                ),
                _ => continue,
            },
            // The grammar converter reads `false` as "closed" and `true` as "any value";
            // Gemini takes a boolean too: kept as it is.
            "additionalProperties" if value.is_boolean() => value.clone(),
            // Draft 4 tuple form `items: [..]`.
            "items" if value.is_array() => match dialect {
                SchemaDialect::OpenAi | SchemaDialect::Anthropic => value.clone(),
                SchemaDialect::Gemini | SchemaDialect::Grammar => {
                    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    out.insert(
                        "prefixItems".into(),
                        Value::Array(items.iter().map(|item| node(item, root, dialect, depth)).collect()),
                    );
                    continue;
                }
            },
            key if SCHEMA_KEYWORDS.contains(&key) => node(value, root, dialect, depth),
            key if LIST_KEYWORDS.contains(&key) => match value {
                Value::Array(list) => Value::Array(list.iter().map(|item| node(item, root, dialect, depth)).collect()),
                _ => continue,
            },
            "format" if dialect == SchemaDialect::Grammar => {
                if value.as_str().is_some_and(|format| GRAMMAR_FORMATS.contains(&format)) {
                    value.clone()
                } else {
                    continue;
                }
            }
            "enum" if dialect == SchemaDialect::Gemini => {
                // Gemini takes enums of strings and numbers only.
                if value.as_array().is_some_and(|values| values.iter().all(|v| v.is_string() || v.is_number())) {
                    value.clone()
                } else {
                    continue;
                }
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), translated);
    }
    match dialect {
        SchemaDialect::Gemini => gemini_fixups(object, &mut out),
        SchemaDialect::Grammar => grammar_fixups(&mut out),
        SchemaDialect::OpenAi | SchemaDialect::Anthropic => {}
    }
    Value::Object(out)
}

fn keeps(dialect: SchemaDialect, key: &str) -> bool {
    match dialect {
        // `$defs` go with the schema they belong to; only the meta keyword is refused.
        SchemaDialect::OpenAi | SchemaDialect::Anthropic => key != "$schema",
        SchemaDialect::Gemini => GEMINI_KEYWORDS.contains(&key),
        SchemaDialect::Grammar => GRAMMAR_KEYWORDS.contains(&key),
    }
}

/// `const` becomes a one-value enum; a list of types becomes `anyOf` of single types.
fn gemini_fixups(original: &Map<String, Value>, out: &mut Map<String, Value>) {
    if let Some(value) = original.get("const")
        && (value.is_string() || value.is_number())
    {
        out.insert("enum".into(), json!([value]));
    }
    if let Some(Value::Array(types)) = out.get("type").cloned() {
        out.remove("type");
        let options: Vec<Value> = types.iter().map(|kind| json!({ "type": kind })).collect();
        if options.len() == 1 {
            out.insert("type".into(), types[0].clone());
        } else if !out.contains_key("anyOf") {
            out.insert("anyOf".into(), Value::Array(options));
        }
    }
}

/// Gives every schema something the grammar converter can build a rule from.
fn grammar_fixups(out: &mut Map<String, Value>) {
    let ruled = ["type", "enum", "const", "anyOf", "oneOf", "allOf"].iter().any(|key| out.contains_key(*key));
    if out.contains_key("properties") && !out.contains_key("type") {
        out.insert("type".into(), json!("object"));
    } else if !ruled {
        out.insert("type".into(), json!(ANY_TYPE));
    }
    // Range rules exist for integers only; on numbers the bounds are dropped.
    if out.get("type") != Some(&json!("integer")) {
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            out.remove(key);
        }
    }
}

/// What a server of `dialect` would refuse in `schema`, one line per problem with its JSON
/// pointer: for Gemini a keyword outside its subset, a list of types, an enum of other than
/// strings and numbers; for the grammar converter a schema it has no rule for (no type, enum,
/// const, properties or combinator), an unknown type, a boolean schema or a `$ref`. Empty for
/// every [`translate`]d schema — the tests hold this over every built-in and agent-tool schema.
pub fn violations(schema: &Value, dialect: SchemaDialect) -> Vec<String> {
    let mut problems = Vec::new();
    check_node(schema, dialect, "", &mut problems);
    problems
}

fn check_node(schema: &Value, dialect: SchemaDialect, at: &str, problems: &mut Vec<String>) {
    let Value::Object(object) = schema else {
        if matches!(dialect, SchemaDialect::Gemini | SchemaDialect::Grammar) {
            problems.push(format!("{at}: a boolean or non-object schema: {schema}"));
        }
        return;
    };
    let known_type = |kind: &Value| kind.as_str().is_some_and(|kind| ANY_TYPE.contains(&kind));
    match dialect {
        SchemaDialect::OpenAi | SchemaDialect::Anthropic => {}
        SchemaDialect::Gemini => {
            for key in object.keys().filter(|key| !GEMINI_KEYWORDS.contains(&key.as_str())) {
                problems.push(format!("{at}: keyword {key:?} is outside Gemini's subset"));
            }
            if let Some(kind) = object.get("type")
                && !known_type(kind)
            {
                problems.push(format!("{at}: type must be one type name, not {kind}"));
            }
            if let Some(values) = object.get("enum")
                && !values.as_array().is_some_and(|values| values.iter().all(|v| v.is_string() || v.is_number()))
            {
                problems.push(format!("{at}: enum must list strings or numbers"));
            }
        }
        SchemaDialect::Grammar => {
            for key in object.keys().filter(|key| !GRAMMAR_KEYWORDS.contains(&key.as_str())) {
                problems.push(format!("{at}: keyword {key:?} has no grammar rule"));
            }
            match object.get("type") {
                Some(Value::Array(kinds)) if !kinds.is_empty() && kinds.iter().all(known_type) => {}
                Some(kind) if known_type(kind) => {}
                Some(kind) => problems.push(format!("{at}: unknown type {kind}")),
                None if ["enum", "const", "anyOf", "oneOf", "allOf", "properties"]
                    .iter()
                    .any(|key| object.contains_key(*key)) => {}
                None => problems.push(format!("{at}: unrecognized schema (no type): {schema}")),
            }
        }
    }
    for (key, value) in object {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "properties" => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    check_node(property, dialect, &format!("{here}/{name}"), problems);
                }
            }
            "additionalProperties" if value.is_boolean() => {}
            key if SCHEMA_KEYWORDS.contains(&key) && !value.is_array() => check_node(value, dialect, &here, problems),
            key if LIST_KEYWORDS.contains(&key) || key == "items" => {
                for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                    check_node(item, dialect, &format!("{here}/{index}"), problems);
                }
            }
            _ => {}
        }
    }
}

/// A local reference (`#/$defs/x`, `#/definitions/x`, any JSON pointer into the root).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

#[cfg(test)]
mod tests;
