//! Freshness (issue 15): answers given while the workspace indexes equal the answers after.

use crate::common;

use common::{pos, uri, Client};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const RUNTIME: &str = r#""""The project's Python runtime: it shadows the builtin one on purpose."""

__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"
__tool_description__ = "Project Python runtime"

ENV_CONFIG = {
    "interpreter": {
        "type": "venv_python",
        "search": ["project", "system"],
        "var": "KIWI_PYTHON",
        "fallback": "python3",
    },
}

CONFIG = {
    "command": "${KIWI_PYTHON}",
    "args": ["{tool_path}", "--params", "{params_json}"],
    "timeout": 120,
}
"#;

fn tool(i: usize) -> String {
    format!(
        r#""""Generated tool {i}."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "gen"
__tool_description__ = "Generated tool number {i}"

CONFIG_SCHEMA = {{
    "type": "object",
    "properties": {{"path": {{"type": "string"}}}},
    "required": ["path"],
}}
"#
    )
}

fn directive(i: usize) -> String {
    let next = i + 1;
    format!(
        r#"# Step {i}

```xml
<directive name="d{i}" version="1.0.0">
  <metadata>
    <description>Call a generated tool</description>
    <category>gen</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="gen/*"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="file" type="string" required="true">A file</input>
  </inputs>
  <process>
    <step name="one">
      <execute item_type="tool" item_id="gen/t{i}">
        <param name="path" value="{{input:file}}"/>
      </execute>
    </step>
    <step name="two">
      <execute item_type="tool" item_id="gen/t{next}">
        <param name="path" value="{{input:file}}"/>
      </execute>
    </step>
  </process>
</directive>
```
"#
    )
}

/// A project of `n` items: a runtime shadowing the builtin one, tools run by it, directives
/// calling them.
fn workspace(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("big");
    let tools = root.join(".ai/tools/gen");
    let dirs = root.join(".ai/directives/gen");
    std::fs::create_dir_all(&tools).expect("mkdir");
    std::fs::create_dir_all(&dirs).expect("mkdir");
    std::fs::create_dir_all(root.join(".ai/tools/runtimes")).expect("mkdir");
    std::fs::write(root.join(".ai/tools/runtimes/python_runtime.py"), RUNTIME).expect("write");
    let half = (n - 1) / 2;
    for i in 0..half {
        std::fs::write(tools.join(format!("t{i}.py")), tool(i)).expect("write");
        std::fs::write(dirs.join(format!("d{i}.md")), directive(i)).expect("write");
    }
    let root = root.canonicalize().expect("canonical");
    (dir, root)
}

/// Every request kind the server answers about a document, sent at once (without waiting for
/// each answer): (name, id).
async fn ask_everything(c: &mut Client, root: &Path) -> Vec<(String, i64)> {
    let t = root.join(".ai/tools/gen/t1.py");
    let d = root.join(".ai/directives/gen/d1.md");
    let rt = root.join(".ai/tools/runtimes/python_runtime.py");
    let tt = std::fs::read_to_string(&t).expect("read");
    let dt = std::fs::read_to_string(&d).expect("read");
    let exec_at = pos(&tt, "runtimes/python_runtime", 3, true);
    let call_at = pos(&dt, "gen/t1", 2, true);
    let other_at = pos(&dt, "gen/t2", 2, true);
    let param_at = pos(&dt, "<param name", 3, true);
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}});
    let mut out = Vec::new();
    let ask = |name: &str, method: &'static str, params: Value| (name.to_string(), method, params);
    let asks = vec![
        ask(
            "hover executor",
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&t)}, "position": exec_at}),
        ),
        ask(
            "hover call",
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&d)}, "position": call_at}),
        ),
        ask(
            "hover call of a closed tool",
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&d)}, "position": other_at}),
        ),
        ask(
            "definition of a closed tool",
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&d)}, "position": other_at}),
        ),
        ask(
            "lenses directive",
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&d)}}),
        ),
        ask(
            "lenses tool",
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&t)}}),
        ),
        ask(
            "completion executor",
            "textDocument/completion",
            json!({"textDocument": {"uri": uri(&t)}, "position": exec_at}),
        ),
        ask(
            "definition executor",
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&t)}, "position": exec_at}),
        ),
        ask(
            "definition call",
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&d)}, "position": call_at}),
        ),
        ask(
            "references runtime",
            "textDocument/references",
            json!({"textDocument": {"uri": uri(&rt)}, "position": {"line": 9, "character": 2}, "context": {"includeDeclaration": true}}),
        ),
        ask(
            "inlay hints runtime",
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(&rt)}, "range": range}),
        ),
        ask(
            "inlay hints tool",
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(&t)}, "range": range}),
        ),
        ask(
            "signature help",
            "textDocument/signatureHelp",
            json!({"textDocument": {"uri": uri(&d)}, "position": param_at}),
        ),
        ask(
            "symbols",
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri(&d)}}),
        ),
        ask(
            "code actions",
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri(&d)}, "range": range, "context": {"diagnostics": []}}),
        ),
        ask(
            "prepare rename",
            "textDocument/prepareRename",
            json!({"textDocument": {"uri": uri(&d)}, "position": call_at}),
        ),
        ask(
            "workspace symbols",
            "workspace/symbol",
            json!({"query": "t1234"}),
        ),
    ];
    for (name, method, params) in asks {
        let id = c.send(method, params).await;
        out.push((name, id));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_before_indexing_equal_answers_after() {
    let (_d, root) = workspace(5000);
    // The load is held (the kernel's test hook) until the first requests are all in, so it
    // is certainly under way while they are answered.
    let hold = kiwi_kernel::workspace::testing::hold_loads(&root);
    let mut c = Client::start(&root, true).await;
    let t = root.join(".ai/tools/gen/t1.py");
    let d = root.join(".ai/directives/gen/d1.md");
    let rt = root.join(".ai/tools/runtimes/python_runtime.py");
    for p in [&t, &d, &rt] {
        c.open(p).await;
    }
    // At once: the workspace is still indexing.
    let early = ask_everything(&mut c, &root).await;
    // Time for the server to take every request in hand while the load is held.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    drop(hold);
    let mut first = Vec::new();
    for (name, id) in early {
        let r = c.response(id).await;
        first.push((name, r["result"].clone()));
    }
    c.indexed().await;
    let late = ask_everything(&mut c, &root).await;
    let mut mismatched = Vec::new();
    for ((name, id), (_, before)) in late.into_iter().zip(first) {
        let after = c.response(id).await["result"].clone();
        assert!(!after.is_null(), "{name}: no answer after indexing");
        if after != before {
            mismatched.push(format!("{name}:\n  before {before}\n  after  {after}"));
        }
    }
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
    c.shutdown().await;
}

/// The `$/progress` end of run token `token` (waits for it).
async fn progress_end(c: &mut Client, token: Value) -> Value {
    c.wait_for(|m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == token
            && m["params"]["value"]["kind"] == "end"
    })
    .await["params"]["value"]
        .clone()
}

async fn start_slow_run(c: &mut Client, token: Value) -> i64 {
    let id = c
        .send(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": "text/slow"}], "workDoneToken": token}),
        )
        .await;
    let t = token.clone();
    c.wait_for(move |m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == t
            && m["params"]["value"]["message"] == "started"
    })
    .await;
    id
}

/// Issue 15, point 7: a run stopped by `$/cancelRequest` ends its progress (no spinner for
/// ever), and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_ends_the_run_progress() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let id = start_slow_run(&mut c, json!("run-a")).await;
    c.notify("$/cancelRequest", json!({"id": id})).await;
    let end = progress_end(&mut c, json!("run-a")).await;
    assert_eq!(end["message"], "cancelled", "{end}");
    let r = c.response(id).await;
    assert!(r.get("error").is_some(), "{r}");
    c.shutdown().await;
}

/// Issue 15, point 7: a run cancelled through its progress token ends with "cancelled".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_cancel_ends_with_cancelled() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let id = start_slow_run(&mut c, json!(8)).await;
    c.notify("window/workDoneProgress/cancel", json!({"token": 8}))
        .await;
    let end = progress_end(&mut c, json!(8)).await;
    assert_eq!(end["message"], "cancelled", "{end}");
    let r = c.response(id).await;
    assert!(r["result"].to_string().contains("cancel"), "{r}");
    c.shutdown().await;
}

/// A definition's single location: (uri, the file it names).
fn only_location(r: &Value) -> (String, PathBuf) {
    let locs = r.as_array().unwrap_or_else(|| panic!("locations: {r}"));
    assert_eq!(locs.len(), 1, "{r}");
    let u = locs[0]["uri"].as_str().expect("a uri").to_string();
    let p = PathBuf::from(u.strip_prefix("file://").expect("a file: uri"));
    (u, p)
}

fn assert_builtin_copy(path: &Path, rel: &str) {
    let root = common::cache_dir()
        .join("kiwi/builtin")
        .join(env!("CARGO_PKG_VERSION"));
    assert_eq!(path, root.join(rel), "where the builtin file is served");
    let text = std::fs::read_to_string(path).expect("the served file exists");
    assert_eq!(
        Some(text.as_str()),
        kiwi_kernel::workspace::builtin_file(rel),
        "{rel}"
    );
    let meta = std::fs::metadata(path).expect("metadata");
    assert!(
        meta.permissions().readonly(),
        "{} is read-only",
        path.display()
    );
}

/// Issue 15, point 8: builtin items are reachable — definition of `subprocess` and of builtin
/// runtimes, and related information pointing at a shadowed builtin item, give `file:` URIs of
/// read-only copies in the cache directory, rewritten when someone changed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_items_are_served_as_read_only_files() {
    let (_d, root) = common::project();
    let shadow = root.join(".ai/tools/runtimes/python_runtime.py");
    std::fs::create_dir_all(shadow.parent().expect("parent")).expect("mkdir");
    std::fs::write(&shadow, RUNTIME).expect("write");
    let bash = root.join(".ai/tools/sh/hello.py");
    std::fs::create_dir_all(bash.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &bash,
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/bash_runtime\"\n",
    )
    .expect("write");
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    for p in [&shadow, &bash] {
        c.open(p).await;
    }
    // Related information of the shadowing (K005) names the builtin runtime.
    let diags = c.diagnostics(&shadow).await;
    let k005 = diags
        .as_array()
        .and_then(|a| a.iter().find(|d| d["code"] == "K005"))
        .unwrap_or_else(|| panic!("K005 in {diags}"))
        .clone();
    let related = k005["relatedInformation"]
        .as_array()
        .unwrap_or_else(|| panic!("related information in {k005}"));
    let u = related
        .iter()
        .filter_map(|r| r["location"]["uri"].as_str())
        .find(|u| u.contains("/builtin/"))
        .unwrap_or_else(|| panic!("a related location in the builtin space: {k005}"));
    assert_builtin_copy(
        Path::new(u.strip_prefix("file://").expect("file:")),
        "tools/runtimes/python_runtime.py",
    );

    let definition = |path: &Path, needle: &str| {
        let text = std::fs::read_to_string(path).expect("read");
        json!({"textDocument": {"uri": uri(path)}, "position": pos(&text, needle, 2, true)})
    };
    let r = c
        .call("textDocument/definition", definition(&shadow, "subprocess"))
        .await;
    let (_, p) = only_location(&r);
    assert_builtin_copy(&p, "tools/subprocess.yaml");
    let r = c
        .call(
            "textDocument/definition",
            definition(&bash, "runtimes/bash_runtime"),
        )
        .await;
    let (_, p) = only_location(&r);
    assert_builtin_copy(&p, "tools/runtimes/bash_runtime.py");

    // Someone changed the copy: it is not trusted, but written again.
    let mut perms = std::fs::metadata(&p).expect("metadata").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&p, perms).expect("chmod");
    std::fs::write(&p, "tampered").expect("tamper");
    let r = c
        .call(
            "textDocument/definition",
            definition(&bash, "runtimes/bash_runtime"),
        )
        .await;
    let (_, p) = only_location(&r);
    assert_builtin_copy(&p, "tools/runtimes/bash_runtime.py");
    c.shutdown().await;
}
