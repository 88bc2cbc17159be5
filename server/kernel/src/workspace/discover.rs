//! Finding the item files of a space on disk (which files and folders count, sidecar
//! scripts) and reading one, refused when it resolves outside its space.

use super::item::{parse_item_with, Item, Parsed};
use crate::diag::{Code, Diagnostic};
use crate::ids::{self, ItemType, Space};
use crate::text::{SourceText, TextFile, TextRange};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file extensions that can hold items of a type.
pub(super) fn is_item_file(item_type: ItemType, path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match item_type {
        ItemType::Directive | ItemType::Knowledge => ext.eq_ignore_ascii_case("md"),
        ItemType::Tool => {
            matches!(ext, "py" | "yaml" | "yml") || crate::tool::is_javascript_extension(ext)
        }
        ItemType::Skill => crate::skill::is_skill_file(path),
        ItemType::System => false,
    }
}

/// Folders never searched for items.
/// A folder below a type folder that holds no items (hidden, caches, environments, builds):
/// skipped by discovery, by the stamps that keep a workspace true to the disk and by watches.
pub fn skip_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "__pycache__" | "node_modules" | "venv" | "target")
}

/// A file found in a space: its type, id, path, and for a sidecar YAML its script.
#[derive(Debug, Clone)]
pub struct Found {
    pub item_type: ItemType,
    pub id: String,
    /// Shared by the workspace's maps and the listing of its files (one copy of each path).
    pub path: std::sync::Arc<Path>,
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
        // Every path of the walk, by its bytes: the walk spells a folder's files alike, so
        // the bytes tell them apart (`Path`'s own order and hash go component by component:
        // a tenth of the first search's CPU with the kept index, `perf`).
        let set: HashSet<&OsStr> = files.iter().map(|p| p.as_os_str()).collect();
        // (folder, stem) -> the first file of that stem that is no YAML: a YAML tool's
        // script, found without a scan of every file per YAML (quadratic in a big space).
        let mut scripts: HashMap<(Option<&OsStr>, &OsStr), &PathBuf> = HashMap::new();
        for p in &files {
            if !matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
                scripts
                    .entry((
                        p.parent().map(Path::as_os_str),
                        p.file_stem().unwrap_or_default(),
                    ))
                    .or_insert(p);
            }
        }
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
                if ext == "py" || crate::tool::is_javascript_extension(ext) {
                    // A .py (.js, .ts) beside a same-stem YAML is that YAML's script, not an
                    // item of its own.
                    if set.contains(path.with_extension("yaml").as_os_str())
                        || set.contains(path.with_extension("yml").as_os_str())
                    {
                        continue;
                    }
                } else {
                    // A YAML tool's script: a same-stem file with another extension.
                    let stem = path.file_stem().unwrap_or_default();
                    script = scripts
                        .get(&(path.parent().map(Path::as_os_str), stem))
                        .map(|p| (*p).clone());
                }
            }
            out.push(Found {
                item_type,
                id,
                path: path.as_path().into(),
                script,
            });
        }
    }
    out
}

/// The largest item file kiwi reads (64 MiB). An item is read whole, parsed, checked and
/// searched; a bigger file under `.ai/` (a data dump) is none of that, and one bigger than
/// the memory made the read's allocation fail: every face aborted.
pub const MAX_ITEM_BYTES: u64 = 64 << 20;

/// Read and parse one file of a space, refusing a file that resolves outside the space, and
/// not reading one larger than [`MAX_ITEM_BYTES`].
/// The item's text may be let go of ([`SourceText::let_go`]): it is read again the same way.
pub fn load_file(found: &Found, space: Space, space_root: &Arc<Path>) -> Option<Item> {
    load_file_with(found, space, space_root, true)
}

/// [`load_file`], with or without a tool's checks that need only its file (`file_checks`;
/// see [`crate::tool::parse_yaml_with`]): without them, for a space nothing checks.
pub(super) fn load_file_with(
    found: &Found,
    space: Space,
    space_root: &Arc<Path>,
    file_checks: bool,
) -> Option<Item> {
    let mut item = match read_in_space(space_root, &found.path, MAX_ITEM_BYTES + 1) {
        Ok(bytes) if bytes.len() as u64 > MAX_ITEM_BYTES => unreadable(
            found,
            space,
            format!(
                "this file is larger than {} MiB: kiwi does not read it (an item is a text an agent reads, read whole to be checked and searched)",
                MAX_ITEM_BYTES >> 20
            ),
        ),
        Ok(bytes) => {
            let mut item = parse_item_with(
                found.item_type,
                found.id.clone(),
                space,
                found.path.to_path_buf(),
                &bytes,
                None,
                file_checks,
            )?;
            if !matches!(item.parsed, Parsed::Unreadable(_)) {
                item.source =
                    std::mem::replace(&mut item.source, SourceText::new("")).read_from(TextFile {
                        root: space_root.clone(),
                        path: found.path.clone(),
                        read: read_again,
                    });
            }
            item
        }
        Err(Unread::Failed(e)) => unreadable(found, space, format!("cannot read this file: {e}")),
        Err(Unread::Refused(e)) => unreadable(
            found,
            space,
            format!("refused: {e}; an item file must lie inside its space"),
        ),
    };
    item.script = found.script.clone();
    Some(item)
}

/// Why a file of a space was not read.
enum Unread {
    /// It resolves outside its space.
    Refused(std::io::Error),
    Failed(std::io::Error),
}

/// Read a file of a space (no more than `max` bytes of it), refusing one that resolves
/// outside it.
fn read_in_space(space_root: &Path, path: &Path, max: u64) -> Result<Vec<u8>, Unread> {
    // The common case in one pass: a file reached through no symlink, opened beneath the
    // space root by the kernel (no `lstat` per component before the open).
    if let Some(read) = ids::read_beneath_at_most(space_root, path, max) {
        return read.map_err(Unread::Failed);
    }
    // A file reached through no symlink is inside its space: no need to resolve both paths
    // (two `realpath`s per file, a component each).
    let real = if ids::inside_without_links(space_root, path) {
        path.to_path_buf()
    } else {
        ids::confine(space_root, path).map_err(Unread::Refused)?
    };
    ids::read_regular_at_most(&real, max).map_err(Unread::Failed)
}

/// Read a file's text again (after it was let go of), as it was read first: no more than
/// `max` bytes (one more than the text, so that a file grown since is told from it without
/// reading all of it).
fn read_again(space_root: &Path, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_in_space(space_root, path, max).map_err(|(Unread::Refused(e) | Unread::Failed(e))| e)
}

fn unreadable(found: &Found, space: Space, msg: String) -> Item {
    Item {
        item_type: found.item_type,
        id: found.id.clone(),
        space,
        path: found.path.to_path_buf(),
        script: None,
        source: SourceText::new(""),
        parsed: Parsed::Unreadable(Diagnostic::new(Code::K006, TextRange::empty(0), msg)),
    }
}

/// The script of a sidecar YAML tool: a same-stem file with another extension.
pub(super) fn discover_script(yaml: &Path) -> Option<PathBuf> {
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
