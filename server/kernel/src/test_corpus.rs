//! Where the tests find the shared corpus (`shared/corpus`: the rye-os `.ai/` trees). One
//! place for every corpus-reading test of every crate. Not part of the kernel's API: for
//! tests only.
#![doc(hidden)]

use std::path::{Path, PathBuf};

/// Set (by `.ci/run`, or any CI that sets `CI`): a missing corpus fails the test instead of
/// skipping it.
pub const REQUIRE: &str = "KIWI_REQUIRE_CORPUS";

/// The corpus: `KIWI_CORPUS`, else `shared/corpus` in the nearest ancestor of
/// `manifest_dir` (a crate's `CARGO_MANIFEST_DIR`; `/work/main/server/kernel` and a
/// worktree's `/work/wt/NAME/server/kernel` both find `/work/shared/corpus`).
///
/// Missing: `None` (the caller skips, and says so on stderr) on a developer's machine; a
/// panic when `KIWI_REQUIRE_CORPUS` or `CI` is set, where a missing corpus is a broken
/// set-up, never a reason to pass.
pub fn find(manifest_dir: &str) -> Option<PathBuf> {
    let found = match std::env::var_os("KIWI_CORPUS") {
        Some(dir) => Some(PathBuf::from(dir)).filter(|p| p.is_dir()),
        None => Path::new(manifest_dir)
            .ancestors()
            .map(|a| a.join("shared/corpus"))
            .find(|p| p.is_dir()),
    };
    if let Some(p) = found {
        return Some(p.canonicalize().unwrap_or(p));
    }
    if std::env::var_os(REQUIRE).is_some() || std::env::var_os("CI").is_some() {
        panic!(
            "shared/corpus not found from {manifest_dir} (nor KIWI_CORPUS): {REQUIRE} or CI is set, so the corpus tests must run"
        );
    }
    eprintln!("shared/corpus not found from {manifest_dir}; the corpus test is skipped");
    None
}

/// Every file below `dir` (links not followed), sorted: the one walk of the corpus tests.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}
