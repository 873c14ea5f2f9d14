//! `quickjs_work FILE [--input FILE] [--repeat N] [--warmup N] [--fresh-context]`: QuickJS's own time for a
//! workload, in this process, with nothing of the sandbox around it — the baseline that the
//! pool's latency is compared with (`bench/peers.sh`): what the pool adds is its median minus
//! this one.
//!
//! The workload body is compiled as the peers' harness wraps it,
//! `JSON.stringify((function (input) { BODY })(input))`, and each timed run is one call of that
//! with the input already a JS string: compiling is not timed. By default every run is in one
//! warm context; with `--fresh-context` each run is in a new context of the same runtime, the
//! last one freed and collected first (as in the sandbox, which makes one per call), so the
//! difference between the two is what a fresh context costs the work itself. Same QuickJS build and release profile as the workers.

use rquickjs::{Context, Function, Runtime};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let (mut file, mut input_file, mut repeat, mut warmup, mut fresh_context) = (None, None, 200usize, 10usize, false);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--input" => input_file = Some(arguments.next().ok_or("--input FILE")?),
            "--repeat" => repeat = arguments.next().ok_or("--repeat N")?.parse()?,
            "--warmup" => warmup = arguments.next().ok_or("--warmup N")?.parse()?,
            "--fresh-context" => fresh_context = true,
            _ => file = Some(argument),
        }
    }
    let body = std::fs::read_to_string(file.ok_or("usage: quickjs_work FILE [--input FILE] [--repeat N]")?)?;
    let input = input_file.map(std::fs::read_to_string).transpose()?;
    let runtime = Runtime::new()?;
    runtime.set_memory_limit(64 * 1024 * 1024);
    let source = format!("(function (input) {{ return JSON.stringify((function (input) {{\n{body}\n}})(input)); }})");
    // One call in `context`: compile it there (untimed), then time the call alone.
    let call = |context: &Context| -> Result<(f64, String), Box<dyn std::error::Error>> {
        context.with(|ctx| {
            let function: Function<'_> = ctx.eval(source.as_str())?;
            let input_value = match &input {
                Some(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
                None => rquickjs::Value::new_undefined(ctx.clone()),
            };
            let started = Instant::now();
            let result = function.call::<_, String>((input_value,))?;
            Ok((started.elapsed().as_secs_f64() * 1000.0, result))
        })
    };
    let warm_context = Context::full(&runtime)?;
    let mut result = String::new();
    for _ in 0..warmup {
        result = call(&warm_context)?.1;
    }
    let mut samples = Vec::with_capacity(repeat);
    for _ in 0..repeat.max(1) {
        let (elapsed, _) = if fresh_context {
            let context = Context::full(&runtime)?;
            let timed = call(&context)?;
            // As a sandbox worker does between calls (untimed): the spent context goes, and one
            // collection reclaims it, so no garbage of earlier runs is left for this one.
            drop(context);
            runtime.run_gc();
            timed
        } else {
            call(&warm_context)?
        };
        samples.push(elapsed);
    }
    samples.sort_by(f64::total_cmp);
    let median_ms = samples[samples.len() / 2];
    let p95_ms = samples[((samples.len() as f64 * 0.95).ceil() as usize).clamp(1, samples.len()) - 1];
    println!(
        "{}",
        serde_json::json!({"median_ms": median_ms, "p95_ms": p95_ms, "runs": repeat, "result_json": result})
    );
    Ok(())
}
