//! The workspaces a long-running face keeps: one shared [`Workspace`] per project (and one
//! for the user space), which of them are loading and loaded, the project a path belongs
//! to, the overlays of open documents (an editor's unsaved text, the truth for its item
//! until it is closed: applied on load, kept over a refresh from disk) and their refresh
//! from disk by a watcher of their own (for a client that cannot watch files, as Neovim on
//! Linux).
//!
//! A set is plain data behind the caller's lock; loading (slow) is the caller's, on a
//! thread of its choosing: [`WorkspaceSet::claim`] marks a workspace as loading (an empty
//! one stands in until then), [`WorkspaceSet::set_loaded`] puts the loaded one in place.

use crate::context::{find_project_root, Host};
use crate::document::Document;
use crate::ids::{ItemType, Space};
use crate::watch::{Change, Running, Watcher};
use crate::workspace::{WatchedChange, Workspace};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which workspace: `Some(project root)`, or `None` for the user space.
pub type Key = Option<PathBuf>;

pub struct WorkspaceSet {
    host: Host,
    spaces: HashMap<Key, Arc<Workspace>>,
    /// Workspaces whose full load has started.
    loading: HashSet<Key>,
    /// Workspaces fully loaded.
    loaded: HashSet<Key>,
    /// The watchers, per workspace ([`WorkspaceSet::watch`], [`WorkspaceSet::watch_queued`]).
    watching: HashMap<Key, Watching>,
    /// The open documents, by path ([`WorkspaceSet::open`]).
    overlays: HashMap<PathBuf, Overlay>,
    /// Bumped whenever a workspace may have changed ([`WorkspaceSet::changes`]).
    changes: u64,
}

/// A workspace's watcher: running on its own thread, or queueing until drained.
enum Watching {
    Running(#[allow(dead_code)] Running),
    Queued(Watcher),
}

/// An open document: its text (with the syntax tree of its last parse, re-parsed
/// incrementally) and the workspace it belongs to.
struct Overlay {
    doc: Document,
    key: Key,
}

impl WorkspaceSet {
    pub fn new(host: Host) -> Self {
        WorkspaceSet {
            host,
            spaces: HashMap::new(),
            loading: HashSet::new(),
            loaded: HashSet::new(),
            watching: HashMap::new(),
            overlays: HashMap::new(),
            changes: 0,
        }
    }

    /// A number that changes whenever any workspace of the set may have changed (a load, an
    /// open document's edit, a refresh from disk, any mutable access): what a caller keeps
    /// something computed from the workspaces by (the workspace symbols' index).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The workspace a path belongs to: the user space, or the project holding the `.ai/`
    /// folder it is in. `None` for files outside any `.ai/`.
    pub fn project_of(&self, path: &Path) -> Option<Key> {
        if path.starts_with(self.host.user_space()) {
            return Some(None);
        }
        // A file of a read-only space (an extra space, a system space) that a project of the
        // set sees, opened from it (go to definition): it is read in that project, whose spaces
        // resolve its references, not as a project of its own.
        let mut seen_by: Vec<&PathBuf> = self
            .spaces
            .iter()
            .filter_map(|(k, ws)| {
                let k = k.as_ref()?;
                // A project not loaded yet (claimed: its spaces are known, its items not
                // read) sees it too: the same answer before the load as after.
                let read_only = ws.item(path).is_some_and(|i| !i.space.is_writable())
                    || ws
                        .classify(path)
                        .is_some_and(|(space, ..)| !space.is_writable());
                read_only.then_some(k)
            })
            .collect();
        seen_by.sort();
        if let Some(k) = seen_by.first() {
            return Some(Some((*k).clone()));
        }
        for anc in path.ancestors() {
            if anc.file_name().is_some_and(|n| n == ".ai") {
                return Some(Some(anc.parent()?.to_path_buf()));
            }
            // A file in a project's skills folder (`.agents/skills/`, `.claude/skills/`,
            // `.github/skills/`): a project with skills and no `.ai/` is a project (issue 28),
            // not the home folder, whose skills folders are the user's.
            if crate::skill::PROJECT_FOLDERS[1..]
                .iter()
                .any(|f| anc.ends_with(f))
            {
                let root = anc.parent()?.parent()?;
                if self.host.home.as_deref() != Some(root) {
                    return Some(Some(root.to_path_buf()));
                }
            }
        }
        // A project's `AGENTS.md` (the root one or a nested one) names its skills: the
        // nearest project folder above it (references and rename start there too).
        if path.file_name().is_some_and(|n| n == "AGENTS.md") {
            for anc in path.ancestors().skip(1) {
                if self.host.home.as_deref() == Some(anc) {
                    break;
                }
                if crate::context::is_project_folder(anc) {
                    return Some(Some(anc.to_path_buf()));
                }
            }
        }
        None
    }

    /// The project of an editor's folder: the folder itself when it holds `.ai/`, else the
    /// nearest one above it that does.
    pub fn project_of_folder(folder: &Path) -> Option<PathBuf> {
        Self::project_root(folder)
    }

    /// The project of any path on disk (a folder, a file, a path inside `.ai/`): the nearest
    /// folder at or above it that holds `.ai/` (a path inside a `.ai/` belongs to the project
    /// holding that `.ai/`). What the command line finds a project with.
    pub fn project_root(path: &Path) -> Option<PathBuf> {
        find_project_root(path)
    }

    pub fn get(&self, key: &Key) -> Option<&Arc<Workspace>> {
        self.spaces.get(key)
    }

    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Arc<Workspace>> {
        self.changes += 1;
        self.spaces.get_mut(key)
    }

    /// Every workspace held (loaded or not yet).
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Arc<Workspace>)> {
        self.spaces.iter()
    }

    /// Make sure a workspace exists for `key` (an empty one holding the open documents until
    /// it is loaded) and claim its load: `true` when the caller must load it now (nobody
    /// else started to).
    pub fn claim(&mut self, key: &Key) -> bool {
        if !self.spaces.contains_key(key) {
            self.spaces.insert(
                key.clone(),
                Arc::new(Workspace::new(key.clone(), self.host.clone())),
            );
            self.changes += 1;
            self.apply_overlays(key);
        }
        self.loading.insert(key.clone())
    }

    /// Load a workspace from disk, every item parsed (slow: call it off any lock). The
    /// texts of the items of other spaces than its own are let go of once parsed
    /// ([`Workspace::let_go_of_texts_once_parsed`]), and their tools' file checks made only
    /// when something asks ([`Workspace::file_checks_only_in`]).
    pub fn load(key: &Key, host: &Host) -> Workspace {
        let mut ws = Workspace::load(key.clone(), host.clone());
        let own = Self::own_space(key);
        ws.let_go_of_texts_once_parsed(own);
        ws.file_checks_only_in(Some(own));
        ws.load_all();
        ws
    }

    /// Put a loaded workspace in place, the open documents of it applied over what was read
    /// from disk.
    pub fn set_loaded(&mut self, key: &Key, ws: Workspace) {
        self.spaces.insert(key.clone(), Arc::new(ws));
        self.changes += 1;
        self.loading.insert(key.clone());
        self.loaded.insert(key.clone());
        self.apply_overlays(key);
    }

    /// Let go of the texts of workspace `key`'s items read from disk
    /// ([`Workspace::let_go_of_texts`]); nothing while a snapshot of it is held elsewhere.
    /// How many bytes of text were let go of.
    pub fn let_go_of_texts(&mut self, key: &Key) -> usize {
        self.spaces
            .get_mut(key)
            .and_then(Arc::get_mut)
            .map_or(0, Workspace::let_go_of_texts)
    }

    /// Parse the open documents of workspace `key` into it.
    fn apply_overlays(&mut self, key: &Key) {
        let open: Vec<PathBuf> = self
            .overlays
            .iter()
            .filter(|(_, o)| o.key == *key)
            .map(|(p, _)| p.clone())
            .collect();
        for p in open {
            self.apply_overlay(&p);
        }
    }

    /// Open a document: from now on `text` (and its edits, [`WorkspaceSet::edit`]) is the
    /// truth for the item at `path`, whatever the disk holds, until
    /// [`WorkspaceSet::close`]. The workspace it belongs to (`None`: outside every `.ai/`,
    /// nothing is kept); it may still have to be claimed and loaded.
    pub fn open(&mut self, path: &Path, text: String) -> Option<Key> {
        let key = self.project_of(path)?;
        self.overlays.insert(
            path.to_path_buf(),
            Overlay {
                doc: Document::new(text),
                key: key.clone(),
            },
        );
        self.apply_overlay(path);
        Some(key)
    }

    /// Change an open document's text with `f` (edits keep its syntax tree in step), then
    /// put the item it parses to in its workspace. `None` when the document is not open.
    pub fn edit<R>(&mut self, path: &Path, f: impl FnOnce(&mut Document) -> R) -> Option<R> {
        let r = f(&mut self.overlays.get_mut(path)?.doc);
        self.apply_overlay(path);
        Some(r)
    }

    /// Close a document: the disk is the truth again (its item is read again). The
    /// workspace it belonged to, `None` when it was not open.
    pub fn close(&mut self, path: &Path) -> Option<Key> {
        let o = self.overlays.remove(path)?;
        self.changes += 1;
        if let Some(ws) = self.spaces.get_mut(&o.key) {
            Arc::make_mut(ws).refresh_path(path);
        }
        Some(o.key)
    }

    /// An open document (its text and syntax tree).
    pub fn overlay(&self, path: &Path) -> Option<&Document> {
        self.overlays.get(path).map(|o| &o.doc)
    }

    pub fn is_open(&self, path: &Path) -> bool {
        self.overlays.contains_key(path)
    }

    /// Read `path` again from disk into workspace `key` (a change seen on disk), unless it
    /// is an open document: the editor's unsaved text stays the truth. Whether it was read.
    pub fn refresh_path(&mut self, key: &Key, path: &Path) -> bool {
        if self.overlays.contains_key(path) {
            return false;
        }
        self.changes += 1;
        match self.spaces.get_mut(key) {
            Some(ws) => {
                Arc::make_mut(ws).refresh_path(path);
                true
            }
            None => false,
        }
    }

    /// Parse an open document into its workspace (when the workspace exists and the path is
    /// one of its items; a text that declares no item removes it).
    fn apply_overlay(&mut self, path: &Path) {
        let Some(o) = self.overlays.get_mut(path) else {
            return;
        };
        let Some(ws) = self.spaces.get_mut(&o.key) else {
            return;
        };
        let Some((space, item_type, id)) = ws.classify(path) else {
            return;
        };
        self.changes += 1;
        // The kernel's parsers never panic; should one, the workspace keeps the last good
        // item (and the next parse starts afresh) instead of the caller going down.
        let doc = &mut o.doc;
        let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            doc.parse(item_type, id, space, path.to_path_buf())
        }));
        let Ok(parsed) = parsed else {
            o.doc.set_text(o.doc.text().to_string());
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

    pub fn is_loaded(&self, key: &Key) -> bool {
        self.loaded.contains(key)
    }

    /// Whether every workspace whose load started is loaded.
    pub fn all_loaded(&self) -> bool {
        self.loading.iter().all(|k| self.loaded.contains(k))
    }

    pub fn loaded_keys(&self) -> Vec<Key> {
        self.loaded.iter().cloned().collect()
    }

    /// The paths of the items a workspace checks: those of its own space.
    pub fn own_item_paths(&self, key: &Key) -> Vec<PathBuf> {
        let space = Self::own_space(key);
        self.spaces
            .get(key)
            .map(|ws| {
                ws.items_in(space)
                    .into_iter()
                    .map(|i| i.path.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The space whose items a workspace checks: the project's, or the user space's.
    fn own_space(key: &Key) -> Space {
        if key.is_some() {
            Space::Project
        } else {
            Space::User
        }
    }

    /// What a change of `path` on disk concerns: the workspaces that hold it as an item
    /// path (their own space, the user space, an extra space), else, for a file outside
    /// every `.ai/` (a virtual environment, a version or dotenv file), the workspaces whose
    /// project holds it and the user space's.
    pub fn concerned_by(&self, path: &Path) -> Concerned {
        // An item file as discovery finds them (not inside `.venv` or another skipped
        // folder, not through a symlinked folder: `Workspace::watched_change`).
        let keys: Vec<Key> = self
            .spaces
            .iter()
            .filter(|(_, ws)| ws.watched_change(path) == WatchedChange::Item)
            .map(|(k, _)| k.clone())
            .collect();
        if !keys.is_empty() {
            return Concerned::Items(keys);
        }
        Concerned::Environment(
            self.spaces
                .keys()
                .filter(|k| match k {
                    Some(root) => path.starts_with(root),
                    None => true,
                })
                .cloned()
                .collect(),
        )
    }

    /// The folders a watcher of workspace `key` looks at: its own space's (a project's root,
    /// or the user space), with `user` the user space too (for a project workspace nobody
    /// else watches the user space of), and each extra space's.
    /// The user's skill folders outside the user space (`~/.claude/skills`, ...) are watched
    /// whole (a file of a skill changed is a change of the skill): `true` beside them.
    fn watch_roots(&self, key: &Key, user: bool) -> Vec<(PathBuf, bool)> {
        let mut roots = vec![(
            match key {
                Some(root) => root.clone(),
                None => self.host.user_space(),
            },
            false,
        )];
        if user && key.is_some() {
            roots.push((self.host.user_space(), false));
        }
        if let Some(ws) = self.spaces.get(key) {
            for x in &ws.extra {
                roots.push((x.root.clone(), false));
            }
        }
        if user || key.is_none() {
            let us = self.host.user_space();
            for r in crate::skill::user_skill_roots(&self.host, &us) {
                if !r.starts_with(&us) {
                    roots.push((r, true));
                }
            }
        }
        roots
    }

    /// A watcher of workspace `key`'s folders ([`WorkspaceSet::watch`]). Fails where
    /// watching is not possible, or when a folder that exists cannot be watched (the watch
    /// limit reached): a watcher that misses changes is worse than none. A space that does
    /// not exist (yet) is left out.
    fn watcher(&self, key: &Key, user: bool) -> std::io::Result<Watcher> {
        build_watcher(key, &self.watch_roots(key, user))
    }

    /// What [`WorkspaceSet::watch`] does first, for a caller that starts the watch away from
    /// the set ([`WatchPlan::start`]) and keeps it with [`WorkspaceSet::keep_watch`]: walking
    /// the folders and watching each took 40 ms at 10,000 items, and the language server
    /// held its session's lock meanwhile. `None`: already watched.
    pub fn watch_plan(&self, key: &Key) -> Option<WatchPlan> {
        (!self.watching.contains_key(key)).then(|| WatchPlan {
            key: key.clone(),
            roots: self.watch_roots(key, false),
        })
    }

    /// Keep a watch started from [`WorkspaceSet::watch_plan`]; `false` when another was
    /// kept meanwhile (this one is dropped, and its thread ends).
    pub fn keep_watch(&mut self, started: StartedWatch) -> bool {
        if self.watching.contains_key(&started.key) {
            return false;
        }
        self.watching
            .insert(started.key, Watching::Running(started.running));
        true
    }

    /// Watch workspace `key` on disk with a watcher of its own, once: a project's `.ai/`
    /// tree (new folders followed), its root's entries (version and dotenv files), `.venv`,
    /// `.venv/bin`, `node_modules/.bin`; the user space's item folders; each extra space's.
    /// `on_change` gets each batch of changes on the watcher's thread (it returns `false`
    /// to stop). Fails where watching is not possible; `Ok(false)` when already watching.
    pub fn watch(
        &mut self,
        key: &Key,
        on_change: impl FnMut(Vec<Change>) -> bool + Send + 'static,
    ) -> std::io::Result<bool> {
        let Some(plan) = self.watch_plan(key) else {
            return Ok(false);
        };
        let started = plan.start(on_change)?;
        Ok(self.keep_watch(started))
    }

    /// Watch workspace `key` as [`WorkspaceSet::watch`] does (and, for a project, the user
    /// space's item folders too), its changes queued until [`WorkspaceSet::drain`]: a caller
    /// that drains before it answers sees every change made before it was asked (no thread,
    /// no race). Started again when `again` (a space appeared that could not be watched).
    /// Fails where watching is not possible (then look at the disk).
    pub fn watch_queued(&mut self, key: &Key, again: bool) -> std::io::Result<()> {
        if !again && self.watching.contains_key(key) {
            return Ok(());
        }
        self.watching.remove(key);
        let w = self.watcher(key, true)?;
        self.watching.insert(key.clone(), Watching::Queued(w));
        Ok(())
    }

    /// The changes queued for workspace `key` since the last drain. `None` when it has no
    /// queued watch (never started, or it failed: look at the disk); an error means the
    /// watch can no longer be trusted (it is dropped).
    pub fn drain(&mut self, key: &Key) -> Option<std::io::Result<Vec<Change>>> {
        let Some(Watching::Queued(w)) = self.watching.get_mut(key) else {
            return None;
        };
        let r = w.drain();
        if r.is_err() {
            self.watching.remove(key);
        }
        Some(r)
    }
}

/// A watch of a workspace's folders, planned by [`WorkspaceSet::watch_plan`].
pub struct WatchPlan {
    key: Key,
    roots: Vec<(PathBuf, bool)>,
}

/// A watch started from a [`WatchPlan`], to keep with [`WorkspaceSet::keep_watch`].
pub struct StartedWatch {
    key: Key,
    running: Running,
}

impl WatchPlan {
    /// Watch the folders and start the watcher's thread, `on_change` getting each batch (as
    /// [`WorkspaceSet::watch`]); fails where watching is not possible.
    pub fn start(
        self,
        on_change: impl FnMut(Vec<Change>) -> bool + Send + 'static,
    ) -> std::io::Result<StartedWatch> {
        let running = build_watcher(&self.key, &self.roots)?.spawn(on_change)?;
        Ok(StartedWatch {
            key: self.key,
            running,
        })
    }
}

/// A watcher of `roots`, the folders of workspace `key` ([`WorkspaceSet::watch_roots`]).
fn build_watcher(key: &Key, roots: &[(PathBuf, bool)]) -> std::io::Result<Watcher> {
    let mut w = Watcher::new()?;
    for (i, (root, skills)) in roots.iter().enumerate() {
        let project = key.as_ref().is_some_and(|p| p == root);
        let top = root.clone();
        let skills = *skills;
        let keep = move |dir: &Path| {
            if skills {
                dir.strip_prefix(&top)
                    .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"))
            } else {
                keep_dir(&top, project, dir)
            }
        };
        if let Err(e) = w.watch_tree(root, keep) {
            // A missing extra space was reported when it was loaded; a missing skills
            // folder is watched once it appears.
            if i == 0 || root.exists() {
                return Err(e);
            }
        }
    }
    Ok(w)
}

/// Which folders below a watched root are watched: below a project's root only `.ai/`,
/// `.venv` and `.venv/bin`, `node_modules` and `node_modules/.bin`; below a space's root (a
/// project's `.ai/`, the user space, an extra space) its entries and its item type folders;
/// below those, every folder but what discovery skips (`__pycache__`, `node_modules`,
/// `venv`, `target`, hidden ones: a tool's own dependencies are no items).
fn keep_dir(root: &Path, project: bool, dir: &Path) -> bool {
    let Ok(rel) = dir.strip_prefix(root) else {
        return false;
    };
    let parts: Vec<&str> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or("."))
        .collect();
    let no_git = |below: &[&str]| !below.contains(&".git");
    let space = match parts.as_slice() {
        [] => return true,
        [first, rest @ ..] if project && *first == ".ai" => rest,
        // The clients' skill folders (`.agents/skills`, `.claude/skills`, `.github/skills`):
        // every folder of a skill (a file of it changed is a change of the skill).
        [c] if project && SKILL_CLIENTS.contains(c) => return true,
        [c, s, below @ ..] if project && SKILL_CLIENTS.contains(c) && *s == "skills" => {
            return no_git(below)
        }
        [v] | [v, _] if project && *v == ".venv" => return parts.len() == 1 || parts[1] == "bin",
        [n] | [n, _] if project && *n == "node_modules" => {
            return parts.len() == 1 || parts[1] == ".bin"
        }
        _ if project => return false,
        all => all,
    };
    match space {
        [] => true,
        ["skills", below @ ..] => no_git(below),
        [folder, below @ ..] => {
            ItemType::FILE_TYPES
                .iter()
                .any(|t| t.folder() == Some(*folder))
                && !below.iter().any(|d| crate::workspace::skip_dir(d))
        }
    }
}

/// The folders of a project root that hold a client's `skills/` folder.
const SKILL_CLIENTS: &[&str] = &[".agents", ".claude", ".github"];

/// What a change on disk concerns ([`WorkspaceSet::concerned_by`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concerned {
    /// An item path (or a file under an `.ai/`) of these workspaces: read it again there.
    Items(Vec<Key>),
    /// The environment of these workspaces' tools: check their items again.
    Environment(Vec<Key>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_folders_of_a_project() {
        let r = Path::new("/p");
        let keep = |d: &str| keep_dir(r, true, Path::new(d));
        assert!(keep("/p"));
        assert!(keep("/p/.ai"));
        assert!(keep("/p/.ai/tools/x"));
        assert!(!keep("/p/.ai/tools/__pycache__"));
        assert!(!keep("/p/.ai/tools/x/node_modules"));
        assert!(!keep("/p/.ai/tools/x/.venv/lib"));
        assert!(keep("/p/.ai/knowledge"));
        assert!(!keep("/p/.ai/cache"));
        assert!(keep("/p/.venv"));
        assert!(keep("/p/.venv/bin"));
        assert!(!keep("/p/.venv/lib"));
        assert!(keep("/p/node_modules/.bin"));
        assert!(!keep("/p/node_modules/left-pad"));
        assert!(!keep("/p/src"));
        // Skill folders: every folder of a skill, not its `.git`, not the rest of `.github`.
        assert!(keep("/p/.agents/skills/pdf/scripts"));
        assert!(keep("/p/.claude"));
        assert!(keep("/p/.github/skills/x"));
        assert!(!keep("/p/.github/workflows"));
        assert!(!keep("/p/.claude/skills/pdf/.git"));
        assert!(keep("/p/.ai/skills/pdf/assets/deep"));
        assert!(keep_dir(
            Path::new("/u"),
            false,
            Path::new("/u/skills/x/scripts")
        ));
        assert!(!keep("/q/.ai"));
        assert!(keep_dir(Path::new("/u"), false, Path::new("/u/tools/a")));
        assert!(!keep_dir(Path::new("/u"), false, Path::new("/u/.git")));
        // The user space's index cache is no item folder.
        assert!(!keep_dir(Path::new("/u"), false, Path::new("/u/cache")));
    }

    #[test]
    fn project_of_a_path() {
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", "/home/u/.ai")]);
        let set = WorkspaceSet::new(host);
        assert_eq!(
            set.project_of(Path::new("/p/.ai/tools/a.py")),
            Some(Some(PathBuf::from("/p")))
        );
        assert_eq!(
            set.project_of(Path::new("/home/u/.ai/tools/a.py")),
            Some(None)
        );
        assert_eq!(set.project_of(Path::new("/p/src/a.py")), None);
    }

    #[test]
    fn project_root_of_paths_on_disk() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("proj");
        std::fs::create_dir_all(p.join(".ai/tools/x")).unwrap();
        std::fs::create_dir_all(p.join("src/deep")).unwrap();
        std::fs::write(p.join("src/deep/a.py"), "").unwrap();
        let root = |q: &str| WorkspaceSet::project_root(&p.join(q));
        assert_eq!(root(""), Some(p.clone()));
        assert_eq!(root("src/deep"), Some(p.clone()));
        assert_eq!(root("src/deep/a.py"), Some(p.clone()));
        assert_eq!(root(".ai/tools/x"), Some(p.clone()));
        assert_eq!(WorkspaceSet::project_root(d.path()), None);
        assert_eq!(
            WorkspaceSet::project_of_folder(&p.join("src")),
            Some(p.clone())
        );
    }

    /// The MCP service's watch is the set's (issue 14: one watcher per workspace), queued
    /// until drained: a change made before the drain is in it, in the project's `.ai/` and in
    /// the user space; a new folder's files are reported; the user space's index cache is
    /// not watched (writing it must not make the next call walk the spaces again).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_queued_watch_sees_what_changed_before_the_drain() {
        let d = tempfile::tempdir().unwrap();
        let (p, u) = (d.path().join("proj"), d.path().join("user"));
        std::fs::create_dir_all(p.join(".ai/knowledge/k")).unwrap();
        std::fs::create_dir_all(u.join("tools")).unwrap();
        std::fs::create_dir_all(u.join("cache")).unwrap();
        std::fs::write(p.join(".ai/knowledge/k/a.md"), "a").unwrap();
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", u.to_str().unwrap())]);
        let mut set = WorkspaceSet::new(host.clone());
        let key = Some(p.clone());
        assert!(set.drain(&key).is_none(), "not watched yet");
        set.set_loaded(&key, Workspace::load(key.clone(), host));
        set.watch_queued(&key, false).unwrap();
        assert_eq!(set.drain(&key).unwrap().unwrap(), Vec::<Change>::new());

        std::fs::write(p.join(".ai/knowledge/k/a.md"), "changed").unwrap();
        std::fs::write(u.join("tools/t.yaml"), "x").unwrap();
        std::fs::write(u.join("cache/index.bin"), "cache").unwrap();
        let seen = set.drain(&key).unwrap().unwrap();
        let paths: Vec<&Path> = seen.iter().filter_map(Change::path).collect();
        assert!(
            paths.contains(&p.join(".ai/knowledge/k/a.md").as_path()),
            "{seen:?}"
        );
        assert!(
            paths.contains(&u.join("tools/t.yaml").as_path()),
            "{seen:?}"
        );
        assert!(
            !paths.iter().any(|x| x.starts_with(u.join("cache"))),
            "{seen:?}"
        );

        // A folder made with its file at once: both reported, the folder followed.
        std::fs::create_dir_all(p.join(".ai/knowledge/new")).unwrap();
        std::fs::write(p.join(".ai/knowledge/new/b.md"), "b").unwrap();
        let seen = set.drain(&key).unwrap().unwrap();
        assert!(
            seen.contains(&Change::Created(p.join(".ai/knowledge/new/b.md"))),
            "{seen:?}"
        );
        std::fs::write(p.join(".ai/knowledge/new/b.md"), "b2").unwrap();
        let seen = set.drain(&key).unwrap().unwrap();
        assert!(
            seen.contains(&Change::Modified(p.join(".ai/knowledge/new/b.md"))),
            "{seen:?}"
        );
    }
}
