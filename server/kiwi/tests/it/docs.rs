//! The book's pages that are generated from the binary: `docs/src/reference/cli.md` is every
//! command's and subcommand's `--help`, as the built `kiwi` prints it. The test fails when the
//! page differs; `KIWI_UPDATE_DOCS=1 cargo test -p kiwi --test it docs::cli_reference_page`
//! writes it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `kiwi ARGS... --help`, with no terminal and no `COLUMNS`, so the text is the same on every
/// machine.
fn help(args: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(args)
        .arg("--help")
        .env_remove("COLUMNS")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "kiwi {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists under "Commands:" (clap's own `help` left out).
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        // Entries are indented by two; a description that wraps is indented further.
        let Some(rest) = line.strip_prefix("  ") else {
            break;
        };
        if rest.starts_with(' ') {
            continue;
        }
        let name = rest.split_whitespace().next().unwrap_or_default();
        if !name.is_empty() && name != "help" {
            out.push(name.to_string());
        }
    }
    out
}

fn render(args: &mut Vec<String>, page: &mut String) {
    let text = help(args);
    let title = std::iter::once("kiwi")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let level = "#".repeat((args.len() + 2).min(4));
    page.push_str(&format!(
        "{level} `{title}`\n\n```text\n{}\n```\n\n",
        text.trim_end()
    ));
    for sub in subcommands(&text) {
        args.push(sub);
        render(args, page);
        args.pop();
    }
}

#[test]
fn cli_reference_page() {
    let mut page = String::from(
        "# Commands and flags\n\n\
         <!-- Generated from the kiwi binary's --help; do not edit. Regenerate with\n     \
         KIWI_UPDATE_DOCS=1 cargo test -p kiwi --test it docs::cli_reference_page -->\n\n\
         Every command and subcommand of `kiwi`, with its options, as `kiwi COMMAND --help` prints \
         it. `kiwi completions bash|zsh|fish` and `kiwi man` are generated from the same \
         definition.\n\n",
    );
    render(&mut Vec::new(), &mut page);
    let path = repo().join("docs/src/reference/cli.md");
    if std::env::var_os("KIWI_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &page).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == page,
        "docs/src/reference/cli.md differs from the binary's --help; regenerate it with \
         KIWI_UPDATE_DOCS=1 cargo test -p kiwi --test it docs::cli_reference_page"
    );
}

#[test]
fn subcommands_are_read_from_a_help_text() {
    let text = "Usage: kiwi <COMMAND>\n\nCommands:\n  lsp    Run it\n         wrapped\n  keys   Keys\n  help   Print this\n\nOptions:\n  -h, --help\n";
    assert_eq!(subcommands(text), ["lsp", "keys"]);
}

/// Every `KIWI_*`, `AI_*` or `RYE_*` name written as a string in the servers' sources (tests
/// left out) is on the environment variables page.
#[test]
fn environment_page_names_every_variable() {
    /// Read only by a test of their own crate.
    const TEST_ONLY: &[&str] = &["KIWI_NEVER_SET_THIS", "KIWI_TEST_SCRUB_CHILD"];
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" && name != "snapshots" {
                    sources(&path, out);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for krate in ["kernel", "kiwi", "lsp", "mcp", "bench"] {
        sources(&repo().join("server").join(krate).join("src"), &mut files);
    }
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for piece in text.split('"').skip(1).step_by(2) {
            let named = ["KIWI_", "AI_", "RYE_"]
                .iter()
                .any(|p| piece.starts_with(p));
            let plain = piece.len() > 4
                && piece
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if named && plain && !TEST_ONLY.contains(&piece) {
                names.insert(piece.to_string());
            }
        }
    }
    assert!(names.contains("KIWI_USERSPACE_DIR"), "{names:?}");
    let page = std::fs::read_to_string(repo().join("docs/src/reference/environment.md")).unwrap();
    let missing: Vec<_> = names
        .iter()
        .filter(|n| !page.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/src/reference/environment.md does not name {missing:?}"
    );
}

/// Every key the code reads from a `config.yaml` (`.get("KEY")` in the files that read it) is
/// named in the first column of the configuration page's table (`execution.image`, ...).
#[test]
fn config_page_names_every_key() {
    let page = std::fs::read_to_string(repo().join("docs/src/reference/config.md")).unwrap();
    let words: std::collections::BTreeSet<&str> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|row| row.split(" |").next())
        .flat_map(|cell| cell.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .collect();
    let mut missing = Vec::new();
    for file in [
        "server/kernel/src/config.rs",
        "server/kernel/src/env/filter.rs",
        "server/kernel/src/registry/config.rs",
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let keys = text
            .split(".get(\"")
            .skip(1)
            .filter_map(|rest| rest.split_once("\")").map(|(key, _)| key));
        for key in keys.chain(["allow", "block"]) {
            if !words.contains(key) {
                missing.push(format!("{key} ({file})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/reference/config.md does not name {missing:?}"
    );
}
