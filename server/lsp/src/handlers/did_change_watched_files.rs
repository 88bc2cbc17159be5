//! `workspace/didChangeWatchedFiles`: the client's file events, handled as the server's own
//! watcher's are ([`Backend::files_changed`]).

use crate::convert::to_path;
use crate::session::Backend;
use tower_lsp_server::ls_types::DidChangeWatchedFilesParams;

pub(crate) async fn did_change_watched_files(b: &Backend, p: DidChangeWatchedFilesParams) {
    let paths = p.changes.iter().filter_map(|c| to_path(&c.uri)).collect();
    b.files_changed(paths, false);
}
