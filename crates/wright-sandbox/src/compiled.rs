//! Compiled agent code, kept per worker as QuickJS bytecode so that a tool called again is not
//! parsed and compiled again: [`CodeCache`] and [`function_from_code`].
//!
//! Guarantees:
//! - The key is the exact text of the code (the body as the agent wrote it), compared in full,
//!   not a hash of it: a changed tool, a rollback to an earlier version or `run_sandbox_code`
//!   with new text can only ever find the bytecode of the very text it runs. Two tools with the
//!   same text share one entry, which is harmless (the bytecode is the same).
//! - Only bytecode this worker's own compiler wrote is ever read back: nothing that crosses the
//!   pipe is bytecode (QuickJS does not validate bytecode it reads, so reading bytes from
//!   elsewhere would be a way out of the sandbox).
//! - Bounded: at most [`MAX_ENTRIES`] entries and [`MAX_BYTES`] bytes (code plus bytecode); the
//!   least recently used entry goes first. Code larger than a quarter of the byte bound is
//!   never kept. A worker is replaced after `max_calls_per_worker` calls anyway.
//! - The bytes are the Rust heap's, not the JS heap's: they survive a replaced runtime and are
//!   not counted against any call's memory limit; what loading them allocates in the context is.
//! - A cached function behaves as a freshly compiled one: same file name, line table and
//!   source text (`Function.prototype.toString`), same strict mode and backtrace barrier —
//!   QuickJS writes them all into the bytecode. Each call still evaluates it into its own fresh
//!   context, so no function object or closure is shared between calls. One known difference,
//!   QuickJS-NG's (`JS_ReadArray`): the strings array a tagged template passes to its tag is
//!   frozen when compiled, but read from bytecode only its elements are read-only and it cannot
//!   grow — its `length` and its `raw` array stay writable (`Object.isFrozen` says false). Each
//!   call still gets its own; nothing is shared.

use crate::engine::{CODE_FILE, wrap_code};
use rquickjs::{Ctx, Function, Value, qjs};
use std::collections::HashMap;
use std::ffi::CStr;

/// Enough for every tool an agent has plus its recent `run_sandbox_code` snippets.
pub(crate) const MAX_ENTRIES: usize = 256;
/// Code plus bytecode of all entries; w2-sized tools take about 2–3 KB each.
pub(crate) const MAX_BYTES: usize = 8 * 1024 * 1024;

struct Entry {
    bytecode: Box<[u8]>,
    /// Compiled with the regular expression compiler in the context: the bytecode may build a
    /// `RegExp` when it runs, so a context must have `RegExp` before it is evaluated (reading
    /// needs none: a literal is two strings in the constant pool; [`function_from_code`]).
    regexp: bool,
    /// The value of [`CodeCache::clock`] when the entry was last used.
    last_used: u64,
}

/// Bytecode by exact code text, least recently used evicted first. Single-threaded: one per
/// engine, on the worker's thread.
#[derive(Default)]
pub(crate) struct CodeCache {
    entries: HashMap<Box<str>, Entry>,
    bytes: usize,
    clock: u64,
    hits: u64,
    misses: u64,
}

impl CodeCache {
    fn get(&mut self, code: &str) -> Option<&Entry> {
        self.clock += 1;
        let clock = self.clock;
        match self.entries.get_mut(code) {
            Some(entry) => {
                entry.last_used = clock;
                self.hits += 1;
                Some(entry)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, code: &str, bytecode: Vec<u8>, regexp: bool) {
        let size = code.len() + bytecode.len();
        if size > MAX_BYTES / 4 {
            return;
        }
        while !self.entries.is_empty() && (self.entries.len() >= MAX_ENTRIES || self.bytes + size > MAX_BYTES) {
            self.evict_oldest();
        }
        self.clock += 1;
        let entry = Entry { bytecode: bytecode.into_boxed_slice(), regexp, last_used: self.clock };
        if let Some(replaced) = self.entries.insert(code.into(), entry) {
            self.bytes -= code.len() + replaced.bytecode.len();
        }
        self.bytes += size;
    }

    /// A linear scan: eviction happens only when a new text arrives at a full cache, and the
    /// cache is small, so a recency list is not worth its bookkeeping on every hit.
    fn evict_oldest(&mut self) {
        let oldest = self.entries.iter().min_by_key(|(_, entry)| entry.last_used).map(|(code, _)| code.clone());
        if let Some(code) = oldest
            && let Some(entry) = self.entries.remove(&code)
        {
            self.bytes -= code.len() + entry.bytecode.len();
        }
    }

    /// `(entries, bytes, hits, misses)`.
    #[cfg(test)]
    pub(crate) fn stats(&self) -> (usize, usize, u64, u64) {
        (self.entries.len(), self.bytes, self.hits, self.misses)
    }
}

/// The agent's code as the `async function` that [`crate::engine`] runs, in `ctx`: loaded from
/// the cache's bytecode when this exact text was compiled before, otherwise compiled (as the
/// strict global script `(async function () {BODY\n})` named `tool.js`, with a backtrace
/// barrier) and its bytecode kept. A syntax error is a pending exception in `ctx`
/// (`Err(Error::Exception)`, for `.catch`), and is not cached.
///
/// `read_ahead` is this text's bytecode when it was already read into `ctx` ([`read_cached`]):
/// it is evaluated instead of reading the entry again, and counts as the hit.
///
/// `regexp` says whether `ctx` has `RegExp` and its compiler already; if not, `add_regexp` adds
/// them when the code needs them: before evaluating bytecode that was compiled with them, and
/// when compiling without them failed (a regular expression literal does not compile without
/// them; the second compile reports any other syntax error as the first would have).
pub(crate) fn function_from_code<'js>(
    ctx: &Ctx<'js>,
    cache: &mut CodeCache,
    code: &str,
    regexp: bool,
    add_regexp: fn(&Ctx<'js>) -> rquickjs::Result<()>,
    read_ahead: Option<Value<'js>>,
) -> rquickjs::Result<Function<'js>> {
    let bytecode = match cache.get(code) {
        Some(entry) => {
            if entry.regexp && !regexp {
                add_regexp(ctx)?;
            }
            match read_ahead {
                Some(value) => Bytecode(value),
                None => read_bytecode(ctx, &entry.bytecode)?,
            }
        }
        None => {
            // (Not cached, so nothing was read ahead for it either; dropped all the same.)
            drop(read_ahead);
            let (bytecode, with_regexp) = match compile(ctx, code) {
                Ok(bytecode) => (bytecode, regexp),
                Err(rquickjs::Error::Exception) if !regexp => {
                    drop(ctx.catch());
                    add_regexp(ctx)?;
                    (compile(ctx, code)?, true)
                }
                Err(error) => return Err(error),
            };
            cache.insert(code, write_bytecode(ctx, &bytecode)?, with_regexp);
            bytecode
        }
    };
    evaluate(ctx, bytecode)?.get()
}

/// `code`'s cached bytecode read into `ctx` and not evaluated, or `None` when this exact text is
/// not cached (nothing is compiled). Reading runs nothing: the value is QuickJS's function
/// bytecode, which no code can reach; [`function_from_code`] evaluates it later, in the call
/// (`read_ahead`). For reading the last call's code into the next context ahead of time; counts
/// neither a hit nor a miss, and needs no `RegExp`.
pub(crate) fn read_cached<'js>(ctx: &Ctx<'js>, cache: &CodeCache, code: &str) -> rquickjs::Result<Option<Value<'js>>> {
    match cache.entries.get(code) {
        Some(entry) => read_bytecode(ctx, &entry.bytecode).map(|bytecode| Some(bytecode.0)),
        None => Ok(None),
    }
}

/// Our own script `source` (a part of the prelude, never agent code), compiled in `ctx` as a
/// strict global script named `file_name`, as bytecode without line tables or source text.
pub(crate) fn compile_prelude_script(ctx: &Ctx<'_>, source: &str, file_name: &CStr) -> rquickjs::Result<Vec<u8>> {
    let flags = qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    let bytecode = compile_source(ctx, source.to_string(), file_name, flags)?;
    write(ctx, &bytecode, qjs::JS_WRITE_OBJ_STRIP_DEBUG | qjs::JS_WRITE_OBJ_STRIP_SOURCE)
}

/// Evaluates bytecode from [`compile_prelude_script`] in `ctx`: the script's value.
pub(crate) fn run_prelude_script<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<Value<'js>> {
    evaluate(ctx, read_bytecode(ctx, bytes)?)
}

/// Owns a `JS_TAG_FUNCTION_BYTECODE` value (not callable; [`evaluate`] makes the closure).
struct Bytecode<'js>(Value<'js>);

fn compile<'js>(ctx: &Ctx<'js>, code: &str) -> rquickjs::Result<Bytecode<'js>> {
    let file_name = c"tool.js";
    debug_assert_eq!(file_name.to_bytes(), CODE_FILE.as_bytes());
    let flags = qjs::JS_EVAL_TYPE_GLOBAL
        | qjs::JS_EVAL_FLAG_STRICT
        | qjs::JS_EVAL_FLAG_BACKTRACE_BARRIER
        | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    compile_source(ctx, wrap_code(code), file_name, flags)
}

#[allow(unsafe_code)]
fn compile_source<'js>(
    ctx: &Ctx<'js>,
    source: String,
    file_name: &CStr,
    flags: u32,
) -> rquickjs::Result<Bytecode<'js>> {
    // QuickJS wants the source NUL-terminated (it reads one byte past `input_len`).
    let mut source = source.into_bytes();
    let length = source.len();
    source.push(0);
    // SAFETY: `ctx` is live and entered (we hold a `Ctx`); `source` is NUL-terminated and
    // outlives the call; the returned value is owned and handed to `Value::from_raw` once.
    let value = unsafe {
        qjs::JS_Eval(ctx.as_raw().as_ptr(), source.as_ptr().cast(), length as _, file_name.as_ptr(), flags as i32)
    };
    owned(ctx, value).map(Bytecode)
}

fn write_bytecode(ctx: &Ctx<'_>, bytecode: &Bytecode<'_>) -> rquickjs::Result<Vec<u8>> {
    write(ctx, bytecode, 0)
}

#[allow(unsafe_code)]
fn write(ctx: &Ctx<'_>, bytecode: &Bytecode<'_>, strip: u32) -> rquickjs::Result<Vec<u8>> {
    let mut length: qjs::size_t = 0;
    // SAFETY: the value is a live function bytecode of this context; QuickJS allocates the
    // buffer with the context's allocator, and it is freed with `js_free` right after copying.
    unsafe {
        let buffer = qjs::JS_WriteObject(
            ctx.as_raw().as_ptr(),
            &mut length,
            bytecode.0.as_raw(),
            (qjs::JS_WRITE_OBJ_BYTECODE | strip) as i32,
        );
        if buffer.is_null() {
            return Err(rquickjs::Error::Exception);
        }
        let bytes = std::slice::from_raw_parts(buffer, length as usize).to_vec();
        qjs::js_free(ctx.as_raw().as_ptr(), buffer.cast());
        Ok(bytes)
    }
}

#[allow(unsafe_code)]
fn read_bytecode<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<Bytecode<'js>> {
    // SAFETY: `bytes` were written by `write` in this process, with this QuickJS build (see the
    // module's guarantees: agent code's or the prelude's, never bytes from the pipe); QuickJS-NG copies what it reads (`JS_READ_OBJ_ROM_DATA` is
    // gone), so the slice need not outlive the value.
    let value = unsafe {
        qjs::JS_ReadObject(ctx.as_raw().as_ptr(), bytes.as_ptr(), bytes.len() as _, qjs::JS_READ_OBJ_BYTECODE as i32)
    };
    owned(ctx, value).map(Bytecode)
}

/// Runs the compiled script in the context's global scope; its completion value is the
/// function expression.
#[allow(unsafe_code)]
fn evaluate<'js>(ctx: &Ctx<'js>, bytecode: Bytecode<'js>) -> rquickjs::Result<Value<'js>> {
    // `JS_EvalFunction` takes ownership of its argument: hand it a reference of its own, and
    // let ours go with `bytecode` (forgetting it would leak the context it holds too).
    // SAFETY: `bytecode` is a live function bytecode value of this context; the duplicated
    // reference is consumed by `JS_EvalFunction` exactly once.
    let value = unsafe {
        let raw = qjs::JS_DupValue(ctx.as_raw().as_ptr(), bytecode.0.as_raw());
        drop(bytecode);
        qjs::JS_EvalFunction(ctx.as_raw().as_ptr(), raw)
    };
    owned(ctx, value)
}

/// Wraps an owned raw value, turning `JS_EXCEPTION` into `Error::Exception` (the exception
/// stays pending in `ctx`, where `.catch(ctx)` finds it).
#[allow(unsafe_code)]
fn owned<'js>(ctx: &Ctx<'js>, value: qjs::JSValue) -> rquickjs::Result<Value<'js>> {
    // SAFETY: `value` came from a QuickJS call on `ctx` that returns an owned value.
    unsafe {
        if qjs::JS_IsException(value) {
            return Err(rquickjs::Error::Exception);
        }
        Ok(Value::from_raw(ctx.clone(), value))
    }
}

#[cfg(test)]
mod tests;
