//! The reader's open-element stack: pushing and attaching elements, end tags, elements left
//! unclosed, opaque content, the end of the input and what trails the root.

use super::{is_name_char, is_ws, unescape_lenient, Open, Reader, MAX_DEPTH};
use crate::diag::{Code, Diagnostic, Fix, TextEdit};
use crate::directive::Element;
use crate::text::TextRange;

impl<'a> Reader<'a> {
    pub(super) fn push_open(&mut self, el: Element) {
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
    pub(super) fn attach(&mut self, mut el: Element) {
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
    pub(super) fn opaque_content(&mut self) {
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

    pub(super) fn end_tag(&mut self) {
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

    pub(super) fn close_all_at_eof(&mut self) {
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
    pub(super) fn trailing(&mut self) {
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
