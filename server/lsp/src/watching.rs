//! Files changed on disk: one handler for the client's events
//! (`workspace/didChangeWatchedFiles`) and the server's own watcher's, which runs when the
//! client cannot watch (`didChangeWatchedFiles.dynamicRegistration` false, as Neovim on
//! Linux): items changed on disk are read again, a virtual environment, version file or
//! dotenv file re-checks the workspaces it concerns, inlay hints, lenses and semantic tokens
//! are refreshed.

use crate::session::Backend;
use crate::session::{Key, Shared};
use crate::task::blocking;
use kiwi_kernel::watch::Change;
use kiwi_kernel::workspace_set::Concerned;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tower_lsp_server::ls_types::MessageType;
use tower_lsp_server::Client;

/// How long the server's watcher gathers changes before handling them (a `git checkout` or
/// a `python -m venv` is many events).
const SETTLE: Duration = Duration::from_millis(100);

impl Backend {
    /// These paths changed on disk (created, changed or deleted); with `overflow`, changes
    /// were lost: every loaded workspace is read again.
    pub(crate) fn files_changed(&self, paths: Vec<PathBuf>, overflow: bool) {
        let mut affected: HashSet<Key> = HashSet::new();
        // Changed item files: published even when they are gone (to clear their diagnostics).
        let mut changed: HashMap<Key, Vec<PathBuf>> = HashMap::new();
        let (caps, reload) = {
            let mut st = self.lock();
            for path in paths {
                match st.set.concerned_by(&path) {
                    Concerned::Items(keys) => {
                        if path.is_dir() {
                            continue; // a folder is no item
                        }
                        for key in keys {
                            // Not read when open: the editor's text is the truth (the set's
                            // overlay).
                            if st.set.refresh_path(&key, &path) {
                                changed.entry(key.clone()).or_default().push(path.clone());
                                affected.insert(key);
                            }
                        }
                    }
                    // A virtual environment, a version file or a dotenv file: resolutions
                    // change for every workspace whose project holds it.
                    Concerned::Environment(keys) => affected.extend(keys),
                }
            }
            let reload = if overflow {
                st.set.loaded_keys()
            } else {
                Vec::new()
            };
            (st.caps, reload)
        };
        let this = self.clone();
        tokio::spawn(async move {
            for key in reload {
                affected.remove(&key);
                this.load(key, None).await;
            }
            for key in affected {
                let mut paths = this.lock().set.own_item_paths(&key);
                let mut lock_gone = false;
                for p in changed.remove(&key).unwrap_or_default() {
                    lock_gone |= p
                        .file_name()
                        .is_some_and(|n| n == kiwi_kernel::lock::LOCK_FILE);
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                this.publish(key.clone(), paths, None).await;
                // An item file gone or back, or the lockfile itself changed: R704 follows.
                this.publish_lockfile(key, lock_gone).await;
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
            // An item that appeared or went resolves (or no longer resolves) an id.
            if caps.tokens_refresh {
                this.refresh_tokens().await;
            }
        });
    }

    /// When the client cannot watch files: watch workspace `key` with the set's own
    /// watcher (once), its changes handled by [`Self::files_changed`]. The folders are
    /// walked and watched on the blocking pool, not under the session's lock (40 ms at
    /// 10,000 items, when every request waited).
    pub(crate) async fn watch_if_client_cannot(&self, key: &Key) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Change>>();
        let plan = {
            let st = self.lock();
            if st.caps.watch_dynamic {
                return;
            }
            st.set.watch_plan(key)
        };
        let Some(plan) = plan else { return };
        let Ok(started) = blocking(move || plan.start(move |batch| tx.send(batch).is_ok())).await
        else {
            return;
        };
        let started = started.map(|w| self.lock().set.keep_watch(w));
        match started {
            Ok(true) => {
                // The task holds the session weakly: the server going away ends the watcher
                // (its thread stops when the set drops it, and with it this channel).
                let shared = Arc::downgrade(&self.shared);
                tokio::spawn(forward(rx, shared, self.client.clone()));
            }
            Ok(false) => {}
            Err(e) => {
                let what = match key {
                    Some(p) => p.display().to_string(),
                    None => "the user space".into(),
                };
                self.client
                    .log_message(
                        MessageType::WARNING,
                        format!(
                            "kiwi: cannot watch {what} ({e}): files changed outside the editor are seen after the next edit"
                        ),
                    )
                    .await;
            }
        }
    }
}

/// Hand the watcher's batches to [`Backend::files_changed`], gathered for [`SETTLE`].
async fn forward(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Vec<Change>>,
    shared: Weak<Shared>,
    client: Client,
) {
    while let Some(mut batch) = rx.recv().await {
        tokio::time::sleep(SETTLE).await;
        while let Ok(more) = rx.try_recv() {
            batch.extend(more);
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let backend = Backend {
            client: client.clone(),
            shared,
        };
        let overflow = batch.iter().any(|c| matches!(c, Change::Overflow));
        let mut paths: Vec<PathBuf> = Vec::new();
        for c in &batch {
            if let Some(p) = c.path() {
                if !paths.iter().any(|q| q == p) {
                    paths.push(p.to_path_buf());
                }
            }
        }
        backend.files_changed(paths, overflow);
    }
}
