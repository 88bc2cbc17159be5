//! One handler per request or notification, each a free function over the [`Backend`]
//! (`crate::server` dispatches to them and turns a panic into an error response).
//!
//! [`Backend`]: crate::session::Backend

pub(crate) mod code_action;
pub(crate) mod code_lens;
pub(crate) mod completion;
pub(crate) mod definition;
pub(crate) mod did_change;
pub(crate) mod did_change_watched_files;
pub(crate) mod did_close;
pub(crate) mod did_open;
pub(crate) mod document_link;
pub(crate) mod document_symbol;
pub(crate) mod folding_range;
pub(crate) mod formatting;
pub(crate) mod hover;
pub(crate) mod initialize;
pub(crate) mod initialized;
pub(crate) mod inlay_hint;
pub(crate) mod references;
pub(crate) mod rename;
pub(crate) mod semantic_tokens;
pub(crate) mod signature_help;
pub(crate) mod syntax_tree;
pub(crate) mod will_rename_files;
pub(crate) mod work_done_progress_cancel;
pub(crate) mod workspace_symbol;
