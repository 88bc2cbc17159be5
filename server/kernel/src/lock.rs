//! The project's lockfile, `.ai/kiwi.lock`: every item pulled from a registry, pinned by
//! version, registry commit and digest (issue 17).
//!
//! **Format: JSON**, pretty-printed with two-space indents, entries sorted by type then id,
//! each entry's `files` sorted, a trailing newline: the same input always gives the same bytes,
//! and a change is a small diff. JSON rather than TOML because it is the format of the
//! registry's index lines (one parser, one set of field names: `type`, `id`, `version`,
//! `digest`, `signer`) and rye-os's lockfiles (`*.lock.json`), and it needs no new
//! dependency.
//!
//! ```json
//! {
//!   "format": 1,
//!   "entries": [
//!     {
//!       "type": "tool",
//!       "id": "text/word_count",
//!       "version": "1.2.0",
//!       "registry": "file:///srv/registry.git",
//!       "commit": "3f1c…",
//!       "digest": "sha256:…",
//!       "signer": "9a0b…",
//!       "files": ["tools/text/word_count.py"],
//!       "signed_at": "2026-11-24T07:30:00Z",
//!       "signature": "…",
//!       "public_key": "…"
//!     }
//!   ]
//! }
//! ```
//!
//! An item is recorded in the lockfile **of the folder its files were written to**: the
//! project's `.ai/kiwi.lock`, or `kiwi.lock` at the root of the user space for `--to user`
//! (that is where `kiwi check`, the hover and `kiwi run` look for it). `files` are relative to
//! that same folder, `/`-separated; `digest` is [`crate::trust::item_digest`] over
//! exactly those files with exactly those paths, so [`LockEntry::current_digest`] recomputes it.
//! `signed_at`, `signature` and `public_key` (left out when empty) let the pin be verified
//! offline ([`LockEntry::verify`]). An entry with an empty `registry` was pinned locally by
//! `kiwi sign` rather than pulled.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The lockfile's name in a project's `.ai/`.
pub const LOCK_FILE: &str = "kiwi.lock";
/// The format version this kiwi writes and reads.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lockfile {
    pub entries: Vec<LockEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockEntry {
    #[serde(rename = "type")]
    pub item_type: String,
    pub id: String,
    pub version: String,
    /// The registry's URL as configured when the item was pulled.
    pub registry: String,
    /// The registry commit the item was read at.
    pub commit: String,
    pub digest: String,
    /// The signer's fingerprint (empty when the item was not signed).
    pub signer: String,
    /// The item's files, relative to the `.ai/` folder it was written to.
    pub files: Vec<String>,
    /// When it was signed (the envelope's `signed_at`); empty when not signed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signed_at: String,
    /// The signature over [`LockEntry::envelope`] (base64), so `kiwi check` and `kiwi verify`
    /// can verify the pin offline; empty when not signed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// The signer's public key as the registry gave it ([`crate::trust::public_key_text`]):
    /// tells a valid signature by an untrusted key from a bad one. Optional.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub public_key: String,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    format: u32,
    entries: Vec<LockEntry>,
}

#[derive(Debug)]
pub enum LockError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not a lockfile this kiwi understands (bad JSON, a missing field, an entry
    /// whose file path climbs out).
    Invalid { path: PathBuf, message: String },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            LockError::Invalid { path, message } => {
                write!(
                    f,
                    "{}: not a valid kiwi lockfile: {message}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for LockError {}

/// Whether a lockfile path is a plain relative path (no `..`, not absolute, no backslash, no
/// empty segment).
pub fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != ".." && s != ".")
}

impl Lockfile {
    /// The lockfile's path for a project's `.ai/` folder.
    pub fn path(project_ai: &Path) -> PathBuf {
        project_ai.join(LOCK_FILE)
    }

    /// Read `.ai/kiwi.lock`; a project without one has an empty lockfile. It is a file of
    /// the repository: read only as a regular file (a named pipe there is refused at once,
    /// never waited on).
    pub fn load(project_ai: &Path) -> Result<Lockfile, LockError> {
        let path = Self::path(project_ai);
        let text = match crate::ids::read_regular(&path).and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        }) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile::default()),
            Err(error) => return Err(LockError::Io { path, error }),
        };
        Self::parse(&text).map_err(|message| LockError::Invalid { path, message })
    }

    /// Parse a lockfile's text.
    pub fn parse(text: &str) -> Result<Lockfile, String> {
        let disk: OnDisk = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if disk.format != FORMAT {
            return Err(format!(
                "format {} (this kiwi reads format {FORMAT}); update kiwi",
                disk.format
            ));
        }
        for e in &disk.entries {
            if let Some(bad) = e.files.iter().find(|f| !is_safe_relative(f)) {
                return Err(format!(
                    "{}/{}: the file path {bad:?} is not a plain relative path",
                    e.item_type, e.id
                ));
            }
        }
        let mut lock = Lockfile {
            entries: disk.entries,
        };
        lock.normalize();
        Ok(lock)
    }

    /// A registry URL as a lockfile keeps it: never its credentials (it is committed).
    fn keep_url(e: &mut LockEntry) {
        if let std::borrow::Cow::Owned(u) = crate::redact::urls(&e.registry) {
            e.registry = u;
        }
    }

    fn normalize(&mut self) {
        for e in &mut self.entries {
            Self::keep_url(e);
            e.files.sort();
            e.files.dedup();
        }
        self.entries
            .sort_by(|a, b| (&a.item_type, &a.id).cmp(&(&b.item_type, &b.id)));
    }

    /// The lockfile's text: stable for the same entries, whatever order they were added in.
    pub fn to_text(&self) -> String {
        let mut sorted = self.clone();
        sorted.normalize();
        let disk = OnDisk {
            format: FORMAT,
            entries: sorted.entries,
        };
        let mut s = serde_json::to_string_pretty(&disk).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Write `.ai/kiwi.lock` atomically (a temporary file in `.ai/`, then a rename): a reader
    /// sees the old or the new lockfile, never half of one.
    pub fn save_atomic(&self, project_ai: &Path) -> Result<(), LockError> {
        use std::io::Write;
        let path = Self::path(project_ai);
        let io = |error| LockError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(project_ai).map_err(io)?;
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(LockError::Invalid {
                path: path.clone(),
                message: "it is a symlink; kiwi does not write through links".into(),
            });
        }
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = project_ai.join(format!(".{LOCK_FILE}.kiwi-tmp-{}-{n}", std::process::id()));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(self.to_text().as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        Ok(())
    }

    /// Add an entry, replacing the one with the same type and id.
    pub fn upsert(&mut self, e: LockEntry) {
        self.entries
            .retain(|x| !(x.item_type == e.item_type && x.id == e.id));
        self.entries.push(e);
        self.normalize();
    }

    /// Remove the entry of an item; whether there was one.
    pub fn remove(&mut self, item_type: &str, id: &str) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|x| !(x.item_type == item_type && x.id == id));
        before != self.entries.len()
    }

    pub fn get(&self, item_type: &str, id: &str) -> Option<&LockEntry> {
        self.entries
            .iter()
            .find(|x| x.item_type == item_type && x.id == id)
    }

    /// The entry whose files include this one (a path relative to `.ai/`).
    pub fn entry_for_file(&self, rel: &str) -> Option<&LockEntry> {
        self.entries
            .iter()
            .find(|e| e.files.iter().any(|f| f == rel))
    }
}

/// What the files of a locked item look like now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Every file is there and the digest is the locked one.
    Matches,
    /// Every file is there, with another digest (the item changed since it was pulled).
    Changed { digest: String },
    /// These files are missing.
    Missing { files: Vec<String> },
}

impl LockEntry {
    /// Whether the entry came from a registry (else it was pinned by `kiwi sign`).
    pub fn is_pulled(&self) -> bool {
        !self.registry.is_empty()
    }

    /// The envelope the entry's signature covers (its locked digest, not the files' current
    /// one: drift is [`LockEntry::state`]'s business).
    pub fn envelope(&self) -> crate::trust::Envelope {
        crate::trust::Envelope {
            item_type: self.item_type.clone(),
            id: self.id.clone(),
            version: self.version.clone(),
            digest: self.digest.clone(),
            signed_at: self.signed_at.clone(),
            signer: self.signer.clone(),
        }
    }

    /// Verify the entry's signature; `None` when it is not signed.
    pub fn verify(&self, store: &crate::trust::TrustStore) -> Option<crate::trust::Verdict> {
        if self.signature.is_empty() {
            return None;
        }
        let key = Some(self.public_key.as_str()).filter(|k| !k.is_empty());
        Some(store.verify(&self.envelope(), &self.signature, key))
    }

    /// The digest of the entry's files as they are now under `space_ai` (the `.ai/` folder
    /// they were written to), or the files that are missing. A file reached through a
    /// symlink (the file itself or any folder between `space_ai` and it) counts as missing:
    /// kiwi never reads through links here.
    pub fn current_digest(&self, space_ai: &Path) -> Result<String, Vec<String>> {
        let mut files = Vec::with_capacity(self.files.len());
        let mut missing = Vec::new();
        for rel in &self.files {
            if !is_safe_relative(rel) {
                missing.push(rel.clone());
                continue;
            }
            let p = space_ai.join(rel);
            if !crate::ids::inside_without_links(space_ai, &p) {
                missing.push(rel.clone());
                continue;
            }
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_file() => match crate::ids::read_regular(&p) {
                    Ok(b) => files.push((rel.clone(), b)),
                    Err(_) => missing.push(rel.clone()),
                },
                _ => missing.push(rel.clone()),
            }
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        if self.item_type == "skill" {
            // A skill is its whole folder: a file slipped into it changes it.
            files.extend(crate::skill::registry::unlisted_files(
                space_ai,
                &self.id,
                &self.files,
            ));
        }
        Ok(crate::trust::item_digest(&files))
    }

    /// Compare the files with the lock.
    pub fn state(&self, space_ai: &Path) -> FileState {
        match self.current_digest(space_ai) {
            Ok(d) if d == self.digest => FileState::Matches,
            Ok(digest) => FileState::Changed { digest },
            Err(files) => FileState::Missing { files },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: &str, id: &str, files: &[&str]) -> LockEntry {
        LockEntry {
            item_type: t.into(),
            id: id.into(),
            version: "1.0.0".into(),
            registry: "file:///r".into(),
            commit: "abc".into(),
            digest: "sha256:00".into(),
            signer: "ff".into(),
            files: files.iter().map(|s| s.to_string()).collect(),
            signed_at: String::new(),
            signature: String::new(),
            public_key: String::new(),
        }
    }

    #[test]
    fn text_is_sorted_and_stable_whatever_the_order_of_upserts() {
        let mut a = Lockfile::default();
        a.upsert(entry("tool", "z/b", &["tools/z/b.py", "tools/z/b.sh"]));
        a.upsert(entry("directive", "x", &["directives/x.md"]));
        a.upsert(entry("tool", "a", &["tools/a.py"]));
        let mut b = Lockfile::default();
        b.upsert(entry("tool", "a", &["tools/a.py"]));
        b.upsert(entry("directive", "x", &["directives/x.md"]));
        b.upsert(entry("tool", "z/b", &["tools/z/b.sh", "tools/z/b.py"]));
        assert_eq!(a.to_text(), b.to_text());
        let ids: Vec<_> = a.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["x", "a", "z/b"]);
        assert!(a.to_text().ends_with("}\n"));
        assert!(a.to_text().contains("\"type\": \"tool\""));
        // Round trip.
        assert_eq!(Lockfile::parse(&a.to_text()).unwrap(), a);
    }

    #[test]
    fn upsert_replaces_the_same_item() {
        let mut l = Lockfile::default();
        l.upsert(entry("tool", "a", &["tools/a.py"]));
        let mut e = entry("tool", "a", &["tools/a.py"]);
        e.version = "2.0.0".into();
        l.upsert(e);
        assert_eq!(l.entries.len(), 1);
        assert_eq!(l.entries[0].version, "2.0.0");
        assert!(l.remove("tool", "a"));
        assert!(l.entries.is_empty());
    }

    #[test]
    fn a_named_pipe_as_the_lockfile_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(dir.path().join(LOCK_FILE).to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let path = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Lockfile::load(&path).map(|_| ()).map_err(|e| e.to_string()));
        });
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("Lockfile::load waited on a named pipe");
        let err = r.expect_err("a named pipe is no lockfile");
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn load_missing_is_empty_save_is_atomic_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let ai = dir.path().join(".ai");
        assert_eq!(Lockfile::load(&ai).unwrap(), Lockfile::default());
        let mut l = Lockfile::default();
        l.upsert(entry("tool", "a", &["tools/a.py"]));
        l.save_atomic(&ai).unwrap();
        assert_eq!(Lockfile::load(&ai).unwrap(), l);
        let names: Vec<_> = std::fs::read_dir(&ai)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["kiwi.lock"], "no temporary file left");
    }

    #[test]
    fn bad_lockfiles_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ai = dir.path();
        for (text, want) in [
            ("{", "EOF"),
            ("{\"format\": 9, \"entries\": []}", "format 9"),
            ("{\"format\": 1}", "entries"),
            (
                r#"{"format":1,"entries":[{"type":"tool","id":"a","version":"1","registry":"r","commit":"c","digest":"d","signer":"s","files":["../../etc/passwd"]}]}"#,
                "not a plain relative path",
            ),
            (
                r#"{"format":1,"entries":[{"type":"tool","id":"a","version":"1","registry":"r","commit":"c","digest":"d","signer":"s","files":["/etc/passwd"]}]}"#,
                "not a plain relative path",
            ),
        ] {
            std::fs::write(ai.join(LOCK_FILE), text).unwrap();
            let e = Lockfile::load(ai).unwrap_err().to_string();
            assert!(
                e.contains("not a valid kiwi lockfile") && e.contains(want),
                "{e}"
            );
        }
    }

    #[test]
    fn state_tells_matches_changed_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ai = dir.path();
        std::fs::create_dir_all(ai.join("tools")).unwrap();
        std::fs::write(ai.join("tools/a.py"), "print(1)\n").unwrap();
        std::fs::write(ai.join("tools/a.sh"), "echo\n").unwrap();
        let mut e = entry("tool", "a", &["tools/a.py", "tools/a.sh"]);
        e.digest = crate::trust::item_digest(&[
            ("tools/a.sh".into(), b"echo\n".to_vec()),
            ("tools/a.py".into(), b"print(1)\n".to_vec()),
        ]);
        assert_eq!(e.state(ai), FileState::Matches);
        std::fs::write(ai.join("tools/a.sh"), "echo 2\n").unwrap();
        assert!(matches!(e.state(ai), FileState::Changed { .. }));
        std::fs::remove_file(ai.join("tools/a.py")).unwrap();
        assert_eq!(
            e.state(ai),
            FileState::Missing {
                files: vec!["tools/a.py".into()]
            }
        );
        // A symlink counts as missing.
        std::os::unix::fs::symlink("/etc/hostname", ai.join("tools/a.py")).unwrap();
        assert!(matches!(e.state(ai), FileState::Missing { .. }));
    }

    #[test]
    fn a_signed_entry_verifies_offline_and_a_tampered_one_does_not() {
        let u = tempfile::tempdir().unwrap();
        let keys = crate::trust::Keys::generate(u.path()).unwrap();
        let store = crate::trust::TrustStore::load(u.path()).unwrap();
        let mut e = entry("tool", "a", &["tools/a.py"]);
        assert_eq!(e.verify(&store), None);
        e.signer = keys.fingerprint();
        e.signed_at = "2026-11-24T07:30:00Z".into();
        e.signature = keys.sign(&e.envelope());
        assert!(e.verify(&store).unwrap().is_trusted());
        let text = Lockfile {
            entries: vec![e.clone()],
        }
        .to_text();
        assert!(text.contains("\"signature\""));
        let back = Lockfile::parse(&text).unwrap();
        assert!(back.entries[0].verify(&store).unwrap().is_trusted());
        e.version = "9.9.9".into();
        assert_eq!(e.verify(&store), Some(crate::trust::Verdict::BadSignature));
    }
}
