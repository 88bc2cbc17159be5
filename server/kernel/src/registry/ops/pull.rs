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
    /// The items asked for; empty with [`Mode::Locked`] or [`Mode::Update`]: every item the
    /// destination's kiwi.lock pins.
    pub items: Vec<Request>,
    pub mode: Mode,
    pub to: Destination,
    /// Replace files that exist (not a local edit of a pinned item: `overwrite_local`).
    pub force: bool,
    /// Replace a pinned item whose files were edited since it was pulled (their bytes differ
    /// from kiwi.lock's digest).
    pub overwrite_local: bool,
    pub registry: Option<&'a str>,
    /// `trust.require_signed` of the configuration.
    pub require_signed: &'a crate::config::RequireSigned,
    /// Trust a publisher's key the first time a pull sees it (`--trust-on-first-use`, the
    /// user's `trust.tofu`); otherwise a signer you do not trust is refused.
    pub trust_on_first_use: bool,
    /// Asked for every item the pull would write (its chain's too), before anything is
    /// written: its type, id and whether it replaces an item of the workspace; an `Err`
    /// (why) refuses the whole pull. An agent's session checks its permissions here.
    pub permit: Option<&'a Permit<'a>>,
}

/// One item asked for: `TYPE/ID[@VERSION]` (an exact version or a semver requirement).
#[derive(Debug, Clone)]
pub struct Request {
    pub item_type: ItemType,
    pub id: String,
    pub version: Option<String>,
}

/// What a pull does with the versions kiwi.lock pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The version asked for (the newest when none is named); a pin is never moved down
    /// unless the version is named.
    Requested,
    /// `pull --update`: the newest version compatible with the pin (`^PINNED`); a pinned
    /// item whose files match kiwi.lock is replaced without `force`.
    Update,
    /// `pull --locked`: exactly what kiwi.lock pins (version and digest, yanked or not),
    /// from the registry it was pulled from; items whose files match are left alone.
    Locked,
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
    /// What the user should know: a yanked version restored because the lockfile pins it,
    /// a pin kept or moved down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the pull replaced: the pinned version it moved from, a local edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
    /// Nothing was written: the files already are what kiwi.lock pins (`--locked`,
    /// `--update`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unchanged: bool,
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
    /// The item's kiwi.lock entry before the pull.
    pin: Option<crate::lock::LockEntry>,
    /// The pinned files were edited since they were pulled.
    edited: bool,
}

fn find_in_registries(
    user_space: &Path,
    entries: &[&RegistryEntry],
    item_type: ItemType,
    id: &str,
    fetched: &mut Vec<Clone>,
) -> Result<Option<(Clone, format::ItemVersions)>> {
    for e in entries {
        let dir = store::clone_dir(user_space, &e.name);
        let clone = match fetched.iter().find(|c| c.name == e.name) {
            // A sparse registry already mirrored: only this item's index file (and the
            // registry's toml), conditionally, for each item; a git registry is fetched once.
            _ if crate::registry::sparse::mirrors(e, &dir) => {
                let c = crate::registry::sparse::refresh_item(e, &dir, item_type, id)?;
                if !fetched.iter().any(|f| f.name == e.name) {
                    fetched.push(c.clone());
                }
                c
            }
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
    let mut unchanged: Vec<PulledItem> = Vec::new();
    let mut requests = a.items.clone();
    if requests.is_empty() && a.mode != Mode::Requested {
        requests = lock
            .entries
            .iter()
            .filter(|e| !e.registry.is_empty())
            .filter_map(|e| {
                ItemType::parse(&e.item_type).map(|t| Request {
                    item_type: t,
                    id: e.id.clone(),
                    version: None,
                })
            })
            .collect();
        if requests.is_empty() {
            return Err(RegistryError::not_found(format!(
                "{} pins no item from a registry: nothing to pull",
                crate::lock::Lockfile::path(&root).display()
            )));
        }
    }
    let mut queue: Vec<(ItemType, String, Option<String>, String)> = requests
        .iter()
        .rev()
        .map(|r| {
            (
                r.item_type,
                r.id.clone(),
                r.version.clone(),
                "requested".to_string(),
            )
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    while let Some((t, id, req, reason)) = queue.pop() {
        if !seen.insert((t, id.clone())) {
            continue;
        }
        let label = format!("{t}/{id}");
        let pin = lock.get(t.as_str(), &id).cloned();
        let pin_version = pin
            .as_ref()
            .and_then(|p| semver::Version::parse(&p.version).ok());
        // `--locked`: exactly the pin, from the registry it came from; nothing to do when the
        // files already are what it pins (no fetch either).
        let locked_here = a.mode == Mode::Locked && pin.is_some();
        // A pin is restored exactly, so it must name a version (a hand-edited lockfile may
        // not): refused before anything is fetched.
        if let (true, Some(p), None) = (locked_here, &pin, &pin_version) {
            return Err(RegistryError::new(
                ErrorKind::Conflict,
                format!(
                    "kiwi.lock pins {label}@{}, which is not a version (semver): fix the pin or pull the item again without --locked (nothing was written)",
                    p.version
                ),
            ));
        }
        let state = pin.as_ref().map(|p| p.state(&root));
        let edited = matches!(state, Some(crate::lock::FileState::Changed { .. }));
        if locked_here && matches!(state, Some(crate::lock::FileState::Matches)) {
            unchanged.push(unchanged_item(
                pin.as_ref().unwrap(),
                &root,
                "its files match kiwi.lock",
            ));
            continue;
        }
        let pinned_registry: Vec<&RegistryEntry>;
        let looked_in: &[&RegistryEntry] = if locked_here {
            let p = pin.as_ref().unwrap();
            let e = crate::registry::pins::registry_of(&cfg, p).ok_or_else(|| {
                RegistryError::not_found(format!(
                    "kiwi.lock pins {label}@{} from {}, which is not a configured registry: add it with `kiwi registry add NAME {}` (nothing was written)",
                    p.version, p.registry, p.registry
                ))
            })?;
            pinned_registry = vec![e];
            &pinned_registry
        } else {
            &entries
        };
        let Some((clone, versions)) =
            find_in_registries(a.user_space, looked_in, t, &id, &mut fetched)?
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
                looked_in
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
        let (chosen, mut note) = choose(
            &label,
            &versions,
            req.as_deref(),
            pin_version.as_ref(),
            a.mode,
            locked_here,
        )?;
        // A yanked version stays for those who pinned it (10-registry.md): the exact
        // version the lockfile pins is restored, yanked or not, and the pull says so.
        if chosen.yanked {
            let restored = format!(
                "{label}@{} is yanked in registry {}; restored because kiwi.lock pins it (move to a version that is not yanked when you can: kiwi outdated)",
                chosen.version, clone.name
            );
            note = Some(match note {
                Some(n) => format!("{restored}; {n}"),
                None => restored,
            });
        }
        let line = chosen.line.clone();
        let same_pin = pin
            .as_ref()
            .filter(|p| p.registry == crate::redact::urls(&clone.url) && p.version == line.version);
        // The registry serves the pinned version with other bytes than kiwi.lock recorded:
        // refused whatever the mode (a published version never changes).
        if let Some(p) = same_pin {
            if p.digest != line.digest {
                return Err(RegistryError::hostile(format!(
                    "kiwi.lock pins {label}@{} with digest {}, but registry `{}` now serves it with digest {}: refused (a published version never changes: the registry was altered, or kiwi.lock was edited); nothing was written",
                    p.version, p.digest, clone.name, line.digest
                )));
            }
            if a.mode == Mode::Update && matches!(state, Some(crate::lock::FileState::Matches)) {
                unchanged.push(unchanged_item(p, &root, "up to date"));
                continue;
            }
        }
        // A sparse version's files: fetched unless the mirror already holds them as the line
        // says (each sha256 and the digest: content-addressed, so a cached copy is as good).
        if crate::registry::sparse::is_sparse(&clone.url)
            && store::verified_files(&clone.dir, &line).is_err()
        {
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
            a.trust_on_first_use,
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
            pin,
            edited,
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
        // A local edit of a pinned item is replaced only with its own flag (`--force` is
        // not enough: it is the user's work, not a file kiwi wrote).
        if p.edited && !a.overwrite_local {
            let pin = p.pin.as_ref().expect("an edited item has a pin");
            return Err(RegistryError::new(
                ErrorKind::Conflict,
                format!(
                    "{}/{}@{} was edited since it was pulled ({}: the bytes differ from kiwi.lock's digest); pull --overwrite-local replaces your edit with {} (nothing was written)",
                    pin.item_type,
                    pin.id,
                    pin.version,
                    pin.files.join(", "),
                    p.line.version
                ),
            ));
        }
        for t in &p.targets {
            crate::fs::check_unlinked(&root, t).map_err(|e| {
                RegistryError::invalid(format!("refused: {e}; nothing was written"))
            })?;
            // A file of the item's own pin is replaced by `--update`, `--locked` (its bytes
            // are what kiwi wrote, or the edit was allowed above); anything else needs force.
            let pinned_file = p.pin.as_ref().is_some_and(|pin| {
                t.strip_prefix(&root).is_ok_and(|rel| {
                    let rel = rel.to_string_lossy().replace('\\', "/");
                    pin.files.contains(&rel)
                })
            }) && (a.mode != Mode::Requested || p.edited);
            if t.symlink_metadata().is_ok() && !a.force && !pinned_file {
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
        // The same bytes of the same version from the same registry: the entry stays as it
        // is (a restore does not churn kiwi.lock).
        if p.pin.as_ref().is_some_and(|pin| {
            pin.version == l.version
                && pin.digest == l.digest
                && pin.registry == crate::redact::urls(&p.clone.url)
        }) {
            continue;
        }
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
    // Trust on first use: the keys of the publishers first seen here join the trust store,
    // now that the pull went through; the pull says so.
    for p in plan.iter_mut() {
        let Some(crate::trust::Verdict::ValidUntrusted { signer }) = &p.verdict else {
            continue;
        };
        let key = p
            .line
            .public_key
            .as_deref()
            .and_then(|k| crate::trust::parse_public_key(k).ok());
        let said = match key.map(|k| crate::trust::TrustStore::trust(a.user_space, &k)) {
            Some(Ok(_)) => format!(
                "publisher {signer} was not trusted: trusted on first use (kiwi keys untrust {signer} undoes it)"
            ),
            Some(Err(e)) => format!("publisher {signer} could not be added to the trust store: {e}"),
            None => continue,
        };
        p.note = Some(match p.note.take() {
            Some(n) => format!("{n}; {said}"),
            None => said,
        });
    }
    let mut out: Vec<PulledItem> = plan
        .into_iter()
        .map(|p| PulledItem {
            replaced: p.pin.as_ref().and_then(|pin| {
                let what = if p.edited {
                    format!(
                        "your local edit of {}/{} ({}; it differed from kiwi.lock's {}@{})",
                        pin.item_type,
                        pin.id,
                        pin.files.join(", "),
                        pin.id,
                        pin.version
                    )
                } else if pin.version != p.line.version {
                    format!("{}/{}@{}", pin.item_type, pin.id, pin.version)
                } else {
                    return None;
                };
                Some(what)
            }),
            unchanged: false,
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
        .collect();
    out.extend(unchanged);
    Ok(out)
}

/// An item a pull left as it was.
fn unchanged_item(pin: &crate::lock::LockEntry, root: &Path, why: &str) -> PulledItem {
    PulledItem {
        item_type: pin.item_type.clone(),
        id: pin.id.clone(),
        version: pin.version.clone(),
        registry: String::new(),
        url: pin.registry.clone(),
        commit: pin.commit.clone(),
        digest: pin.digest.clone(),
        signer: Some(pin.signer.clone()).filter(|s| !s.is_empty()),
        signature: String::new(),
        files: pin.files.iter().map(|f| root.join(f)).collect(),
        locked: true,
        reason: "requested".into(),
        note: Some(why.to_string()),
        replaced: None,
        unchanged: true,
    }
}

/// The version a pull takes, and a note when a pin is kept or moved down. A pin never moves
/// down unless the version is named: with no version named, a pin newer than what the
/// registry offers (its newer versions yanked) is kept; a named version below the pin moves
/// it, and the note says so.
fn choose<'v>(
    label: &str,
    versions: &'v format::ItemVersions,
    req: Option<&str>,
    pinned: Option<&semver::Version>,
    mode: Mode,
    locked: bool,
) -> Result<(&'v format::VersionEntry, Option<String>)> {
    let pinned_entry = pinned.and_then(|p| versions.get(p));
    if locked {
        let Some(p) = pinned else {
            return Err(RegistryError::not_found(format!(
                "kiwi.lock pins {label} at no version (nothing was written)"
            )));
        };
        return pinned_entry.map(|e| (e, None)).ok_or_else(|| {
            RegistryError::not_found(format!(
                "kiwi.lock pins {label}@{p}, but its registry has no such version (it has {}); nothing was written",
                versions.list()
            ))
        });
    }
    // The exact pinned version: restored, yanked or not.
    if let (Some(r), Some(e)) = (req, pinned_entry) {
        if semver::Version::parse(r).ok().as_ref() == Some(&e.version) {
            return Ok((e, None));
        }
    }
    let resolved = match (req, pinned, mode) {
        (None, Some(p), Mode::Update) => versions.resolve(
            label,
            Some(&crate::registry::pins::compatible(&p.to_string())),
        ),
        _ => versions.resolve(label, req),
    };
    let (Some(p), Some(pe)) = (pinned, pinned_entry) else {
        return resolved.map(|e| (e, None));
    };
    let chosen = match resolved {
        Ok(e) => e,
        // Nothing newer that is not yanked (every version yanked, or none compatible): the
        // pin stays when no version was named.
        Err(_) if req.is_none() => pe,
        Err(e) => return Err(e),
    };
    if chosen.version >= *p {
        return Ok((chosen, None));
    }
    let named = req.is_some_and(|r| semver::Version::parse(r).is_ok());
    let allows_pin = req
        .and_then(|r| semver::VersionReq::parse(r).ok())
        .is_some_and(|r| r.matches(p));
    if req.is_none() || (!named && allows_pin) {
        let note = format!(
            "kiwi.lock pins {label}@{p}, newer than {} (the newest version the registry offers that is not yanked{}): the pin stays at {p}; to move it down, name the version: kiwi pull --force {label}@{}",
            chosen.version,
            req.map(|r| format!(" matching `{r}`")).unwrap_or_default(),
            chosen.version
        );
        return Ok((pe, Some(note)));
    }
    Ok((
        chosen,
        Some(format!(
            "moved the pin of {label} down from {p} to {}, as you asked",
            chosen.version
        )),
    ))
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
