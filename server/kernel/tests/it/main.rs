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
mod fuzz_regressions;
mod grammars;
mod imports;
mod init;
mod quick_fixes;
mod rule_codes;
mod ryeread;
mod search_relevance;
mod spaces;
