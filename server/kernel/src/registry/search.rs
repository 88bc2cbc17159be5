//! Search over the registries' index lines: the same BM25 index as local search
//! ([`crate::search::Index`]), one document per item (its latest version that is not yanked),
//! read from the clones as they are (`kiwi registry update` fetches), each hit shadowed by a
//! local item of the same id.

use super::config;
use super::store;
use crate::ids::ItemType;
use crate::search::{ExternalDoc, Index, Meta};
use crate::workspace::Workspace;
use std::path::{Path, PathBuf};

/// The source a registry's hits carry.
pub fn source_name(registry: &str) -> String {
    format!("registry:{registry}")
}

/// The index of every configured registry's items (or of one), and the registries that
/// could not be read, each with why.
pub fn build(
    user_space: &Path,
    ws: Option<&Workspace>,
    only: Option<&str>,
) -> super::Result<(Index, Vec<String>)> {
    let cfg = config::load(user_space)?;
    let entries: Vec<&config::RegistryEntry> = match only {
        Some(n) => vec![cfg.find(n)?],
        None => cfg.entries.iter().collect(),
    };
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for e in entries {
        let dir = store::clone_dir(user_space, &e.name);
        if !store::is_fetched(&dir) {
            problems.push(format!(
                "registry `{}` is not fetched yet: run `kiwi registry update {}`",
                e.name, e.name
            ));
            continue;
        }
        let catalog = match store::catalog(&dir) {
            Ok(c) => c,
            Err(err) => {
                problems.push(format!("registry `{}`: {err}", e.name));
                continue;
            }
        };
        for (t, id, versions) in catalog {
            let Some(latest) = versions.latest() else {
                continue;
            };
            let l = &latest.line;
            let mut body = l.chain.join(" ");
            body.push(' ');
            body.push_str(&l.permissions.join(" "));
            docs.push(ExternalDoc {
                item_type: t,
                shadowed_by: ws.and_then(|ws| ws.winner_space(t, &id)),
                meta: Meta {
                    name: crate::ids::bare_name(&id).to_string(),
                    description: l.description.clone(),
                    category: l.category.clone(),
                    version: Some(l.version.clone()),
                    tags: l.tags.clone(),
                },
                id,
                source: source_name(&e.name),
                path: Some(PathBuf::from(crate::redact::urls(&e.url).as_ref())),
                body,
            });
        }
    }
    Ok((Index::from_external(docs), problems))
}

/// Every version of a registry's item, oldest first, yanked ones marked
/// (`1.0.0, 1.2.0 (yanked)`): what a hit of `source` `registry:NAME` shows beside its latest.
pub fn versions_of(user_space: &Path, source: &str, t: ItemType, id: &str) -> Option<String> {
    let name = source.strip_prefix("registry:")?;
    let dir = store::clone_dir(user_space, name);
    Some(store::item_versions(&dir, t, id).ok()??.list())
}

/// The item types a registry holds.
pub const TYPES: [ItemType; 3] = ItemType::FILE_TYPES;
