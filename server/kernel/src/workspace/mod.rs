//! The workspace: the items of the three spaces, indexed by id, with precedence,
//! shadowing and reference lookup. Items can be added, replaced and removed one at a
//! time (the language server keeps a workspace up to date as files change).

use crate::config::Config;
use crate::context::Host;
use crate::ids::{self, ItemType, Space};
use builtin::builtin_entries;
use discover::{discover_script, is_item_file};
use entry::{Entry, Origin};
use lookup::SuggestIds;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod builtin;
mod derived;
mod discover;
mod entry;
mod item;
mod lookup;
mod memory;
mod order;
mod spaces;

pub use builtin::{builtin_file, builtin_items};
pub use discover::{discover, load_file, skip_dir, Found, MAX_ITEM_BYTES};
pub use item::{parse_item, parse_item_incremental, Item, Parsed, PromptSummary};
pub use lookup::Lookup;
pub use memory::{release_free_memory, set_release_free_memory};
pub use order::path_order;
pub use spaces::{extra_spaces, ExtraRoot};

/// The prefix of the virtual paths of builtin items.
pub const BUILTIN_ROOT: &str = "<builtin>";

/// What a watched-file event changes (see [`Workspace::watched_change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedChange {
    /// An item file: re-read it (or remove it when it is gone).
    Item,
    /// Something resolutions read: every item's environment may change.
    Environment,
}

/// All items of the spaces (project, user, extra, builtin), indexed.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub project: Option<PathBuf>,
    pub user: PathBuf,
    pub host: Host,
    pub config: Config,
    /// The extra spaces, in precedence order.
    pub extra: Vec<ExtraRoot>,
    /// Warnings about the configured spaces (a directory that is missing, ...) and the
    /// config files (never an error: a check goes on without them).
    pub space_problems: Vec<String>,
    // Persistent maps: cloning a workspace (the language server does it whenever a request
    // still holds the previous snapshot while a document changes) shares all but the
    // changed paths, instead of copying 10,000 entries.
    // A path is held once: the entry's own (`Found::path`), shared by `items`, `by_id` and
    // the service's listing of the files ([`Workspace::shared_path`]); a space root by its
    // entries. Six copies of each path were a sixth of a loaded MCP server's heap at 10,000
    // items (`heaptrack`).
    items: imbl::HashMap<Arc<Path>, Arc<Entry>>,
    /// (type, id) -> paths, highest precedence first.
    by_id: imbl::HashMap<(ItemType, String), Vec<Arc<Path>>>,
    /// (type, bare name) -> ids that end with it.
    by_bare: imbl::HashMap<(ItemType, String), BTreeSet<String>>,
    /// The ids [`Workspace::suggest`] scans, per type and space restriction, made on first
    /// use and dropped on any change.
    suggest_ids: SuggestIds,
    /// The indexes derived from the items' contents ([`Workspace::derived`]), made on first
    /// use and dropped on any change, an edit of an item included.
    derived: derived::Derived,
}

/// Walk the spaces, in their order: on two threads when there are extra spaces (a walk waits
/// on the disk a folder at a time; at 10,000 items in seven spaces the walk was 60 ms of the
/// language server's indexing), on this one alone otherwise (a `kiwi run` in a project starts
/// no thread for it). Not on rayon's threads: a `kiwi run` never starts them.
fn walk_spaces(
    walks: Vec<(Space, PathBuf, bool)>,
    alone: bool,
) -> Vec<(Space, Vec<Found>, PathBuf)> {
    let walk = |(space, root, skills): &(Space, PathBuf, bool)| {
        let found = if *skills {
            crate::skill::discover_skills(root)
        } else {
            discover(root)
        };
        (*space, found, root.clone())
    };
    if alone {
        return walks.iter().map(walk).collect();
    }
    std::thread::scope(|s| {
        // The other thread walks every second space, this one the rest.
        let other = std::thread::Builder::new()
            .name("kiwi-walk".into())
            .spawn_scoped(s, || {
                walks
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .map(walk)
                    .collect::<Vec<_>>()
            });
        let Ok(other) = other else {
            return walks.iter().map(walk).collect();
        };
        let mine: Vec<_> = walks.iter().step_by(2).map(walk).collect();
        let theirs = other
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let mut out = Vec::with_capacity(walks.len());
        let mut theirs = theirs.into_iter();
        for m in mine {
            out.push(m);
            out.extend(theirs.next());
        }
        out
    })
}

impl Workspace {
    /// An empty workspace holding only the builtin space.
    pub fn new(project: Option<PathBuf>, host: Host) -> Self {
        let user = host.user_space();
        let config = Config::load(&user, project.as_deref());
        let (extra, mut space_problems) = extra_spaces(&host, project.as_deref(), &user, &config);
        for (file, msg) in &config.problems {
            space_problems.insert(0, format!("{}: {msg}", file.display()));
        }
        let mut ws = Workspace {
            project,
            user,
            host,
            config,
            extra,
            space_problems,
            items: imbl::HashMap::new(),
            by_id: imbl::HashMap::new(),
            by_bare: imbl::HashMap::new(),
            suggest_ids: SuggestIds::default(),
            derived: Default::default(),
        };
        for entry in builtin_entries() {
            ws.add(entry.clone());
        }
        ws
    }

    /// Load the project (if any), the user space and the builtin space.
    pub fn load(project: Option<PathBuf>, host: Host) -> Self {
        let mut ws = Workspace::new(project, host);
        let mut roots = vec![(Space::User, ws.user.clone())];
        if let Some(p) = &ws.project {
            roots.push((Space::Project, p.join(".ai")));
        }
        roots.extend(ws.extra.iter().map(|x| (x.space, x.root.clone())));
        // (space, root, whether it is a skills folder)
        let walks: Vec<(Space, PathBuf, bool)> = roots
            .into_iter()
            .map(|(space, root)| (space, root, false))
            .chain(
                ws.skill_roots()
                    .into_iter()
                    .map(|(space, root)| (space, root, true)),
            )
            .collect();
        let found = walk_spaces(walks, ws.extra.is_empty());
        for (space, found, root) in found {
            let root: Arc<Path> = Arc::from(root);
            for found in found {
                ws.add(Arc::new(Entry {
                    found,
                    space,
                    origin: Origin::Disk {
                        root: root.clone(),
                        let_go: false,
                        file_checks: true,
                    },
                    item: std::sync::OnceLock::new(),
                    exists: std::sync::OnceLock::new(),
                    parses: Default::default(),
                    prompt: std::sync::OnceLock::new(),
                }));
            }
        }
        ws
    }

    /// Parse every item not parsed yet, in parallel.
    /// A server keeps the workspace: the memory the parse used and freed is given back.
    pub fn load_all(&self) {
        self.load_where(|_| true);
    }

    /// Parse every item of one type not parsed yet, in parallel (what an index of that
    /// type's items needs: the others are left unread).
    pub(super) fn load_all_of(&self, item_type: ItemType) {
        self.load_where(|e| e.found.item_type == item_type);
    }

    fn load_where(&self, keep: impl Fn(&Entry) -> bool + Sync) {
        testing::wait_while_held(self.project.as_deref());
        // A walk of every entry (counted: a caller per item made a check quadratic).
        if let Ok(mut cache) = self.derived.lock() {
            cache.walks += 1;
        }
        let before = self
            .items
            .values()
            .filter(|e| e.item.get().is_none() && keep(e))
            .count();
        self.preload(keep);
        if before >= 256 {
            release_free_memory();
        }
    }

    fn preload(&self, keep: impl Fn(&Entry) -> bool + Sync) {
        let pending: Vec<&Arc<Entry>> = self
            .items
            .values()
            .filter(|e| e.item.get().is_none() && keep(e))
            .collect();
        pending.par_iter().for_each(|e| {
            e.get();
        });
    }

    /// For a server that keeps every item parsed and checks those of one space (the
    /// language server, `own`), called before they are parsed: the texts of the other
    /// spaces' items are let go of as soon as they are parsed (nothing checks them; what
    /// looks into one reads it again). The own space's are let go of once checked
    /// ([`Self::let_go_of_texts`]). Let go of all at once after the parse, the texts were
    /// freed among the parse's other allocations, whose pages the allocator kept: at 10,000
    /// items 49.7 MB of text made the resident size 14 MB smaller, against 34 MB this way.
    pub fn let_go_of_texts_once_parsed(&mut self, own: Space) {
        for (_, entry) in self.items.iter_mut() {
            if let Some(entry) = Arc::get_mut(entry) {
                let space = entry.space;
                if let Origin::Disk { let_go, .. } = &mut entry.origin {
                    *let_go = space != own;
                }
            }
        }
    }

    /// For a workspace whose checks are of the items of `space` (`kiwi check`, the language
    /// server's own space) or of none (`None`: the MCP server, which checks what it runs),
    /// called before they are parsed: the tools of the other spaces are parsed without the
    /// checks that need only their file (a whole-file Python syntax check, the field
    /// checks). A rule reads another item's fields, never its diagnostics; what asks for a
    /// tool's diagnostics (a check of it, as before a run checks every link of a chain)
    /// gets them whole, made then ([`Item::parse_diagnostics`]). At 10,000 real-shaped
    /// items the other spaces' Python syntax checks were a tenth of `kiwi check`'s time.
    pub fn file_checks_only_in(&mut self, space: Option<Space>) {
        for (_, entry) in self.items.iter_mut() {
            if let Some(entry) = Arc::get_mut(entry) {
                let own = Some(entry.space) == space;
                if let Origin::Disk { file_checks, .. } = &mut entry.origin {
                    *file_checks = own;
                }
            }
        }
    }

    /// Let go of the texts of the items read from disk, to be read again when something
    /// looks into them ([`SourceText::let_go`](crate::text::SourceText::let_go)): for a
    /// server that keeps every item parsed (the language server), once their diagnostics
    /// are made; an item read again after a change on disk too. An item a snapshot or a
    /// request still holds keeps its text, and so does a text not read from a file (an open
    /// document's, a builtin item's). How many bytes of text were let go of.
    pub fn let_go_of_texts(&mut self) -> usize {
        let mut texts: Vec<&mut crate::text::SourceText> = Vec::new();
        for (_, entry) in self.items.iter_mut() {
            let Some(entry) = Arc::get_mut(entry) else {
                continue;
            };
            if let Some(Some(item)) = entry.item.get_mut() {
                if let Some(item) = Arc::get_mut(item) {
                    if item.source.is_held() {
                        texts.push(&mut item.source);
                    }
                }
            }
        }
        // Each text is hashed, to be known again: in parallel.
        texts.par_iter_mut().map(|t| t.let_go()).sum()
    }

    /// The root of a space on disk (`None` for builtin, or no project).
    pub fn space_root(&self, space: Space) -> Option<PathBuf> {
        match space {
            Space::Project => self.project.as_ref().map(|p| p.join(".ai")),
            Space::User => Some(self.user.clone()),
            Space::Extra(_) => self
                .extra
                .iter()
                .find(|x| x.space == space)
                .map(|x| x.root.clone()),
            Space::Builtin => None,
        }
    }

    /// The folder an item's files must resolve inside: its space's root, or for a file in a
    /// skills folder (a skill's script run as a tool, `skill::script`) that skills folder.
    pub fn confinement_root(&self, item: &Item) -> Option<PathBuf> {
        self.skill_roots()
            .into_iter()
            .find(|(space, root)| *space == item.space && item.path.starts_with(root))
            .map(|(_, root)| root)
            .or_else(|| self.space_root(item.space))
    }

    /// The folders of Agent Skills, each with its space, in precedence order (see
    /// [`crate::skill`]): the project's, the user's, then each extra space's `skills/`.
    pub fn skill_roots(&self) -> Vec<(Space, PathBuf)> {
        let mut v: Vec<(Space, PathBuf)> = Vec::new();
        if let Some(p) = &self.project {
            v.extend(
                crate::skill::project_skill_roots(p)
                    .into_iter()
                    .map(|r| (Space::Project, r)),
            );
        }
        v.extend(
            crate::skill::user_skill_roots(&self.host, &self.user)
                .into_iter()
                .map(|r| (Space::User, r)),
        );
        v.extend(self.extra.iter().map(|x| (x.space, x.root.join("skills"))));
        v
    }

    /// The spaces of this workspace, in precedence order.
    pub fn spaces(&self) -> Vec<Space> {
        let mut v = Vec::new();
        if self.project.is_some() {
            v.push(Space::Project);
        }
        v.push(Space::User);
        v.extend(self.extra.iter().map(|x| x.space));
        v.push(Space::Builtin);
        v
    }

    /// The spaces' names in precedence order, for messages: `project, user, rye, builtin`.
    pub fn space_names(&self) -> String {
        self.spaces()
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A space of this workspace by name (`project`, `user`, `builtin` or an extra space's).
    pub fn parse_space(&self, name: &str) -> Option<Space> {
        Space::parse(name).or_else(|| {
            self.extra
                .iter()
                .map(|x| x.space)
                .find(|s| s.as_str() == name)
        })
    }

    /// What a watched-file event for `path` changes: an item file (as discovery finds them:
    /// in a type folder, not inside a skipped folder such as `.venv` and not through a
    /// symlinked folder), or else what resolutions read (a virtual environment, a version
    /// file, a dotenv file, the config), under `.ai/` or not.
    pub fn watched_change(&self, path: &Path) -> WatchedChange {
        if self.item_path(path).is_some() {
            WatchedChange::Item
        } else {
            WatchedChange::Environment
        }
    }

    /// [`Workspace::classify`] of a path discovery would find as an item file.
    fn item_path(&self, path: &Path) -> Option<(Space, ItemType, String)> {
        let found = self.classify(path)?;
        if found.1 == ItemType::Skill {
            // `<skills folder>/<name>/SKILL.md`: discovery does not follow a symlinked folder.
            let dir = path.parent()?;
            let linked = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
            return (!linked).then_some(found);
        }
        let root = self.space_root(found.0)?;
        let dir = root.join(found.1.folder()?);
        let rel = path.strip_prefix(&dir).ok()?;
        let mut at = dir.clone();
        let folders: Vec<_> = rel.components().collect();
        for c in &folders[..folders.len().saturating_sub(1)] {
            let name = c.as_os_str().to_str()?;
            if skip_dir(name) {
                return None;
            }
            at.push(name);
            // Discovery does not follow a symlinked folder; its files are not items.
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                return None;
            }
        }
        Some(found)
    }

    /// Which space, type and id a path would have, if it lies in a type folder of a space.
    pub fn classify(&self, path: &Path) -> Option<(Space, ItemType, String)> {
        if crate::skill::is_skill_file(path) {
            let dir = path.parent()?;
            let root = dir.parent()?;
            if let Some((space, _)) = self.skill_roots().into_iter().find(|(_, r)| r == root) {
                let id = dir.file_name()?.to_str()?.to_string();
                ids::validate_id(&id).ok()?;
                return Some((space, ItemType::Skill, id));
            }
        }
        let mut spaces = vec![Space::Project, Space::User];
        spaces.extend(self.extra.iter().map(|x| x.space));
        for space in spaces {
            let Some(root) = self.space_root(space) else {
                continue;
            };
            for item_type in ItemType::FILE_TYPES {
                let dir = root.join(item_type.folder()?);
                if let Ok(rel) = path.strip_prefix(&dir) {
                    if !is_item_file(item_type, path) {
                        return None;
                    }
                    return Some((space, item_type, ids::id_from_relative(rel)?));
                }
            }
        }
        None
    }

    /// Add or replace an item (keyed by its path).
    pub fn insert(&mut self, item: Arc<Item>) {
        self.add(Arc::new(Entry::given(item)));
    }

    fn add(&mut self, entry: Arc<Entry>) {
        self.derived = Default::default();
        let path = entry.found.path.clone();
        if let Some(old) = self.items.get(&path) {
            if old.found.item_type == entry.found.item_type
                && old.found.id == entry.found.id
                && old.space == entry.space
                && old.exists()
                && entry.exists()
            {
                // The same item read again (an edit in the editor): the indexes and the
                // cached suggestion ids stay as they are.
                self.items.insert(path, entry);
                return;
            }
        }
        self.suggest_ids = SuggestIds::default();
        self.remove_entry(&path);
        let key = (entry.found.item_type, entry.found.id.clone());
        let paths = self.by_id.entry(key).or_default();
        paths.push(path.clone());
        let items = &self.items;
        let rank = |p: &Arc<Path>| items.get(p).map(|e| e.space).unwrap_or(entry.space);
        paths.sort_by(|a, b| {
            rank(a)
                .cmp(&rank(b))
                .then(crate::skill::folder_rank(a).cmp(&crate::skill::folder_rank(b)))
                .then(a.cmp(b))
        });
        self.by_bare
            .entry((
                entry.found.item_type,
                ids::bare_name(&entry.found.id).to_string(),
            ))
            .or_default()
            .insert(entry.found.id.clone());
        self.items.insert(path, entry);
    }

    /// The files of its spaces the workspace found when it walked them (or found since), as
    /// found: the builtin items and the editor's documents are not among them.
    pub fn found_on_disk(&self) -> impl Iterator<Item = &Found> {
        self.items
            .values()
            .filter(|e| matches!(e.origin, Origin::Disk { .. }))
            .map(|e| &e.found)
    }

    /// The workspace's own copy of a path it knows (one allocation for every holder of the
    /// path: its maps, the listing of the files); `path` itself when it knows none.
    pub fn shared_path(&self, path: Arc<Path>) -> Arc<Path> {
        match self.items.get_key_value(&path) {
            Some((known, _)) => known.clone(),
            None => path,
        }
    }

    /// Remove the item of a path; returns it.
    pub fn remove(&mut self, path: &Path) -> Option<Arc<Item>> {
        self.remove_entry(path).and_then(|e| e.get().cloned())
    }

    fn remove_entry(&mut self, path: &Path) -> Option<Arc<Entry>> {
        let old = self.items.remove(path)?;
        self.suggest_ids = SuggestIds::default();
        self.derived = Default::default();
        let key = (old.found.item_type, old.found.id.clone());
        if let Some(paths) = self.by_id.get_mut(&key) {
            paths.retain(|p| **p != *path);
            if paths.is_empty() {
                self.by_id.remove(&key);
                let bare = (
                    old.found.item_type,
                    ids::bare_name(&old.found.id).to_string(),
                );
                if let Some(set) = self.by_bare.get_mut(&bare) {
                    set.remove(&old.found.id);
                    if set.is_empty() {
                        self.by_bare.remove(&bare);
                    }
                }
            }
        }
        Some(old)
    }

    /// Read a file from disk and insert it (or remove it when it is gone or not an item).
    pub fn refresh_path(&mut self, path: &Path) {
        let Some((space, item_type, id)) = self.item_path(path) else {
            return;
        };
        // A classified path lies in a space that has a root (a skill: its skills folder).
        let root = if item_type == ItemType::Skill {
            path.parent().and_then(Path::parent).map(Path::to_path_buf)
        } else {
            self.space_root(space)
        };
        let Some(root) = root else {
            return;
        };
        if !path.exists() {
            self.remove(path);
            return;
        }
        let mut found = Found {
            item_type,
            id,
            path: path.into(),
            script: None,
        };
        if item_type == ItemType::Tool {
            found.script = discover_script(path);
        }
        match load_file(&found, space, &Arc::from(root.as_path())) {
            // Kept from disk, as by a load: without a directive's element tree.
            Some(mut item) => {
                item.drop_tree();
                self.insert(Arc::new(item))
            }
            None => {
                self.remove(path);
            }
        }
    }

    pub fn item(&self, path: &Path) -> Option<&Arc<Item>> {
        self.items.get(path).and_then(|e| e.get())
    }

    /// Whether the file of this path is an item, without keeping it parsed.
    pub fn exists(&self, path: &Path) -> bool {
        self.items.get(path).is_some_and(|e| e.exists())
    }

    /// The item of a path if it is loaded, else parsed for the caller alone (not kept).
    pub fn peek(&self, path: &Path) -> Option<Arc<Item>> {
        self.items.get(path).and_then(|e| e.peek())
    }

    /// The item with this exact id that wins by precedence, parsed for the caller alone
    /// when it is not loaded (like [`Workspace::get`], keeping nothing).
    pub fn peek_id(&self, item_type: ItemType, id: &str) -> Option<Arc<Item>> {
        let paths = self.by_id.get(&(item_type, id.to_string()))?;
        paths.iter().find_map(|p| self.peek(p))
    }

    /// What a prompt list shows of the directive with this id that wins by precedence
    /// (`None`: no such item, or not a directive); kept from the parse that read the file,
    /// like [`Workspace::peek_id`] otherwise.
    pub fn prompt_summary(&self, id: &str) -> Option<Arc<PromptSummary>> {
        let paths = self.by_id.get(&(ItemType::Directive, id.to_string()))?;
        paths
            .iter()
            .find_map(|p| self.items.get(p)?.prompt())
            .flatten()
    }

    /// The files on disk read and parsed more than once since they were found, with the
    /// count (one parse per file per load: issue 25's counting test).
    #[doc(hidden)]
    pub fn parsed_again(&self) -> Vec<(PathBuf, u32)> {
        let mut v = self.parse_counts();
        v.retain(|(_, n)| *n > 1);
        v
    }

    /// Every file on disk found, with how many times it was read and parsed since (issue
    /// 25's counting tests: what a check leaves unread).
    #[doc(hidden)]
    pub fn parse_counts(&self) -> Vec<(PathBuf, u32)> {
        let mut v: Vec<(PathBuf, u32)> = self
            .items
            .values()
            .filter(|e| matches!(e.origin, Origin::Disk { .. }))
            .map(|e| {
                let n = e.parses.load(std::sync::atomic::Ordering::Relaxed);
                (e.found.path.to_path_buf(), n)
            })
            .collect();
        v.sort();
        v
    }

    /// The space of the item with this id that wins by precedence.
    pub fn winner_space(&self, item_type: ItemType, id: &str) -> Option<Space> {
        let paths = self.by_id.get(&(item_type, id.to_string()))?;
        paths
            .iter()
            .filter_map(|p| self.items.get(p))
            .find(|e| e.exists())
            .map(|e| e.space)
    }

    /// Every item, in (type, id, space, path) order, each mapped by `map` (in parallel, a
    /// chunk at a time) and then given to `visit` (in order). Items not loaded are parsed for
    /// the visit alone and dropped after it: memory stays at two chunks of items. A chunk is
    /// visited while the next is mapped (the visit, one thread's work, was a sixth of the
    /// first search of a server without a kept index, the other core idle meanwhile).
    pub fn visit_items<T: Send>(
        &self,
        map: impl Fn(&Item) -> T + Sync,
        mut visit: impl FnMut(T) + Send,
    ) {
        let mut entries: Vec<&Arc<Entry>> = self.items.values().collect();
        entries.sort_by(|a, b| {
            (a.found.item_type, &a.found.id, a.space, &a.found.path).cmp(&(
                b.found.item_type,
                &b.found.id,
                b.space,
                &b.found.path,
            ))
        });
        let mut visit_all = |mapped: Vec<Option<T>>| {
            for t in mapped.into_iter().flatten() {
                visit(t);
            }
        };
        let mut pending: Option<Vec<Option<T>>> = None;
        for chunk in entries.chunks(256) {
            let (mapped, ()) = rayon::join(
                || {
                    chunk
                        .par_iter()
                        .map(|e| e.peek().map(|item| map(&item)))
                        .collect::<Vec<_>>()
                },
                || {
                    if let Some(p) = pending.take() {
                        visit_all(p);
                    }
                },
            );
            pending = Some(mapped);
        }
        if let Some(p) = pending {
            visit_all(p);
        }
        if entries.len() >= 256 {
            release_free_memory();
        }
    }

    /// Items of the workspace whose diagnostics may depend on the item at `path`: those that
    /// reference it (a call, a relationship, an executor; a knowledge entry's `references`,
    /// `extends` or `used_by`) and those with the same id (shadowing).
    pub fn dependents(&self, path: &Path) -> Vec<PathBuf> {
        let Some(item) = self.item(path) else {
            return Vec::new();
        };
        let id = item.id.as_str();
        let bare = ids::bare_name(id);
        let names = |r: &str| r == id || r == bare;
        // The cheap tests first: paths compare component by component.
        let mut v: Vec<PathBuf> = self
            .items()
            .filter(|i| {
                !i.is_builtin()
                    && (i.id == item.id
                        || match &i.parsed {
                            Parsed::Directive(d) => d.references.iter().any(|r| names(&r.id)),
                            Parsed::Tool(t) => {
                                t.str(crate::tool::Field::ExecutorId).is_some_and(names)
                            }
                            Parsed::Knowledge(k) => k
                                .references()
                                .iter()
                                .any(|(_, r, _)| knowledge_names(r, item.item_type, id)),
                            Parsed::Skill(_) | Parsed::Unreadable(_) => false,
                        })
                    && i.path.as_os_str() != path.as_os_str()
            })
            .map(|i| i.path.clone())
            .collect();
        v.sort();
        v
    }

    /// Every item (all parsed first, in parallel).
    pub fn items(&self) -> impl Iterator<Item = &Arc<Item>> {
        self.load_all();
        if let Ok(mut cache) = self.derived.lock() {
            cache.walks += 1;
        }
        self.items.values().filter_map(|e| e.get())
    }

    /// Items of a space, sorted by path (parsed first, in parallel).
    pub fn items_in(&self, space: Space) -> Vec<&Arc<Item>> {
        self.preload(|e| e.space == space);
        let mut v: Vec<_> = self
            .items
            .values()
            .filter(|e| e.space == space)
            .filter_map(|e| e.get())
            .collect();
        v.sort_by(|a, b| path_order(&a.path, &b.path));
        v
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Whether a knowledge entry's reference (`references`, `extends`, `used_by`, maybe written
/// `type:id`) names the item `id` of this type: what its check (N604) looks up, an id that
/// is the reference or ends with it segment by segment.
fn knowledge_names(reference: &str, item_type: ItemType, id: &str) -> bool {
    let reference = match reference.split_once(':') {
        Some((t, rest)) if ItemType::parse(t).is_some() => {
            if ItemType::parse(t) != Some(item_type) {
                return false;
            }
            rest
        }
        _ => reference,
    }
    .trim();
    !reference.is_empty()
        && id
            .strip_suffix(reference)
            .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

/// A hook for tests of what a server answers while a workspace loads: while a
/// [`testing::LoadHold`] of a project is alive, [`Workspace::load_all`] of that project waits
/// (at most a minute). Nothing holds a load unless a test asks.
#[doc(hidden)]
pub mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    /// Walked on two threads or on one, the spaces give the same files in the same order.
    #[test]
    fn spaces_walked_on_two_threads_come_in_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut walks = Vec::new();
        for (i, space) in [
            Space::User,
            Space::Project,
            Space::Builtin,
            Space::User,
            Space::Project,
        ]
        .into_iter()
        .enumerate()
        {
            let root = dir.path().join(format!("s{i}"));
            for n in 0..=i {
                let p = root.join(format!("knowledge/k{n}.md"));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "---\nname: k\n---\n").unwrap();
            }
            let skill = root.join(format!("skills/s{i}/SKILL.md"));
            std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
            std::fs::write(skill, "---\nname: s\n---\n").unwrap();
            walks.push((space, root.clone(), false));
            walks.push((space, root.join("skills"), true));
        }
        let shape = |v: Vec<(Space, Vec<Found>, PathBuf)>| -> Vec<(Space, PathBuf, Vec<PathBuf>)> {
            v.into_iter()
                .map(|(s, f, r)| (s, r, f.iter().map(|f| f.path.to_path_buf()).collect()))
                .collect()
        };
        let alone = shape(walk_spaces(walks.clone(), true));
        let two = shape(walk_spaces(walks.clone(), false));
        assert_eq!(alone.len(), walks.len());
        assert_eq!(
            alone
                .iter()
                .map(|(s, r, _)| (*s, r.clone()))
                .collect::<Vec<_>>(),
            walks
                .iter()
                .map(|(s, r, _)| (*s, r.clone()))
                .collect::<Vec<_>>()
        );
        assert_eq!(alone[8].2.len(), 5, "{alone:?}");
        assert_eq!(alone[9].2.len(), 1, "{alone:?}");
        assert_eq!(two, alone);
    }
}
