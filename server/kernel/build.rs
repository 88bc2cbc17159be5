//! Compiles the builtin space (`builtin/`) into the binary: generates a table of
//! `(relative path, contents)` with `include_str!` for every file under `builtin/`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    // A folder that cannot be read stops the build: a binary without its builtin space runs
    // nothing (no runtime, no primitive).
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read the builtin space's {}: {e}", dir.display()));
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            continue;
        }
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    // The package's folder as cargo gives it to this run (not as it was when this script was
    // compiled: a build script compiled in another checkout sharing the target folder, since
    // removed, read no folder and compiled a binary with an empty builtin space).
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
        .join("builtin");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    // (The primitive every local run ends in.)
    assert!(
        files.contains(&root.join("tools/subprocess.yaml")),
        "the builtin space {} holds no tools/subprocess.yaml ({} files)",
        root.display(),
        files.len()
    );
    let mut code = String::from("/// Every file of the builtin space: (path relative to the space root, contents).\npub static FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f
            .strip_prefix(&root)
            .expect("below root")
            .to_string_lossy()
            .replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_str!({:?})),",
            f.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("builtin_files.rs");
    std::fs::write(out, code).expect("write builtin_files.rs");
}
