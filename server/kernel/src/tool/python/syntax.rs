//! T301: Python syntax errors of the whole file, and fields assigned inside a module-level
//! block (which kiwi would not read).

use super::python_language;
use crate::diag::{Code, Diagnostic};
use crate::text::TextRange;
use crate::tool::FIELDS;
use crate::yaml::{parse_tree, snippet};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

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
    if crate::tool::python_syntax::surely_valid(text) {
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
    let b = text.as_bytes();
    // One pass over the lines (ended by `\n` or `\r`, as `enclosing_header` reads them),
    // not one search of the whole text per field (a tenth of parsing a Python tool).
    let mut line_start = 0;
    loop {
        let line_end =
            memchr::memchr2(b'\n', b'\r', &b[line_start..]).map_or(b.len(), |i| line_start + i);
        let indent = b[line_start..line_end]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'))
            .count();
        // A field's name first on an indented line, a whole identifier ...
        let at = line_start + indent;
        let field = FIELDS.iter().map(|spec| spec.python).find(|name| {
            b[at..].starts_with(name.as_bytes())
                && !b
                    .get(at + name.len())
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        });
        if let Some(name) = field.filter(|_| indent > 0) {
            let after = at + name.len();
            // ... assigned (`=` not `==`, or an annotation `:`) ...
            let rest = text[after..].trim_start_matches([' ', '\t']);
            let assigns = (rest.starts_with('=') && !rest.starts_with("=="))
                || (rest.starts_with(':') && !rest.starts_with(":="));
            // ... in the body of a conditional module-level statement.
            let header = enclosing_header(text, line_start).filter(|_| assigns);
            let word: Option<String> = header.map(|h| {
                h.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            });
            if let Some(word) = word.filter(|w| CONDITIONAL_BLOCKS.contains(&w.as_str())) {
                out.push(Diagnostic::new(
                    Code::T301,
                    TextRange::new(at, after),
                    format!(
                        "`{name}` is assigned inside an `{word}` block; kiwi reads metadata statically from module-level assignments only, so this value would be ignored: assign `{name}` at the top level of the file"
                    ),
                ));
            }
        }
        if line_end == b.len() {
            return out;
        }
        line_start = line_end + 1;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `nested_field_assignments` found by searching the whole text for each field in
    /// turn (before it went over the lines once).
    fn by_search(text: &str) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let b = text.as_bytes();
        for spec in FIELDS {
            let name = spec.python;
            for (at, _) in text.match_indices(name) {
                let after = at + name.len();
                if (at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_'))
                    || b.get(after)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    continue;
                }
                let line_start = text[..at].rfind(['\n', '\r']).map(|i| i + 1).unwrap_or(0);
                let indent = &text[line_start..at];
                if indent.is_empty() || !indent.bytes().all(|c| c == b' ' || c == b'\t') {
                    continue;
                }
                let rest = text[after..].trim_start_matches([' ', '\t']);
                let assigns = (rest.starts_with('=') && !rest.starts_with("=="))
                    || (rest.starts_with(':') && !rest.starts_with(":="));
                if !assigns {
                    continue;
                }
                let Some(header) = enclosing_header(text, line_start) else {
                    continue;
                };
                let word: String = header
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if CONDITIONAL_BLOCKS.contains(&word.as_str()) {
                    out.push(Diagnostic::new(
                        Code::T301,
                        TextRange::new(at, after),
                        format!(
                            "`{name}` is assigned inside an `{word}` block; kiwi reads metadata statically from module-level assignments only, so this value would be ignored: assign `{name}` at the top level of the file"
                        ),
                    ));
                }
            }
        }
        out.sort_by_key(|d| d.range.start);
        out
    }

    /// One pass over the lines finds what a search per field found, on odd texts and on
    /// every Python file of the real corpus.
    #[test]
    fn one_pass_finds_what_a_search_per_field_found() {
        let odd = [
            "",
            "CONFIG",
            "if x:\n    CONFIG = 1",
            "if x:\r    CONFIG = 1\r\n\tENV_CONFIG: dict = {}\relse:\n  __version__=2\n",
            "try:\n    CONFIG_SCHEMA = {}\n    CONFIG == 1\n    CONFIG := 2\n    xCONFIG = 3\n    CONFIGx = 4\n",
            "for a in b:\n    \t CONFIG = {}\n# c\n\n    EXECUTION_ENVIRONMENT = 'x'\ndef f():\n    CONFIG = 1\n",
            "while 1:\n    é = CONFIG = 1\n    CONFIG\n    CONFIG =",
        ];
        for t in odd {
            assert_eq!(
                format!("{:?}", nested_field_assignments(t)),
                format!("{:?}", by_search(t)),
                "{t:?}"
            );
        }
        let Some(corpus) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let mut files = 0;
        for p in crate::test_corpus::files_below(&corpus) {
            if p.extension().is_some_and(|e| e == "py") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    files += 1;
                    assert_eq!(
                        format!("{:?}", nested_field_assignments(&t)),
                        format!("{:?}", by_search(&t)),
                        "{}",
                        p.display()
                    );
                }
            }
        }
        assert!(files > 100, "{files} Python files");
    }
}
