//! Python tools: module-level assignments found by the query in
//! `grammars/python/extract.scm`, their right-hand sides read as literals.
//!
//! Accepted literals are those of `ast.literal_eval`, minus what metadata has no use for:
//! strings (all quotes, prefixes `r`/`b`/`u`, implicit concatenation, escapes; a bytes string
//! is read as text, one character per byte), integers (underscores, `0x`/`0o`/`0b`), floats,
//! a sign before a number, `True`/`False`/`None`, dicts, lists and tuples (read as lists).
//! Anything else is `NonLiteral` at its own range, and the literal parts around it are still
//! read. Every f-string is `NonLiteral("an f-string")`, as for `ast.literal_eval`.

use super::checks::{render_path, Seg};
use super::python_scalar::{decode_string, float_kind, int_kind};
use super::{FieldEntry, ToolFormat, FIELDS};
use crate::diag::{Code, Diagnostic};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};
use crate::yaml::{parse_tree, snippet, MAX_DEPTH};
use std::cell::RefCell;
use tree_sitter::{Language, Node, Parser, Point, Range, Tree};

/// The extraction query (kept with the other grammar files at the repository root).
pub const EXTRACT_QUERY: &str = include_str!("../../../../grammars/python/extract.scm");

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn python_language() -> Language {
    tree_sitter_python::LANGUAGE.into()
}

/// The matches of [`EXTRACT_QUERY`] as `(name, value)` nodes, in document order: a direct
/// walk of its one pattern (module → expression_statement → assignment with an identifier
/// `left` and a named `right`). Compiling a `tree_sitter::Query` analyses the grammar's whole
/// parse table, 5-8 ms of every process that reads a tool; a test checks that this walk finds
/// exactly what tree-sitter's query engine finds.
pub(crate) fn assignments(module: Node<'_>) -> Vec<(Node<'_>, Node<'_>)> {
    let mut out = Vec::new();
    if module.kind() != "module" {
        return out;
    }
    let mut cursor = module.walk();
    for statement in module.named_children(&mut cursor) {
        if statement.kind() != "expression_statement" {
            continue;
        }
        let mut inner = statement.walk();
        for assignment in statement.named_children(&mut inner) {
            if assignment.kind() != "assignment" {
                continue;
            }
            let left = assignment.child_by_field_name("left");
            let right = assignment.child_by_field_name("right");
            if let (Some(name), Some(value)) = (left, right) {
                if name.kind() == "identifier" && value.is_named() {
                    out.push((name, value));
                }
            }
        }
    }
    out
}

/// What the Python file declares, and the problems found while reading it (T301 for parts
/// that have no place in a [`Value`]: a `**` spread in a dict, a dict key that is not a literal).
/// Re-uses `old` (the tree of the previous version of the text, edited to
/// follow the changes since); returns the new tree too, when it describes `text` as it is.
///
/// Without `want_tree`, statements of the common shape are read by
/// [`super::python_literal`] instead, and no tree is returned.
pub(crate) fn extract_incremental(
    text: &str,
    old: Option<&Tree>,
    want_tree: bool,
) -> (Vec<FieldEntry>, Vec<Diagnostic>, Option<Tree>) {
    // A file that names none of the variables declares nothing: no need to parse it.
    if !FIELDS.iter().any(|f| text.contains(f.python)) {
        return (Vec::new(), Vec::new(), None);
    }
    // Parse only the module-level statements that may assign a field: tree-sitter reads a
    // few hundred bytes instead of the whole script.
    let ranges = candidate_ranges(text);
    if ranges.is_empty() {
        return (Vec::new(), Vec::new(), None);
    }
    // Python reads a lone CR as a line end; the grammar does not: give it LF (same length).
    let lone_cr = text
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'\r' && w[1] != b'\n')
        || text.ends_with('\r');
    let normalized;
    let parse_text = if lone_cr {
        normalized = text
            .char_indices()
            .map(|(i, c)| {
                if c == '\r' && text.as_bytes().get(i + 1) != Some(&b'\n') {
                    '\n'
                } else {
                    c
                }
            })
            .collect::<String>();
        normalized.as_str()
    } else {
        text
    };
    if !want_tree && !lone_cr {
        if let Some(fields) = super::python_literal::read(text, &ranges) {
            return (fields, Vec::new(), None);
        }
    }
    // A tree of the normalized text cannot follow edits of the real one.
    let old = if lone_cr { None } else { old };
    let Some(tree) = parse_tree(&PARSER, python_language, parse_text, &ranges, old) else {
        return (Vec::new(), Vec::new(), None);
    };
    // The last assignment of each field wins: (field index, name node, value node).
    let mut winners: Vec<Option<(Node, Node)>> = vec![None; FIELDS.len()];
    for (name, mut value) in assignments(tree.root_node()) {
        let Some(var) = text.get(name.byte_range()) else {
            continue;
        };
        let Some(i) = FIELDS.iter().position(|f| f.python == var) else {
            continue;
        };
        // `A = B = value`: the value is the last right-hand side.
        while value.kind() == "assignment" {
            match value.child_by_field_name("right") {
                Some(r) => value = r,
                None => break,
            }
        }
        winners[i] = Some((name, value));
    }
    let mut fields = Vec::new();
    let mut conv = Conv {
        src: text,
        parse_src: parse_text,
        bindings: None,
        root: "",
        path: Vec::new(),
        diagnostics: Vec::new(),
    };
    for (spec, winner) in FIELDS.iter().zip(winners) {
        let Some((name, value)) = winner else {
            continue;
        };
        conv.root = spec.python;
        conv.path.clear();
        let value = conv.value(value, 0);
        fields.push(FieldEntry {
            field: spec.field,
            key_range: TextRange::new(name.start_byte(), name.end_byte()),
            value,
        });
    }
    fields.sort_by_key(|f| f.key_range.start);
    let diagnostics = conv.diagnostics;
    (fields, diagnostics, (!lone_cr).then_some(tree))
}

struct Conv<'a> {
    src: &'a str,
    /// The text tree-sitter parses (lone CRs made LF; same offsets as `src`).
    parse_src: &'a str,
    /// The module-level statements that bind a name (`NAME = …`, `NAME += …`, `NAME: T = …`,
    /// `NAME.x = …`, `NAME[k] = …`), found on the first name met: (name, statement, simple).
    bindings: Option<Vec<(String, Range, bool)>>,
    /// The variable being read.
    root: &'static str,
    path: Vec<Seg>,
    diagnostics: Vec<Diagnostic>,
}

fn range(n: Node) -> TextRange {
    TextRange::new(n.start_byte(), n.end_byte())
}

fn non_literal(n: Node, what: impl Into<String>) -> Value {
    Value::new(ValueKind::NonLiteral(what.into()), range(n))
}

impl Conv<'_> {
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn value(&mut self, n: Node, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return non_literal(n, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        if n.is_error() || n.is_missing() {
            return non_literal(n, "invalid Python syntax");
        }
        match n.kind() {
            "string" => self.string(n),
            "concatenated_string" => self.concatenated(n),
            "integer" => Value::new(int_kind(self.text(n), false), range(n)),
            "float" => Value::new(float_kind(self.text(n), false), range(n)),
            "true" => Value::new(ValueKind::Bool(true), range(n)),
            "false" => Value::new(ValueKind::Bool(false), range(n)),
            "none" => Value::new(ValueKind::Null, range(n)),
            "unary_operator" => self.unary(n),
            "dictionary" => self.dict(n, depth),
            "list" | "tuple" | "expression_list" => self.list(n, depth),
            "parenthesized_expression" => {
                let mut c = n.walk();
                let inner: Vec<Node> = n
                    .named_children(&mut c)
                    .filter(|x| x.kind() != "comment")
                    .collect();
                match inner.as_slice() {
                    [one] => self.value(*one, depth + 1),
                    _ => non_literal(n, describe(self.src, n)),
                }
            }
            "identifier" => self.name(n, depth),
            _ => non_literal(n, describe(self.src, n)),
        }
    }

    /// A module-level name bound to a literal before it is used (rye's bundler:
    /// `ACTIONS = ["create", ...]` then `"enum": ACTIONS` in `CONFIG_SCHEMA`) reads as that
    /// literal, as Python evaluates it. Only a name bound exactly once at module level by a
    /// plain `NAME = literal` that ends before the use: a name also changed at module level
    /// (`+=`, `NAME.append`, `NAME[k] =`, bound twice), defined later or bound to something
    /// that is not a literal stays a T301.
    fn name(&mut self, n: Node, depth: usize) -> Value {
        let name = self.text(n).to_string();
        let src = self.parse_src;
        let bindings = self.bindings.get_or_insert_with(|| module_bindings(src));
        let mut found = bindings.iter().filter(|(b, _, _)| *b == name);
        let binding = match (found.next(), found.next()) {
            (Some((_, r, true)), None) if r.end_byte <= n.start_byte() => *r,
            (None, _) => return non_literal(n, describe(self.src, n)),
            _ => {
                return non_literal(
                    n,
                    format!(
                        "a name (`{}`) that is not assigned once, before this use, by a plain `{} = literal` at module level",
                        snippet(&name),
                        snippet(&name)
                    ),
                )
            }
        };
        let Some(tree) = parse_tree(&PARSER, python_language, src, &[binding], None) else {
            return non_literal(n, describe(self.src, n));
        };
        let value = tree
            .root_node()
            .named_child(0)
            .filter(|s| s.kind() == "expression_statement")
            .and_then(|s| s.named_child(0))
            .filter(|a| a.kind() == "assignment" && a.child_by_field_name("type").is_none())
            .and_then(|a| a.child_by_field_name("right"));
        let Some(value) = value else {
            return non_literal(n, describe(self.src, n));
        };
        let v = self.value(value, depth + 1);
        if let ValueKind::NonLiteral(what) = &v.kind {
            return non_literal(n, format!("a name (`{}`) bound to {what}", snippet(&name)));
        }
        v
    }

    fn string(&self, n: Node) -> Value {
        let mut c = n.walk();
        let mut start = None;
        let mut end = None;
        let mut interpolated = false;
        for ch in n.children(&mut c) {
            match ch.kind() {
                "string_start" => start = Some(ch),
                "string_end" => end = Some(ch),
                "interpolation" => interpolated = true,
                _ => {}
            }
        }
        let Some(start) = start else {
            return non_literal(n, "invalid Python syntax");
        };
        let opening = self.text(start);
        let quote_at = opening.find(['"', '\'']).unwrap_or(opening.len());
        let prefix = opening[..quote_at].to_ascii_lowercase();
        if interpolated || prefix.contains('f') {
            return non_literal(n, "an f-string");
        }
        if prefix.contains('t') {
            return non_literal(n, "a template string");
        }
        let Some(end) = end.filter(|e| !e.is_missing()) else {
            return non_literal(n, "a string that is never closed");
        };
        let content = TextRange::new(start.end_byte(), end.start_byte().max(start.end_byte()));
        let raw = self.src.get(content.start..content.end).unwrap_or("");
        let value = decode_string(raw, prefix.contains('r'), prefix.contains('b'));
        let verbatim = value == raw;
        Value::new(
            ValueKind::Str(Str {
                value,
                content,
                verbatim,
            }),
            range(n),
        )
    }

    /// `"a" "b"`: one string; its content runs from the first part to the last.
    fn concatenated(&self, n: Node) -> Value {
        let mut c = n.walk();
        let mut value = String::new();
        let mut content: Option<TextRange> = None;
        for part in n.named_children(&mut c).filter(|x| x.kind() == "string") {
            let v = self.string(part);
            match v.kind {
                ValueKind::Str(s) => {
                    value.push_str(&s.value);
                    content = Some(content.map_or(s.content, |r| r.cover(s.content)));
                }
                _ => return Value::new(v.kind, range(n)),
            }
        }
        let content = content.unwrap_or(range(n));
        let verbatim = self.src.get(content.start..content.end) == Some(value.as_str());
        Value::new(
            ValueKind::Str(Str {
                value,
                content,
                verbatim,
            }),
            range(n),
        )
    }

    fn unary(&self, n: Node) -> Value {
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or("");
        let arg = n.child_by_field_name("argument");
        let negative = op == "-";
        if matches!(op, "-" | "+") {
            if let Some(arg) = arg {
                match arg.kind() {
                    "integer" => return Value::new(int_kind(self.text(arg), negative), range(n)),
                    "float" => return Value::new(float_kind(self.text(arg), negative), range(n)),
                    _ => {}
                }
            }
        }
        non_literal(n, describe(self.src, n))
    }

    fn list(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .collect();
        let mut items = Vec::with_capacity(children.len());
        for (i, ch) in children.into_iter().enumerate() {
            self.path.push(Seg::Index(i));
            items.push(self.value(ch, depth + 1));
            self.path.pop();
        }
        Value::new(ValueKind::List(items), range(n))
    }

    fn dict(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .collect();
        let mut entries = Vec::with_capacity(children.len());
        for ch in children {
            match ch.kind() {
                "pair" => {
                    let (Some(k), Some(v)) = (
                        ch.child_by_field_name("key"),
                        ch.child_by_field_name("value"),
                    ) else {
                        self.report(ch, "invalid Python syntax");
                        continue;
                    };
                    let key = match k.kind() {
                        "string" | "concatenated_string" => {
                            let kv = if k.kind() == "string" {
                                self.string(k)
                            } else {
                                self.concatenated(k)
                            };
                            match kv.kind {
                                ValueKind::Str(s) => Some(s.value),
                                ValueKind::NonLiteral(what) => {
                                    self.report_key(k, &what);
                                    None
                                }
                                _ => None,
                            }
                        }
                        "integer" | "float" | "true" | "false" | "none" => {
                            Some(self.text(k).to_string())
                        }
                        _ => {
                            let what = describe(self.src, k);
                            self.report_key(k, &what);
                            None
                        }
                    };
                    let Some(key) = key else { continue };
                    self.path.push(Seg::Key(key.clone()));
                    let value = self.value(v, depth + 1);
                    self.path.pop();
                    entries.push(Entry {
                        key,
                        key_range: range(k),
                        value,
                    });
                }
                "dictionary_splat" => {
                    let what = format!("a `**` spread (`{}`)", snippet(self.text(ch)));
                    self.report(ch, &what);
                }
                _ => {
                    let what = describe(self.src, ch);
                    self.report(ch, &what);
                }
            }
        }
        Value::new(ValueKind::Map(entries), range(n))
    }

    /// T301 for a part of a dict that is not a `literal: literal` pair.
    fn report(&mut self, n: Node, what: &str) {
        let path = render_path(ToolFormat::Python, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            range(n),
            format!(
                "{path} holds {what}; kiwi reads metadata statically, so every entry must be a literal `key: value`"
            ),
        ));
    }

    fn report_key(&mut self, n: Node, what: &str) {
        let path = render_path(ToolFormat::Python, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            range(n),
            format!(
                "a key of {path} is {what}; kiwi reads metadata statically, so keys must be literal strings"
            ),
        ));
    }
}

/// What a node that is not a literal is, for a message ("a function call (`os.getenv(…)`)").
fn describe(src: &str, n: Node) -> String {
    let text = src.get(n.byte_range()).unwrap_or("");
    let short = snippet(text);
    match n.kind() {
        "identifier" => format!("a name (`{short}`)"),
        "call" => {
            let f = n
                .child_by_field_name("function")
                .and_then(|f| src.get(f.byte_range()))
                .unwrap_or("");
            if !f.is_empty() && f.len() <= 40 && !f.contains('\n') {
                format!("a function call (`{f}(…)`)")
            } else {
                "a function call".to_string()
            }
        }
        "attribute" => format!("an attribute access (`{short}`)"),
        "subscript" => format!("a subscript (`{short}`)"),
        "binary_operator"
        | "boolean_operator"
        | "not_operator"
        | "comparison_operator"
        | "unary_operator" => format!("an expression (`{short}`)"),
        "conditional_expression" => format!("a conditional expression (`{short}`)"),
        "list_comprehension" => "a list comprehension".to_string(),
        "dictionary_comprehension" => "a dict comprehension".to_string(),
        "set_comprehension" => "a set comprehension".to_string(),
        "generator_expression" => "a generator expression".to_string(),
        "lambda" => "a lambda".to_string(),
        "set" => "a set (kiwi reads lists, not sets)".to_string(),
        "ellipsis" => "an ellipsis (`...`)".to_string(),
        "list_splat" | "parenthesized_list_splat" => format!("a `*` spread (`{short}`)"),
        "dictionary_splat" => format!("a `**` spread (`{short}`)"),
        "await" => "an await expression".to_string(),
        "named_expression" => "an assignment expression (`:=`)".to_string(),
        "yield" => "a yield expression".to_string(),
        "ERROR" => "invalid Python syntax".to_string(),
        _ => format!("an expression (`{short}`)"),
    }
}

/// The byte ranges (with their points) of the logical lines that start at column 0 with
/// `name =` or `name:` and mention one of the [`FIELDS`] names: the only module-level
/// statements that can assign a field. A light scan that knows strings (all quotes),
/// comments, brackets and backslash continuations, so that text inside a docstring or a
/// bracket is never taken for a statement.
pub(super) fn candidate_ranges(text: &str) -> Vec<Range> {
    logical_lines(text, is_candidate)
}

/// The module-level statements that bind or change a name, for [`Conv::name`]: (the name,
/// the statement, whether it is a plain `NAME = value`).
fn module_bindings(text: &str) -> Vec<(String, Range, bool)> {
    let mut out = Vec::new();
    for r in logical_lines(text, |line| binding(line).is_some()) {
        let line = &text[r.start_byte..r.end_byte];
        if let Some((name, simple)) = binding(line) {
            out.push((name.to_string(), r, simple));
        }
    }
    out
}

/// A column-0 statement that binds or changes a name: `NAME = …` (plain: `Some((NAME,
/// true))`), or `NAME: T = …`, `NAME += …` (any augmented operator), `NAME.x = …`,
/// `NAME[k] = …`, `NAME.f(…)`, `NAME, B = …` (`Some((NAME, false))`).
fn binding(line: &str) -> Option<(&str, bool)> {
    let b = line.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    let end = b
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(b.len());
    let name = &line[..end];
    if matches!(
        name,
        "if" | "elif"
            | "else"
            | "for"
            | "while"
            | "with"
            | "try"
            | "except"
            | "finally"
            | "def"
            | "class"
            | "import"
            | "from"
            | "return"
            | "del"
            | "global"
            | "nonlocal"
            | "assert"
            | "raise"
            | "pass"
            | "async"
            | "await"
            | "lambda"
            | "not"
            | "print"
    ) {
        return None;
    }
    let rest = line[end..].trim_start_matches([' ', '\t']);
    let r = rest.as_bytes();
    match r.first()? {
        b'=' if r.get(1) != Some(&b'=') => Some((name, true)),
        b':' if r.get(1) != Some(&b'=') => Some((name, false)),
        b'.' | b'[' | b',' => Some((name, false)),
        c if b"+-*/%@&|^<>".contains(c) => {
            // An augmented assignment: the operator (one or two characters), then `=`.
            let op = r.iter().take_while(|c| b"+-*/%@&|^<>".contains(c)).count();
            (r.get(op) == Some(&b'=') && r.get(op + 1) != Some(&b'=')).then_some((name, false))
        }
        _ => None,
    }
}

/// The byte ranges (with their points) of the logical lines of `text` that `keep` accepts
/// (see [`candidate_ranges`]).
fn logical_lines(text: &str, keep: impl Fn(&str) -> bool) -> Vec<Range> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut row = 0usize;
    let mut line_start = 0usize;
    while i < b.len() {
        let start = i;
        let start_point = Point {
            row,
            column: start - line_start,
        };
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'#' => {
                    while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                        i += 1;
                    }
                }
                b'\'' | b'"' => i = skip_string(b, i, &mut row, &mut line_start),
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                b'\\' => {
                    i += 1;
                    if i < b.len() && matches!(b[i], b'\n' | b'\r') {
                        i = line_break(b, i, &mut row, &mut line_start);
                    } else {
                        i += 1;
                    }
                }
                b'\n' | b'\r' => {
                    i = line_break(b, i, &mut row, &mut line_start);
                    if depth == 0 {
                        break;
                    }
                }
                _ => i += 1,
            }
        }
        let end = i.min(b.len());
        if keep(&text[start..end]) {
            out.push(Range {
                start_byte: start,
                end_byte: end,
                start_point,
                end_point: Point {
                    row,
                    column: end - line_start.min(end),
                },
            });
        }
    }
    out
}

/// Past the line break at `i`, counting it.
fn line_break(b: &[u8], mut i: usize, row: &mut usize, line_start: &mut usize) -> usize {
    if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
        i += 1;
    }
    i += 1;
    *row += 1;
    *line_start = i;
    i
}

/// Past the string literal whose opening quote is at `i` (an unterminated one-line string
/// ends before its line break).
fn skip_string(b: &[u8], mut i: usize, row: &mut usize, line_start: &mut usize) -> usize {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    i += if triple { 3 } else { 1 };
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 1;
                if i < b.len() && matches!(b[i], b'\n' | b'\r') {
                    i = line_break(b, i, row, line_start);
                } else {
                    i += 1;
                }
            }
            b'\n' | b'\r' => {
                if !triple {
                    return i;
                }
                i = line_break(b, i, row, line_start);
            }
            c if c == q => {
                if !triple {
                    return i + 1;
                }
                if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                    return i + 3;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

/// `name =`/`name:` at column 0, mentioning a field name.
fn is_candidate(line: &str) -> bool {
    let b = line.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return false;
    }
    let mut j = b
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(b.len());
    while j < b.len() && matches!(b[j], b' ' | b'\t') {
        j += 1;
    }
    let assigns = match b.get(j) {
        Some(b'=') => b.get(j + 1) != Some(&b'='),
        Some(b':') => true,
        _ => false,
    };
    assigns && FIELDS.iter().any(|f| line.contains(f.python))
}

thread_local! {
    /// A second parser for whole files (the extraction's parser has included ranges set).
    static WHOLE_PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// At most this many syntax errors are reported per file (the first one matters most).
const MAX_SYNTAX_ERRORS: usize = 10;

/// T301 for each Python syntax error of the whole file: tree-sitter's `ERROR` and `MISSING`
/// nodes. The metadata is read from the module-level statements alone, so without this a
/// tool that Python refuses to load (`def broken(:`) would pass every check and fail only
/// when run. Lone CRs are parsed as LF (same offsets), as in the extraction.
pub(crate) fn syntax_errors(text: &str) -> Vec<Diagnostic> {
    // Most files are plain Python the quick recognizer is sure of: no whole parse.
    if super::python_syntax::surely_valid(text) {
        return Vec::new();
    }
    whole_parse_syntax_errors(text)
}

/// [`syntax_errors`] by tree-sitter's whole-file parse alone.
pub(crate) fn whole_parse_syntax_errors(text: &str) -> Vec<Diagnostic> {
    let lone_cr = text
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'\r' && w[1] != b'\n')
        || text.ends_with('\r');
    let normalized: String;
    let parse_text = if lone_cr {
        normalized = text
            .char_indices()
            .map(|(i, c)| {
                if c == '\r' && text.as_bytes().get(i + 1) != Some(&b'\n') {
                    '\n'
                } else {
                    c
                }
            })
            .collect();
        normalized.as_str()
    } else {
        text
    };
    // tree-sitter-python's scanner keeps a stack of indentation widths that must fit its
    // 1024-byte state: a file of a few hundred increasing indentations makes it overflow
    // (an assertion in a debug build, one byte past the buffer in release). The stack only
    // holds distinct widths, so a file with few distinct widths is parsed; one with many is
    // not parsed whole (Python itself refuses more than 100 levels).
    let widths = indentation_widths(parse_text);
    if widths.distinct > MAX_DISTINCT_WIDTHS {
        if widths.levels > PYTHON_MAX_INDENT {
            return vec![Diagnostic::new(
                Code::T301,
                TextRange::new(widths.deepest, widths.deepest),
                format!("Python syntax error: more than {PYTHON_MAX_INDENT} levels of indentation (Python refuses the file: too many levels of indentation); kiwi cannot be sure of this tool's metadata"),
            )];
        }
        return Vec::new();
    }
    let Some(tree) = parse_tree(&WHOLE_PARSER, python_language, parse_text, &[], None) else {
        return Vec::new();
    };
    let root = tree.root_node();
    if !root.has_error() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = root.walk();
    let mut descend = true;
    loop {
        let node = cursor.node();
        let mut enter = descend && node.has_error();
        if node.is_error() || node.is_missing() {
            enter = false;
            if out.len() < MAX_SYNTAX_ERRORS {
                out.push(syntax_diagnostic(text, node));
            }
        }
        if enter && cursor.goto_first_child() {
            descend = true;
            continue;
        }
        if cursor.goto_next_sibling() {
            descend = true;
            continue;
        }
        // Up until a parent has a next sibling.
        loop {
            if !cursor.goto_parent() {
                return out;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
        descend = true;
    }
}

/// Python's own limit on nested indentation (`MAXINDENT` of its tokenizer).
const PYTHON_MAX_INDENT: usize = 100;

/// Distinct indentation widths a file may have and still be parsed whole: the scanner's
/// state holds 1 + 255 bytes of string delimiters and 2 bytes per indentation level, within
/// 1024 bytes.
const MAX_DISTINCT_WIDTHS: usize = 300;

struct Widths {
    /// Distinct widths of the lines' leading whitespace (a tab counts 8, as in the scanner).
    distinct: usize,
    /// The deepest nesting of strictly increasing indentation, counted over every line (an
    /// upper bound of Python's levels: lines inside brackets or strings count too).
    levels: usize,
    /// Where that deepest line starts.
    deepest: usize,
}

fn indentation_widths(text: &str) -> Widths {
    let b = text.as_bytes();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut deepest = (0usize, 0usize);
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut w: u32 = 0;
        while i < b.len() {
            match b[i] {
                b' ' => w = w.saturating_add(1),
                b'\t' => w = w.saturating_add(8),
                b'\x0c' => w = 0,
                _ => break,
            }
            i += 1;
        }
        let empty = i >= b.len() || matches!(b[i], b'\n' | b'\r');
        if !empty {
            // Comment lines count for the widths the scanner may meet.
            seen.insert(w);
        }
        if !empty && b[i] != b'#' {
            while stack.last().is_some_and(|t| *t > w) {
                stack.pop();
            }
            if stack.last().is_none_or(|t| *t < w) {
                stack.push(w);
            }
            if stack.len() > deepest.0 {
                deepest = (stack.len(), start);
            }
        }
        while i < b.len() && b[i] != b'\n' {
            i += 1;
        }
        i += 1;
    }
    Widths {
        distinct: seen.len(),
        levels: deepest.0.saturating_sub(1),
        deepest: deepest.1,
    }
}

fn syntax_diagnostic(text: &str, node: Node) -> Diagnostic {
    let start = node.start_byte().min(text.len());
    if node.is_missing() {
        let what = node.kind();
        let what = if what.chars().all(|c| c.is_ascii_punctuation()) || what.len() <= 8 {
            format!("`{what}`")
        } else {
            what.replace('_', " ")
        };
        return Diagnostic::new(
            Code::T301,
            TextRange::new(start, start),
            format!("Python syntax error: {what} is missing here; Python will refuse to load this tool, and kiwi cannot be sure of its metadata"),
        );
    }
    // The smallest useful span: the error node, cut at the end of its first line.
    let end = node.end_byte().min(text.len());
    let end = text[start..end]
        .find(['\n', '\r'])
        .map(|i| start + i)
        .unwrap_or(end);
    let (end, shown) = if end > start {
        (end, format!(" at `{}`", snippet(&text[start..end])))
    } else {
        (end, String::new())
    };
    Diagnostic::new(
        Code::T301,
        TextRange::new(start, end),
        format!("Python syntax error{shown}; Python will refuse to load this tool, and kiwi cannot be sure of its metadata"),
    )
}

/// The column-0 statements whose indented body runs at import time, conditionally or in a
/// loop: a metadata field assigned there is not read (kiwi reads module-level assignments).
const CONDITIONAL_BLOCKS: &[&str] = &[
    "if", "elif", "else", "try", "except", "finally", "with", "for", "while", "async", "match",
];

/// T301 for a field assigned inside a module-level block (`if True:\n    CONFIG = {...}`):
/// kiwi would silently ignore it and run the tool with other values. Assignments in a
/// `def` or `class` body are local names, not metadata, and are left alone.
pub(crate) fn nested_field_assignments(text: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for spec in FIELDS {
        let name = spec.python;
        for (at, _) in text.match_indices(name) {
            let b = text.as_bytes();
            // A whole identifier...
            if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
                continue;
            }
            let after = at + name.len();
            if b.get(after)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                continue;
            }
            // ... first on an indented line ...
            let line_start = text[..at].rfind(['\n', '\r']).map(|i| i + 1).unwrap_or(0);
            let indent = &text[line_start..at];
            if indent.is_empty() || !indent.bytes().all(|c| c == b' ' || c == b'\t') {
                continue;
            }
            // ... assigned (`=` not `==`, or an annotation `:`) ...
            let rest = text[after..].trim_start_matches([' ', '\t']);
            let assigns = (rest.starts_with('=') && !rest.starts_with("=="))
                || (rest.starts_with(':') && !rest.starts_with(":="));
            if !assigns {
                continue;
            }
            // ... in the body of a conditional module-level statement.
            let Some(header) = enclosing_header(text, line_start) else {
                continue;
            };
            let word: String = header
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !CONDITIONAL_BLOCKS.contains(&word.as_str()) {
                continue;
            }
            out.push(Diagnostic::new(
                Code::T301,
                TextRange::new(at, after),
                format!(
                    "`{name}` is assigned inside an `{word}` block; kiwi reads metadata statically from module-level assignments only, so this value would be ignored: assign `{name}` at the top level of the file"
                ),
            ));
        }
    }
    out.sort_by_key(|d| d.range.start);
    out
}

/// The nearest line before `line_start` that starts at column 0 with code (not blank, not a
/// comment).
fn enclosing_header(text: &str, line_start: usize) -> Option<&str> {
    let mut end = line_start;
    while end > 0 {
        let before = &text[..end - 1];
        let start = before.rfind(['\n', '\r']).map(|i| i + 1).unwrap_or(0);
        let line = &text[start..end - 1];
        end = start;
        match line.as_bytes().first() {
            None | Some(b'#') | Some(b' ') | Some(b'\t') => continue,
            Some(_) => return Some(line),
        }
    }
    None
}
