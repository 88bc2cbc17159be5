//! Whether a test that needs a system program (bubblewrap, podman) runs here. One place for
//! every such test of every crate, as `test_corpus` is for the corpus. Not part of the
//! kernel's API: for tests only.
//!
//! `tests/run.sh` installs the programs with apt-get when it runs as root (CI). A newcomer's
//! unprivileged run without sudo cannot: there a missing program skips the test, with one
//! line on stderr. As root, or with `CI` or `KIWI_REQUIRE_SYSTEM` set, a missing program is a
//! broken set-up and fails the test: CI never passes by skipping.
#![doc(hidden)]

use std::path::Path;

/// Set: a missing system program fails the test, whoever runs it.
pub const REQUIRE: &str = "KIWI_REQUIRE_SYSTEM";

/// The folders searched besides `PATH`: many tests give kiwi this fixed `PATH`.
const SYSTEM_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// What a test does about a program it needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Run,
    /// Skipped, with the line to print.
    Skip(String),
    /// Failed, with the message.
    Fail(String),
}

/// The rule, apart from the machine: run when found; when missing, skip only on an
/// unprivileged run that is not required (not CI, not `KIWI_REQUIRE_SYSTEM`), else fail.
pub fn decide(bin: &str, package: &str, found: bool, root: bool, required: bool) -> Decision {
    if found {
        Decision::Run
    } else if root || required {
        Decision::Fail(format!(
            "`{bin}` is not installed: this test needs it (apt-get install -y {package}; tests/run.sh does as root). Skipping is allowed only on an unprivileged run outside CI"
        ))
    } else {
        Decision::Skip(format!(
            "skipped: `{bin}` is not installed and this run is unprivileged (apt-get install -y {package} as root, or run tests/run.sh as root)"
        ))
    }
}

/// A program that is installed but does not work for this user: skipped on an unprivileged
/// run that is not required, else failed, with what it said.
pub fn does_not_answer(bin: &str, why: &str, root: bool, required: bool) -> Decision {
    let hint = if bin == "podman" {
        " (podman without root needs `newuidmap`: apt-get install -y uidmap)"
    } else {
        ""
    };
    if root || required {
        Decision::Fail(format!(
            "`{bin}` is installed but does not answer: {why}{hint}"
        ))
    } else {
        Decision::Skip(format!(
            "skipped: `{bin}` is installed but does not answer for this unprivileged user: {why}{hint}"
        ))
    }
}

/// Whether an installed sandbox or container program works here, by kiwi's own probe of it
/// (once per test process).
fn answers(bin: &str) -> Result<(), String> {
    static PODMAN: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    static BWRAP: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let (cell, args): (_, &[&str]) = match bin {
        "podman" => (&PODMAN, &["info", "--format", "{{.Host.Arch}}"]),
        "bwrap" => (&BWRAP, &["--ro-bind", "/", "/", "--dev", "/dev", "true"]),
        _ => return Ok(()),
    };
    cell.get_or_init(|| {
        let program = find(bin).ok_or_else(|| format!("`{bin}` is not found"))?;
        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        crate::exec::environments::probes::run_short(
            &program,
            args,
            &env,
            std::time::Duration::from_secs(60),
        )
        .map(drop)
    })
    .clone()
}

/// Whether `bin` is on `PATH` or in the usual system folders.
pub fn installed(bin: &str) -> bool {
    find(bin).is_some()
}

/// Where `bin` is: the first of `PATH`, then the usual system folders, that holds it.
fn find(bin: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_DIRS.iter().map(Into::into))
        .map(|d| d.join(bin))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True: `bin` (Debian package `package`) is here, run the test. False: skip it (a line on
/// stderr says why). Panics where skipping is not allowed (root, `CI`, `KIWI_REQUIRE_SYSTEM`).
pub fn need(bin: &str, package: &str) -> bool {
    let required = std::env::var_os(REQUIRE).is_some() || std::env::var_os("CI").is_some();
    let decision = match decide(bin, package, installed(bin), is_root(), required) {
        // Installed is not enough: rootless podman without `newuidmap` (the uidmap package)
        // is installed and cannot run a container for this user.
        Decision::Run => match answers(bin) {
            Ok(()) => Decision::Run,
            Err(why) => does_not_answer(bin, &why, is_root(), required),
        },
        d => d,
    };
    match decision {
        Decision::Run => true,
        Decision::Skip(line) => {
            skipped(&line);
            false
        }
        Decision::Fail(msg) => panic!("{msg}"),
    }
}

/// True: this process runs as root, run the test. False: skip it, with a line saying `what`
/// root gives that an unprivileged run lacks (a documented limit of an unprivileged kiwi).
/// Panics where skipping is not allowed (`CI`, `KIWI_REQUIRE_SYSTEM`): CI runs as root.
pub fn need_root(what: &str) -> bool {
    let required = std::env::var_os(REQUIRE).is_some() || std::env::var_os("CI").is_some();
    if is_root() {
        true
    } else if required {
        panic!("this test needs root ({what}) and CI or {REQUIRE} is set: run it as root");
    } else {
        skipped(&format!(
            "skipped: this test needs root ({what}) and this run is unprivileged"
        ));
        false
    }
}

/// Node 24 (it runs TypeScript by stripping types), for the tests of TypeScript tools and
/// scripts: `$KIWI_TEST_NODE24` (tests/run.sh installs it under `target/codeserver/node24`
/// and sets it), else that folder of the checkout. Missing: `None` and a skip line on an
/// unprivileged run; a panic where skipping is not allowed (`CI`, `KIWI_REQUIRE_SYSTEM`).
pub fn node24() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("KIWI_TEST_NODE24")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(std::iter::once(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/codeserver/node24/node_modules/.bin/node"),
        ))
        .find(|p| p.is_file());
    if found.is_none() {
        let required = std::env::var_os(REQUIRE).is_some() || std::env::var_os("CI").is_some();
        if required {
            panic!("Node 24 is missing (KIWI_TEST_NODE24, target/codeserver/node24): tests/run.sh installs it; CI or {REQUIRE} is set, so the test fails rather than skips");
        }
        skipped("skipped: no Node 24 (tests/run.sh installs it under target/codeserver/node24 and sets KIWI_TEST_NODE24)");
    }
    found
}

/// The variable naming the file where a skipped test writes its line; `tests/run.sh` sets it
/// and lists the file's lines at the end of the run (cargo test hides a passing test's
/// stderr, so the line on stderr alone is seen only with `--nocapture`).
pub const SKIP_LOG: &str = "KIWI_SKIP_LOG";

/// A test skips: its line on stderr, and in `$KIWI_SKIP_LOG` (with the test's name) when set.
pub fn skipped(line: &str) {
    // One line each: the list at the end of the run is read line by line.
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        use std::io::Write;
        let test = std::thread::current()
            .name()
            .unwrap_or("a test")
            .to_string();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "cargo test {test}: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_skips_only_an_unprivileged_run_outside_ci() {
        assert_eq!(
            decide("bwrap", "bubblewrap", true, true, true),
            Decision::Run
        );
        assert_eq!(
            decide("bwrap", "bubblewrap", true, false, false),
            Decision::Run
        );
        assert!(matches!(
            decide("bwrap", "bubblewrap", false, false, false),
            Decision::Skip(s) if s.contains("bwrap") && s.contains("unprivileged")
        ));
        // As root (CI runs as root), or with CI / KIWI_REQUIRE_SYSTEM: never a skip.
        for (root, required) in [(true, false), (false, true), (true, true)] {
            assert!(matches!(
                decide("podman", "podman runc", false, root, required),
                Decision::Fail(s) if s.contains("apt-get install -y podman runc")
            ));
        }
    }

    /// Installed but not working for this user (rootless podman without `newuidmap`): a skip
    /// line with what it said on an unprivileged run, a failure as root or where required.
    #[test]
    fn a_program_that_does_not_answer_skips_only_an_unprivileged_run() {
        let why = "Error: exec: \"newuidmap\": executable file not found in $PATH";
        assert!(matches!(
            does_not_answer("podman", why, false, false),
            Decision::Skip(s) if s.contains("newuidmap") && s.contains("apt-get install -y uidmap")
        ));
        for (root, required) in [(true, false), (false, true)] {
            assert!(matches!(
                does_not_answer("podman", why, root, required),
                Decision::Fail(s) if s.contains("does not answer") && s.contains("newuidmap")
            ));
        }
    }

    #[test]
    fn a_program_on_the_system_path_is_found() {
        assert!(installed("sh"));
        assert!(!installed("kiwi-no-such-program-7f3a"));
    }
}
