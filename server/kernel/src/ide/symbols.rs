//! The outline of an item: a tool's fields, a directive's elements, a knowledge entry's
//! headings.

use super::{Symbol, SymbolKind};
use crate::directive::{Directive, Element};
use crate::text::TextRange;
use crate::tool::FIELDS;
use crate::value::ValueKind;
use crate::workspace::Item;

/// The outline of an item.
pub fn symbols(item: &Item) -> Vec<Symbol> {
    if item.skill().is_some() {
        return super::skill::symbols(item);
    }
    if let Some(t) = item.tool() {
        return t
            .fields
            .iter()
            .map(|f| {
                let name = FIELDS
                    .iter()
                    .find(|s| s.field == f.field)
                    .map(|s| match t.format {
                        crate::tool::ToolFormat::Python | crate::tool::ToolFormat::Javascript => {
                            s.python
                        }
                        crate::tool::ToolFormat::Yaml => s.yaml,
                    })
                    .unwrap_or("field")
                    .to_string();
                let children = match &f.value.kind {
                    ValueKind::Map(m) => m
                        .iter()
                        .map(|e| Symbol {
                            name: e.key.clone(),
                            detail: None,
                            kind: SymbolKind::Key,
                            range: e.key_range.cover(e.value.range),
                            selection: e.key_range,
                            children: Vec::new(),
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let detail = f.value.as_str().map(str::to_string);
                Symbol {
                    name,
                    detail,
                    kind: SymbolKind::Field,
                    range: f.key_range.cover(f.value.range),
                    selection: f.key_range,
                    children,
                }
            })
            .collect();
    }
    if let Some(d) = item.directive() {
        return directive_symbols(d, item.directive_root().as_deref());
    }
    if item.knowledge().is_some() {
        return heading_symbols(item.text());
    }
    Vec::new()
}

fn directive_symbols(d: &Directive, root: Option<&Element>) -> Vec<Symbol> {
    let Some(root) = root else {
        return Vec::new();
    };
    let mut children = Vec::new();
    if let Some(meta) = root.child("metadata") {
        let mut perms = Vec::new();
        for c in &d.capabilities {
            perms.push(Symbol {
                name: format!(
                    "{}{} {}",
                    if c.deny { "deny " } else { "" },
                    c.verb,
                    c.pattern
                ),
                detail: None,
                kind: SymbolKind::Permission,
                range: c.range,
                selection: c.range,
                children: Vec::new(),
            });
        }
        let mut meta_children = Vec::new();
        if let Some(pr) = d.permissions_range {
            meta_children.push(Symbol {
                name: "permissions".into(),
                detail: None,
                kind: SymbolKind::Permissions,
                range: pr,
                selection: pr,
                children: perms,
            });
        }
        children.push(Symbol {
            name: "metadata".into(),
            detail: d.description.as_ref().map(|s| s.value.clone()),
            kind: SymbolKind::Metadata,
            range: meta.range,
            selection: meta.name_range,
            children: meta_children,
        });
    }
    if let Some(inputs) = root.child("inputs") {
        children.push(Symbol {
            name: "inputs".into(),
            detail: None,
            kind: SymbolKind::Inputs,
            range: inputs.range,
            selection: inputs.name_range,
            children: d
                .inputs
                .iter()
                .map(|i| Symbol {
                    name: i.name.value.clone(),
                    detail: i.ty.as_ref().map(|t| t.value.clone()),
                    kind: SymbolKind::Input,
                    range: i.range,
                    selection: i.name.range,
                    children: Vec::new(),
                })
                .collect(),
        });
    }
    if let Some(process) = root.child("process") {
        children.push(Symbol {
            name: "process".into(),
            detail: None,
            kind: SymbolKind::Process,
            range: process.range,
            selection: process.name_range,
            children: d
                .steps
                .iter()
                .enumerate()
                .map(|(n, s)| Symbol {
                    name: s
                        .name
                        .as_ref()
                        .map(|n| n.value.clone())
                        .unwrap_or_else(|| format!("step {}", n + 1)),
                    detail: s.description.clone(),
                    kind: SymbolKind::Step,
                    range: s.range,
                    selection: s.name.as_ref().map(|n| n.range).unwrap_or(s.range),
                    children: Vec::new(),
                })
                .collect(),
        });
    }
    vec![Symbol {
        name: d
            .name
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_else(|| "directive".into()),
        detail: d.version.as_ref().map(|v| v.value.clone()),
        kind: SymbolKind::Directive,
        range: root.range,
        selection: d.name.as_ref().map(|n| n.range).unwrap_or(root.name_range),
        children,
    }]
}

/// Markdown ATX headings, flat (outside code fences).
fn heading_symbols(text: &str) -> Vec<Symbol> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence && trimmed.starts_with('#') {
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            let title = trimmed[level..].trim();
            if level <= 6 && !title.is_empty() {
                let range = TextRange::new(offset, offset + content.len());
                out.push(Symbol {
                    name: title.to_string(),
                    detail: Some(format!("h{level}")),
                    kind: SymbolKind::Heading,
                    range,
                    selection: range,
                    children: Vec::new(),
                });
            }
        }
        offset += line.len();
    }
    out
}
