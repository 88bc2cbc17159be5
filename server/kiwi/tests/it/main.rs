//! The integration tests of the kiwi binary, as one test binary (one link instead of one per file).

mod cli;
mod common;
mod docs;
mod hostile_lsp;
mod hostile_mcp;
mod hostile_perms;
mod hostile_procs;
mod hostile_project;
mod hostile_registry;
mod hostile_sandbox;
mod hostile_terminal;
mod javascript;
mod lookup_errors;
mod mcp_cli;
mod mcp_load;
mod registry;
mod registry_pins;
mod run;
mod rye;
mod secrets;
mod skill_registry;
mod skill_scripts;
mod ssh;
mod trust;
