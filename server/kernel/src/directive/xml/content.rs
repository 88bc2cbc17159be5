//! The reader's text between tags: comments, CDATA, and text with its offending `<` and `&`.

use super::{entity, Offence, Offender, Reader};
use crate::diag::{Code, Diagnostic, Fix};
use crate::text::TextRange;

impl<'a> Reader<'a> {
    pub(super) fn comment(&mut self) {
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

    pub(super) fn cdata(&mut self) {
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
    pub(super) fn push_text(&mut self, range: TextRange, text: &str) {
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
    pub(super) fn text(&mut self) {
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
}
