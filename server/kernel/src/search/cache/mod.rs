//! The search index kept on disk, in the user space's `cache/` folder, so that a new server
//! (an agent starts one per session) answers its first search without reading every item.
//!
//! One file per project (`cache/search-<hash of the project and user space>.idx`) holds:
//! a header (format, the kiwi version and a fingerprint of the builtin items, the project and
//! user space it describes, the extra spaces it was built with: a cache of other extra spaces
//! is not used), the listing it was built from (every item file with its sidecar
//! script, size and modification times; every folder that can hold items with its time),
//! and the index (terms, written forms, documents; the postings and lookups are made again
//! on reading). It is used only when the listing equals the disk's: a file added, changed or
//! removed since (a folder's time changes when a file is added or removed) makes it stale, and
//! it is built again and rewritten. A file that is not one (corrupt, truncated, of another
//! version, of another project, naming an item file the listing lacks) is ignored. Written
//! atomically (a temporary file renamed over it).

mod format;

use super::Index;
use crate::ids::Space;
use format::{decode, decode_index, decode_listing, encode, R};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A file's modification time and size, and its sidecar script's time.
pub type Stamp = (Option<SystemTime>, u64, Option<SystemTime>);
/// Every item file: its sidecar script and its stamp (the path shared with the workspace's
/// entry of the file, where it has one).
pub type Files = HashMap<std::sync::Arc<Path>, (Option<PathBuf>, Stamp)>;
/// Every folder that can hold items, with its modification time.
pub type Dirs = HashMap<PathBuf, Option<SystemTime>>;
/// The extra spaces of a workspace, in precedence order: each space and its root.
pub type Extras = Vec<(Space, PathBuf)>;

const MAGIC: &[u8] = b"KIWI-SEARCH-INDEX\n";
const FORMAT: u32 = 4;

/// An index read from the cache, with the listing it describes.
#[derive(Debug)]
pub struct Cached {
    pub files: Files,
    pub dirs: Dirs,
    pub index: std::sync::Arc<Index>,
}

/// The stamp of an item file (and its script) now. A skill's `SKILL.md` has its folder as
/// its "script": the latest time of any file or folder in it (a file added, removed,
/// renamed or changed anywhere in the skill changes the skill).
pub fn stamp(path: &Path, script: Option<&Path>) -> Stamp {
    let m = std::fs::metadata(path).ok();
    (
        m.as_ref().and_then(|m| m.modified().ok()),
        m.map(|m| m.len()).unwrap_or(0),
        script.and_then(|s| {
            let m = std::fs::metadata(s).ok()?;
            if m.is_dir() {
                crate::skill::tree_mtime(s)
            } else {
                m.modified().ok()
            }
        }),
    )
}

/// The modification time of a folder (not followed: a symlink's own).
pub fn dir_mtime(d: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(d).ok()?.modified().ok()
}

/// The cache file of a project (`None`: no project) under a user space.
pub fn path_for(user: &Path, project: Option<&Path>) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (user, project).hash(&mut h);
    user.join("cache")
        .join(format!("search-{:016x}.idx", h.finish()))
}

/// What the cache depends on besides the files: the format, kiwi's version and the builtin
/// items and system catalogue it carries.
fn fingerprint() -> u64 {
    use std::hash::{Hash, Hasher};
    static FP: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *FP.get_or_init(|| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (FORMAT, crate::system::KIWI_VERSION).hash(&mut h);
        for item in crate::workspace::builtin_items() {
            (item.id.as_str(), item.text()).hash(&mut h);
        }
        for s in crate::system::CATALOGUE {
            (s.id, s.title, s.description).hash(&mut h);
        }
        h.finish()
    })
}

/// Whether the disk still holds exactly the listing: every folder's time and every file's
/// stamp (stated in parallel).
pub fn listing_is_current(files: &Files, dirs: &Dirs) -> bool {
    use rayon::prelude::*;
    dirs.par_iter().all(|(d, m)| dir_mtime(d) == *m)
        && files
            .par_iter()
            .all(|(p, (script, s))| stamp(p, script.as_deref()) == *s)
}

/// Read the cache of a project; `None` when there is none or it is not a valid one for this
/// project, user space and kiwi (its listing is not compared with the disk here).
pub fn read(user: &Path, project: Option<&Path>, extras: &Extras) -> Option<Cached> {
    let bytes = std::fs::read(path_for(user, project)).ok()?;
    decode(&bytes, user, project, extras)
}

/// Read the cache of a project and compare its listing with the disk, the two at once (the
/// index is decoded while the files are stated); `Some` only when it is valid and current,
/// with the moment the comparison began and what `before_check` made of the listing just
/// before it began (a watch of its folders: whatever changes after is in its queue).
pub fn read_current<T>(
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
    before_check: impl FnOnce(&Files, &Dirs) -> T,
) -> Option<(Cached, std::time::Instant, T)> {
    let bytes = std::fs::read(path_for(user, project)).ok()?;
    let mut r = R(&bytes);
    let (files, dirs) = decode_listing(&mut r, user, project, extras)?;
    let made = before_check(&files, &dirs);
    let start = std::time::Instant::now();
    let (current, index) = rayon::join(
        || listing_is_current(&files, &dirs),
        || decode_index(&mut r, &files, extras),
    );
    if !current {
        return None;
    }
    Some((
        Cached {
            index: std::sync::Arc::new(index?),
            files,
            dirs,
        },
        start,
        made,
    ))
}

/// [`write`] on a thread of its own (one write of a cache file at a time: a write asked for
/// while one is under way is skipped; the next index built writes it).
pub fn write_in_background(
    user: PathBuf,
    project: Option<PathBuf>,
    extras: Extras,
    files: Files,
    dirs: Dirs,
    index: std::sync::Arc<Index>,
) {
    use std::collections::HashSet;
    let path = path_for(&user, project.as_deref());
    {
        let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        if !w.get_or_insert_with(HashSet::new).insert(path.clone()) {
            return;
        }
    }
    let spawned = std::thread::Builder::new()
        .name("kiwi-search-cache".into())
        .spawn({
            let path = path.clone();
            move || {
                let _ = write(&user, project.as_deref(), &extras, &files, &dirs, &index);
                let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
                w.get_or_insert_with(HashSet::new).remove(&path);
            }
        });
    if spawned.is_err() {
        let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        w.get_or_insert_with(HashSet::new).remove(&path);
    }
}

/// The cache files being written in the background.
static WRITING: std::sync::Mutex<Option<std::collections::HashSet<PathBuf>>> =
    std::sync::Mutex::new(None);

/// Wait (at most `limit`) until no cache file is being written in the background: what a
/// process calls before it exits, so that the next one finds the index it built (`kiwi
/// search` exited before, and the next run built the index again). `true` when none is.
pub fn wait_for_writes(limit: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    loop {
        let busy = WRITING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|w| !w.is_empty());
        if !busy {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Write the cache of a project atomically. Errors are the caller's to ignore: a cache that
/// cannot be written is rebuilt next time.
pub fn write(
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
    files: &Files,
    dirs: &Dirs,
    index: &Index,
) -> std::io::Result<()> {
    let Some(bytes) = encode(user, project, extras, files, dirs, index) else {
        return Ok(()); // a path that is not UTF-8: not cached
    };
    let path = path_for(user, project);
    let dir = path.parent().unwrap_or(user);
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("search");
    remove_abandoned_temps(dir, name);
    // A temporary file of this process and thread, renamed over the cache: a reader sees the
    // old file or the new one, never a part.
    let tmp = dir.join(format!(
        ".{name}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, &bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Remove the temporary files of cache file `name` that a writer killed mid-write left in
/// `dir` (`.NAME.PID.THREAD.tmp` of a process that no longer exists: several megabytes each,
/// kept for good otherwise); a live writer's are kept.
fn remove_abandoned_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file = e.file_name();
        let pid = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !process_exists(p)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether a process of this number exists (one of another user's included; where this
/// cannot be asked, every process is taken to exist: nothing is removed).
fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    let exists = match i32::try_from(pid) {
        Ok(p) if p > 0 => {
            // SAFETY: signal 0 only asks whether the process exists.
            let answered = unsafe { libc::kill(p, 0) } == 0;
            answered || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
        }
        _ => true,
    };
    #[cfg(not(unix))]
    let exists = {
        let _ = pid;
        true
    };
    exists
}

#[cfg(test)]
mod tests;
