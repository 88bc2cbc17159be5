//! `workspace/didChangeWatchedFiles`: items changed on disk are read again; a virtual
//! environment, version file or dotenv file changing re-checks the workspaces it concerns;
//! inlay hints and lenses are refreshed.

use crate::convert::to_path;
use crate::server::Backend;
use crate::session::Key;
use kiwi_kernel::workspace::WatchedChange;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::ls_types::DidChangeWatchedFilesParams;

pub(crate) async fn did_change_watched_files(b: &Backend, p: DidChangeWatchedFilesParams) {
    let mut affected: HashSet<Key> = HashSet::new();
    // Changed item files: published even when they are gone (to clear their diagnostics).
    let mut changed: HashMap<Key, Vec<PathBuf>> = HashMap::new();
    {
        let mut st = b.lock();
        for change in &p.changes {
            let Some(path) = to_path(&change.uri) else {
                continue;
            };
            // An item file of a loaded workspace; anything else (a venv under `.ai/`
            // through a symlink included) is what resolutions read.
            let item_key = b.key_for(&path).filter(|k| {
                st.spaces
                    .get(k)
                    .is_some_and(|ws| ws.watched_change(&path) == WatchedChange::Item)
            });
            if let Some(key) = item_key {
                if st.docs.contains_key(&path) {
                    continue; // the editor owns an open document
                }
                if let Some(ws) = st.spaces.get_mut(&key) {
                    Arc::make_mut(ws).refresh_path(&path);
                    changed.entry(key.clone()).or_default().push(path.clone());
                    affected.insert(key);
                }
            } else {
                // A virtual environment, a version file or a dotenv file: resolutions
                // change for every workspace whose project holds it (or all).
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
    let caps = b.lock().caps;
    let this = b.clone();
    tokio::spawn(async move {
        for key in affected {
            let mut paths = Backend::item_paths(&this.lock(), &key);
            for p in changed.remove(&key).unwrap_or_default() {
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
            this.publish(key, paths, None).await;
        }
        if caps.inlay_refresh {
            let _ = tokio::time::timeout(Duration::from_secs(5), this.client.inlay_hint_refresh())
                .await;
        }
        if caps.lens_refresh {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), this.client.code_lens_refresh()).await;
        }
    });
}
