//! `textDocument/documentLink`: item ids to their files (a builtin item's read-only copy),
//! a path input's default and a tool's `{tool_dir}/…` files; a tooltip for clients that show one.

use crate::convert::to_uri;
use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn document_link(
    b: &Backend,
    p: DocumentLinkParams,
) -> Result<Option<Vec<DocumentLink>>> {
    let tooltips = b.lock().caps.link_tooltips;
    let Some((snap, links)) = b
        .query(&p.text_document.uri, None, |ws, item, _| {
            ide::document_links(ws, item)
        })
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(
        links
            .into_iter()
            .filter_map(|l| {
                Some(DocumentLink {
                    range: snap.range(l.range),
                    target: Some(to_uri(&l.target)?),
                    tooltip: tooltips.then_some(l.tooltip),
                    data: None,
                })
            })
            .collect(),
    ))
}
