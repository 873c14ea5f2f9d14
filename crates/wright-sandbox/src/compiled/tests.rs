//! The compiled-code cache: never stale, bounded, and invisible in what a call sees.

use super::{CodeCache, MAX_BYTES, MAX_ENTRIES};
use crate::config::Limits;
use crate::engine::{Engine, NoHost};
use crate::protocol::WireOutcome;
use serde_json::json;

fn engine() -> Engine {
    Engine::new(Box::new(NoHost))
}

/// Runs `code` and returns its result's JSON text, or the error with its stack.
fn run(engine: &mut Engine, code: &str) -> String {
    match engine.run(code, &json!({"n": 2}), None, &Limits::default()) {
        WireOutcome::Ok { result, .. } => result.into_json(),
        WireOutcome::Err { kind, error, stack, .. } => format!("{kind:?}: {error}\n{}", stack.unwrap_or_default()),
    }
}

#[test]
fn a_second_call_of_the_same_code_loads_its_bytecode() {
    let mut engine = engine();
    assert_eq!(run(&mut engine, "return args.n * 21;"), "42");
    assert_eq!(run(&mut engine, "return args.n * 21;"), "42");
    let (entries, _, hits, misses) = engine.code_cache_stats();
    assert_eq!((entries, hits, misses), (1, 1, 1));
}

#[test]
fn a_changed_tool_and_its_rollback_run_their_own_code() {
    let mut engine = engine();
    let version_1 = "return 'v1:' + args.n;";
    let version_2 = "return 'v2:' + args.n;";
    assert_eq!(run(&mut engine, version_1), r#""v1:2""#);
    assert_eq!(run(&mut engine, version_1), r#""v1:2""#);
    // The update differs by one character; it must not find version 1's bytecode.
    assert_eq!(run(&mut engine, version_2), r#""v2:2""#);
    assert_eq!(run(&mut engine, version_2), r#""v2:2""#);
    // Rolling back finds version 1's entry again, not version 2's.
    assert_eq!(run(&mut engine, version_1), r#""v1:2""#);
    let (entries, _, hits, misses) = engine.code_cache_stats();
    assert_eq!((entries, hits, misses), (2, 3, 2));
}

#[test]
fn code_differing_only_after_a_shared_prefix_is_not_confused() {
    // Same length, same start: a key made of a prefix or a length would mix them up.
    let mut engine = engine();
    assert_eq!(run(&mut engine, "return [1, 2, 3].length;"), "3");
    assert_eq!(run(&mut engine, "return [1, 2, 3].at(-1);"), "3");
    assert_eq!(run(&mut engine, "return [1, 2, 4].at(-1);"), "4");
    assert_eq!(engine.code_cache_stats().3, 3);
}

#[test]
fn cached_code_still_runs_in_a_fresh_context() {
    let mut engine = engine();
    let code = "globalThis.calls = (globalThis.calls || 0) + 1; return calls;";
    for _ in 0..3 {
        assert_eq!(run(&mut engine, code), "1");
    }
    assert_eq!(engine.code_cache_stats().2, 2);
}

#[test]
fn errors_from_cached_code_keep_their_positions() {
    let mut engine = engine();
    let code = "const x = 1;\n  throw new Error('boom ' + x);";
    let first = run(&mut engine, code);
    let second = run(&mut engine, code);
    assert!(first.contains("tool.js:2:"), "{first}");
    assert_eq!(first, second);
    assert_eq!(engine.code_cache_stats().2, 1);
}

#[test]
fn syntax_errors_are_not_cached() {
    let mut engine = engine();
    let first = run(&mut engine, "return (;");
    assert!(first.starts_with("Syntax"), "{first}");
    assert_eq!(run(&mut engine, "return (;"), first);
    let (entries, _, hits, _) = engine.code_cache_stats();
    assert_eq!((entries, hits), (0, 0));
}

#[test]
fn the_cache_survives_a_replaced_runtime() {
    // An infinite loop times out, and a timed-out call throws its runtime away.
    let mut engine = engine();
    assert_eq!(run(&mut engine, "return 7;"), "7");
    let limits = Limits { deadline_ms: 20, ..Limits::default() };
    let looped = engine.run("while (true) {}", &json!({}), None, &limits);
    assert!(matches!(looped, WireOutcome::Err { kind: crate::outcome::ErrorKind::Timeout, .. }));
    assert_eq!(run(&mut engine, "return 7;"), "7");
    assert_eq!(engine.code_cache_stats().2, 1);
}

#[test]
fn entries_are_bounded_and_the_least_recently_used_goes_first() {
    let mut cache = CodeCache::default();
    cache.insert("kept", vec![0; 8], false);
    for index in 0..MAX_ENTRIES + 50 {
        // Using "kept" keeps it the most recently used.
        assert!(cache.get("kept").is_some(), "evicted at {index}");
        cache.insert(&format!("return {index};"), vec![0; 8], false);
    }
    let (entries, bytes, _, _) = cache.stats();
    assert_eq!(entries, MAX_ENTRIES);
    assert!(cache.get("return 0;").is_none());
    assert!(cache.get(&format!("return {};", MAX_ENTRIES + 49)).is_some());
    assert_eq!(bytes, cache.entries.iter().map(|(code, entry)| code.len() + entry.bytecode.len()).sum::<usize>());
}

#[test]
fn bytes_are_bounded() {
    let mut cache = CodeCache::default();
    let chunk = MAX_BYTES / 10;
    for index in 0..30 {
        cache.insert(&format!("code {index}"), vec![0; chunk], false);
        assert!(cache.stats().1 <= MAX_BYTES);
    }
    assert!(cache.stats().0 < 10);
    // Too big to keep at all.
    cache.insert("huge", vec![0; MAX_BYTES / 2], false);
    assert!(cache.get("huge").is_none());
}

#[test]
fn a_regular_expression_literal_gets_regexp_on_a_cache_hit_too() {
    // The code names nothing that brings `RegExp`: its first compile fails without it, the
    // second succeeds with it, and the entry remembers that its bytecode builds a `RegExp`.
    let mut engine = engine();
    let code = "return 'a-b-c'.replace(/-/g, '+');";
    assert_eq!(run(&mut engine, code), r#""a+b+c""#);
    assert_eq!(run(&mut engine, code), r#""a+b+c""#);
    let (entries, _, hits, misses) = engine.code_cache_stats();
    assert_eq!((entries, hits, misses), (1, 1, 1));
    // The next context is fresh again: no `RegExp` for code that does not need one.
    assert_eq!(run(&mut engine, "return typeof globalThis['Reg' + 'Exp'];"), r#""undefined""#);
    // A real syntax error after a literal is reported as it is, and not cached.
    let broken = run(&mut engine, "const r = /x/;\nreturn (;");
    assert!(broken.starts_with("Syntax") && broken.contains("line 2"), "{broken}");
    assert_eq!(engine.code_cache_stats().0, 2);
}

#[test]
fn the_last_calls_code_is_read_ahead_into_the_next_context() {
    let mut engine = engine();
    let code = "return args.n * 21;";
    assert_eq!(run(&mut engine, code), "42");
    engine.prepare().unwrap();
    assert_eq!(engine.preloaded_code(), Some(code));
    assert_eq!(run(&mut engine, code), "42");
    // Other code after it runs itself, not the function read ahead.
    engine.prepare().unwrap();
    assert_eq!(run(&mut engine, "return args.n * 50;"), "100");
    let (entries, _, hits, misses) = engine.code_cache_stats();
    assert_eq!((entries, hits, misses), (2, 1, 2));
}

#[test]
fn reading_ahead_gives_the_next_context_no_builtins() {
    // Code naming `Map`, and code with a regular expression literal (whose bytecode builds a
    // `RegExp`), are read ahead — reading needs neither — and each gets its builtin in its own
    // call only; the next call, other code, finds neither.
    let mut engine = engine();
    let next = "return [typeof globalThis['Ma' + 'p'], typeof globalThis['Reg' + 'Exp']];";
    for (code, result) in [("return new Map([[1, 2]]).size;", "1"), ("return 'a-b'.replace(/-/g, '+');", r#""a+b""#)] {
        assert_eq!(run(&mut engine, code), result);
        engine.prepare().unwrap();
        assert_eq!(engine.preloaded_code(), Some(code));
        assert_eq!(run(&mut engine, code), result, "{code}, read ahead");
        engine.prepare().unwrap();
        assert_eq!(engine.preloaded_code(), Some(code));
        assert_eq!(run(&mut engine, next), r#"["undefined","undefined"]"#);
    }
}

#[test]
fn code_that_escapes_its_wrapper_runs_only_in_its_own_call() {
    // The body closes the function it is wrapped in and runs statements at the script's top
    // level. Read ahead into the next context, it must not run there: the next call, other code
    // with an input of its own, sees none of it.
    let escaping = "return 1; }); globalThis.leak = 1; Object.prototype.polluted = 'yes'; \
                    Promise.resolve().then(() => { globalThis.jobSaw = input; }); (function () {";
    let next = "return [typeof globalThis.leak, ({}).polluted ?? null, globalThis.jobSaw ?? null];";
    let seen = |engine: &mut Engine| match engine.run(next, &json!({}), Some("SECRET-INPUT"), &Limits::default()) {
        WireOutcome::Ok { result, .. } => result.into_json(),
        WireOutcome::Err { error, .. } => error,
    };
    let expected = seen(&mut engine());
    assert_eq!(expected, r#"["undefined",null,null]"#);
    let mut engine = engine();
    run(&mut engine, escaping);
    run(&mut engine, escaping);
    engine.prepare().unwrap();
    assert_eq!(engine.preloaded_code(), Some(escaping));
    assert_eq!(seen(&mut engine), expected);
}

#[test]
fn bytecode_read_ahead_leaves_nothing_the_next_call_can_see() {
    let globals =
        "return [Object.getOwnPropertyNames(globalThis).sort(), Object.getOwnPropertySymbols(globalThis).length];";
    let mut fresh = engine();
    let expected = run(&mut fresh, globals);
    let mut engine = engine();
    let tool = "const t = args.n + 1; return t;";
    run(&mut engine, tool);
    run(&mut engine, tool);
    engine.prepare().unwrap();
    assert_eq!(engine.preloaded_code(), Some(tool));
    assert_eq!(run(&mut engine, globals), expected);
}
