//! Work that must not grow with the square of the workspace (issue 25): counted, not timed
//! (speed targets live in kiwi-bench).

use crate::common::Fixture;
use kiwi_kernel::check;
use kiwi_kernel::ids::{ItemType, Space};
use std::fmt::Write;

/// A project of `n` directives, each granting a namespace that none of its own references
/// covers (rye's shape: `rye.file-system.*` in a directive that calls no such tool), beside a
/// few tools: every directive's grant is matched against the ids of the workspace.
fn uncovered_grants(n: usize) -> Fixture {
    let mut spec = String::new();
    for t in 0..10 {
        write!(
            spec,
            "//- project/.ai/tools/cat{t}/tool_{t}.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"python_runtime\"\n"
        )
        .unwrap();
    }
    for i in 0..n {
        // One grant that matches a tool, one whose namespace no item has, one that matches
        // nothing in a namespace that exists (P207).
        write!(
            spec,
            r#"//- project/.ai/directives/d/directive_{i}.md
# directive {i}

```xml
<directive name="directive_{i}" version="1.0.0">
  <metadata>
    <description>d {i}</description>
    <permissions>
      <execute><tool>cat{}.*</tool></execute>
      <execute><tool>elsewhere.x{i}.*</tool></execute>
      <execute><tool>cat{}.missing_{i}</tool></execute>
    </permissions>
  </metadata>
  <process>
    <step name="a"><action>nothing</action></step>
  </process>
</directive>
```
"#,
            i % 10,
            i % 10
        )
        .unwrap();
    }
    Fixture::new(&spec)
}

/// A check of every item collects the ids of the workspace a bounded number of times (one
/// index per type and space restriction, shared by every check until the workspace changes),
/// not once per directive whose grant its own references do not cover.
#[test]
fn a_check_collects_the_ids_once_per_workspace_generation() {
    let n = 300;
    let f = uncovered_grants(n);
    let mut ws = f.workspace(&[]);
    let items: Vec<_> = ws.items_in(Space::Project).into_iter().cloned().collect();
    assert_eq!(items.len(), n + 10);
    let mut p207 = 0;
    for item in &items {
        p207 += check::check_item(&ws, item)
            .iter()
            .filter(|d| d.code == kiwi_kernel::diag::Code::P207)
            .count();
    }
    // The rule still reports each grant that matches nothing.
    assert_eq!(p207, n, "one P207 per directive");
    let bound = ItemType::ALL.len() * (Space::ALL.len() + 1);
    let scans = ws.id_scans();
    assert!(
        scans <= bound,
        "checking {} items collected every id {scans} times (at most {bound})",
        items.len()
    );
    // The index follows the workspace: a tool added later is one of its ids, and the grant
    // that matched nothing now matches it.
    let before = ws.ids(ItemType::Tool).len();
    let dir = f.project().join(".ai/tools/cat0");
    std::fs::write(
        dir.join("missing_0.py"),
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"python_runtime\"\n",
    )
    .unwrap();
    ws.refresh_path(&dir.join("missing_0.py"));
    assert_eq!(ws.ids(ItemType::Tool).len(), before + 1);
    let d0 = ws
        .get(ItemType::Directive, "d/directive_0")
        .expect("directive_0")
        .clone();
    assert!(
        !check::check_item(&ws, &d0)
            .iter()
            .any(|d| d.code == kiwi_kernel::diag::Code::P207),
        "the grant of cat0/missing_0 matches the new tool"
    );
}

/// One parse per file per load: a server that warms up (loads the workspace and builds its
/// search index, as `kiwi mcp` does at start) and then lists its prompts (the MCP watcher's
/// fingerprint of the prompt list, `prompts/list`) reads and parses no file twice.
#[test]
fn a_load_parses_each_file_once() {
    let f = uncovered_grants(40);
    // A directive with inputs: the prompt list shows them.
    std::fs::write(
        f.project().join(".ai/directives/d/with_inputs.md"),
        r#"# with inputs

```xml
<directive name="with_inputs" version="1.0.0">
  <metadata><description>takes inputs</description></metadata>
  <inputs>
    <input name="target" type="string" required="true">what to take</input>
    <input name="limit" type="integer" default="3">how many</input>
  </inputs>
  <process><step name="a"><action>take {input:target}</action></step></process>
</directive>
```
"#,
    )
    .unwrap();
    let agent = crate::common::Agent::new(&f);
    agent.service.warm();
    let prompts = agent.service.directives(None).unwrap();
    let again = agent.service.directives(None).unwrap();
    assert_eq!(prompts, again);
    let with_inputs = prompts
        .iter()
        .find(|p| p.0 == "d/with_inputs")
        .expect("the directive with inputs is listed");
    assert_eq!(with_inputs.1.as_deref(), Some("takes inputs"));
    assert_eq!(
        with_inputs.2,
        vec![
            ("target".to_string(), "what to take".to_string(), true),
            ("limit".to_string(), "how many".to_string(), false),
        ]
    );
    assert_eq!(prompts.iter().filter(|p| p.0.starts_with("d/")).count(), 41);
    let ws = agent.service.workspace(None).unwrap();
    let again = ws.parsed_again();
    assert!(
        again.is_empty(),
        "{} files parsed more than once, e.g. {:?}",
        again.len(),
        again.first()
    );
}

/// A project of `n` tools in ryeos's format (a K007 hint each: no bundle here) and `n`
/// runtimes whose config templates a name only their callers give (each runtime's check asks
/// which tools run through it), each with one caller.
fn ryeos_tools_and_runtimes(n: usize) -> Fixture {
    let mut spec = String::new();
    for i in 0..n {
        write!(
            spec,
            r#"//- project/.ai/tools/ryeos/tool_{i}.py
# ryeos-tool:
#   version: "1.0.0"
#   executor_id: "tool:ryeos/core/runtimes/python/script"
print("x")
//- project/.ai/tools/rt/runtime_{i}.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
config:
  command: "python3"
  args: ["{{tool_path}}", "{{given_by_caller_{i}}}"]
//- project/.ai/tools/use/caller_{i}.yaml
version: "1.0.0"
tool_type: python
executor_id: rt/runtime_{i}
config:
  given_by_caller_{i}: "x"
"#
        )
        .unwrap();
    }
    Fixture::new(&spec)
}

/// A check of every item walks the items of the workspace a bounded number of times (one
/// derived index per concern and workspace generation), not once per item in ryeos's format
/// nor once per runtime (whose callers give its names).
#[test]
fn a_check_walks_the_items_once_per_workspace_generation() {
    let n = 150;
    let f = ryeos_tools_and_runtimes(n);
    let ws = f.workspace(&[]);
    let items: Vec<_> = ws.items_in(Space::Project).into_iter().cloned().collect();
    assert_eq!(items.len(), 3 * n);
    let before = ws.item_walks();
    let diags: Vec<_> = items
        .iter()
        .flat_map(|i| check::check_item(&ws, i))
        .collect();
    let count = |c| diags.iter().filter(|d| d.code == c).count();
    use kiwi_kernel::diag::Code;
    // Each ryeos tool's `tool:` executor names an item of a bundle no space holds: one K007
    // hint on each (issue 29: kiwi cannot tell what it names), found without a walk per tool.
    assert_eq!(count(Code::K007), n, "{diags:#?}");
    // Every runtime's templated name is given by its caller's config.
    assert_eq!(count(Code::T307), 0, "{diags:#?}");
    let walks = ws.item_walks() - before;
    assert!(
        walks <= 4,
        "checking {} items walked every item {walks} times (at most 4)",
        items.len()
    );
    // The indexes follow the workspace: once its caller no longer gives the name, the
    // runtime's name is unknown (T307).
    let mut ws = ws;
    let caller = f.project().join(".ai/tools/use/caller_0.yaml");
    std::fs::write(
        &caller,
        "version: \"1.0.0\"\ntool_type: python\nexecutor_id: rt/runtime_0\nconfig:\n  other: \"x\"\n",
    )
    .unwrap();
    ws.refresh_path(&caller);
    let rt0 = ws
        .get(ItemType::Tool, "rt/runtime_0")
        .expect("runtime_0")
        .clone();
    assert!(
        check::check_item(&ws, &rt0)
            .iter()
            .any(|d| d.code == Code::T307),
        "the caller no longer gives the name"
    );
}

/// One parse per file per check: `kiwi check` checks the project's items, whose rules ask
/// for the ids of every space (a suggestion for a reference that names nothing) and for
/// indexes of every item. Whether a Python file of another space is an item depends on its
/// contents; finding that out parses it, and that parse is the one the item keeps: no file
/// of any space is read and parsed twice (the user space's Python files were parsed once for
/// the ids, one at a time under the ids' lock, then again by the first index of every item).
#[test]
fn a_check_parses_each_file_of_every_space_once() {
    let mut spec = String::new();
    for i in 0..30 {
        write!(
            spec,
            "//- user/tools/lib/tool_{i}.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"python_runtime\"\n//- user/tools/lib/helper_{i}.py\ndef helper():\n    return {i}\n"
        )
        .unwrap();
    }
    spec.push_str(
        r#"//- project/.ai/directives/d/calls_missing.md
# calls a tool that is not there

```xml
<directive name="calls_missing" version="1.0.0">
  <metadata>
    <description>names a tool no space has</description>
    <permissions><execute><tool>lib.*</tool></execute></permissions>
  </metadata>
  <process>
    <step name="a"><execute item_type="tool" item_id="lib/tool_nine_hundred" /></step>
  </process>
</directive>
```
"#,
    );
    let f = Fixture::new(&spec);
    let ws = f.workspace(&[]);
    // As `kiwi check PROJECT` does.
    let items: Vec<_> = ws.items_in(Space::Project).into_iter().cloned().collect();
    assert_eq!(items.len(), 1);
    let diags = check::check_items(&ws, &items);
    assert!(
        diags[0].iter().any(|d| d.message.contains("lib/tool_")),
        "the missing tool gets suggestions from the user space: {:#?}",
        diags[0]
    );
    assert_eq!(
        ws.ids(ItemType::Tool)
            .iter()
            .filter(|i| i.starts_with("lib/"))
            .count(),
        30
    );
    // What the rule of another item does meanwhile (on another thread): build an index of
    // every item.
    assert!(ws.items().count() > 30);
    let again = ws.parsed_again();
    assert!(
        again.is_empty(),
        "{} files parsed more than once, e.g. {:?}",
        again.len(),
        again.first()
    );
}

/// `kiwi check` parses the tools of the spaces it does not check without their file checks
/// ([`Workspace::file_checks_only_in`]): the checked space's diagnostics are those of a
/// workspace that made every file check, though its items run through, resolve to and
/// suggest the other spaces' broken tools; the other spaces' tools were indeed parsed without
/// them; and what asks for one of those tools' diagnostics (a run checks every link of its
/// chain) gets them whole.
#[test]
fn a_check_of_one_space_reports_what_a_full_parse_reports() {
    let spec = r#"//- project/.ai/config.yaml
spaces:
  - ../lib
//- lib/.ai/tools/rt/broken_runtime.py
__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
CONFIG = {"command": "python3", "args": ["{tool_path}", "{LIB_FLAG}"], "env": {"X": "${LIB_HOME}"}}
if True:
    __category__ = "nested"
def broken(:
    pass
//- lib/.ai/tools/x/bad.yaml
tool_type: python
executor_id: nowhere/missing
config: {timeout: "soon"}
//- user/tools/u/user_broken.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/broken_runtime"
def nope(
//- project/.ai/tools/p/uses.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/broken_runtime"
CONFIG = {"timeout": 30}
//- project/.ai/tools/p/own_broken.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/broken_runtime"
def own(:
    pass
//- project/.ai/tools/p/through_yaml.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "x/bad"
//- lib/.ai/tools/x/caller.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "p/proj_runtime"
CONFIG = {"CALLER_KEY": "1"}
if True:
    __category__ = "nested"
//- project/.ai/tools/p/proj_runtime.py
__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
CONFIG = {"command": "python3", "args": ["{tool_path}", "{CALLER_KEY}", "{NOBODY_GIVES_IT}"]}
//- lib/.ai/knowledge/k/note.md
---
id: k/note
title: a note nothing names
---
Text.
//- lib/.ai/directives/x/other.md
# other

```xml
<directive name="other" version="1.0.0"><process><step name="s"><action>a</action></step></process></directive>
```
//- project/.ai/directives/d/calls.md
# calls

```xml
<directive name="calls" version="1.0.0">
  <metadata>
    <description>calls tools of every space</description>
    <permissions>
      <execute><tool>rt.*</tool></execute>
      <execute><tool>u.*</tool></execute>
    </permissions>
  </metadata>
  <process>
    <step name="a"><execute item_type="tool" item_id="u/user_broken"/></step>
    <step name="b"><execute item_type="tool" item_id="rt/broken_runtim"/></step>
    <step name="c"><execute item_type="tool" item_id="x/bad"/></step>
  </process>
</directive>
```
"#;
    let f = Fixture::new(spec);
    let rendered = |ws: &kiwi_kernel::workspace::Workspace| {
        let mut items: Vec<_> = ws.items_in(Space::Project);
        items.sort_by(|a, b| a.path.cmp(&b.path));
        let mut out = String::new();
        for item in items {
            let diags = check::check_item(ws, item);
            out.push_str(&crate::common::render(item, &diags, f.root()));
        }
        out
    };
    let full = f.workspace(&[]);
    let mut only = f.workspace(&[]);
    only.file_checks_only_in(Some(Space::Project));
    let expected = rendered(&full);
    assert_eq!(rendered(&only), expected);
    // Only the other spaces' tools were read (the index of who runs through whom is of
    // tools): no knowledge entry or directive that no checked item names.
    let read: Vec<String> = only
        .parse_counts()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(p, _)| p.strip_prefix(f.root()).unwrap().display().to_string())
        .filter(|p| !p.starts_with("project/"))
        .collect();
    assert_eq!(
        read,
        [
            "lib/.ai/tools/rt/broken_runtime.py",
            "lib/.ai/tools/x/bad.yaml",
            "lib/.ai/tools/x/caller.py",
            "user/tools/u/user_broken.py"
        ]
    );
    // (`{CALLER_KEY}` is given by the tool of another space that runs through the runtime.)
    assert!(!expected.contains("CALLER_KEY"), "{expected}");
    for code in ["T301", "T304", "K003", "T307"] {
        assert!(expected.contains(code), "{code} in:\n{expected}");
    }
    assert!(expected.contains("own_broken.py"), "{expected}");
    // The other spaces' tools: parsed (they were resolved, run through and suggested), with
    // their file checks in the full workspace only; asked for, their diagnostics are whole.
    let t301 = |d: &[kiwi_kernel::diag::Diagnostic]| {
        d.iter().any(|d| d.code == kiwi_kernel::diag::Code::T301)
    };
    let tool = |ws: &kiwi_kernel::workspace::Workspace, id: &str| {
        ws.peek_id(ItemType::Tool, id).expect(id)
    };
    for id in ["rt/broken_runtime", "u/user_broken", "x/caller"] {
        let (a, b) = (tool(&full, id), tool(&only, id));
        assert!(t301(&a.tool().unwrap().diagnostics), "{id}: checked");
        assert!(
            !t301(&b.tool().unwrap().diagnostics),
            "{id}: no file checks outside the checked space"
        );
        assert_eq!(b.parse_diagnostics(), a.parse_diagnostics(), "{id}");
        assert_eq!(
            check::check_item(&only, &b),
            check::check_item(&full, &a),
            "{id}"
        );
    }
    assert!(t301(
        &tool(&only, "p/own_broken").tool().unwrap().diagnostics
    ));
}
