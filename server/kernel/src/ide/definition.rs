//! Go to definition: where the reference at an offset is defined.

use super::{lookup_any, Target};
use crate::directive::PlaceholderKind;
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::tool::Field;
use crate::workspace::{Item, Lookup, Workspace};
use std::sync::Arc;

/// Where the thing at `offset` is defined.
pub fn definition(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Vec<Target> {
    let target_of = |i: &Arc<Item>| Target {
        path: i.path.clone(),
        range: TextRange::empty(0),
        builtin_text: i.is_builtin().then(|| i.source.shared()),
    };
    if let Some(t) = item.tool() {
        if let Some(f) = t.get(Field::ExecutorId) {
            if f.value.range.touches(offset) {
                // A ryeos canonical ref or alias names its tool as the chain follows it.
                let id = f
                    .value
                    .as_str()
                    .and_then(|r| crate::ryeos::executor_ref(ws, r));
                if let Some((id, _)) = id {
                    if let Lookup::Found(i) = ws.lookup(ItemType::Tool, &id, None) {
                        return vec![target_of(&i)];
                    }
                }
            }
        }
        return Vec::new();
    }
    if item.skill().is_some() {
        // A file the body references, else the skill a mention names (at its `name`).
        return super::skill::definition(item, offset)
            .map(|path| Target {
                path,
                range: TextRange::empty(0),
                builtin_text: None,
            })
            .or_else(|| {
                let (skill, _) = super::skill_refs::mention_at(ws, item, offset)?;
                Some(Target {
                    path: skill.path.clone(),
                    range: super::skill_refs::name_range(&skill).unwrap_or(TextRange::empty(0)),
                    builtin_text: None,
                })
            })
            .into_iter()
            .collect();
    }
    let Some(d) = item.directive() else {
        return Vec::new();
    };
    if let Some(p) = d.placeholders.iter().find(|p| p.range.touches(offset)) {
        if let PlaceholderKind::Input { name, .. } | PlaceholderKind::Bare { name } = &p.kind {
            if let Some(i) = d.inputs.iter().find(|i| &i.name.value == name) {
                return vec![Target {
                    path: item.path.clone(),
                    range: i.name.range,
                    builtin_text: None,
                }];
            }
        }
        return Vec::new();
    }
    if let Some(r) = d.references.iter().find(|r| r.range.touches(offset)) {
        if let (_, Lookup::Found(i)) = lookup_any(ws, r.item_type, &r.id) {
            return vec![target_of(&i)];
        }
    }
    Vec::new()
}
