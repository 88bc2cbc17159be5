//! Find references and rename of an item id: every place of the workspace that names an
//! item (a directive's calls and relationships, a tool's `executor_id`, a knowledge entry's
//! reference fields, a permission whose pattern is exactly the id).

use super::{read_only_refusal, Occurrence};
use crate::diag::TextEdit;
use crate::ids::{self, ItemType, Space};
use crate::text::TextRange;
use crate::tool::Field;
use crate::workspace::{Item, Lookup, Parsed, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The id text inside `range` of `text`: the range itself, or inside its quotes; `None`
/// when the text there is not the id (a spelling the rename cannot rewrite in place).
pub(super) fn id_range(text: &str, range: TextRange, id: &str) -> Option<TextRange> {
    let s = text.get(range.start..range.end)?;
    if s == id {
        return Some(range);
    }
    let trimmed_start = s.len() - s.trim_start_matches(['"', '\'', ' ']).len();
    let inner = s.trim_matches(['"', '\'', ' ']);
    (inner == id).then(|| {
        TextRange::new(
            range.start + trimmed_start,
            range.start + trimmed_start + id.len(),
        )
    })
}

fn resolves_to(ws: &Workspace, t: ItemType, reference: &str, target: &Item) -> bool {
    matches!(ws.find(t, reference, None), Lookup::Found(i) if i.path == target.path)
}

/// The item a reference of unknown type names (a tool, else a directive, else knowledge).
fn resolve_any(ws: &Workspace, t: Option<ItemType>, id: &str) -> Option<Arc<Item>> {
    let types: Vec<ItemType> = match t {
        Some(t) => vec![t],
        None => vec![ItemType::Tool, ItemType::Directive, ItemType::Knowledge],
    };
    types.into_iter().find_map(|t| match ws.find(t, id, None) {
        Lookup::Found(i) => Some(i),
        _ => None,
    })
}

/// The reference under `offset` in `item`: the item it names and the occurrence.
fn reference_at(ws: &Workspace, item: &Item, offset: usize) -> Option<(Arc<Item>, Occurrence)> {
    let text = item.text();
    match &item.parsed {
        Parsed::Directive(d) => {
            let Some(r) = d.references.iter().find(|r| r.range.touches(offset)) else {
                return permission_target(ws, item, d, offset);
            };
            let target = resolve_any(ws, r.item_type, &r.id)?;
            Some((
                target,
                Occurrence {
                    path: item.path.clone(),
                    range: id_range(text, r.range, &r.id).unwrap_or(r.range),
                    via: r.via.clone(),
                },
            ))
        }
        Parsed::Tool(t) => {
            let f = t.get(Field::ExecutorId)?;
            if !f.value.range.touches(offset) {
                return None;
            }
            let reference = f.value.as_str()?;
            let (id, _) = crate::ryeos::executor_ref(ws, reference)?;
            let Lookup::Found(target) = ws.find(ItemType::Tool, &id, None) else {
                return None;
            };
            Some((
                target,
                Occurrence {
                    path: item.path.clone(),
                    range: executor_id_range(ws, text, f.value.range, reference)
                        .unwrap_or(f.value.range),
                    via: "executor_id".into(),
                },
            ))
        }
        Parsed::Knowledge(k) => {
            let (field, id, range) = k
                .references()
                .into_iter()
                .find(|(_, _, r)| r.touches(offset))?;
            let (t, bare) = match id.split_once(':') {
                Some((t, rest)) if ItemType::parse(t).is_some() => (ItemType::parse(t), rest),
                _ => (None, id),
            };
            let target = resolve_any(ws, t, bare)?;
            Some((
                target,
                Occurrence {
                    path: item.path.clone(),
                    range: id_range(text, range, bare).unwrap_or(range),
                    via: field.to_string(),
                },
            ))
        }
        // A skill's mention of a skill (`/name`, `` `name` ``, a link through its folder).
        Parsed::Skill(_) => super::skill_refs::mention_at(ws, item, offset),
        Parsed::Unreadable(_) => None,
    }
}

/// A permission under `offset` whose pattern is exactly one item's id (a glob names many:
/// none), and where the pattern spells it: a ryeos capability string
/// (`ryeos.execute.tool.ID`), or a rye permission element.
fn permission_target(
    ws: &Workspace,
    item: &Item,
    d: &crate::directive::Directive,
    offset: usize,
) -> Option<(Arc<Item>, Occurrence)> {
    let c = d.capabilities.iter().find(|c| c.range.touches(offset))?;
    let crate::directive::Resource::Items(t) = &c.resource else {
        return None;
    };
    if c.deny || c.pattern.contains('*') {
        return None;
    }
    let target = resolve_any(ws, *t, &c.pattern).filter(|x| x.id == c.pattern)?;
    let text = item.text();
    let range = if d.ryeos.is_some() {
        ryeos_pattern_range(text, c.range, &c.pattern)
    } else {
        pattern_range(text, c.range, &c.pattern)
    }?;
    range.touches(offset).then(|| {
        (
            target,
            Occurrence {
                path: item.path.clone(),
                range,
                via: "permission".into(),
            },
        )
    })
}

/// The item `offset` is about: the one a reference there names, else `item` itself.
pub fn target_at(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Arc<Item> {
    reference_at(ws, item, offset)
        .map(|(t, _)| t)
        .unwrap_or_else(|| item.clone())
}

/// Every place of the workspace (outside the builtin space) that names `target`.
pub fn occurrences(ws: &Workspace, target: &Item) -> Vec<Occurrence> {
    let mut out = Vec::new();
    let bare = ids::bare_name(&target.id);
    let may_name = |r: &str| r == target.id || r == bare || r.ends_with(bare);
    for i in ws.items() {
        if i.is_builtin() {
            continue;
        }
        // Looked into only where a reference may name the target (a language server reads
        // again a text it let go of).
        let text = || i.text();
        match &i.parsed {
            Parsed::Directive(d) => {
                for r in &d.references {
                    if !may_name(&r.id) {
                        continue;
                    }
                    let named = match r.item_type {
                        Some(t) => t == target.item_type && resolves_to(ws, t, &r.id, target),
                        None => resolve_any(ws, None, &r.id).is_some_and(|x| x.path == target.path),
                    };
                    if named {
                        if let Some(range) = id_range(text(), r.range, &r.id) {
                            out.push(Occurrence {
                                path: i.path.clone(),
                                range,
                                via: r.via.clone(),
                            });
                        }
                    }
                }
                // A permission whose pattern is exactly this id (a glob names many: left alone).
                for c in &d.capabilities {
                    if c.pattern != target.id {
                        continue;
                    }
                    let matches_type = match &c.resource {
                        crate::directive::Resource::Items(Some(t)) => *t == target.item_type,
                        crate::directive::Resource::Items(None) => true,
                        _ => false,
                    };
                    if !matches_type {
                        continue;
                    }
                    let range = if d.ryeos.is_some() {
                        ryeos_pattern_range(text(), c.range, &c.pattern)
                    } else {
                        pattern_range(text(), c.range, &target.id)
                    };
                    if let Some(range) = range {
                        out.push(Occurrence {
                            path: i.path.clone(),
                            range,
                            via: "permission".into(),
                        });
                    }
                }
            }
            Parsed::Tool(t) if target.item_type == ItemType::Tool => {
                if let Some(f) = t.get(Field::ExecutorId) {
                    if let Some(reference) = f.value.as_str() {
                        let id = crate::ryeos::executor_ref(ws, reference);
                        if let Some((id, _)) = id.filter(|(id, _)| may_name(id)) {
                            if resolves_to(ws, ItemType::Tool, &id, target) {
                                if let Some(range) =
                                    executor_id_range(ws, text(), f.value.range, reference)
                                {
                                    out.push(Occurrence {
                                        path: i.path.clone(),
                                        range,
                                        via: "executor_id".into(),
                                    });
                                }
                            }
                        }
                    }
                }
            }
            Parsed::Knowledge(k) => {
                for (field, id, range) in k.references() {
                    let (t, bare_ref) = match id.split_once(':') {
                        Some((t, rest)) if ItemType::parse(t).is_some() => {
                            (ItemType::parse(t), rest)
                        }
                        _ => (None, id),
                    };
                    if !may_name(bare_ref) {
                        continue;
                    }
                    if resolve_any(ws, t, bare_ref).is_some_and(|x| x.path == target.path) {
                        if let Some(r) = id_range(text(), range, bare_ref).or_else(|| {
                            // `tool:a/b`: the id after the type.
                            let s = text().get(range.start..range.end)?;
                            let at = s.find(bare_ref)?;
                            Some(TextRange::new(
                                range.start + at,
                                range.start + at + bare_ref.len(),
                            ))
                        }) {
                            out.push(Occurrence {
                                path: i.path.clone(),
                                range: r,
                                via: field.to_string(),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if target.item_type == ItemType::Skill {
        out.extend(super::skill_refs::mention_occurrences(ws, target));
    }
    out.sort_by(|a, b| (&a.path, a.range.start).cmp(&(&b.path, b.range.start)));
    out.dedup();
    out
}

/// Where the id of an executor reference is spelled (inside any quotes): all of a kiwi/rye
/// id, the part after `tool:` of a ryeos canonical ref; `None` for an `@alias` (the id is
/// spelled in ryeos's alias table, not here) or a spelling the rename cannot rewrite.
fn executor_id_range(
    ws: &Workspace,
    text: &str,
    value: TextRange,
    reference: &str,
) -> Option<TextRange> {
    let (id, at) = crate::ryeos::executor_ref(ws, reference)?;
    let whole = id_range(text, value, reference)?;
    let start = whole.start + at?;
    Some(TextRange::new(start, start + id.len()))
}

/// Where a ryeos capability string (`ryeos.<verb>.<kind>.<pattern>`) spells its pattern:
/// after its third dot (the pattern keeps its own dots and slashes).
fn ryeos_pattern_range(text: &str, element: TextRange, pattern: &str) -> Option<TextRange> {
    let s = text.get(element.start..element.end)?;
    let start = s.find("ryeos.")?;
    let mut at = start;
    for _ in 0..3 {
        at += s[at..].find('.')? + 1;
    }
    s[at..]
        .starts_with(pattern)
        .then(|| TextRange::new(element.start + at, element.start + at + pattern.len()))
}

/// Where a permission element spells `id` (slashes, or rye's dots).
fn pattern_range(text: &str, element: TextRange, id: &str) -> Option<TextRange> {
    let s = text.get(element.start..element.end)?;
    let dotted = id.replace('/', ".");
    for spelling in [id, dotted.as_str()] {
        let mut from = 0;
        while let Some(at) = s[from..].find(spelling) {
            let start = from + at;
            let end = start + spelling.len();
            let before = s[..start].chars().next_back();
            let after = s[end..].chars().next();
            let bounded = |c: Option<char>| {
                c.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.')))
            };
            if bounded(before) && bounded(after) {
                return Some(TextRange::new(element.start + start, element.start + end));
            }
            from = end;
        }
    }
    None
}

/// Find references: the places naming the item at `offset` (or `item`), and with
/// `include_declaration`, the item's own file (its declared name, else its start).
pub fn references(
    ws: &Workspace,
    item: &Arc<Item>,
    offset: usize,
    include_declaration: bool,
) -> Vec<Occurrence> {
    if let Some(relying) = relying_on_permission(item, offset) {
        return relying;
    }
    let target = target_at(ws, item, offset);
    let mut out = Vec::new();
    if include_declaration && !target.is_builtin() {
        out.push(Occurrence {
            path: target.path.clone(),
            range: declaration_range(&target).unwrap_or(TextRange::empty(0)),
            via: "declaration".into(),
        });
    }
    out.extend(occurrences(ws, &target));
    out
}

/// On a permission of a directive: the calls of its steps that rely on it (the item id of
/// each call it grants).
fn relying_on_permission(item: &Item, offset: usize) -> Option<Vec<Occurrence>> {
    // A ryeos directive has no steps: its capability strings name the items themselves.
    let d = item.directive().filter(|d| d.ryeos.is_none())?;
    if d.references.iter().any(|r| r.range.touches(offset)) {
        return None;
    }
    let c = d.capabilities.iter().find(|c| c.range.touches(offset))?;
    // No call runs a skill: a permission naming one is about the skill (its references).
    if c.resource == crate::directive::Resource::Items(Some(ItemType::Skill)) {
        return None;
    }
    let mut out = Vec::new();
    for call in &d.calls {
        let Some(need) = crate::directive::Need::of_call(call) else {
            continue;
        };
        let (Some(t), Some(id)) = (need.item_type, need.id.as_deref()) else {
            continue;
        };
        if !c.deny && crate::directive::grants(std::slice::from_ref(c), &need.verb, t, id).is_some()
        {
            let range = call.item_id.as_ref().map(|i| i.range).unwrap_or(call.range);
            out.push(Occurrence {
                path: item.path.clone(),
                range,
                via: "granted".into(),
            });
        }
    }
    Some(out)
}

/// The declared name of an item in its own file: a directive's `name`, a knowledge `id`, a
/// skill's `name`.
fn declaration_range(item: &Item) -> Option<TextRange> {
    match &item.parsed {
        Parsed::Skill(_) => super::skill_refs::name_range(item),
        Parsed::Directive(d) => d.name.as_ref().map(|n| n.range),
        Parsed::Knowledge(k) => {
            let v = k.declared_id()?;
            let s = v.as_string()?;
            Some(if s.verbatim { s.content } else { v.range })
        }
        _ => None,
    }
}

/// What a rename starts from: the range to show and the id it renames.
pub fn prepare_rename(
    ws: &Workspace,
    item: &Arc<Item>,
    offset: usize,
) -> Option<(TextRange, String)> {
    // A reference in a read-only file would be edited by the rename itself.
    if !item.space.is_writable() {
        return None;
    }
    if let Some((target, occ)) = reference_at(ws, item, offset) {
        if !target.space.is_writable() {
            return None;
        }
        return Some((occ.range, target.id.clone()));
    }
    if let Some(r) = declaration_range(item).filter(|r| r.touches(offset)) {
        return Some((r, item.id.clone()));
    }
    None
}

/// Why nothing at `offset` can be renamed because of a read-only space (the item named
/// there, or the file holding the name): the message an editor shows where
/// [`prepare_rename`] offers nothing, instead of its own "nothing to rename".
pub fn rename_refusal(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<String> {
    if let Some((target, _)) = reference_at(ws, item, offset) {
        if let Err(e) = read_only_refusal(&target) {
            return Some(e);
        }
    } else if declaration_range(item).is_some_and(|r| r.touches(offset)) {
        if let Err(e) = read_only_refusal(item) {
            return Some(e);
        }
    }
    (!item.space.is_writable()).then(|| {
        format!(
            "{} is in the read-only `{}` space: kiwi never renames, edits or moves its files",
            item.path.display(),
            item.space
        )
    })
}

/// A rename: text edits per file, and the renamed item's file move.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RenamePlan {
    pub edits: Vec<(PathBuf, Vec<TextEdit>)>,
    /// (from, to): the item's file, and its script beside it for a YAML tool with one; a
    /// skill's folder.
    pub moves: Vec<(PathBuf, PathBuf)>,
    /// The edits are wrong without the moves (a skill's `name` must be its folder's, S804):
    /// a client that cannot move files is refused the rename rather than given the edits.
    pub moves_required: bool,
}

/// Rename the item at `offset` (a reference, or the item's own declaration) to `new_id`.
pub fn rename(
    ws: &Workspace,
    item: &Arc<Item>,
    offset: usize,
    new_id: &str,
) -> Result<RenamePlan, String> {
    let new_id = new_id.trim();
    let target = match reference_at(ws, item, offset) {
        Some((t, _)) => t,
        None if prepare_rename(ws, item, offset).is_some() => item.clone(),
        None => return Err("no item id here to rename".into()),
    };
    plan_rename(ws, &target, new_id, None)
}

/// Find references from a file that is no item (a project's `AGENTS.md`, a skill's other
/// Markdown): on a mention of a skill, the places naming that skill, as [`references`] gives
/// them from the skill's own file. `text`: the file's in the editor. `None`: no mention there.
pub fn file_references(
    ws: &Workspace,
    path: &Path,
    text: &str,
    offset: usize,
    include_declaration: bool,
) -> Option<Vec<Occurrence>> {
    let (target, _) = super::skill_refs::mention_in_file(ws, path, text, offset)?;
    let at = declaration_range(&target).map_or(0, |r| r.start);
    Some(references(ws, &target, at, include_declaration))
}

/// What a rename started on a mention in a file that is no item renames: the mention's range
/// and the skill's name; `Err`: why it cannot be renamed (a read-only space). `Ok(None)`: no
/// mention there.
pub fn file_prepare_rename(
    ws: &Workspace,
    path: &Path,
    text: &str,
    offset: usize,
) -> Result<Option<(TextRange, String)>, String> {
    let Some((target, occ)) = super::skill_refs::mention_in_file(ws, path, text, offset) else {
        return Ok(None);
    };
    read_only_refusal(&target)?;
    Ok(Some((occ.range, target.id.clone())))
}

/// Rename the skill mentioned at `offset` of a file that is no item, as from its own file.
/// Refused while the editor's text of the file is not what is on disk: the plan edits such
/// files as they are on disk (save it first).
pub fn file_rename(
    ws: &Workspace,
    path: &Path,
    text: &str,
    offset: usize,
    new_id: &str,
) -> Result<RenamePlan, String> {
    let Some((target, _)) = super::skill_refs::mention_in_file(ws, path, text, offset) else {
        return Err("no skill mention here to rename".into());
    };
    if !super::skill_refs::same_as_disk(path, text) {
        return Err(format!(
            "{} has unsaved changes: save it first (a rename edits the files that are no item as they are on disk)",
            path.display()
        ));
    }
    plan_rename(ws, &target, new_id.trim(), None)
}

/// The edits of renaming the item whose file moves from `from` to `to` (the editor's
/// `willRenameFiles`): the id follows the new path, with the same edits as [`rename`]. Only
/// the item's script (a YAML tool's, beside it) is left to move; the editor moves the file.
/// `from` may be a skill's folder: its `name` and mentions follow its new name.
/// `Ok(None)` when the move does not rename an item (not an item file before, or after).
pub fn rename_file(ws: &Workspace, from: &Path, to: &Path) -> Result<Option<RenamePlan>, String> {
    // A skill's folder renamed in the editor: its `name` and its mentions follow.
    if let Some(skill) = ws
        .item(&from.join(crate::skill::SKILL_FILE))
        .filter(|i| i.item_type == ItemType::Skill)
    {
        let named = occurrences(ws, skill);
        return super::skill_refs::folder_renamed(ws, skill, to, named);
    }
    // A skill is its folder: moving its `SKILL.md` file renames nothing.
    let Some(target) = ws
        .item(from)
        .filter(|i| i.item_type != ItemType::Skill)
        .cloned()
    else {
        return Ok(None);
    };
    read_only_refusal(&target)?;
    let Some((space, item_type, new_id)) = ws.classify(to) else {
        return Ok(None);
    };
    if space != target.space || item_type != target.item_type {
        return Ok(None);
    }
    plan_rename(ws, &target, &new_id, Some(to)).map(Some)
}

/// The plan of renaming `target` to `new_id`; `moved_to`: its file is moved there by the
/// editor (a file rename), else the plan moves it.
fn plan_rename(
    ws: &Workspace,
    target: &Arc<Item>,
    new_id: &str,
    moved_to: Option<&Path>,
) -> Result<RenamePlan, String> {
    let target = target.clone();
    read_only_refusal(&target)?;
    if target.item_type == ItemType::Skill {
        let named = occurrences(ws, &target);
        return super::skill_refs::plan_rename(ws, &target, new_id, false, named);
    }
    ids::validate_id(new_id).map_err(|e| format!("`{new_id}` is not a valid id: {e}"))?;
    if new_id == target.id {
        return Ok(RenamePlan {
            edits: Vec::new(),
            moves: Vec::new(),
            moves_required: false,
        });
    }
    if ws
        .all_with_id(target.item_type, new_id)
        .iter()
        .any(|i| i.space == target.space)
    {
        return Err(format!(
            "a {} `{new_id}` already exists in the {} space",
            target.item_type.as_str(),
            target.space.as_str()
        ));
    }
    let root = ws
        .space_root(target.space)
        .filter(|_| target.space != Space::Builtin)
        .ok_or_else(|| "the item is in no space on disk".to_string())?;
    let folder = root.join(
        target
            .item_type
            .folder()
            .ok_or_else(|| "this item type has no files".to_string())?,
    );
    let moved = |p: &PathBuf| -> Option<PathBuf> {
        let ext = p.extension()?.to_str()?;
        Some(folder.join(format!("{new_id}.{ext}")))
    };
    let mut moves = Vec::new();
    if moved_to.is_none() {
        if let Some(to) = moved(&target.path) {
            if to.exists() {
                return Err(format!("{} already exists", to.display()));
            }
            moves.push((target.path.clone(), to));
        }
    }
    if let Some(script) = &target.script {
        if let Some(to) = moved(script) {
            if moved_to.is_some() && to.exists() {
                return Err(format!("{} already exists", to.display()));
            }
            moves.push((script.clone(), to));
        }
    }
    let mut by_file: Vec<(PathBuf, Vec<TextEdit>)> = Vec::new();
    let mut push =
        |path: PathBuf, edit: TextEdit| match by_file.iter_mut().find(|(p, _)| *p == path) {
            Some((_, v)) => v.push(edit),
            None => by_file.push((path, vec![edit])),
        };
    // ryeos's alias table names its tool by a canonical ref kiwi does not rewrite (the kind
    // schema is ryeos's engine configuration): the rename would leave the alias pointing at
    // nothing, so it is refused, saying where the alias is.
    if target.item_type == ItemType::Tool {
        if let Some((table, aliases)) = crate::ryeos::alias_table(ws) {
            let canonical = format!("{}{}", crate::ryeos::TOOL_REF, target.id);
            if let Some((alias, _)) = aliases.iter().find(|(_, to)| *to == canonical) {
                return Err(format!(
                    "`{}` is the tool of ryeos's alias `{alias}` ({}), which kiwi does not rewrite: renaming it would leave the alias naming nothing",
                    target.id,
                    table.display()
                ));
            }
        }
    }
    let new_bare = ids::bare_name(new_id);
    let occurrences = occurrences(ws, &target);
    // Every file the plan edits must be writable: a reference from a read-only space is
    // neither edited nor left silently broken; the rename is refused.
    if let Some((occ, space)) = occurrences.iter().find_map(|o| {
        let space = ws.item(&o.path).map(|i| i.space)?;
        (!space.is_writable()).then_some((o, space))
    }) {
        return Err(format!(
            "`{}` is referenced from {} in the read-only `{space}` space, which kiwi never edits: renaming it would break that reference",
            target.id,
            occ.path.display()
        ));
    }
    for occ in occurrences {
        let text = ws
            .item(&occ.path)
            .map(|i| i.text().to_string())
            .unwrap_or_default();
        let old = text.get(occ.range.start..occ.range.end).unwrap_or("");
        let new_text = if old.contains('.') && !old.contains('/') && target.id.contains('/') {
            new_id.replace('/', ".")
        } else {
            new_id.to_string()
        };
        push(
            occ.path.clone(),
            TextEdit {
                range: occ.range,
                new_text,
            },
        );
    }
    // A ryeos tool's category is its folder (T310): it follows the tool to its new one.
    if let (Some(old_folder), Some(f)) = (
        crate::check::ryeos_category_folder(&target),
        target
            .tool()
            .and_then(|t| t.get(crate::tool::Field::Category)),
    ) {
        if f.value.as_str() == Some(old_folder) {
            let new_folder = new_id.rsplit_once('/').map_or("", |(dir, _)| dir);
            if let Some(range) = id_range(target.text(), f.value.range, old_folder) {
                push(
                    target.path.clone(),
                    TextEdit {
                        range,
                        new_text: new_folder.to_string(),
                    },
                );
            }
        }
    }
    // The declared name follows the file's new stem.
    if let Some(r) = declaration_range(&target) {
        if target.text().get(r.start..r.end) == Some(ids::bare_name(&target.id)) {
            push(
                target.path.clone(),
                TextEdit {
                    range: r,
                    new_text: new_bare.to_string(),
                },
            );
        }
    }
    Ok(RenamePlan {
        edits: by_file,
        moves,
        moves_required: false,
    })
}
