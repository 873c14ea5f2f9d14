//! What a worker process gives up before it runs any agent code, so that a bug in the engine
//! (QuickJS is C) that lets agent code take over the process still finds little to use.
//!
//! - At process start: no new file descriptors (so no files, no sockets), no core dumps, no
//!   privilege gain through exec (`no_new_privs`).
//! - On the worker thread, before the first call: no new processes or threads, and a syscall
//!   filter (seccomp) on every thread of the process that allows only what serving calls
//!   needs — reading and writing the pipes it has, memory, futexes, clocks, signals to itself,
//!   exit. Everything else fails with `EPERM`: opening, unlinking or renaming paths, sockets,
//!   exec, ptrace, signals to other processes.
//!
//! Resource limits and the filter need no privileges and cost nothing per call. Root ignores
//! the process limit; the filter holds for root too.

// Two libc calls with plain integer arguments; each is commented where it is made.
#![allow(unsafe_code)]

#[cfg(target_os = "linux")]
use std::collections::BTreeMap;

/// Descriptors a worker keeps: stdin, stdout and stderr. New ones fail with EMFILE.
#[cfg(target_os = "linux")]
const MAX_FILES: libc::rlim_t = 3;

/// Applied at process start, before the worker thread exists.
#[cfg(target_os = "linux")]
pub(crate) fn confine_process() -> Result<(), String> {
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes integer arguments only and affects this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    limit(libc::RLIMIT_CORE, 0, "core dumps")?;
    limit(libc::RLIMIT_NOFILE, MAX_FILES, "open files")
}

/// Set in a worker's environment when the operator turned the syscall filter off.
pub(crate) const NO_SYSCALL_FILTER: &str = "WRIGHT_SANDBOX_NO_SYSCALL_FILTER";

/// Applied on the worker thread once it runs (the thread exists, so clone is no longer needed):
/// from here on no thread or process can be made, and only the syscalls of [`ALLOWED`] work.
#[cfg(target_os = "linux")]
pub(crate) fn confine_thread() -> Result<(), String> {
    limit(libc::RLIMIT_NPROC, 0, "processes")?;
    if std::env::var_os(NO_SYSCALL_FILTER).is_some() {
        return Ok(());
    }
    let program = syscall_filter()?;
    seccompiler::apply_filter_all_threads(&program).map_err(|error| format!("syscall filter: {error}"))
}

/// What serving calls needs, and nothing more.
#[cfg(target_os = "linux")]
const ALLOWED: &[libc::c_long] = &[
    // The pipes to the pool (stdin, stdout) and stderr.
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_close,
    // Waiting for the next call on stdin without reading it (`worker::wait_for_input`).
    libc::SYS_ppoll,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_poll,
    // Memory: the allocator and QuickJS.
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    // Locks, clocks, randomness.
    libc::SYS_futex,
    libc::SYS_sched_yield,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_clock_nanosleep,
    libc::SYS_getrandom,
    libc::SYS_restart_syscall,
    // Signals and the end of the process (a panic aborts through tgkill; see below).
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigaction,
    libc::SYS_sigaltstack,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

#[cfg(target_os = "linux")]
fn syscall_filter() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule};
    let arch = std::env::consts::ARCH.try_into().map_err(|error| format!("syscall filter: {error}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = ALLOWED.iter().map(|&call| (call, Vec::new())).collect();
    // Signals only to this process (abort raises SIGABRT with tgkill).
    let own = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, u64::from(std::process::id()))
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map_err(|error| format!("syscall filter: {error}"))?;
    rules.insert(libc::SYS_tgkill, vec![own]);
    let filter =
        SeccompFilter::new(rules, SeccompAction::Errno(libc::EPERM.unsigned_abs()), SeccompAction::Allow, arch)
            .map_err(|error| format!("syscall filter: {error}"))?;
    filter.try_into().map_err(|error: seccompiler::BackendError| format!("syscall filter: {error}"))
}

#[cfg(target_os = "linux")]
fn limit(resource: libc::__rlimit_resource_t, value: libc::rlim_t, what: &str) -> Result<(), String> {
    let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
    // SAFETY: `limit` is a valid rlimit for the duration of the call.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(format!("limiting {what}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn confine_process() -> Result<(), String> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn confine_thread() -> Result<(), String> {
    Ok(())
}
