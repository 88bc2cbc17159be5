//! `window/workDoneProgress/cancel`: the user stopped a run through its progress.

use crate::session::Backend;
use tower_lsp_server::ls_types::WorkDoneProgressCancelParams;

pub(crate) async fn cancel(b: &Backend, p: WorkDoneProgressCancelParams) {
    crate::commands::cancel(b, &p.token);
}
