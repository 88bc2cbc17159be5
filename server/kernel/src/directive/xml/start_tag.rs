//! The reader's start tags: names, attributes and quoted values (with the markup embedded in
//! a value skipped as a unit), and their offending characters.

use super::{entity, is_name_start, is_ws, unescape_lenient, Offence, Offender, Reader, OPAQUE};
use crate::diag::{Code, Diagnostic, Fix};
use crate::directive::{Attr, Element};
use crate::text::TextRange;

impl<'a> Reader<'a> {
    pub(super) fn start_tag(&mut self) {
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
}
