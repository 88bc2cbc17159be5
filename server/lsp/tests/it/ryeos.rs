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

/// The text a location of a references answer covers.
fn covered(root: &Path, loc: &Value) -> String {
    let path = loc["uri"].as_str().unwrap().trim_start_matches("file://");
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| {
        std::fs::read_to_string(root.join(path.trim_start_matches('/'))).unwrap()
    });
    let line = loc["range"]["start"]["line"].as_u64().unwrap() as usize;
    let (a, b) = (
        loc["range"]["start"]["character"].as_u64().unwrap() as usize,
        loc["range"]["end"]["character"].as_u64().unwrap() as usize,
    );
    text.lines().nth(line).unwrap()[a..b].to_string()
}

/// References, definition and rename follow ryeos's own references: a capability string
/// (`ryeos.execute.tool.ID`) names its tool, a canonical ref (`tool:ID`) in a tool header
/// names its executor; a rename rewrites only the id part of each (the `ryeos.execute.tool.`
/// and `tool:` prefixes stay), moves the file and keeps the tool's `category` its folder
/// (ryeos requires it, T310). The bundle's terminal executor is read-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ryeos_references_definition_and_rename() {
    let (_d, root) = ryeos_project();
    let mut c = Client::start(&root, false).await;
    c.indexed().await;
    let d = root.join(".ai/directives/hello/greet_user.md");
    let t = root.join(".ai/tools/hello/greet.py");
    let r = root.join(".ai/tools/hello/runtimes/python.yaml");
    for f in [&d, &t, &r] {
        c.open(f).await;
    }
    let text = std::fs::read_to_string(&d).unwrap();
    let ttext = std::fs::read_to_string(&t).unwrap();

    // From the tool's file: the directive's capability names it.
    let refs = c
        .call(
            "textDocument/references",
            json!({"textDocument": {"uri": uri(&t)}, "position": {"line": 0, "character": 0}, "context": {"includeDeclaration": false}}),
        )
        .await;
    let arr = refs.as_array().cloned().unwrap_or_default();
    assert_eq!(arr.len(), 1, "{refs}");
    assert!(
        arr[0]["uri"].as_str().unwrap().ends_with("greet_user.md"),
        "{refs}"
    );
    assert_eq!(covered(&root, &arr[0]), "hello/greet", "{refs}");

    // From the runtime: the tool header's canonical ref, its id only.
    let refs = c
        .call(
            "textDocument/references",
            json!({"textDocument": {"uri": uri(&r)}, "position": {"line": 0, "character": 0}, "context": {"includeDeclaration": false}}),
        )
        .await;
    let arr = refs.as_array().cloned().unwrap_or_default();
    assert_eq!(arr.len(), 1, "{refs}");
    assert_eq!(covered(&root, &arr[0]), "hello/runtimes/python", "{refs}");

    // Definition of the canonical ref: the runtime's file.
    let at = pos(&ttext, "tool:hello/runtimes/python", 12, false);
    let def = c
        .call(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&t)}, "position": at}),
        )
        .await;
    assert!(def.to_string().contains("runtimes/python.yaml"), "{def}");

    // Rename from the capability string.
    let at = pos(&text, "ryeos.execute.tool.hello/greet", 22, false);
    let prep = c
        .call(
            "textDocument/prepareRename",
            json!({"textDocument": {"uri": uri(&d)}, "position": at}),
        )
        .await;
    assert_eq!(prep["placeholder"], "hello/greet", "{prep}");
    let edit = c
        .call(
            "textDocument/rename",
            json!({"textDocument": {"uri": uri(&d)}, "position": at, "newName": "greeting/greet"}),
        )
        .await;
    let e = edit.to_string();
    assert!(e.contains(r#""newText":"greeting/greet""#), "{e}");
    assert!(
        e.contains(r#""newText":"greeting""#),
        "the category follows: {e}"
    );
    assert!(e.contains("tools/greeting/greet.py"), "the file moves: {e}");
    assert!(
        !e.contains("ryeos.execute.tool.greeting"),
        "only the id is rewritten: {e}"
    );

    // Rename of the runtime from the header's canonical ref: `tool:` stays.
    let at = pos(&ttext, "tool:hello/runtimes/python", 12, false);
    let edit = c
        .call(
            "textDocument/rename",
            json!({"textDocument": {"uri": uri(&t)}, "position": at, "newName": "hello/runtimes/py"}),
        )
        .await;
    let e = edit.to_string();
    assert!(e.contains(r#""newText":"hello/runtimes/py""#), "{e}");
    assert!(e.contains("runtimes/py.yaml"), "{e}");

    // The terminal executor is in the core bundle, a read-only space: refused, saying why.
    let x = root.join("bundles/core/.ai/tools/ryeos/core/subprocess/execute.yaml");
    c.open(&x).await;
    let refused = c
        .request(
            "workspace/willRenameFiles",
            json!({"files": [{"oldUri": uri(&x), "newUri": uri(&x.with_file_name("run.yaml"))}]}),
        )
        .await;
    assert!(refused.to_string().contains("read-only"), "{refused}");
    c.shutdown().await;
}
