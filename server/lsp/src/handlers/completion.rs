//! `textDocument/completion`.

use crate::session::Backend;
use kiwi_kernel::ide;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn completion(
    b: &Backend,
    p: CompletionParams,
) -> Result<Option<CompletionResponse>> {
    let at = p.text_document_position;
    let Some((snap, entries)) = b
        .query(&at.text_document.uri, Some(at.position), ide::completions)
        .await?
    else {
        return Ok(None);
    };
    let snippets = b.lock().caps.snippets;
    let items = entries
        .into_iter()
        .map(|mut e| {
            if e.snippet && !snippets {
                e.snippet = false;
                e.insert_text = e.insert_text.map(|t| t.replace("$1", ""));
            }
            e
        })
        .map(|e| CompletionItem {
            kind: Some(match e.kind {
                ide::CompletionKind::Value => CompletionItemKind::ENUM_MEMBER,
                ide::CompletionKind::Key => CompletionItemKind::PROPERTY,
                ide::CompletionKind::Element => CompletionItemKind::CLASS,
                ide::CompletionKind::Attribute => CompletionItemKind::PROPERTY,
                ide::CompletionKind::Item => CompletionItemKind::REFERENCE,
                ide::CompletionKind::Input => CompletionItemKind::VARIABLE,
                ide::CompletionKind::Field => CompletionItemKind::FIELD,
            }),
            detail: e.detail,
            insert_text_format: e.snippet.then_some(InsertTextFormat::SNIPPET),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit {
                range: snap.range(e.range),
                new_text: e.insert_text.unwrap_or_else(|| e.label.clone()),
            })),
            label: e.label,
            ..Default::default()
        })
        .collect();
    // Incomplete: the ids offered are those holding what is typed (ide::completions narrows
    // them), so the client asks again as the word changes.
    Ok(Some(CompletionResponse::List(CompletionList {
        is_incomplete: true,
        items,
    })))
}
