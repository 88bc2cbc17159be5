//! The workspace: the items of the three spaces, indexed by id, with precedence,
//! shadowing and reference lookup. Items can be added, replaced and removed one at a
//! time (the language server keeps a workspace up to date as files change).

use crate::config::Config;
use crate::context::Host;
use crate::diag::{Code, Diagnostic};
use crate::directive::Directive;
use crate::ids::{self, IdError, ItemType, Space};
use crate::knowledge::Knowledge;
use crate::text::{SourceText, TextRange};
use crate::tool::ToolFile;
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_files.rs"));
}

/// The prefix of the virtual paths of builtin items.
pub const BUILTIN_ROOT: &str = "<builtin>";

/// What a file parsed into.
#[derive(Debug, Clone)]
pub enum Parsed {
    Directive(Box<Directive>),
    Tool(Box<ToolFile>),
    Knowledge(Box<Knowledge>),
    /// The file could not be read (not UTF-8, or refused); its diagnostic says why.
    Unreadable(Diagnostic),
}

/// One item of one space.
#[derive(Debug, Clone)]
pub struct Item {
    pub item_type: ItemType,
    pub id: String,
    pub space: Space,
    /// The file (for builtin items a virtual path under `<builtin>/`).
    pub path: PathBuf,
    /// For a script tool described by a sidecar YAML: the script.
    pub script: Option<PathBuf>,
    pub source: SourceText,
    pub parsed: Parsed,
}

impl Item {
    pub fn text(&self) -> &str {
        &self.source.text
    }
    pub fn directive(&self) -> Option<&Directive> {
        match &self.parsed {
            Parsed::Directive(d) => Some(d),
            _ => None,
        }
    }
    pub fn tool(&self) -> Option<&ToolFile> {
        match &self.parsed {
            Parsed::Tool(t) => Some(t),
            _ => None,
        }
    }
    pub fn knowledge(&self) -> Option<&Knowledge> {
        match &self.parsed {
            Parsed::Knowledge(k) => Some(k),
            _ => None,
        }
    }
    /// The diagnostics found while reading and parsing this file alone.
    pub fn parse_diagnostics(&self) -> &[Diagnostic] {
        match &self.parsed {
            Parsed::Directive(d) => &d.diagnostics,
            Parsed::Tool(t) => &t.diagnostics,
            Parsed::Knowledge(k) => &k.diagnostics,
            Parsed::Unreadable(d) => std::slice::from_ref(d),
        }
    }
    /// The file a tool runs: the sidecar's script, else the tool file itself.
    pub fn tool_path(&self) -> &Path {
        self.script.as_deref().unwrap_or(&self.path)
    }
    pub fn is_builtin(&self) -> bool {
        self.space == Space::Builtin
    }
    /// A one-line description, when the item declares one.
    pub fn description(&self) -> Option<&str> {
        match &self.parsed {
            Parsed::Directive(d) => d.description.as_ref().map(|s| s.value.as_str()),
            Parsed::Tool(t) => t.str(crate::tool::Field::Description),
            Parsed::Knowledge(k) => k.title(),
            Parsed::Unreadable(_) => None,
        }
    }
}

/// Parse a file's bytes into an item of this type. `None` when the file is not an item
/// (a Python helper module that declares no metadata).
pub fn parse_item(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
) -> Option<Item> {
    parse_item_with(item_type, id, space, path, bytes, None)
}

/// [`parse_item`] for a text being edited: `syntax` holds the tree-sitter tree of the
/// previous version (edited to follow the changes since, see [`crate::document`]); it is
/// re-used, then replaced by this version's tree (`None` for kinds parsed without one).
pub fn parse_item_incremental(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
    syntax: &mut Option<tree_sitter::Tree>,
) -> Option<Item> {
    parse_item_with(item_type, id, space, path, bytes, Some(syntax))
}

/// `syntax`: `None` when no tree is wanted (a file read once: Python metadata of the common
/// shape is then read without tree-sitter), else as for [`parse_item_incremental`].
fn parse_item_with(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
    mut syntax: Option<&mut Option<tree_sitter::Tree>>,
) -> Option<Item> {
    let old = syntax.as_mut().and_then(|s| s.take());
    let want_tree = syntax.is_some();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (text, parsed) = match std::str::from_utf8(bytes) {
        Ok(text) => {
            // The builtin tools are embedded in the binary and checked once and for all by
            // tests/it/builtin_items.rs: their file checks (a JSON Schema meta-validation,
            // some 5 M instructions) would otherwise be paid by every `kiwi run`.
            let file_checks = space != Space::Builtin;
            let parsed = match item_type {
                ItemType::Directive => Parsed::Directive(Box::new(crate::directive::parse(text))),
                ItemType::Knowledge => Parsed::Knowledge(Box::new(crate::knowledge::parse(text))),
                ItemType::Tool if ext == "py" => {
                    let (t, tree) =
                        crate::tool::parse_python_with(text, old.as_ref(), want_tree, file_checks);
                    if let Some(s) = syntax {
                        *s = tree;
                    }
                    // ryeos's tools keep their metadata in a `# ryeos-tool:` comment block
                    // (read by `parse_python_with`): always items.
                    if !t.declares_anything() && !crate::tool::has_ryeos_tool_header(text) {
                        return None;
                    }
                    Parsed::Tool(Box::new(t))
                }
                ItemType::Tool => {
                    let (t, tree) = crate::tool::parse_yaml_with(text, old.as_ref(), file_checks);
                    if let Some(s) = syntax {
                        *s = tree;
                    }
                    Parsed::Tool(Box::new(t))
                }
                ItemType::System => return None,
            };
            (text.to_string(), parsed)
        }
        Err(e) => {
            let at = e.valid_up_to();
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            // The lossy text keeps every valid byte before the error at the same offset.
            let end = lossy[at..]
                .chars()
                .next()
                .map(|c| at + c.len_utf8())
                .unwrap_or(at);
            let d = Diagnostic::new(
                Code::K001,
                TextRange::new(at, end),
                format!(
                    "this file is not valid UTF-8 (invalid byte at offset {at}); save it as UTF-8"
                ),
            );
            (lossy, Parsed::Unreadable(d))
        }
    };
    Some(Item {
        item_type,
        id,
        space,
        path,
        script: None,
        source: SourceText::new(text),
        parsed,
    })
}

/// The result of looking a reference up ([`Workspace::lookup`]); its error for every face
/// is [`crate::lookup::LookupError`].
#[derive(Debug, Clone)]
pub enum Lookup {
    Found(Arc<Item>),
    /// No item has this id; the closest ids, best first.
    Missing {
        suggestions: Vec<String>,
    },
    /// A bare name that several items end with.
    Ambiguous {
        candidates: Vec<String>,
    },
    /// The reference is not a valid id.
    Refused(IdError),
}

/// The file extensions that can hold items of a type.
fn is_item_file(item_type: ItemType, path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match item_type {
        ItemType::Directive | ItemType::Knowledge => ext.eq_ignore_ascii_case("md"),
        ItemType::Tool => matches!(ext, "py" | "yaml" | "yml"),
        ItemType::System => false,
    }
}

/// Folders never searched for items.
fn skip_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "__pycache__" | "node_modules" | "venv" | "target")
}

/// What a watched-file event changes (see [`Workspace::watched_change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedChange {
    /// An item file: re-read it (or remove it when it is gone).
    Item,
    /// Something resolutions read: every item's environment may change.
    Environment,
}

/// A file found in a space: its type, id, path, and for a sidecar YAML its script.
#[derive(Debug, Clone)]
pub struct Found {
    pub item_type: ItemType,
    pub id: String,
    pub path: PathBuf,
    pub script: Option<PathBuf>,
}

/// Every item file of a space root (`.../.ai` or the user space).
pub fn discover(root: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    for item_type in ItemType::FILE_TYPES {
        let Some(folder) = item_type.folder() else {
            continue;
        };
        let dir = root.join(folder);
        if !dir.is_dir() {
            continue;
        }
        let walker = ignore::WalkBuilder::new(&dir)
            .standard_filters(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(|e| {
                e.depth() == 0
                    || !e.file_type().is_some_and(|t| t.is_dir())
                    || !e.file_name().to_str().is_some_and(skip_dir)
            })
            .build();
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in walker.flatten() {
            if entry
                .file_type()
                .is_some_and(|t| t.is_file() || t.is_symlink())
            {
                files.push(entry.into_path());
            }
        }
        let set: BTreeSet<&PathBuf> = files.iter().collect();
        for path in &files {
            if !is_item_file(item_type, path) {
                continue;
            }
            let Ok(rel) = path.strip_prefix(&dir) else {
                continue;
            };
            let Some(id) = ids::id_from_relative(rel) else {
                continue;
            };
            let mut script = None;
            if item_type == ItemType::Tool {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ext == "py" {
                    // A .py beside a same-stem YAML is that YAML's script, not an item of its own.
                    if set.contains(&path.with_extension("yaml"))
                        || set.contains(&path.with_extension("yml"))
                    {
                        continue;
                    }
                } else {
                    // A YAML tool's script: a same-stem file with another extension.
                    let stem = path.file_stem().unwrap_or_default();
                    script = files
                        .iter()
                        .find(|p| {
                            p.parent() == path.parent()
                                && p.file_stem() == Some(stem)
                                && !matches!(
                                    p.extension().and_then(|e| e.to_str()),
                                    Some("yaml" | "yml")
                                )
                        })
                        .cloned();
                }
            }
            out.push(Found {
                item_type,
                id,
                path: path.clone(),
                script,
            });
        }
    }
    out
}

/// Where an entry's item comes from.
#[derive(Debug)]
enum Origin {
    /// A file of a space on disk, read on first use (and refused when it resolves outside
    /// the space root).
    Disk { root: PathBuf },
    /// A file compiled into the binary.
    Builtin(&'static str),
    /// An item given ready-made (by the language server, from an editor buffer).
    Given,
}

/// A file known to the workspace. Its item is read and parsed on first use, once: a
/// lookup or a chain touches only the items it needs, and `items_in` parses in parallel.
#[derive(Debug)]
struct Entry {
    found: Found,
    space: Space,
    origin: Origin,
    item: std::sync::OnceLock<Option<Arc<Item>>>,
    /// Whether the file is an item, once known from a parse that was not kept.
    exists: std::sync::OnceLock<bool>,
}

impl Entry {
    /// The item, parsed now if it was not yet; `None` when the file is not an item (a
    /// Python helper module that declares nothing).
    fn get(&self) -> Option<&Arc<Item>> {
        self.item
            .get_or_init(|| self.parse().map(Arc::new))
            .as_ref()
    }

    /// Read and parse the file, keeping nothing.
    fn parse(&self) -> Option<Item> {
        match &self.origin {
            Origin::Disk { root } => load_file(&self.found, self.space, root),
            Origin::Builtin(text) => {
                let f = &self.found;
                parse_item(
                    f.item_type,
                    f.id.clone(),
                    self.space,
                    f.path.clone(),
                    text.as_bytes(),
                )
            }
            Origin::Given => None,
        }
    }

    /// The item if it is loaded, else parsed for the caller alone (not kept: a scan of
    /// every item, such as the search index, holds one item at a time).
    fn peek(&self) -> Option<Arc<Item>> {
        if let Some(item) = self.item.get() {
            return item.clone();
        }
        let item = self.parse().map(Arc::new);
        let _ = self.exists.set(item.is_some());
        item
    }

    /// Whether the file is an item, parsing it (without keeping it) only when that depends
    /// on its contents: a Python file is an item when it declares something.
    fn exists(&self) -> bool {
        if let Some(item) = self.item.get() {
            return item.is_some();
        }
        let may_be_helper = self.found.item_type == ItemType::Tool
            && self.found.path.extension().is_some_and(|e| e == "py");
        if !may_be_helper {
            return !matches!(self.origin, Origin::Given);
        }
        if let Some(&known) = self.exists.get() {
            return known;
        }
        self.peek().is_some()
    }

    fn given(item: Arc<Item>) -> Entry {
        Entry {
            found: Found {
                item_type: item.item_type,
                id: item.id.clone(),
                path: item.path.clone(),
                script: item.script.clone(),
            },
            space: item.space,
            origin: Origin::Given,
            item: std::sync::OnceLock::from(Some(item)),
            exists: std::sync::OnceLock::new(),
        }
    }
}

/// The entries of the builtin space, made once per process and shared by every workspace
/// (so each builtin item is parsed at most once).
fn builtin_entries() -> &'static [Arc<Entry>] {
    static ENTRIES: std::sync::OnceLock<Vec<Arc<Entry>>> = std::sync::OnceLock::new();
    ENTRIES.get_or_init(|| {
        let mut entries = Vec::new();
        for (rel, text) in builtin::FILES {
            let rel_path = Path::new(rel);
            let mut comps = rel_path.components();
            let Some(folder) = comps.next().and_then(|c| c.as_os_str().to_str()) else {
                continue;
            };
            let Some(item_type) = ItemType::FILE_TYPES
                .into_iter()
                .find(|t| t.folder() == Some(folder))
            else {
                continue;
            };
            let path = Path::new(BUILTIN_ROOT).join(rel_path);
            if !is_item_file(item_type, &path) {
                continue;
            }
            let Some(id) = ids::id_from_relative(comps.as_path()) else {
                continue;
            };
            entries.push(Arc::new(Entry {
                found: Found {
                    item_type,
                    id,
                    path,
                    script: None,
                },
                space: Space::Builtin,
                origin: Origin::Builtin(text),
                item: std::sync::OnceLock::new(),
                exists: std::sync::OnceLock::new(),
            }));
        }
        entries
    })
}

/// Every item of the builtin space (parsed on first call).
pub fn builtin_items() -> Vec<Arc<Item>> {
    builtin_entries()
        .iter()
        .filter_map(|e| e.get().cloned())
        .collect()
}

/// The contents of a builtin file by its path relative to the builtin root.
pub fn builtin_file(rel: &str) -> Option<&'static str> {
    builtin::FILES
        .iter()
        .find(|(p, _)| *p == rel)
        .map(|(_, t)| *t)
}

/// Read and parse one file of a space, refusing a file that resolves outside the space.
pub fn load_file(found: &Found, space: Space, space_root: &Path) -> Option<Item> {
    // A file reached through no symlink is inside its space: no need to resolve both paths
    // (two `realpath`s per file, a component each).
    let real = if ids::inside_without_links(space_root, &found.path) {
        Ok(found.path.clone())
    } else {
        ids::confine(space_root, &found.path)
    };
    let mut item = match real {
        Ok(real) => match ids::read_regular(&real) {
            Ok(bytes) => parse_item(
                found.item_type,
                found.id.clone(),
                space,
                found.path.clone(),
                &bytes,
            )?,
            Err(e) => unreadable(found, space, format!("cannot read this file: {e}")),
        },
        Err(e) => unreadable(
            found,
            space,
            format!("refused: {e}; an item file must lie inside its space"),
        ),
    };
    item.script = found.script.clone();
    Some(item)
}

fn unreadable(found: &Found, space: Space, msg: String) -> Item {
    Item {
        item_type: found.item_type,
        id: found.id.clone(),
        space,
        path: found.path.clone(),
        script: None,
        source: SourceText::new(""),
        parsed: Parsed::Unreadable(Diagnostic::new(Code::K006, TextRange::empty(0), msg)),
    }
}

/// An extra, read-only space of a workspace: where it is and where it was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraRoot {
    pub space: Space,
    /// The directory that holds the `.ai/` folder (symlinks resolved).
    pub dir: PathBuf,
    /// The space root: `dir/.ai` (symlinks resolved).
    pub root: PathBuf,
    /// Where it was named: `KIWI_SPACES` or a `config.yaml`.
    pub source: String,
}

/// The extra spaces named by `KIWI_SPACES` (first), then by `spaces:` of the project's and
/// the user's `config.yaml`, in order: a directory named twice, the project itself and the
/// user space are left out; a directory that does not exist or holds no `.ai/` is a warning.
/// Names are the `name:` given, else the directory's name (a name taken already gets `-2`).
pub fn extra_spaces(
    host: &Host,
    project: Option<&Path>,
    user: &Path,
    config: &Config,
) -> (Vec<ExtraRoot>, Vec<String>) {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut wanted: Vec<(PathBuf, Option<String>, String)> = Vec::new();
    if let Some(list) = host.get("KIWI_SPACES") {
        let cwd = host.cwd.clone().unwrap_or_default();
        for part in list.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let p = crate::context::expand_tilde(part, host.home.as_deref());
            wanted.push((cwd.join(p), None, "KIWI_SPACES".to_string()));
        }
    }
    for e in &config.spaces {
        let p = crate::context::expand_tilde(&e.path.to_string_lossy(), host.home.as_deref());
        wanted.push((
            e.base.join(p),
            e.name.clone(),
            e.source.display().to_string(),
        ));
    }
    let project_dir = project.map(canon);
    let user_root = canon(user);
    let mut out: Vec<ExtraRoot> = Vec::new();
    let mut problems = Vec::new();
    for (dir, name, source) in wanted {
        if !dir.is_dir() {
            problems.push(format!(
                "extra space `{}` (from {source}) is not a directory; it is left out",
                dir.display()
            ));
            continue;
        }
        let real_dir = canon(&dir);
        if Some(&real_dir) == project_dir.as_ref() || real_dir == user_root {
            continue; // the project itself, or the user space: already a space of its own
        }
        let root = if dir.file_name().is_some_and(|n| n == ".ai") {
            dir.clone()
        } else {
            dir.join(".ai")
        };
        if !root.is_dir() {
            problems.push(format!(
                "extra space `{}` (from {source}) holds no `.ai/` folder; it is left out",
                dir.display()
            ));
            continue;
        }
        let real = canon(&root);
        let real_dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
        if Some(&real_dir) == project_dir.as_ref() || real == user_root {
            continue; // the project itself, or the user space: already a space of its own
        }
        if out.iter().any(|x| canon(&x.root) == real) {
            continue;
        }
        let base = name.unwrap_or_else(|| {
            real_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "extra".to_string())
        });
        let mut name = base.clone();
        let mut n = 2;
        while out.iter().any(|x| x.space.as_str() == name)
            || matches!(name.as_str(), "project" | "user" | "builtin" | "all")
        {
            name = format!("{base}-{n}");
            n += 1;
        }
        let rank = u16::try_from(out.len()).unwrap_or(u16::MAX);
        out.push(ExtraRoot {
            space: Space::Extra(crate::ids::ExtraSpace::new(rank, &name)),
            dir: real_dir,
            root: real,
            source,
        });
    }
    (out, problems)
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
    items: imbl::HashMap<PathBuf, Arc<Entry>>,
    /// (type, id) -> paths, highest precedence first.
    by_id: imbl::HashMap<(ItemType, String), Vec<PathBuf>>,
    /// (type, bare name) -> ids that end with it.
    by_bare: imbl::HashMap<(ItemType, String), BTreeSet<String>>,
    /// The ids [`Workspace::suggest`] scans, per type and space restriction, made on first
    /// use and dropped on any change.
    suggest_ids: SuggestIds,
}

type SuggestIds = Arc<std::sync::Mutex<SuggestCache>>;

/// What `suggest` computed, until the next change of the workspace: the candidate ids per
/// type and space, and the suggestions per reference (a workspace often names the same
/// missing id many times, and each scan covers every id).
#[derive(Debug, Default)]
struct SuggestCache {
    ids: HashMap<(ItemType, Option<Space>), Arc<[String]>>,
    suggestions: HashMap<(ItemType, Option<Space>, String), Vec<String>>,
}

/// At most this many references' suggestions are kept between changes.
const SUGGESTIONS_KEPT: usize = 4096;

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
        for (space, root) in roots {
            for found in discover(&root) {
                ws.add(Arc::new(Entry {
                    found,
                    space,
                    origin: Origin::Disk { root: root.clone() },
                    item: std::sync::OnceLock::new(),
                    exists: std::sync::OnceLock::new(),
                }));
            }
        }
        ws
    }

    /// Parse every item not parsed yet, in parallel.
    /// A server keeps the workspace: the memory the parse used and freed is given back.
    pub fn load_all(&self) {
        testing::wait_while_held(self.project.as_deref());
        let before = self
            .items
            .values()
            .filter(|e| e.item.get().is_none())
            .count();
        self.preload(|_| true);
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
        let rank = |p: &PathBuf| items.get(p).map(|e| e.space).unwrap_or(entry.space);
        paths.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
        self.by_bare
            .entry((
                entry.found.item_type,
                ids::bare_name(&entry.found.id).to_string(),
            ))
            .or_default()
            .insert(entry.found.id.clone());
        self.items.insert(path, entry);
    }

    /// Remove the item of a path; returns it.
    pub fn remove(&mut self, path: &Path) -> Option<Arc<Item>> {
        self.remove_entry(path).and_then(|e| e.get().cloned())
    }

    fn remove_entry(&mut self, path: &Path) -> Option<Arc<Entry>> {
        let old = self.items.remove(path)?;
        self.suggest_ids = SuggestIds::default();
        let key = (old.found.item_type, old.found.id.clone());
        if let Some(paths) = self.by_id.get_mut(&key) {
            paths.retain(|p| p != path);
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
        // A classified path lies in a space that has a root.
        let Some(root) = self.space_root(space) else {
            return;
        };
        if !path.exists() {
            self.remove(path);
            return;
        }
        let mut found = Found {
            item_type,
            id,
            path: path.to_path_buf(),
            script: None,
        };
        if item_type == ItemType::Tool {
            found.script = discover_script(path);
        }
        match load_file(&found, space, &root) {
            Some(item) => self.insert(Arc::new(item)),
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
    /// the visit alone and dropped after it: memory stays at one chunk of items.
    pub fn visit_items<T: Send>(&self, map: impl Fn(&Item) -> T + Sync, mut visit: impl FnMut(T)) {
        let mut entries: Vec<&Arc<Entry>> = self.items.values().collect();
        entries.sort_by(|a, b| {
            (a.found.item_type, &a.found.id, a.space, &a.found.path).cmp(&(
                b.found.item_type,
                &b.found.id,
                b.space,
                &b.found.path,
            ))
        });
        for chunk in entries.chunks(256) {
            let mapped: Vec<Option<T>> = chunk
                .par_iter()
                .map(|e| e.peek().map(|item| map(&item)))
                .collect();
            for t in mapped.into_iter().flatten() {
                visit(t);
            }
        }
        if entries.len() >= 256 {
            release_free_memory();
        }
    }

    /// Items of the workspace whose diagnostics may depend on the item at `path`: those that
    /// reference it (a call, a relationship, an executor; knowledge by mention) and those with
    /// the same id (shadowing).
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
                            Parsed::Knowledge(_) => i.text().contains(bare),
                            Parsed::Unreadable(_) => false,
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

    /// Every item with this exact id, highest precedence first.
    pub fn all_with_id(&self, item_type: ItemType, id: &str) -> Vec<&Arc<Item>> {
        self.by_id
            .get(&(item_type, id.to_string()))
            .map(|paths| paths.iter().filter_map(|p| self.item(p)).collect())
            .unwrap_or_default()
    }

    /// The item with this exact id that wins by precedence.
    pub fn get(&self, item_type: ItemType, id: &str) -> Option<&Arc<Item>> {
        self.all_with_id(item_type, id).into_iter().next()
    }

    /// Every id of a type (for suggestions and completion), sorted.
    pub fn ids(&self, item_type: ItemType) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .by_id
            .iter()
            .filter(|((t, _), paths)| *t == item_type && paths.iter().any(|p| self.exists(p)))
            .map(|((_, id), _)| id.as_str())
            .collect();
        v.sort();
        v
    }

    /// Look a reference up: an exact id first, then a bare last segment when exactly one
    /// item has it. `only` restricts the search to one space (a builtin chain). When nothing
    /// matches, the closest ids are suggested.
    pub fn lookup(&self, item_type: ItemType, reference: &str, only: Option<Space>) -> Lookup {
        match self.find(item_type, reference, only) {
            Lookup::Missing { .. } => Lookup::Missing {
                suggestions: self.suggest(item_type, reference, only),
            },
            other => other,
        }
    }

    /// Like [`Workspace::lookup`], without computing suggestions (cheap: no scan of all ids).
    pub fn find(&self, item_type: ItemType, reference: &str, only: Option<Space>) -> Lookup {
        if let Err(e) = ids::validate_id(reference) {
            return Lookup::Refused(e);
        }
        let allowed = |i: &&Arc<Item>| only.is_none_or(|s| i.space == s);
        if let Some(item) = self
            .all_with_id(item_type, reference)
            .into_iter()
            .find(allowed)
        {
            return Lookup::Found(item.clone());
        }
        if !reference.contains('/') {
            let ids: Vec<&String> = self
                .by_bare
                .get(&(item_type, reference.to_string()))
                .map(|s| {
                    s.iter()
                        .filter(|id| self.all_with_id(item_type, id).iter().any(allowed))
                        .collect()
                })
                .unwrap_or_default();
            match ids.as_slice() {
                [one] => {
                    if let Some(item) = self.all_with_id(item_type, one).into_iter().find(allowed) {
                        return Lookup::Found(item.clone());
                    }
                }
                [] => {}
                many => {
                    return Lookup::Ambiguous {
                        candidates: many.iter().map(|s| s.to_string()).collect(),
                    }
                }
            }
        }
        Lookup::Missing {
            suggestions: Vec::new(),
        }
    }

    /// The ids closest to a reference that names nothing, best first.
    pub fn suggest(
        &self,
        item_type: ItemType,
        reference: &str,
        only: Option<Space>,
    ) -> Vec<String> {
        let key = (item_type, only, reference.to_string());
        if let Some(hit) = self
            .suggest_ids
            .lock()
            .ok()
            .and_then(|c| c.suggestions.get(&key).cloned())
        {
            return hit;
        }
        let ids = self.suggestable_ids(item_type, only);
        let mut suggestions: Vec<String> =
            crate::diag::closest_n(reference, ids.iter().map(String::as_str), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
        // A reference whose last segment matches an id's last segment is a likely suggestion too.
        if suggestions.is_empty() {
            let bare = ids::bare_name(reference);
            let bares = ids.iter().map(|id| ids::bare_name(id));
            for b in crate::diag::closest_n(bare, bares, 3) {
                if let Some(id) = ids.iter().find(|id| ids::bare_name(id) == b) {
                    suggestions.push(id.to_string());
                }
            }
        }
        if let Ok(mut cache) = self.suggest_ids.lock() {
            if cache.suggestions.len() < SUGGESTIONS_KEPT {
                cache.suggestions.insert(key, suggestions.clone());
            }
        }
        suggestions
    }

    /// The ids of a type that some (allowed) item has, sorted; cached until the next change.
    fn suggestable_ids(&self, item_type: ItemType, only: Option<Space>) -> Arc<[String]> {
        let key = (item_type, only);
        if let Some(ids) = self.cached_ids(&key) {
            return ids;
        }
        let allowed = |p: &PathBuf| {
            self.items
                .get(p)
                .is_some_and(|e| only.is_none_or(|s| e.space == s) && e.exists())
        };
        let mut ids: Vec<String> = self
            .by_id
            .iter()
            .filter(|((t, _), paths)| *t == item_type && paths.iter().any(allowed))
            .map(|((_, id), _)| id.clone())
            .collect();
        ids.sort();
        let ids: Arc<[String]> = ids.into();
        if let Ok(mut cache) = self.suggest_ids.lock() {
            cache.ids.insert(key, ids.clone());
        }
        ids
    }

    fn cached_ids(&self, key: &(ItemType, Option<Space>)) -> Option<Arc<[String]>> {
        self.suggest_ids.lock().ok()?.ids.get(key).cloned()
    }
}

static RELEASE_FREE_MEMORY: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// For a program whose global allocator is not the C library's: how to give freed memory
/// back to the system after a big parse (the `kiwi` binary sets mimalloc's collection).
pub fn set_release_free_memory(release: fn()) {
    let _ = RELEASE_FREE_MEMORY.set(release);
}

/// Give the heap pages freed by a parse of many files (syntax trees, items not kept) back to
/// the system: glibc keeps them in its per-thread arenas otherwise, and a long-running server
/// would hold them for good.
pub fn release_free_memory() {
    if let Some(release) = RELEASE_FREE_MEMORY.get() {
        release();
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A hook for tests of what a server answers while a workspace loads: while a
/// [`testing::LoadHold`] of a project is alive, [`Workspace::load_all`] of that project waits
/// (at most a minute). Nothing holds a load unless a test asks.
#[doc(hidden)]
pub mod testing {
    use std::path::{Path, PathBuf};
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    static RELEASED: Condvar = Condvar::new();

    /// Holds the loads of one project until dropped.
    pub struct LoadHold(PathBuf);

    /// Hold every [`super::Workspace::load_all`] of `project` until the hold is dropped.
    pub fn hold_loads(project: &Path) -> LoadHold {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.push(project.to_path_buf());
        LoadHold(project.to_path_buf())
    }

    impl Drop for LoadHold {
        fn drop(&mut self) {
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = held.iter().position(|p| *p == self.0) {
                held.remove(i);
            }
            RELEASED.notify_all();
        }
    }

    pub(super) fn wait_while_held(project: Option<&Path>) {
        let Some(project) = project else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        while held.iter().any(|p| p == project) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            held = RELEASED
                .wait_timeout(held, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// The script of a sidecar YAML tool: a same-stem file with another extension.
fn discover_script(yaml: &Path) -> Option<PathBuf> {
    let ext = yaml.extension()?.to_str()?;
    if !matches!(ext, "yaml" | "yml") {
        return None;
    }
    let stem = yaml.file_stem()?;
    let dir = yaml.parent()?;
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_stem() == Some(stem)
                && !matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
        })
        .collect();
    candidates.sort();
    candidates.into_iter().next()
}

/// The order of [`Path`]'s `Ord` (component by component) for paths without `.`, `..`,
/// repeated or trailing separators, as a workspace's are, computed on the bytes: a
/// separator sorts before any other byte. `Path::cmp` splits both paths into components,
/// which was the larger part of sorting 100,000 items.
pub fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // No path holds a NUL byte: it can stand for the separator.
    let key = |c: u8| {
        if std::path::is_separator(c as char) {
            0
        } else {
            c
        }
    };
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(same), b.get(same)) {
        (Some(x), Some(y)) => key(*x).cmp(&key(*y)),
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
    }
}

#[cfg(test)]
mod path_order_tests {
    use super::path_order;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn path() -> impl Strategy<Value = PathBuf> {
        (
            any::<bool>(),
            // A component never is `.` or `..` (a workspace path has none).
            prop::collection::vec("[a\\-_0é~][a.\\-_0é~]{0,2}", 1..5),
        )
            .prop_map(|(absolute, parts)| {
                let joined = parts.join("/");
                PathBuf::from(if absolute {
                    format!("/{joined}")
                } else {
                    joined
                })
            })
    }

    proptest! {
        /// The same order as `Path::cmp`.
        #[test]
        fn equals_path_cmp(a in path(), b in path()) {
            prop_assert_eq!(path_order(&a, &b), a.cmp(&b), "{:?} {:?}", a, b);
        }
    }
}
