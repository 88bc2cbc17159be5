//! End to end over an in-memory duplex: one test per capability, snapshots of the exact
//! JSON (ranges included), in UTF-8 and UTF-16.

use crate::common;

use common::{pos, uri, Client};
use serde_json::{json, Value};
use std::path::PathBuf;

fn greet(root: &std::path::Path) -> PathBuf {
    root.join(".ai/directives/greet.md")
}
fn runtime(root: &std::path::Path) -> PathBuf {
    root.join(".ai/tools/rt/py_rt.py")
}
fn echo(root: &std::path::Path) -> PathBuf {
    root.join(".ai/tools/text/echo.py")
}

fn codes(diags: &Value) -> Vec<String> {
    diags
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| d["code"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn hover(c: &mut Client, path: &std::path::Path, position: Value) -> Value {
    c.call(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(path)}, "position": position}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_reports_capabilities() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    // A second look at initialize is not possible; check what a request shows instead.
    let r = c
        .request("workspace/symbol", json!({"query": "greet"}))
        .await;
    assert!(r.get("result").is_some(), "{r}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_on_open_utf8_and_utf16() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        let g = greet(&root);
        c.open(&g).await;
        let diags = c.diagnostics(&g).await;
        assert!(codes(&diags).contains(&"K003".to_string()), "{diags}");
        let name = if utf8 {
            "diagnostics_utf8"
        } else {
            "diagnostics_utf16"
        };
        insta::assert_json_snapshot!(name, c.redact(&diags));
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_diagnostic_links_to_its_catalogue_entry() {
    let (_d, root) = common::project();
    // A client that does not declare codeDescriptionSupport gets no link.
    let mut c = Client::start(&root, false).await;
    let g = greet(&root);
    c.open(&g).await;
    let diags = c.diagnostics(&g).await;
    assert!(diags[0].get("codeDescription").is_none(), "{diags}");
    c.shutdown().await;
    let mut c = Client::start(&root, true).await;
    c.open(&g).await;
    let diags = c.diagnostics(&g).await;
    let all = diags.as_array().expect("diagnostics");
    assert!(!all.is_empty());
    for d in all {
        let code = d["code"].as_str().expect("a code");
        let href = d["codeDescription"]["href"]
            .as_str()
            .expect("a codeDescription");
        assert!(href.ends_with(&format!("#{code}")), "{href}");
        // The page is on disk, read-only, with the code's anchor.
        let path = href
            .strip_prefix("file://")
            .and_then(|p| p.split('#').next())
            .expect("a file URI");
        let page = std::fs::read_to_string(path).expect("the catalogue page");
        assert!(page.contains(&format!("<a id=\"{code}\"></a>")), "{code}");
        assert!(std::fs::metadata(path).unwrap().permissions().readonly());
        assert_eq!(page, kiwi_kernel::diag::catalogue_markdown());
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_publishes_every_item() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let rt = c.diagnostics(&runtime(&root)).await;
    assert_eq!(codes(&rt), ["E408"], "{rt}");
    let g = c.diagnostics(&greet(&root)).await;
    assert!(codes(&g).contains(&"K003".to_string()));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_input_placeholder_utf8_and_utf16() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        let g = greet(&root);
        c.open(&g).await;
        let text = std::fs::read_to_string(&g).unwrap();
        // The placeholder after multi-byte characters on its line.
        let h = hover(&mut c, &g, pos(&text, "{input:who} freundlich", 3, utf8)).await;
        let name = if utf8 {
            "hover_input_utf8"
        } else {
            "hover_input_utf16"
        };
        insta::assert_json_snapshot!(name, c.redact(&h));
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_interpreter_and_chain() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, false).await;
    let rt = runtime(&root);
    c.open(&rt).await;
    let text = std::fs::read_to_string(&rt).unwrap();
    let h = hover(&mut c, &rt, pos(&text, "venv_python", 2, false)).await;
    insta::assert_json_snapshot!("hover_interpreter", c.redact(&h));
    let e = echo(&root);
    c.open(&e).await;
    let text = std::fs::read_to_string(&e).unwrap();
    let h = hover(&mut c, &e, pos(&text, "rt/py_rt", 1, false)).await;
    insta::assert_json_snapshot!("hover_executor_chain", c.redact(&h));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn did_change_then_hover_sees_new_text() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, false).await;
    let g = greet(&root);
    c.open(&g).await;
    let text = std::fs::read_to_string(&g).unwrap();
    let start = pos(&text, "Who — the person 🥝", 0, false);
    let end = pos(&text, "</input>", 0, false);
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": {"uri": uri(&g), "version": 2},
            "contentChanges": [{"range": {"start": start, "end": end}, "text": "The friend — changed"}]
        }),
    )
    .await;
    // No wait between the change and the hover.
    let h = hover(&mut c, &g, pos(&text, "{input:who} freundlich", 3, false)).await;
    let md = h["contents"]["value"].as_str().unwrap_or("");
    assert!(md.contains("The friend — changed"), "{h}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn venv_appearing_changes_hover_and_diagnostics() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let rt = runtime(&root);
    // The index published it (received before the end of the indexing progress).
    let d = c.diagnostics(&rt).await;
    assert_eq!(codes(&d), ["E408"], "{d}");
    c.open(&rt).await;
    let d = c.diagnostics(&rt).await;
    assert_eq!(codes(&d), ["E408"], "{d}");
    let text = std::fs::read_to_string(&rt).unwrap();
    let at = pos(&text, "venv_python", 2, true);
    let before = hover(&mut c, &rt, at.clone()).await;
    assert!(before["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("fallback"));
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(root.join(".venv"))
        .status()
        .expect("python3 -m venv");
    assert!(ok.success());
    c.inbox.notes.clear();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&root.join(".venv/bin/python")), "type": 1}]}),
    )
    .await;
    let d = c.diagnostics(&rt).await;
    assert!(codes(&d).is_empty(), "{d}");
    let after = hover(&mut c, &rt, at).await;
    let md = after["contents"]["value"].as_str().unwrap();
    assert!(md.contains("found, **used**"), "{md}");
    assert!(
        md.contains(&format!("{}/.venv/bin/python", root.display())),
        "{md}"
    );
    let hints = c
        .call(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(&rt)}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 30, "character": 0}}}),
        )
        .await;
    assert_eq!(
        hints[0]["label"],
        json!(format!("→ {}/.venv/bin/python", root.display()))
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_lenses_and_run_tool_with_progress() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    let e = echo(&root);
    c.open(&e).await;
    let lenses = c
        .call(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&e)}}),
        )
        .await;
    insta::assert_json_snapshot!("code_lenses_tool", c.redact(&lenses));
    let g = greet(&root);
    c.open(&g).await;
    let lenses = c
        .call(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&g)}}),
        )
        .await;
    insta::assert_json_snapshot!("code_lenses_directive", c.redact(&lenses));

    let mut arg = json!({"uri": uri(&e), "parameters": {"name": "kiwi"}});
    arg["id"] = json!("text/echo");
    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [arg], "workDoneToken": "run-1"}),
        )
        .await;
    assert_eq!(r["exit_code"], json!(0), "{r}");
    assert!(r.to_string().contains("hello kiwi"), "{r}");
    let progress: Vec<Value> = c
        .inbox
        .notes
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == "run-1")
        .map(|m| m["params"]["value"].clone())
        .collect();
    assert_eq!(
        progress.first().map(|p| p["kind"].clone()),
        Some(json!("begin"))
    );
    // The end may arrive after the response.
    c.wait_for(|m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == "run-1"
            && m["params"]["value"]["kind"] == "end"
    })
    .await;
    assert!(
        progress.iter().any(|p| p["message"] == "line one"),
        "{progress:?}"
    );
    assert!(c
        .inbox
        .notes
        .iter()
        .any(|m| m["method"] == "window/logMessage" && m["params"]["message"] == "hello kiwi"));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tool_is_cancellable() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let id = c
        .send(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": "text/slow"}], "workDoneToken": 7}),
        )
        .await;
    c.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["message"] == "started")
        .await;
    let t0 = std::time::Instant::now();
    c.notify("window/workDoneProgress/cancel", json!({"token": 7}))
        .await;
    let r = c.response(id).await;
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    assert!(r["result"].to_string().contains("cancel"), "{r}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_environment_and_validate() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.showEnvironment", "arguments": [{"id": "text/echo"}]}),
        )
        .await;
    assert!(r["markdown"].as_str().unwrap().contains("rt/py_rt"), "{r}");
    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.validate", "arguments": [{"uri": uri(&greet(&root))}]}),
        )
        .await;
    assert_eq!(r["valid"], json!(false));
    assert_eq!(r["diagnostics"][0]["code"], json!("K003"));
    // The kernel's one diagnostic view, as `kiwi check --format json` and the MCP give it.
    let keys: Vec<&String> = r["diagnostics"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, kiwi_kernel::diag::view::FIELDS, "{r}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_symbols_completion_inlay_actions() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        c.indexed().await;
        let g = greet(&root);
        c.open(&g).await;
        let text = std::fs::read_to_string(&g).unwrap();
        let sfx = if utf8 { "utf8" } else { "utf16" };
        let doc = json!({"uri": uri(&g)});

        let def = c
            .call(
                "textDocument/definition",
                json!({"textDocument": doc, "position": pos(&text, "{input:who} freundlich", 8, utf8)}),
            )
            .await;
        insta::assert_json_snapshot!(format!("definition_input_{sfx}"), c.redact(&def));
        let def = c
            .call(
                "textDocument/definition",
                json!({"textDocument": doc, "position": pos(&text, "text/echo", 2, utf8)}),
            )
            .await;
        insta::assert_json_snapshot!(format!("definition_item_{sfx}"), c.redact(&def));

        let syms = c
            .call("textDocument/documentSymbol", json!({"textDocument": doc}))
            .await;
        insta::assert_json_snapshot!(format!("symbols_{sfx}"), c.redact(&syms));

        // Completion of input names after `{input:` on the multi-byte line.
        let edited = text.replace("{input:who} freundlich", "{input:w freundlich");
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&g), "version": 2}, "contentChanges": [{"text": edited}]}),
        )
        .await;
        let comp = c
            .call(
                "textDocument/completion",
                json!({"textDocument": doc, "position": pos(&edited, "{input:w freundlich", 8, utf8)}),
            )
            .await;
        insta::assert_json_snapshot!(format!("completion_input_{sfx}"), c.redact(&comp));

        // The K003 fix as a code action.
        let at = pos(&edited, "text/ecko", 0, utf8);
        let actions = c
            .call(
                "textDocument/codeAction",
                json!({"textDocument": doc, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}),
            )
            .await;
        insta::assert_json_snapshot!(format!("code_actions_{sfx}"), c.redact(&actions));

        let ws = c.call("workspace/symbol", json!({"query": "echo"})).await;
        insta::assert_json_snapshot!(format!("workspace_symbols_{sfx}"), c.redact(&ws));
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_resolver_types_and_inlay_hint() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    let rt = runtime(&root);
    c.open(&rt).await;
    let text = std::fs::read_to_string(&rt).unwrap();
    let hints = c
        .call(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(&rt)}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 30, "character": 0}}}),
        )
        .await;
    insta::assert_json_snapshot!("inlay_hints", c.redact(&hints));
    let comp = c
        .call(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri(&rt)}, "position": pos(&text, "venv_python", 4, true)}),
        )
        .await;
    let labels: Vec<&str> = comp["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["label"].as_str())
        .collect();
    assert!(
        labels.contains(&"venv_python") && labels.contains(&"system_binary"),
        "{labels:?}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_ai_are_ignored() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    let other = root.join("notes.md");
    std::fs::write(&other, "# not an item\n").unwrap();
    c.open(&other).await;
    let h = hover(&mut c, &other, json!({"line": 0, "character": 2})).await;
    assert_eq!(h, Value::Null);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_does_not_kill_the_server() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    let r = c.request("kiwi/_panic", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    let r = c
        .request("workspace/symbol", json!({"query": "echo"}))
        .await;
    assert!(r.get("result").is_some(), "{r}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crlf_documents_and_incremental_edits() {
    let (_d, root) = common::project();
    let g = greet(&root);
    let text = std::fs::read_to_string(&g).unwrap().replace('\n', "\r\n");
    std::fs::write(&g, &text).unwrap();
    let mut c = Client::start(&root, false).await;
    c.open(&g).await;
    let at = pos(&text, "{input:who} freundlich", 3, false);
    let h = hover(&mut c, &g, at.clone()).await;
    let line = at["line"].clone();
    assert_eq!(h["range"]["start"]["line"], line, "{h}");
    assert_eq!(h["range"]["start"]["character"], json!(27), "{h}");
    assert_eq!(h["range"]["end"]["character"], json!(38), "{h}");
    // Two incremental edits in a row on the CRLF text, the second relative to the first;
    // then a hover with no wait.
    let p1 = pos(&text, "Who — the person", 0, false);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&g), "version": 2}, "contentChanges": [
            {"range": {"start": p1, "end": p1}, "text": "Dear "},
            {"range": {"start": p1, "end": {"line": p1["line"], "character": p1["character"].as_u64().unwrap() + 5}}, "text": "Sweet\r\n"}
        ]}),
    )
    .await;
    // The placeholder moved one line down (the inserted CRLF).
    let moved = json!({"line": line.as_u64().unwrap() + 1, "character": 30});
    let h = hover(&mut c, &g, moved).await;
    let md = h["contents"]["value"].as_str().unwrap_or("");
    assert!(
        md.contains("Sweet\r\nWho — the person") || md.contains("Sweet\nWho"),
        "{h}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k002_rename_is_a_file_rename() {
    let (_d, root) = common::project();
    let f = root.join(".ai/directives/hello.md");
    let text = std::fs::read_to_string(greet(&root))
        .unwrap()
        .replace("name=\"greet\"", "name=\"greeting\"");
    std::fs::write(&f, &text).unwrap();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    c.open(&f).await;
    let at = pos(&text, "greeting", 2, true);
    let actions = c
        .call(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri(&f)}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}),
        )
        .await;
    let k002: Vec<&Value> = actions
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["diagnostics"][0]["code"] == "K002")
        .collect();
    insta::assert_json_snapshot!("k002_actions", c.redact(&json!(k002)));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_item_files_update_the_workspace() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let g = greet(&root);
    let d = c.diagnostics(&g).await;
    assert_eq!(codes(&d), ["K003"], "{d}");
    // A tool named like the broken reference appears on disk.
    let new = root.join(".ai/tools/text/ecko.py");
    std::fs::copy(echo(&root), &new).unwrap();
    c.inbox.notes.clear();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&new), "type": 1}]}),
    )
    .await;
    let d = c.diagnostics(&g).await;
    assert!(codes(&d).is_empty(), "{d}");
    // It goes away again: the reference breaks, and its own diagnostics are cleared.
    std::fs::remove_file(&new).unwrap();
    c.inbox.notes.clear();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&new), "type": 3}]}),
    )
    .await;
    let gone = c.diagnostics(&new).await;
    assert_eq!(gone, json!([]));
    let d = c.diagnostics(&g).await;
    assert_eq!(codes(&d), ["K003"], "{d}");
    c.shutdown().await;
}

/// A lens clicked at once after opening a tool, while the workspace is still being indexed:
/// the command waits for the index instead of failing with "executor … exists in no space"
/// (found by tests/lsp, pytest-lsp with Neovim 0.6's capabilities).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_waits_for_the_index() {
    let (_d, root) = common::project();
    // Enough items that indexing takes a while.
    let many = root.join(".ai/knowledge/many");
    std::fs::create_dir_all(&many).unwrap();
    for i in 0..3000 {
        std::fs::write(
            many.join(format!("n{i}.md")),
            format!("---\nid: many/n{i}\ntitle: Note {i}\nentry_type: reference\n---\n\n# Note {i}\n\nText.\n"),
        )
        .unwrap();
    }
    let mut c = Client::start(&root, true).await;
    let e = echo(&root);
    c.open(&e).await;
    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"uri": uri(&e)}]}),
        )
        .await;
    assert_eq!(r["exit_code"], json!(0), "{r}");
    assert!(r.to_string().contains("hello world"), "{r}");
    c.shutdown().await;
}

/// Issue 12, points 16 and 18 in the editor: a Python syntax error is a T301 diagnostic of
/// the open file, and `kiwi.runTool` of a tool with error-level diagnostics is refused with
/// them (the same kernel path as `kiwi run` and MCP), while a clean tool still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_errors_is_diagnosed_and_not_run() {
    let (_d, root) = common::project();
    let head = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py_rt\"\n__tool_description__ = \"x\"\n";
    let broken = root.join(".ai/tools/text/broken.py");
    std::fs::write(&broken, format!("{head}def broken(:\n    pass\n")).unwrap();
    let mul = root.join(".ai/tools/text/mul.py");
    std::fs::write(
        &mul,
        format!("{head}CONFIG = {{\"timeout\": 1 * 1}}\nimport time\nif __name__ == \"__main__\":\n    time.sleep(3)\n    print(\"finished\")\n"),
    )
    .unwrap();
    let mut c = Client::start(&root, true).await;
    c.open(&broken).await;
    let diags = c.diagnostics(&broken).await;
    assert!(codes(&diags).contains(&"T301".to_string()), "{diags}");
    let t301 = diags
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "T301")
        .unwrap();
    assert_eq!(t301["range"]["start"]["line"], 4, "{t301}");
    assert_eq!(t301["severity"], 1, "{t301}");
    for (path, id) in [(&broken, "text/broken"), (&mul, "text/mul")] {
        let r = c
            .call(
                "workspace/executeCommand",
                json!({"command": "kiwi.runTool", "arguments": [{"uri": uri(path), "id": id}]}),
            )
            .await;
        assert_eq!(r["error"]["kind"], "invalid", "{r}");
        assert_eq!(r["error"]["diagnostics"][0]["code"], "T301", "{r}");
        assert!(!r.to_string().contains("finished"), "{r}");
    }
    // Positive control.
    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": "text/echo", "parameters": {"name": "kiwi"}}]}),
        )
        .await;
    assert_eq!(r["exit_code"], json!(0), "{r}");
}

/// Issue 13: an item of an extra space (`spaces:` in the project's config.yaml) is found
/// and hovered like any other; the hover names its space; the project's use of it is not
/// a broken chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_names_an_extra_space() {
    let (_d, root) = common::project();
    let sys = root.parent().unwrap().join("sys");
    std::fs::create_dir_all(sys.join(".ai/tools/sys")).unwrap();
    std::fs::write(
        sys.join(".ai/tools/sys/py_runtime.yaml"),
        "version: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\ndescription: The system space's Python runtime\nconfig:\n  command: python3\n  args: [\"{tool_path}\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".ai/config.yaml"),
        "spaces:\n  - {path: ../sys, name: system}\n  - ../not-there\n",
    )
    .unwrap();
    let tool = root.join(".ai/tools/text/uses_sys.py");
    std::fs::write(
        &tool,
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"sys/py_runtime\"\n__tool_description__ = \"uses the system space\"\n",
    )
    .unwrap();
    let mut c = Client::start(&root, false).await;
    c.open(&tool).await;
    let diags = c.diagnostics(&tool).await;
    assert!(!codes(&diags).contains(&"T304".to_string()), "{diags}");
    let text = std::fs::read_to_string(&tool).unwrap();
    let h = hover(&mut c, &tool, pos(&text, "sys/py_runtime", 1, false)).await;
    let md = h["contents"]["value"].as_str().unwrap_or_default();
    let sys = sys.canonicalize().unwrap();
    assert!(
        md.contains(&format!(
            "2. `sys/py_runtime` — system space (extra, read-only) — `{}`",
            sys.join(".ai/tools/sys/py_runtime.yaml").display()
        )),
        "{h}"
    );
    // The directory that does not exist is a warning shown to the user.
    let warning = c
        .wait_for(|m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("not-there"))
        })
        .await;
    assert_eq!(warning["params"]["type"], 2, "{warning}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_and_rename_of_an_item_id() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        c.indexed().await;
        let g = greet(&root);
        c.open(&g).await;
        let text = std::fs::read_to_string(&g).unwrap();
        let sfx = if utf8 { "utf8" } else { "utf16" };
        // From the tool's own file: the directive's call of it.
        let refs = c
            .call(
                "textDocument/references",
                json!({"textDocument": {"uri": uri(&echo(&root))}, "position": {"line": 0, "character": 0}, "context": {"includeDeclaration": false}}),
            )
            .await;
        insta::assert_json_snapshot!(format!("references_{sfx}"), c.redact(&refs));
        // From the call: the same place, plus the tool's file with the declaration.
        let at = pos(&text, "text/echo", 2, utf8);
        let refs = c
            .call(
                "textDocument/references",
                json!({"textDocument": {"uri": uri(&g)}, "position": at, "context": {"includeDeclaration": true}}),
            )
            .await;
        assert_eq!(refs.as_array().map(Vec::len), Some(2), "{refs}");
        let prep = c
            .call(
                "textDocument/prepareRename",
                json!({"textDocument": {"uri": uri(&g)}, "position": at}),
            )
            .await;
        assert_eq!(prep["placeholder"], "text/echo", "{prep}");
        let edit = c
            .call(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri(&g)}, "position": at, "newName": "text/say"}),
            )
            .await;
        insta::assert_json_snapshot!(format!("rename_{sfx}"), c.redact(&edit));
        // A bad id is refused with an error, not an edit.
        let r = c
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri(&g)}, "position": at, "newName": "../out"}),
            )
            .await;
        assert!(r.get("error").is_some(), "{r}");
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signature_help_and_parameter_completion_at_a_param() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        c.indexed().await;
        let g = greet(&root);
        c.open(&g).await;
        let text = std::fs::read_to_string(&g).unwrap();
        let at = pos(&text, "{input:who}\"/>", 3, utf8);
        let sig = c
            .call(
                "textDocument/signatureHelp",
                json!({"textDocument": {"uri": uri(&g)}, "position": at}),
            )
            .await;
        assert_eq!(
            sig["signatures"][0]["label"], "text/echo(name?: string)",
            "{sig}"
        );
        assert_eq!(sig["activeParameter"], 0, "{sig}");
        assert_eq!(
            sig["signatures"][0]["parameters"][0]["label"],
            "name?: string"
        );
        // A new <param name=": the parameter names not passed yet (none left here), and
        // an attribute completion is a snippet with balanced quotes.
        let edited = text.replace(
            "<param name=\"name\" value=\"{input:who}\"/>",
            "<param value=\"x\"/>\n        <param name=\"",
        );
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&g), "version": 2}, "contentChanges": [{"text": edited}]}),
        )
        .await;
        let at = pos(&edited, "<param name=\"", 13, utf8);
        let comp = c
            .call(
                "textDocument/completion",
                json!({"textDocument": {"uri": uri(&g)}, "position": at}),
            )
            .await;
        let labels: Vec<&str> = comp["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["label"].as_str())
            .collect();
        assert_eq!(labels, ["name"], "{comp}");
        let at = pos(&edited, "<param value", 7, utf8);
        let comp = c
            .call(
                "textDocument/completion",
                json!({"textDocument": {"uri": uri(&g)}, "position": at}),
            )
            .await;
        let first = &comp["items"][0];
        assert_eq!(first["label"], "name", "{comp}");
        if utf8 {
            // The client supports snippets.
            assert_eq!(first["insertTextFormat"], 2, "{comp}");
            assert_eq!(first["textEdit"]["newText"], "name=\"$1\"", "{comp}");
        } else {
            assert!(first.get("insertTextFormat").is_none(), "{comp}");
            assert_eq!(first["textEdit"]["newText"], "name=\"\"", "{comp}");
        }
        c.shutdown().await;
    }
}

/// Issue 15, point 3: the kiwi venv `.ai/scripts/.venv`, a symlink to a venv elsewhere,
/// appears; the event for a path under `.ai/` that is no item reaches the resolutions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn venv_under_ai_through_a_symlink_reaches_the_resolutions() {
    let (d, root) = common::project();
    let rt = runtime(&root);
    let src = std::fs::read_to_string(&rt).unwrap();
    std::fs::write(
        &rt,
        src.replace("\"search\": [\"project\"]", "\"search\": [\"kiwi\"]"),
    )
    .unwrap();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let diags = c.diagnostics(&rt).await;
    assert_eq!(codes(&diags), ["E408"], "{diags}");
    let elsewhere = d.path().join("venvs/kiwi");
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&elsewhere)
        .status()
        .expect("python3 -m venv");
    assert!(ok.success());
    std::fs::create_dir_all(root.join(".ai/scripts")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join(".ai/scripts/.venv")).unwrap();
    // A venv beside a tool too, holding a Python file that is no tool.
    std::fs::create_dir_all(elsewhere.join("lib")).unwrap();
    std::fs::write(elsewhere.join("lib/site.py"), "def broken(:\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join(".ai/tools/rt/.venv")).unwrap();
    let not_a_tool = root.join(".ai/tools/rt/.venv/lib/site.py");
    c.inbox.notes.clear();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [
            {"uri": uri(&root.join(".ai/scripts/.venv/bin/python")), "type": 1},
            {"uri": uri(&not_a_tool), "type": 1},
        ]}),
    )
    .await;
    let diags = c.diagnostics(&rt).await;
    assert!(codes(&diags).is_empty(), "{diags}");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let about_venv: Vec<&Value> = c
        .inbox
        .notes
        .iter()
        .filter(|m| m["params"]["uri"] == json!(uri(&not_a_tool)))
        .collect();
    assert!(about_venv.is_empty(), "{about_venv:?}");
    c.shutdown().await;
}

/// Issue 27, item 5's edge case: a read-only space's file opened before its project was
/// loaded (go to definition right after the editor started) is read in that project, as one
/// opened later: its problems stay out of the Problems panel (hints, marked with the space),
/// never errors of a project of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_space_file_opened_before_the_project_loaded() {
    let (_d, root) = common::project();
    let sys = root.parent().unwrap().join("sys");
    std::fs::create_dir_all(sys.join(".ai/tools/sys")).unwrap();
    // No version: an error in a project of its own.
    let broken = sys.join(".ai/tools/sys/broken.yaml");
    std::fs::write(
        &broken,
        "tool_type: runtime\nexecutor_id: subprocess\ndescription: A system tool with a problem\nconfig:\n  command: python3\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".ai/config.yaml"),
        "spaces:\n  - {path: ../sys, name: system}\n",
    )
    .unwrap();
    let mut c = Client::start(&root, false).await;
    // Opened first: the project is not loaded yet.
    c.open(&broken).await;
    let diags = c.diagnostics(&broken).await;
    let list = diags.as_array().cloned().unwrap_or_default();
    assert!(
        !list.is_empty(),
        "the problem is still shown, as a hint: {diags}"
    );
    for d in &list {
        assert_eq!(d["severity"], 4, "not a hint: {diags}");
        assert!(
            d["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("(read-only system space)")),
            "{diags}"
        );
    }
    c.shutdown().await;
}
