//! `textDocument/references`: the calls, relationships, `executor_id`s, knowledge
//! references and exact permissions naming an item.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn references(b: &Backend, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
    let at = p.text_document_position;
    let decl = p.context.include_declaration;
    let Some((snap, found)) = b
        .query(
            &at.text_document.uri,
            Some(at.position),
            move |ws, item, off| ide::references(ws, item, off, decl),
        )
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(
        found
            .into_iter()
            .filter_map(|o| snap.location(&o.path, o.range))
            .collect(),
    ))
}
