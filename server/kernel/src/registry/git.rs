//! The user's own `git`, started without a shell: their credentials, SSH configuration,
//! proxies and URL rewrites work as they do for any clone. Never a prompt
//! (`GIT_TERMINAL_PROMPT=0`, stdin closed): a registry that needs a password the credential
//! helper does not have fails with git's own message.
//!
//! Every git command is bounded in time ([`timeout`]) and held like a tool's run
//! ([`crate::exec::process::run_blocking`]): a registry that never answers ends in an error,
//! and no git (nor its `git-remote-http`, `ssh`) outlives kiwi.

use super::{ErrorKind, RegistryError, Result};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// How long one git command may take: `KIWI_GIT_TIMEOUT` (seconds) when set to a positive
/// number, else 300 s.
pub fn timeout() -> Duration {
    std::env::var("KIWI_GIT_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(300))
}

/// The most output kept of one git command (a tree listing, a blob: both are capped far
/// below this by the registry's own caps).
const MAX_OUTPUT: u64 = 256 << 20;

fn command(dir: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    if let Some(d) = dir {
        c.arg("-C").arg(d);
    }
    // A registry's clone never checks out symbolic links (they are refused before checkout
    // too) and never runs a hook of the registry's (hooks are not cloned; this is the belt).
    c.args([
        "-c",
        "core.symlinks=false",
        "-c",
        "core.hooksPath=/dev/null",
    ])
    .env("GIT_TERMINAL_PROMPT", "0")
    .env("LC_ALL", "C");
    c
}

/// Run git; the raw output, whatever its status.
pub fn output<S: AsRef<OsStr>>(dir: Option<&Path>, args: &[S]) -> Result<Output> {
    let mut cmd = command(dir);
    cmd.args(args);
    let limit = timeout();
    let out = crate::exec::process::run_blocking(cmd, limit, MAX_OUTPUT).map_err(|e| {
        RegistryError::new(
            ErrorKind::Git,
            format!("cannot run `git` ({e}); registries need git installed and on PATH"),
        )
    })?;
    let Some(status) = out.status else {
        let what: Vec<String> = args
            .iter()
            .take(2)
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        return Err(RegistryError::new(
            ErrorKind::Git,
            format!(
                "git {} did not finish within {} s (the registry does not answer?); it was stopped (KIWI_GIT_TIMEOUT sets the limit)",
                what.join(" "),
                limit.as_secs()
            ),
        ));
    };
    Ok(Output {
        status,
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

/// Run git; its stdout (trimmed) when it succeeds, else an error with its stderr.
pub fn run<S: AsRef<OsStr>>(dir: Option<&Path>, args: &[S]) -> Result<String> {
    let out = output(dir, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(failure(args, &out))
    }
}

pub fn failure<S: AsRef<OsStr>>(args: &[S], out: &Output) -> RegistryError {
    let what: Vec<String> = args
        .iter()
        .take(2)
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let err = String::from_utf8_lossy(&out.stderr);
    let err = err.trim();
    RegistryError::new(
        ErrorKind::Git,
        format!(
            "git {} failed{}",
            what.join(" "),
            if err.is_empty() {
                String::new()
            } else {
                format!(": {err}")
            }
        ),
    )
}

/// Clone without checking anything out (the tree is checked first).
pub fn clone_no_checkout(url: &str, dest: &Path) -> Result<()> {
    let dest = dest.as_os_str();
    run(
        None,
        &[
            OsStr::new("clone"),
            OsStr::new("--quiet"),
            OsStr::new("--no-checkout"),
            OsStr::new("--"),
            OsStr::new(url),
            dest,
        ],
    )
    .map(|_| ())
}

/// The branch the clone follows (`main`).
pub fn branch(dir: &Path) -> Result<String> {
    run(Some(dir), &["symbolic-ref", "--short", "HEAD"])
}

pub fn rev_parse(dir: &Path, rev: &str) -> Result<String> {
    run(
        Some(dir),
        &["rev-parse", "--verify", "--quiet", "--end-of-options", rev],
    )
    .map_err(|_| {
        RegistryError::new(
            ErrorKind::Git,
            format!("no commit `{rev}` in {}", dir.display()),
        )
    })
}

/// Whether `old` is an ancestor of (or equal to) `new`.
pub fn is_ancestor(dir: &Path, old: &str, new: &str) -> Result<bool> {
    let out = output(Some(dir), &["merge-base", "--is-ancestor", old, new])?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(failure(&["merge-base", "--is-ancestor"], &out)),
    }
}

/// Fetch the clone's remote branches.
pub fn fetch(dir: &Path) -> Result<()> {
    run(Some(dir), &["fetch", "--quiet", "--prune", "origin"]).map(|_| ())
}

/// Make the working tree and the branch exactly `commit`.
pub fn reset_hard(dir: &Path, commit: &str) -> Result<()> {
    run(Some(dir), &["reset", "--quiet", "--hard", commit, "--"]).map(|_| ())
}

/// One entry of a commit's tree.
#[derive(Debug, Clone)]
pub struct TreeEntry {
    /// `100644`, `100755`, `120000` (a symbolic link), `160000` (a submodule).
    pub mode: String,
    pub size: Option<u64>,
    pub path: String,
}

/// Every file of a commit (recursively), with its mode and size.
pub fn ls_tree(dir: &Path, commit: &str) -> Result<Vec<TreeEntry>> {
    let out = output(
        Some(dir),
        &["ls-tree", "-r", "-l", "-z", "--full-tree", commit],
    )?;
    if !out.status.success() {
        return Err(failure(&["ls-tree", commit], &out));
    }
    let mut entries = Vec::new();
    for rec in out.stdout.split(|b| *b == 0) {
        if rec.is_empty() {
            continue;
        }
        let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let head = String::from_utf8_lossy(&rec[..tab]);
        let path = String::from_utf8_lossy(&rec[tab + 1..]).into_owned();
        let mut parts = head.split_whitespace();
        let mode = parts.next().unwrap_or("").to_string();
        let _kind = parts.next();
        let _object = parts.next();
        let size = parts.next().and_then(|s| s.parse().ok());
        entries.push(TreeEntry { mode, size, path });
    }
    Ok(entries)
}

/// A file of a commit, or `None` when the commit has no such file.
pub fn show_file(dir: &Path, commit: &str, path: &str) -> Result<Option<Vec<u8>>> {
    let spec = format!("{commit}:{path}");
    let out = output(Some(dir), &["cat-file", "blob", &spec])?;
    Ok(out.status.success().then_some(out.stdout))
}

/// The files that differ between two commits under a folder.
pub fn changed_files(dir: &Path, old: &str, new: &str, under: &str) -> Result<Vec<String>> {
    let out = output(
        Some(dir),
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            old,
            new,
            "--",
            under,
        ],
    )?;
    if !out.status.success() {
        return Err(failure(&["diff", "--name-only"], &out));
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect())
}

/// Commit everything staged, as the user when git knows who they are, else as `kiwi`.
pub fn commit(dir: &Path, message: &str) -> Result<()> {
    let known = output(Some(dir), &["config", "user.email"])
        .map(|o| o.status.success())
        .unwrap_or(false);
    let mut args: Vec<&str> = Vec::new();
    if !known {
        args.extend(["-c", "user.name=kiwi", "-c", "user.email=kiwi@localhost"]);
    }
    args.extend([
        "commit",
        "--quiet",
        "--no-verify",
        "--no-gpg-sign",
        "-m",
        message,
    ]);
    run(Some(dir), &args).map(|_| ())
}

/// How a push ended.
pub enum Pushed {
    Ok,
    /// The remote moved on meanwhile (someone else pushed): fetch, re-apply, retry.
    Rejected,
}

pub fn push(dir: &Path, branch: &str) -> Result<Pushed> {
    let refspec = format!("HEAD:refs/heads/{branch}");
    let args = ["push", "--quiet", "--porcelain", "origin", refspec.as_str()];
    let out = output(Some(dir), &args)?;
    if out.status.success() {
        return Ok(Pushed::Ok);
    }
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if [
        "[rejected]",
        "fetch first",
        "non-fast-forward",
        "stale info",
        "failed to update ref",
        "cannot lock ref",
    ]
    .iter()
    .any(|m| all.contains(m))
    {
        return Ok(Pushed::Rejected);
    }
    Err(failure(&args, &out))
}
