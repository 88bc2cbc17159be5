//! Registries (`10-registry.md`): a git repository with a content-addressed index, shared
//! with `kiwi publish` and read with `kiwi pull` and `kiwi search --source registry`.
//!
//! ```text
//! kiwi-registry.toml                      name, format version, optional required publisher keys
//! index/<type>/<id>.jsonl                 one JSON line per version, append-only
//! items/<type>/<id>/<version>/<files>     the item's files
//! ```
//!
//! Everything that talks to git is in [`git`] (the user's own `git`, started without a
//! shell); what a registry holds and how it is checked is in [`format`]; the clones in the
//! user space's `cache/registries/` in [`store`]; the configured registries in [`config`];
//! publish, yank and pull in [`ops`]; search over index lines in [`search`]. The swap of a
//! checked fetch into place, one for a git clone and a sparse mirror, is [`Updated::swap_in`].

pub mod config;
pub mod format;
pub mod git;
pub mod ops;
pub mod pins;
pub mod search;
pub mod sparse;
pub mod store;

/// What went wrong, for faces that map errors to their own kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The configuration (`registries:`) or an argument is wrong.
    Invalid,
    /// No such registry, item or version.
    NotFound,
    /// The registry holds something kiwi refuses (paths that climb out, symlinks, oversized
    /// files, digests that lie, history rewritten).
    Hostile,
    /// A file exists and `force` was not given, or a version is already published.
    Conflict,
    /// A signature is missing or does not verify, or its signer is not trusted.
    Untrusted,
    /// `git` failed (not installed, the remote unreachable, a push refused for another reason).
    Git,
    /// Reading or writing a local file failed.
    Io,
}

#[derive(Debug, Clone)]
pub struct RegistryError {
    pub kind: ErrorKind,
    pub message: String,
}

impl RegistryError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        // Every message: no URL in it keeps its credentials (git and HTTP errors name it).
        let message = message.into();
        RegistryError {
            kind,
            message: crate::redact::urls(&message).into_owned(),
        }
    }
    pub fn hostile(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Hostile, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn io(what: impl std::fmt::Display, e: std::io::Error) -> Self {
        Self::new(ErrorKind::Io, format!("{what}: {e}"))
    }
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RegistryError {}

pub type Result<T> = std::result::Result<T, RegistryError>;

/// A registry's clone, checked.
#[derive(Debug, Clone)]
pub struct Clone {
    pub name: String,
    pub url: String,
    pub dir: std::path::PathBuf,
    pub branch: String,
    /// The commit the clone is at.
    pub commit: String,
    pub toml: format::RegistryToml,
}

/// What an update did.
#[derive(Debug, Clone)]
pub struct Updated {
    pub clone: Clone,
    /// The commit before, `None` for a new clone.
    pub previous: Option<String>,
    /// The versions that came with it (`tool/x@1.0.0`).
    pub new_versions: Vec<String>,
}

impl Updated {
    /// Put a checked temporary folder `tmp` in the place of a registry's clone or mirror `dir`
    /// (the old one, if any, goes; `tmp` is removed when the swap fails), and say what the
    /// update brought: the one swap of a git clone and a sparse mirror.
    fn swap_in(
        entry: &config::RegistryEntry,
        tmp: &std::path::Path,
        dir: &std::path::Path,
        (branch, commit, toml): (String, String, format::RegistryToml),
        previous: Option<String>,
        new_versions: Vec<String>,
    ) -> Result<Updated> {
        if dir.exists() {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                let _ = std::fs::remove_dir_all(tmp);
                return Err(RegistryError::io(dir.display(), e));
            }
        }
        std::fs::rename(tmp, dir).map_err(|e| {
            let _ = std::fs::remove_dir_all(tmp);
            RegistryError::io(dir.display(), e)
        })?;
        Ok(Updated {
            clone: Clone {
                name: entry.name.clone(),
                url: entry.url.clone(),
                dir: dir.to_path_buf(),
                branch,
                commit,
                toml,
            },
            previous,
            new_versions,
        })
    }
}
