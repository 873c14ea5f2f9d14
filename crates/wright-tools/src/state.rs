//! The KV state tools of seed 002: get, set, delete and list keys of the agent's own state.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::builtin::{Builtin, Tool};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct KeyArgs {
    /// The state key.
    key: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SetArgs {
    /// The state key to write (at most 256 bytes by default).
    key: String,
    /// Any JSON value (at most 1 MiB as JSON by default).
    value: Value,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ListArgs {
    /// Only keys that start with this prefix.
    prefix: Option<String>,
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<KeyArgs>::reading(
            "get_state",
            "Read a value from your persistent key-value state. Returns {value}, null when the key does not exist.",
            |context, args| {
                Box::pin(async move {
                    let value = context.services.store.get_state(&context.agent, &args.key).await?;
                    Ok(json!({ "value": value }))
                })
            },
        ),
        Builtin::<SetArgs>::boxed(
            "set_state",
            "Save any JSON value under a key in your persistent key-value state (a write: it replaces what \
             was there). Use it for small facts and progress you want to keep between conversations.",
            |context, args| {
                Box::pin(async move {
                    context.services.store.set_state(&context.agent, &args.key, &args.value).await?;
                    Ok(json!({ "ok": true }))
                })
            },
        ),
        Builtin::<KeyArgs>::boxed(
            "delete_state",
            "Delete a key from your key-value state. Returns {deleted: false} when it did not exist.",
            |context, args| {
                Box::pin(async move {
                    let deleted = context.services.store.delete_state(&context.agent, &args.key).await?;
                    Ok(json!({ "deleted": deleted }))
                })
            },
        ),
        Builtin::<ListArgs>::reading(
            "list_state_keys",
            "List the keys of your key-value state, optionally only those starting with a prefix.",
            |context, args| {
                Box::pin(async move {
                    let keys = context.services.store.list_state_keys(&context.agent, args.prefix.as_deref()).await?;
                    Ok(json!({ "keys": keys }))
                })
            },
        ),
    ]
}
