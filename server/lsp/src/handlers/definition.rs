//! `textDocument/definition`.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn definition(
    b: &Backend,
    p: GotoDefinitionParams,
) -> Result<Option<GotoDefinitionResponse>> {
    let at = p.text_document_position_params;
    let Some((snap, targets)) = b
        .query(&at.text_document.uri, Some(at.position), ide::definition)
        .await?
    else {
        return Ok(None);
    };
    let locs: Vec<Location> = targets
        .into_iter()
        .filter_map(|t| snap.location(&t.path, t.range))
        .collect();
    if locs.is_empty() {
        return Ok(None);
    }
    Ok(Some(GotoDefinitionResponse::Array(locs)))
}
