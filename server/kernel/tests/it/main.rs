//! The integration tests of kiwi-kernel, as one test binary (one link instead of one per file).

mod builtin_items;
mod codes;
mod common;
mod corpus;
mod dependents;
mod exec_check;
mod exec_environments;
mod exec_http;
mod exec_process;
mod exec_refuse;
mod exec_run;
mod formatting;
mod fuzz_regressions;
mod grammars;
mod init;
mod lookup_errors;
mod quick_fixes;
mod ryeread;
mod search_relevance;
mod service_inputs;
mod service_secrets;
mod service_sessions;
mod service_writes;
mod spaces;
mod watched;
