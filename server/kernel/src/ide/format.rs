//! Formatting: a directive's XML inside its fence, and YAML tools. Only indentation and
//! whitespace at line ends change, never the number of lines, the markdown around the fence,
//! an attribute value, the inside of an opaque element (`<template>`...) or of a CDATA
//! section, or a YAML block scalar's own text. The result is parsed again and compared with
//! the original (the element tree, its text read line by line without its indentation, and
//! the diagnostics; for YAML the value and the syntax errors): when anything differs the
//! file is not formatted. Formatting a formatted text changes nothing.

use crate::diag::TextEdit;
use crate::directive::{self, Element, OPAQUE};
use crate::text::TextRange;
use crate::tool::ToolFormat;
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Parsed};
use std::collections::HashMap;

/// The spaces of one level of indentation.
const INDENT: usize = 2;

/// The edits that format `item` (none when it is formatted already), or why it is not
/// formatted (not a directive or a YAML tool, a signature formatting would break, a change
/// of meaning the formatter refuses).
pub fn format(item: &Item) -> Result<Vec<TextEdit>, String> {
    if !item.space.is_writable() {
        return Err(format!(
            "it is in the read-only `{}` space: kiwi never edits its files",
            item.space
        ));
    }
    let text = item.text();
    let formatted = match &item.parsed {
        Parsed::Directive(d) => {
            if let Some(h) = &d.header {
                if h.has_real_hash()
                    && h.hash.as_ref().map(|s| s.value.as_str())
                        == directive::content_hash(text, d).as_deref()
                {
                    return Err(
                        "the directive is signed: formatting would break its signature".into(),
                    );
                }
            }
            format_directive(text)?
        }
        Parsed::Tool(t) if t.format == ToolFormat::Yaml => format_yaml(text)?,
        _ => return Err("only directives and YAML tools are formatted".into()),
    };
    Ok(line_edits(text, &formatted))
}

/// One edit per changed line (the formatter keeps the number of lines).
fn line_edits(old: &str, new: &str) -> Vec<TextEdit> {
    if old == new {
        return Vec::new();
    }
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    if old_lines.len() != new_lines.len() {
        return vec![TextEdit {
            range: TextRange::new(0, old.len()),
            new_text: new.to_string(),
        }];
    }
    let mut edits = Vec::new();
    let mut at = 0;
    for (o, n) in old_lines.iter().zip(&new_lines) {
        if o != n {
            edits.push(TextEdit {
                range: TextRange::new(at, at + o.len()),
                new_text: n.to_string(),
            });
        }
        at += o.len() + 1;
    }
    edits
}

/// A line of `text`: its start, the end of its content (before `\r\n` or `\n`), its end.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
}

fn lines_in(text: &str, range: TextRange) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let nl = text[start..range.end]
            .find('\n')
            .map(|i| start + i)
            .unwrap_or(range.end);
        let end = if nl > start && text.as_bytes()[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        out.push(Line { start, end });
        start = nl + 1;
    }
    out
}

fn indent_len(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t']).len()
}

/// Apply new line contents (`Some`) to `text`.
fn rebuild(text: &str, lines: &[Line], new: &[Option<String>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (l, n) in lines.iter().zip(new) {
        if let Some(n) = n {
            out.push_str(&text[at..l.start]);
            out.push_str(n);
            at = l.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

// ---------------------------------------------------------------------------------------
// directives

struct Tags {
    /// Start tag `<` offset → depth.
    starts: HashMap<usize, usize>,
    /// End tag `<` offset → depth.
    ends: HashMap<usize, usize>,
    /// Offsets just after a tag's `>`.
    tag_ends: Vec<usize>,
    /// Start tags spanning lines.
    long_tags: Vec<TextRange>,
    /// Where a line start is left alone: opaque contents, CDATA, attribute values.
    protected: Vec<TextRange>,
}

fn collect(text: &str, el: &Element, depth: usize, t: &mut Tags) {
    t.starts.insert(el.start_tag.start, depth);
    t.tag_ends.push(el.start_tag.end);
    if text
        .get(el.start_tag.start..el.start_tag.end)
        .is_some_and(|s| s.contains('\n'))
    {
        t.long_tags.push(el.start_tag);
    }
    for a in &el.attrs {
        // A line that starts where the value ends still starts inside its quotes.
        t.protected
            .push(TextRange::new(a.value_range.start, a.value_range.end + 1));
    }
    if let Some(n) = el.end_name_range {
        if n.start >= 2 && text.get(n.start - 2..n.start) == Some("</") {
            t.ends.insert(n.start - 2, depth);
            t.tag_ends.push(el.range.end);
        }
    }
    if OPAQUE.contains(&el.name.as_str()) {
        t.protected
            .push(TextRange::new(el.start_tag.end, el.range.end));
        return;
    }
    for c in &el.children {
        collect(text, c, depth + 1, t);
    }
}

/// CDATA sections and comments of a range: CDATA is protected; comment ends are tag ends.
fn cdata_and_comments(text: &str, range: TextRange, t: &mut Tags) {
    let s = &text[range.start..range.end];
    let mut i = 0;
    while i < s.len() {
        let Some(rel) = s[i..].find("<!") else {
            break;
        };
        let at = i + rel;
        let (close, protect) = if s[at..].starts_with("<!--") {
            ("-->", false)
        } else if s[at..].starts_with("<![CDATA[") {
            ("]]>", true)
        } else {
            i = at + 2;
            continue;
        };
        let end = s[at..]
            .find(close)
            .map(|e| at + e + close.len())
            .unwrap_or(s.len());
        if protect {
            t.protected
                .push(TextRange::new(range.start + at, range.start + end));
        } else {
            t.tag_ends.push(range.start + end);
        }
        i = end;
    }
}

/// The innermost element whose content holds `offset`, with its depth.
fn parent_at(root: &Element, offset: usize) -> Option<(&Element, usize)> {
    let inside = |e: &Element| {
        e.content
            .is_some_and(|c| c.start <= offset && offset <= c.end)
    };
    if !inside(root) {
        return None;
    }
    let mut cur = root;
    let mut depth = 0;
    while let Some(next) = cur.children.iter().find(|c| inside(c)) {
        cur = next;
        depth += 1;
    }
    Some((cur, depth))
}

pub(crate) fn format_directive(text: &str) -> Result<String, String> {
    let d = directive::parse(text);
    let (Some(fence), Some(root)) = (d.fence, d.root.as_ref()) else {
        return Err("no directive fence to format".into());
    };
    let mut t = Tags {
        starts: HashMap::new(),
        ends: HashMap::new(),
        tag_ends: Vec::new(),
        long_tags: Vec::new(),
        protected: Vec::new(),
    };
    collect(text, root, 0, &mut t);
    cdata_and_comments(text, fence, &mut t);
    t.tag_ends.sort_unstable();
    let protected = |at: usize| t.protected.iter().any(|r| r.start < at && at < r.end);
    let lines = lines_in(text, fence);
    let mut new: Vec<Option<String>> = vec![None; lines.len()];
    // Text lines: (line, parent start, its depth, its indentation).
    let mut text_lines: Vec<(usize, usize, usize, usize)> = Vec::new();
    // The indentation change of the line each long start tag begins on.
    let mut tag_shift: HashMap<usize, (isize, usize)> = HashMap::new();
    for (n, l) in lines.iter().enumerate() {
        let s = &text[l.start..l.end];
        if protected(l.start) {
            continue;
        }
        let ind = indent_len(s);
        let p = l.start + ind;
        let body = &s[ind..];
        let trim_end = body
            .trim_end_matches([' ', '\t'])
            .len()
            .ne(&body.len())
            .then(|| {
                let kept = body.trim_end_matches([' ', '\t']);
                let end = p + kept.len();
                (kept.ends_with('>') && t.tag_ends.binary_search(&end).is_ok() && !protected(end))
                    .then_some(kept)
            })
            .flatten();
        let body = trim_end.unwrap_or(body);
        if body.is_empty() {
            new[n] = Some(String::new());
            continue;
        }
        let depth = t.starts.get(&p).or_else(|| t.ends.get(&p)).copied();
        if let Some(depth) = depth {
            let want = depth * INDENT;
            if let Some(tag) = t.long_tags.iter().find(|r| r.start == p) {
                tag_shift.insert(tag.start, (want as isize - ind as isize, want));
            }
            new[n] = Some(format!("{}{body}", " ".repeat(want)));
            continue;
        }
        if let Some(tag) = t
            .long_tags
            .iter()
            .find(|r| r.start < l.start && l.start < r.end)
        {
            if let Some(&(shift, tag_indent)) = tag_shift.get(&tag.start) {
                if !s[..ind].contains('\t') {
                    let want = ((ind as isize + shift).max(0) as usize).max(tag_indent + INDENT);
                    new[n] = Some(format!("{}{body}", " ".repeat(want)));
                }
            }
            continue;
        }
        match parent_at(root, p) {
            Some((parent, depth)) => {
                text_lines.push((n, parent.start_tag.start, depth, ind));
                if trim_end.is_some() {
                    new[n] = Some(format!("{}{body}", &s[..ind]));
                }
            }
            None => {
                if trim_end.is_some() {
                    new[n] = Some(format!("{}{body}", &s[..ind]));
                }
            }
        }
    }
    // Text keeps its own relative indentation, one level inside its element.
    let mut blocks: HashMap<usize, (usize, bool)> = HashMap::new();
    for &(n, parent, _, ind) in &text_lines {
        let l = lines[n];
        let tab = text[l.start..l.start + ind].contains('\t');
        let e = blocks.entry(parent).or_insert((usize::MAX, false));
        e.0 = e.0.min(ind);
        e.1 |= tab;
    }
    for &(n, parent, depth, ind) in &text_lines {
        let (min, tab) = blocks[&parent];
        if tab {
            continue;
        }
        let l = lines[n];
        let current = new[n]
            .take()
            .unwrap_or_else(|| text[l.start..l.end].to_string());
        let body = &current[ind..];
        new[n] = Some(format!(
            "{}{body}",
            " ".repeat((depth + 1) * INDENT + ind - min)
        ));
    }
    for (n, l) in lines.iter().enumerate() {
        if new[n].as_deref() == Some(&text[l.start..l.end]) {
            new[n] = None;
        }
    }
    let out = rebuild(text, &lines, &new);
    let after = directive::parse(&out);
    if directive_meaning(text, &d) != directive_meaning(&out, &after) {
        return Err("formatting would change what the directive says: not formatted".into());
    }
    Ok(out)
}

/// What a directive says: its elements, attributes and text (each line without its
/// indentation; an opaque element's text exactly), its diagnostics' codes.
fn directive_meaning(text: &str, d: &directive::Directive) -> String {
    fn walk(text: &str, el: &Element, out: &mut String) {
        out.push('<');
        out.push_str(&el.name);
        for a in &el.attrs {
            out.push_str(&format!(" {}={:?}", a.name, a.value));
        }
        out.push('>');
        if OPAQUE.contains(&el.name.as_str()) {
            if let Some(c) = el.content {
                out.push_str(&format!("{:?}", text.get(c.start..c.end)));
            }
        } else {
            let lines: Vec<&str> = el.text.lines().map(str::trim).collect();
            out.push_str(&format!("{:?}", lines.join("\n").trim()));
            for c in &el.children {
                walk(text, c, out);
            }
        }
        out.push_str("</>");
    }
    let mut out = String::new();
    if let Some(root) = &d.root {
        walk(text, root, &mut out);
    }
    // D112 (the header's hash) aside: formatting an edited signed directive may restore it.
    for x in d
        .diagnostics
        .iter()
        .filter(|x| x.code != crate::diag::Code::D112)
    {
        out.push_str(&format!(" {:?}", x.code));
    }
    let fence = d.fence.unwrap_or(TextRange::empty(0));
    out.push_str(&format!(
        "{:?}{:?}",
        &text[..fence.start],
        &text[fence.end.min(text.len())..]
    ));
    out
}

// ---------------------------------------------------------------------------------------
// YAML tools

pub(crate) fn format_yaml(text: &str) -> Result<String, String> {
    let doc = crate::yaml::parse(text, 0);
    if !doc.errors.is_empty() {
        return Err("the YAML has syntax errors: not formatted".into());
    }
    // Scalars and flow collections spanning lines: their later lines move with their first.
    let mut spans: Vec<TextRange> = Vec::new();
    if let Some(v) = &doc.value {
        v.walk(&mut |v: &Value| {
            let multi = text
                .get(v.range.start..v.range.end)
                .is_some_and(|s| s.contains('\n'));
            if !multi {
                return;
            }
            let block = matches!(v.kind, ValueKind::List(_) | ValueKind::Map(_))
                && !text[v.range.start..].starts_with(['[', '{']);
            if !block {
                spans.push(v.range);
            }
        });
    }
    let lines = lines_in(text, TextRange::new(0, text.len()));
    let line_of = |at: usize| lines.partition_point(|l| l.start <= at).saturating_sub(1);
    // The lines that only continue a value started above, and the line it starts on.
    let mut continues: Vec<Option<usize>> = vec![None; lines.len()];
    for s in &spans {
        let first = line_of(s.start);
        let last = line_of(s.end.saturating_sub(1));
        for c in continues.iter_mut().take(last + 1).skip(first + 1) {
            if c.is_none() {
                *c = Some(first);
            }
        }
    }
    // A block scalar's header line (`key: |`) is where its lines start too.
    let mut new: Vec<Option<String>> = vec![None; lines.len()];
    let mut shift: Vec<isize> = vec![0; lines.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut comments: Vec<usize> = Vec::new();
    let mut in_document = true;
    for (n, l) in lines.iter().enumerate() {
        let s = &text[l.start..l.end];
        let ind = indent_len(s);
        let body = &s[ind..];
        if let Some(first) = continues[n] {
            // Inside a multi-line value: moved with the line it starts on; a block scalar's
            // own text (trailing spaces, blank lines) is left as it is.
            let d = shift[first];
            shift[n] = d;
            if d != 0 && !body.is_empty() && !s[..ind].contains('\t') {
                let want = (ind as isize + d).max(0) as usize;
                new[n] = Some(format!("{}{body}", " ".repeat(want)));
            }
            continue;
        }
        if !in_document {
            continue;
        }
        let kept = body.trim_end_matches([' ', '\t']);
        if kept.is_empty() {
            if !body.is_empty() || ind > 0 {
                new[n] = Some(String::new());
            }
            continue;
        }
        if s[..ind].contains('\t') {
            return Err("tab indentation: not formatted".into());
        }
        if kept.starts_with('#') {
            comments.push(n);
            continue;
        }
        if ind == 0 && (kept.starts_with("---") || kept.starts_with("...") || kept.starts_with('%'))
        {
            if n > 0 && (kept.starts_with("---") || kept.starts_with("...")) && !stack.is_empty() {
                in_document = false; // a second document: left as it is
            }
            stack.clear();
            continue;
        }
        while stack.last().is_some_and(|&top| top > ind) {
            stack.pop();
        }
        if stack.last() != Some(&ind) {
            stack.push(ind);
        }
        let want = (stack.len() - 1) * INDENT;
        // `-   key: v`: one space after the dash, so that the entry's keys line up.
        let body = match kept.strip_prefix('-') {
            Some(rest)
                if rest.starts_with(' ')
                    && !rest.trim_start().is_empty()
                    && !rest.trim_start().starts_with(['#', '|', '>']) =>
            {
                format!("- {}", rest.trim_start())
            }
            _ => kept.to_string(),
        };
        shift[n] = want as isize - ind as isize;
        for c in comments.drain(..) {
            let cs = &text[lines[c].start..lines[c].end];
            let ci = indent_len(cs);
            let cw = (ci as isize + shift[n]).max(0) as usize;
            new[c] = Some(format!("{}{}", " ".repeat(cw), cs[ci..].trim_end()));
        }
        new[n] = Some(format!("{}{body}", " ".repeat(want)));
    }
    for c in comments.drain(..) {
        let cs = &text[lines[c].start..lines[c].end];
        new[c] = Some(cs.trim_end().to_string());
    }
    for (n, l) in lines.iter().enumerate() {
        if new[n].as_deref() == Some(&text[l.start..l.end]) {
            new[n] = None;
        }
    }
    let out = rebuild(text, &lines, &new);
    let after = crate::yaml::parse(&out, 0);
    if !after.errors.is_empty() || !same_value(doc.value.as_ref(), after.value.as_ref()) {
        return Err("formatting would change the YAML's value: not formatted".into());
    }
    Ok(out)
}

/// Equal values, ranges aside.
fn same_value(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => plain(a) == plain(b),
        _ => false,
    }
}

/// A value without ranges, non-literals included.
fn plain(v: &Value) -> String {
    match &v.kind {
        ValueKind::Map(m) => {
            let mut s = String::from("{");
            for e in m {
                s.push_str(&format!("{:?}:{},", e.key, plain(&e.value)));
            }
            s + "}"
        }
        ValueKind::List(l) => {
            let mut s = String::from("[");
            for x in l {
                s.push_str(&plain(x));
                s.push(',');
            }
            s + "]"
        }
        ValueKind::Str(x) => format!("{:?}", x.value),
        ValueKind::NonLiteral(n) => format!("?{n:?}"),
        other => format!("{other:?}"),
    }
}
