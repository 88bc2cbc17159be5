//! Publish and yank: the transactions that write to a registry.

use super::registries;
use super::transact::{append_line, transact, Committed};
use super::{line_for, sign, sign_yank};
use crate::ids::ItemType;
use crate::registry::config::{self, RegistryEntry};
use crate::registry::format::IndexLine;
use crate::registry::store::{self, Clone};
use crate::registry::{ErrorKind, RegistryError, Result};
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub line: IndexLine,
    #[serde(flatten)]
    pub committed: Committed,
}

/// Publish a workspace item to a configured registry (`registry`: its name; `None` when only
/// one is configured), signed with the user's key unless `unsigned`: the one path of
/// `kiwi publish` and MCP `execute action: publish`. An item with error diagnostics is
/// refused ([`line_for`]).
pub fn publish_item(
    user_space: &Path,
    ws: &Workspace,
    item: &Arc<Item>,
    registry: Option<&str>,
    version: Option<&str>,
    unsigned: bool,
) -> Result<Published> {
    publish_items(
        user_space,
        ws,
        std::slice::from_ref(item),
        registry,
        version,
        unsigned,
    )
    .map(|mut v| v.remove(0))
}

/// Publish several workspace items in one commit, all or nothing: every item is checked and
/// signed first, then all of them are applied to the clone in one transaction; one refused
/// (error diagnostics, a version already published, the registry's publisher keys) and
/// nothing is published.
pub fn publish_items(
    user_space: &Path,
    ws: &Workspace,
    items: &[Arc<Item>],
    registry: Option<&str>,
    version: Option<&str>,
    unsigned: bool,
) -> Result<Vec<Published>> {
    if items.is_empty() {
        return Err(RegistryError::invalid("no item to publish"));
    }
    if items.len() > 1 && version.is_some() {
        return Err(RegistryError::invalid(
            "--version names one item's version: several items are published at the versions they declare",
        ));
    }
    let cfg = config::load(user_space)?;
    let entry = match registry {
        Some(name) => cfg.find(name)?.clone(),
        None => match cfg.entries.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(RegistryError::not_found(
                    "no registry is configured: add one with `kiwi registry add NAME URL`",
                ))
            }
            _ => {
                return Err(RegistryError::invalid(format!(
                    "say which registry to publish to ({})",
                    cfg.names()
                )))
            }
        },
    };
    let mut batch = Vec::new();
    for item in items {
        let (mut line, files) = line_for(ws, item, version).map_err(|e| {
            if items.len() > 1 {
                RegistryError::new(e.kind, format!("{}; nothing was published", e.message))
            } else {
                e
            }
        })?;
        if !unsigned {
            sign(user_space, &mut line)?;
        }
        batch.push((line, files));
    }
    publish_many(user_space, &entry, batch)
}

/// Publish an item: its line (signed by `sign`, when given) and files, committed and pushed.
pub fn publish(
    user_space: &Path,
    entry: &RegistryEntry,
    line: IndexLine,
    files: &[(String, Vec<u8>)],
) -> Result<Published> {
    publish_many(user_space, entry, vec![(line, files.to_vec())]).map(|mut v| v.remove(0))
}

/// Publish several items in one commit (all or nothing: the transaction undoes every change
/// to the clone when one item is refused).
pub fn publish_many(
    user_space: &Path,
    entry: &RegistryEntry,
    items: Vec<(IndexLine, super::Files)>,
) -> Result<Vec<Published>> {
    let labels: Vec<String> = items.iter().map(|(l, _)| l.label()).collect();
    let mut apply = |clone: &Clone| -> Result<Vec<String>> {
        let mut paths = Vec::new();
        for (line, files) in &items {
            paths.extend(apply_one(clone, line, files).map_err(|e| {
                if items.len() > 1 {
                    RegistryError::new(e.kind, format!("{}; nothing was published", e.message))
                } else {
                    e
                }
            })?);
        }
        Ok(paths)
    };
    let message = if labels.len() <= 3 {
        format!("publish {}", labels.join(", "))
    } else {
        format!("publish {} items: {}", labels.len(), labels.join(", "))
    };
    let committed = transact(user_space, entry, &message, &mut apply)?;
    Ok(items
        .into_iter()
        .map(|(line, _)| Published {
            line,
            committed: committed.clone(),
        })
        .collect())
}

/// Write one item's files and index line into the clone; the paths to commit.
fn apply_one(clone: &Clone, line: &IndexLine, files: &[(String, Vec<u8>)]) -> Result<Vec<String>> {
    let label = line.label();

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
        let p = clone.dir.join(crate::registry::sparse::NAMES);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .and_then(|mut f| f.write_all(format!("{}/{}\n", line.item_type, line.id).as_bytes()))
            .map_err(|e| RegistryError::io(p.display(), e))?;
        paths.push(crate::registry::sparse::NAMES.to_string());
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
            std::fs::create_dir_all(parent).map_err(|e| RegistryError::io(parent.display(), e))?;
        }
        std::fs::write(&p, bytes).map_err(|e| RegistryError::io(p.display(), e))?;
    }
    let index = append_line(clone, line)?;
    paths.push(index);
    paths.push(dir_rel);
    Ok(paths)
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
        // Signed with the user's key when there is one: the record that a signed version
        // was yanked is its publisher's (an un-yank would need the same signature).
        if crate::trust::Keys::dir(user_space)
            .join(crate::trust::PRIVATE_KEY_FILE)
            .exists()
        {
            sign_yank(user_space, &mut line)?;
        }
        Ok(vec![append_line(clone, &line)?])
    };
    transact(user_space, entry, &format!("yank {label}"), &mut apply)
}
