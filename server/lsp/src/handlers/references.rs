//! `textDocument/references`: the calls, relationships, `executor_id`s, knowledge
//! references and exact permissions naming an item; from a mention of a skill in an open
//! `AGENTS.md` or a skill's other Markdown, the places naming that skill.

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
        // A mention in an open `AGENTS.md` or a skill's other Markdown.
        let Some((snap, found)) = b
            .query_file(
                &at.text_document.uri,
                at.position,
                move |ws, path, text, off| ide::file_references(ws, path, text, off, decl),
            )
            .await?
        else {
            return Ok(None);
        };
        return Ok(found.map(|found| {
            found
                .into_iter()
                .filter_map(|o| snap.location(&o.path, o.range))
                .collect()
        }));
    };
    Ok(Some(
        found
            .into_iter()
            .filter_map(|o| snap.location(&o.path, o.range))
            .collect(),
    ))
}
