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

/// A knowledge entry depends on the items its `references`, `extends` and `used_by` name
/// (the only thing its checks look up, N604), not on a name its prose mentions: finding
/// that meant reading every entry's text after each edit, which a language server that let
/// go of the texts read again from disk each time.
#[test]
fn a_knowledge_entry_depends_on_what_its_references_name() {
    let f = crate::common::Fixture::new(
        "//- project/.ai/tools/app/greet.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = null\nprint('hi')\n\
//- project/.ai/knowledge/by_id.md\n---\nid: by_id\ntitle: T\nentry_type: reference\nreferences: [tool:app/greet]\n---\nBody.\n\
//- project/.ai/knowledge/by_tail.md\n---\nid: by_tail\ntitle: T\nentry_type: reference\nused_by:\n  - greet\n---\nBody.\n\
//- project/.ai/knowledge/other_type.md\n---\nid: other_type\ntitle: T\nentry_type: reference\nextends: directive:app/greet\n---\nBody.\n\
//- project/.ai/knowledge/prose.md\n---\nid: prose\ntitle: T\nentry_type: reference\n---\nRun app/greet to say hello.\n\
//- project/.ai/knowledge/longer.md\n---\nid: longer\ntitle: T\nentry_type: reference\nreferences: [app/greet_all, reet]\n---\nBody.\n",
    );
    let ws = f.workspace(&[]);
    let ai = f.project().join(".ai");
    assert_eq!(
        rel(&ai, ws.dependents(&ai.join("tools/app/greet.py"))),
        ["knowledge/by_id.md", "knowledge/by_tail.md"]
    );
}
