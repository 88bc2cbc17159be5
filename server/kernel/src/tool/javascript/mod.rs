//! JavaScript and TypeScript tools (`.js`, `.mjs`, `.cjs`, `.ts`), as rye keeps them: the
//! metadata are module-level declarations, `export const __version__ = "1.0.0";`,
//! `export const CONFIG_SCHEMA = { type: "object", properties: {...}, required: [...] };`,
//! read as literals.
//!
//! A hand-written reader, not tree-sitter: the grammars of TypeScript and JavaScript would
//! add two large generated parsers to every build for what is a lexer (strings, template
//! literals, comments, regular expressions, bracket depth) and a reader of object literals.
//! The lexer knows where every module-level statement is; the reader then reads the right-hand
//! side of each declaration of a field ([`FIELDS`]) as a literal:
//!
//! - strings (both quotes, escapes), template literals without `${…}`, numbers (`_`
//!   separators, `0x`/`0o`/`0b`, a sign), `true`/`false`/`null`, arrays, objects (unquoted,
//!   quoted and numeric keys, trailing commas);
//! - a module-level `const NAME = literal` declared once before its use, as a value, a
//!   `...NAME` spread in an array or an object, or a `{ NAME }` shorthand (rye's
//!   `enum: [...OPERATIONS]` of `const OPERATIONS = [...] as const`);
//! - `as const`, `as T`, `satisfies T` and a type annotation (`: Record<string, X>`) are
//!   types: skipped.
//!
//! Anything else (a call, a name that is not such a literal, a template with `${…}`, an
//! arithmetic expression, a function) is `NonLiteral` at its own range: the checks report it
//! (T301), and the literal parts around it are still read.

use super::checks::{render_path, Seg};
use super::{FieldEntry, ToolFormat, FIELDS};
use crate::diag::{Code, Diagnostic};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};

mod lexer;
mod reader;

use lexer::*;
use reader::*;

/// The file extensions of JavaScript and TypeScript tools (lowercase, without the dot).
pub const EXTENSIONS: &[&str] = &["js", "mjs", "cjs", "ts"];

/// Whether `ext` (without the dot, any case) is one of [`EXTENSIONS`].
pub fn is_extension(ext: &str) -> bool {
    EXTENSIONS.iter().any(|e| ext.eq_ignore_ascii_case(e))
}

/// A module-level declaration: `[export] const|let|var NAME [: T] = value`.
struct Decl {
    name: String,
    name_range: TextRange,
    constant: bool,
    /// The token index where the value starts (`None`: declared without a value).
    value: Option<usize>,
}

/// What a JS/TS file declares, and the problems found while reading it: T301 for parts of an
/// object that have no place in a [`Value`] (a spread of something that is not a literal, a
/// computed key, a method), and for the lexer's syntax errors when the file declares a field.
pub(crate) fn extract(text: &str) -> (Vec<FieldEntry>, Vec<Diagnostic>) {
    if !FIELDS.iter().any(|f| text.contains(f.python)) {
        return (Vec::new(), Vec::new());
    }
    let (toks, syntax) = Lexer::new(text).run();
    let decls = declarations(text, &toks);
    let mut reader = Reader {
        src: text,
        toks: &toks,
        decls: &decls,
        root: "",
        path: Vec::new(),
        diagnostics: Vec::new(),
        resolving: Vec::new(),
        budget: NAME_BUDGET,
    };
    let mut fields = Vec::new();
    for spec in FIELDS {
        // The last declaration wins (a second `const` is a syntax error node reports).
        let Some(d) = decls.iter().rev().find(|d| d.name == spec.python) else {
            continue;
        };
        reader.root = spec.python;
        reader.path.clear();
        let value = match d.value {
            Some(i) => reader.expression(i, d.name_range.end).0,
            None => Value::new(ValueKind::Null, d.name_range),
        };
        fields.push(FieldEntry {
            field: spec.field,
            key_range: d.name_range,
            value,
        });
    }
    fields.sort_by_key(|f| f.key_range.start);
    let mut diagnostics = reader.diagnostics;
    if !fields.is_empty() {
        diagnostics.extend(syntax);
    }
    (fields, diagnostics)
}

fn declarations(src: &str, toks: &[Tok]) -> Vec<Decl> {
    let text = |t: &Tok| &src[t.start..t.end];
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let statement_start =
            i == 0 || t.newline_before || matches!(toks[i - 1].kind, Kind::Punct(";" | "}"));
        if t.depth != 0 || t.kind != Kind::Ident || !statement_start {
            i += 1;
            continue;
        }
        let mut j = i;
        if text(&toks[j]) == "export" {
            j += 1;
        }
        if toks.get(j).is_some_and(|t| text(t) == "declare") {
            j += 1;
        }
        let Some(keyword) = toks.get(j).filter(|t| t.kind == Kind::Ident).map(text) else {
            i += 1;
            continue;
        };
        if !matches!(keyword, "const" | "let" | "var") {
            i += 1;
            continue;
        }
        let constant = keyword == "const";
        j += 1;
        // One or more declarators: NAME [: T] [= value], separated by `,` at depth 0.
        while let Some(name) = toks.get(j).filter(|t| t.kind == Kind::Ident) {
            j += 1;
            // A type annotation: skipped up to the `=` (or the end of the declarator).
            let mut angle = 0usize;
            while let Some(t) = toks.get(j) {
                match t.kind {
                    Kind::Punct("=") if t.depth == 0 && angle == 0 => break,
                    Kind::Punct("<") => angle += 1,
                    Kind::Punct(">") => angle = angle.saturating_sub(1),
                    Kind::Punct(">>") => angle = angle.saturating_sub(2),
                    Kind::Punct(";" | ",") if t.depth == 0 && angle == 0 => break,
                    // `let x` then a new statement.
                    _ if t.depth == 0
                        && t.newline_before
                        && angle == 0
                        && j > 0
                        && !matches!(toks[j - 1].kind, Kind::Punct(_)) =>
                    {
                        break
                    }
                    _ => {}
                }
                j += 1;
            }
            let value = match toks.get(j) {
                Some(t) if t.kind == Kind::Punct("=") => Some(j + 1),
                _ => None,
            };
            out.push(Decl {
                name: text(name).to_string(),
                name_range: TextRange::new(name.start, name.end),
                constant,
                value,
            });
            let Some(v) = value else { break };
            j = skip_expression(src, toks, v);
            if toks.get(j).is_some_and(|t| t.kind == Kind::Punct(",")) {
                j += 1;
                continue;
            }
            break;
        }
        i = j.max(i + 1);
    }
    out
}

/// The token index just after the expression that starts at `i`: the first `,`, `;` or
/// closing bracket at its depth, or the first token of a new statement at depth 0.
fn skip_expression(src: &str, toks: &[Tok], i: usize) -> usize {
    let Some(first) = toks.get(i) else {
        return i;
    };
    let depth = first.depth;
    // Brackets opened by the expression itself (their closers are at `depth` too).
    let mut nest = 0usize;
    let mut j = i;
    while let Some(t) = toks.get(j) {
        if t.depth < depth {
            return j;
        }
        if t.depth == depth {
            if nest == 0
                && j > i
                && depth == 0
                && t.newline_before
                && starts_statement(src, toks, j)
            {
                return j;
            }
            match t.kind {
                Kind::Punct("(" | "[" | "{") => nest += 1,
                Kind::Punct(")" | "]" | "}") => {
                    if nest == 0 {
                        return j;
                    }
                    nest -= 1;
                }
                Kind::Punct("," | ";") if nest == 0 => return j,
                _ => {}
            }
        }
        j += 1;
    }
    j
}

/// Whether the token at `j` (after a line break) begins a new statement rather than
/// continuing the expression before it.
fn starts_statement(src: &str, toks: &[Tok], j: usize) -> bool {
    let prev = &toks[j - 1];
    // An expression continues after an operator or an opening bracket.
    if let Kind::Punct(p) = prev.kind {
        if !matches!(p, ")" | "]" | "}") {
            return false;
        }
    }
    if matches!(prev.kind, Kind::TemplateHead | Kind::Punct("${")) {
        return false;
    }
    if matches!(toks[j].kind, Kind::TemplateTail) {
        return false;
    }
    let t = &toks[j];
    match &t.kind {
        Kind::Ident => !matches!(
            &src[t.start..t.end],
            "as" | "satisfies" | "instanceof" | "in" | "of"
        ),
        Kind::Punct(p) => matches!(*p, "{" | "@" | ";" | "!" | "~" | "++" | "--"),
        _ => true,
    }
}
