//! The QuickJS side: one [`Engine`] per worker thread runs calls one at a time, each in a fresh
//! context with the prelude read, under the call's memory limit, stack limit and deadline. The
//! run protocol is here: `args` and `input` defined, the code called, its promise watched between
//! jobs (`resolve(value)` or the body's return, whichever comes first), the outcome turned into
//! text with QuickJS's own JSON — never with anything of the context's globals, which the code
//! may have replaced.
//!
//! Guarantees:
//! - Out of memory is what the runtime's allocator says it is: [`crate::allocator`] enforces the
//!   limit and records every refusal, so a bare `null` thrown by QuickJS is classified right.
//! - Every call gets a new `Context`, so nothing a call does to globals or to the prelude's
//!   objects is visible to the next one. The runtime (heap, atoms) is reused only after a call
//!   that ended cleanly with an empty job queue; after an interrupt, an out-of-memory, pending
//!   jobs or every [`CALLS_PER_RUNTIME`] calls it is thrown away, as QuickJS may be left in a bad
//!   state by the first two and the third would run the old call's jobs during the next.
//! - The deadline is checked by the interrupt handler (between bytecode ops) and by every host
//!   function; a native builtin that never polls can overrun it, which is why calls run in
//!   worker processes under the pool's watchdog.
//! - After a clean call the worker answers first, then frees the call's context, collects its
//!   cycles and prepares the next call's context ([`Engine::prepare`]), so none of that is on
//!   the caller's path; QuickJS's own collection trigger is pushed [`GC_HEADROOM_BYTES`] past
//!   the live heap so that it rarely fires during a call or while a context is built.
//! - Typed arrays, `Date`, `Map`/`Set`, `Proxy` and `RegExp` are added only to the context of
//!   code that may use them ([`OnDemand`]); a regular expression literal the names missed is
//!   caught by the compiler, which then gets `RegExp` and compiles again.
//! - `console`, `state`, `fetch` and `resolve` exist only for code that names them; the parts of
//!   the prelude behind the first three are read into the context then, before the code runs.
//!   A result and a failure are turned into text here ([`result_json`], `Failure::from_value`), never by
//!   anything of the context that the code could have replaced.
//! - Code is compiled once per worker and text: later calls load its bytecode
//!   ([`crate::compiled`]) into their fresh context instead of parsing it again. The last call's
//!   bytecode is read into the next context while the worker waits ([`Preloaded`]): read, not
//!   evaluated, so nothing of it runs before the call that evaluates it, and a call with other
//!   code drops it unread by anything.
//! - The names of the builtins stay interned for a runtime's life ([`pin_builtin_names`]): only
//!   names, which no code can list, outlive a call.

use crate::SandboxError;
use crate::allocator::{Accounting, CountingAllocator};
use crate::compiled::{self, CodeCache};
use crate::config::Limits;
use crate::outcome::ErrorKind;
use crate::protocol::{HostCall, ResultText, WireOutcome};
use rquickjs::context::intrinsic;
use rquickjs::function::This;
use rquickjs::{
    CatchResultExt, CaughtError, Coerced, Context, Ctx, Exception, Function, Module, Persistent, Runtime, Value,
};
use serde_json::Value as JsonValue;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What every sandbox context has besides the base objects: the compiler (`Eval`), `JSON` and
/// `Promise`, which the prelude and the run protocol need. No `WeakRef`/`FinalizationRegistry`
/// (their callbacks could outlive a call), no `DOMException`, no `performance`. The rest of
/// QuickJS's intrinsics are added per call, only for code that may use them ([`OnDemand`]):
/// building a context and freeing it again is most of what a call costs, and few tools use them.
type Intrinsics = (intrinsic::Eval, intrinsic::Json, intrinsic::Promise);

/// The parts of the prelude (`console`, `state`, `fetch`), compiled into the binary so a worker
/// needs no files, and read into a context when its call's code names them.
const PRELUDE_CONSOLE: &str = include_str!("../../../sandbox-prelude/console.js");
const PRELUDE_STATE: &str = include_str!("../../../sandbox-prelude/state.js");
const PRELUDE_FETCH: &str = include_str!("../../../sandbox-prelude/fetch.js");

/// Agent code is compiled as the body of this function. The opening is on the body's first line
/// so that line numbers in errors are the agent's own; columns on line 1 are shifted back.
const CODE_OPEN: &str = "(async function () {";
const CODE_CLOSE: &str = "\n})";
/// The file name agent code is compiled under; stack frames outside it are the prelude's.
pub(crate) const CODE_FILE: &str = "tool.js";

/// A fresh runtime now and then bounds whatever a long-lived QuickJS heap accumulates.
const CALLS_PER_RUNTIME: u32 = 1_000;
/// How much a call (or the building of a context) may allocate before QuickJS collects.
const GC_HEADROOM_BYTES: usize = 4 * 1024 * 1024;
/// Budget for evaluating the prelude into a new context.
const PREPARE_DEADLINE: Duration = Duration::from_secs(5);

/// How host calls leave the engine: the worker sends them over its pipe; other embedders (the
/// benchmark peer) may refuse them.
pub(crate) trait Bridge {
    fn call(&mut self, call: HostCall) -> Result<JsonValue, HostError>;
}

/// Why a host call failed.
pub(crate) enum HostError {
    /// The host refused; the message is thrown in the agent's code.
    Message(String),
    /// The call's deadline passed while the host was answering (the host's clock decides, as
    /// the host is what waited).
    DeadlinePassed,
}

/// A bridge with no host behind it.
pub(crate) struct NoHost;

impl Bridge for NoHost {
    fn call(&mut self, _call: HostCall) -> Result<JsonValue, HostError> {
        Err(HostError::Message("no host is attached: state and fetch are not available here".to_string()))
    }
}

/// Per-call state shared by the interrupt handler and the native functions. Single-threaded
/// (`Rc`, `Cell`): an engine never leaves its thread.
struct CallState {
    deadline: Cell<Instant>,
    /// Set when the deadline stopped the code, by the interrupt handler or a host function:
    /// the outcome is `timeout` whatever the code did with the error.
    timed_out: Cell<bool>,
    limits: Cell<Limits>,
    fetches: Cell<u32>,
    logs: RefCell<LogBuffer>,
    bridge: RefCell<Box<dyn Bridge>>,
}

impl CallState {
    fn past_deadline(&self) -> bool {
        if Instant::now() >= self.deadline.get() {
            self.timed_out.set(true);
            true
        } else {
            false
        }
    }
}

#[derive(Default)]
struct LogBuffer {
    entries: Vec<String>,
    bytes: usize,
    truncated: bool,
}

impl LogBuffer {
    fn push(&mut self, level: &str, text: &str, limits: &Limits) {
        if self.truncated {
            return;
        }
        let prefix = match level {
            "warn" => "[warn] ",
            "error" => "[error] ",
            _ => "",
        };
        let size = prefix.len() + text.len();
        if self.entries.len() >= limits.max_log_entries || self.bytes + size > limits.max_log_bytes {
            // Keep what fits of this entry, then say that the rest was dropped.
            let room = limits.max_log_bytes.saturating_sub(self.bytes + prefix.len());
            if self.entries.len() < limits.max_log_entries && room > 0 {
                let mut end = room.min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.entries.push(format!("{prefix}{}", &text[..end]));
            }
            self.entries.push(format!(
                "[logs truncated: at most {} entries and {} bytes are kept]",
                limits.max_log_entries, limits.max_log_bytes
            ));
            self.truncated = true;
            return;
        }
        self.bytes += size;
        self.entries.push(format!("{prefix}{text}"));
    }
}

pub(crate) struct Engine {
    /// `last_code`'s bytecode, read into `prepared` ahead of time; belongs to that context's
    /// runtime, and is declared first so that it is dropped before it.
    preloaded: Option<Preloaded>,
    /// The code of the last call, which [`Engine::prepare`] reads into the next context.
    last_code: Option<Box<str>>,
    /// A fresh context with `args` and `input` defined, waiting for the next call.
    prepared: Option<Context>,
    /// The last call's context, kept until [`Engine::prepare`] so that freeing it (and the
    /// collection that reclaims its cycles) happens after the worker has answered.
    spent: Option<Context>,
    runtime: Option<Runtime>,
    state: Rc<CallState>,
    /// The current runtime's heap accounting; replaced with the runtime.
    accounting: Rc<Accounting>,
    calls_on_runtime: u32,
    /// The memory and stack limits the runtime is set to, to skip resetting them.
    runtime_limits: Option<(usize, usize)>,
    /// Bytecode of the code this engine has compiled; outlives runtimes (it is plain bytes).
    code_cache: CodeCache,
}

impl Engine {
    pub(crate) fn new(bridge: Box<dyn Bridge>) -> Engine {
        Engine {
            preloaded: None,
            last_code: None,
            prepared: None,
            spent: None,
            runtime: None,
            state: Rc::new(CallState {
                deadline: Cell::new(Instant::now()),
                timed_out: Cell::new(false),
                limits: Cell::new(Limits::default()),
                fetches: Cell::new(0),
                logs: RefCell::new(LogBuffer::default()),
                bridge: RefCell::new(bridge),
            }),
            accounting: Rc::new(Accounting::default()),
            calls_on_runtime: 0,
            runtime_limits: None,
            code_cache: CodeCache::default(),
        }
    }

    /// The compiled-code cache's `(entries, bytes, hits, misses)`.
    #[cfg(test)]
    pub(crate) fn code_cache_stats(&self) -> (usize, usize, u64, u64) {
        self.code_cache.stats()
    }

    /// The code read ahead into the prepared context, if any ([`Preloaded`]).
    #[cfg(test)]
    pub(crate) fn preloaded_code(&self) -> Option<&str> {
        self.preloaded.as_ref().and(self.last_code.as_deref())
    }

    fn runtime(&mut self) -> Result<Runtime, SandboxError> {
        if let Some(runtime) = &self.runtime {
            return Ok(runtime.clone());
        }
        let accounting = Rc::new(Accounting::default());
        accounting.limit.set(Limits::default().memory_limit_bytes);
        let allocator = CountingAllocator { accounting: Rc::clone(&accounting) };
        let runtime = Runtime::new_with_alloc(allocator).map_err(engine_error)?;
        self.accounting = accounting;
        let state = Rc::clone(&self.state);
        runtime.set_interrupt_handler(Some(Box::new(move || state.past_deadline())));
        // Agent code gets no modules at all, not even a module of its own context.
        runtime.set_loader(NoModules, NoModules);
        self.runtime = Some(runtime.clone());
        self.runtime_limits = None;
        self.calls_on_runtime = 0;
        Ok(runtime)
    }

    fn discard_runtime(&mut self) {
        self.preloaded = None;
        self.prepared = None;
        self.spent = None;
        self.runtime = None;
    }

    /// Lets QuickJS collect only once the heap has grown by [`GC_HEADROOM_BYTES`] (at most a
    /// quarter of the call's limit) beyond what is live now. Its own rule (collect at 1.5x the
    /// size after the last collection) fires about once per context — mostly while the next
    /// context is built, or in the middle of a call — and each run walks every object of the
    /// live context. The spent context is collected explicitly instead, in [`Engine::prepare`].
    fn set_gc_threshold(&self, runtime: &Runtime, memory_limit_bytes: usize) {
        let headroom = GC_HEADROOM_BYTES.min(memory_limit_bytes / 4);
        runtime.set_gc_threshold(self.accounting.used.get().saturating_add(headroom));
    }

    fn set_limits(&mut self, runtime: &Runtime, limits: &Limits) {
        let wanted = (limits.memory_limit_bytes, limits.stack_limit_bytes);
        self.accounting.limit.set(limits.memory_limit_bytes);
        if self.runtime_limits != Some(wanted) {
            runtime.set_max_stack_size(limits.stack_limit_bytes);
            self.runtime_limits = Some(wanted);
        }
    }

    /// Makes sure a fresh context with the prelude is ready for the next call.
    ///
    /// First it frees the last call's context, and one collection reclaims its cycles while
    /// nothing else is live, which is the cheapest moment for it.
    pub(crate) fn prepare(&mut self) -> Result<(), SandboxError> {
        if let Some(spent) = self.spent.take() {
            drop(spent);
            if let Some(runtime) = &self.runtime {
                runtime.run_gc();
            }
        }
        if self.prepared.is_some() {
            return Ok(());
        }
        let new_runtime = self.runtime.is_none();
        let runtime = self.runtime()?;
        if new_runtime {
            pin_builtin_names(&runtime)?;
        }
        self.set_limits(&runtime, &Limits::default());
        self.set_gc_threshold(&runtime, Limits::default().memory_limit_bytes);
        self.state.deadline.set(Instant::now() + PREPARE_DEADLINE);
        self.state.timed_out.set(false);
        let new_context = || -> Result<Context, SandboxError> {
            let context = Context::custom::<Intrinsics>(&runtime).map_err(engine_error)?;
            context
                .with(|ctx| -> rquickjs::Result<()> {
                    // `args` and `input` exist from here, off the caller's path, so that a call
                    // only sets their values instead of adding two properties to the global
                    // object.
                    define_global(&ctx, "args", Value::new_undefined(ctx.clone()))?;
                    define_global(&ctx, "input", Value::new_undefined(ctx.clone()))
                })
                .map_err(engine_error)?;
            Ok(context)
        };
        let mut context = new_context()?;
        if let Some(code) = &self.last_code {
            match Preloaded::read(&context, &self.code_cache, code) {
                Ok(preloaded) => self.preloaded = preloaded,
                // A context in which reading failed (out of memory) is not used: the call gets a
                // plain one and reads or compiles its code itself, reporting any error then.
                Err(_) => context = new_context()?,
            }
        }
        self.prepared = Some(context);
        Ok(())
    }

    /// Runs one call to the end. Never panics on anything the code does; an engine failure
    /// (QuickJS refusing to create a context) comes back as a `runtime` failure.
    pub(crate) fn run(&mut self, code: &str, args: &JsonValue, input: Option<&str>, limits: &Limits) -> WireOutcome {
        let outcome = self.run_inner(code, args, input, limits);
        // Whatever happened, this context's preloaded bytecode (if it was not used) goes with it.
        self.preloaded = None;
        if self.last_code.as_deref() != Some(code) {
            self.last_code = Some(code.into());
        }
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => {
                self.discard_runtime();
                WireOutcome::Err {
                    kind: ErrorKind::Runtime,
                    error: error.to_string(),
                    stack: None,
                    logs: self.take_logs(),
                }
            }
        };
        // Whatever happened, this call's context is spent. After a clean call it is freed in
        // `prepare`, once the worker has answered; a runtime unfit for another call goes now, so
        // that tearing down a huge heap or a flood of jobs is charged to the call that made it,
        // not to the next call on this worker (whose deadline the host is already counting).
        self.spent = self.prepared.take();
        let clean = (matches!(outcome, WireOutcome::Ok { .. }) && !self.accounting.refused.get())
            || matches!(
                outcome,
                WireOutcome::Err { kind: ErrorKind::Runtime | ErrorKind::Syntax | ErrorKind::OutputTooLarge, .. }
            );
        let jobs_left = self.runtime.as_ref().is_some_and(Runtime::is_job_pending);
        if !clean || jobs_left || self.state.timed_out.get() || self.calls_on_runtime >= CALLS_PER_RUNTIME {
            self.discard_runtime();
        }
        outcome
    }

    fn take_logs(&self) -> Vec<String> {
        std::mem::take(&mut self.state.logs.borrow_mut().entries)
    }

    fn run_inner(
        &mut self,
        code: &str,
        args: &JsonValue,
        input: Option<&str>,
        limits: &Limits,
    ) -> Result<WireOutcome, SandboxError> {
        self.prepare()?;
        let runtime = self.runtime()?;
        self.set_limits(&runtime, limits);
        self.set_gc_threshold(&runtime, limits.memory_limit_bytes);
        self.calls_on_runtime += 1;
        let state = Rc::clone(&self.state);
        state.limits.set(*limits);
        state.fetches.set(0);
        *state.logs.borrow_mut() = LogBuffer::default();
        state.timed_out.set(false);
        self.accounting.refused.set(false);
        state.deadline.set(Instant::now() + limits.deadline());

        let code_cache = &mut self.code_cache;
        // Bytecode read ahead for other code goes here, memory and all, before this code runs.
        let preloaded = self.preloaded.take().filter(|_| self.last_code.as_deref() == Some(code));
        let Some(prepared) = self.prepared.as_ref() else {
            return Err(SandboxError::Engine("no prepared context".to_string()));
        };
        let args_json = serde_json::to_string(args).map_err(|error| SandboxError::Engine(error.to_string()))?;
        let on_demand = OnDemand::named_in(code);
        let bytes = prelude_bytecode(&runtime)?;
        // What `resolve(value)` records; emptied when this function returns, whatever happens,
        // so that no value of the context outlives the call in Rust.
        let resolved = ResolvedGuard(Rc::new(Resolved::default()));

        // Compile and start: the body runs synchronously up to its first `await`.
        let started = prepared.with(|ctx| -> Result<Result<Persistent<Value<'static>>, Failure>, SandboxError> {
            on_demand.add_to(&ctx)?;
            // The exact text's bytecode, read while the worker waited for this call.
            let read_ahead =
                preloaded.map(|preloaded| preloaded.bytecode.restore(&ctx)).transpose().map_err(engine_error)?;
            let function =
                compiled::function_from_code(&ctx, code_cache, code, on_demand.regexp, add_regexp, read_ahead);
            let function = match function.catch(&ctx) {
                Ok(function) => function,
                Err(caught) => return Ok(Err(Failure::from_caught(&caught, true))),
            };
            let globals = (|| -> rquickjs::Result<()> {
                define_global(&ctx, "args", ctx.json_parse(args_json)?)?;
                let input = match input {
                    Some(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
                    None => Value::new_undefined(ctx.clone()),
                };
                define_global(&ctx, "input", input)?;
                if on_demand.console {
                    let log = log_function(&ctx, Rc::clone(&state))?;
                    define_global(&ctx, "console", read_part(&ctx, bytes.console)?.call((log,))?)?;
                }
                for (named, name, part) in
                    [(on_demand.state, "state", bytes.state), (on_demand.fetch, "fetch", bytes.fetch)]
                {
                    if named {
                        let host = host_function(&ctx, Rc::clone(&state))?;
                        define_global(&ctx, name, read_part(&ctx, part)?.call((host,))?)?;
                    }
                }
                if on_demand.resolve {
                    define_global(&ctx, "resolve", resolve_function(&ctx, Rc::clone(&resolved.0))?.into_value())?;
                }
                Ok(())
            })();
            if let Err(error) = globals.catch(&ctx) {
                return Ok(Err(Failure::from_caught(&error, false)));
            }
            match function.call::<_, Value<'_>>(()).catch(&ctx) {
                Ok(promise) => Ok(Ok(Persistent::save(&ctx, promise))),
                Err(caught) => Ok(Err(Failure::from_caught(&caught, false))),
            }
        })?;
        let promise = match started {
            Ok(promise) => promise,
            Err(failure) => return Ok(self.failure_outcome(failure, limits)),
        };

        // Drive promise jobs until the call settles or nothing is left to run. Jobs run outside
        // `Context::with`: `Runtime::execute_pending_job` reports the exceptions that escape a
        // job (an interrupt, an out-of-memory), which `Ctx::execute_pending_job` would swallow.
        loop {
            let settled = prepared.with(|ctx| -> rquickjs::Result<bool> {
                let promise = promise.clone().restore(&ctx)?;
                Ok(Ending::of(&promise, &resolved.0).is_settled())
            });
            if settled.unwrap_or(true) {
                break;
            }
            match runtime.execute_pending_job() {
                Ok(true) => continue,
                Ok(false) => break,
                Err(job_exception) => {
                    let failure = job_exception.0.with(|ctx| {
                        let value = ctx.catch();
                        Failure::from_value(&value)
                    });
                    return Ok(self.failure_outcome(failure, limits));
                }
            }
        }

        let finished = prepared.with(|ctx| -> Result<Result<ResultText, Failure>, SandboxError> {
            let promise = promise.restore(&ctx).map_err(engine_error)?;
            let (ending, value) = match Ending::of(&promise, &resolved.0) {
                Ending::Resolved => (Ending::Resolved, resolved.0.value(&ctx)),
                // Nothing was left to run: a body that returned nothing ends with null.
                Ending::Fulfilled | Ending::ReturnedNothing => (Ending::Fulfilled, promise_result(&ctx, &promise)),
                Ending::Rejected => (Ending::Rejected, promise_result(&ctx, &promise)),
                Ending::Pending => {
                    return Ok(Err(Failure {
                        name: "Error".to_string(),
                        message: "the code never finished: it awaits a promise that nothing can settle (no timers or events exist in the sandbox)".to_string(),
                        ..Failure::default()
                    }));
                }
            };
            let value = value.map_err(engine_error)?;
            let text = (|| -> rquickjs::Result<Result<ResultText, Value<'_>>> {
                if ending == Ending::Rejected {
                    return Ok(Err(value));
                }
                // A primitive has no path to name and cannot hold a cycle, a function, a symbol
                // or a BigInt: QuickJS's JSON is all it needs, and a string goes as itself (one
                // with a lone surrogate is not Unicode text: it goes as JSON, which the host
                // refuses with the reason).
                if value.is_undefined() {
                    return Ok(Ok(ResultText::Json("null".to_string())));
                }
                if let Some(Ok(text)) = value.as_string().map(rquickjs::String::to_string) {
                    return Ok(Ok(ResultText::String(text)));
                }
                if value.is_null() || value.is_bool() || value.is_number() || value.is_string() {
                    let text = ctx.json_stringify(value)?.map(|text| text.to_string()).transpose()?;
                    return Ok(Ok(ResultText::Json(text.unwrap_or_else(|| "null".to_string()))));
                }
                Ok(result_json(&ctx, value)?.map(ResultText::Json))
            })();
            let failed = match text.catch(&ctx) {
                Ok(Ok(text)) => return Ok(Ok(text)),
                Ok(Err(failed)) => failed,
                Err(caught) => return Ok(Err(Failure::from_caught(&caught, false))),
            };
            Ok(Err(Failure::from_value(&failed)))
        })?;
        match finished {
            Ok(result) => {
                if state.timed_out.get() {
                    // The code caught the deadline's error and went on: it still timed out.
                    return Ok(self.failure_outcome(Failure::default(), limits));
                }
                if result.json_len() > limits.max_result_bytes {
                    return Ok(WireOutcome::Err {
                        kind: ErrorKind::OutputTooLarge,
                        error: format!(
                            "the result is {} bytes of JSON; the limit is {} bytes",
                            result.json_len(),
                            limits.max_result_bytes
                        ),
                        stack: None,
                        logs: self.take_logs(),
                    });
                }
                Ok(WireOutcome::Ok { result, logs: self.take_logs() })
            }
            Err(failure) => Ok(self.failure_outcome(failure, limits)),
        }
    }

    fn failure_outcome(&self, failure: Failure, limits: &Limits) -> WireOutcome {
        let logs = self.take_logs();
        if self.state.timed_out.get() {
            return WireOutcome::Err {
                kind: ErrorKind::Timeout,
                error: format!("the code ran past its deadline of {} ms", limits.deadline_ms),
                stack: None,
                logs,
            };
        }
        if self.accounting.refused.get() {
            return WireOutcome::Err {
                kind: ErrorKind::Memory,
                error: format!("the code ran out of memory (limit {} bytes)", limits.memory_limit_bytes),
                stack: None,
                logs,
            };
        }
        if failure.thrown_null {
            return WireOutcome::Err {
                kind: ErrorKind::Runtime,
                error: "uncaught null".to_string(),
                stack: None,
                logs,
            };
        }
        let kind = if failure.syntax { ErrorKind::Syntax } else { ErrorKind::Runtime };
        let (line, column) = first_position(&failure.stack);
        let error = match (failure.syntax, line) {
            (true, Some(line)) => format!("{} (line {line}, column {})", failure.headline(), column.unwrap_or(0)),
            _ => failure.headline(),
        };
        let stack = agent_frames(&failure.stack);
        WireOutcome::Err { kind, error, stack: (!stack.is_empty() && !failure.syntax).then_some(stack), logs }
    }
}

/// An error as the engine saw it.
#[derive(Debug, Default)]
struct Failure {
    name: String,
    message: String,
    stack: String,
    thrown_null: bool,
    syntax: bool,
}

impl Failure {
    fn from_caught(caught: &CaughtError<'_>, compiling: bool) -> Failure {
        match caught {
            CaughtError::Exception(exception) => {
                let object = exception.as_object();
                let name: String = object.get("name").unwrap_or_else(|_| "Error".to_string());
                Failure {
                    syntax: compiling && name == "SyntaxError",
                    name,
                    message: exception.message().unwrap_or_default(),
                    stack: exception.stack().unwrap_or_default(),
                    thrown_null: false,
                }
            }
            CaughtError::Value(value) => Failure::from_value(value),
            CaughtError::Error(error) => {
                Failure { name: "Error".to_string(), message: error.to_string(), ..Failure::default() }
            }
        }
    }

    /// What a call failed with, from the value it threw or rejected with: an error's name,
    /// message and stack; any other object with a `message` read the same way; anything else
    /// shown as `uncaught <type>: <value>`.
    fn from_value(thrown: &Value<'_>) -> Failure {
        if thrown.is_null() {
            return Failure {
                name: "null".to_string(),
                message: "null".to_string(),
                thrown_null: true,
                ..Failure::default()
            };
        }
        if let Some(exception) = thrown.as_exception() {
            return Failure::from_caught(&CaughtError::Exception(exception.clone()), false);
        }
        let text = |value: rquickjs::Result<Value<'_>>| {
            value.and_then(|value| value.get::<Coerced<String>>()).map(|text| text.0).unwrap_or_default()
        };
        if let Some(object) = thrown.as_object()
            && object.contains_key("message").unwrap_or(false)
        {
            let name = object.get::<_, Value<'_>>("name").ok().filter(|name| !name.is_undefined() && !name.is_null());
            let name = name.map(|name| text(Ok(name))).filter(|name| !name.is_empty());
            let stack = object.get::<_, Value<'_>>("stack").ok().and_then(|stack| stack.as_string()?.to_string().ok());
            return Failure {
                name: name.unwrap_or_else(|| "Error".to_string()),
                message: text(object.get("message")),
                stack: stack.unwrap_or_default(),
                ..Failure::default()
            };
        }
        let message = match thrown.as_string() {
            Some(string) => string.to_string().unwrap_or_default(),
            None => format_one(thrown),
        };
        Failure {
            name: "Thrown".to_string(),
            message: format!("uncaught {}: {message}", type_of(thrown)),
            ..Failure::default()
        }
    }

    fn headline(&self) -> String {
        match self.name.as_str() {
            "" | "Thrown" => self.message.clone(),
            name => format!("{name}: {}", self.message),
        }
    }
}

/// What comes before `Array` in the names of the typed arrays (`Uint8Array` ...).
const TYPED_ARRAY_PREFIXES: [&str; 12] = [
    "Int8",
    "Uint8",
    "Uint8Clamped",
    "Int16",
    "Uint16",
    "Int32",
    "Uint32",
    "Float16",
    "Float32",
    "Float64",
    "BigInt64",
    "BigUint64",
];

/// Whether `code` names `ArrayBuffer`, `DataView` or a typed array (`Uint8Array` ...), anywhere,
/// strings included (so `new Function("... Uint8Array ...")` counts). Code that builds such a
/// name at run time (`globalThis["Uint" + "8Array"]`) does not see them.
fn names_typed_arrays(code: &str) -> bool {
    code.contains("DataView")
        || code.match_indices("Array").any(|(at, _)| {
            code[at + "Array".len()..].starts_with("Buffer")
                || TYPED_ARRAY_PREFIXES.iter().any(|prefix| code[..at].ends_with(prefix))
        })
}

/// The intrinsics and prelude parts a context gets only when its call's code may use them,
/// decided from the code's text before it is compiled: each is named in the code, anywhere but
/// in a line that is a `//` comment, strings included (so `new Function("... Map ...")`
/// counts). Code that builds a name at run time (`globalThis["Ma" + "p"]`) does not see it. No
/// other builtin hands out a `Date`, a `Map`, a `Set`, a `Proxy` or a typed array; `RegExp` also comes with the `String` methods that make
/// one from a string (`match`, `matchAll`, `search`) and with run-time compiling (`eval`,
/// `Function`), and a regular expression literal the names missed makes the compiler fail, after
/// which [`add_regexp`] is called and the code compiled again ([`compiled::function_from_code`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct OnDemand {
    typed_arrays: bool,
    date: bool,
    map_set: bool,
    proxy: bool,
    regexp: bool,
    /// The prelude's globals: `console`, `state` and `fetch` (its parts `console.js`,
    /// `state.js` and `fetch.js`) and `resolve`.
    console: bool,
    state: bool,
    fetch: bool,
    resolve: bool,
}

impl OnDemand {
    fn named_in(code: &str) -> OnDemand {
        let code = &without_comment_lines(code);
        OnDemand {
            typed_arrays: names_typed_arrays(code),
            date: code.contains("Date"),
            // `Map`, `Set`, `WeakMap`, `WeakSet`.
            map_set: code.contains("Map") || code.contains("Set"),
            proxy: code.contains("Proxy"),
            regexp: ["RegExp", "match", "search", "eval", "Function"].iter().any(|name| code.contains(name)),
            console: code.contains("console"),
            state: code.contains("state"),
            fetch: code.contains("fetch"),
            resolve: code.contains("resolve"),
        }
    }

    /// Adds what `self` names to a prepared context, before its code is compiled.
    #[allow(unsafe_code)]
    fn add_to(self, ctx: &Ctx<'_>) -> Result<(), SandboxError> {
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `ctx` is a live context of this thread's runtime, borrowed for this call, and
        // fresh: it has had none of these intrinsics yet and gets each at most once, before any
        // agent code runs in it (bytecode read ahead has not run: `Preloaded`). These are
        // the calls `Context::custom` makes for `intrinsic::TypedArrays`, `Date`, `MapSet` and
        // `Proxy`, made later.
        let failed = |status: i32, what: &str| {
            (status < 0).then(|| SandboxError::Engine(format!("{what} could not be added to the context")))
        };
        if self.typed_arrays {
            if let Some(error) = failed(unsafe { rquickjs::qjs::JS_AddIntrinsicTypedArrays(raw) }, "typed arrays") {
                return Err(error);
            }
            // The two globals of that intrinsic the sandbox does not offer.
            let globals = ctx.globals();
            for name in ["SharedArrayBuffer", "Atomics"] {
                globals.remove(name).map_err(engine_error)?;
            }
        }
        if self.date
            && let Some(error) = failed(unsafe { rquickjs::qjs::JS_AddIntrinsicDate(raw) }, "Date")
        {
            return Err(error);
        }
        if self.map_set
            && let Some(error) = failed(unsafe { rquickjs::qjs::JS_AddIntrinsicMapSet(raw) }, "Map and Set")
        {
            return Err(error);
        }
        if self.proxy
            && let Some(error) = failed(unsafe { rquickjs::qjs::JS_AddIntrinsicProxy(raw) }, "Proxy")
        {
            return Err(error);
        }
        if self.regexp {
            add_regexp(ctx).map_err(engine_error)?;
        }
        Ok(())
    }
}

/// The last call's bytecode, read into the next call's context while the worker waits: a tool
/// is usually called again, and reading its bytecode (a few microseconds for a tool of w2's
/// size) is then off the caller's path. Only read (`JS_ReadObject`): the value is QuickJS's
/// function bytecode, which no code can reach, and nothing of it runs until the call with the
/// same text evaluates it in its own context, after its on-demand builtins are added — as when
/// the call reads the bytecode itself. (Evaluating it ahead would run the top level of code that
/// escapes the function wrapper, `}); ...; (function () {`, in the next call's context.) A call
/// with other code drops it before its own code runs; interned names are all it leaves. No
/// builtin is added for it: reading needs none (a regular expression literal is two strings in
/// the constant pool; `RegExp` is added in the call, before evaluating, for bytecode that builds
/// one), so what a call finds never depends on the call before.
struct Preloaded {
    bytecode: Persistent<Value<'static>>,
}

impl Preloaded {
    /// `None` when `code` is not in the cache (it did not compile, or was too large to keep).
    fn read(context: &Context, cache: &CodeCache, code: &str) -> Result<Option<Preloaded>, SandboxError> {
        context.with(|ctx| match compiled::read_cached(&ctx, cache, code) {
            Ok(Some(bytecode)) => Ok(Some(Preloaded { bytecode: Persistent::save(&ctx, bytecode) })),
            Ok(None) => Ok(None),
            Err(error) => {
                drop(ctx.catch());
                Err(engine_error(error))
            }
        })
    }
}

/// `code` without its lines that are `//` comments (a tool's header, notes between statements):
/// a name in a comment does not run. A comment after code on the same line stays; a template
/// literal's line that starts with `//` goes, which can only hide a name.
fn without_comment_lines(code: &str) -> std::borrow::Cow<'_, str> {
    let is_comment = |line: &str| line.trim_start().starts_with("//");
    if !code.lines().any(is_comment) {
        return std::borrow::Cow::Borrowed(code);
    }
    std::borrow::Cow::Owned(code.lines().filter(|line| !is_comment(line)).collect::<Vec<_>>().join("\n"))
}

/// Keeps the names of every builtin a context can have interned for the runtime's life. QuickJS
/// interns property names as atoms, counted by use: when a spent context is freed, the names
/// only its builtins used go with it, and the next context interns them all again (hash,
/// allocate, insert, and free them after) — about a seventh of making a context. The names are
/// read from a context of their own with every intrinsic, thrown away after, so no context a call
/// runs in is touched; an atom is only a name, which no code can list, and QuickJS frees the
/// pinned ones with the runtime.
#[allow(unsafe_code)]
fn pin_builtin_names(runtime: &Runtime) -> Result<(), SandboxError> {
    use rquickjs::qjs;
    let context = Context::custom::<Intrinsics>(runtime).map_err(engine_error)?;
    context.with(|ctx| -> Result<(), SandboxError> {
        let every = OnDemand {
            typed_arrays: true,
            date: true,
            map_set: true,
            proxy: true,
            regexp: true,
            ..OnDemand::default()
        };
        every.add_to(&ctx)?;
        let raw = ctx.as_raw().as_ptr();
        // The global object, what it holds (constructors, namespaces), and what those hold
        // (prototypes, static methods): the names of their own properties, all of them.
        let mut level: Vec<Value<'_>> = vec![ctx.globals().into_value()];
        let mut seen = std::collections::HashSet::new();
        for depth in 0..3 {
            let mut next = Vec::new();
            for object in &level {
                let mut names: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
                let mut count: u32 = 0;
                let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_SYMBOL_MASK) as i32;
                // SAFETY: `object` is a live object of this entered context; on success QuickJS
                // hands us `count` entries, each owning one reference to its atom, freed below
                // with `JS_FreePropertyEnum`.
                if unsafe { qjs::JS_GetOwnPropertyNames(raw, &mut names, &mut count, object.as_raw(), flags) } < 0 {
                    drop(ctx.catch());
                    continue;
                }
                for index in 0..count as usize {
                    // SAFETY: `index < count` entries of the table QuickJS just returned.
                    let atom = unsafe { (*names.add(index)).atom };
                    // SAFETY: a live atom of this runtime; the extra reference is the pin.
                    unsafe { qjs::JS_DupAtom(raw, atom) };
                    if depth == 2 {
                        continue;
                    }
                    // SAFETY: a live object and atom of this context; the returned value is owned
                    // by the `Value` made from it. A builtin getter may throw on its prototype:
                    // that exception is cleared and the property skipped.
                    let value = unsafe { qjs::JS_GetProperty(raw, object.as_raw(), atom) };
                    if unsafe { qjs::JS_IsException(value) } {
                        drop(ctx.catch());
                        continue;
                    }
                    let value = unsafe { Value::from_raw(ctx.clone(), value) };
                    // SAFETY: the value is an object, whose payload is its pointer: its identity.
                    if let Some(object) = value.as_object()
                        && seen.insert(unsafe { object.as_raw().u.ptr } as usize)
                    {
                        next.push(value);
                    }
                }
                // SAFETY: the table and count QuickJS returned above, freed once.
                unsafe { qjs::JS_FreePropertyEnum(raw, names, count) };
            }
            level = next;
        }
        Ok(())
    })?;
    drop(context);
    runtime.run_gc();
    Ok(())
}

/// Adds `RegExp` and the compiler of regular expression literals to a context that has neither
/// yet: before its code is compiled ([`OnDemand`]), or when compiling it without them failed.
#[allow(unsafe_code)]
fn add_regexp(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: as in `OnDemand::add_to`: a live context of this thread, entered, that has not had
    // these two intrinsics; the calls `Context::custom` makes for `RegExpCompiler` and `RegExp`.
    unsafe {
        rquickjs::qjs::JS_AddIntrinsicRegExpCompiler(raw);
        if rquickjs::qjs::JS_AddIntrinsicRegExp(raw) < 0 {
            return Err(rquickjs::Error::Exception);
        }
    }
    Ok(())
}

fn engine_error(error: rquickjs::Error) -> SandboxError {
    SandboxError::Engine(error.to_string())
}

pub(crate) fn wrap_code(code: &str) -> String {
    let mut source = String::with_capacity(CODE_OPEN.len() + code.len() + CODE_CLOSE.len());
    source.push_str(CODE_OPEN);
    source.push_str(code);
    source.push_str(CODE_CLOSE);
    source
}

/// Parses `tool.js:LINE:COLUMN` and maps the column on line 1 back into the agent's text.
fn parse_position(text: &str) -> Option<(u32, u32)> {
    let rest = &text[text.find(CODE_FILE)? + CODE_FILE.len()..];
    let rest = rest.strip_prefix(':')?;
    let line_end = rest.find(':')?;
    let line: u32 = rest[..line_end].parse().ok()?;
    let column_text: String = rest[line_end + 1..].chars().take_while(char::is_ascii_digit).collect();
    let mut column: u32 = column_text.parse().ok()?;
    if line == 1 {
        column = column.saturating_sub(CODE_OPEN.len() as u32).max(1);
    }
    Some((line, column))
}

fn first_position(stack: &str) -> (Option<u32>, Option<u32>) {
    match stack.lines().find_map(parse_position) {
        Some((line, column)) => (Some(line), Some(column)),
        None => (None, None),
    }
}

/// The frames of a stack that are in the agent's code, columns on line 1 corrected.
fn agent_frames(stack: &str) -> String {
    stack
        .lines()
        .filter(|line| line.contains(CODE_FILE))
        .map(|line| match (parse_position(line), line.find(CODE_FILE)) {
            (Some((row, column)), Some(at)) => {
                let closing = if line.trim_end().ends_with(')') { ")" } else { "" };
                format!("{}{CODE_FILE}:{row}:{column}{closing}", &line[..at])
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The prelude's bytecode: the parts read into a context when its call's code names them.
#[derive(Clone, Copy)]
struct PreludeBytecode {
    console: &'static [u8],
    state: &'static [u8],
    fetch: &'static [u8],
}

thread_local! {
    /// The prelude compiled once per thread to QuickJS bytecode: parsing it would cost more than
    /// the rest of making a context. Leaked on purpose: a thread compiles it once.
    static PRELUDE_BYTECODE: std::cell::OnceCell<PreludeBytecode> = const { std::cell::OnceCell::new() };
}

/// Compiled in a context of its own, thrown away after, without line tables or source text:
/// there is less to read into every context, and the prelude's own frames are cut from the
/// stacks agents see anyway.
fn prelude_bytecode(runtime: &Runtime) -> Result<PreludeBytecode, SandboxError> {
    if let Some(bytes) = PRELUDE_BYTECODE.with(|cell| cell.get().copied()) {
        return Ok(bytes);
    }
    let context = Context::custom::<Intrinsics>(runtime).map_err(engine_error)?;
    let compiled = context.with(|ctx| {
        let compile = |source: &str, file_name: &std::ffi::CStr| {
            compiled::compile_prelude_script(&ctx, source, file_name).map(|bytes| &*Box::leak(bytes.into_boxed_slice()))
        };
        Ok::<_, rquickjs::Error>(PreludeBytecode {
            console: compile(PRELUDE_CONSOLE, c"prelude-console.js")?,
            state: compile(PRELUDE_STATE, c"prelude-state.js")?,
            fetch: compile(PRELUDE_FETCH, c"prelude-fetch.js")?,
        })
    });
    let bytes = compiled.map_err(engine_error)?;
    PRELUDE_BYTECODE.with(|cell| cell.set(bytes).ok());
    Ok(bytes)
}

/// Refuses every import: the code of a call is a module only so that it compiles without
/// running; it may not import anything, the prelude included.
struct NoModules;

impl rquickjs::loader::Resolver for NoModules {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        _base: &str,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Err(Exception::throw_message(ctx, &format!("cannot import \"{name}\": the sandbox has no modules")))
    }
}

impl rquickjs::loader::Loader for NoModules {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        Err(Exception::throw_message(ctx, &format!("cannot import \"{name}\": the sandbox has no modules")))
    }
}

/// How a call's code has ended, as far as the engine can see between promise jobs: `resolve`
/// called or the body's promise settled, whichever came first. A body that returned nothing
/// may still call `resolve` from a promise callback, so it has not ended until nothing is left
/// to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Resolved,
    Fulfilled,
    ReturnedNothing,
    Rejected,
    Pending,
}

impl Ending {
    fn of(promise: &Value<'_>, resolved: &Resolved) -> Ending {
        if resolved.called.get() {
            return Ending::Resolved;
        }
        let Some(promise) = promise.as_promise() else {
            return Ending::Fulfilled;
        };
        match promise.state() {
            rquickjs::promise::PromiseState::Pending => Ending::Pending,
            rquickjs::promise::PromiseState::Rejected => Ending::Rejected,
            rquickjs::promise::PromiseState::Resolved => match promise_result(promise.ctx(), promise.as_value()) {
                Ok(value) if value.is_undefined() => Ending::ReturnedNothing,
                _ => Ending::Fulfilled,
            },
        }
    }

    fn is_settled(self) -> bool {
        !matches!(self, Ending::Pending | Ending::ReturnedNothing)
    }
}

/// The value or the reason a settled promise holds (the value itself if it is not a promise).
#[allow(unsafe_code)]
fn promise_result<'js>(ctx: &Ctx<'js>, promise: &Value<'js>) -> rquickjs::Result<Value<'js>> {
    if !promise.is_promise() {
        return Ok(promise.clone());
    }
    // SAFETY: `promise` is a live promise of `ctx`; `JS_PromiseResult` returns a new reference,
    // owned by the returned value.
    Ok(unsafe {
        Value::from_raw(ctx.clone(), rquickjs::qjs::JS_PromiseResult(ctx.as_raw().as_ptr(), promise.as_raw()))
    })
}

/// What `resolve(value)` recorded during a call: its first call's value.
#[derive(Default)]
struct Resolved {
    called: Cell<bool>,
    value: RefCell<Option<Persistent<Value<'static>>>>,
}

impl Resolved {
    fn value<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Value<'js>> {
        match self.value.borrow().clone() {
            Some(value) => value.restore(ctx),
            None => Ok(Value::new_undefined(ctx.clone())),
        }
    }
}

/// Empties a call's [`Resolved`] when the call's engine code returns: the `resolve` function
/// keeps it until the context is collected, and a value of the context must not be dropped then.
struct ResolvedGuard(Rc<Resolved>);

impl Drop for ResolvedGuard {
    fn drop(&mut self) {
        self.0.value.borrow_mut().take();
    }
}

/// The global `resolve(value)`: ends the call with `value`, unless the code returned first.
fn resolve_function<'js>(ctx: &Ctx<'js>, resolved: Rc<Resolved>) -> rquickjs::Result<Function<'js>> {
    let resolve = move |ctx: Ctx<'js>, value: rquickjs::function::Opt<Value<'js>>| {
        if !resolved.called.replace(true) {
            let value = value.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            *resolved.value.borrow_mut() = Some(Persistent::save(&ctx, value));
        }
    };
    Function::new(ctx.clone(), resolve)?.with_name("resolve")
}

/// A call's result as JSON text, written by QuickJS's own JSON.stringify (never the context's
/// `JSON`) with a replacer that refuses what JSON cannot hold and names where it is: a function,
/// a symbol or a BigInt (JSON.stringify would drop the first two silently), or a cycle. `Err`
/// holds the value that was thrown, for `Failure::from_value`.
///
/// The replacer sees every value after `toJSON`, with `this` its holder. JSON.stringify writes
/// depth first, so the holder is always on the stack of objects being written, and whatever lies
/// above it there is done: the stack gives each holder's path, made only for objects.
fn result_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> rquickjs::Result<Result<String, Value<'js>>> {
    let holders: Rc<RefCell<Vec<(usize, String)>>> = Rc::default();
    let stack = Rc::clone(&holders);
    let replacer = move |ctx: Ctx<'js>, this: This<Value<'js>>, key: Value<'js>, item: Value<'js>| {
        let mut stack = stack.borrow_mut();
        let holder = identity(&this.0);
        while stack.last().is_some_and(|(top, _)| Some(*top) != holder) {
            stack.pop();
        }
        let path = || -> rquickjs::Result<String> {
            let key: Coerced<String> = key.get()?;
            Ok(match stack.last() {
                None => "result".to_string(),
                Some((_, parent)) if this.0.is_array() => format!("{parent}[{}]", key.0),
                Some((_, parent)) => format!("{parent}.{}", key.0),
            })
        };
        let refused = if item.is_function() {
            "a function"
        } else if item.is_symbol() {
            "a symbol"
        } else if item.is_big_int() {
            "a BigInt"
        } else {
            if let Some(object) = identity(&item) {
                let path = path()?;
                stack.push((object, path));
            }
            return Ok(item);
        };
        Err(Exception::throw_type(&ctx, &format!("the result is not JSON: {} is {refused}", path()?)))
    };
    let replacer = Function::new(ctx.clone(), replacer)?;
    match ctx.json_stringify_replacer(value, replacer) {
        Ok(text) => Ok(Ok(text.map(|text| text.to_string()).transpose()?.unwrap_or_else(|| "null".to_string()))),
        Err(rquickjs::Error::Exception) => {
            let thrown = ctx.catch();
            let circular = thrown.as_exception().is_some_and(|error| {
                error.message().is_some_and(|message| message.contains("circular"))
                    && error.get::<_, String>("name").is_ok_and(|name| name == "TypeError")
            });
            if !circular {
                return Ok(Err(thrown));
            }
            let cycle = "the result is not JSON: it contains a cycle (an object that contains itself)";
            let _ = Exception::throw_type(ctx, cycle);
            Ok(Err(ctx.catch()))
        }
        Err(error) => Err(error),
    }
}

/// An object's identity (its address), or `None` for a value that is not an object.
#[allow(unsafe_code)]
fn identity(value: &Value<'_>) -> Option<usize> {
    // SAFETY: an object's payload is its pointer.
    value.is_object().then(|| unsafe { value.as_raw().u.ptr } as usize)
}

/// A thrown value that is not an error, as text: JSON where it has some, else what `String()`
/// makes of it.
fn format_one(value: &Value<'_>) -> String {
    if let Some(symbol) = value.as_symbol() {
        let description = symbol.description().ok().and_then(|text| text.get::<Coerced<String>>().ok());
        return format!("Symbol({})", description.map(|text| text.0).unwrap_or_default());
    }
    if !(value.is_undefined() || value.is_function() || value.is_big_int())
        && let Ok(Some(text)) = value.ctx().json_stringify(value.clone())
        && let Ok(text) = text.to_string()
    {
        return text;
    }
    let shown = value.get::<Coerced<String>>().map(|text| text.0);
    if shown.is_err() {
        drop(value.ctx().catch());
    }
    shown.unwrap_or_else(|_| "a value that cannot be shown".to_string())
}

/// A test of what a value is (`Value::is_string` ...).
type ValueTest<'js> = fn(&Value<'js>) -> bool;

/// JavaScript's `typeof` of a value.
fn type_of<'js>(value: &Value<'js>) -> &'static str {
    let kinds: [(ValueTest<'js>, &'static str); 7] = [
        (Value::is_undefined, "undefined"),
        (Value::is_bool, "boolean"),
        (Value::is_number, "number"),
        (Value::is_string, "string"),
        (Value::is_symbol, "symbol"),
        (Value::is_big_int, "bigint"),
        (Value::is_function, "function"),
    ];
    kinds.iter().find(|(is, _)| is(value)).map_or("object", |(_, name)| name)
}

/// Defines a global as the prelude's globals are: writable, configurable, not enumerable (a
/// property that exists keeps its flags and gets the value). QuickJS's own define, never the
/// code's `Object.defineProperty`.
fn define_global<'js>(ctx: &Ctx<'js>, name: &str, value: Value<'js>) -> rquickjs::Result<()> {
    ctx.globals().prop(name, rquickjs::object::Property::from(value).writable().configurable())
}

/// Reads a part of the prelude into `ctx`: its function.
fn read_part<'js>(ctx: &Ctx<'js>, part: &[u8]) -> rquickjs::Result<Function<'js>> {
    compiled::run_prelude_script(ctx, part)?.get()
}

/// `host(op, payload) -> reply`: a blocking round trip to the host, after the deadline and the
/// fetch count are checked; the payload and the reply cross as JSON, made and read by QuickJS's
/// own JSON (an empty reply is `undefined`).
fn host_function<'js>(ctx: &Ctx<'js>, state: Rc<CallState>) -> rquickjs::Result<Function<'js>> {
    let function = move |ctx: Ctx<'js>, op: String, payload: Value<'js>| -> rquickjs::Result<Value<'js>> {
        if state.past_deadline() {
            return Err(Exception::throw_internal(&ctx, "the call's deadline has passed"));
        }
        let limits = state.limits.get();
        if op == "fetch" {
            let count = state.fetches.get() + 1;
            if count > limits.max_fetches {
                return Err(Exception::throw_message(
                    &ctx,
                    &format!("fetch limit reached: at most {} requests per call", limits.max_fetches),
                ));
            }
            state.fetches.set(count);
        }
        let payload = match ctx.json_stringify(payload)? {
            Some(text) => text.to_string()?,
            None => return Err(Exception::throw_type(&ctx, "bad host request")),
        };
        let mut message: serde_json::Map<String, JsonValue> = match serde_json::from_str(&payload) {
            Ok(JsonValue::Object(map)) => map,
            _ => return Err(Exception::throw_type(&ctx, "bad host request")),
        };
        message.insert("op".to_string(), JsonValue::String(op));
        let call: HostCall = match serde_json::from_value(JsonValue::Object(message)) {
            Ok(call) => call,
            Err(error) => return Err(Exception::throw_type(&ctx, &format!("bad host request: {error}"))),
        };
        let reply = state.bridge.borrow_mut().call(call);
        match reply {
            Ok(JsonValue::Null) => Ok(Value::new_undefined(ctx.clone())),
            Ok(value) => ctx.json_parse(serde_json::to_string(&value).unwrap_or_default()),
            Err(HostError::DeadlinePassed) => {
                state.timed_out.set(true);
                Err(Exception::throw_internal(&ctx, "the call's deadline has passed"))
            }
            Err(HostError::Message(message)) => {
                if state.past_deadline() {
                    return Err(Exception::throw_internal(&ctx, "the call's deadline has passed"));
                }
                Err(Exception::throw_message(&ctx, &message))
            }
        }
    };
    Function::new(ctx.clone(), function)
}

/// `native.log(level, text)`: captured under the call's caps; past the deadline it throws so a
/// logging loop cannot outlive the call.
fn log_function<'js>(ctx: &Ctx<'js>, state: Rc<CallState>) -> rquickjs::Result<Function<'js>> {
    let function = move |ctx: Ctx<'js>, level: String, text: String| -> rquickjs::Result<()> {
        if state.past_deadline() {
            return Err(Exception::throw_internal(&ctx, "the call's deadline has passed"));
        }
        let limits = state.limits.get();
        state.logs.borrow_mut().push(&level, &text, &limits);
        Ok(())
    };
    Function::new(ctx.clone(), function)
}

/// Compiles `code` as a tool body without running any of it. A syntax error comes back with the
/// line and column in the agent's text.
pub(crate) fn check_syntax(code: &str) -> Result<(), SandboxError> {
    let runtime = Runtime::new().map_err(engine_error)?;
    runtime.set_memory_limit(Limits::default().memory_limit_bytes);
    runtime.set_max_stack_size(Limits::default().stack_limit_bytes);
    let context = Context::full(&runtime).map_err(engine_error)?;
    context.with(|ctx| {
        // A module is compiled without being evaluated, unlike a script: code that escapes the
        // wrapper (`}); ...; (function () {`) cannot run here. Modules are strict, as calls are.
        match Module::declare(ctx.clone(), CODE_FILE, wrap_code(code)).catch(&ctx) {
            Ok(_) => Ok(()),
            Err(caught) => {
                let failure = Failure::from_caught(&caught, true);
                let (line, column) = first_position(&failure.stack);
                Err(SandboxError::Syntax {
                    message: failure.headline(),
                    line: line.unwrap_or(0),
                    column: column.unwrap_or(0),
                })
            }
        }
    })
}
