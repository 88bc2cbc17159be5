//! The execution environments against the real thing: bubblewrap and podman.
//! They must be installed (tests/run.sh installs them as root); a missing one fails loudly, except
//! on an unprivileged run outside CI, where the test is skipped with a line (`test_system`).

use crate::common::{rt, RunningContainer};
use kiwi_kernel::exec::environments::{
    self, Container, ExecutionEnvironment, Local, Sandbox, Setup, HOST_ROOT_IMAGE,
};
use kiwi_kernel::exec::process::ProcessSpec;
use kiwi_kernel::exec::{CancellationToken, NullSink};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CANARIES: &[(&str, &str)] = &[
    ("FAKE_API_KEY", "canary-fake-api-key-5b1f"),
    ("SOME_TOKEN", "canary-some-token-77c2"),
    ("DB_PASSWORD", "canary-db-password-0e9d"),
];

/// Whether the test runs: `bin` is installed, or (unprivileged, outside CI) skipped with a line.
fn need(bin: &str, package: &str) -> bool {
    kiwi_kernel::test_system::need(bin, package)
}

/// The server's environment, canaries included.
fn host_vars() -> BTreeMap<String, String> {
    for (k, v) in CANARIES {
        std::env::set_var(k, v);
    }
    std::env::vars().collect()
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        // Not below /tmp, which is private in the sandbox: `outside` must be visible there.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        std::fs::create_dir_all(dir.path().join("project/.ai")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::create_dir_all(dir.path().join("user")).unwrap();
        Project { dir }
    }
    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }
    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }
    fn setup(&self) -> Setup {
        Setup {
            project: Some(self.project()),
            user: Some(self.dir.path().join("user")),
            tool_dir: None,
            network: false,
            image: None,
            target: None,
            host: host_vars(),
            ..Setup::default()
        }
    }
    /// A command with the tool's (filtered) environment: PATH, HOME and one variable the
    /// chain names.
    fn spec(&self, program: &str, args: &[&str]) -> ProcessSpec {
        let mut s = ProcessSpec::new(program, self.project());
        s.args = args.iter().map(|a| a.to_string()).collect();
        s.env.insert(
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        );
        // The user's own HOME: the container CLI reads its configuration there (an
        // unprivileged user's podman cannot read /root's).
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        s.env.insert("HOME".into(), home);
        s.env.insert("CHAIN_VAR".into(), "from-the-chain".into());
        s.timeout = Duration::from_secs(60);
        s
    }
}

fn assert_no_canary(text: &str) {
    for (k, v) in CANARIES {
        assert!(
            !text.contains(v),
            "the value of {k} reached the tool:\n{text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with(&format!("{k}="))),
            "{k} reached the tool"
        );
    }
}

/// Host processes whose command line is exactly `words`.
fn processes_running(words: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.trim() == words {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|r| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            if !zombie {
                out.push(pid);
            }
        }
    }
    out
}

/// A sink that, when the tool prints `started`, records whether `words` was running then
/// (so that "gone afterwards" is not vacuous).
struct SeenRunning {
    words: &'static str,
    seen: std::sync::atomic::AtomicBool,
}

impl SeenRunning {
    fn new(words: &'static str) -> Self {
        SeenRunning {
            words,
            seen: std::sync::atomic::AtomicBool::new(false),
        }
    }
    fn script(&self) -> String {
        format!("{w} & {w} & sleep 0.5; echo started; wait", w = self.words)
    }
    fn was_seen(&self) -> bool {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl kiwi_kernel::exec::OutputSink for SeenRunning {
    fn output(&self, _: kiwi_kernel::exec::Stream, bytes: &[u8], _: bool) {
        if bytes != b"started" {
            return;
        }
        // Bounded wait: a process forked by `&` shows its argv only once its `execve` is
        // done, which a loaded machine can delay past the script's `sleep 0.5`.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if processes_running(self.words).len() >= 2 {
                self.seen.store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn wait_no_process(words: &str) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if processes_running(words).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("`{words}` is still running: {:?}", processes_running(words));
}

// ---------------------------------------------------------------------------------------
// local

#[test]
fn local_file_operations() {
    let p = Project::new();
    let env = Local::new(&p.setup());
    rt().block_on(async {
        let f = p.project().join("a.txt");
        env.write_file(&f, "hello").await.unwrap();
        assert_eq!(env.read_file(&f).await.unwrap(), b"hello");
        assert!(env.file_exists(&f).await.unwrap());
        assert!(!env.file_exists(&p.project().join("nope")).await.unwrap());
        assert_eq!(
            env.list_directory(&p.project()).await.unwrap(),
            vec![".ai".to_string(), "a.txt".to_string()]
        );
    });
}

/// A unique `sleep` argument (GNU sleep takes fractions): `1000.<pid><counter><nanos>`.
fn sleep_marker() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "1000.{}{:03}{nanos:09}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Kills every process running `words` when dropped (a failed test leaves nothing behind).
struct KillRunning(String);

impl Drop for KillRunning {
    fn drop(&mut self) {
        for p in processes_running(&self.0) {
            // SAFETY: signals a process this test started (its argv is the unique marker).
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
    }
}

/// A local tool that kills its supervisor (`kill -9 $PPID`) after starting a child: the
/// child does not outlive the run (issue 12).
#[test]
fn local_tool_that_kills_its_supervisor_leaves_nothing() {
    // Without CAP_SYS_ADMIN there is no PID namespace and an orphan of a tool that kills its
    // supervisor outlives the run: the documented limit (exec/supervisor/mod.rs).
    if !kiwi_kernel::test_system::need_root("a PID namespace for the local run") {
        return;
    }
    let p = Project::new();
    let env = Local::new(&p.setup());
    let words = format!("sleep {}", sleep_marker());
    let _guard = KillRunning(words.clone());
    let s = p.spec(
        "bash",
        &[
            "-c",
            &format!("{words} & sleep 0.3; kill -9 $PPID; sleep 0.5; echo after-the-kill"),
        ],
    );
    let r = rt().block_on(async { env.run(&s, &NullSink, &CancellationToken::new()).await });
    // Whatever the run reports, nothing of it is left.
    let _ = r;
    wait_no_process(&words);
}

// ---------------------------------------------------------------------------------------
// sandbox

#[test]
fn sandbox_is_available() {
    if !need("bwrap", "bubblewrap") {
        return;
    }
    let p = Project::new();
    environments::probe_bwrap(&p.setup()).expect("bubblewrap works here");
}

#[test]
fn sandbox_environment_and_writes() {
    if !need("bwrap", "bubblewrap") {
        return;
    }
    let p = Project::new();
    let sb = Sandbox::new(&p.setup()).unwrap();
    let r = rt()
        .block_on(sb.run(&p.spec("env", &[]), &NullSink, &CancellationToken::new()))
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_no_canary(&r.stdout);
    assert!(r.stdout.contains("CHAIN_VAR=from-the-chain"));

    // The project is writable, and the write reaches the host.
    let inside = p.project().join("written.txt");
    let script = format!(
        "echo in > {}; echo out > {}/x.txt; echo root > /kiwi-sandbox-test; echo tmp > /tmp/kiwi-sandbox-tmp; true",
        inside.display(),
        p.outside().display()
    );
    let r = rt()
        .block_on(sb.run(
            &p.spec("bash", &["-c", &script]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "in\n");
    // Outside the project, the file system is read-only; /tmp is private.
    assert!(!p.outside().join("x.txt").exists());
    assert!(!Path::new("/kiwi-sandbox-test").exists());
    assert!(!Path::new("/tmp/kiwi-sandbox-tmp").exists());
    assert_eq!(
        r.stderr.matches("Read-only file system").count(),
        2,
        "{}",
        r.stderr
    );

    // The interface's file operations go through the sandbox too.
    rt().block_on(async {
        sb.write_file(&p.project().join("b.txt"), "via sandbox")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(p.project().join("b.txt")).unwrap(),
            "via sandbox"
        );
        let e = sb
            .write_file(&p.outside().join("c.txt"), "no")
            .await
            .unwrap_err();
        assert!(e.message.contains("Read-only"), "{e}");
        assert_eq!(
            sb.read_file(&p.project().join("b.txt")).await.unwrap(),
            b"via sandbox"
        );
        assert!(sb.file_exists(&p.project().join("b.txt")).await.unwrap());
        assert!(!sb.file_exists(&p.outside().join("c.txt")).await.unwrap());
        let names = sb.list_directory(&p.project()).await.unwrap();
        assert!(names.contains(&"b.txt".to_string()), "{names:?}");
    });
}

#[test]
fn sandbox_network_is_off_unless_asked() {
    if !need("bwrap", "bubblewrap") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let p = Project::new();
    let probe = format!("echo > /dev/tcp/127.0.0.1/{port} && echo connected");
    let off = Sandbox::new(&p.setup()).unwrap();
    let r = rt()
        .block_on(off.run(
            &p.spec("bash", &["-c", &probe]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_ne!(r.exit_code, Some(0));
    assert!(!r.stdout.contains("connected"));
    let mut setup = p.setup();
    setup.network = true;
    let on = Sandbox::new(&setup).unwrap();
    let r = rt()
        .block_on(on.run(
            &p.spec("bash", &["-c", &probe]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("connected"));
}

#[test]
fn sandbox_timeout_ends_everything() {
    if !need("bwrap", "bubblewrap") {
        return;
    }
    let p = Project::new();
    let sb = Sandbox::new(&p.setup()).unwrap();
    let sink = SeenRunning::new("sleep 4711");
    let mut s = p.spec("bash", &["-c", &sink.script()]);
    s.timeout = Duration::from_millis(1500);
    let r = rt()
        .block_on(sb.run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert!(r.timed_out);
    assert!(sink.was_seen(), "the sleeps never ran: {}", r.stderr);
    wait_no_process("sleep 4711");
}

// ---------------------------------------------------------------------------------------
// container (podman)

#[test]
fn container_runtime_answers() {
    if !need("podman", "podman runc") {
        return;
    }
    let p = Project::new();
    let rt = environments::probe_container(&p.setup()).expect("podman answers");
    assert_eq!(rt.name(), "podman");
}

#[test]
fn new_container_over_the_host_root() {
    if !need("podman", "podman runc") {
        return;
    }
    let p = Project::new();
    let mut setup = p.setup();
    setup.image = Some(HOST_ROOT_IMAGE.to_string());
    let c = Container::new(&setup).unwrap();
    let script = format!(
        "env; echo made > {}/from-container.txt",
        p.project().display()
    );
    let r = rt()
        .block_on(c.run(
            &p.spec("bash", &["-c", &script]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_no_canary(&r.stdout);
    assert!(
        r.stdout.contains("CHAIN_VAR=from-the-chain"),
        "{}",
        r.stdout
    );
    // The project is mounted at the same path, writable.
    assert_eq!(
        std::fs::read_to_string(p.project().join("from-container.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn new_container_timeout_removes_it() {
    if !need("podman", "podman runc") {
        return;
    }
    let p = Project::new();
    let mut setup = p.setup();
    setup.image = Some(HOST_ROOT_IMAGE.to_string());
    let c = Container::new(&setup).unwrap();
    let sink = SeenRunning::new("sleep 4712");
    let mut s = p.spec("bash", &["-c", &sink.script()]);
    s.timeout = Duration::from_secs(4);
    let r = rt()
        .block_on(c.run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert!(r.timed_out);
    assert!(sink.was_seen(), "the sleeps never ran: {}", r.stderr);
    wait_no_process("sleep 4712");
}

#[test]
fn specific_runs_inside_a_running_container() {
    if !need("podman", "podman runc") {
        return;
    }
    // A running container over the host root (`--rootfs /:O`) needs root: rootless podman
    // cannot overlay `/` (kiwi's own rootless container uses a skeleton instead).
    if !kiwi_kernel::test_system::need_root("podman --rootfs /:O, a running container") {
        return;
    }
    let p = Project::new();
    let name = format!("kiwi-test-specific-{}", std::process::id());
    let _c = RunningContainer::start(&name, &p.project());
    let mut setup = p.setup();
    setup.target = Some(name.clone());
    environments::probe_running_fresh(&setup, &name).expect("the container runs");
    let c = Container::new(&setup).unwrap();
    let r = rt()
        .block_on(c.run(
            &p.spec("bash", &["-c", "env; cat /proc/1/cmdline | tr '\\0' ' '"]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_no_canary(&r.stdout);
    assert!(r.stdout.contains("CHAIN_VAR=from-the-chain"));
    // Inside that container: its first process is our `sleep 600`.
    assert!(r.stdout.contains("sleep 600"), "{}", r.stdout);

    // A timed-out exec leaves nothing behind in the container.
    let sink = SeenRunning::new("sleep 4713");
    let mut s = p.spec("bash", &["-c", &sink.script()]);
    s.timeout = Duration::from_secs(3);
    let r = rt()
        .block_on(c.run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert!(r.timed_out);
    assert!(sink.was_seen(), "the sleeps never ran: {}", r.stderr);
    wait_no_process("sleep 4713");
}

#[test]
fn specific_target_not_running_is_a_clear_error() {
    if !need("podman", "podman runc") {
        return;
    }
    let p = Project::new();
    let mut setup = p.setup();
    setup.target = Some("kiwi-no-such-container".into());
    let e = Container::new(&setup).err().expect("an error");
    assert!(e.message.contains("kiwi-no-such-container"), "{e}");
}

#[test]
fn no_container_cli_on_path() {
    let p = Project::new();
    let mut setup = p.setup();
    let empty = p.dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    setup
        .host
        .insert("PATH".into(), empty.display().to_string());
    setup.image = Some(HOST_ROOT_IMAGE.to_string());
    let e = Container::new(&setup).err().expect("an error");
    assert!(e.message.contains("no container runtime answers"), "{e}");
    assert!(e.message.contains("podman is not on PATH"), "{e}");
    let e = environments::probe_bwrap(&setup).unwrap_err();
    assert!(e.contains("not on PATH"), "{e}");
}
