//! `kiwi/syntaxTree {textDocument: {uri}}`: an open document's version, text and syntax
//! tree as the server holds them (`tree` is null for kinds parsed without tree-sitter),
//! like rust-analyzer's `syntaxTree`; `null` for a document not open.

use crate::convert::to_path;
use crate::session::Backend;
use serde_json::{json, Value as Json};
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::Uri;

pub(crate) async fn syntax_tree(b: &Backend, p: Json) -> Result<Json> {
    let path = p
        .pointer("/textDocument/uri")
        .and_then(Json::as_str)
        .and_then(|u| u.parse::<Uri>().ok())
        .and_then(|u| to_path(&u))
        .ok_or_else(|| jsonrpc::Error::invalid_params("give textDocument.uri, a file: URI"))?;
    let st = b.lock();
    Ok(match (st.docs.get(&path), st.set.overlay(&path)) {
        (Some(d), Some(doc)) => json!({
            "version": d.version,
            "text": doc.text(),
            "tree": doc.syntax_tree(),
        }),
        _ => Json::Null,
    })
}
