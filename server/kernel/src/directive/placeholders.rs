//! Placeholders in text and attribute values: `{input:NAME}`, `{input:NAME?}`,
//! `{input:NAME:DEFAULT}`, the older `{NAME}` (only for a declared input) and
//! `{system.ITEM.FIELD}`; D108, D109 and D111. rye's `${input:NAME}` interpolation counts as
//! a use (D111).

use super::markdown::Fence;
use super::xml::OPAQUE;
use super::{Directive, Element, Placeholder, PlaceholderKind};
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix, Tag};
use crate::text::TextRange;
use std::collections::HashSet;

/// A `{...}` found in raw text, before it is known whether it is a placeholder.
#[derive(Debug)]
struct Raw {
    /// The whole `{...}`.
    range: TextRange,
    /// Between the braces.
    inner: TextRange,
}

fn is_ident(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// Every `{...}` of `text[range]` that could be a placeholder: no nested brace, no line end,
/// not `${...}` (shell and hook variables).
fn scan(text: &str, range: TextRange, out: &mut Vec<Raw>) {
    let Some(s) = text.get(range.start..range.end) else {
        return;
    };
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(rel) = s[i..].find('{') {
        let open = i + rel;
        i = open + 1;
        if open > 0 && b[open - 1] == b'$' {
            continue;
        }
        let limit = (open + 1 + 256).min(b.len());
        let Some(close_rel) = b[open + 1..limit]
            .iter()
            .position(|&c| matches!(c, b'}' | b'{' | b'\n' | b'\r'))
        else {
            continue;
        };
        let close = open + 1 + close_rel;
        if b[close] != b'}' {
            continue;
        }
        let inner = &s[open + 1..close];
        if inner.starts_with("input:") || inner.starts_with("system.") || is_ident(inner) {
            out.push(Raw {
                range: TextRange::new(range.start + open, range.start + close + 1),
                inner: TextRange::new(range.start + open + 1, range.start + close),
            });
            i = close + 1;
        }
    }
}

/// The raw text and attribute value ranges of the tree, outside opaque elements (and,
/// separately, inside them).
fn ranges(root: &Element) -> (Vec<TextRange>, Vec<TextRange>) {
    let mut checked = Vec::new();
    let mut opaque = Vec::new();
    let mut stack: Vec<(&Element, bool)> = vec![(root, false)];
    while let Some((el, in_opaque)) = stack.pop() {
        let o = in_opaque || OPAQUE.contains(&el.name.as_str());
        let target = if o { &mut opaque } else { &mut checked };
        target.extend(el.attrs.iter().map(|a| a.value_range));
        target.extend(el.text_pieces.iter().copied());
        for c in el.children.iter().rev() {
            stack.push((c, o));
        }
    }
    checked.sort_unstable();
    opaque.sort_unstable();
    (checked, opaque)
}

pub(crate) fn run(text: &str, root: &Element, fence: &Fence, d: &mut Directive) {
    let (checked, opaque) = ranges(root);
    let mut raws = Vec::new();
    for r in &checked {
        scan(text, *r, &mut raws);
    }
    let declared: HashSet<&str> = d
        .inputs
        .iter()
        .map(|i| i.name.value.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let mut input_names: Vec<&str> = Vec::new();
    for i in &d.inputs {
        if !input_names.contains(&i.name.value.as_str()) {
            input_names.push(&i.name.value);
        }
    }
    let mut used: HashSet<String> = HashSet::new();
    let mut diags = Vec::new();
    let mut placeholders = Vec::new();
    for raw in &raws {
        let inner = &text[raw.inner.start..raw.inner.end];
        if let Some(rest) = inner.strip_prefix("input:") {
            let name_len = rest.find(['?', ':']).unwrap_or(rest.len());
            let name = &rest[..name_len];
            let tail = &rest[name_len..];
            let optional = tail == "?";
            let default = tail.strip_prefix(':').map(str::to_string);
            let name_range = TextRange::new(
                raw.inner.start + "input:".len(),
                raw.inner.start + "input:".len() + name_len,
            );
            used.insert(name.to_string());
            if !declared.contains(name) {
                diags.push(unknown_input(name, name_range, &input_names));
            }
            placeholders.push(Placeholder {
                kind: PlaceholderKind::Input {
                    name: name.to_string(),
                    optional,
                    default,
                },
                range: raw.range,
            });
        } else if let Some(rest) = inner.strip_prefix("system.") {
            let path_range = TextRange::new(raw.inner.start + "system.".len(), raw.inner.end);
            let (item, field) = rest.split_once('.').unwrap_or((rest, ""));
            if crate::system::field(item, field).is_none() {
                let sug = closest(rest, field_paths().iter().map(String::as_str));
                let msg = if crate::system::item(item).is_none() {
                    format!(
                        "`system.{rest}`: there is no system item `{item}` (items: paths, runtime, shell, mcp){}",
                        did_you_mean(sug)
                    )
                } else {
                    format!(
                        "`system.{rest}`: the system item `{item}` has no field `{field}`{}",
                        did_you_mean(sug)
                    )
                };
                let mut diag = Diagnostic::new(Code::D109, path_range, msg);
                if let Some(s) = sug {
                    diag = diag.fix(Fix::replace(format!("Change to `{s}`"), path_range, s));
                }
                diags.push(diag);
            }
            placeholders.push(Placeholder {
                kind: PlaceholderKind::System {
                    item: item.to_string(),
                    field: field.to_string(),
                },
                range: raw.range,
            });
        } else if declared.contains(inner) {
            used.insert(inner.to_string());
            placeholders.push(Placeholder {
                kind: PlaceholderKind::Bare {
                    name: inner.to_string(),
                },
                range: raw.range,
            });
        }
    }
    // Uses that are not checked still count for D111: opaque text, and the markdown body.
    let mut extra = Vec::new();
    for r in &opaque {
        scan(text, *r, &mut extra);
    }
    scan(text, TextRange::new(0, fence.open_line.start), &mut extra);
    if let Some(after) = fence.after_close {
        scan(text, TextRange::new(after, text.len()), &mut extra);
    }
    for raw in &extra {
        let inner = &text[raw.inner.start..raw.inner.end];
        let name = match inner.strip_prefix("input:") {
            Some(rest) => &rest[..rest.find(['?', ':']).unwrap_or(rest.len())],
            None => inner,
        };
        used.insert(name.to_string());
    }
    // rye's interpolation: `${input:NAME}` (and `${inputs.NAME}`, a path into the context).
    for prefix in ["${input:", "${inputs.", "${input."] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            rest = &rest[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            used.insert(rest[..end].to_string());
        }
    }
    let mut reported: HashSet<&str> = HashSet::new();
    for input in &d.inputs {
        let n = &input.name.value;
        // A duplicate is D107's; the first declaration carries D111.
        if n.is_empty() || used.contains(n.as_str()) || !reported.insert(n.as_str()) {
            continue;
        }
        let mut diag = Diagnostic::new(
            Code::D111,
            input.name.range,
            format!("input `{n}` is declared but never used (no `{{input:{n}}}` anywhere)"),
        )
        .tag(Tag::Unnecessary);
        let del = super::checks::whole_lines(text, input.range);
        diag = diag.fix(Fix::replace(format!("Remove the input `{n}`"), del, ""));
        diags.push(diag);
    }
    d.placeholders = placeholders;
    d.diagnostics.extend(diags);
}

fn field_paths() -> &'static [String] {
    static PATHS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PATHS.get_or_init(crate::system::all_field_paths)
}

fn unknown_input(name: &str, range: TextRange, inputs: &[&str]) -> Diagnostic {
    if name.is_empty() {
        return Diagnostic::new(Code::D108, range, "`{input:}` names no input");
    }
    let sug = closest(name, inputs.iter().copied().filter(|n| !n.is_empty()));
    let msg = if inputs.is_empty() {
        format!("`{{input:{name}}}`: the directive declares no inputs")
    } else {
        format!(
            "`{{input:{name}}}` names no declared input (inputs: {}){}",
            inputs.join(", "),
            did_you_mean(sug)
        )
    };
    let mut d = Diagnostic::new(Code::D108, range, msg);
    if let Some(s) = sug {
        d = d.fix(Fix::replace(format!("Change to `{s}`"), range, s));
    }
    d
}
