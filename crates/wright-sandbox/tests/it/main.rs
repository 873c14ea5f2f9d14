//! Integration tests for `wright-sandbox`: real worker processes (`wright-sandbox-worker`), a fake
//! host, and the hostile programs a sandbox must survive.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wright_sandbox::{
    ErrorKind, FetchRequest, FetchResponse, HostFuture, MemoryHost, RunLimits, RunOutcome, RunRequest, Sandbox,
    SandboxConfig, SandboxError, SandboxHost, check_syntax,
};

const WORKER: &str = env!("CARGO_BIN_EXE_wright-sandbox-worker");

fn config() -> SandboxConfig {
    SandboxConfig {
        worker_command: vec![WORKER.to_string()],
        pool_size: 1,
        deadline_ms: 3_000,
        grace_ms: 300,
        ..SandboxConfig::default()
    }
}

fn sandbox() -> Sandbox {
    Sandbox::new(config()).expect("sandbox starts")
}

fn memory_host() -> Arc<dyn SandboxHost> {
    Arc::new(MemoryHost::new())
}

async fn run(sandbox: &Sandbox, code: &str) -> RunOutcome {
    sandbox.run(RunRequest::new(code), memory_host()).await
}

async fn run_with(sandbox: &Sandbox, request: RunRequest) -> RunOutcome {
    sandbox.run(request, memory_host()).await
}

fn deadline(ms: u64) -> RunLimits {
    RunLimits { deadline_ms: Some(ms), ..RunLimits::default() }
}

/// The result of a successful outcome, or a panic that shows the failure.
#[track_caller]
fn result(outcome: &RunOutcome) -> &Value {
    match outcome {
        RunOutcome::Success { result, .. } => result,
        RunOutcome::Failure { .. } => panic!("expected success, got {}", outcome.to_json()),
    }
}

/// The error message of a failure of the given kind.
#[track_caller]
fn failure(outcome: &RunOutcome, expected: ErrorKind) -> String {
    match outcome {
        RunOutcome::Failure { kind, error, .. } if *kind == expected => error.clone(),
        _ => panic!("expected a {expected} failure, got {}", outcome.to_json()),
    }
}

fn stack(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Failure { stack, .. } => stack.clone().unwrap_or_default(),
        RunOutcome::Success { .. } => String::new(),
    }
}

/// A fake host: state in memory, `fetch` answered from a script, every request recorded.
#[derive(Default)]
struct FakeHost {
    state: MemoryHost,
    requests: Mutex<Vec<FetchRequest>>,
    fetch_delay: Option<Duration>,
}

impl SandboxHost for FakeHost {
    fn state_get<'a>(&'a self, key: &'a str) -> HostFuture<'a, Option<Value>> {
        self.state.state_get(key)
    }
    fn state_set<'a>(&'a self, key: &'a str, value: Value) -> HostFuture<'a, ()> {
        self.state.state_set(key, value)
    }
    fn state_delete<'a>(&'a self, key: &'a str) -> HostFuture<'a, bool> {
        self.state.state_delete(key)
    }
    fn state_list<'a>(&'a self, prefix: Option<&'a str>) -> HostFuture<'a, Vec<String>> {
        self.state.state_list(prefix)
    }
    fn fetch<'a>(&'a self, request: FetchRequest) -> HostFuture<'a, FetchResponse> {
        Box::pin(async move {
            if let Some(delay) = self.fetch_delay {
                tokio::time::sleep(delay).await;
            }
            if request.url.contains("refused") {
                return Err("egress denied: 10.0.0.1 is a private address".to_string());
            }
            let echo = json!({ "method": request.method, "body": request.body });
            self.requests.lock().unwrap().push(request.clone());
            Ok(FetchResponse {
                status: if request.url.ends_with("/missing") { 404 } else { 200 },
                status_text: "OK".to_string(),
                url: request.url,
                redirected: false,
                headers: vec![
                    ("Content-Type".to_string(), "application/json".to_string()),
                    ("X-Many".to_string(), "a".to_string()),
                    ("x-many".to_string(), "b".to_string()),
                ],
                body: echo.to_string(),
            })
        })
    }
}

// ---------- code semantics ----------

#[tokio::test]
async fn return_value_and_logs_in_seed_shape() {
    let sandbox = sandbox();
    let outcome = run(
        &sandbox,
        "console.log('hi', {a: 1}, [2]); console.warn('careful'); console.error(new Error('bad'));\nreturn 1 + 1;",
    )
    .await;
    assert_eq!(result(&outcome), &json!(2));
    let shown = outcome.to_json();
    assert_eq!(shown["logs"][0], json!("hi {\"a\":1} [2]"));
    assert_eq!(shown["logs"][1], json!("[warn] careful"));
    assert!(shown["logs"][2].as_str().unwrap().starts_with("[error] Error: bad"));
    assert_eq!(shown.as_object().unwrap().keys().collect::<Vec<_>>(), vec!["logs", "result"]);
}

#[tokio::test]
async fn failure_has_error_kind_and_logs() {
    let sandbox = sandbox();
    let outcome = run(&sandbox, "console.info('before');\nthrow new TypeError('nope');").await;
    let shown = outcome.to_json();
    assert_eq!(shown["kind"], json!("runtime"));
    assert_eq!(shown["error"], json!("TypeError: nope"));
    assert_eq!(shown["logs"], json!(["before"]));
}

#[tokio::test]
async fn resolve_or_return_ends_the_call() {
    let sandbox = sandbox();
    assert_eq!(result(&run(&sandbox, "resolve(5); return 6;").await), &json!(5));
    assert_eq!(result(&run(&sandbox, "Promise.resolve(7).then((v) => resolve(v * 2));").await), &json!(14));
    assert_eq!(result(&run(&sandbox, "const v = await Promise.resolve(3);\nreturn v + 1;").await), &json!(4));
    assert_eq!(result(&run(&sandbox, "return Promise.resolve({deep: [1, 2]});").await), &json!({"deep": [1, 2]}));
}

#[tokio::test]
async fn undefined_becomes_null() {
    let sandbox = sandbox();
    assert_eq!(result(&run(&sandbox, "return undefined;").await), &Value::Null);
    assert_eq!(result(&run(&sandbox, "let x = 1;").await), &Value::Null);
    assert_eq!(result(&run(&sandbox, "return [undefined, 1];").await), &json!([null, 1]));
    assert_eq!(
        result(&run(&sandbox, "return {a: undefined, b: new Date(0)};").await),
        &json!({"b": "1970-01-01T00:00:00.000Z"})
    );
    let shared = run(&sandbox, "const o = {k: 1}; return [o, o];").await;
    assert_eq!(result(&shared), &json!([{"k": 1}, {"k": 1}]));
}

#[tokio::test]
async fn non_json_results_are_errors_that_say_so() {
    let sandbox = sandbox();
    let error = failure(&run(&sandbox, "return () => 1;").await, ErrorKind::Runtime);
    assert!(error.contains("result is a function"), "{error}");
    let error = failure(&run(&sandbox, "return {a: {f() {}}};").await, ErrorKind::Runtime);
    assert!(error.contains("result.a.f is a function"), "{error}");
    let error = failure(&run(&sandbox, "return [1, Symbol('s')];").await, ErrorKind::Runtime);
    assert!(error.contains("result[1] is a symbol"), "{error}");
    let error = failure(&run(&sandbox, "const a = {}; a.self = a; return a;").await, ErrorKind::Runtime);
    assert!(error.contains("cycle"), "{error}");
    let error = failure(&run(&sandbox, "return 10n;").await, ErrorKind::Runtime);
    assert!(error.contains("BigInt"), "{error}");
    // The path of a value written after whole subtrees, arrays and `toJSON` results.
    let code = "return {a: [1, {b: 2}], c: {d: {e: [0, {toJSON() { return {g: () => 1}; }}]}}};";
    let error = failure(&run(&sandbox, code).await, ErrorKind::Runtime);
    assert!(error.contains("result.c.d.e[1].g is a function"), "{error}");
    let code = "const o = {s: Symbol('s')}; return {x: {y: [o]}, z: 1};";
    let error = failure(&run(&sandbox, code).await, ErrorKind::Runtime);
    assert!(error.contains("result.x.y[0].s is a symbol"), "{error}");
}

#[tokio::test]
async fn uncaught_error_stack_points_into_agent_code() {
    let sandbox = sandbox();
    let code = "const a = 1;\nfunction inner(o) {\n  return o.x.y;\n}\nreturn inner({});";
    let outcome = run(&sandbox, code).await;
    let error = failure(&outcome, ErrorKind::Runtime);
    assert!(error.contains("TypeError"), "{error}");
    let stack = stack(&outcome);
    assert!(stack.contains("tool.js:3:"), "{stack}");
    assert!(stack.contains("tool.js:5:"), "{stack}");
    assert!(!stack.contains("prelude.js"), "{stack}");
    // Line 1: the column is the agent's own, not shifted by the wrapper.
    let outcome = run(&sandbox, "  let q = 1; q.foo.bar;").await;
    assert!(stack_of(&outcome).contains("tool.js:1:14"), "{}", stack_of(&outcome));
}

fn stack_of(outcome: &RunOutcome) -> String {
    stack(outcome)
}

#[tokio::test]
async fn syntax_errors_have_kind_line_and_column() {
    let sandbox = sandbox();
    let error = failure(&run(&sandbox, "const a = 1;\nlet x = ;").await, ErrorKind::Syntax);
    assert!(error.contains("line 2, column 9"), "{error}");
    match check_syntax("return 1;\nconst = 2;") {
        Err(SandboxError::Syntax { line, column, message }) => {
            assert_eq!(line, 2, "{message}");
            assert_eq!(column, 7, "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    match check_syntax("let x = ;") {
        Err(SandboxError::Syntax { line: 1, column: 9, .. }) => {}
        other => panic!("expected 1:9, got {other:?}"),
    }
    check_syntax("const r = await state.get('k');\nreturn r;").expect("valid code compiles");
}

#[tokio::test]
async fn check_syntax_never_runs_the_code() {
    // Code that escapes the function wrapper compiles, but must not run while being checked.
    let started = Instant::now();
    check_syntax("}); while (true) {} (async function () {").expect("escaping code is still syntax");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn args_and_input_are_globals() {
    let sandbox = sandbox();
    let request = RunRequest::new("return {n: args.n * 2, input, kind: typeof input};")
        .with_args(json!({"n": 21}))
        .with_input("text");
    assert_eq!(result(&run_with(&sandbox, request).await), &json!({"n": 42, "input": "text", "kind": "string"}));
    assert_eq!(result(&run(&sandbox, "return [typeof input, args];").await), &json!(["undefined", {}]));
}

#[tokio::test]
async fn code_that_never_finishes_is_an_error() {
    let sandbox = sandbox();
    let error = failure(&run(&sandbox, "await new Promise(() => {});").await, ErrorKind::Runtime);
    assert!(error.contains("never finished"), "{error}");
}

// ---------- host bindings ----------

#[tokio::test]
async fn state_get_set_delete_list() {
    let sandbox = sandbox();
    let host = Arc::new(FakeHost::default());
    let code = "await state.set('a', {n: 1});\nawait state.set('b', [1, 2]);\nawait state.set('other', 'x');\n\
                const a = await state.get('a');\nconst missing = await state.get('zzz');\n\
                const deleted = await state.delete('b');\nconst again = await state.delete('b');\n\
                return {a, missing, deleted, again, all: await state.list(), some: await state.list('o')};";
    let outcome = sandbox.run(RunRequest::new(code), host.clone()).await;
    assert_eq!(
        result(&outcome),
        &json!({"a": {"n": 1}, "missing": null, "deleted": true, "again": false, "all": ["a", "other"], "some": ["other"]})
    );
    assert_eq!(host.state.snapshot().get("a"), Some(&json!({"n": 1})));
    let error =
        failure(&sandbox.run(RunRequest::new("await state.set('', 1);"), host.clone()).await, ErrorKind::Runtime);
    assert!(error.contains("non-empty strings"), "{error}");
    let error =
        failure(&sandbox.run(RunRequest::new("await state.set('f', () => 1);"), host).await, ErrorKind::Runtime);
    assert!(error.contains("must be JSON"), "{error}");
}

#[tokio::test]
async fn fetch_returns_a_response() {
    let sandbox = sandbox();
    let host = Arc::new(FakeHost::default());
    let code = "const r = await fetch('https://example.com/x', {method: 'post', headers: {'X-Token': 't'}, body: {q: 1}});\n\
                const missing = await fetch('https://example.com/missing');\n\
                return {status: r.status, ok: r.ok, type: r.headers.get('content-type'), many: r.headers.get('X-MANY'),\n\
                        none: r.headers.get('nope'), json: await r.json(), missingOk: missing.ok, missingStatus: missing.status,\n\
                        text: await missing.text()};";
    let outcome = sandbox.run(RunRequest::new(code), host.clone()).await;
    assert_eq!(
        result(&outcome),
        &json!({"status": 200, "ok": true, "type": "application/json", "many": "a, b", "none": null,
                "json": {"method": "POST", "body": "{\"q\":1}"}, "missingOk": false, "missingStatus": 404,
                "text": "{\"body\":null,\"method\":\"GET\"}"})
    );
    let requests = host.requests.lock().unwrap().clone();
    assert_eq!(requests[0].method, "POST");
    assert!(requests[0].headers.contains(&("X-Token".to_string(), "t".to_string())));
    assert!(requests[0].headers.contains(&("content-type".to_string(), "application/json".to_string())));
    let error =
        failure(&sandbox.run(RunRequest::new("await fetch('http://refused/');"), host).await, ErrorKind::Runtime);
    assert!(error.contains("egress denied"), "{error}");
}

#[tokio::test]
async fn fetch_is_untouched_by_globals_changed_before_its_first_use() {
    // `fetch`'s part is read into the context before the code runs: it must work from the
    // globals as they were then, not as the code left them before its first fetch.
    let sandbox = sandbox();
    let host = Arc::new(FakeHost::default());
    let code = "Map = undefined; Object.freeze = null; JSON.stringify = () => 'tampered'; Symbol.iterator;\n\
                globalThis.Symbol = undefined; String = undefined;\n\
                const r = await fetch('https://example.com/x', {method: 'post', body: {q: 1}});\n\
                const again = await fetch('https://example.com/y');\n\
                return {many: r.headers.get('x-many'), pairs: [...r.headers].length, frozen: Object.isFrozen(r),\n\
                        json: await r.json(), again: again.status, name: fetch.name};";
    let outcome = sandbox.run(RunRequest::new(code), host.clone()).await;
    assert_eq!(
        result(&outcome),
        &json!({"many": "a, b", "pairs": 2, "frozen": true, "json": {"method": "POST", "body": "{\"q\":1}"},
                "again": 200, "name": "fetchFunction"})
    );
    // Its errors point at the agent's line, never at the prelude.
    let outcome = sandbox
        .run(RunRequest::new("const r = await fetch('https://example.com/');\nawait r.text();\nawait r.text();"), host)
        .await;
    let error = failure(&outcome, ErrorKind::Runtime);
    assert!(error.contains("already read"), "{error}");
    let stack = stack(&outcome);
    assert!(!stack.contains("prelude"), "{stack}");
    assert!(stack.contains("tool.js:3"), "{stack}");
}

#[tokio::test]
async fn fetch_is_capped_per_call() {
    let sandbox = sandbox();
    let host = Arc::new(FakeHost::default());
    let code = "let n = 0;\ntry { for (;;) { await fetch('https://example.com/' + n); n++; } } catch (e) { return [n, e.message]; }";
    let outcome = sandbox.run(RunRequest::new(code), host.clone()).await;
    assert_eq!(result(&outcome), &json!([20, "fetch limit reached: at most 20 requests per call"]));
    // The count is per call.
    let outcome = sandbox.run(RunRequest::new("return (await fetch('https://example.com/')).status;"), host).await;
    assert_eq!(result(&outcome), &json!(200));
}

#[tokio::test]
async fn fetch_time_counts_against_the_deadline() {
    let sandbox = sandbox();
    let host = Arc::new(FakeHost { fetch_delay: Some(Duration::from_secs(5)), ..FakeHost::default() });
    let started = Instant::now();
    let request = RunRequest::new("try { await fetch('https://slow.example/'); } catch (e) {}\nreturn 'went on';")
        .with_limits(deadline(300));
    let outcome = sandbox.run(request, host).await;
    failure(&outcome, ErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_millis(300 + 300 + 400), "{:?}", started.elapsed());
}

#[tokio::test]
async fn logs_are_capped() {
    let sandbox = sandbox();
    let outcome = run(&sandbox, "for (let i = 0; i < 5000; i++) console.log('line ' + i);\nreturn 'done';").await;
    assert_eq!(result(&outcome), &json!("done"));
    let logs = outcome.logs();
    assert_eq!(logs.len(), 1001);
    assert!(logs.last().unwrap().contains("logs truncated"));
    let outcome = run(&sandbox, "console.log('x'.repeat(200000));\nconsole.log('more');\nreturn 1;").await;
    let logs = outcome.logs();
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0].len(), 64 * 1024);
    assert!(logs[1].contains("logs truncated"));
}

#[tokio::test]
async fn large_results_are_refused() {
    let sandbox = sandbox();
    let error = failure(&run(&sandbox, "return 'x'.repeat(2 * 1024 * 1024);").await, ErrorKind::OutputTooLarge);
    assert!(error.contains("limit is 1048576 bytes"), "{error}");
    let request = RunRequest::new("return 'x'.repeat(100);")
        .with_limits(RunLimits { max_result_bytes: Some(50), ..RunLimits::default() });
    failure(&run_with(&sandbox, request).await, ErrorKind::OutputTooLarge);
}

// ---------- limits and hostile code ----------

#[tokio::test]
async fn infinite_loop_times_out_on_time() {
    let sandbox = sandbox();
    let started = Instant::now();
    let outcome = run_with(&sandbox, RunRequest::new("while (true) {}").with_limits(deadline(200))).await;
    let error = failure(&outcome, ErrorKind::Timeout);
    assert!(error.contains("200 ms"), "{error}");
    assert!(started.elapsed() < Duration::from_millis(450), "{:?}", started.elapsed());
    // Catching the interrupt does not help.
    let code = "for (;;) { try { while (true) {} } catch (e) { console.log('caught'); } }";
    failure(&run_with(&sandbox, RunRequest::new(code).with_limits(deadline(200))).await, ErrorKind::Timeout);
    assert_eq!(result(&run(&sandbox, "return 'alive';").await), &json!("alive"));
}

#[tokio::test]
async fn native_builtins_that_ignore_the_interrupt_are_killed_by_the_watchdog() {
    let sandbox = sandbox();
    for code in [
        "return new Array(1e9).join('');",
        "return new Array(2e8).fill(0).length;",
        "const a = new Array(1e9); return a.indexOf(1);",
    ] {
        let started = Instant::now();
        let outcome = run_with(&sandbox, RunRequest::new(code).with_limits(deadline(300))).await;
        let elapsed = started.elapsed();
        assert!(
            matches!(outcome.kind(), Some(ErrorKind::Timeout | ErrorKind::Memory)),
            "{code}: {}",
            outcome.to_json()
        );
        // deadline + grace (300 ms) + reaping and scheduling slack
        assert!(elapsed < Duration::from_millis(300 + 300 + 300), "{code}: {elapsed:?}");
        assert_eq!(result(&run(&sandbox, "return 1;").await), &json!(1), "the pool recovers after {code}");
    }
}

#[tokio::test]
async fn deep_recursion_is_a_runtime_error() {
    let sandbox = sandbox();
    let error =
        failure(&run(&sandbox, "function f(n) { return f(n + 1) + 1; }\nreturn f(0);").await, ErrorKind::Runtime);
    assert!(error.contains("stack"), "{error}");
    let error = failure(
        &run(&sandbox, "const f = async (n) => (await f(n + 1)) + 1;\nreturn await f(0);").await,
        ErrorKind::Runtime,
    );
    assert!(error.contains("stack"), "{error}");
    // A nested result too deep for JSON.stringify.
    let code = "let o = {}; const root = o; for (let i = 0; i < 1e6; i++) { o.c = {}; o = o.c; }\nreturn root;";
    let outcome = run(&sandbox, code).await;
    assert!(matches!(outcome.kind(), Some(ErrorKind::Runtime | ErrorKind::Memory)), "{}", outcome.to_json());
    assert_eq!(result(&run(&sandbox, "return 'alive';").await), &json!("alive"));
}

#[tokio::test]
async fn memory_bombs_are_memory_errors() {
    let sandbox = sandbox();
    for code in [
        "const a = []; for (let i = 0; ; i++) a.push(new Array(65536).fill(i));",
        "const parts = []; for (let i = 0; ; i++) parts.push('x'.repeat(1 << 16) + i);",
        "return 'x'.repeat(1e9).length;",
        "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i});",
        "const a = []; try { for (;;) a.push(new Array(65536).fill(1)); } catch (e) { throw e; }",
        "const buffers = []; for (;;) buffers.push(new ArrayBuffer(1 << 20));",
    ] {
        let outcome = run(&sandbox, code).await;
        let error = failure(&outcome, ErrorKind::Memory);
        assert!(error.contains("out of memory"), "{code}: {error}");
    }
    // A bomb the code catches: it goes on with a working (if strained) heap, then the next call
    // has a fresh one.
    let outcome = run(
        &sandbox,
        "try { const a = []; for (;;) a.push(new Array(65536).fill(1)); } catch (e) { return 'caught ' + e; }",
    )
    .await;
    assert!(
        matches!(&outcome, RunOutcome::Success { .. } | RunOutcome::Failure { kind: ErrorKind::Memory, .. }),
        "{}",
        outcome.to_json()
    );
    assert_eq!(result(&run(&sandbox, "return new Array(1000).fill(1).length;").await), &json!(1000));
}

#[tokio::test]
async fn thrown_null_is_not_out_of_memory() {
    let sandbox = sandbox();
    let error = failure(&run(&sandbox, "throw null;").await, ErrorKind::Runtime);
    assert_eq!(error, "uncaught null");
    let error = failure(&run(&sandbox, "throw 'plain';").await, ErrorKind::Runtime);
    assert!(error.contains("plain"), "{error}");
}

#[tokio::test]
async fn memory_limit_is_per_call() {
    let sandbox = sandbox();
    let code = "const a = new Array(2 * 1024 * 1024).fill(1.5); return a.length;"; // 32 MiB of values
    assert_eq!(result(&run(&sandbox, code).await), &json!(2 * 1024 * 1024));
    let small = RunRequest::new(code)
        .with_limits(RunLimits { memory_limit_bytes: Some(8 * 1024 * 1024), ..RunLimits::default() });
    failure(&run_with(&sandbox, small).await, ErrorKind::Memory);
}

#[tokio::test]
async fn catastrophic_regex_is_stopped() {
    let sandbox = sandbox();
    let started = Instant::now();
    let outcome =
        run_with(&sandbox, RunRequest::new("return /(a+)+$/.test('a'.repeat(40) + 'b');").with_limits(deadline(300)))
            .await;
    failure(&outcome, ErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_millis(900), "{:?}", started.elapsed());
}

#[tokio::test]
async fn promise_floods_are_stopped() {
    let sandbox = sandbox();
    // An endless chain of microtasks. On a worker's first call QuickJS does not reclaim the
    // chain's links and the heap reaches 64 MiB in about 260-330 ms (release build), so either
    // limit may stop it first — and a pool has more than one worker, so the second call may be
    // another worker's first.
    let code = "function spin() { return Promise.resolve().then(spin); }\nspin();\nawait new Promise(() => {});";
    for _ in 0..2 {
        let outcome = run_with(&sandbox, RunRequest::new(code).with_limits(deadline(300))).await;
        assert!(matches!(outcome.kind(), Some(ErrorKind::Timeout | ErrorKind::Memory)), "{}", outcome.to_json());
    }
    // Synchronously queued forever.
    let code = "for (;;) Promise.resolve().then(() => {});";
    let outcome = run_with(&sandbox, RunRequest::new(code).with_limits(deadline(300))).await;
    assert!(matches!(outcome.kind(), Some(ErrorKind::Timeout | ErrorKind::Memory)), "{}", outcome.to_json());
    // Pending promises piling up.
    let code = "const all = []; for (;;) all.push(new Promise(() => {}));";
    failure(&run(&sandbox, code).await, ErrorKind::Memory);
    // Fan-out that finishes.
    let code = "const all = []; for (let i = 0; i < 10000; i++) all.push(Promise.resolve(i));\nreturn (await Promise.all(all)).length;";
    assert_eq!(result(&run(&sandbox, code).await), &json!(10000));
}

#[tokio::test]
async fn typed_arrays_exist_for_code_that_names_them() {
    let sandbox = sandbox();
    let code = "const bytes = new Uint8Array([1, 2, 255]); const view = new DataView(bytes.buffer);\n\
                return [bytes.length, view.getUint8(2), new Float64Array(2).length, ArrayBuffer.isView(bytes),\n\
                        typeof SharedArrayBuffer, typeof Atomics];";
    assert_eq!(result(&run(&sandbox, code).await), &json!([3, 255, 2, true, "undefined", "undefined"]));
    // Named in a string is named: the Function constructor's code sees them too.
    let code = "return new Function('return new Int32Array(4).length')();";
    assert_eq!(result(&run(&sandbox, code).await), &json!(4));
    // The next call's context is fresh: code that names none of them has none of them.
    let code = "return ['Uint' + '8Array', 'Data' + 'View'].map((name) => typeof globalThis[name]);";
    assert_eq!(result(&run(&sandbox, code).await), &json!(["undefined", "undefined"]));
}

#[tokio::test]
async fn date_exists_for_code_that_names_it() {
    let sandbox = sandbox();
    let code = "const d = new Date(Date.UTC(2020, 1, 29));\n\
                return [d.toISOString(), JSON.stringify({d}), typeof Date.now(), d instanceof Date];";
    assert_eq!(
        result(&run(&sandbox, code).await),
        &json!(["2020-02-29T00:00:00.000Z", "{\"d\":\"2020-02-29T00:00:00.000Z\"}", "number", true])
    );
    // Named in a string is named.
    assert_eq!(result(&run(&sandbox, "return new Function('return typeof Date')();").await), &json!("function"));
    // The next call's context is fresh: code that does not name it has none.
    assert_eq!(result(&run(&sandbox, "return typeof globalThis['Da' + 'te'];").await), &json!("undefined"));
}

#[tokio::test]
async fn whatever_is_thrown_is_described() {
    let sandbox = sandbox();
    let described = |outcome: RunOutcome| failure(&outcome, ErrorKind::Runtime);
    assert!(described(run(&sandbox, "throw new RangeError('too far');").await).starts_with("RangeError: too far"));
    let error = described(run(&sandbox, "throw {name: 'Custom', message: 'shaped like an error'};").await);
    assert!(error.starts_with("Custom: shaped like an error"), "{error}");
    assert_eq!(described(run(&sandbox, "throw {code: 7};").await), "uncaught object: {\"code\":7}");
    assert_eq!(described(run(&sandbox, "throw 42;").await), "uncaught number: 42");
    assert_eq!(described(run(&sandbox, "throw 'plain words';").await), "uncaught string: plain words");
    assert_eq!(described(run(&sandbox, "throw Symbol('s');").await), "uncaught symbol: Symbol(s)");
    assert_eq!(described(run(&sandbox, "throw undefined;").await), "uncaught undefined: undefined");
    let error = described(run(&sandbox, "await Promise.reject(new TypeError('later'));").await);
    assert!(error.starts_with("TypeError: later"), "{error}");
    // A result's JSON is QuickJS's own: replacing JSON.stringify changes nothing of it.
    let code = "JSON.stringify = () => 'hacked'; Array.isArray = () => false; return {a: [1, {b: 'c'}]};";
    assert_eq!(result(&run(&sandbox, code).await), &json!({"a": [1, {"b": "c"}]}));
    let error = described(run(&sandbox, "return {list: [1, {deep: 2n}]};").await);
    assert!(error.contains("result.list[1].deep is a BigInt"), "{error}");
}

#[tokio::test]
async fn maps_sets_proxies_and_regular_expressions_exist_for_code_that_may_use_them() {
    let sandbox = sandbox();
    let code = "const m = new Map([[1, 'a']]); const s = new Set([1, 1, 2]); const w = new WeakMap();\n\
                const p = new Proxy({}, {get: (_, key) => key + '!'});\n\
                return [m.get(1), s.size, typeof w.set, p.x, new RegExp('a+').test('caat')];";
    assert_eq!(result(&run(&sandbox, code).await), &json!(["a", 2, "function", "x!", true]));
    // A regular expression literal needs no name; the compiler asks for it.
    assert_eq!(result(&run(&sandbox, "return 'a-b'.split(/-/).length;").await), &json!(2));
    // Methods that make a RegExp from a string, and code compiled at run time.
    assert_eq!(result(&run(&sandbox, "return ['abc'.match('b').index, 'abc'.search('c')];").await), &json!([1, 2]));
    assert_eq!(result(&run(&sandbox, "return new Function('return /x/.test(\"x\")')();").await), &json!(true));
    // Fresh contexts: code that names none of them has none of them, whatever its comments say.
    let code = "// Keeps a Map and a Set, a Proxy, a RegExp.\n\
                return ['Ma' + 'p', 'Se' + 't', 'Pro' + 'xy', 'Reg' + 'Exp'].map((name) => typeof globalThis[name]);";
    assert_eq!(result(&run(&sandbox, code).await), &json!(["undefined", "undefined", "undefined", "undefined"]));
    // Without RegExp, a method that needs one fails with a TypeError, not a crash.
    let outcome = run(&sandbox, "return 'abc'['ma' + 'tch']('b');").await;
    assert!(failure(&outcome, ErrorKind::Runtime).contains("TypeError"), "{outcome:?}");
}

#[tokio::test]
async fn the_prelude_globals_exist_for_code_that_names_them() {
    let sandbox = sandbox();
    let code = "console.log('hi'); await state.set('k', 1);\n\
                return [typeof console.log, typeof state.get, typeof fetch, typeof resolve, typeof args, typeof input];";
    let outcome = run(&sandbox, code).await;
    assert_eq!(result(&outcome), &json!(["function", "function", "function", "function", "object", "undefined"]));
    assert_eq!(outcome.to_json()["logs"], json!(["hi"]));
    // Not named (a comment does not count): not there; `args` and `input` always are.
    let code = "// console, state, fetch and resolve are not used here\n\
                return ['con' + 'sole', 'sta' + 'te', 'fet' + 'ch', 'reso' + 'lve', 'args', 'input']\n\
                  .map((name) => name in globalThis);";
    assert_eq!(result(&run(&sandbox, code).await), &json!([false, false, false, false, true, true]));
}

#[tokio::test]
async fn nothing_of_the_host_is_reachable() {
    let sandbox = sandbox();
    let code = "return ['require', 'process', 'std', 'os', 'module', 'exports', 'Deno', 'Bun', 'setTimeout', 'setInterval',\n\
                'setImmediate', 'clearTimeout', 'XMLHttpRequest', 'WebSocket', 'Worker', 'FinalizationRegistry', 'WeakRef',\n\
                'SharedArrayBuffer', 'Atomics', 'native', 'scriptArgs', 'print', 'gc', '__loadScript']\n\
                .filter((name) => typeof globalThis[name] !== 'undefined');";
    assert_eq!(result(&run(&sandbox, code).await), &json!([]));
    // Dynamic import has no loader behind it.
    let outcome = run(&sandbox, "return await import('std');").await;
    let error = failure(&outcome, ErrorKind::Runtime);
    assert!(!error.is_empty());
    let outcome = run(&sandbox, "return await import('/etc/passwd');").await;
    failure(&outcome, ErrorKind::Runtime);
    // Nor the name the prelude had when it was a module of the context.
    let outcome = run(&sandbox, "const m = await import('prelude.js'); return typeof m.default;").await;
    assert!(failure(&outcome, ErrorKind::Runtime).contains("the sandbox has no modules"), "{outcome:?}");
    // Static import is not even syntax inside a function body.
    failure(&run(&sandbox, "import fs from 'fs';").await, ErrorKind::Syntax);
    // The functions that reach the host do not expose what is behind them.
    let code = "return [Object.getOwnPropertyNames(state).sort(), String(state.get).includes('native')];";
    let outcome = run(&sandbox, code).await;
    assert_eq!(result(&outcome)[0], json!(["delete", "get", "list", "set"]));
    // The Function constructor and eval see only this context.
    let code = "return [typeof new Function('return this')().process, eval('typeof require')];";
    assert_eq!(result(&run(&sandbox, code).await), &json!(["undefined", "undefined"]));
}

#[tokio::test]
async fn no_work_outlives_its_call() {
    let sandbox = sandbox();
    let host = Arc::new(FakeHost::default());
    // Jobs still queued when the call resolves are dropped with its runtime.
    let code = "resolve('early');\nPromise.resolve().then(async () => { await state.set('leak', 1); });\nqueueMicrotask(() => console.log('late'));";
    let outcome = sandbox.run(RunRequest::new(code), host.clone()).await;
    assert_eq!(result(&outcome), &json!("early"));
    let outcome = sandbox.run(RunRequest::new("return await state.get('leak');"), host.clone()).await;
    assert_eq!(result(&outcome), &Value::Null);
    assert!(outcome.logs().is_empty());
    assert!(host.state.snapshot().is_empty());
}

#[tokio::test]
async fn prelude_changes_do_not_leak_into_the_next_call() {
    let sandbox = sandbox();
    let pids = sandbox.worker_pids();
    assert_eq!(pids.len(), 1);
    let tamper = "Array.prototype.map = null; Object.prototype.polluted = 'yes'; globalThis.left = 42;\n\
                  JSON.stringify = () => '\"hacked\"'; console.log = null; state.get = null; fetch.x = 1;\n\
                  Object.defineProperty(globalThis, 'sticky', {value: 1, configurable: false});\n\
                  Error.prototype.toString = () => 'hacked'; Promise.prototype.then = null; args.mutated = true;\n\
                  String.prototype.trim = () => 'hacked'; Math.random = () => 4; Symbol.for('wright-leak');\n\
                  return 1;";
    assert_eq!(result(&run(&sandbox, tamper).await), &json!(1));
    let probe = "return {left: typeof left, sticky: typeof sticky, polluted: ({}).polluted === undefined, map: typeof [].map,\n\
                 json: JSON.stringify({a: 1}), log: typeof console.log, get: typeof state.get, fetchX: fetch.x === undefined,\n\
                 then: typeof Promise.prototype.then, trim: ' a '.trim(), random: Math.random() < 1, args};";
    let outcome = run(&sandbox, probe).await;
    assert_eq!(
        result(&outcome),
        &json!({"left": "undefined", "sticky": "undefined", "polluted": true, "map": "function", "json": "{\"a\":1}",
                "log": "function", "get": "function", "fetchX": true, "then": "function", "trim": "a", "random": true, "args": {}})
    );
    // The same worker process served both calls: the isolation comes from the fresh context.
    assert_eq!(sandbox.worker_pids(), pids);
}

/// Workers keep compiled code by its text: a tool updated to a same-length text and then rolled
/// back runs each version's own code on every worker, each call in a fresh context.
#[tokio::test]
async fn updated_and_rolled_back_tools_never_run_stale_bytecode() {
    let sandbox = Sandbox::new(SandboxConfig { pool_size: 2, ..config() }).expect("sandbox starts");
    let version_1 = "globalThis.n = (globalThis.n || 0) + 1; return 'v1:' + n + ':' + args.x;";
    let version_2 = "globalThis.n = (globalThis.n || 0) + 1; return 'v2:' + n + ':' + args.x;";
    assert_eq!(version_1.len(), version_2.len());
    for (version, expected) in [(version_1, "v1:1:7"), (version_2, "v2:1:7"), (version_1, "v1:1:7")] {
        // Four calls: both workers compile or load each version at least once.
        for _ in 0..4 {
            let outcome = run_with(&sandbox, RunRequest::new(version).with_args(json!({"x": 7}))).await;
            assert_eq!(result(&outcome), &json!(expected));
        }
    }
}

/// A worker gives up new descriptors, processes, privileges and core dumps before any agent
/// code runs (see `confine.rs`), and still serves calls.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn workers_run_confined() {
    for syscall_filter in [true, false] {
        let sandbox = Sandbox::new(SandboxConfig { syscall_filter, ..config() }).unwrap();
        assert_confined(&sandbox, syscall_filter).await;
    }
}

#[cfg(target_os = "linux")]
async fn assert_confined(sandbox: &Sandbox, syscall_filter: bool) {
    assert_eq!(result(&run(sandbox, "return 1 + 1;").await), &json!(2));
    let pids = sandbox.worker_pids();
    assert!(!pids.is_empty());
    for pid in pids {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let limit = |name: &str| {
            let line = limits.lines().find(|line| line.starts_with(name)).unwrap();
            line[name.len()..].split_whitespace().take(2).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(limit("Max open files"), "3 3", "{limits}");
        assert_eq!(limit("Max processes"), "0 0", "{limits}");
        assert_eq!(limit("Max core file size"), "0 0", "{limits}");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.lines().any(|line| line == "NoNewPrivs:\t1"), "{status}");
        // Seccomp mode 2 is a filter; 0 is none.
        let seccomp = if syscall_filter { "Seccomp:\t2" } else { "Seccomp:\t0" };
        assert!(status.lines().any(|line| line == seccomp), "{status}");
    }
    assert_eq!(result(&run(sandbox, "return [1, 2, 3].map((n) => n * 2);").await), &json!([2, 4, 6]));
}

#[tokio::test]
async fn the_deadline_is_configurable_per_tool_and_per_call() {
    let tool = RunLimits::with_deadline(Duration::from_millis(150));
    let call = RunLimits { deadline_ms: Some(400), ..RunLimits::default() };
    assert_eq!(tool.or(&RunLimits::default()).deadline_ms, Some(150));
    assert_eq!(tool.or(&call).deadline_ms, Some(400));
    let sandbox = sandbox();
    let started = Instant::now();
    let outcome = run_with(&sandbox, RunRequest::new("while (true) {}").with_limits(tool.or(&call))).await;
    assert!(failure(&outcome, ErrorKind::Timeout).contains("400 ms"));
    assert!(started.elapsed() >= Duration::from_millis(390));
    let code = "const t = Date.now(); while (Date.now() - t < 500) {}\nreturn 'slow but in time';";
    assert_eq!(result(&run(&sandbox, code).await), &json!("slow but in time"));
}

#[tokio::test]
async fn concurrent_calls_beyond_the_pool_size() {
    let sandbox = Sandbox::new(SandboxConfig { pool_size: 2, ..config() }).unwrap();
    let calls = (0..8).map(|i| {
        let sandbox = sandbox.clone();
        tokio::spawn(async move {
            run_with(&sandbox, RunRequest::new("return args.i * args.i;").with_args(json!({"i": i}))).await
        })
    });
    for (i, call) in calls.enumerate() {
        assert_eq!(result(&call.await.unwrap()), &json!(i * i));
    }
    assert!(sandbox.worker_pids().len() <= 2);
}

#[tokio::test]
async fn unicode_round_trips() {
    let sandbox = sandbox();
    let outcome = run(&sandbox, "console.log('naïve ✓ 🚀\\nline');\nreturn {s: 'ünï ✓ 🚀', quote: '\"\\\\'};").await;
    assert_eq!(result(&outcome), &json!({"s": "ünï ✓ 🚀", "quote": "\"\\"}));
    assert_eq!(outcome.logs(), ["naïve ✓ 🚀\nline"]);
    let outcome = run(&sandbox, "return '\\ud800';").await;
    assert!(failure(&outcome, ErrorKind::Runtime).contains("lone surrogate"), "{outcome:?}");
    // A string result goes to the host as itself, not as JSON: every character survives.
    let code = "return 'ünï ✓ 🚀 \"q\" \\\\ \\n\\t\\u0001 end';";
    assert_eq!(result(&run(&sandbox, code).await), &json!("ünï ✓ 🚀 \"q\" \\ \n\t\u{1} end"));
    // The result limit counts a string as JSON: 30 quotes are 62 bytes of JSON.
    let request = RunRequest::new("return '\"'.repeat(30);")
        .with_limits(RunLimits { max_result_bytes: Some(50), ..RunLimits::default() });
    let error = failure(&run_with(&sandbox, request).await, ErrorKind::OutputTooLarge);
    assert!(error.contains("the result is 62 bytes of JSON"), "{error}");
}

#[tokio::test]
async fn cancelled_calls_kill_their_worker() {
    let sandbox = sandbox();
    let pending = run_with(&sandbox, RunRequest::new("while (true) {}").with_limits(deadline(60_000)));
    assert!(tokio::time::timeout(Duration::from_millis(200), pending).await.is_err());
    assert_eq!(result(&run(&sandbox, "return 'next';").await), &json!("next"));
}

// ---------- config ----------

#[test]
fn config_defaults_and_deserialisation() {
    let config: SandboxConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(config.memory_limit_bytes, 64 * 1024 * 1024);
    assert_eq!(config.deadline_ms, 30_000);
    assert_eq!(config.max_fetches, 20);
    let config: SandboxConfig = serde_json::from_str(r#"{"deadline_ms": 5000, "pool_size": 4}"#).unwrap();
    assert_eq!((config.deadline_ms, config.pool_size, config.grace_ms), (5000, 4, 250));
    assert!(serde_json::from_str::<SandboxConfig>(r#"{"deadline": 5}"#).is_err());
}

#[tokio::test]
async fn bad_worker_commands_are_refused() {
    let empty = Sandbox::new(SandboxConfig::default());
    assert!(matches!(empty, Err(SandboxError::Config(_))));
    let missing = Sandbox::new(SandboxConfig {
        worker_command: vec!["/nonexistent/worker".to_string()],
        ..SandboxConfig::default()
    });
    assert!(matches!(missing, Err(SandboxError::Spawn { .. })));
}

#[tokio::test]
async fn a_worker_that_dies_is_replaced() {
    // `true` exits at once: every call finds its worker gone and says so, and the host lives.
    let sandbox = Sandbox::new(SandboxConfig { worker_command: vec!["/bin/true".to_string()], ..config() }).unwrap();
    let error = failure(&run(&sandbox, "return 1;").await, ErrorKind::Runtime);
    assert!(error.contains("worker"), "{error}");
}

#[tokio::test]
async fn a_worker_that_announces_an_oversized_result_is_refused() {
    // The result's text follows its `Done` line raw; a (broken or subverted) worker that claims
    // more than the call's result limit is a failed worker, and the host allocates nothing for it.
    let script =
        r#"read -r line; printf '{"done":{"outcome":{"ok":{"result_bytes":1000000000000,"logs":[]}}}}\n'; sleep 5"#;
    let command = ["/bin/sh", "-c", script].map(String::from).to_vec();
    let sandbox = Sandbox::new(SandboxConfig { worker_command: command, ..config() }).unwrap();
    let error = failure(&run(&sandbox, "return 1;").await, ErrorKind::Runtime);
    assert!(error.contains("over the limit"), "{error}");
}

// ---------- endurance ----------

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_hostile_runs_leave_host_memory_flat() {
    let sandbox = Sandbox::new(SandboxConfig { pool_size: 2, ..config() }).unwrap();
    let hostile: [(&str, ErrorKind); 8] = [
        ("while (true) {}", ErrorKind::Timeout),
        ("const a = []; for (;;) a.push(new Array(65536).fill(1));", ErrorKind::Memory),
        ("function f() { return f() + 1; } return f();", ErrorKind::Runtime),
        (
            "Object.prototype.x = 1; Array.prototype.push = null; globalThis.y = new Array(1e5).fill('x'); throw new Error('boom');",
            ErrorKind::Runtime,
        ),
        (
            "for (let i = 0; i < 2000; i++) console.log('x'.repeat(100)); return 'x'.repeat(2e6);",
            ErrorKind::OutputTooLarge,
        ),
        ("const parts = []; for (let i = 0; ; i++) parts.push('x'.repeat(1 << 16) + i);", ErrorKind::Memory),
        ("const a = {}; a.a = a; return a;", ErrorKind::Runtime),
        ("for (;;) Promise.resolve().then(() => {});", ErrorKind::Timeout),
    ];
    let limits =
        RunLimits { deadline_ms: Some(40), memory_limit_bytes: Some(16 * 1024 * 1024), ..RunLimits::default() };
    let host = memory_host();
    let mut baseline = 0;
    let mut as_expected = 0;
    for i in 0..1000 {
        let (code, expected) = hostile[i % hostile.len()];
        let outcome = sandbox.run(RunRequest::new(code).with_limits(limits.clone()), host.clone()).await;
        let kind = outcome.kind();
        // Each case's own kind is asserted by its own test; here a busy machine may also stop
        // a heavy case at the 40 ms deadline first, which is a correct outcome too.
        let acceptable = kind == Some(expected)
            || kind == Some(ErrorKind::Timeout)
            || (expected == ErrorKind::Timeout && kind == Some(ErrorKind::Memory));
        assert!(acceptable, "run {i}: {code}: {}", outcome.to_json());
        as_expected += usize::from(kind == Some(expected));
        // Other tests share this process while they run; by run 500 they are done.
        if i == 499 {
            baseline = rss_kib();
        }
        if i % 100 == 99 {
            eprintln!("run {i}: host RSS {} KiB", rss_kib());
        }
    }
    assert!(as_expected >= 500, "only {as_expected} of 1000 runs ended the way their case does when unhurried");
    let growth = rss_kib().saturating_sub(baseline);
    assert!(growth < 8 * 1024, "host RSS grew by {growth} KiB over the last 500 hostile runs");
    assert_eq!(result(&run(&sandbox, "return 'still fine';").await), &json!("still fine"));
}
