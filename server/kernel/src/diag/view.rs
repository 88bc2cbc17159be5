//! The one JSON view of a diagnostic, for every face that prints diagnostics as data:
//! `kiwi check --format json`, the MCP's `diagnostics` (load, validate, refusals) and the
//! LSP's `kiwi.validate`. Lines and columns are 1-based, columns counted in characters
//! (Unicode scalar values), an end column is exclusive (just after the last character).
//!
//! ```json
//! {"path", "line", "column", "end_line", "end_column", "severity", "code", "message",
//!  "fixes": [{"title", "edits": [{"line", "column", "end_line", "end_column", "new_text"}],
//!             "rename_to"?}],
//!  "related": [{"path", "line", "column", "end_line", "end_column", "message"}]}
//! ```
//!
//! A related location in a file whose text is not at hand has `null` positions.

use super::{Diagnostic, Fix, Related};
use crate::text::{Encoding, LineIndex, TextRange};
use serde::Serialize;
use std::path::Path;

/// A file whose text positions are computed in: its path as shown, its text and line index.
#[derive(Debug, Clone, Copy)]
pub struct FileText<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub lines: &'a LineIndex,
}

impl<'a> FileText<'a> {
    /// The text of a workspace item.
    pub fn of_item(item: &'a crate::workspace::Item) -> Self {
        FileText {
            path: &item.path,
            text: item.text(),
            lines: item.source.lines(),
        }
    }
}

/// A range as 1-based lines and character columns, end exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Span {
    pub fn of(file: FileText, range: TextRange) -> Span {
        let (start, end) = file.lines.range_positions(file.text, range, Encoding::Char);
        Span {
            line: start.line + 1,
            column: start.column + 1,
            end_line: end.line + 1,
            end_column: end.column + 1,
        }
    }
}

/// The fields of a diagnostic's JSON object, in serde_json's (sorted) order.
pub const FIELDS: &[&str] = &[
    "code",
    "column",
    "end_column",
    "end_line",
    "fixes",
    "line",
    "message",
    "path",
    "related",
    "severity",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiagnosticView {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
    pub fixes: Vec<FixView>,
    pub related: Vec<RelatedView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FixView {
    pub title: String,
    pub edits: Vec<EditView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rename_to: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditView {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub new_text: String,
}

/// A related location; the position is `None` (`null`) when its file's text is not at hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelatedView {
    pub path: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub end_line: Option<u32>,
    pub end_column: Option<u32>,
    pub message: String,
}

impl DiagnosticView {
    /// The view of `d`, a diagnostic of `file`. `other` finds the text of another file a
    /// related location points into (`None`: its position is `null`).
    pub fn new<'a>(
        file: FileText<'a>,
        d: &Diagnostic,
        other: &dyn Fn(&Path) -> Option<FileText<'a>>,
    ) -> Self {
        let s = Span::of(file, d.range);
        DiagnosticView {
            path: file.path.display().to_string(),
            line: s.line,
            column: s.column,
            end_line: s.end_line,
            end_column: s.end_column,
            severity: d.severity.as_str(),
            code: d.code.as_str(),
            message: d.message.clone(),
            fixes: d.fixes.iter().map(|f| fix(file, f)).collect(),
            related: d.related.iter().map(|r| related(file, r, other)).collect(),
        }
    }

    /// The views of a file's diagnostics, in their order; related locations in other files
    /// get `null` positions.
    pub fn all(file: FileText, diags: &[Diagnostic]) -> Vec<DiagnosticView> {
        diags
            .iter()
            .map(|d| DiagnosticView::new(file, d, &|_| None))
            .collect()
    }

    /// [`DiagnosticView::all`] as JSON: the `diagnostics` array of the MCP and the LSP.
    pub fn json(file: FileText, diags: &[Diagnostic]) -> serde_json::Value {
        serde_json::to_value(Self::all(file, diags)).unwrap_or_default()
    }
}

fn fix(file: FileText, fix: &Fix) -> FixView {
    FixView {
        title: fix.title.clone(),
        edits: fix
            .edits
            .iter()
            .map(|e| {
                let s = Span::of(file, e.range);
                EditView {
                    line: s.line,
                    column: s.column,
                    end_line: s.end_line,
                    end_column: s.end_column,
                    new_text: e.new_text.clone(),
                }
            })
            .collect(),
        rename_to: fix.rename_to.as_deref().map(|p| p.display().to_string()),
    }
}

fn related<'a>(
    file: FileText<'a>,
    r: &Related,
    other: &dyn Fn(&Path) -> Option<FileText<'a>>,
) -> RelatedView {
    let (target, path) = match r.path.as_deref() {
        None => (Some(file), file.path.display().to_string()),
        Some(p) if p == file.path => (Some(file), file.path.display().to_string()),
        Some(p) => match other(p) {
            Some(f) => (Some(f), f.path.display().to_string()),
            None => (None, p.display().to_string()),
        },
    };
    let s = target.map(|f| Span::of(f, r.range));
    RelatedView {
        path,
        line: s.map(|s| s.line),
        column: s.map(|s| s.column),
        end_line: s.map(|s| s.end_line),
        end_column: s.map(|s| s.end_column),
        message: r.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Fix};

    #[test]
    fn positions_are_one_based_characters_end_exclusive() {
        let text = "é = 1\nab ☃ cd\n";
        let lines = LineIndex::new(text);
        let file = FileText {
            path: Path::new("t.py"),
            text,
            lines: &lines,
        };
        let start = text.find('☃').unwrap();
        let range = TextRange::new(start, start + '☃'.len_utf8() + 3);
        let d = Diagnostic::new(Code::T301, range, "m")
            .fix(Fix::replace("Change", range, "x"))
            .related(None, TextRange::new(0, 2), "here")
            .related(Some("elsewhere.py".into()), TextRange::new(0, 1), "there");
        let v = serde_json::to_value(DiagnosticView::all(file, &[d])).unwrap();
        let keys: Vec<&String> = v[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, FIELDS);
        assert_eq!(
            v,
            serde_json::json!([{
                "path": "t.py", "line": 2, "column": 4, "end_line": 2, "end_column": 8,
                "severity": "error", "code": "T301", "message": "m",
                "fixes": [{"title": "Change", "edits": [{"line": 2, "column": 4, "end_line": 2, "end_column": 8, "new_text": "x"}]}],
                "related": [
                    {"path": "t.py", "line": 1, "column": 1, "end_line": 1, "end_column": 2, "message": "here"},
                    {"path": "elsewhere.py", "line": null, "column": null, "end_line": null, "end_column": null, "message": "there"}
                ]
            }])
        );
    }
}
