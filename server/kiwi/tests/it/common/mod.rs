//! Clients for `kiwi lsp` and `kiwi mcp` over the real binary's stdio, for the hostile-input
//! and load tests. Every wait is bounded; stderr is kept so that a test can check that no
//! panic was printed.
#![allow(dead_code)]

use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
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

/// A running server: its stdin, the messages it wrote, and its stderr so far.
pub struct Proc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Result<Json, String>>,
    pub stderr: Arc<Mutex<String>>,
    /// Answers read while waiting for another.
    pending: HashMap<String, Json>,
    /// Notifications and server requests seen.
    pub notes: Vec<Json>,
    next_id: i64,
    lsp: bool,
}

fn key(id: &Json) -> String {
    id.to_string()
}

impl Proc {
    fn spawn(mut cmd: Command, lsp: bool) -> Proc {
        let mut child = cmd.spawn().expect("kiwi starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let msg = if lsp {
                    read_frame(&mut r)
                } else {
                    let mut line = String::new();
                    match r.read_line(&mut line) {
                        Ok(0) | Err(_) => None,
                        Ok(_) => Some(
                            serde_json::from_str::<Json>(&line)
                                .map_err(|e| format!("stdout line is not JSON ({e}): {line}")),
                        ),
                    }
                };
                match msg {
                    Some(m) => {
                        if tx.send(m).is_err() {
                            return;
                        }
                    }
                    None => return,
                }
            }
        });
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
            stdin,
            rx,
            stderr: err,
            pending: HashMap::new(),
            notes: Vec::new(),
            next_id: 1000,
            lsp,
        }
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        let s = self.stdin.as_mut().expect("stdin is open");
        s.write_all(bytes).expect("the server reads its stdin");
        s.flush().unwrap();
    }

    /// Send one message (framed for LSP, a line for MCP).
    pub fn send(&mut self, msg: &Json) {
        let body = msg.to_string();
        if self.lsp {
            self.write_raw(&kiwi_lsp::wire::encode(body.as_bytes()));
        } else {
            self.write_raw(format!("{body}\n").as_bytes());
        }
    }

    pub fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Wait for the answer with this id (the whole message), within `bound`.
    pub fn answer(&mut self, id: &Json, bound: Duration) -> Json {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(m) = self.pending.remove(&key(id)) {
                return m;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Ok(m)) => self.take(m),
                Ok(Err(e)) => panic!("the server wrote a malformed message: {e}"),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no answer to id {id} within {bound:?}; stderr: {}",
                    self.stderr.lock().unwrap()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "the server closed its stdout while id {id} waited; status {:?}; stderr: {}",
                    self.child.try_wait(),
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    /// File a message read from the server.
    fn take(&mut self, m: Json) {
        let is_request = m.get("method").is_some();
        if is_request {
            if let Some(id) = m.get("id").cloned() {
                // A server-to-client request: answer it so that the server is not kept waiting.
                let method = m["method"].as_str().unwrap_or_default().to_string();
                let result = if method == "workspace/configuration" {
                    json!([])
                } else {
                    Json::Null
                };
                if self.lsp || method == "ping" {
                    self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
                } else if method == "roots/list" {
                    self.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}));
                }
            }
            self.notes.push(m);
        } else if let Some(id) = m.get("id") {
            self.pending.insert(key(id), m);
        } else {
            self.notes.push(m);
        }
    }

    /// Send a request and wait for its answer.
    pub fn request(&mut self, method: &str, params: Json) -> Json {
        let id = json!(self.fresh_id());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&id, ANSWER)
    }

    pub fn notify(&mut self, method: &str, params: Json) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Wait until a notification matching `pred` arrives (reads answers into the pending set).
    pub fn wait_note(&mut self, bound: Duration, pred: impl Fn(&Json) -> bool) -> Json {
        let deadline = Instant::now() + bound;
        if let Some(i) = self.notes.iter().position(&pred) {
            return self.notes.remove(i);
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Ok(m)) => {
                    if m.get("id").is_none() && pred(&m) {
                        return m;
                    }
                    self.take(m);
                }
                Ok(Err(e)) => panic!("the server wrote a malformed message: {e}"),
                Err(e) => panic!(
                    "no matching notification within {bound:?} ({e:?}); stderr: {}",
                    self.stderr.lock().unwrap()
                ),
            }
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

    /// Close stdin and wait (bounded) for the process to end.
    /// Close the server's stdin (the client went away) without waiting.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
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

/// One LSP frame from the server; `None` at the end of its stdout.
fn read_frame(r: &mut impl BufRead) -> Option<Result<Json, String>> {
    kiwi_lsp::wire::read(r)
}

/// `kiwi lsp` in `project`, initialized (rootUri = project), with the canaries in its env.
pub fn lsp(project: &Path, user: &Path) -> Proc {
    let mut p = Proc::spawn(kiwi_command(&["lsp"], project, user), true);
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
    let mut p = Proc::spawn(cmd, false);
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
