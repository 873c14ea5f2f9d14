//! The tools that talk to the person (seed 002 "UI Rendering" and "User Interaction"):
//! `render_and_wait`, `render_blocks` and `ask_user` pause the run until the canvas answers;
//! `send_message` shows text at once and does not pause.
//!
//! The registry checks a pausing call and prepares what the canvas will show
//! (`ToolRegistry::prepare_pause`: the arguments against the schema and the rules below, and for
//! `render_and_wait` the stored component's compiled code or the inline code compiled); the
//! agent loop parks it (a `pending_calls` row) and ends the run, and the canvas's answer becomes
//! the call's result. Called outside a
//! conversation (the CLI, the API) there is nobody to answer, so their handlers refuse.

// The argument types below exist to generate the schemas a model sees and that calls are
// validated against; the canvas, not Rust, reads their fields.
#![allow(dead_code, reason = "schema-only argument types")]

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use wright_core::Presentation;

use crate::ToolError;
use crate::builtin::{Builtin, Tool};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RenderAndWaitArgs {
    /// Name of a stored UI component (see create_ui_component).
    component: Option<String>,
    /// Inline JSX/React code, used when `component` is not given. Must `export default` a component.
    code: Option<String>,
    /// Props to pass to the component.
    props: Option<Map<String, Value>>,
    /// Optional title shown above the component.
    title: Option<String>,
}

/// One block of `render_blocks`.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block {
    Markdown {
        content: String,
    },
    Table {
        columns: Vec<TableColumn>,
        data: Vec<Map<String, Value>>,
    },
    Chart {
        #[serde(rename = "chartType")]
        chart_type: ChartType,
        data: ChartData,
        /// Shown above the chart.
        title: Option<String>,
    },
    Form {
        fields: Vec<FormField>,
        #[serde(rename = "submitLabel")]
        submit_label: String,
    },
    Code {
        language: String,
        content: String,
    },
    Image {
        url: String,
        alt: Option<String>,
    },
    Alert {
        variant: AlertVariant,
        content: String,
    },
    Json {
        data: Value,
    },
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct TableColumn {
    key: String,
    label: String,
}

/// A chart's data, one shape for every kind: a label per point (an x value; a slice of a pie)
/// and one or more series of numbers, each with a value per label. A pie shows one series.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChartData {
    labels: Vec<ChartLabel>,
    #[schemars(length(min = 1))]
    datasets: Vec<ChartSeries>,
}

/// A point's label: words, or a number (a year, a size).
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ChartLabel {
    Text(String),
    Number(f64),
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChartSeries {
    /// The series' name, shown in the legend.
    label: String,
    /// One number per label, in the labels' order.
    data: Vec<f64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChartType {
    Line,
    Bar,
    Pie,
    Area,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AlertVariant {
    Info,
    Warning,
    Danger,
    Success,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FieldType {
    Text,
    Number,
    Select,
    Checkbox,
    Textarea,
    Date,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct FormField {
    name: String,
    label: String,
    #[serde(rename = "type")]
    field_type: FieldType,
    /// Choices of a select field.
    options: Option<Vec<String>>,
    required: Option<bool>,
    default: Option<Value>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RenderBlocksArgs {
    /// Blocks to render in order: markdown, table, chart, form, code, image, alert, json.
    blocks: Vec<Block>,
    /// Optional title shown above the blocks.
    title: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct AskUserArgs {
    /// The question to ask.
    question: String,
    /// Optional list of choices; shown as buttons instead of a free-text input. Each choice
    /// needs visible text: a blank one would be a button with no label, which Telegram refuses.
    #[schemars(inner(length(min = 1), regex(pattern = r"\S")))]
    options: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SendMessageArgs {
    /// Message text (markdown).
    text: String,
}

/// What a chart's schema cannot say: each series has a value per label, and a pie one series.
fn check_chart(chart: &Value) -> Result<(), String> {
    let labels = chart["data"]["labels"].as_array().map_or(0, Vec::len);
    let series = chart["data"]["datasets"].as_array().map(Vec::as_slice).unwrap_or_default();
    if chart["chartType"] == "pie" && series.len() != 1 {
        return Err(format!("a pie chart shows one series in `datasets`, not {}", series.len()));
    }
    for one in series {
        let values = one["data"].as_array().map_or(0, Vec::len);
        if values != labels {
            return Err(format!(
                "the chart series {:?} has {values} values for {labels} labels: give one value per label",
                one["label"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// Checks a pausing call beyond its schema (what a schema cannot say). Used by the loop
/// before it parks the call, so a malformed call comes back to the model at once.
pub fn check_pausing_call(name: &str, args: &Value) -> Result<(), ToolError> {
    let invalid =
        |problem: &str| ToolError::InvalidArguments { tool: name.to_owned(), problems: vec![problem.to_owned()] };
    match name {
        "render_and_wait" => {
            let has = |field: &str| args.get(field).is_some_and(|value| !value.is_null());
            match (has("component"), has("code")) {
                (true, true) => Err(invalid("give exactly one of `component` or `code`, not both")),
                (false, false) => {
                    Err(invalid("give exactly one of `component` (a stored component's name) or `code` (inline JSX)"))
                }
                _ => Ok(()),
            }
        }
        "render_blocks" => {
            let forms = args["blocks"]
                .as_array()
                .map_or(0, |blocks| blocks.iter().filter(|block| block["type"] == "form").count());
            if forms > 1 {
                return Err(invalid("at most one form block per render_blocks call: its submit is the answer"));
            }
            for chart in args["blocks"].as_array().into_iter().flatten().filter(|block| block["type"] == "chart") {
                check_chart(chart).map_err(|problem| invalid(&problem))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn outside_conversation(name: &'static str) -> Result<Value, ToolError> {
    Err(ToolError::Rejected(format!(
        "{name} waits for the person in the canvas, so it can only be called by the agent during a conversation"
    )))
}

pub(crate) fn tools() -> Vec<Box<dyn Tool>> {
    vec![
        Builtin::<RenderAndWaitArgs>::pausing(
            "render_and_wait",
            "Render a React component in the canvas (a stored one by `component` name, or inline JSX in `code`) \
             with `props`, and wait for the person: the run pauses until the component calls \
             callTool(action, payload); that becomes this call's result, typically {action, ...payload}. \
             Components run without a DOM (no document, window, links, images or iframes).",
            Presentation::Component,
            |_, _| Box::pin(async { outside_conversation("render_and_wait") }),
        ),
        Builtin::<RenderBlocksArgs>::pausing(
            "render_blocks",
            "Show structured blocks in the canvas without writing a component: markdown, table {columns:[{key,label}], \
             data}, chart {chartType: line|bar|pie|area, data: {labels: [...], datasets: [{label, data: [numbers]}]}}, form {fields, submitLabel}, code, image, alert \
             {variant: info|warning|danger|success}, json. Pauses until the person answers: a form returns \
             {action: \"submit\", data: {field: value}}; without a form the person dismisses: {action: \"dismissed\"}. A new message from the person while it waits \
             dismisses it too: {action: \"dismissed\"}.",
            Presentation::Form,
            |_, _| Box::pin(async { outside_conversation("render_blocks") }),
        ),
        Builtin::<AskUserArgs>::pausing(
            "ask_user",
            "Ask the person a question in the chat and wait for the answer ({answer: string}). With `options` they pick \
             one from buttons. Use it when you cannot safely act without their decision.",
            Presentation::Question,
            |_, _| Box::pin(async { outside_conversation("ask_user") }),
        ),
        Builtin::<SendMessageArgs>::boxed(
            "send_message",
            "Show a message (markdown) in the chat at once, without pausing: progress updates during long tasks.",
            |_, _| Box::pin(async { Ok(json!({ "ok": true })) }),
        ),
    ]
}
