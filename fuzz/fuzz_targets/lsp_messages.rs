#![no_main]
//! See `kiwi_fuzz::lsp`: arbitrary bytes as the language server's stdin.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kiwi_fuzz::lsp(data));
