//! Quick fixes must not create diagnostics: every fix of every diagnostic of the fixtures is
//! applied to its file, the file re-checked, and no diagnostic may appear that was not there
//! before (by code and message).

use crate::common::Fixture;
use kiwi_kernel::check;
use kiwi_kernel::diag::{Code, Fix};
use kiwi_kernel::ids::Space;
use kiwi_kernel::workspace::{parse_item, Workspace};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

fn apply(text: &str, fix: &Fix) -> String {
    let mut edits = fix.edits.clone();
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(e.range.start..e.range.end, &e.new_text);
    }
    out
}

/// Apply every fix of every project and user item of `ws`; returns how many were applied
/// and the failures (a fix and the diagnostics it created).
fn apply_every_fix(ws: &Workspace, root: &Path) -> (usize, Vec<String>) {
    let mut items: Vec<_> = ws.items_in(Space::Project);
    items.extend(ws.items_in(Space::User));
    let items: Vec<_> = items.into_iter().cloned().collect();
    let mut applied = 0;
    let mut failures = Vec::new();
    for item in items {
        let before = check::check_item(ws, &item);
        let known: BTreeSet<(String, String)> = before
            .iter()
            .map(|d| (d.code.to_string(), d.message.clone()))
            .collect();
        for d in &before {
            for fix in &d.fixes {
                if fix.edits.is_empty() {
                    continue;
                }
                applied += 1;
                let text = apply(item.text(), fix);
                let Some(mut fixed) = parse_item(
                    item.item_type,
                    item.id.clone(),
                    item.space,
                    item.path.clone(),
                    text.as_bytes(),
                ) else {
                    failures.push(format!("{}: `{}` made it unreadable", d.code, fix.title));
                    continue;
                };
                fixed.script = item.script.clone();
                let mut ws2 = ws.clone();
                let fixed = Arc::new(fixed);
                ws2.insert(fixed.clone());
                let after = check::check_item(&ws2, &fixed);
                let new: Vec<String> = after
                    .iter()
                    .filter(|a| !known.contains(&(a.code.to_string(), a.message.clone())))
                    .filter(|a| !unlocked(d.code, a.code))
                    .map(|a| format!("{} {}", a.code, a.message))
                    .collect();
                if !new.is_empty() {
                    let rel = item.path.strip_prefix(root).unwrap_or(&item.path);
                    failures.push(format!(
                        "{} {} fix `{}` created: {}",
                        rel.display(),
                        d.code,
                        fix.title,
                        new.join("; ")
                    ));
                }
            }
        }
    }
    (applied, failures)
}

/// Diagnostics a fix may bring to light without creating them: once an unknown resolver type
/// (E402) is corrected, the checks of that type run (E404 on its search locations, E405, E406)
/// and the interpreter resolves
/// on this machine, or not (E407, E408, which only a valid interpreter can have); once an
/// unknown step parameter's name (D113) is corrected, its value is checked (D115).
fn unlocked(fixed: Code, new: Code) -> bool {
    (fixed == Code::E402
        && matches!(
            new,
            Code::E404 | Code::E405 | Code::E406 | Code::E407 | Code::E408
        ))
        || (fixed == Code::D113 && new == Code::D115)
}

const RT_HEAD: &str =
    "__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\n";

/// Fixtures with a fix on most codes that have one.
fn fixtures() -> Vec<String> {
    vec![
        // E404: the typo's closest location is already in the list.
        format!(
            "//- project/.ai/tools/rt/a.py\n{RT_HEAD}ENV_CONFIG = {{\"interpreter\": {{\"type\": \"venv_python\", \"search\": [\"project\", \"projcet\"], \"var\": \"KIWI_PYTHON\", \"fallback\": \"python3\"}}}}\nCONFIG = {{\"command\": \"${{KIWI_PYTHON}}\"}}\n"
        ),
        // The same in YAML, flow list.
        "//- project/.ai/tools/rt/b.yaml\nversion: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nenv_config:\n  interpreter:\n    type: venv_python\n    search: [project, projcet]\n    var: KIWI_PYTHON\n    fallback: python3\nconfig:\n  command: ${KIWI_PYTHON}\n".to_string(),
        // E404 typo whose closest is free, a repeated location, E402, E406.
        format!(
            "//- project/.ai/tools/rt/c.py\n{RT_HEAD}ENV_CONFIG = {{\"interpreter\": {{\"type\": \"venv_pyton\", \"search\": [\"projct\", \"system\", \"system\"], \"var\": \"KIWI_PYTHON\", \"fallbak\": \"python3\"}}}}\nCONFIG = {{\"command\": \"${{KIWI_PYTHON}}\"}}\n"
        ),
        // E406 whose closest key is already present.
        format!(
            "//- project/.ai/tools/rt/d.py\n{RT_HEAD}ENV_CONFIG = {{\"interpreter\": {{\"type\": \"venv_python\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"python3\", \"fallbak\": \"python\"}}}}\nCONFIG = {{\"command\": \"${{KIWI_PYTHON}}\"}}\n"
        ),
        // T306 key typo, T307 placeholder typo.
        "//- project/.ai/tools/t/e.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\nCONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}}\nCONFIG = {\"timout\": 30, \"args\": [\"{pth}\"]}\n".to_string(),
        // D113 (the close name is already passed: no rename to it), D115 enum typo.
        "//- project/.ai/tools/fmt/json.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\nCONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"mode\": {\"enum\": [\"append\", \"overwrite\"]}}}\n//- project/.ai/directives/fmt.md\n# fmt\n\n```xml\n<directive name=\"fmt\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"fmt/*\"/>\n    </permissions>\n  </metadata>\n  <process>\n    <step name=\"a\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\">\n        <param name=\"path\" value=\"a\"/>\n        <param name=\"pth\" value=\"b\"/>\n        <param name=\"mod\" value=\"apend\"/>\n      </execute>\n    </step>\n  </process>\n</directive>\n```\n".to_string(),
        // D114: a required parameter added, to a self-closing call and to one with children.
        "//- project/.ai/tools/fmt/json.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\nCONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"indent\": {\"type\": \"integer\", \"minimum\": 1}, \"mode\": {\"enum\": [\"append\", \"overwrite\"]}}, \"required\": [\"path\", \"indent\", \"mode\"]}\n//- project/.ai/directives/fmt.md\n# fmt\n\n```xml\n<directive name=\"fmt\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"fmt/*\"/>\n    </permissions>\n  </metadata>\n  <process>\n    <step name=\"a\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\"/>\n    </step>\n    <step name=\"b\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\">\n        <param name=\"path\" value=\"a\"/>\n      </execute>\n    </step>\n  </process>\n</directive>\n```\n".to_string(),
    ]
}

#[test]
fn quick_fixes_create_no_diagnostic() {
    let mut applied = 0;
    let mut failures = Vec::new();
    for spec in fixtures() {
        let f = Fixture::new(&spec);
        let ws = f.workspace(&[]);
        let (n, fail) = apply_every_fix(&ws, f.root());
        applied += n;
        failures.extend(fail);
    }
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    let f = Fixture::new("");
    let ws = Workspace::load(Some(demo.clone()), f.host(&[]));
    let (n, fail) = apply_every_fix(&ws, &demo);
    applied += n;
    failures.extend(fail);
    assert!(applied >= 12, "only {applied} fixes applied");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
