//! Issue 14, "lookup → error in one place": a tool reference that names no single tool gets
//! the same message, with the same did-you-mean suggestions, from every face: `kiwi env`,
//! `kiwi run --json`, the LSP's `kiwi.runTool` and MCP `execute tool run`. The wording is the
//! kernel's ([`Workspace::resolve`]).

use crate::common;

use common::{copy_dir, repo, Proc};
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::workspace::Workspace;
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::Command;

/// (reference, what the message must say).
const CASES: &[(&str, &str)] = &[
    // A typo: the closest id is suggested.
    ("text/ecko", "did you mean `text/echo`?"),
    // Nothing close.
    ("zzzz/qqqqqqqq", "in any space"),
    // A bare name two tools end with.
    ("echo", "is ambiguous"),
    // Not an id at all.
    ("../x", "is not a valid tool id"),
];

fn cli(root: &Path, user: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(args)
        .current_dir(root)
        .env("KIWI_USERSPACE_DIR", user)
        .env_remove("KIWI_LOG")
        .output()
        .unwrap()
}

#[test]
fn a_failed_tool_lookup_reads_the_same_in_every_face() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let user = dir.path().join("user");
    copy_dir(&repo().join("fixtures/lsp"), &root);
    // A second tool named `echo`, so that the bare name is ambiguous.
    std::fs::copy(
        root.join(".ai/tools/text/echo.py"),
        root.join(".ai/tools/other/echo.py"),
    )
    .or_else(|_| {
        std::fs::create_dir_all(root.join(".ai/tools/other"))?;
        std::fs::copy(
            root.join(".ai/tools/text/echo.py"),
            root.join(".ai/tools/other/echo.py"),
        )
    })
    .unwrap();
    let root = root.canonicalize().unwrap();
    let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
    let ws = Workspace::load(Some(root.clone()), host);

    let mut lsp = common::lsp(&root, &user);
    let mut mcp = common::mcp(&root, &user);
    for (reference, says) in CASES {
        // The kernel's one wording.
        let e = ws
            .resolve(ItemType::Tool, reference, None)
            .expect_err(reference);
        let want = e.message.clone();
        assert!(want.contains(says), "{reference}: {want}");

        let out = cli(&root, &user, &["env", reference]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.trim(),
            format!("kiwi: {want}"),
            "kiwi env {reference}"
        );

        let out = cli(&root, &user, &["run", reference, "--json"]);
        let v: Json = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("kiwi run --json {reference}: {out:?}"));
        assert_eq!(
            v["error"]["message"],
            json!(want),
            "kiwi run {reference}: {v}"
        );
        // (an empty list is left out of the CLI's JSON)
        let suggestions = v["error"].get("suggestions").cloned().unwrap_or(json!([]));
        assert_eq!(suggestions, json!(e.suggestions), "{v}");

        let r = lsp.request(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": reference}]}),
        );
        assert_eq!(
            r["error"]["message"],
            json!(want),
            "kiwi.runTool {reference}: {r}"
        );

        let r = mcp.call(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": reference}),
        );
        let sc = Proc::structured(&r);
        assert_eq!(r["isError"], json!(true), "{r}");
        assert_eq!(
            sc["message"],
            json!(want),
            "MCP execute tool run {reference}: {r}"
        );
        assert_eq!(sc["suggestions"], json!(e.suggestions), "{r}");
    }
}
