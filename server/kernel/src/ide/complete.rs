//! Completion: what fits at an offset, found from the text before it (so that it works on
//! half-typed, unparseable text) and the item's model where it parsed.

use crate::directive::{self, Directive};
use crate::env::{registry, RESOLVER_TYPES, SEARCH_LOCATIONS};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::tool::Field;
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionKind {
    /// A value from a fixed set (resolver type, search location, action, item type).
    Value,
    /// A key of a map.
    Key,
    Element,
    Attribute,
    /// An item id.
    Item,
    /// An input name.
    Input,
    /// A system field.
    Field,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CompletionEntry {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    /// The text inserted over `range` (the label when `None`).
    pub insert_text: Option<String>,
    /// What the completion replaces: the word typed so far.
    pub range: TextRange,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '*')
}

/// When the text before `offset` on its line ends with `trigger` followed by word characters:
/// the offset where those characters start.
fn after(text: &str, line_start: usize, offset: usize, trigger: &str) -> Option<usize> {
    let prefix = text.get(line_start..offset)?;
    let word_start = prefix
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map(|(i, _)| i)
        .unwrap_or(prefix.len());
    let before = &prefix[..word_start];
    before.ends_with(trigger).then_some(line_start + word_start)
}

fn entries<'a>(
    labels: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    kind: CompletionKind,
    range: TextRange,
) -> Vec<CompletionEntry> {
    labels
        .into_iter()
        .map(|(l, d)| CompletionEntry {
            label: l.to_string(),
            kind,
            detail: d.map(str::to_string),
            insert_text: None,
            range,
        })
        .collect()
}

fn item_ids(ws: &Workspace, t: ItemType, range: TextRange) -> Vec<CompletionEntry> {
    ws.ids(t)
        .into_iter()
        .map(|id| CompletionEntry {
            label: id.to_string(),
            kind: CompletionKind::Item,
            detail: ws
                .get(t, id)
                .map(|i| format!("{} ({})", i.description().unwrap_or(""), i.space.as_str())),
            insert_text: None,
            range,
        })
        .collect()
}

/// What can be typed at `offset`.
pub fn completions(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Vec<CompletionEntry> {
    let text = item.text();
    if offset > text.len() || !text.is_char_boundary(offset) {
        return Vec::new();
    }
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let at = |trigger: &str| after(text, line_start, offset, trigger);
    let range_from = |start: usize| TextRange::new(start, offset);

    if let Some(t) = item.tool() {
        for trig in ["__executor_id__ = \"", "executor_id: ", "executor_id: \""] {
            if let Some(s) = at(trig) {
                return item_ids(ws, ItemType::Tool, range_from(s));
            }
        }
        let in_env = t
            .get(Field::EnvConfig)
            .is_some_and(|f| f.value.range.touches(offset));
        let in_config = t
            .get(Field::Config)
            .is_some_and(|f| f.value.range.touches(offset));
        if in_env {
            for trig in ["\"type\": \"", "type: ", "type: \"", "'type': '"] {
                if let Some(s) = at(trig) {
                    return entries(
                        RESOLVER_TYPES.iter().map(|r| (r.name, Some(r.summary))),
                        CompletionKind::Value,
                        range_from(s),
                    );
                }
            }
            // Inside the `search` list.
            let line = &text[line_start..offset];
            if line.contains("search") || enclosing_key(item, offset).as_deref() == Some("search") {
                if let Some(s) = at("\"").or_else(|| at("'")).or_else(|| at("- ")) {
                    return entries(
                        SEARCH_LOCATIONS.iter().map(|l| (*l, None)),
                        CompletionKind::Value,
                        range_from(s),
                    );
                }
            }
            // Keys of the interpreter map.
            if let Some(s) = at("\"").or_else(|| at("'")).or_else(|| {
                let prefix = &text[line_start..offset];
                prefix
                    .trim_start()
                    .chars()
                    .all(is_word)
                    .then(|| offset - prefix.trim_start().len())
            }) {
                let ty = t
                    .value(Field::EnvConfig)
                    .and_then(|ec| ec.get("interpreter"))
                    .and_then(|i| i.get("type"))
                    .and_then(|v| v.as_str())
                    .and_then(registry::resolver_type);
                let mut keys: Vec<&str> = registry::COMMON_KEYS.to_vec();
                if let Some(rt) = ty {
                    keys.extend(rt.keys());
                } else {
                    keys.push("search");
                }
                keys.sort();
                keys.dedup();
                return entries(
                    keys.into_iter().map(|k| {
                        (
                            k,
                            crate::env::check::KEY_DOCS
                                .iter()
                                .find(|(n, _)| *n == k)
                                .map(|(_, d)| *d),
                        )
                    }),
                    CompletionKind::Key,
                    range_from(s),
                );
            }
        }
        if in_env || in_config {
            if let Some(s) = at("${") {
                let mut names: Vec<String> = ws.host.vars.keys().cloned().collect();
                names.sort();
                return names
                    .into_iter()
                    .map(|n| CompletionEntry {
                        label: n,
                        kind: CompletionKind::Key,
                        detail: None,
                        insert_text: None,
                        range: range_from(s),
                    })
                    .collect();
            }
        }
        return Vec::new();
    }

    let Some(d) = item.directive() else {
        return Vec::new();
    };
    directive_completions(ws, d, text, line_start, offset)
}

/// The key of the map entry whose value holds `offset`, in ENV_CONFIG.
fn enclosing_key(item: &Item, offset: usize) -> Option<String> {
    let ec = item.tool()?.get(Field::EnvConfig)?;
    let (path, _) = ec.value.value_at(offset)?;
    path.last().map(|s| s.to_string())
}

fn directive_completions(
    ws: &Workspace,
    d: &Directive,
    text: &str,
    line_start: usize,
    offset: usize,
) -> Vec<CompletionEntry> {
    let at = |trigger: &str| after(text, line_start, offset, trigger);
    let range_from = |start: usize| TextRange::new(start, offset);
    if let Some(s) = at("{input:") {
        return d
            .inputs
            .iter()
            .map(|i| CompletionEntry {
                label: i.name.value.clone(),
                kind: CompletionKind::Input,
                detail: i.ty.as_ref().map(|t| t.value.clone()),
                insert_text: None,
                range: range_from(s),
            })
            .collect();
    }
    if let Some(s) = at("{system.") {
        return crate::system::all_field_paths()
            .into_iter()
            .map(|p| {
                let detail = p
                    .split_once('.')
                    .and_then(|(i, f)| crate::system::field(i, f))
                    .map(|f| f.description.to_string());
                CompletionEntry {
                    label: p,
                    kind: CompletionKind::Field,
                    detail,
                    insert_text: None,
                    range: range_from(s),
                }
            })
            .collect();
    }
    // The element the cursor is in (innermost), from the parsed tree.
    let path = d
        .root
        .as_ref()
        .map(|r| r.path_at(offset))
        .unwrap_or_default();
    let inner = path.last().copied();
    if let Some(s) = at("item_id=\"").or_else(|| at("execute=\"")) {
        let t = inner
            .and_then(|e| e.attr("item_type"))
            .and_then(|a| ItemType::parse(a.value.trim()))
            .unwrap_or(ItemType::Tool);
        return item_ids(ws, t, range_from(s));
    }
    if let Some(s) = at("item_type=\"") {
        return entries(
            directive::ITEM_TYPE_NAMES.iter().map(|n| (*n, None)),
            CompletionKind::Value,
            range_from(s),
        );
    }
    if let Some(s) = at("action=\"") {
        return entries(
            directive::ACTIONS.iter().map(|n| (*n, None)),
            CompletionKind::Value,
            range_from(s),
        );
    }
    if let Some(s) = at("resource=\"") {
        return entries(
            directive::RESOURCES.iter().map(|n| (*n, None)),
            CompletionKind::Value,
            range_from(s),
        );
    }
    if let Some(s) = at("</") {
        // Close the innermost open element.
        if let Some(e) = path.iter().rev().find(|e| !e.closed && !e.self_closing) {
            return vec![CompletionEntry {
                label: e.name.clone(),
                kind: CompletionKind::Element,
                detail: None,
                insert_text: Some(format!("{}>", e.name)),
                range: range_from(s),
            }];
        }
        return Vec::new();
    }
    if let Some(s) = at("<") {
        // The parent: the innermost element whose start tag ends before the `<`.
        let parent = path
            .iter()
            .rev()
            .find(|e| e.start_tag.end <= s.saturating_sub(1))
            .map(|e| e.name.as_str());
        let names: Vec<&str> = match parent {
            Some(p) => directive::children_of(p).collect(),
            None => vec!["directive"],
        };
        return names
            .into_iter()
            .map(|n| CompletionEntry {
                label: n.to_string(),
                kind: CompletionKind::Element,
                detail: directive::spec_any(n).map(|s| s.doc.to_string()),
                insert_text: None,
                range: range_from(s),
            })
            .collect();
    }
    // An attribute name inside a start tag: after whitespace, in the start tag of `inner`.
    if let Some(e) = inner {
        if e.start_tag.touches(offset) && offset > e.name_range.end {
            if let Some(s) = at(" ") {
                let parent = path
                    .len()
                    .checked_sub(2)
                    .and_then(|i| path.get(i))
                    .map(|p| p.name.as_str());
                if let Some(spec) =
                    directive::spec(&e.name, parent).or(directive::spec_any(&e.name))
                {
                    return spec
                        .attrs
                        .iter()
                        .filter(|a| e.attr(a).is_none())
                        .map(|a| CompletionEntry {
                            label: a.to_string(),
                            kind: CompletionKind::Attribute,
                            detail: None,
                            insert_text: Some(format!("{a}=\"")),
                            range: range_from(s),
                        })
                        .collect();
                }
            }
        }
    }
    Vec::new()
}
