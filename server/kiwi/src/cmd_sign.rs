//! `kiwi sign ITEM`: sign an item's current files with your key and pin them in the
//! lockfile of its space (`.ai/kiwi.lock`). It is also how a pulled item you changed on
//! purpose is re-pinned: `kiwi run` refuses a pulled item whose files no longer match the lock.

use anyhow::{anyhow, bail, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::trust::{audit, Keys};
use kiwi_kernel::workspace::{Item, Lookup, Workspace};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// An item by `TYPE/ID`, a bare id or name (one type only), or the path of its file.
pub fn find_item(ws: &Workspace, reference: &str) -> Result<Arc<Item>> {
    let as_path = Path::new(reference);
    if as_path.is_file() {
        let real = as_path.canonicalize()?;
        if let Some(item) = ws.items().find(|i| {
            i.path == real || i.path.canonicalize().ok().as_deref() == Some(real.as_path())
        }) {
            return Ok(item.clone());
        }
        bail!("{reference} is not an item of this project or the user space");
    }
    let typed = reference
        .split_once('/')
        .and_then(|(t, rest)| ItemType::parse(t).map(|t| (t, rest)));
    let candidates: Vec<(ItemType, &str)> = match typed {
        Some((t, rest)) => vec![(t, rest)],
        None => [ItemType::Tool, ItemType::Directive, ItemType::Knowledge]
            .into_iter()
            .map(|t| (t, reference))
            .collect(),
    };
    let mut found = Vec::new();
    let mut suggestions = Vec::new();
    for (t, id) in candidates {
        match ws.lookup(t, id, None) {
            Lookup::Found(i) => found.push(i),
            Lookup::Missing { suggestions: s } => suggestions.extend(s),
            Lookup::Ambiguous { candidates } => {
                bail!(
                    "`{reference}` is ambiguous: {}; give the full id",
                    candidates.join(", ")
                )
            }
            Lookup::Refused(e) => bail!("`{reference}` is not a valid id: {e}"),
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 if suggestions.is_empty() => Err(anyhow!("no item `{reference}` in any space")),
        0 => Err(anyhow!(
            "no item `{reference}`; did you mean {}?",
            suggestions.join(", ")
        )),
        _ => Err(anyhow!(
            "`{reference}` names {}; write TYPE/ID",
            found
                .iter()
                .map(|i| format!("{}/{}", i.item_type.as_str(), i.id))
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

pub fn run(
    reference: &str,
    project: Option<&Path>,
    version: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let project = crate::cmd_env::project_for(project)?;
    let ws = Workspace::load(project, Host::from_process());
    crate::cmd_env::warn_spaces(&ws);
    let item = find_item(&ws, reference)?;
    let keys = Keys::load(&ws.user)?;
    let e = audit::pin_item(&ws, &item, &keys, version).map_err(|e| anyhow!(e))?;
    let lock = ws
        .space_root(item.space)
        .map(|r| kiwi_kernel::lock::Lockfile::path(&r))
        .unwrap_or_default();
    if json {
        println!(
            "{}",
            json!({
                "type": e.item_type, "id": e.id, "version": e.version, "digest": e.digest,
                "signer": e.signer, "signed_at": e.signed_at, "files": e.files,
                "registry": e.registry, "lockfile": lock,
            })
        );
    } else {
        println!(
            "signed {}/{} {} ({}) with {}; pinned in {}",
            e.item_type,
            e.id,
            e.version,
            e.digest,
            e.signer,
            lock.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
