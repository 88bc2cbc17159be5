//! The clones of the configured registries, in the user space's `cache/registries/<name>`,
//! and every check of what a registry holds before kiwi uses it.
//!
//! A clone is made without a checkout; its tree is checked (no symbolic link, no
//! submodule, no path that is not a plain relative one, no file above the size cap) before
//! anything is checked out, then every index line is checked and every file it names must
//! be a plain file of the tree. A version's files are read and checked against its line
//! (each sha256, the digest) when it is pulled, before anything is written ([`verified_files`]):
//! not all of them at the first add, which made adding a registry of 10,000 items take 18 s
//! (issue 17). An update fetches incrementally and accepts the new commit only when it descends from the
//! old one (history is never rewritten), every index file only grew (append-only), no
//! published version's files changed, and every new version's files match its line;
//! otherwise the clone stays where it was and the update is refused.

use super::config::RegistryEntry;
use super::format::{self, IndexLine, ItemVersions, RegistryToml};
use super::{git, ErrorKind, RegistryError, Result};
pub use super::{Clone, Updated};
use crate::ids::ItemType;
pub use format::index_file_item;
use std::path::{Path, PathBuf};

pub fn cache_root(user_space: &Path) -> PathBuf {
    user_space.join("cache").join("registries")
}

pub fn clone_dir(user_space: &Path, name: &str) -> PathBuf {
    cache_root(user_space).join(name)
}

/// A URL as given, except a local path, which is made absolute (git would read a relative
/// one against whatever folder it runs in later).
pub fn normalize_url(url: &str) -> Result<String> {
    let url = url.trim();
    if url.is_empty() {
        return Err(RegistryError::invalid("the registry URL is empty"));
    }
    if url.starts_with('-') {
        return Err(RegistryError::invalid(format!(
            "`{url}` is not a URL or a path"
        )));
    }
    if url.starts_with("sparse+") {
        if !super::sparse::is_sparse(url) {
            return Err(RegistryError::invalid(format!(
                "`{url}`: the sparse form is sparse+https://… or sparse+http://…"
            )));
        }
        return Ok(url.to_string());
    }
    let scp_like = url
        .split_once(':')
        .is_some_and(|(host, _)| !host.contains('/') && host.len() > 1);
    if url.contains("://") || scp_like {
        return Ok(url.to_string());
    }
    let p = Path::new(url);
    let abs = p
        .canonicalize()
        .map_err(|e| RegistryError::invalid(format!("registry path {url}: {e}")))?;
    Ok(abs.to_string_lossy().into_owned())
}

/// Check every entry of a commit's tree; its files' paths.
fn check_tree(dir: &Path, commit: &str) -> Result<std::collections::HashSet<String>> {
    let entries = git::ls_tree(dir, commit)?;
    let files = entries.iter().filter(|e| e.mode != "040000").count();
    if files > format::MAX_TREE_FILES {
        return Err(RegistryError::hostile(format!(
            "the registry holds {files} files, above the cap of {} files: refused, nothing was checked out",
            format::MAX_TREE_FILES
        )));
    }
    let bytes: u64 = entries.iter().filter_map(|e| e.size).sum();
    if bytes > format::MAX_TREE_BYTES {
        return Err(RegistryError::hostile(format!(
            "the registry's files add up to {bytes} bytes, above the cap of {} bytes: refused, nothing was checked out",
            format::MAX_TREE_BYTES
        )));
    }
    let mut has_toml = false;
    for e in &entries {
        format::check_relative("a path in the registry", &e.path)?;
        match e.mode.as_str() {
            "120000" => {
                return Err(RegistryError::hostile(format!(
                    "the registry holds a symbolic link, `{}`: refused (a registry holds plain files only)",
                    e.path
                )))
            }
            "160000" => {
                return Err(RegistryError::hostile(format!(
                    "the registry holds a submodule, `{}`: refused",
                    e.path
                )))
            }
            "100644" | "100755" | "040000" => {}
            m => {
                return Err(RegistryError::hostile(format!(
                    "the registry holds `{}` of mode {m}: refused",
                    e.path
                )))
            }
        }
        let cap = if e.path.starts_with("items/") {
            format::MAX_FILE_BYTES
        } else {
            format::MAX_INDEX_BYTES
        };
        if e.size.unwrap_or(0) > cap {
            return Err(RegistryError::hostile(format!(
                "`{}` is {} bytes, above the cap of {cap}: refused",
                e.path,
                e.size.unwrap_or(0)
            )));
        }
        if e.path == format::REGISTRY_TOML {
            has_toml = true;
        }
    }
    if !has_toml {
        return Err(RegistryError::invalid(format!(
            "not a kiwi registry: no {} at its root (make one with `kiwi registry new`)",
            format::REGISTRY_TOML
        )));
    }
    Ok(entries
        .into_iter()
        .filter(|e| e.mode != "040000")
        .map(|e| e.path)
        .collect())
}

/// Every file a line names is a file of the checked tree (plain, under the cap): what the
/// first add checks of a version without reading it ([`verified_files`] reads and checks
/// its contents when it is pulled).
fn check_listed(tree: &std::collections::HashSet<String>, line: &IndexLine) -> Result<()> {
    let base = line.items_dir();
    for f in &line.files {
        if !tree.contains(&format!("{base}/{}", f.path)) {
            return Err(RegistryError::hostile(format!(
                "{}: file `{}` is not in the registry ({base}/{} is not in its tree)",
                line.label(),
                f.path,
                f.path
            )));
        }
    }
    Ok(())
}

fn read_toml_at(dir: &Path, commit: &str) -> Result<RegistryToml> {
    let bytes = git::show_file(dir, commit, format::REGISTRY_TOML)?.ok_or_else(|| {
        RegistryError::invalid(format!("not a kiwi registry: no {}", format::REGISTRY_TOML))
    })?;
    RegistryToml::parse(&String::from_utf8_lossy(&bytes))
}

/// The files of one version, read from the clone's working tree: plain files only, each
/// under the size cap.
pub fn read_files(dir: &Path, line: &IndexLine) -> Result<Vec<(String, Vec<u8>)>> {
    let base = dir.join(line.items_dir());
    let mut out = Vec::new();
    for f in &line.files {
        let p = base.join(&f.path);
        let meta = std::fs::symlink_metadata(&p).map_err(|e| {
            RegistryError::hostile(format!(
                "{}: file `{}` is not in the registry ({e})",
                line.label(),
                f.path
            ))
        })?;
        if !meta.file_type().is_file() {
            return Err(RegistryError::hostile(format!(
                "{}: `{}` is not a plain file (a symbolic link or a folder): refused",
                line.label(),
                f.path
            )));
        }
        if meta.len() > format::MAX_FILE_BYTES {
            return Err(RegistryError::hostile(format!(
                "{}: `{}` is {} bytes, above the cap of {}: refused",
                line.label(),
                f.path,
                meta.len(),
                format::MAX_FILE_BYTES
            )));
        }
        let bytes = std::fs::read(&p).map_err(|e| RegistryError::io(p.display(), e))?;
        out.push((f.path.clone(), bytes));
    }
    Ok(out)
}

/// Read and check a version's files against its line.
pub fn verified_files(dir: &Path, line: &IndexLine) -> Result<Vec<(String, Vec<u8>)>> {
    let files = read_files(dir, line)?;
    format::verify_files(line, &files)?;
    Ok(files)
}

/// The versions of one item in a clone, or `None` when the registry does not have it.
pub fn item_versions(dir: &Path, item_type: ItemType, id: &str) -> Result<Option<ItemVersions>> {
    let p = dir.join(format::index_path(item_type, id));
    let meta = match std::fs::symlink_metadata(&p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RegistryError::io(p.display(), e)),
    };
    if !meta.file_type().is_file() || meta.len() > format::MAX_INDEX_BYTES {
        return Err(RegistryError::hostile(format!(
            "{}: not a plain file under the size cap: refused",
            p.display()
        )));
    }
    let text = std::fs::read_to_string(&p).map_err(|e| RegistryError::io(p.display(), e))?;
    ItemVersions::parse(&text, item_type, id).map(Some)
}

/// Every item of a clone's index.
pub fn catalog(dir: &Path) -> Result<Vec<(ItemType, String, ItemVersions)>> {
    let mut out = Vec::new();
    let root = dir.join("index");
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(RegistryError::io(d.display(), e)),
        };
        for e in rd.flatten() {
            let p = e.path();
            let ft = e
                .file_type()
                .map_err(|er| RegistryError::io(p.display(), er))?;
            if ft.is_symlink() {
                return Err(RegistryError::hostile(format!(
                    "{} is a symbolic link: refused",
                    p.display()
                )));
            }
            if ft.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(rel) = p.strip_prefix(dir) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if let Some((t, id)) = index_file_item(&rel)? {
                if let Some(v) = item_versions(dir, t, &id)? {
                    out.push((t, id, v));
                }
            }
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(out)
}

/// A clone's state without running git (the commit its branch points at, read from
/// `.git/HEAD`, the ref's file or `packed-refs`; a sparse mirror's marker), to tell cheaply
/// whether it moved. `None` when it is not fetched.
pub fn fetched_state(dir: &Path) -> Option<String> {
    if let Ok(t) = std::fs::read_to_string(dir.join(super::sparse::MARKER)) {
        return Some(t);
    }
    let git = dir.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let Some(r) = head.trim().strip_prefix("ref: ") else {
        return Some(head.trim().to_string());
    };
    if format::check_relative("a ref", r).is_err() {
        return None;
    }
    if let Ok(c) = std::fs::read_to_string(git.join(r)) {
        return Some(c.trim().to_string());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed
        .lines()
        .find_map(|l| l.strip_suffix(r).map(|c| c.trim().to_string()))
}

/// Whether a registry's clone (or sparse mirror) exists.
pub fn is_fetched(dir: &Path) -> bool {
    dir.join(".git").is_dir() || dir.join(super::sparse::MARKER).is_file()
}

/// The existing clone of a registry (checked when it was made or updated).
pub fn open(user_space: &Path, entry: &RegistryEntry) -> Result<Clone> {
    let dir = clone_dir(user_space, &entry.name);
    if super::sparse::is_sparse(&entry.url) && dir.join(super::sparse::MARKER).is_file() {
        return super::sparse::open(entry, &dir);
    }
    if !dir.join(".git").is_dir() {
        return Err(RegistryError::not_found(format!(
            "registry `{}` is not fetched yet: run `kiwi registry update {}`",
            entry.name, entry.name
        )));
    }
    let branch = git::branch(&dir)?;
    let commit = git::rev_parse(&dir, "HEAD")?;
    let toml = read_toml_at(&dir, &commit)?;
    Ok(Clone {
        name: entry.name.clone(),
        url: entry.url.clone(),
        dir,
        branch,
        commit,
        toml,
    })
}

/// The clone, made first when there is none.
pub fn open_or_fetch(user_space: &Path, entry: &RegistryEntry) -> Result<Clone> {
    match open(user_space, entry) {
        Ok(c) => Ok(c),
        Err(e) if e.kind == ErrorKind::NotFound => update(user_space, entry).map(|u| u.clone),
        Err(e) => Err(e),
    }
}

/// Fetch a registry (clone it the first time), checking everything it brings.
pub fn update(user_space: &Path, entry: &RegistryEntry) -> Result<Updated> {
    let dir = clone_dir(user_space, &entry.name);
    let sparse = super::sparse::is_sparse(&entry.url);
    let same = if sparse {
        std::fs::read_to_string(dir.join(super::sparse::MARKER))
            .is_ok_and(|t| t.lines().next() == Some(entry.url.as_str()))
    } else {
        dir.join(".git").is_dir()
            && git::run(Some(&dir), &["remote", "get-url", "origin"]).unwrap_or_default()
                == entry.url
    };
    if !same && dir.exists() {
        // The registry was re-added with another URL: a fresh clone.
        std::fs::remove_dir_all(&dir).map_err(|e| RegistryError::io(dir.display(), e))?;
    }
    if sparse {
        return super::sparse::update(entry, &dir);
    }
    if same {
        return update_existing(entry, &dir);
    }
    fresh_clone(entry, &dir)
}

fn fresh_clone(entry: &RegistryEntry, dir: &Path) -> Result<Updated> {
    let root = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(root).map_err(|e| RegistryError::io(root.display(), e))?;
    let tmp = root.join(format!(".{}.kiwi-tmp-{}", entry.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| {
        git::clone_no_checkout(&entry.url, &tmp)?;
        let commit = git::rev_parse(&tmp, "HEAD").map_err(|_| {
            RegistryError::invalid(format!(
                "registry `{}` ({}) is an empty repository: make one with `kiwi registry new`",
                entry.name, entry.url
            ))
        })?;
        let tree = check_tree(&tmp, &commit)?;
        let toml = read_toml_at(&tmp, &commit)?;
        git::reset_hard(&tmp, &commit)?;
        let mut new_versions = Vec::new();
        for (_, _, versions) in catalog(&tmp)? {
            for v in &versions.versions {
                check_listed(&tree, &v.line)?;
                new_versions.push(v.line.label());
            }
        }
        let branch = git::branch(&tmp)?;
        Ok((commit, toml, branch, new_versions))
    })();
    match result {
        Ok((commit, toml, branch, new_versions)) => {
            Updated::swap_in(entry, &tmp, dir, (branch, commit, toml), None, new_versions)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn update_existing(entry: &RegistryEntry, dir: &Path) -> Result<Updated> {
    let branch = git::branch(dir)?;
    let old = git::rev_parse(dir, "HEAD")?;
    git::fetch(dir)?;
    let new = git::rev_parse(dir, &format!("refs/remotes/origin/{branch}"))?;
    let mut new_versions = Vec::new();
    if new != old {
        if !git::is_ancestor(dir, &old, &new)? {
            return Err(RegistryError::hostile(format!(
                "registry `{}` rewrote its history: its {branch} ({}) no longer contains the commit kiwi had ({}); refused, nothing changed (if the maintainers did this on purpose, `kiwi registry remove` and `add` it again)",
                entry.name,
                short(&new),
                short(&old)
            )));
        }
        check_tree(dir, &new)?;
        read_toml_at(dir, &new)?;
        // Index files only grow; no published version's files change.
        let mut added: Vec<IndexLine> = Vec::new();
        for path in git::changed_files(dir, &old, &new, "index")? {
            let Some((t, id)) = index_file_item(&path)? else {
                continue;
            };
            let before = git::show_file(dir, &old, &path)?.unwrap_or_default();
            let Some(after) = git::show_file(dir, &new, &path)? else {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` deleted `{path}`: an index is append-only; refused, nothing changed",
                    entry.name
                )));
            };
            if !after.starts_with(&before) {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` rewrote `{path}` (an index is append-only: a published version never changes); refused, nothing changed",
                    entry.name
                )));
            }
            let old_v = ItemVersions::parse(&String::from_utf8_lossy(&before), t, &id)?;
            let new_v = ItemVersions::parse(&String::from_utf8_lossy(&after), t, &id)?;
            for v in new_v.versions {
                if old_v.get(&v.version).is_none() {
                    added.push(v.line);
                }
            }
        }
        for path in git::changed_files(dir, &old, &new, "items")? {
            if !added
                .iter()
                .any(|l| path.starts_with(&format!("{}/", l.items_dir())))
            {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` changed `{path}`, a file of no version it published in this update (a published version never changes); refused, nothing changed",
                    entry.name
                )));
            }
        }
        git::reset_hard(dir, &new)?;
        for l in &added {
            if let Err(e) = verified_files(dir, l) {
                let _ = git::reset_hard(dir, &old);
                return Err(RegistryError::new(
                    e.kind,
                    format!("{}; refused, the clone stays at {}", e.message, short(&old)),
                ));
            }
            new_versions.push(l.label());
        }
    }
    let toml = read_toml_at(dir, &new)?;
    Ok(Updated {
        clone: Clone {
            name: entry.name.clone(),
            url: entry.url.clone(),
            dir: dir.to_path_buf(),
            branch,
            commit: new.clone(),
            toml,
        },
        previous: Some(old),
        new_versions,
    })
}

pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Create a registry: a git repository holding `kiwi-registry.toml` and the empty index,
/// committed on `main`. `bare`: a bare repository (to push to, or to serve), made from a
/// temporary working copy.
pub fn create(dir: &Path, name: &str, bare: bool) -> Result<()> {
    if dir.exists()
        && std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(RegistryError::new(
            ErrorKind::Conflict,
            format!(
                "{} exists and is not empty; nothing was written",
                dir.display()
            ),
        ));
    }
    let work = if bare {
        let parent = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| RegistryError::io(parent.display(), e))?;
        parent.join(format!(".kiwi-registry-new-{}", std::process::id()))
    } else {
        dir.to_path_buf()
    };
    let result = (|| {
        std::fs::create_dir_all(work.join("index"))
            .and_then(|_| std::fs::create_dir_all(work.join("items")))
            .map_err(|e| RegistryError::io(work.display(), e))?;
        let w = |rel: &str, text: &str| {
            std::fs::write(work.join(rel), text).map_err(|e| RegistryError::io(rel, e))
        };
        w(format::REGISTRY_TOML, &RegistryToml::new(name).render())?;
        w("index/.gitkeep", "")?;
        w("items/.gitkeep", "")?;
        git::run(Some(&work), &["init", "--quiet", "--initial-branch=main"])?;
        git::run(
            Some(&work),
            &[
                "add",
                "--",
                format::REGISTRY_TOML,
                "index/.gitkeep",
                "items/.gitkeep",
            ],
        )?;
        git::commit(&work, &format!("kiwi registry {name}"))?;
        if bare {
            git::run(
                None,
                &[
                    std::ffi::OsStr::new("clone"),
                    std::ffi::OsStr::new("--quiet"),
                    std::ffi::OsStr::new("--bare"),
                    std::ffi::OsStr::new("--"),
                    work.as_os_str(),
                    dir.as_os_str(),
                ],
            )?;
            git::run(Some(dir), &["remote", "remove", "origin"])?;
        } else {
            // Pushes to this working copy's checked-out branch update its files too.
            git::run(
                Some(&work),
                &["config", "receive.denyCurrentBranch", "updateInstead"],
            )?;
        }
        Ok(())
    })();
    if bare {
        let _ = std::fs::remove_dir_all(&work);
    }
    if result.is_err() && !bare {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}
