//! The kiwi kernel: finds, parses, checks and resolves the items of a Kiwi workspace.
//! It knows nothing of LSP or MCP: it speaks in items, byte ranges, a line index,
//! diagnostics with codes and resolution trails.

pub mod chain;
pub mod check;
pub mod config;
pub(crate) mod config_schema;
pub mod context;
pub mod copilot;
pub mod diag;
pub mod directive;
pub mod doctor;
pub mod document;
pub mod env;
pub mod exec;
pub mod fs;
pub mod fuzzing;
pub mod glob;
pub mod ide;
pub mod ids;
pub mod init;
pub mod json;
pub mod knowledge;
pub mod lock;
pub mod lookup;
pub mod redact;
pub mod registry;
pub mod ryeos;
pub mod search;
pub mod service;
pub mod skill;
pub mod system;
pub mod template;
pub mod test_corpus;
pub mod test_system;
pub mod text;
pub mod tool;
pub mod trust;
pub mod value;
pub mod watch;
pub mod workspace;
pub mod workspace_set;
pub mod yaml;
