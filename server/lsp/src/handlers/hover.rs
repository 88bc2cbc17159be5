//! `textDocument/hover`.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn hover(b: &Backend, p: HoverParams) -> Result<Option<Hover>> {
    let at = p.text_document_position_params;
    if let Some(path) = crate::convert::to_path(&at.text_document.uri) {
        if b.lock().neighbours.contains_key(&path) {
            return Ok(b.neighbour_hover(&path, at.position));
        }
    }
    let Some((snap, Some(h))) = b
        .query(&at.text_document.uri, Some(at.position), ide::hover)
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: h.markdown,
        }),
        range: Some(snap.range(h.range)),
    }))
}
