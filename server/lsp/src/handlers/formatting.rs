//! `textDocument/formatting`: a directive's XML inside its fence, a YAML tool. A file the
//! kernel does not format (a Python tool, a signed directive, a syntax error) gets no edits,
//! and the reason in the log.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn formatting(
    b: &Backend,
    p: DocumentFormattingParams,
) -> Result<Option<Vec<TextEdit>>> {
    let Some((snap, edits)) = b
        .query(&p.text_document.uri, None, |_, item, _| ide::format(item))
        .await?
    else {
        return Ok(None);
    };
    match edits {
        Ok(edits) => Ok(Some(
            edits
                .into_iter()
                .map(|e| TextEdit {
                    range: snap.range(e.range),
                    new_text: e.new_text,
                })
                .collect(),
        )),
        Err(why) => {
            b.client
                .log_message(
                    MessageType::INFO,
                    format!("kiwi: {} not formatted: {why}", snap.item.id),
                )
                .await;
            Ok(Some(Vec::new()))
        }
    }
}
