//! Issue 24, item 7: what a tool reaches in the sandbox (bubblewrap) and in a new container
//! (podman, the host root as an overlay): its own folder read-only, the user space's
//! private key never readable, host Unix sockets outside `/tmp` not answering with the
//! network off; and `kiwi env` shows the mount plan. Each with its positive control (the
//! project is writable, the rest of the user space readable, a socket answers when the
//! network is on, and on the host). Run as the test's user (root here).

use serde_json::{json, Value as Json};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Tries each thing and says what worked.
const PROBE: &str = r#"
import json, os, socket, sys
if __name__ == "__main__":
    p = json.loads(sys.argv[sys.argv.index("--params") + 1])
    r = {}
    def attempt(name, f):
        try:
            f()
            r[name] = "yes"
        except Exception as e:
            r[name] = "no: %s" % e
    here = os.path.dirname(os.path.abspath(__file__))
    attempt("tool_dir_write", lambda: open(os.path.join(here, "planted.py"), "w").write("x"))
    attempt("key_read", lambda: open(p["key"]).read())
    attempt("user_read", lambda: open(p["user_file"]).read())
    attempt("project_write", lambda: open(os.path.join(p["project"], "out.txt"), "w").write("x"))
    for name, path in p["sockets"].items():
        def connect(path=path):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(3)
            s.connect(path)
            s.close()
        attempt("socket_" + name, connect)
    print(json.dumps(r))
"#;

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(ee: &str) -> Case {
        // Not below /tmp (private in the sandbox).
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        for d in [
            "home",
            "user/keys",
            "user/knowledge",
            "project/.ai/tools/t",
            "agent",
        ] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(
            dir.path().join("user/keys/private_key.pem"),
            "canary-private-key-9f3e",
        )
        .unwrap();
        std::fs::write(dir.path().join("user/knowledge/note.md"), "# note\n").unwrap();
        let head = format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"probe\"\n{ee}\n");
        std::fs::write(
            dir.path().join("project/.ai/tools/t/probe.py"),
            format!("{head}{PROBE}"),
        )
        .unwrap();
        Case { dir }
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn kiwi(&self, args: &[&str], agent: &Path) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_kiwi"))
            .args(args)
            .current_dir(self.p("project"))
            .env_clear()
            .env("HOME", self.p("home"))
            .env("KIWI_USERSPACE_DIR", self.p("user"))
            .env("PATH", SYSTEM_PATH)
            .env("SSH_AUTH_SOCK", agent)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
    /// `kiwi run t/probe`: what the tool could do.
    fn probe(&self, sockets: &[(&str, &Path)], agent: &Path) -> Json {
        let socks: serde_json::Map<String, Json> = sockets
            .iter()
            .map(|(n, p)| (n.to_string(), json!(p)))
            .collect();
        let params = json!({
            "key": self.p("user/keys/private_key.pem"),
            "user_file": self.p("user/knowledge/note.md"),
            "project": self.p("project"),
            "sockets": socks,
        })
        .to_string();
        let out = self.kiwi(&["run", "t/probe", "--params", &params, "--json"], agent);
        let v: Json = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "kiwi run: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        serde_json::from_str(v["stdout"].as_str().unwrap_or(""))
            .unwrap_or_else(|_| panic!("the probe did not answer: {v}"))
    }
}

/// A listening Unix socket (answers every connection), removed when dropped.
struct Listening {
    path: PathBuf,
}

impl Listening {
    fn at(path: PathBuf) -> Listening {
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || for _ in l.incoming() {});
        Listening { path }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn yes(r: &Json, k: &str) -> bool {
    r[k].as_str().is_some_and(|s| s == "yes")
}

fn check(what: &str, ee: &str, sockets_answer: bool) {
    let case = Case::new(ee);
    let n = std::process::id();
    let run_sock = Listening::at(PathBuf::from(format!(
        "/run/kiwi-test-{n}-{}.sock",
        what.len()
    )));
    let agent = Listening::at(case.p("agent/agent.sock"));
    let r = case.probe(
        &[("run", &run_sock.path), ("agent", &agent.path)],
        &agent.path,
    );
    // Positive controls.
    assert!(yes(&r, "project_write"), "{what}: {r}");
    assert!(yes(&r, "user_read"), "{what}: {r}");
    // The tool's own folder is read-only; the private key is never readable.
    assert!(
        !yes(&r, "tool_dir_write"),
        "{what}: the tool wrote into its own folder: {r}"
    );
    assert!(
        !case.p("project/.ai/tools/t/planted.py").exists(),
        "{what}: planted"
    );
    assert!(
        !yes(&r, "key_read"),
        "{what}: the private key was readable: {r}"
    );
    // Host sockets: not with the network off; with it on (the control), they answer.
    for s in ["socket_run", "socket_agent"] {
        assert_eq!(yes(&r, s), sockets_answer, "{what}: {s}: {r}");
    }
    // `kiwi env` shows the mount plan.
    let out = case.kiwi(&["env", "t/probe"], &agent.path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mounts:"), "{what}: {text}");
    let keys = case.p("user/keys");
    assert!(
        text.lines()
            .any(|l| l.contains(&*keys.to_string_lossy()) && l.contains("hidden")),
        "{what}: {text}"
    );
    let tool_dir = case.p("project/.ai/tools/t");
    assert!(
        text.lines()
            .any(|l| l.ends_with(&*tool_dir.to_string_lossy())
                || (l.contains(&*tool_dir.to_string_lossy()) && l.contains("read-only"))),
        "{what}: {text}"
    );
}

#[test]
fn hostile_sandbox_bubblewrap_exposes_only_what_the_plan_says() {
    // The host's control socket is made under /run, which only root may write.
    if !kiwi_kernel::test_system::need_root("a listening socket under /run") {
        return;
    }
    if !kiwi_kernel::test_system::need("bwrap", "bubblewrap") {
        return;
    }
    check(
        "sandbox",
        "EXECUTION_ENVIRONMENT = {\"mode\": \"sandbox\"}",
        false,
    );
    check(
        "sandbox, network on",
        "EXECUTION_ENVIRONMENT = {\"mode\": \"sandbox\", \"network\": True}",
        true,
    );
}

#[test]
fn hostile_sandbox_podman_exposes_only_what_the_plan_says() {
    // The host's control socket is made under /run, which only root may write.
    if !kiwi_kernel::test_system::need_root("a listening socket under /run") {
        return;
    }
    if !kiwi_kernel::test_system::need("podman", "podman runc") {
        return;
    }
    check(
        "container",
        "EXECUTION_ENVIRONMENT = {\"mode\": \"required\", \"image\": \"/\"}",
        false,
    );
}

/// Positive control for the sockets: on the host, the same sockets answer.
#[test]
fn hostile_sandbox_local_control_sockets_answer_on_the_host() {
    // The host's control socket is made under /run, which only root may write.
    if !kiwi_kernel::test_system::need_root("a listening socket under /run") {
        return;
    }
    let case = Case::new("");
    let n = std::process::id();
    let run_sock = Listening::at(PathBuf::from(format!("/run/kiwi-test-{n}-local.sock")));
    let agent = Listening::at(case.p("agent/agent.sock"));
    let r = case.probe(
        &[("run", &run_sock.path), ("agent", &agent.path)],
        &agent.path,
    );
    assert!(yes(&r, "socket_run") && yes(&r, "socket_agent"), "{r}");
    assert!(yes(&r, "project_write") && yes(&r, "key_read"), "{r}");
}
