//! The backend: state, the `LanguageServer` implementation, commands.

use crate::convert::{self, to_path, to_uri};
use kiwi_kernel::check::check_item;
use kiwi_kernel::context::Host;
use kiwi_kernel::diag;
use kiwi_kernel::document::Document;
use kiwi_kernel::exec::{self, CancellationToken, OutputSink, Stream};
use kiwi_kernel::ide;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::text::{Encoding, SourceText, TextRange};
use kiwi_kernel::workspace::{Item, Lookup, Workspace};
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

mod nav;

/// How long after a change the items that reference the changed one are re-checked, when
/// no further change came meanwhile.
const DEPENDENTS_DELAY: Duration = Duration::from_millis(150);

/// Which workspace a file belongs to: `Some(project root)`, or `None` for the user space.
type Key = Option<PathBuf>;

struct Doc {
    /// The text and its syntax tree, re-parsed incrementally on each change.
    doc: Document,
    version: i32,
    key: Key,
}

#[derive(Default, Clone, Copy)]
struct Caps {
    watch_dynamic: bool,
    work_done: bool,
    inlay_refresh: bool,
    lens_refresh: bool,
    /// `completionItem.snippetSupport`: attribute completions are snippets, else plain text.
    snippets: bool,
    /// `publishDiagnostics.codeDescriptionSupport`: diagnostics link to the catalogue.
    code_description: bool,
    /// `workspaceEdit.documentChanges`, and `resourceOperations` holding `rename`: a rename
    /// moves the item's file in the same edit.
    document_changes: bool,
    rename_files: bool,
}

struct State {
    enc: Encoding,
    caps: Caps,
    folders: Vec<PathBuf>,
    docs: HashMap<PathBuf, Doc>,
    spaces: HashMap<Key, Arc<Workspace>>,
    /// Workspaces whose full load has started.
    loading: HashSet<Key>,
    /// Workspaces fully loaded (before that, diagnostics would be wrong: they wait).
    loaded: HashSet<Key>,
    /// Bumped on every change of a document: a diagnostics job publishes only if the
    /// generation it computed for is still current.
    generation: HashMap<PathBuf, u64>,
}

struct Shared {
    state: Mutex<State>,
    host: Host,
    cancels: Mutex<HashMap<String, CancellationToken>>,
    counter: AtomicU64,
    /// Woken each time a workspace finishes loading (commands wait for their workspace).
    loaded_notify: tokio::sync::Notify,
}

#[derive(Clone)]
pub struct Backend {
    client: Client,
    shared: Arc<Shared>,
}

/// Turn a panic inside a handler into an error response (the server lives on).
async fn guard<T>(fut: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(p) => Err(panic_error(p)),
    }
}

/// A refused or failed run as `kiwi.runTool` answers it: the message (with the diagnostics
/// that refused it, one per line) and the diagnostics as data.
fn run_error(e: &exec::ExecError) -> Json {
    let mut v = json!({"kind": e.kind, "message": e.to_string()});
    if !e.diagnostics.is_empty() {
        v["diagnostics"] = json!(e.diagnostics);
    }
    json!({ "error": v })
}

fn panic_error(p: Box<dyn std::any::Any + Send>) -> jsonrpc::Error {
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into());
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InternalError,
        message: format!("internal error: {msg}").into(),
        data: None,
    }
}

/// Run CPU or file-system work on the blocking pool; a panic there is an error response.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_panic() => Err(panic_error(e.into_panic())),
        Err(_) => Err(jsonrpc::Error::request_cancelled()),
    }
}

/// A snapshot for one request.
struct Snap {
    ws: Arc<Workspace>,
    item: Arc<Item>,
    enc: Encoding,
}

impl Backend {
    pub fn new(client: Client) -> Self {
        Backend {
            client,
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    enc: Encoding::Utf16,
                    caps: Caps::default(),
                    folders: Vec::new(),
                    docs: HashMap::new(),
                    spaces: HashMap::new(),
                    loading: HashSet::new(),
                    loaded: HashSet::new(),
                    generation: HashMap::new(),
                }),
                host: Host::from_process(),
                cancels: Mutex::new(HashMap::new()),
                counter: AtomicU64::new(0),
                loaded_notify: tokio::sync::Notify::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic happened while it was held; the state is
        // still usable (every mutation is a single insert or replace).
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The workspace a path belongs to: the user space, or the project holding the `.ai/`
    /// folder it is in. `None` for files outside any `.ai/` (ignored quietly).
    fn key_for(&self, path: &Path) -> Option<Key> {
        let user = self.shared.host.user_space();
        if path.starts_with(&user) {
            return Some(None);
        }
        for anc in path.ancestors() {
            if anc.file_name().is_some_and(|n| n == ".ai") {
                return Some(Some(anc.parent()?.to_path_buf()));
            }
        }
        None
    }

    /// The paths of the items a workspace checks (its own space), parsed if need be.
    fn item_paths(st: &State, key: &Key) -> Vec<PathBuf> {
        let space = Self::primary_space(key);
        st.spaces
            .get(key)
            .map(|ws| {
                ws.items_in(space)
                    .into_iter()
                    .map(|i| i.path.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn primary_space(key: &Key) -> Space {
        if key.is_some() {
            Space::Project
        } else {
            Space::User
        }
    }

    /// Make sure a workspace exists for `key` (an empty one at first) and that its full
    /// load is under way. Returns whether a load must be started.
    fn ensure_ws(&self, st: &mut State, key: &Key) -> bool {
        if !st.spaces.contains_key(key) {
            st.spaces.insert(
                key.clone(),
                Arc::new(Workspace::new(key.clone(), self.shared.host.clone())),
            );
        }
        st.loading.insert(key.clone())
    }

    /// Re-parse an open document into its workspace (synchronous, under the lock).
    fn apply_doc(st: &mut State, path: &Path) {
        let State { docs, spaces, .. } = st;
        let Some(doc) = docs.get_mut(path) else {
            return;
        };
        let Some(ws) = spaces.get_mut(&doc.key) else {
            return;
        };
        let Some((space, item_type, id)) = ws.classify(path) else {
            return;
        };
        // The kernel's parsers never panic; should one, the document keeps its last good item
        // (and parses afresh next time) instead of the notification taking the server down.
        let document = &mut doc.doc;
        let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            document.parse(item_type, id, space, path.to_path_buf())
        }));
        let Ok(parsed) = parsed else {
            doc.doc.set_text(doc.doc.text().to_string());
            return;
        };
        let ws = Arc::make_mut(ws);
        match parsed {
            Some(mut item) => {
                if let Some(old) = ws.item(path) {
                    item.script = old.script.clone();
                }
                ws.insert(Arc::new(item));
            }
            None => {
                ws.remove(path);
            }
        }
    }

    /// A snapshot of the document's item and its workspace, once the workspace is loaded:
    /// before that it holds only the open documents and the builtin items, and every answer
    /// (a shadowed runtime, a missing tool, lenses without `▶ Run step`, a short completion
    /// list) would be wrong. Requests wait as commands do (bounded by [`Self::wait_loaded`]).
    async fn snapshot(&self, uri: &Uri) -> Option<Snap> {
        let path = to_path(uri)?;
        let key = self.key_for(&path)?;
        self.wait_loaded(Some(&path)).await;
        let st = self.lock();
        let ws = st.spaces.get(&key)?.clone();
        let item = ws.item(&path)?.clone();
        Some(Snap {
            ws,
            item,
            enc: st.enc,
        })
    }

    fn offset(snap: &Snap, pos: Position) -> usize {
        convert::offset(&snap.item.source, pos, snap.enc)
    }

    fn lsp_range(snap: &Snap, r: TextRange) -> Range {
        convert::range(&snap.item.source, r, snap.enc)
    }

    // -----------------------------------------------------------------------------------
    // loading and diagnostics

    fn start_load(&self, key: Key) {
        let this = self.clone();
        tokio::spawn(async move {
            this.load(key, None).await;
        });
    }

    /// Load a workspace fully (in the background), merge the open documents, publish the
    /// diagnostics of its own items.
    async fn load(&self, key: Key, progress: Option<(&ProgressToken, String)>) {
        if let Some((t, msg)) = &progress {
            self.progress_report(t, msg.clone()).await;
        }
        let started = std::time::Instant::now();
        let host = self.shared.host.clone();
        let k = key.clone();
        let Ok(ws) = blocking(move || {
            let ws = Workspace::load(k, host);
            // Parse everything here, on the blocking pool (items are parsed on first use).
            ws.load_all();
            ws
        })
        .await
        else {
            return;
        };
        let loaded_in = started.elapsed();
        // A configured extra space that is missing (or a config.yaml that cannot be read):
        // shown once per load, never a reason to stop.
        let problems = ws.space_problems.clone();
        let paths = {
            let mut st = self.lock();
            st.spaces.insert(key.clone(), Arc::new(ws));
            st.loaded.insert(key.clone());
            let open: Vec<PathBuf> = st
                .docs
                .iter()
                .filter(|(_, d)| d.key == key)
                .map(|(p, _)| p.clone())
                .collect();
            for p in &open {
                Self::apply_doc(&mut st, p);
            }
            Self::item_paths(&st, &key)
        };
        self.shared.loaded_notify.notify_waiters();
        let n = paths.len();
        let what = match &key {
            Some(p) => p.display().to_string(),
            None => "the user space".into(),
        };
        self.publish(key, paths, None).await;
        // Checking every item allocated and freed a lot; give that back now.
        kiwi_kernel::workspace::release_free_memory();
        self.client
            .log_message(
                MessageType::LOG,
                format!(
                    "kiwi: indexed {n} items of {what}: read and parsed in {} ms, checked and published in {} ms",
                    loaded_in.as_millis(),
                    (started.elapsed() - loaded_in).as_millis()
                ),
            )
            .await;
        for p in problems {
            self.client
                .show_message(MessageType::WARNING, format!("kiwi: {p}"))
                .await;
        }
    }

    /// Compute and publish the diagnostics of these items of workspace `key`. When
    /// `only_if` is given (a path and its generation), that path's result is dropped if
    /// the document changed meanwhile.
    async fn publish(&self, key: Key, paths: Vec<PathBuf>, only_if: Option<(PathBuf, u64)>) {
        let (ws, enc, versions, code_description) = {
            let st = self.lock();
            if let Some((p, g)) = &only_if {
                if st.generation.get(p).copied().unwrap_or(0) != *g {
                    return; // a later change has its own job
                }
            }
            let Some(ws) = st.spaces.get(&key).cloned() else {
                return;
            };
            let versions: HashMap<PathBuf, i32> = paths
                .iter()
                .filter_map(|p| st.docs.get(p).map(|d| (p.clone(), d.version)))
                .collect();
            (ws, st.enc, versions, st.caps.code_description)
        };
        let computed = blocking(move || {
            let mut out = Vec::new();
            let items: Vec<Arc<Item>> = paths.iter().filter_map(|p| ws.item(p).cloned()).collect();
            // In parallel: the whole workspace is checked after indexing.
            let all = kiwi_kernel::check::check_items(&ws, &items);
            let mut by_path: HashMap<&Path, (&Arc<Item>, &Vec<diag::Diagnostic>)> = items
                .iter()
                .zip(all.iter())
                .map(|(i, d)| (i.path.as_path(), (i, d)))
                .collect();
            for p in &paths {
                let Some(uri) = to_uri(p) else { continue };
                let Some((item, diags)) = by_path.remove(p.as_path()) else {
                    // Not an item (any more): clear what was published.
                    out.push((uri, p.clone(), Vec::new()));
                    continue;
                };
                let other = |q: &Path| ws.item(q).map(|i| i.source.clone());
                let lsp: Vec<Diagnostic> = diags
                    .iter()
                    .map(|d| convert::diagnostic(&item.source, p, d, enc, &other))
                    .map(|mut d| {
                        if !code_description {
                            d.code_description = None;
                        }
                        d
                    })
                    .collect();
                out.push((uri, p.clone(), lsp));
            }
            out
        })
        .await;
        let Ok(computed) = computed else { return };
        for (uri, path, diags) in computed {
            if let Some((p, g)) = &only_if {
                if *p == path && self.lock().generation.get(p).copied().unwrap_or(0) != *g {
                    continue;
                }
            }
            let version = versions.get(&path).copied();
            self.client.publish_diagnostics(uri, diags, version).await;
        }
    }

    /// Re-check in a task of its own, so that the handler returns at once and a burst of
    /// changes does not hold up the requests behind it.
    fn spawn_recheck(&self, path: PathBuf) {
        let this = self.clone();
        tokio::spawn(async move { this.recheck(path).await });
    }

    /// After a change to `path`: re-check it at once, then the items that may reference it
    /// (finding those scans the workspace: the changed document's own diagnostics do not
    /// wait for it, and a later change makes both steps stop early).
    async fn recheck(&self, path: PathBuf) {
        let Some((key, gen)) = self.current(&path) else {
            return;
        };
        self.publish(key.clone(), vec![path.clone()], Some((path.clone(), gen)))
            .await;
        // While the author types, each change supersedes the last: the items around wait
        // for a pause (and never compete for the CPU with the document being edited).
        tokio::time::sleep(DEPENDENTS_DELAY).await;
        let ws = {
            let st = self.lock();
            if st.generation.get(&path).copied().unwrap_or(0) != gen {
                return; // superseded: the later change re-checks
            }
            let Some(ws) = st.spaces.get(&key).cloned() else {
                return;
            };
            ws
        };
        let p = path.clone();
        let Ok(targets) = blocking(move || ws.dependents(&p)).await else {
            return;
        };
        if !targets.is_empty() {
            self.publish(key, targets, Some((path, gen))).await;
        }
    }

    /// The workspace key and generation of an open document, when its workspace is loaded
    /// (before that, the load publishes every item when it is done).
    fn current(&self, path: &Path) -> Option<(Key, u64)> {
        let st = self.lock();
        let doc = st.docs.get(path)?;
        if !st.loaded.contains(&doc.key) {
            return None;
        }
        let gen = st.generation.get(path).copied().unwrap_or(0);
        Some((doc.key.clone(), gen))
    }

    async fn progress_begin(&self, token: &ProgressToken, title: &str, cancellable: bool) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(
                    WorkDoneProgressBegin {
                        title: title.to_string(),
                        cancellable: Some(cancellable),
                        message: None,
                        percentage: None,
                    },
                )),
            })
            .await;
    }

    async fn progress_report(&self, token: &ProgressToken, message: String) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Report(
                    WorkDoneProgressReport {
                        message: Some(message),
                        ..Default::default()
                    },
                )),
            })
            .await;
    }

    async fn progress_end(&self, token: &ProgressToken, message: String) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(message),
                })),
            })
            .await;
    }

    /// A progress token: the client's, else a new one if the client supports it.
    async fn token(&self, given: Option<ProgressToken>, prefix: &str) -> Option<ProgressToken> {
        if given.is_some() {
            return given;
        }
        if !self.lock().caps.work_done {
            return None;
        }
        let n = self.shared.counter.fetch_add(1, Ordering::Relaxed);
        let t = NumberOrString::String(format!("kiwi-{prefix}-{n}"));
        match tokio::time::timeout(
            Duration::from_secs(5),
            self.client.create_work_done_progress(t.clone()),
        )
        .await
        {
            Ok(Ok(())) => Some(t),
            _ => None,
        }
    }

    /// Claim the workspaces of the folders for indexing: they count as loading from here on,
    /// so a command that arrives before [`Self::index`] runs waits for them (it used to find
    /// nothing loading and answer "no tool" from an empty workspace).
    fn claim_index(&self) -> (Vec<Key>, Caps) {
        {
            let mut st = self.lock();
            let mut keys: Vec<Key> = Vec::new();
            for f in st.folders.clone() {
                let root = if f.join(".ai").is_dir() {
                    Some(f.clone())
                } else {
                    kiwi_kernel::context::find_project_root(&f)
                };
                if let Some(r) = root {
                    if !keys.contains(&Some(r.clone())) {
                        keys.push(Some(r));
                    }
                }
            }
            if self.shared.host.user_space().is_dir() {
                keys.push(None);
            }
            let keys: Vec<Key> = keys
                .into_iter()
                .filter(|k| {
                    // Loads started by a didOpen already cover their workspace.
                    if st.loading.contains(k) {
                        false
                    } else {
                        st.loading.insert(k.clone());
                        if !st.spaces.contains_key(k) {
                            st.spaces.insert(
                                k.clone(),
                                Arc::new(Workspace::new(k.clone(), self.shared.host.clone())),
                            );
                        }
                        true
                    }
                })
                .collect();
            (keys, st.caps)
        }
    }

    async fn index(&self, keys: Vec<Key>, caps: Caps) {
        let token = if caps.work_done {
            self.token(None, "index").await
        } else {
            None
        };
        if let Some(t) = &token {
            self.progress_begin(t, "Indexing Kiwi items", false).await;
        }
        for key in keys {
            let what = match &key {
                Some(p) => format!("{}", p.join(".ai").display()),
                None => "the user space".to_string(),
            };
            self.load(key, token.as_ref().map(|t| (t, what))).await;
        }
        // A workspace whose load a didOpen started before this ran is part of the index too:
        // "Indexed" means every answer is complete.
        self.wait_loaded(None).await;
        if let Some(t) = &token {
            self.progress_end(t, "Indexed".into()).await;
        }
    }

    async fn register_watchers(&self) {
        let globs = [
            "**/.ai/**",
            "**/.venv/**",
            "**/node_modules/.bin/**",
            "**/.env*",
            "**/.python-version",
            "**/.nvmrc",
            "**/.tool-versions",
        ];
        let opts = DidChangeWatchedFilesRegistrationOptions {
            watchers: globs
                .iter()
                .map(|g| FileSystemWatcher {
                    glob_pattern: GlobPattern::String(g.to_string()),
                    kind: Some(WatchKind::Create | WatchKind::Change | WatchKind::Delete),
                })
                .collect(),
        };
        let Ok(options) = serde_json::to_value(opts) else {
            return;
        };
        let reg = Registration {
            id: "kiwi-watch".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: Some(options),
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(10),
            self.client.register_capability(vec![reg]),
        )
        .await;
    }

    // -----------------------------------------------------------------------------------
    // custom methods

    pub async fn on_cancel(&self, p: WorkDoneProgressCancelParams) {
        let key = token_key(&p.token);
        let cancels = self
            .shared
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cancels.get(&key) {
            c.cancel();
        }
    }

    /// `kiwi/syntaxTree {textDocument: {uri}}`: an open document's version, text and
    /// syntax tree as the server holds them (`tree` is null for kinds parsed without
    /// tree-sitter), like rust-analyzer's `syntaxTree`; `null` for a document not open.
    pub async fn syntax_tree(&self, p: Json) -> Result<Json> {
        guard(async {
            let path = p
                .pointer("/textDocument/uri")
                .and_then(Json::as_str)
                .and_then(|u| u.parse::<Uri>().ok())
                .and_then(|u| to_path(&u))
                .ok_or_else(|| {
                    jsonrpc::Error::invalid_params("give textDocument.uri, a file: URI")
                })?;
            let st = self.lock();
            Ok(match st.docs.get(&path) {
                Some(d) => json!({
                    "version": d.version,
                    "text": d.doc.text(),
                    "tree": d.doc.syntax_tree(),
                }),
                None => Json::Null,
            })
        })
        .await
    }

    #[cfg(feature = "test-panic")]
    pub async fn test_panic(&self, _p: Json) -> Result<Json> {
        guard(async {
            if std::env::var_os("KIWI_NEVER_SET_THIS").is_none() {
                panic!("deliberate test panic");
            }
            Ok(Json::Null)
        })
        .await
    }

    // -----------------------------------------------------------------------------------
    // commands

    /// Wait (up to a minute) until the workspaces being loaded are loaded: the one of `path`,
    /// or all of them. A command issued right after opening a file (a lens clicked at once)
    /// would otherwise see a workspace holding only the open documents.
    async fn wait_loaded(&self, path: Option<&Path>) {
        let key: Option<Key> = match path {
            Some(p) => match self.key_for(p) {
                Some(k) => Some(k),
                None => return, // not an item: the caller says so
            },
            None => None,
        };
        if let Some(k) = &key {
            // A file never opened: its workspace may not be loading yet.
            let start = self.ensure_ws(&mut self.lock(), k);
            if start {
                self.start_load(k.clone());
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let notified = self.shared.loaded_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.lock();
                let done = match &key {
                    Some(k) => st.loaded.contains(k),
                    None => st.loading.iter().all(|k| st.loaded.contains(k)),
                };
                if done {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return; // answer from what there is
            }
        }
    }

    /// The workspace and tool a command's argument names: `{uri}`, `{path}` or `{id}`.
    async fn command_target(
        &self,
        arg: &Json,
    ) -> std::result::Result<(Arc<Workspace>, Arc<Item>), String> {
        let path = arg
            .get("uri")
            .and_then(|u| u.as_str())
            .and_then(|u| u.parse::<Uri>().ok())
            .and_then(|u| to_path(&u))
            .or_else(|| arg.get("path").and_then(|p| p.as_str()).map(PathBuf::from));
        let id = arg.get("id").and_then(|i| i.as_str());
        self.wait_loaded(path.as_deref()).await;
        let st = self.lock();
        if let Some(path) = path {
            let key = self
                .key_for(&path)
                .ok_or_else(|| format!("{} is not under a .ai/ folder", path.display()))?;
            let ws = st
                .spaces
                .get(&key)
                .cloned()
                .ok_or_else(|| "the workspace is not loaded yet".to_string())?;
            let item = ws
                .item(&path)
                .cloned()
                .ok_or_else(|| format!("{} is not a Kiwi item", path.display()))?;
            return Ok((ws, item));
        }
        let Some(id) = id else {
            return Err("give `uri`, `path` or `id`".into());
        };
        let mut keys: Vec<&Key> = st.spaces.keys().collect();
        keys.sort_by_key(|k| k.is_none());
        let mut last = format!("no tool `{id}`");
        for k in keys {
            let ws = &st.spaces[k];
            match ws.lookup(ItemType::Tool, id, None) {
                Lookup::Found(t) => return Ok((ws.clone(), t)),
                Lookup::Missing { suggestions } if !suggestions.is_empty() => {
                    last = format!(
                        "no tool `{id}`; did you mean {}?",
                        kiwi_kernel::chain::quote_list(&suggestions)
                    )
                }
                Lookup::Ambiguous { candidates } => {
                    last = format!(
                        "`{id}` is ambiguous: {}",
                        kiwi_kernel::chain::quote_list(&candidates)
                    )
                }
                Lookup::Refused(e) => return Err(format!("`{id}` is not a valid tool id: {e}")),
                _ => {}
            }
        }
        Err(last)
    }

    async fn run_tool(&self, arg: Json, token: Option<ProgressToken>) -> Result<Option<Json>> {
        let (ws, tool) = self
            .command_target(&arg)
            .await
            .map_err(jsonrpc::Error::invalid_params)?;
        let params = arg
            .get("parameters")
            .or_else(|| arg.get("params"))
            .cloned()
            .unwrap_or(Json::Null);
        let req = exec::Request {
            params,
            ..Default::default()
        };
        let t = tool.clone();
        // The kernel's one run path: a tool (or a link of its chain) with error-level
        // diagnostics is refused, the diagnostics listed.
        let plan = blocking(move || exec::prepare_item(&ws, &t, &req)).await?;
        let plan = match plan {
            Ok(p) => p,
            Err(e) => return Ok(Some(run_error(&e))),
        };
        let token = self.token(token, "run").await;
        let cancel = CancellationToken::new();
        let key = token.as_ref().map(token_key);
        if let (Some(t), Some(k)) = (&token, &key) {
            self.shared
                .cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(k.clone(), cancel.clone());
            self.progress_begin(t, &format!("Running {}", tool.id), true)
                .await;
        }
        // If this request is cancelled ($/cancelRequest drops the handler), the run stops too,
        // and its progress ends ("cancelled") instead of spinning for ever.
        let drop_guard = cancel.clone().drop_guard();
        let mut ended = RunEnd {
            backend: Some(self.clone()),
            token: token.clone(),
            key: key.clone(),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let sink = ChannelSink {
            tx,
            partial: Mutex::new(Vec::new()),
        };
        let c = cancel.clone();
        let run = tokio::spawn(async move {
            let r = exec::run(&plan, &sink, &c).await;
            sink.flush();
            drop(sink);
            r
        });
        while let Some(line) = rx.recv().await {
            if let Some(t) = &token {
                self.progress_report(t, line.clone()).await;
            }
            self.client.log_message(MessageType::LOG, line).await;
        }
        let result = run.await;
        drop_guard.disarm();
        ended.backend = None;
        if let Some(k) = &key {
            self.shared
                .cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(k);
        }
        let value = match result {
            Ok(Ok(r)) => serde_json::to_value(&r).unwrap_or(Json::Null),
            Ok(Err(e)) => run_error(&e),
            Err(e) if e.is_panic() => return Err(panic_error(e.into_panic())),
            Err(_) => json!({"error": {"kind": "cancelled", "message": "the run was stopped"}}),
        };
        if let Some(t) = &token {
            let msg = if cancel.is_cancelled() {
                "cancelled"
            } else if value.get("error").is_some() {
                "failed"
            } else {
                "done"
            };
            self.progress_end(t, msg.into()).await;
        }
        Ok(Some(value))
    }

    async fn show_environment(&self, arg: Json) -> Result<Option<Json>> {
        let (ws, tool) = self
            .command_target(&arg)
            .await
            .map_err(jsonrpc::Error::invalid_params)?;
        let md = blocking(move || ide::environment_markdown(&ws, &tool)).await?;
        self.client.log_message(MessageType::INFO, md.clone()).await;
        Ok(Some(json!({ "markdown": md })))
    }

    /// `kiwi.init {force?}`: create (or refresh) the user space, as `kiwi init` does, then
    /// re-index every workspace (they all see the user space).
    async fn init_userspace(&self, arg: Json) -> Result<Option<Json>> {
        let force = arg.get("force").and_then(Json::as_bool).unwrap_or(false);
        let host = self.shared.host.clone();
        let report = blocking(move || kiwi_kernel::init::init_userspace(&host, force))
            .await?
            .map_err(|e| jsonrpc::Error {
                code: jsonrpc::ErrorCode::InternalError,
                message: format!("kiwi init: {e}").into(),
                data: None,
            })?;
        let keys: Vec<Key> = self.lock().loaded.iter().cloned().collect();
        for key in keys {
            self.load(key, None).await;
        }
        self.client
            .show_message(MessageType::INFO, report.message.clone())
            .await;
        Ok(Some(serde_json::to_value(&report).unwrap_or(Json::Null)))
    }

    async fn validate(&self, arg: Json) -> Result<Option<Json>> {
        let (ws, item) = self
            .command_target(&arg)
            .await
            .map_err(jsonrpc::Error::invalid_params)?;
        let path = item.path.clone();
        let it = item.clone();
        let w = ws.clone();
        let diags = blocking(move || check_item(&w, &it)).await?;
        let list = diag::view::DiagnosticView::json(diag::view::FileText::of_item(&item), &diags);
        if let Some(key) = self.key_for(&path) {
            self.publish(key, vec![path.clone()], None).await;
        }
        Ok(Some(json!({
            "path": path,
            "valid": !diags.iter().any(|d| d.severity == diag::Severity::Error),
            "diagnostics": list,
        })))
    }
}

/// Ends a run's progress when its request is dropped before the run ended (the client sent
/// `$/cancelRequest`): the cancellation entry goes, and the progress ends "cancelled".
struct RunEnd {
    backend: Option<Backend>,
    token: Option<ProgressToken>,
    key: Option<String>,
}

impl Drop for RunEnd {
    fn drop(&mut self) {
        let Some(backend) = self.backend.take() else {
            return; // the run ended normally and reported
        };
        if let Some(k) = &self.key {
            backend
                .shared
                .cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(k);
        }
        if let Some(t) = self.token.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { backend.progress_end(&t, "cancelled".into()).await });
            }
        }
    }
}

fn token_key(t: &ProgressToken) -> String {
    match t {
        NumberOrString::Number(n) => format!("n:{n}"),
        NumberOrString::String(s) => format!("s:{s}"),
    }
}

/// Output lines of a run, sent to a channel.
struct ChannelSink {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    partial: Mutex<Vec<u8>>,
}

impl OutputSink for ChannelSink {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        partial.extend_from_slice(bytes);
        if newline {
            // A log line is text: bytes that are not UTF-8 are shown lossily.
            let line = String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned();
            let line = match stream {
                Stream::Stderr => format!("[stderr] {line}"),
                _ => line,
            };
            let _ = self.tx.send(line);
        }
    }
    fn flush(&self) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if !partial.is_empty() {
            let _ = self
                .tx
                .send(String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned());
        }
    }
}

#[allow(deprecated)]
fn document_symbol(snap: &Snap, s: &ide::Symbol) -> DocumentSymbol {
    let kind = match s.kind {
        ide::SymbolKind::Directive => SymbolKind::MODULE,
        ide::SymbolKind::Metadata | ide::SymbolKind::Inputs | ide::SymbolKind::Process => {
            SymbolKind::NAMESPACE
        }
        ide::SymbolKind::Permissions => SymbolKind::NAMESPACE,
        ide::SymbolKind::Input => SymbolKind::VARIABLE,
        ide::SymbolKind::Step => SymbolKind::FUNCTION,
        ide::SymbolKind::Permission => SymbolKind::KEY,
        ide::SymbolKind::Field => SymbolKind::FIELD,
        ide::SymbolKind::Key => SymbolKind::KEY,
        ide::SymbolKind::Heading => SymbolKind::STRING,
    };
    let range = Backend::lsp_range(snap, s.range);
    let mut selection = Backend::lsp_range(snap, s.selection);
    if selection.start < range.start || selection.end > range.end {
        selection = range;
    }
    DocumentSymbol {
        name: if s.name.is_empty() {
            "?".into()
        } else {
            s.name.clone()
        },
        detail: s.detail.clone(),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: Some(
            s.children
                .iter()
                .map(|c| document_symbol(snap, c))
                .collect(),
        ),
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.clone())
            .unwrap_or_default();
        let kind = if offered.contains(&PositionEncodingKind::UTF8) {
            PositionEncodingKind::UTF8
        } else {
            PositionEncodingKind::UTF16
        };
        let ws_caps = params.capabilities.workspace.as_ref();
        let caps = Caps {
            watch_dynamic: ws_caps
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            work_done: params
                .capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
            inlay_refresh: ws_caps
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
            lens_refresh: ws_caps
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
            snippets: params
                .capabilities
                .text_document
                .as_ref()
                .and_then(|t| t.completion.as_ref())
                .and_then(|c| c.completion_item.as_ref())
                .and_then(|i| i.snippet_support)
                .unwrap_or(false),
            code_description: params
                .capabilities
                .text_document
                .as_ref()
                .and_then(|t| t.publish_diagnostics.as_ref())
                .and_then(|p| p.code_description_support)
                .unwrap_or(false),
            document_changes: ws_caps
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            rename_files: ws_caps
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Rename)),
        };
        let mut folders: Vec<PathBuf> = params
            .workspace_folders
            .unwrap_or_default()
            .iter()
            .filter_map(|f| to_path(&f.uri))
            .collect();
        #[allow(deprecated)]
        if folders.is_empty() {
            if let Some(p) = params.root_uri.as_ref().and_then(to_path) {
                folders.push(p);
            }
        }
        {
            let mut st = self.lock();
            st.enc = convert::encoding_of(&kind);
            st.caps = caps;
            st.folders = folders;
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(kind),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..Default::default()
                    },
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![
                        ide::CMD_RUN_TOOL.into(),
                        ide::CMD_SHOW_ENV.into(),
                        ide::CMD_VALIDATE.into(),
                        ide::CMD_INIT.into(),
                    ],
                    work_done_progress_options: WorkDoneProgressOptions {
                        work_done_progress: Some(true),
                    },
                }),
                inlay_hint_provider: Some(OneOf::Left(true)),
                completion_provider: Some(CompletionOptions {
                    trigger_characters: Some(
                        ["<", ":", ".", "\"", "{", " ", "/", "[", ","]
                            .iter()
                            .map(|s| s.to_string())
                            .collect(),
                    ),
                    ..Default::default()
                }),
                definition_provider: Some(OneOf::Left(true)),
                references_provider: Some(OneOf::Left(true)),
                signature_help_provider: Some(SignatureHelpOptions {
                    trigger_characters: Some(vec!["<".into(), " ".into(), "\"".into()]),
                    retrigger_characters: None,
                    work_done_progress_options: Default::default(),
                }),
                rename_provider: Some(OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: Default::default(),
                })),
                document_symbol_provider: Some(OneOf::Left(true)),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "kiwi".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let watch = self.lock().caps.watch_dynamic;
        let (keys, caps) = self.claim_index();
        let this = self.clone();
        tokio::spawn(async move {
            if watch {
                this.register_watchers().await;
            }
            this.index(keys, caps).await;
        });
    }

    async fn shutdown(&self) -> Result<()> {
        for c in self
            .shared
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            c.cancel();
        }
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        let Some(path) = to_path(&p.text_document.uri) else {
            return;
        };
        let Some(key) = self.key_for(&path) else {
            return;
        };
        let start = {
            let mut st = self.lock();
            let start = self.ensure_ws(&mut st, &key);
            st.docs.insert(
                path.clone(),
                Doc {
                    doc: Document::new(p.text_document.text),
                    version: p.text_document.version,
                    key: key.clone(),
                },
            );
            *st.generation.entry(path.clone()).or_default() += 1;
            Self::apply_doc(&mut st, &path);
            start
        };
        if start {
            self.start_load(key);
        }
        self.spawn_recheck(path);
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        let Some(path) = to_path(&p.text_document.uri) else {
            return;
        };
        {
            let mut st = self.lock();
            let enc = st.enc;
            let Some(doc) = st.docs.get_mut(&path) else {
                return;
            };
            for change in &p.content_changes {
                convert::apply_change(&mut doc.doc, change, enc);
            }
            doc.version = p.text_document.version;
            *st.generation.entry(path.clone()).or_default() += 1;
            Self::apply_doc(&mut st, &path);
        }
        self.spawn_recheck(path);
    }

    async fn did_save(&self, _: DidSaveTextDocumentParams) {}

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        let Some(path) = to_path(&p.text_document.uri) else {
            return;
        };
        let key = {
            let mut st = self.lock();
            let Some(doc) = st.docs.remove(&path) else {
                return;
            };
            if let Some(ws) = st.spaces.get_mut(&doc.key) {
                // What is on disk is the truth again.
                Arc::make_mut(ws).refresh_path(&path);
            }
            doc.key
        };
        self.publish(key, vec![path], None).await;
    }

    async fn did_change_watched_files(&self, p: DidChangeWatchedFilesParams) {
        let mut affected: HashSet<Key> = HashSet::new();
        // Changed item files: published even when they are gone (to clear their diagnostics).
        let mut changed: HashMap<Key, Vec<PathBuf>> = HashMap::new();
        let mut env_changed = false;
        {
            let mut st = self.lock();
            for change in &p.changes {
                let Some(path) = to_path(&change.uri) else {
                    continue;
                };
                let in_ai = path.components().any(|c| c.as_os_str() == ".ai");
                if in_ai {
                    if let Some(key) = self.key_for(&path) {
                        if st.docs.contains_key(&path) {
                            continue; // the editor owns an open document
                        }
                        if let Some(ws) = st.spaces.get_mut(&key) {
                            Arc::make_mut(ws).refresh_path(&path);
                            changed.entry(key.clone()).or_default().push(path.clone());
                            affected.insert(key);
                        }
                    }
                } else {
                    // A virtual environment, a version file or a dotenv file: resolutions
                    // change for every workspace whose project holds it (or all).
                    env_changed = true;
                    for k in st.spaces.keys() {
                        match k {
                            Some(root) if path.starts_with(root) => {
                                affected.insert(k.clone());
                            }
                            None => {
                                affected.insert(None);
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        let caps = self.lock().caps;
        let _ = env_changed;
        let this = self.clone();
        tokio::spawn(async move {
            for key in affected {
                let paths = Self::item_paths(&this.lock(), &key);
                let mut paths = paths;
                for p in changed.remove(&key).unwrap_or_default() {
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                this.publish(key, paths, None).await;
            }
            if caps.inlay_refresh {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), this.client.inlay_hint_refresh())
                        .await;
            }
            if caps.lens_refresh {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), this.client.code_lens_refresh())
                        .await;
            }
        });
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        guard(async {
            let Some(snap) = self
                .snapshot(&p.text_document_position_params.text_document.uri)
                .await
            else {
                return Ok(None);
            };
            let off = Self::offset(&snap, p.text_document_position_params.position);
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let Some(h) = blocking(move || ide::hover(&ws, &item, off)).await? else {
                return Ok(None);
            };
            Ok(Some(Hover {
                contents: HoverContents::Markup(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: h.markdown,
                }),
                range: Some(Self::lsp_range(&snap, h.range)),
            }))
        })
        .await
    }

    async fn code_lens(&self, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        guard(async {
            let Some(snap) = self.snapshot(&p.text_document.uri).await else {
                return Ok(None);
            };
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let lenses = blocking(move || ide::code_lenses(&ws, &item)).await?;
            let uri = p.text_document.uri.as_str().to_string();
            Ok(Some(
                lenses
                    .into_iter()
                    .map(|l| {
                        let args = l
                            .args
                            .into_iter()
                            .map(|mut a| {
                                // The lens of the file itself also carries its URI.
                                if a.get("path").and_then(|p| p.as_str())
                                    == Some(snap.item.path.to_string_lossy().as_ref())
                                {
                                    if let Some(o) = a.as_object_mut() {
                                        o.insert("uri".into(), json!(uri));
                                    }
                                }
                                a
                            })
                            .collect();
                        CodeLens {
                            range: Self::lsp_range(&snap, l.range),
                            command: Some(Command {
                                title: l.title,
                                command: l.command,
                                arguments: Some(args),
                            }),
                            data: None,
                        }
                    })
                    .collect(),
            ))
        })
        .await
    }

    async fn execute_command(&self, p: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        guard(async {
            let arg = p.arguments.first().cloned().unwrap_or(Json::Null);
            let arg = match arg {
                Json::String(s) => json!({ "id": s }),
                other => other,
            };
            match p.command.as_str() {
                ide::CMD_RUN_TOOL => {
                    self.run_tool(arg, p.work_done_progress_params.work_done_token)
                        .await
                }
                ide::CMD_SHOW_ENV => self.show_environment(arg).await,
                ide::CMD_VALIDATE => self.validate(arg).await,
                ide::CMD_INIT => self.init_userspace(arg).await,
                other => Err(jsonrpc::Error::invalid_params(format!(
                    "unknown command `{other}`"
                ))),
            }
        })
        .await
    }

    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        guard(async {
            let Some(snap) = self.snapshot(&p.text_document.uri).await else {
                return Ok(None);
            };
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let hints = blocking(move || ide::inlay_hints(&ws, &item)).await?;
            Ok(Some(
                hints
                    .into_iter()
                    .map(|h| InlayHint {
                        position: convert::position(&snap.item.source, h.offset, snap.enc),
                        label: InlayHintLabel::String(h.label),
                        kind: None,
                        text_edits: None,
                        tooltip: h.tooltip.map(InlayHintTooltip::String),
                        padding_left: Some(true),
                        padding_right: None,
                        data: None,
                    })
                    .collect(),
            ))
        })
        .await
    }

    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        guard(async {
            let Some(snap) = self
                .snapshot(&p.text_document_position.text_document.uri)
                .await
            else {
                return Ok(None);
            };
            let off = Self::offset(&snap, p.text_document_position.position);
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let entries = blocking(move || ide::completions(&ws, &item, off)).await?;
            let snippets = self.lock().caps.snippets;
            let items = entries
                .into_iter()
                .map(|mut e| {
                    if e.snippet && !snippets {
                        e.snippet = false;
                        e.insert_text = e.insert_text.map(|t| t.replace("$1", ""));
                    }
                    e
                })
                .map(|e| CompletionItem {
                    kind: Some(match e.kind {
                        ide::CompletionKind::Value => CompletionItemKind::ENUM_MEMBER,
                        ide::CompletionKind::Key => CompletionItemKind::PROPERTY,
                        ide::CompletionKind::Element => CompletionItemKind::CLASS,
                        ide::CompletionKind::Attribute => CompletionItemKind::PROPERTY,
                        ide::CompletionKind::Item => CompletionItemKind::REFERENCE,
                        ide::CompletionKind::Input => CompletionItemKind::VARIABLE,
                        ide::CompletionKind::Field => CompletionItemKind::FIELD,
                    }),
                    detail: e.detail,
                    insert_text_format: e.snippet.then_some(InsertTextFormat::SNIPPET),
                    text_edit: Some(CompletionTextEdit::Edit(TextEdit {
                        range: Self::lsp_range(&snap, e.range),
                        new_text: e.insert_text.unwrap_or_else(|| e.label.clone()),
                    })),
                    label: e.label,
                    ..Default::default()
                })
                .collect();
            Ok(Some(CompletionResponse::Array(items)))
        })
        .await
    }

    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        guard(async {
            let Some(snap) = self
                .snapshot(&p.text_document_position_params.text_document.uri)
                .await
            else {
                return Ok(None);
            };
            let off = Self::offset(&snap, p.text_document_position_params.position);
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let targets = blocking(move || ide::definition(&ws, &item, off)).await?;
            let locs: Vec<Location> = targets
                .into_iter()
                .filter_map(|t| {
                    let src = if t.path == snap.item.path {
                        snap.item.source.clone()
                    } else {
                        snap.ws
                            .item(&t.path)
                            .map(|i| i.source.clone())
                            .unwrap_or_else(|| SourceText::new(""))
                    };
                    Some(Location::new(
                        to_uri(&t.path)?,
                        convert::range(&src, t.range, snap.enc),
                    ))
                })
                .collect();
            if locs.is_empty() {
                return Ok(None);
            }
            Ok(Some(GotoDefinitionResponse::Array(locs)))
        })
        .await
    }

    async fn signature_help(&self, p: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        guard(self.signature_help_at(p)).await
    }

    async fn references(&self, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
        guard(self.find_references(p)).await
    }

    async fn prepare_rename(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        guard(self.prepare_rename_at(p)).await
    }

    async fn rename(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        guard(self.rename_at(p)).await
    }

    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        guard(async {
            let Some(snap) = self.snapshot(&p.text_document.uri).await else {
                return Ok(None);
            };
            let item = snap.item.clone();
            let syms = blocking(move || ide::symbols(&item)).await?;
            Ok(Some(DocumentSymbolResponse::Nested(
                syms.iter().map(|s| document_symbol(&snap, s)).collect(),
            )))
        })
        .await
    }

    async fn symbol(&self, p: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        guard(async {
            self.wait_loaded(None).await;
            let (spaces, enc) = {
                let st = self.lock();
                (st.spaces.values().cloned().collect::<Vec<_>>(), st.enc)
            };
            let query = p.query.to_lowercase();
            let out = blocking(move || {
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                for ws in &spaces {
                    for item in ws.items() {
                        if item.is_builtin() || !seen.insert(item.path.clone()) {
                            continue;
                        }
                        let desc = item.description().unwrap_or("");
                        let hay = format!(
                            "{} {} {}",
                            item.id.to_lowercase(),
                            item.item_type.as_str(),
                            desc.to_lowercase()
                        );
                        if !query.is_empty() && !hay.contains(&query) {
                            continue;
                        }
                        let Some(uri) = to_uri(&item.path) else {
                            continue;
                        };
                        let range =
                            convert::range(&item.source, kiwi_kernel::check::first_line(item), enc);
                        #[allow(deprecated)]
                        out.push(SymbolInformation {
                            name: item.id.clone(),
                            kind: match item.item_type {
                                ItemType::Directive => SymbolKind::MODULE,
                                ItemType::Tool => SymbolKind::FUNCTION,
                                _ => SymbolKind::FILE,
                            },
                            tags: None,
                            deprecated: None,
                            location: Location::new(uri, range),
                            container_name: Some(format!(
                                "{} ({}){}",
                                item.item_type.as_str(),
                                item.space.as_str(),
                                if desc.is_empty() {
                                    String::new()
                                } else {
                                    format!(": {desc}")
                                }
                            )),
                        });
                    }
                }
                out.sort_by(|a, b| a.name.cmp(&b.name));
                out
            })
            .await?;
            Ok(Some(WorkspaceSymbolResponse::Flat(out)))
        })
        .await
    }

    async fn code_action(&self, p: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guard(async {
            let Some(snap) = self.snapshot(&p.text_document.uri).await else {
                return Ok(None);
            };
            let start = Self::offset(&snap, p.range.start);
            let end = Self::offset(&snap, p.range.end);
            let (ws, item) = (snap.ws.clone(), snap.item.clone());
            let diags = blocking(move || check_item(&ws, &item)).await?;
            let uri = p.text_document.uri.clone();
            let version = self.lock().docs.get(&snap.item.path).map(|d| d.version);
            let mut out = Vec::new();
            for d in &diags {
                if d.fixes.is_empty() || d.range.end < start || d.range.start > end {
                    continue;
                }
                let mut ld =
                    convert::diagnostic(&snap.item.source, &snap.item.path, d, snap.enc, &|_| None);
                if !self.lock().caps.code_description {
                    ld.code_description = None;
                }
                for fix in &d.fixes {
                    let edits: Vec<TextEdit> = fix
                        .edits
                        .iter()
                        .map(|e| TextEdit {
                            range: Self::lsp_range(&snap, e.range),
                            new_text: e.new_text.clone(),
                        })
                        .collect();
                    let edit = match &fix.rename_to {
                        Some(to) => {
                            let Some(new_uri) = to_uri(to) else { continue };
                            let mut ops = Vec::new();
                            if !edits.is_empty() {
                                ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                                    text_document: OptionalVersionedTextDocumentIdentifier {
                                        uri: uri.clone(),
                                        version,
                                    },
                                    edits: edits.into_iter().map(OneOf::Left).collect(),
                                }));
                            }
                            ops.push(DocumentChangeOperation::Op(ResourceOp::Rename(
                                RenameFile {
                                    old_uri: uri.clone(),
                                    new_uri,
                                    options: None,
                                    annotation_id: None,
                                },
                            )));
                            WorkspaceEdit {
                                document_changes: Some(DocumentChanges::Operations(ops)),
                                ..Default::default()
                            }
                        }
                        None => WorkspaceEdit {
                            changes: Some(HashMap::from([(uri.clone(), edits)])),
                            ..Default::default()
                        },
                    };
                    out.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: fix.title.clone(),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![ld.clone()]),
                        edit: Some(edit),
                        is_preferred: Some(d.fixes.len() == 1),
                        ..Default::default()
                    }));
                }
            }
            Ok(Some(out))
        })
        .await
    }
}
