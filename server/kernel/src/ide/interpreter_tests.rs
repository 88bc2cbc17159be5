//! The interpreter hover as a person reads it (issue 15): one ordered list of the candidates
//! tried, the one used marked once, the fallback as the last candidate, what the resolver type
//! looks for, and a pyenv/asdf shim shown with the interpreter it runs. Cursor-marker fixtures
//! over real files in a temporary directory.

use super::*;
use crate::context::Host;
use crate::workspace::parse_item;
use std::path::Path;

// The runtime of the cursor-marker hover tests, the cursor on its resolver type.
use super::tests::RUNTIME;

fn executable(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The hover at `$0` of `text`, for a project at `root/proj` with these variables.
fn hover_at(root: &Path, text: &str, vars: &[(&str, &str)]) -> (String, HoverInfo) {
    let off = text.find("$0").expect("a $0 marker");
    let text = text.replacen("$0", "", 1);
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join(".ai/tools/rt")).unwrap();
    let mut ws = Workspace::new(Some(proj.clone()), Host::for_tests(vars));
    let item = parse_item(
        ItemType::Tool,
        "rt/py".into(),
        Space::Project,
        proj.join(".ai/tools/rt/py.py"),
        text.as_bytes(),
    )
    .expect("an item");
    let item = Arc::new(item);
    ws.insert(item.clone());
    let h = hover(&ws, &item, off).expect("a hover");
    (text, h)
}

fn lines_with<'a>(md: &'a str, needle: &str) -> Vec<&'a str> {
    md.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn found_on_path_reads_as_one_ordered_list_with_the_fallback_last() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let bin = root.join("bin");
    executable(&bin.join("python3"));
    let home = root.join("home");
    let path = bin.display().to_string();
    let (_, h) = hover_at(
        &root,
        RUNTIME,
        &[("HOME", home.to_str().unwrap()), ("PATH", &path)],
    );
    let md = h.markdown;
    // What the resolver type looks for, from the registry's data (each location it probes).
    assert!(
        md.contains("`venv_python` looks for"),
        "no line on what venv_python looks for:\n{md}"
    );
    assert!(md.contains(".venv/bin/python"), "{md}");
    // Never "found" right above a candidate that was not found: the header names the value
    // and where it came from.
    assert!(!md.contains("_: found"), "{md}");
    assert!(
        md.contains(&format!("`{}`", bin.join("python3").display())),
        "{md}"
    );
    // The candidates in order, numbered; the one used marked once; the fallback last, not needed.
    let project = lines_with(&md, "1. `project`");
    assert_eq!(project.len(), 1, "{md}");
    assert!(project[0].contains("not found"), "{md}");
    let system = lines_with(&md, "2. `system`");
    assert_eq!(system.len(), 1, "{md}");
    assert!(system[0].contains("**used**"), "{md}");
    assert_eq!(md.matches("**used**").count(), 1, "{md}");
    let fallback = lines_with(&md, "3. `fallback`");
    assert_eq!(
        fallback.len(),
        1,
        "the fallback is the last candidate:\n{md}"
    );
    assert!(fallback[0].contains("not needed"), "{md}");
    insta::assert_snapshot!(md.replace(&root.display().to_string(), "[TMP]"));
}

#[test]
fn the_fallback_used_is_the_last_candidate_and_marked() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let (_, h) = hover_at(
        &root,
        RUNTIME,
        &[("HOME", "/nonexistent/home"), ("PATH", "/nonexistent/bin")],
    );
    let md = h.markdown;
    let last = md
        .lines()
        .rfind(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or_default();
    assert!(
        last.contains("`fallback`") && last.contains("**used**"),
        "{md}"
    );
    assert_eq!(md.matches("**used**").count(), 1, "{md}");
    insta::assert_snapshot!(md.replace(&root.display().to_string(), "[TMP]"));
}

/// A pyenv shim on PATH: shown with the interpreter it runs, computed as pyenv does it
/// (`PYENV_VERSION`, else `.python-version` up the tree, else the global `version` file),
/// without running the shim.
#[test]
fn a_pyenv_shim_is_shown_with_the_interpreter_it_resolves_to() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let home = root.join("home");
    let pyenv = home.join(".pyenv");
    executable(&pyenv.join("shims/python3"));
    executable(&pyenv.join("versions/3.12.1/bin/python3"));
    executable(&pyenv.join("versions/3.11.4/bin/python3"));
    std::fs::create_dir_all(&pyenv).unwrap();
    std::fs::write(pyenv.join("version"), "3.11.4\n").unwrap();
    let shims = pyenv.join("shims").display().to_string();
    let vars = [("HOME", home.to_str().unwrap()), ("PATH", shims.as_str())];

    // The global version file.
    let (_, h) = hover_at(&root, RUNTIME, &vars);
    let used = lines_with(&h.markdown, "**used**");
    assert_eq!(used.len(), 1, "{}", h.markdown);
    assert!(used[0].contains("pyenv shim"), "{}", h.markdown);
    assert!(
        h.markdown.contains(&format!(
            "{}",
            pyenv.join("versions/3.11.4/bin/python3").display()
        )),
        "{}",
        h.markdown
    );
    insta::assert_snapshot!(h.markdown.replace(&root.display().to_string(), "[TMP]"));

    // A .python-version above the project wins over the global one.
    std::fs::write(root.join(".python-version"), "3.12.1\n").unwrap();
    let (_, h) = hover_at(&root, RUNTIME, &vars);
    assert!(
        h.markdown.contains(&format!(
            "{}",
            pyenv.join("versions/3.12.1/bin/python3").display()
        )),
        "{}",
        h.markdown
    );
    assert!(h.markdown.contains(".python-version"), "{}", h.markdown);

    // PYENV_VERSION wins over both; a version that is not installed is said so.
    let mut with_env = vars.to_vec();
    with_env.push(("PYENV_VERSION", "3.9.0"));
    let (_, h) = hover_at(&root, RUNTIME, &with_env);
    assert!(h.markdown.contains("PYENV_VERSION"), "{}", h.markdown);
    assert!(h.markdown.contains("3.9.0"), "{}", h.markdown);
    assert!(h.markdown.contains("not installed"), "{}", h.markdown);
}
