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

use super::{Attr, Element};
use crate::diag::{Code, Diagnostic, Fix, TextEdit};
use crate::text::TextRange;

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

    fn comment(&mut self) {
        let p = self.pos;
        match self.find(p + 4, "-->") {
            Some(i) => self.pos = i + 3,
            None => {
                self.error(
                    Diagnostic::new(
                        Code::D102,
                        TextRange::new(p, p + 4),
                        "this comment is never closed with `-->`",
                    )
                    .fix(Fix::insert("Close the comment", self.end, "-->\n")),
                );
                self.pos = self.end;
            }
        }
    }

    fn cdata(&mut self) {
        let p = self.pos;
        let start = p + 9;
        let (content_end, next) = match self.find(start, "]]>") {
            Some(i) => (i, i + 3),
            None => {
                self.error(
                    Diagnostic::new(
                        Code::D102,
                        TextRange::new(p, start),
                        "this CDATA section is never closed with `]]>`",
                    )
                    .fix(Fix::insert(
                        "Close the CDATA section",
                        self.end,
                        "]]>\n",
                    )),
                );
                (self.end, self.end)
            }
        };
        let raw = &self.s[start..content_end];
        self.push_text(TextRange::new(start, content_end), raw);
        self.pos = next;
    }

    /// Add a piece of direct text to the innermost open element.
    fn push_text(&mut self, range: TextRange, text: &str) {
        let raw = &self.s[range.start..range.end];
        let Some(open) = self.stack.last_mut() else {
            if !raw.trim().is_empty() {
                let first = range.start + (raw.len() - raw.trim_start().len());
                let last = range.start + raw.trim_end().len();
                self.error(Diagnostic::new(
                    Code::D102,
                    TextRange::new(first, last),
                    "text before the `<directive>` element: XML allows only one root element",
                ));
            }
            return;
        };
        if raw.is_empty() {
            return;
        }
        if let Some(off) = raw.find(|c: char| !c.is_whitespace()) {
            let first = range.start + off;
            let last = range.start + raw.trim_end().len();
            open.text_span = Some(match open.text_span {
                Some((a, _)) => (a, last),
                None => (first, last),
            });
        }
        open.el.text.push_str(text);
        open.el.text_pieces.push(range);
        open.piece_ends.push(open.el.text.len());
    }

    /// Character data up to the next markup; stray `<` and bad `&` are reported per run.
    fn text(&mut self) {
        let start = self.pos;
        let mut p = start;
        // Only built when an entity is decoded; plain text is borrowed.
        let mut out: Option<String> = None;
        let mut last = start;
        let mut offenders = Vec::new();
        while p < self.end {
            let Some(i) = self.b[p..self.end]
                .iter()
                .position(|&c| c == b'<' || c == b'&')
            else {
                p = self.end;
                break;
            };
            p += i;
            if self.b[p] == b'<' {
                if self.markup_at(p) {
                    break;
                }
                offenders.push(Offender {
                    kind: Offence::LtInText,
                    range: TextRange::new(p, p + 1),
                });
                p += 1;
            } else {
                match entity(self.b, self.s, p, self.end) {
                    Ok((dec, next)) => {
                        let o = out.get_or_insert_with(String::new);
                        o.push_str(&self.s[last..p]);
                        o.push_str(&dec);
                        p = next;
                        last = next;
                    }
                    Err((kind, next)) => {
                        offenders.push(Offender {
                            kind,
                            range: TextRange::new(p, next),
                        });
                        p = next;
                    }
                }
            }
        }
        self.pos = p;
        let range = TextRange::new(start, p);
        if !offenders.is_empty() {
            self.report_text_offenders(range, &offenders);
        }
        match out {
            Some(mut o) => {
                o.push_str(&self.s[last..p]);
                self.push_text(range, &o);
            }
            None => self.push_text(range, &self.s[start..p]),
        }
    }

    fn report_text_offenders(&mut self, run: TextRange, offenders: &[Offender]) {
        let first = &offenders[0];
        let what = match first.kind {
            Offence::LtInText | Offence::LtInAttr => {
                "`<` in text must be escaped: escape it as `&lt;` or wrap the text in CDATA".to_string()
            }
            Offence::BareAmp => {
                "bare `&` in text: escape it as `&amp;` or wrap the text in CDATA".to_string()
            }
            Offence::UnknownEntity => format!(
                "`{}` is not an XML entity (only `&lt; &gt; &amp; &quot; &apos;` are): escape the `&` as `&amp;` or wrap the text in CDATA",
                &self.s[first.range.start..first.range.end]
            ),
            Offence::BadCharRef => format!(
                "`{}` names no character: escape the `&` as `&amp;`",
                &self.s[first.range.start..first.range.end]
            ),
            Offence::Quote => "unexpected quote".to_string(),
        };
        let mut msg = what;
        if offenders.len() > 1 {
            msg.push_str(&format!(
                " ({} more unescaped character{} in this text)",
                offenders.len() - 1,
                if offenders.len() == 2 { "" } else { "s" }
            ));
        }
        let mut d = Diagnostic::new(Code::D102, first.range, msg);
        let title = if offenders.len() == 1 {
            match first.kind {
                Offence::LtInText | Offence::LtInAttr => "Escape `<` as `&lt;`".to_string(),
                _ => "Escape `&` as `&amp;`".to_string(),
            }
        } else {
            format!("Escape the {} characters of this text", offenders.len())
        };
        d = d.fix(Fix {
            title,
            edits: offenders.iter().map(Offender::escape).collect(),
            rename_to: None,
        });
        // Wrap the whole text run in CDATA, when that keeps its meaning: no entity reference
        // that CDATA would stop decoding, no `]]>` that would end it.
        let raw = &self.s[run.start..run.end];
        let trimmed = raw.trim();
        let has_valid_entity = {
            let b = raw.as_bytes();
            (0..b.len()).any(|i| b[i] == b'&' && entity(b, raw, i, b.len()).is_ok())
        };
        if !trimmed.is_empty() && !trimmed.contains("]]>") && !has_valid_entity {
            let off = raw.len() - raw.trim_start().len();
            let r = TextRange::new(run.start + off, run.start + off + trimmed.len());
            d = d.fix(Fix::replace(
                "Wrap the text in `<![CDATA[...]]>`",
                r,
                format!("<![CDATA[{trimmed}]]>"),
            ));
        }
        self.error(d);
    }

    fn start_tag(&mut self) {
        let lt = self.pos;
        let name_end = self.read_name(lt + 1);
        let name = self.s[lt + 1..name_end].to_string();
        let name_range = TextRange::new(lt + 1, name_end);
        let mut el = Element {
            name,
            name_range,
            ..Default::default()
        };
        let mut p = name_end;
        let mut garbage_reported = false;
        let mut self_closing = false;
        let tag_end;
        loop {
            p = self.skip_ws(p);
            if p >= self.end {
                let at = self.last_token_end(p, lt);
                self.error(
                    Diagnostic::new(
                        Code::D102,
                        el.name_range,
                        format!("the start tag `<{}` is never closed with `>`", el.name),
                    )
                    .fix(Fix::insert("Insert `>`", at, ">")),
                );
                tag_end = self.end;
                break;
            }
            let c = self.b[p];
            if c == b'>' {
                tag_end = p + 1;
                break;
            }
            if c == b'/' && self.starts_with(p, "/>") {
                self_closing = true;
                tag_end = p + 2;
                break;
            }
            if c == b'<' {
                let at = self.last_token_end(p, lt);
                self.error(
                    Diagnostic::new(
                        Code::D102,
                        el.name_range,
                        format!(
                            "the start tag `<{}` is not closed with `>` before the next tag",
                            el.name
                        ),
                    )
                    .fix(Fix::insert("Insert `>`", at, ">")),
                );
                tag_end = at;
                p = at;
                break;
            }
            if is_name_start(c) {
                p = self.attribute(p, &mut el);
                continue;
            }
            // Anything else inside a tag is garbage; report the first, skip them all.
            let len = self.char_len(p);
            if !garbage_reported {
                garbage_reported = true;
                let ch = &self.s[p..p + len];
                let r = TextRange::new(p, p + len);
                let mut d = Diagnostic::new(
                    Code::D102,
                    r,
                    format!("unexpected `{ch}` in the start tag of `<{}>`", el.name),
                );
                if c == b'"' || c == b'\'' {
                    d.message.push_str(
                        ": a quote can only delimit an attribute value (`name=\"value\"`)",
                    );
                }
                d = d.fix(Fix::replace(format!("Remove `{ch}`"), r, ""));
                self.error(d);
            }
            p += len;
        }
        let _ = p;
        el.start_tag = TextRange::new(lt, tag_end);
        el.range = TextRange::new(lt, tag_end);
        el.self_closing = self_closing;
        self.pos = tag_end;
        if self_closing {
            el.closed = true;
            self.attach(el);
            return;
        }
        let opaque = OPAQUE.contains(&el.name.as_str());
        self.push_open(el);
        if opaque {
            self.opaque_content();
        }
    }

    /// The end of the last non-whitespace byte before `p` (but after `lt`), for inserting `>`.
    fn last_token_end(&self, p: usize, lt: usize) -> usize {
        let mut q = p.min(self.end);
        while q > lt + 1 && is_ws(self.b[q - 1]) {
            q -= 1;
        }
        q
    }

    /// An attribute at `p` (a name start); returns where the tag continues.
    fn attribute(&mut self, p: usize, el: &mut Element) -> usize {
        let name_end = self.read_name(p);
        let name = self.s[p..name_end].to_string();
        let name_range = TextRange::new(p, name_end);
        let mut q = self.skip_ws(name_end);
        let duplicate = el
            .attrs
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.name_range);
        if let Some(first) = duplicate {
            self.error(
                Diagnostic::new(
                    Code::D102,
                    name_range,
                    format!("duplicate attribute `{name}` on `<{}>`", el.name),
                )
                .related(None, first, "first set here"),
            );
        }
        if q >= self.end || self.b[q] != b'=' {
            self.error(
                Diagnostic::new(
                    Code::D102,
                    name_range,
                    format!("attribute `{name}` has no value: write `{name}=\"...\"`"),
                )
                .fix(Fix::insert("Add an empty value", name_end, "=\"\"")),
            );
            let attr = Attr {
                name,
                name_range,
                value: String::new(),
                value_range: TextRange::empty(name_end),
                range: name_range,
            };
            if duplicate.is_none() {
                el.attrs.push(attr);
            }
            return name_end;
        }
        q = self.skip_ws(q + 1);
        let (value, value_range, next) =
            if q < self.end && (self.b[q] == b'"' || self.b[q] == b'\'') {
                self.quoted_value(q)
            } else {
                // Unquoted value: up to whitespace or the end of the tag.
                let start = q;
                let mut e = q;
                while e < self.end
                    && !is_ws(self.b[e])
                    && self.b[e] != b'>'
                    && !self.starts_with(e, "/>")
                    && self.b[e] != b'<'
                {
                    e += 1;
                }
                let r = TextRange::new(start, e);
                let raw = &self.s[start..e];
                self.error(
                    Diagnostic::new(
                        Code::D102,
                        if r.is_empty() { name_range } else { r },
                        format!("the value of `{name}` must be in quotes"),
                    )
                    .fix(Fix::replace(
                        "Quote the value",
                        r,
                        format!("\"{}\"", raw.replace('"', "&quot;")),
                    )),
                );
                (unescape_lenient(raw), r, e)
            };
        let attr = Attr {
            name,
            name_range,
            value,
            value_range,
            range: TextRange::new(p, next),
        };
        if duplicate.is_none() {
            el.attrs.push(attr);
        }
        next
    }

    /// A quoted attribute value starting at the quote `q`.
    /// Returns the unescaped value, the range between the quotes, and where the tag goes on.
    fn quoted_value(&mut self, q: usize) -> (String, TextRange, usize) {
        let quote = self.b[q];
        let start = q + 1;
        let mut p = start;
        let mut offenders: Vec<Offender> = Vec::new();
        let mut closed = None;
        while p < self.end {
            let Some(i) = self.b[p..self.end]
                .iter()
                .position(|&c| c == quote || c == b'&' || c == b'<')
            else {
                break;
            };
            p += i;
            let c = self.b[p];
            if c == quote {
                closed = Some(p);
                break;
            }
            if c == b'&' {
                match entity(self.b, self.s, p, self.end) {
                    Ok((_, next)) => p = next,
                    Err((kind, next)) => {
                        offenders.push(Offender {
                            kind,
                            range: TextRange::new(p, next),
                        });
                        p = next;
                    }
                }
                continue;
            }
            if c == b'<' {
                offenders.push(Offender {
                    kind: Offence::LtInAttr,
                    range: TextRange::new(p, p + 1),
                });
                p = self.embedded_markup(p, quote, &mut offenders);
                continue;
            }
            p += 1;
        }
        let Some(close) = closed else {
            // Never closed: end the value at the end of its line, or at a `>`.
            let mut e = start;
            while e < self.end && self.b[e] != b'\n' && self.b[e] != b'>' {
                e += 1;
            }
            if e < self.end && self.b[e] == b'>' && e > start && self.b[e - 1] == b'/' {
                e -= 1;
            }
            let r = TextRange::new(start, e);
            self.error(
                Diagnostic::new(
                    Code::D102,
                    TextRange::new(q, q + 1),
                    format!(
                        "this attribute value is never closed with `{}`",
                        quote as char
                    ),
                )
                .fix(Fix::insert(
                    "Close the value",
                    e,
                    (quote as char).to_string(),
                )),
            );
            return (unescape_lenient(&self.s[start..e]), r, e);
        };
        // Decode from the raw value: entities inside embedded markup were skipped above.
        let out = unescape_lenient(&self.s[start..close]);
        let range = TextRange::new(start, close);
        if !offenders.is_empty() {
            self.report_attr_offenders(&offenders);
        }
        (out, range, close + 1)
    }

    /// Markup embedded in an attribute value, at `lt`: a comment, or a tag whose own quoted
    /// values are skipped as a unit. Returns where the value goes on. Quotes of the value's
    /// kind inside the embedded tag are offenders (they must be `&quot;`).
    fn embedded_markup(&self, lt: usize, quote: u8, offenders: &mut Vec<Offender>) -> usize {
        if self.starts_with(lt, "<!--") {
            // A comment: up to `-->`, unless the value's quote comes first.
            if let Some(e) = self.find(lt + 4, "-->") {
                let q = self.s[lt..e].bytes().position(|c| c == quote);
                if q.is_none() {
                    return e + 3;
                }
            }
            return lt + 1;
        }
        let mut p = lt + 1;
        if p < self.end && self.b[p] == b'/' {
            p += 1;
        }
        if p >= self.end || !is_name_start(self.b[p]) {
            return lt + 1;
        }
        p = self.read_name(p);
        let mut pending = Vec::new();
        while p < self.end {
            let c = self.b[p];
            match c {
                b'>' => {
                    offenders.append(&mut pending);
                    return p + 1;
                }
                b'<' => return p,
                b'"' | b'\'' => {
                    // A quote right after `=` delimits the embedded tag's own value.
                    let mut k = p;
                    while k > lt && is_ws(self.b[k - 1]) {
                        k -= 1;
                    }
                    if k > lt && self.b[k - 1] == b'=' {
                        let Some(close) = self.s[p + 1..self.end]
                            .bytes()
                            .position(|x| x == c)
                            .map(|i| p + 1 + i)
                        else {
                            return p;
                        };
                        if c == quote {
                            pending.push(Offender {
                                kind: Offence::Quote,
                                range: TextRange::new(p, p + 1),
                            });
                            pending.push(Offender {
                                kind: Offence::Quote,
                                range: TextRange::new(close, close + 1),
                            });
                        }
                        p = close + 1;
                    } else {
                        // Not an embedded value: this quote is the value's own end (or text).
                        return p;
                    }
                }
                _ => p += 1,
            }
        }
        p
    }

    fn report_attr_offenders(&mut self, offenders: &[Offender]) {
        let first = &offenders[0];
        let lts = offenders
            .iter()
            .filter(|o| o.kind == Offence::LtInAttr)
            .count();
        let mut msg = match first.kind {
            Offence::LtInAttr | Offence::LtInText => {
                "`<` in an attribute value must be escaped: escape it as `&lt;`".to_string()
            }
            Offence::BareAmp => "bare `&` in an attribute value: escape it as `&amp;`".to_string(),
            Offence::UnknownEntity => format!(
                "`{}` is not an XML entity: escape the `&` as `&amp;`",
                &self.s[first.range.start..first.range.end]
            ),
            Offence::BadCharRef => format!(
                "`{}` names no character: escape the `&` as `&amp;`",
                &self.s[first.range.start..first.range.end]
            ),
            Offence::Quote => "a quote inside an attribute value must be `&quot;`".to_string(),
        };
        if lts > 1 {
            msg.push_str(&format!(
                " (this value holds markup: {lts} unescaped `<`, {} characters to escape in all)",
                offenders.len()
            ));
        } else if offenders.len() > 1 {
            msg.push_str(&format!(
                " ({} more character{} to escape in this value)",
                offenders.len() - 1,
                if offenders.len() == 2 { "" } else { "s" }
            ));
        }
        let title = if offenders.len() == 1 {
            match first.kind {
                Offence::LtInAttr | Offence::LtInText => "Escape `<` as `&lt;`",
                Offence::Quote => "Escape the quote as `&quot;`",
                _ => "Escape `&` as `&amp;`",
            }
            .to_string()
        } else {
            format!("Escape the {} characters of this value", offenders.len())
        };
        let d = Diagnostic::new(Code::D102, first.range, msg).fix(Fix {
            title,
            edits: offenders.iter().map(Offender::escape).collect(),
            rename_to: None,
        });
        self.error(d);
    }

    fn push_open(&mut self, el: Element) {
        if self.stack.len() >= MAX_DEPTH && !self.too_deep_reported {
            self.too_deep_reported = true;
            self.diags.push(Diagnostic::new(
                Code::D105,
                el.name_range,
                format!("elements nested deeper than {MAX_DEPTH} levels are not analysed"),
            ));
        }
        self.stack.push(Open {
            el,
            text_span: None,
            piece_ends: Vec::new(),
        });
    }

    /// Attach a finished element to its parent (or make it the root).
    fn attach(&mut self, mut el: Element) {
        // The element is finished: give back what its vectors grew by (a workspace keeps
        // thousands of these trees).
        el.children.shrink_to_fit();
        el.attrs.shrink_to_fit();
        el.text_pieces.shrink_to_fit();
        el.text.shrink_to_fit();
        let depth = self.stack.len();
        match self.stack.last_mut() {
            Some(parent) => {
                if depth < MAX_DEPTH {
                    parent.el.children.push(el);
                }
            }
            None => self.root = Some(el),
        }
    }

    /// Pop the innermost open element, ending it at `end` (exclusive).
    fn pop_finish(&mut self, end: usize, content_end: usize, end_name: Option<TextRange>) {
        let Some(open) = self.stack.pop() else {
            return;
        };
        let mut el = open.el;
        el.range = TextRange::new(el.range.start, end.max(el.start_tag.end));
        el.content = Some(TextRange::new(
            el.start_tag.end,
            content_end.max(el.start_tag.end),
        ));
        el.text_range = open.text_span.map(|(a, b)| TextRange::new(a, b));
        el.end_name_range = end_name;
        el.closed = end_name.is_some();
        self.attach(el);
    }

    /// Close the innermost open element, which has no end tag, at `at` (where the end tag of
    /// an outer element, or the end of the fence, was met), and report it.
    ///
    /// An element that holds an element of its own name was almost surely meant to end before
    /// it (`<input name="a">text` followed by `<input name="b"/>`, a `<step>` left open before
    /// the next `<step>`): no directive element contains itself. So it ends there, and that
    /// child and the ones after it go to its parent.
    fn close_unclosed(
        &mut self,
        at: usize,
        outer: Option<(&str, TextRange)>,
        eof_insert: &mut String,
    ) {
        let Some(open) = self.stack.pop() else {
            return;
        };
        let Open {
            mut el,
            text_span,
            piece_ends,
        } = open;
        let name = el.name.clone();
        let split = el.children.iter().position(|c| c.name == name);
        let mut moved = Vec::new();
        let (end, diag) = match split {
            Some(i) => {
                let next = el.children[i].range.start;
                let mut e = next;
                while e > el.start_tag.end && is_ws(self.b[e - 1]) {
                    e -= 1;
                }
                moved = el.children.split_off(i);
                // Direct text after the split belongs to the parent now.
                let keep = el.text_pieces.iter().take_while(|p| p.start < next).count();
                el.text_pieces.truncate(keep);
                el.text
                    .truncate(if keep == 0 { 0 } else { piece_ends[keep - 1] });
                let d = Diagnostic::new(
                    Code::D102,
                    el.name_range,
                    format!("`<{name}>` is not closed before the next `<{name}>`"),
                )
                .related(None, moved[0].name_range, format!("the next `<{name}>`"))
                .fix(Fix::insert(
                    format!("Insert `</{name}>`"),
                    e,
                    format!("</{name}>"),
                ));
                (e, d)
            }
            None => {
                let d = match outer {
                    Some((outer_name, outer_range)) => Diagnostic::new(
                        Code::D102,
                        el.name_range,
                        format!("`<{name}>` is not closed: `</{outer_name}>` ends `<{outer_name}>` before it"),
                    )
                    .related(None, outer_range, format!("`</{outer_name}>` is here"))
                    .fix(Fix::insert(format!("Insert `</{name}>`"), at, format!("</{name}>"))),
                    None => {
                        eof_insert.push_str(&format!("</{name}>"));
                        Diagnostic::new(
                            Code::D102,
                            el.name_range,
                            format!("`<{name}>` is never closed"),
                        )
                        .fix(Fix::insert(
                            format!("Insert `</{name}>`"),
                            at,
                            format!("\n{eof_insert}"),
                        ))
                    }
                };
                (at, d)
            }
        };
        self.error(diag);
        let text_span = match split {
            None => text_span,
            Some(_) => {
                let mut span: Option<(usize, usize)> = None;
                for p in &el.text_pieces {
                    let raw = &self.s[p.start..p.end];
                    if let Some(off) = raw.find(|c: char| !c.is_whitespace()) {
                        let first = p.start + off;
                        let last = p.start + raw.trim_end().len();
                        span = Some(span.map_or((first, last), |(a, _)| (a, last)));
                    }
                }
                span
            }
        };
        el.range = TextRange::new(el.range.start, end.max(el.start_tag.end));
        el.content = Some(TextRange::new(el.start_tag.end, end.max(el.start_tag.end)));
        el.text_range = text_span.map(|(a, b)| TextRange::new(a, b));
        el.end_name_range = None;
        el.closed = false;
        self.attach(el);
        if let Some(parent) = self.stack.last_mut() {
            parent.el.children.extend(moved);
        } else if !moved.is_empty() {
            // The root split: what follows is outside it (reported as trailing by the caller's
            // next round only if text follows; here the elements are simply left out).
        }
    }

    /// Opaque content: everything up to `</name>`.
    fn opaque_content(&mut self) {
        let Some(open) = self.stack.last() else {
            return;
        };
        let name = open.el.name.clone();
        let close = format!("</{name}");
        let mut from = self.pos;
        let found = loop {
            match self.find(from, &close) {
                Some(i) => {
                    let after = i + close.len();
                    let q = self.skip_ws(after);
                    if after < self.end
                        && !is_name_char(self.b[after])
                        && q < self.end
                        && self.b[q] == b'>'
                    {
                        break Some(i);
                    }
                    from = i + 1;
                }
                None => break None,
            }
        };
        let content_end = found.unwrap_or(self.end);
        let raw = &self.s[self.pos..content_end];
        let t = raw.trim();
        let text =
            if t.starts_with("<![CDATA[") && t.ends_with("]]>") && t.matches("]]>").count() == 1 {
                t["<![CDATA[".len()..t.len() - 3].to_string()
            } else {
                unescape_lenient(raw)
            };
        let range = TextRange::new(self.pos, content_end);
        self.push_text(range, &text);
        self.pos = content_end;
    }

    fn end_tag(&mut self) {
        let lt = self.pos;
        let name_start = lt + 2;
        let name_end = self.read_name(name_start);
        let name = self.s[name_start..name_end].to_string();
        let name_range = TextRange::new(name_start, name_end);
        let p = self.skip_ws(name_end);
        let tag_end = if p < self.end && self.b[p] == b'>' {
            p + 1
        } else {
            self.error(
                Diagnostic::new(
                    Code::D102,
                    name_range,
                    format!("the end tag `</{name}` is not closed with `>`"),
                )
                .fix(Fix::insert("Insert `>`", name_end, ">")),
            );
            p
        };
        self.pos = tag_end.max(name_end);
        let tag = TextRange::new(lt, self.pos);
        let Some(idx) = self.stack.iter().rposition(|o| o.el.name == name) else {
            let mut d;
            let mut closes_top = false;
            match self.stack.last() {
                Some(open) => {
                    let open_name = open.el.name.clone();
                    // A misspelled end tag (`</stpe>`) still ends the element it was meant for.
                    closes_top = crate::diag::closest(&name, [open_name.as_str()]).is_some();
                    d = Diagnostic::new(
                        Code::D102,
                        name_range,
                        format!("`</{name}>` does not match the open `<{open_name}>`"),
                    )
                    .related(
                        None,
                        open.el.name_range,
                        format!("`<{open_name}>` opens here"),
                    )
                    .fix(Fix::replace(
                        format!("Change to `</{open_name}>`"),
                        name_range,
                        open_name.clone(),
                    ));
                }
                None => {
                    d = Diagnostic::new(
                        Code::D102,
                        name_range,
                        format!("`</{name}>` closes no open element"),
                    );
                }
            }
            if !closes_top {
                d = d.fix(Fix::replace(format!("Remove `</{name}>`"), tag, ""));
            }
            self.error(d);
            if closes_top {
                self.pop_finish(self.pos, lt, Some(name_range));
            }
            return;
        };
        // Elements opened after the matching one were never closed: close them here.
        let mut unused = String::new();
        while self.stack.len() > idx + 1 {
            self.close_unclosed(lt, Some((&name, name_range)), &mut unused);
        }
        self.pop_finish(self.pos, lt, Some(name_range));
    }

    fn close_all_at_eof(&mut self) {
        // The end of the content without trailing whitespace.
        let mut end = self.end;
        while end > self.start && is_ws(self.b[end - 1]) {
            end -= 1;
        }
        let mut insert = String::new();
        while !self.stack.is_empty() {
            self.close_unclosed(end, None, &mut insert);
        }
    }

    /// After `</directive>`: only whitespace, comments and processing instructions may follow.
    fn trailing(&mut self) {
        let mut p = self.pos;
        let mut first = None;
        while p < self.end {
            p = self.skip_ws(p);
            if p >= self.end {
                break;
            }
            if self.starts_with(p, "<!--") {
                match self.find(p + 4, "-->") {
                    Some(i) => {
                        p = i + 3;
                        continue;
                    }
                    None => {
                        first = Some(p);
                        break;
                    }
                }
            }
            first = Some(p);
            break;
        }
        self.pos = self.end;
        let Some(first) = first else { return };
        let mut last = self.end;
        while last > first && is_ws(self.b[last - 1]) {
            last -= 1;
        }
        let r = TextRange::new(first, last);
        let mut d = Diagnostic::new(
            Code::D103,
            r,
            "text after `</directive>` inside the fence is not part of the directive",
        );
        if let Some(after) = self.after_fence {
            let moved = self.s[first..last].to_string();
            let nl = if self.s[..after].ends_with('\n') {
                ""
            } else {
                "\n"
            };
            d = d.fix(Fix {
                title: "Move it out of the fence".into(),
                edits: vec![
                    TextEdit {
                        range: TextRange::new(first, last),
                        new_text: String::new(),
                    },
                    TextEdit {
                        range: TextRange::empty(after),
                        new_text: format!("{nl}\n{moved}\n"),
                    },
                ],
                rename_to: None,
            });
        }
        self.diags.push(d);
    }
}
