//! `workspace/willRenameFiles`: an item file moved or renamed in the editor renames its id —
//! the same edits as `textDocument/rename` (references, permissions, the declared name),
//! applied before the move; a YAML tool's script moves along. A skill's folder renamed: its
//! `name` and its mentions follow.

use crate::convert::to_path;
use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;

/// The files the client asks about: item files under a space, and the skills' folders (the
/// folders directly below a project's or the user's skills folders).
pub(crate) fn filters(
    user_space: &std::path::Path,
    skill_roots: &[std::path::PathBuf],
) -> FileOperationRegistrationOptions {
    let files = [
        "**/.ai/**".to_string(),
        format!("{}/**", user_space.display()),
    ];
    let mut folders: Vec<String> = kiwi_kernel::skill::PROJECT_FOLDERS
        .iter()
        .map(|f| format!("**/{f}/*"))
        .collect();
    folders.extend(skill_roots.iter().map(|r| format!("{}/*", r.display())));
    let filter = |glob: String, kind| FileOperationFilter {
        scheme: Some("file".into()),
        pattern: FileOperationPattern {
            glob,
            matches: Some(kind),
            options: None,
        },
    };
    FileOperationRegistrationOptions {
        filters: files
            .into_iter()
            .map(|g| filter(g, FileOperationPatternKind::File))
            .chain(
                folders
                    .into_iter()
                    .map(|g| filter(g, FileOperationPatternKind::Folder)),
            )
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
        let (Some(from), Some(to)) = (to_path(&old), to_path(&new)) else {
            continue;
        };
        // The move of a rename this server answered: its edits are made already.
        {
            let mut st = b.lock();
            let now = std::time::Instant::now();
            let kept = super::rename::ANSWERED_MOVES_KEPT;
            if let Some(i) = st
                .answered_moves
                .iter()
                .position(|(f, t, at)| *f == from && *t == to && now.duration_since(*at) < kept)
            {
                st.answered_moves.remove(i);
                continue;
            }
        }
        // A skill's folder: asked through its SKILL.md (the item), about the folder.
        let skill_md = from.join(kiwi_kernel::skill::SKILL_FILE);
        let (asked, from) = match crate::convert::to_uri(&skill_md) {
            Some(u) if skill_md.is_file() => (u, Some(from)),
            _ => (old, None),
        };
        let Some((snap, plan)) = b
            .query(&asked, None, move |ws, item, _| {
                ide::rename_file(ws, from.as_deref().unwrap_or(&item.path), &to)
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
