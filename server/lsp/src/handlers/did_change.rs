//! `textDocument/didChange`: incremental edits applied to the document (and its syntax
//! tree) synchronously, then a re-check in the background.

use crate::convert;
use crate::session::Backend;
use tower_lsp_server::ls_types::DidChangeTextDocumentParams;

pub(crate) async fn did_change(b: &Backend, p: DidChangeTextDocumentParams) {
    let Some(path) = convert::to_path(&p.text_document.uri) else {
        return;
    };
    let neighbour = {
        let mut st = b.lock();
        let enc = st.enc;
        match st.neighbours.get_mut(&path) {
            Some(n) => {
                n.version = p.text_document.version;
                for change in &p.content_changes {
                    convert::apply_change(&mut n.doc, change, enc);
                }
                true
            }
            None => false,
        }
    };
    if neighbour {
        b.publish_neighbour(&path).await;
        return;
    }
    {
        let mut st = b.lock();
        let enc = st.enc;
        let Some(doc) = st.docs.get_mut(&path) else {
            return;
        };
        doc.version = p.text_document.version;
        st.set.edit(&path, |doc| {
            for change in &p.content_changes {
                convert::apply_change(doc, change, enc);
            }
        });
        *st.generation.entry(path.clone()).or_default() += 1;
    }
    b.spawn_recheck(path);
}
