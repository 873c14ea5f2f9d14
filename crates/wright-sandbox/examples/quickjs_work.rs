//! `quickjs_work FILE [--input FILE] [--repeat N] [--warmup N]`: QuickJS's own time for a
//! workload, in this process, with nothing of the sandbox around it — the baseline that the
//! pool's latency is compared with (`bench/peers.sh`): what the pool adds is its median minus
//! this one.
//!
//! The workload body is compiled once, in one warm context, as the peers' harness wraps it:
//! `JSON.stringify((function (input) { BODY })(input))`; each timed run is one call of that with
//! the input already a JS string. Same QuickJS build and release profile as the workers.

use rquickjs::{Context, Function, Runtime};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let (mut file, mut input_file, mut repeat, mut warmup) = (None, None, 200usize, 10usize);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--input" => input_file = Some(arguments.next().ok_or("--input FILE")?),
            "--repeat" => repeat = arguments.next().ok_or("--repeat N")?.parse()?,
            "--warmup" => warmup = arguments.next().ok_or("--warmup N")?.parse()?,
            _ => file = Some(argument),
        }
    }
    let body = std::fs::read_to_string(file.ok_or("usage: quickjs_work FILE [--input FILE] [--repeat N]")?)?;
    let input = input_file.map(std::fs::read_to_string).transpose()?;
    let runtime = Runtime::new()?;
    runtime.set_memory_limit(64 * 1024 * 1024);
    let context = Context::full(&runtime)?;
    let (median_ms, p95_ms, result) = context.with(|ctx| -> Result<_, Box<dyn std::error::Error>> {
        let source = format!("(function (input) {{ return JSON.stringify((function (input) {{\n{body}\n}})(input)); }})");
        let function: Function<'_> = ctx.eval(source)?;
        let input_value = match &input {
            Some(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
            None => rquickjs::Value::new_undefined(ctx.clone()),
        };
        let mut result = String::new();
        for _ in 0..warmup {
            result = function.call::<_, String>((input_value.clone(),))?;
        }
        let mut samples = Vec::with_capacity(repeat);
        for _ in 0..repeat.max(1) {
            let started = Instant::now();
            let value = function.call::<_, rquickjs::Value<'_>>((input_value.clone(),))?;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            drop(value);
        }
        samples.sort_by(f64::total_cmp);
        let median = samples[samples.len() / 2];
        let p95 = samples[((samples.len() as f64 * 0.95).ceil() as usize).clamp(1, samples.len()) - 1];
        Ok((median, p95, result))
    })?;
    println!(
        "{}",
        serde_json::json!({"median_ms": median_ms, "p95_ms": p95_ms, "runs": repeat, "result_json": result})
    );
    Ok(())
}
