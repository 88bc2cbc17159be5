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

/// The file extensions of JavaScript and TypeScript tools (lowercase, without the dot).
pub const EXTENSIONS: &[&str] = &["js", "mjs", "cjs", "ts"];

/// Whether `ext` (without the dot, any case) is one of [`EXTENSIONS`].
pub fn is_extension(ext: &str) -> bool {
    EXTENSIONS.iter().any(|e| ext.eq_ignore_ascii_case(e))
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Ident,
    /// A string literal: its value, and whether its source is exactly the value.
    Str(String, bool),
    Num,
    /// A template literal without substitutions (value, verbatim).
    Template(String, bool),
    /// The start of a template literal with substitutions, up to its first `${`.
    TemplateHead,
    /// The rest of such a template, from the `}` that ends its last substitution.
    TemplateTail,
    Regex,
    Punct(&'static str),
}

#[derive(Debug, Clone)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
    /// Bracket depth at the token (substitutions of templates count as one level).
    depth: usize,
    /// Whether a line break comes between the previous token and this one.
    newline_before: bool,
}

const PUNCTS: &[&str] = &[
    "...", "===", "!==", "**=", "<<=", ">>=", "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.",
    "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<", ">>", "{", "}", "(",
    ")", "[", "]", ";", ",", "<", ">", "+", "-", "*", "%", "&", "|", "^", "!", "~", "?", ":", "=",
    ".", "@", "#", "/",
];

/// Keywords after which a `/` starts a regular expression, not a division.
const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    at: usize,
    toks: Vec<Tok>,
    errors: Vec<Diagnostic>,
    /// Open brackets: the byte, its offset; `$` for the substitution of a template.
    open: Vec<(u8, usize)>,
    newline: bool,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphanumeric() || c == '\u{200c}' || c == '\u{200d}'
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            bytes: src.as_bytes(),
            at: 0,
            toks: Vec::new(),
            errors: Vec::new(),
            open: Vec::new(),
            newline: true,
        }
    }

    fn error(&mut self, start: usize, end: usize, msg: &str) {
        self.errors.push(Diagnostic::new(
            Code::T301,
            TextRange::new(start, end.max(start)),
            format!("JavaScript syntax error: {msg}"),
        ));
    }

    fn push(&mut self, kind: Kind, start: usize) {
        let depth = self.open.len();
        self.toks.push(Tok {
            kind,
            start,
            end: self.at,
            depth,
            newline_before: std::mem::take(&mut self.newline),
        });
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.at..].chars().next()
    }

    fn regex_allowed(&self) -> bool {
        match self.toks.last() {
            None => true,
            Some(t) => match &t.kind {
                Kind::Punct(p) => !matches!(*p, ")" | "]" | "}"),
                Kind::Ident => BEFORE_REGEX.contains(&&self.src[t.start..t.end]),
                Kind::TemplateHead => true,
                _ => false,
            },
        }
    }

    fn run(mut self) -> (Vec<Tok>, Vec<Diagnostic>) {
        // A `#!` line is a comment for node.
        if self.src.starts_with("#!") {
            self.at = self.src.find('\n').unwrap_or(self.src.len());
        }
        while let Some(c) = self.peek_char() {
            let start = self.at;
            match c {
                '\n' | '\u{2028}' | '\u{2029}' => {
                    self.newline = true;
                    self.at += c.len_utf8();
                }
                c if c.is_whitespace() || c == '\u{feff}' => self.at += c.len_utf8(),
                '/' if self.src[start..].starts_with("//") => {
                    self.at = self.src[start..]
                        .find('\n')
                        .map_or(self.src.len(), |i| start + i);
                }
                '/' if self.src[start..].starts_with("/*") => {
                    match self.src[start + 2..].find("*/") {
                        Some(i) => {
                            if self.src[start..start + 2 + i].contains('\n') {
                                self.newline = true;
                            }
                            self.at = start + 2 + i + 2;
                        }
                        None => {
                            self.at = self.src.len();
                            self.error(start, start + 2, "this `/*` comment is never closed");
                        }
                    }
                }
                '/' if self.regex_allowed() => self.regex(start),
                '"' | '\'' => self.string(start, c),
                '`' => {
                    self.at += 1;
                    self.template(start, true);
                }
                '}' if self.open.last().is_some_and(|(b, _)| *b == b'$') => {
                    self.open.pop();
                    self.at += 1;
                    self.template(start, false);
                }
                c if c.is_ascii_digit()
                    || (c == '.' && self.bytes.get(start + 1).is_some_and(u8::is_ascii_digit)) =>
                {
                    self.number(start)
                }
                c if is_ident_start(c) || c == '\\' => {
                    self.at += c.len_utf8();
                    while let Some(c) = self.peek_char() {
                        if !is_ident_char(c) && c != '\\' {
                            break;
                        }
                        self.at += c.len_utf8();
                    }
                    self.push(Kind::Ident, start);
                }
                _ => {
                    let rest = &self.src[start..];
                    let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) else {
                        self.at += c.len_utf8();
                        self.error(start, self.at, &format!("unexpected character {c:?}"));
                        continue;
                    };
                    match *p {
                        "(" | "[" | "{" => {
                            self.push(Kind::Punct(p), start);
                            self.at += 1;
                            self.toks.last_mut().expect("pushed").end = self.at;
                            self.open.push((p.as_bytes()[0], start));
                            continue;
                        }
                        ")" | "]" | "}" => {
                            let want = match *p {
                                ")" => b'(',
                                "]" => b'[',
                                _ => b'{',
                            };
                            match self.open.last() {
                                Some((b, _)) if *b == want => {
                                    self.open.pop();
                                }
                                _ => {
                                    self.error(
                                        start,
                                        start + 1,
                                        &format!("this `{p}` closes nothing that is open"),
                                    );
                                }
                            }
                        }
                        _ => {}
                    }
                    self.at += p.len();
                    self.push(Kind::Punct(p), start);
                }
            }
        }
        while let Some((b, at)) = self.open.pop() {
            let what = match b {
                b'$' => "this template literal's `${` is never closed".to_string(),
                b => format!("this `{}` is never closed", b as char),
            };
            self.error(at, at + 1, &what);
        }
        (self.toks, self.errors)
    }

    /// A string literal: its value, or an error when a line ends before its quote.
    fn string(&mut self, start: usize, quote: char) {
        self.at += 1;
        let mut value = String::new();
        let mut verbatim = true;
        loop {
            let Some(c) = self.peek_char() else {
                self.error(start, self.at, "this string is never closed");
                break;
            };
            if c == quote {
                self.at += 1;
                break;
            }
            if c == '\n' || c == '\r' {
                self.error(start, self.at, "this string is never closed on its line");
                break;
            }
            if c == '\\' {
                verbatim = false;
                self.at += 1;
                self.escape(&mut value);
                continue;
            }
            value.push(c);
            self.at += c.len_utf8();
        }
        self.push(Kind::Str(value, verbatim), start);
    }

    /// The escape after a `\` (already consumed), appended to `value`.
    fn escape(&mut self, value: &mut String) {
        let Some(c) = self.peek_char() else { return };
        self.at += c.len_utf8();
        let hex = |s: &str| u32::from_str_radix(s, 16).ok().and_then(char::from_u32);
        match c {
            'n' => value.push('\n'),
            't' => value.push('\t'),
            'r' => value.push('\r'),
            'b' => value.push('\u{8}'),
            'f' => value.push('\u{c}'),
            'v' => value.push('\u{b}'),
            '0' if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) => value.push('\0'),
            '\r' => {
                if self.bytes.get(self.at) == Some(&b'\n') {
                    self.at += 1;
                }
            }
            '\n' | '\u{2028}' | '\u{2029}' => {}
            'x' => {
                let digits = self.src.get(self.at..self.at + 2).unwrap_or("");
                match hex(digits) {
                    Some(ch) => {
                        value.push(ch);
                        self.at += 2;
                    }
                    None => value.push('x'),
                }
            }
            'u' => {
                let rest = &self.src[self.at..];
                if let Some(body) = rest.strip_prefix('{') {
                    if let Some(close) = body.find('}') {
                        if let Some(ch) = hex(&body[..close]) {
                            value.push(ch);
                            self.at += close + 2;
                            return;
                        }
                    }
                } else if let Some(ch) = rest.get(..4).and_then(hex) {
                    value.push(ch);
                    self.at += 4;
                    return;
                }
                value.push('u');
            }
            c => value.push(c),
        }
    }

    /// A template literal from after its backquote (`first`) or after the `}` of a
    /// substitution, to its closing backquote or its next `${`.
    fn template(&mut self, start: usize, first: bool) {
        let mut value = String::new();
        let mut verbatim = true;
        loop {
            let Some(c) = self.peek_char() else {
                self.error(start, start + 1, "this template literal is never closed");
                let kind = if first {
                    Kind::Template(value, verbatim)
                } else {
                    Kind::TemplateTail
                };
                self.push(kind, start);
                return;
            };
            match c {
                '`' => {
                    self.at += 1;
                    let kind = if first {
                        Kind::Template(value, verbatim)
                    } else {
                        Kind::TemplateTail
                    };
                    self.push(kind, start);
                    return;
                }
                '$' if self.src[self.at..].starts_with("${") => {
                    self.at += 2;
                    let kind = if first {
                        Kind::TemplateHead
                    } else {
                        // The middle of a template: nothing to read in it.
                        Kind::Punct("${")
                    };
                    self.push(kind, start);
                    self.open.push((b'$', self.at - 2));
                    return;
                }
                '\\' => {
                    verbatim = false;
                    self.at += 1;
                    self.escape(&mut value);
                }
                '\r' => {
                    // Template literals read CRLF and CR as LF.
                    verbatim = false;
                    self.at += 1;
                    if self.bytes.get(self.at) == Some(&b'\n') {
                        self.at += 1;
                    }
                    value.push('\n');
                }
                c => {
                    value.push(c);
                    self.at += c.len_utf8();
                }
            }
        }
    }

    fn regex(&mut self, start: usize) {
        self.at += 1;
        let mut class = false;
        loop {
            let Some(c) = self.peek_char() else {
                self.error(start, start + 1, "this regular expression is never closed");
                break;
            };
            if c == '\n' || c == '\r' {
                self.error(
                    start,
                    self.at,
                    "this regular expression is never closed on its line",
                );
                break;
            }
            self.at += c.len_utf8();
            match c {
                '\\' => {
                    if let Some(n) = self.peek_char() {
                        if n != '\n' {
                            self.at += n.len_utf8();
                        }
                    }
                }
                '[' => class = true,
                ']' => class = false,
                '/' if !class => {
                    while let Some(flag) = self.peek_char().filter(|c| is_ident_char(*c)) {
                        self.at += flag.len_utf8();
                    }
                    break;
                }
                _ => {}
            }
        }
        self.push(Kind::Regex, start);
    }

    fn number(&mut self, start: usize) {
        while let Some(c) = self.peek_char() {
            let exponent_sign = (c == '+' || c == '-')
                && matches!(self.bytes.get(self.at - 1), Some(b'e' | b'E'))
                && !self.src[start..].starts_with("0x")
                && !self.src[start..].starts_with("0X");
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || exponent_sign {
                self.at += 1;
            } else {
                break;
            }
        }
        self.push(Kind::Num, start);
    }
}

/// The number a numeric literal's text means (`None`: a BigInt or a malformed number).
fn number_value(text: &str) -> Option<ValueKind> {
    let t: String = text.chars().filter(|c| *c != '_').collect();
    if t.ends_with('n') {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = lower.strip_prefix(prefix) {
            return i64::from_str_radix(digits, radix)
                .ok()
                .map(ValueKind::Int)
                .or_else(|| {
                    u128::from_str_radix(digits, radix)
                        .ok()
                        .map(|v| ValueKind::Float(v as f64))
                });
        }
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        // A legacy octal (`010`) is a syntax error in modules: read as written.
        return Some(match t.parse::<i64>() {
            Ok(i) => ValueKind::Int(i),
            Err(_) => ValueKind::Float(t.parse::<f64>().ok()?),
        });
    }
    let f: f64 = t.parse().ok()?;
    Some(ValueKind::Float(f))
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

struct Reader<'a> {
    src: &'a str,
    toks: &'a [Tok],
    decls: &'a [Decl],
    /// The variable being read.
    root: &'static str,
    path: Vec<Seg>,
    diagnostics: Vec<Diagnostic>,
    /// The names being resolved (a name bound to itself is not read forever).
    resolving: Vec<String>,
    /// How many more names may be read: names that spread names that spread names... would
    /// otherwise grow a value exponentially.
    budget: usize,
}

/// How many names a file's metadata may read, in all.
const NAME_BUDGET: usize = 2_000;

/// How many names deep a value may be read (a name bound to a name bound to ...).
const MAX_NAMES_DEEP: usize = 16;

const MAX_DEPTH: usize = 200;

impl Reader<'_> {
    fn text(&self, t: &Tok) -> &str {
        &self.src[t.start..t.end]
    }

    fn range(&self, from: usize, to: usize) -> TextRange {
        let start = self.toks.get(from).map_or(self.src.len(), |t| t.start);
        let end = to
            .checked_sub(1)
            .and_then(|k| self.toks.get(k))
            .map_or(start, |t| t.end)
            .max(start);
        TextRange::new(start, end)
    }

    /// A whole expression starting at token `i` (a literal, maybe followed by `as T` or
    /// `satisfies T`); returns it and the index after it. `fallback` is where to point when
    /// the expression is empty.
    fn expression(&mut self, i: usize, fallback: usize) -> (Value, usize) {
        let end = skip_expression(self.src, self.toks, i);
        if i >= end {
            let at = self.toks.get(i).map_or(fallback, |t| t.start);
            return (
                Value::new(
                    ValueKind::NonLiteral("nothing (a value is missing)".into()),
                    TextRange::new(fallback.min(at), at),
                ),
                end,
            );
        }
        if self.path.len() > MAX_DEPTH {
            return (self.non_literal(i, end, "a value nested too deeply"), end);
        }
        let (value, next) = self.primary(i, end);
        // Type assertions after the literal are only types.
        let mut k = next;
        let mut asserted = false;
        while k < end {
            let t = &self.toks[k];
            let word = self.text(t);
            if t.kind == Kind::Ident && (word == "as" || word == "satisfies") {
                asserted = true;
                k = end;
            } else if t.kind == Kind::Punct("!") && !asserted {
                k += 1;
            } else {
                break;
            }
        }
        if k < end {
            let what = self.describe(i, end);
            return (self.non_literal(i, end, &what), end);
        }
        (value, end)
    }

    fn non_literal(&self, from: usize, to: usize, what: &str) -> Value {
        Value::new(
            ValueKind::NonLiteral(what.to_string()),
            self.range(from, to),
        )
    }

    /// The literal at `i` (not past `end`); returns it and the index after it.
    fn primary(&mut self, i: usize, end: usize) -> (Value, usize) {
        let t = &self.toks[i];
        let range = TextRange::new(t.start, t.end);
        match &t.kind {
            Kind::Str(v, verbatim) | Kind::Template(v, verbatim) => {
                // Between the quotes (an unterminated string has no closing one).
                let inner_start = (t.start + 1).min(t.end);
                let b = self.src.as_bytes();
                // Quotes are ASCII: comparing bytes never splits a character.
                let closed = t.end - t.start >= 2 && b[t.end - 1] == b[t.start];
                let inner_end = if closed { t.end - 1 } else { t.end };
                let content = TextRange::new(inner_start, inner_end.max(inner_start));
                let verbatim = *verbatim && closed;
                (
                    Value::new(
                        ValueKind::Str(Str {
                            value: v.clone(),
                            content,
                            verbatim,
                        }),
                        range,
                    ),
                    i + 1,
                )
            }
            Kind::Num => match number_value(self.text(t)) {
                Some(kind) => (Value::new(kind, range), i + 1),
                None => (
                    self.non_literal(i, i + 1, "a BigInt or malformed number"),
                    i + 1,
                ),
            },
            Kind::Punct(sign @ ("-" | "+"))
                if self.toks.get(i + 1).is_some_and(|n| n.kind == Kind::Num) && i + 1 < end =>
            {
                let n = &self.toks[i + 1];
                let range = TextRange::new(t.start, n.end);
                match number_value(self.text(n)) {
                    Some(ValueKind::Int(v)) if *sign == "-" => {
                        (Value::new(ValueKind::Int(-v), range), i + 2)
                    }
                    Some(ValueKind::Float(v)) if *sign == "-" => {
                        (Value::new(ValueKind::Float(-v), range), i + 2)
                    }
                    Some(kind) => (Value::new(kind, range), i + 2),
                    None => (
                        self.non_literal(i, i + 2, "a BigInt or malformed number"),
                        i + 2,
                    ),
                }
            }
            Kind::Punct("{") => self.object(i),
            Kind::Punct("[") => self.array(i),
            Kind::Punct("(") => {
                let close = self.closing(i);
                // `(literal)`: the literal.
                let (inner, after) = self.expression(i + 1, t.end);
                if after == close && close < end {
                    (inner, close + 1)
                } else {
                    let what = self.describe(i, end);
                    (self.non_literal(i, end, &what), end)
                }
            }
            Kind::Ident => {
                let word = self.text(t).to_string();
                let next_is_call_or_member = self.toks.get(i + 1).is_some_and(|n| {
                    i + 1 < end && matches!(n.kind, Kind::Punct("(" | "." | "?." | "[" | "=>"))
                });
                if next_is_call_or_member {
                    let what = self.describe(i, end);
                    return (self.non_literal(i, end, &what), end);
                }
                match word.as_str() {
                    "true" => (Value::new(ValueKind::Bool(true), range), i + 1),
                    "false" => (Value::new(ValueKind::Bool(false), range), i + 1),
                    "null" => (Value::new(ValueKind::Null, range), i + 1),
                    "undefined" => (self.non_literal(i, i + 1, "`undefined`"), i + 1),
                    "function" | "async" | "class" | "new" | "await" | "typeof" => {
                        let what = self.describe(i, end);
                        (self.non_literal(i, end, &what), end)
                    }
                    _ => (self.name(&word, i), i + 1),
                }
            }
            _ => {
                let what = self.describe(i, end);
                (self.non_literal(i, end, &what), end)
            }
        }
    }

    /// The index of the bracket that closes the one at `i`.
    fn closing(&self, i: usize) -> usize {
        let depth = self.toks[i].depth;
        let mut j = i + 1;
        while let Some(t) = self.toks.get(j) {
            if t.depth == depth && matches!(t.kind, Kind::Punct(")" | "]" | "}")) {
                return j;
            }
            if t.depth < depth {
                return j;
            }
            j += 1;
        }
        j
    }

    /// A module-level `const NAME = literal`, declared once before its use (at token `at`),
    /// as its literal; anything else a `NonLiteral` saying why.
    fn name(&mut self, name: &str, at: usize) -> Value {
        let use_at = self.toks[at].start;
        let range = TextRange::new(use_at, self.toks[at].end);
        let mut found = self.decls.iter().filter(|d| d.name == name);
        let decl = match (found.next(), found.next()) {
            (Some(d), None) if d.constant && d.name_range.end <= use_at && d.value.is_some() => d,
            (None, _) => {
                return Value::new(
                    ValueKind::NonLiteral(format!(
                        "a name (`{name}`) that is not a module-level constant"
                    )),
                    range,
                )
            }
            _ => {
                return Value::new(
                    ValueKind::NonLiteral(format!(
                        "a name (`{name}`) that is not declared once, before this use, by a module-level `const {name} = literal`"
                    )),
                    range,
                )
            }
        };
        if self.budget == 0 {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "a name (`{name}`) past the {NAME_BUDGET} names kiwi reads in one file"
                )),
                range,
            );
        }
        self.budget -= 1;
        if self.resolving.iter().any(|n| n == name) {
            return Value::new(
                ValueKind::NonLiteral(format!("a name (`{name}`) defined by itself")),
                range,
            );
        }
        if self.resolving.len() >= MAX_NAMES_DEEP {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "a name (`{name}`) reached through more than {MAX_NAMES_DEEP} names"
                )),
                range,
            );
        }
        self.resolving.push(name.to_string());
        // Diagnostics belong to where the name is used: reading the declaration reports none.
        let saved = std::mem::take(&mut self.diagnostics);
        let (value, _) = self.expression(decl.value.unwrap_or(0), decl.name_range.end);
        self.diagnostics = saved;
        self.resolving.pop();
        match value.kind {
            ValueKind::NonLiteral(what) => Value::new(
                ValueKind::NonLiteral(format!("a name (`{name}`) bound to {what}")),
                range,
            ),
            kind if has_non_literal(&Value::new(kind.clone(), range)) => {
                let what = first_non_literal(&Value::new(kind, range)).unwrap_or_default();
                // One level of detail: names of names say no more.
                let msg = if what.contains("a name (") {
                    format!("a name (`{name}`) bound to a value that is not entirely literal")
                } else {
                    format!("a name (`{name}`) bound to a value holding {what}")
                };
                Value::new(ValueKind::NonLiteral(msg), range)
            }
            kind => Value::new(kind, range),
        }
    }

    fn array(&mut self, open: usize) -> (Value, usize) {
        let close = self.closing(open);
        let mut items = Vec::new();
        let mut j = open + 1;
        while j < close {
            let t = &self.toks[j];
            if t.kind == Kind::Punct(",") {
                // A hole: `[a, , b]`.
                items.push(self.non_literal(j, j + 1, "an empty array slot"));
                j += 1;
                continue;
            }
            self.path.push(Seg::Index(items.len()));
            if t.kind == Kind::Punct("...") {
                let (spread, next) = self.expression(j + 1, t.end);
                match spread.kind {
                    ValueKind::List(more) => items.extend(more),
                    ValueKind::NonLiteral(what) => items.push(Value::new(
                        ValueKind::NonLiteral(format!("a spread (`...`) of {what}")),
                        self.range(j, next),
                    )),
                    _ => items.push(Value::new(
                        ValueKind::NonLiteral(format!(
                            "a spread (`...`) of {}, not of an array",
                            spread.type_name()
                        )),
                        self.range(j, next),
                    )),
                }
                j = next;
            } else {
                let (v, next) = self.expression(j, t.start);
                items.push(v);
                // A token that ends nothing it opened (`[ ) ]`): step over it.
                j = next.max(j + 1);
            }
            self.path.pop();
            if j < close && self.toks[j].kind == Kind::Punct(",") {
                j += 1;
            }
        }
        let range = self.range(open, close + 1);
        (Value::new(ValueKind::List(items), range), close + 1)
    }

    fn object(&mut self, open: usize) -> (Value, usize) {
        let close = self.closing(open);
        let mut entries: Vec<Entry> = Vec::new();
        let mut j = open + 1;
        while j < close {
            let t = &self.toks[j];
            let part_end = skip_expression(self.src, self.toks, j).min(close);
            let part_end = if part_end == j { j + 1 } else { part_end };
            if t.kind == Kind::Punct("...") {
                let (spread, _) = self.expression(j + 1, t.end);
                match spread.kind {
                    ValueKind::Map(more) => {
                        for e in more {
                            entries.retain(|x| x.key != e.key);
                            entries.push(e);
                        }
                    }
                    ValueKind::NonLiteral(what) => {
                        self.report(j, part_end, &format!("a spread (`...`) of {what}"))
                    }
                    _ => self.report(
                        j,
                        part_end,
                        &format!("a spread (`...`) of {}", spread.type_name()),
                    ),
                }
            } else {
                let key = match &t.kind {
                    Kind::Ident => Some(self.text(t).to_string()),
                    Kind::Str(v, _) => Some(v.clone()),
                    Kind::Num => number_value(self.text(t)).map(|k| match k {
                        ValueKind::Int(i) => i.to_string(),
                        ValueKind::Float(f) => f.to_string(),
                        _ => String::new(),
                    }),
                    _ => None,
                };
                let colon = self
                    .toks
                    .get(j + 1)
                    .is_some_and(|n| n.kind == Kind::Punct(":"));
                let shorthand = t.kind == Kind::Ident
                    && j + 1 == part_end
                    && !matches!(self.text(t), "get" | "set" | "async");
                match key {
                    Some(key) if colon || shorthand => {
                        let key_range = TextRange::new(t.start, t.end);
                        self.path.push(Seg::Key(key.clone()));
                        let value = if colon {
                            self.expression(j + 2, self.toks[j + 1].end).0
                        } else {
                            // `{ name }` is `{ name: name }`.
                            self.name(&key, j)
                        };
                        self.path.pop();
                        // JavaScript keeps the last value of a key, at the first key's place.
                        entries.retain(|e| e.key != key);
                        entries.push(Entry {
                            key,
                            key_range,
                            value,
                        });
                    }
                    _ if t.kind == Kind::Punct("[") => {
                        let what = format!("a computed key (`{}`)", self.snippet(j, part_end));
                        self.report(j, part_end, &what);
                    }
                    _ => {
                        let what = self.describe(j, part_end);
                        self.report(j, part_end, &what);
                    }
                }
            }
            j = part_end;
            if j < close && self.toks[j].kind == Kind::Punct(",") {
                j += 1;
            }
        }
        let range = self.range(open, close + 1);
        (Value::new(ValueKind::Map(entries), range), close + 1)
    }

    /// T301 for a part of an object that is not a `key: literal` pair.
    fn report(&mut self, from: usize, to: usize, what: &str) {
        let path = render_path(ToolFormat::Javascript, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            self.range(from, to),
            format!(
                "{path} holds {what}; kiwi reads metadata statically, so every entry must be a literal `key: value`"
            ),
        ));
    }

    fn snippet(&self, from: usize, to: usize) -> String {
        let r = self.range(from, to);
        let text = self.src[r.start..r.end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.chars().count() > 40 {
            let cut: String = text.chars().take(40).collect();
            format!("{cut}…")
        } else {
            text
        }
    }

    /// What the expression between `from` and `to` is, for a message.
    fn describe(&self, from: usize, to: usize) -> String {
        let snippet = self.snippet(from, to);
        let first = &self.toks[from];
        let word = self.text(first);
        let has = |p: &'static str| {
            self.toks[from..to.min(self.toks.len())]
                .iter()
                .any(|t| t.depth == first.depth && t.kind == Kind::Punct(p))
        };
        let what = if matches!(first.kind, Kind::TemplateHead) {
            "a template literal with `${…}`"
        } else if word == "function" || word == "async" || has("=>") {
            "a function"
        } else if word == "class" {
            "a class"
        } else if word == "new" {
            "a constructor call"
        } else if matches!(first.kind, Kind::Regex) {
            "a regular expression"
        } else if first.kind == Kind::Ident
            && self
                .toks
                .get(from + 1)
                .is_some_and(|t| matches!(t.kind, Kind::Punct("(")))
        {
            "a function call"
        } else if first.kind == Kind::Ident
            && self
                .toks
                .get(from + 1)
                .is_some_and(|t| matches!(t.kind, Kind::Punct("." | "?." | "[")))
        {
            if self.toks[from..to.min(self.toks.len())]
                .iter()
                .any(|t| t.kind == Kind::Punct("("))
            {
                "a function call"
            } else {
                "an expression"
            }
        } else {
            "an expression"
        };
        format!("{what} (`{snippet}`)")
    }
}

/// What the first part of `v` that is not a literal is.
fn first_non_literal(v: &Value) -> Option<String> {
    match &v.kind {
        ValueKind::NonLiteral(what) => Some(what.clone()),
        ValueKind::List(items) => items.iter().find_map(first_non_literal),
        ValueKind::Map(entries) => entries.iter().find_map(|e| first_non_literal(&e.value)),
        _ => None,
    }
}

fn has_non_literal(v: &Value) -> bool {
    match &v.kind {
        ValueKind::NonLiteral(_) => true,
        ValueKind::List(items) => items.iter().any(has_non_literal),
        ValueKind::Map(entries) => entries.iter().any(|e| has_non_literal(&e.value)),
        _ => false,
    }
}
