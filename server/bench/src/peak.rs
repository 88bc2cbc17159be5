//! The peak memory of a child process: its own, nothing inherited.
//!
//! `wait4`'s `ru_maxrss` does not measure this. At `exec`, Linux carries the high-water
//! mark of the memory being left into the child's figure, and after `posix_spawn` (vfork)
//! that memory is the parent's, after `fork` a copy of it. Children the process waited for
//! count too. A test binary grown to 150 MB by the tests around it reads 150 MB for a child
//! that used 10 (seen in CI). The child's own high-water mark, `VmHWM` in
//! `/proc/<pid>/status`, starts afresh at `exec`. It is read here every millisecond while
//! the child runs. It only grows, so the last reading is the peak up to a millisecond before
//! the exit. The exit is awaited without reaping (`WNOWAIT`), so the pid cannot be reused
//! while it is read, and the wall time is taken at the exit, not at a poll.

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A child run to its end with stdout drained.
#[derive(Debug)]
pub struct Measured {
    pub status: ExitStatus,
    /// From the spawn to the exit.
    pub elapsed: Duration,
    /// The child's own peak resident set, in KiB, when it was sampled.
    pub peak_kib: Option<u64>,
    /// Bytes read from its stdout.
    pub stdout_bytes: u64,
}

/// The `VmHWM` of a live process, in KiB; `None` once it has exited.
pub fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Spawn `cmd` with stdout piped (and drained, counting bytes), stdin from `/dev/null` and
/// stderr dropped; wait for its end, sampling its peak memory meanwhile when `memory` (the
/// sampling thread takes a little CPU, so timings are best taken without it).
pub fn run_drained(cmd: &mut Command, memory: bool) -> io::Result<Measured> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut out = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    let pid = child.id();
    let exited = Arc::new(AtomicBool::new(false));
    let sampler = memory.then(|| {
        let exited = exited.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !exited.load(Ordering::Acquire) {
                match high_water_kib(pid) {
                    Some(kib) => peak = peak.max(kib),
                    None => break,
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    });
    let waited = wait_exit_keeping_zombie(&child);
    let elapsed = start.elapsed();
    exited.store(true, Ordering::Release);
    let peak_kib = sampler.map(|s| s.join().unwrap_or(0));
    // Reap only now: until here the pid stayed ours.
    let status = child.wait();
    let stdout_bytes = reader.join().unwrap_or(0);
    waited?;
    Ok(Measured {
        status: status?,
        elapsed,
        peak_kib,
        stdout_bytes,
    })
}

/// Block until the child has exited, leaving it a zombie (not reaped).
fn wait_exit_keeping_zombie(child: &Child) -> io::Result<()> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid out-parameter; the pid is our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                child.id() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that touches 64 MiB reads about 64 MiB, and a child spawned by a process
    /// that holds 128 MiB reads its own few MiB, not the parent's (what `ru_maxrss` gets
    /// wrong).
    #[test]
    fn measures_the_childs_own_peak() {
        let mut held = vec![1u8; 128 << 20];
        for i in (0..held.len()).step_by(4096) {
            held[i] = (i % 251) as u8;
        }
        let m = run_drained(
            Command::new("python3").args([
            "-c",
            "import time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(0.05)\nprint('x' * 1000)",
            ]),
            true,
        )
        .unwrap();
        assert!(m.status.success());
        assert_eq!(m.stdout_bytes, 1001);
        let mib = m.peak_kib.unwrap() / 1024;
        assert!((64..110).contains(&mib), "peak {mib} MiB");
        let small = run_drained(
            Command::new("python3").args(["-c", "import time; time.sleep(0.05)"]),
            true,
        )
        .unwrap();
        let kib = small.peak_kib.unwrap();
        assert!(kib / 1024 < 60, "peak {kib} KiB");
        let untimed = run_drained(&mut Command::new("true"), false).unwrap();
        assert_eq!(untimed.peak_kib, None);
        std::hint::black_box(&held);
    }
}
