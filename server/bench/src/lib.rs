//! What the benchmark shares with the tests: measuring one child process.

pub mod peak;
