//! `pipe_pingpong [N] [--spin]`: what one round trip over a pair of pipes to another process
//! costs on this machine, with nothing else around it — the floor under a sandbox call's two
//! wake-ups (ARCHITECTURE.md, `wright-sandbox`). The parent writes one byte, a child process
//! (this program again) echoes it; medians of N (default 20,000) round trips. With `--spin` the
//! parent polls its read end instead of sleeping on it, so only the child is woken.
//!
//! On a virtual machine the figure mostly says whether an idle virtual CPU must be woken (a
//! halt and an interrupt through the hypervisor) or the two processes share one CPU.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut rounds, mut spin) = (20_000usize, false);
    for argument in std::env::args().skip(1) {
        match argument.as_str() {
            "--echo" => return echo(),
            "--spin" => spin = true,
            number => rounds = number.parse()?,
        }
    }
    let mut child =
        Command::new(std::env::current_exe()?).arg("--echo").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let (Some(mut to_child), Some(mut from_child)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the child has no pipes".into());
    };
    if spin {
        set_nonblocking(&from_child)?;
    }
    let mut samples = Vec::with_capacity(rounds);
    let mut byte = [b'x'];
    for _ in 0..rounds {
        let started = Instant::now();
        to_child.write_all(&byte)?;
        loop {
            match from_child.read(&mut byte) {
                Ok(1) => break,
                Ok(_) => return Err("the child exited".into()),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(error) => return Err(error.into()),
            }
        }
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    drop(to_child);
    child.wait()?;
    samples.sort_by(f64::total_cmp);
    let at = |quantile: f64| samples[((samples.len() as f64 * quantile) as usize).min(samples.len() - 1)];
    println!(
        "{}",
        serde_json::json!({"rounds": rounds, "spin": spin, "median_us": at(0.5), "p10_us": at(0.1), "p90_us": at(0.9)})
    );
    Ok(())
}

/// The child: echo every byte until stdin closes.
fn echo() -> Result<(), Box<dyn std::error::Error>> {
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    let mut byte = [0u8];
    while input.read(&mut byte)? == 1 {
        output.write_all(&byte)?;
        output.flush()?;
    }
    Ok(())
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_nonblocking(pipe: &std::process::ChildStdout) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_nonblocking(_pipe: &std::process::ChildStdout) -> std::io::Result<()> {
    Err(std::io::Error::other("--spin is implemented for Linux only"))
}
