//! Indexing: loading each workspace fully in the background (with `$/progress`), merging
//! the open documents into it and publishing its diagnostics; asking the client to watch
//! files.

use crate::session::Backend;
use crate::session::{Caps, Key};
use crate::task::blocking;
use kiwi_kernel::workspace_set::WorkspaceSet;
use std::path::PathBuf;
use std::time::Duration;
use tower_lsp_server::ls_types::*;

impl Backend {
    pub(crate) fn start_load(&self, key: Key) {
        let this = self.clone();
        tokio::spawn(async move {
            this.load(key, None).await;
        });
    }

    /// Load a workspace fully (in the background), merge the open documents, publish the
    /// diagnostics of its own items.
    pub(crate) async fn load(&self, key: Key, progress: Option<(&ProgressToken, String)>) {
        if let Some((t, msg)) = &progress {
            self.progress_report(t, msg.clone()).await;
        }
        let started = std::time::Instant::now();
        let host = self.lock().set.host().clone();
        let k = key.clone();
        // Parse everything here, on the blocking pool (items are parsed on first use).
        let Ok(ws) = blocking(move || WorkspaceSet::load(&k, &host)).await else {
            return;
        };
        let loaded_in = started.elapsed();
        // A configured extra space that is missing (or a config.yaml that cannot be read):
        // shown once per load, never a reason to stop.
        let problems = ws.space_problems.clone();
        let paths = {
            let mut st = self.lock();
            // The open documents are applied over what was read (the set's overlays).
            st.set.set_loaded(&key, ws);
            let mut paths = st.set.own_item_paths(&key);
            // And the open documents read in it from elsewhere (a read-only space's file
            // opened before the load): their diagnostics waited for it too.
            let own: std::collections::HashSet<&PathBuf> = paths.iter().collect();
            let more: Vec<PathBuf> = st
                .docs
                .iter()
                .filter(|(p, d)| d.key == key && !own.contains(p))
                .map(|(p, _)| p.clone())
                .collect();
            paths.extend(more);
            paths
        };
        self.shared.loaded_notify.notify_waiters();
        let n = paths.len();
        let what = match &key {
            Some(p) => p.display().to_string(),
            None => "the user space".into(),
        };
        // The watch (when the client cannot watch) is set up while the items are checked.
        tokio::join!(
            self.watch_if_client_cannot(&key),
            self.publish(key.clone(), paths, None)
        );
        self.publish_lockfile(key.clone(), false).await;
        // As after every check (see `publish`), and now that the watch is set too.
        self.lock().set.let_go_of_texts(&key);
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

    /// Claim the workspaces of the folders for indexing: they count as loading from here on,
    /// so a command that arrives before [`Self::index`] runs waits for them (it used to find
    /// nothing loading and answer "no tool" from an empty workspace).
    pub(crate) fn claim_index(&self) -> (Vec<Key>, Caps) {
        let mut st = self.lock();
        let mut keys: Vec<Key> = Vec::new();
        for f in st.folders.clone() {
            if let Some(r) = WorkspaceSet::project_of_folder(&f) {
                if !keys.contains(&Some(r.clone())) {
                    keys.push(Some(r));
                }
            }
        }
        if st.set.host().user_space().is_dir() {
            keys.push(None);
        }
        let keys: Vec<Key> = keys
            .into_iter()
            // Loads started by a didOpen already cover their workspace.
            .filter(|k| st.set.claim(k))
            .collect();
        (keys, st.caps)
    }

    pub(crate) async fn index(&self, keys: Vec<Key>, caps: Caps) {
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
        // Item ids that did not resolve before the index now do: their tokens change.
        if caps.tokens_refresh {
            self.refresh_tokens().await;
        }
    }

    /// Ask the client to re-read the semantic tokens of its documents (only when it said
    /// `workspace.semanticTokens.refreshSupport`; the caller checks).
    pub(crate) async fn refresh_tokens(&self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            self.client.semantic_tokens_refresh(),
        )
        .await;
    }

    pub(crate) async fn register_watchers(&self) {
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
}
