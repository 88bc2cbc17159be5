//! Renderers for the results of `kiwi check`: `human` (like rustc), `json` (the stable
//! interface of 07-cli-and-init.md), `github` (workflow commands) and `sarif` (SARIF 2.1.0).
//!
//! Pure functions: they take the files that were checked (with their text, line index and
//! diagnostics) and return the text to print. No I/O, no environment.
//!
//! Positions: lines and columns are 1-based everywhere, columns counted in characters
//! (Unicode scalar values, [`Encoding::Char`]); an end column is exclusive (the column just
//! after the last character of the range), as in LSP and SARIF.

use kiwi_kernel::diag::view::{DiagnosticView, FileText, Span};
use kiwi_kernel::diag::{Code, Diagnostic, Related, Severity};
use kiwi_kernel::text::{LineIndex, TextRange};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// One checked file. Every file that was checked is given, with or without diagnostics, so
/// that the summary can count it.
#[derive(Debug, Clone, Copy)]
pub struct FileReport<'a> {
    /// The path as displayed: relative to the current directory where possible.
    pub path: &'a Path,
    pub text: &'a str,
    /// The line index of `text`.
    pub lines: &'a LineIndex,
    pub diagnostics: &'a [Diagnostic],
}

/// An output format of `kiwi check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum Format {
    #[default]
    Human,
    Json,
    Github,
    Sarif,
}

/// Counts over the checked files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Summary {
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub hints: usize,
}

impl Summary {
    /// Whether `kiwi check` must exit with status 1.
    pub fn has_errors(&self) -> bool {
        self.errors > 0
    }

    fn count(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
            Severity::Info => self.infos += 1,
            Severity::Hint => self.hints += 1,
        }
    }
}

impl std::fmt::Display for Summary {
    /// "2 errors, 3 warnings in 14 files", or "no problems in 14 files".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.errors, "error", "errors"),
            (self.warnings, "warning", "warnings"),
            (self.infos, "info", "infos"),
            (self.hints, "hint", "hints"),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
        .collect();
        let files = if self.files == 1 { "file" } else { "files" };
        if parts.is_empty() {
            write!(f, "no problems in {} {files}", self.files)
        } else {
            write!(f, "{} in {} {files}", parts.join(", "), self.files)
        }
    }
}

pub fn summarize(files: &[FileReport]) -> Summary {
    let mut summary = Summary {
        files: files.len(),
        ..Summary::default()
    };
    for d in files.iter().flat_map(|f| f.diagnostics) {
        summary.count(d.severity);
    }
    summary
}

/// Render the results in `format`. `color` (ANSI escapes) applies to `Human` only.
pub fn render(format: Format, files: &[FileReport], color: bool) -> String {
    match format {
        Format::Human => render_human(files, color),
        Format::Json => render_json(files),
        Format::Github => render_github(files),
        Format::Sarif => render_sarif(files),
    }
}

// ---------------------------------------------------------------------------------------
// Positions

fn file_text<'a>(file: &FileReport<'a>) -> FileText<'a> {
    FileText {
        path: file.path,
        text: file.text,
        lines: file.lines,
    }
}

/// A range as 1-based lines and character columns, end exclusive (the kernel's one view).
fn span(file: &FileReport, range: TextRange) -> Span {
    Span::of(file_text(file), range)
}

/// The diagnostics of a file in source order (stable: equal ranges keep their order).
fn sorted<'a>(file: &FileReport<'a>) -> Vec<&'a Diagnostic> {
    let mut diags: Vec<&Diagnostic> = file.diagnostics.iter().collect();
    diags.sort_by_key(|d| (d.range.start, d.range.end));
    diags
}

/// Where a related location is: the file it is in (when it is one of the checked files,
/// whose text we have) and its displayed path.
fn related_file<'f, 'a>(
    this: &'f FileReport<'a>,
    files: &Checked<'f, 'a>,
    related: &Related,
) -> (Option<&'f FileReport<'a>>, String) {
    let Some(path) = related.path.as_deref() else {
        return (Some(this), display_path(this.path));
    };
    match files.find(this, path) {
        Some(f) => (Some(f), display_path(f.path)),
        None => (None, display_path(path)),
    }
}

/// The checked files by path and by file name, made once per report: a related location's
/// file is found without a walk of every file (a walk per related location made `check` of
/// 100,000 real-shaped items quadratic: a tenth of its time).
struct Checked<'f, 'a> {
    exact: std::collections::HashMap<&'f Path, &'f FileReport<'a>>,
    by_name: std::collections::HashMap<&'f std::ffi::OsStr, Vec<&'f FileReport<'a>>>,
    /// Files whose path has no file name (none in practice): looked at every time.
    odd: Vec<&'f FileReport<'a>>,
}

impl<'f, 'a> Checked<'f, 'a> {
    fn new(files: &'f [FileReport<'a>]) -> Self {
        let mut c = Checked {
            exact: Default::default(),
            by_name: Default::default(),
            odd: Vec::new(),
        };
        for f in files {
            c.exact.entry(f.path).or_insert(f);
            match f.path.file_name() {
                Some(name) => c.by_name.entry(name).or_default().push(f),
                None => c.odd.push(f),
            }
        }
        c
    }

    /// The checked file at `path`: `this` or the first of the files with that very path, else
    /// `this` or the first whose path ends with the other (a relative and an absolute
    /// spelling; both then end with the same file name).
    fn find(&self, this: &'f FileReport<'a>, path: &Path) -> Option<&'f FileReport<'a>> {
        if this.path == path {
            return Some(this);
        }
        if let Some(f) = self.exact.get(path) {
            return Some(f);
        }
        let ends = |f: &FileReport| path.ends_with(f.path) || f.path.ends_with(path);
        if ends(this) {
            return Some(this);
        }
        let named = path
            .file_name()
            .and_then(|n| self.by_name.get(n))
            .into_iter()
            .flatten();
        // The first in the files' order (one slice: the lowest address), as a walk finds it.
        named
            .chain(self.odd.iter())
            .copied()
            .filter(|f| ends(f))
            .min_by_key(|f| *f as *const FileReport as usize)
    }
}

fn display_path(path: &Path) -> String {
    path.display().to_string()
}

/// A path with `/` separators (GitHub and SARIF want those on every platform).
fn slash_path(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

// ---------------------------------------------------------------------------------------
// human

struct Paint {
    on: bool,
}

impl Paint {
    fn paint(&self, style: &str, s: &str) -> String {
        if self.on && !s.is_empty() {
            format!("\x1b[{style}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn severity_style(severity: Severity) -> &'static str {
        match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
            Severity::Hint => "1;32",
        }
    }
}

const BOLD: &str = "1";
const GUTTER: &str = "1;34";
const TAB_WIDTH: usize = 4;

/// The width of a piece of a source line as printed: characters, a tab as `TAB_WIDTH`.
fn printed_width(s: &str) -> usize {
    s.chars()
        .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
        .sum()
}

/// A source line as printed: tabs expanded, control characters made visible.
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str(&" ".repeat(TAB_WIDTH)),
            c if crate::term::hidden(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn render_human(files: &[FileReport], color: bool) -> String {
    let paint = Paint { on: color };
    let mut out = String::new();
    let checked = Checked::new(files);
    for file in files {
        for diag in sorted(file) {
            human_diagnostic(&mut out, file, &checked, diag, &paint);
            out.push('\n');
        }
    }
    let summary = summarize(files);
    out.push_str(&paint.paint(BOLD, &summary.to_string()));
    out.push('\n');
    out
}

fn human_diagnostic<'f, 'a>(
    out: &mut String,
    file: &'f FileReport<'a>,
    files: &Checked<'f, 'a>,
    diag: &Diagnostic,
    paint: &Paint,
) {
    let sev_style = Paint::severity_style(diag.severity);
    let at = span(file, diag.range);
    let width = at.line.to_string().len();
    let pad = " ".repeat(width);
    let bar = paint.paint(GUTTER, "|");

    // error[D108]: message
    let _ = writeln!(
        out,
        "{}{}",
        paint.paint(
            sev_style,
            &format!("{}[{}]", diag.severity.as_str(), diag.code)
        ),
        paint.paint(BOLD, &format!(": {}", crate::term::escape(&diag.message))),
    );
    //  --> path:line:col
    let _ = writeln!(
        out,
        "{pad}{} {}:{}:{}",
        paint.paint(GUTTER, "-->"),
        crate::term::escape(&display_path(file.path)),
        at.line,
        at.column
    );

    // The source line and the carets under the range (multi-line: to the end of the first line).
    let line = (at.line - 1) as usize;
    if let Some(content) = file.lines.line_content_range(file.text, line) {
        let source = &file.text[content.start..content.end];
        let start = floor_char_boundary(
            file.text,
            diag.range.start.clamp(content.start, content.end),
        );
        let end = floor_char_boundary(file.text, diag.range.end.clamp(start, content.end));
        let before = printed_width(&file.text[content.start..start]);
        let carets = printed_width(&file.text[start..end]).max(1);
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(
            out,
            "{} {bar} {}",
            paint.paint(GUTTER, &at.line.to_string()),
            printable(source)
        );
        let _ = writeln!(
            out,
            "{pad} {bar} {}{}",
            " ".repeat(before),
            paint.paint(sev_style, &"^".repeat(carets))
        );
    }

    let eq = paint.paint(GUTTER, "=");
    for related in &diag.related {
        let (target, shown) = related_file(file, files, related);
        let location = match target {
            Some(f) => {
                let s = span(f, related.range);
                format!("{shown}:{}:{}", s.line, s.column)
            }
            None => shown,
        };
        let _ = writeln!(
            out,
            "{pad} {eq} {}: {location}: {}",
            paint.paint(BOLD, "note"),
            crate::term::escape(&related.message)
        );
    }
    for fix in &diag.fixes {
        let _ = writeln!(
            out,
            "{pad} {eq} {}: {}",
            paint.paint(BOLD, "help"),
            crate::term::escape(&fix.title)
        );
    }
}

// ---------------------------------------------------------------------------------------
// json

#[derive(Serialize)]
struct JsonReport {
    diagnostics: Vec<DiagnosticView>,
    summary: Summary,
}

/// The diagnostics in the kernel's one view (`kiwi_kernel::diag::view`); a related location
/// in another checked file gets its position there.
fn render_json(files: &[FileReport]) -> String {
    let mut diagnostics = Vec::new();
    let checked = Checked::new(files);
    for file in files {
        let other = |p: &Path| checked.find(file, p).map(file_text);
        for diag in sorted(file) {
            diagnostics.push(DiagnosticView::new(file_text(file), diag, &other));
        }
    }
    let report = JsonReport {
        diagnostics,
        summary: summarize(files),
    };
    let mut out = serde_json::to_string_pretty(&report).expect("the report serializes");
    out.push('\n');
    out
}

// ---------------------------------------------------------------------------------------
// github

/// The message of a workflow command: `%`, CR and LF are escaped.
fn github_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value of a workflow command: also `:` and `,`.
fn github_property(s: &str) -> String {
    github_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One `::error file=..,line=..::message` line per diagnostic. Columns are given only when
/// the range is on one line (GitHub ignores or rejects them otherwise).
fn render_github(files: &[FileReport]) -> String {
    let mut out = String::new();
    for file in files {
        for diag in sorted(file) {
            let command = match diag.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info | Severity::Hint => "notice",
            };
            let s = span(file, diag.range);
            let mut props = format!(
                "file={},line={}",
                github_property(&slash_path(file.path)),
                s.line
            );
            if s.line == s.end_line {
                let _ = write!(props, ",col={}", s.column);
            }
            let _ = write!(props, ",endLine={}", s.end_line);
            if s.line == s.end_line {
                let _ = write!(props, ",endColumn={}", s.end_column);
            }
            let _ = write!(props, ",title={}", github_property(diag.code.as_str()));
            let _ = writeln!(
                out,
                "::{command} {props}::{}",
                github_data(&crate::term::escape(&diag.message))
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// sarif

const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize)]
struct SarifLog {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<SarifRun>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRun {
    tool: SarifTool,
    /// Columns are counted in characters.
    column_kind: &'static str,
    results: Vec<SarifResult>,
}

#[derive(Serialize)]
struct SarifTool {
    driver: SarifDriver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifDriver {
    name: &'static str,
    version: &'static str,
    rules: Vec<SarifRule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRule {
    id: &'static str,
    short_description: SarifText,
    default_configuration: SarifConfiguration,
}

#[derive(Serialize)]
struct SarifConfiguration {
    level: &'static str,
}

#[derive(Serialize)]
struct SarifText {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: SarifText,
    locations: Vec<SarifLocation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<SarifLocation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: SarifPhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<SarifText>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifPhysicalLocation {
    artifact_location: SarifArtifact,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<SarifRegion>,
}

#[derive(Serialize)]
struct SarifArtifact {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRegion {
    start_line: u32,
    start_column: u32,
    end_line: u32,
    end_column: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix {
    description: SarifText,
    artifact_changes: Vec<SarifChange>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifChange {
    artifact_location: SarifArtifact,
    replacements: Vec<SarifReplacement>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifReplacement {
    deleted_region: SarifRegion,
    inserted_content: SarifText,
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info | Severity::Hint => "note",
    }
}

fn sarif_region(file: &FileReport, range: TextRange) -> SarifRegion {
    let s = span(file, range);
    SarifRegion {
        start_line: s.line,
        start_column: s.column,
        end_line: s.end_line,
        end_column: s.end_column,
    }
}

/// A path as a URI reference: relative paths stay relative (resolved against the directory
/// `kiwi check` ran in), absolute ones become `file://` URIs; everything outside the
/// unreserved characters and `/` is percent-encoded.
fn path_uri(path: &Path) -> String {
    let s = slash_path(path);
    let bytes = s.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    let (prefix, keep_colon_at) = if s.starts_with('/') {
        ("file://", None)
    } else if drive {
        ("file:///", Some(1))
    } else {
        ("", None)
    };
    let mut out = String::from(prefix);
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(*b as char)
            }
            b':' if keep_colon_at == Some(i) => out.push(':'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn render_sarif(files: &[FileReport]) -> String {
    // The rules: the codes used, in catalogue order.
    let mut codes: Vec<Code> = files
        .iter()
        .flat_map(|f| f.diagnostics.iter().map(|d| d.code))
        .collect();
    codes.sort();
    codes.dedup();
    let rules = codes
        .iter()
        .map(|code| {
            let info = code.info();
            SarifRule {
                id: info.name,
                short_description: SarifText {
                    text: info.summary.to_string(),
                },
                default_configuration: SarifConfiguration {
                    level: sarif_level(info.severity),
                },
            }
        })
        .collect();

    let mut results = Vec::new();
    let checked = Checked::new(files);
    for file in files {
        let uri = path_uri(file.path);
        for diag in sorted(file) {
            let related_locations = diag
                .related
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let (target, _) = related_file(file, &checked, r);
                    let (uri, region) = match (target, r.path.as_deref()) {
                        (Some(f), _) => (path_uri(f.path), Some(sarif_region(f, r.range))),
                        (None, Some(p)) => (path_uri(p), None),
                        (None, None) => (uri.clone(), Some(sarif_region(file, r.range))),
                    };
                    SarifLocation {
                        id: Some(i),
                        physical_location: SarifPhysicalLocation {
                            artifact_location: SarifArtifact { uri },
                            region,
                        },
                        message: Some(SarifText {
                            text: r.message.clone(),
                        }),
                    }
                })
                .collect();
            // A SARIF fix needs at least one replacement: a fix that only renames the
            // file has no SARIF form.
            let fixes = diag
                .fixes
                .iter()
                .filter(|f| !f.edits.is_empty())
                .map(|f| SarifFix {
                    description: SarifText {
                        text: f.title.clone(),
                    },
                    artifact_changes: vec![SarifChange {
                        artifact_location: SarifArtifact { uri: uri.clone() },
                        replacements: f
                            .edits
                            .iter()
                            .map(|e| SarifReplacement {
                                deleted_region: sarif_region(file, e.range),
                                inserted_content: SarifText {
                                    text: e.new_text.clone(),
                                },
                            })
                            .collect(),
                    }],
                })
                .collect();
            results.push(SarifResult {
                rule_id: diag.code.as_str(),
                rule_index: codes.binary_search(&diag.code).expect("code is a rule"),
                level: sarif_level(diag.severity),
                message: SarifText {
                    text: diag.message.clone(),
                },
                locations: vec![SarifLocation {
                    id: None,
                    physical_location: SarifPhysicalLocation {
                        artifact_location: SarifArtifact { uri: uri.clone() },
                        region: Some(sarif_region(file, diag.range)),
                    },
                    message: None,
                }],
                related_locations,
                fixes,
            });
        }
    }

    let log = SarifLog {
        schema: SARIF_SCHEMA,
        version: "2.1.0",
        runs: vec![SarifRun {
            tool: SarifTool {
                driver: SarifDriver {
                    name: "kiwi",
                    version: env!("CARGO_PKG_VERSION"),
                    rules,
                },
            },
            column_kind: "unicodeCodePoints",
            results,
        }],
    };
    let mut out = serde_json::to_string_pretty(&log).expect("the SARIF log serializes");
    out.push('\n');
    out
}

// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use kiwi_kernel::diag::{Fix, TextEdit};
    use std::path::PathBuf;

    /// A directive with CRLF line ends, multi-byte text (accents, CJK, an emoji outside the
    /// BMP), a tab, and a bare `&`; and a second file whose name holds `,` and `:`.
    const DIRECTIVE: &str = "<directive name=\"résumé\">\r\n  <step>日本語 😀 {input:targte} & more</step>\r\n\t<b>x</b>\r\n</directive>\r\n";
    const TOOL: &str = "__version__ = \"1.0\"\nCONFIG = {\"args\": [\"{outfile}\"]}\n";

    fn at(text: &str, needle: &str) -> TextRange {
        let start = text.find(needle).expect(needle);
        TextRange::new(start, start + needle.len())
    }

    struct Sample {
        directive_lines: LineIndex,
        tool_lines: LineIndex,
        clean_lines: LineIndex,
        directive_diags: Vec<Diagnostic>,
        tool_diags: Vec<Diagnostic>,
    }

    fn sample() -> Sample {
        let d = DIRECTIVE;
        let placeholder = at(d, "{input:targte}");
        let amp = at(d, "& more").start;
        let name = at(d, "résumé");
        let line1_end = d.find("\r\n").unwrap();
        let multi = TextRange::new(at(d, "<b>").start, at(d, "</directive>").end);
        let directive_diags = vec![
            Diagnostic::new(
                Code::D108,
                placeholder,
                "placeholder `{input:targte}` names no declared input; did you mean `target`?",
            )
            .related(None, name, "the inputs are declared here")
            .fix(Fix::replace(
                "Replace with `{input:target}`",
                placeholder,
                "{input:target}",
            )),
            Diagnostic::new(
                Code::D102,
                TextRange::new(amp, amp + 1),
                "XML not well-formed: a bare `&` (write `&amp;`)",
            )
            .fix(Fix::replace(
                "Escape as `&amp;`",
                TextRange::new(amp, amp + 1),
                "&amp;",
            ))
            .fix(Fix {
                title: "Wrap the text in CDATA".into(),
                edits: vec![
                    TextEdit {
                        range: TextRange::empty(at(d, "日本語").start),
                        new_text: "<![CDATA[".into(),
                    },
                    TextEdit {
                        range: TextRange::empty(at(d, "</step>").start),
                        new_text: "]]>".into(),
                    },
                ],
                rename_to: None,
            }),
            Diagnostic::new(
                Code::K002,
                name,
                "directive name `résumé` differs from the file's stem `cafe`",
            )
            .fix(Fix {
                title: "Rename the file to `résumé.md`".into(),
                edits: vec![],
                rename_to: Some(PathBuf::from(".ai/directives/résumé.md")),
            }),
            Diagnostic::new(
                Code::D103,
                multi,
                "text after </directive> inside the fence",
            ),
            Diagnostic::new(
                Code::P206,
                TextRange::empty(line1_end),
                "a grant no step uses",
            ),
            Diagnostic::new(
                Code::K005,
                TextRange::new(1, 10),
                "this item shadows `x` of the builtin space",
            )
            .related(
                Some(PathBuf::from("/abs/project/tools/a,b:c.py")),
                at(TOOL, "CONFIG"),
                "a related place in another checked file",
            )
            .related(
                Some(PathBuf::from("builtin/tools/x.py")),
                TextRange::new(0, 3),
                "the shadowed item",
            ),
        ];
        let tool_diags = vec![Diagnostic::new(
            Code::T307,
            at(TOOL, "{outfile}"),
            "`{outfile}` is 100% unknown:\nnot a parameter, not a kernel name",
        )];
        Sample {
            directive_lines: LineIndex::new(DIRECTIVE),
            tool_lines: LineIndex::new(TOOL),
            clean_lines: LineIndex::new(""),
            directive_diags,
            tool_diags,
        }
    }

    fn files(s: &Sample) -> Vec<FileReport<'_>> {
        vec![
            FileReport {
                path: Path::new(".ai/directives/cafe.md"),
                text: DIRECTIVE,
                lines: &s.directive_lines,
                diagnostics: &s.directive_diags,
            },
            FileReport {
                path: Path::new("tools/a,b:c.py"),
                text: TOOL,
                lines: &s.tool_lines,
                diagnostics: &s.tool_diags,
            },
            FileReport {
                path: Path::new(".ai/knowledge/empty.md"),
                text: "",
                lines: &s.clean_lines,
                diagnostics: &[],
            },
        ]
    }

    fn without_version(s: String) -> String {
        s.replace(env!("CARGO_PKG_VERSION"), "[version]")
    }

    #[test]
    fn summary_counts() {
        let s = sample();
        let files = files(&s);
        let summary = summarize(&files);
        assert_eq!(
            summary,
            Summary {
                files: 3,
                errors: 3,
                warnings: 2,
                infos: 0,
                hints: 2
            }
        );
        assert!(summary.has_errors());
        assert_eq!(
            summary.to_string(),
            "3 errors, 2 warnings, 2 hints in 3 files"
        );
        assert_eq!(summarize(&files[2..]).to_string(), "no problems in 1 file");
        assert_eq!(summarize(&[]).to_string(), "no problems in 0 files");
    }

    #[test]
    fn human() {
        let s = sample();
        insta::assert_snapshot!(render(Format::Human, &files(&s), false));
    }

    #[test]
    fn human_color() {
        let s = sample();
        let out = render(Format::Human, &files(&s)[1..], true);
        assert!(out.contains("\x1b[1;31merror[T307]\x1b[0m"));
        insta::assert_snapshot!(out.replace('\x1b', "\\e"));
        // Without colour, no escape at all.
        assert!(!render(Format::Human, &files(&s), false).contains('\x1b'));
    }

    #[test]
    fn json() {
        let s = sample();
        let out = render(Format::Json, &files(&s), false);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let d0 = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "D108")
            .unwrap();
        // `{input:targte}` on line 2, after 13 characters (the CJK and the emoji count one each).
        assert_eq!(
            (d0["line"].as_u64(), d0["column"].as_u64()),
            (Some(2), Some(15))
        );
        assert_eq!(d0["end_column"].as_u64(), Some(29));
        insta::assert_snapshot!(out);
    }

    #[test]
    fn github() {
        let s = sample();
        insta::assert_snapshot!(render(Format::Github, &files(&s), false));
    }

    #[test]
    fn github_escaping() {
        assert_eq!(github_data("50%\r\nx: a, b"), "50%25%0D%0Ax: a, b");
        assert_eq!(github_property("a,b:c%"), "a%2Cb%3Ac%25");
    }

    #[test]
    fn sarif() {
        let s = sample();
        let out = without_version(render(Format::Sarif, &files(&s), false));
        insta::assert_snapshot!(out);
    }

    #[test]
    fn sarif_structure() {
        let s = sample();
        let files = files(&s);
        let v: serde_json::Value =
            serde_json::from_str(&render(Format::Sarif, &files, false)).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1);
        let driver = &runs[0]["tool"]["driver"];
        assert_eq!(driver["name"], "kiwi");
        let rules: Vec<&str> = driver["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            rules,
            ["K002", "K005", "D102", "D103", "D108", "P206", "T307"]
        );
        for r in driver["rules"].as_array().unwrap() {
            let code = Code::parse(r["id"].as_str().unwrap()).unwrap();
            assert_eq!(r["shortDescription"]["text"], code.info().summary);
        }
        let results = runs[0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 7);
        for r in results {
            let index = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(r["ruleId"].as_str().unwrap(), rules[index]);
            assert!(["error", "warning", "note"].contains(&r["level"].as_str().unwrap()));
            assert!(!r["message"]["text"].as_str().unwrap().is_empty());
            let loc = &r["locations"][0]["physicalLocation"];
            assert!(!loc["artifactLocation"]["uri"].as_str().unwrap().is_empty());
            for key in ["startLine", "startColumn", "endLine", "endColumn"] {
                assert!(loc["region"][key].as_u64().unwrap() >= 1, "{key}");
            }
            for fix in r["fixes"].as_array().into_iter().flatten() {
                assert!(!fix["artifactChanges"][0]["replacements"]
                    .as_array()
                    .unwrap()
                    .is_empty());
            }
        }
        // No results: still a valid log.
        let empty: serde_json::Value =
            serde_json::from_str(&render(Format::Sarif, &[], false)).unwrap();
        assert_eq!(empty["runs"][0]["results"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn uris() {
        assert_eq!(
            path_uri(Path::new(".ai/tools/a b.py")),
            ".ai/tools/a%20b.py"
        );
        assert_eq!(path_uri(Path::new("tools/a,b:c.py")), "tools/a%2Cb%3Ac.py");
        assert_eq!(path_uri(Path::new("/abs/é.md")), "file:///abs/%C3%A9.md");
        assert_eq!(path_uri(Path::new("C:\\x\\y.md")), "file:///C:/x/y.md");
    }

    #[test]
    fn out_of_range_is_clamped() {
        let text = "abc";
        let lines = LineIndex::new(text);
        let diags = [Diagnostic::new(
            Code::K001,
            TextRange::new(2, 99),
            "past the end",
        )];
        let files = [FileReport {
            path: Path::new("x.md"),
            text,
            lines: &lines,
            diagnostics: &diags,
        }];
        for format in [Format::Human, Format::Json, Format::Github, Format::Sarif] {
            assert!(render(format, &files, true).contains("past the end"));
        }
        assert!(render(Format::Human, &files, false).contains("  |   ^\n"));
    }
    /// The checked file a related location names is the one a walk of the files finds: the
    /// same path first (this file, then the files in order), else one whose path ends with
    /// the other, else none.
    #[test]
    fn a_related_file_is_found_as_a_walk_finds_it() {
        let lines = LineIndex::new("");
        let paths = [
            ".ai/tools/a.py",
            "/p/.ai/tools/a.py",
            ".ai/tools/b.py",
            "b.py",
            "/q/.ai/tools/b.py",
            ".ai/directives/a.md",
        ];
        let files: Vec<FileReport> = paths
            .iter()
            .map(|p| FileReport {
                path: Path::new(p),
                text: "",
                lines: &lines,
                diagnostics: &[],
            })
            .collect();
        fn walk<'f>(
            this: &'f FileReport<'f>,
            files: &'f [FileReport<'f>],
            path: &Path,
        ) -> Option<*const FileReport<'f>> {
            std::iter::once(this)
                .chain(files.iter())
                .find(|f| f.path == path)
                .or_else(|| {
                    std::iter::once(this)
                        .chain(files.iter())
                        .find(|f| path.ends_with(f.path) || f.path.ends_with(path))
                })
                .map(|f| f as *const FileReport)
        }
        let checked = Checked::new(&files);
        let asked = [
            ".ai/tools/a.py",
            "/p/.ai/tools/a.py",
            "/elsewhere/.ai/tools/a.py",
            "tools/b.py",
            "/q/.ai/tools/b.py",
            "/r/.ai/tools/b.py",
            "a.md",
            "c.py",
            "/",
        ];
        for this in &files {
            for a in asked {
                let p = Path::new(a);
                assert_eq!(
                    checked.find(this, p).map(|f| f as *const FileReport),
                    walk(this, &files, p),
                    "{} asking {a}",
                    this.path.display()
                );
            }
        }
    }
}
