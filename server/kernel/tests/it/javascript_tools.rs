//! Issue 13: JavaScript and TypeScript tools that keep their metadata in the file, as newer
//! rye does (`rye/code/lsp/lsp.ts`), on the fixture `fixtures/rye-node`: found as items,
//! checked without a false alarm, their chain resolved through a Node runtime YAML to the
//! project's own primitive, and run by real Node.

use crate::common;
use common::{rt, Fixture};
use kiwi_kernel::check;
use kiwi_kernel::diag::Severity;
use kiwi_kernel::exec::{self, CancellationToken, NullSink, Output, Request};
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::tool::{Field, ToolFormat};
use kiwi_kernel::workspace::{Lookup, Workspace};
use serde_json::json;
use std::path::{Path, PathBuf};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The fixture `fixtures/rye-node` as the project of a test fixture, plus `extra` files.
fn rye_node(extra: &str) -> Fixture {
    let f = Fixture::new(extra);
    copy_dir(
        &repo().join("fixtures/rye-node/.ai"),
        &f.project().join(".ai"),
    );
    f
}

fn ws(f: &Fixture, path: &str) -> Workspace {
    f.workspace(&[("PATH", path)])
}

fn tool(ws: &Workspace, id: &str) -> std::sync::Arc<kiwi_kernel::workspace::Item> {
    match ws.lookup(ItemType::Tool, id, None) {
        Lookup::Found(t) => t,
        other => panic!("no tool {id}: {other:?}"),
    }
}

#[test]
fn typescript_and_javascript_tools_are_items_read_from_their_exports() {
    let f = rye_node("");
    let ws = ws(&f, SYSTEM_PATH);
    let case = tool(&ws, "text/case");
    let t = case.tool().expect("a tool");
    assert_eq!(t.format, ToolFormat::Javascript);
    assert_eq!(t.str(Field::Version), Some("1.2.0"));
    assert_eq!(
        t.str(Field::ExecutorId),
        Some("rye/core/runtimes/node/node")
    );
    let schema = t.value(Field::ConfigSchema).unwrap().to_json().unwrap();
    assert_eq!(
        schema["properties"]["operation"]["enum"],
        json!(["upper", "lower", "title", "snake"])
    );
    assert_eq!(schema["properties"]["max_words"]["default"], json!(1000));
    let count = tool(&ws, "text/count");
    assert_eq!(count.tool().unwrap().format, ToolFormat::Javascript);
    // A module the tools import declares nothing: not an item.
    assert!(matches!(
        ws.lookup(ItemType::Tool, "text/lib/words", None),
        Lookup::Missing { .. }
    ));
    // No error or warning on any item of the fixture (the one info says `tsx` is not
    // installed and `node` is used instead).
    let mut found = Vec::new();
    for item in ws.items_in(Space::Project) {
        for d in check::check_item(&ws, item) {
            if d.severity != Severity::Info && d.severity != Severity::Hint {
                found.push(format!("{}: {} {}", item.id, d.code, d.message));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_chain_of_a_typescript_tool_resolves_through_the_node_runtime() {
    let f = rye_node("");
    let ws = ws(&f, SYSTEM_PATH);
    let case = tool(&ws, "text/case");
    let chain = kiwi_kernel::chain::resolve(&ws, &case).expect("the chain resolves");
    let ids: Vec<&str> = chain.links.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "text/case",
            "rye/core/runtimes/node/node",
            "rye/core/primitives/subprocess"
        ]
    );
    let plan = exec::prepare(
        &ws,
        "text/case",
        &Request {
            params: json!({"operation": "upper", "text": "hi"}),
            ..Default::default()
        },
    )
    .expect("a plan");
    // The runtime's arguments: the tool's file, its parameters (the default filled in)
    // and the project.
    let command = plan.summary().command.clone().expect("a subprocess");
    let project = f.project().display().to_string();
    let tool_path = f.project().join(".ai/tools/text/case.ts");
    assert_eq!(
        command,
        [
            "node".to_string(),
            tool_path.display().to_string(),
            "--params".into(),
            r#"{"max_words":1000,"operation":"upper","text":"hi"}"#.into(),
            "--project-path".into(),
            project,
        ]
    );
}

fn run(ws: &Workspace, id: &str, params: serde_json::Value) -> exec::process::ProcessResult {
    let t = tool(ws, id);
    let req = Request {
        params,
        ..Default::default()
    };
    let r = rt()
        .block_on(exec::execute(
            ws,
            &t,
            &req,
            &NullSink,
            &CancellationToken::new(),
        ))
        .expect("runs");
    match r.output {
        Output::Process(p) => p,
        Output::Http(_) => panic!("not a process"),
    }
}

#[test]
fn a_javascript_module_tool_runs_with_node() {
    let f = rye_node("");
    let ws = ws(&f, SYSTEM_PATH);
    let p = run(
        &ws,
        "text/count",
        json!({"text": "one two\nthree", "per-line": true}),
    );
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    let out = p.json.as_ref().expect("JSON output");
    assert_eq!(out["words"], 3, "{out}");
    assert_eq!(out["per_line"], json!([2, 1]), "{out}");
    assert_eq!(out["project"], f.project().display().to_string());
}

/// A Node that runs TypeScript as is (Node 24, installed under `target/codeserver` by the
/// VS Code tests), if there is one.
fn typescript_node() -> Option<PathBuf> {
    kiwi_kernel::test_system::node24()
}

#[test]
fn a_typescript_tool_runs_with_the_tsx_the_runtime_finds() {
    let Some(node) = typescript_node() else {
        return;
    };
    // The runtime looks for `tsx` in the project's node_modules/.bin first.
    let f = rye_node("");
    let bin = f.project().join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&node, bin.join("tsx")).unwrap();
    let ws = ws(&f, SYSTEM_PATH);
    let p = run(
        &ws,
        "text/case",
        json!({"operation": "title", "text": "hello big_world"}),
    );
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    let out = p.json.as_ref().expect("JSON output");
    assert_eq!(
        out,
        &json!({"success": true, "output": "Hello Big World", "words": 3})
    );
}

#[test]
fn a_script_beside_a_yaml_stays_that_yaml_s_script() {
    // The YAML holds the metadata; the same-stem .ts (even one with exports) is its script.
    let f = rye_node(
        "//- project/.ai/tools/x/fmt.yaml\nversion: \"1.0.0\"\ntool_type: javascript\nexecutor_id: rye/core/runtimes/node/node\ndescription: Format\n\
//- project/.ai/tools/x/fmt.ts\nexport const __version__ = \"9.0.0\";\nexport const __executor_id__ = \"nowhere\";\n",
    );
    let ws = ws(&f, SYSTEM_PATH);
    let fmt = tool(&ws, "x/fmt");
    assert_eq!(fmt.tool().unwrap().format, ToolFormat::Yaml);
    assert_eq!(
        fmt.script.as_deref(),
        Some(f.project().join(".ai/tools/x/fmt.ts").as_path())
    );
    assert_eq!(
        ws.items_in(Space::Project)
            .iter()
            .filter(|i| i.id == "x/fmt")
            .count(),
        1
    );
}

/// The byte offset of `needle` in the item's text, plus `plus`.
fn offset(item: &kiwi_kernel::workspace::Item, needle: &str, plus: usize) -> usize {
    item.text().find(needle).expect(needle) + plus
}

#[test]
fn hover_definition_completion_and_symbols_in_a_typescript_tool() {
    use kiwi_kernel::ide;
    let f = rye_node("");
    let ws = ws(&f, SYSTEM_PATH);
    let case = tool(&ws, "text/case");
    // Hover on the executor: the chain down to the primitive.
    let at = offset(&case, "\"rye/core/runtimes/node/node\"", 5);
    let h = ide::hover(&ws, &case, at).expect("a hover");
    assert!(
        h.markdown.contains("rye/core/runtimes/node/node")
            && h.markdown.contains("rye/core/primitives/subprocess"),
        "{}",
        h.markdown
    );
    // Definition: the runtime's file.
    let targets = ide::definition(&ws, &case, at);
    assert_eq!(
        targets.first().map(|t| t.path.clone()),
        Some(
            f.project()
                .join(".ai/tools/rye/core/runtimes/node/node.yaml")
        ),
        "{targets:?}"
    );
    // Completion of the executor's id inside its string.
    let text = case.text().replace(
        "\"rye/core/runtimes/node/node\"",
        "\"rye/core/runtimes/no\"",
    );
    let path = f.project().join(".ai/tools/text/case.ts");
    let edited = std::sync::Arc::new(
        kiwi_kernel::workspace::parse_item(
            ItemType::Tool,
            "text/case".into(),
            Space::Project,
            path,
            text.as_bytes(),
        )
        .expect("an item"),
    );
    let at = text.find("\"rye/core/runtimes/no\"").unwrap() + "\"rye/core/runtimes/no".len();
    let labels: Vec<String> = ide::completions(&ws, &edited, at)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(
        labels.iter().any(|l| l == "rye/core/runtimes/node/node"),
        "{labels:?}"
    );
    // The outline names the exported constants.
    let names: Vec<String> = ide::symbols(&case).into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"__executor_id__".to_string())
            && names.contains(&"CONFIG_SCHEMA".to_string()),
        "{names:?}"
    );
}

#[test]
fn mcp_search_load_and_dry_run_of_javascript_tools() {
    let f = rye_node("");
    let agent = common::Agent::new(&f);
    let v = agent
        .search(json!({"item_type": "tool", "query": "change the case of a text"}))
        .unwrap();
    assert_eq!(v["results"][0]["id"], "text/case", "{v:#}");
    let v = agent
        .load(json!({"item_type": "tool", "item_id": "text/count"}))
        .unwrap();
    assert!(
        v.to_string()
            .contains("Count the words and lines of a text"),
        "{v:#}"
    );
    let v = agent
        .execute(json!({
            "item_type": "tool",
            "action": "dry_run",
            "item_id": "text/case",
            "parameters": {"operation": "lower", "text": "HI"},
        }))
        .unwrap();
    assert!(
        v.to_string().contains("rye/core/primitives/subprocess"),
        "{v:#}"
    );
    let v = agent
        .execute(json!({
            "item_type": "tool",
            "action": "run",
            "item_id": "text/count",
            "parameters": {"text": "a b"},
        }))
        .unwrap();
    assert!(v.to_string().contains("\\\"words\\\":2"), "{v:#}");
}
