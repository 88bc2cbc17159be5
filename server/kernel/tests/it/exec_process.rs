//! The subprocess primitive against real processes: streaming, the environment, stdin,
//! timeouts and cancellation that end the whole process group.

use crate::common::rt;
use kiwi_kernel::exec::process::{self, ProcessSpec};
use kiwi_kernel::exec::{CancellationToken, NullSink, Stream};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn base_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/bin:/usr/bin:/bin".to_string(),
    );
    env
}

fn spec(program: &str, args: &[&str]) -> ProcessSpec {
    let mut s = ProcessSpec::new(program, "/");
    s.args = args.iter().map(|a| a.to_string()).collect();
    s.env = base_env();
    s
}

/// Run `s` to its end with no sink and no cancel.
fn run_plain(s: &ProcessSpec) -> process::ProcessResult {
    rt().block_on(process::run(s, &NullSink, &CancellationToken::new()))
        .unwrap()
}

/// [`run_plain`] in a PID namespace of its own (the supervisor alone when it is refused).
fn in_namespace(s: &ProcessSpec) -> process::ProcessResult {
    rt().block_on(process::run_isolated(
        s,
        process::Isolation::PidNamespace,
        &NullSink,
        &CancellationToken::new(),
    ))
    .unwrap()
}

/// Whether a process is gone: no /proc entry, or a zombie waiting for its reaper.
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            state == Some("Z") || state == Some("X")
        }
    }
}

fn wait_gone(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[derive(Default)]
struct Collect(Mutex<Vec<(Stream, String, bool, Instant)>>);

impl kiwi_kernel::exec::OutputSink for Collect {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        self.0.lock().unwrap().push((
            stream,
            String::from_utf8_lossy(bytes).into_owned(),
            newline,
            Instant::now(),
        ));
    }
}

#[test]
fn streams_lines_as_they_come() {
    let sink = Collect::default();
    let s = spec(
        "bash",
        &[
            "-c",
            "echo one; echo err >&2; sleep 0.5; echo two; printf tail",
        ],
    );
    let r = rt()
        .block_on(process::run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout, "one\ntwo\ntail");
    assert_eq!(r.stderr, "err\n");
    let got = sink.0.lock().unwrap();
    let lines: Vec<(Stream, &str, bool)> = got
        .iter()
        .map(|(s, t, n, _)| (*s, t.as_str(), *n))
        .collect();
    assert!(lines.contains(&(Stream::Stdout, "one", true)));
    assert!(lines.contains(&(Stream::Stderr, "err", true)));
    assert!(lines.contains(&(Stream::Stdout, "two", true)));
    assert!(lines.contains(&(Stream::Stdout, "tail", false)));
    // "one" arrived before the process slept (0.5 s), not at its end.
    let one = got.iter().find(|(_, t, _, _)| t == "one").unwrap().3;
    let two = got.iter().find(|(_, t, _, _)| t == "two").unwrap().3;
    assert!(
        two.duration_since(one) >= Duration::from_millis(400),
        "\"one\" came only {:?} before \"two\"",
        two.duration_since(one)
    );
}

#[test]
fn only_the_given_environment_and_no_shell() {
    std::env::set_var("FAKE_API_KEY", "canary-fake-api-key-1234");
    let mut s = spec("env", &[]);
    s.env.insert("GIVEN".into(), "yes".into());
    let r = run_plain(&s);
    assert!(!r.stdout.contains("canary-fake-api-key-1234"));
    let mut names: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    names.sort();
    assert_eq!(names, vec!["GIVEN", "PATH"]);

    // Arguments reach the program as they are: nothing is interpreted by a shell.
    let s = spec("echo", &["$(id)", ";", "`ls`", "&&", "$HOME"]);
    let r = run_plain(&s);
    assert_eq!(r.stdout, "$(id) ; `ls` && $HOME\n");
}

#[test]
fn stdin_is_closed_unless_input_is_given() {
    // `cat` with a closed stdin ends at once instead of waiting.
    let mut s = spec("cat", &[]);
    s.timeout = Duration::from_secs(5);
    let r = run_plain(&s);
    assert!(!r.timed_out);
    assert_eq!(r.stdout, "");
    s.stdin = Some("{\"a\": [1, 2]}".into());
    let r = run_plain(&s);
    assert_eq!(r.stdout, "{\"a\": [1, 2]}");
    assert_eq!(r.json, Some(serde_json::json!({"a": [1, 2]})));
}

#[test]
fn exit_codes_and_missing_programs() {
    let r = rt()
        .block_on(process::run(
            &spec("bash", &["-c", "exit 7"]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(r.exit_code, Some(7));
    assert_eq!(r.shell_code(), 7);
    let e = rt()
        .block_on(process::run(
            &spec("no-such-program-kiwi", &[]),
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap_err();
    assert!(e.message.contains("no-such-program-kiwi"), "{e}");
    assert!(e.message.contains("PATH"), "{e}");
}

/// A tool that starts a child (printing its pid) and sleeps.
fn sleeper() -> ProcessSpec {
    spec("bash", &["-c", "sleep 300 & echo $!; sleep 300"])
}

fn child_pid(out: &str) -> i32 {
    out.lines().next().unwrap().trim().parse().unwrap()
}

#[test]
fn timeout_ends_the_whole_group() {
    let mut s = sleeper();
    s.timeout = Duration::from_millis(500);
    let start = Instant::now();
    let r = run_plain(&s);
    assert!(r.timed_out);
    assert!(!r.cancelled);
    assert_eq!(r.shell_code(), 124);
    assert!(start.elapsed() < Duration::from_secs(5));
    let child = child_pid(&r.stdout);
    assert!(wait_gone(r.pid as i32), "the leader {} survived", r.pid);
    assert!(wait_gone(child), "the child {child} survived the timeout");
}

#[test]
fn a_process_that_ignores_sigterm_is_killed() {
    let mut s = spec(
        "bash",
        &[
            "-c",
            "trap '' TERM; sleep 300 & echo $!; while true; do sleep 1; done",
        ],
    );
    s.timeout = Duration::from_millis(300);
    let start = Instant::now();
    let r = run_plain(&s);
    assert!(r.timed_out);
    // SIGTERM is ignored: SIGKILL comes after the grace.
    assert!(start.elapsed() >= process::GRACE);
    assert!(start.elapsed() < process::GRACE + Duration::from_secs(3));
    assert!(wait_gone(r.pid as i32));
    assert!(wait_gone(child_pid(&r.stdout)));
}

#[test]
fn cancellation_ends_the_whole_group() {
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        c2.cancel();
    });
    let r = rt()
        .block_on(process::run(&sleeper(), &NullSink, &cancel))
        .unwrap();
    assert!(r.cancelled);
    assert!(!r.timed_out);
    assert_eq!(r.shell_code(), 130);
    assert!(wait_gone(r.pid as i32));
    assert!(wait_gone(child_pid(&r.stdout)));
}

#[test]
fn leftovers_of_a_finished_leader_are_killed() {
    // The leader exits at once; its child keeps the pipes open and would sleep on.
    let s = spec("bash", &["-c", "sleep 300 & echo $!"]);
    let start = Instant::now();
    let r = run_plain(&s);
    assert_eq!(r.exit_code, Some(0));
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(wait_gone(child_pid(&r.stdout)));
}

#[test]
fn dropping_the_run_kills_the_group() {
    let rt = rt();
    let sink = Collect::default();
    let pid = rt.block_on(async {
        let cancel = CancellationToken::new();
        let s = sleeper();
        let fut = process::run(&s, &sink, &cancel);
        // Run it until the child's pid is printed, then drop the future.
        let r = tokio::time::timeout(Duration::from_millis(700), fut).await;
        assert!(r.is_err(), "the sleeper finished early");
        let got = sink.0.lock().unwrap();
        child_pid(&got[0].1)
    });
    assert!(wait_gone(pid), "the child {pid} survived the dropped run");
}

#[test]
fn output_past_the_cap_is_drained_not_kept() {
    let mut s = spec(
        "bash",
        &[
            "-c",
            "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo done >&2",
        ],
    );
    s.max_output_bytes = 1000;
    let r = run_plain(&s);
    assert_eq!(r.exit_code, Some(0));
    assert!(r.truncated);
    assert_eq!(r.stdout.len(), 1000);
    assert_eq!(r.stdout_bytes, 3_000_001);
    assert_eq!(r.stderr, "done\n");
    assert_eq!(r.json, None);
}

#[test]
fn long_lines_of_every_length_come_in_bounded_pieces() {
    // Lines around the piece size, written in odd chunks, some spanning reads.
    let script = "import sys\nfor n in [1, 65535, 65536, 65537, 70000, 131072, 200001, 3]:\n    sys.stdout.write('z' * n + '\\n')\n";
    let sink = Collect::default();
    let s = spec("python3", &["-c", script]);
    let r = rt()
        .block_on(process::run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    let got = sink.0.lock().unwrap();
    assert!(got.iter().all(|(_, t, _, _)| t.len() <= process::MAX_LINE));
    // Joined back, the pieces give the lines.
    let mut lines = Vec::new();
    let mut cur = 0;
    for (_, t, nl, _) in got.iter() {
        cur += t.len();
        if *nl {
            lines.push(cur);
            cur = 0;
        }
    }
    assert_eq!(
        lines,
        vec![1, 65535, 65536, 65537, 70000, 131072, 200001, 3]
    );
}

#[test]
fn a_long_line_comes_in_bounded_pieces() {
    let sink = Collect::default();
    let s = spec(
        "bash",
        &["-c", "head -c 200000 /dev/zero | tr '\\0' 'y'; echo"],
    );
    let r = rt()
        .block_on(process::run(&s, &sink, &CancellationToken::new()))
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    let got = sink.0.lock().unwrap();
    assert!(got.iter().all(|(_, t, _, _)| t.len() <= process::MAX_LINE));
    let total: usize = got.iter().map(|(_, t, _, _)| t.len()).sum();
    assert_eq!(total, 200_000);
    assert!(got.last().unwrap().2, "the last piece ends the line");
    assert!(got[..got.len() - 1].iter().all(|(_, _, nl, _)| !nl));
}

/// What the supervisor costs: `process::run` of `/bin/true` (the supervisor), the same in
/// a PID namespace of its own (`local`, as root), against spawning it directly in its own
/// process group (what `run` did before), interleaved. Prints the medians.
#[test]
#[ignore = "a measurement: cargo test -p kiwi-kernel --release --test it supervisor_overhead -- --ignored --nocapture"]
fn supervisor_overhead() {
    let rt = rt();
    let spec = spec("/bin/true", &[]);
    let (mut sup, mut ns, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..300 {
        let t = Instant::now();
        let r = rt
            .block_on(process::run(&spec, &NullSink, &CancellationToken::new()))
            .unwrap();
        assert_eq!(r.exit_code, Some(0));
        sup.push(t.elapsed());
        let t = Instant::now();
        let r = rt
            .block_on(process::run_isolated(
                &spec,
                process::Isolation::PidNamespace,
                &NullSink,
                &CancellationToken::new(),
            ))
            .unwrap();
        assert_eq!(r.exit_code, Some(0));
        ns.push(t.elapsed());
        let t = Instant::now();
        let st = rt.block_on(async {
            tokio::process::Command::new("/bin/true")
                .process_group(0)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .status()
                .await
        });
        assert!(st.unwrap().success());
        plain.push(t.elapsed());
    }
    sup.sort();
    ns.sort();
    plain.sort();
    println!(
        "process::run(/bin/true): median {:?}, p90 {:?}; in a PID namespace: median {:?}, p90 {:?}; direct spawn: median {:?}, p90 {:?}",
        sup[150], sup[270], ns[150], ns[270], plain[150], plain[270]
    );
}

/// A tool whose children leave its process group: a `setsid` child, a double-forked daemon,
/// an `env -i` child (their pids printed, one per line), then `tail` (sleep).
fn escaper(tail: &str) -> ProcessSpec {
    spec(
        "bash",
        &[
            "-c",
            &format!(
                "setsid sleep 300 & echo $!; (sleep 300 & echo $!) ; env -i /bin/sleep 300 & echo $!; {tail}"
            ),
        ],
    )
}

fn pids(out: &str) -> Vec<i32> {
    out.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Kills the listed pids when dropped (a failed assertion leaves nothing running).
struct KillAll(Vec<i32>);

impl Drop for KillAll {
    fn drop(&mut self) {
        for p in &self.0 {
            if !gone(*p) {
                // SAFETY: signals a process this test started (checked alive just before).
                unsafe {
                    libc::kill(*p, libc::SIGKILL);
                }
            }
        }
    }
}

#[test]
fn processes_that_left_the_group_end_with_the_run() {
    // The tool ends by itself, times out, is cancelled: nothing it started is left.
    for (tail, timeout, cancel_after) in [
        ("true", 30_000, None),
        ("sleep 300", 500, None),
        ("sleep 300", 30_000, Some(500)),
    ] {
        let mut s = escaper(tail);
        s.timeout = Duration::from_millis(timeout);
        let cancel = CancellationToken::new();
        if let Some(ms) = cancel_after {
            let c = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(ms));
                c.cancel();
            });
        }
        let r = rt().block_on(process::run(&s, &NullSink, &cancel)).unwrap();
        let left = KillAll(pids(&r.stdout));
        assert_eq!(left.0.len(), 3, "{tail}: {}", r.stdout);
        for p in &left.0 {
            assert!(
                wait_gone(*p),
                "{tail}: {p} outlived the run: {:?} {:?}",
                std::fs::read_to_string(format!("/proc/{p}/stat")),
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
            );
        }
    }
}

/// What the tool sees of its parents: `$$ $PPID <the name /proc/$$ gives>`.
const WHO: &str = "echo $$ $PPID $(cut -d' ' -f2 /proc/$$/stat)";

#[test]
fn a_tool_in_its_own_pid_namespace() {
    // As root the kernel gives the namespace: the tool is pid 2 under an init (pid 1), and
    // `/proc` is the namespace's own (`$$` is this bash there). Not root: the fallback.
    let root = unsafe { libc::geteuid() } == 0;
    let s = spec("bash", &["-c", WHO]);
    let r = in_namespace(&s);
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    let who: Vec<&str> = r.stdout.split_whitespace().collect();
    if root {
        assert_eq!(who, ["2", "1", "(bash)"], "{}", r.stdout);
    } else {
        assert_ne!(who[1], "1", "{}", r.stdout);
    }
    // The tool's status comes through the init: an exit code, a signal.
    for (script, code, signal) in [("exit 7", Some(7), None), ("kill -TERM $$", None, Some(15))] {
        let s = spec("bash", &["-c", script]);
        let r = in_namespace(&s);
        assert_eq!((r.exit_code, r.signal), (code, signal), "{script}: {r:?}");
    }
    // Timeout: SIGTERM reaches the tool and its child through the init, nothing is left.
    let mut s = spec(
        "bash",
        &["-c", "trap 'echo got-term; exit 3' TERM; sleep 300 & wait"],
    );
    s.timeout = Duration::from_millis(500);
    let r = in_namespace(&s);
    assert!(r.timed_out, "{r:?}");
    assert!(r.stdout.contains("got-term"), "{r:?}");
    assert!(wait_gone(r.pid as i32));
}

#[test]
fn when_the_namespace_is_refused_the_supervisor_runs_as_before() {
    // The kernel refuses the namespace (EINVAL): the tool runs under the plain supervisor,
    // its parent, silently; the run is what it was.
    let s = spec("bash", &["-c", &format!("{WHO}; exit 5")]);
    let r = rt()
        .block_on(process::run_isolated(
            &s,
            process::Isolation::PidNamespaceRefused,
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert_eq!(r.exit_code, Some(5), "{r:?}");
    assert_eq!(r.stderr, "");
    let who: Vec<&str> = r.stdout.split_whitespace().collect();
    assert_eq!(who[1], r.pid.to_string(), "{}", r.stdout);
    assert_ne!(who[0], "2");
    // Leftovers are still killed.
    let s = spec("bash", &["-c", "sleep 300 & echo $!"]);
    let r = rt()
        .block_on(process::run_isolated(
            &s,
            process::Isolation::PidNamespaceRefused,
            &NullSink,
            &CancellationToken::new(),
        ))
        .unwrap();
    assert!(wait_gone(child_pid(&r.stdout)));
}
