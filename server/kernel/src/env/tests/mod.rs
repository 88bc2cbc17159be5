//! Tests of environment resolution, on real temporary directories.

mod build_tests;
mod check_tests;
mod expand_tests;
mod filter_tests;
pub mod lit;
mod resolve_tests;

use std::collections::BTreeMap;
use std::path::Path;

/// A variable map from pairs.
pub fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Write a file (creating its directories) with a Unix mode.
pub fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = mode;
}

/// A fake executable script.
pub fn exe(path: &Path) {
    write_file(path, "#!/bin/sh\necho fake\n", 0o755);
}
