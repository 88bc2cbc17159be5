//! The host-root image (`image: "/"`) without root: what podman is given instead of
//! `--rootfs /:O`.
//!
//! As root, podman runs the host's root directory as an overlay (`--rootfs /:O`): the
//! container sees every host file, writes go to the overlay and are dropped with it. Rootless
//! podman refuses both `--rootfs /` (it cannot create `/run/.containerenv` there) and `/:O`
//! (an overlay of `/` is invalid in a user namespace). It does run a root directory that the
//! user owns, so, when kiwi is not root:
//!
//! - a *skeleton* of the host root is built once, atomically (in a temporary directory
//!   renamed into place), in the user's runtime directory (`$XDG_RUNTIME_DIR/kiwi`, else
//!   `$XDG_CACHE_HOME/kiwi` or `~/.cache/kiwi`): an empty directory for every top-level
//!   directory of the host, the same symbolic links (`bin -> usr/bin`, ...); its name holds
//!   a hash of that listing, so that a host whose top level changes gets a new one;
//! - the container runs it `--read-only` (podman then puts a tmpfs on `/tmp`, `/var/tmp`
//!   and `/run`, and nothing is written into the skeleton; `/var/tmp` is kiwi's own, empty,
//!   not a copy of the host's), with every top-level host
//!   directory bound read-only at its place (`/usr`, `/etc`, `/home`, ...), except those
//!   podman provides itself (`/proc`, `/dev`, `/sys`) and the tmpfs ones (`/run`, `/tmp`).
//!
//! The project is bound read-write and the read-only paths read-only at their host paths,
//! as in the rootful form (the caller adds those), so a tool sees the project where it is on
//! the host. What differs from the rootful overlay: the rest of the file system is
//! read-only instead of writable-and-discarded; `/tmp` and `/run` start empty; files of
//! other users show as `nobody` (the user namespace of rootless podman).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level directories never bound from the host: podman mounts its own `/proc`, `/dev`
/// and `/sys`; `--read-only` puts a tmpfs on `/run` and `/tmp`.
const NOT_BOUND: &[&str] = &["proc", "dev", "sys", "run", "tmp"];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir(String),
    Link(String, PathBuf),
}

impl Entry {
    fn name(&self) -> &str {
        match self {
            Entry::Dir(n) | Entry::Link(n, _) => n,
        }
    }
}

/// The podman arguments, before the command, that make the host root the container's:
/// `--rootfs /:O` as root, else the skeleton and its read-only binds (`host`: kiwi's own
/// environment, for the runtime directory).
pub fn host_root_args(host: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(vec!["--rootfs".into(), "/:O".into()]);
    }
    let entries = top_level(Path::new("/"))?;
    let base = base_dir(host).ok_or_else(|| {
        "the host root as a rootless container needs a runtime or cache directory: set XDG_RUNTIME_DIR or HOME".to_string()
    })?;
    let skeleton = skeleton(&base, &entries)?;
    Ok(rootless_args(&skeleton, &entries))
}

fn rootless_args(skeleton: &Path, entries: &[Entry]) -> Vec<String> {
    let mut args = vec!["--read-only".to_string()];
    for e in entries {
        if let Entry::Dir(name) = e {
            if !NOT_BOUND.contains(&name.as_str()) {
                args.extend(["--volume".into(), format!("/{name}:/{name}:ro")]);
            }
            // `--read-only`'s own tmpfs on `/var/tmp` copies up what is below it, here the
            // host's `/var/tmp`: one folder there the user cannot read (another user's
            // private temporary folder) and podman refuses to start the container. An
            // empty one, like `/tmp`.
            if name == "var" {
                args.extend(["--tmpfs".into(), "/var/tmp:rw,notmpcopyup".into()]);
            }
        }
    }
    args.extend(["--rootfs".into(), skeleton.to_string_lossy().into_owned()]);
    args
}

/// The directories and symbolic links at the top of `root`, sorted. Names that a
/// `--volume` cannot carry (`:` or `,`, not UTF-8) are left out.
fn top_level(root: &Path) -> Result<Vec<Entry>, String> {
    let rd = std::fs::read_dir(root).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.contains([':', ',']) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(e.path()) {
                out.push(Entry::Link(name, target));
            }
        } else if meta.is_dir() {
            out.push(Entry::Dir(name));
        }
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(out)
}

/// `$XDG_RUNTIME_DIR/kiwi`, else `$XDG_CACHE_HOME/kiwi`, else `~/.cache/kiwi` (absolute
/// paths only).
fn base_dir(host: &BTreeMap<String, String>) -> Option<PathBuf> {
    let abs = |k: &str| {
        host.get(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_dir())
    };
    abs("XDG_RUNTIME_DIR")
        .or_else(|| abs("XDG_CACHE_HOME"))
        .or_else(|| abs("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("kiwi"))
}

/// FNV-1a, 64 bits: a name for a listing (stable across builds, unlike `DefaultHasher`).
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The skeleton for `entries` under `base`: reused when it is there (a directory of this
/// user), else built in a temporary directory and renamed into place.
fn skeleton(base: &Path, entries: &[Entry]) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let err =
        |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .map_err(|e| err("create", base, e))?;
    let listing = format!("{entries:?}");
    let path = base.join(format!("host-root-{:016x}", fnv(listing.as_bytes())));
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let usable = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir() && m.uid() == me);
    if usable(&path) {
        return Ok(path);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = base.join(format!(".host-root-{}-{nanos:08x}.tmp", std::process::id()));
    let built = (|| {
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&tmp)
            .map_err(|e| err("create", &tmp, e))?;
        for e in entries {
            match e {
                Entry::Dir(name) => {
                    let p = tmp.join(name);
                    std::fs::DirBuilder::new()
                        .mode(0o755)
                        .create(&p)
                        .map_err(|e| err("create", &p, e))?;
                }
                Entry::Link(name, target) => {
                    let p = tmp.join(name);
                    std::os::unix::fs::symlink(target, &p).map_err(|e| err("create", &p, e))?;
                }
            }
        }
        Ok::<(), String>(())
    })();
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another kiwi built it meanwhile: theirs is as good.
        if !usable(&path) {
            return Err(err("create", &path, e));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skeleton_mirrors_the_top_level_and_is_built_once() {
        let host = tempfile::tempdir().unwrap();
        for d in ["usr", "etc", "proc", "tmp", "a:b"] {
            std::fs::create_dir(host.path().join(d)).unwrap();
        }
        std::fs::create_dir_all(host.path().join("usr/bin")).unwrap();
        std::os::unix::fs::symlink("usr/bin", host.path().join("bin")).unwrap();
        std::fs::write(host.path().join("file"), "x").unwrap();
        let entries = top_level(host.path()).unwrap();
        assert_eq!(
            entries,
            vec![
                Entry::Link("bin".into(), "usr/bin".into()),
                Entry::Dir("etc".into()),
                Entry::Dir("proc".into()),
                Entry::Dir("tmp".into()),
                Entry::Dir("usr".into()),
            ]
        );
        let base = tempfile::tempdir().unwrap();
        let kiwi = base.path().join("kiwi");
        let s = skeleton(&kiwi, &entries).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&s)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["bin", "etc", "proc", "tmp", "usr"]);
        assert_eq!(
            std::fs::read_link(s.join("bin")).unwrap(),
            Path::new("usr/bin")
        );
        assert!(std::fs::read_dir(s.join("usr")).unwrap().next().is_none());
        // Built once: the same path again, and no temporary directory left.
        assert_eq!(skeleton(&kiwi, &entries).unwrap(), s);
        assert_eq!(std::fs::read_dir(&kiwi).unwrap().count(), 1);
        // Another top level, another skeleton.
        let other = skeleton(&kiwi, &entries[1..]).unwrap();
        assert_ne!(other, s);
        // The arguments: read-only, every directory bound read-only but podman's own and
        // the tmpfs ones, the skeleton as the root.
        assert_eq!(
            rootless_args(&s, &entries),
            vec![
                "--read-only".to_string(),
                "--volume".into(),
                "/etc:/etc:ro".into(),
                "--volume".into(),
                "/usr:/usr:ro".into(),
                "--rootfs".into(),
                s.to_string_lossy().into_owned(),
            ]
        );
        // With /var bound: an empty /var/tmp of its own (no copy of the host's, where an
        // unreadable folder of another user made podman refuse the run).
        let with_var = vec![Entry::Dir("var".into())];
        assert_eq!(
            rootless_args(&s, &with_var),
            vec![
                "--read-only".to_string(),
                "--volume".into(),
                "/var:/var:ro".into(),
                "--tmpfs".into(),
                "/var/tmp:rw,notmpcopyup".into(),
                "--rootfs".into(),
                s.to_string_lossy().into_owned(),
            ]
        );
    }

    #[test]
    fn without_a_runtime_or_cache_directory_there_is_none() {
        let none = BTreeMap::new();
        assert_eq!(base_dir(&none), None);
        let mut rel = BTreeMap::new();
        rel.insert("XDG_RUNTIME_DIR".to_string(), "relative".to_string());
        assert_eq!(base_dir(&rel), None);
        let d = tempfile::tempdir().unwrap();
        rel.insert("HOME".to_string(), d.path().to_string_lossy().into_owned());
        assert_eq!(base_dir(&rel), Some(d.path().join(".cache/kiwi")));
    }
}
