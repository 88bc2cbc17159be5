//! `workspace/willRenameFiles`: an item file moved or renamed in the editor renames its id —
//! the same edits as `textDocument/rename` (references, permissions, the declared name),
//! applied before the move; a YAML tool's script moves along.

use crate::convert::to_path;
use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;

/// The files the client asks about: item files under a space.
pub(crate) fn filters(user_space: &std::path::Path) -> FileOperationRegistrationOptions {
    let mut globs = vec!["**/.ai/**".to_string()];
    globs.push(format!("{}/**", user_space.display()));
    FileOperationRegistrationOptions {
        filters: globs
            .into_iter()
            .map(|glob| FileOperationFilter {
                scheme: Some("file".into()),
                pattern: FileOperationPattern {
                    glob,
                    matches: Some(FileOperationPatternKind::File),
                    options: None,
                },
            })
            .collect(),
    }
}

pub(crate) async fn will_rename_files(
    b: &Backend,
    p: RenameFilesParams,
) -> Result<Option<WorkspaceEdit>> {
    let mut merged: Option<WorkspaceEdit> = None;
    for f in &p.files {
        let (Ok(old), Ok(new)) = (f.old_uri.parse::<Uri>(), f.new_uri.parse::<Uri>()) else {
            continue;
        };
        let Some(to) = to_path(&new) else { continue };
        let Some((snap, plan)) = b
            .query(&old, None, move |ws, item, _| {
                ide::rename_file(ws, &item.path, &to)
            })
            .await?
        else {
            continue; // not an item
        };
        let Some(plan) = plan.map_err(jsonrpc::Error::invalid_params)? else {
            continue;
        };
        let edit = super::rename::workspace_edit(b, &snap, &plan);
        merged = Some(match merged {
            None => edit,
            Some(mut m) => {
                if let (Some(a), Some(b)) = (m.changes.as_mut(), edit.changes) {
                    a.extend(b);
                }
                if let (
                    Some(DocumentChanges::Operations(a)),
                    Some(DocumentChanges::Operations(b)),
                ) = (m.document_changes.as_mut(), edit.document_changes)
                {
                    a.extend(b);
                }
                m
            }
        });
    }
    Ok(merged)
}
