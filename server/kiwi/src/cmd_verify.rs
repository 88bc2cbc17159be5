//! `kiwi verify [ITEM...]`: whether items are signed by a key you trust and unchanged since:
//! their `.ai/kiwi.lock` entry (files, signature, signer) and their inline rye-os
//! `rye:signed:` header (hash, signature). Without ITEM: every locked item, and every item of
//! the project with a signature header. Exit 0 when every one verifies, 1 otherwise.

use anyhow::Result;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::Space;
use kiwi_kernel::trust::audit::{self, ItemVerification};
use kiwi_kernel::workspace::Workspace;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

pub fn run(items: &[String], project: Option<&Path>, json: bool) -> Result<ExitCode> {
    let project = crate::cmd_env::project_for(project)?;
    let ws = Workspace::load(project, Host::from_process());
    crate::cmd_env::warn_spaces(&ws);
    let mut results: Vec<ItemVerification> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    if items.is_empty() {
        let spaces: Vec<Space> = if ws.project.is_some() {
            vec![Space::Project]
        } else {
            vec![Space::User]
        };
        for space in &spaces {
            for item in ws.items_in(*space) {
                let v = audit::verify_item(&ws, item);
                if v.lock.is_some() || v.rye.is_some() {
                    results.push(v);
                }
            }
        }
        let (found, problems) = audit::audit(&ws, &spaces);
        for p in problems {
            missing.push(format!("{}: {}", p.lockfile.display(), p.message));
        }
        for p in found {
            if let kiwi_kernel::lock::FileState::Missing { files } = &p.state {
                if !results
                    .iter()
                    .any(|r| r.lock.as_ref().is_some_and(|l| l.entry.id == p.entry.id))
                {
                    missing.push(format!(
                        "{} is in kiwi.lock but missing: {}",
                        p.label(),
                        files.join(", ")
                    ));
                }
            }
        }
    } else {
        for r in items {
            let item = crate::cmd_sign::find_item(&ws, r)?;
            results.push(audit::verify_item(&ws, &item));
        }
    }
    let all_ok = missing.is_empty() && results.iter().all(ItemVerification::ok);
    if json {
        let list: Vec<_> = results
            .iter()
            .map(|v| {
                json!({
                    "type": v.item_type, "id": v.id, "path": v.path,
                    "verified": v.ok(), "findings": v.findings(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({"verified": all_ok, "items": list, "problems": missing})
        );
    } else {
        if results.is_empty() && missing.is_empty() {
            println!("nothing to verify: no item is in kiwi.lock or carries a signature");
        }
        for v in &results {
            println!(
                "{} {}/{}: {}",
                if v.ok() { "✓" } else { "✗" },
                v.item_type,
                v.id,
                v.findings().join("; ")
            );
        }
        for m in &missing {
            println!("✗ {m}");
        }
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
