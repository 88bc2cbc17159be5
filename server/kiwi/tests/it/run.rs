//! `kiwi run` end to end: streaming, exit codes, --json, --dry-run, Ctrl-C, a 200 MB flood
//! with bounded memory, and `kiwi env` naming the execution environment.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CANARIES: &[(&str, &str)] = &[
    ("FAKE_API_KEY", "canary-fake-api-key-aa11"),
    ("SOME_TOKEN", "canary-some-token-bb22"),
    ("DB_PASSWORD", "canary-db-password-cc33"),
];

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn head(extra: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"test\"\n{extra}\nimport json, os, subprocess, sys, time\n\nif __name__ == \"__main__\":\n    params = json.loads(sys.argv[sys.argv.index(\"--params\") + 1])\n")
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let p = Project { dir };
        for d in ["home", "user", "project/.ai/tools/t"] {
            std::fs::create_dir_all(p.dir.path().join(d)).unwrap();
        }
        p.tool(
            "steps",
            &head(""),
            "    print('first', flush=True)\n    print('oops', file=sys.stderr, flush=True)\n    time.sleep(0.6)\n    print('second', params.get('who'), flush=True)\n    sys.exit(params.get('code', 0))\n",
        );
        p.tool(
            "envdump",
            &head(""),
            "    print(json.dumps(dict(os.environ)))\n",
        );
        p.tool(
            "sleeper",
            &head(""),
            // The child is found by a unique argument: a local run as root is in its own PID
            // namespace, where `child.pid` is not the host's pid.
            "    arg = '300.%d%d' % (os.getpid(), time.time_ns())\n    subprocess.Popen(['sleep', arg])\n    print(arg, flush=True)\n    time.sleep(300)\n",
        );
        p.tool(
            "flood",
            &head(""),
            "    block = (b'x' * 999 + b'\\n') * 1024\n    for _ in range(params['mb'] * 1000 * 1000 // len(block)):\n        sys.stdout.buffer.write(block)\n    sys.stdout.buffer.flush()\n",
        );
        p
    }
    fn tool(&self, name: &str, head: &str, body: &str) {
        std::fs::write(
            self.dir
                .path()
                .join(format!("project/.ai/tools/t/{name}.py")),
            format!("{head}{body}"),
        )
        .unwrap();
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
        for (k, v) in CANARIES {
            c.env(k, v);
        }
        c
    }
}

fn assert_no_canary(text: &str) {
    for (k, v) in CANARIES {
        assert!(!text.contains(v), "the value of {k} leaked:\n{text}");
    }
}

#[test]
fn streams_output_then_a_summary_and_exits_with_the_tools_code() {
    let p = Project::new();
    let mut child = p
        .kiwi(&[
            "run",
            "t/steps",
            "--param",
            "who=world",
            "--param",
            "code=3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let first_at = Instant::now();
    assert_eq!(first, "first\n");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    // The first line arrived while the tool still slept (0.6 s), not at its end.
    assert!(
        first_at.elapsed() >= Duration::from_millis(400),
        "the first line came only {:?} before the end",
        first_at.elapsed()
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(rest, "second world\n");
    assert!(err.starts_with("oops\n"), "{err}");
    assert!(err.contains("kiwi: t/steps exited with 3"), "{err}");
    assert!(err.contains("in local"), "{err}");
    assert_eq!(status.code(), Some(3));
}

#[test]
fn json_result_and_no_canary() {
    let p = Project::new();
    let out = p.kiwi(&["run", "t/envdump", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_no_canary(&text);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["tool"], "t/envdump");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["execution"]["environment"], "local");
    assert_eq!(
        v["chain"],
        serde_json::json!(["t/envdump", "runtimes/python_runtime", "subprocess"])
    );
    let env = v["json"].as_object().unwrap();
    assert!(env.contains_key("PATH"));
    assert!(!env.contains_key("FAKE_API_KEY"));
}

#[test]
fn dry_run_runs_nothing_and_shows_no_secret() {
    let p = Project::new();
    p.tool(
        "marker",
        &head("CONFIG = {\"env\": {\"SOME_TOKEN\": \"${SOME_TOKEN}\", \"MODE\": \"fast\"}}"),
        "    open('ran', 'w').write('x')\n",
    );
    for json in [false, true] {
        let mut args = vec!["run", "t/marker", "--dry-run"];
        if json {
            args.push("--json");
        }
        let out = p.kiwi(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert_no_canary(&text);
        assert!(text.contains("SOME_TOKEN"), "{text}");
        assert!(text.contains("MODE"), "{text}");
        assert!(text.contains("runtimes/python_runtime"), "{text}");
        if !json {
            assert!(text.contains("MODE=fast"), "{text}");
            assert!(text.contains("execution: local"), "{text}");
        }
    }
    assert!(!p.project().join("ran").exists());
}

#[test]
fn errors_say_what_to_do_and_exit_2() {
    let p = Project::new();
    p.tool(
        "typed",
        &head("CONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}, \"s\": {\"type\": \"string\"}}}"),
        "    print('ran')\n",
    );
    let out = p
        .kiwi(&["run", "t/typed", "--param", "n=x", "--param", "s=5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`n`"), "{err}");
    assert!(err.contains("`s`"), "{err}");
    assert!(out.stdout.is_empty());
    let out = p.kiwi(&["run", "t/nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = p
        .kiwi(&["run", "t/typed", "--params", "[1]"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The pid of the process one of whose arguments is `arg` (scanning `/proc/*/cmdline`),
/// waiting for it up to 10 s: the tool prints its marker once `Popen` has returned, and
/// `Popen` returns in the middle of the child's `execve` (when the kernel releases a vfork
/// parent and closes the close-on-exec error pipe, before the new program's argv is in
/// place: until then `/proc/PID/cmdline` reads empty). Under load that window is long enough
/// for a single scan to miss the child (seen: 9 of 60 runs with 10 copies of this test at
/// once; the child was there 50 ms later).
fn with_argument(arg: &str) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(pid) = scan_for_argument(arg) {
            return Some(pid);
        }
        if start.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn scan_for_argument(arg: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        cmd.split(|b| *b == 0)
            .any(|a| a == arg.as_bytes())
            .then_some(pid)
    })
}

fn gone(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn ctrl_c_and_sigterm_cancel_and_kill_the_group() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        interrupt_with(sig);
    }
}

fn interrupt_with(sig: i32) {
    let p = Project::new();
    let mut child = p
        .kiwi(&["run", "t/sleeper"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let marker = line.trim().to_string();
    assert!(marker.starts_with("300."), "{marker}");
    let grandchild = with_argument(&marker).expect("the tool's child is running");
    // SAFETY: signals the kiwi process this test started.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "signal {sig}: {err}");
    assert!(err.contains("cancelled"), "{err}");
    assert!(
        gone(grandchild),
        "the tool's child {grandchild} survived Ctrl-C"
    );
}

#[test]
fn a_closed_stdout_is_no_panic() {
    let p = Project::new();
    let mut child = p
        .kiwi(&["run", "t/flood", "--param", "mb=5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe (as `| head -1` does).
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    // The closed pipe stopped the tool: 128 + SIGPIPE, as a shell reports it.
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.contains("output pipe was closed"), "{err}");
}

/// Run kiwi to its end with stdout drained: (exit code, kiwi's own peak RSS in KiB, stdout
/// bytes). Not `wait4`'s `ru_maxrss`: that one carries this test process's memory into the
/// child (see `kiwi_bench::peak`).
fn run_with_peak(cmd: &mut Command) -> (i32, u64, u64) {
    let m = kiwi_bench::peak::run_drained(cmd, true).unwrap();
    (
        m.status.code().unwrap_or(-1),
        m.peak_kib.unwrap(),
        m.stdout_bytes,
    )
}

#[test]
fn a_200_mb_flood_keeps_memory_bounded() {
    let p = Project::new();
    let (code, idle, _) = run_with_peak(&mut p.kiwi(&["run", "t/steps"]));
    assert_eq!(code, 0);
    let start = Instant::now();
    let (code, peak, bytes) = run_with_peak(&mut p.kiwi(&["run", "t/flood", "--param", "mb=200"]));
    assert_eq!(code, 0);
    assert!(bytes >= 199_000_000, "only {bytes} bytes came through");
    println!(
        "200 MB flood through kiwi run: {:.1} s; peak RSS {:.1} MB, idle run {:.1} MB, above idle {:.1} MB",
        start.elapsed().as_secs_f64(),
        peak as f64 / 1024.0,
        idle as f64 / 1024.0,
        peak.saturating_sub(idle) as f64 / 1024.0
    );
    assert!(
        peak.saturating_sub(idle) < 100 * 1024,
        "kiwi run used {} KiB above idle",
        peak.saturating_sub(idle)
    );
    // With --json nothing is streamed; the result keeps 8 MiB and says truncated.
    let out = p
        .kiwi(&["run", "t/flood", "--param", "mb=20", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["truncated"], true);
    assert_eq!(v["stdout_bytes"], 20_000_000u64 / 1_024_000 * 1_024_000);
    assert_eq!(v["stdout"].as_str().unwrap().len(), 8 * 1024 * 1024);
}

#[test]
fn env_names_the_execution_environment() {
    let p = Project::new();
    let out = p.kiwi(&["env", "t/steps"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("execution: local"), "{text}");
    assert!(text.contains("no preference"), "{text}");
    let out = p.kiwi(&["env", "t/steps", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["execution"]["environment"], "local");
}

/// Issue 12, point 16: a tool whose CONFIG the checker rejects is refused (exit 2, the
/// diagnostics listed: code, line, message), never run with other values; also with --json
/// and --dry-run. Positive control: the same tool with a literal CONFIG runs, and its 1 s
/// timeout stops the 3 s sleep.
#[test]
fn a_tool_with_error_diagnostics_is_refused_not_run() {
    let p = Project::new();
    let body = "    time.sleep(3)\n    print('finished', flush=True)\n";
    let cases: &[(&str, &str, usize)] = &[
        ("mul", "CONFIG = {\"timeout\": 1 * 1}", 5),
        (
            "environ",
            "CONFIG = {\"timeout\": os.environ.get(\"T\", 1)}",
            5,
        ),
        ("spread", "BASE = {\"timeout\": 1}\nCONFIG = {**BASE}", 6),
        ("fstring", "CONFIG = {\"timeout\": f\"{1}\"}", 5),
        ("dictcall", "CONFIG = dict(timeout=1)", 5),
        ("ifblock", "if True:\n    CONFIG = {\"timeout\": 1}", 6),
    ];
    for (name, config, line) in cases {
        p.tool(name, &head(config), body);
        let out = p.kiwi(&["run", &format!("t/{name}")]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} ran: {err}");
        assert!(out.stdout.is_empty(), "{name} printed output");
        assert!(err.contains("nothing was run"), "{name}: {err}");
        assert!(
            err.contains("T301") && err.contains(&format!("{name}.py:{line}:")),
            "{name}: {err}"
        );
        for args in [&["--json"][..], &["--dry-run"][..]] {
            let id = format!("t/{name}");
            let mut a = vec!["run", id.as_str()];
            a.extend_from_slice(args);
            let out = p.kiwi(&a).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}");
        }
        let out = p
            .kiwi(&["run", &format!("t/{name}"), "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["kind"], "invalid", "{v}");
        assert_eq!(v["error"]["diagnostics"][0]["code"], "T301", "{v}");
        assert_eq!(v["error"]["diagnostics"][0]["line"], *line, "{v}");
    }
    // A syntax error (point 18) is refused the same way.
    p.tool(
        "syntax",
        &head("def broken(:\n    pass"),
        "    print('ran')\n",
    );
    let out = p.kiwi(&["run", "t/syntax"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("T301") && err.contains("syntax.py:5:"),
        "{err}"
    );
    // Positive control.
    p.tool("clean", &head("CONFIG = {\"timeout\": 1}"), body);
    let out = p.kiwi(&["run", "t/clean"]).output().unwrap();
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    // An unknown tool: did-you-mean.
    let out = p.kiwi(&["run", "t/claen"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `t/clean`"));
}

/// Issue 12, point 14: a YAML tool's sidecar script that is a symlink out of the project is
/// refused: `kiwi check` reports K006 and `kiwi run` does not run it. Positive control: the
/// same tool with its script inside the project runs.
#[cfg(unix)]
#[test]
fn a_sidecar_script_symlinked_out_of_the_project_is_refused() {
    let p = Project::new();
    let tools = p.project().join(".ai/tools/x");
    std::fs::create_dir_all(&tools).unwrap();
    let marker = p.dir.path().join("evil-ran");
    let outside = p.dir.path().join("evil.sh");
    std::fs::write(&outside, format!("touch {}\necho evil\n", marker.display())).unwrap();
    let yaml = |d: &str| {
        format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: runtimes/bash_runtime\ndescription: {d}\n")
    };
    std::fs::write(tools.join("evil.yaml"), yaml("evil")).unwrap();
    std::os::unix::fs::symlink(&outside, tools.join("evil.sh")).unwrap();
    std::fs::write(tools.join("good.yaml"), yaml("good")).unwrap();
    std::fs::write(tools.join("good.sh"), "echo good\n").unwrap();

    let out = p.kiwi(&["check", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let k006: Vec<&serde_json::Value> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "K006")
        .collect();
    assert_eq!(k006.len(), 1, "{v:#}");
    assert!(k006[0]["path"].as_str().unwrap().ends_with("x/evil.yaml"));
    assert!(k006[0]["message"].as_str().unwrap().contains("evil.sh"));
    assert_eq!(out.status.code(), Some(1));

    for args in [&["run", "x/evil"][..], &["run", "x/evil", "--json"][..]] {
        let out = p.kiwi(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(!marker.exists(), "the script outside the project ran");
    }
    let out = p.kiwi(&["run", "x/evil"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("K006"));
    let out = p.kiwi(&["run", "x/good"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "good\n");
}

/// Found by the hostile suite: a file the command names in the tool's own folder
/// (`{tool_dir}/evil.sh`, not the same-name sidecar) that is a symlink out of the project was
/// run. It is refused like a sidecar script; the same command on a real file still runs.
#[test]
fn a_file_named_in_the_tools_folder_that_leads_out_is_refused() {
    let p = Project::new();
    let tools = p.project().join(".ai/tools/y");
    std::fs::create_dir_all(&tools).unwrap();
    let marker = p.dir.path().join("evil-ran");
    let outside = p.dir.path().join("evil.sh");
    std::fs::write(&outside, format!("touch {}\necho evil\n", marker.display())).unwrap();
    std::os::unix::fs::symlink(&outside, tools.join("evil.sh")).unwrap();
    std::fs::write(tools.join("fine.sh"), "echo fine\n").unwrap();
    let tool = |name: &str, script: &str| {
        std::fs::write(
            tools.join(format!("{name}.yaml")),
            format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: {name}\nconfig:\n  command: sh\n  args: [\"{{tool_dir}}/{script}\"]\n"),
        )
        .unwrap();
    };
    tool("runs_evil", "evil.sh");
    tool("runs_fine", "fine.sh");
    let out = p.kiwi(&["run", "y/runs_evil"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!marker.exists(), "the script outside the project ran");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("K006"),
        "{out:?}"
    );
    let out = p.kiwi(&["run", "y/runs_fine"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine\n");
}
