//! Issue 29: a ryeos directive (YAML frontmatter) and a ryeos Python tool (`# ryeos-tool:`
//! header) through the language server: no diagnostics, hover on a frontmatter key and on a
//! capability string, completion of frontmatter keys, definition of a `knowledge:` ref, and
//! the tool's hover showing its chain through ryeos's terminal executor.

use crate::common;

use common::{pos, uri, Client};
use serde_json::{json, Value};
use std::path::Path;

fn ryeos_project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("proj");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ryeos-today"),
        &root,
    );
    let root = root.canonicalize().expect("canonical");
    (dir, root)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).expect("copy");
        }
    }
}

fn labels(v: &Value) -> Vec<String> {
    let items = v.get("items").unwrap_or(v);
    items
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["label"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ryeos_directive_and_tool_in_the_editor() {
    let (_d, root) = ryeos_project();
    let mut c = Client::start(&root, false).await;
    c.indexed().await;
    let d = root.join(".ai/directives/hello/greet_user.md");
    c.open(&d).await;
    let diags = c.diagnostics(&d).await;
    assert_eq!(diags, json!([]), "{diags}");
    let text = std::fs::read_to_string(&d).unwrap();
    let doc = json!({"uri": uri(&d)});

    let h = c
        .call(
            "textDocument/hover",
            json!({"textDocument": doc, "position": pos(&text, "requires:", 2, false)}),
        )
        .await;
    let md = h["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(md.contains("capabilities.declared"), "{h}");

    let h = c
        .call(
            "textDocument/hover",
            json!({"textDocument": doc, "position": pos(&text, "ryeos.execute.tool.hello/greet", 3, false)}),
        )
        .await;
    let md = h["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(md.contains("run tools `hello/greet`"), "{h}");

    let def = c
        .call(
            "textDocument/definition",
            json!({"textDocument": doc, "position": pos(&text, "hello/style", 2, false)}),
        )
        .await;
    assert!(
        def.to_string().contains("knowledge/hello/style.md"),
        "{def}"
    );

    // A new key line in the frontmatter: the keys not written yet.
    let edited = text.replacen("model:", "ho\nmodel:", 1);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&d), "version": 2}, "contentChanges": [{"text": edited}]}),
    )
    .await;
    let comp = c
        .call(
            "textDocument/completion",
            json!({"textDocument": doc, "position": pos(&edited, "ho\nmodel:", 2, false)}),
        )
        .await;
    let got = labels(&comp);
    assert!(got.contains(&"hooks".to_string()), "{comp}");
    assert!(got.contains(&"extends".to_string()), "{comp}");
    assert!(!got.contains(&"description".to_string()), "{comp}");

    // The tool: its executor's hover shows the chain to ryeos's terminal executor.
    let t = root.join(".ai/tools/hello/greet.py");
    c.open(&t).await;
    let diags = c.diagnostics(&t).await;
    assert_eq!(diags, json!([]), "{diags}");
    let ttext = std::fs::read_to_string(&t).unwrap();
    let h = c
        .call(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&t)}, "position": pos(&ttext, "tool:hello/runtimes/python", 6, false)}),
        )
        .await;
    assert!(
        h.to_string().contains("ryeos/core/subprocess/execute"),
        "{h}"
    );
    c.shutdown().await;
}
