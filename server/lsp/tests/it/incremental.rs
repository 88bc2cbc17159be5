//! Incremental equals from-scratch, through the language server: thousands of random edits
//! (inserts and deletes of multi-byte text, CRLF, lone CR, emoji) sent as incremental
//! `didChange` events. After each edit the server's text and syntax tree (`kiwi/syntaxTree`)
//! equal those of a fresh parse of the expected text; at checkpoints its diagnostics equal
//! those of a second server that is sent the whole text each time.

use crate::common;

use common::{uri, Client};
use kiwi_kernel::document::Document;
use kiwi_kernel::ids::{ItemType, Space};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*), so that a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "é",
    "😀",
    "日本",
    "\r\n",
    "\n",
    "\r",
    " ",
    "\"",
    "'''",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ": ",
    "- ",
    " = ",
    "#",
    "<",
    ">",
    "&",
    "CONFIG",
    "ENV_CONFIG = {\"interpreter\": {\"type\": \"venv_python\"}}\n",
    "__executor_id__ = \"rt/py_rt\"\n",
    "executor_id: rt/py_rt\n",
    "<step name=\"x\"><execute item_type=\"tool\" item_id=\"text/echo\"/></step>",
    "{input:who}",
    "word",
];

/// A YAML tool (the fixture has none): non-ASCII text, a schema and a nested config.
const YAML_TOOL: &str = "# An HTTP tool — über 😀\r\nversion: \"1.0.0\"\ntool_type: http\nexecutor_id: runtimes/http_runtime\ncategory: text\ndescription: Look a word up (日本)\nconfig_schema:\n  type: object\n  properties:\n    word: {type: string, description: \"the word\"}\n  required: [word]\nconfig:\n  method: GET\n  url: \"https://example.com/{word}\"\n  headers:\n    - accept: text/plain\n";

/// The line starts of a text as LSP counts them (`\n`, `\r\n`, lone `\r`), written apart
/// from the kernel's line index on purpose.
fn position(text: &str, offset: usize, utf8: bool) -> Value {
    let b = text.as_bytes();
    let mut line = 0;
    let mut start = 0;
    let mut i = 0;
    while i < offset {
        match b[i] {
            b'\n' => {
                line += 1;
                start = i + 1;
            }
            b'\r' if b.get(i + 1) != Some(&b'\n') => {
                line += 1;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let col = if utf8 {
        offset - start
    } else {
        text[start..offset].encode_utf16().count()
    };
    json!({"line": line, "character": col})
}

/// A random offset a client can name: on a character boundary, never inside a CRLF pair.
fn offset(rng: &mut Rng, text: &str) -> usize {
    let mut at = rng.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    if at > 0 && text.as_bytes()[at - 1] == b'\r' && text.as_bytes().get(at) == Some(&b'\n') {
        at -= 1;
    }
    at
}

fn fresh_tree(item_type: ItemType, path: &Path, text: &str) -> Value {
    let mut d = Document::new(text);
    d.parse(item_type, "x/y".into(), Space::Project, path.to_path_buf());
    json!(d.syntax_tree())
}

async fn diagnostics_of_version(c: &mut Client, path: &Path, version: i64) -> Value {
    let u = uri(path);
    let m = c
        .wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == json!(u)
                && m["params"]["version"] == json!(version)
        })
        .await;
    c.redact(&m["params"]["diagnostics"])
}

async fn edit_session(
    seed: u64,
    rel: &str,
    item_type: ItemType,
    lang: &str,
    edits: usize,
    utf8: bool,
) {
    let (_d1, root_a) = common::project();
    let (_d2, root_b) = common::project();
    let path_a: PathBuf = root_a.join(rel);
    let path_b: PathBuf = root_b.join(rel);
    if rel.ends_with(".yaml") {
        for p in [&path_a, &path_b] {
            std::fs::write(p, YAML_TOOL).expect("write the YAML tool");
        }
    }
    let mut text = std::fs::read_to_string(&path_a).expect("fixture");
    let mut a = Client::start(&root_a, utf8).await;
    let mut b = Client::start(&root_b, utf8).await;
    a.indexed().await;
    b.indexed().await;
    for (c, p) in [(&mut a, &path_a), (&mut b, &path_b)] {
        c.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(p), "languageId": lang, "version": 1, "text": text}}),
        )
        .await;
    }
    let mut rng = Rng(seed);
    for n in 0..edits {
        let version = n as i64 + 2;
        // One to three changes per notification, each relative to the text after the last.
        let mut changes = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let start = offset(&mut rng, &text);
            let mut end = start;
            for _ in 0..rng.below(6) {
                if let Some(c) = text[end..].chars().next() {
                    end += c.len_utf8();
                }
            }
            if end > 0
                && end < text.len()
                && text.as_bytes()[end - 1] == b'\r'
                && text.as_bytes()[end] == b'\n'
            {
                end += 1;
            }
            let insert: String = (0..rng.below(4))
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect();
            changes.push(json!({
                "range": {"start": position(&text, start, utf8), "end": position(&text, end, utf8)},
                "text": insert,
            }));
            text.replace_range(start..end, &insert);
        }
        a.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&path_a), "version": version}, "contentChanges": changes}),
        )
        .await;
        b.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&path_b), "version": version}, "contentChanges": [{"text": text}]}),
        )
        .await;
        let got = a
            .call(
                "kiwi/syntaxTree",
                json!({"textDocument": {"uri": uri(&path_a)}}),
            )
            .await;
        assert_eq!(got["version"], json!(version), "seed {seed}");
        assert_eq!(
            got["text"].as_str(),
            Some(text.as_str()),
            "seed {seed}, edit {n}"
        );
        assert_eq!(
            got["tree"],
            fresh_tree(item_type, &path_a, &text),
            "seed {seed}, edit {n}: the incremental tree differs from a fresh parse of:\n{text}"
        );
        if n % 25 == 24 || n + 1 == edits {
            let da = diagnostics_of_version(&mut a, &path_a, version).await;
            let db = diagnostics_of_version(&mut b, &path_b, version).await;
            assert_eq!(da, db, "seed {seed}, edit {n}, text:\n{text}");
        }
    }
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_tool_edits_utf16() {
    edit_session(
        0x9e37_79b9_7f4a_7c15,
        ".ai/tools/text/echo.py",
        ItemType::Tool,
        "python",
        600,
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_runtime_edits_utf8() {
    edit_session(
        0xd1b5_4a32_d192_ed03,
        ".ai/tools/rt/py_rt.py",
        ItemType::Tool,
        "python",
        600,
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_tool_edits_utf16() {
    edit_session(
        0x94d0_49bb_1331_11eb,
        ".ai/tools/text/upper.yaml",
        ItemType::Tool,
        "yaml",
        600,
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directive_edits_utf8() {
    edit_session(
        0xbf58_476d_1ce4_e5b9,
        ".ai/directives/greet.md",
        ItemType::Directive,
        "markdown",
        400,
        true,
    )
    .await;
}
