//! Byte ranges and the line index: conversion between byte offsets and
//! line/column positions in UTF-8, UTF-16 or characters, with LF, CRLF and CR line ends.

use serde::Serialize;

/// A half-open range of byte offsets into a source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub fn new(start: usize, end: usize) -> Self {
        debug_assert!(start <= end, "range {start}..{end}");
        TextRange { start, end }
    }
    pub fn empty(at: usize) -> Self {
        TextRange { start: at, end: at }
    }
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
    pub fn contains(&self, offset: usize) -> bool {
        self.start <= offset && offset < self.end
    }
    /// Like `contains`, but the end offset counts too (a cursor just after a word).
    pub fn touches(&self, offset: usize) -> bool {
        self.start <= offset && offset <= self.end
    }
    pub fn shift(self, by: usize) -> Self {
        TextRange {
            start: self.start + by,
            end: self.end + by,
        }
    }
    pub fn cover(self, other: TextRange) -> Self {
        TextRange {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl From<std::ops::Range<usize>> for TextRange {
    fn from(r: std::ops::Range<usize>) -> Self {
        TextRange::new(r.start, r.end)
    }
}

/// How columns are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Encoding {
    Utf8,
    Utf16,
    /// Unicode scalar values (what `kiwi check` prints, what LSP calls utf-32).
    Char,
}

/// A zero-based line and a zero-based column counted in some [`Encoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

/// Line starts of a text. Line ends are `\n`, `\r\n` and a lone `\r`; the line
/// terminator belongs to the line it ends, so a column never points inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset of the start of each line; always starts with 0. (`u32`: a language
    /// server holds one per item, and half the size is megabytes at 10,000 items; items are
    /// far below 4 GiB, and a larger offset saturates.)
    starts: Vec<u32>,
    len: usize,
    /// Whether every byte is ASCII (columns are then equal in every encoding).
    ascii: bool,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        let at = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        // The line ends found with `memchr` (a byte at a time, this was 2% of a language
        // server's indexing at 10,000 items: a line index per item with diagnostics).
        let mut after_cr = None;
        for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if bytes[i] == b'\n' && after_cr == Some(i) {
                // The `\n` of a CRLF: the line began after both.
                if let Some(last) = starts.last_mut() {
                    *last = at(i + 1);
                }
                continue;
            }
            if bytes[i] == b'\r' {
                after_cr = Some(i + 1);
            }
            starts.push(at(i + 1));
        }
        starts.shrink_to_fit();
        LineIndex {
            starts,
            len: text.len(),
            ascii: text.is_ascii(),
        }
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The byte range of line `line` including its terminator.
    pub fn line_range(&self, line: usize) -> Option<TextRange> {
        let start = *self.starts.get(line)? as usize;
        let end = self.starts.get(line + 1).map_or(self.len, |&s| s as usize);
        Some(TextRange::new(start, end))
    }

    /// The byte range of line `line` without its terminator.
    pub fn line_content_range(&self, text: &str, line: usize) -> Option<TextRange> {
        let r = self.line_range(line)?;
        let s = &text[r.start..r.end];
        let trimmed = s.trim_end_matches(['\n', '\r']);
        Some(TextRange::new(r.start, r.start + trimmed.len()))
    }

    /// The zero-based line that holds `offset` (an offset past the end maps to the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = u32::try_from(offset).unwrap_or(u32::MAX);
        match self.starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// Byte offset to position. An offset inside a multi-byte character or inside a
    /// CRLF pair is moved back to the start of that character or terminator.
    pub fn position(&self, text: &str, offset: usize, enc: Encoding) -> Position {
        let offset = offset.min(self.len);
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        let content = self
            .line_content_range(text, line)
            .map(|r| r.end)
            .unwrap_or(start);
        let mut offset = offset.min(content);
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let column = if self.ascii || enc == Encoding::Utf8 {
            offset - start
        } else {
            let s = &text[start..offset];
            match enc {
                Encoding::Utf16 => s.encode_utf16().count(),
                Encoding::Char => s.chars().count(),
                Encoding::Utf8 => unreachable!(),
            }
        };
        Position {
            line: line as u32,
            column: column as u32,
        }
    }

    /// Position to byte offset. A line past the end maps to the end of the text, a column
    /// past the end of its line to the end of that line (before its terminator), and a
    /// column inside a character (half a surrogate pair) to the start of that character.
    pub fn offset(&self, text: &str, pos: Position, enc: Encoding) -> usize {
        let line = pos.line as usize;
        let Some(content) = self.line_content_range(text, line) else {
            return self.len;
        };
        let want = pos.column as usize;
        if self.ascii || enc == Encoding::Utf8 {
            let mut off = (content.start + want).min(content.end);
            while !text.is_char_boundary(off) {
                off -= 1;
            }
            return off;
        }
        let mut col = 0usize;
        for (i, ch) in text[content.start..content.end].char_indices() {
            let w = match enc {
                Encoding::Utf16 => ch.len_utf16(),
                _ => 1,
            };
            if col + w > want {
                return content.start + i;
            }
            col += w;
        }
        content.end
    }

    pub fn range_positions(
        &self,
        text: &str,
        range: TextRange,
        enc: Encoding,
    ) -> (Position, Position) {
        (
            self.position(text, range.start, enc),
            self.position(text, range.end, enc),
        )
    }
}

/// A text together with its line index, made on first use: most items a workspace keeps
/// are never shown with positions (at 10,000 items the indexes are some 6 MB).
///
/// The text of a file read from a space can be let go of ([`SourceText::let_go`]) and is
/// then read again on first use: a language server keeps every item parsed, and their texts
/// were 56.6 MB of its 95 MB heap at 10,000 items (`heaptrack`), while only the open
/// documents and the few items a request looks into need theirs. What is read again is
/// the text the item was parsed from, or nothing of it: a file changed since (its watcher
/// will have the item parsed again) reads as blanks of the same length, so a range of the
/// parse never falls outside the text nor inside a character.
#[derive(Debug, Clone)]
pub struct SourceText {
    text: std::sync::OnceLock<std::sync::Arc<str>>,
    lines: std::sync::OnceLock<LineIndex>,
    /// Where the text is read again from, for a text read from a file.
    file: Option<std::sync::Arc<TextFile>>,
    /// The length and keyed hash of the text, once it was let go of.
    sum: Option<(usize, u64)>,
}

/// Where a text let go of is read again from: the file, and how it was read (beneath its
/// space's root, refusing what the first read refused).
#[derive(Debug)]
pub struct TextFile {
    pub root: std::sync::Arc<std::path::Path>,
    pub path: std::sync::Arc<std::path::Path>,
    /// Read (the space's root, the file, the most bytes to read).
    pub read: fn(&std::path::Path, &std::path::Path, u64) -> std::io::Result<Vec<u8>>,
}

/// The hash a text let go of is known again by: SipHash with this process's random keys, so
/// no file can be made to match a text it does not hold.
fn text_hash(text: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static KEYS: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    KEYS.get_or_init(std::hash::RandomState::new).hash_one(text)
}

impl SourceText {
    pub fn new(text: impl Into<std::sync::Arc<str>>) -> Self {
        SourceText {
            text: std::sync::OnceLock::from(text.into()),
            lines: std::sync::OnceLock::new(),
            file: None,
            sum: None,
        }
    }
    /// This text, read from `file`: it may be let go of and read again.
    pub fn read_from(mut self, file: TextFile) -> Self {
        self.file = Some(std::sync::Arc::new(file));
        self
    }
    /// The text (read again when it was let go of).
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| self.read_again())
    }
    /// The text as shared (read again when it was let go of).
    pub fn shared(&self) -> std::sync::Arc<str> {
        self.text();
        self.text.get().cloned().unwrap_or_else(|| "".into())
    }
    /// The text, not held again when it was let go of: for a scan over every item, which
    /// would otherwise bring every text back.
    pub fn text_once(&self) -> std::sync::Arc<str> {
        match self.text.get() {
            Some(text) => text.clone(),
            None => self.read_again(),
        }
    }
    /// Whether the text is held (not let go of, or read again since).
    pub fn is_held(&self) -> bool {
        self.text.get().is_some()
    }
    /// Let go of the text of a file, to be read again on first use; what it held, in bytes
    /// (0: a text not read from a file, or not held).
    pub fn let_go(&mut self) -> usize {
        if self.file.is_none() {
            return 0;
        }
        let Some(text) = self.text.take() else {
            return 0;
        };
        if self.sum.is_none() {
            self.sum = Some((text.len(), text_hash(text.as_bytes())));
        }
        text.len()
    }
    fn read_again(&self) -> std::sync::Arc<str> {
        let (Some(file), Some((len, hash))) = (&self.file, self.sum) else {
            return "".into();
        };
        let max = u64::try_from(len).unwrap_or(u64::MAX).saturating_add(1);
        match (file.read)(&file.root, &file.path, max) {
            Ok(bytes) if bytes.len() == len && text_hash(&bytes) == hash => {
                match String::from_utf8(bytes) {
                    Ok(text) => text.into(),
                    Err(_) => " ".repeat(len).into(),
                }
            }
            _ => " ".repeat(len).into(),
        }
    }
    /// The line index of the text.
    pub fn lines(&self) -> &LineIndex {
        self.lines.get_or_init(|| LineIndex::new(self.text()))
    }
    pub fn position(&self, offset: usize, enc: Encoding) -> Position {
        self.lines().position(self.text(), offset, enc)
    }
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        self.lines().offset(self.text(), pos, enc)
    }
}

/// Whether a line is a signature or validation header (`<!-- rye:signed:... -->`,
/// `# rye:signed:...`, `# kiwi-mcp:validated:...`, `// ryeos:signed:...`).
pub fn is_header_line(line: &str) -> bool {
    let l = line.trim_start_matches('\u{feff}').trim();
    let inner = if let Some(rest) = l.strip_prefix("<!--") {
        rest
    } else if let Some(rest) = l.strip_prefix('#') {
        rest
    } else if let Some(rest) = l.strip_prefix("//") {
        rest
    } else {
        return false;
    };
    let inner = inner.trim_start();
    let Some((system, rest)) = inner.split_once(':') else {
        return false;
    };
    !system.is_empty()
        && system
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        && (rest.starts_with("signed:") || rest.starts_with("validated:"))
}

/// The range of the first line worth pointing at for something that is *missing* from a
/// file: the first non-blank line after a signature header on line 1 (a signed file's line 1
/// is a 200-character comment). Line 1 when there is no header, or nothing after it.
pub fn first_line_after_header(text: &str) -> TextRange {
    let mut lines = text.split_inclusive('\n').scan(0usize, |off, l| {
        let start = *off;
        *off += l.len();
        Some((start, l.trim_end_matches(['\n', '\r'])))
    });
    let Some((_, first)) = lines.next() else {
        return TextRange::default();
    };
    let bom = if first.starts_with('\u{feff}') { 3 } else { 0 };
    let line1 = TextRange::new(bom, first.len());
    if !is_header_line(first) {
        return line1;
    }
    lines
        .find(|(_, l)| !l.trim().is_empty())
        .map(|(s, l)| TextRange::new(s, s + l.len()))
        .unwrap_or(line1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_starts_are_those_found_a_byte_at_a_time() {
        fn one_by_one(text: &str) -> Vec<u32> {
            let bytes = text.as_bytes();
            let mut starts = vec![0];
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'\n' => starts.push(i as u32 + 1),
                    b'\r' => {
                        if bytes.get(i + 1) == Some(&b'\n') {
                            i += 1;
                        }
                        starts.push(i as u32 + 1);
                    }
                    _ => {}
                }
                i += 1;
            }
            starts
        }
        let pieces = ["\n", "\r", "\r\n", "a", "é", "\n\r", "\r\r\n", ""];
        let mut texts: Vec<String> = Vec::new();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                    texts.push(format!("x{a}yy{b}{c}z"));
                }
            }
        }
        for t in texts {
            assert_eq!(LineIndex::new(&t).starts, one_by_one(&t), "{t:?}");
        }
    }

    #[test]
    fn only_a_text_read_from_a_file_is_let_go_of() {
        let mut given = SourceText::new("abc");
        assert_eq!(given.let_go(), 0);
        assert!(given.is_held());
        assert_eq!(given.text(), "abc");

        let dir = tempfile::tempdir().unwrap();
        let path: std::sync::Arc<std::path::Path> = dir.path().join("a.md").into();
        std::fs::write(&path, "a\nbé\n").unwrap();
        let mut read = SourceText::new("a\nbé\n").read_from(TextFile {
            root: dir.path().into(),
            path: path.clone(),
            read: |_, p, _| std::fs::read(p),
        });
        let lines = read.position(4, Encoding::Utf16);
        assert_eq!(read.let_go(), 6);
        assert_eq!(read.let_go(), 0, "nothing held any more");
        assert!(!read.is_held());
        // Read once without holding it, then read and held.
        assert_eq!(&*read.text_once(), "a\nbé\n");
        assert!(!read.is_held());
        assert_eq!(read.position(4, Encoding::Utf16), lines);
        assert!(read.is_held());
        // Let go of again after it was read again: known by the same sum.
        assert_eq!(read.let_go(), 6);
        std::fs::write(&path, "a\nbe\n\n").unwrap();
        assert_eq!(read.text(), "      ", "same length, other bytes: blanks");
    }

    #[test]
    fn first_line_after_a_signature_header() {
        for h in [
            "<!-- rye:signed:T:H:S:F -->",
            "# rye:signed:T:H:S:F",
            "# kiwi-mcp:validated:T:H",
            "// ryeos:signed:T:H:S:F",
        ] {
            assert!(is_header_line(h), "{h}");
            let text = format!("{h}\n\n__version__ = \"1\"\n");
            let r = first_line_after_header(&text);
            assert_eq!(&text[r.start..r.end], "__version__ = \"1\"");
        }
        for l in ["# Title", "<!-- a comment -->", "# rye: not a header", ""] {
            assert!(!is_header_line(l), "{l}");
        }
        assert_eq!(
            first_line_after_header("# Title\nx\n"),
            TextRange::new(0, 7)
        );
        assert_eq!(
            first_line_after_header("# rye:signed:x\n"),
            TextRange::new(0, 14)
        );
        assert_eq!(first_line_after_header(""), TextRange::default());
    }
    use proptest::prelude::*;

    #[test]
    fn crlf_and_multibyte() {
        let text = "a\r\nü😀x\rz\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 4);
        let x = text.find('x').unwrap();
        assert_eq!(
            idx.position(text, x, Encoding::Utf8),
            Position { line: 1, column: 6 }
        );
        assert_eq!(
            idx.position(text, x, Encoding::Utf16),
            Position { line: 1, column: 3 }
        );
        assert_eq!(
            idx.position(text, x, Encoding::Char),
            Position { line: 1, column: 2 }
        );
        // The \r of a CRLF is not a column of its own.
        assert_eq!(
            idx.position(text, 2, Encoding::Utf8),
            Position { line: 0, column: 1 }
        );
        let z = text.find('z').unwrap();
        assert_eq!(
            idx.position(text, z, Encoding::Utf16),
            Position { line: 2, column: 0 }
        );
        // Half a surrogate pair maps to the start of the emoji.
        let emoji = text.find('😀').unwrap();
        assert_eq!(
            idx.offset(text, Position { line: 1, column: 2 }, Encoding::Utf16),
            emoji
        );
        // Past the end of a line: the end of its content.
        assert_eq!(
            idx.offset(
                text,
                Position {
                    line: 0,
                    column: 99
                },
                Encoding::Utf16
            ),
            1
        );
        assert_eq!(
            idx.offset(
                text,
                Position {
                    line: 99,
                    column: 0
                },
                Encoding::Utf16
            ),
            text.len()
        );
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("a".to_string()),
            Just("xyz".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("\r".to_string()),
            Just("é".to_string()),
            Just("中".to_string()),
            Just("😀".to_string()),
            Just("𝄞".to_string()),
            "[a-z ]{0,3}".prop_map(|s| s),
            any::<char>().prop_map(|c| c.to_string()),
        ];
        proptest::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Offset -> position -> offset is the identity on every character boundary that is
        /// not inside a line terminator, in all three encodings.
        #[test]
        fn round_trip(text in text_strategy()) {
            let idx = LineIndex::new(&text);
            let bytes = text.as_bytes();
            for off in 0..=text.len() {
                if !text.is_char_boundary(off) { continue; }
                // The \n of a \r\n pair is inside a terminator.
                if off > 0 && bytes.get(off) == Some(&b'\n') && bytes[off - 1] == b'\r' { continue; }
                for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Char] {
                    let pos = idx.position(&text, off, enc);
                    prop_assert_eq!(idx.offset(&text, pos, enc), off, "enc {:?} pos {:?}", enc, pos);
                }
            }
        }
    }
}
