//! Issue 23, causes 10-14 (rye_runtime.rs has causes 1-9): what rye-os's runtime refuses or does, and kiwi must say or do the
//! same (stale signatures, a `CONFIG_SCHEMA` rye cannot read, knowledge without
//! `entry_type`, `anchor:` module paths, no bytecode written into a read-only space).

use crate::common;
use common::Fixture;
use kiwi_kernel::exec::{self, Request};
use kiwi_kernel::ids::ItemType;
use sha2::{Digest as _, Sha256};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn sha(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const SIG: &str = "c2lnbmF0dXJlc2lnbmF0dXJl-_==";
const FP: &str = "440443d0858f0199";

/// A tool signed the way rye's `sign` writes it (`ToolMetadataStrategy.insert_signature`):
/// the shebang, then `# rye:signed:…`, hashing the file without those two lines.
fn signed_tool(body: &str) -> String {
    format!(
        "#!/usr/bin/env python3\n# rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP}\n{body}",
        sha(body)
    )
}

fn tool_body(executor: &str, kind: &str, extra: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"{kind}\"\n__executor_id__ = \"{executor}\"\n__tool_description__ = \"test\"\n{extra}")
}

/// Cause 10: rye refuses any item whose `rye:signed` header no longer matches its content
/// (`verify_item`); kiwi reports it (R706, an error) on tools and knowledge, not only on
/// directives, and `kiwi run` refuses the tool and every tool whose chain holds it.
#[test]
fn stale_rye_signatures_on_tools_and_knowledge_are_errors_and_refuse_the_chain() {
    let runtime_body = tool_body(
        "subprocess",
        "runtime",
        "ENV_CONFIG = {\"interpreter\": {\"type\": \"local_binary\", \"binary\": \"python3\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"/usr/bin/python3\"}}\nCONFIG = {\"command\": \"${KIWI_PYTHON}\", \"args\": [\"{tool_path}\"], \"timeout\": 5}\n",
    );
    let fresh_runtime = signed_tool(&runtime_body);
    // Edited after signing: one comment line added.
    let stale_runtime = signed_tool(&runtime_body)
        .replace("CONFIG = {\"command\"", "# edited\nCONFIG = {\"command\"");
    let tool = signed_tool(&tool_body(
        "runtimes/stale_runtime",
        "python",
        "print('hi')\n",
    ));
    let on_fresh = tool_body("runtimes/fresh_runtime", "python", "print('hi')\n");
    let kn_body = "# Notes\n\nSomething true.";
    let kn_fresh = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP} -->\n---\nid: notes\ntitle: Notes\nentry_type: reference\nversion: \"1.0.0\"\n---\n\n{kn_body}\n",
        sha(kn_body)
    );
    let kn_stale = kn_fresh.replace("Something true.", "Something else.");
    // CRLF files hash as rye reads them (universal newlines).
    let crlf_runtime = fresh_runtime.replace('\n', "\r\n");
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/runtimes/fresh_runtime.py\n{fresh_runtime}//- project/.ai/tools/runtimes/stale_runtime.py\n{stale_runtime}//- project/.ai/tools/runtimes/crlf_runtime.py\n{crlf_runtime}//- project/.ai/tools/t/on_stale.py\n{tool}//- project/.ai/tools/t/on_fresh.py\n{on_fresh}//- project/.ai/knowledge/notes.md\n{kn_fresh}//- project/.ai/knowledge/stale_notes.md\n{}",
        kn_stale.replace("id: notes", "id: stale_notes")
    ));
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    let codes = |ty: ItemType, id: &str| -> Vec<(String, String)> {
        let item = ws.get(ty, id).unwrap_or_else(|| panic!("{id}")).clone();
        kiwi_kernel::check::check_item(&ws, &item)
            .iter()
            .filter(|d| d.code.as_str() == "R706")
            .map(|d| (d.severity.as_str().to_string(), d.message.clone()))
            .collect()
    };
    for (ty, id) in [
        (ItemType::Tool, "runtimes/fresh_runtime"),
        (ItemType::Tool, "runtimes/crlf_runtime"),
        (ItemType::Tool, "t/on_stale"),
        (ItemType::Knowledge, "notes"),
    ] {
        assert_eq!(codes(ty, id), vec![], "{id}: signed and unchanged");
    }
    for (ty, id) in [
        (ItemType::Tool, "runtimes/stale_runtime"),
        (ItemType::Knowledge, "stale_notes"),
    ] {
        let c = codes(ty, id);
        assert_eq!(c.len(), 1, "{id}: {c:?}");
        assert_eq!(c[0].0, "error", "{id}: rye refuses it");
        assert!(c[0].1.contains("Integrity failed"), "{id}: {}", c[0].1);
    }
    // The run of a tool whose chain holds the stale runtime is refused, naming it.
    let e = match exec::prepare(&ws, "t/on_stale", &Request::default()) {
        Ok(_) => panic!("a chain holding a stale signature was planned to run"),
        Err(e) => e,
    };
    assert!(
        e.diagnostics
            .iter()
            .any(|d| d.item == "runtimes/stale_runtime" && d.diagnostic.code == "R706"),
        "{e}"
    );
    // Positive control: the same tool on the fresh runtime plans.
    exec::prepare(&ws, "t/on_fresh", &Request::default()).expect("fresh chain plans");
}

/// The interpreter the tests run Python tools with: the absolute path of `python3`.
fn python() -> Option<String> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let p = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!p.is_empty()).then_some(p)
}

/// A system space shaped like rye's: `python_function_runtime.yaml` as rye ships it (its
/// `anchor:`, an interpreter that falls back to Python, a `-c` loader that imports the tool
/// by path, so the tool's folder is not on `sys.path` by itself), and the corpus's
/// `test/anchor_demo` (a package: `__init__.py`, `helpers.py`, a tool that imports it).
fn anchor_space(python: &str) -> String {
    format!(
        r#"//- sys/.ai/tools/rye/core/runtimes/python_function_runtime.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
category: rye/core/runtimes
description: "Python function runtime"
env_config:
  interpreter:
    type: venv_python
    venv_path: .venv
    var: RYE_PYTHON
    fallback: {python}
  env:
    PYTHONUNBUFFERED: "1"
anchor:
  enabled: true
  mode: auto
  markers_any: ["__init__.py", "pyproject.toml"]
  root: tool_dir
  lib: lib/python
  env_paths:
    PYTHONPATH:
      prepend: ["{{anchor_path}}", "{{runtime_lib}}"]
config:
  command: "${{RYE_PYTHON}}"
  args:
    - "-c"
    - "import sys,json,importlib.util\nspec=importlib.util.spec_from_file_location('tool',sys.argv[1])\nmod=importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\nprint(json.dumps(mod.execute(json.loads(sys.argv[2]))))"
    - "{{tool_path}}"
    - "{{params_json}}"
  timeout: 30
//- sys/.ai/tools/rye/core/runtimes/lib/python/runtime_helper.py
SUFFIX = "!"
//- sys/.ai/tools/test/anchor_demo/__init__.py
//- sys/.ai/tools/test/anchor_demo/helpers.py
from runtime_helper import SUFFIX


def format_greeting(name):
    return "Hello, " + name + SUFFIX
//- sys/.ai/tools/test/anchor_demo/anchor_demo.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rye/core/runtimes/python_function_runtime"
__category__ = "test/anchor_demo"
__tool_description__ = "Demo tool testing anchor system with sibling imports"

from helpers import format_greeting

CONFIG_SCHEMA = {{"type": "object", "properties": {{"name": {{"type": "string"}}}}, "required": ["name"]}}


def execute(params):
    return {{"greeting": format_greeting(params["name"])}}
"#
    )
}

/// Causes 13 and 14: rye's `anchor:` puts the tool's folder and the runtime's `lib` on
/// `PYTHONPATH` (`primitive_executor.py` `_anchor_applies`, `_resolve_anchor_path`,
/// `_compute_anchor_context`, `_apply_anchor_env`), so `from helpers import …` works; kiwi
/// does the same, shows it in the environment, and the run writes no `__pycache__` into
/// the system space it imports from.
#[test]
fn anchor_puts_the_tool_folder_on_pythonpath_and_nothing_is_written_into_the_space() {
    let Some(py) = python() else {
        eprintln!("no python3: skipped");
        return;
    };
    let f = Fixture::new(&anchor_space(&py));
    let sys = f.root().join("sys");
    let sys_s = sys.display().to_string();
    let ws = f.workspace(&[("PATH", SYSTEM_PATH), ("KIWI_SPACES", &sys_s)]);
    let tool = ws
        .get(ItemType::Tool, "test/anchor_demo/anchor_demo")
        .expect("the tool")
        .clone();
    // The environment `kiwi env` shows: PYTHONPATH = the tool's folder, then the runtime's lib.
    let links = kiwi_kernel::chain::resolve(&ws, &tool)
        .expect("chain")
        .links;
    let built = kiwi_kernel::check::build_env(&ws, &links);
    let tool_dir = sys.join(".ai/tools/test/anchor_demo");
    let lib = sys.join(".ai/tools/rye/core/runtimes/lib/python");
    assert_eq!(
        built.vars.get("PYTHONPATH").map(String::as_str),
        Some(format!("{}:{}", tool_dir.display(), lib.display()).as_str()),
        "{:?}",
        built.vars
    );
    // The run imports the helpers (which import the runtime's lib).
    let plan = exec::prepare(
        &ws,
        "test/anchor_demo/anchor_demo",
        &Request {
            params: serde_json::json!({"name": "Ada"}),
            ..Request::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = common::rt()
        .block_on(exec::run(
            &plan,
            &exec::NullSink,
            &exec::CancellationToken::new(),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    let exec::Output::Process(p) = &r.output else {
        panic!("not a process")
    };
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    assert!(p.stdout.contains("Hello, Ada!"), "{}", p.stdout);
    // Nothing was written into the system space: no bytecode cache beside the modules.
    let mut stack = vec![sys.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            assert!(
                !p.ends_with("__pycache__"),
                "the run wrote {} into the system space",
                p.display()
            );
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
}

/// Items written here in the shapes rye's runtime reads (its `python_ast` and
/// `markdown_frontmatter` parsers, `markdown_xml`, the extractors' `validation_schema`s, its
/// signing rule), freshly signed: kiwi stays quiet on them (no error, no warning).
#[test]
fn items_in_ryes_shapes_freshly_signed_get_no_error_or_warning() {
    let greet_body = tool_body(
        "runtimes/script_runtime",
        "python",
        "__category__ = \"demo\"\n\nCONFIG_SCHEMA = {\n    \"type\": \"object\",\n    \"properties\": {\"name\": {\"type\": \"string\", \"description\": \"Who\"}},\n    \"required\": [\"name\"],\n}\n\n\ndef main():\n    print(\"hi\")\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    let runtime_body = tool_body(
        "subprocess",
        "runtime",
        "__category__ = \"runtimes\"\n\nENV_CONFIG = {\"interpreter\": {\"type\": \"local_binary\", \"binary\": \"python3\", \"var\": \"RT_PYTHON\", \"fallback\": \"/usr/bin/python3\"}}\nCONFIG = {\"command\": \"${RT_PYTHON}\", \"args\": [\"{tool_path}\", \"--params\", \"{params_json}\"], \"timeout\": 60}\n",
    );
    let kn_body = "# Greeting\n\nSay hello by name.";
    let knowledge = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP} -->\n---\nid: greeting\ntitle: Greeting\nentry_type: pattern\ncategory: demo\nversion: \"1.0.0\"\ntags:\n  - demo\n---\n\n{kn_body}\n",
        sha(kn_body)
    );
    let xml = "<directive name=\"greet\" version=\"1.0.0\">\n  <metadata>\n    <description>Greet someone</description>\n    <category>demo</category>\n    <author>me</author>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"demo/greet\"/>\n    </permissions>\n  </metadata>\n  <inputs>\n    <input name=\"name\" type=\"string\" required=\"true\">Who</input>\n  </inputs>\n  <process>\n    <step name=\"greet\">\n      <description>Greet</description>\n      <execute item_type=\"tool\" item_id=\"demo/greet\">\n        <param name=\"name\" value=\"{input:name}\"/>\n      </execute>\n    </step>\n  </process>\n</directive>";
    let directive = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP} -->\n# Greet\n\n```xml\n{xml}\n```\n",
        sha(xml)
    );
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/demo/greet.py\n{}//- project/.ai/tools/runtimes/script_runtime.py\n{}//- project/.ai/knowledge/demo/greeting.md\n{knowledge}//- project/.ai/directives/demo/greet.md\n{directive}",
        signed_tool(&greet_body),
        signed_tool(&runtime_body),
    ));
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    assert_eq!(
        ws.items_in(kiwi_kernel::ids::Space::Project).len(),
        4,
        "every item was read"
    );
    let out = f.check(&[("PATH", SYSTEM_PATH)]);
    let loud: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" error ") || l.contains(" warning "))
        .collect();
    assert!(loud.is_empty(), "{out}");
}
