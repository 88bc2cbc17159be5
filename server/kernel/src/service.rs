//! The semantics of the four meta-tools (`search`, `load`, `execute`, `help`), free of any
//! protocol: a [`Service`] keeps one workspace per project true to the disk (re-validated by
//! modification time on every call; nothing unchanged is re-parsed), a [`Session`] holds the
//! active directives whose capabilities every call is checked against (04, Enforcement).
//! Answers are JSON values; refusals are [`OpError`]s the agent can act on.

use crate::check::check_item;
use crate::context::Host;
use crate::diag::{closest_n, Diagnostic, Severity};
use crate::directive::grants;
use crate::directive::{Capability, Directive, PlaceholderKind, Resource};
use crate::exec::{self, CancellationToken, OutputSink};
use crate::ids::{self, ItemType, Space};
use crate::search::{self, Index};
use crate::system;
use crate::workspace::{self, Item, Lookup, Workspace, BUILTIN_ROOT};
use serde::Serialize;
use serde_json::{json, Map, Value as Json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

// ---------------------------------------------------------------------------------------
// Errors

/// A refusal the agent can act on: `{error, item_type, action, item_id, message, suggestions}`
/// plus any extra fields (`allowed_actions`, `diagnostics`, `missing_capability`, ...).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpErrorBody {
    pub error: String,
    pub item_type: Option<String>,
    pub action: Option<String>,
    pub item_id: Option<String>,
    pub message: String,
    pub suggestions: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Json>,
}

/// An [`OpErrorBody`], boxed (results stay small).
#[derive(Debug, Clone, PartialEq)]
pub struct OpError(pub Box<OpErrorBody>);

impl std::ops::Deref for OpError {
    type Target = OpErrorBody;
    fn deref(&self) -> &OpErrorBody {
        &self.0
    }
}

impl std::ops::DerefMut for OpError {
    fn deref_mut(&mut self) -> &mut OpErrorBody {
        &mut self.0
    }
}

impl Serialize for OpError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl OpError {
    pub fn new(error: &str, message: impl Into<String>) -> Self {
        OpError(Box::new(OpErrorBody {
            error: error.into(),
            item_type: None,
            action: None,
            item_id: None,
            message: message.into(),
            suggestions: Vec::new(),
            extra: Map::new(),
        }))
    }
    fn at(mut self, item_type: Option<&str>, action: Option<&str>, id: Option<&str>) -> Self {
        if self.item_type.is_none() {
            self.item_type = item_type.map(str::to_string);
        }
        if self.action.is_none() {
            self.action = action.map(str::to_string);
        }
        if self.item_id.is_none() {
            self.item_id = id.map(str::to_string);
        }
        self
    }
    fn suggest(mut self, s: Vec<String>) -> Self {
        self.suggestions = s;
        self
    }
    fn with(mut self, key: &str, v: Json) -> Self {
        self.extra.insert(key.into(), v);
        self
    }
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or_else(|_| json!({"error": self.error}))
    }
}

/// The longest search query accepted (a query is a few words; megabytes are refused).
pub const MAX_QUERY_BYTES: usize = 16 * 1024;

type Res<T> = Result<T, OpError>;

/// A directive as a prompt: (id, description, inputs as (name, description, required)).
pub type DirectiveSummary = (String, Option<String>, Vec<(String, String, bool)>);
/// An item as a resource: (uri, name, description, mime type).
pub type ResourceSummary = (String, String, Option<String>, &'static str);

// ---------------------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, Default)]
pub struct SearchArgs {
    pub item_type: String,
    pub query: String,
    pub source: Option<String>,
    /// 1 to [`MAX_SEARCH_LIMIT`] (default 10); 0 is an error.
    pub limit: Option<usize>,
    /// Where the previous answer's list stopped (its `cursor`).
    pub cursor: Option<String>,
    pub project_path: Option<String>,
}

/// The most results one search answer holds (more come with its `cursor`).
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// The cursor that continues a search's list after `offset` results: the offset and a
/// fingerprint of the search, so that a cursor is not taken for another search's.
fn search_cursor(t: ItemType, query: &str, source: Option<Space>, offset: usize) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (t.as_str(), query.trim(), source.map(Space::as_str)).hash(&mut h);
    format!("{offset:x}.{:016x}", h.finish())
}

/// The offset a search cursor continues from, or the error that says why it is not one.
fn cursor_offset(t: ItemType, query: &str, source: Option<Space>, cursor: &str) -> Res<usize> {
    let bad = || {
        OpError::new(
            "invalid_arguments",
            format!(
                "`cursor` `{}` is not a cursor of this search; pass the `cursor` of the previous answer with the same item_type, query and source",
                cursor.chars().take(80).collect::<String>()
            ),
        )
    };
    let (off, _) = cursor.split_once('.').ok_or_else(bad)?;
    let offset = usize::from_str_radix(off, 16).map_err(|_| bad())?;
    if offset > 1 << 40 || search_cursor(t, query, source, offset) != cursor {
        return Err(bad());
    }
    Ok(offset)
}

#[derive(Debug, Clone, Default)]
pub struct LoadArgs {
    pub item_type: String,
    pub item_id: String,
    pub source: Option<String>,
    pub destination: Option<String>,
    pub force: bool,
    pub project_path: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ExecuteArgs {
    pub item_type: String,
    pub action: String,
    pub item_id: String,
    pub parameters: Option<Json>,
    pub dry_run: bool,
    pub project_path: Option<String>,
}

/// The actions of each item type (05, the `execute` table).
pub fn actions_of(t: ItemType) -> &'static [&'static str] {
    match t {
        ItemType::Directive => &["run", "done", "validate", "create", "update", "delete"],
        ItemType::Tool => &["run", "dry_run", "validate", "create", "update", "delete"],
        ItemType::Knowledge => &["run", "validate", "create", "update", "delete", "link"],
        ItemType::System => &["run"],
    }
}

const TYPE_NAMES: [&str; 4] = ["directive", "tool", "knowledge", "system"];

fn parse_type(s: &str) -> Res<ItemType> {
    ItemType::parse(s).ok_or_else(|| {
        OpError::new(
            "invalid_item_type",
            format!("`{s}` is not an item type; use directive, tool, knowledge or system"),
        )
        .suggest(TYPE_NAMES.iter().map(|s| s.to_string()).collect())
    })
}

/// A `source` argument: `all`, a space every workspace has, or one of `extra` (the extra
/// spaces' names).
fn parse_source(s: Option<&str>, extra: &[Space]) -> Res<Option<Space>> {
    match s {
        None | Some("all") | Some("") => Ok(None),
        Some(x) => Space::parse(x)
            .or_else(|| extra.iter().copied().find(|e| e.as_str() == x))
            .map(Some)
            .ok_or_else(|| {
                let mut names: Vec<String> = vec!["project".into(), "user".into()];
                names.extend(extra.iter().map(|e| e.as_str().to_string()));
                names.push("builtin".into());
                names.push("all".into());
                OpError::new(
                    "invalid_source",
                    format!("`{x}` is not a source; use {}", names.join(", ")),
                )
                .suggest(names)
            }),
    }
}

/// The error of a call that needs a project when the server has none (05): what was
/// asked, and the ways to name one or to ask for the user space only.
fn no_project(what: &str) -> OpError {
    OpError::new(
        "no_project",
        format!(
            "no project: {what}. This server was started outside a project (no --project, no .ai/ in its folder): \
             pass project_path (the absolute root of a folder holding .ai/), or ask for the user or builtin space \
             explicitly (source: user or builtin; destination: user; parameters.space: user)"
        ),
    )
}

fn check_id(id: &str) -> Res<()> {
    ids::validate_id(id).map_err(|e| {
        OpError::new(
            "invalid_id",
            format!("refused: {e}; ids stay inside their space"),
        )
    })
}

// ---------------------------------------------------------------------------------------
// Sessions and permissions

/// A directive the session is following.
#[derive(Debug, Clone)]
pub struct Active {
    pub id: String,
    pub capabilities: Vec<Capability>,
}

/// One agent session (one MCP connection): the stack of running directives. Each call is
/// checked against every level (a nested directive narrows, never widens).
#[derive(Debug, Clone, Default)]
pub struct Session {
    pub stack: Vec<Active>,
    /// The protocol version the face negotiated with its client (`system` item `mcp`
    /// shows it); `None`: the kernel's own [`system::PROTOCOL_VERSION`].
    pub protocol_version: Option<String>,
}

fn cap_string(verb: &str, t: ItemType, id: Option<&str>) -> String {
    format!("kiwi.{verb}.{t}.{}", id.unwrap_or("*"))
}

impl Session {
    pub fn active(&self) -> Option<&Active> {
        self.stack.last()
    }

    /// Whether the session may do `verb` on the item (`id: None` for a search).
    pub fn check(&self, verb: &str, t: ItemType, id: Option<&str>) -> Res<()> {
        for a in self.stack.iter().rev() {
            let ok = match id {
                Some(id) => grants(&a.capabilities, verb, t, id).is_some(),
                None => a.capabilities.iter().any(|c| {
                    c.valid
                        && !c.deny
                        && (c.verb == verb || c.verb == "*")
                        && match c.resource {
                            Resource::Any | Resource::Items(None) => true,
                            Resource::Items(Some(x)) => x == t,
                            _ => false,
                        }
                }),
            };
            if !ok {
                let cap = cap_string(verb, t, id);
                let target = match id {
                    Some(id) => format!("{t} `{id}`"),
                    None => format!("{t} items"),
                };
                return Err(OpError::new(
                    "permission_denied",
                    format!(
                        "refused: the active directive `{}` does not grant `{verb}` on {target} \
                         (missing capability `{cap}`); end it with execute directive done, or \
                         add the grant to its <permissions>",
                        a.id
                    ),
                )
                .with("missing_capability", json!(cap))
                .with(
                    "grant",
                    json!(format!(
                        "<{} resource=\"kiwi\" action=\"{verb}\" item_type=\"{t}\" id=\"{}\"/>",
                        match verb {
                            "search" => "search",
                            "load" => "load",
                            _ => "execute",
                        },
                        id.unwrap_or("*")
                    )),
                )
                .with("directive", json!(a.id)));
            }
        }
        Ok(())
    }

    fn visible(&self, verb: &str, t: ItemType, id: &str) -> bool {
        self.stack
            .iter()
            .all(|a| grants(&a.capabilities, verb, t, id).is_some())
    }
}

// ---------------------------------------------------------------------------------------
// The service

struct Spaces {
    ws: Workspace,
    /// Every item file: its sidecar script and its stamp when last read.
    files: HashMap<PathBuf, (Option<PathBuf>, Stamp)>,
    /// Every folder that can hold items (the space roots, type folders and their subfolders,
    /// present or not), with its modification time: a file added or removed changes it.
    dirs: HashMap<PathBuf, Option<SystemTime>>,
    /// An inotify watch of every folder (Linux): a refresh drains its queue instead of
    /// stating every file. `None` where watching is not possible (then files are stated).
    watch: Option<watch::Watch>,
    generation: u64,
    index: Option<(u64, Arc<Index>)>,
    /// Whether the index kept on disk was tried (once, for the first index).
    index_checked: bool,
}

type Stamp = (Option<SystemTime>, u64, Option<SystemTime>);

fn stamp(path: &Path, script: Option<&Path>) -> Stamp {
    let m = std::fs::metadata(path).ok();
    (
        m.as_ref().and_then(|m| m.modified().ok()),
        m.map(|m| m.len()).unwrap_or(0),
        script.and_then(|s| std::fs::metadata(s).ok()?.modified().ok()),
    )
}

fn dir_mtime(d: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(d).ok()?.modified().ok()
}

fn skip_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "__pycache__" | "node_modules" | "venv" | "target")
}

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

impl Spaces {
    fn roots(ws: &Workspace) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = [Space::User, Space::Project]
            .into_iter()
            .filter_map(|s| ws.space_root(s))
            .collect();
        v.extend(ws.extra.iter().map(|x| x.root.clone()));
        v
    }

    fn extra_spaces(&self) -> Vec<Space> {
        self.ws.extra.iter().map(|x| x.space).collect()
    }

    fn load(project: Option<PathBuf>, host: Host) -> Spaces {
        let ws = Workspace::load(project, host);
        let mut sp = Spaces {
            ws,
            files: HashMap::new(),
            dirs: HashMap::new(),
            watch: None,
            generation: 0,
            index: None,
            index_checked: false,
        };
        sp.scan(false);
        sp
    }

    /// Walk the spaces: every file's stamp, every folder's time; with `apply`, re-read what
    /// changed and drop what is gone.
    fn scan(&mut self, apply: bool) {
        let mut dirs = HashMap::new();
        let mut files = HashMap::new();
        for root in Self::roots(&self.ws) {
            collect_dirs(&root, &mut dirs);
            for f in workspace::discover(&root) {
                let s = stamp(&f.path, f.script.as_deref());
                files.insert(f.path, (f.script, s));
            }
        }
        if apply {
            let mut changed = false;
            for p in self.files.keys() {
                if !files.contains_key(p) {
                    self.ws.remove(p);
                    changed = true;
                }
            }
            for (p, (_, s)) in &files {
                if self.files.get(p).map(|(_, old)| old) != Some(s) {
                    self.ws.refresh_path(p);
                    changed = true;
                }
            }
            if changed {
                self.generation += 1;
            }
        }
        self.watch = watch::Watch::new(
            dirs.iter()
                .filter(|(_, m)| m.is_some())
                .map(|(d, _)| d.as_path()),
        );
        self.files = files;
        self.dirs = dirs;
    }

    /// Bring the index up to date with the disk, cheaply: stat the known folders and files
    /// (in parallel); walk again only when a folder changed (a file added or removed).
    fn refresh(&mut self) {
        use rayon::prelude::*;
        if let Some(w) = &mut self.watch {
            // A folder that did not exist may have been created (not watched).
            let appeared = self
                .dirs
                .iter()
                .any(|(d, m)| m.is_none() && dir_mtime(d).is_some());
            match w.drain() {
                Some(watch::Drained {
                    structural: false,
                    files,
                }) if !appeared => {
                    let mut changed = false;
                    for p in files {
                        let Some(e) = self.files.get_mut(&p) else {
                            // A sidecar script changed: re-read its tool.
                            let owner = self
                                .files
                                .iter()
                                .find(|(_, (script, _))| script.as_deref() == Some(p.as_path()))
                                .map(|(k, _)| k.clone());
                            if let Some(k) = owner {
                                self.ws.refresh_path(&k);
                                changed = true;
                            }
                            continue;
                        };
                        let s = stamp(&p, e.0.as_deref());
                        if s != e.1 {
                            e.1 = s;
                            self.ws.refresh_path(&p);
                            changed = true;
                        }
                    }
                    if changed {
                        self.generation += 1;
                    }
                }
                _ => self.scan(true),
            }
            return;
        }
        let dirs_changed = self.dirs.par_iter().any(|(d, m)| dir_mtime(d) != *m);
        if dirs_changed {
            self.scan(true);
            return;
        }
        let changed: Vec<(PathBuf, Stamp)> = self
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
            if let Some(e) = self.files.get_mut(&p) {
                e.1 = s;
            }
        }
        self.generation += 1;
    }

    fn index(&mut self) -> Arc<Index> {
        match &self.index {
            Some((g, idx)) if *g == self.generation => idx.clone(),
            _ => {
                let (user, project) = (self.ws.user.clone(), self.ws.project.clone());
                // The first index: the one an earlier server kept on disk, if it describes
                // these very files; else built, and kept on disk for the next server.
                let cached = (!self.index_checked)
                    .then(|| search::cache::read(&user, project.as_deref()))
                    .flatten()
                    .filter(|c| c.files == self.files && c.dirs == self.dirs);
                self.index_checked = true;
                let idx = match cached {
                    Some(c) => c.index.clone(),
                    None => {
                        let idx = Arc::new(Index::build(&self.ws));
                        search::cache::write_in_background(
                            user,
                            project,
                            self.files.clone(),
                            self.dirs.clone(),
                            idx.clone(),
                        );
                        idx
                    }
                };
                self.index = Some((self.generation, idx.clone()));
                idx
            }
        }
    }
}

/// Folder watching with inotify, drained synchronously: every change made before a call is
/// in the queue when the call refreshes (no watcher thread, no race).
mod watch {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    pub struct Drained {
        /// A file was created, removed or renamed, or the queue overflowed: walk again.
        pub structural: bool,
        /// Files whose contents changed.
        pub files: Vec<PathBuf>,
    }

    #[cfg(target_os = "linux")]
    pub struct Watch {
        fd: i32,
        wds: HashMap<i32, PathBuf>,
    }

    #[cfg(target_os = "linux")]
    impl Watch {
        pub fn new<'a>(dirs: impl Iterator<Item = &'a Path>) -> Option<Watch> {
            use std::os::unix::ffi::OsStrExt;
            // SAFETY: plain syscalls on a descriptor this struct owns.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return None;
            }
            let mut w = Watch {
                fd,
                wds: HashMap::new(),
            };
            let mask = libc::IN_MODIFY
                | libc::IN_CLOSE_WRITE
                | libc::IN_ATTRIB
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_MOVED_FROM
                | libc::IN_MOVED_TO
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF;
            for d in dirs {
                let c = std::ffi::CString::new(d.as_os_str().as_bytes()).ok()?;
                // SAFETY: a valid NUL-terminated path and our descriptor.
                let wd = unsafe { libc::inotify_add_watch(fd, c.as_ptr(), mask) };
                if wd < 0 {
                    // Out of watches: fall back to stating files.
                    return None;
                }
                w.wds.insert(wd, d.to_path_buf());
            }
            Some(w)
        }

        /// Everything queued so far; `None` when the descriptor failed.
        pub fn drain(&mut self) -> Option<Drained> {
            let mut out = Drained {
                structural: false,
                files: Vec::new(),
            };
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                // SAFETY: reading into a buffer we own, within its length.
                let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() == std::io::ErrorKind::WouldBlock {
                        return Some(out);
                    }
                    if e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    return None;
                }
                if n == 0 {
                    return Some(out);
                }
                let n = n as usize;
                let head = std::mem::size_of::<libc::inotify_event>();
                let mut at = 0;
                while at + head <= n {
                    // SAFETY: the kernel wrote whole events; read_unaligned copes with alignment.
                    let ev: libc::inotify_event =
                        unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                    let len = ev.len as usize;
                    let name_bytes = &buf[at + head..(at + head + len).min(n)];
                    let name_end = name_bytes
                        .iter()
                        .position(|&b| b == 0)
                        .unwrap_or(name_bytes.len());
                    let name = std::ffi::OsStr::from_bytes_compat(&name_bytes[..name_end]);
                    at += head + len;
                    let m = ev.mask;
                    if m & (libc::IN_Q_OVERFLOW
                        | libc::IN_CREATE
                        | libc::IN_DELETE
                        | libc::IN_MOVED_FROM
                        | libc::IN_MOVED_TO
                        | libc::IN_DELETE_SELF
                        | libc::IN_MOVE_SELF
                        | libc::IN_IGNORED)
                        != 0
                    {
                        // Our own temporary files come and go: still a change of the folder.
                        out.structural = true;
                        continue;
                    }
                    if let Some(dir) = self.wds.get(&ev.wd) {
                        if !name.is_empty() {
                            out.files.push(dir.join(name));
                        }
                    }
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    trait FromBytesCompat {
        fn from_bytes_compat(b: &[u8]) -> &std::ffi::OsStr;
    }

    #[cfg(target_os = "linux")]
    impl FromBytesCompat for std::ffi::OsStr {
        fn from_bytes_compat(b: &[u8]) -> &std::ffi::OsStr {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::OsStr::from_bytes(b)
        }
    }

    #[cfg(target_os = "linux")]
    impl Drop for Watch {
        fn drop(&mut self) {
            // SAFETY: closing the descriptor this struct owns, once.
            unsafe {
                libc::close(self.fd);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub struct Watch;

    #[cfg(not(target_os = "linux"))]
    impl Watch {
        pub fn new<'a>(_dirs: impl Iterator<Item = &'a Path>) -> Option<Watch> {
            None
        }
        pub fn drain(&mut self) -> Option<Drained> {
            None
        }
    }
}

/// The kernel side of an agent server: workspaces kept true to the disk, and the four
/// meta-tools.
pub struct Service {
    project: Option<PathBuf>,
    host: Host,
    spaces: Mutex<HashMap<Option<PathBuf>, Spaces>>,
    /// The projects whose workspace is being loaded (under the `spaces` lock).
    loading: Mutex<std::collections::HashSet<Option<PathBuf>>>,
    /// The search index kept on disk of a project not loaded yet, read by a search that comes
    /// before the workspace is loaded (or by `warm`); dropped once it is.
    cached: Mutex<HashMap<Option<PathBuf>, CachedIndex>>,
}

/// An index read from the user space's cache (`None`: none, or not valid), and when the last
/// check that found the disk unchanged began.
struct CachedIndex {
    cached: Option<Arc<search::cache::Cached>>,
    checked_from: Option<std::time::Instant>,
}

/// The builtin tool whose primitive is the kernel's `init` (run in process by the server).
pub const INIT_TOOL: &str = "core/init_userspace";

const INSTRUCTIONS: &str = "Follow the directive's steps in order. Each step's calls name the \
kiwi meta-tool to use (execute/search/load with item_type and item_id). While this directive is \
active, every search, load and execute is checked against its permissions. When the outputs are \
produced, call execute {item_type: \"directive\", action: \"done\", item_id} to end it.";

impl Service {
    /// `project`: the fixed project root (`--project`, or the working directory when it holds
    /// `.ai/`); without one each call's `project_path` names it.
    pub fn new(project: Option<PathBuf>, host: Host) -> Self {
        Service {
            project,
            host,
            spaces: Mutex::new(HashMap::new()),
            loading: Mutex::new(Default::default()),
            cached: Mutex::new(HashMap::new()),
        }
    }

    pub fn project(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    fn project_for(&self, project_path: Option<&str>) -> Res<Option<PathBuf>> {
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
    fn with<R>(&self, project_path: Option<&str>, f: impl FnOnce(&mut Spaces) -> R) -> Res<R> {
        let project = self.project_for(project_path)?;
        let mut all = self
            .spaces
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !all.contains_key(&project) {
            let loading = || self.loading.lock().unwrap_or_else(|p| p.into_inner());
            loading().insert(project.clone());
            let mut sp = Spaces::load(project.clone(), self.host.clone());
            loading().remove(&project);
            // A search that came while it loaded read the index kept on disk: keep it when it
            // describes these very files (no second read, no build).
            let cached = self
                .cached
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&project)
                .and_then(|c| c.cached);
            if let Some(c) = cached {
                if c.files == sp.files && c.dirs == sp.dirs {
                    sp.index = Some((sp.generation, c.index.clone()));
                    sp.index_checked = true;
                }
            }
            all.insert(project.clone(), sp);
        }
        let sp = all.get_mut(&project).expect("inserted above");
        sp.refresh();
        Ok(f(sp))
    }

    /// The search index of a project: the loaded workspace's; while it is not loaded yet
    /// (a server answering its first call), the one kept on disk in the user space's
    /// `cache/` when the files are still those it was built from (checked at every call).
    fn search_index(&self, project_path: Option<&str>) -> Res<Arc<Index>> {
        let arrived = std::time::Instant::now();
        let project = self.project_for(project_path)?;
        let loaded = match self.spaces.try_lock() {
            Ok(all) => all.contains_key(&project),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().contains_key(&project),
            // Held: by a load of this project, or by a call on a loaded one.
            Err(std::sync::TryLockError::WouldBlock) => !self
                .loading
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&project),
        };
        if !loaded {
            if let Some(idx) = self.cached_index(&project, arrived) {
                return Ok(idx);
            }
        }
        self.with(project_path, |sp| sp.index())
    }

    /// The index kept on disk of a project not loaded yet (read once), if the disk still holds
    /// the files it was built from: checked by a check that began after `since` (the call's
    /// arrival: every change made before the call is seen). Calls wait for a check under way
    /// rather than repeat it.
    fn cached_index(
        &self,
        project: &Option<PathBuf>,
        since: std::time::Instant,
    ) -> Option<Arc<Index>> {
        let mut slots = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        let slot =
            slots.entry(project.clone()).or_insert_with(|| {
                match search::cache::read_current(&self.host.user_space(), project.as_deref()) {
                    Some((c, checked)) => CachedIndex {
                        cached: Some(Arc::new(c)),
                        checked_from: Some(checked),
                    },
                    None => CachedIndex {
                        cached: None,
                        checked_from: None,
                    },
                }
            });
        let c = slot.cached.clone()?;
        if slot.checked_from.is_some_and(|t| t >= since) {
            return Some(c.index.clone());
        }
        let start = std::time::Instant::now();
        if search::cache::listing_is_current(&c.files, &c.dirs) {
            slot.checked_from = Some(start);
            Some(c.index.clone())
        } else {
            slot.cached = None; // stale: the workspace is loaded and the index built
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
                .contains_key(&project);
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

    /// Values that must never appear in an answer: the server's variables that the
    /// environment filter blocks, when they look like secrets (the rule is in
    /// [`crate::redact`]).
    pub fn secrets(&self) -> crate::redact::Secrets {
        self.host.secrets()
    }

    /// Replace any secret value in a string.
    pub fn redact(&self, text: &str) -> String {
        self.secrets().redact(text)
    }

    /// Replace any secret value in every string of a value (keys included), in place.
    pub fn redact_json(&self, v: serde_json::Value) -> serde_json::Value {
        self.secrets().redact_json(v)
    }

    /// The directives (winners by precedence), for prompts: (id, description, inputs as
    /// (name, description, required)).
    pub fn directives(&self, project_path: Option<&str>) -> Res<Vec<DirectiveSummary>> {
        let ws = self.workspace(project_path)?;
        let mut out = Vec::new();
        for id in ws.ids(ItemType::Directive) {
            // Parsed for this list alone when not loaded (a list of every item keeps none).
            let Some(item) = ws.peek_id(ItemType::Directive, id) else {
                continue;
            };
            let Some(d) = item.directive() else { continue };
            let inputs = d
                .inputs
                .iter()
                .map(|i| {
                    (
                        i.name.value.clone(),
                        i.description.trim().to_string(),
                        i.required && i.default.is_none(),
                    )
                })
                .collect();
            out.push((
                id.to_string(),
                item.description().map(str::to_string),
                inputs,
            ));
        }
        Ok(out)
    }

    /// A directive as a prompt: its inputs bound and placeholders filled, with how to run it.
    pub fn prompt(
        &self,
        session: &Session,
        id: &str,
        args: &Map<String, Json>,
    ) -> Res<(Option<String>, String)> {
        let at = |e: OpError| e.at(Some("directive"), Some("run"), Some(id));
        session
            .check("load", ItemType::Directive, Some(id))
            .map_err(at)?;
        let ws = self.workspace(None).map_err(at)?;
        let item = Self::find(&ws, ItemType::Directive, id, None).map_err(at)?;
        // As for `load`: the item the id resolved to must be granted too.
        session
            .check("load", ItemType::Directive, Some(&item.id))
            .map_err(at)?;
        let Some(d) = item.directive() else {
            return Err(at(OpError::new(
                "invalid_content",
                "this directive could not be read",
            )));
        };
        refuse_directive_errors(&ws, &item).map_err(at)?;
        let values = bind_inputs(d, args).map_err(at)?;
        let filled = fill(item.text(), d, &values, &self.host, ws.project.as_deref());
        let call = json!({"item_type": "directive", "action": "run", "item_id": item.id, "parameters": values});
        let text = format!(
            "Follow the kiwi directive `{}`. Start it with the kiwi `execute` tool: {call}, then follow the steps it returns and call done at the end.\n\n{filled}",
            item.id
        );
        Ok((item.description().map(str::to_string), text))
    }

    /// Every item as a resource: (uri, name, description, mime type).
    pub fn resources(&self, project_path: Option<&str>) -> Res<Vec<ResourceSummary>> {
        let ws = self.workspace(project_path)?;
        let mut out = Vec::new();
        for t in ItemType::FILE_TYPES {
            for id in ws.ids(t) {
                let Some(item) = ws.peek_id(t, id) else {
                    continue;
                };
                out.push((
                    format!("kiwi://{t}/{id}"),
                    format!("{t} {id}"),
                    item.description().map(str::to_string),
                    mime_of(&item),
                ));
                // A YAML tool's script is a file of the tool too: its own resource.
                if let Some(script) = &item.script {
                    out.push((
                        format!("kiwi://{t}/{id}{SCRIPT_QUERY}"),
                        format!("{t} {id} (script)"),
                        Some(format!(
                            "The script of tool {id}: {}",
                            script
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        )),
                        mime_of_path(script),
                    ));
                }
            }
        }
        for s in system::CATALOGUE {
            out.push((
                format!("kiwi://system/{}", s.id),
                format!("system {}", s.id),
                Some(s.description.to_string()),
                "application/json",
            ));
        }
        Ok(out)
    }

    /// Read `kiwi://TYPE/ID`: (uri, text, mime type) of each file: the item's, then for a
    /// YAML tool with a script the script's (`kiwi://tool/ID?file=script`, also readable
    /// alone).
    pub fn read_resource_files(
        &self,
        session: &Session,
        uri: &str,
    ) -> Res<Vec<(String, String, &'static str)>> {
        let (base, script_only) = match uri.strip_suffix(SCRIPT_QUERY) {
            Some(b) => (b, true),
            None => (uri, false),
        };
        let (text, mime) = self.read_resource(session, base)?;
        let script = match base.strip_prefix("kiwi://tool/") {
            Some(id) => {
                let ws = self.workspace(None)?;
                let item = Self::find(&ws, ItemType::Tool, id, None)?;
                match &item.script {
                    Some(sc) => Some((
                        read_item_file(&ws, &item, sc).ok_or_else(|| {
                            OpError::new(
                                "invalid_item",
                                format!(
                                    "the script of tool `{}` cannot be read inside its space",
                                    item.id
                                ),
                            )
                        })?,
                        mime_of_path(sc),
                    )),
                    None => None,
                }
            }
            None => None,
        };
        if script_only {
            let Some((st, sm)) = script else {
                return Err(OpError::new(
                    "not_found",
                    format!("`{base}` has no script (only a YAML tool with a same-stem script file has one)"),
                ));
            };
            return Ok(vec![(uri.to_string(), st, sm)]);
        }
        let mut out = vec![(uri.to_string(), text, mime)];
        if let Some((st, sm)) = script {
            out.push((format!("{uri}{SCRIPT_QUERY}"), st, sm));
        }
        Ok(out)
    }

    /// Read `kiwi://TYPE/ID`: (text, mime type).
    pub fn read_resource(&self, session: &Session, uri: &str) -> Res<(String, &'static str)> {
        let Some(rest) = uri.strip_prefix("kiwi://") else {
            return Err(OpError::new(
                "invalid_uri",
                format!("`{uri}` is not a kiwi:// uri; use kiwi://TYPE/ID"),
            ));
        };
        let Some((t, id)) = rest.split_once('/') else {
            return Err(OpError::new(
                "invalid_uri",
                format!("`{uri}` has no id; use kiwi://TYPE/ID"),
            ));
        };
        let t = parse_type(t)?;
        check_id(id)?;
        session.check("load", t, Some(id))?;
        if t == ItemType::System {
            let project = self.project_for(None)?;
            let v = Self::system_item(id, &self.host, project.as_deref(), session)?;
            return Ok((
                serde_json::to_string_pretty(&v).unwrap_or_default(),
                "application/json",
            ));
        }
        let ws = self.workspace(None)?;
        let item = Self::find(&ws, t, id, None)?;
        // As for `load`: the item the id resolved to must be granted too.
        session.check("load", t, Some(&item.id))?;
        if let workspace::Parsed::Unreadable(d) = &item.parsed {
            return Err(OpError::new(
                "invalid_item",
                format!("{t} `{}` cannot be read: {}", item.id, d.message),
            ));
        }
        Ok((item.text().to_string(), mime_of(&item)))
    }

    // ------------------------------------------------------------------ search

    pub fn search(&self, session: &Session, a: &SearchArgs) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some("search"), None);
        let t = parse_type(&a.item_type).map_err(at)?;
        let extra = self
            .with(a.project_path.as_deref(), |sp| sp.extra_spaces())
            .map_err(at)?;
        let source = parse_source(a.source.as_deref(), &extra).map_err(at)?;
        if t != ItemType::System
            && matches!(source, None | Some(Space::Project))
            && self
                .project_for(a.project_path.as_deref())
                .map_err(at)?
                .is_none()
        {
            return Err(at(no_project(&format!(
                "a search of {} needs the project",
                match source {
                    None => "every space",
                    _ => "the project space",
                }
            ))));
        }
        session.check("search", t, None).map_err(at)?;
        if a.query.len() > MAX_QUERY_BYTES {
            return Err(at(OpError::new(
                "invalid_arguments",
                format!(
                    "the query is {} bytes long; a search query is at most {MAX_QUERY_BYTES} bytes",
                    a.query.len()
                ),
            )));
        }
        let limit = match a.limit {
            None => 10,
            Some(n @ 1..=MAX_SEARCH_LIMIT) => n,
            Some(n) => {
                return Err(at(OpError::new(
                    "invalid_arguments",
                    format!("`limit` is {n}; it must be an integer from 1 to {MAX_SEARCH_LIMIT}"),
                )))
            }
        };
        let offset = match a.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => cursor_offset(t, &a.query, source, c).map_err(at)?,
        };
        let idx = self.search_index(a.project_path.as_deref()).map_err(at)?;
        let keep = |id: &str| session.visible("search", t, id);
        let want = offset.saturating_add(limit);
        let (hits, total) = if a.query.trim().is_empty() || a.query.trim() == "*" {
            idx.list_filtered(t, source, want, &keep)
        } else {
            idx.search_filtered(t, &a.query, source, want, &keep)
        };
        let hits: Vec<_> = hits.into_iter().skip(offset).collect();
        let mut out = json!({
            "item_type": t.as_str(),
            "query": a.query,
            "total": total,
            "results": hits,
        });
        if want < total {
            out["cursor"] = json!(search_cursor(t, &a.query, source, want));
        }
        Ok(out)
    }

    // ------------------------------------------------------------------ lookup

    fn find(ws: &Workspace, t: ItemType, id: &str, only: Option<Space>) -> Res<Arc<Item>> {
        check_id(id)?;
        match ws.lookup(t, id, only) {
            Lookup::Found(i) => Ok(i),
            Lookup::Missing { suggestions } => Err(OpError::new(
                "not_found",
                format!(
                    "no {t} `{id}`{}",
                    match only {
                        Some(s) => format!(" in the {s} space"),
                        None => String::new(),
                    }
                ),
            )
            .suggest(suggestions)),
            Lookup::Ambiguous { candidates } => Err(OpError::new(
                "ambiguous",
                format!("`{id}` names several {t}s; give the full id"),
            )
            .suggest(candidates)),
            Lookup::Refused(e) => Err(OpError::new("invalid_id", format!("refused: {e}"))),
        }
    }

    /// [`Self::find`] for a call that names an item of the workspace: without a project, an
    /// item that is in no other space is one the call needed a project for, and the error
    /// says so (issue 16: never a silent "no such item").
    fn find_needing_project(
        ws: &Workspace,
        t: ItemType,
        id: &str,
        only: Option<Space>,
    ) -> Res<Arc<Item>> {
        match Self::find(ws, t, id, only) {
            Err(e)
                if e.error == "not_found"
                    && ws.project.is_none()
                    && matches!(only, None | Some(Space::Project)) =>
            {
                let mut n = no_project(&format!(
                    "no {t} `{id}` in the user or builtin space, and no project to look in"
                ));
                n.suggestions = e.suggestions.clone();
                Err(n)
            }
            r => r,
        }
    }

    fn system_item(id: &str, host: &Host, project: Option<&Path>, session: &Session) -> Res<Json> {
        check_id(id)?;
        let Some(mut v) = system::compute(id, host, project) else {
            let ids: Vec<&str> = system::CATALOGUE.iter().map(|s| s.id).collect();
            let mut s: Vec<String> = closest_n(id, ids.iter().copied(), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = ids.iter().map(|s| s.to_string()).collect();
            }
            return Err(OpError::new("not_found", format!("no system item `{id}`")).suggest(s));
        };
        if let (Some(pv), Some(f)) = (&session.protocol_version, v.get_mut("protocol_version")) {
            *f = json!(pv);
        }
        let meta = system::item(id);
        Ok(json!({
            "item_type": "system",
            "id": id,
            "title": meta.map(|m| m.title),
            "description": meta.map(|m| m.description),
            "source": "system",
            "read_only": true,
            "fields": v,
        }))
    }

    // ------------------------------------------------------------------ load

    pub fn load(&self, session: &Session, a: &LoadArgs) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some("load"), Some(&a.item_id));
        let t = parse_type(&a.item_type).map_err(at)?;
        let extra = self
            .with(a.project_path.as_deref(), |sp| sp.extra_spaces())
            .map_err(at)?;
        let source = parse_source(a.source.as_deref(), &extra).map_err(at)?;
        check_id(&a.item_id).map_err(at)?;
        session.check("load", t, Some(&a.item_id)).map_err(at)?;
        let project = self.project_for(a.project_path.as_deref()).map_err(at)?;
        if t == ItemType::System {
            if a.destination.is_some() {
                return Err(at(OpError::new(
                    "read_only",
                    "system items are computed and read-only; they cannot be copied",
                )
                .with("allowed_actions", json!(["run"]))));
            }
            return Self::system_item(&a.item_id, &self.host, project.as_deref(), session)
                .map_err(at);
        }
        let ws = self.workspace(a.project_path.as_deref()).map_err(at)?;
        let item = Self::find_needing_project(&ws, t, &a.item_id, source).map_err(at)?;
        match &a.destination {
            None => Ok(describe(&ws, &item)),
            Some(dest) => {
                let dest = match dest.as_str() {
                    "project" => Space::Project,
                    "user" => Space::User,
                    other => {
                        return Err(at(OpError::new(
                            "invalid_destination",
                            format!("`{other}` is not a destination; use project or user"),
                        )
                        .suggest(vec!["project".into(), "user".into()])))
                    }
                };
                let root = ws
                    .space_root(dest)
                    .ok_or_else(|| at(no_project("destination project needs one")))?;
                // Without a source, the copy comes from the item's next space below the
                // destination (what `force` restores: a user copy from the builtin), else from
                // the other space that has it (a project item copied to the user space);
                // never from the destination itself.
                let item = if source.is_none() {
                    let all = ws.all_with_id(t, &item.id);
                    match all
                        .iter()
                        .find(|i| i.space > dest)
                        .or_else(|| all.iter().find(|i| i.space != dest))
                    {
                        Some(i) => Arc::clone(i),
                        None => {
                            return Err(at(OpError::new(
                                "nothing_to_copy",
                                format!(
                                    "{t} `{}` is only in the {dest} space ({}): there is nothing to copy onto it",
                                    item.id,
                                    item.path.display()
                                ),
                            )))
                        }
                    }
                } else {
                    item
                };
                // An item kiwi refused to read (a symlink out of its space, an unreadable
                // file) is not copied: its text is not the file's, and nothing is written.
                if let workspace::Parsed::Unreadable(d) = &item.parsed {
                    return Err(at(OpError::new(
                        "invalid_item",
                        format!(
                            "cannot copy {t} `{}`: {}; nothing was written",
                            item.id, d.message
                        ),
                    )
                    .with(
                        "diagnostics",
                        diagnostics_json(&item, std::slice::from_ref(d)),
                    )));
                }
                let rel = relative_in_space(&ws, &item);
                let target = root.join(&rel);
                // Under a running directive, the copy creates (or with force overwrites) the
                // destination item: that needs `create` (or `update`) on it, not only `load`.
                let exists = std::fs::symlink_metadata(&target).is_ok();
                let verb = if exists && a.force {
                    "update"
                } else {
                    "create"
                };
                session.check(verb, t, Some(&item.id)).map_err(at)?;
                // Every file is read (and confined to its space) before anything is written.
                let script = match &item.script {
                    None => None,
                    Some(script) => match read_item_file(&ws, &item, script) {
                        Some(text) => Some((root.join(script_rel(&ws, &item, script)), text)),
                        None => {
                            return Err(at(OpError::new(
                                "invalid_item",
                                format!(
                                    "cannot copy {t} `{}`: its script {} cannot be read inside its space (a symlink out of the space, or gone); nothing was written",
                                    item.id,
                                    script.display()
                                ),
                            )))
                        }
                    },
                };
                write_atomic(&root, &target, item.text(), a.force).map_err(at)?;
                let mut written = vec![target.to_string_lossy().into_owned()];
                if let Some((st, text)) = script {
                    write_atomic(&root, &st, &text, a.force).map_err(at)?;
                    written.push(st.to_string_lossy().into_owned());
                }
                Ok(json!({
                    "item_type": t.as_str(),
                    "id": item.id,
                    "from": item.space.as_str(),
                    "source_path": item.path.to_string_lossy(),
                    "destination": dest.as_str(),
                    "path": target.to_string_lossy(),
                    "overwrote": exists,
                    "written": written,
                    "message": format!(
                        "copied {t} `{}` from the {} space ({}) {} {}",
                        item.id,
                        item.space,
                        item.path.display(),
                        if exists { "onto" } else { "to" },
                        target.display()
                    ),
                }))
            }
        }
    }

    // ------------------------------------------------------------------ execute

    /// `execute`: every action of the table. A tool `run` streams its output to `sink` and
    /// stops when `cancel` fires.
    pub async fn execute(
        &self,
        session: &Mutex<Session>,
        a: &ExecuteArgs,
        sink: &dyn OutputSink,
        cancel: &CancellationToken,
    ) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some(&a.action), Some(&a.item_id));
        let t = parse_type(&a.item_type).map_err(at)?;
        let allowed = actions_of(t);
        let action = if a.dry_run && a.action == "run" && t == ItemType::Tool {
            "dry_run"
        } else {
            a.action.as_str()
        };
        if !allowed.contains(&action) {
            let msg = if t == ItemType::System {
                format!("system items are read-only: only `run` is allowed, not `{action}`")
            } else {
                format!("`{action}` is not an action of {t} items")
            };
            let mut s: Vec<String> = closest_n(action, allowed.iter().copied(), 1)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = allowed.iter().map(|s| s.to_string()).collect();
            }
            return Err(at(OpError::new(
                if t == ItemType::System {
                    "read_only"
                } else {
                    "invalid_action"
                },
                msg,
            )
            .suggest(s)
            .with("allowed_actions", json!(allowed))));
        }
        check_id(&a.item_id).map_err(at)?;
        let params = match &a.parameters {
            None | Some(Json::Null) => Map::new(),
            Some(Json::Object(m)) => m.clone(),
            Some(_) => {
                return Err(at(OpError::new(
                    "invalid_parameters",
                    "parameters must be a JSON object",
                )))
            }
        };
        if action != "done" {
            let verb = match action {
                "dry_run" => "run",
                "link" => "update",
                v => v,
            };
            let s = session.lock().unwrap_or_else(|p| p.into_inner()).clone();
            s.check(verb, t, Some(&a.item_id)).map_err(at)?;
        }
        let pp = a.project_path.as_deref();
        match (t, action) {
            (ItemType::System, _) => {
                let project = self.project_for(pp).map_err(at)?;
                let s = session.lock().unwrap_or_else(|p| p.into_inner()).clone();
                Self::system_item(&a.item_id, &self.host, project.as_deref(), &s).map_err(at)
            }
            (_, "create") | (_, "update") => self.write_item(t, action, a, &params).map_err(at),
            (_, "delete") => self.delete_item(t, a).map_err(at),
            (_, "validate") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = Self::find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                let diags = check_item(&ws, &item);
                let errors = diags
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                Ok(json!({
                    "item_type": t.as_str(),
                    "id": item.id,
                    "path": item.path.to_string_lossy(),
                    "valid": errors == 0,
                    "diagnostics": diagnostics_json(&item, &diags),
                }))
            }
            (ItemType::Directive, "run") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = Self::find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                let out = run_directive(&ws, &item, &params, &self.host).map_err(at)?;
                let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
                let caps = item
                    .directive()
                    .map(|d| d.capabilities.clone())
                    .unwrap_or_default();
                s.stack.push(Active {
                    id: item.id.clone(),
                    capabilities: caps,
                });
                let depth = s.stack.len();
                let mut out = out;
                out["session"] = json!({
                    "active_directive": item.id,
                    "depth": depth,
                    "nested": depth > 1,
                });
                Ok(out)
            }
            (ItemType::Directive, "done") => {
                let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
                let Some(pos) = s.stack.iter().rposition(|x| x.id == a.item_id) else {
                    let active: Vec<String> = s.stack.iter().map(|x| x.id.clone()).collect();
                    return Err(at(OpError::new(
                        "not_active",
                        format!("directive `{}` is not running in this session", a.item_id),
                    )
                    .suggest(active)));
                };
                s.stack.truncate(pos);
                Ok(json!({
                    "item_type": "directive",
                    "id": a.item_id,
                    "done": true,
                    "active_directive": s.active().map(|x| x.id.clone()),
                }))
            }
            (ItemType::Tool, "run") | (ItemType::Tool, "dry_run") => {
                let ws = self.workspace(pp).map_err(at)?;
                let tool = Self::find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                let builtin_init = tool.id == INIT_TOOL
                    && (tool.is_builtin()
                        || workspace::builtin_file("tools/core/init_userspace.yaml")
                            == Some(tool.text()));
                if action == "run" && builtin_init {
                    // (also the user space's unchanged copy that `init` wrote)
                    // The kernel's own primitive: `init` of the user space, in process.
                    let force = matches!(params.get("force"), Some(Json::Bool(true)))
                        || params.get("force").and_then(Json::as_str) == Some("true");
                    let r = crate::init::init_userspace(&self.host, force)
                        .map_err(|e| at(OpError::new("io_error", format!("init failed: {e}"))))?;
                    return Ok(json!({"item_type": "tool", "id": tool.id, "result": r}));
                }
                let req = exec::Request {
                    params: Json::Object(params),
                    overrides: None,
                    environment: None,
                };
                // The kernel's one run path: a tool (or a link of its chain) with
                // error-level diagnostics is refused, the diagnostics listed.
                let plan = exec::prepare_item(&ws, &tool, &req).map_err(|e| at(exec_error(&e)))?;
                if action == "dry_run" {
                    return Ok(json!({
                        "item_type": "tool",
                        "id": tool.id,
                        "dry_run": true,
                        "plan": plan.summary(),
                    }));
                }
                drop(ws);
                let r = exec::run(&plan, sink, cancel)
                    .await
                    .map_err(|e| at(exec_error(&e)))?;
                let mut v = serde_json::to_value(&r).unwrap_or(Json::Null);
                if let Json::Object(m) = &mut v {
                    m.insert("exit_code_shell".into(), json!(r.exit_code()));
                }
                let mut out = json!({"item_type": "tool", "id": tool.id, "result": v});
                if let Some((error, message)) = run_failure(&tool.id, &r) {
                    // A failed run is an error the agent sees as one (its output and exit
                    // status stay in the body): `ok: false` and the error fields.
                    out["ok"] = json!(false);
                    out["error"] = json!(error);
                    out["action"] = json!(action);
                    out["item_id"] = json!(a.item_id);
                    out["message"] = json!(message);
                    out["suggestions"] = json!([]);
                } else {
                    out["ok"] = json!(true);
                }
                Ok(out)
            }
            (ItemType::Knowledge, "run") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = Self::find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                Ok(describe(&ws, &item))
            }
            (ItemType::Knowledge, "link") => self.link(a, &params).map_err(at),
            _ => Err(at(OpError::new(
                "invalid_action",
                format!("`{action}` is not an action of {t} items"),
            ))),
        }
    }

    fn writable_root(&self, a: &ExecuteArgs, params: &Map<String, Json>) -> Res<(Space, PathBuf)> {
        let ws = self.workspace(a.project_path.as_deref())?;
        let space = match params.get("space").and_then(Json::as_str) {
            Some("builtin") => {
                return Err(OpError::new(
                    "read_only",
                    "the builtin space is read-only; write to project or user",
                ))
            }
            Some(s) if ws.parse_space(s).is_some_and(|sp| !sp.is_writable()) => {
                return Err(OpError::new(
                    "read_only",
                    format!("`{s}` is an extra space, read-only; write to project or user"),
                ))
            }
            Some(s) => Space::parse(s).ok_or_else(|| {
                OpError::new("invalid_space", format!("`{s}` is not a space"))
                    .suggest(vec!["project".into(), "user".into()])
            })?,
            None => Space::Project,
        };
        let root = ws.space_root(space).ok_or_else(|| {
            no_project(&format!(
                "`{}` would write into the project space",
                a.action
            ))
        })?;
        Ok((space, root))
    }

    fn write_item(
        &self,
        t: ItemType,
        action: &str,
        a: &ExecuteArgs,
        params: &Map<String, Json>,
    ) -> Res<Json> {
        let Some(content) = params.get("content").and_then(Json::as_str) else {
            return Err(OpError::new(
                "invalid_parameters",
                format!("{action} needs parameters.content: the whole file as a string"),
            )
            .suggest(vec!["content".into()]));
        };
        if content.trim().is_empty() {
            return Err(OpError::new(
                "invalid_content",
                format!("{action} needs the whole file in parameters.content; it is empty, and nothing was written"),
            )
            .suggest(vec!["content".into()]));
        }
        let ws = self.workspace(a.project_path.as_deref())?;
        let existing = ws.get(t, &a.item_id).cloned();
        let (space, root, target) = if action == "update" {
            let Some(item) = existing.clone() else {
                if ws.project.is_none() {
                    return Err(no_project(&format!(
                        "no {t} `{}` in the user space to update, and no project to look in",
                        a.item_id
                    )));
                }
                return Err(OpError::new(
                    "not_found",
                    format!("no {t} `{}` to update; use create", a.item_id),
                )
                .suggest(ws.suggest(t, &a.item_id, None)));
            };
            if item.is_builtin() {
                return Err(OpError::new(
                    "read_only",
                    format!(
                        "`{}` is a builtin item and the builtin space is read-only; copy it first with load (destination: project or user), then update the copy",
                        item.id
                    ),
                ));
            }
            let root = ws.space_root(item.space).unwrap_or_default();
            (item.space, root, item.path.clone())
        } else {
            let (space, root) = self.writable_root(a, params)?;
            let ext = match t {
                ItemType::Tool => tool_ext(params, content),
                _ => "md",
            };
            let folder = t.folder().unwrap_or("");
            let target = root.join(folder).join(format!("{}.{ext}", a.item_id));
            (space, root, target)
        };
        // An id is one file: a create next to another file of the same id in that space (a
        // YAML `X.yaml` beside `X.py`) is refused, force or not (force overwrites the same
        // file, it never adds a second).
        if action == "create" {
            if let Some(other) = ws
                .all_with_id(t, &a.item_id)
                .into_iter()
                .find(|i| i.space == space && i.path != target)
            {
                return Err(OpError::new(
                    "exists",
                    format!(
                        "{t} `{}` is already the file {} in the {space} space; an id is one file: update that file (execute update), or delete it first",
                        a.item_id,
                        other.path.display()
                    ),
                )
                .with("path", json!(other.path.to_string_lossy()))
                .suggest(vec!["update".into(), "delete".into()]));
            }
        }
        let force = action == "update" || params.get("force").and_then(Json::as_bool) == Some(true);
        if !force && std::fs::symlink_metadata(&target).is_ok() {
            return Err(OpError::new(
                "exists",
                format!(
                    "{} exists; use update, or pass parameters.force: true",
                    target.display()
                ),
            )
            .with("path", json!(target.to_string_lossy())));
        }
        // Refuse content that does not parse.
        let Some(parsed) = workspace::parse_item(
            t,
            a.item_id.clone(),
            space,
            target.clone(),
            content.as_bytes(),
        ) else {
            return Err(OpError::new(
                "invalid_content",
                "the content declares no tool metadata (__version__, __tool_type__, __executor_id__...)",
            ));
        };
        let errors: Vec<&Diagnostic> = parsed
            .parse_diagnostics()
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        if !errors.is_empty() {
            let owned: Vec<Diagnostic> = errors.into_iter().cloned().collect();
            return Err(OpError::new(
                "invalid_content",
                format!(
                    "the content does not parse ({} error{}); nothing was written",
                    owned.len(),
                    if owned.len() == 1 { "" } else { "s" }
                ),
            )
            .with("diagnostics", diagnostics_json(&parsed, &owned)));
        }
        write_atomic(&root, &target, content, force)?;
        let ws = self.workspace(a.project_path.as_deref())?;
        let diags = ws
            .item(&target)
            .map(|i| diagnostics_json(i, &check_item(&ws, i)))
            .unwrap_or(json!([]));
        Ok(json!({
            "item_type": t.as_str(),
            "id": a.item_id,
            "action": action,
            "space": space.as_str(),
            "path": target.to_string_lossy(),
            "diagnostics": diags,
        }))
    }

    fn delete_item(&self, t: ItemType, a: &ExecuteArgs) -> Res<Json> {
        let ws = self.workspace(a.project_path.as_deref())?;
        let item = Self::find_needing_project(&ws, t, &a.item_id, None)?;
        if item.is_builtin() || item.id != a.item_id {
            if item.is_builtin() {
                return Err(OpError::new(
                    "read_only",
                    format!(
                        "`{}` is a builtin item; the builtin space cannot be changed",
                        item.id
                    ),
                ));
            }
            return Err(OpError::new(
                "not_found",
                format!("no {t} with the exact id `{}`", a.item_id),
            )
            .suggest(vec![item.id.clone()]));
        }
        let root = ws.space_root(item.space).unwrap_or_default();
        ids::confine(&root, &item.path).map_err(|e| OpError::new("invalid_id", e.to_string()))?;
        std::fs::remove_file(&item.path).map_err(|e| {
            OpError::new(
                "io_error",
                format!("cannot delete {}: {e}", item.path.display()),
            )
        })?;
        // What the id names now, read from the workspace after the deletion (another file
        // of the same space, a lower space's item, or nothing).
        let after = self.workspace(a.project_path.as_deref())?;
        let now = after.get(t, &item.id).map(|i| {
            json!({
                "space": i.space.as_str(),
                "path": i.path.to_string_lossy(),
            })
        });
        Ok(json!({
            "item_type": t.as_str(),
            "id": item.id,
            "deleted": item.path.to_string_lossy(),
            "space": item.space.as_str(),
            "now_resolves_to": now,
        }))
    }

    fn link(&self, a: &ExecuteArgs, params: &Map<String, Json>) -> Res<Json> {
        let Some(reference) = params
            .get("reference")
            .or_else(|| params.get("target"))
            .or_else(|| params.get("id"))
            .and_then(Json::as_str)
        else {
            return Err(OpError::new(
                "invalid_parameters",
                "link needs parameters.reference: the id of the item to add to `references`",
            )
            .suggest(vec!["reference".into()]));
        };
        check_id(reference)?;
        let ws = self.workspace(a.project_path.as_deref())?;
        let item = Self::find_needing_project(&ws, ItemType::Knowledge, &a.item_id, None)?;
        if item.is_builtin() {
            return Err(OpError::new(
                "read_only",
                "builtin knowledge cannot be changed; copy it first with load (destination)",
            ));
        }
        let k = item.knowledge().cloned();
        if k.as_ref().is_some_and(|k| {
            k.references()
                .iter()
                .any(|(f, id, _)| *f == "references" && *id == reference)
        }) {
            return Ok(
                json!({"item_type": "knowledge", "id": item.id, "references_added": [], "already_linked": reference}),
            );
        }
        let new_text = add_reference(item.text(), reference);
        let root = ws.space_root(item.space).unwrap_or_default();
        write_atomic(&root, &item.path, &new_text, true)?;
        Ok(json!({
            "item_type": "knowledge",
            "id": item.id,
            "path": item.path.to_string_lossy(),
            "references_added": [reference],
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Helpers

/// The query that names a YAML tool's script as a resource: `kiwi://tool/ID?file=script`.
pub const SCRIPT_QUERY: &str = "?file=script";

fn mime_of(item: &Item) -> &'static str {
    mime_of_path(&item.path)
}

fn mime_of_path(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("yaml") | Some("yml") => "application/yaml",
        _ => "text/plain",
    }
}

/// Why a finished run failed, if it did: (error kind, message). A run fails when it timed
/// out, was cancelled, exited with a status other than 0, was ended by a signal, or (HTTP)
/// answered 400 or more.
pub fn run_failure(id: &str, r: &exec::RunResult) -> Option<(&'static str, String)> {
    match &r.output {
        exec::Output::Process(p) => {
            if p.timed_out {
                Some((
                    "timed_out",
                    format!(
                        "tool `{id}` timed out after {} ms and was stopped (exit status 124); its output so far is in result",
                        p.duration_ms
                    ),
                ))
            } else if p.cancelled {
                Some((
                    "cancelled",
                    format!("tool `{id}` was cancelled (exit status 130); its output so far is in result"),
                ))
            } else if let Some(code) = p.exit_code.filter(|c| *c != 0) {
                Some((
                    "tool_failed",
                    format!("tool `{id}` failed: exit status {code}; its output is in result (stdout, stderr)"),
                ))
            } else if let (None, Some(sig)) = (p.exit_code, p.signal) {
                Some((
                    "tool_failed",
                    format!(
                        "tool `{id}` was ended by signal {sig} (exit status {}); its output is in result",
                        128 + sig
                    ),
                ))
            } else {
                None
            }
        }
        exec::Output::Http(h) if h.status >= 400 => Some((
            "tool_failed",
            format!(
                "tool `{id}` failed: the server answered HTTP {}; the body is in result",
                h.status
            ),
        )),
        exec::Output::Http(_) => None,
    }
}

fn exec_error(e: &exec::ExecError) -> OpError {
    let kind = serde_json::to_value(e.kind).unwrap_or(Json::Null);
    let error = match e.kind {
        exec::ErrorKind::Invalid => "invalid_item",
        _ => "execution_error",
    };
    let mut o = OpError::new(error, e.message.clone())
        .with("kind", kind)
        .with("details", json!(e.details))
        .suggest(e.suggestions.clone());
    if !e.diagnostics.is_empty() {
        o = o.with("diagnostics", json!(e.diagnostics));
    }
    o
}

fn tool_ext(params: &Map<String, Json>, content: &str) -> &'static str {
    match params.get("format").and_then(Json::as_str) {
        Some("yaml") | Some("yml") => return "yaml",
        Some("python") | Some("py") => return "py",
        _ => {}
    }
    if content.contains("__version__")
        || content.contains("__executor_id__")
        || content.contains("\ndef ")
        || content.starts_with("import ")
        || content.starts_with("\"\"\"")
        || content.starts_with("#!")
    {
        "py"
    } else {
        "yaml"
    }
}

/// An item's diagnostics in the one view of `diag::view` (as `kiwi check --format json`).
pub fn diagnostics_json(item: &Item, diags: &[Diagnostic]) -> Json {
    crate::diag::view::DiagnosticView::json(crate::diag::view::FileText::of_item(item), diags)
}

/// An item as `load` shows it.
pub fn describe(ws: &Workspace, item: &Arc<Item>) -> Json {
    let m = search::meta(item);
    let diags = check_item(ws, item);
    let shadows: Vec<&str> = ws
        .all_with_id(item.item_type, &item.id)
        .iter()
        .filter(|i| i.path != item.path)
        .map(|i| i.space.as_str())
        .collect();
    let winner = ws.get(item.item_type, &item.id);
    let mut v = json!({
        "item_type": item.item_type.as_str(),
        "id": item.id,
        "source": item.space.as_str(),
        "path": item.path.to_string_lossy(),
        "metadata": m,
        "content": item.text(),
        "diagnostics": diagnostics_json(item, &diags),
        "other_spaces": shadows,
    });
    if let Some(w) = winner {
        if w.path != item.path {
            v["shadowed_by"] = json!(w.space.as_str());
        }
    }
    if let Some(s) = &item.script {
        v["script"] = json!(s.to_string_lossy());
    }
    if let Some(k) = item.knowledge() {
        if let Some(fm) = k.frontmatter.as_ref().and_then(|f| f.to_json()) {
            v["frontmatter"] = fm;
        }
        let body = item.text().get(k.body.start..k.body.end).unwrap_or("");
        v["body"] = json!(body);
    }
    v
}

fn relative_in_space(ws: &Workspace, item: &Item) -> PathBuf {
    if item.is_builtin() {
        item.path
            .strip_prefix(BUILTIN_ROOT)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| item.path.clone())
    } else {
        ws.space_root(item.space)
            .and_then(|r| item.path.strip_prefix(r).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| item.path.clone())
    }
}

fn script_rel(ws: &Workspace, item: &Item, script: &Path) -> PathBuf {
    if item.is_builtin() {
        script
            .strip_prefix(BUILTIN_ROOT)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| script.to_path_buf())
    } else {
        ws.space_root(item.space)
            .and_then(|r| script.strip_prefix(r).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| script.to_path_buf())
    }
}

fn read_item_file(ws: &Workspace, item: &Item, file: &Path) -> Option<String> {
    if item.is_builtin() {
        let rel = file.strip_prefix(BUILTIN_ROOT).ok()?.to_str()?;
        return workspace::builtin_file(rel).map(str::to_string);
    }
    let root = ws.space_root(item.space)?;
    let real = ids::confine(&root, file).ok()?;
    std::fs::read_to_string(real).ok()
}

/// Write a file atomically (a temporary file in the same folder, then a rename), refusing a
/// target outside `root` (through `..` or a symlinked folder) and an existing file unless
/// `force`.
pub fn write_atomic(root: &Path, target: &Path, content: &str, force: bool) -> Res<()> {
    let io = |e: std::io::Error| {
        OpError::new(
            "io_error",
            format!("cannot write {}: {e}", target.display()),
        )
    };
    if target
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(OpError::new(
            "invalid_id",
            "refused: the path climbs out of its space",
        ));
    }
    if let Ok(m) = std::fs::symlink_metadata(target) {
        if m.file_type().is_symlink() {
            return Err(OpError::new(
                "invalid_id",
                format!(
                    "refused: {} is a symlink; kiwi does not write through links",
                    target.display()
                ),
            ));
        }
        if !force {
            return Err(OpError::new(
                "exists",
                format!(
                    "{} exists; pass force: true to overwrite it",
                    target.display()
                ),
            )
            .with("path", json!(target.to_string_lossy())));
        }
    }
    let parent = target
        .parent()
        .ok_or_else(|| OpError::new("invalid_id", "no parent folder"))?;
    std::fs::create_dir_all(root).map_err(io)?;
    // Create the folders one by one, refusing any that resolves outside the space.
    std::fs::create_dir_all(parent).map_err(io)?;
    ids::confine(root, parent).map_err(|e| OpError::new("invalid_id", format!("refused: {e}")))?;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.kiwi-tmp-{}-{n}", std::process::id()));
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, target)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

/// Add an id to a knowledge entry's `references` (front matter), keeping the rest of the text.
pub fn add_reference(text: &str, reference: &str) -> String {
    let Some(rest) = text.strip_prefix("---\n") else {
        return format!("---\nreferences: [{reference}]\n---\n\n{text}");
    };
    let Some(end) = rest.find("\n---") else {
        return format!("---\nreferences: [{reference}]\n---\n\n{text}");
    };
    let fm = &rest[..end];
    let after = &rest[end..];
    let mut lines: Vec<String> = fm.lines().map(str::to_string).collect();
    if let Some(i) = lines.iter().position(|l| l.starts_with("references:")) {
        let value = lines[i]["references:".len()..].trim().to_string();
        if value.starts_with('[') && value.ends_with(']') {
            let inner = value[1..value.len() - 1].trim();
            lines[i] = if inner.is_empty() {
                format!("references: [{reference}]")
            } else {
                format!("references: [{inner}, {reference}]")
            };
        } else if value.is_empty() {
            let mut j = i + 1;
            while j < lines.len() && (lines[j].starts_with(' ') || lines[j].starts_with('-')) {
                j += 1;
            }
            let indent = lines
                .get(i + 1)
                .filter(|l| l.trim_start().starts_with('-'))
                .map(|l| l.len() - l.trim_start().len())
                .unwrap_or(2);
            lines.insert(j, format!("{}- {reference}", " ".repeat(indent)));
        } else {
            lines[i] = format!("references: [{value}, {reference}]");
        }
    } else {
        lines.push(format!("references: [{reference}]"));
    }
    format!("---\n{}{after}", lines.join("\n"))
}

// ---------------------------------------------------------------------------------------
// Directives

fn type_ok(ty: &str, v: &Json) -> bool {
    match ty {
        "string" | "path" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

/// A string parameter coerced to the input's type where it reads as one ("5" for an integer).
fn coerce(ty: &str, v: Json) -> Json {
    if let Json::String(s) = &v {
        match ty {
            "integer" | "number" | "boolean" | "array" | "object" => {
                if let Ok(p) = serde_json::from_str::<Json>(s) {
                    if type_ok(ty, &p) {
                        return p;
                    }
                }
            }
            _ => {}
        }
    }
    v
}

fn as_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

/// Validate parameters against a directive's inputs: unknown names, required, types, enums;
/// defaults filled in.
pub fn bind_inputs(d: &Directive, params: &Map<String, Json>) -> Res<Map<String, Json>> {
    let names: Vec<&str> = d.inputs.iter().map(|i| i.name.value.as_str()).collect();
    for k in params.keys() {
        if !names.contains(&k.as_str()) {
            let mut s: Vec<String> = closest_n(k, names.iter().copied(), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = names.iter().map(|s| s.to_string()).collect();
            }
            return Err(OpError::new(
                "invalid_parameters",
                format!(
                    "`{k}` is not an input of this directive (inputs: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            )
            .suggest(s));
        }
    }
    let mut out = Map::new();
    for input in &d.inputs {
        let name = &input.name.value;
        let ty = input
            .ty
            .as_ref()
            .map(|t| t.value.trim())
            .unwrap_or("string");
        let v = match params.get(name) {
            Some(v) if !v.is_null() => coerce(ty, v.clone()),
            _ => match &input.default {
                Some(def) => coerce(ty, Json::String(def.value.clone())),
                None if input.required => {
                    return Err(OpError::new(
                        "invalid_parameters",
                        format!("the required input `{name}` is missing"),
                    )
                    .suggest(vec![name.clone()]))
                }
                None => continue,
            },
        };
        if !type_ok(ty, &v) {
            return Err(OpError::new(
                "invalid_parameters",
                format!("input `{name}` must be of type {ty}, not {}", json_type(&v)),
            ));
        }
        if let Some(allowed) = &input.enum_values {
            let s = as_text(&v);
            if !allowed.contains(&s) {
                return Err(OpError::new(
                    "invalid_parameters",
                    format!(
                        "input `{name}` must be one of {}, not `{s}`",
                        allowed.join(", ")
                    ),
                )
                .suggest(allowed.clone()));
            }
        }
        out.insert(name.clone(), v);
    }
    Ok(out)
}

fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// Fill a directive's placeholders.
pub fn fill(
    text: &str,
    d: &Directive,
    values: &Map<String, Json>,
    host: &Host,
    project: Option<&Path>,
) -> String {
    let mut ps: Vec<_> = d.placeholders.iter().collect();
    ps.sort_by_key(|p| std::cmp::Reverse(p.range.start));
    let mut out = text.to_string();
    let mut last = usize::MAX;
    for p in ps {
        if p.range.end > last || p.range.end > out.len() {
            continue;
        }
        let value = match &p.kind {
            PlaceholderKind::Input { name, default, .. } => values
                .get(name)
                .map(as_text)
                .or_else(|| default.clone())
                .unwrap_or_default(),
            PlaceholderKind::Bare { name } => values.get(name).map(as_text).unwrap_or_default(),
            PlaceholderKind::System { item, field } => system::compute(item, host, project)
                .and_then(|v| v.get(field).map(as_text))
                .unwrap_or_default(),
        };
        out.replace_range(p.range.start..p.range.end, &value);
        last = p.range.start;
    }
    out
}

/// As for tools: a directive with error-level diagnostics (a placeholder naming no input,
/// `{input:targte}`, would silently become "") is neither run nor given as a prompt; the
/// refusal lists the diagnostics.
fn refuse_directive_errors(ws: &Workspace, item: &Arc<Item>) -> Res<()> {
    let errors: Vec<Diagnostic> = check_item(ws, item)
        .into_iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let n = errors.len();
    Err(OpError::new(
        "invalid_item",
        format!(
            "directive `{}` has {n} error{}; fix {} (execute validate shows {}); it was not run",
            item.id,
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        ),
    )
    .with("diagnostics", diagnostics_json(item, &errors)))
}

fn run_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    params: &Map<String, Json>,
    host: &Host,
) -> Res<Json> {
    let Some(d) = item.directive() else {
        return Err(OpError::new(
            "invalid_content",
            "this directive could not be read",
        ));
    };
    let parse_errors: Vec<Diagnostic> = d
        .diagnostics
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .cloned()
        .collect();
    if d.root.is_none() {
        return Err(OpError::new(
            "invalid_content",
            "this directive has no <directive> element; fix it (execute validate shows why)",
        )
        .with("diagnostics", diagnostics_json(item, &parse_errors)));
    }
    refuse_directive_errors(ws, item)?;
    let values = bind_inputs(d, params)?;
    let filled = fill(item.text(), d, &values, host, ws.project.as_deref());
    let fd = crate::directive::parse(&filled);
    let steps: Vec<Json> = fd
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let calls: Vec<Json> = s
                .calls
                .iter()
                .filter_map(|c| fd.calls.get(*c))
                .map(|c| {
                    let params: Map<String, Json> = c
                        .params
                        .iter()
                        .map(|(k, v)| (k.value.clone(), json!(v.value)))
                        .collect();
                    json!({
                        "kind": format!("{:?}", c.kind).to_lowercase(),
                        "item_type": c.item_type.as_ref().map(|x| x.value.clone()),
                        "item_id": c.item_id.as_ref().map(|x| x.value.clone()),
                        "action": c.action.as_ref().map(|x| x.value.clone()),
                        "query": c.query.as_ref().map(|x| x.value.clone()),
                        "parameters": params,
                    })
                })
                .collect();
            let text = filled.get(s.range.start..s.range.end).unwrap_or("");
            json!({
                "number": i + 1,
                "name": s.name.as_ref().map(|n| n.value.clone()),
                "description": s.description,
                "calls": calls,
                "text": text.trim(),
            })
        })
        .collect();
    let permissions: Vec<Json> = d
        .capabilities
        .iter()
        .map(|c| json!({"capability": c.describe(), "deny": c.deny, "valid": c.valid}))
        .collect();
    let outputs: Vec<Json> = fd
        .root
        .as_ref()
        .and_then(|r| r.child("outputs"))
        .map(|o| {
            o.children
                .iter()
                .map(|c| json!({"name": c.attr("name").map(|a| a.value.clone()).unwrap_or_else(|| c.name.clone()), "description": c.trimmed_text()}))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "item_type": "directive",
        "id": item.id,
        "source": item.space.as_str(),
        "path": item.path.to_string_lossy(),
        "name": fd.name.as_ref().map(|n| n.value.clone()),
        "description": fd.description.as_ref().map(|n| n.value.clone()),
        "inputs": values,
        "steps": steps,
        "permissions": permissions,
        "outputs": outputs,
        "body": filled,
        "instructions": INSTRUCTIONS,
    }))
}

// ---------------------------------------------------------------------------------------
// Help

pub const HELP_TOPICS: &[&str] = &[
    "overview",
    "search",
    "load",
    "execute",
    "directives",
    "tools",
    "knowledge",
    "system",
    "permissions",
    "environment",
];

/// `help {topic?}`: a short answer with one real call.
pub fn help(topic: Option<&str>) -> Res<Json> {
    let topic = topic.filter(|t| !t.is_empty()).unwrap_or("overview");
    let (text, call) = match topic {
        "overview" => ("Kiwi workspaces hold directives (workflows an agent follows), tools (things that run) and knowledge (reference entries), in three spaces: project (.ai/), user (~/.ai) and builtin; a project item shadows a user one, which shadows a builtin one. system items are read-only facts about the machine. Four tools: search, load, execute, help.",
            json!({"tool": "search", "arguments": {"item_type": "directive", "query": "init"}})),
        "search" => ("search ranks items by relevance (BM25 over name, description, category, tags and body; word forms, joined words such as wordcount and typos tolerated). source narrows to one space; shadowed results say which space wins. total is how many items match; when more match than limit (1 to 1000, default 10), pass the answer's cursor to get the next ones.",
            json!({"tool": "search", "arguments": {"item_type": "knowledge", "query": "permissions", "limit": 5}})),
        "load" => ("load returns an item's content, metadata, path, space and diagnostics. With destination (project|user) it copies the item there, never overwriting without force.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/kiwi-overview"}})),
        "execute" => ("execute runs an action on an item: directive run|done|validate|create|update|delete; tool run|dry_run|validate|create|update|delete; knowledge run|validate|create|update|delete|link; system run.",
            json!({"tool": "execute", "arguments": {"item_type": "system", "action": "run", "item_id": "runtime"}})),
        "directives" => ("Running a directive validates its inputs, fills its placeholders and returns its steps; follow them, then call done. While it runs, its permissions limit what you may do.",
            json!({"tool": "execute", "arguments": {"item_type": "directive", "action": "run", "item_id": "core/init"}})),
        "tools" => ("A tool runs through its chain (tool -> runtime -> primitive). dry_run shows the chain, command and environment names without running. Output streams as progress notifications when you send a progress token.",
            json!({"tool": "execute", "arguments": {"item_type": "tool", "action": "dry_run", "item_id": "core/init_userspace"}})),
        "knowledge" => ("Knowledge entries are markdown with YAML front matter (title, tags, references). run returns the entry; link adds an id to its references.",
            json!({"tool": "execute", "arguments": {"item_type": "knowledge", "action": "run", "item_id": "core/directive-format"}})),
        "system" => ("system items (paths, runtime, shell, mcp) are computed fresh and read-only; directives name their fields as {system.ITEM.FIELD}.",
            json!({"tool": "execute", "arguments": {"item_type": "system", "action": "run", "item_id": "paths"}})),
        "permissions" => ("A running directive's <permissions> decide what the session may search, load and execute; a refusal names the missing capability. Nested directives narrow. Without a directive, everything is allowed except changing system items.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/permissions"}})),
        "environment" => ("Tools get a filtered environment: keys, tokens and passwords are never passed on or shown; config.yaml env.allow / env.block adjust the filter. dry_run lists variable names only.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/env-config"}})),
        other => {
            let mut s: Vec<String> = closest_n(other, HELP_TOPICS.iter().copied(), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = HELP_TOPICS.iter().map(|s| s.to_string()).collect();
            }
            return Err(OpError::new("unknown_topic", format!("no help topic `{other}`"))
                .at(None, Some("help"), None)
                .suggest(s));
        }
    };
    Ok(json!({"topic": topic, "text": text, "example": call, "topics": HELP_TOPICS}))
}
