//! `textDocument/documentSymbol`: the outline of an item.

use crate::session::Backend;
use crate::session::Snap;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn document_symbol(
    b: &Backend,
    p: DocumentSymbolParams,
) -> Result<Option<DocumentSymbolResponse>> {
    let Some((snap, syms)) = b
        .query(&p.text_document.uri, None, |_, item, _| ide::symbols(item))
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(DocumentSymbolResponse::Nested(
        syms.iter().map(|s| symbol(&snap, s)).collect(),
    )))
}

#[allow(deprecated)]
fn symbol(snap: &Snap, s: &ide::Symbol) -> DocumentSymbol {
    let kind = match s.kind {
        ide::SymbolKind::Directive => SymbolKind::MODULE,
        ide::SymbolKind::Metadata | ide::SymbolKind::Inputs | ide::SymbolKind::Process => {
            SymbolKind::NAMESPACE
        }
        ide::SymbolKind::Permissions => SymbolKind::NAMESPACE,
        ide::SymbolKind::Input => SymbolKind::VARIABLE,
        ide::SymbolKind::Step => SymbolKind::FUNCTION,
        ide::SymbolKind::Permission => SymbolKind::KEY,
        ide::SymbolKind::Field => SymbolKind::FIELD,
        ide::SymbolKind::Key => SymbolKind::KEY,
        ide::SymbolKind::Heading => SymbolKind::STRING,
    };
    let range = snap.range(s.range);
    let mut selection = snap.range(s.selection);
    if selection.start < range.start || selection.end > range.end {
        selection = range;
    }
    DocumentSymbol {
        name: if s.name.is_empty() {
            "?".into()
        } else {
            s.name.clone()
        },
        detail: s.detail.clone(),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: Some(s.children.iter().map(|c| symbol(snap, c)).collect()),
    }
}
