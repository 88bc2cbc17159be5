//! Completion: what fits at an offset, found from the text before it (so that it works on
//! half-typed, unparseable text) and the item's model where it parsed.

use crate::directive::{self, params, Directive, Element};
use crate::env::{registry, MANAGERS, RESOLVER_TYPES, SEARCH_LOCATIONS};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::tool::{Field, ToolFile, ToolFormat, FIELDS};
use crate::value::Value;
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
    /// `insert_text` is a snippet (`$1` marks where the cursor goes).
    pub snippet: bool,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '*')
}

/// When the text before `offset` on its line ends with `trigger` followed by word characters:
/// the offset where those characters start. (The trigger may itself end in a word character,
/// as `{system.` does.)
fn after(text: &str, line_start: usize, offset: usize, trigger: &str) -> Option<usize> {
    let prefix = text.get(line_start..offset)?;
    let at = prefix.rfind(trigger)? + trigger.len();
    prefix[at..].chars().all(is_word).then_some(line_start + at)
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
            snippet: false,
        })
        .collect()
}

/// The ids of items of type `t` that a call or a grant can name: for tools only the runnable
/// ones (a library module or a data file under `tools/` is never run, so never granted).
/// Only those holding what is typed (`typed`, in `range`, case aside; `.` for `/` in rye's
/// dotted spelling): a client that does not filter by the edit's range (Neovim's omnifunc
/// filters by keyword, and `/` is none) gets the narrowed list, not every id.
fn item_ids(ws: &Workspace, t: ItemType, range: TextRange, typed: &str) -> Vec<CompletionEntry> {
    let typed = typed.to_lowercase().replace('.', "/");
    ws.ids(t)
        .iter()
        .filter(|id| typed.is_empty() || id.to_lowercase().contains(&typed))
        .filter(|id| {
            t != ItemType::Tool
                || ws
                    .get(t, id)
                    .and_then(|i| i.tool().map(|tool| tool.kind().is_runnable()))
                    .unwrap_or(true)
        })
        .map(|id| CompletionEntry {
            label: id.to_string(),
            kind: CompletionKind::Item,
            detail: ws
                .get(t, id)
                .map(|i| format!("{} ({})", i.description().unwrap_or(""), i.space.as_str())),
            insert_text: None,
            range,
            snippet: false,
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
    if let Some(t) = item.tool() {
        return tool_completions(ws, item, t, text, line_start, offset);
    }
    if item.skill().is_some() {
        return super::skill::completions(item, offset).unwrap_or_default();
    }
    let Some(d) = item.directive() else {
        return Vec::new();
    };
    if d.ryeos.is_some() {
        return super::ryeos::completions(ws, d, text, line_start, offset).unwrap_or_default();
    }
    let root = item.directive_root();
    directive_completions(ws, d, root.as_deref(), text, line_start, offset)
}

/// The entry of `v` (a map, at any depth) whose value holds `offset`, innermost: its key
/// path. Empty when `offset` is directly in `v`.
fn key_path(v: &Value, offset: usize) -> Vec<String> {
    v.value_at(offset)
        .map(|(p, _)| p.into_iter().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether the word at `start` is where a map key goes: after `{`, `,` or an opening quote
/// that follows one of them, or alone on a YAML line.
fn at_key_position(text: &str, line_start: usize, start: usize, yaml: bool) -> bool {
    let before = text[..start].trim_end_matches(['"', '\'']).trim_end();
    if yaml {
        let line = &text[line_start..start];
        return line.trim().is_empty() || line.trim_end().ends_with('{');
    }
    before.ends_with('{') || before.ends_with(',')
}

/// The words of a list on the line around `offset` (`[a, "b", |]`), without the one being
/// typed.
fn listed_on_line(text: &str, line_start: usize, offset: usize) -> Vec<String> {
    let line_end = text[offset..]
        .find('\n')
        .map(|i| offset + i)
        .unwrap_or(text.len());
    let Some(open) = text[line_start..offset].rfind('[') else {
        return Vec::new();
    };
    let inner_start = line_start + open + 1;
    let inner_end = text[offset..line_end]
        .find(']')
        .map(|i| offset + i)
        .unwrap_or(line_end);
    let mut out = Vec::new();
    let mut pos = inner_start;
    for part in text[inner_start..inner_end].split(',') {
        let (a, b) = (pos, pos + part.len());
        pos = b + 1;
        if a <= offset && offset <= b {
            continue;
        }
        let w = part.trim().trim_matches(['"', '\'']);
        if !w.is_empty() {
            out.push(w.to_string());
        }
    }
    out
}

fn tool_completions(
    ws: &Workspace,
    item: &Arc<Item>,
    t: &ToolFile,
    text: &str,
    line_start: usize,
    offset: usize,
) -> Vec<CompletionEntry> {
    let at = |trigger: &str| after(text, line_start, offset, trigger);
    let range_from = |start: usize| TextRange::new(start, offset);
    let yaml = t.format == ToolFormat::Yaml;
    for trig in ["__executor_id__ = \"", "executor_id: ", "executor_id: \""] {
        if let Some(s) = at(trig) {
            return item_ids(ws, ItemType::Tool, range_from(s), &text[s..offset]);
        }
    }
    // A top-level field name, at the start of a line.
    let line = &text[line_start..offset];
    if !line.is_empty() && line.chars().all(is_word) {
        let present: Vec<Field> = t.fields.iter().map(|f| f.field).collect();
        return FIELDS
            .iter()
            .filter(|f| !present.contains(&f.field))
            .map(|f| CompletionEntry {
                label: if yaml { f.yaml } else { f.python }.to_string(),
                kind: CompletionKind::Key,
                detail: None,
                insert_text: Some(if yaml {
                    format!("{}: ", f.yaml)
                } else if t.format == ToolFormat::Javascript {
                    format!("export const {} = ", f.python)
                } else {
                    format!("{} = ", f.python)
                }),
                range: range_from(line_start),
                snippet: false,
            })
            .collect();
    }
    let field_at = |f: Field| t.get(f).filter(|e| e.value.range.touches(offset));
    if let Some(env) = field_at(Field::EnvConfig) {
        if let Some(c) = env_config_completions(item, &env.value, text, line_start, offset, yaml) {
            return c;
        }
    }
    let in_config = field_at(Field::Config);
    if field_at(Field::EnvConfig).is_some() || in_config.is_some() {
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
                    snippet: false,
                })
                .collect();
        }
    }
    if let Some(cfg) = in_config {
        // `{NAME}` in a string: the tool's parameters and what kiwi provides.
        if let Some(s) = at("{") {
            let inside_string = text[line_start..s].matches(['"', '\'']).count() % 2 == 1 || yaml;
            if inside_string && !text[..s].ends_with("${") {
                let mut out: Vec<CompletionEntry> = params::tool_params(item)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| CompletionEntry {
                        detail: Some(p.type_label()),
                        label: p.name,
                        kind: CompletionKind::Input,
                        insert_text: None,
                        range: range_from(s),
                        snippet: false,
                    })
                    .collect();
                out.extend(entries(
                    crate::template::KERNEL_NAMES
                        .iter()
                        .map(|n| (*n, Some("provided by kiwi"))),
                    CompletionKind::Field,
                    range_from(s),
                ));
                return out;
            }
        }
        // A key of CONFIG: what the primitive at the end of the chain takes.
        let word = word_start(text, line_start, offset);
        if at_key_position(text, line_start, word, yaml) && key_path(&cfg.value, offset).len() <= 1
        {
            let present: Vec<&str> = cfg
                .value
                .as_map()
                .unwrap_or_default()
                .iter()
                .filter(|e| !e.key_range.touches(offset))
                .map(|e| e.key.as_str())
                .collect();
            return primitive_keys(ws, item)
                .into_iter()
                .filter(|(k, _)| !present.contains(&k.as_str()))
                .map(|(k, doc)| CompletionEntry {
                    label: k,
                    kind: CompletionKind::Key,
                    detail: doc,
                    insert_text: None,
                    range: range_from(word),
                    snippet: false,
                })
                .collect();
        }
    }
    if let Some(ee) = field_at(Field::ExecutionEnvironment) {
        for trig in ["\"mode\": \"", "'mode': '", "mode: ", "mode: \""] {
            if let Some(s) = at(trig) {
                return entries(
                    crate::exec::preference::MODES
                        .iter()
                        .map(|(n, _)| (*n, None)),
                    CompletionKind::Value,
                    range_from(s),
                );
            }
        }
        let word = word_start(text, line_start, offset);
        if at_key_position(text, line_start, word, yaml) {
            let present: Vec<&str> = ee
                .value
                .as_map()
                .unwrap_or_default()
                .iter()
                .filter(|e| !e.key_range.touches(offset))
                .map(|e| e.key.as_str())
                .collect();
            return entries(
                crate::exec::preference::KEYS
                    .iter()
                    .filter(|k| !present.contains(k))
                    .map(|k| (*k, None)),
                CompletionKind::Key,
                range_from(word),
            );
        }
    }
    Vec::new()
}

/// Where the word that ends at `offset` starts.
fn word_start(text: &str, line_start: usize, offset: usize) -> usize {
    let prefix = &text[line_start..offset];
    let n = prefix
        .chars()
        .rev()
        .take_while(|c| is_word(*c))
        .map(char::len_utf8)
        .sum::<usize>();
    offset - n
}

/// The configuration keys of the primitive a tool's chain ends in, with their descriptions.
fn primitive_keys(ws: &Workspace, item: &Arc<Item>) -> Vec<(String, Option<String>)> {
    let links = match crate::chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let Some(primitive) = links.last().filter(|p| crate::chain::is_primitive(p)) else {
        return Vec::new();
    };
    primitive
        .tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_map())
        .map(|m| {
            m.iter()
                .map(|e| {
                    let doc = e
                        .value
                        .get("description")
                        .and_then(|d| d.as_str())
                        .map(str::to_string);
                    (e.key.clone(), doc)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn env_config_completions(
    item: &Item,
    ec: &Value,
    text: &str,
    line_start: usize,
    offset: usize,
    yaml: bool,
) -> Option<Vec<CompletionEntry>> {
    let at = |trigger: &str| after(text, line_start, offset, trigger);
    let range_from = |start: usize| TextRange::new(start, offset);
    for trig in ["\"type\": \"", "type: ", "type: \"", "'type': '"] {
        if let Some(s) = at(trig) {
            return Some(entries(
                RESOLVER_TYPES.iter().map(|r| (r.name, Some(r.summary))),
                CompletionKind::Value,
                range_from(s),
            ));
        }
    }
    for trig in [
        "\"manager\": \"",
        "manager: ",
        "manager: \"",
        "'manager': '",
    ] {
        if let Some(s) = at(trig) {
            return Some(entries(
                MANAGERS.iter().map(|m| (m.name, None)),
                CompletionKind::Value,
                range_from(s),
            ));
        }
    }
    let interp = ec.get("interpreter");
    // Inside the `search` list: the locations not listed yet.
    let line = &text[line_start..offset];
    let path = key_path(ec, offset);
    if line.contains("search") || path.last().map(String::as_str) == Some("search") {
        let s = at("\"")
            .or_else(|| at("'"))
            .or_else(|| at("- "))
            .or_else(|| at("["))
            .or_else(|| at(", "))
            .or_else(|| at(","));
        if let Some(s) = s {
            let mut listed = listed_on_line(text, line_start, offset);
            if let Some(l) = interp
                .and_then(|i| i.get("search"))
                .and_then(|v| v.as_list())
            {
                listed.extend(
                    l.iter()
                        .filter(|v| !v.range.touches(offset))
                        .filter_map(|v| v.as_str().map(str::to_string)),
                );
            }
            return Some(entries(
                SEARCH_LOCATIONS
                    .iter()
                    .filter(|l| !listed.iter().any(|x| x == *l))
                    .map(|l| (*l, None)),
                CompletionKind::Value,
                range_from(s),
            ));
        }
    }
    // Keys of the interpreter map: those of its type not present yet.
    let word = word_start(text, line_start, offset);
    let key_here = at_key_position(text, line_start, word, yaml)
        && (path.first().map(String::as_str) == Some("interpreter") || line.contains('"'));
    if key_here {
        let ty = interp
            .and_then(|i| i.get("type"))
            .and_then(|v| v.as_str())
            .and_then(registry::resolver_type);
        let mut keys: Vec<&str> = registry::COMMON_KEYS.to_vec();
        if let Some(rt) = ty {
            keys.extend(rt.keys());
        } else {
            keys.push("search");
        }
        let mut seen = Vec::new();
        keys.retain(|k| {
            let fresh = !seen.contains(k);
            seen.push(k);
            fresh
        });
        let present: Vec<&str> = interp
            .and_then(|i| i.as_map())
            .unwrap_or_default()
            .iter()
            .filter(|e| !e.key_range.touches(offset))
            .map(|e| e.key.as_str())
            .collect();
        let _ = item;
        return Some(entries(
            keys.into_iter().filter(|k| !present.contains(k)).map(|k| {
                (
                    k,
                    crate::env::check::KEY_DOCS
                        .iter()
                        .find(|(n, _)| *n == k)
                        .map(|(_, d)| *d),
                )
            }),
            CompletionKind::Key,
            range_from(word),
        ));
    }
    None
}

/// The element named `name` among the path's elements, innermost first.
fn innermost<'a>(path: &[&'a Element], name: &str) -> Option<&'a Element> {
    path.iter().rev().find(|e| e.name == name).copied()
}

fn directive_completions(
    ws: &Workspace,
    d: &Directive,
    root: Option<&Element>,
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
                snippet: false,
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
                    snippet: false,
                }
            })
            .collect();
    }
    // The element the cursor is in (innermost), from the parsed tree.
    let path = root.map(|r| r.path_at(offset)).unwrap_or_default();
    let inner = path.last().copied();
    let in_permissions = innermost(&path, "permissions").is_some();
    if let Some(s) = at("item_id=\"").or_else(|| at("execute=\"")) {
        let t = inner
            .and_then(|e| e.attr("item_type"))
            .and_then(|a| ItemType::parse(a.value.trim()))
            .unwrap_or(ItemType::Tool);
        return item_ids(ws, t, range_from(s), &text[s..offset]);
    }
    if in_permissions {
        if let Some(s) = at(" id=\"") {
            let t = inner
                .and_then(|e| e.attr("item_type"))
                .and_then(|a| ItemType::parse(a.value.trim()))
                .unwrap_or(ItemType::Tool);
            return item_ids(ws, t, range_from(s), &text[s..offset]);
        }
    }
    // rye's hierarchical grant, `<execute><tool>rye.core.|</tool></execute>`: the ids of the
    // element's type in the spelling the text uses (rye's dots, or slashes once one is typed).
    if in_permissions {
        let content = inner.filter(|e| {
            e.start_tag.end <= offset
                && text
                    .get(e.start_tag.end..offset)
                    .is_some_and(|t| !t.contains('<'))
        });
        let t = content.and_then(|e| match e.name.as_str() {
            "tool" => Some(ItemType::Tool),
            "directive" => Some(ItemType::Directive),
            "knowledge" => Some(ItemType::Knowledge),
            _ => None,
        });
        if let Some(t) = t {
            let s = word_start(text, line_start, offset);
            let dotted = !text[s..offset].contains('/');
            let mut out = item_ids(ws, t, range_from(s), &text[s..offset]);
            if dotted {
                for e in &mut out {
                    e.label = e.label.replace('/', ".");
                }
            }
            return out;
        }
    }
    if inner.is_some_and(|e| e.name == "input") {
        if let Some(s) = at(" type=\"") {
            return entries(
                directive::INPUT_TYPES.iter().map(|n| (*n, None)),
                CompletionKind::Value,
                range_from(s),
            );
        }
    }
    // `<param name="` / `value="`: the called tool's parameters and their values.
    if let Some(param) = inner.filter(|e| e.name == "param") {
        let call = d.calls.iter().find(|c| c.range.touches(offset));
        let specs = call
            .and_then(|c| params::called_tool(ws, c))
            .and_then(|t| params::tool_params(&t));
        if let (Some(call), Some(specs)) = (call, specs) {
            if let Some(s) = at("name=\"") {
                let passed: Vec<&str> = call
                    .params
                    .iter()
                    .filter(|(n, _)| !n.range.touches(offset))
                    .map(|(n, _)| n.value.as_str())
                    .collect();
                return specs
                    .into_iter()
                    .filter(|p| !passed.contains(&p.name.as_str()))
                    .map(|p| CompletionEntry {
                        detail: Some(param_detail(&p)),
                        label: p.name,
                        kind: CompletionKind::Input,
                        insert_text: None,
                        range: range_from(s),
                        snippet: false,
                    })
                    .collect();
            }
            if let Some(s) = at("value=\"") {
                let name = param.attr("name").map(|a| a.value.clone());
                if let Some(p) = specs.iter().find(|p| Some(&p.name) == name.as_ref()) {
                    return p
                        .value_choices()
                        .into_iter()
                        .map(|v| CompletionEntry {
                            label: v,
                            kind: CompletionKind::Value,
                            detail: Some(p.type_label()),
                            insert_text: None,
                            range: range_from(s),
                            snippet: false,
                        })
                        .collect();
                }
            }
        }
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
                snippet: false,
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
            Some("permissions") => directive::PERMISSION_ELEMENTS.to_vec(),
            Some(p) => directive::children_of(p).collect(),
            None => vec!["directive"],
        };
        let mut out: Vec<CompletionEntry> = names
            .into_iter()
            .map(|n| CompletionEntry {
                label: n.to_string(),
                kind: CompletionKind::Element,
                detail: directive::spec_any(n).map(|s| s.doc.to_string()),
                insert_text: None,
                range: range_from(s),
                snippet: false,
            })
            .collect();
        // Inside a call of a tool: a whole `<param>` per parameter not passed yet.
        if parent == Some("execute") {
            let call = d.calls.iter().find(|c| c.range.touches(offset));
            if let Some((call, specs)) = call.and_then(|c| {
                params::called_tool(ws, c)
                    .and_then(|t| params::tool_params(&t))
                    .map(|p| (c, p))
            }) {
                for p in specs {
                    if call.params.iter().any(|(n, _)| n.value == p.name) {
                        continue;
                    }
                    out.push(CompletionEntry {
                        label: format!("param name=\"{}\"", p.name),
                        kind: CompletionKind::Input,
                        detail: Some(param_detail(&p)),
                        insert_text: Some(format!("param name=\"{}\" value=\"$1\"/>", p.name)),
                        range: range_from(s),
                        snippet: true,
                    });
                }
            }
        }
        return out;
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
                let attrs: Vec<&str> = if parent == Some("permissions") {
                    directive::PERMISSION_ATTRS.to_vec()
                } else if let Some(spec) =
                    directive::spec(&e.name, parent).or(directive::spec_any(&e.name))
                {
                    spec.attrs.to_vec()
                } else {
                    Vec::new()
                };
                return attrs
                    .into_iter()
                    .filter(|a| e.attr(a).is_none())
                    .map(|a| CompletionEntry {
                        label: a.to_string(),
                        kind: CompletionKind::Attribute,
                        detail: None,
                        insert_text: Some(format!("{a}=\"$1\"")),
                        range: range_from(s),
                        snippet: true,
                    })
                    .collect();
            }
        }
    }
    Vec::new()
}

fn param_detail(p: &params::ParamSpec) -> String {
    let mut s = p.type_label();
    if p.required {
        s.push_str(", required");
    }
    if let Some(d) = p.description() {
        s.push_str(&format!(" — {d}"));
    }
    s
}

/// Signature help at a call of a tool: its parameters as its `CONFIG_SCHEMA` declares them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SignatureInfo {
    /// `id(path: string, write?: boolean)`.
    pub label: String,
    pub documentation: Option<String>,
    /// Each parameter's part of the label, and its documentation.
    pub params: Vec<(String, String)>,
    /// The parameter of the `<param>` at the cursor.
    pub active: Option<usize>,
}

/// The called tool's parameters, inside a call element of a directive.
pub fn signature_help(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<SignatureInfo> {
    let d = item.directive()?;
    let call = d.calls.iter().find(|c| c.range.touches(offset))?;
    let tool = params::called_tool(ws, call)?;
    let specs = params::tool_params(&tool)?;
    let parts: Vec<(String, String)> = specs
        .iter()
        .map(|p| {
            let label = format!(
                "{}{}: {}",
                p.name,
                if p.required { "" } else { "?" },
                p.type_label()
            );
            let mut doc = p.description().unwrap_or("").to_string();
            if let Some(def) = p.schema.get("default") {
                doc.push_str(&format!(" (default {def})"));
            }
            (label, doc.trim().to_string())
        })
        .collect();
    let label = format!(
        "{}({})",
        tool.id,
        parts
            .iter()
            .map(|(l, _)| l.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let root = item.directive_root();
    let path = root
        .as_deref()
        .map(|r| r.path_at(offset))
        .unwrap_or_default();
    let active = innermost(&path, "param")
        .and_then(|p| p.attr("name"))
        .and_then(|n| specs.iter().position(|s| s.name == n.value));
    Some(SignatureInfo {
        label,
        documentation: tool.description().map(str::to_string),
        params: parts,
        active,
    })
}
