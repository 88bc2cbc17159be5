//! Diagnostics: computing and publishing them, re-checking after a change (the changed
//! document at once, the items that reference it after a pause), and the generations that
//! keep a stale result from being published over a newer one.

use crate::convert::{self, to_uri};
use crate::session::Backend;
use crate::session::Key;
use crate::task::blocking;
use kiwi_kernel::diag;
use kiwi_kernel::workspace::{Item, Workspace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::ls_types::Diagnostic;

/// How long after a change the items that reference the changed one are re-checked, when
/// no further change came meanwhile.
const DEPENDENTS_DELAY: Duration = Duration::from_millis(150);

impl Backend {
    /// Compute and publish the diagnostics of these items of workspace `key`. When
    /// `only_if` is given (a path and its generation), that path's result is dropped if
    /// the document changed meanwhile.
    pub(crate) async fn publish(
        &self,
        key: Key,
        paths: Vec<PathBuf>,
        only_if: Option<(PathBuf, u64)>,
    ) {
        let (ws, enc, versions, code_description) = {
            let st = self.lock();
            if let Some((p, g)) = &only_if {
                if st.generation.get(p).copied().unwrap_or(0) != *g {
                    return; // a later change has its own job
                }
            }
            let Some(ws) = st.set.get(&key).cloned() else {
                return;
            };
            let versions: HashMap<PathBuf, i32> = paths
                .iter()
                .filter_map(|p| st.docs.get(p).map(|d| (p.clone(), d.version)))
                .collect();
            (ws, st.enc, versions, st.caps.code_description)
        };
        // A chunk is checked (in parallel) while the one before it is sent: the first index
        // of 5,000 items spent 50 ms checking, then 80 ms sending, one after the other.
        let compute = |chunk: Vec<PathBuf>| {
            let ws = ws.clone();
            tokio::task::spawn_blocking(move || diagnostics_of(&ws, &chunk, enc, code_description))
        };
        let mut chunks = paths.chunks(PUBLISH_CHUNK).map(<[PathBuf]>::to_vec);
        let mut next = chunks.next().map(compute);
        while let Some(checking) = next.take() {
            let Ok(computed) = checking.await else { return };
            next = chunks.next().map(compute);
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
        // The items keep their parse; the texts of those read from disk are read again when
        // something looks into them (more than half of the heap at 10,000 items). Those the
        // check read again are let go of now that it is done.
        drop(ws);
        self.lock().set.let_go_of_texts(&key);
    }

    /// The lockfile of workspace `key`'s own space (the project's `.ai/kiwi.lock`, or the
    /// user space's): R704 (a locked item whose files are missing) and R705 (a lockfile that
    /// cannot be read) on its text, as `kiwi check` reports them (`trust::audit::lock_reports`).
    /// Published when the lockfile exists (an empty list when nothing is wrong), and when
    /// `gone` (it was deleted: its diagnostics are cleared).
    pub(crate) async fn publish_lockfile(&self, key: Key, gone: bool) {
        use kiwi_kernel::ids::Space;
        use kiwi_kernel::trust::audit;
        let (ws, enc, code_description) = {
            let st = self.lock();
            let Some(ws) = st.set.get(&key).cloned() else {
                return;
            };
            (ws, st.enc, st.caps.code_description)
        };
        let space = if key.is_some() {
            Space::Project
        } else {
            Space::User
        };
        let Some(root) = ws.space_root(space) else {
            return;
        };
        let path = kiwi_kernel::lock::Lockfile::path(&root);
        if !path.is_file() && !gone {
            return;
        }
        let Some(uri) = to_uri(&path) else { return };
        let p = path.clone();
        let Ok(diags) = blocking(move || {
            if !p.is_file() {
                return Vec::new();
            }
            audit::lock_reports(audit::lock_problems(&ws, space, false))
                .into_iter()
                .filter(|(q, ..)| *q == p)
                .flat_map(|(q, src, ds)| {
                    ds.iter()
                        .map(|d| {
                            let mut d = convert::diagnostic(&src, &q, d, enc, &|_| None);
                            if !code_description {
                                d.code_description = None;
                            }
                            d
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<Diagnostic>>()
        })
        .await
        else {
            return;
        };
        self.client.publish_diagnostics(uri, diags, None).await;
    }

    /// Re-check in a task of its own, so that the handler returns at once and a burst of
    /// changes does not hold up the requests behind it.
    pub(crate) fn spawn_recheck(&self, path: PathBuf) {
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
            let Some(ws) = st.set.get(&key).cloned() else {
                return;
            };
            ws
        };
        // Lenses follow the text (a quick fix that adds a step, a call whose tool now
        // exists): a client that can be told re-asks, without waiting for a save.
        let this = self.clone();
        let (lens_ws, lens_path) = (ws.clone(), path.clone());
        tokio::spawn(async move { this.refresh_lenses(lens_ws, lens_path).await });
        let p = path.clone();
        let Ok(targets) = blocking(move || ws.dependents(&p)).await else {
            return;
        };
        if !targets.is_empty() {
            self.publish(key, targets, Some((path, gen))).await;
        }
    }

    /// Send `workspace/codeLens/refresh` when the lenses of an open document changed since
    /// the last time (their titles, commands, arguments or lines), to a client that supports it.
    async fn refresh_lenses(&self, ws: Arc<Workspace>, path: PathBuf) {
        if !self.lock().caps.lens_refresh {
            return;
        }
        let p = path.clone();
        let Ok(Some(sig)) = blocking(move || lens_signature(&ws, &p)).await else {
            return;
        };
        let changed = {
            let mut st = self.lock();
            match st.docs.get_mut(&path) {
                Some(d) if d.lenses != sig => {
                    d.lenses = sig;
                    true
                }
                _ => false,
            }
        };
        if changed {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), self.client.code_lens_refresh()).await;
        }
    }

    /// The workspace key and generation of an open document, when its workspace is loaded
    /// (before that, the load publishes every item when it is done).
    fn current(&self, path: &Path) -> Option<(Key, u64)> {
        let st = self.lock();
        let doc = st.docs.get(path)?;
        if !st.set.is_loaded(&doc.key) {
            return None;
        }
        let gen = st.generation.get(path).copied().unwrap_or(0);
        Some((doc.key.clone(), gen))
    }
}

/// A hash of what the lenses of an item show and where (by line).
fn lens_signature(ws: &Workspace, path: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let item = ws.item(path)?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for l in kiwi_kernel::ide::code_lenses(ws, item) {
        convert::position(
            &item.source,
            l.range.start,
            kiwi_kernel::text::Encoding::Utf8,
        )
        .line
        .hash(&mut h);
        l.title.hash(&mut h);
        l.command.hash(&mut h);
        serde_json::to_string(&l.args).ok().hash(&mut h);
    }
    Some(h.finish())
}

/// How many items' diagnostics are sent while the next ones are checked.
const PUBLISH_CHUNK: usize = 1024;

/// The LSP diagnostics of the items at `paths` (in parallel), each with its URI and path; an
/// empty list for a path that is no item (any more): what was published is cleared.
fn diagnostics_of(
    ws: &Workspace,
    paths: &[PathBuf],
    enc: kiwi_kernel::text::Encoding,
    code_description: bool,
) -> Vec<(tower_lsp_server::ls_types::Uri, PathBuf, Vec<Diagnostic>)> {
    let items: Vec<Arc<Item>> = paths.iter().filter_map(|p| ws.item(p).cloned()).collect();
    // In parallel: the whole workspace is checked after indexing.
    let all = kiwi_kernel::check::check_items(ws, &items);
    let by_path: HashMap<&Path, (&Arc<Item>, &Vec<diag::Diagnostic>)> = items
        .iter()
        .zip(all.iter())
        .map(|(i, d)| (i.path.as_path(), (i, d)))
        .collect();
    // Made in parallel too (positions in each item's text): 30 ms at 5,000 items
    // with diagnostics, one after the other.
    use rayon::prelude::*;
    paths
        .par_iter()
        .filter_map(|p| {
            let uri = to_uri(p)?;
            let Some(&(item, diags)) = by_path.get(p.as_path()) else {
                // Not an item (any more): clear what was published.
                return Some((uri, p.clone(), Vec::new()));
            };
            let other = |q: &Path| ws.item(q).map(|i| i.source.clone());
            let lsp: Vec<Diagnostic> = diags
                .iter()
                .map(|d| convert::diagnostic(&item.source, p, d, enc, &other))
                .map(|mut d| {
                    if !code_description {
                        d.code_description = None;
                    }
                    // A read-only space's file (opened from a project, by go to
                    // definition): its problems are not the author's to fix, and stay
                    // out of the Problems panel: hints, marked with the space.
                    if !item.space.is_writable() {
                        d.severity = Some(tower_lsp_server::ls_types::DiagnosticSeverity::HINT);
                        d.message = format!("(read-only {} space) {}", item.space, d.message);
                    }
                    d
                })
                .collect();
            Some((uri, p.clone(), lsp))
        })
        .collect::<Vec<_>>()
}
