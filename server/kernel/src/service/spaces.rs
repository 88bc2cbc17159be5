//! The workspaces a [`Service`] keeps true to the disk, one per project in a kernel
//! [`WorkspaceSet`]: loaded on first use, refreshed on every call (the set's queued watch of
//! the workspace drained, else the files stated; nothing unchanged is re-parsed), their
//! search index built once per change (or read from the user space's cache).

use super::error::{OpError, Res};
use super::Service;
use crate::context::Host;
use crate::ids::{ItemType, Space};
use crate::search::{self, Index};
use crate::watch::{Change, Watcher};
use crate::workspace::{self, Workspace};
use crate::workspace_set::{Concerned, Key, WorkspaceSet};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The workspaces of a service: one per project (and the user space's) in a
/// [`WorkspaceSet`], and what keeps each true to the disk.
pub(super) struct Projects {
    set: WorkspaceSet,
    kept: HashMap<Key, Kept>,
}

impl Projects {
    pub(super) fn new(host: Host) -> Self {
        Projects {
            set: WorkspaceSet::new(host),
            kept: HashMap::new(),
        }
    }

    pub(super) fn is_loaded(&self, key: &Key) -> bool {
        self.set.is_loaded(key)
    }

    /// The loaded workspace of `key` with what keeps it true to the disk (`None`: not loaded).
    pub(super) fn get_mut(&mut self, key: &Key) -> Option<Spaces<'_>> {
        let k = self.kept.get_mut(key)?;
        // Held by the set alone: no copy is made.
        let ws = Arc::make_mut(self.set.get_mut(key)?);
        Some(Spaces { ws, k })
    }

    /// Load workspace `key` from disk into the set, watched by the set (its changes queued
    /// from before its files are stamped: nothing changed after it is missed), and what
    /// keeps it true to the disk. The listing is the workspace's own walk; a folder changed
    /// since that walk began (before the watch could see it) makes it walk again.
    pub(super) fn load(&mut self, key: &Key) {
        let walked = std::time::SystemTime::now();
        let mut ws = Workspace::load(key.clone(), self.set.host().clone());
        // The server checks what it is asked to (an item validated, the chain of a tool run):
        // no tool's file checks are made before something asks for them.
        ws.file_checks_only_in(None);
        self.set.set_loaded(key, ws);
        // Where watching is not possible the files are stated.
        let _ = self.set.watch_queued(key, false);
        let mut k = Kept {
            files: HashMap::new(),
            dirs: HashMap::new(),
            generation: 0,
            index: None,
            index_checked: false,
            open: Default::default(),
        };
        let ws = Arc::make_mut(self.set.get_mut(key).expect("loaded above"));
        let mut sp = Spaces { ws, k: &mut k };
        sp.scan(false);
        // (A second of slack: a folder's time is a coarse clock's.)
        let since = walked
            .checked_sub(std::time::Duration::from_secs(1))
            .unwrap_or(walked);
        if sp.k.dirs.values().any(|m| m.is_some_and(|m| m >= since)) {
            sp.scan(true);
        }
        self.kept.insert(key.clone(), k);
    }

    /// Bring workspace `key` up to date with the disk, cheaply: its watch drained (a file
    /// changed is read again when the set says it is an item of this workspace:
    /// [`WorkspaceSet::concerned_by`]), else the known folders and files stated; walked
    /// again only when a folder changed (a file added or removed).
    pub(super) fn refresh(&mut self, key: &Key) {
        let Some(k) = self.kept.get(key) else {
            return;
        };
        // A folder that did not exist (not watched) may have been created: walk again, and
        // watch it from now on.
        let appeared = k
            .dirs
            .iter()
            .any(|(d, m)| m.is_none() && dir_mtime(d).is_some());
        let drained = match self.set.drain(key) {
            None => Drained::Unwatched,
            Some(Ok(changes)) if !appeared && !changes.iter().any(Change::is_structural) => {
                Drained::Modified(
                    changes
                        .into_iter()
                        .filter_map(|c| match c {
                            Change::Modified(p) => Some(p),
                            _ => None,
                        })
                        .collect(),
                )
            }
            Some(_) => Drained::Rescan,
        };
        if appeared {
            let _ = self.set.watch_queued(key, true);
        }
        let modified: Vec<(PathBuf, bool)> = match &drained {
            Drained::Modified(paths) => paths
                .iter()
                .map(|p| (p.clone(), self.concerns_items(key, p)))
                .collect(),
            _ => Vec::new(),
        };
        let Some(mut sp) = self.get_mut(key) else {
            return;
        };
        match drained {
            Drained::Unwatched => sp.stat_refresh(),
            Drained::Rescan => sp.scan(true),
            Drained::Modified(_) => sp.apply_modified(modified),
        }
    }

    /// Whether a change of `path` on disk is one of an item file of workspace `key`.
    fn concerns_items(&self, key: &Key, path: &Path) -> bool {
        matches!(self.set.concerned_by(path), Concerned::Items(keys) if keys.contains(key))
    }
}

/// What a workspace's watch saw since the last call.
enum Drained {
    /// No watch (not possible here): the files are stated.
    Unwatched,
    /// A file or folder added, removed or renamed (or a folder that was missing appeared):
    /// the spaces are walked again.
    Rescan,
    /// Only these files were modified.
    Modified(Vec<PathBuf>),
}

/// One project's workspace (held by the [`WorkspaceSet`], which watches it) with what keeps
/// it true to the disk: the stamps of its files and folders, and its search index.
pub(super) struct Spaces<'a> {
    pub(super) ws: &'a mut Workspace,
    pub(super) k: &'a mut Kept,
}

/// What keeps one workspace true to the disk.
pub(super) struct Kept {
    /// Every item file: its sidecar script and its stamp when last read.
    pub(super) files: search::cache::Files,
    /// Every folder that can hold items (the space roots, type folders and their subfolders,
    /// present or not), with its modification time: a file added or removed changes it
    /// (looked at where the set cannot watch).
    pub(super) dirs: HashMap<PathBuf, Option<SystemTime>>,
    pub(super) generation: u64,
    pub(super) index: Option<(u64, Arc<Index>)>,
    /// Whether the index kept on disk was tried (once, for the first index).
    pub(super) index_checked: bool,
    /// The editor's open documents applied over the disk ([`Spaces::apply_open`]).
    pub(super) open: std::collections::HashSet<PathBuf>,
}

use search::cache::{dir_mtime, stamp, Stamp};
use workspace::skip_dir;

/// The folders to watch under a space root.
fn collect_dirs(root: &Path, out: &mut HashMap<PathBuf, Option<SystemTime>>) {
    out.insert(root.to_path_buf(), dir_mtime(root));
    let mut stack: Vec<PathBuf> = ItemType::FILE_TYPES
        .iter()
        .filter_map(|t| t.folder())
        .map(|f| root.join(f))
        .collect();
    while let Some(d) = stack.pop() {
        out.insert(d.clone(), dir_mtime(&d));
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && !e.file_name().to_str().is_some_and(skip_dir) {
                stack.push(e.path());
            }
        }
    }
}

impl Spaces<'_> {
    fn roots(ws: &Workspace) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = [Space::User, Space::Project]
            .into_iter()
            .filter_map(|s| ws.space_root(s))
            .collect();
        v.extend(ws.extra.iter().map(|x| x.root.clone()));
        v
    }

    pub(super) fn extra_spaces(&self) -> Vec<Space> {
        self.ws.extra.iter().map(|x| x.space).collect()
    }

    /// Put the editor's open documents over what the disk holds (an item that is not the
    /// one its unsaved text parses to is replaced), and read again from disk each document
    /// closed since.
    pub(super) fn apply_open(&mut self, open: Vec<(PathBuf, Option<Arc<workspace::Item>>)>) {
        let mut changed = false;
        let now: std::collections::HashSet<PathBuf> = open.iter().map(|(p, _)| p.clone()).collect();
        for p in self.k.open.difference(&now) {
            self.ws.refresh_path(p);
            changed = true;
        }
        for (p, item) in open {
            match (item, self.ws.item(&p)) {
                (Some(i), Some(old)) if Arc::ptr_eq(&i, old) => {}
                (Some(i), _) => {
                    self.ws.insert(i);
                    changed = true;
                }
                (None, Some(_)) => {
                    self.ws.remove(&p);
                    changed = true;
                }
                (None, None) => {}
            }
        }
        self.k.open = now;
        if changed {
            self.k.generation += 1;
        }
    }

    /// Walk the spaces: every file's stamp, every folder's time; with `apply`, re-read what
    /// changed and drop what is gone. Without `apply` (the load, which has just walked the
    /// spaces), the files are the workspace's own: the listing is what was loaded, and the
    /// spaces are not walked a second time (at 10,000 items the second walk, one stat after
    /// another, was a seventh of a first search without a kept index).
    fn scan(&mut self, apply: bool) {
        let found: Vec<workspace::Found> = if apply {
            let mut v = Vec::new();
            for root in Self::roots(self.ws) {
                v.extend(workspace::discover(&root));
            }
            for (_, root) in self.ws.skill_roots() {
                v.extend(crate::skill::discover_skills(&root));
            }
            v
        } else {
            self.ws.found_on_disk().cloned().collect()
        };
        // (path, what its stamp includes besides itself: a YAML tool's script, a skill's
        // folder.)
        let found: Vec<(Arc<Path>, Option<PathBuf>)> = found
            .into_iter()
            .map(|f| {
                // Each `SKILL.md` with its folder as its "script" (stamped with the latest
                // time of any file in it).
                let script = match f.item_type {
                    ItemType::Skill => f.path.parent().map(Path::to_path_buf),
                    _ => f.script,
                };
                (self.ws.shared_path(f.path), script)
            })
            .collect();
        let ws = &*self.ws;
        // The folders walked while the files are stated (in parallel).
        let (dirs, stamps) = rayon::join(
            || {
                let mut dirs = HashMap::new();
                for root in Self::roots(ws) {
                    collect_dirs(&root, &mut dirs);
                }
                // Each skills folder and the folders in it (present or not).
                for (_, root) in ws.skill_roots() {
                    dirs.insert(root.clone(), dir_mtime(&root));
                    for d in crate::skill::skill_dirs(&root) {
                        let m = dir_mtime(&d);
                        dirs.insert(d, m);
                    }
                }
                dirs
            },
            || {
                use rayon::prelude::*;
                found
                    .par_iter()
                    .map(|(p, script)| stamp(p, script.as_deref()))
                    .collect::<Vec<_>>()
            },
        );
        let files: search::cache::Files = found
            .into_iter()
            .zip(stamps)
            .map(|((p, script), s)| (p, (script, s)))
            .collect();
        if apply {
            let mut changed = false;
            for p in self.k.files.keys() {
                if !files.contains_key(p) {
                    self.ws.remove(p);
                    changed = true;
                }
            }
            for (p, (_, s)) in &files {
                if self.k.files.get(p).map(|(_, old)| old) != Some(s) {
                    self.ws.refresh_path(p);
                    changed = true;
                }
            }
            if changed {
                self.k.generation += 1;
            }
        }
        self.k.files = files;
        self.k.dirs = dirs;
    }

    /// Read again the files modified: a known item file when its stamp changed, the tool of
    /// a sidecar script; another item file of this workspace (as the set says) makes it walk
    /// the spaces again.
    fn apply_modified(&mut self, modified: Vec<(PathBuf, bool)>) {
        let mut changed = false;
        let mut rescan = false;
        for (p, item) in modified {
            if let Some(e) = self.k.files.get_mut(p.as_path()) {
                let s = stamp(&p, e.0.as_deref());
                if s != e.1 {
                    e.1 = s;
                    self.ws.refresh_path(&p);
                    changed = true;
                }
                continue;
            }
            // A sidecar script changed: re-read its tool; a file of a skill: its skill.
            let owner = self
                .k
                .files
                .iter()
                .find(|(k, (script, _))| {
                    script.as_deref() == Some(p.as_path())
                        || (crate::skill::is_skill_file(k)
                            && script.as_deref().is_some_and(|d| p.starts_with(d)))
                })
                .map(|(k, _)| k.clone());
            if let Some(k) = owner {
                if let Some(e) = self.k.files.get_mut(&k) {
                    e.1 = stamp(&k, e.0.as_deref());
                }
                self.ws.refresh_path(&k);
                changed = true;
            } else if item {
                // An item file of this workspace not known yet: walk again.
                rescan = true;
            }
        }
        if changed {
            self.k.generation += 1;
        }
        if rescan {
            self.scan(true);
        }
    }

    /// Without a watch: stat the known folders and files (in parallel); walk again only when
    /// a folder changed (a file added or removed).
    fn stat_refresh(&mut self) {
        use rayon::prelude::*;
        let dirs_changed = self.k.dirs.par_iter().any(|(d, m)| dir_mtime(d) != *m);
        if dirs_changed {
            self.scan(true);
            return;
        }
        let changed: Vec<(Arc<Path>, Stamp)> = self
            .k
            .files
            .par_iter()
            .filter_map(|(p, (script, old))| {
                let s = stamp(p, script.as_deref());
                (s != *old).then(|| (p.clone(), s))
            })
            .collect();
        if changed.is_empty() {
            return;
        }
        for (p, s) in changed {
            self.ws.refresh_path(&p);
            if let Some(e) = self.k.files.get_mut(&p) {
                e.1 = s;
            }
        }
        self.k.generation += 1;
    }

    pub(super) fn index(&mut self) -> Arc<Index> {
        match &self.k.index {
            Some((g, idx)) if *g == self.k.generation => idx.clone(),
            _ => {
                let (user, project) = (self.ws.user.clone(), self.ws.project.clone());
                let extras = extras_of(self.ws);
                // The first index: the one an earlier server kept on disk, if it describes
                // these very files; else built, and kept on disk for the next server.
                let cached = (!self.k.index_checked)
                    .then(|| search::cache::read(&user, project.as_deref(), &extras))
                    .flatten()
                    .filter(|c| c.files == self.k.files && c.dirs == self.k.dirs);
                self.k.index_checked = true;
                let idx = match cached {
                    Some(c) => c.index.clone(),
                    None => {
                        let idx = Arc::new(Index::build(self.ws));
                        search::cache::write_in_background(
                            user,
                            project,
                            extras,
                            self.k.files.clone(),
                            self.k.dirs.clone(),
                            idx.clone(),
                        );
                        idx
                    }
                };
                self.k.index = Some((self.k.generation, idx.clone()));
                idx
            }
        }
    }
}

/// An index read from the user space's cache (`None`: none, or not valid), and when the last
/// check that found the disk unchanged began.
pub(super) struct CachedIndex {
    cached: Option<Arc<search::cache::Cached>>,
    checked_from: Option<std::time::Instant>,
    /// The extra spaces it was read for (the configuration's then).
    extras: search::cache::Extras,
    /// A watch of the listing's folders, set before the first check began: while its queue
    /// stays empty the disk is the one checked, and a later call needs no new check (`None`
    /// where watching is not possible: the files are stated again).
    watch: Option<Watcher>,
}

/// A watch of `dirs` (`None` where watching is not possible, e.g. out of watches: the files
/// are then stated).
fn watch_dirs<'a>(dirs: impl Iterator<Item = &'a Path>) -> Option<Watcher> {
    let mut w = Watcher::new().ok()?;
    for d in dirs {
        w.watch_dir(d).ok()?;
    }
    Some(w)
}

/// The extra spaces of a loaded workspace, as the cache names them.
fn extras_of(ws: &Workspace) -> search::cache::Extras {
    ws.extra.iter().map(|x| (x.space, x.root.clone())).collect()
}

impl Service {
    /// The project a call is about: the fixed one, else its `project_path` (checked).
    pub(super) fn project_for(&self, project_path: Option<&str>) -> Res<Option<PathBuf>> {
        if let Some(p) = &self.project {
            // A call naming another project is refused, never silently answered from this
            // one (the same folder spelt another way is this one).
            if let Some(asked) = project_path.filter(|x| !x.is_empty()) {
                let same = |a: &Path, b: &Path| {
                    a == b
                        || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
                };
                if !same(Path::new(asked), p) {
                    return Err(OpError::new(
                        "project_mismatch",
                        format!(
                            "project_path `{asked}` is not this server's project `{}` (fixed by --project or the folder it started in); leave project_path out, or start a server for that project",
                            p.display()
                        ),
                    )
                    .with("project", json!(p.to_string_lossy())));
                }
            }
            return Ok(Some(p.clone()));
        }
        match project_path.filter(|p| !p.is_empty()) {
            None => Ok(None),
            Some(p) => {
                let p = PathBuf::from(p);
                if !p.is_absolute() {
                    return Err(OpError::new(
                        "invalid_project_path",
                        format!("project_path `{}` must be an absolute path", p.display()),
                    ));
                }
                if !p.join(".ai").is_dir() {
                    return Err(OpError::new(
                        "invalid_project_path",
                        format!(
                            "project_path `{}` holds no `.ai/` folder; give the root of a Kiwi project",
                            p.display()
                        ),
                    ));
                }
                Ok(Some(p))
            }
        }
    }

    /// Run `f` on the up-to-date workspace of a project.
    pub(super) fn with<R>(
        &self,
        project_path: Option<&str>,
        f: impl FnOnce(&mut Spaces<'_>) -> R,
    ) -> Res<R> {
        let project = self.project_for(project_path)?;
        let mut all = self
            .spaces
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !all.is_loaded(&project) {
            let loading = || self.loading.lock().unwrap_or_else(|p| p.into_inner());
            loading().insert(project.clone());
            all.load(&project);
            loading().remove(&project);
            // A search that came while it loaded read the index kept on disk: keep it when it
            // describes these very files (no second read, no build).
            let slot = self
                .cached
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&project);
            if let Some((c, extras)) = slot.and_then(|s| Some((s.cached?, s.extras))) {
                let sp = all.get_mut(&project).expect("loaded above");
                if c.files == sp.k.files && c.dirs == sp.k.dirs && extras == extras_of(sp.ws) {
                    sp.k.index = Some((sp.k.generation, c.index.clone()));
                    sp.k.index_checked = true;
                }
            }
            // The listing of the index kept on disk is dropped now (the loaded workspace
            // keeps its own): give what the load and it freed back to the system.
            workspace::release_free_memory();
        }
        all.refresh(&project);
        let mut sp = all.get_mut(&project).expect("loaded above");
        if let Some(docs) = &self.open_docs {
            sp.apply_open(docs.open_items(&project));
        }
        Ok(f(&mut sp))
    }

    /// Whether a project's workspace is loaded (one being loaded is not).
    fn loaded(&self, project: &Option<PathBuf>) -> bool {
        match self.spaces.try_lock() {
            Ok(all) => all.is_loaded(project),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().is_loaded(project),
            // Held: by a load of this project, or by a call on a loaded one.
            Err(std::sync::TryLockError::WouldBlock) => !self
                .loading
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(project),
        }
    }

    /// The extra spaces of a project: its loaded workspace's; while it is not loaded, the
    /// ones its configuration names now (what loading it would give), so that a search
    /// answered from the index kept on disk does not wait for the load.
    pub(super) fn extra_spaces(&self, project_path: Option<&str>) -> Res<Vec<Space>> {
        let project = self.project_for(project_path)?;
        if self.loaded(&project) {
            return self.with(project_path, |sp| sp.extra_spaces());
        }
        Ok(self
            .extras_now(&project)
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    /// The names of the extra spaces (`rye`, ...) of the server's project (or of none): what
    /// `source` accepts besides project, user, builtin, registry and all.
    pub fn extra_space_names(&self) -> Vec<String> {
        self.extra_spaces(None)
            .map(|v| v.iter().map(|s| s.as_str().to_string()).collect())
            .unwrap_or_default()
    }

    /// The extra spaces the configuration names now (`KIWI_SPACES`, the `config.yaml`s).
    fn extras_now(&self, project: &Option<PathBuf>) -> search::cache::Extras {
        let user = self.host.user_space();
        let config = crate::config::Config::load(&user, project.as_deref());
        workspace::extra_spaces(&self.host, project.as_deref(), &user, &config)
            .0
            .into_iter()
            .map(|x| (x.space, x.root))
            .collect()
    }

    /// The search index of a project: the loaded workspace's; while it is not loaded yet
    /// (a server answering its first call), the one kept on disk in the user space's
    /// `cache/` when the files are still those it was built from (checked at every call).
    pub(super) fn search_index(&self, project_path: Option<&str>) -> Res<Arc<Index>> {
        let arrived = std::time::Instant::now();
        let project = self.project_for(project_path)?;
        // (An editor's unsaved text is in no index kept on disk.)
        if !self.loaded(&project) && self.open_docs.is_none() {
            if let Some(idx) = self.cached_index(&project, arrived) {
                return Ok(idx);
            }
        }
        self.with(project_path, |sp| sp.index())
    }

    /// The index kept on disk of a project not loaded yet (read once), if the disk still holds
    /// the files it was built from: checked by a check that began after `since` (the call's
    /// arrival: every change made before the call is seen), or by the watch of its folders
    /// set before an earlier check, when nothing changed since. Calls wait for a check under
    /// way rather than repeat it.
    fn cached_index(
        &self,
        project: &Option<PathBuf>,
        since: std::time::Instant,
    ) -> Option<Arc<Index>> {
        let mut slots = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots.entry(project.clone()).or_insert_with(|| {
            let extras = self.extras_now(project);
            let read = search::cache::read_current(
                &self.host.user_space(),
                project.as_deref(),
                &extras,
                |files, dirs| {
                    // The folders of the listing (for one that does not exist, as a type
                    // folder the user space lacks, its parent, where it would appear), and
                    // those of sidecar scripts elsewhere.
                    let mut watched: Vec<&Path> = dirs
                        .iter()
                        .map(|(d, m)| match m {
                            Some(_) => d.as_path(),
                            None => d.parent().unwrap_or(d),
                        })
                        .chain(
                            files
                                .values()
                                .filter_map(|(script, _)| script.as_deref()?.parent())
                                .filter(|d| !dirs.contains_key(*d)),
                        )
                        .collect();
                    watched.sort_unstable();
                    watched.dedup();
                    watch_dirs(watched.into_iter())
                },
            );
            match read {
                Some((c, checked, watch)) => CachedIndex {
                    cached: Some(Arc::new(c)),
                    checked_from: Some(checked),
                    extras,
                    watch,
                },
                None => CachedIndex {
                    cached: None,
                    checked_from: None,
                    extras,
                    watch: None,
                },
            }
        });
        let c = slot.cached.clone()?;
        if slot.checked_from.is_some_and(|t| t >= since) {
            return Some(c.index.clone());
        }
        let start = std::time::Instant::now();
        // Nothing in the watch's queue: nothing changed in a listed folder since the last
        // check began. Something: the files are stated (a change may be one to no item).
        let quiet = match slot.watch.as_mut().map(Watcher::drain) {
            Some(Ok(changes)) => changes.is_empty(),
            Some(Err(_)) => {
                slot.watch = None;
                false
            }
            None => false,
        };
        if self.extras_now(project) == slot.extras
            && (quiet || search::cache::listing_is_current(&c.files, &c.dirs))
        {
            slot.checked_from = Some(start);
            Some(c.index.clone())
        } else {
            slot.cached = None; // stale: the workspace is loaded and the index built
            slot.watch = None;
            None
        }
    }

    /// Load the fixed project's workspace and build its search index now (at start-up, in
    /// the background), so that the first call does not wait for it.
    pub fn warm(&self) {
        // First the index kept on disk, read and checked against the disk while both cores are
        // free: a search that came meanwhile answers from it without checking again, and one
        // that comes while the workspace loads answers from it once the disk is checked.
        if let Ok(project) = self.project_for(None) {
            let loaded = self
                .spaces
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_loaded(&project);
            if !loaded {
                let _ = self.cached_index(&project, std::time::Instant::now());
            }
        }
        let _ = self.with(None, |sp| sp.index());
    }

    /// The current workspace of a project (a snapshot).
    pub fn workspace(&self, project_path: Option<&str>) -> Res<Workspace> {
        self.with(project_path, |sp| sp.ws.clone())
    }

    /// A number that changes whenever an item file of a project's spaces is added, changed
    /// or removed (the disk is looked at first, as for any call): what a face polls to tell
    /// its client that its lists or a followed item changed.
    pub fn generation(&self, project_path: Option<&str>) -> Res<u64> {
        self.with(project_path, |sp| sp.k.generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write each (path below `root`, text), with the folders it needs.
    fn write_files(root: &Path, files: &[(&str, &str)]) {
        for (rel, text) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().expect("a file below root")).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    /// The listing a load makes from the workspace's own walk is the one a walk of the
    /// spaces makes: every item file, a YAML tool's script, a skill's folder, the user
    /// space's files; no builtin item.
    #[test]
    fn the_listing_made_at_the_load_is_the_one_a_walk_makes() {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("proj");
        let user = dir.path().join("user");
        let tool = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n";
        write_files(
            dir.path(),
            &[
                ("proj/.ai/tools/a/echo.py", tool),
                (
                    "proj/.ai/tools/a/conv.yaml",
                    "tool_type: python\nversion: 1.0.0\n",
                ),
                ("proj/.ai/tools/a/conv.py", "print(1)\n"),
                ("proj/.ai/tools/a/lib/helper.py", "def f():\n    pass\n"),
                ("proj/.ai/knowledge/k.md", "---\nname: k\n---\n\nbody\n"),
                (
                    "proj/.ai/directives/d.md",
                    "<directive name=\"d\" version=\"1.0.0\"></directive>\n",
                ),
                (
                    "proj/.ai/skills/greet/SKILL.md",
                    "---\nname: greet\ndescription: Greets.\n---\n",
                ),
                ("proj/.ai/skills/greet/scripts/run.sh", "echo hi\n"),
                ("user/knowledge/u.md", "---\nname: u\n---\n"),
            ],
        );
        // Folders an hour old: the load does not walk again (a folder changed since its
        // walk began would make it).
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for e in ignore::WalkBuilder::new(dir.path())
            .standard_filters(false)
            .build()
        {
            let e = e.unwrap();
            std::fs::File::open(e.path())
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
        let mut all = Projects::new(host);
        let key = Some(proj);
        all.load(&key);
        let at_load = all.kept[&key].files.clone();
        let generation = all.kept[&key].generation;
        let mut names: Vec<String> = at_load
            .iter()
            .map(|(p, (script, _))| {
                let rel = |p: &Path| {
                    p.strip_prefix(dir.path())
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                };
                match script {
                    Some(s) => format!("{} + {}", rel(p), rel(s)),
                    None => rel(p),
                }
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "proj/.ai/directives/d.md",
                "proj/.ai/knowledge/k.md",
                "proj/.ai/skills/greet/SKILL.md + proj/.ai/skills/greet",
                "proj/.ai/tools/a/conv.yaml + proj/.ai/tools/a/conv.py",
                "proj/.ai/tools/a/echo.py",
                "proj/.ai/tools/a/lib/helper.py",
                "user/knowledge/u.md",
            ]
        );
        all.get_mut(&key).unwrap().scan(true);
        assert_eq!(all.kept[&key].files, at_load);
        assert_eq!(all.kept[&key].generation, generation, "nothing read again");
    }

    /// The listing a loaded project keeps holds each item file's path as the workspace's own
    /// allocation (one copy of a path, not one per holder).
    #[test]
    fn the_listing_shares_the_workspace_paths() {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("proj");
        write_files(
            &proj.join(".ai"),
            &[
                ("tools/a/echo.py", "__version__ = \"1.0.0\"\n"),
                ("knowledge/k.md", "---\nname: k\n---\n\nbody\n"),
                (
                    "skills/greet/SKILL.md",
                    "---\nname: greet\ndescription: Greets.\n---\n",
                ),
            ],
        );
        let user = dir.path().join("user");
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
        let mut all = Projects::new(host);
        let key = Some(proj);
        all.load(&key);
        let ws = all.set.get(&key).expect("loaded").clone();
        let files = &all.kept[&key].files;
        assert!(files.len() >= 3, "{files:?}");
        for p in files.keys() {
            assert!(
                Arc::ptr_eq(&ws.shared_path(p.clone()), p),
                "{} is held twice",
                p.display()
            );
        }
    }
}
