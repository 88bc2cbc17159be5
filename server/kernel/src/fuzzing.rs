//! Harnesses shared by the fuzz targets (`fuzz/`) and the regression tests that replay the
//! inputs the fuzzers found (`tests/it/fuzz_regressions.rs`). Each one parses arbitrary bytes
//! and panics when a cheap invariant fails: every range lies within the text, starts before
//! it ends, and falls on character boundaries; every position maps back to its offset.
//! Not part of the kernel's API: for tests only.
#![doc(hidden)]

use crate::diag::Diagnostic;
use crate::directive::{self, Element};
use crate::text::{Encoding, LineIndex, TextRange};
use crate::value::{Value, ValueKind};

/// The inputs the harnesses read, by fuzz target name.
pub const TARGETS: &[&str] = &[
    "directive",
    "python_tool",
    "yaml_tool",
    "knowledge",
    "javascript_tool",
];

/// Run the harness of `target` on `data` (panics on a broken invariant).
pub fn run(target: &str, data: &[u8]) {
    match target {
        "directive" => directive(data),
        "python_tool" => python_tool(data),
        "yaml_tool" => yaml_tool(data),
        "knowledge" => knowledge(data),
        "javascript_tool" => javascript_tool(data),
        other => panic!("no fuzz harness named {other}"),
    }
}

/// Bytes as text the way a face sees a file: invalid UTF-8 replaced.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

struct Checker<'a> {
    text: &'a str,
    lines: LineIndex,
}

impl<'a> Checker<'a> {
    fn new(text: &'a str) -> Self {
        Checker {
            text,
            lines: LineIndex::new(text),
        }
    }

    fn range(&self, what: &str, r: TextRange) {
        let len = self.text.len();
        assert!(
            r.start <= r.end && r.end <= len,
            "{what}: range {}..{} outside the text (length {len})",
            r.start,
            r.end
        );
        assert!(
            self.text.is_char_boundary(r.start) && self.text.is_char_boundary(r.end),
            "{what}: range {}..{} not on character boundaries",
            r.start,
            r.end
        );
        // A range's ends are what the faces turn into positions: they must map back.
        for off in [r.start, r.end] {
            for enc in [Encoding::Utf16, Encoding::Char] {
                let p = self.lines.position(self.text, off, enc);
                let back = self.lines.offset(self.text, p, enc);
                assert!(back <= off, "{what}: offset {off} -> {p:?} -> {back}");
            }
        }
    }

    fn diagnostics(&self, what: &str, diags: &[Diagnostic]) {
        for d in diags {
            self.range(&format!("{what} {:?}", d.code), d.range);
            for rel in d.related.iter().filter(|r| r.path.is_none()) {
                self.range(&format!("{what} {:?} related", d.code), rel.range);
            }
            for fix in &d.fixes {
                for e in &fix.edits {
                    self.range(&format!("{what} {:?} fix `{}`", d.code, fix.title), e.range);
                }
            }
        }
    }

    fn value(&self, what: &str, v: &Value, depth: usize) {
        self.range(what, v.range);
        if depth > 200 {
            return;
        }
        match &v.kind {
            ValueKind::Str(s) => {
                self.range(&format!("{what} string"), s.content);
                if s.verbatim {
                    assert_eq!(
                        &self.text[s.content.start..s.content.end],
                        s.value,
                        "{what}: a verbatim string differs from its source"
                    );
                }
            }
            ValueKind::List(items) => {
                for x in items {
                    self.value(what, x, depth + 1);
                }
            }
            ValueKind::Map(entries) => {
                for e in entries {
                    self.range(&format!("{what} key {}", e.key), e.key_range);
                    self.value(what, &e.value, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn element(&self, e: &Element, depth: usize) {
        let what = format!("element <{}>", e.name);
        for r in [e.range, e.name_range, e.start_tag] {
            self.range(&what, r);
        }
        for r in e
            .content
            .iter()
            .chain(e.end_name_range.iter())
            .chain(e.text_range.iter())
            .chain(e.text_pieces.iter())
        {
            self.range(&what, *r);
        }
        for a in &e.attrs {
            for r in [a.range, a.name_range, a.value_range] {
                self.range(&format!("{what} attribute {}", a.name), r);
            }
        }
        // The tree is walked with an explicit bound; the parser caps nesting itself.
        if depth < directive::MAX_DEPTH + 10 {
            for c in &e.children {
                self.element(c, depth + 1);
            }
        }
    }
}

/// The directive parser (fence scanner, tolerant XML reader, model and checks).
pub fn directive(data: &[u8]) {
    let text = text(data);
    let d = directive::parse(&text);
    let c = Checker::new(&text);
    c.diagnostics("directive", &d.diagnostics);
    if let Some(h) = &d.header {
        c.range("header", h.range);
        if let Some(hash) = &h.hash {
            c.range("header hash", hash.range);
        }
    }
    if let Some(f) = d.fence {
        c.range("fence", f);
    }
    if let Some(root) = &d.root {
        c.element(root, 0);
    }
    for s in [&d.name, &d.version, &d.description, &d.category]
        .into_iter()
        .flatten()
    {
        c.range("metadata", s.range);
    }
    for i in &d.inputs {
        c.range("input", i.range);
        c.range("input name", i.name.range);
        for s in i.ty.iter().chain(i.default.iter()) {
            c.range("input attribute", s.range);
        }
        if let Some(r) = i.enum_range {
            c.range("input enum", r);
        }
    }
    for s in &d.steps {
        c.range("step", s.range);
        for &k in &s.calls {
            assert!(
                k < d.calls.len(),
                "a step names call {k} of {}",
                d.calls.len()
            );
        }
    }
    for call in &d.calls {
        c.range("call", call.range);
        for s in [&call.item_type, &call.item_id, &call.query, &call.action]
            .into_iter()
            .flatten()
        {
            c.range("call attribute", s.range);
        }
        for (k, v) in &call.params {
            c.range("call param", k.range);
            c.range("call param", v.range);
        }
        if let Some(step) = call.step {
            assert!(step < d.steps.len(), "a call names step {step}");
        }
    }
    for cap in &d.capabilities {
        c.range("capability", cap.range);
    }
    if let Some(r) = d.permissions_range {
        c.range("permissions", r);
    }
    for r in &d.references {
        c.range(&format!("reference {}", r.id), r.range);
    }
    for p in &d.placeholders {
        c.range("placeholder", p.range);
    }
    let _ = directive::content_hash(&text, &d);
}

fn tool(what: &str, text: &str, t: &crate::tool::ToolFile) {
    let c = Checker::new(text);
    c.diagnostics(what, &t.diagnostics);
    for f in &t.fields {
        c.range(&format!("{what} {:?} key", f.field), f.key_range);
        c.value(&format!("{what} {:?}", f.field), &f.value, 0);
    }
}

/// The Python tool extractor (module-level metadata and checks), and its two readers
/// compared: the fast one for literals of the common shape, which `parse_python` tries
/// first, must agree with tree-sitter-python, which an editor buffer always uses.
pub fn python_tool(data: &[u8]) {
    let text = text(data);
    let t = crate::tool::parse_python(&text);
    tool("python tool", &text, &t);
    let (slow, _) = crate::tool::parse_python_incremental(&text, None);
    assert_eq!(
        format!("{:?}{:?}", t.fields, t.diagnostics),
        format!("{:?}{:?}", slow.fields, slow.diagnostics),
        "the fast reader and tree-sitter disagree"
    );
}

/// The YAML tool reader (top-level keys and checks), and the YAML reader itself: its quick
/// reader against tree-sitter's.
pub fn yaml_tool(data: &[u8]) {
    let text = text(data);
    let t = crate::tool::parse_yaml(&text);
    tool("yaml tool", &text, &t);
    let doc = crate::yaml::parse(&text, 0);
    let c = Checker::new(&text);
    for (r, _) in &doc.errors {
        c.range("yaml error", *r);
    }
    if let Some(v) = &doc.value {
        c.value("yaml", v, 0);
    }
    // Where the quick reader answers, tree-sitter's reader answers the same.
    if let (Some(quick), slow) = crate::yaml::parse_both(&text, 0) {
        assert_eq!(
            format!("{quick:?}"),
            format!("{slow:?}"),
            "the quick YAML reader and tree-sitter disagree"
        );
    }
}

/// The JavaScript/TypeScript tool reader (module-level `export const` metadata and checks).
pub fn javascript_tool(data: &[u8]) {
    let text = text(data);
    let t = crate::tool::parse_javascript(&text);
    tool("javascript tool", &text, &t);
}

/// The knowledge reader (header comment, frontmatter, body, checks).
pub fn knowledge(data: &[u8]) {
    let text = text(data);
    let k = crate::knowledge::parse(&text);
    let c = Checker::new(&text);
    c.diagnostics("knowledge", &k.diagnostics);
    for r in k.header.iter().chain(k.frontmatter_range.iter()) {
        c.range("knowledge block", *r);
    }
    c.range("knowledge body", k.body);
    if let Some(v) = &k.frontmatter {
        c.value("frontmatter", v, 0);
    }
    for (_, _, r) in k.references() {
        c.range("knowledge reference", r);
    }
}
