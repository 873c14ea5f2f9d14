//! What a worker process gives up before it runs any agent code, so that a bug in the engine
//! (QuickJS is C) that lets agent code take over the process still finds little to use: no new
//! file descriptors (no files, no sockets), no new processes or threads, no way to gain
//! privileges through exec, no core dump holding the user's data.
//!
//! These are resource limits and a prctl flag, which need no privileges and cost nothing per
//! call. They are not a syscall filter: a taken-over worker can still use the descriptors it
//! has (its pipes to the pool) and signal other processes of the same user. Root ignores the
//! process limit.

// Two libc calls with plain integer arguments; each is commented where it is made.
#![allow(unsafe_code)]

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

/// Applied on the worker thread once it runs: from here on no thread or process can be made.
#[cfg(target_os = "linux")]
pub(crate) fn confine_thread() -> Result<(), String> {
    limit(libc::RLIMIT_NPROC, 0, "processes")
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
