use super::testing::{render_diagnostics, render_value};
use super::*;
use insta::assert_snapshot;

fn diags_py(text: &str) -> String {
    render_diagnostics(text, &parse_python(text).diagnostics)
}

fn diags_yaml(text: &str) -> String {
    render_diagnostics(text, &parse_yaml(text).diagnostics)
}

/// Every field of a tool as a value tree.
fn fields(text: &str, tool: &ToolFile) -> String {
    let mut out = String::new();
    for f in &tool.fields {
        out.push_str(&format!(
            "{:?} (key {:?}):\n",
            f.field,
            &text[f.key_range.start..f.key_range.end]
        ));
        for line in render_value(text, &f.value).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

const GOOD_PY: &str = r#"#!/usr/bin/env python3
"""Build the docs."""
import os

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "docs"
__tool_description__ = "Build the documentation site"

CONFIG_SCHEMA = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
CONFIG = {"timeout": 120}
EXECUTION_ENVIRONMENT = {"mode": "preferred"}

def main():
    __version__ = "9"  # not module level
"#;

#[test]
fn python_good_tool_has_no_diagnostics() {
    let t = parse_python(GOOD_PY);
    assert_eq!(diags_py(GOOD_PY), "");
    assert_eq!(t.str(Field::Version), Some("1.0.0"));
    assert_eq!(t.str(Field::ExecutorId), Some("runtimes/python_runtime"));
    assert_eq!(
        t.value(Field::Config)
            .and_then(|c| c.get("timeout"))
            .map(|v| &v.kind),
        Some(&crate::value::ValueKind::Int(120))
    );
    assert_eq!(t.fields.len(), 8);
    // The same file with CRLF line ends, and with old Mac CR line ends.
    for eol in ["\r\n", "\r"] {
        let text = GOOD_PY.replace('\n', eol);
        let t = parse_python(&text);
        assert_eq!(render_diagnostics(&text, &t.diagnostics), "");
        assert_eq!(t.fields.len(), 8);
        let d = t.get(Field::Description).expect("a description");
        assert_eq!(
            &text[d.key_range.start..d.key_range.end],
            "__tool_description__"
        );
    }
}

#[test]
fn python_runtime_env_config_values() {
    let text = r#"__version__ = "2.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"

ENV_CONFIG = {
    "interpreter": {"type": "venv_python", "search": ["project", "kiwi", "user", "system"],
                    "var": "KIWI_PYTHON", "fallback": "python3"},
    "env": {"PYTHONUNBUFFERED": "1"},
}
CONFIG = {"command": "${KIWI_PYTHON}", "args": ["{tool_path}", "--params", "{params_json}"], "timeout": 300}
"#;
    let t = parse_python(text);
    assert_eq!(render_diagnostics(text, &t.diagnostics), "");
    assert_snapshot!(fields(text, &t));
}

#[test]
fn python_literals() {
    let text = "__version__ = \"1.0.0\"\n__tool_type__ = 'python'\nCONFIG: dict = {\n    'raw': r'C:\\new\\path',\n    'bytes': b'\\x41\\n',\n    'esc': \"tab\\there \\u00e9 \\N{BULLET} \\x41 \\101\",\n    'cat': 'one' \"two\"\n           '''three''',\n    'tri': \"\"\"line1\r\nline2\"\"\",\n    'ints': [1_000, 0x1F, 0o17, 0b101, -5, +3, -0x10],\n    'floats': (1.5, -2e3, .5, 1_0.0_1),\n    'consts': [True, False, None],\n    'nested': {'a': [{'b': ()}]},\n    'bare_tuple': None,\n    7: 'int key',\n    'héllo wörld 😀': 'multi-byte',\n}\nCONFIG_SCHEMA = {}\nEXECUTION_ENVIRONMENT = {'x': (1)}\n__category__ = 1, 2\n";
    let t = parse_python(text);
    assert_snapshot!(fields(text, &t));
    assert_snapshot!(
        "python_literals_diagnostics",
        render_diagnostics(text, &t.diagnostics)
    );
}

#[test]
fn python_last_assignment_wins_and_annotations() {
    let text = "__version__ = 'bad'\n__version__: str = '1.2.3'\n__tool_type__ = A = 'python'\nif True:\n    __tool_type__ = 'nope'\n";
    let t = parse_python(text);
    assert_eq!(t.str(Field::Version), Some("1.2.3"));
    assert_eq!(t.str(Field::ToolType), Some("python"));
    // The assignment inside `if True:` is not read, and says so (issue 12, point 16).
    let d = render_diagnostics(text, &t.diagnostics);
    assert!(
        d.starts_with("T301 error 5:5-5:18 \"__tool_type__\" `__tool_type__` is assigned inside an `if` block"),
        "{d}"
    );
    assert_eq!(d.lines().count(), 1, "{d}");
}

#[test]
fn python_helper_module_declares_nothing() {
    let text = "import os\n\ndef helper():\n    return 1\n";
    let t = parse_python(text);
    assert!(!t.declares_anything());
    assert!(t.diagnostics.is_empty());
    let t = parse_python("");
    assert!(!t.declares_anything());
    assert!(t.diagnostics.is_empty());
}

#[test]
fn t301_non_literals() {
    let text = r#"import os
__version__ = VERSION
__tool_type__ = "python"
CONFIG = {
    "timeout": get_timeout(),
    "home": os.environ["HOME"],
    "name": f"tool-{x}",
    "path": os.path.join("a", "b"),
    "n": 60 * 5,
    "items": [1, *others, 3],
    "squares": [i * i for i in range(3)],
    "f": lambda x: x,
    "ok": "still read",
    **defaults,
    KEY: 1,
    "set": {1, 2},
}
EXECUTION_ENVIRONMENT = make_env()
"#;
    let t = parse_python(text);
    assert_snapshot!(diags_py(text));
    // The literal siblings are still read.
    assert_eq!(
        t.value(Field::Config)
            .and_then(|c| c.get("ok"))
            .and_then(|v| v.as_str()),
        Some("still read")
    );
}

#[test]
fn t301_wrong_kinds() {
    let text = "__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG = [1]\nEXECUTION_ENVIRONMENT = 'local'\n__category__ = 5\n__executor_id__ = None\nENV_CONFIG = [1]\n";
    assert_snapshot!(diags_py(text));
}

#[test]
fn t302_version() {
    assert_snapshot!(
        "t302_missing",
        diags_py("__tool_type__ = 'python'\n__executor_id__ = 'subprocess'\n")
    );
    assert_snapshot!(
        "t302_not_semver",
        diags_py("__version__ = \"1.0\"\n__tool_type__ = 'python'\n")
    );
    assert_snapshot!(
        "t302_number",
        diags_py("__version__ = 1.0\n__tool_type__ = 'python'\n")
    );
    assert_snapshot!(
        "t302_garbage",
        diags_py("__version__ = 'latest'\n__tool_type__ = 'python'\n")
    );
    assert_snapshot!("t302_yaml", diags_yaml("version: 1.0\ntool_type: python\n"));
}

#[test]
fn t303_tool_type() {
    assert_snapshot!(
        "t303_missing",
        diags_py("\r\n__version__ = '1.0.0'\r\n__executor_id__ = 'subprocess'\n")
    );
    assert_snapshot!(
        "t303_typo",
        diags_py(
            "__version__ = '1.0.0'\n__tool_type__ = 'pyhton'\n__executor_id__ = 'subprocess'\n"
        )
    );
    assert_snapshot!(
        "t303_unknown",
        diags_py(
            "__version__ = '1.0.0'\n__tool_type__ = 'xyzzy'\n__executor_id__ = 'subprocess'\n"
        )
    );
    assert_snapshot!(
        "t303_not_a_string",
        diags_py(
            "__version__ = '1.0.0'\n__tool_type__ = ['python']\n__executor_id__ = 'subprocess'\n"
        )
    );
    assert_snapshot!(
        "t303_yaml_typo",
        diags_yaml("version: 1.0.0\ntool_type: runtme\n")
    );
}

#[test]
fn t305_config_schema() {
    let text = r#"__version__ = "1.0.0"
__tool_type__ = "python"
CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "target": {"type": "strng"},
        "count": {"type": "integer", "minimum": "zero"},
    },
    "required": "target",
}
"#;
    assert_snapshot!(diags_py(text));
    assert_snapshot!(
        "t305_not_a_dict",
        diags_py("__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG_SCHEMA = ['target']\n")
    );
    assert_snapshot!(
        "t305_bad_regex",
        diags_py("__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG_SCHEMA = {'type': 'object', 'properties': {'x': {'type': 'string', 'pattern': '(unclosed'}}}\n")
    );
    assert_snapshot!(
        "t305_unknown_meta",
        diags_py("__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG_SCHEMA = {'$schema': 'http://example.com/meta', 'type': 'object'}\n")
    );
    assert_snapshot!(
        "t305_yaml",
        diags_yaml("version: 1.0.0\ntool_type: python\nconfig_schema:\n  type: object\n  properties:\n    n: {type: int}\n")
    );
    // A non-literal schema is a T301 only.
    assert_snapshot!(
        "t305_non_literal_is_t301_only",
        diags_py("__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG_SCHEMA = {'type': 'object', 'properties': PROPS}\n")
    );
}

const GOOD_YAML: &str = "# A YAML tool\r\nversion: \"1.0.0\"\r\ntool_type: http\r\nexecutor_id: http_client\r\ncategory: web\r\ndescription: >\r\n  Fetch a page\r\n  and print it — in UTF-8 ✓\r\nconfig_schema:\r\n  type: object\r\n  properties:\r\n    url: {type: string}\r\nconfig:\r\n  method: GET\r\n  url: \"{url}\"\r\n  timeout: 30\r\n  headers: &h\r\n    Accept: text/html\r\n  retry_headers: *h\r\nunrelated: [1, 2]\r\n";

#[test]
fn yaml_tool_values() {
    let t = parse_yaml(GOOD_YAML);
    assert_eq!(render_diagnostics(GOOD_YAML, &t.diagnostics), "");
    assert_eq!(t.str(Field::ToolType), Some("http"));
    assert_eq!(
        t.str(Field::Description),
        Some("Fetch a page and print it — in UTF-8 ✓\n")
    );
    assert_snapshot!(fields(GOOD_YAML, &t));
}

#[test]
fn yaml_tool_problems() {
    assert_snapshot!(
        "yaml_syntax_error",
        diags_yaml("version: \"1.0.0\ntool_type: python\nconfig:\n  a: [1, 2\n")
    );
    assert_snapshot!("yaml_not_a_mapping", diags_yaml("- version: 1.0.0\n"));
    assert_snapshot!(
        "yaml_alias_undefined",
        diags_yaml("version: 1.0.0\ntool_type: python\nconfig:\n  a: *nowhere\n")
    );
    assert_snapshot!(
        "yaml_wrong_kinds",
        diags_yaml(
            "version: 1.0.0\ntool_type: python\nconfig: [1]\nexecution_environment: local\n"
        )
    );
}

#[test]
fn deep_nesting_never_overflows() {
    let depth = 10_000;
    let text = format!(
        "__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG = {{'a': {}{}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let t = parse_python(&text);
    assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
    assert!(t.diagnostics[0]
        .message
        .contains("nested deeper than 100 levels"));
    let yaml = format!(
        "version: 1.0.0\ntool_type: python\nconfig: {{a: {}{}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let t = parse_yaml(&yaml);
    assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
    let dicts = format!(
        "__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG = {}{}\n",
        "{'a': ".repeat(depth),
        "}".repeat(depth)
    );
    let t = parse_python(&dicts);
    assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
    // Deep indentation (invalid Python past 100 levels; the scanner's buffer cannot hold
    // ~500, fewer inside an odd number of string delimiters).
    let mut deep =
        String::from("__version__ = '1.0.0'\n__tool_type__ = 'python'\nCONFIG = {'a': 1}\n");
    for i in 0..600 {
        deep.push_str(&" ".repeat(i));
        deep.push_str("if x:\n");
    }
    deep.push_str(&" ".repeat(600));
    deep.push_str("s = f'''{x}\n");
    for i in 0..600 {
        deep.push_str(&" ".repeat(i));
        deep.push_str("if x:\n");
    }
    deep.push_str("'''\n");
    let t = parse_python(&deep);
    // Python refuses more than 100 levels of indentation: one T301 says so (the file is not
    // parsed whole: tree-sitter-python's scanner state cannot hold ~500 levels).
    assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
    assert_eq!(t.diagnostics[0].code, Code::T301);
    assert!(t.diagnostics[0].message.contains("levels of indentation"));
    assert!(t.value(Field::Config).is_some());
    // 250 distinct indentation widths (in a docstring) and 40 levels: valid Python, parsed
    // whole, no error.
    let mut doc = String::from("__version__ = '1.0.0'\n__tool_type__ = 'python'\n\"\"\"\n");
    for i in 0..250 {
        doc.push_str(&" ".repeat(i));
        doc.push_str("x\n");
    }
    doc.push_str("\"\"\"\n");
    for i in 0..40 {
        doc.push_str(&" ".repeat(i * 4));
        doc.push_str("if x:\n");
    }
    doc.push_str(&" ".repeat(160));
    doc.push_str("pass\n");
    let t = parse_python(&doc);
    assert!(
        !t.diagnostics.iter().any(|d| d.code == Code::T301),
        "{:?}",
        t.diagnostics
    );
    let mut deep = String::from("__version__ = '1.0.0'\n");
    for i in 0..600 {
        deep.push_str(&" ".repeat(i));
        deep.push_str("f'''{\n");
    }
    let _ = parse_python(&deep);
}

#[test]
fn never_panics_on_odd_input() {
    let inputs = [
        "",
        "\u{feff}__version__ = '1.0.0'\n__tool_type__ = 'python'\n",
        "__version__ = ",
        "__version__ = '",
        "__version__ = \"\"\"never closed",
        "CONFIG = {",
        "CONFIG = {'a': }",
        "CONFIG = {'a' 1}",
        "__version__ = '\\",
        "__version__ = 'é\\xé'",
        "__version__ = 99999999999999999999999999999999999999999999",
        "__version__ = -",
        "__tool_type__ = 'python' if x else 'bash'",
        "\0\0\0__version__",
        "__version__ = b'\\u00e9'",
        "CONFIG = {**a, **b}",
        "CONFIG = {'a': 1,, 'b': 2}",
        "CONFIG = ({'a': 1})",
        "CONFIG = ()",
        "CONFIG = (1)",
        "__version__ = '1.0.0' '-beta'",
        "__version__ = f'1.0.{x}'",
    ];
    for text in inputs {
        let _ = parse_python(text);
        let _ = parse_yaml(text);
    }
    let _ = parse_yaml("a: &a [*a]\nb: *a\n");
    let _ = parse_yaml("\t- x\n");
    let _ = parse_yaml("---\n---\n---\n");
    let _ = parse_yaml("? [a, b]\n: c\n");
}

#[test]
fn billion_laughs_is_capped() {
    let mut text = String::from(
        "version: 1.0.0\ntool_type: python\nconfig:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n",
    );
    let mut prev = 'a';
    for c in 'b'..='j' {
        text.push_str(&format!(
            "  {c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        ));
        prev = c;
    }
    let start = std::time::Instant::now();
    let t = parse_yaml(&text);
    assert!(start.elapsed().as_secs() < 2);
    let count = t
        .diagnostics
        .iter()
        .filter(|d| d.code == crate::diag::Code::T301)
        .count();
    assert!(count > 0, "expected the alias cap to show");
}

#[test]
fn query_compiles() {
    let q = tree_sitter::Query::new(&tree_sitter_python::LANGUAGE.into(), EXTRACT_QUERY);
    assert!(q.is_ok(), "{q:?}");
}

/// The direct walk (`python::assignments`) finds exactly what tree-sitter's query engine
/// finds with the extraction query, on a Python file exercising it.
#[test]
fn walk_agrees_with_the_extraction_query() {
    use tree_sitter::StreamingIterator;
    let src = "X = 1\nA = B = {'k': [1, 2]}\ndef f():\n    Y = 2\nif True:\n    Z = 3\n\
               C: dict = {}\nD += 1\nprint(X)\nE = F\nG: int\nH, I = 1, 2\n(J) = 3\n\
               K = yield\nL = lambda: 0\nclass M:\n    N = 1\ntry:\n    O = 1\nexcept E:\n    pass\n\
               P = 1; Q = 2\nR.s = 1\nT[0] = 1\n";
    let lang: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang).unwrap();
    let tree = parser.parse(src, None).unwrap();
    let ts = tree_sitter::Query::new(&lang, EXTRACT_QUERY).unwrap();
    let name = ts.capture_index_for_name("name").unwrap();
    let value = ts.capture_index_for_name("value").unwrap();
    let mut cursor = tree_sitter::QueryCursor::new();
    cursor.set_max_start_depth(Some(0));
    let mut want = Vec::new();
    let mut it = cursor.matches(&ts, tree.root_node(), src.as_bytes());
    while let Some(m) = it.next() {
        let find = |i| m.captures().iter().find(|c| c.index == i).unwrap().node;
        want.push((find(name).byte_range(), find(value).byte_range()));
    }
    let got: Vec<_> = super::python::assignments(tree.root_node())
        .into_iter()
        .map(|(n, v)| (n.byte_range(), v.byte_range()))
        .collect();
    assert_eq!(got, want);
    let names: Vec<&str> = got.iter().map(|(n, _)| &src[n.clone()]).collect();
    // Not the ones inside `def`/`class`/`if`/`try`, not `D += 1`, `G: int`, tuples or attributes.
    assert_eq!(names, ["X", "A", "C", "E", "K", "L", "P", "Q"], "{got:?}");
}

#[test]
fn only_module_level_statements_are_read() {
    let text = r#""""Docs.
__version__ = "9.9.9"
"""
x = ("(", '[', """
__tool_type__ = "bash"
""")  # a comment with a quote ' and a bracket (
__version__ = \
    "1.2.3"
CONFIG = {
    "a": "]",
# __category__ = "no"
    "b": [1,
2],
}
class C:
    __tool_type__ = "bash"
__tool_type__: str = 'python'  # the real one
s = 'unterminated
__category__ = "cat"
"#;
    let t = parse_python(text);
    // The unterminated string is a Python syntax error (issue 12, point 18); the metadata
    // around it is still read.
    assert_eq!(
        render_diagnostics(text, &t.diagnostics),
        "T301 error 18:5-18:6 \"'\" Python syntax error at `'`; Python will refuse to load this tool, and kiwi cannot be sure of its metadata\n"
    );
    assert_eq!(t.str(Field::Version), Some("1.2.3"));
    assert_eq!(t.str(Field::ToolType), Some("python"));
    assert_eq!(t.str(Field::Category), Some("cat"));
    let config = t
        .value(Field::Config)
        .and_then(|c| c.as_map())
        .map(|m| m.len());
    assert_eq!(config, Some(2));
}

mod fuzz {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    fn pieces() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("__version__ = ".to_string()),
            Just("__tool_type__: str = ".to_string()),
            Just("CONFIG = ".to_string()),
            Just("CONFIG_SCHEMA = ".to_string()),
            Just("version: ".to_string()),
            Just("config:".to_string()),
            Just("---".to_string()),
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("'''".to_string()),
            Just("\"\"\"".to_string()),
            Just("f\"{x}\"".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just(": ".to_string()),
            Just(", ".to_string()),
            Just("- ".to_string()),
            Just("|".to_string()),
            Just(">-".to_string()),
            Just("&a ".to_string()),
            Just("*a".to_string()),
            Just("<<: ".to_string()),
            Just("\\".to_string()),
            Just("\\x4".to_string()),
            Just("#".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("\r".to_string()),
            Just("\t".to_string()),
            Just("  ".to_string()),
            Just("1.0.0".to_string()),
            Just("0x1F".to_string()),
            Just("-".to_string()),
            Just("é".to_string()),
            Just("😀".to_string()),
            Just("\u{feff}".to_string()),
            "[a-z_]{1,6}".prop_map(|s| s),
            any::<char>().prop_map(|c| c.to_string()),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    fn check_range(text: &str, r: crate::text::TextRange, what: &str) {
        assert!(
            r.start <= r.end && r.end <= text.len(),
            "{what} {r:?} in {text:?}"
        );
        assert!(
            text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
            "{what} {r:?} not on char boundaries in {text:?}"
        );
    }

    fn check_value(text: &str, v: &Value) {
        v.walk(&mut |x| {
            check_range(text, x.range, "value");
            if let Some(s) = x.as_string() {
                check_range(text, s.content, "content");
                if s.verbatim {
                    assert_eq!(&text[s.content.start..s.content.end], s.value);
                }
            }
            if let Some(m) = x.as_map() {
                for e in m {
                    check_range(text, e.key_range, "key");
                }
            }
        });
    }

    fn check_tool(text: &str, t: &ToolFile) {
        for d in &t.diagnostics {
            check_range(text, d.range, "diagnostic");
            for f in &d.fixes {
                for e in &f.edits {
                    check_range(text, e.range, "edit");
                }
            }
        }
        for f in &t.fields {
            check_range(text, f.key_range, "field key");
            check_value(text, &f.value);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        #[test]
        fn readers_never_panic_and_ranges_hold(text in pieces()) {
            check_tool(&text, &parse_python(&text));
            check_tool(&text, &parse_yaml(&text));
            let k = crate::knowledge::parse(&text);
            for d in &k.diagnostics {
                check_range(&text, d.range, "knowledge diagnostic");
            }
            if let Some(v) = &k.frontmatter {
                check_value(&text, v);
            }
            let doc = crate::yaml::parse(&text, 0);
            for (r, _) in &doc.errors {
                check_range(&text, *r, "yaml error");
            }
            if let Some(v) = &doc.value {
                check_value(&text, v);
            }
        }
    }
}

/// Issue 12, point 18: a Python syntax error anywhere in the file is a T301 error, whether
/// the metadata was read by the fast literal reader (a file read once) or by tree-sitter (an
/// editor buffer); the metadata itself is still read the same way by both.
#[test]
fn t301_python_syntax_error_in_both_readers() {
    let head = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\n";
    for (body, line) in [
        ("def broken(:\n    pass\n", 4usize),
        ("x = (1,\n", 4),
        ("if True\n    pass\n", 4),
        ("print('a'\n", 4),
    ] {
        let text = format!("{head}{body}");
        let fast = parse_python(&text);
        let (tree, _) = parse_python_incremental(&text, None);
        assert_eq!(fast.fields, tree.fields, "{body}");
        for tool in [&fast, &tree] {
            let d = tool
                .diagnostics
                .iter()
                .find(|d| d.code == Code::T301)
                .unwrap_or_else(|| panic!("no T301 for {body:?}: {:?}", tool.diagnostics));
            assert_eq!(d.severity, crate::diag::Severity::Error);
            assert!(d.message.contains("syntax error"), "{}", d.message);
            let l = text[..d.range.start].matches('\n').count();
            assert!(l >= line, "{body:?}: at line {l}");
            // The fields declared before are still there, none reported missing.
            assert!(!tool.diagnostics.iter().any(|d| d.code == Code::T302));
        }
        assert_eq!(fast.diagnostics, tree.diagnostics, "{body}");
    }
    // Valid Python of the newer kinds is no syntax error (no false alarm).
    let ok = format!("{head}match x:\n    case [a, *rest]:\n        pass\n    case _:\n        pass\nasync def f():\n    async with a as b:\n        await c\ny = f\"{{x!r:>10}}\" if (z := 1) else None\nclass A[T]:\n    pass\n");
    let t = parse_python(&ok);
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
}

/// Issue 12, point 16: a field assigned inside an `if`/`try`/... block would be ignored;
/// it is a T301. A local variable of a function or a class attribute is not metadata.
#[test]
fn t301_field_assigned_inside_a_block() {
    let head = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\n";
    for block in [
        "if True:\n    CONFIG = {\"timeout\": 1}\n",
        "try:\n    import x\nexcept ImportError:\n    # fallback\n\n    CONFIG: dict = {}\n",
        "with open('x') as f:\n    ENV_CONFIG = {}\n",
    ] {
        let t = parse_python(&format!("{head}{block}"));
        assert!(
            t.diagnostics
                .iter()
                .any(|d| d.code == Code::T301 && d.message.contains("block")),
            "{block}: {:?}",
            t.diagnostics
        );
    }
    for fine in [
        "def main():\n    CONFIG = load()\n    return CONFIG\n",
        "class A:\n    CONFIG = {}\n",
        "if CONFIG == 1:\n    pass\nCONFIG = {}\n",
        "if x:\n    y = {\n        \"CONFIG\": 1,\n    }\n    MY_CONFIG = 2\n    CONFIG_X = 3\n",
    ] {
        let t = parse_python(&format!("{head}{fine}"));
        assert!(t.diagnostics.is_empty(), "{fine}: {:?}", t.diagnostics);
    }
}

/// Issue 16, point 10: an unterminated `__version__` string is the syntax error it is, never
/// also "not a float" (what tree-sitter's recovery made of the broken line).
#[test]
fn an_unterminated_version_is_only_a_syntax_error() {
    let text = "__version__ = \"1.0.0\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__category__ = \"t\"\n";
    let t = parse_python(text);
    let rendered = render_diagnostics(text, &t.diagnostics);
    assert!(rendered.contains("T301"), "{rendered}");
    assert!(!rendered.contains("float"), "{rendered}");
    assert!(!rendered.contains("T302"), "{rendered}");
}

/// A module-level name bound to a literal reads as that literal (rye's bundler:
/// `ACTIONS = [...]` then `"enum": ACTIONS`), in both readers; a name that is not bound once by
/// a plain assignment before its use, or is bound to something else, stays a T301.
#[test]
fn module_level_names_bound_to_literals_are_read() {
    let head = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__category__ = \"c\"\n__tool_description__ = \"x\"\n";
    let text = format!(
        "{head}ACTIONS = [\"create\", \"verify\"]  # the actions\nLIMITS = (1, 2)\nBASE = {{\"type\": \"string\"}}\nPAIR = ACTIONS\nCONFIG_SCHEMA = {{\n    \"type\": \"object\",\n    \"properties\": {{\n        \"action\": {{\"type\": \"string\", \"enum\": ACTIONS}},\n        \"other\": BASE,\n        \"n\": {{\"type\": \"integer\", \"enum\": LIMITS}},\n        \"p\": {{\"type\": \"string\", \"enum\": PAIR}},\n    }},\n}}\n"
    );
    let fast = parse_python(&text);
    let (tree, _) = parse_python_incremental(&text, None);
    for t in [&fast, &tree] {
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let schema = t.value(Field::ConfigSchema).unwrap();
        let props = schema.get("properties").unwrap();
        let en = props.get("action").and_then(|a| a.get("enum")).unwrap();
        let ValueKind::List(items) = &en.kind else {
            panic!("{en:?}")
        };
        let names: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(names, ["create", "verify"]);
        assert_eq!(
            props
                .get("other")
                .and_then(|o| o.get("type"))
                .and_then(|v| v.as_str()),
            Some("string")
        );
        assert!(props.get("p").and_then(|p| p.get("enum")).is_some());
    }
    assert_eq!(fast.diagnostics, tree.diagnostics);
    // Not a literal, changed at module level, bound twice, defined after its use, or not at
    // module level: still T301, at the use.
    for (defs, after) in [
        ("ACTIONS = list_actions()\n", ""),
        ("ACTIONS = [\"a\"]\nACTIONS += [\"b\"]\n", ""),
        ("ACTIONS = [\"a\"]\nACTIONS.append(\"b\")\n", ""),
        ("ACTIONS = [\"a\"]\nACTIONS = [\"b\"]\n", ""),
        ("", "ACTIONS = [\"a\"]\n"),
        ("def f():\n    ACTIONS = [\"a\"]\n", ""),
        ("ACTIONS: list = [\"a\"]\n", ""),
    ] {
        let text = format!(
            "{head}{defs}CONFIG_SCHEMA = {{\"type\": \"object\", \"properties\": {{\"a\": {{\"enum\": ACTIONS}}}}}}\n{after}"
        );
        let use_at = text.find("ACTIONS}").unwrap();
        for t in [parse_python(&text), parse_python_incremental(&text, None).0] {
            let d = t
                .diagnostics
                .iter()
                .find(|d| d.code == Code::T301)
                .unwrap_or_else(|| panic!("{defs}{after}: no T301 {:?}", t.diagnostics));
            assert_eq!(d.range.start, use_at, "{defs}{after}: {}", d.message);
            assert!(d.message.contains("`ACTIONS`"), "{}", d.message);
        }
    }
}

/// Python files to compare the quick syntax recognizer with tree-sitter on: the repository's,
/// the corpus's (`KIWI_CORPUS` or `../shared/corpus`) and up to 120 of this machine's Python
/// standard library (when there is one), 40 KB at most each.
fn python_samples() -> Vec<(std::path::PathBuf, String)> {
    use std::path::{Path, PathBuf};
    fn walk(dir: &Path, out: &mut Vec<PathBuf>, cap: usize) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if out.len() >= cap {
                return;
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == "target" || name == "node_modules" || name.starts_with('.') && name != ".ai"
            {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                walk(&p, out, cap);
            } else if meta.is_file() && name.ends_with(".py") {
                out.push(p);
            }
        }
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    walk(&repo, &mut files, usize::MAX);
    let corpus = std::env::var_os("KIWI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("../shared/corpus"));
    walk(&corpus, &mut files, usize::MAX);
    let stdlib = [
        "/usr/lib/python3.13",
        "/usr/lib/python3.12",
        "/usr/lib/python3.11",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_dir());
    if let Some(lib) = stdlib {
        let cap = files.len() + 120;
        walk(&lib, &mut files, cap);
    }
    files
        .into_iter()
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(&p).ok()?)))
        .filter(|(_, t)| t.len() <= 40_000)
        .collect()
}

/// The quick recognizer (`python_syntax`) says "surely valid" only of files in which
/// tree-sitter finds no syntax error: on every sample file and on broken variants of each
/// (a character deleted, a token inserted, at spread positions). It must also be sure of
/// most real files, or it saves nothing.
#[test]
fn quick_syntax_recognizer_agrees_with_tree_sitter() {
    use super::python::whole_parse_syntax_errors;
    use super::python_syntax::surely_valid;
    let samples = python_samples();
    assert!(samples.len() >= 10, "{} sample files", samples.len());
    let mut sure = 0;
    let mut clean = 0;
    let mut variants = 0;
    let mut variants_sure = 0;
    let mut tree_sitter_wrong = 0;
    for (path, text) in &samples {
        let errors = whole_parse_syntax_errors(text);
        if surely_valid(text) {
            sure += 1;
            if !errors.is_empty() {
                assert!(python_compiles(text), "{}: {errors:?}", path.display());
                tree_sitter_wrong += 1;
            }
        }
        if errors.is_empty() {
            clean += 1;
        }
        // Broken variants: at up to 24 spread character boundaries.
        let bounds: Vec<usize> = (0..=text.len())
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        let step = (bounds.len() / 24).max(1);
        for (n, at) in bounds.iter().step_by(step).enumerate() {
            let at = *at;
            let next = bounds.iter().find(|b| **b > at).copied();
            let mut cases = Vec::new();
            if let Some(next) = next {
                cases.push(format!("{}{}", &text[..at], &text[next..]));
            }
            let insert = [
                "(", ")", ":", "=", ",", "\"", "\n", " if ", "'", "{", "]", "\n  ", "def ", ".",
            ];
            cases.push(format!(
                "{}{}{}",
                &text[..at],
                insert[n % insert.len()],
                &text[at..]
            ));
            for v in cases {
                variants += 1;
                if surely_valid(&v) {
                    variants_sure += 1;
                    let errors = whole_parse_syntax_errors(&v);
                    if !errors.is_empty() && python_compiles(&v) {
                        // Valid Python tree-sitter-python cannot read: T301 was a false alarm.
                        tree_sitter_wrong += 1;
                        continue;
                    }
                    assert!(
                        errors.is_empty(),
                        "{} variant at {at} was taken for valid, tree-sitter says {errors:?}:\n{}",
                        path.display(),
                        &v[at.saturating_sub(200)..(at + 200).min(v.len())]
                    );
                }
            }
        }
    }
    eprintln!(
        "{} files ({clean} without syntax errors), {sure} recognized; {variants} variants, {variants_sure} recognized; {tree_sitter_wrong} valid (python3 compiles them) where tree-sitter saw an error",
        samples.len()
    );
    assert!(
        sure * 10 >= clean * 6,
        "only {sure} of {clean} clean files recognized"
    );
}

/// Whether CPython compiles `text` (the oracle when the quick recognizer and tree-sitter
/// disagree).
fn python_compiles(text: &str) -> bool {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args(["-c", "import sys; compile(sys.stdin.read(), 'x', 'exec')"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 (the oracle of the quick recognizer's test)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    child.wait().expect("python3").success()
}

/// A tool parsed without its file checks gives, asked, the diagnostics of the parse that made
/// them, for every reader: Python, a ryeos Python tool (YAML from its comment header, read by
/// the Python reader), YAML and JavaScript; and the parse left them out indeed.
#[test]
fn file_checks_left_out_are_made_when_asked() {
    let python = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"python_runtime\"\nif True:\n    __category__ = \"x\"\ndef f(:\n    pass\n";
    let ryeos = "#!/usr/bin/env python3\n# ryeos-tool:\n#   version: \"1.0.0\"\n#   executor_id: \"tool:ryeos/core/runtimes/python/function\"\n#   config: {timeout: soon}\n\ndef execute(params:\n    return {}\n";
    let yaml = "tool_type: python\nexecutor_id: x/y\n";
    let js = "export const __version__ = \"1.0.0\";\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = 3;\n";
    type Parse = fn(&str, bool) -> ToolFile;
    let cases: [(&str, Parse); 4] = [
        (python, |t, c| parse_python_with(t, None, false, c).0),
        (ryeos, |t, c| parse_python_with(t, None, false, c).0),
        (yaml, |t, c| parse_yaml_with(t, None, false, c).0),
        (js, |t, c| parse_javascript_with(t, c)),
    ];
    for (text, parse) in cases {
        let (checked, left) = (parse(text, true), parse(text, false));
        assert_eq!(checked.checked_diagnostics(text), &checked.diagnostics[..]);
        assert!(
            checked.diagnostics.len() > left.diagnostics.len(),
            "{text}: the checks find something the parse alone does not: {:?}",
            checked.diagnostics
        );
        assert_eq!(
            left.checked_diagnostics(text),
            &checked.diagnostics[..],
            "{text}"
        );
    }
    assert!(parse_python_with(ryeos, None, false, true).0.ryeos_header);
}
