//! From the element tree to the directive model: name, version, description, category,
//! inputs, steps, calls and references.

use super::{Call, CallKind, Directive, Element, Input, ItemRef, Spanned, Step};
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix};
use crate::ids::ItemType;
use crate::text::TextRange;

fn attr_spanned(el: &Element, name: &str) -> Option<Spanned<String>> {
    el.attr(name).map(|a| Spanned {
        value: a.value.clone(),
        range: a.value_range,
    })
}

/// The relationship elements, wherever they are (`<relationships>`, rye's `<context>`).
pub const RELATIONS: &[&str] = &["requires", "suggests", "extends", "related"];

pub(crate) fn extract(text: &str, root: &Element, d: &mut Directive) {
    let _ = text;
    let meta = root.child("metadata");
    d.name = attr_spanned(root, "name").or_else(|| meta?.child("name")?.spanned_text());
    d.version = attr_spanned(root, "version").or_else(|| meta?.child("version")?.spanned_text());
    if let Some(m) = meta {
        d.description = m.child("description").and_then(Element::spanned_text);
        d.category = m.child("category").and_then(Element::spanned_text);
    }
    for inputs in root.children_named("inputs") {
        for input in inputs.children_named("input") {
            d.inputs.push(input_of(input));
        }
    }
    for process in root
        .children
        .iter()
        .filter(|c| c.name == "process" || c.name == "steps")
    {
        for step in process.children_named("step") {
            let index = d.steps.len();
            let mut s = Step {
                name: attr_spanned(step, "name"),
                description: step
                    .child("description")
                    .map(|e| e.trimmed_text().to_string()),
                range: step.range,
                calls: Vec::new(),
            };
            for child in &step.children {
                let kind = match child.name.as_str() {
                    "execute" => CallKind::Execute,
                    "search" => CallKind::Search,
                    "load" => CallKind::Load,
                    "tool_call" => CallKind::ToolCall,
                    "sign" => CallKind::Sign,
                    "fetch" => CallKind::Fetch,
                    _ => continue,
                };
                let call = call_of(child, kind, index, &mut d.diagnostics);
                s.calls.push(d.calls.len());
                d.calls.push(call);
            }
            d.steps.push(s);
        }
    }
    references(root, d);
}

fn input_of(el: &Element) -> Input {
    let name = attr_spanned(el, "name").unwrap_or(Spanned {
        value: String::new(),
        range: el.name_range,
    });
    let enum_values = el.attr("enum").map(|a| {
        a.value
            .split('|')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()
    });
    let description = match el.child("description") {
        Some(d) => d.trimmed_text().to_string(),
        None => el.trimmed_text().to_string(),
    };
    Input {
        name,
        ty: attr_spanned(el, "type"),
        required: el
            .attr("required")
            .is_some_and(|a| a.value.trim().eq_ignore_ascii_case("true")),
        default: attr_spanned(el, "default"),
        enum_values,
        enum_range: el.attr("enum").map(|a| a.value_range),
        description,
        range: el.range,
    }
}

fn call_of(el: &Element, kind: CallKind, step: usize, diags: &mut Vec<Diagnostic>) -> Call {
    let item_type = attr_spanned(el, "item_type");
    if let Some(t) = &item_type {
        check_item_type(t, diags);
    }
    let mut item_id = attr_spanned(el, "item_id");
    if item_id.is_none()
        && kind != CallKind::Search
        && !(kind == CallKind::Fetch && el.attr("query").is_some())
        && el.children.is_empty()
    {
        // `<execute item_type="tool">docs/build</execute>`
        item_id = el.spanned_text();
    }
    let mut params = Vec::new();
    let mut action = attr_spanned(el, "action");
    for p in el.children_named("param") {
        let Some(name) = attr_spanned(p, "name") else {
            continue;
        };
        let value = attr_spanned(p, "value")
            .or_else(|| p.spanned_text())
            .unwrap_or(Spanned {
                value: String::new(),
                range: TextRange::empty(p.start_tag.end),
            });
        params.push((name, value));
    }
    if kind == CallKind::ToolCall {
        // kiwi-mcp: <tool_call><mcp>kiwi-mcp</mcp><tool>search</tool><params>...</params>
        if action.is_none() {
            action = el.child("tool").and_then(Element::spanned_text);
        }
        for ps in el.children_named("params") {
            for p in &ps.children {
                let value = p.spanned_text().unwrap_or(Spanned {
                    value: String::new(),
                    range: p.content.unwrap_or(p.range),
                });
                params.push((
                    Spanned {
                        value: p.name.clone(),
                        range: p.name_range,
                    },
                    value,
                ));
            }
        }
    }
    Call {
        kind,
        item_type,
        item_id,
        query: attr_spanned(el, "query"),
        params,
        action,
        range: el.range,
        step: Some(step),
    }
}

/// A call's `item_type` value must name an item type (reported as D105, an unknown value).
fn check_item_type(t: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    let v = t.value.trim();
    if ItemType::parse(v).is_some() {
        return;
    }
    let names = ItemType::ALL.map(ItemType::as_str);
    let sug = closest(v, names.iter().copied()).or_else(|| {
        // `tools` -> `tool`
        names
            .iter()
            .copied()
            .find(|n| v.trim_end_matches('s') == *n)
    });
    let mut diag = Diagnostic::new(
        Code::D105,
        t.range,
        format!(
            "unknown item type `{}` (one of directive, tool, knowledge, system){}",
            t.value,
            did_you_mean(sug)
        ),
    );
    if let Some(s) = sug {
        diag = diag.fix(Fix::replace(format!("Change to `{s}`"), t.range, s));
    }
    diags.push(diag);
}

fn via(kind: CallKind) -> &'static str {
    match kind {
        CallKind::Execute => "execute",
        CallKind::Search => "search",
        CallKind::Load => "load",
        CallKind::ToolCall => "tool_call",
        CallKind::Sign => "sign",
        CallKind::Fetch => "fetch",
    }
}

fn has_placeholder(s: &str) -> bool {
    s.contains('{') && s.contains('}')
}

fn references(root: &Element, d: &mut Directive) {
    for call in &d.calls {
        let Some(id) = &call.item_id else { continue };
        // An id built from placeholders is known only at run time.
        if id.value.trim().is_empty() || has_placeholder(&id.value) {
            continue;
        }
        let item_type = call
            .item_type
            .as_ref()
            .and_then(|t| ItemType::parse(t.value.trim()));
        d.references.push(ItemRef {
            item_type,
            id: id.value.trim().to_string(),
            range: id.range,
            via: via(call.kind).to_string(),
        });
    }
    // rye: `<directive name version extends="base/parent">`.
    if let Some(ext) = attr_spanned(root, "extends") {
        if !ext.value.trim().is_empty() && !has_placeholder(&ext.value) {
            d.references.push(ItemRef {
                item_type: Some(ItemType::Directive),
                id: ext.value.trim().to_string(),
                range: ext.range,
                via: "extends".to_string(),
            });
        }
    }
    let Some(meta) = root.child("metadata") else {
        return;
    };
    // Hooks: <hook><execute item_type="directive">id</execute></hook>
    for hooks in meta.children_named("hooks") {
        for hook in hooks.children_named("hook") {
            for ex in hook.children_named("execute") {
                let id = attr_spanned(ex, "item_id").or_else(|| ex.spanned_text());
                let Some(id) = id else { continue };
                if has_placeholder(&id.value) {
                    continue;
                }
                let t = attr_spanned(ex, "item_type");
                if let Some(t) = &t {
                    check_item_type(t, &mut d.diagnostics);
                }
                d.references.push(ItemRef {
                    item_type: t.and_then(|t| ItemType::parse(t.value.trim())),
                    id: id.value,
                    range: id.range,
                    via: "hook".to_string(),
                });
            }
        }
    }
    // Relationships: in <relationships>, and rye's <context> (metadata or root).
    let holders = meta
        .children
        .iter()
        .chain(root.children.iter())
        .filter(|c| c.name == "relationships" || c.name == "context");
    for holder in holders {
        for rel in holder
            .children
            .iter()
            .filter(|c| RELATIONS.contains(&c.name.as_str()))
        {
            let item_type = rel
                .attr("item_type")
                .and_then(|a| ItemType::parse(a.value.trim()));
            for (id, range) in split_ids(rel) {
                d.references.push(ItemRef {
                    item_type,
                    id,
                    range,
                    via: rel.name.clone(),
                });
            }
        }
    }
}

/// The ids named by a relationship element: its text, split on commas and whitespace, with
/// exact ranges when the text holds no entity references.
fn split_ids(el: &Element) -> Vec<(String, TextRange)> {
    let Some(t) = el.spanned_text() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let exact = t.range.len() == t.value.len();
    let mut off = 0;
    for piece in t.value.split(|c: char| c == ',' || c.is_whitespace()) {
        let start = off;
        off += piece.len() + 1;
        let p = piece.trim();
        if p.is_empty() || p == "-" {
            continue;
        }
        let range = if exact {
            TextRange::new(t.range.start + start, t.range.start + start + piece.len())
        } else {
            t.range
        };
        out.push((p.to_string(), range));
    }
    out
}
