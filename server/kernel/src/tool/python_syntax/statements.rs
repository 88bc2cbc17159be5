//! The recognizer's statements: `def`/`class`, compound statements, suites, simple
//! statements and expression statements.

use super::{is_target, Kind, Parser, Tok};

impl Parser<'_, '_> {
    pub(super) fn file(&mut self) -> Option<()> {
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
            // `async def`, `async for`, `async with` (Python refuses the last two, and
            // `await`, outside an `async def` when it compiles, not when it parses: so does
            // tree-sitter).
            Tok::Name("async") if matches!(self.peek2(), Tok::Name("def" | "for" | "with")) => {
                self.bump();
                self.statement()
            }
            Tok::Op("@") => {
                while self.eat_op("@") {
                    self.test()?;
                    if self.peek() != Tok::Newline {
                        return None;
                    }
                    self.bump();
                }
                if self.is_kw("async") && self.peek2() == Tok::Name("def") {
                    self.bump();
                }
                match self.peek() {
                    Tok::Name("def") => self.def(),
                    Tok::Name("class") => self.class(),
                    _ => None,
                }
            }
            // A soft keyword used as a name (`match = re.match(...)`, `match.group(1)`,
            // `type(x)`): what follows it cannot start a `match` subject, a `case` pattern or
            // a type alias's name.
            Tok::Name("match" | "case") if soft_keyword_as_name(self.peek2(), false) => {
                self.simple_statements()
            }
            Tok::Name("type") if soft_keyword_as_name(self.peek2(), true) => {
                self.simple_statements()
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
    pub(super) fn params(&mut self, close: &str, annotations: bool) -> Option<()> {
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

    pub(super) fn yield_expr(&mut self) -> Option<()> {
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
}

/// Whether a soft keyword (`match`, `case`, `type`) at the start of a statement is a plain
/// name, from the token after it: an assignment, an attribute, the end of the statement. A
/// `match` subject or a `case` pattern may start with `(`, `[`, `-` or `*`; after `type` a
/// type alias needs a name, so any operator (`type(x)`, `type[int]`) makes it a name.
fn soft_keyword_as_name(next: Tok<'_>, is_type: bool) -> bool {
    match next {
        Tok::Newline => true,
        Tok::Op(op) => {
            is_type
                || matches!(
                    op,
                    "=" | "."
                        | ";"
                        | ","
                        | "+="
                        | "-="
                        | "*="
                        | "/="
                        | "//="
                        | "%="
                        | "**="
                        | ">>="
                        | "<<="
                        | "&="
                        | "|="
                        | "^="
                        | "@="
                )
        }
        _ => false,
    }
}
