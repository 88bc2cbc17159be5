//! The attached agent (issue 27): this language server serves MCP on a local endpoint
//! (`kiwi_mcp::attach`) over its live workspace. The MCP service reads the open documents
//! from this session's kernel set (the unsaved text, parsed as the editor's requests see it:
//! [`LiveDocs`]); the item under the cursor is the one of the last request that had a
//! position (hover, completion, definition, ...) or of the editor packages' `kiwi/activeItem`
//! notification; the agent's tool runs report into the editor as `▶ Run` does (log lines and
//! a cancellable progress), and the progress's Cancel stops them.

use crate::convert::{to_path, to_uri};
use crate::progress::token_key;
use crate::session::{Backend, Key, Shared};
use futures::future::BoxFuture;
use futures::FutureExt;
use kiwi_kernel::exec::CancellationToken;
use kiwi_kernel::workspace::Item;
use kiwi_mcp::attach::{EditorRun, Endpoint, RunEvent};
use serde_json::{json, Value as Json};
use std::path::PathBuf;
use std::sync::Arc;
use tower_lsp_server::ls_types::{MessageType, Position, Uri};

/// `kiwi/agentRun` (`{token, title}`): an agent's run began, its progress is `token`.
enum AgentRunNote {}

impl tower_lsp_server::ls_types::notification::Notification for AgentRunNote {
    type Params = Json;
    const METHOD: &'static str = "kiwi/agentRun";
}

/// Where the author's cursor was last seen.
#[derive(Clone)]
pub(crate) struct Cursor {
    pub path: PathBuf,
    pub position: Option<Position>,
}

/// The session's open documents, as the kernel's service reads them.
struct LiveDocs(Arc<Shared>);

impl kiwi_kernel::service::OpenDocuments for LiveDocs {
    fn open_items(&self, project: &Key) -> Vec<(PathBuf, Option<Arc<Item>>)> {
        let st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        let ws = st.set.get(project);
        st.docs
            .iter()
            .filter(|(_, d)| d.key == *project)
            .map(|(p, _)| (p.clone(), ws.and_then(|w| w.item(p)).cloned()))
            .collect()
    }
}

/// The editor as its attached agent sees it.
struct EditorView(Backend);

impl kiwi_mcp::attach::Editor for EditorView {
    fn active(&self) -> BoxFuture<'static, Json> {
        let b = self.0.clone();
        async move { active(&b).await }.boxed()
    }

    fn run_started(&self, title: String) -> BoxFuture<'static, Option<EditorRun>> {
        let b = self.0.clone();
        async move { run_started(b, title).await }.boxed()
    }
}

impl Backend {
    /// Note where the author's cursor is (a request or notification naming a position).
    pub(crate) fn note_cursor(&self, uri: &Uri, position: Option<Position>) {
        let Some(path) = to_path(uri) else { return };
        let mut c = self.shared.cursor.lock().unwrap_or_else(|e| e.into_inner());
        // A request about the whole document keeps the position known in it.
        let position = position.or_else(|| {
            c.as_ref()
                .filter(|c| c.path == path)
                .and_then(|c| c.position)
        });
        *c = Some(Cursor { path, position });
    }

    /// Start the agent endpoint (once, after `initialized`); a failure is logged, the
    /// language server goes on without it.
    pub(crate) async fn start_agent_endpoint(&self) {
        let failed = || {
            self.shared
                .endpoint_failed
                .store(true, std::sync::atomic::Ordering::Relaxed)
        };
        if std::env::var_os("KIWI_NO_AGENT_ENDPOINT").is_some() {
            failed();
            return;
        }
        let (folders, host) = {
            let st = self.lock();
            (st.folders.clone(), st.set.host().clone())
        };
        let endpoint = match Endpoint::bind(&folders) {
            Ok(e) => e,
            Err(e) => {
                failed();
                self.client
                    .log_message(
                        MessageType::WARNING,
                        format!("kiwi: the agent endpoint could not start: {e}"),
                    )
                    .await;
                return;
            }
        };
        let socket = endpoint.socket.clone();
        let project = folders
            .iter()
            .find_map(|f| kiwi_kernel::workspace_set::WorkspaceSet::project_of_folder(f));
        let service = kiwi_kernel::service::Service::new(project, host)
            .with_open_documents(Arc::new(LiveDocs(self.shared.clone())));
        let service = Arc::new(service);
        let editor: Arc<dyn kiwi_mcp::attach::Editor> = Arc::new(EditorView(self.clone()));
        let task = tokio::spawn(endpoint.serve(service, editor));
        *self
            .shared
            .endpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((socket.clone(), task));
        self.client
            .log_message(
                MessageType::INFO,
                format!("kiwi: agent endpoint (MCP) at {}", socket.display()),
            )
            .await;
    }
}

impl Backend {
    /// The agent endpoint's socket, once `initialized` started it (waited for a little: the
    /// editor asks right after starting the server).
    pub(crate) async fn agent_socket(&self) -> Option<PathBuf> {
        for _ in 0..50 {
            if let Some((s, _)) = &*self
                .shared
                .endpoint
                .lock()
                .unwrap_or_else(|e| e.into_inner())
            {
                return Some(s.clone());
            }
            if self
                .shared
                .endpoint_failed
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        None
    }
}

/// Stop the agent endpoint and remove its socket (the server's shutdown or exit).
pub(crate) fn stop_agent_endpoint(shared: &Shared) {
    if let Some((socket, task)) = shared
        .endpoint
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        task.abort();
        kiwi_mcp::attach::remove(&socket);
    }
}

/// `kiwi://editor/active`: the item under the cursor, whether its document holds unsaved
/// changes, what is under the cursor (the hover's text) and its current diagnostics.
async fn active(b: &Backend) -> Json {
    let cursor = b
        .shared
        .cursor
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let Some(cursor) = cursor else {
        return json!({"active": null, "message": "the author has no Kiwi item open in the editor (or has not moved the cursor in one yet)"});
    };
    let Some(uri) = to_uri(&cursor.path) else {
        return json!({"active": null});
    };
    let open = b.lock().docs.contains_key(&cursor.path);
    let Some(snap) = b.snapshot(&uri).await else {
        return json!({"active": null, "path": cursor.path, "message": "the document under the cursor is not a Kiwi item"});
    };
    let pos = cursor.position;
    let offset = pos.map(|p| snap.offset(p));
    let (ws, item) = (snap.ws.clone(), snap.item.clone());
    let computed = crate::task::blocking(move || {
        let diags = kiwi_kernel::check::check_item(&ws, &item);
        let list = kiwi_kernel::diag::view::DiagnosticView::json(
            kiwi_kernel::diag::view::FileText::of_item(&item),
            &diags,
        );
        let hover = offset.and_then(|o| kiwi_kernel::ide::hover(&ws, &item, o));
        let line = offset.map(|o| {
            let text = item.text();
            let o = o.min(text.len());
            let start = text[..o].rfind('\n').map_or(0, |i| i + 1);
            let end = text[o..].find('\n').map_or(text.len(), |i| o + i);
            text[start..end].to_string()
        });
        let unsaved = std::fs::read(&item.path).map_or(true, |d| d != item.text().as_bytes());
        (list, hover.map(|h| h.markdown), line, unsaved)
    })
    .await;
    let Ok((diagnostics, hover, line, unsaved)) = computed else {
        return json!({"active": null, "message": "kiwi hit a bug reading the item under the cursor"});
    };
    let item = &snap.item;
    json!({
        "active": {
            "item_type": item.item_type.as_str(),
            "id": item.id,
            "space": item.space.as_str(),
            "path": item.path,
            "uri": uri.as_str(),
            "open_in_editor": open,
            "unsaved_changes": open && unsaved,
            "position": pos.map(|p| json!({"line": p.line, "character": p.character})),
            "line_text": line,
            "under_cursor": hover,
        },
        "diagnostics": diagnostics,
    })
}

/// An agent's tool run shown in the editor: a progress (cancellable, when the client
/// supports server-created progress) and each output line in the log, as `▶ Run` shows its
/// own.
async fn run_started(b: Backend, title: String) -> Option<EditorRun> {
    // A client that shows agent runs itself takes the token from `kiwi/agentRun`; the
    // others get a server-created progress.
    let token = if b.lock().caps.agent_runs {
        let n = b
            .shared
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(tower_lsp_server::ls_types::NumberOrString::String(format!(
            "kiwi-agent-run-{n}"
        )))
    } else {
        b.token(None, "agent-run").await
    };
    let cancel = CancellationToken::new();
    let key = token.as_ref().map(token_key);
    if let (Some(t), Some(k)) = (&token, &key) {
        b.shared.cancels().insert(k.clone(), cancel.clone());
        // The editor packages show it as their own runs (the output channel, a notification
        // with Cancel); a client that does not know it shows the progress alone.
        b.client
            .send_notification::<AgentRunNote>(json!({"token": t, "title": title}))
            .await;
        b.progress_begin(t, &title, true).await;
    }
    b.client
        .log_message(MessageType::LOG, format!("▶ {title}"))
        .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<RunEvent>();
    tokio::spawn(async move {
        let mut end = "ended".to_string();
        while let Some(e) = rx.recv().await {
            match e {
                RunEvent::Line(line) => {
                    if let Some(t) = &token {
                        b.progress_report(t, line.clone()).await;
                    }
                    b.client.log_message(MessageType::LOG, line).await;
                }
                RunEvent::End(m) => {
                    end = m;
                    break;
                }
            }
        }
        if let Some(k) = &key {
            b.shared.cancels().remove(k);
        }
        if let Some(t) = &token {
            b.progress_end(t, end.clone()).await;
        }
        b.client
            .log_message(MessageType::LOG, format!("■ {title}: {end}"))
            .await;
    });
    Some(EditorRun { events: tx, cancel })
}
