//! An in-memory LSP client: the server runs on a duplex stream in this process.

#![allow(dead_code)]

use kiwi_lsp::wire::client::{notification, reply, Inbox, Peer};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, Mutex};

pub const TIMEOUT: Duration = Duration::from_secs(20);

static ENV: Once = Once::new();

/// The user space of every test server: an empty folder (set before any server starts).
pub fn init_env() {
    ENV.call_once(|| {
        remove_stale_dirs();
        let dir = scratch().join(format!("kiwi-lsp-test-user-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        // Set once, before any server (and its Host) exists.
        std::env::set_var("KIWI_USERSPACE_DIR", &dir);
        // Where the server writes the diagnostics catalogue its links point to.
        std::env::set_var("XDG_CACHE_HOME", cache_dir());
    });
}

/// The cache directory of every test server.
pub fn cache_dir() -> PathBuf {
    scratch().join(format!("kiwi-lsp-test-cache-{}", std::process::id()))
}

/// Where the test servers' user space and cache live: cargo's scratch folder for integration
/// tests (`target/tmp`), not the system's temporary folder, where they outlived the run.
fn scratch() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// The folders of earlier test processes that are gone (a process cannot remove its own at
/// exit: the servers run until the test binary ends).
fn remove_stale_dirs() {
    let Ok(rd) = std::fs::read_dir(scratch()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("kiwi-lsp-test-user-")
            .or_else(|| name.strip_prefix("kiwi-lsp-test-cache-"));
        if let Some(pid) = pid {
            if pid != std::process::id().to_string() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// A copy of `fixtures/lsp` in a temp dir: (the guard, the project root).
pub fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("proj");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/lsp");
    copy_dir(&src, &root);
    let root = root.canonicalize().expect("canonical");
    (dir, root)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).expect("copy");
        }
    }
}

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, v: &Value) {
    let _ = kiwi_lsp::wire::write_async(w, v).await;
}

/// The next message; `None` at the end (or on a malformed frame).
pub async fn read_frame<R: AsyncBufRead + Unpin>(r: &mut R) -> Option<Value> {
    kiwi_lsp::wire::read_async(r).await?.ok()
}

type Writer = Arc<Mutex<tokio::io::WriteHalf<tokio::io::DuplexStream>>>;

/// The in-process face of the shared wire client (`kiwi_lsp::wire::client`): a task reads
/// the server's frames and answers its requests ([`reply`]); what it read is filed in the
/// same [`Inbox`] as the blocking client's.
pub struct Client {
    writer: Writer,
    rx: mpsc::UnboundedReceiver<Value>,
    /// Answers not asked for yet; notifications and server requests not consumed yet
    /// (`inbox.notes`).
    pub inbox: Inbox,
    server: tokio::task::JoinHandle<()>,
    pub root: PathBuf,
    /// The server's capabilities (from `initialize`).
    pub capabilities: Value,
}

impl Client {
    /// Start a server and initialize it with `root` as the workspace folder.
    pub async fn start(root: &Path, utf8: bool) -> Client {
        Client::start_with(root, utf8, json!({})).await
    }

    /// [`Client::start`], declaring whether the client can watch files
    /// (`didChangeWatchedFiles.dynamicRegistration`; Neovim on Linux cannot).
    pub async fn start_watching(root: &Path, utf8: bool, client_watches: bool) -> Client {
        Client::start_with(
            root,
            utf8,
            json!({"didChangeWatchedFiles": {"dynamicRegistration": client_watches}}),
        )
        .await
    }

    /// [`Client::start`] with more `workspace` capabilities (merged over the usual ones).
    pub async fn start_with(root: &Path, utf8: bool, more_workspace: Value) -> Client {
        init_env();
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server_io);
        let server = tokio::spawn(kiwi_lsp::serve(sr, sw));
        let (cr, cw) = tokio::io::split(client_io);
        let writer: Writer = Arc::new(Mutex::new(cw));
        let (tx, rx) = mpsc::unbounded_channel();
        let w = writer.clone();
        tokio::spawn(async move {
            let mut cr = BufReader::new(cr);
            while let Some(msg) = read_frame(&mut cr).await {
                // A server->client request: answer it at once.
                if let Some(r) = reply(Peer::Lsp, &msg) {
                    write_frame(&mut *w.lock().await, &r).await;
                }
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let mut c = Client {
            writer,
            rx,
            inbox: Inbox::new(1),
            server,
            root: root.to_path_buf(),
            capabilities: Value::Null,
        };
        let encodings = if utf8 {
            json!(["utf-8", "utf-16"])
        } else {
            json!(["utf-16"])
        };
        let mut workspace = json!({
            "didChangeWatchedFiles": {"dynamicRegistration": true},
            "workspaceEdit": {"documentChanges": utf8, "resourceOperations": ["rename"]},
            "inlayHint": {"refreshSupport": true}
        });
        if let (Some(w), Some(more)) = (workspace.as_object_mut(), more_workspace.as_object()) {
            for (k, v) in more {
                w.insert(k.clone(), v.clone());
            }
        }
        let init = c
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri(root),
                    "workspaceFolders": [{"uri": uri(root), "name": "proj"}],
                    "capabilities": {
                        "general": {"positionEncodings": encodings},
                        "window": {"workDoneProgress": true},
                        // Snippets and links to the catalogue in the UTF-8 runs only: both
                        // answers are seen.
                        "textDocument": {
                            "completion": {"completionItem": {"snippetSupport": utf8}},
                            "publishDiagnostics": {"codeDescriptionSupport": utf8}
                        },
                        "workspace": workspace
                    }
                }),
            )
            .await;
        assert!(init.get("result").is_some(), "{init}");
        c.capabilities = init["result"]["capabilities"].clone();
        c.notify("initialized", json!({})).await;
        c
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        write_frame(
            &mut *self.writer.lock().await,
            &notification(method, params),
        )
        .await;
    }

    /// Send a request without waiting; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> i64 {
        let (id, msg) = self.inbox.request(method, params);
        write_frame(&mut *self.writer.lock().await, &msg).await;
        id
    }

    /// The response to request `id` (the whole message).
    pub async fn response(&mut self, id: i64) -> Value {
        if let Some(m) = self.inbox.answer(&json!(id)) {
            return m;
        }
        loop {
            let msg = tokio::time::timeout(TIMEOUT, self.rx.recv())
                .await
                .expect("a response in time")
                .expect("the server is alive");
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                return msg;
            }
            self.inbox.file(msg);
        }
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        self.response(id).await
    }

    /// The `result` of a request (panics on an error response).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params).await;
        assert!(r.get("error").is_none(), "{method}: {r}");
        r["result"].clone()
    }

    /// Wait for a message that satisfies `pred` (consumed), looking at buffered ones first.
    pub async fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(m) = self.inbox.note(&pred) {
            return m;
        }
        loop {
            let msg = tokio::time::timeout(TIMEOUT, self.rx.recv())
                .await
                .expect("the awaited message in time")
                .expect("the server is alive");
            if pred(&msg) {
                return msg;
            }
            self.inbox.file(msg);
        }
    }

    /// The next diagnostics published for `path`.
    pub async fn diagnostics(&mut self, path: &Path) -> Value {
        let u = uri(path);
        self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(u)
        })
        .await["params"]["diagnostics"]
            .clone()
    }

    pub async fn open(&mut self, path: &Path) {
        let text = std::fs::read_to_string(path).expect("read");
        let lang = if path.extension().is_some_and(|e| e == "py") {
            "python"
        } else {
            "markdown"
        };
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": lang, "version": 1, "text": text}}),
        )
        .await;
    }

    /// Wait until the workspace is indexed (the end of the indexing progress).
    pub async fn indexed(&mut self) {
        self.wait_for(|m| {
            m["method"] == "$/progress"
                && m["params"]["value"]["kind"] == "end"
                && m["params"]["token"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("kiwi-index"))
        })
        .await;
    }

    pub async fn shutdown(mut self) {
        let _ = self.request("shutdown", Value::Null).await;
        self.notify("exit", Value::Null).await;
        let _ = tokio::time::timeout(TIMEOUT, self.server).await;
    }

    /// Replace machine-specific paths in a JSON value for snapshots.
    pub fn redact(&self, v: &Value) -> Value {
        let mut s = serde_json::to_string(v).expect("json");
        s = s.replace(&self.root.display().to_string(), "[PROJECT]");
        s = s.replace(&cache_dir().display().to_string(), "[CACHE]");
        if let Ok(p) = which::which("python3") {
            s = s.replace(&p.display().to_string(), "[PYTHON3]");
        }
        serde_json::from_str(&s).expect("json")
    }
}

/// The (line, character) of the first occurrence of `needle` (plus `delta` characters) in
/// `text`, in UTF-8 bytes or UTF-16 units.
pub fn pos(text: &str, needle: &str, delta: usize, utf8: bool) -> Value {
    let at = text.find(needle).expect("needle in text");
    let mut off = at;
    for _ in 0..delta {
        off += text[off..]
            .chars()
            .next()
            .map(|c| c.len_utf8())
            .unwrap_or(0);
    }
    let line_start = text[..off].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line = text[..off].matches('\n').count();
    let col = if utf8 {
        off - line_start
    } else {
        text[line_start..off].encode_utf16().count()
    };
    json!({"line": line, "character": col})
}
