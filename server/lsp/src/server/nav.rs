//! Find references, rename and signature help: the kernel's answers (`ide::references`,
//! `ide::rename`, `ide::signature_help`) in LSP terms.

use super::{blocking, Backend, Snap};
use crate::convert::{self, to_uri};
use kiwi_kernel::ide;
use kiwi_kernel::text::SourceText;
use std::collections::HashMap;
use std::path::Path;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;

impl Backend {
    /// The text of a file of the snapshot's workspace (the open document's when it is open).
    fn source_of(snap: &Snap, path: &Path) -> SourceText {
        if path == snap.item.path {
            return snap.item.source.clone();
        }
        snap.ws
            .item(path)
            .map(|i| i.source.clone())
            .unwrap_or_else(|| SourceText::new(""))
    }

    pub(super) async fn find_references(
        &self,
        p: ReferenceParams,
    ) -> Result<Option<Vec<Location>>> {
        let Some(snap) = self
            .snapshot(&p.text_document_position.text_document.uri)
            .await
        else {
            return Ok(None);
        };
        let off = Self::offset(&snap, p.text_document_position.position);
        let (ws, item) = (snap.ws.clone(), snap.item.clone());
        let decl = p.context.include_declaration;
        let found = blocking(move || ide::references(&ws, &item, off, decl)).await?;
        let locs: Vec<Location> = found
            .into_iter()
            .filter_map(|o| {
                let src = Self::source_of(&snap, &o.path);
                Some(Location::new(
                    to_uri(&o.path)?,
                    convert::range(&src, o.range, snap.enc),
                ))
            })
            .collect();
        Ok(Some(locs))
    }

    pub(super) async fn prepare_rename_at(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let Some(snap) = self.snapshot(&p.text_document.uri).await else {
            return Ok(None);
        };
        let off = Self::offset(&snap, p.position);
        let (ws, item) = (snap.ws.clone(), snap.item.clone());
        let found = blocking(move || ide::prepare_rename(&ws, &item, off)).await?;
        Ok(
            found.map(|(range, id)| PrepareRenameResponse::RangeWithPlaceholder {
                range: Self::lsp_range(&snap, range),
                placeholder: id,
            }),
        )
    }

    pub(super) async fn rename_at(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let Some(snap) = self
            .snapshot(&p.text_document_position.text_document.uri)
            .await
        else {
            return Ok(None);
        };
        let off = Self::offset(&snap, p.text_document_position.position);
        let (ws, item) = (snap.ws.clone(), snap.item.clone());
        let new_id = p.new_name.clone();
        let plan = blocking(move || ide::rename(&ws, &item, off, &new_id))
            .await?
            .map_err(jsonrpc::Error::invalid_params)?;
        let (versions, caps): (HashMap<_, _>, _) = {
            let st = self.lock();
            let versions = plan
                .edits
                .iter()
                .filter_map(|(p, _)| st.docs.get(p).map(|d| (p.clone(), d.version)))
                .collect();
            (versions, st.caps)
        };
        if !caps.document_changes {
            // A plain edit: the references change; the file keeps its name (the client
            // cannot move it in the same edit).
            let mut changes = HashMap::new();
            for (path, edits) in &plan.edits {
                let Some(uri) = to_uri(path) else { continue };
                let src = Self::source_of(&snap, path);
                let edits: Vec<TextEdit> = edits
                    .iter()
                    .map(|e| TextEdit {
                        range: convert::range(&src, e.range, snap.enc),
                        new_text: e.new_text.clone(),
                    })
                    .collect();
                changes.insert(uri, edits);
            }
            return Ok(Some(WorkspaceEdit {
                changes: Some(changes),
                ..Default::default()
            }));
        }
        let mut ops = Vec::new();
        for (path, edits) in &plan.edits {
            let Some(uri) = to_uri(path) else { continue };
            let src = Self::source_of(&snap, path);
            ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri,
                    version: versions.get(path).copied(),
                },
                edits: edits
                    .iter()
                    .map(|e| {
                        OneOf::Left(TextEdit {
                            range: convert::range(&src, e.range, snap.enc),
                            new_text: e.new_text.clone(),
                        })
                    })
                    .collect(),
            }));
        }
        for (from, to) in plan.moves.iter().filter(|_| caps.rename_files) {
            let (Some(old_uri), Some(new_uri)) = (to_uri(from), to_uri(to)) else {
                continue;
            };
            ops.push(DocumentChangeOperation::Op(ResourceOp::Rename(
                RenameFile {
                    old_uri,
                    new_uri,
                    options: None,
                    annotation_id: None,
                },
            )));
        }
        Ok(Some(WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(ops)),
            ..Default::default()
        }))
    }

    pub(super) async fn signature_help_at(
        &self,
        p: SignatureHelpParams,
    ) -> Result<Option<SignatureHelp>> {
        let Some(snap) = self
            .snapshot(&p.text_document_position_params.text_document.uri)
            .await
        else {
            return Ok(None);
        };
        let off = Self::offset(&snap, p.text_document_position_params.position);
        let (ws, item) = (snap.ws.clone(), snap.item.clone());
        let Some(sig) = blocking(move || ide::signature_help(&ws, &item, off)).await? else {
            return Ok(None);
        };
        // Plain text: every client shows it (markdown needs `documentationFormat`).
        let markdown = Documentation::String;
        let active = sig.active.map(|a| a as u32);
        Ok(Some(SignatureHelp {
            signatures: vec![SignatureInformation {
                label: sig.label,
                documentation: sig.documentation.map(markdown),
                parameters: Some(
                    sig.params
                        .into_iter()
                        .map(|(label, doc)| ParameterInformation {
                            label: ParameterLabel::Simple(label),
                            documentation: (!doc.is_empty()).then(|| markdown(doc)),
                        })
                        .collect(),
                ),
                active_parameter: None,
            }],
            active_signature: Some(0),
            active_parameter: active,
        }))
    }
}
