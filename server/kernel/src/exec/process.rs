//! The `subprocess` primitive: run one fully resolved command.
//!
//! - spawned directly (no shell), with exactly the environment given (`env_clear` first:
//!   nothing is inherited), in its own process group;
//! - stdin is `/dev/null` unless `stdin` is given (then it is written and closed);
//! - stdout and stderr are read concurrently, as bytes; the secrets of the spec are
//!   redacted from them as they stream ([`crate::redact::StreamRedactor`]: no read boundary
//!   splits a secret); then they are passed to an [`OutputSink`] line by line as they come
//!   (a line longer than [`MAX_LINE`] is passed on in pieces, so memory stays bounded even
//!   with no newline at all), and kept up to `max_output_bytes` per stream; past that they
//!   are still drained, not kept, and the result says `truncated`;
//! - output is bytes: the sink gets them unchanged; the result carries text when the kept
//!   output is UTF-8, else `stdout_utf8: false` and the exact bytes in `stdout_base64`
//!   (`stdout` then holds a lossy rendering, for reading only);
//! - on timeout or cancellation the whole run gets SIGTERM, then SIGKILL after [`GRACE`];
//!   when the command ends, whatever it left running is killed; if the future is dropped
//!   before the end, or kiwi itself dies (even by SIGKILL), everything is killed as well.
//!
//! On Linux "the whole run" is every descendant of the command, wherever it went (`setsid`,
//! a double fork, `env -i`): a per-run supervisor process, a child subreaper, holds the tree
//! (see [`super::supervisor`]). Elsewhere it is the process group.

pub use super::Isolation;
use super::{ErrorKind, ExecError, OutputSink, Stream};
use crate::redact::Secrets;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// A line longer than this is streamed in pieces of this size.
pub const MAX_LINE: usize = 64 * 1024;
/// Time between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// How long the output pipes may stay open after the group is gone (a process that left
/// the group and still holds them is not waited for longer than this).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_MAX_OUTPUT: usize = 8 * 1024 * 1024;

/// A command ready to run: nothing in it is templated or looked up any more, except that a
/// bare `program` name is looked up on the `PATH` of `env`.
#[derive(Clone)]
pub struct ProcessSpec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the process.
    pub env: BTreeMap<String, String>,
    /// Written to stdin, which is then closed; `None`: stdin is `/dev/null`.
    pub stdin: Option<String>,
    pub timeout: Duration,
    /// Bytes kept of stdout, and of stderr.
    pub max_output_bytes: usize,
    /// Replaced in the output as it streams (and so in what is kept).
    pub secrets: Secrets,
    /// After `stdin` is written, stdin stays open until the process exits: a connection's
    /// watchdog on the far end reads its end (EOF) as the end of the run (`ssh`, issue 30).
    pub hold_stdin: bool,
}

impl ProcessSpec {
    pub fn new(program: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT,
            secrets: Secrets::none(),
            hold_stdin: false,
        }
    }
}

/// Environment values are never printed: `Debug` shows the variable names only.
impl std::fmt::Debug for ProcessSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("stdin", &self.stdin.as_ref().map(|s| s.len()))
            .field("timeout", &self.timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .finish()
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProcessResult {
    /// The exit status; `None` when the process was ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    /// The output as text: exactly the bytes when they are UTF-8 (`stdout_utf8`), else a
    /// lossy rendering; the bytes are then in `stdout_base64`.
    pub stdout: String,
    pub stderr: String,
    /// Whether the kept stdout is UTF-8 (an incomplete character cut by truncation aside).
    #[serde(skip_serializing_if = "is_true")]
    pub stdout_utf8: bool,
    #[serde(skip_serializing_if = "is_true")]
    pub stderr_utf8: bool,
    /// The kept stdout, base64 (standard alphabet), when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_base64: Option<String>,
    /// stdout parsed, when it is one JSON document (and was not truncated).
    pub json: Option<serde_json::Value>,
    pub duration_ms: u64,
    pub timed_out: bool,
    pub cancelled: bool,
    /// stdout or stderr went past `max_output_bytes`.
    pub truncated: bool,
    /// Bytes the process wrote to stdout and stderr (kept or not).
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// The process id of the leader (also the process group id); on Linux, the run's
    /// supervisor (the command is its child, in its group).
    pub pid: u32,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Kept output as (text, is UTF-8, base64 of the bytes when not). An incomplete character
/// at the very end (cut by truncation) is dropped rather than making the output "binary".
pub fn output_text(kept: &[u8]) -> (String, bool, Option<String>) {
    match std::str::from_utf8(kept) {
        Ok(s) => (s.to_string(), true, None),
        Err(e) if e.error_len().is_none() => (
            String::from_utf8_lossy(&kept[..e.valid_up_to()]).into_owned(),
            true,
            None,
        ),
        Err(_) => {
            use base64::Engine as _;
            (
                String::from_utf8_lossy(kept).into_owned(),
                false,
                Some(base64::engine::general_purpose::STANDARD.encode(kept)),
            )
        }
    }
}

impl ProcessResult {
    /// The exit code a shell would report: the status, 128 + signal, 124 on timeout,
    /// 130 when cancelled.
    pub fn shell_code(&self) -> i32 {
        if self.timed_out {
            124
        } else if self.cancelled {
            130
        } else if let Some(c) = self.exit_code {
            c
        } else {
            128 + self.signal.unwrap_or(0)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shutdown: every run of this process cancelled, and waited for

/// Cancelled by [`stop_all`]: every run under way is cancelled, every new one is too.
static SHUTDOWN: std::sync::LazyLock<CancellationToken> =
    std::sync::LazyLock::new(CancellationToken::new);
/// The pid of every run started and not seen to end (a dropped run stays listed until its
/// process, which then cleans up, has exited).
static LIVE: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<u32>> {
    match LIVE.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Whether a process has ended (it is gone, or a zombie).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with(['Z', 'X'])),
    }
}

/// How many runs are under way (started and not yet cleaned up).
pub fn runs_under_way() -> usize {
    let mut l = live();
    l.retain(|p| !ended(*p));
    l.len()
}

/// Shut down: cancel every run of this process (each gets SIGTERM, then SIGKILL after
/// [`GRACE`], and its clean-up), refuse new ones, and wait until every run's processes are
/// gone, for at most `bound`. Returns whether they all were. The servers call this when
/// their client goes away (stdin closed, SIGTERM, `exit`).
pub async fn stop_all(bound: Duration) -> bool {
    SHUTDOWN.cancel();
    let start = Instant::now();
    loop {
        if runs_under_way() == 0 {
            return true;
        }
        if start.elapsed() >= bound {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What [`run_blocking`] saw: the status (`None` when the time limit ended the command),
/// and the first bytes of stdout and stderr.
#[derive(Debug)]
pub struct BlockingOutput {
    pub status: Option<std::process::ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Run a short command of kiwi's own (git, a probe) synchronously, held as a tool's run is:
/// on Linux under the per-run supervisor ([`super::supervisor`]), so that when it outlives
/// `timeout`, or when kiwi dies (even by SIGKILL), every process it started is killed;
/// elsewhere in a process group of its own, killed on timeout. stdin is `/dev/null`; at most
/// `max_output` bytes of stdout and of stderr are kept (the rest is drained). Nothing kiwi
/// starts waits forever.
pub fn run_blocking(
    mut cmd: std::process::Command,
    timeout: Duration,
    max_output: u64,
) -> std::io::Result<BlockingOutput> {
    use std::io::Read;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    #[cfg(target_os = "linux")]
    let pending = super::supervisor::install(&mut cmd, None, Isolation::Subreaper)?;
    let spawned = cmd.spawn();
    #[cfg(target_os = "linux")]
    let mut control = pending.spawned();
    let mut child = spawned?;
    let drain = |s: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut s) = s {
                let _ = s.by_ref().take(max_output).read_to_end(&mut kept);
                let _ = std::io::copy(&mut s, &mut std::io::sink());
            }
            kept
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(timeout) {
        Ok(s) => Some(s?),
        Err(_) => {
            #[cfg(target_os = "linux")]
            control.kill();
            #[cfg(unix)]
            // SAFETY: signals the command's own process group.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
            let _ = rx.recv();
            None
        }
    };
    let _ = waiter.join();
    #[cfg(target_os = "linux")]
    drop(control);
    Ok(BlockingOutput {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Resolve the program: a bare name is looked up on the `PATH` of the environment, a
/// relative path is taken from `cwd`.
pub fn resolve_program(spec: &ProcessSpec) -> Result<PathBuf, ExecError> {
    let p = Path::new(&spec.program);
    if spec.program.is_empty() {
        return Err(ExecError::new(
            ErrorKind::Spawn,
            "the command to run is empty".to_string(),
        ));
    }
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    if p.components().count() > 1 {
        return Ok(spec.cwd.join(p));
    }
    let path = spec.env.get("PATH").cloned().unwrap_or_default();
    which::which_in(&spec.program, Some(&path), &spec.cwd).map_err(|_| {
        ExecError::new(
            ErrorKind::Spawn,
            format!(
                "`{}` was not found on the PATH of the tool's environment; install it, or name it by its full path",
                spec.program
            ),
        )
    })
}

struct Captured {
    kept: Vec<u8>,
    total: u64,
    truncated: bool,
}

/// The length of the longest prefix of `b` no longer than `max` that does not cut a UTF-8
/// character (when `b` is valid UTF-8 there).
fn char_boundary(b: &[u8], max: usize) -> usize {
    if b.len() <= max {
        return b.len();
    }
    let mut k = max;
    // Step back over at most 3 continuation bytes.
    while k > max.saturating_sub(3) && k > 0 && (b[k] & 0xC0) == 0x80 {
        k -= 1;
    }
    if k == 0 {
        max
    } else {
        k
    }
}

/// Pass on the head of `pending` in pieces of at most [`MAX_LINE`] bytes while it holds at
/// least `threshold` bytes.
fn emit_pieces(pending: &mut Vec<u8>, stream: Stream, sink: &dyn OutputSink, threshold: usize) {
    while pending.len() >= threshold {
        let k = char_boundary(pending, MAX_LINE);
        sink.output(stream, &pending[..k], false);
        pending.drain(..k);
    }
}

/// Read a stream to its end: stream it line by line to the sink, keep up to `cap` bytes.
async fn pump<R: AsyncRead + Unpin>(
    mut r: R,
    stream: Stream,
    sink: &dyn OutputSink,
    cap: usize,
    secrets: &Secrets,
    exited: CancellationToken,
) -> Captured {
    let mut redactor = secrets.stream();
    // Once the group is gone, the pipes get a moment to close (a process that left the
    // group may still hold them open), then they are abandoned.
    let stop = async {
        exited.cancelled().await;
        tokio::time::sleep(DRAIN_AFTER_EXIT).await;
    };
    tokio::pin!(stop);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut c = Captured {
        kept: Vec::new(),
        total: 0,
        truncated: false,
    };
    loop {
        let n = tokio::select! {
            biased;
            r = r.read(&mut buf) => match r {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            },
            _ = &mut stop => break,
        };
        c.total += n as u64;
        let redacted;
        let data: &[u8] = if secrets.is_empty() {
            &buf[..n]
        } else {
            redacted = redactor.push(&buf[..n]);
            &redacted
        };
        let n = data.len();
        let room = cap.saturating_sub(c.kept.len());
        if room < n {
            c.truncated = true;
        }
        c.kept.extend_from_slice(&data[..room.min(n)]);
        let mut start = 0;
        for (i, b) in data.iter().enumerate() {
            if *b == b'\n' {
                let segment = &data[start..i];
                if pending.is_empty() && segment.len() <= MAX_LINE {
                    sink.output(stream, segment, true);
                } else {
                    pending.extend_from_slice(segment);
                    emit_pieces(&mut pending, stream, sink, MAX_LINE + 1);
                    sink.output(stream, &pending, true);
                    pending.clear();
                }
                start = i + 1;
            }
        }
        pending.extend_from_slice(&data[start..]);
        emit_pieces(&mut pending, stream, sink, MAX_LINE);
        sink.flush();
    }
    let rest = redactor.finish();
    if !rest.is_empty() {
        let room = cap.saturating_sub(c.kept.len());
        if room < rest.len() {
            c.truncated = true;
        }
        c.kept.extend_from_slice(&rest[..room.min(rest.len())]);
        let mut start = 0;
        for (i, b) in rest.iter().enumerate() {
            if *b == b'\n' {
                pending.extend_from_slice(&rest[start..i]);
                emit_pieces(&mut pending, stream, sink, MAX_LINE + 1);
                sink.output(stream, &pending, true);
                pending.clear();
                start = i + 1;
            }
        }
        pending.extend_from_slice(&rest[start..]);
        emit_pieces(&mut pending, stream, sink, MAX_LINE);
    }
    if !pending.is_empty() {
        sink.output(stream, &pending, false);
    }
    sink.flush();
    c
}

/// Run a process to its end (or its timeout, or cancellation).
pub async fn run(
    spec: &ProcessSpec,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<ProcessResult, ExecError> {
    run_with_cleanup(spec, None, sink, cancel).await
}

/// [`run`], with the tool held as `isolation` says.
pub async fn run_isolated(
    spec: &ProcessSpec,
    isolation: Isolation,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<ProcessResult, ExecError> {
    run_supervised(spec, None, isolation, sink, cancel).await
}

/// [`run`], and when the run is stopped (timeout, cancellation, the future dropped, kiwi's
/// death) `cleanup` runs once the process tree is gone (Linux; e.g. a container's removal).
pub async fn run_with_cleanup(
    spec: &ProcessSpec,
    cleanup: Option<&super::Cleanup>,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<ProcessResult, ExecError> {
    run_supervised(spec, cleanup, Isolation::Subreaper, sink, cancel).await
}

async fn run_supervised(
    spec: &ProcessSpec,
    cleanup: Option<&super::Cleanup>,
    isolation: Isolation,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<ProcessResult, ExecError> {
    let program = resolve_program(spec)?;
    if !spec.cwd.is_dir() {
        return Err(ExecError::new(
            ErrorKind::Spawn,
            format!(
                "the working directory {} does not exist",
                spec.cwd.display()
            ),
        ));
    }
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(not(unix))]
    cmd.kill_on_drop(true);
    #[cfg(target_os = "linux")]
    let pending =
        super::supervisor::install(cmd.as_std_mut(), cleanup, isolation).map_err(|e| {
            ExecError::new(
                ErrorKind::Spawn,
                format!("cannot prepare the run's supervisor: {e}"),
            )
        })?;
    #[cfg(not(target_os = "linux"))]
    let _ = (cleanup, isolation);
    if SHUTDOWN.is_cancelled() {
        return Err(ExecError::new(
            ErrorKind::Cancelled,
            "kiwi is shutting down: nothing new is started".to_string(),
        ));
    }
    let started = Instant::now();
    let spawned = cmd.spawn();
    #[cfg(target_os = "linux")]
    let control = pending.spawned();
    #[cfg(not(target_os = "linux"))]
    let control = ();
    let mut child = spawned.map_err(|e| {
        ExecError::new(
            ErrorKind::Spawn,
            format!("cannot start `{}`: {e}", program.display()),
        )
    })?;
    let pid = child.id().unwrap_or(0);
    if pid != 0 {
        live().push(pid);
    }
    let mut guard = GroupGuard::new(pid, control);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let stdin = child.stdin.take();
    let exited = CancellationToken::new();

    let feed = async {
        if let (Some(mut w), Some(text)) = (stdin, spec.stdin.as_ref()) {
            // A process that exits without reading its input is not an error.
            let _ = w.write_all(text.as_bytes()).await;
            if spec.hold_stdin {
                let _ = w.flush().await;
                exited.cancelled().await;
            }
            let _ = w.shutdown().await;
        }
    };
    let out = async {
        match stdout {
            Some(s) => Some(
                pump(
                    s,
                    Stream::Stdout,
                    sink,
                    spec.max_output_bytes,
                    &spec.secrets,
                    exited.clone(),
                )
                .await,
            ),
            None => None,
        }
    };
    let err = async {
        match stderr {
            Some(s) => Some(
                pump(
                    s,
                    Stream::Stderr,
                    sink,
                    spec.max_output_bytes,
                    &spec.secrets,
                    exited.clone(),
                )
                .await,
            ),
            None => None,
        }
    };
    #[cfg(unix)]
    let control = async {
        let mut timed_out = false;
        let mut cancelled = false;
        let done = leader_exited(pid);
        tokio::pin!(done);
        tokio::select! {
            _ = &mut done => {}
            _ = tokio::time::sleep(spec.timeout) => timed_out = true,
            _ = cancel.cancelled() => cancelled = true,
            _ = SHUTDOWN.cancelled() => cancelled = true,
        }
        if timed_out || cancelled {
            guard.signal_group(Signal::Term);
            if tokio::time::timeout(GRACE, &mut done).await.is_err() {
                guard.signal_group(Signal::Kill);
                (&mut done).await;
            }
        }
        // Whatever is left of the group does not outlive the call (on Linux the supervisor
        // has killed it before it exited). The leader is not reaped yet, so its pid (the
        // group id) cannot have been reused.
        guard.leftovers();
        let status = child.wait().await;
        guard.disarm();
        live().retain(|p| *p != pid);
        exited.cancel();
        (status, timed_out, cancelled)
    };
    #[cfg(not(unix))]
    let control = async {
        let mut timed_out = false;
        let mut cancelled = false;
        let status = tokio::select! {
            s = child.wait() => s,
            _ = tokio::time::sleep(spec.timeout) => { timed_out = true; let _ = child.start_kill(); child.wait().await }
            _ = cancel.cancelled() => { cancelled = true; let _ = child.start_kill(); child.wait().await }
        };
        guard.disarm();
        exited.cancel();
        (status, timed_out, cancelled)
    };
    let ((), out, err, (status, timed_out, cancelled)) = tokio::join!(feed, out, err, control);
    let status = status
        .map_err(|e| ExecError::new(ErrorKind::Spawn, format!("waiting for the process: {e}")))?;
    let (exit_code, signal) = split_status(&status);
    let out = out.unwrap_or(Captured {
        kept: Vec::new(),
        total: 0,
        truncated: false,
    });
    let err = err.unwrap_or(Captured {
        kept: Vec::new(),
        total: 0,
        truncated: false,
    });
    let (stdout, stdout_utf8, stdout_base64) = output_text(&out.kept);
    let (stderr, stderr_utf8, stderr_base64) = output_text(&err.kept);
    let json = if out.truncated || !stdout_utf8 {
        None
    } else {
        parse_json(&stdout)
    };
    Ok(ProcessResult {
        exit_code,
        signal,
        stderr,
        stdout,
        stdout_utf8,
        stderr_utf8,
        stdout_base64,
        stderr_base64,
        json,
        duration_ms: started.elapsed().as_millis() as u64,
        timed_out,
        cancelled,
        truncated: out.truncated || err.truncated,
        stdout_bytes: out.total,
        stderr_bytes: err.total,
        pid,
    })
}

/// A JSON document (object or array, or any value when the whole output is one).
pub fn parse_json(s: &str) -> Option<serde_json::Value> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    serde_json::from_str(t).ok()
}

#[cfg(unix)]
fn split_status(s: &std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (s.code(), s.signal())
}

#[cfg(not(unix))]
fn split_status(s: &std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    (s.code(), None)
}

#[derive(Clone, Copy)]
#[cfg_attr(not(unix), allow(dead_code))]
enum Signal {
    Term,
    Kill,
}

/// On Linux, the run's supervisor (dropping its control kills the tree); elsewhere the
/// process group, killed when dropped while armed (the run's future was dropped).
#[cfg(target_os = "linux")]
type Control = super::supervisor::Control;
#[cfg(not(target_os = "linux"))]
type Control = ();

#[cfg_attr(not(unix), allow(dead_code))]
struct GroupGuard {
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    pid: u32,
    armed: std::sync::atomic::AtomicBool,
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    control: Control,
}

impl GroupGuard {
    fn new(pid: u32, control: Control) -> Self {
        GroupGuard {
            pid,
            armed: std::sync::atomic::AtomicBool::new(pid != 0),
            control,
        }
    }
    fn disarm(&self) {
        self.armed.store(false, std::sync::atomic::Ordering::SeqCst);
    }
    #[cfg(target_os = "linux")]
    fn signal_group(&mut self, sig: Signal) {
        match sig {
            Signal::Term => self.control.terminate(),
            Signal::Kill => self.control.kill(),
        }
    }
    /// After the leader's end: the supervisor has already killed the rest.
    #[cfg(target_os = "linux")]
    fn leftovers(&mut self) {}
    #[cfg(all(unix, not(target_os = "linux")))]
    fn leftovers(&mut self) {
        self.signal_group(Signal::Kill);
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    fn signal_group(&mut self, sig: Signal) {
        if self.pid == 0 || self.pid > i32::MAX as u32 {
            return;
        }
        let s = match sig {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals the process group; no memory is shared.
        unsafe {
            libc::kill(-(self.pid as i32), s);
        }
    }
    #[cfg(not(unix))]
    fn signal_group(&mut self, _sig: Signal) {
        // Best effort on other systems: the leader is killed through its handle
        // (`kill_on_drop`); there are no process groups to signal.
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // On Linux, dropping the control closes the supervisor's pipe: it kills the tree.
        #[cfg(not(target_os = "linux"))]
        if self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            self.signal_group(Signal::Kill);
        }
    }
}

/// Resolves when the leader has exited, without reaping it (so that its pid, the group id,
/// stays reserved until the group has been cleaned up).
#[cfg(unix)]
async fn leader_exited(pid: u32) {
    if pid == 0 {
        return;
    }
    let _ = tokio::task::spawn_blocking(move || loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid(2).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with WNOWAIT only observes the child's state.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries() {
        let s = "aé".repeat(10);
        let b = s.as_bytes();
        for max in 1..b.len() {
            let k = char_boundary(b, max);
            assert!(k <= max);
            assert!(s.is_char_boundary(k), "{max} -> {k}");
        }
    }
}
