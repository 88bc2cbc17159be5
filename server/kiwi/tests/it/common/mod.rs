//! Clients for `kiwi lsp` and `kiwi mcp` over the real binary's stdio, for the hostile-input
//! and load tests. Every wait is bounded; stderr is kept so that a test can check that no
//! panic was printed.
#![allow(dead_code)]

use kiwi_lsp::wire::client::{Client, Peer};
use serde_json::{json, Value as Json};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const CANARIES: &[(&str, &str)] = &[
    ("FAKE_API_KEY", "canary-fake-api-key-9d41"),
    ("SOME_TOKEN", "canary-some-token-3e07"),
    ("DB_PASSWORD", "canary-db-password-c5a2"),
    ("AWS_SECRET_ACCESS_KEY", "canary-aws-secret-7b19"),
    ("GITHUB_TOKEN", "ghp_canaryGithubToken0000000000000000a1"),
];

/// The default bound for one answer.
pub const ANSWER: Duration = Duration::from_secs(30);

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Copy a folder (files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

pub fn assert_no_canary(what: &str, text: &str) {
    for (k, v) in CANARIES {
        assert!(!text.contains(v), "{what} leaks {k}: {text}");
    }
}

pub fn kiwi_command(args: &[&str], project: &Path, user: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kiwi"));
    c.args(args)
        .current_dir(project)
        .env("KIWI_USERSPACE_DIR", user)
        .env_remove("KIWI_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in CANARIES {
        c.env(k, v);
    }
    c
}

/// A running server: the shared wire client (`kiwi_lsp::wire::client`) over its stdio, and
/// its stderr so far.
pub struct Proc {
    pub child: Child,
    client: Client<ChildStdin>,
    pub stderr: Arc<Mutex<String>>,
}

impl Proc {
    fn spawn(mut cmd: Command, peer: Peer) -> Proc {
        let mut child = cmd.spawn().expect("kiwi starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let err = Arc::new(Mutex::new(String::new()));
        let err2 = err.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut buf = [0u8; 8192];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                err2.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Proc {
            child,
            client: Client::new(peer, stdout, stdin, 1001),
            stderr: err,
        }
    }

    /// Notifications and server requests seen and not consumed yet.
    pub fn notes(&self) -> &[Json] {
        &self.client.inbox.notes
    }

    fn fail(&mut self, e: String) -> ! {
        panic!(
            "{e}; status {:?}; stderr: {}",
            self.child.try_wait(),
            self.stderr.lock().unwrap()
        )
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        if let Err(e) = self.client.write_raw(bytes) {
            self.fail(e)
        }
    }

    /// Send one message (framed for LSP, a line for MCP).
    pub fn send(&mut self, msg: &Json) {
        if let Err(e) = self.client.send(msg) {
            self.fail(e)
        }
    }

    pub fn fresh_id(&mut self) -> i64 {
        self.client.inbox.fresh_id()
    }

    /// Wait for the answer with this id (the whole message), within `bound`.
    pub fn answer(&mut self, id: &Json, bound: Duration) -> Json {
        match self.client.answer(id, bound) {
            Ok(m) => m,
            Err(e) => self.fail(e),
        }
    }

    /// Send a request and wait for its answer.
    pub fn request(&mut self, method: &str, params: Json) -> Json {
        match self.client.request(method, params, ANSWER) {
            Ok(m) => m,
            Err(e) => self.fail(e),
        }
    }

    pub fn notify(&mut self, method: &str, params: Json) {
        if let Err(e) = self.client.notify(method, params) {
            self.fail(e)
        }
    }

    /// Wait until a notification matching `pred` arrives (reads answers into the pending set).
    pub fn wait_note(&mut self, bound: Duration, pred: impl Fn(&Json) -> bool) -> Json {
        match self.client.wait_note(bound, pred) {
            Ok(m) => m,
            Err(e) => self.fail(e),
        }
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn assert_no_panic(&self) {
        let err = self.stderr.lock().unwrap();
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "the server printed a panic: {err}"
        );
    }

    /// Close the server's stdin (the client went away) without waiting.
    pub fn close_stdin(&mut self) {
        self.client.close();
    }

    /// Close stdin and wait (bounded) for the process to end.
    pub fn close(mut self) -> std::process::ExitStatus {
        self.client.close();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                self.assert_no_panic();
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the server did not exit after its stdin closed; stderr: {}",
                    self.stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `kiwi lsp` in `project`, initialized (rootUri = project), with the canaries in its env.
pub fn lsp(project: &Path, user: &Path) -> Proc {
    lsp_with_env(project, user, &[])
}

/// `kiwi lsp` as [`lsp`], with these variables added to its environment.
pub fn lsp_with_env(project: &Path, user: &Path, env: &[(&str, &str)]) -> Proc {
    let mut cmd = kiwi_command(&["lsp"], project, user);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut p = Proc::spawn(cmd, Peer::Lsp);
    let root = format!("file://{}", project.display());
    let r = p.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "p"}],
            "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
        }),
    );
    assert!(r.get("result").is_some(), "initialize: {r}");
    p.notify("initialized", json!({}));
    p
}

/// `kiwi mcp --project project`, after the initialize handshake.
pub fn mcp(project: &Path, user: &Path) -> Proc {
    mcp_with_env(project, user, &[])
}

/// `kiwi mcp --project project` with these variables added to its environment.
pub fn mcp_with_env(project: &Path, user: &Path, env: &[(&str, &str)]) -> Proc {
    let mut cmd = kiwi_command(
        &["mcp", "--project", project.to_str().unwrap()],
        project,
        user,
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut p = Proc::spawn(cmd, Peer::Mcp);
    let r = p.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(r["result"]["serverInfo"]["name"], "kiwi", "{r}");
    p.notify("notifications/initialized", json!({}));
    p
}

impl Proc {
    /// An MCP tool call: the `result` (a CallToolResult), or panics on a protocol error.
    pub fn call(&mut self, tool: &str, args: Json) -> Json {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        match r.get("result") {
            Some(res) => res.clone(),
            None => panic!("tools/call {tool} {args}: {r}"),
        }
    }

    /// The structured content of a tool result.
    pub fn structured(res: &Json) -> &Json {
        &res["structuredContent"]
    }
}

/// `open` `depth` times, then `close` as many times.
pub fn deep(depth: usize, open: &str, close: &str) -> String {
    format!("{}{}", open.repeat(depth), close.repeat(depth))
}

/// One item of each kind whose file is not valid UTF-8, under `ai` (a project's `.ai/`):
/// `directives/bad_utf8.md`, `tools/text/bad_utf8.py`, `tools/text/bad_utf8.yaml`,
/// `knowledge/bad_utf8.md`.
pub fn write_invalid_utf8_items(ai: &Path) {
    let files: [(&str, &[u8]); 4] = [
        (
            "directives/bad_utf8.md",
            b"# x\n\n```xml\n<directive name=\"bad_utf8\" version=\"1.0.0\">\xff\xfe\xc3\x28</directive>\n```\n",
        ),
        ("tools/text/bad_utf8.py", b"__version__ = \"1\xff\"\n"),
        ("tools/text/bad_utf8.yaml", b"version: \"\xc0\xaf\"\n"),
        (
            "knowledge/bad_utf8.md",
            b"---\nid: bad_utf8\ntitle: \xed\xa0\x80\n---\n",
        ),
    ];
    for (rel, bytes) in files {
        std::fs::write(ai.join(rel), bytes).unwrap();
    }
}
