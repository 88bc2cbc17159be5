//! A tolerant XML reader for the directive fence: it builds the [`Element`] tree with exact
//! byte ranges (offsets in the whole file) and reports every well-formedness problem (D102)
//! where it is, with fixes, and keeps going.
//!
//! Why not tree-sitter-xml: its error recovery was tried on the corpus's real defect (a raw `<`
//! inside an attribute value, `create_threaded_directive.md` and `create_directive.md`) and it
//! loses the element that holds the value while inventing `<model>`, `<limits>`,
//! `<permissions>`, `<execute>`, ... elements out of the value's text — spurious calls and
//! permission elements in the middle of a step. Recovery that matters for the analysis has to
//! know what authors meant, so this reader is hand-written:
//!
//! - an attribute value ends at its quote, but markup embedded in the value (`<tag a="x">`,
//!   `<!-- -->`) is skipped as a unit, so a quote inside an embedded tag does not end the
//!   value (this is what makes the `create_directive.md` value, which holds a whole directive
//!   with a few unescaped quotes, one value);
//! - a `<` that cannot start markup (`a < b`, `x<2`) and a bare `&` are text;
//! - an end tag closes the nearest open element of its name; elements left open in between
//!   are reported and closed there; a stray end tag is reported and ignored;
//! - `template`, `example` and `raw` hold opaque text: their content is not parsed.
//!
//! Nothing recurses on the input: open elements live on an explicit stack, and the tree is
//! cut at [`MAX_DEPTH`] so later walks over it are bounded too.

use super::Element;
use crate::diag::{Code, Diagnostic, TextEdit};
use crate::text::TextRange;

mod content;
mod stack;
mod start_tag;

/// Elements nested deeper than this are read (for well-formedness) but not kept.
pub const MAX_DEPTH: usize = 128;
/// At most this many D102 per fence; the last one says that more were left out.
const MAX_ERRORS: usize = 100;
/// Elements whose content is opaque text, never parsed nor checked.
pub const OPAQUE: &[&str] = &["template", "example", "raw"];

pub(crate) struct XmlOutput {
    pub root: Option<Element>,
    pub diags: Vec<Diagnostic>,
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':' || c >= 0x80
}

fn is_name_char(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == b'-' || c == b'.'
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// What is wrong with one character (or entity) of a text run or attribute value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Offence {
    /// A `<` that is not markup, in text.
    LtInText,
    /// A `<` inside an attribute value.
    LtInAttr,
    /// The attribute's own quote character inside markup embedded in the value.
    Quote,
    /// A `&` that starts no entity reference.
    BareAmp,
    /// `&name;` with a name XML does not define.
    UnknownEntity,
    /// `&#...;` naming no character.
    BadCharRef,
}

struct Offender {
    kind: Offence,
    range: TextRange,
}

impl Offender {
    /// The replacement that escapes it.
    fn escape(&self) -> TextEdit {
        let (range, text) = match self.kind {
            Offence::LtInText | Offence::LtInAttr => (self.range, "&lt;"),
            Offence::Quote => (self.range, "&quot;"),
            // Only the `&` is replaced; `&foo;` becomes `&amp;foo;`.
            Offence::BareAmp | Offence::UnknownEntity | Offence::BadCharRef => (
                TextRange::new(self.range.start, self.range.start + 1),
                "&amp;",
            ),
        };
        TextEdit {
            range,
            new_text: text.to_string(),
        }
    }
}

/// Decode a named or numeric entity starting at `at` (which holds `&`).
/// Returns the decoded text and the end of the reference, or the offence.
fn entity(b: &[u8], s: &str, at: usize, end: usize) -> Result<(String, usize), (Offence, usize)> {
    let mut p = at + 1;
    if p < end && b[p] == b'#' {
        p += 1;
        let hex = p < end && (b[p] == b'x' || b[p] == b'X');
        if hex {
            p += 1;
        }
        let digits = p;
        while p < end
            && (if hex {
                b[p].is_ascii_hexdigit()
            } else {
                b[p].is_ascii_digit()
            })
        {
            p += 1;
        }
        if p == digits || p >= end || b[p] != b';' {
            return Err((Offence::BareAmp, at + 1));
        }
        let n = u32::from_str_radix(&s[digits..p], if hex { 16 } else { 10 }).ok();
        return match n.and_then(char::from_u32) {
            Some(c) if c != '\0' => Ok((c.to_string(), p + 1)),
            _ => Err((Offence::BadCharRef, p + 1)),
        };
    }
    if p >= end || !is_name_start(b[p]) {
        return Err((Offence::BareAmp, at + 1));
    }
    let name_start = p;
    while p < end && is_name_char(b[p]) {
        p += 1;
    }
    if p >= end || b[p] != b';' {
        return Err((Offence::BareAmp, at + 1));
    }
    let decoded = match &s[name_start..p] {
        "lt" => "<",
        "gt" => ">",
        "amp" => "&",
        "quot" => "\"",
        "apos" => "'",
        _ => return Err((Offence::UnknownEntity, p + 1)),
    };
    Ok((decoded.to_string(), p + 1))
}

/// Unescape the valid entity references of `raw`, leaving anything else as written.
pub(crate) fn unescape_lenient(raw: &str) -> String {
    if !raw.contains('&') {
        return raw.to_string();
    }
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'&' {
            if let Ok((dec, next)) = entity(b, raw, i, b.len()) {
                out.push_str(&raw[last..i]);
                out.push_str(&dec);
                i = next;
                last = next;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&raw[last..]);
    out
}

struct Open {
    el: Element,
    /// First and last non-whitespace byte of the direct text, for `text_range`.
    text_span: Option<(usize, usize)>,
    /// The length of `el.text` after each piece of `el.text_pieces`.
    piece_ends: Vec<usize>,
}

struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    /// The fence content's start.
    start: usize,
    end: usize,
    /// Where the closing fence line ends, for the D103 "move out of the fence" fix.
    after_fence: Option<usize>,
    stack: Vec<Open>,
    root: Option<Element>,
    diags: Vec<Diagnostic>,
    errors: usize,
    too_deep_reported: bool,
}

pub(crate) fn parse(s: &str, content: TextRange, after_fence: Option<usize>) -> XmlOutput {
    let mut r = Reader {
        s,
        b: s.as_bytes(),
        pos: content.start,
        start: content.start,
        end: content.end,
        after_fence,
        stack: Vec::new(),
        root: None,
        diags: Vec::new(),
        errors: 0,
        too_deep_reported: false,
    };
    r.run();
    XmlOutput {
        root: r.root,
        diags: r.diags,
    }
}

impl<'a> Reader<'a> {
    fn starts_with(&self, at: usize, pat: &str) -> bool {
        at + pat.len() <= self.end && self.b[at..at + pat.len()] == *pat.as_bytes()
    }

    fn find(&self, from: usize, pat: &str) -> Option<usize> {
        if from >= self.end {
            return None;
        }
        self.s[from..self.end].find(pat).map(|i| from + i)
    }

    fn char_len(&self, at: usize) -> usize {
        self.s[at..]
            .chars()
            .next()
            .map(|c| c.len_utf8())
            .unwrap_or(1)
    }

    fn error(&mut self, d: Diagnostic) {
        self.errors += 1;
        if self.errors < MAX_ERRORS {
            self.diags.push(d);
        } else if self.errors == MAX_ERRORS {
            let mut d = d;
            d.message
                .push_str(" (more XML errors in this fence are not listed)");
            self.diags.push(d);
        }
    }

    fn read_name(&self, mut p: usize) -> usize {
        while p < self.end && is_name_char(self.b[p]) {
            p += 1;
        }
        p
    }

    fn skip_ws(&self, mut p: usize) -> usize {
        while p < self.end && is_ws(self.b[p]) {
            p += 1;
        }
        p
    }

    /// Whether `<` at `at` starts markup (as opposed to being a stray `<` in text).
    fn markup_at(&self, at: usize) -> bool {
        let Some(&n) = self.b.get(at + 1) else {
            return false;
        };
        if at + 1 >= self.end {
            return false;
        }
        if is_name_start(n) || n == b'?' || n == b'!' {
            return true;
        }
        n == b'/' && at + 2 < self.end && is_name_start(self.b[at + 2])
    }

    fn run(&mut self) {
        while self.pos < self.end {
            if self.root.is_some() {
                self.trailing();
                return;
            }
            if self.b[self.pos] == b'<' && self.markup_at(self.pos) {
                let p = self.pos;
                if self.starts_with(p, "<!--") {
                    self.comment();
                } else if self.starts_with(p, "<![CDATA[") {
                    self.cdata();
                } else if self.starts_with(p, "<?") {
                    self.skip_until(p, "?>", "processing instruction");
                } else if self.starts_with(p, "<!") {
                    self.skip_until(p, ">", "declaration");
                } else if self.b[p + 1] == b'/' {
                    self.end_tag();
                } else {
                    self.start_tag();
                }
            } else {
                self.text();
            }
        }
        self.close_all_at_eof();
    }

    fn skip_until(&mut self, p: usize, close: &str, what: &str) {
        match self.find(p + 2, close) {
            Some(i) => self.pos = i + close.len(),
            None => {
                let r = TextRange::new(p, (p + 2).min(self.end));
                self.error(Diagnostic::new(
                    Code::D102,
                    r,
                    format!("this {what} is never closed with `{close}`"),
                ));
                self.pos = self.end;
            }
        }
    }
}
