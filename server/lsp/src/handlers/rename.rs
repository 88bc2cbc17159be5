//! `textDocument/prepareRename` and `textDocument/rename` of an item id: every reference,
//! the declared name, and the file move as a `RenameFile` op when the client takes resource
//! operations; an invalid or taken id is an error response. A skill: its `name`, its
//! mentions and its folder's move, refused for a client that cannot move the folder.

use crate::session::Backend;
use crate::session::Sources;
use kiwi_kernel::ide;
use std::collections::HashMap;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;

/// How long a move this server answered is taken for the client's own (see
/// `State::answered_moves`).
pub(crate) const ANSWERED_MOVES_KEPT: std::time::Duration = std::time::Duration::from_secs(120);

pub(crate) async fn prepare_rename(
    b: &Backend,
    p: TextDocumentPositionParams,
) -> Result<Option<PrepareRenameResponse>> {
    let Some((snap, found)) = b
        .query(&p.text_document.uri, Some(p.position), |ws, item, off| {
            ide::prepare_rename(ws, item, off).ok_or_else(|| ide::rename_refusal(ws, item, off))
        })
        .await?
    else {
        // A mention in an open `AGENTS.md` or a skill's other Markdown.
        let Some((snap, found)) = b
            .query_file(&p.text_document.uri, p.position, |ws, path, text, off| {
                ide::file_prepare_rename(ws, path, text, off)
            })
            .await?
        else {
            return Ok(None);
        };
        let found = found.map_err(jsonrpc::Error::invalid_params)?;
        return Ok(
            found.map(|(range, id)| PrepareRenameResponse::RangeWithPlaceholder {
                range: snap.range(range),
                placeholder: id,
            }),
        );
    };
    // Refused for a read-only space: an error the editor shows (Neovim said "nothing to
    // rename", and the user could not tell why).
    let found = match found {
        Ok(f) => Some(f),
        Err(Some(why)) => return Err(jsonrpc::Error::invalid_params(why)),
        Err(None) => None,
    };
    Ok(
        found.map(|(range, id)| PrepareRenameResponse::RangeWithPlaceholder {
            range: snap.range(range),
            placeholder: id,
        }),
    )
}

pub(crate) async fn rename(b: &Backend, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
    let at = p.text_document_position;
    let new_id = p.new_name;
    let id = new_id.clone();
    if let Some((snap, plan)) = b
        .query(
            &at.text_document.uri,
            Some(at.position),
            move |ws, item, off| ide::rename(ws, item, off, &id),
        )
        .await?
    {
        let plan = plan.map_err(jsonrpc::Error::invalid_params)?;
        return checked_edit(b, &snap, &plan);
    }
    // A mention in an open `AGENTS.md` or a skill's other Markdown.
    let Some((snap, plan)) = b
        .query_file(
            &at.text_document.uri,
            at.position,
            move |ws, path, text, off| ide::file_rename(ws, path, text, off, &new_id),
        )
        .await?
    else {
        return Ok(None);
    };
    let plan = plan.map_err(jsonrpc::Error::invalid_params)?;
    checked_edit(b, &snap, &plan)
}

/// A rename plan as the client's edit, refused with the reason for a client that cannot make
/// the moves the plan needs.
fn checked_edit(
    b: &Backend,
    snap: &impl Sources,
    plan: &ide::RenamePlan,
) -> Result<Option<WorkspaceEdit>> {
    // A skill's folder is its name (S804): a client that cannot move it gets no half rename
    // (the `name` and the mentions changed, the folder not), but the reason.
    if plan.moves_required && !plan.moves.is_empty() {
        let caps = b.lock().caps;
        let (from, to) = &plan.moves[0];
        let cannot = if !caps.rename_files {
            Some("this editor does not take file renames in a workspace edit (the `rename` resource operation)")
        } else if caps.no_folder_renames {
            Some("Neovim before 0.9 cannot rename a folder in a workspace edit (E502 after the text edits: neovim/neovim#22147, fixed in 0.9)")
        } else {
            None
        };
        if let Some(why) = cannot {
            return Err(jsonrpc::Error::invalid_params(format!(
                "renaming this skill moves its folder {} to {}, and {why}: rename the folder and its `name` together by hand",
                from.display(),
                to.display()
            )));
        }
    }
    Ok(Some(workspace_edit(b, snap, plan)))
}

/// A rename plan as the client's workspace edit: versioned document changes with the file
/// moves when the client takes them, else plain edits (the files keep their names).
pub(crate) fn workspace_edit(
    b: &Backend,
    snap: &impl Sources,
    plan: &ide::RenamePlan,
) -> WorkspaceEdit {
    let (versions, caps): (HashMap<_, _>, _) = {
        let st = b.lock();
        let versions = plan
            .edits
            .iter()
            .filter_map(|(p, _)| st.docs.get(p).map(|d| (p.clone(), d.version)))
            .collect();
        (versions, st.caps)
    };
    let text_edits =
        |path: &std::path::Path, edits: &[kiwi_kernel::diag::TextEdit]| -> Vec<TextEdit> {
            let src = snap.source_of(path);
            edits
                .iter()
                .map(|e| TextEdit {
                    range: crate::convert::range(&src, e.range, snap.enc()),
                    new_text: e.new_text.clone(),
                })
                .collect()
        };
    // A client declaring the `rename` resource operation takes it the only way one can be
    // sent, in `documentChanges` (Neovim declares `resourceOperations` but not
    // `documentChanges`, and applies both: without the move, a rename there left the
    // references naming an id no file had).
    if !caps.document_changes && !caps.rename_files {
        // A plain edit: the references change; the file keeps its name (the client
        // cannot move it in the same edit).
        let mut changes = HashMap::new();
        for (path, edits) in &plan.edits {
            let Some(uri) = crate::convert::to_uri(path) else {
                continue;
            };
            changes.insert(uri, text_edits(path, edits));
        }
        return WorkspaceEdit {
            changes: Some(changes),
            ..Default::default()
        };
    }
    // A skill's folder moves first and the edits name its files where they are then: the
    // order VS Code's API gives such an edit whatever the server sends (its conversion puts
    // the file operations before the text edits: the VS Code suite saw the edits of the
    // moved SKILL.md fail on a path gone), and as valid for a client applying them in order.
    let folder_first = plan.moves_required && caps.rename_files;
    let moved = |p: &std::path::Path| -> Option<std::path::PathBuf> {
        plan.moves
            .iter()
            .find_map(|(from, to)| Some(to.join(p.strip_prefix(from).ok()?)))
    };
    let mut edit_ops = Vec::new();
    for (path, edits) in &plan.edits {
        let (at, version) = match moved(path).filter(|_| folder_first) {
            Some(new_path) => (new_path, None),
            None => (path.clone(), versions.get(path).copied()),
        };
        let Some(uri) = crate::convert::to_uri(&at) else {
            continue;
        };
        edit_ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
            edits: text_edits(path, edits)
                .into_iter()
                .map(OneOf::Left)
                .collect(),
        }));
    }
    if caps.rename_files && !plan.moves.is_empty() {
        let now = std::time::Instant::now();
        let mut st = b.lock();
        st.answered_moves
            .retain(|(.., at)| now.duration_since(*at) < ANSWERED_MOVES_KEPT);
        st.answered_moves
            .extend(plan.moves.iter().map(|(f, t)| (f.clone(), t.clone(), now)));
    }
    let mut move_ops = Vec::new();
    for (from, to) in plan.moves.iter().filter(|_| caps.rename_files) {
        let (Some(old_uri), Some(new_uri)) =
            (crate::convert::to_uri(from), crate::convert::to_uri(to))
        else {
            continue;
        };
        move_ops.push(DocumentChangeOperation::Op(ResourceOp::Rename(
            RenameFile {
                old_uri,
                new_uri,
                options: None,
                annotation_id: None,
            },
        )));
    }
    let ops: Vec<DocumentChangeOperation> = if folder_first {
        move_ops.into_iter().chain(edit_ops).collect()
    } else {
        edit_ops.into_iter().chain(move_ops).collect()
    };
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(ops)),
        ..Default::default()
    }
}
