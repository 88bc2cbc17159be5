//! `init`: create the user space (07): its folders, `config.yaml`, and copies of the builtin
//! core directives and tools. Idempotent; `force` rewrites only files that are still what
//! `init` wrote (a manifest of hashes in `.kiwi-init.json` records them); a file the user
//! changed is always left alone and reported.

use crate::context::Host;
use crate::system;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const MANIFEST: &str = ".kiwi-init.json";
pub const FOLDERS: &[&str] = &[
    "directives/core",
    "tools/core",
    "knowledge",
    "vectors",
    "threads",
    "logs",
    "cache",
];

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct InitReport {
    pub userspace: PathBuf,
    /// Whether the user space existed before.
    pub existed: bool,
    pub created_folders: Vec<String>,
    pub written: Vec<String>,
    pub unchanged: Vec<String>,
    /// Files the user changed since `init` wrote them (never overwritten).
    pub left_alone: Vec<String>,
    /// Files `init` writes that are not there (deleted by the user): plain `init` leaves
    /// them missing, `--force` restores them.
    pub missing: Vec<String>,
    /// Folders likewise.
    pub missing_folders: Vec<String>,
    pub message: String,
}

fn hash(text: &str) -> String {
    let mut h = Sha256::new();
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `config.yaml` per 07, from the system items.
pub fn config_yaml(host: &Host) -> String {
    let paths = system::compute("paths", host, None).unwrap_or_default();
    let runtime = system::compute("runtime", host, None).unwrap_or_default();
    let shell = system::compute("shell", host, None).unwrap_or_default();
    let s = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .replace('"', "\\\"")
    };
    format!(
        "# The kiwi user space configuration (written by `kiwi init`).\n\
         version: \"{}\"\n\
         paths:\n  userspace: \"{}\"\n\
         runtime:\n  platform: \"{}\"\n  shell: \"{}\"\n\
         # env:\n#   allow: []          # variable names or globs passed to tools\n\
         #   block: []          # variable names or globs never passed to tools\n\
         # execution:\n#   default: local     # local | sandbox | container\n\
         #   image: debian:stable-slim\n",
        system::KIWI_VERSION,
        s(&paths, "userspace_dir"),
        s(&runtime, "platform"),
        s(&shell, "shell"),
    )
}

/// The files `init` writes: (path relative to the user space, contents).
pub fn planned_files(host: &Host) -> Vec<(String, String)> {
    let mut files = vec![("config.yaml".to_string(), config_yaml(host))];
    for item in crate::workspace::builtin_items() {
        let Ok(rel) = item.path.strip_prefix(crate::workspace::BUILTIN_ROOT) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel.starts_with("directives/core/") || rel.starts_with("tools/core/") {
            files.push((rel.clone(), item.text().to_string()));
            if let Some(script) = &item.script {
                if let Ok(srel) = script.strip_prefix(crate::workspace::BUILTIN_ROOT) {
                    let srel = srel.to_string_lossy().replace('\\', "/");
                    if let Some(text) = crate::workspace::builtin_file(&srel) {
                        files.push((srel, text.to_string()));
                    }
                }
            }
        }
    }
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    files
}

/// Whether the user space at `root` was initialised: `init` wrote its manifest or there is a
/// `config.yaml` (a folder holding only the search cache is not a user space yet).
pub fn initialised(root: &Path) -> bool {
    root.join(MANIFEST).is_file() || root.join("config.yaml").is_file()
}

/// Create (or, with `force`, refresh) the user space. Once it exists, plain `init` changes
/// nothing (07): files and folders the user deleted are reported `missing`, not re-created.
pub fn init_userspace(host: &Host, force: bool) -> std::io::Result<InitReport> {
    let root = host.user_space();
    let existed = initialised(&root);
    let mut r = InitReport {
        userspace: root.clone(),
        existed,
        ..InitReport::default()
    };
    if existed && !force {
        for f in FOLDERS {
            if !root.join(f).is_dir() {
                r.missing_folders.push(f.to_string());
            }
        }
        let manifest = read_manifest(&root.join(MANIFEST));
        for (rel, text) in planned_files(host) {
            let path = root.join(&rel);
            match std::fs::read_to_string(&path) {
                Err(_) if std::fs::symlink_metadata(&path).is_err() => r.missing.push(rel),
                Err(_) => r.left_alone.push(rel),
                Ok(current) => {
                    let h = hash(&current);
                    if h == hash(&text) || manifest.get(&rel) == Some(&h) {
                        r.unchanged.push(rel);
                    } else {
                        r.left_alone.push(rel);
                    }
                }
            }
        }
        r.message = format!(
            "the user space {} is already initialised; nothing changed{}{}",
            root.display(),
            if r.left_alone.is_empty() {
                String::new()
            } else {
                format!(" ({} file(s) you changed left alone)", r.left_alone.len())
            },
            if r.missing.is_empty() && r.missing_folders.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} file(s) and {} folder(s) it would create are missing (deleted?): `kiwi init --force` restores them",
                    r.missing.len(),
                    r.missing_folders.len()
                )
            }
        );
        return Ok(r);
    }
    for f in FOLDERS {
        let p = root.join(f);
        if !p.is_dir() {
            std::fs::create_dir_all(&p)?;
            r.created_folders.push(f.to_string());
        }
    }
    let manifest_path = root.join(MANIFEST);
    let mut manifest = read_manifest(&manifest_path);
    for (rel, text) in planned_files(host) {
        let path = root.join(&rel);
        let new_hash = hash(&text);
        match std::fs::read_to_string(&path) {
            Err(_) if !path.exists() => {
                write(&root, &path, &text)?;
                manifest.insert(rel.clone(), new_hash);
                r.written.push(rel);
            }
            Err(_) => r.left_alone.push(rel),
            Ok(current) => {
                let current_hash = hash(&current);
                if current_hash == new_hash {
                    manifest.insert(rel.clone(), new_hash);
                    r.unchanged.push(rel);
                } else if manifest.get(&rel) != Some(&current_hash) {
                    // The user changed it (or wrote it): never overwritten.
                    r.left_alone.push(rel);
                } else if force {
                    write(&root, &path, &text)?;
                    manifest.insert(rel.clone(), new_hash);
                    r.written.push(rel);
                } else {
                    r.unchanged.push(rel);
                }
            }
        }
    }
    let m = serde_json::to_string_pretty(&manifest).unwrap_or_else(|_| "{}".into());
    if std::fs::read_to_string(&manifest_path).ok().as_deref() != Some(m.as_str()) {
        write(&root, &manifest_path, &m)?;
    }
    r.message = if r.written.is_empty() && r.created_folders.is_empty() {
        format!(
            "the user space {} is already initialised; nothing changed{}",
            root.display(),
            if r.left_alone.is_empty() {
                String::new()
            } else {
                format!(" ({} file(s) you changed left alone)", r.left_alone.len())
            }
        )
    } else {
        format!(
            "{} the user space {}: {} folder(s), {} file(s) written{}",
            if existed { "updated" } else { "created" },
            root.display(),
            r.created_folders.len(),
            r.written.len(),
            if r.left_alone.is_empty() {
                String::new()
            } else {
                format!(", {} file(s) you changed left alone", r.left_alone.len())
            }
        )
    };
    Ok(r)
}

fn read_manifest(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

fn write(root: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    crate::fs::write_atomic(root, path, text, true).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_is_idempotent_and_keeps_user_edits() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("u");
        let host = Host::for_tests(&[
            ("KIWI_USERSPACE_DIR", user.to_str().unwrap()),
            ("SHELL", "/bin/bash"),
        ]);
        let first = init_userspace(&host, false).unwrap();
        assert!(!first.existed);
        assert!(first.written.contains(&"config.yaml".to_string()));
        assert!(first
            .written
            .contains(&"directives/core/init.md".to_string()));
        assert!(first
            .written
            .iter()
            .any(|f| f.starts_with("tools/core/init_userspace")));
        for f in FOLDERS {
            assert!(user.join(f).is_dir(), "{f}");
        }
        let cfg = std::fs::read_to_string(user.join("config.yaml")).unwrap();
        assert!(cfg.contains("platform: \"linux\"") || !cfg!(target_os = "linux"));
        assert!(cfg.contains("shell: \"/bin/bash\""));

        let second = init_userspace(&host, false).unwrap();
        assert!(second.written.is_empty() && second.created_folders.is_empty());
        assert!(second.message.contains("nothing changed"));

        let edited = user.join("directives/core/init.md");
        std::fs::write(&edited, "my own version\n").unwrap();
        let forced = init_userspace(&host, true).unwrap();
        assert_eq!(
            forced.left_alone,
            vec!["directives/core/init.md".to_string()]
        );
        assert!(forced.written.is_empty());
        assert_eq!(
            std::fs::read_to_string(&edited).unwrap(),
            "my own version\n"
        );

        // A file init wrote and the user did not touch is rewritten by --force when it
        // differs from the builtin (simulated by an old manifest entry).
        std::fs::remove_file(user.join("config.yaml")).unwrap();
        let again = init_userspace(&host, true).unwrap();
        assert_eq!(again.written, vec!["config.yaml".to_string()]);
    }
}
