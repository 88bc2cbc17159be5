//! A quick recognizer of plain Python, so that most tools need no whole-file tree-sitter parse
//! for syntax errors (T301, issue 12 point 18).
//!
//! tree-sitter reads a Python tool at some 12 µs per KB; the metadata reader reads only the
//! module-level statements, so the whole-file parse for syntax errors made `kiwi check` of
//! 10,000 items two thirds slower. This module answers one question in a few microseconds:
//! "is this file certainly free of syntax errors?". It tokenizes the file (indentation,
//! brackets, strings and f-strings, numbers, operators) and runs a recursive-descent
//! recognizer of a subset of Python's grammar: statements, expressions, comprehensions,
//! calls, lambdas, decorators, `def`/`class`, `if`/`for`/`while`/`try`/`with`.
//!
//! It only ever says "sure" or "don't know": anything it does not recognise (a syntax
//! error, but also `match`, `async`, the walrus, a tab in an indentation, a CR, a non-ASCII
//! name, an f-string with quotes in its expressions...) is "don't know", and the file is
//! parsed whole by tree-sitter as before. So a file it accepts is valid Python, and T301 is
//! lost on no file CPython refuses: `tool::tests::quick_syntax_recognizer_agrees_with_tree_sitter`
//! checks that on every Python file of the repository and the corpus, a part of the standard
//! library and some 20,000 broken variants of them (cut or extended at spread positions):
//! where the two disagree, CPython compiles the file (valid Python that tree-sitter-python
//! cannot read, e.g. a dict value on its own less-indented line: a T301 false alarm gone).

/// `true` when `text` is certainly valid Python (no syntax error tree-sitter would report);
/// `false` when unsure.
pub(crate) fn surely_valid(text: &str) -> bool {
    let Some(tokens) = tokenize(text, false) else {
        return false;
    };
    let mut p = Parser { t: &tokens, i: 0 };
    p.file().is_some()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Name(&'a str),
    Number,
    Str,
    Op(&'a str),
    Newline,
    Indent,
    Dedent,
    End,
}

/// Deepest indentation followed (far below Python's 100 and tree-sitter's scanner limit).
const MAX_INDENT: usize = 50;
/// Deepest bracket nesting and f-string recursion followed.
const MAX_NESTING: usize = 64;

const OPS3: [&str; 5] = ["**=", "//=", ">>=", "<<=", "..."];
const OPS2: [&str; 18] = [
    "->", "**", "//", ">>", "<<", "<=", ">=", "==", "!=", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
    "^=", "@=",
];
const OPS1: &[u8] = b"+-*/%@&|^~<>()[]{},:.;=";

/// The tokens of `text` (`expr`: an f-string's expression, a single logical line), or `None`
/// when unsure.
fn tokenize(text: &str, expr: bool) -> Option<Vec<Tok<'_>>> {
    let b = text.as_bytes();
    if b.iter().any(|c| matches!(c, b'\r' | 0 | 0x0c)) || text.starts_with('\u{feff}') {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 3);
    let mut indents: Vec<usize> = vec![0];
    let mut brackets: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut line_start = !expr;
    while i < b.len() {
        if line_start {
            // Measure the indentation; skip blank and comment-only lines.
            let mut w = 0;
            while i < b.len() && b[i] == b' ' {
                w += 1;
                i += 1;
            }
            match b.get(i) {
                None => break,
                Some(b'\n') => {
                    i += 1;
                    continue;
                }
                Some(b'#') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                Some(b'\t') | Some(b'\\') => return None,
                _ => {}
            }
            let top = *indents.last()?;
            if w > top {
                if indents.len() > MAX_INDENT {
                    return None;
                }
                indents.push(w);
                out.push(Tok::Indent);
            } else {
                while w < *indents.last()? {
                    indents.pop();
                    out.push(Tok::Dedent);
                }
                if w != *indents.last()? {
                    return None;
                }
            }
            line_start = false;
        }
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'#' => {
                if expr {
                    return None;
                }
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\\' => {
                // A continuation: a backslash right before the line break.
                if expr || b.get(i + 1) != Some(&b'\n') {
                    return None;
                }
                i += 2;
                if i >= b.len() {
                    return None;
                }
            }
            b'\n' => {
                if expr {
                    return None;
                }
                i += 1;
                if brackets.is_empty() {
                    out.push(Tok::Newline);
                    line_start = true;
                }
            }
            b'0'..=b'9' => {
                i = number(b, i)?;
                out.push(Tok::Number);
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number(b, i)?;
                out.push(Tok::Number);
            }
            b'\'' | b'"' => {
                i = string(text, i, i, expr)?;
                out.push(Tok::Str);
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if matches!(b.get(i), Some(b'\'' | b'"')) {
                    let prefix = text[start..i].to_ascii_lowercase();
                    if !matches!(
                        prefix.as_str(),
                        "r" | "u" | "b" | "f" | "br" | "rb" | "fr" | "rf"
                    ) {
                        return None;
                    }
                    i = string(text, start, i, expr)?;
                    out.push(Tok::Str);
                } else {
                    out.push(Tok::Name(&text[start..i]));
                }
                continue;
            }
            c if c >= 0x80 => return None,
            _ => {
                let op = OPS3
                    .iter()
                    .chain(OPS2.iter())
                    .find(|o| b[i..].starts_with(o.as_bytes()))
                    .copied();
                let op = match op {
                    Some(o) => o,
                    None if OPS1.contains(&c) => &text[i..i + 1],
                    None => return None,
                };
                match c {
                    b'(' | b'[' | b'{' => {
                        if brackets.len() >= MAX_NESTING {
                            return None;
                        }
                        brackets.push(c);
                    }
                    b')' | b']' | b'}' => {
                        let open = brackets.pop()?;
                        if !matches!((open, c), (b'(', b')') | (b'[', b']') | (b'{', b'}')) {
                            return None;
                        }
                    }
                    _ => {}
                }
                out.push(Tok::Op(op));
                i += op.len();
            }
        }
    }
    if !brackets.is_empty() {
        return None;
    }
    if !expr {
        if !matches!(out.last(), None | Some(Tok::Newline) | Some(Tok::Dedent)) {
            out.push(Tok::Newline);
        }
        for _ in 1..indents.len() {
            out.push(Tok::Dedent);
        }
    }
    out.push(Tok::End);
    Some(out)
}

/// Past the number starting at `i`, or `None` when it is not one of the plain forms
/// (decimal, hex, octal, binary integers; floats with an exponent; imaginary): underscores
/// and anything unusual are left to tree-sitter.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
        // An exponent's sign belongs to the number.
        if matches!(b[i], b'e' | b'E')
            && matches!(b.get(i + 1), Some(b'+' | b'-'))
            && !b[start..i].iter().any(|c| matches!(c, b'x' | b'X'))
        {
            i += 1;
        }
        i += 1;
    }
    let s = std::str::from_utf8(&b[start..i]).ok()?;
    let digits = |d: &str, radix: u32| !d.is_empty() && d.chars().all(|c| c.is_digit(radix));
    let lower = s.to_ascii_lowercase();
    let ok = if let Some(d) = lower.strip_prefix("0x") {
        digits(d, 16)
    } else if let Some(d) = lower.strip_prefix("0o") {
        digits(d, 8)
    } else if let Some(d) = lower.strip_prefix("0b") {
        digits(d, 2)
    } else {
        let body = lower.strip_suffix('j').unwrap_or(&lower);
        let (mantissa, exponent) = match body.split_once('e') {
            Some((m, e)) => (m, Some(e)),
            None => (body, None),
        };
        let exp_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10));
        let man_ok = match mantissa.split_once('.') {
            Some((a, f)) => {
                (a.is_empty() || digits(a, 10))
                    && (f.is_empty() || digits(f, 10))
                    && !(a.is_empty() && f.is_empty())
            }
            // An integer: no leading zero unless it is all zeros (`007` is an error).
            None => {
                digits(mantissa, 10)
                    && (exponent.is_some()
                        || body != lower
                        || !mantissa.starts_with('0')
                        || mantissa.bytes().all(|c| c == b'0'))
            }
        };
        exp_ok && man_ok
    };
    ok.then_some(i)
}

/// Past the string literal whose prefix starts at `start` and whose opening quote is at `q`;
/// an f-string's replacement fields are checked as expressions. `None` when unsure
/// (unterminated, or an f-string this recognizer does not follow).
fn string(text: &str, start: usize, q: usize, in_expr: bool) -> Option<usize> {
    let b = text.as_bytes();
    let quote = b[q];
    let triple = b.get(q + 1) == Some(&quote) && b.get(q + 2) == Some(&quote);
    let open = if triple { 3 } else { 1 };
    let prefix = text[start..q].to_ascii_lowercase();
    let mut i = q + open;
    let body_start = i;
    let body_end;
    loop {
        let c = *b.get(i)?;
        match c {
            b'\\' => {
                if in_expr {
                    return None;
                }
                i += 2;
            }
            b'\n' if !triple => return None,
            c if c == quote => {
                if !triple {
                    body_end = i;
                    i += 1;
                    break;
                }
                if b.get(i + 1) == Some(&quote) && b.get(i + 2) == Some(&quote) {
                    body_end = i;
                    i += 3;
                    break;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if prefix.contains('f') {
        fstring_body(text.get(body_start..body_end)?)?;
    }
    Some(i)
}

/// The literal parts and replacement fields of an f-string's body: `{expression[=][!c][:spec]}`
/// with a quote-free, backslash-free, one-line expression and a spec without nested fields.
fn fstring_body(body: &str) -> Option<()> {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if b.get(i + 1) == Some(&b'}') => i += 2,
            b'}' => return None,
            b'{' => {
                let start = i + 1;
                let mut j = start;
                let mut depth = 0usize;
                loop {
                    let c = *b.get(j)?;
                    match c {
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' | b'}' if depth > 0 => depth -= 1,
                        b'}' => break,
                        b'!' if depth == 0 && b.get(j + 1) != Some(&b'=') => break,
                        b':' if depth == 0 => break,
                        b'=' if depth == 0
                            && b.get(j + 1) != Some(&b'=')
                            && !matches!(
                                b.get(j.wrapping_sub(1)),
                                Some(b'=' | b'!' | b'<' | b'>')
                            ) =>
                        {
                            break
                        }
                        b'\'' | b'"' | b'\\' | b'#' | b'\n' => return None,
                        _ => {}
                    }
                    j += 1;
                }
                expression(&body[start..j])?;
                if b[j] == b'=' {
                    j += 1;
                }
                if b.get(j) == Some(&b'!') {
                    if !matches!(b.get(j + 1), Some(b'r' | b's' | b'a')) {
                        return None;
                    }
                    j += 2;
                }
                if b.get(j) == Some(&b':') {
                    while *b.get(j)? != b'}' {
                        if matches!(b[j], b'{' | b'\\' | b'\n' | b'\'' | b'"') {
                            return None;
                        }
                        j += 1;
                    }
                }
                if b.get(j) != Some(&b'}') {
                    return None;
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    Some(())
}

/// An f-string's replacement field expression (a star-expression list).
fn expression(text: &str) -> Option<()> {
    let tokens = tokenize(text, true)?;
    let mut p = Parser { t: &tokens, i: 0 };
    p.star_exprs()?;
    (p.peek() == Tok::End).then_some(())
}

/// What an expression is, for the checks of assignment targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Name,
    Attr,
    Sub,
    /// A tuple or list display, with whether every element is a target.
    Seq(bool),
    /// `*target` (`true`) or `*expression`.
    Star(bool),
    Other,
}

fn is_target(k: Kind) -> bool {
    matches!(
        k,
        Kind::Name | Kind::Attr | Kind::Sub | Kind::Seq(true) | Kind::Star(true)
    )
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

struct Parser<'t, 'a> {
    t: &'t [Tok<'a>],
    i: usize,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Tok<'a> {
        self.t.get(self.i).copied().unwrap_or(Tok::End)
    }
    fn peek2(&self) -> Tok<'a> {
        self.t.get(self.i + 1).copied().unwrap_or(Tok::End)
    }
    fn bump(&mut self) {
        self.i += 1;
    }
    fn is_op(&self, op: &str) -> bool {
        self.peek() == Tok::Op(op)
    }
    fn is_kw(&self, kw: &str) -> bool {
        self.peek() == Tok::Name(kw)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        let yes = self.is_op(op);
        if yes {
            self.bump();
        }
        yes
    }
    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.bump();
        }
        yes
    }
    fn op(&mut self, op: &str) -> Option<()> {
        self.eat_op(op).then_some(())
    }
    fn kw(&mut self, kw: &str) -> Option<()> {
        self.eat_kw(kw).then_some(())
    }
    /// An identifier (not a keyword).
    fn ident(&mut self) -> Option<()> {
        match self.peek() {
            Tok::Name(n) if !KEYWORDS.contains(&n) => {
                self.bump();
                Some(())
            }
            _ => None,
        }
    }

    fn file(&mut self) -> Option<()> {
        while self.peek() != Tok::End {
            self.statement()?;
        }
        Some(())
    }

    fn statement(&mut self) -> Option<()> {
        match self.peek() {
            Tok::Name("if") => {
                self.bump();
                self.test()?;
                self.op(":")?;
                self.suite()?;
                while self.eat_kw("elif") {
                    self.test()?;
                    self.op(":")?;
                    self.suite()?;
                }
                self.else_clause()
            }
            Tok::Name("while") => {
                self.bump();
                self.test()?;
                self.op(":")?;
                self.suite()?;
                self.else_clause()
            }
            Tok::Name("for") => {
                self.bump();
                self.targets()?;
                self.kw("in")?;
                self.star_exprs()?;
                self.op(":")?;
                self.suite()?;
                self.else_clause()
            }
            Tok::Name("try") => {
                self.bump();
                self.op(":")?;
                self.suite()?;
                let mut handlers = 0;
                while self.eat_kw("except") {
                    handlers += 1;
                    if !self.is_op(":") {
                        if self.is_op("*") {
                            return None;
                        }
                        self.test()?;
                        if self.eat_kw("as") {
                            self.ident()?;
                        }
                    }
                    self.op(":")?;
                    self.suite()?;
                }
                if handlers > 0 {
                    self.else_clause()?;
                }
                if self.eat_kw("finally") {
                    self.op(":")?;
                    self.suite()?;
                } else if handlers == 0 {
                    return None;
                }
                Some(())
            }
            Tok::Name("with") => {
                self.bump();
                loop {
                    self.test()?;
                    if self.eat_kw("as") {
                        let k = self.target()?;
                        if !is_target(k) {
                            return None;
                        }
                    }
                    if !self.eat_op(",") {
                        break;
                    }
                }
                self.op(":")?;
                self.suite()
            }
            Tok::Name("def") => self.def(),
            Tok::Name("class") => self.class(),
            Tok::Op("@") => {
                while self.eat_op("@") {
                    self.test()?;
                    if self.peek() != Tok::Newline {
                        return None;
                    }
                    self.bump();
                }
                match self.peek() {
                    Tok::Name("def") => self.def(),
                    Tok::Name("class") => self.class(),
                    _ => None,
                }
            }
            // Soft keywords and forms left to tree-sitter.
            Tok::Name("async" | "match" | "case" | "type") => None,
            // Python 2's `print x` and `exec code` are statements to tree-sitter.
            Tok::Name("print" | "exec") if self.peek2() != Tok::Op("(") => None,
            _ => self.simple_statements(),
        }
    }

    fn else_clause(&mut self) -> Option<()> {
        if self.eat_kw("else") {
            self.op(":")?;
            self.suite()?;
        }
        Some(())
    }

    fn def(&mut self) -> Option<()> {
        self.kw("def")?;
        self.ident()?;
        self.op("(")?;
        self.params(")", true)?;
        self.op(")")?;
        if self.eat_op("->") {
            self.test()?;
        }
        self.op(":")?;
        self.suite()
    }

    fn class(&mut self) -> Option<()> {
        self.kw("class")?;
        self.ident()?;
        if self.eat_op("(") {
            self.args()?;
            self.op(")")?;
        }
        self.op(":")?;
        self.suite()
    }

    /// Parameters up to (not including) `close`: `a`, `a: T`, `a=1`, `*`, `*a`, `**k`, `/`.
    fn params(&mut self, close: &str, annotations: bool) -> Option<()> {
        while !self.is_op(close) {
            if self.eat_op("/") {
            } else if self.eat_op("**") {
                self.ident()?;
                if annotations && self.eat_op(":") {
                    self.test()?;
                }
            } else if self.eat_op("*") {
                if matches!(self.peek(), Tok::Name(_)) {
                    self.ident()?;
                    if annotations && self.eat_op(":") {
                        self.test()?;
                    }
                }
            } else {
                self.ident()?;
                if annotations && self.eat_op(":") {
                    self.test()?;
                }
                if self.eat_op("=") {
                    self.test()?;
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.is_op(close).then_some(())
    }

    fn suite(&mut self) -> Option<()> {
        if self.peek() == Tok::Newline {
            self.bump();
            if self.peek() != Tok::Indent {
                return None;
            }
            self.bump();
            while self.peek() != Tok::Dedent {
                if self.peek() == Tok::End {
                    return None;
                }
                self.statement()?;
            }
            self.bump();
            Some(())
        } else {
            self.simple_statements()
        }
    }

    fn simple_statements(&mut self) -> Option<()> {
        loop {
            self.simple_statement()?;
            if !self.eat_op(";") {
                break;
            }
            if self.peek() == Tok::Newline {
                break;
            }
        }
        if self.peek() != Tok::Newline {
            return None;
        }
        self.bump();
        Some(())
    }

    fn at_statement_end(&self) -> bool {
        matches!(self.peek(), Tok::Newline | Tok::Op(";"))
    }

    fn simple_statement(&mut self) -> Option<()> {
        match self.peek() {
            Tok::Name("pass" | "break" | "continue") => {
                self.bump();
                Some(())
            }
            Tok::Name("return") => {
                self.bump();
                if !self.at_statement_end() {
                    self.star_exprs()?;
                }
                Some(())
            }
            Tok::Name("raise") => {
                self.bump();
                if !self.at_statement_end() {
                    self.test()?;
                    if self.eat_kw("from") {
                        self.test()?;
                    }
                }
                Some(())
            }
            Tok::Name("global" | "nonlocal") => {
                self.bump();
                loop {
                    self.ident()?;
                    if !self.eat_op(",") {
                        return Some(());
                    }
                }
            }
            Tok::Name("del") => {
                self.bump();
                let k = self.star_exprs()?;
                is_target(k).then_some(())
            }
            Tok::Name("assert") => {
                self.bump();
                self.test()?;
                if self.eat_op(",") {
                    self.test()?;
                }
                Some(())
            }
            Tok::Name("import") => {
                self.bump();
                loop {
                    self.dotted()?;
                    if self.eat_kw("as") {
                        self.ident()?;
                    }
                    if !self.eat_op(",") {
                        return Some(());
                    }
                }
            }
            Tok::Name("from") => {
                self.bump();
                let mut dots = 0;
                while self.is_op(".") || self.is_op("...") {
                    dots += 1;
                    self.bump();
                }
                if !self.is_kw("import") {
                    self.dotted()?;
                } else if dots == 0 {
                    return None;
                }
                self.kw("import")?;
                if self.eat_op("*") {
                    return Some(());
                }
                let paren = self.eat_op("(");
                loop {
                    self.ident()?;
                    if self.eat_kw("as") {
                        self.ident()?;
                    }
                    if !self.eat_op(",") {
                        break;
                    }
                    if paren && self.is_op(")") {
                        break;
                    }
                }
                if paren {
                    self.op(")")?;
                }
                Some(())
            }
            Tok::Name("yield") => self.yield_expr(),
            _ => self.expression_statement(),
        }
    }

    fn yield_expr(&mut self) -> Option<()> {
        self.kw("yield")?;
        if self.eat_kw("from") {
            return self.test().map(|_| ());
        }
        if !self.at_statement_end() && !self.is_op(")") {
            self.star_exprs()?;
        }
        Some(())
    }

    fn dotted(&mut self) -> Option<()> {
        self.ident()?;
        while self.eat_op(".") {
            self.ident()?;
        }
        Some(())
    }

    fn expression_statement(&mut self) -> Option<()> {
        let first = self.star_exprs()?;
        if self.is_op("=") {
            let mut left = first;
            while self.eat_op("=") {
                if !is_target(left) {
                    return None;
                }
                left = if self.is_kw("yield") {
                    self.yield_expr()?;
                    Kind::Other
                } else {
                    self.star_exprs()?
                };
            }
            return Some(());
        }
        if let Tok::Op(op) = self.peek() {
            if op.len() >= 2 && op.ends_with('=') && !matches!(op, "==" | "!=" | "<=" | ">=") {
                if !matches!(first, Kind::Name | Kind::Attr | Kind::Sub) {
                    return None;
                }
                self.bump();
                if self.is_kw("yield") {
                    return self.yield_expr();
                }
                return self.star_exprs().map(|_| ());
            }
            if op == ":" {
                if !matches!(first, Kind::Name | Kind::Attr | Kind::Sub) {
                    return None;
                }
                self.bump();
                self.test()?;
                if self.eat_op("=") {
                    if self.is_kw("yield") {
                        return self.yield_expr();
                    }
                    self.star_exprs()?;
                }
                return Some(());
            }
        }
        Some(())
    }

    /// `a, *b, c` (a trailing comma makes a tuple).
    fn star_exprs(&mut self) -> Option<Kind> {
        let first = self.star_expr()?;
        if !self.is_op(",") {
            return Some(first);
        }
        let mut all = is_target(first);
        while self.eat_op(",") {
            if !self.starts_expression() {
                break;
            }
            all &= is_target(self.star_expr()?);
        }
        Some(Kind::Seq(all))
    }

    fn star_expr(&mut self) -> Option<Kind> {
        if self.eat_op("*") {
            let k = self.or_test()?;
            return Some(Kind::Star(is_target(k)));
        }
        self.test()
    }

    /// Whether the next token can start an expression (after a trailing comma, it cannot).
    fn starts_expression(&self) -> bool {
        match self.peek() {
            Tok::Name(n) => {
                !KEYWORDS.contains(&n)
                    || matches!(n, "None" | "True" | "False" | "not" | "lambda" | "await")
            }
            Tok::Number | Tok::Str => true,
            Tok::Op(o) => matches!(o, "(" | "[" | "{" | "-" | "+" | "~" | "*" | "..."),
            _ => false,
        }
    }

    /// Assignment targets of `for` (stopping before `in`).
    fn targets(&mut self) -> Option<()> {
        loop {
            let k = self.target()?;
            if !is_target(k) {
                return None;
            }
            if !self.eat_op(",") {
                return Some(());
            }
            if self.is_kw("in") {
                return Some(());
            }
        }
    }

    fn target(&mut self) -> Option<Kind> {
        if self.eat_op("*") {
            let k = self.primary()?;
            return Some(Kind::Star(is_target(k)));
        }
        self.primary()
    }

    fn test(&mut self) -> Option<Kind> {
        if self.is_kw("lambda") {
            self.bump();
            self.params(":", false)?;
            self.op(":")?;
            self.test()?;
            return Some(Kind::Other);
        }
        let k = self.or_test()?;
        if self.eat_kw("if") {
            self.or_test()?;
            self.kw("else")?;
            self.test()?;
            return Some(Kind::Other);
        }
        Some(k)
    }

    fn or_test(&mut self) -> Option<Kind> {
        let mut k = self.not_test()?;
        while self.is_kw("or") || self.is_kw("and") {
            self.bump();
            self.not_test()?;
            k = Kind::Other;
        }
        Some(k)
    }

    fn not_test(&mut self) -> Option<Kind> {
        if self.eat_kw("not") {
            self.not_test()?;
            return Some(Kind::Other);
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Option<Kind> {
        let mut k = self.arith()?;
        loop {
            match self.peek() {
                Tok::Op("<" | ">" | "==" | ">=" | "<=" | "!=") | Tok::Name("in") => self.bump(),
                Tok::Name("not") if self.peek2() == Tok::Name("in") => {
                    self.bump();
                    self.bump();
                }
                Tok::Name("is") => {
                    self.bump();
                    self.eat_kw("not");
                }
                _ => return Some(k),
            }
            self.arith()?;
            k = Kind::Other;
        }
    }

    /// Binary arithmetic and bitwise operators (their precedence does not matter here).
    fn arith(&mut self) -> Option<Kind> {
        let mut k = self.unary()?;
        while matches!(
            self.peek(),
            Tok::Op(
                "|" | "^" | "&" | "<<" | ">>" | "+" | "-" | "*" | "/" | "//" | "%" | "@" | "**"
            )
        ) {
            self.bump();
            self.unary()?;
            k = Kind::Other;
        }
        Some(k)
    }

    fn unary(&mut self) -> Option<Kind> {
        if matches!(self.peek(), Tok::Op("-" | "+" | "~")) {
            self.bump();
            self.unary()?;
            return Some(Kind::Other);
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Kind> {
        let mut k = self.atom()?;
        loop {
            if self.eat_op(".") {
                self.ident()?;
                k = Kind::Attr;
            } else if self.eat_op("(") {
                self.args()?;
                self.op(")")?;
                k = Kind::Other;
            } else if self.eat_op("[") {
                self.subscripts()?;
                self.op("]")?;
                k = Kind::Sub;
            } else {
                return Some(k);
            }
        }
    }

    fn atom(&mut self) -> Option<Kind> {
        match self.peek() {
            Tok::Name("None" | "True" | "False") | Tok::Number | Tok::Op("...") => {
                self.bump();
                Some(Kind::Other)
            }
            Tok::Str => {
                while self.peek() == Tok::Str {
                    self.bump();
                }
                Some(Kind::Other)
            }
            Tok::Name(n) if !KEYWORDS.contains(&n) => {
                self.bump();
                Some(Kind::Name)
            }
            Tok::Op("(") => {
                self.bump();
                if self.eat_op(")") {
                    return Some(Kind::Seq(false));
                }
                if self.is_kw("yield") {
                    self.yield_expr()?;
                    self.op(")")?;
                    return Some(Kind::Other);
                }
                let first = self.star_expr()?;
                let starred = matches!(first, Kind::Star(_));
                if self.is_kw("for") {
                    if starred {
                        return None;
                    }
                    self.comprehension()?;
                    self.op(")")?;
                    return Some(Kind::Other);
                }
                if self.eat_op(")") {
                    // `(*a)` is an error; a parenthesized expression is not taken as a target
                    // (left to tree-sitter).
                    return (!starred).then_some(Kind::Other);
                }
                let mut all = is_target(first);
                while self.eat_op(",") {
                    if self.is_op(")") {
                        break;
                    }
                    all &= is_target(self.star_expr()?);
                }
                self.op(")")?;
                Some(Kind::Seq(all))
            }
            Tok::Op("[") => {
                self.bump();
                if self.eat_op("]") {
                    return Some(Kind::Seq(false));
                }
                let first = self.star_expr()?;
                if self.is_kw("for") {
                    if matches!(first, Kind::Star(_)) {
                        return None;
                    }
                    self.comprehension()?;
                    self.op("]")?;
                    return Some(Kind::Other);
                }
                let mut all = is_target(first);
                while self.eat_op(",") {
                    if self.is_op("]") {
                        break;
                    }
                    all &= is_target(self.star_expr()?);
                }
                self.op("]")?;
                Some(Kind::Seq(all))
            }
            Tok::Op("{") => {
                self.bump();
                self.dict_or_set()?;
                self.op("}")?;
                Some(Kind::Other)
            }
            _ => None,
        }
    }

    /// `for targets in or_test (for ... | if or_test)*`.
    fn comprehension(&mut self) -> Option<()> {
        self.kw("for")?;
        loop {
            self.targets()?;
            self.kw("in")?;
            self.or_test()?;
            loop {
                if self.eat_kw("if") {
                    self.or_test()?;
                } else {
                    break;
                }
            }
            if !self.eat_kw("for") {
                return Some(());
            }
        }
    }

    fn dict_or_set(&mut self) -> Option<()> {
        if self.is_op("}") {
            return Some(());
        }
        // The first element decides: a dict (`k: v`, `**m`) or a set.
        // A spread (`**m`, `*s`) cannot be a comprehension's element, nor `*s` a key.
        let (dict, spread) = if self.eat_op("**") {
            self.arith()?;
            (true, true)
        } else {
            let spread = matches!(self.star_expr()?, Kind::Star(_));
            if self.eat_op(":") {
                if spread {
                    return None;
                }
                self.test()?;
                (true, false)
            } else {
                (false, spread)
            }
        };
        if self.is_kw("for") {
            if spread {
                return None;
            }
            return self.comprehension();
        }
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            if dict {
                if self.eat_op("**") {
                    self.arith()?;
                } else {
                    self.test()?;
                    self.op(":")?;
                    self.test()?;
                }
            } else {
                self.star_expr()?;
            }
        }
        Some(())
    }

    /// Call arguments up to (not including) `)`.
    fn args(&mut self) -> Option<()> {
        while !self.is_op(")") {
            if self.eat_op("*") || self.eat_op("**") {
                self.test()?;
            } else if matches!(self.peek(), Tok::Name(n) if !KEYWORDS.contains(&n))
                && self.peek2() == Tok::Op("=")
            {
                self.bump();
                self.bump();
                self.test()?;
            } else {
                self.test()?;
                if self.is_kw("for") {
                    self.comprehension()?;
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.is_op(")").then_some(())
    }

    /// Subscripts and slices up to (not including) `]`.
    fn subscripts(&mut self) -> Option<()> {
        loop {
            if !self.is_op(":") {
                self.test()?;
            }
            if self.eat_op(":") {
                if !self.is_op(":") && !self.is_op("]") && !self.is_op(",") {
                    self.test()?;
                }
                if self.eat_op(":") && !self.is_op("]") && !self.is_op(",") {
                    self.test()?;
                }
            }
            if !self.eat_op(",") || self.is_op("]") {
                break;
            }
        }
        self.is_op("]").then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::surely_valid;

    #[test]
    fn plain_python_is_recognized() {
        for ok in [
            "",
            "# a comment\n",
            "\"\"\"Doc.\"\"\"\nimport os, sys as system\nfrom . import x\nfrom ..a.b import (c, d as e,)\n",
            "X = {\"a\": [1, 2.5, -3e-2, 0x1F, 0o7, 0b1, 1j, .5, 5.], \"b\": (1,), 'c': None}\n",
            "def f(a, b: int = 1, *args, c=2, **kw) -> dict:\n    return {**kw, 'a': a}\n",
            "def g(a, /, b, *, c):\n    pass\n",
            "class A(B, metaclass=M):\n    x: int = 1\n\n    @property\n    def y(self):\n        return self.x[1:2, ::3]\n",
            "if a and not b or c in d and e not in f and g is not None:\n    pass\nelif x:\n    pass\nelse:\n    y = 1 if z else 2\n",
            "for i, (a, *b) in enumerate(x):\n    continue\nelse:\n    pass\nwhile True:\n    break\n",
            "try:\n    x()\nexcept (A, B) as e:\n    raise C(e) from e\nexcept:\n    raise\nelse:\n    pass\nfinally:\n    del x[0], y.z\n",
            "with open(p) as f, lock:\n    data = [l.strip() for l in f if l for _ in range(2)]\n",
            "s = f\"{x!r:>10} {y=} {{literal}} {a + b}\" + rf'\\d{n}' + b'x' 'y'\n",
            "g = lambda x, y=1, *a, **k: (x, y)\nprint(*a, sep='', **k)\nexec(c)\nh = {k: v for k, v in d.items()}\ns = {1, 2, *t}\n",
            "def gen():\n    yield\n    yield 1, 2\n    x = yield from y\n",
            "x = \\\n    1\nassert x, 'msg'\nglobal q\na = b = c = 3\na += 1; b <<= 2;\n",
        ] {
            assert!(surely_valid(ok), "{ok:?}");
        }
    }

    #[test]
    fn broken_python_is_never_recognized() {
        for bad in [
            "def broken(:\n    pass\n",
            "x = (1,\n",
            "if True\n    pass\n",
            "print('a'\n",
            "x = = 1\n",
            "x = 1 +\n",
            "def f():\nreturn 1\n",
            "  x = 1\n",
            "if x:\n        a = 1\n    b = 2\n",
            "1 = x\n",
            "f() = 1\n",
            "x = 'unterminated\n",
            "x = \"\"\"never closed\n",
            "x = [1, 2)\n",
            "x = 007\n",
            "x = 1__0\n",
            "for x in :\n    pass\n",
            "class :\n    pass\n",
            "x = f'{}'\n",
            "x = f'{a +}'\n",
            "x = f'}'\n",
            "return return\n",
            "import\n",
            "from import x\n",
            "a b\n",
            "x = {1: 2, 3}\n",
            "try:\n    pass\n",
            "else:\n    pass\n",
            "lambda: (yield)\nx = a if b\n",
            "x = $\n",
            "x = 1\r\n",
            "x.1 = 2\n",
            "@dec\nx = 1\n",
            "print 'x'\n",
            "x = {*a: 1}\n",
            "x = {**a for a in b}\n",
            "x = [*a for a in b]\n",
            "x = (*a for a in b)\n",
            "x = (*a)\n",
        ] {
            assert!(!surely_valid(bad), "{bad:?}");
        }
    }
}
