//! A quick recognizer of plain Python, so that most tools need no whole-file tree-sitter parse
//! for syntax errors (T301, issue 12 point 18).
//!
//! tree-sitter reads a Python tool at some 12 µs per KB; the metadata reader reads only the
//! module-level statements, so the whole-file parse for syntax errors made `kiwi check` of
//! 10,000 items two thirds slower. This module answers one question in a few microseconds:
//! "is this file certainly free of syntax errors?". It tokenizes the file (indentation,
//! brackets, strings and f-strings, numbers, operators) and runs a recursive-descent
//! recognizer of a subset of Python's grammar: statements, expressions, comprehensions,
//! calls, lambdas, decorators, `def`/`class`, `if`/`for`/`while`/`try`/`with`, their `async`
//! forms and `await`, f-strings whose expressions hold strings in the other quote.
//!
//! It only ever says "sure" or "don't know": anything it does not recognise (a syntax
//! error, but also `match`, an `async` comprehension, the walrus, a tab in an indentation, a
//! CR, a non-ASCII name, an f-string with its own quote in its expressions...) is "don't
//! know", and the file is parsed whole by tree-sitter as before. So a file it accepts is valid Python, and T301 is
//! lost on no file CPython refuses: `tool::tests::quick_syntax_recognizer_agrees_with_tree_sitter`
//! checks that on every Python file of the repository and the corpus, a part of the standard
//! library and some 20,000 broken variants of them (cut or extended at spread positions):
//! where the two disagree, CPython compiles the file (valid Python that tree-sitter-python
//! cannot read, e.g. a dict value on its own less-indented line: a T301 false alarm gone).

mod expressions;
mod statements;
mod tokens;

use tokens::tokenize;

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
            "async def f(s):\n    async with s.lock() as l:\n        async for x in s.rows():\n            await l.put(await x.json())\n    return await s.close()\n",
            "@app.get('/')\nasync def root():\n    pass\n",
            "s = f\"{d['a']} {x:>10}\" if 0 else f'{d[\"a\"]!r}' + f\"{'}'}\"\n",
            // Digits grouped with underscores; soft keywords used as names.
            "n = 1_000_000 + 0xf_f if 0 else 1_0.2_5e1_0 + 0b1_0\n",
            "match = re.match(p, s)\nif match:\n    match.group(1)\ncase = 1; type = str\ntype(x).__name__\nmatch += 1\n",
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
            "x = 1_\n",
            "x = 1_000_\n",
            "match = \n",
            "type(x) = 1\n",
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
            "async x = 1\n",
            "async def f():\n    await await x\n",
            "async def f():\n    await -x\n",
            "x = f\"{d['a]}\"\n",
            "x = f'{a[\"b\\n\"]}'\n",
            "x = [*a for a in b]\n",
            "x = (*a for a in b)\n",
            "x = (*a)\n",
        ] {
            assert!(!surely_valid(bad), "{bad:?}");
        }
    }
}
