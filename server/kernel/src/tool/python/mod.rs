//! Python tools: module-level assignments found by the query in
//! `grammars/python/extract.scm`, their right-hand sides read as literals.
//!
//! Accepted literals are those of `ast.literal_eval`, minus what metadata has no use for:
//! strings (all quotes, prefixes `r`/`b`/`u`, implicit concatenation, escapes; a bytes string
//! is read as text, one character per byte), integers (underscores, `0x`/`0o`/`0b`), floats,
//! a sign before a number, `True`/`False`/`None`, dicts, lists and tuples (read as lists).
//! Anything else is `NonLiteral` at its own range, and the literal parts around it are still
//! read. Every f-string is `NonLiteral("an f-string")`, as for `ast.literal_eval`.

use super::checks::Seg;
use super::{FieldEntry, FIELDS};
use crate::diag::Diagnostic;
use crate::text::TextRange;
use crate::yaml::parse_tree;
use std::cell::RefCell;
use tree_sitter::{Language, Node, Parser, Range, Tree};

mod convert;
mod scan;
mod syntax;
pub(super) use scan::candidate_ranges;
use scan::module_bindings;
#[cfg(test)]
pub(crate) use syntax::whole_parse_syntax_errors;
pub(crate) use syntax::{nested_field_assignments, syntax_errors};

/// The extraction query (kept with the other grammar files at the repository root).
pub const EXTRACT_QUERY: &str = include_str!("../../../../../grammars/python/extract.scm");

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
