//! A fast reader for the common shape of a Python tool's metadata: module-level statements
//! `FIELD = literal`, where the literal is made of plain strings, decimal numbers,
//! `True`/`False`/`None`, dicts with string keys, lists and tuples. tree-sitter-python reads
//! some 2.5 bytes per microsecond here, and its parse was more than half of `kiwi check`;
//! this reader takes a few microseconds per file.
//!
//! It answers only when it is sure: anything outside that shape (a name, a call, an
//! f-string, implicit concatenation, a set, an annotation, a backslash continuation, a NUL
//! byte, a syntax error) makes it give up, and the caller parses with tree-sitter as before.
//! When it answers, the answer equals the tree-sitter reading exactly, ranges included: the
//! `equals_tree_sitter_*` tests below and the `python_tool` fuzz target compare the two. An
//! editor buffer is always read by tree-sitter, whose tree it keeps for the next edit.

use super::python_scalar::{decode_string, float_kind, int_kind};
use super::{FieldEntry, FIELDS};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};
use tree_sitter::Range;

/// How deep the reader follows brackets before it leaves the file to tree-sitter (far
/// below the extractor's own limit, so that the limit's message never comes from here).
const DEPTH: usize = 32;

/// The fields declared by the candidate statements `ranges` of `text` (see
/// `candidate_ranges`), or `None` when one of them is not of the simple shape.
pub(super) fn read(text: &str, ranges: &[Range]) -> Option<Vec<FieldEntry>> {
    let mut winners: Vec<Option<FieldEntry>> = vec![None; FIELDS.len()];
    for r in ranges {
        // tree-sitter's scanners read a NUL byte as the end of the input.
        if text.as_bytes()[r.start_byte..r.end_byte].contains(&0) {
            return None;
        }
        let mut p = Reader {
            b: text.as_bytes(),
            src: text,
            i: r.start_byte,
            end: r.end_byte,
        };
        let (field, entry) = p.statement()?;
        winners[field] = Some(entry);
    }
    let mut fields: Vec<FieldEntry> = winners.into_iter().flatten().collect();
    fields.sort_by_key(|f| f.key_range.start);
    Some(fields)
}

struct Reader<'a> {
    b: &'a [u8],
    src: &'a str,
    i: usize,
    /// The end of the statement's range (its line break included).
    end: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        (self.i < self.end).then(|| self.b[self.i])
    }

    fn at(&self, k: usize) -> Option<u8> {
        (self.i + k < self.end).then(|| self.b[self.i + k])
    }

    /// `NAME = value`, then blanks, a comment and the line break.
    fn statement(&mut self) -> Option<(usize, FieldEntry)> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        let name = &self.src[start..self.i];
        let field = FIELDS.iter().position(|f| f.python == name)?;
        let key_range = TextRange::new(start, self.i);
        self.blanks();
        if self.peek() != Some(b'=') || self.at(1) == Some(b'=') {
            return None;
        }
        self.i += 1;
        self.blanks();
        let value = self.value(0)?;
        self.blanks();
        self.comment();
        if !matches!(&self.b[self.i..self.end], b"" | b"\n" | b"\r\n") {
            return None;
        }
        Some((
            field,
            FieldEntry {
                field: FIELDS[field].field,
                key_range,
                value,
            },
        ))
    }

    /// A comment, if one starts at the cursor, up to its line break.
    fn comment(&mut self) {
        if self.peek() == Some(b'#') {
            while self.peek().is_some_and(|c| c != b'\n' && c != b'\r') {
                self.i += 1;
            }
        }
    }

    /// Spaces and tabs (outside brackets).
    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// Inside brackets: spaces, tabs, line breaks and comments.
    fn gap(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n') => self.i += 1,
                Some(b'\r') if self.at(1) == Some(b'\n') => self.i += 2,
                Some(b'#') => self.comment(),
                // A backslash continuation, a form feed, a lone CR: tree-sitter's business.
                Some(b'\\' | b'\r' | 0x0c) => return None,
                _ => return Some(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > DEPTH {
            return None;
        }
        let start = self.i;
        let v = match self.peek()? {
            b'{' => self.dict(depth)?,
            b'[' => {
                self.i += 1;
                let items = self.items(b']', depth)?;
                Value::new(ValueKind::List(items), TextRange::new(start, self.i))
            }
            b'(' => return self.paren(depth),
            b'"' | b'\'' => self.string(start)?,
            b'-' | b'+' | b'0'..=b'9' => self.number()?,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                let word = &self.src[start..self.i];
                match self.peek() {
                    Some(b'"' | b'\'') => {
                        if !matches!(
                            word.to_ascii_lowercase().as_str(),
                            "r" | "u" | "b" | "br" | "rb"
                        ) {
                            return None;
                        }
                        self.string(start)?
                    }
                    Some(c) if c >= 0x80 => return None,
                    _ => {
                        let kind = match word {
                            "True" => ValueKind::Bool(true),
                            "False" => ValueKind::Bool(false),
                            "None" => ValueKind::Null,
                            _ => return None,
                        };
                        Value::new(kind, TextRange::new(start, self.i))
                    }
                }
            }
            _ => return None,
        };
        Some(v)
    }

    /// A string literal whose prefix (if any) starts at `start` and whose quote is at the
    /// cursor. One string only: what follows must not be another string.
    fn string(&mut self, start: usize) -> Option<Value> {
        let prefix = self.src[start..self.i].to_ascii_lowercase();
        let is_raw = prefix.contains('r');
        let q = self.peek()?;
        let triple = self.at(1) == Some(q) && self.at(2) == Some(q);
        let open = if triple { 3 } else { 1 };
        self.i += open;
        let content_start = self.i;
        let content_end = loop {
            match self.peek()? {
                b'\\' => {
                    // Raw strings keep the backslash but it still guards a quote: leave
                    // those to tree-sitter.
                    if is_raw {
                        return None;
                    }
                    match self.at(1)? {
                        b'\n' | b'\r' => return None,
                        c if c >= 0x80 => {
                            let ch = self.src[self.i + 1..].chars().next()?;
                            self.i += 1 + ch.len_utf8();
                        }
                        _ => self.i += 2,
                    }
                }
                b'\n' | b'\r' if !triple => return None,
                c if c == q => {
                    if !triple {
                        let end = self.i;
                        self.i += 1;
                        break end;
                    }
                    if self.at(1) == Some(q) && self.at(2) == Some(q) {
                        let end = self.i;
                        self.i += 3;
                        break end;
                    }
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        };
        // `"a" "b"` is one string to Python: tree-sitter's business.
        let after = self.i;
        let _ = self.gap();
        if matches!(self.peek(), Some(b'"' | b'\''))
            || self.peek().is_some_and(|c| c.is_ascii_alphabetic())
        {
            return None;
        }
        self.i = after;
        let raw = &self.src[content_start..content_end];
        let value = decode_string(raw, is_raw, prefix.contains('b'));
        let verbatim = value == raw;
        Some(Value::new(
            ValueKind::Str(Str {
                value,
                content: TextRange::new(content_start, content_end),
                verbatim,
            }),
            TextRange::new(start, self.i),
        ))
    }

    /// A decimal integer or a `digits.digits` float, signed or not.
    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.i += 1;
        }
        let digits_start = self.i;
        let digits = |r: &mut Self| {
            let s = r.i;
            while r.peek().is_some_and(|c| c.is_ascii_digit()) {
                r.i += 1;
            }
            r.i > s
        };
        if !digits(self) {
            return None;
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return None;
            }
            float = true;
        }
        if self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c >= 0x80)
        {
            return None;
        }
        let text = &self.src[digits_start..self.i];
        let kind = if float {
            float_kind(text, negative)
        } else {
            int_kind(text, negative)
        };
        if matches!(kind, ValueKind::NonLiteral(_)) {
            return None;
        }
        Some(Value::new(kind, TextRange::new(start, self.i)))
    }

    /// The items of a list or a tuple up to `close`, trailing comma allowed.
    fn items(&mut self, close: u8, depth: usize) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        loop {
            self.gap()?;
            if self.peek()? == close {
                self.i += 1;
                break;
            }
            items.push(self.value(depth + 1)?);
            self.gap()?;
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        // Items live as long as the workspace: no spare capacity (tree-sitter's reading
        // allocates them exactly too).
        items.shrink_to_fit();
        Some(items)
    }

    /// `()` and `(a,)` are tuples (lists); `(a)` is `a`.
    fn paren(&mut self, depth: usize) -> Option<Value> {
        let start = self.i;
        self.i += 1;
        self.gap()?;
        if self.peek()? == b')' {
            self.i += 1;
            return Some(Value::new(
                ValueKind::List(Vec::new()),
                TextRange::new(start, self.i),
            ));
        }
        let first = self.value(depth + 1)?;
        self.gap()?;
        match self.peek()? {
            b')' => {
                self.i += 1;
                Some(first)
            }
            b',' => {
                self.i += 1;
                let mut items = vec![first];
                items.extend(self.items(b')', depth)?);
                Some(Value::new(
                    ValueKind::List(items),
                    TextRange::new(start, self.i),
                ))
            }
            _ => None,
        }
    }

    /// `{"key": value, ...}` with string keys.
    fn dict(&mut self, depth: usize) -> Option<Value> {
        let start = self.i;
        self.i += 1;
        let mut entries = Vec::new();
        loop {
            self.gap()?;
            if self.peek()? == b'}' {
                self.i += 1;
                break;
            }
            let key_start = self.i;
            let key = match self.value(depth + 1)? {
                Value {
                    kind: ValueKind::Str(s),
                    range,
                } if range.start == key_start => (s.value, range),
                _ => return None,
            };
            self.gap()?;
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.gap()?;
            let value = self.value(depth + 1)?;
            entries.push(Entry {
                key: key.0,
                key_range: key.1,
                value,
            });
            self.gap()?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        entries.shrink_to_fit();
        Some(Value::new(
            ValueKind::Map(entries),
            TextRange::new(start, self.i),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::python::{candidate_ranges, extract_incremental};
    use super::*;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};
    use std::sync::LazyLock;

    /// The fast reading of `text`, after checking that it equals tree-sitter's.
    fn differential(text: &str) -> Option<Vec<FieldEntry>> {
        let fast = read(text, &candidate_ranges(text));
        if let Some(fields) = &fast {
            let (want, diagnostics, _) = extract_incremental(text, None, true);
            assert_eq!(
                fields, &want,
                "fast and tree-sitter readings differ on:\n{text}"
            );
            assert!(diagnostics.is_empty(), "{diagnostics:?} on:\n{text}");
        }
        fast
    }

    /// The Python files of the repository's fixtures, builtins and test workspaces.
    static TOOLS: LazyLock<Vec<(PathBuf, String)>> = LazyLock::new(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut out = Vec::new();
        for dir in ["fixtures", "server/kernel/builtin", "tests/vscode"] {
            for e in ignore::WalkBuilder::new(root.join(dir))
                .hidden(false)
                .build()
            {
                let Ok(e) = e else { continue };
                if e.path().extension().is_some_and(|x| x == "py") {
                    if let Ok(text) = std::fs::read_to_string(e.path()) {
                        out.push((e.path().to_path_buf(), text));
                    }
                }
            }
        }
        out.sort();
        out
    });

    /// Every Python tool of the repository is read the same both ways, and the fast reader
    /// answers for those of the common shape (else `kiwi check` silently slows down).
    #[test]
    fn equals_tree_sitter_on_the_repository_tools() {
        assert!(TOOLS.len() >= 10, "found {} tools", TOOLS.len());
        let mut answered = 0;
        for (path, text) in TOOLS.iter() {
            if differential(text).is_some() {
                answered += 1;
            } else {
                eprintln!("left to tree-sitter: {}", path.display());
            }
        }
        assert!(
            answered * 10 >= TOOLS.len() * 8,
            "the fast reader answered for {answered} of {} tools",
            TOOLS.len()
        );
        for name in ["word_count.py", "echo.py", "python_runtime.py"] {
            let (_, text) = TOOLS
                .iter()
                .find(|(p, _)| p.ends_with(name))
                .expect("the tool exists");
            assert!(differential(text).is_some(), "{name}");
        }
    }

    /// Literals at the edges of the shape: each one either is read as tree-sitter reads it
    /// or is left to tree-sitter.
    #[test]
    fn edges_of_the_shape() {
        let answered = [
            "CONFIG = {}\n",
            "CONFIG = {\"a\": 1,}\n",
            "CONFIG = {\"a\": -1, \"b\": +2.5, \"c\": [True, False, None], \"d\": ()}\n",
            "CONFIG = {  # a comment\n    \"a\": (1,),  # another\n    \"b\": (\"x\"),\n}\n",
            "CONFIG = {\"a\": \"tab\\there \\u00e9 \\x41 \\n \\\" \\N{DASH} \\q\"}\n",
            "__version__ = r\"1.0\"\n__category__ = b\"x\"  # c\n__tool_type__ = u'python'\n",
            "__tool_description__ = \"\"\"multi\nline \\\"\"\" \"\"\"\n",
            "__tool_description__ = '''it's \"\" here'''\n",
            "CONFIG = {\"a\": \"\u{e9}\u{1f600}\"}\r\n__version__ = '2'",
            "CONFIG = {\"a\": 1}\nCONFIG = {\"b\": 2}\n",
            "\u{feff}__version__ = \"1\"\n",
            "CONFIG = {\"timeout\": 007, \"x\": 0, \"y\": 1.50}\n",
            "CONFIG = {\"a\": \"\"}\t# done\n",
            "CONFIG == {}\n",
            "CONFIG\u{e9} = {}\n",
        ];
        for text in answered {
            assert!(differential(text).is_some(), "not answered:\n{text}");
        }
        let left = [
            "CONFIG = dict(a=1)\n",
            "CONFIG = {\"a\": f\"{x}\"}\n",
            "CONFIG = {\"a\": \"b\" \"c\"}\n",
            "CONFIG = {\"a\": \"b\" r\"c\"}\n",
            "CONFIG = {\"a\": r\"\\\"\"}\n",
            "CONFIG = {1, 2}\n",
            "CONFIG = {1: 2}\n",
            "CONFIG = {(\"a\"): 2}\n",
            "CONFIG = {**BASE}\n",
            "CONFIG: dict = {}\n",
            "CONFIG = X = {}\n",
            "CONFIG = {} if X else {}\n",
            "CONFIG = {\"a\": 1}; X = 2\n",
            "CONFIG = {\"a\": 1e3}\n",
            "CONFIG = {\"a\": 0x10}\n",
            "CONFIG = {\"a\": 1_000}\n",
            "CONFIG = {\"a\": 1j}\n",
            "CONFIG = {\"a\": .5}\n",
            "CONFIG = {\"a\": 1.}\n",
            "CONFIG = {\"a\": - 1}\n",
            "CONFIG = {\"a\": 99999999999999999999}\n",
            "CONFIG = {\"a\": \\\n 1}\n",
            "CONFIG = {\"a\": \"line\\\ncontinued\"}\n",
            "CONFIG = {\"a\": \"unterminated}\n",
            "CONFIG = {\"a\": 1\n",
            "CONFIG = {\"a\",: 1}\n",
            "CONFIG = [1,,2]\n",
            "CONFIG = 1, 2\n",
            "CONFIG = [x for x in y]\n",
            "CONFIG = (x for x in y)\n",
            "CONFIG = {\"a\": \"x\".upper()}\n",
            "CONFIG = {\"a\": True_}\n",
            "CONFIG = {\"a\": Tru\u{e9}}\n",
            "CONFIG = \"a\"\rX = 1\n",
            "CONFIG = {\"a\": 1}\u{c}\n",
            "CONFIG = {\"a\": \"x\0y\"}\n",
            "X = CONFIG\n",
        ];
        for text in left {
            assert!(differential(text).is_none(), "answered:\n{text}");
        }
        let deep = format!("CONFIG = {}{}\n", "[".repeat(40), "]".repeat(40));
        assert!(differential(&deep).is_none());
        let fine = format!("CONFIG = {}{}\n", "[".repeat(20), "]".repeat(20));
        assert!(differential(&fine).is_some());
    }

    fn piece() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("\"".to_string()),
                Just("'".to_string()),
                Just("'''".to_string()),
                Just("\\".to_string()),
                Just("r".to_string()),
                Just("f".to_string()),
                Just("#".to_string()),
                Just("\n".to_string()),
                Just("\r\n".to_string()),
                Just("\r".to_string()),
                Just(" ".to_string()),
                Just("\t".to_string()),
                Just(",".to_string()),
                Just(":".to_string()),
                Just("=".to_string()),
                Just("-".to_string()),
                Just(".".to_string()),
                Just("(".to_string()),
                Just(")".to_string()),
                Just("[".to_string()),
                Just("]".to_string()),
                Just("{".to_string()),
                Just("}".to_string()),
                Just("\u{e9}".to_string()),
                Just("\u{1f600}".to_string()),
                Just("True".to_string()),
                Just("None".to_string()),
                Just("CONFIG = ".to_string()),
                "[a-z0-9_]{1,4}",
            ],
            0..4,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random edits of the repository's tools: wherever the fast reader answers, it
        /// equals tree-sitter.
        #[test]
        fn equals_tree_sitter_after_random_edits(
            which in 0usize..64,
            edits in prop::collection::vec((0.0f64..=1.0, 0usize..8, piece()), 1..6),
        ) {
            let mut text = TOOLS[which % TOOLS.len()].1.clone();
            for (at, del, ins) in edits {
                let mut start = ((text.len() as f64) * at) as usize;
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                let mut end = (start + del).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(start..end, &ins);
            }
            differential(&text);
        }
    }
}
