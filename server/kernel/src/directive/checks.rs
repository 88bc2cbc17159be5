//! Directive-local checks: D101, D104, D106, D107, D110, D112, and text helpers for fixes.

use super::markdown::Fence;
use super::{Directive, Element, Input};
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix};
use crate::text::TextRange;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The input types a directive may declare.
pub const INPUT_TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "array", "object", "path",
];

pub(crate) fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

fn line_end_incl(text: &str, at: usize) -> usize {
    text[at..]
        .find('\n')
        .map(|i| at + i + 1)
        .unwrap_or(text.len())
}

/// The whitespace that starts the line holding `at`.
pub(crate) fn line_indent(text: &str, at: usize) -> String {
    let s = line_start(text, at);
    text[s..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// The indentation children of `el` use (its first child's, or its own plus two spaces).
pub(crate) fn child_indent(text: &str, el: &Element) -> String {
    if let Some(c) = el.children.first() {
        let s = line_start(text, c.range.start);
        if text[s..c.range.start].trim().is_empty() {
            return text[s..c.range.start].to_string();
        }
    }
    format!("{}  ", line_indent(text, el.range.start))
}

/// `range` widened to whole lines when nothing else is on them (for deleting an element).
pub(crate) fn whole_lines(text: &str, range: TextRange) -> TextRange {
    let s = line_start(text, range.start);
    let e = line_end_incl(text, range.end);
    let before = &text[s..range.start];
    let after = &text[range.end..e];
    if before.trim().is_empty() && after.trim().is_empty() {
        TextRange::new(s, e)
    } else {
        range
    }
}

/// An edit that inserts `block` (one or more lines, without indentation) as the last child of
/// `el`, indented like its children. `None` when `el` has no end tag to insert before.
pub(crate) fn insert_last_child(text: &str, el: &Element, block: &str) -> Option<(usize, String)> {
    let content = el.content?;
    if !el.closed {
        return None;
    }
    let indent = child_indent(text, el);
    let body: String = block.lines().map(|l| format!("{indent}{l}\n")).collect();
    let at = line_start(text, content.end);
    if at >= content.start && text[at..content.end].trim().is_empty() {
        Some((at, body))
    } else {
        // The end tag shares its line with content: break the line first.
        Some((
            content.end,
            format!("\n{body}{}", line_indent(text, el.range.start)),
        ))
    }
}

/// D101: no directive fence.
pub(crate) fn no_directive(text: &str, fences: &[Fence]) -> Diagnostic {
    let first_line = crate::text::first_line_after_header(text);
    let mut msg = "no ```xml fence with a `<directive>` root".to_string();
    if !fences.is_empty() {
        msg.push_str(&format!(
            " ({} ```xml fence{} found, none with `<directive>` as its first element)",
            fences.len(),
            if fences.len() == 1 { "" } else { "s" }
        ));
    }
    let mut d = Diagnostic::new(Code::D101, first_line, msg);
    // A bare `<directive>` in the prose: offer to fence it.
    if let Some(start) = find_line_starting_with(text, "<directive") {
        if let Some(end_rel) = text[start..].find("</directive>") {
            let end = start + end_rel + "</directive>".len();
            d.message
                .push_str("; the `<directive>` in the text is not inside a fence");
            d = d.fix(Fix {
                title: "Wrap the `<directive>` in a ```xml fence".into(),
                edits: vec![
                    crate::diag::TextEdit {
                        range: TextRange::empty(start),
                        new_text: "```xml\n".into(),
                    },
                    crate::diag::TextEdit {
                        range: TextRange::empty(end),
                        new_text: "\n```".into(),
                    },
                ],
                rename_to: None,
            });
        }
    }
    d
}

fn find_line_starting_with(text: &str, pat: &str) -> Option<usize> {
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with(pat) {
            return Some(off);
        }
        off += line.len();
    }
    None
}

/// The hash a header should carry: SHA-256 (lower-case hex) of the `<directive>` element's
/// text, start tag to end tag, with CRLF line ends read as LF. This is the rye rule, checked
/// on the corpus: it reproduces the hash of 14 of the 22 `rye:signed` directives (the 8 others
/// were edited after signing). The kiwi-mcp header of `AGENTS.md` matches no candidate span
/// (kiwi-mcp hashed an integrity payload built from its parsed metadata), so D112 is not
/// reported for `kiwi-mcp:validated`; `kiwi:validated` uses the rye rule.
pub fn content_hash(text: &str, d: &Directive) -> Option<String> {
    root_hash(text, &*d.root_in(text)?)
}

fn root_hash(text: &str, root: &Element) -> Option<String> {
    let body = text.get(root.range.start..root.range.end)?.trim();
    let mut h = Sha256::new();
    if body.contains('\r') {
        h.update(body.replace("\r\n", "\n").as_bytes());
    } else {
        h.update(body.as_bytes());
    }
    Some(
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    )
}

pub(crate) fn run(text: &str, root: &Element, d: &mut Directive) {
    name_and_version(root, d);
    description(root, d);
    inputs(d);
    steps(d);
    header_hash(text, root, d);
}

fn name_and_version(root: &Element, d: &mut Directive) {
    match &d.name {
        None => d.diagnostics.push(Diagnostic::new(
            Code::D104,
            root.name_range,
            "the directive has no `name` (add `name=\"...\"` to `<directive>`, the file's stem)",
        )),
        Some(n) if n.value.trim().is_empty() => d.diagnostics.push(Diagnostic::new(
            Code::D104,
            n.range,
            "the directive's `name` is empty",
        )),
        _ => {}
    }
    match &d.version {
        None => {
            let at = root
                .attr("name")
                .map(|a| a.range.end)
                .unwrap_or(root.name_range.end);
            d.diagnostics.push(
                Diagnostic::new(
                    Code::D104,
                    root.name_range,
                    "the directive has no `version` (a semver version such as `1.0.0`)",
                )
                .fix(Fix::insert(
                    "Add `version=\"1.0.0\"`",
                    at,
                    " version=\"1.0.0\"",
                )),
            );
        }
        Some(v) => {
            if semver::Version::parse(v.value.trim()).is_err() {
                let mut diag = Diagnostic::new(
                    Code::D104,
                    v.range,
                    format!(
                        "`{}` is not a semver version (MAJOR.MINOR.PATCH, such as `1.0.0`)",
                        v.value
                    ),
                );
                if let Some(fixed) = semver_fix(v.value.trim()) {
                    diag = diag.fix(Fix::replace(format!("Change to `{fixed}`"), v.range, fixed));
                }
                d.diagnostics.push(diag);
            }
        }
    }
}

/// `1` -> `1.0.0`, `1.2` -> `1.2.0`, `v1.2.3` -> `1.2.3`.
fn semver_fix(v: &str) -> Option<String> {
    let v = v.strip_prefix(['v', 'V']).unwrap_or(v);
    let parts: Vec<&str> = v.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let nums: Vec<u64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    if nums.len() != parts.len() {
        return None;
    }
    let s = format!(
        "{}.{}.{}",
        nums[0],
        nums.get(1).copied().unwrap_or(0),
        nums.get(2).copied().unwrap_or(0)
    );
    semver::Version::parse(&s).ok().map(|_| s)
}

fn description(root: &Element, d: &mut Directive) {
    if d.description.is_some() {
        return;
    }
    let (range, msg) = match root.child("metadata") {
        Some(m) => (
            m.name_range,
            "`<metadata>` has no `<description>` (what the directive does, in one sentence)",
        ),
        None => (
            root.name_range,
            "the directive has no `<metadata>` with a `<description>`",
        ),
    };
    d.diagnostics.push(Diagnostic::new(Code::D106, range, msg));
}

fn inputs(d: &mut Directive) {
    let mut seen: HashMap<&str, TextRange> = HashMap::new();
    let mut out = Vec::new();
    for input in &d.inputs {
        if input.name.value.is_empty() {
            out.push(Diagnostic::new(
                Code::D107,
                input.name.range,
                "this input has no `name`",
            ));
        } else if let Some(first) = seen.get(input.name.value.as_str()) {
            out.push(
                Diagnostic::new(
                    Code::D107,
                    input.name.range,
                    format!("duplicate input `{}`", input.name.value),
                )
                .related(None, *first, "first declared here"),
            );
        } else {
            seen.insert(&input.name.value, input.name.range);
        }
        check_input(input, &mut out);
    }
    d.diagnostics.extend(out);
}

fn check_input(input: &Input, out: &mut Vec<Diagnostic>) {
    let ty = input.ty.as_ref().map(|t| t.value.trim());
    if let Some(t) = &input.ty {
        if !INPUT_TYPES.contains(&t.value.trim()) {
            let sug = closest(t.value.trim(), INPUT_TYPES.iter().copied());
            let mut diag = Diagnostic::new(
                Code::D107,
                t.range,
                format!(
                    "unknown input type `{}` (one of {}){}",
                    t.value,
                    INPUT_TYPES.join(", "),
                    did_you_mean(sug)
                ),
            );
            if let Some(s) = sug {
                diag = diag.fix(Fix::replace(format!("Change to `{s}`"), t.range, s));
            }
            out.push(diag);
        }
    }
    let known_ty = ty.filter(|t| INPUT_TYPES.contains(t));
    if let (Some(values), Some(t)) = (&input.enum_values, known_ty) {
        if t != "string" && t != "path" {
            let range = input
                .enum_range
                .or(input.ty.as_ref().map(|t| t.range))
                .unwrap_or(input.name.range);
            out.push(Diagnostic::new(
                Code::D107,
                range,
                format!(
                    "`enum` ({}) is only for `string` inputs, this one is `{t}`",
                    values.join("|")
                ),
            ));
        }
    }
    if let Some(def) = &input.default {
        let v = def.value.trim();
        let type_ok = match known_ty {
            Some("integer") => v.parse::<i64>().is_ok(),
            Some("number") => v.parse::<f64>().is_ok_and(f64::is_finite),
            Some("boolean") => matches!(v, "true" | "false"),
            Some("array") => matches!(
                serde_json::from_str::<serde_json::Value>(v),
                Ok(serde_json::Value::Array(_))
            ),
            Some("object") => matches!(
                serde_json::from_str::<serde_json::Value>(v),
                Ok(serde_json::Value::Object(_))
            ),
            _ => true,
        };
        if !type_ok {
            let mut diag = Diagnostic::new(
                Code::D107,
                def.range,
                format!(
                    "default `{}` is not a valid `{}`",
                    def.value,
                    known_ty.unwrap_or("")
                ),
            );
            if known_ty == Some("boolean")
                && matches!(v.to_ascii_lowercase().as_str(), "true" | "false")
            {
                let fixed = v.to_ascii_lowercase();
                diag = diag.fix(Fix::replace(
                    format!("Change to `{fixed}`"),
                    def.range,
                    fixed,
                ));
            }
            out.push(diag);
        } else if let Some(values) = &input.enum_values {
            if !values.iter().any(|e| e == v) {
                let sug = closest(v, values.iter().map(String::as_str));
                let mut diag = Diagnostic::new(
                    Code::D107,
                    def.range,
                    format!(
                        "default `{}` is not one of the `enum` values ({}){}",
                        def.value,
                        values.join("|"),
                        did_you_mean(sug)
                    ),
                );
                if let Some(s) = sug {
                    diag = diag.fix(Fix::replace(format!("Change to `{s}`"), def.range, s));
                }
                out.push(diag);
            }
        }
    }
}

fn steps(d: &mut Directive) {
    let mut seen: HashMap<&str, TextRange> = HashMap::new();
    let mut out = Vec::new();
    for step in &d.steps {
        let Some(name) = &step.name else { continue };
        if let Some(first) = seen.get(name.value.as_str()) {
            out.push(
                Diagnostic::new(
                    Code::D110,
                    name.range,
                    format!("duplicate step name `{}`", name.value),
                )
                .related(None, *first, "first used here"),
            );
        } else {
            seen.insert(&name.value, name.range);
        }
    }
    d.diagnostics.extend(out);
}

fn header_hash(text: &str, root: &Element, d: &mut Directive) {
    let Some(h) = &d.header else { return };
    if !h.has_real_hash() {
        // `placeholder` (rye:validated) and other non-hashes are never stale.
        return;
    }
    if h.kind == "rye:signed" {
        // rye's own check, with rye's own rule for what is hashed, is R706
        // (`trust::audit::stale_rye_signature`): rye refuses the directive.
        return;
    }
    if h.kind == "kiwi-mcp:validated" {
        // kiwi-mcp hashed an integrity payload built from its own parse of the metadata; no
        // span of the corpus's kiwi-mcp file reproduces it, so its staleness cannot be told.
        return;
    }
    let Some(hash) = &h.hash else { return };
    let Some(actual) = root_hash(text, root) else {
        return;
    };
    if hash.value.eq_ignore_ascii_case(&actual) {
        return;
    }
    let mut diag = Diagnostic::new(
        Code::D112,
        hash.range,
        format!(
            "the `{}` header's hash does not match the directive: it changed after it was {}",
            h.kind,
            if h.kind.ends_with("signed") {
                "signed"
            } else {
                "validated"
            }
        ),
    );
    if h.kind == "kiwi:validated" {
        diag = diag.fix(Fix::replace("Update the hash", hash.range, actual));
    }
    d.diagnostics.push(diag);
}
