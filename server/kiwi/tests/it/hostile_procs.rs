//! Nothing outlives its run (issue 12, points 9-12 and 20), driven through the real binary in
//! every execution environment: a timeout, SIGKILL of `kiwi run`, SIGHUP, a closed output pipe
//! and the MCP client going away each end the tool's whole tree — a child that called
//! `setsid`, a double-forked daemon, a child started with `env -i` — and a new container is
//! removed. Processes are found by a marker unique to the test in their argv (`sleep
//! 1000.<digits>`), never by a broad name; every test kills what it finds, even when it fails.

use crate::common;
use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The tests of this file run one at a time: each starts containers, and `podman` on a
/// loaded 2-core machine can take longer than kiwi's 5 s availability probe allows.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A unique `sleep` argument: `1000.<pid><counter><nanos>` (GNU sleep takes fractions).
fn marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "1000.{}{:03}{nanos:09}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The pids whose argv holds `word` as one argument (or, with `part`, inside one).
fn pids_with_arg(word: &str, part: bool) -> Vec<i32> {
    let mut v = Vec::new();
    let me = std::process::id() as i32;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let hit = cmd.split(|b| *b == 0).any(|a| {
            let a = String::from_utf8_lossy(a);
            if part {
                a.contains(word)
            } else {
                a == word
            }
        });
        if hit && !zombie(pid) {
            v.push(pid);
        }
    }
    v
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// Kills whatever carries the marker when dropped (a failed test leaves nothing behind).
struct Reaper(Vec<String>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for m in &self.0 {
            for pid in pids_with_arg(m, true) {
                // SAFETY: signals a process this test started (its argv holds the marker).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// Wait until at least `n` processes carry the marker.
fn wait_for(m: &str, n: usize) {
    let start = Instant::now();
    while pids_with_arg(m, false).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the tool did not start its {n} children ({m}): {:?}",
            pids_with_arg(m, false)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (bounded) until no process carries the marker; the survivors otherwise.
fn survivors(m: &str, bound: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let v = pids_with_arg(m, false);
        if v.is_empty() || start.elapsed() > bound {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn describe(pids: &[i32]) -> String {
    pids.iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let ppid = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().nth(1).map(str::to_string))
                })
                .unwrap_or_default();
            format!(
                "{p} (ppid {ppid}): {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn podman(args: &[&str]) -> std::process::Output {
    Command::new("podman")
        .args(["--runtime", "runc"])
        .args(args)
        .output()
        .expect("podman is installed (apt-get install -y podman runc)")
}

/// The containers (any state) whose name starts with `prefix`.
fn containers(prefix: &str) -> Vec<String> {
    let out = podman(&["ps", "-a", "--format", "{{.Names}}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

fn wait_no_container(prefix: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let v = containers(prefix);
        if v.is_empty() || start.elapsed() > Duration::from_secs(20) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A long-running container over the host root, the project mounted; removed when dropped.
struct Running(String);

impl Running {
    fn start(project: &Path) -> Running {
        let name = format!("kiwi-test-procs-{}", marker().replace('.', "-"));
        let vol = format!("{}:{}", project.display(), project.display());
        let out = podman(&[
            "run",
            "-d",
            "--name",
            &name,
            "--network",
            "none",
            "--ulimit",
            "nofile=4096:4096",
            "--ulimit",
            "nproc=4096:4096",
            "-v",
            &vol,
            "--rootfs",
            "/:O",
            "sleep",
            "600",
        ]);
        assert!(
            out.status.success(),
            "podman could not start a container: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Running(name)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--time", "0", &self.0]);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Env {
    Local,
    Sandbox,
    Container,
    Specific,
}

const ALL: [Env; 4] = [Env::Local, Env::Sandbox, Env::Container, Env::Specific];

struct Project {
    dir: tempfile::TempDir,
    _running: Option<Running>,
}

/// The tool: starts a `setsid` child, a double-forked daemon and an `env -i` child (each a
/// `sleep MARKER`), says `ready`, then prints a line every 20 ms (forever).
const SPAWNER: &str = r#"
import json, os, subprocess, sys, time
if __name__ == "__main__":
    params = json.loads(sys.argv[sys.argv.index("--params") + 1])
    m = params["m"]
    subprocess.Popen(["setsid", "sleep", m])
    subprocess.Popen(["sh", "-c", "(sleep " + m + " &) &"]).wait()
    subprocess.Popen(["env", "-i", "/bin/sleep", m])
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        print("line", i, flush=True)
        time.sleep(0.02)
"#;

const WHERE: &str = r#"
import json, os, sys
if __name__ == "__main__":
    print(json.dumps({"pwd": os.environ.get("PWD"), "cwd": os.getcwd()}))
"#;

fn header(env: Env, running: Option<&Running>) -> String {
    let ee = match env {
        Env::Local => String::new(),
        Env::Sandbox => "EXECUTION_ENVIRONMENT = {\"mode\": \"sandbox\"}\n".to_string(),
        Env::Container => {
            "EXECUTION_ENVIRONMENT = {\"mode\": \"required\", \"image\": \"/\"}\n".to_string()
        }
        Env::Specific => format!(
            "EXECUTION_ENVIRONMENT = {{\"mode\": \"specific\", \"target\": \"{}\"}}\n",
            running.unwrap().0
        ),
    };
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"test\"\n{ee}")
}

impl Project {
    fn new(env: Env) -> Project {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "user", "project/.ai/tools/t", "project/sub"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let project = dir.path().join("project");
        let running = (env == Env::Specific).then(|| Running::start(&project));
        let head = header(env, running.as_ref());
        for (name, body) in [("spawner", SPAWNER), ("where", WHERE)] {
            std::fs::write(
                project.join(format!(".ai/tools/t/{name}.py")),
                format!("{head}{body}"),
            )
            .unwrap();
        }
        Project {
            dir,
            _running: running,
        }
    }
    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }
    fn kiwi(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kiwi"));
        c.args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("KIWI_USERSPACE_DIR", self.dir.path().join("user"))
            .env("PATH", SYSTEM_PATH)
            .stdin(Stdio::null());
        for (k, v) in common::CANARIES {
            c.env(k, v);
        }
        c
    }
    /// `kiwi run t/spawner` with stdout piped, after its `ready` line.
    fn spawn_ready(
        &self,
        m: &str,
        extra: &[&str],
    ) -> (Child, BufReader<std::process::ChildStdout>) {
        let params = json!({ "m": m }).to_string();
        let mut args = vec!["run", "t/spawner", "--params", &params];
        args.extend_from_slice(extra);
        let mut child = self
            .kiwi(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        if line.trim() != "ready" {
            let _ = child.kill();
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("the tool did not start: {line:?} {err}");
        }
        (child, out)
    }
}

/// Ends the kiwi process when dropped (a failed assertion leaves nothing running).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_exit(child: &mut Child, bound: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if start.elapsed() > bound {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `env` runs here: local always; the others when their program is installed (a
/// missing one, or one that does not answer, is skipped, with a line, only on an unprivileged
/// run outside CI: `test_system`). Every test over the environments asks it first.
fn available(env: Env) -> bool {
    let (bin, package) = match env {
        Env::Local => return true,
        Env::Sandbox => ("bwrap", "bubblewrap"),
        Env::Container | Env::Specific => ("podman", "podman runc"),
    };
    if !kiwi_kernel::test_system::need(bin, package) {
        return false;
    }
    // The running container is over the host root (`--rootfs /:O`): rootless podman cannot
    // overlay `/`, so that case needs root.
    if env == Env::Specific
        && !kiwi_kernel::test_system::need_root("podman --rootfs /:O, a running container")
    {
        return false;
    }
    let answers = match env {
        Env::Sandbox => Command::new("bwrap")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        _ => podman(&["info"]).status.success(),
    };
    assert!(answers, "{env:?}: {bin} is installed but does not answer");
    true
}

/// After a timeout, nothing of the tree is left (point 9).
#[test]
fn a_timeout_ends_the_whole_tree_everywhere() {
    let _serial = one_at_a_time();
    let mut failed = Vec::new();
    for env in ALL {
        if !available(env) {
            continue;
        }
        let p = Project::new(env);
        let m = marker();
        let _r = Reaper(vec![m.clone()]);
        let (child, mut out) = p.spawn_ready(&m, &["--config", r#"{"timeout": 3}"#]);
        let mut child = KillOnDrop(child);
        wait_for(&m, 3);
        // Drain stdout so the tool never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let status = wait_exit(&mut child.0, Duration::from_secs(30)).expect("kiwi ends");
        if status.code() != Some(124) {
            failed.push(format!("{env:?}: exit {status:?}, not 124"));
        }
        let left = survivors(&m, Duration::from_secs(5));
        if !left.is_empty() {
            failed.push(format!(
                "{env:?}: after the timeout these survived: {}",
                describe(&left)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// SIGKILL of `kiwi run`: the tool and every child die, a new container is removed and no
/// `podman` client is left (point 10).
#[test]
fn sigkill_of_kiwi_run_ends_the_whole_tree_everywhere() {
    let _serial = one_at_a_time();
    let mut failed = Vec::new();
    for env in ALL {
        if !available(env) {
            continue;
        }
        let p = Project::new(env);
        let m = marker();
        let (child, _out) = p.spawn_ready(&m, &[]);
        let kiwi_pid = child.id();
        let prefix = format!("kiwi-run-{kiwi_pid}-");
        let _r = Reaper(vec![m.clone(), prefix.clone()]);
        let mut child = KillOnDrop(child);
        wait_for(&m, 3);
        child.0.kill().unwrap();
        let _ = child.0.wait();
        let left = survivors(&m, Duration::from_secs(10));
        if !left.is_empty() {
            failed.push(format!(
                "{env:?}: after SIGKILL of kiwi these survived: {}",
                describe(&left)
            ));
        }
        if env == Env::Container {
            let left = wait_no_container(&prefix);
            if !left.is_empty() {
                let mut args = vec!["rm", "--force", "--time", "0"];
                args.extend(left.iter().map(String::as_str));
                let _ = podman(&args);
                failed.push(format!("the container stayed: {left:?}"));
            }
        }
        let start = Instant::now();
        let mut clients = pids_with_arg(&prefix, true);
        while !clients.is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
            clients = pids_with_arg(&prefix, true);
        }
        if !clients.is_empty() {
            failed.push(format!(
                "{env:?}: a podman client (or other process) of the run is left: {}",
                describe(&clients)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// SIGHUP (the terminal closed) ends the tree too, `setsid` child included.
#[test]
fn sighup_of_kiwi_run_ends_the_whole_tree() {
    let _serial = one_at_a_time();
    let p = Project::new(Env::Local);
    let m = marker();
    let _r = Reaper(vec![m.clone()]);
    let (child, mut out) = p.spawn_ready(&m, &[]);
    let mut child = KillOnDrop(child);
    wait_for(&m, 3);
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    // SAFETY: signals the kiwi process this test started.
    unsafe {
        libc::kill(child.0.id() as i32, libc::SIGHUP);
    }
    let status = wait_exit(&mut child.0, Duration::from_secs(10)).expect("kiwi ends");
    assert_eq!(status.code(), Some(130));
    let left = survivors(&m, Duration::from_secs(5));
    assert!(left.is_empty(), "after SIGHUP: {}", describe(&left));
}

/// `kiwi run t/spawner | head -2`: the closed pipe ends the tool at once, with 141 (128 +
/// SIGPIPE, as a shell reports a writer killed by SIGPIPE) (point 12).
#[test]
fn a_closed_output_pipe_ends_the_tool_at_once() {
    let _serial = one_at_a_time();
    for env in [Env::Local, Env::Container] {
        if !available(env) {
            continue;
        }
        let p = Project::new(env);
        let m = marker();
        let _r = Reaper(vec![m.clone()]);
        let (child, mut out) = p.spawn_ready(&m, &[]);
        let mut child = KillOnDrop(child);
        wait_for(&m, 3);
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        drop(out);
        let status = wait_exit(&mut child.0, Duration::from_secs(10));
        let left = survivors(&m, Duration::from_secs(5));
        assert!(
            status.is_some(),
            "{env:?}: kiwi still runs 10 s after its stdout closed"
        );
        assert_eq!(status.unwrap().code(), Some(141), "{env:?}");
        assert!(left.is_empty(), "{env:?}: {}", describe(&left));
    }
}

/// The tool's `$PWD` is its working directory, not the caller's (point 20).
#[test]
fn pwd_is_the_tools_working_directory() {
    let _serial = one_at_a_time();
    for env in [Env::Local, Env::Sandbox, Env::Container] {
        if !available(env) {
            continue;
        }
        let p = Project::new(env);
        let sub = p.project().join("sub");
        let out = p
            .kiwi(&[
                "run",
                "t/where",
                "--project",
                p.project().to_str().unwrap(),
                "--json",
            ])
            .current_dir(&sub)
            .env("PWD", &sub)
            .output()
            .unwrap();
        let r: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{env:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let j = &r["json"];
        assert!(j["cwd"].is_string(), "{env:?}: the tool did not run: {r}");
        assert_eq!(j["pwd"], j["cwd"], "{env:?}: {r}");
    }
}

/// An MCP client going away the way the Python SDK's stdio client does (stdin closed, then
/// SIGTERM if the server is still there 2 s later), or with a plain SIGTERM: the running tools
/// are cancelled and cleaned up before the server exits (point 11).
#[test]
fn mcp_shutdown_ends_running_tools() {
    let _serial = one_at_a_time();
    for how in ["stdin", "sigterm"] {
        let p = Project::new(Env::Local);
        let m = marker();
        let _r = Reaper(vec![m.clone()]);
        let mut s = common::mcp(&p.project(), &p.dir.path().join("user"));
        let id = json!(s.fresh_id());
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "execute", "arguments": {"item_type": "tool", "action": "run", "item_id": "t/spawner", "parameters": {"m": m}}}}));
        wait_for(&m, 3);
        let started = Instant::now();
        let status = if how == "stdin" {
            s.close_stdin();
            match wait_exit(&mut s.child, Duration::from_secs(2)) {
                Some(st) => Some(st),
                None => {
                    // SAFETY: signals the server this test started.
                    unsafe {
                        libc::kill(s.child.id() as i32, libc::SIGTERM);
                    }
                    wait_exit(&mut s.child, Duration::from_secs(10))
                }
            }
        } else {
            // SAFETY: signals the server this test started.
            unsafe {
                libc::kill(s.child.id() as i32, libc::SIGTERM);
            }
            wait_exit(&mut s.child, Duration::from_secs(10))
        };
        // Right when the server is gone (no grace for the cleanup after it).
        let left = pids_with_arg(&m, false);
        assert!(status.is_some(), "{how}: the server did not exit");
        assert!(
            left.is_empty(),
            "{how}: the server exited after {:?} leaving: {}",
            started.elapsed(),
            describe(&left)
        );
        s.assert_no_panic();
    }
}

/// `kiwi lsp` told to `exit` (and its stdin closed) while `kiwi.runTool` runs: the tool and
/// everything it started are gone when the server has exited (point 11).
#[test]
fn lsp_exit_ends_running_tools() {
    let _serial = one_at_a_time();
    let p = Project::new(Env::Local);
    let m = marker();
    let _r = Reaper(vec![m.clone()]);
    let mut s = common::lsp(&p.project(), &p.dir.path().join("user"));
    let id = json!(s.fresh_id());
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand", "params": {"command": "kiwi.runTool", "arguments": [{"id": "t/spawner", "parameters": {"m": m}}]}}));
    wait_for(&m, 3);
    s.notify("exit", json!(null));
    s.close_stdin();
    let status = wait_exit(&mut s.child, Duration::from_secs(20));
    let left = pids_with_arg(&m, false);
    assert!(status.is_some(), "the server did not exit");
    assert!(
        left.is_empty(),
        "the server exited leaving: {}",
        describe(&left)
    );
    s.assert_no_panic();
}
