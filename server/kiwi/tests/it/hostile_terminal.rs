//! Issue 24, item 14: control characters from files kiwi did not write (`\r`, `ESC[2K`, an
//! OSC 52 clipboard write, a bidi override) reach no terminal through what kiwi prints: a
//! tool's `__tool_description__` in `kiwi search` (the registries' descriptions come from
//! the same field) and an item's text quoted by a `kiwi check` diagnostic. Positive
//! control: the text around them is shown, and `--json` output is still JSON with the same
//! value.

use crate::common::kiwi_command;
use std::path::Path;

const NASTY: &str = "\r\u{1b}[2K[project] all good\u{1b}]52;c;aGFja2Vk\u{7}\u{202e}";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn clean(what: &str, text: &str) {
    for bad in ['\r', '\u{1b}', '\u{7}', '\u{202e}', '\u{9b}'] {
        assert!(!text.contains(bad), "{what} printed {bad:?}: {text:?}");
    }
}

#[test]
fn control_characters_from_files_reach_no_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let user = dir.path().join("user");
    std::fs::create_dir_all(&user).unwrap();
    write(
        &root,
        ".ai/tools/t/sneaky.py",
        &format!(
            "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__category__ = \"t\"\n__tool_description__ = \"Sneaky words{}\"\n",
            NASTY
                .replace('\r', "\\r")
                .replace('\u{1b}', "\\x1b")
                .replace('\u{7}', "\\x07")
                .replace('\u{202e}', "\\u202e")
        ),
    );
    write(
        &root,
        ".ai/knowledge/k/odd.md",
        &format!("---\nid: odd\ntitle: Odd words\nentry_type: \"x{NASTY}\"\n---\n\nBody\n"),
    );
    let run = |args: &[&str]| {
        let o = kiwi_command(args, &root, &user)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (out, err) = run(&["search", "sneaky words", "--type", "tool"]);
    clean("search", &out);
    clean("search stderr", &err);
    assert!(out.contains("[project] all good"), "{out}\n{err}");
    let (out, err) = run(&["search", "sneaky words", "--type", "tool", "--json"]);
    clean("search --json", &out);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert!(
        v.to_string().contains("\\u001b[2K[project]") || out.contains("[project] all good"),
        "{out}"
    );
    let (out, err) = run(&["check"]);
    clean("check", &out);
    clean("check stderr", &err);
    assert!(out.contains("odd.md"), "{out}\n{err}");
    let (out, _) = run(&["check", "--format", "github"]);
    clean("check --format github", &out);
}
