//! `textDocument/didOpen`: the document becomes the truth for its item (its workspace's
//! load starts if need be), then it is checked.

use crate::convert::to_path;
use crate::session::Backend;
use crate::session::Doc;
use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

pub(crate) async fn did_open(b: &Backend, p: DidOpenTextDocumentParams) {
    let Some(path) = to_path(&p.text_document.uri) else {
        return;
    };
    if b.is_neighbour(&path) {
        b.lock().neighbours.insert(
            path.clone(),
            crate::neighbours::Neighbour {
                doc: kiwi_kernel::document::Document::new(p.text_document.text),
                version: p.text_document.version,
            },
        );
        b.publish_neighbour(&path).await;
        return;
    }
    let Some(key) = b.key_for(&path) else {
        return;
    };
    let start = {
        let mut st = b.lock();
        let start = st.set.claim(&key);
        st.set.open(&path, p.text_document.text);
        st.docs.insert(
            path.clone(),
            Doc {
                version: p.text_document.version,
                key: key.clone(),
                lenses: 0,
            },
        );
        *st.generation.entry(path.clone()).or_default() += 1;
        start
    };
    if start {
        b.start_load(key);
    }
    b.spawn_recheck(path);
}
