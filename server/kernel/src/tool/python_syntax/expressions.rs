//! The recognizer's expressions: star-expressions, targets, operators, atoms,
//! comprehensions, displays, call arguments and subscripts.

use super::{is_target, Kind, Parser, Tok, KEYWORDS};

impl Parser<'_, '_> {
    /// `a, *b, c` (a trailing comma makes a tuple).
    pub(super) fn star_exprs(&mut self) -> Option<Kind> {
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
    pub(super) fn targets(&mut self) -> Option<()> {
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

    pub(super) fn target(&mut self) -> Option<Kind> {
        if self.eat_op("*") {
            let k = self.primary()?;
            return Some(Kind::Star(is_target(k)));
        }
        self.primary()
    }

    pub(super) fn test(&mut self) -> Option<Kind> {
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
        // `await primary` (not `await -x` nor `await await x`: Python refuses them).
        if self.eat_kw("await") {
            if self.is_kw("await") {
                return None;
            }
            self.primary()?;
            return Some(Kind::Other);
        }
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
    pub(super) fn args(&mut self) -> Option<()> {
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
