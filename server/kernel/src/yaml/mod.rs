//! YAML to [`Value`] with byte ranges, through tree-sitter-yaml; a text read once (no tree
//! kept) is first tried by a quick reader of the usual shapes (`quick.rs`), which answers as
//! tree-sitter does or not at all. Used by YAML tools, knowledge frontmatter and the
//! `config.yaml` files.
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
use crate::value::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::thread::LocalKey;
use tree_sitter::{Language, Node, Parser, Tree};

mod errors;
mod quick;
mod scalars;
#[cfg(test)]
mod tests;
mod values;
use errors::collect_errors;
pub(crate) use errors::snippet;
use scalars::{fold_flow, line_start, read_block_scalar, resolve_plain, Quote};

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
    read(text, base, None, false).0
}

/// [`parse`], re-using `old` (the tree of the previous version of the same text, already
/// edited to follow the changes): only what changed is parsed again. Returns the new tree
/// when it describes `text` itself (not when too-deep or too-long parts had to be blanked
/// or cut, which the next parse could not re-use).
pub fn parse_incremental(text: &str, base: usize, old: Option<&Tree>) -> (YamlDoc, Option<Tree>) {
    read(text, base, old, true)
}

/// [`parse_incremental`]; without `want_tree` (a text read once), YAML of the usual shapes is
/// read without tree-sitter ([`quick`]) and no tree is returned.
fn read(text: &str, base: usize, old: Option<&Tree>, want_tree: bool) -> (YamlDoc, Option<Tree>) {
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
    let (mut doc, tree) = if want_tree {
        parse_with_tree_sitter(text, base, if as_is { old } else { None })
    } else {
        match quick::parse(text, base) {
            Some(doc) => (doc, None),
            None => parse_with_tree_sitter(text, base, None),
        }
    };
    if !notes.is_empty() {
        notes.append(&mut doc.errors);
        doc.errors = notes;
    }
    (doc, tree.filter(|_| as_is))
}

/// A text (read as it is: not limited) by both readers: the quick one's answer, if it has
/// one, and tree-sitter's. For the tests and the fuzz target that hold them equal.
#[doc(hidden)]
pub fn parse_both(text: &str, base: usize) -> (Option<YamlDoc>, YamlDoc) {
    // A text [`parse`] limits (too deep, too long) never reaches tree-sitter whole.
    if limit_indentation(text).is_some() || nth_line(text, MAX_YAML_LINES).is_some() {
        return (None, parse(text, base));
    }
    (
        quick::parse(text, base),
        parse_with_tree_sitter(text, base, None).0,
    )
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

/// tree-sitter's reader: for a tree, and for the texts [`quick`] leaves alone.
fn parse_with_tree_sitter(text: &str, base: usize, old: Option<&Tree>) -> (YamlDoc, Option<Tree>) {
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
