//! Writing files safely: what the agent service (item writes, copies) and `init` share.

use crate::ids;
use std::path::{Component, Path, PathBuf};

/// Why [`write_atomic`] wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteErrorKind {
    /// The target is not a place kiwi writes to: outside its root (through `..` or a
    /// symlinked folder), a symlink, or without a parent folder.
    Refused,
    /// The target exists and overwriting was not asked for.
    Exists,
    /// The file system refused (permissions, disk full, ...).
    Io,
}

/// A write that did not happen: why, the file, and a message naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteError {
    pub kind: WriteErrorKind,
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WriteError {}

/// Whether writing `path` stays inside `root` with no link in the way: `path` lies below
/// `root` through plain names only (no `..`, no `.`), and no component of it that exists —
/// `root` excluded, every folder below it and the file itself — is a symbolic link (a folder
/// that does not exist yet will be created as a plain folder). Checked BEFORE anything is
/// created: a symlinked folder is refused, not followed and found out afterwards.
pub fn check_unlinked(root: &Path, path: &Path) -> Result<(), String> {
    let rel = path
        .strip_prefix(root)
        .map_err(|_| format!("{} is not inside {}", path.display(), root.display()))?;
    if rel.as_os_str().is_empty() {
        return Err(format!("{} is the folder itself", path.display()));
    }
    let mut p = root.to_path_buf();
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return Err(format!(
                "{} climbs out of {} (`..` or `.`)",
                path.display(),
                root.display()
            ));
        };
        p.push(name);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; kiwi writes and reads nothing through links",
                    p.display()
                ))
            }
            Ok(_) => {}
            // Not there yet: nothing below it exists either.
            Err(_) => break,
        }
    }
    Ok(())
}

/// Write a file atomically (a temporary file in the same folder, then a rename), refusing a
/// target outside `root` (through `..` or a symlinked folder) and an existing file unless
/// `force`. On failure the target is untouched and no temporary file is left.
pub fn write_atomic(
    root: &Path,
    target: &Path,
    content: &str,
    force: bool,
) -> Result<(), WriteError> {
    let err = |kind, message: String| WriteError {
        kind,
        path: target.to_path_buf(),
        message,
    };
    let io = |e: std::io::Error| {
        err(
            WriteErrorKind::Io,
            format!("cannot write {}: {e}", target.display()),
        )
    };
    if target
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(err(
            WriteErrorKind::Refused,
            "refused: the path climbs out of its space".into(),
        ));
    }
    if let Ok(m) = std::fs::symlink_metadata(target) {
        if m.file_type().is_symlink() {
            return Err(err(
                WriteErrorKind::Refused,
                format!(
                    "refused: {} is a symlink; kiwi does not write through links",
                    target.display()
                ),
            ));
        }
        if !force {
            return Err(err(
                WriteErrorKind::Exists,
                format!(
                    "{} exists; pass force: true to overwrite it",
                    target.display()
                ),
            ));
        }
    }
    let parent = target
        .parent()
        .ok_or_else(|| err(WriteErrorKind::Refused, "no parent folder".into()))?;
    // No folder is created through a link: the whole path is checked first.
    if target.starts_with(root) {
        check_unlinked(root, target)
            .map_err(|e| err(WriteErrorKind::Refused, format!("refused: {e}")))?;
    }
    std::fs::create_dir_all(root).map_err(io)?;
    // Create the folders one by one, refusing any that resolves outside the space.
    std::fs::create_dir_all(parent).map_err(io)?;
    ids::confine(root, parent)
        .map_err(|e| err(WriteErrorKind::Refused, format!("refused: {e}")))?;
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
