//! The worker process: [`worker_main`] serves calls from the pool over stdin/stdout, one at a
//! time, until stdin closes. It is meant to be killed: the pool's watchdog does so whenever a
//! call overruns its deadline plus grace, and nothing here needs cleaning up.

use crate::engine::{Bridge, Engine, HostError};
use crate::protocol::{FromWorker, HostCall, ToWorker};
use serde_json::Value;
use std::io::{BufRead, Write};

/// The worker thread's stack: above the largest JS stack limit a call may ask for
/// ([`crate::config::MAX_STACK_LIMIT_BYTES`]), so deep recursion ends in a `RangeError` long
/// before the thread's guard page. Only touched pages cost memory.
const WORKER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Runs a sandbox worker on this process's stdin and stdout; returns when stdin closes. The
/// `wright` binary calls it from a hidden subcommand; `wright-sandbox-worker` is the same for
/// tests. Nothing else may write to stdout in this process.
pub fn worker_main() {
    // A worker that cannot confine itself does not serve: the pool sees it exit and reports it.
    if let Err(error) = crate::confine::confine_process() {
        eprintln!("wright-sandbox worker: cannot confine itself: {error}");
        std::process::exit(1);
    }
    let thread =
        std::thread::Builder::new().name("sandbox-worker".to_string()).stack_size(WORKER_STACK_BYTES).spawn(serve);
    match thread {
        Ok(handle) => {
            if handle.join().is_err() {
                std::process::exit(101);
            }
        }
        Err(error) => {
            eprintln!("wright-sandbox worker: cannot start its thread: {error}");
            std::process::exit(1);
        }
    }
}

fn serve() {
    if let Err(error) = crate::confine::confine_thread() {
        eprintln!("wright-sandbox worker: cannot confine itself: {error}");
        return;
    }
    serve_calls();
}

/// The worker's loop with none of [`crate::confine`]: valgrind cannot run a process that lowers
/// its own descriptor limit, and the breakdown in ARCHITECTURE.md is measured under callgrind
/// (`bench/callgrind.sh`, through `examples/worker_profile.rs`). Only with the `profiling`
/// feature, which nothing that serves agents enables.
#[cfg(feature = "profiling")]
#[doc(hidden)]
pub fn serve_unconfined_for_profiling() {
    serve_calls();
}

fn serve_calls() {
    let mut engine = Engine::new(Box::new(PipeBridge));
    // Warm up before the first call arrives; a failure here shows again on the call.
    if let Err(error) = engine.prepare() {
        eprintln!("wright-sandbox worker: {error}");
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        wait_for_input(SPIN_FOR_NEXT_CALL);
        let mut reader = stdin.lock();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let message: ToWorker = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(error) => {
                eprintln!("wright-sandbox worker: bad message: {error}");
                return;
            }
        };
        let ToWorker::Run { code_bytes, input_bytes, args, limits } = message else {
            eprintln!("wright-sandbox worker: a reply arrived while no call was running");
            return;
        };
        let payload = read_text(&mut reader, code_bytes)
            .and_then(|code| Ok((code, input_bytes.map(|bytes| read_text(&mut reader, bytes)).transpose()?)));
        drop(reader);
        let (code, input) = match payload {
            Ok(payload) => payload,
            Err(error) => {
                eprintln!("wright-sandbox worker: the call's code or input did not arrive: {error}");
                return;
            }
        };
        let outcome = engine.run(&code, &args, input.as_deref(), &limits);
        if send(FromWorker::encode_done(&outcome)).is_err() {
            return;
        }
        // The next call's context is made now, while the host reads the reply.
        if let Err(error) = engine.prepare() {
            eprintln!("wright-sandbox worker: {error}");
        }
    }
}

/// How long a worker that is ready for its next call keeps its CPU awake polling for it before
/// it sleeps in `read`. On a virtual machine a sleeping process often leaves its virtual CPU
/// halted, and waking it costs tens of microseconds (`examples/pipe_pingpong`); a call that
/// comes within this window starts at once. Polling yields the CPU to anything else runnable,
/// so it costs only otherwise idle time, and at most this much of it after each call.
const SPIN_FOR_NEXT_CALL: std::time::Duration = std::time::Duration::from_micros(500);

/// Returns when stdin has bytes to read, or after `budget` of polling (then the caller's
/// blocking read sleeps until they come).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn wait_for_input(budget: std::time::Duration) {
    let started = std::time::Instant::now();
    let mut stdin = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: one valid pollfd, a zero timeout; poll only reports on descriptor 0.
        let ready = unsafe { libc::poll(&mut stdin, 1, 0) };
        if ready != 0 || started.elapsed() >= budget {
            return;
        }
        // SAFETY: no arguments; lets anything else runnable on this CPU go first.
        unsafe { libc::sched_yield() };
    }
}

#[cfg(not(target_os = "linux"))]
fn wait_for_input(_budget: std::time::Duration) {}

/// Exactly `bytes` bytes of UTF-8 that follow a `Run` line.
fn read_text(reader: &mut impl BufRead, bytes: usize) -> std::io::Result<String> {
    let mut buffer = vec![0; bytes];
    reader.read_exact(&mut buffer)?;
    String::from_utf8(buffer).map_err(std::io::Error::other)
}

/// Writes one encoded message (see [`FromWorker`]) with one `write`, straight to file
/// descriptor 1: std's `Stdout` is line-buffered and would write a `Done` line and the raw
/// result after it separately, waking the host twice.
#[allow(unsafe_code)]
fn send(message: Result<Vec<u8>, serde_json::Error>) -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    let bytes = message.map_err(std::io::Error::other)?;
    // SAFETY: descriptor 1 is the pipe to the pool for the whole life of the process; nothing
    // in the worker closes it or writes to it through `Stdout`, and `ManuallyDrop` keeps this
    // `File` from closing it.
    let mut stdout = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
    stdout.write_all(&bytes)
}

/// Host calls go up the pipe; the worker blocks until the pool replies (or kills it).
struct PipeBridge;

impl Bridge for PipeBridge {
    fn call(&mut self, call: HostCall) -> Result<Value, HostError> {
        let lost = |_| HostError::Message("the sandbox lost its host".to_string());
        send(FromWorker::Call { call }.encode_line()).map_err(lost)?;
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => std::process::exit(0),
            Ok(_) => {}
        }
        match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Reply { deadline_passed: true, .. }) => Err(HostError::DeadlinePassed),
            Ok(ToWorker::Reply { reply, .. }) => reply.map_err(HostError::Message),
            _ => Err(HostError::Message("the sandbox's host sent a bad reply".to_string())),
        }
    }
}
