//! The integration tests of kiwi-lsp, as one test binary (one link instead of one per file).

mod common;
mod e2e;
mod early;
mod editor;
mod fresh;
mod incremental;
mod init;
mod neighbours;
mod ryeos;
mod watch;
