//! Issue 13: `kiwi check`, `kiwi env` and `kiwi run --dry-run` on the TypeScript and
//! JavaScript tools of `fixtures/rye-node` (metadata in the file, as newer rye keeps them).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rye-node")
}

fn kiwi(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(args)
        .env_clear()
        .env("HOME", home.join("home"))
        .env("KIWI_USERSPACE_DIR", home.join("user"))
        .env("PATH", SYSTEM_PATH)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn dry_run_of_a_typescript_tool_resolves_its_chain() {
    let home = tempfile::tempdir().unwrap();
    let project = fixture().display().to_string();
    let out = kiwi(
        home.path(),
        &[
            "run",
            "--dry-run",
            "--json",
            "text/case",
            "--param",
            "operation=snake",
            "--param",
            "text=Hello World",
            "--project",
            &project,
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
    let text = v.to_string();
    for id in [
        "\"text/case\"",
        "\"rye/core/runtimes/node/node\"",
        "\"rye/core/primitives/subprocess\"",
    ] {
        assert!(text.contains(id), "{id} not in {v:#}");
    }
    assert!(text.contains("case.ts"), "{v:#}");

    // A parameter outside the enum read from `[...OPERATIONS]` is refused before anything runs.
    let out = kiwi(
        home.path(),
        &[
            "run",
            "--dry-run",
            "text/case",
            "--param",
            "operation=kebab",
            "--param",
            "text=x",
            "--project",
            &project,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kebab"), "{stderr}");
}

#[test]
fn check_and_env_see_javascript_tools() {
    let home = tempfile::tempdir().unwrap();
    let project = fixture().display().to_string();
    let out = kiwi(home.path(), &["check", "--format", "json", &project]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
    let severities: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["severity"].as_str())
        .collect();
    assert!(
        severities.iter().all(|s| *s == "info" || *s == "hint"),
        "{v:#}"
    );
    let out = kiwi(home.path(), &["env", "text/count", "--project", &project]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "chain: text/count -> rye/core/runtimes/node/node -> rye/core/primitives/subprocess"
        ),
        "{stdout}"
    );
}
