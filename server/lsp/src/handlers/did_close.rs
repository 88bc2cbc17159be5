//! `textDocument/didClose`: what is on disk is the truth again.

use crate::convert::to_path;
use crate::session::Backend;
use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

pub(crate) async fn did_close(b: &Backend, p: DidCloseTextDocumentParams) {
    let Some(path) = to_path(&p.text_document.uri) else {
        return;
    };
    if b.lock().neighbours.remove(&path).is_some() {
        b.publish_neighbour(&path).await;
        return;
    }
    let key = {
        let mut st = b.lock();
        let Some(doc) = st.docs.remove(&path) else {
            return;
        };
        st.set.close(&path);
        doc.key
    };
    b.publish(key, vec![path], None).await;
}
