//! Publish, yank and pull.
//!
//! A publish or a yank is a transaction on the registry's clone: update (fetch and check),
//! apply (write the files, append the line), commit, push. When the push is rejected
//! because someone else pushed meanwhile, the clone goes back to where it was, fetches,
//! applies again on top of the newcomer's commit and pushes again: two publishers racing both
//! land (each retry re-checks that the version is still free).
//!
//! A pull resolves the item and every missing link of its chain, reads and checks all of
//! their files (sha256 of each, the digest of the whole) before it writes anything, refuses
//! to overwrite without `force`, then writes each file through a temporary file and a rename.

use super::config::{self, RegistryEntry};
use super::format::{self, FileEntry, IndexLine};
use super::store::{self, Clone};
use super::{git, ErrorKind, RegistryError, Result};
use crate::diag::Severity;
use crate::ids::{ItemType, Space};
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An item's files: (path relative to the item's folder, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// How many times a publish is re-applied when others keep pushing first.
pub const MAX_ATTEMPTS: usize = 10;

/// What a transaction did.
#[derive(Debug, Clone, Serialize)]
pub struct Committed {
    pub registry: String,
    pub url: String,
    pub commit: String,
    /// 1 when the first push landed.
    pub attempts: usize,
}

/// Update, apply, commit and push; on a rejected push, start again from the fetched state.
fn transact(
    user_space: &Path,
    entry: &RegistryEntry,
    message: &str,
    apply: &mut dyn FnMut(&Clone) -> Result<Vec<String>>,
) -> Result<Committed> {
    if super::sparse::is_sparse(&entry.url) {
        return Err(RegistryError::invalid(format!(
            "registry `{}` is the read-only sparse form ({}): publish and yank through its git URL",
            entry.name, entry.url
        )));
    }
    for attempt in 1..=MAX_ATTEMPTS {
        let clone = store::update(user_space, entry)?.clone;
        let base = clone.commit.clone();
        let undo = |e: RegistryError| {
            let _ = git::reset_hard(&clone.dir, &base);
            let _ = git::run(
                Some(&clone.dir),
                &["clean", "-q", "-f", "-d", "--", "index", "items"],
            );
            e
        };
        let paths = apply(&clone).map_err(undo)?;
        let mut add: Vec<&str> = vec!["add", "--"];
        add.extend(paths.iter().map(String::as_str));
        git::run(Some(&clone.dir), &add).map_err(undo)?;
        git::commit(&clone.dir, message).map_err(undo)?;
        match git::push(&clone.dir, &clone.branch).map_err(undo)? {
            git::Pushed::Ok => {
                let commit = git::rev_parse(&clone.dir, "HEAD")?;
                return Ok(Committed {
                    registry: entry.name.clone(),
                    url: entry.url.clone(),
                    commit,
                    attempts: attempt,
                });
            }
            git::Pushed::Rejected => {
                undo(RegistryError::new(ErrorKind::Git, ""));
            }
        }
    }
    Err(RegistryError::new(
        ErrorKind::Git,
        format!(
            "registry `{}`: the push was rejected {MAX_ATTEMPTS} times (others kept publishing first); try again",
            entry.name
        ),
    ))
}

fn append_line(clone: &Clone, line: &IndexLine) -> Result<String> {
    use std::io::Write;
    let rel = format::index_path(line.item_type(), &line.id);
    let p = clone.dir.join(&rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| RegistryError::io(parent.display(), e))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(|e| RegistryError::io(p.display(), e))?;
    f.write_all(line.to_json_line().as_bytes())
        .map_err(|e| RegistryError::io(p.display(), e))?;
    Ok(rel)
}

/// An item's files as a registry holds them: paths relative to the item's folder in its
/// space (`word_count.py`), with their bytes ([`crate::trust::item_files`], whose paths are
/// relative to the space's `.ai/`, is the one reading of an item's files).
pub fn item_files(ws: &Workspace, item: &Item) -> Result<Vec<(String, Vec<u8>)>> {
    let files = crate::trust::item_files(ws, item)
        .map_err(|e| RegistryError::invalid(format!("{e}; nothing was published")))?;
    let prefix = format::ai_relative(item.item_type, &item.id, "");
    let mut out = Vec::new();
    for (rel, bytes) in files {
        let Some(local) = rel.strip_prefix(&prefix) else {
            return Err(RegistryError::invalid(format!(
                "{rel} is not in the folder of {} `{}` ({prefix}); nothing was published",
                item.item_type, item.id
            )));
        };
        format::check_relative("a file of the item", local)?;
        if bytes.len() as u64 > format::MAX_FILE_BYTES {
            return Err(RegistryError::invalid(format!(
                "{rel} is {} bytes, above the registry's cap of {}",
                bytes.len(),
                format::MAX_FILE_BYTES
            )));
        }
        out.push((local.to_string(), bytes));
    }
    Ok(out)
}

/// A directive's permissions, one capability per entry (`deny execute tool x/*`).
fn permissions_summary(item: &Item) -> Vec<String> {
    use crate::directive::Resource;
    let Some(d) = item.directive() else {
        return Vec::new();
    };
    d.capabilities
        .iter()
        .map(|c| {
            let res = match &c.resource {
                Resource::Items(Some(t)) => t.as_str().to_string(),
                Resource::Items(None) => "item".to_string(),
                Resource::Any => "*".to_string(),
                other => format!("{other:?}").to_lowercase(),
            };
            format!(
                "{}{} {} {}",
                if c.deny { "deny " } else { "" },
                c.verb,
                res,
                c.pattern
            )
        })
        .collect()
}

/// The index line an item would be published as (not signed yet).
pub fn line_for(
    ws: &Workspace,
    item: &Arc<Item>,
    version: Option<&str>,
) -> Result<(IndexLine, Files)> {
    if item.space == Space::Builtin {
        return Err(RegistryError::invalid(format!(
            "{} `{}` is a builtin item: it ships with kiwi and is not published",
            item.item_type, item.id
        )));
    }
    format::check_id(&item.id).map_err(|e| RegistryError::invalid(e.message))?;
    let errors: Vec<String> = crate::check::check_item(ws, item)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            let pos =
                item.source
                    .lines
                    .position(item.text(), d.range.start, crate::text::Encoding::Char);
            format!(
                "{}:{}:{}: {} {}",
                item.path.display(),
                pos.line + 1,
                pos.column + 1,
                d.code,
                d.message
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(RegistryError::invalid(format!(
            "{} `{}` has {} error diagnostic(s); fix them before publishing (nothing was published):\n  {}",
            item.item_type,
            item.id,
            errors.len(),
            errors.join("\n  ")
        )));
    }
    let meta = crate::search::meta(item);
    let version = match version.or(meta.version.as_deref()) {
        Some(v) => semver::Version::parse(v.trim()).map_err(|e| {
            RegistryError::invalid(format!("version `{v}` is not semver (1.2.0): {e}"))
        })?,
        None => {
            return Err(RegistryError::invalid(format!(
                "{} `{}` declares no version: give one with --version (semver, e.g. 1.0.0)",
                item.item_type, item.id
            )))
        }
    };
    let files = item_files(ws, item)?;
    let chain = if item.item_type == ItemType::Tool {
        crate::chain::resolve(ws, item)
            .map(|c| c.links.iter().skip(1).map(|l| l.id.clone()).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let line = IndexLine {
        id: item.id.clone(),
        item_type: item.item_type.as_str().to_string(),
        version: version.to_string(),
        digest: String::new(),
        files: files
            .iter()
            .map(|(p, b)| FileEntry {
                path: p.clone(),
                sha256: crate::trust::sha256_hex(b),
            })
            .collect(),
        description: meta.description.filter(|d| !d.trim().is_empty()),
        category: meta.category,
        tags: meta.tags,
        chain,
        permissions: permissions_summary(item),
        signer: None,
        public_key: None,
        signature: None,
        signed_at: None,
        published_at: crate::trust::now_rfc3339(),
        yanked: false,
    };
    let mut line = line;
    line.digest = format::line_digest(&line, &files);
    Ok((line, files))
}

/// Sign a line with the user's key (`keys/` of the user space): the envelope covers type,
/// id, version, digest, the signing time and the signer's fingerprint.
pub fn sign(user_space: &Path, line: &mut IndexLine) -> Result<()> {
    let keys = crate::trust::Keys::load(user_space).map_err(|e| {
        RegistryError::new(
            ErrorKind::Untrusted,
            format!(
                "cannot sign {}: {e} (publish --unsigned publishes without a signature)",
                line.label()
            ),
        )
    })?;
    let env = crate::trust::Envelope {
        item_type: line.item_type.clone(),
        id: line.id.clone(),
        version: line.version.clone(),
        digest: line.digest.clone(),
        signed_at: crate::trust::now_rfc3339(),
        signer: keys.fingerprint(),
    };
    line.signature = Some(keys.sign(&env));
    line.public_key = Some(crate::trust::public_key_text(&keys.public_key()));
    line.signer = Some(env.signer);
    line.signed_at = Some(env.signed_at);
    Ok(())
}

/// The envelope a line's signature covers, when it is signed.
pub fn envelope(line: &IndexLine) -> Option<crate::trust::Envelope> {
    Some(crate::trust::Envelope {
        item_type: line.item_type.clone(),
        id: line.id.clone(),
        version: line.version.clone(),
        digest: line.digest.clone(),
        signed_at: line.signed_at.clone()?,
        signer: line.signer.clone()?,
    })
}

/// Check a line's signature against the trust store, the registry's publisher keys and the
/// policy; the verdict (`None`: not signed) when the pull may go on.
pub fn check_signature(
    store: &crate::trust::TrustStore,
    toml: &super::format::RegistryToml,
    registry: &str,
    require_signed: bool,
    line: &IndexLine,
) -> Result<Option<crate::trust::Verdict>> {
    use crate::trust::Verdict;
    let label = line.label();
    let signed = envelope(line).zip(line.signature.as_deref());
    let verdict = signed.map(|(env, sig)| store.verify(&env, sig, line.public_key.as_deref()));
    let refuse = |why: String| {
        Err(RegistryError::new(
            ErrorKind::Untrusted,
            format!("{label} from `{registry}`: {why}; nothing was written"),
        ))
    };
    match &verdict {
        Some(Verdict::BadSignature) => return refuse("the signature does not verify (the files, the index line or the signature were changed)".into()),
        None if require_signed => {
            return refuse("it is not signed, and trust.require_signed requires signed items from this registry".into())
        }
        Some(v @ (Verdict::ValidUntrusted { .. } | Verdict::UnknownSigner { .. })) if require_signed => {
            return refuse(format!(
                "{}, and trust.require_signed requires a trusted signer (`kiwi keys trust` adds one)",
                v.describe()
            ))
        }
        _ => {}
    }
    if !toml.publisher_keys.is_empty() {
        let ok = verdict.as_ref().is_some_and(|v| v.is_valid())
            && line.signer.as_ref().is_some_and(|s| {
                toml.publisher_keys
                    .iter()
                    .any(|k| k == s || line.public_key.as_deref() == Some(k.as_str()))
            });
        if !ok {
            return refuse(format!(
                "the registry accepts only items signed by its publisher keys ({})",
                toml.publisher_keys.join(", ")
            ));
        }
    }
    Ok(verdict)
}

#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub line: IndexLine,
    #[serde(flatten)]
    pub committed: Committed,
}

/// Publish an item: its line (signed by `sign`, when given) and files, committed and pushed.
pub fn publish(
    user_space: &Path,
    entry: &RegistryEntry,
    line: IndexLine,
    files: &[(String, Vec<u8>)],
) -> Result<Published> {
    let label = line.label();
    let mut apply = |clone: &Clone| -> Result<Vec<String>> {
        if !clone.toml.publisher_keys.is_empty() {
            let ok = line.signer.as_ref().is_some_and(|s| {
                clone.toml.publisher_keys.iter().any(|k| k == s)
                    || line
                        .public_key
                        .as_ref()
                        .is_some_and(|pk| clone.toml.publisher_keys.contains(pk))
            });
            if !ok {
                return Err(RegistryError::new(
                    ErrorKind::Untrusted,
                    format!(
                        "registry `{}` accepts only items signed by its publisher keys ({}); {label} is {}",
                        clone.name,
                        clone.toml.publisher_keys.join(", "),
                        match &line.signer {
                            Some(s) => format!("signed by {s}"),
                            None => "not signed".into(),
                        }
                    ),
                ));
            }
        }
        let t = line.item_type();
        let mut paths = Vec::new();
        let existing = store::item_versions(&clone.dir, t, &line.id)?;
        if existing.is_none() {
            // A new item: named in the list sparse readers start from.
            use std::io::Write;
            let p = clone.dir.join(super::sparse::NAMES);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .and_then(|mut f| {
                    f.write_all(format!("{}/{}\n", line.item_type, line.id).as_bytes())
                })
                .map_err(|e| RegistryError::io(p.display(), e))?;
            paths.push(super::sparse::NAMES.to_string());
        }
        if let Some(versions) = existing {
            let v = semver::Version::parse(&line.version)
                .map_err(|e| RegistryError::invalid(e.to_string()))?;
            if let Some(existing) = versions.get(&v) {
                return Err(RegistryError::new(
                    ErrorKind::Conflict,
                    format!(
                        "{label} is already published in `{}`{} (a published version never changes): give a higher --version",
                        clone.name,
                        if existing.line.digest == line.digest {
                            " with these same files"
                        } else {
                            " with other files"
                        }
                    ),
                ));
            }
        }
        let dir_rel = line.items_dir();
        let dir = clone.dir.join(&dir_rel);
        for (rel, bytes) in files {
            let p = dir.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| RegistryError::io(parent.display(), e))?;
            }
            std::fs::write(&p, bytes).map_err(|e| RegistryError::io(p.display(), e))?;
        }
        let index = append_line(clone, &line)?;
        paths.push(index);
        paths.push(dir_rel);
        Ok(paths)
    };
    let committed = transact(user_space, entry, &format!("publish {label}"), &mut apply)?;
    Ok(Published {
        line: line.clone(),
        committed,
    })
}

/// The registries to look in: the one named, else every configured one.
fn registries<'a>(
    cfg: &'a config::RegistriesConfig,
    only: Option<&str>,
) -> Result<Vec<&'a RegistryEntry>> {
    match only {
        Some(name) => Ok(vec![cfg.find(name)?]),
        None if cfg.entries.is_empty() => Err(RegistryError::not_found(
            "no registry is configured: add one with `kiwi registry add NAME URL`",
        )),
        None => Ok(cfg.entries.iter().collect()),
    }
}

/// Yank a version: a line that says so is appended (the files stay, for those who pinned it).
pub fn yank(
    user_space: &Path,
    registry: Option<&str>,
    item_type: ItemType,
    id: &str,
    version: &str,
) -> Result<Committed> {
    let version = semver::Version::parse(version)
        .map_err(|e| RegistryError::invalid(format!("`{version}` is not a version: {e}")))?;
    let cfg = config::load(user_space)?;
    let label = format!("{item_type}/{id}@{version}");
    // The registry that has it (exactly one, unless named).
    let mut holders = Vec::new();
    for e in registries(&cfg, registry)? {
        let clone = store::update(user_space, e)?.clone;
        if store::item_versions(&clone.dir, item_type, id)?
            .is_some_and(|v| v.get(&version).is_some())
        {
            holders.push(e);
        }
    }
    let entry = match holders.as_slice() {
        [] => return Err(RegistryError::not_found(format!("no registry has {label}"))),
        [one] => *one,
        many => {
            return Err(RegistryError::invalid(format!(
                "{label} is in several registries ({}): name one with --registry",
                many.iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let mut apply = |clone: &Clone| -> Result<Vec<String>> {
        let versions = store::item_versions(&clone.dir, item_type, id)?
            .ok_or_else(|| RegistryError::not_found(format!("no registry has {label}")))?;
        let v = versions
            .get(&version)
            .ok_or_else(|| RegistryError::not_found(format!("`{}` has no {label}", clone.name)))?;
        if v.yanked {
            return Err(RegistryError::new(
                ErrorKind::Conflict,
                format!("{label} is already yanked"),
            ));
        }
        let mut line = v.line.clone();
        line.yanked = true;
        line.published_at = crate::trust::now_rfc3339();
        Ok(vec![append_line(clone, &line)?])
    };
    transact(user_space, entry, &format!("yank {label}"), &mut apply)
}

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
}

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
    /// Whether `.ai/kiwi.lock` records it (pulls into the project).
    pub locked: bool,
    /// `requested`, or `chain of tool/x` for a runtime pulled with a tool.
    pub reason: String,
}

/// A pull planned and checked: nothing is written yet.
struct Planned {
    clone: Clone,
    line: IndexLine,
    files: Vec<(String, Vec<u8>)>,
    targets: Vec<PathBuf>,
    reason: String,
    verdict: Option<crate::trust::Verdict>,
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
    // A lockfile kiwi cannot read stops the pull before anything is written.
    let mut lock = match a.to {
        Destination::Project => Some(
            crate::lock::Lockfile::load(&root)
                .map_err(|e| RegistryError::invalid(format!("{e}; nothing was written")))?,
        ),
        Destination::User => None,
    };
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
            return Err(RegistryError::not_found(format!(
                "no registry has {label} (looked in {}){}; nothing was written",
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
        let chosen = versions.resolve(&label, req.as_deref())?;
        let line = chosen.line.clone();
        if super::sparse::is_sparse(&clone.url) {
            super::sparse::fetch_version(&clone, &line)?;
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
        let folder = root
            .join(t.folder().unwrap_or("knowledge"))
            .join(Path::new(&id).parent().unwrap_or(Path::new("")));
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
        });
    }
    // Nothing is overwritten without force; and one id is one file.
    for p in &plan {
        for t in &p.targets {
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
                    let item_file = matches!(
                        path.extension().and_then(|x| x.to_str()),
                        Some("py" | "yaml" | "yml" | "md" | "js" | "ts" | "sh" | "json" | "txt")
                    );
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
    if let Some(lock) = &mut lock {
        for p in &plan {
            let l = &p.line;
            lock.upsert(crate::lock::LockEntry {
                item_type: l.item_type.clone(),
                id: l.id.clone(),
                version: l.version.clone(),
                registry: p.clone.url.clone(),
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
    }
    let locked = lock.is_some();
    Ok(plan
        .into_iter()
        .map(|p| PulledItem {
            item_type: p.line.item_type.clone(),
            id: p.line.id.clone(),
            version: p.line.version.clone(),
            registry: p.clone.name.clone(),
            url: p.clone.url.clone(),
            commit: p.clone.commit.clone(),
            digest: p.line.digest.clone(),
            signer: p.line.signer.clone(),
            signature: p
                .verdict
                .as_ref()
                .map(|v| v.describe())
                .unwrap_or_else(|| "not signed".into()),
            files: p.targets,
            locked,
            reason: p.reason,
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
