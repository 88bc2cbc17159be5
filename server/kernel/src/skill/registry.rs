//! A skill through registries and the lockfile: the whole folder is the item. Its files are
//! named as they lie in kiwi's own skills folder (`skills/<name>/<file>`, relative to a
//! space's `.ai/`, wherever the skill was found: `.claude/skills/<name>/` publishes the same
//! files), so that the one digest, signature, pull and lock of every item covers them.

use super::serve;
use crate::workspace::Item;
use std::path::{Path, PathBuf};

/// The folder of skills in a space, relative to its root (`.ai/skills`, `<user space>/skills`).
pub const FOLDER: &str = "skills";

/// A skill file's name relative to a space's root: `skills/<name>/<file>`.
pub fn space_relative(id: &str, rel: &str) -> String {
    format!("{FOLDER}/{id}/{rel}")
}

/// Every file of a skill's folder (as [`serve::files`] lists them: regular files, nothing
/// through a symlink, no `.git`), each with its name relative to a space's root and its
/// path; refused past the Skills extension's 512 files, or when a file resolves outside
/// the folder.
pub fn file_paths(item: &Item) -> std::result::Result<Vec<(String, PathBuf)>, String> {
    let dir = item
        .path
        .parent()
        .ok_or_else(|| format!("{}: no folder", item.path.display()))?;
    let rels = serve::files(dir);
    if rels.len() > serve::MAX_FILES {
        return Err(format!(
            "skill `{}` has {} files, above the {} a skill may hold",
            item.id,
            rels.len(),
            serve::MAX_FILES
        ));
    }
    let mut out = Vec::with_capacity(rels.len());
    for rel in rels {
        let abs = dir.join(&rel);
        crate::ids::confine(dir, &abs).map_err(|e| format!("{}: {e} (K006)", abs.display()))?;
        out.push((space_relative(&item.id, &rel), abs));
    }
    out.sort();
    Ok(out)
}

/// The files in a pulled skill's folder that its lock entry does not name (`skills/<id>/…`
/// relative to `space_ai`), with their bytes: a file slipped into a pinned skill changes
/// what an agent reads, so it changes the skill's digest.
pub fn unlisted_files(space_ai: &Path, id: &str, listed: &[String]) -> Vec<(String, Vec<u8>)> {
    if crate::ids::validate_id(id).is_err() || id.contains('/') {
        return Vec::new();
    }
    let dir = space_ai.join(FOLDER).join(id);
    if !crate::ids::inside_without_links(space_ai, &dir) {
        return Vec::new();
    }
    serve::files(&dir)
        .into_iter()
        .map(|rel| space_relative(id, &rel))
        .filter(|name| !listed.contains(name))
        .map(|name| {
            let bytes = crate::ids::read_regular(&space_ai.join(&name)).unwrap_or_default();
            (name, bytes)
        })
        .collect()
}
