//! The attached agent (issue 27): the MCP server served by a language server on a local
//! endpoint, over the editor's live workspace. The language server gives an [`Editor`]: the
//! item under the author's cursor with its current diagnostics (`kiwi://editor/active`, and
//! the `editor` tool), and a view of the agent's tool runs in the editor (output lines and a
//! progress the author can cancel). Everything else is the `kiwi mcp` server unchanged.
//!
//! The endpoint is a Unix socket (mode 0600) in a private per-user runtime folder (0700):
//! `$XDG_RUNTIME_DIR/kiwi`, else `kiwi-UID` under the temporary folder. Beside each socket a
//! small JSON file names the folders of its language server, for `kiwi mcp --attach` to find
//! it. A connection from another user is refused (`SO_PEERCRED`).

use crate::KiwiServer;
use futures::future::BoxFuture;
use kiwi_kernel::exec::CancellationToken;
use kiwi_kernel::service::Service;
use rmcp::model::*;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The resource of the item under the cursor.
pub const ACTIVE_URI: &str = "kiwi://editor/active";
/// The tool answering the same.
pub const EDITOR_TOOL: &str = "editor";

/// What the editor gives its attached agent.
pub trait Editor: Send + Sync + 'static {
    /// The item under the author's cursor: its document (unsaved text included), the
    /// position, what is under it, and the document's current diagnostics.
    fn active(&self) -> BoxFuture<'static, Json>;
    /// A tool run begins (`title`: what the author sees): its lines go to the editor's
    /// output, and the editor's Cancel fires `cancel`. `None`: the editor shows nothing.
    fn run_started(&self, title: String) -> BoxFuture<'static, Option<EditorRun>>;
}

/// A run shown in the editor.
pub struct EditorRun {
    /// Output lines, then `End` (what the progress ends with).
    pub events: tokio::sync::mpsc::UnboundedSender<RunEvent>,
    /// Fired by the editor's Cancel.
    pub cancel: CancellationToken,
}

pub enum RunEvent {
    Line(String),
    End(String),
}

/// The `editor` tool as listed.
pub fn editor_tool() -> Tool {
    let input = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let Json::Object(input) = input else {
        unreachable!()
    };
    Tool::new(
        EDITOR_TOOL,
        "What the author has in front of them in the editor: the item under the cursor (its type, id, space, path and the text of the line), whether its document has unsaved changes, and its current diagnostics. The same as resources/read kiwi://editor/active.",
        Arc::new(input),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

/// The private folder of the endpoints: `$XDG_RUNTIME_DIR/kiwi` (the runtime folder is the
/// user's alone), else `kiwi-UID` under the temporary folder; created 0700, and refused when
/// it belongs to another user or others may enter it.
pub fn runtime_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = uid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) if Path::new(&d).is_dir() => PathBuf::from(d).join("kiwi"),
        _ => std::env::temp_dir().join(format!("kiwi-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = std::fs::symlink_metadata(&dir)?;
    if !m.is_dir() || m.uid() != uid {
        return Err(std::io::Error::other(format!(
            "{} is not a folder of this user: refused as the place of the agent endpoint",
            dir.display()
        )));
    }
    if m.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(dir)
}

/// This process's user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// A listening endpoint: its socket and the file naming it, both removed when dropped.
pub struct Endpoint {
    pub socket: PathBuf,
    pub info: PathBuf,
    listener: Option<tokio::net::UnixListener>,
}

impl Endpoint {
    /// Bind a new socket in [`runtime_dir`] (mode 0600) for a language server of `folders`.
    pub fn bind(folders: &[PathBuf]) -> std::io::Result<Endpoint> {
        use std::os::unix::fs::PermissionsExt;
        let dir = runtime_dir()?;
        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = dir.join(format!("lsp-{pid}-{n}.sock"));
        let info = dir.join(format!("lsp-{pid}-{n}.json"));
        let _ = std::fs::remove_file(&socket);
        // Bound inside a 0700 folder, then narrowed to 0600: no other user can reach it
        // between the two.
        let listener = tokio::net::UnixListener::bind(&socket)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let body = json!({
            "socket": socket,
            "pid": pid,
            "folders": folders,
        });
        let tmp = info.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&body).unwrap_or_default())?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, &info)?;
        Ok(Endpoint {
            socket,
            info,
            listener: Some(listener),
        })
    }

    /// Serve the attached MCP server on this endpoint until dropped (the caller aborts the
    /// task): each connection of this user is one MCP session over `service`.
    pub async fn serve(mut self, service: Arc<Service>, editor: Arc<dyn Editor>) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let me = uid();
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of file descriptors, say: try again a little later, not in a loop.
                    tracing::warn!("agent endpoint: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
            };
            match stream.peer_cred() {
                Ok(c) if c.uid() == me => {}
                Ok(c) => {
                    tracing::warn!("agent endpoint: refused a connection of uid {}", c.uid());
                    continue;
                }
                Err(e) => {
                    tracing::warn!("agent endpoint: refused a connection ({e})");
                    continue;
                }
            }
            let server = KiwiServer::attached(service.clone(), editor.clone());
            tokio::spawn(async move {
                let (r, w) = stream.into_split();
                if let Err(e) = crate::serve_io(server, r, w).await {
                    tracing::warn!("agent endpoint: a session ended: {e}");
                }
            });
        }
    }
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.info);
    }
}

/// Remove the socket and info file of `socket` (the language server's exit).
pub fn remove(socket: &Path) {
    let _ = std::fs::remove_file(socket);
    let _ = std::fs::remove_file(socket.with_extension("json"));
}

/// The socket of the language server whose folders hold `dir` (the deepest folder wins,
/// then the newest server), among the live ones of this user. A file left by a server that
/// is gone is removed.
pub fn find_socket(dir: &Path) -> Result<PathBuf, String> {
    let rt = runtime_dir().map_err(|e| format!("no agent endpoint folder: {e}"))?;
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut best: Option<(usize, std::time::SystemTime, PathBuf)> = None;
    let mut seen = 0;
    for e in std::fs::read_dir(&rt).map_err(|e| format!("{}: {e}", rt.display()))? {
        let Ok(e) = e else { continue };
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let Ok(v) = std::fs::read(&p).map(|b| serde_json::from_slice::<Json>(&b)) else {
            continue;
        };
        let Ok(v) = v else { continue };
        let (Some(socket), Some(pid)) = (v["socket"].as_str(), v["pid"].as_u64()) else {
            continue;
        };
        if !pid_alive(pid) || !Path::new(socket).exists() {
            remove(Path::new(socket));
            continue;
        }
        seen += 1;
        let depth = v["folders"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .map(|f| {
                let f = Path::new(f);
                f.canonicalize().unwrap_or_else(|_| f.to_path_buf())
            })
            .filter(|f| dir.starts_with(f))
            .map(|f| f.components().count())
            .max();
        let Some(depth) = depth else { continue };
        let when = e
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if best
            .as_ref()
            .is_none_or(|(d, w, _)| (depth, when) > (*d, *w))
        {
            best = Some((depth, when, PathBuf::from(socket)));
        }
    }
    best.map(|(_, _, s)| s).ok_or_else(|| {
        format!(
            "no kiwi language server is running for {} ({seen} running for other folders): open the folder in an editor with the kiwi extension (its `kiwi lsp` serves the agent endpoint), or give --socket PATH; `kiwi mcp` without --attach reads the files on disk",
            dir.display()
        )
    })
}

fn pid_alive(pid: u64) -> bool {
    // SAFETY: signal 0 only asks whether the process exists.
    i32::try_from(pid).is_ok_and(|p| unsafe { libc::kill(p, 0) } == 0)
}

/// `kiwi mcp --attach`: copy stdin to the socket and the socket to stdout until either ends.
pub async fn bridge(socket: &Path) -> Result<(), String> {
    let stream = tokio::net::UnixStream::connect(socket).await.map_err(|e| {
        format!(
            "cannot connect to the agent endpoint {}: {e} (is its language server still running?)",
            socket.display()
        )
    })?;
    let (mut r, mut w) = stream.into_split();
    let up = async {
        let mut stdin = tokio::io::stdin();
        let _ = tokio::io::copy(&mut stdin, &mut w).await;
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
    };
    let down = async {
        let mut stdout = tokio::io::stdout();
        let _ = tokio::io::copy(&mut r, &mut stdout).await;
        let _ = tokio::io::AsyncWriteExt::flush(&mut stdout).await;
    };
    // The server closing ends the bridge; stdin closing lets the answers still under way
    // come back first.
    tokio::pin!(down);
    tokio::select! {
        _ = &mut down => {}
        _ = up => { let _ = tokio::time::timeout(std::time::Duration::from_secs(5), down).await; }
    }
    Ok(())
}

/// A token fired when any of three fires (the request's, the editor's Cancel, the
/// connection's end); the watching task ends with the run.
pub(crate) fn either(
    a: &CancellationToken,
    b: &CancellationToken,
    c: &CancellationToken,
) -> CancellationToken {
    let out = CancellationToken::new();
    let (a, b, c, o) = (a.clone(), b.clone(), c.clone(), out.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = a.cancelled() => o.cancel(),
            _ = b.cancelled() => o.cancel(),
            _ = c.cancelled() => o.cancel(),
            _ = o.cancelled() => {}
        }
    });
    out
}

/// A run's output as whole lines for the editor (as its own ▶ Run shows them).
pub(crate) struct LineSink {
    events: tokio::sync::mpsc::UnboundedSender<RunEvent>,
    partial: std::sync::Mutex<Vec<u8>>,
}

impl LineSink {
    pub(crate) fn new(events: tokio::sync::mpsc::UnboundedSender<RunEvent>) -> Self {
        LineSink {
            events,
            partial: Default::default(),
        }
    }

    pub(crate) fn output(&self, stream: kiwi_kernel::exec::Stream, bytes: &[u8], newline: bool) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        partial.extend_from_slice(bytes);
        if newline {
            let line = String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned();
            let line = match stream {
                kiwi_kernel::exec::Stream::Stderr => format!("[stderr] {line}"),
                _ => line,
            };
            let _ = self.events.send(RunEvent::Line(line));
        }
    }

    pub(crate) fn flush(&self) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if !partial.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned();
            let _ = self.events.send(RunEvent::Line(line));
        }
    }
}

impl KiwiServer {
    /// The tools listed: the four meta-tools, and `editor` when attached.
    pub(crate) fn tool_list(&self) -> Vec<Tool> {
        let extra = self.service.extra_space_names();
        let mut v = crate::tools_for(&extra);
        if self.editor.is_some() {
            v.push(editor_tool());
        }
        v
    }

    /// The `editor` tool of an attached server (`None`: another tool, or not attached).
    pub(crate) async fn editor_call(
        &self,
        name: &str,
        args: &JsonObject,
    ) -> Option<Result<CallToolResult, rmcp::ErrorData>> {
        let editor = self.editor.as_ref().filter(|_| name == EDITOR_TOOL)?;
        if let Some(k) = args.keys().next() {
            let body = kiwi_kernel::service::OpError::new(
                "invalid_arguments",
                format!("the editor tool takes no arguments (got `{k}`)"),
            )
            .redacted(&self.service.secrets())
            .to_json();
            return Some(Ok(CallToolResult::structured_error(body)));
        }
        let v = self.service.secrets().redact_json(editor.active().await);
        Some(Ok(CallToolResult::structured(v)))
    }

    /// `kiwi://editor/active` read from an attached server.
    pub(crate) async fn editor_read(
        &self,
        uri: &str,
    ) -> Option<Result<ReadResourceResult, rmcp::ErrorData>> {
        if uri != ACTIVE_URI {
            return None;
        }
        let Some(editor) = &self.editor else {
            return Some(Err(rmcp::ErrorData::resource_not_found(
                format!("{ACTIVE_URI} is served by the server attached to an editor (kiwi mcp --attach)"),
                None,
            )));
        };
        let v = self.service.secrets().redact_json(editor.active().await);
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        Some(Ok(ReadResourceResult::new(vec![ResourceContents::text(
            text, uri,
        )
        .with_mime_type("application/json")])))
    }

    /// The resources listed, `kiwi://editor/active` first when attached.
    pub(crate) fn editor_resources(&self, mut list: Vec<Resource>) -> Vec<Resource> {
        if self.editor.is_some() {
            list.insert(
                0,
                Resource::new(ACTIVE_URI, "editor/active")
                    .with_mime_type("application/json")
                    .with_description(
                        "The item under the author's cursor in the editor, with its unsaved state and current diagnostics",
                    ),
            );
        }
        list
    }
}
