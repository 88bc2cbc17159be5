//! Hover: what to show at an offset of a tool (fields, `${VAR}`s, env keys) or a
//! directive (references, capabilities, placeholders).

use super::markdown::{chain_markdown, lookup_markdown, resolution_markdown, var_markdown};
use super::{lookup_any, own_resolution, HoverInfo};
use crate::directive::{Capability, Directive, Need, PlaceholderKind, Resource};
use crate::env;
use crate::text::TextRange;
use crate::tool::Field;
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

/// The `${VAR}` reference of a string value at `offset`: (name, range in the file).
fn var_ref_at(v: &Value, offset: usize) -> Option<(String, TextRange)> {
    let s = v.as_string()?;
    for r in env::references(&s.value) {
        let range = if s.verbatim {
            TextRange::new(
                s.content.start + r.range.start,
                s.content.start + r.range.end,
            )
        } else {
            v.range
        };
        if range.touches(offset) {
            return Some((r.name, range));
        }
    }
    None
}

/// The range of the map key (at any depth) that `offset` is on.
fn key_range_at(v: &Value, offset: usize) -> Option<TextRange> {
    match &v.kind {
        ValueKind::Map(m) => m.iter().find_map(|e| {
            if e.key_range.touches(offset) {
                Some(e.key_range)
            } else {
                key_range_at(&e.value, offset)
            }
        }),
        ValueKind::List(l) => l.iter().find_map(|x| key_range_at(x, offset)),
        _ => None,
    }
}

fn env_key_doc(key: &str) -> Option<&'static str> {
    env::check::KEY_DOCS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d)
}

/// What to show when hovering `offset` in `item`.
/// A value the hover shows (one the chain builds from a passed-through secret included)
/// never holds a secret: the markdown is redacted.
pub fn hover(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<HoverInfo> {
    let h = if item.tool().is_some() {
        hover_tool(ws, item, offset)
    } else if let Some(d) = item.directive().filter(|d| d.ryeos.is_some()) {
        super::ryeos::hover(item, d, offset)
    } else if let Some(d) = item.directive() {
        hover_directive(ws, item, d, offset)
    } else if item.skill().is_some() {
        super::skill::hover(ws, item, offset)
    } else {
        None
    };
    // A pulled (or pinned) item's first line tells where it came from: registry, version,
    // signer, whether it verifies and whether its files still match the lock (issue 17).
    let first = crate::check::first_line(item);
    let provenance = if first.touches(offset) {
        crate::trust::audit::provenance(ws, item)
    } else {
        None
    };
    let mut h = match (h, provenance) {
        (Some(mut h), Some(p)) => {
            h.markdown.push_str("\n\n---\n\n");
            h.markdown.push_str(&p.markdown());
            h
        }
        (None, Some(p)) => HoverInfo {
            range: first,
            markdown: p.markdown(),
        },
        (h, None) => h?,
    };
    let secrets = crate::exec::host_secrets(ws);
    if secrets.found_in(h.markdown.as_bytes()) {
        h.markdown = secrets.redact(&h.markdown);
    }
    Some(h)
}

fn hover_tool(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<HoverInfo> {
    let t = item.tool()?;
    let f = t
        .fields
        .iter()
        .find(|f| f.key_range.touches(offset) || f.value.range.touches(offset))?;
    match f.field {
        Field::ExecutorId => {
            let range = if f.value.range.touches(offset) {
                f.value.range
            } else {
                f.key_range
            };
            Some(HoverInfo {
                range,
                markdown: chain_markdown(ws, item, false),
            })
        }
        Field::EnvConfig => {
            if f.key_range.touches(offset) {
                let res = own_resolution(ws, item)?;
                return Some(HoverInfo {
                    range: f.key_range,
                    markdown: resolution_markdown(ws, &res, Some(item)),
                });
            }
            let (path, v) = f.value.value_at(offset)?;
            if let Some((name, range)) = var_ref_at(v, offset) {
                return Some(HoverInfo {
                    range,
                    markdown: var_markdown(ws, item, &name),
                });
            }
            if path.first() == Some(&"interpreter") {
                let mut md = String::new();
                if let Some(doc) = path.get(1).and_then(|k| env_key_doc(k)) {
                    md.push_str(&format!("`{}`: {doc}\n\n", path[1]));
                }
                let ty = f
                    .value
                    .get("interpreter")
                    .and_then(|i| i.get("type"))
                    .and_then(|t| t.as_str());
                match ty.map(|t| (t, env::registry::resolver_type(t))) {
                    // What the type looks for is the resolution's second line, below.
                    Some((_, Some(_))) => {}
                    Some((t, None)) => {
                        let names = env::RESOLVER_TYPES.iter().map(|r| r.name);
                        let sugg = crate::diag::closest(t, names.clone());
                        md.push_str(&format!(
                            "`{t}` is an unknown resolver type: nothing is resolved{}. Known types: {}.\n\n",
                            sugg.map(|s| format!(" (did you mean `{s}`?)"))
                                .unwrap_or_default(),
                            names.map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ));
                    }
                    None => md.push_str("No `type`: nothing is resolved.\n\n"),
                }
                if let Some(res) = own_resolution(ws, item) {
                    md.push_str("---\n\n");
                    md.push_str(&resolution_markdown(ws, &res, Some(item)));
                }
                // The key under the cursor, else the value, else the interpreter.
                let range = key_range_at(&f.value, offset)
                    .or_else(|| v.range.touches(offset).then_some(v.range))
                    .unwrap_or(f.value.range);
                return Some(HoverInfo {
                    range,
                    markdown: md.trim_end().to_string() + "\n",
                });
            }
            None
        }
        Field::Config => {
            let (_, v) = f.value.value_at(offset)?;
            let (name, range) = var_ref_at(v, offset)?;
            Some(HoverInfo {
                range,
                markdown: var_markdown(ws, item, &name),
            })
        }
        _ => None,
    }
}

fn capability_words(c: &Capability) -> String {
    let what = match &c.resource {
        Resource::Filesystem => "files".to_string(),
        Resource::Registry => "the registry".to_string(),
        Resource::Shell => "shell commands".to_string(),
        Resource::Items(Some(t)) => format!("{} items", t.as_str()),
        Resource::Items(None) => "items of any type".to_string(),
        Resource::Any => "everything".to_string(),
    };
    let verb = if c.verb == "*" { "any action" } else { &c.verb };
    let mut s = if c.deny {
        format!("**Denies** `{verb}` on {what} matching `{}`", c.pattern)
    } else {
        format!("**Grants** `{verb}` on {what} matching `{}`", c.pattern)
    };
    if !c.valid {
        s.push_str(" — this spelling is not valid, so it grants nothing");
    }
    if let Some(a) = &c.alias {
        s.push_str(&format!("\n\nSpelled as {a}."));
    }
    s
}

fn hover_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    d: &Directive,
    offset: usize,
) -> Option<HoverInfo> {
    // Placeholders first: they are the innermost.
    if let Some(p) = d.placeholders.iter().find(|p| p.range.touches(offset)) {
        let md = match &p.kind {
            PlaceholderKind::Input { name, .. } | PlaceholderKind::Bare { name } => {
                match d.inputs.iter().find(|i| &i.name.value == name) {
                    Some(i) => {
                        let mut md = format!("**input `{name}`**");
                        if let Some(t) = &i.ty {
                            md.push_str(&format!(": `{}`", t.value));
                        }
                        md.push_str(if i.required {
                            " (required)"
                        } else {
                            " (optional)"
                        });
                        if let Some(def) = &i.default {
                            md.push_str(&format!("  \ndefault: `{}`", def.value));
                        }
                        if let Some(e) = &i.enum_values {
                            md.push_str(&format!("  \none of: {}", e.join(", ")));
                        }
                        if !i.description.trim().is_empty() {
                            md.push_str(&format!("\n\n{}", i.description.trim()));
                        }
                        md
                    }
                    None => format!("No input `{name}` is declared."),
                }
            }
            PlaceholderKind::System { item: sys, field } => {
                let mut md = format!("**`system.{sys}.{field}`**");
                if let Some(f) = crate::system::field(sys, field) {
                    md.push_str(&format!(": {}", f.description));
                }
                let value = crate::system::compute(sys, &ws.host, ws.project.as_deref())
                    .and_then(|v| v.get(field).cloned());
                match value {
                    Some(v) => md.push_str(&format!("\n\nCurrent value: `{v}`")),
                    None => md.push_str("\n\nNo such system field."),
                }
                md
            }
        };
        return Some(HoverInfo {
            range: p.range,
            markdown: md,
        });
    }
    if let Some(r) = d.references.iter().find(|r| r.range.touches(offset)) {
        let (t, _) = lookup_any(ws, r.item_type, &r.id);
        return Some(HoverInfo {
            range: r.range,
            markdown: lookup_markdown(ws, t, &r.id),
        });
    }
    if let Some(c) = d.capabilities.iter().find(|c| c.range.touches(offset)) {
        let mut md = capability_words(c);
        md.push_str("\n\n");
        let mut relying = Vec::new();
        for call in &d.calls {
            let Some(need) = Need::of_call(call) else {
                continue;
            };
            let (Some(t), Some(id)) = (need.item_type, need.id.as_deref()) else {
                continue;
            };
            if !c.deny
                && crate::directive::grants(std::slice::from_ref(c), &need.verb, t, id).is_some()
            {
                let step = call
                    .step
                    .and_then(|s| d.steps.get(s))
                    .and_then(|s| s.name.as_ref())
                    .map(|n| format!("step `{}`", n.value))
                    .unwrap_or_else(|| "a call outside the steps".to_string());
                relying.push(format!("- {step}: `{}` {} `{id}`", need.verb, t.as_str()));
            }
        }
        if relying.is_empty() {
            md.push_str("No step relies on it.");
        } else {
            md.push_str("Relied on by:\n");
            md.push_str(&relying.join("\n"));
        }
        return Some(HoverInfo {
            range: c.range,
            markdown: md,
        });
    }
    let _ = item;
    None
}
