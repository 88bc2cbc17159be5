//! Syntax errors: the smallest range that shows each, with a message that names the usual cause.

use super::{line_start, MAX_ERRORS};
use crate::text::TextRange;
use tree_sitter::Node;

/// Syntax errors of a tree, with messages that name the usual cause.
pub(super) fn collect_errors(src: &str, base: usize, root: Node) -> Vec<(TextRange, String)> {
    let mut out: Vec<(TextRange, String)> = Vec::new();
    let shift = |s: usize, e: usize| TextRange::new(s + base, e + base);
    // Text the parser could not reach at all.
    let unreached = src
        .get(root.end_byte()..)
        .map(|rest| rest.len() - rest.trim_start().len() + root.end_byte())
        .filter(|p| *p < src.len());
    if let Some(pos) = unreached {
        let (s, e, msg) = explain_stop(src, pos);
        out.push((shift(s, e), msg));
    }
    if !root.has_error() {
        return out;
    }
    let before = out.len();
    let mut c = root.walk();
    'walk: loop {
        let n = c.node();
        let mut descend = true;
        if n.is_missing() {
            let kind = n.kind();
            out.push((
                shift(n.start_byte(), n.end_byte()),
                format!("missing `{kind}` here"),
            ));
            descend = false;
        } else if n.is_error() && n.id() != root.id() {
            let (s, e, msg) = explain_error(src, n);
            out.push((shift(s, e), msg));
            descend = false;
        } else if !n.has_error() {
            descend = false;
        }
        if out.len() >= MAX_ERRORS {
            break;
        }
        if descend && c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                continue 'walk;
            }
            if !c.goto_parent() {
                break 'walk;
            }
        }
    }
    if root.is_error() {
        // The whole text is one error: brackets it opens and never closes are the usual cause.
        let mut open: Vec<Node> = Vec::new();
        let mut c = root.walk();
        for ch in root.children(&mut c) {
            match ch.kind() {
                "[" | "{" => open.push(ch),
                "]" | "}" => {
                    open.pop();
                }
                _ => {}
            }
        }
        for o in open {
            let (s, e) = line_rest(src, o.start_byte());
            let closer = if o.kind() == "[" { "]" } else { "}" };
            out.push((
                shift(s, e),
                format!("this `{}` is never closed; add `{closer}`", o.kind()),
            ));
        }
        if out.len() == before && unreached.is_none() {
            // Point at where the structure broke down: the first thing that is not a pair.
            let mut c = root.walk();
            let at = root
                .children(&mut c)
                .find(|x| !matches!(x.kind(), "block_mapping_pair" | "comment"))
                .map_or(root.start_byte(), |x| x.start_byte());
            let (s, e, msg) = explain_stop(src, at);
            out.push((shift(s, e), msg));
        }
    }
    out.sort_by_key(|(r, _)| (r.start, r.end));
    out.dedup_by(|a, b| a.0 == b.0);
    out.truncate(MAX_ERRORS);
    out
}

/// The part of the line at `pos` that starts with non-blank text, without the line end.
fn line_rest(src: &str, pos: usize) -> (usize, usize) {
    let b = src.as_bytes();
    let mut e = pos;
    while e < b.len() && b[e] != b'\n' && b[e] != b'\r' {
        e += 1;
    }
    let trimmed = src[pos..e].trim_end().len();
    (pos, pos + trimmed)
}

/// Tab characters in the indentation of the line holding `pos`, if any.
fn tab_indent(src: &str, pos: usize) -> Option<(usize, usize)> {
    let ls = line_start(src, pos);
    let indent_end = ls
        + src[ls..]
            .bytes()
            .take_while(|c| *c == b' ' || *c == b'\t')
            .count();
    let first_tab = src[ls..indent_end].find('\t')? + ls;
    let last_tab = src[ls..indent_end].rfind('\t')? + ls;
    Some((first_tab, last_tab + 1))
}

const TAB_MESSAGE: &str =
    "a tab is used for indentation; YAML allows only spaces there (replace the tab with spaces)";

/// Where and why parsing stopped at `pos` (text the parser never reached).
fn explain_stop(src: &str, pos: usize) -> (usize, usize, String) {
    if let Some((s, e)) = tab_indent(src, pos) {
        return (s, e, TAB_MESSAGE.to_string());
    }
    let ls = line_start(src, pos);
    let first = ls + (src[ls..].len() - src[ls..].trim_start_matches([' ', '\t']).len());
    let (s, e) = line_rest(src, first.min(pos));
    let rest = &src[pos..];
    let msg = if rest.starts_with(':') {
        "a mapping value is not allowed here: quote a value that contains `: `, or fix the indentation of this line".to_string()
    } else if rest.starts_with("- ") || rest.starts_with('-') && rest.len() == 1 {
        "a list item is not allowed here; check the indentation of this line".to_string()
    } else {
        format!(
            "invalid YAML: cannot read `{}`; check the indentation and quoting of this line",
            snippet(&src[s..e])
        )
    };
    (s, e, msg)
}

fn explain_error(src: &str, n: Node) -> (usize, usize, String) {
    let (s, e) = (n.start_byte(), n.end_byte().min(src.len()));
    let text = src.get(s..e).unwrap_or("");
    if let Some((ts, te)) = tab_indent(src, s).or_else(|| {
        text.starts_with(['\t'])
            .then(|| (s, s + text.bytes().take_while(|c| *c == b'\t').count()))
    }) {
        return (ts, te, TAB_MESSAGE.to_string());
    }
    let mut c = n.walk();
    let kinds: Vec<&str> = n.children(&mut c).map(|x| x.kind()).collect();
    let first = kinds.first().copied().unwrap_or("");
    let closer = |open: &str| match open {
        "\"" => "\"",
        "'" => "'",
        "[" => "]",
        "{" => "}",
        _ => "",
    };
    if matches!(first, "\"" | "'" | "[" | "{") && !kinds[1..].contains(&closer(first)) {
        let what = match first {
            "\"" => "double-quoted string",
            "'" => "single-quoted string",
            "[" => "`[`",
            _ => "`{`",
        };
        // Point at the first line of it.
        let (ls, le) = line_rest(src, s);
        return (
            ls,
            le.max(ls + 1).min(e.max(ls + 1)),
            format!("this {what} is never closed; add `{}`", closer(first)),
        );
    }
    let parent_is_mapping = n
        .parent()
        .is_some_and(|p| matches!(p.kind(), "block_mapping" | "block_node" | "document"));
    let named: Vec<&str> = {
        let mut c = n.walk();
        n.named_children(&mut c).map(|x| x.kind()).collect()
    };
    if parent_is_mapping && named == ["flow_node"] && !text.contains(':') {
        let (ls, le) = line_rest(src, s);
        return (
            ls,
            le,
            format!(
                "`{}` is not a `key: value` pair: add `: ` after the key, or indent it under the key it continues",
                snippet(&src[ls..le])
            ),
        );
    }
    let (ls, le) = line_rest(src, s);
    let le = le.min(e).max(ls);
    (
        ls,
        if le > ls { le } else { e },
        format!(
            "invalid YAML: cannot read `{}`; check the indentation and quoting",
            snippet(&src[ls..if le > ls { le } else { e }])
        ),
    )
}

/// A short excerpt of text for a message.
pub(crate) fn snippet(s: &str) -> String {
    let first = s.lines().next().unwrap_or("").trim();
    if first.chars().count() > 40 {
        let cut: String = first.chars().take(39).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}
