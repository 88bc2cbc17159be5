//! ryeos's directives: markdown whose metadata is a YAML header, either frontmatter between
//! `---` lines or a ```` ```yaml ```` fenced block, and whose body is the prompt.
//!
//! Grounded in ryeos's standard bundle: the directive parser
//! (`.ai/parsers/ryeos/core/markdown/directive.yaml`: handler `yaml-header-document`,
//! `require_header: true`, forms `frontmatter` with delimiter `---` and `fenced_block` with
//! language `yaml`, output `root_type: mapping`) and the directive kind schema
//! (`.ai/node/engine/kinds/directive/directive.kind-schema.yaml`: the `composed_value_contract`
//! types `extends` string or null, `context`/`model`/`limits`/`requires` mappings, `inputs` a
//! sequence; `requires.capabilities.declared` the directive's capability strings), and in its
//! authoring document (`knowledge/ryeos/standard/directives/authoring.md`).

use super::{Capability, Directive, Input, ItemRef, Resource, Spanned};
use crate::diag::{Code, Diagnostic};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::value::{Value, ValueKind};

/// The frontmatter keys of a ryeos directive that kiwi knows, with what each holds (for
/// completion and hover), from the kind schema and the authoring document.
pub const KEYS: &[(&str, &str)] = &[
    ("description", "What the directive does (one line)."),
    ("version", "The directive's version (semver)."),
    ("category", "The directive's category (ryeos derives it from the folder)."),
    ("extends", "The parent directive (`directive:ID`); children inherit through extends-chain and may narrow, never widen, its capabilities."),
    ("requires", "`capabilities.declared`: the capability strings the directive asserts (`ryeos.execute.tool.ID`); `capabilities.manifest.runtime_authority`: runtime callback authority the signed bundle manifest backs."),
    ("context", "Knowledge refs grouped by position (`system`, `before`, `after`)."),
    ("model", "The model: `tier` (routing), or an explicit provider/model/context window."),
    ("limits", "Runtime limits: turns, tokens, spend_usd, depth, provider_request_body_bytes, ..."),
    ("inputs", "The inputs callers pass: a list of `{name, type, required, default, description}`."),
    ("outputs", "The structured outputs a caller or summary receives."),
    ("actions", "Tool or service actions the runtime may call through callbacks."),
    ("hooks", "Event hooks: `{id, event, result, action: {item_id, thread, params}}`."),
    ("execution", "`tool_concurrency` (1..=16, default 4): tool calls of one message run concurrently."),
    ("continuation", "What a continuation thread carries over (`carry_turns`)."),
    ("required_secrets", "Secrets the directive needs."),
];

/// The YAML header of a ryeos directive: where its YAML text lies and how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlHeader {
    /// The opening line (`---` or ```` ```yaml ````).
    pub open: TextRange,
    /// The YAML text between the delimiters.
    pub yaml: TextRange,
    /// The closing line, when there is one.
    pub close: Option<TextRange>,
}

/// Lines of `text` from `from`: (start, end without the line break, next line's start).
fn lines(text: &str, from: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    text[from..].split_inclusive('\n').scan(from, |off, l| {
        let start = *off;
        *off += l.len();
        let end = start + l.trim_end_matches(['\n', '\r']).len();
        Some((start, end, *off))
    })
}

/// The YAML header of a file in ryeos's directive format: the first line after the signature
/// comment (and blank lines) is `---` (frontmatter) or ```` ```yaml ```` (a fenced block).
/// `None` for any other file (rye's XML directives among them): the format is told from the
/// file, never from its folder.
pub fn yaml_header(text: &str) -> Option<YamlHeader> {
    let first = crate::text::first_line_after_header(text);
    let mut it = lines(text, first.start.min(text.len()))
        .skip_while(|(s, e, _)| text[*s..*e].trim().is_empty());
    let (s, e, next) = it.next()?;
    let open_line = text[s..e].trim_end();
    let fenced = match open_line {
        "---" => false,
        l if l.starts_with("```") && l[3..].trim() == "yaml" => true,
        _ => return None,
    };
    for (ls, le, _) in lines(text, next) {
        let line = text[ls..le].trim_end();
        let closes = if fenced {
            line.trim_start() == "```"
        } else {
            line == "---" || line == "..."
        };
        if closes {
            return Some(YamlHeader {
                open: TextRange::new(s, e),
                yaml: TextRange::new(next, ls),
                close: Some(TextRange::new(ls, le)),
            });
        }
    }
    Some(YamlHeader {
        open: TextRange::new(s, e),
        yaml: TextRange::new(next, text.len()),
        close: None,
    })
}

/// Whether the text is a ryeos directive (a YAML header and no XML directive).
pub fn is_ryeos_directive(d: &Directive) -> bool {
    d.ryeos.is_some()
}

/// Read a ryeos directive into `d` (whose signature header is read already).
pub fn read(text: &str, header: YamlHeader, d: &mut Directive) {
    d.ryeos = Some(header);
    if header.close.is_none() {
        d.diagnostics.push(Diagnostic::new(
            Code::D120,
            header.open,
            if text[header.open.start..header.open.end].trim_end() == "---" {
                "the frontmatter is never closed: ryeos's directive parser reads the YAML header up to a `---` line, and refuses a directive without one"
            } else {
                "the ```yaml block is never closed: ryeos's directive parser reads the YAML header up to the closing ``` line, and refuses a directive without one"
            },
        ));
        return;
    }
    let doc = crate::yaml::parse(&text[header.yaml.start..header.yaml.end], header.yaml.start);
    for (r, m) in &doc.errors {
        d.diagnostics.push(Diagnostic::new(
            Code::D120,
            *r,
            format!("YAML syntax error in the directive's header: {m}; ryeos's directive parser refuses it"),
        ));
    }
    let Some(root) = doc.value else {
        if doc.errors.is_empty() {
            d.diagnostics.push(Diagnostic::new(
                Code::D120,
                header.open,
                "the directive's YAML header is empty; ryeos's directive parser requires a header (a mapping of `key: value` lines: description, requires, ...)",
            ));
        }
        return;
    };
    let Some(entries) = root.as_map() else {
        if doc.errors.is_empty() {
            d.diagnostics.push(Diagnostic::new(
                Code::D120,
                root.range,
                format!(
                    "the directive's YAML header must be a mapping of `key: value` lines, not {}; ryeos's directive parser refuses it",
                    a(&root)
                ),
            ));
        }
        return;
    };
    check_types(entries, &mut d.diagnostics);
    let spanned = |v: &Value| -> Option<Spanned<String>> {
        let s = v.as_string()?;
        Some(Spanned {
            value: s.value.clone(),
            range: s.content,
        })
    };
    let get = |k: &str| entries.iter().rev().find(|e| e.key == k).map(|e| &e.value);
    d.description = get("description").and_then(spanned);
    d.version = get("version").and_then(spanned);
    d.category = get("category").and_then(spanned);
    if let Some(list) = get("inputs").and_then(Value::as_list) {
        d.inputs = list.iter().filter_map(input).collect();
    }
    if let Some(declared) = get("requires")
        .and_then(|r| r.get("capabilities"))
        .and_then(|c| c.get("declared"))
        .and_then(Value::as_list)
    {
        d.permissions_range = Some(declared.first().map_or(root.range, |v| v.range));
        for v in declared {
            if let Some(s) = v.as_string() {
                d.capabilities.extend(capability(&s.value, s.content));
            }
        }
    }
    // References: the parent, the knowledge of the context, the items hooks call.
    if let Some(v) = get("extends") {
        push_ref(&mut d.references, v, Some(ItemType::Directive), "`extends`");
    }
    if let Some(positions) = get("context").and_then(Value::as_map) {
        for p in positions {
            for v in p.value.as_list().unwrap_or_default() {
                push_ref(
                    &mut d.references,
                    v,
                    Some(ItemType::Knowledge),
                    &format!("`context.{}`", p.key),
                );
            }
        }
    }
    for hook in get("hooks").and_then(Value::as_list).unwrap_or_default() {
        if let Some(v) = hook.get("action").and_then(|a| a.get("item_id")) {
            push_ref(&mut d.references, v, None, "a hook's `action.item_id`");
        }
    }
}

fn a(v: &Value) -> &'static str {
    match v.kind {
        ValueKind::List(_) => "a list",
        ValueKind::Map(_) => "a mapping",
        ValueKind::Null => "null",
        ValueKind::Str(_) => "a string",
        ValueKind::Bool(_) => "a boolean",
        ValueKind::Int(_) | ValueKind::Float(_) => "a number",
        ValueKind::NonLiteral(_) => "a value kiwi cannot read",
    }
}

/// The kind schema's `composed_value_contract`: the type each composed field must have
/// (ryeos refuses a directive whose field has another).
const CONTRACT: &[(&str, &str)] = &[
    ("extends", "a string or null"),
    ("context", "a mapping"),
    ("model", "a mapping"),
    ("limits", "a mapping"),
    ("requires", "a mapping"),
    ("inputs", "a list"),
];

fn check_types(entries: &[crate::value::Entry], out: &mut Vec<Diagnostic>) {
    for e in entries {
        let Some((_, want)) = CONTRACT.iter().find(|(k, _)| *k == e.key) else {
            continue;
        };
        let ok = matches!(
            (&e.value.kind, *want),
            (ValueKind::NonLiteral(_), _)
                | (ValueKind::Str(_) | ValueKind::Null, "a string or null")
                | (ValueKind::Map(_), "a mapping")
                | (ValueKind::List(_), "a list")
        );
        if !ok {
            out.push(Diagnostic::new(
                Code::D121,
                e.value.range,
                format!(
                    "`{}` must be {want}, not {}: ryeos's directive kind schema (its composed_value_contract) refuses it",
                    e.key,
                    a(&e.value)
                ),
            ));
        }
    }
}

fn input(v: &Value) -> Option<Input> {
    let name = v.get("name")?.as_string()?;
    let spanned = |k: &str| {
        v.get(k).and_then(|x| {
            let s = x.as_string()?;
            Some(Spanned {
                value: s.value.clone(),
                range: s.content,
            })
        })
    };
    let default = v.get("default").and_then(|x| match &x.kind {
        ValueKind::Str(s) => Some(Spanned {
            value: s.value.clone(),
            range: s.content,
        }),
        ValueKind::Null | ValueKind::Map(_) | ValueKind::List(_) | ValueKind::NonLiteral(_) => None,
        _ => Some(Spanned {
            value: x.to_json().map(|j| j.to_string()).unwrap_or_default(),
            range: x.range,
        }),
    });
    let enum_v = v.get("enum");
    Some(Input {
        name: Spanned {
            value: name.value.clone(),
            range: name.content,
        },
        ty: spanned("type"),
        required: matches!(
            v.get("required").map(|r| &r.kind),
            Some(ValueKind::Bool(true))
        ),
        default,
        enum_values: enum_v.and_then(Value::as_list).map(|l| {
            l.iter()
                .filter_map(|x| x.to_json())
                .map(|j| {
                    j.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| j.to_string())
                })
                .collect()
        }),
        enum_range: enum_v.map(|e| e.range),
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        range: v.range,
    })
}

/// A canonical ref (`kind:id`) or a bare id, as an item reference.
fn push_ref(out: &mut Vec<ItemRef>, v: &Value, default: Option<ItemType>, via: &str) {
    let Some(s) = v.as_string() else { return };
    let (item_type, id, skip) = match s.value.split_once(':') {
        Some((kind, id)) => match ItemType::parse(kind) {
            Some(t) if t != ItemType::System => (Some(t), id, kind.len() + 1),
            // Another kind of ryeos's (service, graph, ...): not an item kiwi reads.
            _ => return,
        },
        None => (default, s.value.as_str(), 0),
    };
    if id.is_empty() {
        return;
    }
    let range = if s.verbatim {
        TextRange::new(s.content.start + skip, s.content.end)
    } else {
        s.content
    };
    out.push(ItemRef {
        item_type,
        id: id.to_string(),
        range,
        via: via.to_string(),
    });
}

/// One of ryeos's capability strings, `ryeos.<verb>.<kind>.<id pattern>` (the id keeps its
/// slashes: `ryeos.execute.tool.ryeos/threads/*`), as kiwi's grant; `None` for a capability
/// on a kind of ryeos's that is not an item kiwi reads (services, graphs, ...) or that is not
/// of this shape (kiwi cannot tell what it grants, and says nothing).
pub fn capability(cap: &str, range: TextRange) -> Option<Capability> {
    let mut parts = cap.splitn(4, '.');
    if parts.next()? != "ryeos" {
        return None;
    }
    let verb = parts.next()?;
    let kind = parts.next()?;
    let pattern = parts.next().unwrap_or("*");
    let resource = match kind {
        "*" => Resource::Items(None),
        k => match ItemType::parse(k) {
            Some(t) if t != ItemType::System => Resource::Items(Some(t)),
            _ => return None,
        },
    };
    let (verb, alias) = match verb {
        "execute" => ("run", None),
        "fetch" => (
            "load",
            Some("ryeos's verb `fetch`, read as `load`".to_string()),
        ),
        "*" => ("*", None),
        _ => return None,
    };
    Some(Capability {
        verb: verb.to_string(),
        resource,
        pattern: pattern.to_string(),
        deny: false,
        range,
        valid: true,
        alias,
    })
}

/// The capability strings of a ryeos directive's `requires.capabilities.declared`, as written
/// (with the range of each), kinds kiwi does not read included; `None` when it declares none
/// (no `declared` list: it inherits its parent's).
fn declared_strings(text: &str, header: YamlHeader) -> Option<Vec<(String, TextRange)>> {
    header.close?;
    let doc = crate::yaml::parse(&text[header.yaml.start..header.yaml.end], header.yaml.start);
    let root = doc.value?;
    let entries = root.as_map()?;
    let requires = entries.iter().rev().find(|e| e.key == "requires")?;
    let list = requires
        .value
        .get("capabilities")?
        .get("declared")?
        .as_list()?;
    Some(
        list.iter()
            .filter_map(|v| v.as_string().map(|s| (s.value.clone(), s.content)))
            .collect(),
    )
}

/// Whether the capability pattern `granted` covers the capability string `cap`, as ryeos's
/// engine decides it (`capability_pattern_covers`): `granted` read as an anchored glob, `*`
/// any run of characters (dots and slashes included), `?` one character, everything else
/// literal; `cap` taken as it is written (a wildcard in it is covered only by one that
/// matches it as text).
pub fn capability_covers(granted: &str, cap: &str) -> bool {
    // The two-pointer wildcard match (back to the last `*` on a mismatch): O(len × len) at
    // worst, never exponential, whatever a directive's pattern holds.
    let p: Vec<char> = granted.chars().collect();
    let s: Vec<char> = cap.chars().collect();
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < s.len() {
        if i < p.len() && (p[i] == '?' || (p[i] != '*' && p[i] == s[j])) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// Longest `extends` chain followed (ryeos refuses a cycle; kiwi stops there).
const MAX_EXTENDS: usize = 32;

/// A ryeos directive and the directives it extends, nearest first (`extends` followed as
/// ryeos's extends-chain resolves it); `Err` with why when a parent cannot be found, is not
/// a ryeos directive, or the chain cycles (ryeos refuses to compose it). `None` for a
/// directive not in ryeos's format.
pub fn extends_chain(
    ws: &crate::workspace::Workspace,
    item: &std::sync::Arc<crate::workspace::Item>,
) -> Option<Result<Vec<std::sync::Arc<crate::workspace::Item>>, String>> {
    item.directive()?.ryeos?;
    let mut chain = vec![item.clone()];
    loop {
        let cur = chain.last().expect("non-empty").clone();
        let Some(parent) = cur
            .directive()
            .and_then(|d| d.references.iter().find(|r| r.via == "`extends`").cloned())
        else {
            return Some(Ok(chain));
        };
        let found = match ws.find(ItemType::Directive, &parent.id, None) {
            crate::workspace::Lookup::Found(p) => p,
            _ => {
                return Some(Err(format!(
                    "`{}` extends `{}`, which exists in no space",
                    cur.id, parent.id
                )))
            }
        };
        if chain.iter().any(|c| c.path == found.path) || chain.len() > MAX_EXTENDS {
            return Some(Err(format!(
                "the extends chain of `{}` cycles or is deeper than {MAX_EXTENDS}",
                item.id
            )));
        }
        if found.directive().and_then(|d| d.ryeos).is_none() {
            return Some(Err(format!(
                "`{}` extends `{}`, which is not a ryeos directive",
                cur.id, found.id
            )));
        }
        chain.push(found);
    }
}

/// The capabilities a running ryeos directive holds once its `extends` chain is composed, as
/// ryeos's extends-chain composer (`narrow_requires_capabilities`, `compose_declared`) makes
/// them: a child that declares `requires.capabilities.declared` keeps only the capabilities
/// a parent's capability covers (dropped, not refused); one that declares none inherits its
/// parent's. kiwi narrows against every ancestor that declares (ryeos narrows against one),
/// so what it grants is never wider than what ryeos grants. A parent that cannot be found or
/// a cycle (ryeos refuses to compose either) leaves nothing granted. `None` for a directive
/// that is not in ryeos's format or extends nothing: its own capabilities hold.
pub fn effective_capabilities(
    ws: &crate::workspace::Workspace,
    item: &std::sync::Arc<crate::workspace::Item>,
) -> Option<Vec<Capability>> {
    let links = match extends_chain(ws, item)? {
        Ok(links) if links.len() > 1 => links,
        Ok(_) => return None,
        Err(_) => return Some(Vec::new()),
    };
    let chain: Vec<Option<Vec<(String, TextRange)>>> = links
        .iter()
        .map(|l| declared_strings(l.text(), l.directive()?.ryeos?))
        .collect();
    // The list the child holds: its own, else the nearest ancestor's that declares one; then
    // narrowed against every ancestor beyond it that declares.
    let Some((at, own)) = chain
        .iter()
        .enumerate()
        .find_map(|(i, c)| c.as_ref().map(|c| (i, c.clone())))
    else {
        return Some(Vec::new());
    };
    let kept: Vec<(String, TextRange)> = own
        .into_iter()
        .filter(|(cap, _)| {
            chain[at + 1..]
                .iter()
                .flatten()
                .all(|parent| parent.iter().any(|(g, _)| capability_covers(g, cap)))
        })
        .collect();
    Some(
        kept.into_iter()
            .filter_map(|(cap, range)| capability(&cap, range))
            .collect(),
    )
}
