//! YAML to [`Value`] with byte ranges, through tree-sitter-yaml. Used by YAML tools,
//! knowledge frontmatter and the `config.yaml` files.
//! CONTRACT (owned by the tool/knowledge helper; signatures are fixed).
//!
//! What is read, and how:
//! - the first document only; comments are skipped;
//! - block and flow mappings and sequences; a `key: value` pair inside a flow sequence is a
//!   one-entry mapping; a key without a value is `Null` (with an empty range after the `:`);
//! - plain, single-quoted and double-quoted scalars with escapes and line folding; block
//!   scalars `|` and `>` with chomping (`-`, `+`) and indentation indicators;
//!   `Str::verbatim` is false whenever the value differs from its source text;
//! - plain scalars are typed with the YAML 1.2 core schema (null, booleans, integers incl.
//!   `0x`/`0o`, floats incl. `.inf`/`.nan`); a quoted or block scalar is always a string;
//!   timestamps stay strings;
//! - tags are ignored, except `!!str`, which keeps a plain scalar a string;
//! - an alias resolves to a copy of its anchored value whose outer range is the alias (the
//!   ranges inside the copy point at the anchored text, where the characters really are). An
//!   alias to an anchor that is not defined before it (or to itself) is
//!   `NonLiteral("an alias to an undefined anchor ...")`; the copies of one document are capped
//!   at 10,000 values in all, beyond that an alias is `NonLiteral` too (no billion laughs);
//! - the merge key `<<` (a mapping or a list of mappings) merges entries: the explicit keys
//!   come last, so [`Value::entry`] finds them first;
//! - nesting deeper than [`MAX_DEPTH`] becomes `NonLiteral("nesting deeper than 100 levels")`;
//! - syntax errors (tree-sitter `ERROR`/`MISSING` nodes, and text the parser could not reach)
//!   are reported with the smallest range that shows them and a message that names the usual
//!   cause (unclosed quote or bracket, tab indentation, `: ` inside a plain value, a line
//!   without `:`); the value is still built from everything that could be read. A pair whose
//!   value is unreadable gets `NonLiteral("invalid YAML")` at the error's range.

use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};
use std::cell::RefCell;
use std::collections::HashMap;
use std::thread::LocalKey;
use tree_sitter::{Language, Node, Parser, Tree};

/// The first document of a YAML text.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlDoc {
    /// The root value; `None` when the text is empty or holds no document.
    pub value: Option<Value>,
    /// Syntax errors: where, and a message that says what is wrong.
    pub errors: Vec<(TextRange, String)>,
}

/// How deep values may nest before the rest is `NonLiteral` (metadata never nests this deep;
/// the cap keeps recursion far from the stack's end).
pub const MAX_DEPTH: usize = 100;
/// How many values alias copies may add to one document in all.
const MAX_ALIAS_VALUES: usize = 10_000;
/// At most this many syntax errors are reported for one text.
const MAX_ERRORS: usize = 20;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parse `text` with the thread's parser for a language (created on first use). `ranges`
/// limits the parse to those parts of the text (none: all of it, after a byte order mark);
/// offsets are always those of `text`. `old` is the previous tree of the same text, edited to
/// follow the changes since (incremental parsing).
pub(crate) fn parse_tree(
    key: &'static LocalKey<RefCell<Option<Parser>>>,
    language: fn() -> Language,
    text: &str,
    ranges: &[tree_sitter::Range],
    old: Option<&Tree>,
) -> Option<Tree> {
    let bom;
    let ranges = if ranges.is_empty() && text.starts_with('\u{feff}') {
        bom = [tree_sitter::Range {
            start_byte: 3,
            end_byte: text.len(),
            start_point: tree_sitter::Point { row: 0, column: 3 },
            // The end point only needs to lie past the text.
            end_point: tree_sitter::Point {
                row: usize::MAX,
                column: 0,
            },
        }];
        &bom[..]
    } else {
        ranges
    };
    // tree-sitter recovers from a syntax error along the trees it re-uses, so an incremental
    // parse of a text with errors may differ from a fresh one, and the editor would then
    // report what `kiwi check` does not. Such texts are parsed afresh: at once when the
    // previous tree had errors, or again when the incremental parse finds some.
    let old = old.filter(|t| !t.root_node().has_error());
    let run = |parser: &mut Parser| -> Option<Tree> {
        parser.set_included_ranges(ranges).ok()?;
        let tree = parser.parse(text, old)?;
        if old.is_some() && tree.root_node().has_error() {
            return parser.parse(text, None);
        }
        Some(tree)
    };
    let shared = key.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&language()).ok()?;
            *slot = Some(p);
        }
        Some(run(slot.as_mut()?))
    });
    match shared {
        Some(tree) => tree,
        // Re-entered on this thread (never in practice): use a parser of our own.
        None => {
            let mut p = Parser::new();
            p.set_language(&language()).ok()?;
            run(&mut p)
        }
    }
}

fn yaml_language() -> Language {
    tree_sitter_yaml::LANGUAGE.into()
}

/// How many levels of indentation a YAML text may nest before the lines beyond are blanked
/// out. The grammar's scanner keeps its indentation stack in a fixed buffer of 1 KiB and
/// aborts the process past about 250 entries (one level counted here may take two).
pub(crate) const MAX_INDENT_LEVELS: usize = 100;

/// When `text` nests its indentation deeper than [`MAX_INDENT_LEVELS`] (counted generously:
/// every deeper line opens a level, and so does each `- `/`? ` at the start of a line), the
/// text with every line from the first too-deep one that is indented at least as deep
/// replaced by spaces (offsets unchanged), and the range of that first line.
fn limit_indentation(text: &str) -> Option<(String, TextRange)> {
    let b = text.as_bytes();
    let mut stack: Vec<usize> = Vec::new();
    let mut first: Option<(usize, usize)> = None; // (line start, indentation)
    let mut out: Option<Vec<u8>> = None;
    let mut start = 0;
    while start < b.len() {
        let mut end = start;
        while end < b.len() && b[end] != b'\n' && b[end] != b'\r' {
            end += 1;
        }
        let mut col = 0;
        let mut i = start;
        while i < end && (b[i] == b' ' || b[i] == b'\t') {
            col = if b[i] == b'\t' {
                (col / 8 + 1) * 8
            } else {
                col + 1
            };
            i += 1;
        }
        if i < end {
            if let Some((_, limit_col)) = first {
                if col >= limit_col {
                    let o = out.get_or_insert_with(|| b.to_vec());
                    o[start..end].fill(b' ');
                }
            } else {
                while stack.last().is_some_and(|top| *top > col) {
                    stack.pop();
                }
                let mut levels = vec![col];
                {
                    let mut j = i;
                    let mut c = col;
                    while j + 1 < end
                        && matches!(b[j], b'-' | b'?')
                        && matches!(b[j + 1], b' ' | b'\t')
                    {
                        j += 2;
                        c += 2;
                        while j < end && b[j] == b' ' {
                            j += 1;
                            c += 1;
                        }
                        levels.push(c);
                    }
                }
                for l in levels {
                    if stack.last().is_none_or(|top| *top < l) {
                        stack.push(l);
                    }
                }
                if stack.len() > MAX_INDENT_LEVELS {
                    first = Some((start, col));
                    let o = out.get_or_insert_with(|| b.to_vec());
                    o[start..end].fill(b' ');
                }
            }
        }
        start = end;
        if start < b.len() && b[start] == b'\r' {
            start += 1;
        }
        if start < b.len() && b[start] == b'\n' {
            start += 1;
        }
    }
    let (line_start, _) = first?;
    let line_end = text[line_start..]
        .find(['\n', '\r'])
        .map_or(text.len(), |e| line_start + e);
    // Only spaces replaced whole lines of valid UTF-8 text: still valid UTF-8.
    let blanked = String::from_utf8(out?).ok()?;
    Some((blanked, TextRange::new(line_start, line_end)))
}

/// Parse `text`; every range in the result is shifted by `base` (the offset of `text`
/// inside the file it comes from, e.g. a frontmatter block).
pub fn parse(text: &str, base: usize) -> YamlDoc {
    parse_incremental(text, base, None).0
}

/// [`parse`], re-using `old` (the tree of the previous version of the same text, already
/// edited to follow the changes): only what changed is parsed again. Returns the new tree
/// when it describes `text` itself (not when too-deep or too-long parts had to be blanked
/// or cut, which the next parse could not re-use).
pub fn parse_incremental(text: &str, base: usize, old: Option<&Tree>) -> (YamlDoc, Option<Tree>) {
    let mut notes = Vec::new();
    let limited = limit_indentation(text);
    let mut text = match &limited {
        Some((blanked, line)) => {
            notes.push((
                line.shift(base),
                format!(
                    "indentation nested deeper than {MAX_INDENT_LEVELS} levels: kiwi does not read YAML this deep, and skips the lines from here that are indented this far"
                ),
            ));
            blanked.as_str()
        }
        None => text,
    };
    // The scanner counts lines in 16 bits: read the first lines only.
    if let Some((cut, line_end)) = nth_line(text, MAX_YAML_LINES) {
        notes.push((
            TextRange::new(cut, line_end).shift(base),
            format!("kiwi reads the first {MAX_YAML_LINES} lines of a YAML text; the lines from here are skipped"),
        ));
        text = &text[..cut];
    }
    let as_is = notes.is_empty();
    let (mut doc, tree) = parse_limited(text, base, if as_is { old } else { None });
    if !notes.is_empty() {
        notes.append(&mut doc.errors);
        doc.errors = notes;
    }
    (doc, tree.filter(|_| as_is))
}

/// How many lines of a YAML text are read.
const MAX_YAML_LINES: usize = 32_000;

/// The start and content end of line `n` (zero-based), if the text has that many lines.
fn nth_line(text: &str, n: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut line = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\n' || b[i] == b'\r' {
            if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            line += 1;
            if line == n {
                let start = i + 1;
                if start >= b.len() {
                    return None;
                }
                let end = text[start..]
                    .find(['\n', '\r'])
                    .map_or(text.len(), |e| start + e);
                return Some((start, end));
            }
        }
        i += 1;
    }
    None
}

fn parse_limited(text: &str, base: usize, old: Option<&Tree>) -> (YamlDoc, Option<Tree>) {
    let Some(tree) = parse_tree(&PARSER, yaml_language, text, &[], old) else {
        let doc = YamlDoc {
            value: None,
            errors: vec![(
                TextRange::new(base, base + text.len()),
                "the YAML parser could not read this text".to_string(),
            )],
        };
        return (doc, None);
    };
    let root = tree.root_node();
    let mut cx = Cx {
        src: text,
        base,
        anchors: HashMap::new(),
        alias_budget: MAX_ALIAS_VALUES,
    };
    let errors = collect_errors(text, base, root);
    let value = first_document_content(root).map(|n| cx.value(n, 0));
    (YamlDoc { value, errors }, Some(tree))
}

/// The node that holds the first document's value, if any.
fn first_document_content(root: Node) -> Option<Node> {
    let mut c = root.walk();
    match root.kind() {
        "stream" => {
            let doc = root
                .named_children(&mut c)
                .find(|n| n.kind() == "document")?;
            let mut c2 = doc.walk();
            let content = doc
                .named_children(&mut c2)
                .find(|n| matches!(n.kind(), "block_node" | "flow_node" | "ERROR"));
            content
        }
        // Nothing could be parsed as a stream: read what the error node holds.
        "ERROR" => Some(root),
        _ => None,
    }
}

struct Cx<'a> {
    src: &'a str,
    base: usize,
    anchors: HashMap<String, Value>,
    alias_budget: usize,
}

fn is_trivia(n: &Node) -> bool {
    n.kind() == "comment"
}

impl Cx<'_> {
    fn range(&self, n: Node) -> TextRange {
        // Block nodes run to the next line: keep the range to the text.
        let text = self.text(n);
        let end = n.start_byte() + text.trim_end_matches([' ', '\t', '\r', '\n']).len();
        TextRange::new(n.start_byte() + self.base, end + self.base)
    }
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }
    fn at(&self, start: usize, end: usize) -> TextRange {
        TextRange::new(start + self.base, end + self.base)
    }

    fn value(&mut self, n: Node, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::new(
                ValueKind::NonLiteral(format!("nesting deeper than {MAX_DEPTH} levels")),
                self.range(n),
            );
        }
        match n.kind() {
            "block_node" | "flow_node" => self.node_with_properties(n, depth),
            "block_mapping" | "flow_mapping" => self.mapping(n, depth),
            "block_sequence" | "flow_sequence" => self.sequence(n, depth),
            "flow_pair" | "block_mapping_pair" => {
                let mut entries = Vec::new();
                self.pair(n, None, depth, &mut entries);
                Value::new(ValueKind::Map(entries), self.range(n))
            }
            "plain_scalar" => self.plain(n),
            "double_quote_scalar" => self.quoted(n, true),
            "single_quote_scalar" => self.quoted(n, false),
            "block_scalar" => self.block_scalar(n),
            "alias" => self.alias(n),
            "ERROR" => self.error_value(n, depth),
            _ => Value::new(
                ValueKind::NonLiteral("invalid YAML".to_string()),
                self.range(n),
            ),
        }
    }

    /// A `block_node`/`flow_node`: optional anchor and tag, then the content.
    fn node_with_properties(&mut self, n: Node, depth: usize) -> Value {
        let mut anchor = None;
        let mut tag = None;
        let mut content = None;
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            match ch.kind() {
                "anchor" => anchor = Some(self.text(ch).trim_start_matches('&').to_string()),
                "tag" => tag = Some(self.text(ch).to_string()),
                "comment" => {}
                _ => {
                    if content.is_none() {
                        content = Some(ch);
                    }
                }
            }
        }
        let mut value = match content {
            Some(ch) => self.value(ch, depth),
            None => Value::new(ValueKind::Null, TextRange::empty(n.end_byte() + self.base)),
        };
        if tag.as_deref() == Some("!!str") {
            if let Some(ch) = content.filter(|c| c.kind() == "plain_scalar") {
                if !matches!(value.kind, ValueKind::Str(_)) {
                    let s = self.text(ch).to_string();
                    value.kind = ValueKind::Str(Str {
                        value: s,
                        content: self.range(ch),
                        verbatim: true,
                    });
                }
            }
        }
        if let Some(name) = anchor {
            self.anchors.insert(name, value.clone());
        }
        value
    }

    fn mapping(&mut self, n: Node, depth: usize) -> Value {
        let mut entries = Vec::new();
        let mut merged: Vec<Entry> = Vec::new();
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        let mut i = 0;
        while i < children.len() {
            let ch = children[i];
            match ch.kind() {
                "block_mapping_pair" | "flow_pair" => {
                    // A pair without a value followed by an error: the error is its value.
                    let next_error = children
                        .get(i + 1)
                        .filter(|x| x.kind() == "ERROR")
                        .copied()
                        .filter(|_| ch.child_by_field_name("value").is_none());
                    let before = entries.len();
                    self.pair(ch, next_error, depth, &mut entries);
                    if next_error.is_some() {
                        i += 1;
                    }
                    // The merge key `<<`.
                    if entries.len() == before + 1 && entries[before].key == "<<" {
                        let is_plain = ch
                            .child_by_field_name("key")
                            .is_some_and(|k| self.text(k).trim() == "<<");
                        if is_plain {
                            if let Some(e) = entries.pop() {
                                merge_into(&mut merged, e.value);
                            }
                        }
                    }
                }
                // A key alone in a flow mapping: `{a, b: c}`.
                "flow_node" if n.kind() == "flow_mapping" => {
                    let key = self.value(ch, depth + 1);
                    let (k, kr) = self.key_of(&key, ch);
                    entries.push(Entry {
                        key: k,
                        key_range: kr,
                        value: Value::new(ValueKind::Null, TextRange::empty(kr.end)),
                    });
                }
                // An error among pairs: reported by `collect_errors`; read what it holds.
                "ERROR" => {
                    let mut c2 = ch.walk();
                    let pairs: Vec<Node> = ch
                        .named_children(&mut c2)
                        .filter(|x| matches!(x.kind(), "block_mapping_pair" | "flow_pair"))
                        .collect();
                    for p in pairs {
                        self.pair(p, None, depth, &mut entries);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if !merged.is_empty() {
            merged.append(&mut entries);
            entries = merged;
        }
        Value::new(ValueKind::Map(entries), self.range(n))
    }

    fn pair(&mut self, p: Node, error_value: Option<Node>, depth: usize, out: &mut Vec<Entry>) {
        let key_node = p.child_by_field_name("key");
        let (key, key_range) = match key_node {
            Some(k) => {
                let kv = self.value(k, depth + 1);
                self.key_of(&kv, k)
            }
            None => (String::new(), TextRange::empty(p.start_byte() + self.base)),
        };
        let value = match (p.child_by_field_name("value"), error_value) {
            (Some(v), _) => self.value(v, depth + 1),
            (None, Some(e)) => Value::new(
                ValueKind::NonLiteral("invalid YAML".to_string()),
                self.range(e),
            ),
            (None, None) => Value::new(ValueKind::Null, TextRange::empty(p.end_byte() + self.base)),
        };
        out.push(Entry {
            key,
            key_range,
            value,
        });
    }

    /// The string form of a key and its range.
    fn key_of(&self, key: &Value, node: Node) -> (String, TextRange) {
        let s = match &key.kind {
            ValueKind::Str(s) => s.value.clone(),
            _ => self
                .src
                .get(
                    key.range.start.saturating_sub(self.base)
                        ..key.range.end.saturating_sub(self.base),
                )
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| self.text(node))
                .trim()
                .to_string(),
        };
        (s, key.range)
    }

    fn sequence(&mut self, n: Node, depth: usize) -> Value {
        let mut items = Vec::new();
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        for ch in children {
            match ch.kind() {
                "block_sequence_item" => {
                    let mut c2 = ch.walk();
                    let inner = ch.named_children(&mut c2).find(|x| !is_trivia(x));
                    items.push(match inner {
                        Some(x) => self.value(x, depth + 1),
                        None => {
                            Value::new(ValueKind::Null, TextRange::empty(ch.end_byte() + self.base))
                        }
                    });
                }
                "flow_node" | "flow_pair" => items.push(self.value(ch, depth + 1)),
                _ => {}
            }
        }
        Value::new(ValueKind::List(items), self.range(n))
    }

    fn plain(&self, n: Node) -> Value {
        let raw = self.text(n);
        let range = self.range(n);
        let (value, verbatim) = if raw.contains(['\n', '\r']) {
            // A multi-line plain scalar is always a string.
            (fold_flow(raw, Quote::Plain), false)
        } else {
            match resolve_plain(raw) {
                ValueKind::Str(_) => (raw.to_string(), true),
                kind => return Value::new(kind, range),
            }
        };
        Value::new(
            ValueKind::Str(Str {
                value,
                content: range,
                verbatim,
            }),
            range,
        )
    }

    fn quoted(&self, n: Node, double: bool) -> Value {
        let raw = self.text(n);
        let range = self.range(n);
        let inner_start = n.start_byte() + 1;
        let q = if double { '"' } else { '\'' };
        let closed = raw.len() >= 2 && raw.ends_with(q);
        let inner_end = if closed {
            n.end_byte() - 1
        } else {
            n.end_byte()
        };
        let inner = self.src.get(inner_start..inner_end).unwrap_or("");
        let value = fold_flow(inner, if double { Quote::Double } else { Quote::Single });
        let verbatim = value == inner;
        Value::new(
            ValueKind::Str(Str {
                value,
                content: self.at(inner_start, inner_end),
                verbatim,
            }),
            range,
        )
    }

    fn block_scalar(&self, n: Node) -> Value {
        let range = self.range(n);
        let (value, content) = read_block_scalar(self.src, n);
        let content_range = self.at(content.0, content.1);
        let verbatim = self.src.get(content.0..content.1) == Some(value.as_str());
        Value::new(
            ValueKind::Str(Str {
                value,
                content: content_range,
                verbatim,
            }),
            range,
        )
    }

    fn alias(&mut self, n: Node) -> Value {
        let range = self.range(n);
        let name = self.text(n).trim_start_matches('*').to_string();
        let Some(v) = self.anchors.get(&name) else {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "an alias to an undefined anchor (`*{name}` needs a `&{name}` before it)"
                )),
                range,
            );
        };
        let size = count_values(v);
        if size > self.alias_budget {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "an alias (`*{name}`) whose copies grow too large (more than {MAX_ALIAS_VALUES} values)"
                )),
                range,
            );
        }
        self.alias_budget -= size;
        let mut copy = v.clone();
        copy.range = range;
        copy
    }

    /// Best effort for an error node that stands where a value should be: the pairs it
    /// holds, or its one value.
    fn error_value(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        if children
            .iter()
            .any(|x| matches!(x.kind(), "block_mapping_pair" | "flow_pair"))
        {
            return self.mapping(n, depth);
        }
        if let [one] = children.as_slice() {
            if matches!(
                one.kind(),
                "block_node" | "flow_node" | "block_mapping" | "block_sequence"
            ) {
                return self.value(*one, depth + 1);
            }
        }
        Value::new(
            ValueKind::NonLiteral("invalid YAML".to_string()),
            self.range(n),
        )
    }
}

fn merge_into(merged: &mut Vec<Entry>, value: Value) {
    match value.kind {
        ValueKind::Map(entries) => {
            // Earlier sources win over later ones: put them last.
            let mut tmp = entries;
            tmp.append(merged);
            *merged = tmp;
        }
        ValueKind::List(items) => {
            for item in items.into_iter().rev() {
                if let ValueKind::Map(entries) = item.kind {
                    merged.extend(entries);
                }
            }
        }
        _ => {}
    }
}

/// How many values a value holds, itself included (iterative: no recursion).
fn count_values(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match &v.kind {
            ValueKind::List(l) => stack.extend(l.iter()),
            ValueKind::Map(m) => stack.extend(m.iter().map(|e| &e.value)),
            _ => {}
        }
    }
    n
}

/// The YAML 1.2 core schema for a plain scalar.
fn resolve_plain(s: &str) -> ValueKind {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return ValueKind::Null,
        "true" | "True" | "TRUE" => return ValueKind::Bool(true),
        "false" | "False" | "FALSE" => return ValueKind::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return ValueKind::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return ValueKind::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return ValueKind::Float(f64::NAN),
        _ => {}
    }
    let b = s.as_bytes();
    let digits =
        |x: &[u8], radix: u32| !x.is_empty() && x.iter().all(|c| (*c as char).is_digit(radix));
    if let Some(hex) = s.strip_prefix("0x") {
        if digits(hex.as_bytes(), 16) {
            if let Ok(i) = i64::from_str_radix(hex, 16) {
                return ValueKind::Int(i);
            }
        }
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if digits(oct.as_bytes(), 8) {
            if let Ok(i) = i64::from_str_radix(oct, 8) {
                return ValueKind::Int(i);
            }
        }
    }
    let unsigned = match b.first() {
        Some(b'-') | Some(b'+') => &b[1..],
        _ => b,
    };
    if digits(unsigned, 10) {
        return match s.parse::<i64>() {
            Ok(i) => ValueKind::Int(i),
            Err(_) => s
                .parse::<f64>()
                .map(ValueKind::Float)
                .unwrap_or_else(|_| plain_string()),
        };
    }
    if is_core_float(unsigned) {
        if let Ok(f) = s.parse::<f64>() {
            return ValueKind::Float(f);
        }
    }
    plain_string()
}

/// A plain scalar that is a string (the caller fills in the value and range).
fn plain_string() -> ValueKind {
    ValueKind::Str(Str {
        value: String::new(),
        content: TextRange::default(),
        verbatim: true,
    })
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?` (sign already removed).
fn is_core_float(b: &[u8]) -> bool {
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e') | Some(b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-') | Some(b'+')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[derive(Clone, Copy, PartialEq)]
enum Quote {
    Plain,
    Single,
    Double,
}

/// The value of a flow scalar's text (between its quotes): escapes (double quotes), `''`
/// (single quotes) and line folding (a line break between text is a space, each empty line a
/// `\n`, white space around line breaks dropped).
fn fold_flow(raw: &str, quote: Quote) -> String {
    let mut out = String::with_capacity(raw.len());
    // Output below this length is never trimmed (it came from an escape or a fold).
    let mut floor = 0;
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\\' if quote == Quote::Double => {
                let Some(next) = raw[i + 1..].chars().next() else {
                    out.push('\\');
                    i += 1;
                    continue;
                };
                let mut consumed = 1 + next.len_utf8();
                let hex = |n: usize| -> Option<char> {
                    let h = raw.get(i + 2..i + 2 + n)?;
                    char::from_u32(u32::from_str_radix(h, 16).ok()?)
                };
                let esc = match next {
                    '0' => Some('\0'),
                    'a' => Some('\x07'),
                    'b' => Some('\x08'),
                    't' | '\t' => Some('\t'),
                    'n' => Some('\n'),
                    'v' => Some('\x0b'),
                    'f' => Some('\x0c'),
                    'r' => Some('\r'),
                    'e' => Some('\x1b'),
                    ' ' => Some(' '),
                    '"' => Some('"'),
                    '/' => Some('/'),
                    '\\' => Some('\\'),
                    'N' => Some('\u{85}'),
                    '_' => Some('\u{a0}'),
                    'L' => Some('\u{2028}'),
                    'P' => Some('\u{2029}'),
                    'x' => hex(2).inspect(|_| consumed = 4),
                    'u' => hex(4).inspect(|_| consumed = 6),
                    'U' => hex(8).inspect(|_| consumed = 10),
                    '\n' | '\r' => {
                        // An escaped line break: join without a space.
                        let mut j = i + 1;
                        if b[j] == b'\r' && b.get(j + 1) == Some(&b'\n') {
                            j += 1;
                        }
                        j += 1;
                        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                            j += 1;
                        }
                        i = j;
                        floor = out.len();
                        continue;
                    }
                    _ => None,
                };
                match esc {
                    Some(ch) => out.push(ch),
                    // Not an escape YAML knows: keep the text as it is.
                    None => {
                        out.push('\\');
                        out.push(next);
                    }
                }
                i += consumed;
                floor = out.len();
            }
            b'\'' if quote == Quote::Single && b.get(i + 1) == Some(&b'\'') => {
                out.push('\'');
                i += 2;
                floor = out.len();
            }
            b'\n' | b'\r' => {
                while out.len() > floor && (out.ends_with(' ') || out.ends_with('\t')) {
                    out.pop();
                }
                let mut empties = 0;
                let mut j = i;
                loop {
                    // Consume one line break.
                    if b[j] == b'\r' && b.get(j + 1) == Some(&b'\n') {
                        j += 1;
                    }
                    j += 1;
                    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                        j += 1;
                    }
                    if j < b.len() && (b[j] == b'\n' || b[j] == b'\r') {
                        empties += 1;
                        continue;
                    }
                    break;
                }
                if j >= b.len() && quote == Quote::Plain {
                    // Trailing line breaks are not part of a plain scalar.
                } else if empties == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', empties));
                }
                floor = out.len();
                i = j;
            }
            _ => {
                let ch_len = utf8_len(c);
                out.push_str(raw.get(i..i + ch_len).unwrap_or(""));
                i += ch_len;
            }
        }
    }
    if quote == Quote::Plain {
        while out.len() > floor && (out.ends_with(' ') || out.ends_with('\t')) {
            out.pop();
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Split `s` into lines: (start, end of content, end including the break).
fn lines(s: &str, from: usize, to: usize) -> Vec<(usize, usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = from;
    let mut i = from;
    while i < to {
        match b[i] {
            b'\n' => {
                out.push((start, i, i + 1));
                start = i + 1;
            }
            b'\r' => {
                let end = if b.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                out.push((start, i, end));
                i = end - 1;
                start = end;
            }
            _ => {}
        }
        i += 1;
    }
    if start < to {
        out.push((start, to, to));
    }
    out
}

/// The indentation (column of the first character) of the line holding `offset`.
fn line_start(src: &str, offset: usize) -> usize {
    src.as_bytes()[..offset.min(src.len())]
        .iter()
        .rposition(|c| *c == b'\n' || *c == b'\r')
        .map(|p| p + 1)
        .unwrap_or(0)
}

/// A block scalar's value and the byte range of its content lines.
fn read_block_scalar(src: &str, n: Node) -> (String, (usize, usize)) {
    let start = n.start_byte();
    let end = n.end_byte().min(src.len());
    let b = src.as_bytes();
    // Header: `|` or `>`, then indicators in any order, then maybe a comment.
    let folded = b.get(start) == Some(&b'>');
    let mut chomp = 0i8; // -1 strip, 0 clip, 1 keep
    let mut explicit: Option<usize> = None;
    let mut i = start + 1;
    while i < end {
        match b[i] {
            b'-' => chomp = -1,
            b'+' => chomp = 1,
            d @ b'1'..=b'9' => explicit = Some((d - b'0') as usize),
            _ => break,
        }
        i += 1;
    }
    // Skip the rest of the header line.
    while i < end && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    if i < end && b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
        i += 1;
    }
    if i < end {
        i += 1;
    }
    let content_start = i.min(end);
    // Empty lines right after the node belong to the scalar for chomping.
    let mut j = end;
    loop {
        let mut k = j;
        while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
            k += 1;
        }
        if k < b.len() && (b[k] == b'\n' || b[k] == b'\r') {
            if b[k] == b'\r' && b.get(k + 1) == Some(&b'\n') {
                k += 1;
            }
            j = k + 1;
            continue;
        }
        break;
    }
    let tail_end = j;
    let all = lines(src, content_start, end);
    let indent = match explicit {
        Some(m) => {
            // Relative to the indentation of the collection that holds the scalar.
            let parent_col = n
                .parent()
                .and_then(|p| {
                    let mut q = Some(p);
                    while let Some(x) = q {
                        if matches!(x.kind(), "block_mapping" | "block_sequence") {
                            return Some(x.start_byte() - line_start(src, x.start_byte()));
                        }
                        q = x.parent();
                    }
                    None
                })
                .unwrap_or(0);
            parent_col + m
        }
        None => all
            .iter()
            .find(|(s, e, _)| src[*s..*e].bytes().any(|c| c != b' '))
            .map(|(s, e, _)| src[*s..*e].bytes().take_while(|c| *c == b' ').count())
            .unwrap_or(0),
    };
    // Each line's content after the indentation; None for an empty line.
    let mut texts: Vec<Option<&str>> = Vec::with_capacity(all.len());
    for (s, e, _) in &all {
        let line = &src[*s..*e];
        let spaces = line.bytes().take_while(|c| *c == b' ').count();
        if line.trim_start_matches(' ').is_empty() && spaces <= indent {
            texts.push(None);
        } else {
            texts.push(Some(line.get(indent.min(spaces)..).unwrap_or("")));
        }
    }
    // Empty lines at the end are trailing breaks, handled by chomping.
    while texts.last() == Some(&None) {
        texts.pop();
    }
    let mut out = String::new();
    let mut prev: Option<bool> = None; // Some(more_indented) of the previous text line
    let mut empties = 0;
    for t in &texts {
        match t {
            None => empties += 1,
            Some(line) => {
                let more = line.starts_with([' ', '\t']);
                match prev {
                    None => out.extend(std::iter::repeat_n('\n', empties)),
                    Some(prev_more) => {
                        if folded && !prev_more && !more {
                            if empties == 0 {
                                out.push(' ');
                            } else {
                                out.extend(std::iter::repeat_n('\n', empties));
                            }
                        } else {
                            out.extend(std::iter::repeat_n('\n', empties + 1));
                        }
                    }
                }
                empties = 0;
                out.push_str(line);
                prev = Some(more);
            }
        }
    }
    // The line breaks after the last text line (inside the node or right after it) are what
    // chomping keeps, clips to one, or strips.
    let last_text_end = texts
        .len()
        .checked_sub(1)
        .and_then(|i| all.get(i))
        .map_or(content_start, |l| l.1);
    let tail = src
        .get(last_text_end..tail_end.max(last_text_end))
        .unwrap_or("");
    let breaks =
        tail.matches('\n').count() + tail.matches('\r').count() - tail.matches("\r\n").count();
    match chomp {
        -1 => {}
        0 => {
            if prev.is_some() && breaks > 0 {
                out.push('\n');
            }
        }
        _ => out.extend(std::iter::repeat_n('\n', breaks)),
    }
    (out, (content_start, end))
}

/// Syntax errors of a tree, with messages that name the usual cause.
fn collect_errors(src: &str, base: usize, root: Node) -> Vec<(TextRange, String)> {
    let mut out: Vec<(TextRange, String)> = Vec::new();
    let shift = |s: usize, e: usize| TextRange::new(s + base, e + base);
    // Text the parser could not reach at all.
    let unreached = src
        .get(root.end_byte()..)
        .map(|rest| rest.len() - rest.trim_start().len() + root.end_byte())
        .filter(|p| *p < src.len());
    if let Some(pos) = unreached {
        let (s, e, msg) = explain_stop(src, pos);
        out.push((shift(s, e), msg));
    }
    if !root.has_error() {
        return out;
    }
    let before = out.len();
    let mut c = root.walk();
    'walk: loop {
        let n = c.node();
        let mut descend = true;
        if n.is_missing() {
            let kind = n.kind();
            out.push((
                shift(n.start_byte(), n.end_byte()),
                format!("missing `{kind}` here"),
            ));
            descend = false;
        } else if n.is_error() && n.id() != root.id() {
            let (s, e, msg) = explain_error(src, n);
            out.push((shift(s, e), msg));
            descend = false;
        } else if !n.has_error() {
            descend = false;
        }
        if out.len() >= MAX_ERRORS {
            break;
        }
        if descend && c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                continue 'walk;
            }
            if !c.goto_parent() {
                break 'walk;
            }
        }
    }
    if root.is_error() {
        // The whole text is one error: brackets it opens and never closes are the usual cause.
        let mut open: Vec<Node> = Vec::new();
        let mut c = root.walk();
        for ch in root.children(&mut c) {
            match ch.kind() {
                "[" | "{" => open.push(ch),
                "]" | "}" => {
                    open.pop();
                }
                _ => {}
            }
        }
        for o in open {
            let (s, e) = line_rest(src, o.start_byte());
            let closer = if o.kind() == "[" { "]" } else { "}" };
            out.push((
                shift(s, e),
                format!("this `{}` is never closed; add `{closer}`", o.kind()),
            ));
        }
        if out.len() == before && unreached.is_none() {
            // Point at where the structure broke down: the first thing that is not a pair.
            let mut c = root.walk();
            let at = root
                .children(&mut c)
                .find(|x| !matches!(x.kind(), "block_mapping_pair" | "comment"))
                .map_or(root.start_byte(), |x| x.start_byte());
            let (s, e, msg) = explain_stop(src, at);
            out.push((shift(s, e), msg));
        }
    }
    out.sort_by_key(|(r, _)| (r.start, r.end));
    out.dedup_by(|a, b| a.0 == b.0);
    out.truncate(MAX_ERRORS);
    out
}

/// The part of the line at `pos` that starts with non-blank text, without the line end.
fn line_rest(src: &str, pos: usize) -> (usize, usize) {
    let b = src.as_bytes();
    let mut e = pos;
    while e < b.len() && b[e] != b'\n' && b[e] != b'\r' {
        e += 1;
    }
    let trimmed = src[pos..e].trim_end().len();
    (pos, pos + trimmed)
}

/// Tab characters in the indentation of the line holding `pos`, if any.
fn tab_indent(src: &str, pos: usize) -> Option<(usize, usize)> {
    let ls = line_start(src, pos);
    let indent_end = ls
        + src[ls..]
            .bytes()
            .take_while(|c| *c == b' ' || *c == b'\t')
            .count();
    let first_tab = src[ls..indent_end].find('\t')? + ls;
    let last_tab = src[ls..indent_end].rfind('\t')? + ls;
    Some((first_tab, last_tab + 1))
}

const TAB_MESSAGE: &str =
    "a tab is used for indentation; YAML allows only spaces there (replace the tab with spaces)";

/// Where and why parsing stopped at `pos` (text the parser never reached).
fn explain_stop(src: &str, pos: usize) -> (usize, usize, String) {
    if let Some((s, e)) = tab_indent(src, pos) {
        return (s, e, TAB_MESSAGE.to_string());
    }
    let ls = line_start(src, pos);
    let first = ls + (src[ls..].len() - src[ls..].trim_start_matches([' ', '\t']).len());
    let (s, e) = line_rest(src, first.min(pos));
    let rest = &src[pos..];
    let msg = if rest.starts_with(':') {
        "a mapping value is not allowed here: quote a value that contains `: `, or fix the indentation of this line".to_string()
    } else if rest.starts_with("- ") || rest.starts_with('-') && rest.len() == 1 {
        "a list item is not allowed here; check the indentation of this line".to_string()
    } else {
        format!(
            "invalid YAML: cannot read `{}`; check the indentation and quoting of this line",
            snippet(&src[s..e])
        )
    };
    (s, e, msg)
}

fn explain_error(src: &str, n: Node) -> (usize, usize, String) {
    let (s, e) = (n.start_byte(), n.end_byte().min(src.len()));
    let text = src.get(s..e).unwrap_or("");
    if let Some((ts, te)) = tab_indent(src, s).or_else(|| {
        text.starts_with(['\t'])
            .then(|| (s, s + text.bytes().take_while(|c| *c == b'\t').count()))
    }) {
        return (ts, te, TAB_MESSAGE.to_string());
    }
    let mut c = n.walk();
    let kinds: Vec<&str> = n.children(&mut c).map(|x| x.kind()).collect();
    let first = kinds.first().copied().unwrap_or("");
    let closer = |open: &str| match open {
        "\"" => "\"",
        "'" => "'",
        "[" => "]",
        "{" => "}",
        _ => "",
    };
    if matches!(first, "\"" | "'" | "[" | "{") && !kinds[1..].contains(&closer(first)) {
        let what = match first {
            "\"" => "double-quoted string",
            "'" => "single-quoted string",
            "[" => "`[`",
            _ => "`{`",
        };
        // Point at the first line of it.
        let (ls, le) = line_rest(src, s);
        return (
            ls,
            le.max(ls + 1).min(e.max(ls + 1)),
            format!("this {what} is never closed; add `{}`", closer(first)),
        );
    }
    let parent_is_mapping = n
        .parent()
        .is_some_and(|p| matches!(p.kind(), "block_mapping" | "block_node" | "document"));
    let named: Vec<&str> = {
        let mut c = n.walk();
        n.named_children(&mut c).map(|x| x.kind()).collect()
    };
    if parent_is_mapping && named == ["flow_node"] && !text.contains(':') {
        let (ls, le) = line_rest(src, s);
        return (
            ls,
            le,
            format!(
                "`{}` is not a `key: value` pair: add `: ` after the key, or indent it under the key it continues",
                snippet(&src[ls..le])
            ),
        );
    }
    let (ls, le) = line_rest(src, s);
    let le = le.min(e).max(ls);
    (
        ls,
        if le > ls { le } else { e },
        format!(
            "invalid YAML: cannot read `{}`; check the indentation and quoting",
            snippet(&src[ls..if le > ls { le } else { e }])
        ),
    )
}

/// A short excerpt of text for a message.
pub(crate) fn snippet(s: &str) -> String {
    let first = s.lines().next().unwrap_or("").trim();
    if first.chars().count() > 40 {
        let cut: String = first.chars().take(39).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::testing::render_value;
    use insta::assert_snapshot;

    fn tree(text: &str) -> String {
        let doc = parse(text, 0);
        let mut out = match &doc.value {
            Some(v) => render_value(text, v),
            None => "(no value)\n".to_string(),
        };
        for (r, m) in &doc.errors {
            out.push_str(&format!(
                "ERROR {}..{} {:?}: {m}\n",
                r.start,
                r.end,
                &text[r.start..r.end]
            ));
        }
        out
    }

    fn str_of(text: &str, key: &str) -> String {
        let doc = parse(text, 0);
        assert!(doc.errors.is_empty(), "{:?}", doc.errors);
        doc.value
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("no string {key} in {:?}", doc.value))
            .to_string()
    }

    #[test]
    fn core_schema() {
        let cases: &[(&str, ValueKind)] = &[
            ("~", ValueKind::Null),
            ("null", ValueKind::Null),
            ("NULL", ValueKind::Null),
            ("true", ValueKind::Bool(true)),
            ("False", ValueKind::Bool(false)),
            ("12", ValueKind::Int(12)),
            ("-12", ValueKind::Int(-12)),
            ("+7", ValueKind::Int(7)),
            ("0x1F", ValueKind::Int(31)),
            ("0o17", ValueKind::Int(15)),
            ("1.5", ValueKind::Float(1.5)),
            ("-.5", ValueKind::Float(-0.5)),
            ("1e3", ValueKind::Float(1000.0)),
            ("5.", ValueKind::Float(5.0)),
            (".inf", ValueKind::Float(f64::INFINITY)),
            ("-.Inf", ValueKind::Float(f64::NEG_INFINITY)),
        ];
        for (text, want) in cases {
            assert_eq!(&resolve_plain(text), want, "{text}");
        }
        assert!(matches!(resolve_plain(".nan"), ValueKind::Float(f) if f.is_nan()));
        for s in [
            "yes",
            "no",
            "on",
            "1.0.0",
            "2024-01-01",
            "0x",
            "1e",
            "e3",
            ".",
            "-",
            "inf",
            "nan",
            "1_000",
            "0b101",
            "12abc",
        ] {
            assert!(matches!(resolve_plain(s), ValueKind::Str(_)), "{s}");
        }
    }

    #[test]
    fn scalars_and_collections() {
        let text = "# comment\r\nplain: hello world  # trailing comment\r\nint: 42\r\nhex: 0xff\r\nfloat: -1.5e2\r\nnull1: ~\r\nnull2:\r\nbool: TRUE\r\nquoted_int: \"42\"\r\nsingle: 'it''s'\r\ndouble: \"tab\\there \\u00e9 \\x41 \\\"q\\\"\"\r\nfolded_quotes: \"one\r\n  two\r\n\r\n  three\"\r\nmulti plain: first\r\n  second\r\ndate: 2024-02-15\r\nunicode: héllo 😀 wörld\r\nflow: [a, 'b', {c: d, e}, [1, 2], k: v]\r\nblock:\r\n  - x\r\n  -\r\n  - nested: map\r\n    other: 1\r\n\"quoted key\": value\r\n? complex\r\n: answer\r\ntagged: !!str 12\r\ncustom_tag: !thing [1]\r\n";
        assert_snapshot!(tree(text));
    }

    #[test]
    fn block_scalars() {
        let text = "lit: |\n  line1\n    indented\n\n  line3\nfold: >\n  one\n  two\n\n  three\n    more\n  four\nstrip: |-\n  x\n\nkeep: |+\n  x\n\nnext: 1\nindicator: |2\n    two extra\n  base\nempty: |\nlast: >-\n  end";
        let doc = parse(text, 0);
        assert!(doc.errors.is_empty(), "{:?}", doc.errors);
        assert_eq!(str_of(text, "lit"), "line1\n  indented\n\nline3\n");
        assert_eq!(str_of(text, "fold"), "one two\nthree\n  more\nfour\n");
        assert_eq!(str_of(text, "strip"), "x");
        assert_eq!(str_of(text, "keep"), "x\n\n");
        assert_eq!(str_of(text, "indicator"), "  two extra\nbase\n");
        assert_eq!(str_of(text, "last"), "end");
        assert_snapshot!(tree(text));
    }

    #[test]
    fn block_scalar_crlf() {
        let text = "a: |\r\n  one\r\n  two\r\nb: >\r\n  x\r\n  y\r\n";
        assert_eq!(str_of(text, "a"), "one\ntwo\n");
        assert_eq!(str_of(text, "b"), "x y\n");
    }

    #[test]
    fn folding_in_flow_scalars() {
        assert_eq!(fold_flow("a\n  b", Quote::Double), "a b");
        assert_eq!(fold_flow("a  \n\n  b", Quote::Double), "a\nb");
        assert_eq!(fold_flow("a\\\n  b", Quote::Double), "ab");
        assert_eq!(fold_flow("a\\t\n b", Quote::Double), "a\t b");
        assert_eq!(fold_flow("it''s", Quote::Single), "it's");
        assert_eq!(fold_flow("\\q \\", Quote::Double), "\\q \\");
        assert_eq!(fold_flow("\\U0001F600", Quote::Double), "😀");
    }

    #[test]
    fn anchors_aliases_merge() {
        let text = "base: &b {x: 1, y: 2}\nlist: &l [1, 2]\ncopy: *l\nmerged:\n  <<: *b\n  y: 3\nmany:\n  <<: [*b, {z: 9}]\nundefined: *nope\nself: &s [*s]\n";
        let doc = parse(text, 0);
        let v = doc.value.as_ref().expect("a value");
        assert_eq!(v.get("copy").map(|c| c.range), Some(TextRange::new(44, 46)));
        let merged = v.get("merged").expect("merged");
        assert_eq!(merged.get("y").map(|y| &y.kind), Some(&ValueKind::Int(3)));
        assert_eq!(merged.get("x").map(|y| &y.kind), Some(&ValueKind::Int(1)));
        let many = v.get("many").expect("many");
        assert_eq!(many.get("z").map(|y| &y.kind), Some(&ValueKind::Int(9)));
        assert_eq!(many.get("x").map(|y| &y.kind), Some(&ValueKind::Int(1)));
        assert!(matches!(
            v.get("undefined").map(|u| &u.kind),
            Some(ValueKind::NonLiteral(_))
        ));
        assert_snapshot!(tree(text));
    }

    #[test]
    fn base_shift_and_documents() {
        let text = "---\na: 1\n---\nb: 2\n";
        let doc = parse(text, 100);
        let v = doc.value.expect("value");
        assert_eq!(v.get("b"), None);
        assert_eq!(
            v.entry("a").map(|e| e.key_range),
            Some(TextRange::new(104, 105))
        );
        assert_eq!(parse("", 0).value, None);
        assert_eq!(parse("# only a comment\n", 0).value, None);
        assert_eq!(parse("", 0).errors, vec![]);
        let cr = parse("a: 1\rb: |\r  x\r  y\rc: 3\r", 0);
        assert!(cr.errors.is_empty(), "{:?}", cr.errors);
        let cr = cr.value.expect("value");
        assert_eq!(cr.as_map().map(|m| m.len()), Some(3));
        assert_eq!(cr.get("b").and_then(|b| b.as_str()), Some("x\ny\n"));
        let bom = parse("\u{feff}a: 1\n", 0);
        assert!(bom.errors.is_empty(), "{:?}", bom.errors);
        assert_eq!(
            bom.value.and_then(|v| v.entry("a").map(|e| e.key_range)),
            Some(TextRange::new(3, 4))
        );
    }

    #[test]
    fn syntax_errors() {
        let cases = [
            "a: [1, 2\nb: c\n",
            "a: \"unclosed\nb: c\n",
            "a: 'unclosed\nb: c\n",
            "a: b: c\nd: e\n",
            "a:\n\t- x\nb: 1\n",
            "a: 1\n  b: 2\nc: 3\n",
            "title: foo\nid x\nentry: y\n",
            "a: {b: 1\n",
            "version: \"1.0.0\ntool_type: python\nconfig:\n  a: [1, 2\n",
            "- a\nb: c\n",
            "key: value\n- item\n",
            "a: ]\n",
        ];
        let mut out = String::new();
        for text in cases {
            out.push_str(&format!("=== {text:?}\n{}", tree(text)));
        }
        assert_snapshot!(out);
    }

    #[test]
    fn deep_nesting() {
        // Up to the cap, nesting is read whole.
        let text = format!("a: {}{}\n", "[".repeat(95), "]".repeat(95));
        let v = parse(&text, 0).value.expect("value");
        assert_eq!(v.non_literals().len(), 0);
        let text = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        let doc = parse(&text, 0);
        let v = doc.value.expect("value");
        assert_eq!(v.non_literals().len(), 1);
        let text = format!("a: {}1{}\n", "{b: ".repeat(5_000), "}".repeat(5_000));
        let doc = parse(&text, 0);
        assert_eq!(doc.value.expect("value").non_literals().len(), 1);
        // Block nesting: the scanner's stack would overflow its buffer past ~250 levels.
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&" ".repeat(i));
            text.push_str("k:\n");
        }
        let doc = parse(&text, 0);
        assert_eq!(doc.errors.len(), 1, "{:?}", doc.errors);
        assert_eq!(doc.errors[0].0, TextRange::new(5250, 5352));
        let text = format!("{}x\n", "- ".repeat(300));
        let doc = parse(&text, 0);
        assert!(doc.errors[0].1.contains("deeper than 100 levels"));
        let text = format!("{}x: 1\n", " ".repeat(40_000));
        let _ = parse(&text, 0);
        let text: String = (0..40_000).map(|i| format!("k{i}: v\n")).collect();
        let doc = parse(&text, 0);
        assert_eq!(doc.errors.len(), 1, "{:?}", doc.errors);
        assert_eq!(
            &text[doc.errors[0].0.start..doc.errors[0].0.end],
            "k32000: v"
        );
        assert_eq!(
            doc.value.and_then(|v| v.as_map().map(|m| m.len())),
            Some(32_000)
        );
    }
}
