//! Which items a change to one item can affect (the language server re-checks them).

use kiwi_kernel::context::Host;
use kiwi_kernel::workspace::Workspace;
use std::path::{Path, PathBuf};

fn fixture() -> (tempfile::TempDir, Workspace, PathBuf) {
    let user = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/lsp")
        .canonicalize()
        .expect("fixture");
    let host = Host::for_tests(&[(
        "KIWI_USERSPACE_DIR",
        user.path().to_str().expect("utf-8 temp path"),
    )]);
    let ws = Workspace::load(Some(root.clone()), host);
    (user, ws, root.join(".ai"))
}

fn rel(ai: &Path, v: Vec<PathBuf>) -> Vec<String> {
    v.iter()
        .map(|p| p.strip_prefix(ai).expect("in .ai").display().to_string())
        .collect()
}

#[test]
fn a_runtime_is_depended_on_by_the_tools_it_runs() {
    let (_u, ws, ai) = fixture();
    assert_eq!(
        rel(&ai, ws.dependents(&ai.join("tools/rt/py_rt.py"))),
        ["tools/text/echo.py", "tools/text/slow.py"]
    );
}

#[test]
fn a_tool_is_depended_on_by_the_directives_that_call_it() {
    let (_u, ws, ai) = fixture();
    assert_eq!(
        rel(&ai, ws.dependents(&ai.join("tools/text/echo.py"))),
        ["directives/greet.md"]
    );
    // Not an item of the workspace: nothing.
    assert!(ws.dependents(&ai.join("tools/text/none.py")).is_empty());
}
