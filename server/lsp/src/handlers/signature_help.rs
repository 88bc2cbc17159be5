//! `textDocument/signatureHelp` at a step's call: the called tool's `CONFIG_SCHEMA`, the
//! active `<param>`.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn signature_help(
    b: &Backend,
    p: SignatureHelpParams,
) -> Result<Option<SignatureHelp>> {
    let at = p.text_document_position_params;
    let Some((_, Some(sig))) = b
        .query(
            &at.text_document.uri,
            Some(at.position),
            ide::signature_help,
        )
        .await?
    else {
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
