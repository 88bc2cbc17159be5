//! A light scan of the text for the column-0 statements that can assign a field or bind a
//! name: it knows strings, comments, brackets and backslash continuations.

use crate::tool::FIELDS;
use tree_sitter::{Point, Range};

/// The byte ranges (with their points) of the logical lines that start at column 0 with
/// `name =` or `name:` and mention one of the [`FIELDS`] names: the only module-level
/// statements that can assign a field. A light scan that knows strings (all quotes),
/// comments, brackets and backslash continuations, so that text inside a docstring or a
/// bracket is never taken for a statement.
pub(crate) fn candidate_ranges(text: &str) -> Vec<Range> {
    logical_lines(text, is_candidate)
}

/// The module-level statements that bind or change a name, for [`Conv::name`]: (the name,
/// the statement, whether it is a plain `NAME = value`).
pub(super) fn module_bindings(text: &str) -> Vec<(String, Range, bool)> {
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
