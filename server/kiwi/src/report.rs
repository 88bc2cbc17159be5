//! Placeholder until the report renderer lands (replaced by the real one).
use kiwi_kernel::diag::{Diagnostic, Severity};
use kiwi_kernel::text::LineIndex;
use std::path::Path;

pub struct FileReport<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub lines: &'a LineIndex,
    pub diagnostics: &'a [Diagnostic],
}

#[derive(Clone, Copy)]
pub enum Format {
    Human,
    Json,
    Github,
    Sarif,
}

#[derive(Default)]
pub struct Summary {
    pub files: usize,
    pub errors: usize,
}

pub fn summarize(files: &[FileReport]) -> Summary {
    let mut s = Summary {
        files: files.len(),
        ..Default::default()
    };
    for f in files {
        s.errors += f
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
    }
    s
}

pub fn render(_format: Format, files: &[FileReport], _color: bool) -> String {
    let mut out = String::new();
    for f in files {
        for d in f.diagnostics {
            let p = f
                .lines
                .position(f.text, d.range.start, kiwi_kernel::text::Encoding::Char);
            out.push_str(&format!(
                "{}:{}:{}: {} {}\n",
                f.path.display(),
                p.line + 1,
                p.column + 1,
                d.code,
                d.message
            ));
        }
    }
    out
}
