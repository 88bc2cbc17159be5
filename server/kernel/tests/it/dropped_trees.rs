//! A workspace keeps no element tree of a directive it read from disk (a language server of
//! 5,000 directives held 65 MB of them, `kiwi-bench lsp`). Every check and feature that reads
//! the tree reads the file again, and answers exactly as it does for the same file parsed
//! whole (an open document): on the README's demo, on rye's real directives, and on a P207
//! range and a D114 fix, the two diagnostics that read the tree in the cross-item checks.

use crate::common::Fixture;
use crate::corpus::corpus;
use kiwi_kernel::check;
use kiwi_kernel::ide;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::workspace::{parse_item, Item, Workspace};
use std::path::Path;
use std::sync::Arc;

/// Everything the checks and the features answer for `item`, at offsets across the file.
fn answers(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut out = format!("{:?}\n", check::check_item(ws, item));
    out += &format!("{:?}\n", ide::symbols(item));
    out += &format!("{:?}\n", ide::folding_ranges(item));
    out += &format!("{:?}\n", ide::semantic_tokens(ws, item));
    out += &format!("{:?}\n", ide::document_links(ws, item));
    out += &format!("{:?}\n", ide::code_lenses(ws, item));
    out += &format!("{:?}\n", ide::inlay_hints(ws, item));
    out += &format!("{:?}\n", ide::format(item));
    let text = item.text();
    let mut at = 0;
    while at < text.len() {
        if text.is_char_boundary(at) {
            out += &format!("{at}: {:?}\n", ide::completions(ws, item, at));
            out += &format!("{at}: {:?}\n", ide::signature_help(ws, item, at));
            out += &format!("{at}: {:?}\n", ide::hover(ws, item, at));
            out += &format!("{at}: {:?}\n", ide::definition(ws, item, at));
        }
        at += 23;
    }
    out
}

/// Compare every directive of `ws` read from disk with the same file parsed whole; the
/// number of directives compared.
fn same_answers(ws: &Workspace) -> usize {
    let mut n = 0;
    for item in ws.items() {
        if item.item_type != ItemType::Directive || item.is_builtin() {
            continue;
        }
        let d = item.directive().expect("a directive");
        assert!(
            d.root.is_none(),
            "{}: the tree of a file read from disk is kept",
            item.id
        );
        let whole = Arc::new(
            parse_item(
                item.item_type,
                item.id.clone(),
                item.space,
                item.path.clone(),
                item.text().as_bytes(),
            )
            .expect("an item"),
        );
        let kept = whole.directive().expect("a directive");
        assert_eq!(d.tree_dropped, kept.root.is_some(), "{}", item.id);
        assert_eq!(d.has_root(), kept.has_root(), "{}", item.id);
        let (from_disk, parsed_whole) = (answers(ws, item), answers(ws, &whole));
        if from_disk != parsed_whole {
            let line = from_disk
                .lines()
                .zip(parsed_whole.lines())
                .find(|(a, b)| a != b);
            panic!("{}: a different answer without the tree: {line:?}", item.id);
        }
        n += 1;
    }
    n
}

#[test]
fn a_directive_read_from_disk_answers_as_one_parsed_whole() {
    // P207 (its range is the pattern's text, found in the tree) and D114 (its fix inserts
    // the parameter as the call's first child, found in the tree).
    let f = Fixture::new(
        r#"//- project/.ai/tools/fmt/json.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
CONFIG_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "indent": {"type": "integer"}}, "required": ["path", "indent"]}
//- project/.ai/directives/fmt.md
# fmt

```xml
<directive name="fmt" version="1.0.0">
  <metadata>
    <description>d</description>
    <permissions>
      <execute><tool>fmt.*</tool></execute>
      <execute><tool>fmt.jsn.*</tool></execute>
    </permissions>
  </metadata>
  <process>
    <step name="a">
      <execute item_type="tool" item_id="fmt/json"/>
    </step>
    <step name="b">
      <execute item_type="tool" item_id="fmt/json">
        <param name="path" value="a"/>
      </execute>
    </step>
  </process>
</directive>
```
"#,
    );
    let ws = f.workspace(&[]);
    let item = ws
        .get(ItemType::Directive, "fmt")
        .expect("the directive")
        .clone();
    let diags = check::check_item(&ws, &item);
    assert!(
        diags
            .iter()
            .any(|d| d.code == kiwi_kernel::diag::Code::P207),
        "{diags:?}"
    );
    assert!(
        diags
            .iter()
            .any(|d| d.code == kiwi_kernel::diag::Code::D114 && !d.fixes.is_empty()),
        "{diags:?}"
    );
    assert_eq!(same_answers(&ws), 1);

    // The README's demo.
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    let ws = Workspace::load(Some(demo), f.host(&[]));
    assert!(same_answers(&ws) >= 3);

    // rye's system space, and its end-to-end project with the system space as an extra one.
    let Some(corpus) = corpus() else { return };
    let system = corpus.join("rye-os/rye/rye");
    let spaces = system.display().to_string();
    let n = same_answers(&Workspace::load(Some(system), f.host(&[])))
        + same_answers(&Workspace::load(
            Some(corpus.join("rye-os/tests/e2e")),
            f.host(&[("KIWI_SPACES", spaces.as_str())]),
        ));
    assert!(n >= 34, "{n} directives compared");
}
