//! Issue 13: real rye tools, run by `kiwi run` with rye's system space given as an extra
//! space (`KIWI_SPACES`), on a copy of the corpus (`../shared/corpus/rye-os`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn corpus() -> Option<PathBuf> {
    kiwi_kernel::test_corpus::find(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if t.is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

struct Rye {
    dir: tempfile::TempDir,
}

impl Rye {
    fn new() -> Option<Rye> {
        let corpus = corpus()?;
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&corpus.join("rye-os"), &dir.path().join("rye-os"));
        for d in ["home", "user"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        Some(Rye { dir })
    }
    fn e2e(&self) -> PathBuf {
        self.dir.path().join("rye-os/tests/e2e")
    }
    fn kiwi(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_kiwi"))
            .args(args)
            .arg("--project")
            .arg(self.e2e())
            .current_dir(self.e2e())
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("KIWI_USERSPACE_DIR", self.dir.path().join("user"))
            .env("PATH", SYSTEM_PATH)
            .env("KIWI_SPACES", self.dir.path().join("rye-os/rye/rye"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

#[test]
fn rye_file_system_ls_runs_from_the_system_space() {
    let Some(rye) = Rye::new() else { return };
    std::fs::write(rye.e2e().join("notes.txt"), "x").unwrap();
    let out = rye.kiwi(&["run", "rye/file-system/ls"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // What rye's ls prints: one JSON object listing the project root.
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect(&stdout);
    assert_eq!(v["success"], true, "{v}");
    let names: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, [".ai", "notes.txt"], "{v}");
}

/// rye's `bash.py` was edited after it was signed: rye refuses to run it (`verify_item`:
/// "Integrity failed"), and so does kiwi (R706); `kiwi env` still shows its chain, with the
/// reason on the link.
#[test]
fn rye_bash_is_refused_as_rye_refuses_it_and_env_names_the_space() {
    let Some(rye) = Rye::new() else { return };
    let out = rye.kiwi(&[
        "run",
        "rye/bash/bash",
        "--param",
        "command=echo hello from rye",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error[R706]") && stderr.contains("nothing was run"),
        "{stderr}"
    );

    let out = rye.kiwi(&["env", "rye/bash/bash"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("rye/bash/bash (rye space)"), "{stdout}");
    assert!(
        stdout.contains("R706: this tool changed after it was signed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("chain: rye/bash/bash -> rye/core/runtimes/python_script_runtime -> rye/core/primitives/subprocess"),
        "{stdout}"
    );
    // A broken chain of the corpus stays an error.
    let out = rye.kiwi(&["run", "--dry-run", "test/test_registry_tool"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("python_tool_runtime"));
}

/// Issue 29: `kiwi env --json` says, per link, how ryeos reads its executor (the canonical
/// ref's id, the alias table followed, the terminal executor's routine), as the text does.
#[test]
fn env_json_gives_ryeos_executor_notes() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ryeos-today");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(["env", "hello/greet", "--json", "--project"])
        .arg(&project)
        .current_dir(&project)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", SYSTEM_PATH)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let notes: Vec<String> = v["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["executor_note"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(notes[0].contains("ryeos canonical ref"), "{notes:?}");
    assert!(notes[1].contains("execution.aliases"), "{notes:?}");
    assert!(notes[2].contains("terminal executor"), "{notes:?}");
}
