//! The session: what the server holds between messages (the client's capabilities, the open
//! documents, one kernel `Workspace` per project and one for the user space, which of them
//! are loaded) and the snapshots requests compute on.
//!
//! State is mutated synchronously at the top of the notification handlers, before any
//! `.await`, so that a request arriving after a change sees it. Requests take a [`Snap`]
//! (`Arc` clones under a short lock) and compute outside the lock, on the blocking pool.

use crate::convert::{self, to_path, to_uri};
use crate::task::blocking;
use kiwi_kernel::exec::CancellationToken;
use kiwi_kernel::text::{Encoding, SourceText, TextRange};
use kiwi_kernel::workspace::{Item, Workspace};
use kiwi_kernel::workspace_set::WorkspaceSet;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{Location, Position, Range, Uri};
use tower_lsp_server::Client;

/// The server: the client to talk to and the shared session state. Its `LanguageServer`
/// implementation (`crate::server`) hands each message to its handler (`crate::handlers`).
#[derive(Clone)]
pub struct Backend {
    pub(crate) client: Client,
    pub(crate) shared: Arc<Shared>,
}

impl Backend {
    pub fn new(client: Client) -> Self {
        Backend {
            client,
            shared: Arc::new(Shared::new()),
        }
    }
}

pub(crate) use kiwi_kernel::workspace_set::Key;

/// An open document as the session sees it: its version and the workspace it belongs to.
/// Its text (and, for tools, its syntax tree, re-parsed incrementally on each change) is an
/// overlay of the kernel's set (`WorkspaceSet::open`), the truth for its item until closed.
pub(crate) struct Doc {
    pub version: i32,
    pub key: Key,
    /// What its code lenses showed when last looked at (see `Backend::refresh_lenses`).
    pub lenses: u64,
}

/// What the client declared it can do (from `initialize`).
#[derive(Default, Clone, Copy)]
pub(crate) struct Caps {
    pub watch_dynamic: bool,
    pub work_done: bool,
    pub inlay_refresh: bool,
    pub lens_refresh: bool,
    /// `workspace.semanticTokens.refreshSupport`: told to re-read semantic tokens when they
    /// move (indexing ended, items appeared or went on disk).
    pub tokens_refresh: bool,
    /// `completionItem.snippetSupport`: attribute completions are snippets, else plain text.
    pub snippets: bool,
    /// `publishDiagnostics.codeDescriptionSupport`: diagnostics link to the catalogue.
    pub code_description: bool,
    /// `workspaceEdit.documentChanges`, and `resourceOperations` holding `rename`: a rename
    /// moves the item's file in the same edit.
    pub document_changes: bool,
    pub rename_files: bool,
    /// A client declaring `rename` that cannot rename a folder (a skill's rename moves its
    /// folder): Neovim before 0.9, whose `vim.lsp.util.rename` writes the folder as a buffer
    /// first and fails with E502 after the text edits are applied (neovim/neovim#22147, fixed
    /// in 0.9 by #22289). Its `clientInfo` says so.
    pub no_folder_renames: bool,
    /// `documentLink.tooltipSupport`: document links carry a tooltip.
    pub link_tooltips: bool,
    /// `initializationOptions.agentRuns`: the client shows an agent's runs itself on the
    /// token `kiwi/agentRun` names (no `window/workDoneProgress/create`, whose progress the
    /// client library would take for its own).
    pub agent_runs: bool,
}

pub(crate) struct State {
    pub enc: Encoding,
    pub caps: Caps,
    pub folders: Vec<PathBuf>,
    pub docs: HashMap<PathBuf, Doc>,
    /// The workspaces (the kernel's set: the project of a path, loading and loaded, the
    /// server's own watchers). Before a workspace is loaded, diagnostics would be wrong:
    /// they wait.
    pub set: WorkspaceSet,
    /// Bumped on every change of a document: a diagnostics job publishes only if the
    /// generation it computed for is still current.
    pub generation: HashMap<PathBuf, u64>,
    /// The workspace symbols' index, with the set's `changes` it was built at.
    pub symbols: Option<(u64, Arc<kiwi_kernel::ide::SymbolIndex>)>,
    /// The open VS Code customization files no workspace reads (`crate::neighbours`).
    pub neighbours: HashMap<PathBuf, crate::neighbours::Neighbour>,
    /// The moves of the renames this server answered (from, to, when): the client asks
    /// `willRenameFiles` about them as it applies the edit (VS Code does), and the rename's
    /// own edits are made already; edits again would be applied twice, after VS Code's
    /// modal "wants to make refactoring changes" (the VS Code suite hung on it).
    pub answered_moves: Vec<(PathBuf, PathBuf, std::time::Instant)>,
}

pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// The running `kiwi.runTool`s, by progress token.
    pub cancels: Mutex<HashMap<String, CancellationToken>>,
    pub counter: AtomicU64,
    /// Woken each time a workspace finishes loading (commands wait for their workspace).
    pub loaded_notify: tokio::sync::Notify,
    /// Where the author's cursor was last seen (the attached agent's `kiwi://editor/active`).
    pub cursor: Mutex<Option<crate::attach::Cursor>>,
    /// The attached agent's endpoint: its socket and the task serving it.
    pub endpoint: Mutex<Option<(PathBuf, tokio::task::JoinHandle<()>)>>,
    /// The endpoint did not start (or is turned off): nothing to wait for.
    pub endpoint_failed: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub fn new() -> Self {
        Shared {
            state: Mutex::new(State {
                enc: Encoding::Utf16,
                caps: Caps::default(),
                folders: Vec::new(),
                docs: HashMap::new(),
                set: WorkspaceSet::new(kiwi_kernel::context::Host::from_process()),
                generation: HashMap::new(),
                answered_moves: Vec::new(),
                symbols: None,
                neighbours: HashMap::new(),
            }),
            cancels: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
            loaded_notify: tokio::sync::Notify::new(),
            cursor: Mutex::new(None),
            endpoint: Mutex::new(None),
            endpoint_failed: Default::default(),
        }
    }

    /// The running-command cancellations (a poisoned lock is still usable).
    pub fn cancels(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.cancels.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A snapshot for one request: the document's item, its workspace, the position encoding.
#[derive(Clone)]
pub(crate) struct Snap {
    pub ws: Arc<Workspace>,
    pub item: Arc<Item>,
    pub enc: Encoding,
}

impl Snap {
    pub fn offset(&self, pos: Position) -> usize {
        convert::offset(&self.item.source, pos, self.enc)
    }

    pub fn range(&self, r: TextRange) -> Range {
        convert::range(&self.item.source, r, self.enc)
    }

    pub fn position(&self, offset: usize) -> Position {
        convert::position(&self.item.source, offset, self.enc)
    }

    /// The text of a file of the snapshot's workspace (the open document's when it is open).
    pub fn source_of(&self, path: &Path) -> SourceText {
        if path == self.item.path {
            return self.item.source.clone();
        }
        source_in(&self.ws, path)
    }

    /// A kernel location (a path and a byte range in it) as an LSP location.
    pub fn location(&self, path: &Path, r: TextRange) -> Option<Location> {
        location_in(&self.source_of(path), path, r, self.enc)
    }
}

/// The text of a file of a workspace: its item's (the open document's when it is open), else,
/// for a file that is no item (an `AGENTS.md`, a skill's other Markdown naming a skill), its
/// text on disk as the kernel read it.
fn source_in(ws: &Workspace, path: &Path) -> SourceText {
    ws.item(path)
        .map(|i| i.source.clone())
        .or_else(|| kiwi_kernel::ide::file_text(ws, path).map(SourceText::new))
        .unwrap_or_else(|| SourceText::new(""))
}

fn location_in(src: &SourceText, path: &Path, r: TextRange, enc: Encoding) -> Option<Location> {
    Some(Location::new(to_uri(path)?, convert::range(src, r, enc)))
}

/// A snapshot for one request about an open document that is no item but names skills (an
/// `AGENTS.md`, a skill's other Markdown): its text in the editor and its workspace.
pub(crate) struct FileSnap {
    pub ws: Arc<Workspace>,
    pub path: PathBuf,
    pub source: SourceText,
    pub enc: Encoding,
}

impl FileSnap {
    pub fn range(&self, r: TextRange) -> Range {
        convert::range(&self.source, r, self.enc)
    }

    pub fn source_of(&self, path: &Path) -> SourceText {
        if path == self.path {
            return self.source.clone();
        }
        source_in(&self.ws, path)
    }

    pub fn location(&self, path: &Path, r: TextRange) -> Option<Location> {
        location_in(&self.source_of(path), path, r, self.enc)
    }
}

/// What a workspace edit's ranges are converted with: the texts of the files and the
/// position encoding.
pub(crate) trait Sources {
    fn source_of(&self, path: &Path) -> SourceText;
    fn enc(&self) -> Encoding;
}

impl Sources for Snap {
    fn source_of(&self, path: &Path) -> SourceText {
        Snap::source_of(self, path)
    }
    fn enc(&self) -> Encoding {
        self.enc
    }
}

impl Sources for FileSnap {
    fn source_of(&self, path: &Path) -> SourceText {
        FileSnap::source_of(self, path)
    }
    fn enc(&self) -> Encoding {
        self.enc
    }
}

impl Backend {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic happened while it was held; the state is
        // still usable (every mutation is a single insert or replace).
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The workspace a path belongs to: the user space, or the project holding the `.ai/`
    /// folder it is in. `None` for files outside any `.ai/` (ignored quietly).
    pub(crate) fn key_for(&self, path: &Path) -> Option<Key> {
        self.lock().set.project_of(path)
    }

    /// A snapshot of the document's item and its workspace, once the workspace is loaded:
    /// before that it holds only the open documents and the builtin items, and every answer
    /// (a shadowed runtime, a missing tool, lenses without `▶ Run step`, a short completion
    /// list) would be wrong. Requests wait as commands do (bounded by [`Self::wait_loaded`]).
    pub(crate) async fn snapshot(&self, uri: &Uri) -> Option<Snap> {
        let path = to_path(uri)?;
        let key = self.key_for(&path)?;
        self.wait_loaded(Some(&path)).await;
        let st = self.lock();
        let ws = st.set.get(&key)?.clone();
        let item = ws.item(&path)?.clone();
        Some(Snap {
            ws,
            item,
            enc: st.enc,
        })
    }

    /// The one shape of a request about a document: take its [`Snap`] and run `f` on the
    /// blocking pool over the workspace, the item and the byte offset of `pos` (0 when no
    /// position is given). `None` when the document is no item.
    pub(crate) async fn query<T: Send + 'static>(
        &self,
        uri: &Uri,
        pos: Option<Position>,
        f: impl FnOnce(&Workspace, &Arc<Item>, usize) -> T + Send + 'static,
    ) -> Result<Option<(Snap, T)>> {
        let Some(snap) = self.snapshot(uri).await else {
            return Ok(None);
        };
        let off = pos.map(|p| snap.offset(p)).unwrap_or(0);
        let (ws, item) = (snap.ws.clone(), snap.item.clone());
        let value = blocking(move || f(&ws, &item, off)).await?;
        Ok(Some((snap, value)))
    }

    /// [`Self::query`] for an open document that is no item (`None` for an item, or a file of
    /// no workspace): `f` gets the workspace, the file's path, its text in the editor and the
    /// byte offset of `pos`.
    pub(crate) async fn query_file<T: Send + 'static>(
        &self,
        uri: &Uri,
        pos: Position,
        f: impl FnOnce(&Workspace, &Path, &str, usize) -> T + Send + 'static,
    ) -> Result<Option<(FileSnap, T)>> {
        let Some(path) = to_path(uri) else {
            return Ok(None);
        };
        let Some(key) = self.key_for(&path) else {
            return Ok(None);
        };
        self.wait_loaded(Some(&path)).await;
        let snap = {
            let st = self.lock();
            let Some(ws) = st.set.get(&key).cloned() else {
                return Ok(None);
            };
            if ws.item(&path).is_some() {
                return Ok(None);
            }
            let Some(doc) = st.set.overlay(&path) else {
                return Ok(None);
            };
            FileSnap {
                ws,
                source: SourceText::new(doc.text()),
                path,
                enc: st.enc,
            }
        };
        let off = convert::offset(&snap.source, pos, snap.enc);
        let (ws, path, text) = (snap.ws.clone(), snap.path.clone(), snap.source.clone());
        let value = blocking(move || f(&ws, &path, text.text(), off)).await?;
        Ok(Some((snap, value)))
    }

    /// Wait (up to a minute) until the workspaces being loaded are loaded: the one of `path`,
    /// or all of them. A command issued right after opening a file (a lens clicked at once)
    /// would otherwise see a workspace holding only the open documents.
    pub(crate) async fn wait_loaded(&self, path: Option<&Path>) {
        let key: Option<Key> = match path {
            Some(p) => match self.key_for(p) {
                Some(k) => Some(k),
                None => return, // not an item: the caller says so
            },
            None => None,
        };
        if let Some(k) = &key {
            // A file never opened: its workspace may not be loading yet.
            let start = self.lock().set.claim(k);
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
                    Some(k) => st.set.is_loaded(k),
                    None => st.set.all_loaded(),
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
}
