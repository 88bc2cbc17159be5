//! `kiwi --version` names the commit it was built from (`git describe`-like: the short hash,
//! with `-dirty` when the work tree had changes), or says it is unknown (a source tarball,
//! no git on the machine).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).map(|hash| {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
        if dirty {
            format!("{hash}-dirty")
        } else {
            hash
        }
    });
    println!(
        "cargo:rustc-env=KIWI_COMMIT={}",
        commit.as_deref().unwrap_or("unknown commit")
    );
    // Built again when HEAD moves (a commit, a checkout) or the index changes (dirty or not).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={}", dir.join(f).display());
        }
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(r).display());
        }
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            let common = PathBuf::from(common);
            let common = if common.is_absolute() {
                common
            } else {
                std::env::current_dir().unwrap_or_default().join(common)
            };
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                println!("cargo:rerun-if-changed={}", common.join(r).display());
            }
            println!(
                "cargo:rerun-if-changed={}",
                common.join("packed-refs").display()
            );
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
