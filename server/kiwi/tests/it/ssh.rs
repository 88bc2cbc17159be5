//! Issue 30: tools run on an SSH host, through the system's OpenSSH client, against a real
//! OpenSSH server (Debian `openssh-server`) started here on 127.0.0.1 with a throw-away host
//! key, client key, known_hosts and ssh config. The "remote" end is this machine, as the
//! test's user, with its own home (`SetEnv HOME`) and working directory: nothing kiwi does
//! there reaches the real home. Every test stops its sshd and the masters kiwi left.
//!
//! The user's ssh config is hostile on purpose (`SendEnv *`, and the server accepts every
//! variable): a canary in kiwi's environment would reach the host if the client had it.

use crate::common::{self, assert_no_canary, kiwi_command};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// Prints what the tool sees: its interpreter, file, working directory, environment, and
/// whether a canary reached it or the launcher above it.
const HELLO: &str = r#"
import json, os, sys
if __name__ == "__main__":
    with open("/proc/%d/environ" % os.getppid(), "rb") as f:
        launcher_env = f.read().decode("utf-8", "replace")
    # Kept on the host (kiwi redacts what comes back: the test reads this file directly).
    with open("seen.json", "w") as f:
        json.dump({"env": dict(os.environ), "launcher_env": launcher_env}, f)
    print(json.dumps({
        "exe": sys.executable, "file": os.path.abspath(__file__), "cwd": os.getcwd(),
        "env": dict(os.environ),
    }))
    sys.stderr.write("to stderr\n")
    sys.exit(int(json.loads(sys.argv[sys.argv.index("--params") + 1]).get("code", 0)))
"#;

/// Starts a process that leaves its group (setsid) and one that stays, writes their pids,
/// then sleeps: what a cancel, a timeout or kiwi's death must end on the host.
const SLEEPER: &str = r#"
import json, os, subprocess, sys, time
if __name__ == "__main__":
    p = json.loads(sys.argv[sys.argv.index("--params") + 1])
    a = subprocess.Popen(["sleep", "300"], start_new_session=True)
    b = subprocess.Popen(["sleep", "301"])
    tmp = p["pids"] + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d %d" % (os.getpid(), a.pid, b.pid))
    os.rename(tmp, p["pids"])
    print("ready", flush=True)
    time.sleep(300)
"#;

pub struct Sshd {
    pub dir: tempfile::TempDir,
    child: Child,
    pub port: u16,
}

fn head(name: &str, desc: &str, extra: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"{desc}\"\n{extra}\n# {name}\n")
}

fn user_name() -> String {
    let o = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn keygen(path: &Path) {
    let s = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(s.success());
}

impl Sshd {
    /// A running sshd, or `None` (one line printed) when it cannot be installed here.
    pub fn start() -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            let root = unsafe { libc::geteuid() } == 0;
            assert!(
                !root,
                "{SSHD} is missing: install openssh-server (tests/run.sh does: apt-get install -y openssh-server)"
            );
            eprintln!("SKIP ssh tests: {SSHD} is not installed and this user (not root) cannot install openssh-server");
            return None;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let d = dir.path();
        for sub in [
            "sshd",
            "rhome",
            "remote/work",
            "home",
            "run",
            "user",
            "project/.ai/tools/t",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        keygen(&d.join("sshd/hostkey"));
        keygen(&d.join("sshd/clientkey"));
        std::fs::copy(d.join("sshd/clientkey.pub"), d.join("sshd/authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        std::fs::write(
            d.join("sshd/sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {k}\nPidFile {d}/sshd/sshd.pid\nAuthorizedKeysFile {d}/sshd/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nAcceptEnv *\nSetEnv HOME={d}/rhome\n",
                k = d.join("sshd/hostkey").display(),
                d = d.display()
            ),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(d.join("sshd/hostkey.pub")).unwrap();
        let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        std::fs::write(
            d.join("sshd/known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
        )
        .unwrap();
        std::fs::write(
            d.join("sshd/ssh_config"),
            format!(
                "Host box\n  HostName 127.0.0.1\n  Port {port}\n  User {u}\n  IdentityFile {d}/sshd/clientkey\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/sshd/known_hosts\n  GlobalKnownHostsFile /dev/null\n  SendEnv *\n",
                u = user_name(),
                d = d.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(d.join("sshd/log")).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd/sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd starts");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                std::fs::read_to_string(d.join("sshd/log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // The remote working directory with its own venv; the local project has none.
        let venv = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(d.join("remote/work/.venv"))
            .status()
            .unwrap();
        assert!(venv.success());
        std::fs::write(
            d.join("user/config.yaml"),
            format!(
                "execution:\n  hosts:\n    box:\n      ssh: box\n      workdir: {d}/remote/work\n      ssh_config: {d}/sshd/ssh_config\n",
                d = d.display()
            ),
        )
        .unwrap();
        let tools = d.join("project/.ai/tools/t");
        std::fs::write(
            tools.join("hello.py"),
            format!("{}{HELLO}", head("hello", "hello", "")),
        )
        .unwrap();
        std::fs::write(
            tools.join("sleeper.py"),
            format!("{}{SLEEPER}", head("sleeper", "sleeps", "")),
        )
        .unwrap();
        std::fs::write(
            tools.join("prefers.py"),
            format!(
                "{}{HELLO}",
                head(
                    "prefers",
                    "prefers box",
                    "EXECUTION_ENVIRONMENT = {\"mode\": \"ssh\", \"host\": \"box\"}"
                )
            ),
        )
        .unwrap();
        Some(Sshd { dir, child, port })
    }

    pub fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `kiwi ARGS` in the project, with the canaries, a private runtime folder and home.
    pub fn kiwi(&self, args: &[&str]) -> Command {
        let mut c = kiwi_command(args, &self.p("project"), &self.p("user"));
        c.env("HOME", self.p("home"))
            .env("XDG_RUNTIME_DIR", self.p("run"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let o = self.kiwi(args).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // The masters kiwi left (ControlPersist), then the server.
        if let Ok(rd) = std::fs::read_dir(self.p("run/kiwi/ssh")) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| {
                    use std::os::unix::fs::FileTypeExt;
                    t.is_socket()
                }) {
                    let _ = Command::new("ssh")
                        .arg("-o")
                        .arg(format!("ControlPath={}", e.path().display()))
                        .args(["-O", "exit", "x"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a process is gone (or a zombie, which runs nothing).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                == Some("Z")
        }
    }
}

fn wait_for(path: &Path, bound: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            return s;
        }
        assert!(start.elapsed() < bound, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_all_gone(pids: &str, what: &str) {
    let pids: Vec<u32> = pids
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    let start = Instant::now();
    while !pids.iter().all(|p| gone(*p)) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "after {what}, processes are left on the host: {:?}",
            pids.iter().filter(|p| !gone(**p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tool_report(stdout: &str) -> Json {
    let line = stdout
        .lines()
        .find(|l| l.starts_with('{') && l.contains("\"exe\""))
        .unwrap_or_else(|| panic!("no report in {stdout}"));
    serde_json::from_str(line).unwrap()
}

/// What the tool saw on the host: the host's venv, its file in the content-addressed cache,
/// the working directory; no canary in its environment nor in the launcher's.
fn assert_ran_on_host(s: &Sshd, report: &Json) {
    let work = s.p("remote/work");
    assert_eq!(
        report["exe"].as_str().unwrap(),
        work.join(".venv/bin/python").to_str().unwrap(),
        "{report}"
    );
    assert_eq!(report["cwd"].as_str().unwrap(), work.to_str().unwrap());
    let trees = s.p("rhome/.cache/kiwi/trees");
    assert!(
        report["file"]
            .as_str()
            .unwrap()
            .starts_with(trees.to_str().unwrap()),
        "{report}"
    );
    assert_eq!(report["env"]["HOME"].as_str(), s.p("rhome").to_str());
    // What reached the host, read there (kiwi redacts what comes back).
    let seen = std::fs::read_to_string(work.join("seen.json")).unwrap();
    std::fs::remove_file(work.join("seen.json")).unwrap();
    assert_no_canary(
        "the tool's or the launcher's environment on the host",
        &seen,
    );
    assert!(
        seen.contains("SSH_CONNECTION"),
        "the launcher's environment was read: {seen}"
    );
}

#[test]
fn cli_runs_a_python_tool_with_its_venv_on_the_host() {
    let Some(s) = Sshd::start() else { return };
    // The plan, read-only on the host: its paths, the trail of its interpreter, what it lacks.
    let (code, out, err) = s.run(&["env", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 0, "{out}{err}");
    let venv = s.p("remote/work/.venv/bin/python");
    assert!(
        out.contains(&format!("on the host: KIWI_PYTHON = {}", venv.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("project: {} (found)", venv.display())),
        "{out}"
    );
    assert!(out.contains("3 missing on the host"), "{out}");
    assert!(
        !s.p("rhome/.cache/kiwi/blobs").exists(),
        "a plan shipped files"
    );

    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ran_on_host(&s, &tool_report(&out));
    assert!(err.contains("to stderr"), "stderr streamed: {err}");
    assert!(!err.contains("kiwi-status"), "{err}");
    assert_no_canary("kiwi's output", &format!("{out}{err}"));
    // Shipped content-addressed, and only once.
    let bytes = std::fs::read(s.p("project/.ai/tools/t/hello.py")).unwrap();
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(s
        .p("rhome/.cache/kiwi/blobs/sha256")
        .join(&digest)
        .is_file());
    let (_, out, _) = s.run(&["env", "t/hello", "--env", "ssh:box"]);
    assert!(out.contains(", 0 missing on the host"), "{out}");
    // Exit codes as for local runs.
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box", "--param", "code=3"]);
    assert_eq!(code, 3, "{out}{err}");
    // Nothing written on the host outside the cache and the working directory.
    let mut written: Vec<String> = std::fs::read_dir(s.p("rhome"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, vec![".cache"]);
}

#[test]
fn a_project_names_a_host_and_never_defines_one() {
    let Some(s) = Sshd::start() else { return };
    // The project's tool prefers `box`, which the user defined: it runs there.
    let (code, out, err) = s.run(&["run", "t/prefers"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ran_on_host(&s, &tool_report(&out));
    // A project's config.yaml that defines a host is refused, and said so.
    std::fs::write(
        s.p("project/.ai/config.yaml"),
        "execution:\n  hosts:\n    evil:\n      ssh: box\n    box:\n      ssh: attacker@example.invalid\n",
    )
    .unwrap();
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:evil"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("`evil` is not a host of execution.hosts in your config.yaml"),
        "{err}"
    );
    assert!(
        err.contains("a project may name one, never define it"),
        "{err}"
    );
    // `box` stays the user's (the project's redefinition is ignored and reported).
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("the project's config.yaml defines the ssh host `box`"),
        "{err}"
    );
    assert_ran_on_host(&s, &tool_report(&out));
}

#[test]
fn host_keys_are_checked_strictly() {
    let Some(s) = Sshd::start() else { return };
    // A changed host key: refused, nothing run.
    let other = s.p("sshd/otherkey");
    keygen(&other);
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let key: Vec<&str> = other_pub.split_whitespace().take(2).collect();
    std::fs::write(
        s.p("sshd/known_hosts"),
        format!("[127.0.0.1]:{} {}\n", s.port, key.join(" ")),
    )
    .unwrap();
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("has CHANGED"), "{err}");
    assert!(
        !s.p("rhome/.cache").exists(),
        "something was sent to the host"
    );
    // An unknown host: refused with the command that adds it.
    std::fs::write(s.p("sshd/known_hosts"), "").unwrap();
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("is not known") && err.contains("ssh-keyscan"),
        "{err}"
    );
    assert!(
        !s.p("rhome/.cache").exists(),
        "something was sent to the host"
    );
}

#[test]
fn no_process_is_left_on_the_host() {
    let Some(s) = Sshd::start() else { return };
    // A timeout.
    let pids = s.p("remote/work/pids-timeout");
    let params = json!({"pids": pids}).to_string();
    let (code, out, err) = s.run(&[
        "run",
        "t/sleeper",
        "--env",
        "ssh:box",
        "--params",
        &params,
        "--config",
        r#"{"timeout": 4}"#,
    ]);
    assert_eq!(code, 124, "{out}{err}");
    assert_all_gone(&std::fs::read_to_string(&pids).unwrap(), "a timeout");

    // A cancel (SIGINT to kiwi, as Ctrl-C), then kill -9 of kiwi.
    for (tag, signal) in [("cancel", libc::SIGINT), ("kill", libc::SIGKILL)] {
        let pids = s.p(&format!("remote/work/pids-{tag}"));
        let params = json!({"pids": pids}).to_string();
        let mut child = s
            .kiwi(&["run", "t/sleeper", "--env", "ssh:box", "--params", &params])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let list = wait_for(&pids, Duration::from_secs(60));
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "{status:?}");
        }
        assert_all_gone(&list, tag);
    }
}

#[test]
fn mcp_and_lsp_run_on_the_host() {
    let Some(s) = Sshd::start() else { return };
    let env = [
        ("HOME", s.p("home").to_str().unwrap().to_string()),
        ("XDG_RUNTIME_DIR", s.p("run").to_str().unwrap().to_string()),
    ];
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut m = common::mcp_with_env(&s.p("project"), &s.p("user"), &env_ref);
    let r = m.call(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "t/hello", "environment": "ssh:box"}),
    );
    let st = common::Proc::structured(&r).clone();
    assert_no_canary("the MCP answer", &r.to_string());
    // A run answers its output once: the parsed JSON when stdout is JSON (issue 26).
    let report = match st["result"].get("json") {
        Some(j) => j.clone(),
        None => tool_report(
            st["result"]["stdout"]
                .as_str()
                .unwrap_or_else(|| panic!("no output in {st}")),
        ),
    };
    assert_ran_on_host(&s, &report);
    m.close();

    let mut l = common::lsp_with_env(&s.p("project"), &s.p("user"), &env_ref);
    let uri = format!("file://{}", s.p("project/.ai/tools/t/hello.py").display());
    let text = std::fs::read_to_string(s.p("project/.ai/tools/t/hello.py")).unwrap();
    l.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    let lenses = l.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    let lens = lenses["result"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["command"]["title"] == "▶ Run on box"))
        .unwrap_or_else(|| panic!("no ▶ Run on box lens: {lenses}"))
        .clone();
    let r = l.request(
        "workspace/executeCommand",
        json!({"command": lens["command"]["command"], "arguments": lens["command"]["arguments"]}),
    );
    assert_no_canary("the LSP answer", &r.to_string());
    let res = &r["result"];
    let stdout = res["stdout"]
        .as_str()
        .or_else(|| res["output"]["stdout"].as_str())
        .unwrap_or_else(|| panic!("no stdout in {r}"));
    assert_ran_on_host(&s, &tool_report(stdout));
    l.close();
}

#[test]
fn kubernetes_dry_run_prints_a_valid_job_and_secret() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("project/.ai/tools/t")).unwrap();
    std::fs::create_dir_all(d.join("user")).unwrap();
    std::fs::write(
        d.join("user/config.yaml"),
        "execution:\n  image: python:3.12-slim\n",
    )
    .unwrap();
    std::fs::write(
        d.join("project/.ai/tools/t/hello.py"),
        format!("{}{HELLO}", head("hello", "hello", "")),
    )
    .unwrap();
    // Beside the tool: a binary file and an executable (shipped like every sibling).
    std::fs::write(d.join("project/.ai/tools/t/blob.bin"), [0xff, 0x00, 0x80]).unwrap();
    let helper = d.join("project/.ai/tools/t/helper.sh");
    std::fs::write(&helper, "#!/bin/sh\necho helper\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = kiwi_command(
        &[
            "run",
            "t/hello",
            "--env",
            "kubernetes:prod",
            "--dry-run",
            "--json",
        ],
        &d.join("project"),
        &d.join("user"),
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_no_canary("the manifests", &out);
    let v: Json = serde_json::from_str(&out).unwrap();
    let manifests = v["manifests"].as_array().unwrap();
    let kinds: Vec<&str> = manifests
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Secret", "ConfigMap", "Job"], "{out}");
    // This machine's places stay out of the pod's environment: the image has its own.
    let secret_env = manifests[0]["stringData"].as_object().unwrap();
    for local in ["PATH", "HOME", "PWD", "SHELL"] {
        assert!(
            !secret_env.contains_key(local),
            "{local} in the Secret: {out}"
        );
    }
    assert!(secret_env.contains_key("PYTHONUNBUFFERED"), "{out}");
    let (cm, job) = (&manifests[1], &manifests[2]);
    // The files: the tool as a content-addressed ConfigMap, mounted read-only at the paths
    // the command names; the working directory an emptyDir; the image's own interpreter.
    let tool_file = d.join("project/.ai/tools/t/hello.py");
    let bytes = std::fs::read(&tool_file).unwrap();
    let key =
        kiwi_kernel::exec::environments::ssh::hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    assert_eq!(cm["data"][&key].as_str().unwrap().as_bytes(), &bytes[..]);
    let cm_name = cm["metadata"]["name"].as_str().unwrap();
    assert!(
        cm_name.starts_with("kiwi-t-hello-") && cm_name.ends_with("-files"),
        "{cm_name}"
    );
    let pod = &job["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let rel = tool_file.to_str().unwrap().trim_start_matches('/');
    let vols = pod["volumes"].as_array().unwrap();
    let tree = vols
        .iter()
        .find(|v| v["configMap"]["name"] == cm_name)
        .unwrap();
    assert!(tree["configMap"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["key"] == key.as_str() && i["path"] == rel));
    let sha = |p: &Path| {
        kiwi_kernel::exec::environments::ssh::hex(&<sha2::Sha256 as sha2::Digest>::digest(
            std::fs::read(p).unwrap(),
        ))
    };
    let bin = sha(&d.join("project/.ai/tools/t/blob.bin"));
    assert_eq!(cm["binaryData"][&bin], "/wCA", "{cm:#}");
    let item = |k: &str| {
        tree["configMap"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["key"] == k)
            .unwrap()
            .clone()
    };
    assert_eq!(item(&sha(&helper))["mode"], 0o555);
    assert_eq!(item(&key)["mode"], 0o444);
    assert_eq!(
        item(&bin)["path"],
        d.join("project/.ai/tools/t/blob.bin")
            .to_str()
            .unwrap()
            .trim_start_matches('/')
    );
    let work = vols.iter().find(|v| v.get("emptyDir").is_some()).unwrap();
    let mounts = c["volumeMounts"].as_array().unwrap();
    let mount_of = |n: &Json| mounts.iter().find(|m| m["name"] == *n).unwrap();
    assert_eq!(mount_of(&tree["name"])["mountPath"], "/kiwi/tree");
    assert_eq!(mount_of(&tree["name"])["readOnly"], true);
    assert_eq!(mount_of(&work["name"])["mountPath"], "/kiwi/work");
    assert_eq!(c["workingDir"], "/kiwi/work");
    let cmd: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(cmd[0] == "python3" || cmd[0] == "python", "{cmd:?}");
    assert_eq!(cmd[1], format!("/kiwi/tree/{rel}"), "{cmd:?}");
    // No local path in the container (the tree mirrors them below /kiwi/tree).
    for a in cmd.iter().chain([&c["workingDir"].as_str().unwrap()]) {
        assert!(
            !a.starts_with('/') || a.starts_with("/kiwi/"),
            "a local path: {c:#}"
        );
    }
    // The real schemas (kubernetes-validate, installed by tests/run.sh), else the subsets.
    let kv = common::repo().join("target/k8s-venv/bin/kubernetes-validate");
    if kv.exists() {
        for m in manifests {
            let f = d.join(format!("{}.json", m["kind"].as_str().unwrap()));
            std::fs::write(&f, m.to_string()).unwrap();
            let o = std::process::Command::new(&kv)
                .arg("--strict")
                .arg(&f)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "kubernetes-validate {}: {}{}\n{m:#}",
                f.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    } else {
        assert!(
            std::env::var_os("CI").is_none() && std::env::var_os("KIWI_REQUIRE_SYSTEM").is_none(),
            "kubernetes-validate is missing at {} (tests/run.sh installs it)",
            kv.display()
        );
        println!("SKIP kubernetes-validate: {} is missing (tests/run.sh installs it); the schema subsets only", kv.display());
    }
    let schemas = common::repo().join("server/kiwi/tests/it/data/kubernetes");
    for (m, file) in
        manifests
            .iter()
            .zip(["secret-v1.json", "configmap-v1.json", "job-batch-v1.json"])
    {
        let schema: Json =
            serde_json::from_str(&std::fs::read_to_string(schemas.join(file)).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(m)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{file}: {errors:?}\n{m:#}");
    }
    // More than a ConfigMap holds (1 MiB): refused with the reason, no manifest printed.
    let big = d.join("project/.ai/tools/t/big.txt");
    std::fs::write(&big, "x".repeat(1 << 20)).unwrap();
    let o = kiwi_command(
        &["run", "t/hello", "--env", "kubernetes:prod", "--dry-run"],
        &d.join("project"),
        &d.join("user"),
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("at most 1 MiB"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_file(&big).unwrap();
    // Without --dry-run: refused, nothing applied.
    let o = kiwi_command(
        &["run", "t/hello", "--env", "kubernetes:prod"],
        &d.join("project"),
        &d.join("user"),
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--dry-run"));
}

/// The pids of the sshd processes serving connections: the test sshd's descendants named
/// `sshd` (its per-connection processes), never the listener itself nor what they run.
fn sshd_sessions(listener: u32) -> Vec<u32> {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid: u32 = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent.push((pid, ppid, comm));
    }
    let mut out = Vec::new();
    let mut todo = vec![listener];
    while let Some(p) = todo.pop() {
        for (pid, ppid, comm) in &parent {
            if *ppid == p {
                todo.push(*pid);
                if comm.starts_with("sshd") {
                    out.push(*pid);
                }
            }
        }
    }
    out
}

/// Issue 30: the connection lost mid-run (the host side of it killed, as a reboot of the
/// network or sshd would): kiwi's run ends with an error that says so, in bounded time, and
/// the launcher's watchdog ends every process of the tool on the host.
#[test]
fn a_connection_lost_mid_run_ends_the_run_and_its_processes() {
    let Some(s) = Sshd::start() else { return };
    let pids = s.p("remote/work/pids-lost");
    let params = json!({"pids": pids}).to_string();
    let mut child = s
        .kiwi(&["run", "t/sleeper", "--env", "ssh:box", "--params", &params])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let list = wait_for(&pids, Duration::from_secs(60));
    let sessions = sshd_sessions(s.child.id());
    assert!(!sessions.is_empty(), "no sshd session serves the run");
    for p in &sessions {
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kiwi's run did not end within 30s of the connection being lost");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_all_gone(&list, "the connection lost");
    assert_eq!(status.code(), Some(2), "{status:?}: {err}");
    assert!(
        err.contains("the connection to the host `box`") && err.contains("was lost during the run"),
        "{err}"
    );
    assert!(!err.contains("nothing was run"), "it ran: {err}");
}

/// Issue 30: the refusals come before anything is sent: a tool with an error-level
/// diagnostic, a YAML tool's script symlinked out of the project (K006, a diagnostic) and a
/// file the command names in the tool's folder that leads out (K006, found at the run) are
/// refused with `--env ssh:box` without a connection (no sshd login, no control socket) and
/// nothing on the host. Positive control: a good tool then runs there.
#[test]
fn refusals_come_before_anything_reaches_the_host() {
    let Some(s) = Sshd::start() else { return };
    let tools = s.p("project/.ai/tools/x");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        s.p("project/.ai/tools/t/broken.py"),
        format!(
            "{}{HELLO}",
            head("broken", "broken", "").replace("\"1.0.0\"", "\"not-a-version\"")
        ),
    )
    .unwrap();
    let marker = s.p("evil-ran");
    let outside = s.p("evil.sh");
    std::fs::write(&outside, format!("touch {}\necho evil\n", marker.display())).unwrap();
    std::fs::write(
        tools.join("evil.yaml"),
        "version: \"1.0.0\"\ntool_type: bash\nexecutor_id: runtimes/bash_runtime\ndescription: evil\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, tools.join("evil.sh")).unwrap();
    std::os::unix::fs::symlink(&outside, tools.join("leads_out.sh")).unwrap();
    std::fs::write(
        tools.join("runs_out.yaml"),
        "version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: runs out\nconfig:\n  command: sh\n  args: [\"{tool_dir}/leads_out.sh\"]\n",
    )
    .unwrap();
    let sockets = || -> Vec<PathBuf> {
        std::fs::read_dir(s.p("run/kiwi/ssh"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                use std::os::unix::fs::FileTypeExt;
                e.file_type().is_ok_and(|t| t.is_socket())
            })
            .map(|e| e.path())
            .collect()
    };
    for (tool, why) in [
        ("t/broken", "T302"),
        ("x/evil", "K006"),
        ("x/runs_out", "K006"),
    ] {
        for verb in ["run", "env"] {
            let (code, out, err) = s.run(&[verb, tool, "--env", "ssh:box"]);
            assert_eq!(code, 2, "{verb} {tool}: {out}{err}");
            assert!(err.contains(why), "{verb} {tool}: {err}");
            assert!(err.contains("nothing was run"), "{verb} {tool}: {err}");
            assert!(!marker.exists(), "{verb} {tool}: the script outside ran");
            assert!(
                !s.p("rhome/.cache").exists(),
                "{verb} {tool}: something was sent to the host"
            );
            assert_eq!(
                sockets(),
                Vec::<PathBuf>::new(),
                "{verb} {tool}: a connection was opened"
            );
            let log = std::fs::read_to_string(s.p("sshd/log")).unwrap();
            assert!(
                !log.contains("Accepted"),
                "{verb} {tool}: kiwi logged in to the host: {log}"
            );
        }
    }
    // Positive control: the same host, a good tool.
    let (code, out, err) = s.run(&["run", "t/hello", "--env", "ssh:box"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ran_on_host(&s, &tool_report(&out));
    assert_eq!(sockets().len(), 1);
    assert!(std::fs::read_to_string(s.p("sshd/log"))
        .unwrap()
        .contains("Accepted"));
}
