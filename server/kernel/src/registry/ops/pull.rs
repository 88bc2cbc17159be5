//! Pull: resolve an item and the missing links of its chain, check everything, then write.

use super::registries;
use super::signature::check_signature;
use crate::ids::ItemType;
use crate::registry::config::{self, RegistryEntry};
use crate::registry::format::{self, IndexLine};
use crate::registry::store::{self, Clone};
use crate::registry::{ErrorKind, RegistryError, Result};
use crate::workspace::Workspace;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where a pull writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Project,
    User,
}

pub struct PullArgs<'a> {
    pub user_space: &'a Path,
    /// The project root (the folder holding `.ai/`).
    pub project: Option<&'a Path>,
    /// The workspace, to tell which chain links are missing.
    pub ws: Option<&'a Workspace>,
    pub item_type: ItemType,
    pub id: &'a str,
    pub version: Option<&'a str>,
    pub to: Destination,
    pub force: bool,
    pub registry: Option<&'a str>,
    /// `trust.require_signed` of the configuration.
    pub require_signed: &'a crate::config::RequireSigned,
    /// Asked for every item the pull would write (its chain's too), before anything is
    /// written: its type, id and whether it replaces an item of the workspace; an `Err`
    /// (why) refuses the whole pull. An agent's session checks its permissions here.
    pub permit: Option<&'a Permit<'a>>,
}

/// See [`PullArgs::permit`].
pub type Permit<'a> = dyn Fn(ItemType, &str, bool) -> std::result::Result<(), String> + 'a;

/// One item a pull wrote.
#[derive(Debug, Clone, Serialize)]
pub struct PulledItem {
    #[serde(rename = "type")]
    pub item_type: String,
    pub id: String,
    pub version: String,
    pub registry: String,
    pub url: String,
    pub commit: String,
    pub digest: String,
    pub signer: Option<String>,
    /// What the signature check found (`verified, trusted signer …`, `not signed`).
    pub signature: String,
    /// The files written, absolute.
    pub files: Vec<PathBuf>,
    /// Whether a lockfile records it (always: the project's `.ai/kiwi.lock`, or the user
    /// space's `kiwi.lock` for a pull into the user space).
    pub locked: bool,
    /// `requested`, or `chain of tool/x` for a runtime pulled with a tool.
    pub reason: String,
    /// What the user should know: a yanked version restored because the lockfile pins it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A pull planned and checked: nothing is written yet.
struct Planned {
    clone: Clone,
    line: IndexLine,
    files: Vec<(String, Vec<u8>)>,
    targets: Vec<PathBuf>,
    reason: String,
    verdict: Option<crate::trust::Verdict>,
    note: Option<String>,
}

fn find_in_registries(
    user_space: &Path,
    entries: &[&RegistryEntry],
    item_type: ItemType,
    id: &str,
    fetched: &mut Vec<Clone>,
) -> Result<Option<(Clone, format::ItemVersions)>> {
    for e in entries {
        let clone = match fetched.iter().find(|c| c.name == e.name) {
            Some(c) => c.clone(),
            None => {
                let c = store::update(user_space, e)?.clone;
                fetched.push(c.clone());
                c
            }
        };
        if let Some(v) = store::item_versions(&clone.dir, item_type, id)? {
            return Ok(Some((clone, v)));
        }
    }
    Ok(None)
}

/// Pull an item (and the missing links of its chain): check everything, then write.
pub fn pull(a: &PullArgs) -> Result<Vec<PulledItem>> {
    let cfg = config::load(a.user_space)?;
    let entries = registries(&cfg, a.registry)?;
    let root = match a.to {
        Destination::Project => a
            .project
            .ok_or_else(|| {
                RegistryError::invalid(
                    "no project here (no .ai/ folder found): pass --project, or pull --to user",
                )
            })?
            .join(".ai"),
        Destination::User => a.user_space.to_path_buf(),
    };
    let store = crate::trust::TrustStore::load(a.user_space)
        .map_err(|e| RegistryError::new(ErrorKind::Untrusted, format!("the trust store: {e}")))?;
    // Every pull is pinned in the lockfile of the folder it writes to: the project's
    // `.ai/kiwi.lock`, or `kiwi.lock` at the root of the user space (where `kiwi check`, the
    // hover and `kiwi run` look: `trust::audit`). A lockfile kiwi cannot read stops the pull
    // before anything is written.
    let mut lock = crate::lock::Lockfile::load(&root)
        .map_err(|e| RegistryError::invalid(format!("{e}; nothing was written")))?;
    let mut fetched = Vec::new();
    let mut plan: Vec<Planned> = Vec::new();
    let mut queue: Vec<(ItemType, String, Option<String>, String)> = vec![(
        a.item_type,
        a.id.to_string(),
        a.version.map(str::to_string),
        "requested".to_string(),
    )];
    let mut seen = std::collections::HashSet::new();
    while let Some((t, id, req, reason)) = queue.pop() {
        if !seen.insert((t, id.clone())) {
            continue;
        }
        let label = format!("{t}/{id}");
        let Some((clone, versions)) =
            find_in_registries(a.user_space, &entries, t, &id, &mut fetched)?
        else {
            // Did you mean: the closest ids of this type in the registries looked in.
            let known: Vec<String> = fetched
                .iter()
                .flat_map(|c| store::catalog(&c.dir).unwrap_or_default())
                .filter(|(ct, ..)| *ct == t)
                .map(|(_, cid, _)| cid)
                .collect();
            let near = crate::diag::closest_n(&id, known.iter().map(String::as_str), 3);
            let hint = if near.is_empty() {
                String::new()
            } else {
                format!(
                    "; did you mean {}?",
                    near.iter()
                        .map(|n| format!("{t}/{n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(RegistryError::not_found(format!(
                "no registry has {label} (looked in {}){}{hint}; nothing was written",
                entries
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if reason == "requested" {
                    String::new()
                } else {
                    format!(" ({reason})")
                }
            )));
        };
        // A yanked version stays for those who pinned it (10-registry.md): the exact
        // version the lockfile pins is restored, yanked or not, and the pull says so.
        let pinned_yanked = req
            .as_deref()
            .and_then(|r| semver::Version::parse(r).ok())
            .filter(|v| {
                lock.get(t.as_str(), &id)
                    .is_some_and(|e| semver::Version::parse(&e.version).ok().as_ref() == Some(v))
            })
            .and_then(|v| versions.get(&v).filter(|e| e.yanked));
        let note = pinned_yanked.map(|e| {
            format!(
                "{label}@{} is yanked in registry {}; restored because kiwi.lock pins it (move to a version that is not yanked when you can: kiwi outdated)",
                e.version, clone.name
            )
        });
        let chosen = match pinned_yanked {
            Some(e) => e,
            None => versions.resolve(&label, req.as_deref())?,
        };
        let line = chosen.line.clone();
        if crate::registry::sparse::is_sparse(&clone.url) {
            crate::registry::sparse::fetch_version(&clone, &line)?;
        }
        let files = store::verified_files(&clone.dir, &line).map_err(|e| {
            RegistryError::new(e.kind, format!("{}; nothing was written", e.message))
        })?;
        let verdict = check_signature(
            &store,
            &clone.toml,
            &clone.name,
            a.require_signed.for_registry(&clone.name),
            &line,
        )?;
        let folder = root.join(format::ai_relative(t, &id, ""));
        let targets: Vec<PathBuf> = line.files.iter().map(|f| folder.join(&f.path)).collect();
        if t == ItemType::Tool {
            for link in &line.chain {
                if crate::chain::PRIMITIVES.contains(&link.as_str()) {
                    continue;
                }
                let present =
                    a.ws.is_some_and(|ws| ws.get(ItemType::Tool, link).is_some());
                if !present {
                    queue.push((
                        ItemType::Tool,
                        link.clone(),
                        None,
                        format!("chain of tool/{id}"),
                    ));
                }
            }
        }
        plan.push(Planned {
            clone,
            line,
            files,
            targets,
            reason,
            verdict,
            note,
        });
    }
    // Every item written is permitted, before anything is.
    if let Some(permit) = a.permit {
        for p in &plan {
            let t = p.line.item_type();
            let replaces = a.ws.is_some_and(|ws| ws.get(t, &p.line.id).is_some());
            permit(t, &p.line.id, replaces).map_err(|why| {
                RegistryError::new(
                    ErrorKind::Untrusted,
                    format!("{why} ({}); nothing was written", p.reason),
                )
            })?;
        }
    }
    // Nothing is written or created through a link (every component checked before any
    // folder is made); nothing is overwritten without force; and one id is one file.
    for p in &plan {
        for t in &p.targets {
            crate::fs::check_unlinked(&root, t).map_err(|e| {
                RegistryError::invalid(format!("refused: {e}; nothing was written"))
            })?;
            if t.symlink_metadata().is_ok() && !a.force {
                return Err(RegistryError::new(
                    ErrorKind::Conflict,
                    format!(
                        "{} exists; pull --force replaces it (nothing was written)",
                        t.display()
                    ),
                ));
            }
        }
        let main = &p.targets[0];
        if let (Some(dir), Some(stem)) = (main.parent(), main.file_stem()) {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let path = e.path();
                    let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
                    let item_file =
                        matches!(ext, "py" | "yaml" | "yml" | "md" | "sh" | "json" | "txt")
                            || crate::tool::is_javascript_extension(ext);
                    if path.file_stem() == Some(stem)
                        && !p.targets.contains(&path)
                        && path.is_file()
                        && item_file
                    {
                        return Err(RegistryError::new(
                            ErrorKind::Conflict,
                            format!(
                                "{} is already {} `{}` in another file; remove it first (nothing was written)",
                                path.display(),
                                p.line.item_type,
                                p.line.id
                            ),
                        ));
                    }
                }
            }
        }
    }
    // Write: every file to a temporary file beside its target, then the renames.
    let mut temps: Vec<(PathBuf, PathBuf)> = Vec::new();
    let cleanup = |temps: &[(PathBuf, PathBuf)]| {
        for (tmp, _) in temps {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for p in &plan {
        for ((_, bytes), target) in p.files.iter().zip(&p.targets) {
            let dir = target.parent().unwrap_or(Path::new("."));
            let made = std::fs::create_dir_all(dir)
                .map_err(|e| RegistryError::io(dir.display(), e))
                .and_then(|_| {
                    crate::ids::confine(&root, dir)
                        .map_err(|e| RegistryError::invalid(format!("{e}; nothing was written")))
                })
                .and_then(|_| tempfile_in(dir));
            let (tmp, mut f) = match made {
                Ok(x) => x,
                Err(e) => {
                    cleanup(&temps);
                    return Err(e);
                }
            };
            use std::io::Write;
            if let Err(e) = f.write_all(bytes).and_then(|_| f.sync_all()) {
                let _ = std::fs::remove_file(&tmp);
                cleanup(&temps);
                return Err(RegistryError::io(target.display(), e));
            }
            temps.push((tmp, target.clone()));
        }
    }
    for (tmp, target) in &temps {
        if let Err(e) = std::fs::rename(tmp, target) {
            cleanup(&temps);
            return Err(RegistryError::io(target.display(), e));
        }
    }
    for p in &plan {
        let l = &p.line;
        lock.upsert(crate::lock::LockEntry {
            item_type: l.item_type.clone(),
            id: l.id.clone(),
            version: l.version.clone(),
            registry: crate::redact::urls(&p.clone.url).into_owned(),
            commit: p.clone.commit.clone(),
            digest: l.digest.clone(),
            signer: l.signer.clone().unwrap_or_default(),
            files: l
                .files
                .iter()
                .map(|f| format::ai_relative(l.item_type(), &l.id, &f.path))
                .collect(),
            signed_at: l.signed_at.clone().unwrap_or_default(),
            signature: l.signature.clone().unwrap_or_default(),
            public_key: l.public_key.clone().unwrap_or_default(),
        });
    }
    lock.save_atomic(&root).map_err(|e| {
        RegistryError::new(
            ErrorKind::Io,
            format!("the files were written, but the lockfile was not: {e}"),
        )
    })?;
    Ok(plan
        .into_iter()
        .map(|p| PulledItem {
            item_type: p.line.item_type.clone(),
            id: p.line.id.clone(),
            version: p.line.version.clone(),
            registry: p.clone.name.clone(),
            url: crate::redact::urls(&p.clone.url).into_owned(),
            commit: p.clone.commit.clone(),
            digest: p.line.digest.clone(),
            signer: p.line.signer.clone(),
            signature: p
                .verdict
                .as_ref()
                .map(|v| v.describe())
                .unwrap_or_else(|| "not signed".into()),
            files: p.targets,
            locked: true,
            reason: p.reason,
            note: p.note,
        })
        .collect())
}

/// A new file in `dir` with a unique name (`.kiwi-tmp-<pid>-<n>`).
fn tempfile_in(dir: &Path) -> Result<(PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    for _ in 0..100 {
        let p = dir.join(format!(
            ".kiwi-tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(RegistryError::io(dir.display(), e)),
        }
    }
    Err(RegistryError::new(
        ErrorKind::Io,
        format!("cannot create a temporary file in {}", dir.display()),
    ))
}
