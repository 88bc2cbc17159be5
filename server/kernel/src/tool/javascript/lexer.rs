//! The lexer of JS/TS tool files: tokens (strings, template literals, comments, regular
//! expressions told from division, punctuation, bracket depth) and the value of a number.

use super::*;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
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
pub(super) struct Tok {
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Bracket depth at the token (substitutions of templates count as one level).
    pub(super) depth: usize,
    /// Whether a line break comes between the previous token and this one.
    pub(super) newline_before: bool,
}

pub(super) const PUNCTS: &[&str] = &[
    "...", "===", "!==", "**=", "<<=", ">>=", "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.",
    "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<", ">>", "{", "}", "(",
    ")", "[", "]", ";", ",", "<", ">", "+", "-", "*", "%", "&", "|", "^", "!", "~", "?", ":", "=",
    ".", "@", "#", "/",
];

/// Keywords after which a `/` starts a regular expression, not a division.
pub(super) const BEFORE_REGEX: &[&str] = &[
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

pub(super) struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    at: usize,
    toks: Vec<Tok>,
    errors: Vec<Diagnostic>,
    /// Open brackets: the byte, its offset; `$` for the substitution of a template.
    open: Vec<(u8, usize)>,
    newline: bool,
}

pub(super) fn is_ident_start(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphabetic()
}

pub(super) fn is_ident_char(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphanumeric() || c == '\u{200c}' || c == '\u{200d}'
}

impl<'a> Lexer<'a> {
    pub(super) fn new(src: &'a str) -> Self {
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

    pub(super) fn run(mut self) -> (Vec<Tok>, Vec<Diagnostic>) {
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
pub(super) fn number_value(text: &str) -> Option<ValueKind> {
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
