//! What an editor paints and folds: semantic tokens (placeholders, `${VAR}` and item ids
//! inside a directive's fence, `${VAR}` in a tool's values), folding ranges (each element of
//! a directive spanning lines, each step among them; each map or list of a tool spanning
//! lines) and document links (item ids to their files; paths to the files they name).

use super::refs::id_range;
use crate::directive::{Directive, Element, PlaceholderKind};
use crate::env;
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::tool::Field;
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Lookup, Parsed, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a semantic token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// `{input:NAME}`, `{input:NAME?}`, `{input:NAME:DEFAULT}`, `{NAME}` of a declared
    /// input, rye's `${input:NAME}`.
    Input,
    /// `{system.ITEM.FIELD}`.
    System,
    /// `${VAR}`: a variable of the environment.
    EnvVar,
    /// An item id: a call's `item_id`, a relationship, a tool's `executor_id`.
    ItemId,
}

impl TokenKind {
    /// Every kind, in the order of the legend the face advertises.
    pub const ALL: [TokenKind; 4] = [
        TokenKind::Input,
        TokenKind::System,
        TokenKind::EnvVar,
        TokenKind::ItemId,
    ];
}

/// A semantic token: a range on one line, its kind, and whether what it names is missing
/// (an undeclared input, an id no space holds).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SemanticToken {
    pub range: TextRange,
    pub kind: TokenKind,
    pub unresolved: bool,
}

/// The semantic tokens of an item, sorted, without overlaps, none spanning lines.
pub fn semantic_tokens(ws: &Workspace, item: &Item) -> Vec<SemanticToken> {
    let text = item.text();
    let mut out = Vec::new();
    match &item.parsed {
        Parsed::Directive(d) => {
            directive_tokens(ws, text, d, item.directive_root().as_deref(), &mut out)
        }
        Parsed::Tool(t) => {
            for f in &t.fields {
                if f.field == Field::ExecutorId {
                    if let Some(id) = f.value.as_str() {
                        let range = id_range(text, f.value.range, id).unwrap_or(f.value.range);
                        out.push(SemanticToken {
                            range,
                            kind: TokenKind::ItemId,
                            unresolved: !matches!(
                                ws.lookup(ItemType::Tool, id, None),
                                Lookup::Found(_)
                            ),
                        });
                    }
                    continue;
                }
                f.value.walk(&mut |v| {
                    let Some(s) = v.as_string() else {
                        return;
                    };
                    if !s.verbatim {
                        return;
                    }
                    for r in env::references(&s.value) {
                        out.push(SemanticToken {
                            range: TextRange::new(
                                s.content.start + r.range.start,
                                s.content.start + r.range.end,
                            ),
                            kind: TokenKind::EnvVar,
                            unresolved: false,
                        });
                    }
                });
            }
        }
        _ => {}
    }
    out.retain(|t| {
        !t.range.is_empty()
            && text
                .get(t.range.start..t.range.end)
                .is_some_and(|s| !s.contains(['\n', '\r']))
    });
    out.sort_by_key(|t| (t.range.start, t.range.end));
    // No overlaps: the first of two overlapping tokens wins.
    let mut kept: Vec<SemanticToken> = Vec::with_capacity(out.len());
    for t in out {
        if kept.last().is_none_or(|k| k.range.end <= t.range.start) {
            kept.push(t);
        }
    }
    kept
}

fn directive_tokens(
    ws: &Workspace,
    text: &str,
    d: &Directive,
    root: Option<&Element>,
    out: &mut Vec<SemanticToken>,
) {
    for p in &d.placeholders {
        let (kind, unresolved) = match &p.kind {
            PlaceholderKind::Input { name, .. } | PlaceholderKind::Bare { name } => (
                TokenKind::Input,
                !d.inputs.iter().any(|i| &i.name.value == name),
            ),
            PlaceholderKind::System { .. } => (TokenKind::System, false),
        };
        out.push(SemanticToken {
            range: p.range,
            kind,
            unresolved,
        });
    }
    for r in &d.references {
        let Some(range) = id_range(text, r.range, &r.id) else {
            continue;
        };
        out.push(SemanticToken {
            range,
            kind: TokenKind::ItemId,
            unresolved: resolve(ws, r.item_type, &r.id).is_none(),
        });
    }
    // `${VAR}` (and rye's `${input:NAME}`) in attribute values and text.
    let Some(root) = root else {
        return;
    };
    let mut stack: Vec<&Element> = vec![root];
    while let Some(el) = stack.pop() {
        let pieces = el
            .attrs
            .iter()
            .map(|a| a.value_range)
            .chain(el.text_pieces.iter().copied());
        for piece in pieces {
            let Some(s) = text.get(piece.start..piece.end) else {
                continue;
            };
            if !s.contains("${") {
                continue;
            }
            for r in env::references(s) {
                out.push(SemanticToken {
                    range: TextRange::new(piece.start + r.range.start, piece.start + r.range.end),
                    kind: TokenKind::EnvVar,
                    unresolved: false,
                });
            }
            // rye's `${input:NAME}` (not a variable name: `env` leaves it).
            let mut from = 0;
            while let Some(at) = s[from..].find("${input:") {
                let start = from + at;
                let Some(len) = s[start..].find(['}', '\n']) else {
                    break;
                };
                let end = start + len;
                if s.as_bytes()[end] == b'}' {
                    let name = &s[start + "${input:".len()..end];
                    let name = name.split([':', '?']).next().unwrap_or("");
                    out.push(SemanticToken {
                        range: TextRange::new(piece.start + start, piece.start + end + 1),
                        kind: TokenKind::Input,
                        unresolved: !d.inputs.iter().any(|i| i.name.value == name),
                    });
                }
                from = end;
            }
        }
        stack.extend(el.children.iter());
    }
}

/// The item a reference names (a tool, else a directive, else knowledge, when it says no type).
fn resolve(ws: &Workspace, t: Option<ItemType>, id: &str) -> Option<Arc<Item>> {
    let types: &[ItemType] = match t {
        Some(ItemType::Tool) => &[ItemType::Tool],
        Some(ItemType::Directive) => &[ItemType::Directive],
        Some(ItemType::Knowledge) => &[ItemType::Knowledge],
        Some(ItemType::System) => &[],
        Some(ItemType::Skill) => &[ItemType::Skill],
        None => &[ItemType::Tool, ItemType::Directive, ItemType::Knowledge],
    };
    types.iter().find_map(|t| match ws.find(*t, id, None) {
        Lookup::Found(i) => Some(i),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------
// folding

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldKind {
    /// An element, a step, a map or a list.
    Region,
    /// A comment (`<!-- -->`), a docstring.
    Comment,
}

/// A folding range: the byte range that folds (the face folds its lines when it spans more
/// than one).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fold {
    pub range: TextRange,
    pub kind: FoldKind,
    /// What the folded text is shown as (a step's name).
    pub label: Option<String>,
}

/// The folding ranges of an item: only ranges spanning lines, sorted by start.
pub fn folding_ranges(item: &Item) -> Vec<Fold> {
    let text = item.text();
    let mut out = Vec::new();
    match &item.parsed {
        Parsed::Directive(d) => {
            if let Some(root) = item.directive_root().as_deref() {
                let mut stack: Vec<&Element> = vec![root];
                while let Some(el) = stack.pop() {
                    let label = (el.name == "step")
                        .then(|| el.attr("name").map(|a| format!("step {}", a.value)))
                        .flatten();
                    out.push(Fold {
                        range: el.range,
                        kind: FoldKind::Region,
                        label,
                    });
                    stack.extend(el.children.iter());
                }
            }
            if let Some(fence) = d.fence {
                comments(text, fence, &mut out);
            }
        }
        Parsed::Tool(t) => {
            for f in &t.fields {
                f.value.walk(&mut |v: &Value| {
                    if matches!(v.kind, ValueKind::Map(_) | ValueKind::List(_)) {
                        out.push(Fold {
                            range: v.range,
                            kind: FoldKind::Region,
                            label: None,
                        });
                    }
                });
            }
        }
        _ => {}
    }
    out.retain(|f| {
        text.get(f.range.start..f.range.end)
            .is_some_and(|s| s.trim_end().contains('\n'))
    });
    out.sort_by_key(|f| (f.range.start, std::cmp::Reverse(f.range.end)));
    out.dedup_by(|a, b| a.range == b.range);
    out
}

/// `<!-- ... -->` comments of a range.
fn comments(text: &str, range: TextRange, out: &mut Vec<Fold>) {
    let Some(s) = text.get(range.start..range.end) else {
        return;
    };
    let mut from = 0;
    while let Some(at) = s[from..].find("<!--") {
        let start = from + at;
        let Some(len) = s[start..].find("-->") else {
            return;
        };
        let end = start + len + 3;
        out.push(Fold {
            range: TextRange::new(range.start + start, range.start + end),
            kind: FoldKind::Comment,
            label: None,
        });
        from = end;
    }
}

// ---------------------------------------------------------------------------------------
// document links

/// A link from a range of the item to a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocLink {
    pub range: TextRange,
    /// The file (a builtin item's is under `<builtin>/`: the face serves it read-only).
    pub target: PathBuf,
    pub tooltip: String,
}

/// The document links of an item: every item id that resolves (a call's `item_id`, a
/// relationship, `executor_id`, a knowledge entry's references), a `path` input's default
/// that names a file of the project, a `{tool_dir}/…` file of a tool's values.
pub fn document_links(ws: &Workspace, item: &Item) -> Vec<DocLink> {
    if item.skill().is_some() {
        return super::skill::document_links(item);
    }
    let text = item.text();
    let mut out = Vec::new();
    let link_id = |t: Option<ItemType>, id: &str, range: TextRange| {
        resolve(ws, t, id).map(|target| DocLink {
            range: id_range(text, range, id).unwrap_or(range),
            target: target.path.clone(),
            tooltip: format!(
                "{} `{}` ({} space)",
                target.item_type.as_str(),
                target.id,
                target.space.as_str()
            ),
        })
    };
    match &item.parsed {
        Parsed::Directive(d) => {
            for r in &d.references {
                out.extend(link_id(r.item_type, &r.id, r.range));
            }
            let base = ws.project.as_deref();
            for i in &d.inputs {
                let (Some(ty), Some(default)) = (&i.ty, &i.default) else {
                    continue;
                };
                if !matches!(ty.value.as_str(), "path" | "file") {
                    continue;
                }
                if let Some(target) = existing(base, &default.value) {
                    out.push(DocLink {
                        range: id_range(text, default.range, &default.value)
                            .unwrap_or(default.range),
                        target,
                        tooltip: format!("the default of input `{}`", i.name.value),
                    });
                }
            }
        }
        Parsed::Tool(t) => {
            for f in &t.fields {
                if f.field == Field::ExecutorId {
                    if let Some(id) = f.value.as_str() {
                        out.extend(link_id(Some(ItemType::Tool), id, f.value.range));
                    }
                    continue;
                }
                let dir = item.path.parent();
                f.value.walk(&mut |v| {
                    let Some(s) = v.as_string() else {
                        return;
                    };
                    if !s.verbatim {
                        return;
                    }
                    let mut from = 0;
                    while let Some(at) = s.value[from..].find("{tool_dir}/") {
                        let start = from + at;
                        let rest = &s.value[start + "{tool_dir}/".len()..];
                        let len = rest
                            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '{'))
                            .unwrap_or(rest.len());
                        let end = start + "{tool_dir}/".len() + len;
                        if let Some(target) = existing(dir, &rest[..len]) {
                            out.push(DocLink {
                                range: TextRange::new(
                                    s.content.start + start,
                                    s.content.start + end,
                                ),
                                target,
                                tooltip: "a file of the tool's folder".into(),
                            });
                        }
                        from = end.max(start + 1);
                    }
                });
            }
        }
        Parsed::Knowledge(k) => {
            for (_, id, range) in k.references() {
                let (t, bare) = match id.split_once(':') {
                    Some((t, rest)) if ItemType::parse(t).is_some() => (ItemType::parse(t), rest),
                    _ => (None, id),
                };
                out.extend(link_id(t, bare, range));
            }
        }
        Parsed::Skill(_) | Parsed::Unreadable(_) => {}
    }
    out.sort_by_key(|l| (l.range.start, l.range.end));
    out.dedup_by(|a, b| a.range == b.range);
    out
}

/// `rel` under `base`, when it names an existing file there (no `..`, not absolute).
fn existing(base: Option<&Path>, rel: &str) -> Option<PathBuf> {
    let rel = rel.trim();
    if rel.is_empty()
        || rel.contains('{')
        || Path::new(rel).is_absolute()
        || Path::new(rel)
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    let p = base?.join(rel);
    p.is_file().then_some(p)
}
