//! The index line an item is published as, and its files as a registry holds them.

use super::Files;
use crate::diag::Severity;
use crate::ids::{ItemType, Space};
use crate::registry::format::{self, FileEntry, IndexLine};
use crate::registry::{RegistryError, Result};
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

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
            let pos = item.source.lines().position(
                item.text(),
                d.range.start,
                crate::text::Encoding::Char,
            );
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
        yank_signer: None,
        yank_signature: None,
        yanked_at: None,
    };
    format::check_own_files(&line, item.item_type, &item.id)
        .map_err(|e| RegistryError::invalid(format!("{}; nothing was published", e.message)))?;
    let mut line = line;
    line.digest = format::line_digest(&line, &files);
    Ok((line, files))
}
