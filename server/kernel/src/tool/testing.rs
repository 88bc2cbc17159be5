//! Test helpers shared by the tool, YAML and knowledge tests: readable renderings of
//! diagnostics and values, with ranges as 1-based `line:column` (columns in characters) and
//! the text they cover.

use crate::diag::Diagnostic;
use crate::text::{Encoding, LineIndex, TextRange};
use crate::value::{Value, ValueKind};
use std::fmt::Write;

fn span(text: &str, idx: &LineIndex, r: TextRange) -> String {
    let (s, e) = idx.range_positions(text, r, Encoding::Char);
    format!(
        "{}:{}-{}:{} {:?}",
        s.line + 1,
        s.column + 1,
        e.line + 1,
        e.column + 1,
        text.get(r.start..r.end).unwrap_or("<not a char boundary>")
    )
}

/// `CODE severity L:C-L:C "covered text" message`, one line per diagnostic, then its fixes.
pub(crate) fn render_diagnostics(text: &str, diags: &[Diagnostic]) -> String {
    let idx = LineIndex::new(text);
    let mut out = String::new();
    for d in diags {
        let _ = writeln!(
            out,
            "{} {} {} {}",
            d.code,
            d.severity.as_str(),
            span(text, &idx, d.range),
            d.message
        );
        for f in &d.fixes {
            for e in &f.edits {
                let _ = writeln!(
                    out,
                    "    fix {:?}: {} -> {:?}",
                    f.title,
                    span(text, &idx, e.range),
                    e.new_text
                );
            }
        }
    }
    out
}

/// A value as an indented tree, each node with its range and covered text.
pub(crate) fn render_value(text: &str, v: &Value) -> String {
    let idx = LineIndex::new(text);
    let mut out = String::new();
    let mut stack: Vec<(usize, String, &Value)> = vec![(0, String::new(), v)];
    while let Some((depth, label, v)) = stack.pop() {
        let pad = "  ".repeat(depth);
        let kind = match &v.kind {
            ValueKind::Null => "null".to_string(),
            ValueKind::Bool(b) => format!("bool {b}"),
            ValueKind::Int(i) => format!("int {i}"),
            ValueKind::Float(f) => format!("float {f}"),
            ValueKind::Str(s) => format!(
                "str {:?} (content {}{})",
                s.value,
                span(text, &idx, s.content),
                if s.verbatim { ", verbatim" } else { "" }
            ),
            ValueKind::List(l) => format!("list of {}", l.len()),
            ValueKind::Map(m) => format!("map of {}", m.len()),
            ValueKind::NonLiteral(w) => format!("NON-LITERAL {w}"),
        };
        let _ = writeln!(out, "{pad}{label}{kind} @ {}", span(text, &idx, v.range));
        match &v.kind {
            ValueKind::List(l) => {
                for (i, item) in l.iter().enumerate().rev() {
                    stack.push((depth + 1, format!("[{i}] "), item));
                }
            }
            ValueKind::Map(m) => {
                for e in m.iter().rev() {
                    let label = format!("{:?} (key {}): ", e.key, span(text, &idx, e.key_range));
                    stack.push((depth + 1, label, &e.value));
                }
            }
            _ => {}
        }
    }
    out
}
