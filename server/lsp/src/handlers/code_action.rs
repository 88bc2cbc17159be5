//! `textDocument/codeAction`: the quick fixes of the diagnostics in the range.

use crate::convert::{self, to_uri};
use crate::session::Backend;
use kiwi_kernel::check::check_item;
use std::collections::HashMap;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn code_action(
    b: &Backend,
    p: CodeActionParams,
) -> Result<Option<CodeActionResponse>> {
    if let Some(path) = convert::to_path(&p.text_document.uri) {
        if b.lock().neighbours.contains_key(&path) {
            return Ok(b.neighbour_actions(&p.text_document.uri, &path, p.range));
        }
    }
    let Some((snap, diags)) = b
        .query(&p.text_document.uri, None, |ws, item, _| {
            check_item(ws, item)
        })
        .await?
    else {
        return Ok(None);
    };
    let start = snap.offset(p.range.start);
    let end = snap.offset(p.range.end);
    let uri = p.text_document.uri.clone();
    let (version, code_description) = {
        let st = b.lock();
        let version = st.docs.get(&snap.item.path).map(|d| d.version);
        (version, st.caps.code_description)
    };
    // No quick fix edits a file of a read-only space (an extra space, a builtin item).
    if !snap.item.space.is_writable() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for d in &diags {
        if d.fixes.is_empty() || d.range.end < start || d.range.start > end {
            continue;
        }
        let mut ld =
            convert::diagnostic(&snap.item.source, &snap.item.path, d, snap.enc, &|_| None);
        if !code_description {
            ld.code_description = None;
        }
        for fix in &d.fixes {
            if let Some(action) = fix_action(fix, &uri, version, &ld, d.fixes.len() == 1, &|r| {
                snap.range(r)
            }) {
                out.push(CodeActionOrCommand::CodeAction(action));
            }
        }
    }
    Ok(Some(out))
}

/// A diagnostic's fix as a quick fix: its edits in `uri` (at `version`), and the file's rename
/// when the fix renames it (`None`: the new path has no URI). The one translation, for the
/// items' diagnostics and for VS Code's customization files (`crate::neighbours`).
pub(crate) fn fix_action(
    fix: &kiwi_kernel::diag::Fix,
    uri: &Uri,
    version: Option<i32>,
    diagnostic: &Diagnostic,
    preferred: bool,
    range: &dyn Fn(kiwi_kernel::text::TextRange) -> Range,
) -> Option<CodeAction> {
    let edits: Vec<TextEdit> = fix
        .edits
        .iter()
        .map(|e| TextEdit {
            range: range(e.range),
            new_text: e.new_text.clone(),
        })
        .collect();
    let edit = match &fix.rename_to {
        Some(to) => {
            let new_uri = to_uri(to)?;
            let mut ops = Vec::new();
            if !edits.is_empty() {
                ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier {
                        uri: uri.clone(),
                        version,
                    },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }));
            }
            ops.push(DocumentChangeOperation::Op(ResourceOp::Rename(
                RenameFile {
                    old_uri: uri.clone(),
                    new_uri,
                    options: None,
                    annotation_id: None,
                },
            )));
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Operations(ops)),
                ..Default::default()
            }
        }
        None => WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..Default::default()
        },
    };
    Some(CodeAction {
        title: fix.title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(edit),
        is_preferred: Some(preferred),
        ..Default::default()
    })
}
