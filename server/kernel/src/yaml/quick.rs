//! The YAML most metadata is written in, read without tree-sitter: block mappings and
//! sequences indented with spaces, plain and quoted scalars (a quoted one may run over
//! several lines), flow sequences and mappings on one line, and comments. [`parse`] answers
//! `None` for any text with something else in it (anchors, aliases, tags, block scalars,
//! multi-line plain scalars, flow mappings, document markers, tabs, a line it cannot place),
//! and the text then goes to tree-sitter, as every text did before.
//!
//! Why: tree-sitter's YAML grammar read about 3 MB/s here. At 10,000 real-shaped items
//! (`kiwi-bench real`: rye's YAML tools, every knowledge entry's frontmatter) parsing YAML
//! was 30% of `kiwi check`'s CPU (`perf record --call-graph dwarf`), for 1 MB of YAML files
//! and the frontmatter of 4,300 entries.
//!
//! What it answers is what the tree-sitter path answers for the same text, value for value
//! and range for range: `tests::quick_reads_as_tree_sitter_reads` compares the two on every
//! YAML text of the real corpus and on generated texts, and the fuzz target `yaml` on any
//! input.

use super::{fold_flow, resolve_plain, Quote, YamlDoc};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};

/// Deeper than this, the text is left to tree-sitter (metadata does not nest this deep).
const MAX_NEST: usize = 32;
/// The longest implicit key YAML allows.
const MAX_KEY: usize = 1024;

/// The first document of `text` (every range shifted by `base`), or `None` when the text
/// holds anything this reader leaves to tree-sitter.
pub(super) fn parse(text: &str, base: usize) -> Option<YamlDoc> {
    if !simple_characters(text) {
        return None;
    }
    let lines = significant_lines(text)?;
    let mut r = Reader {
        src: text,
        b: text.as_bytes(),
        base,
        lines,
        at: 0,
    };
    let value = match r.line() {
        None => None,
        Some(l) => {
            let v = r.block(l.indent, 0)?;
            // Every line is read, or the text is not of the kind read here.
            if r.line().is_some() {
                return None;
            }
            Some(v)
        }
    };
    Some(YamlDoc {
        value,
        errors: Vec::new(),
    })
}

/// No tab, carriage return, control character, byte order mark, or Unicode line or
/// paragraph separator: the characters whose reading tree-sitter's grammar decides.
fn simple_characters(text: &str) -> bool {
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\n' => {}
            0..=0x1f | 0x7f => return false,
            // C1 controls (NEL among them).
            0xc2 if b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)) => return false,
            // U+2028, U+2029.
            0xe2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) => {
                return false
            }
            // U+FEFF, U+FFFE, U+FFFF.
            0xef if matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ) =>
            {
                return false
            }
            _ => {}
        }
    }
    true
}

/// A line that holds something other than a comment.
#[derive(Clone, Copy)]
struct Line {
    start: usize,
    /// The first character that is not a space.
    first: usize,
    /// The end of the line, trailing spaces left out.
    end: usize,
    indent: usize,
}

/// The lines that are neither blank nor only a comment; `None` when a line is a document
/// marker or a directive.
fn significant_lines(text: &str) -> Option<Vec<Line>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < b.len() {
        let nl = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |i| start + i);
        let line = &b[start..nl];
        if line.starts_with(b"---") || line.starts_with(b"...") || line.starts_with(b"%") {
            return None;
        }
        let indent = line.iter().take_while(|c| **c == b' ').count();
        let mut end = nl;
        while end > start + indent && b[end - 1] == b' ' {
            end -= 1;
        }
        if start + indent < end && b[start + indent] != b'#' {
            out.push(Line {
                start,
                first: start + indent,
                end,
                indent,
            });
        }
        start = nl + 1;
    }
    Some(out)
}

struct Reader<'a> {
    src: &'a str,
    b: &'a [u8],
    base: usize,
    lines: Vec<Line>,
    /// The next line to read.
    at: usize,
}

/// A scalar or flow sequence read on a line: its value and where its text ends.
type Read = (Value, usize);

impl Reader<'_> {
    fn line(&self) -> Option<Line> {
        self.lines.get(self.at).copied()
    }

    fn range(&self, start: usize, end: usize) -> TextRange {
        TextRange::new(start + self.base, end + self.base)
    }

    /// `- ` (or a `-` alone) at the line's first character.
    fn is_entry(&self, l: Line) -> bool {
        self.b[l.first] == b'-' && (l.first + 1 == l.end || self.b[l.first + 1] == b' ')
    }

    /// The block (mapping or sequence) whose lines are indented `indent`, from the next line.
    fn block(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth > MAX_NEST {
            return None;
        }
        let l = self.line()?;
        if l.indent != indent {
            return None;
        }
        if self.is_entry(l) {
            self.sequence(indent, depth)
        } else {
            self.mapping(indent, l.first, depth)
        }
    }

    /// A block mapping whose keys are at column `col`, its first key at `first` on the next
    /// line (not at the line's start in a sequence's entry: `- key: value`).
    fn mapping(&mut self, col: usize, first: usize, depth: usize) -> Option<Value> {
        let mut entries = Vec::new();
        let mut at = first;
        let mut end;
        loop {
            let (entry, e) = self.pair(at, col, depth)?;
            end = e;
            entries.push(entry);
            match self.line() {
                Some(l) if l.indent == col && !self.is_entry(l) => at = l.first,
                // Deeper than the keys, and not a value of theirs: not read here.
                Some(l) if l.indent > col => return None,
                _ => break,
            }
        }
        let end = self.trail(end);
        Some(Value::new(ValueKind::Map(entries), self.range(first, end)))
    }

    /// Where a block whose last value ends at `end` ends: tree-sitter's block runs over the
    /// comments after its last value, to the next line that holds something else.
    fn trail(&self, end: usize) -> usize {
        let next = self.line().map_or(self.b.len(), |l| l.start);
        end + self.src[end..next].trim_end_matches([' ', '\n']).len()
    }

    /// Where the `:` of a pair starting at `at` is, on the next line; `None` when it is not a
    /// pair this reader reads (the caller then reads a scalar, or gives up).
    fn colon(&self, at: usize, line_end: usize) -> Option<usize> {
        let b = self.b;
        let key_end = match b[at] {
            b'"' | b'\'' => self.quote_end_on_line(at, line_end)? + 1,
            c if !plain_first(c, b.get(at + 1).copied()) => return None,
            _ => {
                let mut i = at;
                loop {
                    if i >= line_end {
                        return None;
                    }
                    match b[i] {
                        b'#' if b[i - 1] == b' ' => return None,
                        b':' if i + 1 == line_end || b[i + 1] == b' ' => break i,
                        b'[' | b']' | b'{' | b'}' | b',' => return None,
                        _ => i += 1,
                    }
                }
            }
        };
        let mut i = key_end;
        while i < line_end && b[i] == b' ' {
            i += 1;
        }
        (i < line_end && b[i] == b':' && (i + 1 == line_end || b[i + 1] == b' ')).then_some(i)
    }

    /// The pair whose key starts at `at` on the next line, in a mapping at column `col`; with
    /// where it ends.
    fn pair(&mut self, at: usize, col: usize, depth: usize) -> Option<(Entry, usize)> {
        let l = self.line()?;
        let colon = self.colon(at, l.end)?;
        if colon - at > MAX_KEY {
            return None;
        }
        let (key, key_range) = match self.b[at] {
            q @ (b'"' | b'\'') => {
                let close = self.quote_end_on_line(at, l.end)?;
                let s = self.quoted_value(at, close, q)?;
                (s.value, self.range(at, close + 1))
            }
            _ => {
                let raw = self.src[at..colon].trim_end_matches(' ');
                // The merge key is left to tree-sitter's reader.
                if raw.is_empty() || raw == "<<" {
                    return None;
                }
                (raw.to_string(), self.range(at, at + raw.len()))
            }
        };
        let mut v = colon + 1;
        while v < l.end && self.b[v] == b' ' {
            v += 1;
        }
        let (value, end) = if v == l.end || self.b[v] == b'#' {
            // The value is on the lines below, or there is none.
            self.at += 1;
            match self.line() {
                Some(n) if n.indent > col => {
                    let value = self.block(n.indent, depth + 1)?;
                    let end = value.range.end - self.base;
                    (value, end)
                }
                Some(n) if n.indent == col && self.is_entry(n) => {
                    let value = self.sequence(col, depth + 1)?;
                    let end = value.range.end - self.base;
                    (value, end)
                }
                _ => (
                    Value::new(ValueKind::Null, TextRange::empty(colon + 1 + self.base)),
                    colon + 1,
                ),
            }
        } else {
            self.inline(v, col)?
        };
        Some((
            Entry {
                key,
                key_range,
                value,
            },
            end,
        ))
    }

    /// A block sequence whose `-` are at column `col`.
    fn sequence(&mut self, col: usize, depth: usize) -> Option<Value> {
        if depth > MAX_NEST {
            return None;
        }
        let start = self.line()?.first;
        let mut items = Vec::new();
        let mut end = start;
        while let Some(l) = self.line().filter(|l| l.indent == col && self.is_entry(*l)) {
            let dash = l.first;
            let mut v = dash + 1;
            while v < l.end && self.b[v] == b' ' {
                v += 1;
            }
            let (item, e) = if v == l.end || self.b[v] == b'#' {
                if v > dash + 1 || v == l.end {
                    self.at += 1;
                } else {
                    // `-#`: not a comment.
                    return None;
                }
                match self.line() {
                    Some(n) if n.indent > col => {
                        let value = self.block(n.indent, depth + 1)?;
                        let end = value.range.end - self.base;
                        (value, end)
                    }
                    _ => (
                        Value::new(ValueKind::Null, TextRange::empty(dash + 1 + self.base)),
                        dash + 1,
                    ),
                }
            } else if self.b[v] == b'-' && (v + 1 == l.end || self.b[v + 1] == b' ') {
                // `- - a`: left to tree-sitter.
                return None;
            } else if self.colon(v, l.end).is_some() {
                let value = self.mapping(v - l.start, v, depth + 1)?;
                let end = value.range.end - self.base;
                (value, end)
            } else {
                self.inline(v, col)?
            };
            items.push(item);
            end = e;
        }
        match self.line() {
            // A deeper line that no entry took.
            Some(l) if l.indent > col => None,
            _ => {
                let end = self.trail(end);
                Some(Value::new(ValueKind::List(items), self.range(start, end)))
            }
        }
    }

    /// A value that starts at `at` on the next line (after `key: ` or `- `) in a block at
    /// column `col`: a quoted scalar (maybe over several lines), a one-line flow sequence, or
    /// a one-line plain scalar. The lines it takes are read.
    fn inline(&mut self, at: usize, col: usize) -> Option<Read> {
        let l = self.line()?;
        let b = self.b;
        let read = match b[at] {
            q @ (b'"' | b'\'') => {
                let close = self.quote_end(at, q, col)?;
                let s = self.quoted_value(at, close, q)?;
                let v = Value::new(ValueKind::Str(s), self.range(at, close + 1));
                // The rest of the line the quote ends on: nothing but a comment.
                let line_end = memchr::memchr(b'\n', &b[close..]).map_or(b.len(), |i| close + i);
                if !self.only_comment(close + 1, line_end) {
                    return None;
                }
                self.at = self.lines.partition_point(|x| x.start <= close);
                (v, close + 1)
            }
            b'[' | b'{' => {
                let (v, end) = self.flow(at, l.end, 0)?;
                // The rest of the line: nothing but a comment.
                if !self.only_comment(end, l.end) {
                    return None;
                }
                self.at += 1;
                (v, end)
            }
            c if plain_first(c, b.get(at + 1).copied()) => {
                let mut i = at;
                while i < l.end && !(b[i] == b'#' && b[i - 1] == b' ') {
                    i += 1;
                }
                let raw = self.src[at..i].trim_end_matches(' ');
                if raw.ends_with(':') || raw.contains(": ") {
                    return None;
                }
                self.at += 1;
                (self.plain(raw, at), at + raw.len())
            }
            _ => return None,
        };
        // A deeper line after a scalar: a plain scalar's next line, or an error.
        if self.line().is_some_and(|n| n.indent > col) {
            return None;
        }
        Some(read)
    }

    /// A plain scalar's value (its text `raw`, at `at`).
    fn plain(&self, raw: &str, at: usize) -> Value {
        let range = self.range(at, at + raw.len());
        match resolve_plain(raw) {
            ValueKind::Str(_) => Value::new(
                ValueKind::Str(Str {
                    value: raw.to_string(),
                    content: range,
                    verbatim: true,
                }),
                range,
            ),
            kind => Value::new(kind, range),
        }
    }

    /// A flow sequence or mapping on one line (`[a, "b", [c]]`, `{a: 1, b: {}}`), from `at`
    /// (its `[` or `{`) to before `line_end`.
    fn flow(&self, at: usize, line_end: usize, depth: usize) -> Option<Read> {
        if depth > MAX_NEST {
            return None;
        }
        let b = self.b;
        let map = b[at] == b'{';
        let close = if map { b'}' } else { b']' };
        let skip = |mut i: usize| {
            while i < line_end && b[i] == b' ' {
                i += 1;
            }
            i
        };
        let (mut items, mut entries) = (Vec::new(), Vec::new());
        let mut i = skip(at + 1);
        if i >= line_end || b[i] != close {
            loop {
                if i >= line_end {
                    return None;
                }
                let end = if map {
                    let (key, key_range, key_end) = match b[i] {
                        q @ (b'"' | b'\'') => {
                            let c = self.quote_end_on_line(i, line_end)?;
                            (
                                self.quoted_value(i, c, q)?.value,
                                self.range(i, c + 1),
                                c + 1,
                            )
                        }
                        c if flow_plain_first(c) => {
                            let raw = self.flow_plain(i, line_end, true)?;
                            if raw == "<<" {
                                return None;
                            }
                            let end = i + raw.len();
                            (raw.to_string(), self.range(i, end), end)
                        }
                        _ => return None,
                    };
                    // `key: value`; a key alone is left to tree-sitter.
                    let colon = skip(key_end);
                    if !(colon + 1 < line_end && b[colon] == b':' && b[colon + 1] == b' ') {
                        return None;
                    }
                    let (value, end) = self.flow_item(skip(colon + 1), line_end, depth)?;
                    entries.push(Entry {
                        key,
                        key_range,
                        value,
                    });
                    end
                } else {
                    let (value, end) = self.flow_item(i, line_end, depth)?;
                    items.push(value);
                    end
                };
                i = skip(end);
                match b.get(i) {
                    Some(b',') if i < line_end => {
                        i = skip(i + 1);
                        // A trailing comma, or an empty entry: left to tree-sitter.
                        if i >= line_end || matches!(b[i], b',' | b']' | b'}') {
                            return None;
                        }
                    }
                    Some(c) if *c == close && i < line_end => break,
                    _ => return None,
                }
            }
        }
        // `i` is at the closing bracket.
        let kind = if map {
            ValueKind::Map(entries)
        } else {
            ValueKind::List(items)
        };
        Some((Value::new(kind, self.range(at, i + 1)), i + 1))
    }

    /// An entry of a flow collection (a value, not a pair), from `at`.
    fn flow_item(&self, at: usize, line_end: usize, depth: usize) -> Option<Read> {
        let b = self.b;
        match *b.get(at).filter(|_| at < line_end)? {
            q @ (b'"' | b'\'') => {
                let close = self.quote_end_on_line(at, line_end)?;
                let s = self.quoted_value(at, close, q)?;
                Some((
                    Value::new(ValueKind::Str(s), self.range(at, close + 1)),
                    close + 1,
                ))
            }
            b'[' | b'{' => self.flow(at, line_end, depth + 1),
            c if flow_plain_first(c) => {
                let raw = self.flow_plain(at, line_end, false)?;
                Some((self.plain(raw, at), at + raw.len()))
            }
            _ => None,
        }
    }

    /// A plain scalar inside a flow collection, from `at` to the next `,` or closing
    /// bracket (a `key`: to its `: `), trailing spaces left out; `None` for one with a
    /// character this reader leaves to tree-sitter (`:`, `#`, an opening bracket) or an empty
    /// one.
    fn flow_plain(&self, at: usize, line_end: usize, key: bool) -> Option<&str> {
        let b = self.b;
        let mut j = at;
        while j < line_end && !matches!(b[j], b',' | b']' | b'}') {
            if key && b[j] == b':' && b.get(j + 1) == Some(&b' ') {
                break;
            }
            if matches!(b[j], b'[' | b'{' | b':' | b'#') {
                return None;
            }
            j += 1;
        }
        let raw = self.src[at..j].trim_end_matches(' ');
        (!raw.is_empty()).then_some(raw)
    }

    /// From `from` to `line_end`: spaces, then nothing or a comment (after a space).
    fn only_comment(&self, from: usize, line_end: usize) -> bool {
        let mut i = from;
        while i < line_end && self.b[i] == b' ' {
            i += 1;
        }
        i == line_end || (i > from && self.b[i] == b'#')
    }

    /// The closing quote of the quoted scalar opening at `at`, on the same line.
    fn quote_end_on_line(&self, at: usize, line_end: usize) -> Option<usize> {
        let close = self.quote_end(at, self.b[at], usize::MAX)?;
        (close < line_end).then_some(close)
    }

    /// The closing quote of the quoted scalar opening at `at`; every line it continues on
    /// must be indented deeper than `col` (`usize::MAX`: it must not continue). `None` for
    /// an unclosed quote, or an escape left to tree-sitter.
    fn quote_end(&self, at: usize, q: u8, col: usize) -> Option<usize> {
        let b = self.b;
        let mut i = at + 1;
        while i < b.len() {
            match b[i] {
                b'\'' if q == b'\'' => {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Some(i);
                }
                b'"' if q == b'"' => return Some(i),
                b'\\' if q == b'"' => {
                    // The escapes of one character; `\x`, `\u`, `\U` and an escaped line
                    // break are left to tree-sitter.
                    if !matches!(
                        b.get(i + 1),
                        Some(
                            b'0' | b'a'
                                | b'b'
                                | b't'
                                | b'n'
                                | b'v'
                                | b'f'
                                | b'r'
                                | b'e'
                                | b' '
                                | b'"'
                                | b'/'
                                | b'\\'
                                | b'N'
                                | b'_'
                                | b'L'
                                | b'P'
                        )
                    ) {
                        return None;
                    }
                    i += 2;
                    continue;
                }
                b'\n' => {
                    if col == usize::MAX {
                        return None;
                    }
                    // The next line: blank, or indented deeper than the block.
                    let start = i + 1;
                    let indent = b[start..].iter().take_while(|c| **c == b' ').count();
                    let next = b.get(start + indent);
                    if next.is_some_and(|c| *c != b'\n') && indent <= col {
                        return None;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// The string of the quoted scalar from `at` (its opening quote) to `close`.
    fn quoted_value(&self, at: usize, close: usize, q: u8) -> Option<Str> {
        let inner = self.src.get(at + 1..close)?;
        let value = fold_flow(
            inner,
            if q == b'"' {
                Quote::Double
            } else {
                Quote::Single
            },
        );
        Some(Str {
            verbatim: value == inner,
            value,
            content: self.range(at + 1, close),
        })
    }
}

/// Whether `c` may begin a plain scalar inside a flow collection (`-`, `?` and `:` are left
/// to tree-sitter there).
fn flow_plain_first(c: u8) -> bool {
    !matches!(c, b'-' | b'?' | b':') && plain_first(c, None)
}

/// Whether `c` (followed by `next`) may begin a plain scalar in a block: not an indicator,
/// or `-`, `?`, `:` followed by something other than a space.
fn plain_first(c: u8, next: Option<u8>) -> bool {
    match c {
        b'-' | b'?' | b':' => next.is_some_and(|n| n != b' ' && n != b'\n'),
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' => false,
        _ => true,
    }
}
