//! `textDocument/inlayHint`: the interpreter a runtime resolves to.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn inlay_hint(b: &Backend, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
    let Some((snap, hints)) = b
        .query(&p.text_document.uri, None, |ws, item, _| {
            ide::inlay_hints(ws, item)
        })
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(
        hints
            .into_iter()
            .map(|h| InlayHint {
                position: snap.position(h.offset),
                label: InlayHintLabel::String(h.label),
                kind: None,
                text_edits: None,
                tooltip: h.tooltip.map(InlayHintTooltip::String),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            })
            .collect(),
    ))
}
