//! Issue 23, causes 1-9: a diagnostic is an error only where rye's runtime
//! (`../shared/reference/rye-os/`) fails or refuses, a warning where it accepts something
//! very likely a mistake, and kiwi's own advice is at most a hint. One fixture of the real
//! shape per cause; each test also keeps the true defect next to the false alarm reported.

use crate::common;
use common::Fixture;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::workspace::{Lookup, Workspace};

/// The lines of `out` that carry `code`.
fn lines_with<'a>(out: &'a str, code: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.contains(&format!(" {code} ")))
        .collect()
}

/// Cause 1: rye's knowledge extractor declares `entry_type` `type: string` and nothing more
/// (`knowledge_extractor.yaml`, checked by `validators.validate_field`): the values rye
/// itself writes are no defect. A non-string still is (rye's `sign` refuses it).
#[test]
fn c1_entry_type_is_any_string() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/threads/t1.md
---
id: t1
title: A transcript
entry_type: thread_transcript
---
body
//- project/.ai/knowledge/graphs/g1.md
---
id: g1
title: A graph state
entry_type: graph_state
---
body
//- project/.ai/knowledge/ctx.md
---
id: ctx
title: Context
entry_type: context
---
body
//- project/.ai/knowledge/listed.md
---
id: listed
title: Listed
entry_type: [pattern]
---
body
"#,
    );
    let out = f.check(&[]);
    let n603 = lines_with(&out, "N603");
    assert_eq!(n603.len(), 1, "{out}");
    assert!(
        n603[0].contains("listed.md") && n603[0].contains(" warning "),
        "{out}"
    );
}

/// Cause 2: rye never resolves a knowledge entry's references (no code of its runtime
/// reads `references`, `extends` or `used_by`); a path to a documentation file or a URL
/// is documentation, not an item id. A reference shaped like an id that names nothing is
/// still worth a warning (not an error: nothing fails).
#[test]
fn c2_references_to_files_are_not_item_ids() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/rye/agent/overview.md
---
id: overview
title: Overview
entry_type: reference
references:
  - docs/internals/thread-lifecycle.md
  - ../README.md
  - ./notes.txt
  - "https://example.com/rye"
  - nowhere/missing-entry
---
body
"#,
    );
    let out = f.check(&[]);
    assert!(lines_with(&out, "K006").is_empty(), "{out}");
    let n604 = lines_with(&out, "N604");
    assert_eq!(n604.len(), 1, "{out}");
    assert!(
        n604[0].contains("nowhere/missing-entry") && n604[0].contains(" warning "),
        "{out}"
    );
}

/// Cause 3: a builtin item never makes a user's bare reference ambiguous: the user's
/// `guides/tool-format` is what `tool-format` names, not a clash with kiwi's own
/// `core/tool-format`.
#[test]
fn c3_builtin_items_never_make_a_reference_ambiguous() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/guides/tool-format.md
---
id: tool-format
title: Our tool format
entry_type: reference
---
body
//- project/.ai/knowledge/guides/using.md
---
id: using
title: Using
entry_type: reference
references: [tool-format]
---
body
//- project/.ai/directives/read_format.md
# read_format

```xml
<directive name="read_format" version="1.0.0">
  <metadata>
    <description>read the format</description>
    <permissions>
      <load><knowledge>*</knowledge></load>
    </permissions>
  </metadata>
  <process>
    <step name="a">
      <load item_type="knowledge" item_id="tool-format"/>
    </step>
  </process>
</directive>
```
"#,
    );
    let ws = f.workspace(&[]);
    assert!(
        ws.get(ItemType::Knowledge, "core/tool-format").is_some(),
        "the builtin knowledge is there"
    );
    match ws.find(ItemType::Knowledge, "tool-format", None) {
        Lookup::Found(i) => assert_eq!(i.id, "guides/tool-format"),
        other => panic!("{other:?}"),
    }
    let out = f.check(&[]);
    assert!(lines_with(&out, "K004").is_empty(), "{out}");
}

/// Cause 4: rye's `KnowledgeHandler.resolve` looks an entry up with
/// `search_path.rglob(f"{entry_id}.md")`: `threads/thread-lifecycle` names
/// `rye/agent/threads/thread-lifecycle` (and any other entry whose path ends with it).
#[test]
fn c4_references_resolve_as_rye_looks_entries_up() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/rye/agent/threads/thread-lifecycle.md
---
id: thread-lifecycle
title: Thread lifecycle
entry_type: reference
---
body
//- project/.ai/knowledge/rye/agent/threads/other/thread-lifecycle.md
---
id: thread-lifecycle
title: Another one
entry_type: reference
---
body
//- project/.ai/knowledge/rye/agent/overview.md
---
id: overview
title: Overview
entry_type: reference
references:
  - threads/thread-lifecycle
  - agent/threads/thread-lifecycle
extends: [thread-lifecycle]
---
body
"#,
    );
    let out = f.check(&[]);
    assert!(lines_with(&out, "N604").is_empty(), "{out}");
    assert!(lines_with(&out, "K004").is_empty(), "{out}");
}

/// Cause 5: rye's `{system_space}` is the root of the space, the folder that holds `.ai`
/// (`path_utils.get_system_space`: "the BASE path ..., not the AI_DIR folder", injected by
/// `PrimitiveExecutor._build_execution_config`).
#[test]
fn c5_system_space_is_the_folder_holding_ai() {
    let f = Fixture::new(
        r#"//- system/.ai/tools/rye/core/runtimes/lib/runner.py
print("hi")
//- project/.ai/tools/run_it.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "subprocess"
CONFIG = {
    "command": "python3",
    "args": ["{system_space}/.ai/tools/rye/core/runtimes/lib/runner.py"],
}
//- project/.ai/tools/run_missing.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "subprocess"
CONFIG = {
    "command": "python3",
    "args": ["{system_space}/.ai/tools/rye/core/runtimes/lib/gone.py"],
}
"#,
    );
    let sys = f.root().join("system").display().to_string();
    let out = f.check(&[("KIWI_SPACES", &sys)]);
    let t309 = lines_with(&out, "T309");
    assert_eq!(t309.len(), 1, "{out}");
    assert!(t309[0].contains("run_missing.py"), "{out}");
    assert!(
        t309[0].contains("`{system_space}` is `$TMP/system` here"),
        "{out}"
    );
}

/// Cause 6: lilux's `EnvResolver._resolve_interpreter` reads the keys it knows with
/// `config.get` and ignores every other: a key kiwi does not read is no defect unless it is
/// a misspelling of one it does (then what the author meant is lost). Resolving to the
/// `fallback` is the designed behaviour (`elif "fallback" in config`), at most a hint; and
/// when the interpreter has keys kiwi does not read (`search_roots`), kiwi cannot say where
/// rye finds it.
#[test]
fn c6_resolver_keys_and_fallbacks_as_rye_reads_them() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/rye/core/runtimes/python/function.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
env_config:
  interpreter:
    type: local_binary
    binary: python
    candidates: [python3]
    search_roots: ["{anchor_path}"]
    search_paths: [".venv/bin"]
    var: RYE_PYTHON
    fallback: python3
config:
  command: "${RYE_PYTHON}"
  args: ["{tool_path}"]
//- project/.ai/tools/rye/core/runtimes/python/venv.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
env_config:
  interpreter:
    type: venv_python
    venv_path: .venv
    var: RYE_VENV_PYTHON
    fallback: python3
config:
  command: "${RYE_VENV_PYTHON}"
  args: ["{tool_path}"]
//- project/.ai/tools/rye/core/runtimes/python/typo.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
env_config:
  interpreter:
    type: venv_python
    venv_pth: .venv
    var: RYE_TYPO_PYTHON
    fallback: python3
config:
  command: "${RYE_TYPO_PYTHON}"
  args: ["{tool_path}"]
"#,
    );
    f.executable("bin/python3");
    let out = f.check(&[]);
    let e406 = lines_with(&out, "E406");
    assert_eq!(e406.len(), 1, "{out}");
    assert!(
        e406[0].contains("typo.yaml") && e406[0].contains("venv_pth"),
        "{out}"
    );
    assert!(
        !out.lines()
            .any(|l| l.contains("function.yaml") && l.contains(" E40")),
        "{out}"
    );
    for l in lines_with(&out, "E408") {
        assert!(l.contains(" hint "), "{out}");
    }
}

/// Cause 7: rye's `KnowledgeMetadataStrategy` strips the signature line, and a second
/// header comment after it (`<!-- rye:unsigned -->`) is a comment like the first; an empty
/// entry (left behind by rye's own runtime) parses to an empty body in
/// `markdown_frontmatter.parse`, and nothing fails.
#[test]
fn c7_header_comments_and_empty_entries() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/signed_then_unsigned.md
<!-- rye:signed:2026-02-12T23:55:37Z:abc:sig:fp -->
<!-- rye:unsigned -->
---
id: signed_then_unsigned
title: Two headers
entry_type: reference
---
body
//- project/.ai/knowledge/empty.md
//- project/.ai/knowledge/no_frontmatter.md
# Just a title

Some text.
"#,
    );
    let out = f.check(&[]);
    let n601 = lines_with(&out, "N601");
    assert_eq!(n601.len(), 1, "{out}");
    assert!(n601[0].contains("no_frontmatter.md"), "{out}");
}

/// Cause 8: rye's executor runs an element with no `executor_id` only as a chain's root
/// primitive (`PrimitiveExecutor._execute_chain`: `_get_primitive`, else "Unknown
/// primitive"): a YAML file whose `tool_type` names no runnable kind (`config`, ...) is
/// data, not a tool with a broken chain. A runnable type without an executor still is.
#[test]
fn c8_data_files_have_no_chain() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/rye/agent/threads/config/thread.yaml
version: "1.0.0"
tool_type: "config"
category: rye/agent/threads/config
description: "thread limits"
limits:
  turns: 10
//- project/.ai/tools/forgot_executor.yaml
version: "1.0.0"
tool_type: python
description: "a runnable tool without an executor"
"#,
    );
    let out = f.check(&[]);
    let t304 = lines_with(&out, "T304");
    assert_eq!(t304.len(), 1, "{out}");
    assert!(t304[0].contains("forgot_executor.yaml"), "{out}");
    assert!(!out.contains("thread.yaml"), "{out}");
}

/// Cause 9: rye starts a tool's environment from its own process's (`EnvResolver.resolve`:
/// `os.environ.copy()`), and an undefined `${VAR}` becomes "" (`_template_config`), never
/// a refusal: at most a warning. The `RYE_` names are set by rye's own processes (its MCP
/// server sets `RYE_KERNEL_PYTHON`), `_`-names by a graph engine: not the workspace's.
#[test]
fn c9_variables_the_runtime_supplies() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/kernel_tool.yaml
version: "1.0.0"
tool_type: python
executor_id: subprocess
config:
  command: "${RYE_KERNEL_PYTHON}"
  args: ["{tool_path}", "${_now}"]
  env:
    STAMP: "${_now}"
//- project/.ai/tools/undefined_var.yaml
version: "1.0.0"
tool_type: python
executor_id: subprocess
config:
  command: "python3"
  args: ["${NOBODY_SETS_THIS}"]
"#,
    );
    let out = f.check(&[]);
    let t308 = lines_with(&out, "T308");
    assert_eq!(t308.len(), 1, "{out}");
    assert!(
        t308[0].contains("NOBODY_SETS_THIS") && t308[0].contains(" warning "),
        "{out}"
    );
}

/// Items written for this test in the shapes rye's runtime reads (its `markdown_xml` and
/// `markdown_frontmatter` parsers, the extractors' `validation_schema`, the executor's
/// chain of `executor_id`s ending at a primitive, lilux's resolver keys): kiwi is quiet.
#[test]
fn own_rye_items_are_quiet() {
    let project = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rye-own");
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let py = bin.join("python3");
    std::fs::write(&py, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let home = tmp.path().display().to_string();
    let path = bin.display().to_string();
    let host =
        kiwi_kernel::context::Host::for_tests(&[("HOME", home.as_str()), ("PATH", path.as_str())]);
    let ws = Workspace::load(Some(project.clone()), host);
    let items = ws.items_in(Space::Project);
    assert!(items.len() >= 7, "{} items", items.len());
    let mut out = String::new();
    for item in items {
        let diags = kiwi_kernel::check::check_item(&ws, item);
        out.push_str(&common::render(item, &diags, &project));
    }
    assert_eq!(out, "");
}
