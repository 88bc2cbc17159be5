//! Cursor-marker fixtures: `$0` in a fixture marks the offset.

use super::*;
use crate::context::Host;
use crate::workspace::parse_item;

fn fixture(text: &str) -> (String, usize) {
    let offset = text.find("$0").expect("a $0 marker");
    (text.replacen("$0", "", 1), offset)
}

fn ws_with(rel: &str, item_type: ItemType, id: &str, text: &str) -> (Workspace, Arc<Item>) {
    let mut ws = Workspace::new(
        Some(PathBuf::from("/nonexistent/proj")),
        Host::for_tests(&[("HOME", "/nonexistent/home"), ("PATH", "/nonexistent/bin")]),
    );
    let item = parse_item(
        item_type,
        id.into(),
        Space::Project,
        PathBuf::from("/nonexistent/proj/.ai").join(rel),
        text.as_bytes(),
    )
    .expect("an item");
    let item = Arc::new(item);
    ws.insert(item.clone());
    (ws, item)
}

pub(super) const RUNTIME: &str = r#"__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
ENV_CONFIG = {
    "interpreter": {
        "type": "venv_p$0ython",
        "search": ["project", "system"],
        "var": "KIWI_PYTHON",
        "fallback": "python3",
    },
}
CONFIG = {"command": "${KIWI_PYTHON}", "args": ["{tool_path}"]}
"#;

#[test]
fn hover_interpreter_type_shows_trail_and_fallback() {
    let (text, off) = fixture(RUNTIME);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let h = hover(&ws, &item, off).expect("a hover");
    assert_eq!(&text[h.range.start..h.range.end], "\"venv_python\"");
    insta::assert_snapshot!(h.markdown);
}

#[test]
fn hover_config_var() {
    let src = RUNTIME
        .replace("$0", "")
        .replace("${KIWI_PYTHON}", "${KIWI_PY$0THON}");
    let (text, off) = fixture(&src);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let h = hover(&ws, &item, off).expect("a hover");
    assert_eq!(&text[h.range.start..h.range.end], "${KIWI_PYTHON}");
    assert!(
        h.markdown.contains("the interpreter of `rt/py`"),
        "{}",
        h.markdown
    );
}

#[test]
fn inlay_hint_after_type() {
    let (text, _) = fixture(RUNTIME);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let hints = inlay_hints(&ws, &item);
    assert_eq!(hints.len(), 1);
    assert_eq!(hints[0].label, "→ fallback python3");
    assert_eq!(
        &text[..hints[0].offset]
            .chars()
            .rev()
            .take(6)
            .collect::<String>(),
        "\"nohty"
    );
}

const DIRECTIVE: &str = r#"# T

```xml
<directive name="t" version="1.0.0">
  <metadata>
    <description>d</description>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="rt/*"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="readme" type="path" default="README.md">The README file</input>
  </inputs>
  <process>
    <step name="count">
      <execute item_type="tool" item_id="rt/py">
        <param name="path" value="{input:readme}"/>
      </execute>
    </step>
  </process>
</directive>
```
"#;

fn directive_at(marker_after: &str) -> (Workspace, Arc<Item>, usize) {
    let (rt, _) = fixture(RUNTIME);
    let off = DIRECTIVE.find(marker_after).expect("marker text") + 2;
    let (mut ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", DIRECTIVE);
    let tool = parse_item(
        ItemType::Tool,
        "rt/py".into(),
        Space::Project,
        PathBuf::from("/nonexistent/proj/.ai/tools/rt/py.py"),
        rt.as_bytes(),
    )
    .expect("tool");
    ws.insert(Arc::new(tool));
    (ws, d, off)
}

#[test]
fn hover_input_placeholder() {
    let (ws, d, off) = directive_at("{input:readme}");
    let h = hover(&ws, &d, off).expect("hover");
    insta::assert_snapshot!(h.markdown);
}

#[test]
fn hover_call_item_id_shows_chain() {
    let (ws, d, off) = directive_at("rt/py\">");
    let h = hover(&ws, &d, off).expect("hover");
    assert!(
        h.markdown.contains("`rt/py` → `subprocess`"),
        "{}",
        h.markdown
    );
}

#[test]
fn hover_permission_lists_relying_steps() {
    let (ws, d, off) = directive_at("execute resource");
    let h = hover(&ws, &d, off).expect("hover");
    insta::assert_snapshot!(h.markdown);
}

#[test]
fn definition_of_input() {
    let (ws, d, off) = directive_at("{input:readme}");
    let t = definition(&ws, &d, off);
    assert_eq!(t.len(), 1);
    assert_eq!(&DIRECTIVE[t[0].range.start..t[0].range.end], "readme");
}

#[test]
fn completion_input_and_system() {
    let text = DIRECTIVE.replace("{input:readme}", "{input:re");
    let off = text.find("{input:re").unwrap() + "{input:re".len();
    let (ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let c = completions(&ws, &d, off);
    assert_eq!(
        c.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(),
        ["readme"]
    );
    assert_eq!(&text[c[0].range.start..c[0].range.end], "re");
}

#[test]
fn completion_resolver_types() {
    let src = RUNTIME.replace("\"venv_p$0ython\"", "\"ve$0");
    let (text, off) = fixture(&src);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let c = completions(&ws, &item, off);
    assert!(c.iter().any(|c| c.label == "venv_python"), "{c:?}");
}

#[test]
fn symbols_and_lenses() {
    let (ws, d, _) = directive_at("{input:readme}");
    insta::assert_yaml_snapshot!(symbols(&d));
    let lenses = code_lenses(&ws, &d);
    let titles: Vec<_> = lenses.iter().map(|l| l.title.as_str()).collect();
    assert_eq!(titles, ["✓ Validate", "▶ Run step tool rt/py"]);
}

#[test]
fn tool_lenses_run_ask_carries_the_schema() {
    let text = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py"
CONFIG_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "default": "world"}, "n": {"type": "integer"}},
    "required": ["n"],
}
"#;
    let (ws, t) = ws_with("tools/text/echo.py", ItemType::Tool, "text/echo", text);
    let lenses = code_lenses(&ws, &t);
    let titles: Vec<_> = lenses.iter().map(|l| l.title.as_str()).collect();
    assert_eq!(titles, ["▶ Run", "▶ Run…", "⚙ Environment"]);
    let commands: Vec<_> = lenses.iter().map(|l| l.command.as_str()).collect();
    assert_eq!(commands, [CMD_RUN_TOOL, CMD_RUN_TOOL, CMD_SHOW_ENV]);
    let path = "/nonexistent/proj/.ai/tools/text/echo.py";
    assert_eq!(
        lenses[0].args,
        [serde_json::json!({"id": "text/echo", "path": path})]
    );
    assert_eq!(
        lenses[1].args,
        [serde_json::json!({
            "id": "text/echo",
            "path": path,
            "ask": true,
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "world"},
                    "n": {"type": "integer"},
                },
                "required": ["n"],
            },
            // The schema's order (a JSON object's keys come back sorted: n, name).
            "order": ["name", "n"],
        })]
    );
}

#[test]
fn a_runtime_gets_only_the_environment_lens() {
    let (text, _) = fixture(RUNTIME);
    let (ws, rt) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let titles: Vec<String> = code_lenses(&ws, &rt).into_iter().map(|l| l.title).collect();
    assert_eq!(titles, ["⚙ Environment"]);
}

#[test]
fn broken_xml_still_gets_hover_symbols_completion() {
    // The `<step>` is never closed and `</process>` is missing.
    let text = DIRECTIVE
        .replace("    </step>\n  </process>\n", "")
        .replace("{input:readme}\"/>", "{input:readme}\"/>\n        <");
    let (ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let off = text.find("{input:readme}").unwrap() + 3;
    let h = hover(&ws, &d, off).expect("hover on broken XML");
    assert!(h.markdown.contains("The README file"), "{}", h.markdown);
    let syms = symbols(&d);
    assert!(!syms.is_empty());
    let off = text.find("\"/>\n        <").unwrap() + "\"/>\n        <".len();
    let names: Vec<String> = completions(&ws, &d, off)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(names.iter().any(|n| n == "param"), "{names:?}");
}

#[test]
fn nothing_panics_at_any_offset() {
    let (ws, d, _) = directive_at("{input:readme}");
    let (rt, _) = fixture(RUNTIME);
    let (ws2, t) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &rt);
    let yaml = "version: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nenv_config:\n  interpreter:\n    type: venv_python\n    search: [project, ]\n    manager: \"\"\nconfig:\n  args: [\"{tool_path}\", \"{\"]\nexecution_environment:\n  mode: \"\"\n";
    let (ws3, y) = ws_with("tools/rt/y.yaml", ItemType::Tool, "rt/y", yaml);
    let (ws4, r, ..) = refs_ws();
    // A skill mentioning itself in every form, with unbalanced backticks, links climbing out
    // of everything and multi-byte text next to each form.
    let skill = "---\nname: x\ndescription: `/x` é$x\n---\n(/x) [é](../x/) [a](../../../../../x/SKILL.md#) `` `x` ``é/x\n`$x é `/x\n```\n/x\n";
    let (ws5, sk) = ws_with("skills/x/SKILL.md", ItemType::Skill, "x", skill);
    for (ws, item) in [(&ws, &d), (&ws2, &t), (&ws3, &y), (&ws4, &r), (&ws5, &sk)] {
        let len = item.text().len();
        for off in 0..=len + 2 {
            let _ = hover(ws, item, off);
            let _ = completions(ws, item, off);
            let _ = definition(ws, item, off);
            let _ = signature_help(ws, item, off);
            let _ = references(ws, item, off, true);
            let _ = prepare_rename(ws, item, off);
            let _ = rename(ws, item, off, "x/y");
        }
        let _ = symbols(item);
        let _ = inlay_hints(ws, item);
        let _ = code_lenses(ws, item);
    }
}

#[test]
fn hover_system_field_shows_current_value() {
    let text = DIRECTIVE.replace("{input:readme}\"/>", "{system.runtime.platform}\"/>");
    let (ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let off = text.find("{system.runtime").unwrap() + 3;
    let h = hover(&ws, &d, off).expect("hover");
    assert!(h.markdown.contains("Current value: `"), "{}", h.markdown);
    assert_eq!(
        &text[h.range.start..h.range.end],
        "{system.runtime.platform}"
    );
}

#[test]
fn completion_item_ids_elements_attributes() {
    let (ws, _d, _) = directive_at("{input:readme}");
    // item_id="  -> tool ids.
    let text = DIRECTIVE.replace("item_id=\"rt/py\"", "item_id=\"rt/");
    let (mut ws2, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    for i in ws.items() {
        if i.id == "rt/py" {
            ws2.insert(i.clone());
        }
    }
    let off = text.find("item_id=\"rt/").unwrap() + "item_id=\"rt/".len();
    let c = completions(&ws2, &d, off);
    assert!(c.iter().any(|c| c.label == "rt/py"), "{c:?}");
    assert_eq!(&text[c[0].range.start..c[0].range.end], "rt/");
    // An attribute name inside a start tag.
    let text = DIRECTIVE.replace(
        "item_type=\"tool\" item_id=\"rt/py\">",
        "item_type=\"tool\" >",
    );
    let (ws3, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let off = text.find("item_type=\"tool\" >").unwrap() + "item_type=\"tool\" ".len();
    let labels: Vec<String> = completions(&ws3, &d, off)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert_eq!(labels, ["item_id"]);
    // action=" -> actions.
    let off = DIRECTIVE.find("action=\"run").unwrap() + "action=\"".len();
    let (ws4, d) = ws_with("directives/t.md", ItemType::Directive, "t", DIRECTIVE);
    let labels: Vec<String> = completions(&ws4, &d, off)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(
        labels.iter().any(|l| l == "run") && labels.iter().any(|l| l == "search"),
        "{labels:?}"
    );
}

#[test]
fn definition_of_executor_and_knowledge_symbols() {
    let (text, _) = fixture(RUNTIME);
    let (ws, t) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let off = text.find("\"subprocess\"").unwrap() + 2;
    let targets = definition(&ws, &t, off);
    assert_eq!(targets.len(), 1);
    assert!(targets[0].builtin_text.is_some(), "subprocess is a builtin");
    let k = "---\nid: n\nentry_type: reference\n---\n\n# Title\n\n```md\n# not a heading\n```\n\n## Part ü\nx\n";
    let (_, item) = ws_with("knowledge/n.md", ItemType::Knowledge, "n", k);
    let names: Vec<String> = symbols(&item).into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["Title", "Part ü"]);
}

/// Issue 12 point 5: a hover over a value the chain builds from a passed-through secret
/// (`ALIAS=prefix-${SOME_TOKEN}`) shows it redacted.
#[test]
fn hover_never_shows_a_value_built_from_a_secret() {
    let src = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "subprocess"
CONFIG = {"command": "echo", "args": ["${ALI$0AS}"], "env": {"ALIAS": "prefix-${SOME_TOKEN}"}}
"#;
    let (text, off) = fixture(src);
    let mut ws = Workspace::new(
        Some(PathBuf::from("/nonexistent/proj")),
        Host::for_tests(&[
            ("HOME", "/nonexistent/home"),
            ("SOME_TOKEN", "canary-hover-77aa"),
        ]),
    );
    let item = Arc::new(
        parse_item(
            ItemType::Tool,
            "t/alias".into(),
            Space::Project,
            PathBuf::from("/nonexistent/proj/.ai/tools/t/alias.py"),
            text.as_bytes(),
        )
        .expect("an item"),
    );
    ws.insert(item.clone());
    let h = hover(&ws, &item, off).expect("a hover");
    assert!(!h.markdown.contains("canary-hover-77aa"), "{}", h.markdown);
    assert!(h.markdown.contains("prefix-[redacted]"), "{}", h.markdown);
}

/// Issue 13, cause 5: a source system's own permission spelling is read with its meaning, and
/// the hover says which system spells it so.
#[test]
fn hover_permission_alias_names_the_system() {
    let text = "```xml\n<directive name=\"t\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>\n      <sign><tool>*</tool></sign>\n      <execute resource=\"kiwi-mcp\" action=\"execute\"/>\n    </permissions>\n  </metadata>\n  <process>\n    <step name=\"s\">\n      <sign item_type=\"tool\" item_id=\"a/b\"/>\n    </step>\n  </process>\n</directive>\n```\n";
    let (ws, item) = ws_with("directives/t.md", ItemType::Directive, "t", text);
    let off = text.find("<tool>*").unwrap() + 2;
    let h = hover(&ws, &item, off).expect("a hover");
    assert!(h.markdown.contains("`validate`"), "{}", h.markdown);
    assert!(h.markdown.contains("rye's `<sign>`"), "{}", h.markdown);
    assert!(h.markdown.contains("step `s`"), "{}", h.markdown);
    let off = text.find("action=\"execute\"").unwrap() + 2;
    let h = hover(&ws, &item, off).expect("a hover");
    assert!(
        h.markdown.contains("kiwi-mcp's action `execute`"),
        "{}",
        h.markdown
    );
}

#[test]
fn hover_on_an_interpreter_key_covers_the_key() {
    let src = RUNTIME
        .replace("$0", "")
        .replace("\"search\"", "\"sea$0rch\"");
    let (text, off) = fixture(&src);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let h = hover(&ws, &item, off).expect("a hover");
    assert_eq!(&text[h.range.start..h.range.end], "\"search\"");
    assert!(
        h.markdown.contains("the locations to search"),
        "{}",
        h.markdown
    );
    // On the `interpreter` key itself: that key, not the whole ENV_CONFIG.
    let src = RUNTIME
        .replace("$0", "")
        .replace("\"interpreter\"", "\"inter$0preter\"");
    let (text, off) = fixture(&src);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let h = hover(&ws, &item, off).expect("a hover");
    assert_eq!(&text[h.range.start..h.range.end], "\"interpreter\"");
}

#[test]
fn hover_with_an_unknown_resolver_type() {
    let src = RUNTIME.replace("\"venv_p$0ython\"", "\"venv_py$0ton\"");
    let (text, off) = fixture(&src);
    let (ws, item) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &text);
    let h = hover(&ws, &item, off).expect("a hover on an unknown type");
    assert_eq!(&text[h.range.start..h.range.end], "\"venv_pyton\"");
    assert!(
        h.markdown.contains("unknown resolver type"),
        "{}",
        h.markdown
    );
    assert!(h.markdown.contains("`venv_python`"), "{}", h.markdown);
    // On another key of the same interpreter: its documentation at least.
    let off = text.find("\"fallback\"").unwrap() + 3;
    let h = hover(&ws, &item, off).expect("a hover on a key");
    assert_eq!(&text[h.range.start..h.range.end], "\"fallback\"");
    assert!(
        h.markdown.contains("the value used when nothing is found"),
        "{}",
        h.markdown
    );
}

/// The directive calling `rt/py` (with an exact permission too), the runtime `rt/py`, and a
/// tool running on it.
fn refs_ws() -> (Workspace, Arc<Item>, Arc<Item>, Arc<Item>, String) {
    let text = DIRECTIVE.replace(
        "<execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"rt/*\"/>",
        "<execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"rt/*\"/>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"rt/py\"/>",
    );
    let (ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let mut ws = ws;
    let (rt, _) = fixture(RUNTIME);
    let rt = Arc::new(
        parse_item(
            ItemType::Tool,
            "rt/py".into(),
            Space::Project,
            PathBuf::from("/nonexistent/proj/.ai/tools/rt/py.py"),
            rt.as_bytes(),
        )
        .unwrap(),
    );
    ws.insert(rt.clone());
    let tool_text =
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py\"\n";
    let tool = Arc::new(
        parse_item(
            ItemType::Tool,
            "text/count".into(),
            Space::Project,
            PathBuf::from("/nonexistent/proj/.ai/tools/text/count.py"),
            tool_text.as_bytes(),
        )
        .unwrap(),
    );
    ws.insert(tool.clone());
    (ws, d, rt, tool, text)
}

#[test]
fn references_of_a_runtime_from_its_users() {
    let (ws, d, rt, tool, text) = refs_ws();
    // From the runtime's own file: who uses it.
    let refs = references(&ws, &rt, 0, false);
    let places: Vec<(String, String)> = refs
        .iter()
        .map(|o| {
            let t = ws.item(&o.path).unwrap().text();
            (o.via.clone(), t[o.range.start..o.range.end].to_string())
        })
        .collect();
    assert_eq!(
        places,
        [
            ("permission".to_string(), "rt/py".to_string()),
            ("execute".to_string(), "rt/py".to_string()),
            ("executor_id".to_string(), "rt/py".to_string()),
        ],
        "{refs:?}"
    );
    // From a call in the directive: the same places, and the declaration when asked.
    let off = text.find("item_id=\"rt/py\"").unwrap() + "item_id=\"".len() + 1;
    let from_call = references(&ws, &d, off, true);
    assert_eq!(from_call.len(), 4);
    assert_eq!(from_call[0].path, rt.path);
    // From the tool's executor_id.
    let off = tool.text().find("rt/py").unwrap();
    assert_eq!(references(&ws, &tool, off, false), refs);
}

#[test]
fn rename_a_tool_id_everywhere() {
    let (ws, d, rt, tool, text) = refs_ws();
    let off = text.find("item_id=\"rt/py\"").unwrap() + "item_id=\"".len() + 1;
    let (range, id) = prepare_rename(&ws, &d, off).expect("renamable");
    assert_eq!(id, "rt/py");
    assert_eq!(&text[range.start..range.end], "rt/py");
    let plan = rename(&ws, &d, off, "runtimes/py").expect("a plan");
    assert_eq!(
        plan.moves,
        [(
            rt.path.clone(),
            PathBuf::from("/nonexistent/proj/.ai/tools/runtimes/py.py")
        )]
    );
    let apply = |item: &Item| {
        let mut t = item.text().to_string();
        let mut edits = plan
            .edits
            .iter()
            .find(|(p, _)| *p == item.path)
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
        for e in edits {
            t.replace_range(e.range.start..e.range.end, &e.new_text);
        }
        t
    };
    let new_d = apply(&d);
    assert!(new_d.contains("item_id=\"runtimes/py\""), "{new_d}");
    assert!(new_d.contains("id=\"runtimes/py\"/>"), "{new_d}");
    assert!(
        new_d.contains("id=\"rt/*\""),
        "a glob is left alone: {new_d}"
    );
    assert!(apply(&tool).contains("__executor_id__ = \"runtimes/py\""));
    // Refused: a bad id, an existing id, a builtin item.
    assert!(rename(&ws, &d, off, "../x").is_err());
    assert!(rename(&ws, &d, off, "text/count").is_err());
    let off = rt.text().find("subprocess").unwrap();
    assert!(prepare_rename(&ws, &rt, off).is_none());
    assert!(rename(&ws, &rt, off, "sub").is_err());
}

#[test]
fn rename_a_directive_from_its_name() {
    let (ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", DIRECTIVE);
    let off = DIRECTIVE.find("name=\"t\"").unwrap() + "name=\"".len();
    let (range, id) = prepare_rename(&ws, &d, off).expect("renamable");
    assert_eq!(
        (&DIRECTIVE[range.start..range.end], id.as_str()),
        ("t", "t")
    );
    let plan = rename(&ws, &d, off, "ops/check").unwrap();
    assert_eq!(
        plan.moves,
        [(
            d.path.clone(),
            PathBuf::from("/nonexistent/proj/.ai/directives/ops/check.md")
        )]
    );
    assert_eq!(plan.edits.len(), 1);
    assert_eq!(plan.edits[0].1[0].new_text, "check");
}

/// The labels completed at `$0` in `src` (a tool `rt/py` from RUNTIME is in the workspace).
fn labels(rel: &str, t: ItemType, id: &str, src: &str) -> (Vec<CompletionEntry>, String) {
    let (text, off) = fixture(src);
    let (mut ws, item) = ws_with(rel, t, id, &text);
    let (rt, _) = fixture(RUNTIME);
    if id != "rt/py" {
        ws.insert(Arc::new(
            parse_item(
                ItemType::Tool,
                "rt/py".into(),
                Space::Project,
                PathBuf::from("/nonexistent/proj/.ai/tools/rt/py.py"),
                rt.as_bytes(),
            )
            .unwrap(),
        ));
    }
    (completions(&ws, &item, off), text)
}

fn names(c: &[CompletionEntry]) -> Vec<&str> {
    c.iter().map(|c| c.label.as_str()).collect()
}

#[test]
fn completion_system_fields_after_the_dot() {
    let src = DIRECTIVE.replace("{input:readme}", "{system.$0");
    let (c, _) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert!(names(&c).iter().any(|l| l.starts_with("runtime.")), "{c:?}");
    let src = DIRECTIVE.replace("{input:readme}", "{system.runtime.pl$0");
    let (c, text) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert!(names(&c).contains(&"runtime.platform"), "{c:?}");
    assert_eq!(&text[c[0].range.start..c[0].range.end], "runtime.pl");
}

#[test]
fn completion_inside_permissions_inputs_and_ids() {
    // `<` inside <permissions>: the permission elements.
    let src = DIRECTIVE.replace("    </permissions>", "      <$0\n    </permissions>");
    let (c, _) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert!(
        names(&c).contains(&"execute") && names(&c).contains(&"read"),
        "{c:?}"
    );
    // input type="
    let src = DIRECTIVE.replace("type=\"path\"", "type=\"$0");
    let (c, _) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert!(
        names(&c).contains(&"integer") && names(&c).contains(&"path"),
        "{c:?}"
    );
    // permission id=" -> tool ids
    let src = DIRECTIVE.replace("id=\"rt/*\"", "id=\"$0");
    let (c, _) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert!(names(&c).contains(&"rt/py"), "{c:?}");
}

#[test]
fn completion_in_hierarchical_grants_offers_runnable_tools_only() {
    // Issue 27: nothing was offered inside `<tool>…</tool>`, and `id="` offered library
    // modules and data files, which no grant can run.
    let with_library = |src: &str| {
        let (text, off) = fixture(src);
        let (mut ws, item) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
        let (rt, _) = fixture(RUNTIME);
        for (id, body) in [
            ("rt/py", rt.as_str()),
            (
                "rt/helpers",
                "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__tool_description__ = \"helpers\"\n",
            ),
        ] {
            ws.insert(Arc::new(
                parse_item(
                    ItemType::Tool,
                    id.into(),
                    Space::Project,
                    PathBuf::from(format!("/nonexistent/proj/.ai/tools/{id}.py")),
                    body.as_bytes(),
                )
                .unwrap(),
            ));
        }
        (completions(&ws, &item, off), text, off)
    };
    let src = DIRECTIVE.replace("id=\"rt/*\"", "id=\"rt/$0");
    let (c, _, _) = with_library(&src);
    assert!(names(&c).contains(&"rt/py"), "{c:?}");
    assert!(
        !names(&c).contains(&"rt/helpers"),
        "a library offered: {c:?}"
    );
    let src = DIRECTIVE.replace(
        "    </permissions>",
        "      <execute><tool>rt.$0</tool></execute>\n    </permissions>",
    );
    let (c, text, off) = with_library(&src);
    assert_eq!(names(&c), vec!["rt.py"], "{c:?}");
    // The edit replaces what was typed, so the editor filters by it.
    assert_eq!(&text[c[0].range.start..off], "rt.");
    let src = DIRECTIVE.replace(
        "    </permissions>",
        "      <execute><tool>rt/$0</tool></execute>\n    </permissions>",
    );
    let (c, _, _) = with_library(&src);
    assert_eq!(names(&c), vec!["rt/py"], "{c:?}");
}

#[test]
fn completion_attributes_are_balanced_snippets() {
    let src = DIRECTIVE.replace(
        "item_type=\"tool\" item_id=\"rt/py\">",
        "item_type=\"tool\" $0>",
    );
    let (c, _) = labels("directives/t.md", ItemType::Directive, "t", &src);
    assert_eq!(names(&c), ["item_id"]);
    assert_eq!(c[0].insert_text.as_deref(), Some("item_id=\"$1\""));
    assert!(c[0].snippet);
}

#[test]
fn completion_step_parameters() {
    let tool = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py\"\nCONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\", \"description\": \"The file\"}, \"write\": {\"type\": \"boolean\"}, \"mode\": {\"enum\": [\"append\", \"overwrite\"]}}, \"required\": [\"path\"]}\n";
    let with_tool = |src: &str| {
        let (text, off) = fixture(src);
        let (mut ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
        ws.insert(Arc::new(
            parse_item(
                ItemType::Tool,
                "rt/py".into(),
                Space::Project,
                PathBuf::from("/nonexistent/proj/.ai/tools/rt/py.py"),
                tool.as_bytes(),
            )
            .unwrap(),
        ));
        (ws, d, off)
    };
    // Names not passed yet.
    let src = DIRECTIVE.replace(
        "<param name=\"path\" value=\"{input:readme}\"/>",
        "<param name=\"path\" value=\"{input:readme}\"/>\n        <param name=\"$0",
    );
    let (ws, d, off) = with_tool(&src);
    assert_eq!(names(&completions(&ws, &d, off)), ["write", "mode"]);
    // `<` inside the call: a whole <param> per parameter not passed yet.
    let src = DIRECTIVE.replace(
        "<param name=\"path\" value=\"{input:readme}\"/>",
        "<param name=\"path\" value=\"{input:readme}\"/>\n        <$0",
    );
    let (ws, d, off) = with_tool(&src);
    let c = completions(&ws, &d, off);
    let whole: Vec<&CompletionEntry> = c
        .iter()
        .filter(|c| c.label.starts_with("param name"))
        .collect();
    assert_eq!(whole.len(), 2, "{c:?}");
    assert_eq!(
        whole[0].insert_text.as_deref(),
        Some("param name=\"write\" value=\"$1\"/>")
    );
    assert!(whole[0].snippet);
    // Values of an enum, of a boolean.
    let src = DIRECTIVE.replace(
        "<param name=\"path\" value=\"{input:readme}\"/>",
        "<param name=\"mode\" value=\"$0",
    );
    let (ws, d, off) = with_tool(&src);
    assert_eq!(names(&completions(&ws, &d, off)), ["append", "overwrite"]);
    let src = DIRECTIVE.replace(
        "<param name=\"path\" value=\"{input:readme}\"/>",
        "<param name=\"write\" value=\"$0\"/>",
    );
    let (ws, d, off) = with_tool(&src);
    assert_eq!(names(&completions(&ws, &d, off)), ["true", "false"]);
    // Signature help at a <param>: the schema, the active parameter.
    let src = DIRECTIVE.replace("value=\"{input:readme}\"", "value=\"{input:re$0adme}\"");
    let (ws, d, off) = with_tool(&src);
    let sig = signature_help(&ws, &d, off).expect("signature help");
    assert_eq!(
        sig.label,
        "rt/py(path: string, write?: boolean, mode?: one of \"append\", \"overwrite\")"
    );
    assert_eq!(sig.active, Some(0));
    assert_eq!(sig.params[0].0, "path: string");
    assert!(sig.params[0].1.contains("The file"));
}

#[test]
fn completion_env_config_where_people_type() {
    // A YAML flow list: locations not listed yet.
    let yaml = "version: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nenv_config:\n  interpreter:\n    type: venv_python\n    search: [project, $0]\n    var: KIWI_PYTHON\n";
    let (c, _) = labels("tools/rt/y.yaml", ItemType::Tool, "rt/y", yaml);
    assert_eq!(names(&c), ["kiwi", "user", "system"]);
    // An empty JSON-ish list.
    let src = RUNTIME
        .replace("$0", "")
        .replace("\"search\": [\"project\", \"system\"]", "\"search\": [$0]");
    let (c, _) = labels("tools/rt/q.py", ItemType::Tool, "rt/q", &src);
    assert_eq!(names(&c), ["project", "kiwi", "user", "system"]);
    // `"manager": "` offers the managers.
    let src = "__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\nENV_CONFIG = {\"interpreter\": {\"type\": \"version_manager\", \"manager\": \"$0\", \"var\": \"X\"}}\n";
    let (c, _) = labels("tools/rt/m.py", ItemType::Tool, "rt/m", src);
    assert_eq!(names(&c), ["pyenv", "rbenv", "nvm", "asdf"]);
    // Keys: not those present, only those of the type.
    let src = RUNTIME
        .replace("$0", "")
        .replace("        \"fallback\": \"python3\",\n", "        \"$0\n");
    let (c, _) = labels("tools/rt/k.py", ItemType::Tool, "rt/k", &src);
    let n = names(&c);
    assert!(n.contains(&"fallback"), "{n:?}");
    assert!(
        !n.contains(&"type") && !n.contains(&"search") && !n.contains(&"var"),
        "{n:?}"
    );
    assert!(!n.contains(&"manager") && !n.contains(&"binary"), "{n:?}");
}

#[test]
fn completion_config_keys_and_placeholders() {
    let tool = |config: &str| {
        format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py\"\nCONFIG_SCHEMA = {{\"type\": \"object\", \"properties\": {{\"path\": {{\"type\": \"string\"}}}}}}\n{config}\n")
    };
    // `{` in a CONFIG string: the parameters and the names kiwi provides.
    let (c, _) = labels(
        "tools/t/a.py",
        ItemType::Tool,
        "t/a",
        &tool("CONFIG = {\"args\": [\"{$0\"]}"),
    );
    let n = names(&c);
    assert!(n.contains(&"path") && n.contains(&"tool_path"), "{n:?}");
    // A CONFIG key: the primitive's keys not present yet.
    let (c, _) = labels(
        "tools/t/a.py",
        ItemType::Tool,
        "t/a",
        &tool("CONFIG = {\"args\": [], \"$0\"}"),
    );
    let n = names(&c);
    assert!(
        n.contains(&"timeout") && n.contains(&"cwd") && !n.contains(&"args"),
        "{n:?}"
    );
    // EXECUTION_ENVIRONMENT's mode.
    let src = tool("EXECUTION_ENVIRONMENT = {\"mode\": \"$0\"}");
    let (c, _) = labels("tools/t/a.py", ItemType::Tool, "t/a", &src);
    assert!(!c.is_empty(), "{c:?}");
    // YAML top-level keys not present yet.
    let yaml = "version: \"1.0.0\"\ntool_type: python\nexe$0\n";
    let (c, _) = labels("tools/t/b.yaml", ItemType::Tool, "t/b", yaml);
    let n = names(&c);
    assert!(
        n.contains(&"executor_id") && !n.contains(&"version"),
        "{n:?}"
    );
}

#[test]
fn references_of_a_permission_are_the_calls_relying_on_it() {
    let (ws, d, _, _, text) = refs_ws();
    let off = text.find("id=\"rt/*\"").unwrap();
    let refs = references(&ws, &d, off, false);
    let covered: Vec<&str> = refs
        .iter()
        .map(|o| &text[o.range.start..o.range.end])
        .collect();
    assert_eq!(covered, ["rt/py"], "{refs:?}");
    assert_eq!(refs[0].via, "granted");
}

/// Issue 15, point 6: `▶ Run step tool X` passes the step's `<param>`s; a value holding an
/// `{input:…}` placeholder is asked for (as `▶ Run…` asks), described by the input.
#[test]
fn run_step_lens_passes_the_step_parameters() {
    let tool_src = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py"
CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file"},
        "top": {"type": "integer"},
        "label": {"type": "string"},
        "deep": {"type": "boolean"},
    },
    "required": ["path"],
}
"#;
    let text = DIRECTIVE.replace(
        r#"<param name="path" value="{input:readme}"/>"#,
        r#"<param name="path" value="{input:readme}"/>
        <param name="top" value="5"/>
        <param name="label" value="7 words"/>
        <param name="deep" value="true"/>"#,
    );
    let text = text.replace(r#"item_id="rt/py""#, r#"item_id="rt/count""#);
    let (mut ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let tool = parse_item(
        ItemType::Tool,
        "rt/count".into(),
        Space::Project,
        PathBuf::from("/nonexistent/proj/.ai/tools/rt/count.py"),
        tool_src.as_bytes(),
    )
    .expect("tool");
    ws.insert(Arc::new(tool));
    let lenses = code_lenses(&ws, &d);
    let step = lenses
        .iter()
        .find(|l| l.title == "▶ Run step tool rt/count")
        .expect("the step's lens");
    assert_eq!(
        step.args,
        vec![serde_json::json!({
            "id": "rt/count",
            "parameters": {"top": 5, "label": "7 words", "deep": true},
            "ask": true,
            "schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "{input:readme}: The README file",
                        "default": "README.md",
                    },
                },
                "required": ["path"],
            },
        })]
    );
    // A step whose values are all fixed runs at once with them.
    let fixed = text.replace("{input:readme}", "docs/a.md");
    let (mut ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &fixed);
    let tool = parse_item(
        ItemType::Tool,
        "rt/count".into(),
        Space::Project,
        PathBuf::from("/nonexistent/proj/.ai/tools/rt/count.py"),
        tool_src.as_bytes(),
    )
    .expect("tool");
    ws.insert(Arc::new(tool));
    let step = code_lenses(&ws, &d)
        .into_iter()
        .find(|l| l.title == "▶ Run step tool rt/count")
        .expect("the step's lens");
    assert_eq!(
        step.args,
        vec![serde_json::json!({
            "id": "rt/count",
            "parameters": {"path": "docs/a.md", "top": 5, "label": "7 words", "deep": true},
        })]
    );
}

#[test]
fn renaming_a_file_renames_its_id_with_the_edits_of_rename() {
    let (ws, d, rt, _tool, text) = refs_ws();
    let to = PathBuf::from("/nonexistent/proj/.ai/tools/runtimes/py.py");
    let plan = rename_file(&ws, &rt.path, &to)
        .expect("no error")
        .expect("an item is renamed");
    let off = text.find("item_id=\"rt/py\"").unwrap() + "item_id=\"".len() + 1;
    let by_rename = rename(&ws, &d, off, "runtimes/py").unwrap();
    assert_eq!(plan.edits, by_rename.edits);
    assert!(plan.moves.is_empty(), "the editor moves the file itself");
    // A directive moved: its name follows the new stem.
    let plan = rename_file(
        &ws,
        &d.path,
        &PathBuf::from("/nonexistent/proj/.ai/directives/ops/check.md"),
    )
    .unwrap()
    .unwrap();
    assert_eq!(plan.edits.len(), 1);
    assert_eq!(plan.edits[0].1[0].new_text, "check");
    // Not an item rename: out of the type folder, into another type, or not an item.
    let elsewhere = PathBuf::from("/nonexistent/proj/notes/py.py");
    assert_eq!(rename_file(&ws, &rt.path, &elsewhere), Ok(None));
    let other_type = PathBuf::from("/nonexistent/proj/.ai/directives/py.md");
    assert_eq!(rename_file(&ws, &rt.path, &other_type), Ok(None));
    assert_eq!(rename_file(&ws, &elsewhere, &to), Ok(None));
    // An id that exists already is refused.
    let taken = PathBuf::from("/nonexistent/proj/.ai/tools/text/count.py");
    assert!(rename_file(&ws, &rt.path, &taken).is_err());
}

/// DIRECTIVE with a second step: a system placeholder, a `${VAR}`, an undeclared input, rye's
/// `${input:NAME}` and a call of a tool no space holds.
fn painted_directive() -> String {
    DIRECTIVE.replace(
        "    </step>\n  </process>",
        "    </step>\n    <step name=\"report\">\n      Report to ${USER} in {system.project.path} about {input:nope} and ${input:readme}.\n      <execute item_type=\"tool\" item_id=\"missing/tool\"/>\n    </step>\n  </process>",
    )
}

#[test]
fn semantic_tokens_of_placeholders_variables_and_ids() {
    let text = painted_directive();
    let (rt, _) = fixture(RUNTIME);
    let (mut ws, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    ws.insert(Arc::new(
        parse_item(
            ItemType::Tool,
            "rt/py".into(),
            Space::Project,
            PathBuf::from("/nonexistent/proj/.ai/tools/rt/py.py"),
            rt.as_bytes(),
        )
        .unwrap(),
    ));
    let tokens = semantic_tokens(&ws, &d);
    let shown: Vec<(TokenKind, &str, bool)> = tokens
        .iter()
        .map(|t| (t.kind, &text[t.range.start..t.range.end], t.unresolved))
        .collect();
    assert_eq!(
        shown,
        [
            (TokenKind::ItemId, "rt/py", false),
            (TokenKind::Input, "{input:readme}", false),
            (TokenKind::EnvVar, "${USER}", false),
            (TokenKind::System, "{system.project.path}", false),
            (TokenKind::Input, "{input:nope}", true),
            (TokenKind::Input, "${input:readme}", false),
            (TokenKind::ItemId, "missing/tool", true),
        ]
    );
    // A tool: its executor id and the `${VAR}` of its values.
    let (rt_text, _) = fixture(RUNTIME);
    let (ws, tool) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &rt_text);
    let shown: Vec<(TokenKind, String)> = semantic_tokens(&ws, &tool)
        .iter()
        .map(|t| (t.kind, rt_text[t.range.start..t.range.end].to_string()))
        .collect();
    assert_eq!(
        shown,
        [
            (TokenKind::ItemId, "subprocess".to_string()),
            (TokenKind::EnvVar, "${KIWI_PYTHON}".to_string()),
        ]
    );
}

#[test]
fn folding_ranges_per_step() {
    let text = painted_directive();
    let (_, d) = ws_with("directives/t.md", ItemType::Directive, "t", &text);
    let folds = folding_ranges(&d);
    let steps: Vec<(&str, Option<&str>)> = folds
        .iter()
        .filter(|f| text[f.range.start..].starts_with("<step"))
        .map(|f| (&text[f.range.start..f.range.end], f.label.as_deref()))
        .collect();
    assert_eq!(steps.len(), 2, "{folds:?}");
    assert_eq!(steps[0].1, Some("step count"));
    assert_eq!(steps[1].1, Some("step report"));
    assert!(steps[1].0.ends_with("</step>"), "{}", steps[1].0);
    // Every fold spans lines; the root, metadata, inputs, process, permissions fold too.
    for f in &folds {
        assert!(text[f.range.start..f.range.end].contains('\n'), "{f:?}");
    }
    for name in [
        "<directive",
        "<metadata>",
        "<inputs>",
        "<process>",
        "<permissions>",
    ] {
        assert!(
            folds
                .iter()
                .any(|f| text[f.range.start..].starts_with(name)),
            "{name}"
        );
    }
    // The self-closing `<execute .../>` on one line does not fold.
    assert!(!folds.iter().any(
        |f| text[f.range.start..].starts_with("<execute item_type=\"tool\" item_id=\"missing")
    ));
    // A tool: its multi-line maps.
    let (rt_text, _) = fixture(RUNTIME);
    let (_, tool) = ws_with("tools/rt/py.py", ItemType::Tool, "rt/py", &rt_text);
    let folds = folding_ranges(&tool);
    let starts: Vec<&str> = folds
        .iter()
        .map(|f| rt_text[f.range.start..].lines().next().unwrap())
        .collect();
    assert_eq!(starts, ["{", "{"], "ENV_CONFIG and its interpreter map");
}

#[test]
fn document_links_for_item_ids_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(proj.join(".ai/tools/rt")).unwrap();
    std::fs::write(proj.join("README.md"), "# readme\n").unwrap();
    std::fs::write(proj.join(".ai/tools/rt/helper.sh"), "echo hi\n").unwrap();
    let mut ws = Workspace::new(
        Some(proj.clone()),
        Host::for_tests(&[("HOME", "/nonexistent/home"), ("PATH", "/nonexistent/bin")]),
    );
    let text = painted_directive();
    let d = Arc::new(
        parse_item(
            ItemType::Directive,
            "t".into(),
            Space::Project,
            proj.join(".ai/directives/t.md"),
            text.as_bytes(),
        )
        .unwrap(),
    );
    ws.insert(d.clone());
    let (rt_text, _) = fixture(RUNTIME);
    let rt_text = rt_text.replace(
        "\"args\": [\"{tool_path}\"]",
        "\"args\": [\"{tool_dir}/helper.sh\", \"{tool_dir}/absent.sh\"]",
    );
    let rt = Arc::new(
        parse_item(
            ItemType::Tool,
            "rt/py".into(),
            Space::Project,
            proj.join(".ai/tools/rt/py.py"),
            rt_text.as_bytes(),
        )
        .unwrap(),
    );
    ws.insert(rt.clone());
    let links = document_links(&ws, &d);
    let shown: Vec<(&str, PathBuf)> = links
        .iter()
        .map(|l| (&text[l.range.start..l.range.end], l.target.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            ("README.md", proj.join("README.md")),
            ("rt/py", rt.path.clone()),
        ],
        "the missing tool links nowhere"
    );
    let links = document_links(&ws, &rt);
    let shown: Vec<(&str, String)> = links
        .iter()
        .map(|l| {
            (
                &rt_text[l.range.start..l.range.end],
                l.target.display().to_string(),
            )
        })
        .collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert_eq!(shown[0].0, "subprocess");
    assert!(shown[0].1.starts_with("<builtin>"), "{shown:?}");
    assert_eq!(
        shown[1],
        (
            "{tool_dir}/helper.sh",
            proj.join(".ai/tools/rt/helper.sh").display().to_string()
        )
    );
}

fn formatted(rel: &str, t: ItemType, text: &str) -> Result<String, String> {
    let (_, item) = ws_with(rel, t, "x", text);
    let mut out = text.to_string();
    let mut edits = format(&item)?;
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    for e in edits {
        out.replace_range(e.range.start..e.range.end, &e.new_text);
    }
    Ok(out)
}

#[test]
fn formatting_a_directive_indents_its_xml_and_nothing_else() {
    let messy = "# T  \n\n```xml\n<directive name=\"t\" version=\"1.0.0\">\n<metadata>   \n        <description>d</description>\n  </metadata>\n   <process>\n <step name=\"a\"\n         id=\"x\">\n        Do this:\n          - indented item  \n        Done.\n      <template>\n   keep   \n      </template>\n      <param name=\"p\" value=\"line one\n   line two\"/>\n </step>\n\n  </process>\n</directive>\n```\n";
    let want = "# T  \n\n```xml\n<directive name=\"t\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n  </metadata>\n  <process>\n    <step name=\"a\"\n            id=\"x\">\n      Do this:\n        - indented item  \n      Done.\n      <template>\n   keep   \n      </template>\n      <param name=\"p\" value=\"line one\n   line two\"/>\n    </step>\n\n  </process>\n</directive>\n```\n";
    let got = formatted("directives/t.md", ItemType::Directive, messy).unwrap();
    assert_eq!(got, want, "\n{got}");
    // Idempotent.
    assert_eq!(
        formatted("directives/t.md", ItemType::Directive, &got).unwrap(),
        got
    );
    // CRLF line ends stay.
    let crlf = messy.replace('\n', "\r\n");
    assert_eq!(
        formatted("directives/t.md", ItemType::Directive, &crlf).unwrap(),
        want.replace('\n', "\r\n")
    );
}

#[test]
fn formatting_a_yaml_tool_levels_its_indentation() {
    let messy = "version: \"1.0.0\"   \ntool_type: python\nexecutor_id: rt/py\nconfig:\n    command: python3\n    args:\n    -   \"{tool_path}\"\n    -   x\n    env:\n          A: '1'\n    # a comment\n    script: |\n        keep  \n          this\n\n        as is\n    flow: [a,\n      b]\nconfig_schema:\n  type: object\n";
    let want = "version: \"1.0.0\"\ntool_type: python\nexecutor_id: rt/py\nconfig:\n  command: python3\n  args:\n  - \"{tool_path}\"\n  - x\n  env:\n    A: '1'\n  # a comment\n  script: |\n      keep  \n        this\n\n      as is\n  flow: [a,\n    b]\nconfig_schema:\n  type: object\n";
    let got = formatted("tools/t.yaml", ItemType::Tool, messy).unwrap();
    assert_eq!(got, want, "\n{got}");
    assert_eq!(
        formatted("tools/t.yaml", ItemType::Tool, &got).unwrap(),
        got
    );
    // Refused: a syntax error, a Python tool, a directive whose signature holds.
    assert!(formatted("tools/t.yaml", ItemType::Tool, "a: [b\n").is_err());
    let (rt, _) = fixture(RUNTIME);
    assert!(formatted("tools/rt/py.py", ItemType::Tool, &rt).is_err());
}

#[test]
fn formatting_refuses_a_directive_whose_signature_holds() {
    let body = DIRECTIVE.to_string();
    let d = crate::directive::parse(&body);
    let hash = crate::directive::content_hash(&body, &d).unwrap();
    let signed = format!("<!-- rye:signed:2026-02-13T08:38:46Z:{hash}:sig:fp -->\n{body}")
        .replace("  <metadata>", " <metadata>");
    // The signature no longer holds once the text changed: formatting goes ahead.
    assert!(formatted("directives/t.md", ItemType::Directive, &signed).is_ok());
    let d = crate::directive::parse(&signed);
    let hash = crate::directive::content_hash(&signed, &d).unwrap();
    let signed = format!("<!-- rye:signed:2026-02-13T08:38:46Z:{hash}:sig:fp -->\n{body}")
        .replace("  <metadata>", " <metadata>");
    let err = formatted("directives/t.md", ItemType::Directive, &signed).unwrap_err();
    assert!(err.contains("signed"), "{err}");
}
