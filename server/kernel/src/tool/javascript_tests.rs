//! The JavaScript/TypeScript tool reader (`javascript.rs`): rye's format read into the kernel
//! tool model, and what it cannot read reported where it is. Positions are written into the
//! sources with markers: `«…»` around the text a diagnostic (or a value) must cover.

use super::testing::render_diagnostics;
use super::*;
use crate::diag::Code;

/// The text without its `«`/`»` markers, and the ranges they enclosed, in the order they
/// close (markers nest).
fn marked(src: &str) -> (String, Vec<TextRange>) {
    let mut text = String::new();
    let mut ranges = Vec::new();
    let mut open = Vec::new();
    for c in src.chars() {
        match c {
            '«' => open.push(text.len()),
            '»' => ranges.push(TextRange::new(open.pop().expect("« before »"), text.len())),
            c => text.push(c),
        }
    }
    (text, ranges)
}

fn diags(text: &str) -> String {
    render_diagnostics(text, &parse_javascript(text).diagnostics)
}

/// Every diagnostic of `src`, with the code wanted and at exactly the marked ranges.
fn assert_at(src: &str, code: Code) -> Vec<Diagnostic> {
    let (text, want) = marked(src);
    let tool = parse_javascript(&text);
    let got: Vec<TextRange> = tool.diagnostics.iter().map(|d| d.range).collect();
    assert_eq!(
        got,
        want,
        "{}",
        render_diagnostics(&text, &tool.diagnostics)
    );
    for d in &tool.diagnostics {
        assert_eq!(
            d.code,
            code,
            "{}",
            render_diagnostics(&text, &tool.diagnostics)
        );
    }
    tool.diagnostics
}

/// A TypeScript tool of rye's shape (`rye/code/lsp/lsp.ts` in newer rye).
const RYE_TS: &str = r#"// rye:signed:2026-02-26T05:52:24Z:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0:c2ln:4b987fd4e40303ac
// rye:unsigned
import { parseArgs } from "node:util";
import {
  createMessageConnection,
} from "vscode-jsonrpc/node.js";

export const «__version__» = "1.0.0";
export const «__tool_type__» = "javascript";
export const «__executor_id__» = "rye/core/runtimes/node/node";
export const «__category__» = "rye/code/lsp";
export const «__tool_description__» =
  "LSP client — go to definition, find references, hover";

const OPERATIONS = [
  "goToDefinition",
  "hover",
] as const;

export const «CONFIG_SCHEMA» = {
  type: "object",
  properties: {
    operation: {
      type: "string",
      enum: [...OPERATIONS],
      description: 'LSP operation to perform',
    },
    line: { type: "integer", minimum: 1, default: 0x10, },
    "file-path": { type: `string` },
    ratio: { type: "number", default: -1.5e3 },
  },
  required: ["operation", "line"],
};

export const «ENV_CONFIG» = {
  interpreter: { type: "node_modules", var: "RYE_NODE", fallback: "node" },
};

export const «CONFIG»: Record<string, unknown> = { timeout: 30 } satisfies Record<string, number>;

const LANGUAGE_EXTENSIONS: Record<string, string> = {
  ".ts": "typescript",
};

interface Params {
  operation: (typeof OPERATIONS)[number];
}

function execute(params: Params): string {
  const __version__ = "9.9.9"; // not module level
  const re = /["'`]{2}\/*/g;
  return `${params.operation} ${re.source} ${"}"}`;
}

const { values } = parseArgs({ options: { params: { type: "string" } } });
if (values.params) console.log(execute(JSON.parse(values.params)));
"#;

#[test]
fn reads_rye_typescript_tool_metadata_into_the_tool_model() {
    let (text, names) = marked(RYE_TS);
    let t = parse_javascript(&text);
    assert_eq!(diags(&text), "");
    assert_eq!(t.format, ToolFormat::Javascript);
    assert_eq!(t.kind(), ToolKind::Tool);
    // Every field at its name, in document order.
    let keys: Vec<TextRange> = t.fields.iter().map(|f| f.key_range).collect();
    assert_eq!(keys, names);
    assert_eq!(t.str(Field::Version), Some("1.0.0"));
    assert_eq!(t.str(Field::ToolType), Some("javascript"));
    assert_eq!(
        t.str(Field::ExecutorId),
        Some("rye/core/runtimes/node/node")
    );
    assert_eq!(t.str(Field::Category), Some("rye/code/lsp"));
    // A description split over two lines after `=`.
    assert_eq!(
        t.str(Field::Description),
        Some("LSP client — go to definition, find references, hover")
    );
    let schema = t.value(Field::ConfigSchema).unwrap().to_json().unwrap();
    assert_eq!(
        schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["goToDefinition", "hover"],
                    "description": "LSP operation to perform",
                },
                "line": {"type": "integer", "minimum": 1, "default": 16},
                "file-path": {"type": "string"},
                "ratio": {"type": "number", "default": -1500.0},
            },
            "required": ["operation", "line"],
        })
    );
    let env = t.value(Field::EnvConfig).unwrap().to_json().unwrap();
    assert_eq!(env["interpreter"]["var"], "RYE_NODE");
    // A type annotation and `satisfies` are types only.
    let config = t.value(Field::Config).unwrap().to_json().unwrap();
    assert_eq!(config, serde_json::json!({"timeout": 30}));
}

#[test]
fn values_point_at_their_source() {
    let src = "export const __version__ = «\"1.0.0\"»;\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = \"x/y\";\nexport const CONFIG = «{ timeout: «30», args: [«'a'», ...EXTRA] }»;\nconst EXTRA = [\"b\"];\n";
    let (text, r) = marked(src);
    let t = parse_javascript(&text);
    assert_eq!(t.value(Field::Version).unwrap().range, r[0]);
    let config = t.value(Field::Config).unwrap();
    let timeout = config.get("timeout").unwrap();
    let args = config.get("args").unwrap().as_list().unwrap();
    assert_eq!(
        (timeout.range, args[0].range, config.range),
        (r[1], r[2], r[3])
    );
    // The string's characters (for hover and rename inside it) are verbatim.
    let s = t.value(Field::Version).unwrap().as_string().unwrap();
    assert!(s.verbatim);
    assert_eq!(&text[s.content.start..s.content.end], "1.0.0");
    // EXTRA is declared after its use: not read (node would throw), reported where used.
    let d = &t.diagnostics;
    assert_eq!(d.len(), 1, "{}", diags(&text));
    assert!(
        d[0].message
            .contains("a spread (`...`) of a name (`EXTRA`)"),
        "{}",
        d[0].message
    );
}

#[test]
fn values_kiwi_cannot_evaluate_are_t301_at_their_own_range() {
    let d = assert_at(
        r#"export const __version__ = "1.0.0";
export const __tool_type__ = "javascript";
export const __executor_id__ = "rye/core/runtimes/node/node";
export const __tool_description__ = «`built ${new Date().toISOString()}`»;
let MODES = ["a"];
export const CONFIG_SCHEMA = {
  type: "object",
  properties: {
    mode: { type: "string", enum: [«...MODES»] },
    path: { type: "string", default: «process.cwd()» },
    «[KEY]: { type: "string" }»,
    «...base()»,
    n: { type: "integer", default: «2 * 3» },
    «when»,
  },
};
export const CONFIG = «loadConfig("x.json")»;
"#,
        Code::T301,
    );
    let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    let want = [
        "`__tool_description__` is a template literal with `${…}`",
        "`CONFIG_SCHEMA.properties.mode.enum[0]` is a spread (`...`) of a name (`MODES`) that is not declared once, before this use, by a module-level `const MODES = literal`",
        "`CONFIG_SCHEMA.properties.path.default` is a function call (`process.cwd()`)",
        "`CONFIG_SCHEMA.properties` holds a computed key (`[KEY]: { type: \"string\" }`)",
        "`CONFIG_SCHEMA.properties` holds a spread (`...`) of a function call (`base()`)",
        "`CONFIG_SCHEMA.properties.n.default` is an expression (`2 * 3`)",
        "`CONFIG_SCHEMA.properties.when` is a name (`when`) that is not a module-level constant",
        "`CONFIG` is a function call (`loadConfig(\"x.json\")`)",
    ];
    for (m, w) in messages.iter().zip(want) {
        assert!(m.starts_with(w), "{m}\nwanted: {w}");
    }
    assert_eq!(messages.len(), want.len());
}

#[test]
fn missing_and_wrong_metadata_use_javascript_words() {
    // A tool (it names an executor) without a version or a type: T302/T303 on the first
    // line after the signature, with JavaScript examples.
    let src = "// rye:signed:2026-01-01T00:00:00Z:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0:c2ln:4b98\n«export const __executor_id__ = \"rye/core/runtimes/node/node\";»\nexport const CONFIG = [\"timeout\"];\n";
    let (text, r) = marked(src);
    let out = diags(&text);
    assert!(
        out.contains("`__version__` is missing: add `export const __version__ = \"1.0.0\";`"),
        "{out}"
    );
    assert!(
        out.contains(
            "`__tool_type__` is missing: add `export const __tool_type__ = \"javascript\";`"
        ),
        "{out}"
    );
    assert!(
        out.contains("`CONFIG` must be an object (keys and values), not an array"),
        "{out}"
    );
    let t = parse_javascript(&text);
    assert!(t
        .diagnostics
        .iter()
        .filter(|d| d.code != Code::T301)
        .all(|d| d.range == r[0]));
    // A misspelt type: T303 with the suggestion, as for Python.
    let out = diags("export const __version__ = \"1.0\";\nexport const __tool_type__ = \"javascirpt\";\nexport const __executor_id__ = \"n\";\n");
    assert!(out.contains("did you mean `javascript`"), "{out}");
    assert!(out.contains("T302"), "{out}");
}

#[test]
fn a_module_without_metadata_is_a_library_and_a_file_without_executor_too() {
    let t = parse_javascript("export function countWords(s) { return s.split(/\\s+/).length; }\n");
    assert!(!t.declares_anything());
    assert!(t.diagnostics.is_empty());
    let t = parse_javascript("export const __version__ = \"1.0.0\";\nexport const helper = 1;\n");
    assert_eq!(t.kind(), ToolKind::Library);
    assert_eq!(diags("export const __version__ = \"1.0.0\";\n"), "");
    // `null` executor: not a tool either.
    let t = parse_javascript(
        "export const __tool_type__ = \"javascript\";\nexport const __executor_id__ = null;\n",
    );
    assert_eq!(t.kind(), ToolKind::Library);
}

#[test]
fn syntax_errors_are_reported_when_the_file_declares_metadata() {
    assert_at(
        "export const __version__ = \"1.0.0\";\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = \"n\";\nfunction f() «{»\n  return 1;\n",
        Code::T301,
    );
    assert_at(
        "export const __version__ = \"1.0.0\";\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = \"n\";\nconst s = «'abc»\n",
        Code::T301,
    );
    assert_at(
        "export const __version__ = \"1.0.0\";\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = \"n\";\n«/*» never closed\n",
        Code::T301,
    );
    // Division, regular expressions, templates and comments that look like brackets: none.
    let ok = "export const __version__ = \"1.0.0\";\nexport const __tool_type__ = \"javascript\";\nexport const __executor_id__ = \"n\";\nconst a = 4 / 2 / 1;\nconst r = /[/{]\\//g;\nconst t = `}${ `{${a}` }]`;\n// {\n/* ( */\nconst q = (a) / (2);\nif (a) /x/.test('x');\nconst o = { a: `}` }?.a;\n";
    assert_eq!(diags(ok), "");
}

#[test]
fn hostile_inputs_never_panic() {
    let head = "export const __version__ = \"1.0.0\";\nexport const CONFIG = ";
    for tail in [
        "",
        "{",
        "[",
        "{ a: ",
        "{ ...",
        "[...",
        "`",
        "`${",
        "`${`",
        "'",
        "\"\\u{110000}\"",
        "\"\\u{zz\"",
        "- ",
        "-",
        "0x",
        "1e",
        "1_",
        "{ [",
        "{ a }",
        "(",
        "(1",
        ")",
        "]",
        "}",
        "/",
        "/[",
        "{ a: b c }",
        "[,,]",
        "{,}",
        "\u{feff}",
        "#!",
        "\\u0041",
        "{ \"k\": 1, \"k\": 2 }",
        "1n",
        "..",
        "a ? b : c",
        "x => 1",
        "async () => {}",
        "new Map()",
        "typeof x",
        "-\"a\"",
    ] {
        // Every range on a character boundary, inside the text (the fuzz harness's checks).
        let text = format!("{head}{tail}");
        crate::fuzzing::javascript_tool(text.as_bytes());
        crate::fuzzing::javascript_tool(tail.as_bytes());
    }
    let deep = format!("{head}{}{}", "[".repeat(5000), "]".repeat(5000));
    crate::fuzzing::javascript_tool(deep.as_bytes());
    let deep = format!("{head}{}", "{a:".repeat(3000));
    crate::fuzzing::javascript_tool(deep.as_bytes());
    // Multi-byte characters next to every token kind.
    for s in [
        "é",
        "\u{e9}",
        "`é${é}é`",
        "'é",
        "/é/",
        "x = 1 / /é/é",
        r"'\u{e9}'",
        "{ é: 'é' }",
        "[é, 'é']",
        "€1",
    ] {
        crate::fuzzing::javascript_tool(
            format!("{head}{s}\nexport const __tool_type__ = {s};").as_bytes(),
        );
    }
    // A bracket that closes nothing inside an array (seen hanging, growing without bound).
    crate::fuzzing::javascript_tool(format!("{head}[1, ) ]\n").as_bytes());
    // Names that spread names four times over, 8 levels deep (65,536 strings): bounded by
    // the number of names read, and quick.
    let mut src = String::from("const N0 = [\"x\"];\n");
    for k in 1..=8 {
        let p = k - 1;
        src.push_str(&format!(
            "const N{k} = [...N{p}, ...N{p}, ...N{p}, ...N{p}];\n"
        ));
    }
    src.push_str("export const __executor_id__ = \"n\";\nexport const CONFIG = { a: N8 };\n");
    let started = std::time::Instant::now();
    let t = parse_javascript(&src);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let config = diags(&src);
    assert!(config.contains("`CONFIG.a` is a name (`N8`)"), "{config}");
    // Names more than 16 deep.
    let mut src = String::from("const N0 = \"x\";\n");
    for k in 1..=20 {
        src.push_str(&format!("const N{k} = N{};\n", k - 1));
    }
    src.push_str("export const __executor_id__ = \"n\";\nexport const CONFIG = { a: N20 };\n");
    let t2 = parse_javascript(&src);
    assert!(
        t2.diagnostics.iter().any(|d| d.code == Code::T301),
        "{}",
        diags(&src)
    );
    drop(t);
    // A name bound to itself, through another name.
    let t = parse_javascript("const A = [...B];\nconst B = [...A];\nexport const CONFIG = { a: A };\nexport const __executor_id__ = \"n\";\n");
    assert!(t.diagnostics.iter().any(|d| d.code == Code::T301));
}

/// Variants of real tools (a piece cut, a token inserted, at spread places) through the fuzz
/// harness: no panic, every range on a character boundary inside the text.
#[test]
fn mutated_tools_never_panic() {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        "`",
        "${",
        "'",
        "\"",
        "/",
        "/*",
        "*/",
        "//",
        "\\",
        "\n",
        "é",
        "€",
        "...",
        "as const",
        "=",
        ",",
        ":",
        "-",
        "0x",
        "1e",
        "export const CONFIG = ",
    ];
    let case = include_str!("../../../../fixtures/rye-node/.ai/tools/text/case.ts");
    let (rye, _) = marked(RYE_TS);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for src in [case, rye.as_str()] {
        let boundaries: Vec<usize> = src.char_indices().map(|(i, _)| i).collect();
        for _ in 0..1500 {
            let a = boundaries[next() as usize % boundaries.len()];
            let mut text = src.to_string();
            if next() % 2 == 0 {
                let b = boundaries[next() as usize % boundaries.len()];
                let (a, b) = (a.min(b), a.max(b).min(a + 64));
                let b = (b..=src.len()).find(|i| src.is_char_boundary(*i)).unwrap();
                text.replace_range(a..b, "");
            } else {
                text.insert_str(a, TOKENS[next() as usize % TOKENS.len()]);
            }
            crate::fuzzing::javascript_tool(text.as_bytes());
        }
    }
}
