#![no_main]
//! See `kiwi_kernel::fuzzing::javascript_tool`: parse arbitrary bytes, check every range.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kiwi_kernel::fuzzing::javascript_tool(data));
