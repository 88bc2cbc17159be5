//! The rules on what an item references: directive and knowledge references (K003, K004,
//! K006, N604) and grants that can match no item (P207).

use crate::chain;
use crate::diag::{Code, Diagnostic, Fix};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::workspace::{Item, Lookup, Workspace};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// K003 / K004 / K006 on directive references

fn reference_diagnostic(
    ws: &Workspace,
    item_type: Option<ItemType>,
    id: &str,
    range: TextRange,
    via: &str,
    missing_code: Code,
) -> Option<Diagnostic> {
    // A reference built from a placeholder is resolved at run time.
    if id.contains('{') || id.contains('$') || id.trim().is_empty() {
        return None;
    }
    // System items are virtual: they exist when the catalogue has them.
    if item_type == Some(ItemType::System) && crate::system::item(id.trim()).is_some() {
        return None;
    }
    let types: Vec<ItemType> = match item_type {
        Some(t) => vec![t],
        None => ItemType::FILE_TYPES.to_vec(),
    };
    let mut ambiguous = None;
    for t in &types {
        match ws.find(*t, id, None) {
            Lookup::Found(_) => return None,
            Lookup::Refused(e) => {
                return Some(Diagnostic::new(
                    Code::K006,
                    range,
                    format!("`{id}` is refused as an item id: {e}"),
                ));
            }
            Lookup::Ambiguous { candidates } => ambiguous = Some((*t, candidates)),
            Lookup::Missing { .. } => {}
        }
    }
    if let Some((t, candidates)) = ambiguous {
        let mut d = Diagnostic::new(
            Code::K004,
            range,
            format!(
                "`{id}` is ambiguous: {} {t}s end with it ({}); use the full id",
                candidates.len(),
                chain::quote_list(&candidates)
            ),
        );
        for c in &candidates {
            d = d.fix(Fix::replace(format!("Use `{c}`"), range, c.clone()));
        }
        return Some(d);
    }
    // Only now, with nothing found anywhere, is it worth scanning every id for suggestions.
    let suggestions: Vec<String> = types
        .iter()
        .flat_map(|t| ws.suggest(*t, id, None))
        .collect();
    let what = match item_type {
        Some(t) => format!("{t} `{id}`"),
        None => format!("item `{id}`"),
    };
    let mut msg = format!(
        "{via} names {what}, which exists in no space ({})",
        ws.space_names()
    );
    if !suggestions.is_empty() {
        msg.push_str(&format!(
            "; did you mean {}?",
            chain::quote_list(&suggestions)
        ));
    }
    let mut d = Diagnostic::new(missing_code, range, msg);
    for s in suggestions.iter().take(3) {
        d = d.fix(Fix::replace(format!("Change to `{s}`"), range, s.clone()));
    }
    Some(d)
}

pub(super) fn check_directive_references(
    ws: &Workspace,
    item: &Arc<Item>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(d) = item.directive() else { return };
    for r in &d.references {
        out.extend(reference_diagnostic(
            ws,
            r.item_type,
            &r.id,
            r.range,
            // ryeos's references say where they are in code already (`` `extends` ``).
            &if r.via.starts_with('`') || r.via.contains(' ') {
                r.via.clone()
            } else {
                format!("`{}`", r.via)
            },
            Code::K003,
        ));
    }
}

/// Whether a reference value has the shape of an item id: not a URL, not a path to a file
/// (`docs/internals/threads.md`, `../README.md`: a last segment with an extension, or a
/// `./`, `../` or `/` start), not refused as an id. rye's knowledge format lists "knowledge
/// IDs or external URLs" and its runtime never resolves a reference, so anything else in a
/// reference field is documentation, not a link kiwi can check.
fn is_item_id_shaped(reference: &str) -> bool {
    let last = crate::ids::bare_name(reference);
    !reference.contains("://")
        && !reference.starts_with(['/', '.', '#', '~'])
        && !last.contains('.')
        && crate::ids::validate_id(reference).is_ok()
}

/// N604: a knowledge entry's reference (`references`, `extends`, `used_by`) that names no
/// item. rye never resolves these (no code of its runtime reads them): nothing fails, so a
/// reference that names nothing is a warning, and one that names several is no defect.
/// It names what rye's lookup would find: an id that is the reference or ends with it
/// segment by segment (`KnowledgeHandler.resolve`: `rglob(f"{entry_id}.md")`), so the
/// category-relative `threads/thread-lifecycle` of an entry in `rye/agent/` names
/// `rye/agent/threads/thread-lifecycle`.
pub(super) fn check_knowledge_references(
    ws: &Workspace,
    item: &Arc<Item>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(k) = item.knowledge() else { return };
    for (field, id, range) in k.references() {
        // Reference values may be written `type:id`.
        let (t, id) = match id.split_once(':') {
            Some((t, rest)) if ItemType::parse(t).is_some() => (ItemType::parse(t), rest),
            _ => (None, id),
        };
        let id = id.trim();
        if id.is_empty() || id.contains(['{', '$']) || !is_item_id_shaped(id) {
            continue;
        }
        let types: Vec<ItemType> = match t {
            Some(t) => vec![t],
            None => ItemType::FILE_TYPES.to_vec(),
        };
        if types.iter().any(|t| !ws.ids_ending_with(*t, id).is_empty()) {
            continue;
        }
        out.extend(reference_diagnostic(
            ws,
            t,
            id,
            range,
            &format!("`{field}`"),
            Code::N604,
        ));
    }
}

// ---------------------------------------------------------------------------------------
// P207: a grant that can match no item

/// A directive's item grant whose pattern names a specific part of an id (not `*`, no
/// placeholder) and matches no item of its type in any space, though items of its namespace
/// exist: it grants nothing today (a renamed folder, a typo), as rye's `rye.primary-tools.*`
/// after the folder became `rye/primary`.
pub(super) fn check_grants_match_something(
    ws: &Workspace,
    item: &Arc<Item>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(d) = item.directive() else { return };
    // The sorted ids of each type (the workspace's id index, shared by every check), looked
    // at only when a grant is not matched by one of the directive's own references.
    let mut ids_of: std::collections::HashMap<ItemType, Arc<[String]>> = Default::default();
    for c in &d.capabilities {
        let crate::directive::Resource::Items(Some(t)) = c.resource else {
            continue;
        };
        if c.deny
            || !c.valid
            || c.pattern.contains('{')
            || c.pattern.chars().all(|ch| matches!(ch, '*' | '/' | '.'))
        {
            continue;
        }
        let verb = if c.verb == "*" {
            "run"
        } else {
            c.verb.as_str()
        };
        // Only the ids that start with the pattern's fixed part can match (`ids` is sorted).
        let prefix: String = c
            .pattern
            .chars()
            .take_while(|ch| !matches!(ch, '*' | '?' | '[' | '{' | '\\'))
            .collect();
        let grants_id =
            |id: &str| crate::directive::grants(std::slice::from_ref(c), verb, t, id).is_some();
        if d.references
            .iter()
            .any(|r| r.item_type == Some(t) && grants_id(&r.id) && ws.get(t, &r.id).is_some())
        {
            continue;
        }
        let ids = ids_of.entry(t).or_insert_with(|| ws.ids(t));
        let from = ids.partition_point(|id| id.as_str() < prefix.as_str());
        let matches = ids[from..]
            .iter()
            .take_while(|id| id.starts_with(&prefix))
            .any(|id| grants_id(id));
        if matches {
            continue;
        }
        // Only when the workspace knows the pattern's namespace (its first segment): when no
        // item at all lives under `rye/`, the space that holds them is missing (the system
        // space of a project that uses rye's tools), which P207 cannot tell from a typo.
        let Some((ns, _)) = c.pattern.split_once('/') else {
            continue;
        };
        let ns = format!("{ns}/");
        let from = ids.partition_point(|id| id.as_str() < ns.as_str());
        if ns.contains(['*', '?', '[', '{']) || !ids.get(from).is_some_and(|id| id.starts_with(&ns))
        {
            continue;
        }
        let range = item
            .directive_root()
            .and_then(|r| element_text_range(&r, c.range))
            .unwrap_or(c.range);
        out.push(Diagnostic::new(
            Code::P207,
            range,
            format!(
                "`{}` matches no {t} in any space{}: this grant allows nothing",
                c.pattern,
                if prefix.is_empty() || prefix == c.pattern {
                    String::new()
                } else {
                    format!(" (no {t} id starts with `{prefix}`)")
                }
            ),
        ));
    }
}

/// The text range of the element whose range is `r` (the pattern of `<tool>PATTERN</tool>`).
fn element_text_range(root: &crate::directive::Element, r: TextRange) -> Option<TextRange> {
    let mut stack = vec![root];
    while let Some(el) = stack.pop() {
        if el.range == r {
            return el.text_range;
        }
        stack.extend(
            el.children
                .iter()
                .filter(|c| c.range.start <= r.start && r.end <= c.range.end),
        );
    }
    None
}
