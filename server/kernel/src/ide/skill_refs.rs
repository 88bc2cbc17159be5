//! References and rename of an Agent Skill (issue 28, item 4): where a skill is named, and
//! the plan of renaming it (its `name:`, its folder, and every mention).
//!
//! A skill is named by its folder and its frontmatter `name` (the specification: "Must match
//! the parent directory name"), and elsewhere by a **mention**. What counts as a mention is
//! deliberately narrow, so that a rename never rewrites prose that merely uses the same word
//! (`brainstorming`, `template`, `pdf`):
//!
//! - an inline code span that is exactly the name (`` `deploy` ``), or starts with the name
//!   in its slash-command or mention form followed by nothing or arguments (`` `/deploy` ``,
//!   `` `/deploy prod` ``, `` `$deploy` ``);
//! - outside code, the slash-command or mention form as a word of its own: `/deploy`,
//!   `$deploy`, at the start of a line or after a space or an opening bracket, quote or
//!   emphasis mark, and not followed by a path (`/deploy/x`), an extension (`/deploy.md`) or
//!   more name characters. These are the forms by which a user activates a skill (the Agent
//!   Skills client guide, "User-explicit activation": "`/skill-name` or `$skill-name`");
//! - a Markdown link whose relative target goes through the skill's folder
//!   (`[deploy](../deploy/SKILL.md)`, `[ref](.claude/skills/deploy/reference.md)`): the
//!   folder's segment of the link is the mention.
//!
//! A bare word is never a mention, nor a plugin-namespaced name (`superpowers:brainstorming`):
//! Claude Code namespaces a plugin's skills as `plugin-name:skill-name`, which names the
//! plugin's skill, not a project's or a user's skill of the same name. Fenced code blocks are
//! left out (their text is an example, not an instruction). A mention names the skill that
//! wins for that name in the workspace (as a client resolves a name); a link names the
//! folder it goes through.
//!
//! The files searched: every skill's `SKILL.md` (frontmatter values and body) and the other
//! Markdown files of its folder, and the project's `AGENTS.md` files (the root one and the
//! nested ones: agents.md, "place another AGENTS.md inside each package"), as well as the
//! directives whose permissions name the skill (found by [`super::refs::occurrences`] and passed in: this file does not import `refs`, which imports it).

use super::Occurrence;
use crate::ids::ItemType;
use crate::skill::{Skill, SKILL_FILE};
use crate::text::TextRange;
use crate::workspace::{Item, Lookup, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest Markdown file read from disk for mentions (a bigger one is not prose).
const MAX_MENTION_FILE: u64 = 1 << 20;
/// How deep below the project `AGENTS.md` files are looked for.
const AGENTS_DEPTH: usize = 8;

/// A mention of a skill in a Markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mention {
    /// The name as written.
    pub name: String,
    /// The name's range (only the name: not the `/`, `$` or backticks).
    pub range: TextRange,
    /// A link: the skill folder it goes through.
    pub folder: Option<PathBuf>,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// Whether `s` is a skill name (the specification's rules, as S803 checks them).
fn is_name(s: &str) -> bool {
    !s.is_empty() && crate::skill::name_problems(s).is_empty()
}

/// The name-character run starting at byte `at` of `s`.
fn word_at(s: &str, at: usize) -> &str {
    let rest = s.get(at..).unwrap_or("");
    let end = rest
        .char_indices()
        .find(|(_, c)| !is_word_char(*c))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// Whether what follows a slash/mention form ends the name: the end, a space, or punctuation
/// that does not continue a path, a file name or an identifier.
fn ends_mention(after: &str) -> bool {
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        Some(c) if c.is_whitespace() => true,
        Some('.') => !chars.next().is_some_and(|c| c.is_alphanumeric()),
        Some(c) => !matches!(c, '/' | '\\' | '@' | '=' | '+' | '$' | '%' | '&' | '~'),
    }
}

/// The mentions in one line of prose (`s..e` of `text`, outside fenced code).
fn scan_line(text: &str, s: usize, e: usize, out: &mut Vec<Mention>) {
    let Some(line) = text.get(s..e) else {
        return;
    };
    let b = line.as_bytes();
    // Code spans: a run of n backticks to the next run of exactly n (CommonMark).
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|c| **c == b'`').count();
        let open_end = i + n;
        let mut j = open_end;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|c| **c == b'`').count();
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(c) => {
                spans.push((open_end, c));
                i = c + n;
            }
            None => i = open_end,
        }
    }
    let mut push = |name: &str, at: usize| {
        if is_name(name) {
            out.push(Mention {
                name: name.to_string(),
                range: TextRange::new(s + at, s + at + name.len()),
                folder: None,
            });
        }
    };
    for &(cs, ce) in &spans {
        let content = &line[cs..ce];
        let lead = content.len() - content.trim_start().len();
        let inner = content.trim();
        let at = cs + lead;
        if inner.is_empty() {
            continue;
        }
        if let Some(rest) = inner.strip_prefix(['/', '$']) {
            let w = word_at(rest, 0);
            if !w.is_empty() && ends_mention(&rest[w.len()..]) {
                push(w, at + 1);
            }
        } else if word_at(inner, 0).len() == inner.len() {
            push(inner, at);
        }
    }
    // Prose: `/name` and `$name` as words of their own.
    let in_span = |k: usize| spans.iter().any(|&(a, z)| k + 1 > a && k < z + 1);
    for (k, c) in line.char_indices() {
        if !(c == '/' || c == '$') || in_span(k) {
            continue;
        }
        let before = line[..k].chars().next_back();
        let opens = before.is_none_or(|p| {
            p.is_whitespace() || matches!(p, '(' | '[' | '{' | '"' | '\'' | '*' | '_' | '>' | '|')
        });
        // `](/x)`: an absolute link target, not a mention.
        let link_target = before == Some('(') && line[..k - 1].ends_with(']');
        if !opens || link_target {
            continue;
        }
        let w = word_at(line, k + 1);
        if !w.is_empty() && ends_mention(&line[k + 1 + w.len()..]) {
            push(w, k + 1);
        }
    }
}

/// The lines of `region` of `text` (start, end without the line break).
fn plain_lines(text: &str, region: TextRange) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut at = region.start.min(text.len());
    let end = region.end.min(text.len());
    while at < end {
        let e = text[at..end].find('\n').map_or(end, |i| at + i);
        v.push((at, e));
        at = e + 1;
    }
    v
}

/// The skill folder a relative link target goes through, and the range of its segment.
fn link_mention(ws: &Workspace, base: &Path, target: &str, range: TextRange) -> Option<Mention> {
    let path = target.split(['#', '?']).next().unwrap_or("");
    if path.is_empty() || path.contains(':') || path.starts_with('/') {
        return None;
    }
    let mut cur = base.to_path_buf();
    let mut at = 0;
    for seg in path.split('/') {
        let seg_start = at;
        at += seg.len() + 1;
        match seg {
            "" | "." => continue,
            ".." => {
                cur.pop();
                continue;
            }
            _ => cur.push(seg),
        }
        let is_skill = ws
            .item(&cur.join(SKILL_FILE))
            .is_some_and(|i| i.item_type == ItemType::Skill);
        if is_skill {
            return Some(Mention {
                name: seg.to_string(),
                range: TextRange::new(range.start + seg_start, range.start + seg_start + seg.len()),
                folder: Some(cur),
            });
        }
    }
    None
}

/// Every mention of a skill in a Markdown file: `skill` for a `SKILL.md` (its frontmatter's
/// lines and its body), else the whole text.
pub(super) fn mentions_in(
    ws: &Workspace,
    path: &Path,
    text: &str,
    skill: Option<&Skill>,
) -> Vec<Mention> {
    let mut out = Vec::new();
    let body = skill.map_or(TextRange::new(0, text.len()), |s| s.body);
    if let Some(s) = skill {
        for (ls, le) in plain_lines(text, s.frontmatter_text) {
            scan_line(text, ls, le, &mut out);
        }
    }
    for (ls, le) in crate::skill::prose_lines(text, body) {
        scan_line(text, ls, le, &mut out);
    }
    if let Some(base) = path.parent() {
        for (target, range) in crate::skill::body_links(text, body) {
            if let Some(m) = link_mention(ws, base, &target, range) {
                out.push(m);
            }
        }
    }
    out.sort_by_key(|m| m.range.start);
    out.dedup_by_key(|m| m.range.start);
    out
}

/// The skill a mention names: the one of the folder a link goes through, else the one that
/// wins for the name.
pub(super) fn mentioned(ws: &Workspace, m: &Mention) -> Option<Arc<Item>> {
    match &m.folder {
        Some(f) => ws
            .item(&f.join(SKILL_FILE))
            .filter(|i| i.item_type == ItemType::Skill)
            .cloned(),
        None => match ws.find(ItemType::Skill, &m.name, None) {
            Lookup::Found(i) => Some(i),
            _ => None,
        },
    }
}

/// The mention under `offset` of a skill's `SKILL.md`, with the skill it names.
pub(super) fn mention_at(
    ws: &Workspace,
    item: &Item,
    offset: usize,
) -> Option<(Arc<Item>, Occurrence)> {
    let skill = item.skill()?;
    let m = mentions_in(ws, &item.path, item.text(), Some(skill))
        .into_iter()
        .find(|m| m.range.touches(offset))?;
    let target = mentioned(ws, &m)?;
    Some((
        target,
        Occurrence {
            path: item.path.clone(),
            range: m.range,
            via: via(&m).into(),
        },
    ))
}

fn via(m: &Mention) -> &'static str {
    if m.folder.is_some() {
        "link"
    } else {
        "mention"
    }
}

/// The Markdown files read from disk for mentions: the other `.md` files of each skill's
/// folder, and the project's `AGENTS.md` files (the `SKILL.md` files are items, read with
/// the editor's text).
fn disk_files(ws: &Workspace) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for i in ws.items() {
        if i.item_type != ItemType::Skill || i.is_builtin() {
            continue;
        }
        let Some(dir) = i.path.parent() else { continue };
        for rel in crate::skill::serve::files(dir) {
            if rel != SKILL_FILE && rel.ends_with(".md") {
                out.push(dir.join(rel));
            }
        }
    }
    if let Some(project) = &ws.project {
        let walker = ignore::WalkBuilder::new(project)
            .follow_links(false)
            .max_depth(Some(AGENTS_DEPTH))
            .filter_entry(|e| {
                e.depth() == 0
                    || !e.file_type().is_some_and(|t| t.is_dir())
                    || e.file_name()
                        .to_str()
                        .is_some_and(|n| !crate::workspace::skip_dir(n))
            })
            .build();
        for e in walker.flatten() {
            if e.file_name() == "AGENTS.md" && e.file_type().is_some_and(|t| t.is_file()) {
                out.push(e.into_path());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_MENTION_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Every mention of the skill `target` in the skills' Markdown and the project's `AGENTS.md`.
pub(super) fn mention_occurrences(ws: &Workspace, target: &Item) -> Vec<Occurrence> {
    let mut out = Vec::new();
    let names = |m: &Mention| match &m.folder {
        Some(f) => target.path.parent() == Some(f.as_path()),
        None => m.name == target.id && mentioned(ws, m).is_some_and(|i| i.path == target.path),
    };
    let mut push = |path: &Path, ms: Vec<Mention>| {
        for m in ms.into_iter().filter(|m| names(m)) {
            out.push(Occurrence {
                path: path.to_path_buf(),
                range: m.range,
                via: via(&m).into(),
            });
        }
    };
    for i in ws.items() {
        if i.is_builtin() {
            continue;
        }
        if let Some(skill) = i.skill() {
            push(
                &i.path,
                mentions_in(ws, &i.path, &i.source.text_once(), Some(skill)),
            );
        }
    }
    for path in disk_files(ws) {
        if let Some(text) = read_small(&path) {
            push(&path, mentions_in(ws, &path, &text, None));
        }
    }
    out
}

/// The mention under `offset` of a Markdown file that is no item but is searched for
/// mentions (a project's `AGENTS.md`, a skill's other Markdown), in `text` (the editor's),
/// with the skill it names. `None` for any other file.
pub(super) fn mention_in_file(
    ws: &Workspace,
    path: &Path,
    text: &str,
    offset: usize,
) -> Option<(Arc<Item>, Occurrence)> {
    if ws.item(path).is_some() || !disk_files(ws).iter().any(|p| p == path) {
        return None;
    }
    let m = mentions_in(ws, path, text, None)
        .into_iter()
        .find(|m| m.range.touches(offset))?;
    let target = mentioned(ws, &m)?;
    Some((
        target,
        Occurrence {
            path: path.to_path_buf(),
            range: m.range,
            via: via(&m).into(),
        },
    ))
}

/// Whether `text` is what a file holds on disk (a rename's edits of the files that are no
/// item are made on their text on disk).
pub(super) fn same_as_disk(path: &Path, text: &str) -> bool {
    read_small(path).as_deref() == Some(text)
}

/// The range of a skill's `name` value (inside its quotes).
pub(super) fn name_range(item: &Item) -> Option<TextRange> {
    let v = item.skill()?.get("name")?;
    match v.as_string() {
        Some(s) if s.verbatim => Some(s.content),
        _ => Some(v.range),
    }
}

/// The space of the file at `path`: its item's, or the space of the skill whose folder holds
/// it (a skill's other Markdown files are not items); `None` outside any.
pub(super) fn space_of_file(ws: &Workspace, path: &Path) -> Option<crate::ids::Space> {
    if let Some(i) = ws.item(path) {
        return Some(i.space);
    }
    ws.items()
        .filter(|i| i.item_type == ItemType::Skill)
        .find(|i| i.path.parent().is_some_and(|d| path.starts_with(d)))
        .map(|i| i.space)
}

/// The text a face shows an occurrence in: the item's (the editor's), else the file's.
pub fn file_text(ws: &Workspace, path: &Path) -> Option<String> {
    match ws.item(path) {
        Some(i) => Some(i.text().to_string()),
        None => read_small(path),
    }
}

/// The plan of renaming the skill `target` to `new_name`: its folder moves (a required move:
/// the name must stay its folder's), its `name` value and every mention follow. Refused
/// with the reason for a name the specification refuses, a folder that already exists, a
/// skill of that name in the same space, or a mention in a read-only space. `editor_moves`:
/// the editor moves the folder itself (its file explorer), whose new place is not checked.
pub(super) fn plan_rename(
    ws: &Workspace,
    target: &Arc<Item>,
    new_name: &str,
    editor_moves: bool,
    occurrences: Vec<Occurrence>,
) -> Result<super::RenamePlan, String> {
    super::read_only_refusal(target)?;
    let new_name = new_name.trim();
    if new_name.is_empty() {
        return Err("a skill name cannot be empty".into());
    }
    let problems = crate::skill::name_problems(new_name);
    if !problems.is_empty() {
        return Err(format!(
            "`{new_name}` is not a valid skill name: it {} (the Agent Skills specification)",
            problems.join("; ")
        ));
    }
    crate::ids::validate_id(new_name)
        .map_err(|e| format!("`{new_name}` is not a valid skill name: {e}"))?;
    let dir = target
        .path
        .parent()
        .ok_or_else(|| "the skill has no folder".to_string())?;
    let root = dir
        .parent()
        .ok_or_else(|| "the skill's folder is in no skills folder".to_string())?;
    let name_now = target
        .skill()
        .and_then(|s| s.name(target.text()))
        .unwrap_or("");
    if new_name == target.id && name_now == new_name {
        return Ok(super::RenamePlan {
            edits: Vec::new(),
            moves: Vec::new(),
            moves_required: false,
        });
    }
    let to = root.join(new_name);
    let mut moves = Vec::new();
    if new_name != target.id {
        if !editor_moves && std::fs::symlink_metadata(&to).is_ok() {
            return Err(format!(
                "{} already exists: renaming the skill `{}` would move its folder there",
                to.display(),
                target.id
            ));
        }
        if let Some(other) = ws
            .all_with_id(ItemType::Skill, new_name)
            .into_iter()
            .find(|i| i.space == target.space)
        {
            return Err(format!(
                "a skill `{new_name}` already exists in the {} space ({})",
                target.space,
                other.path.display()
            ));
        }
        moves.push((dir.to_path_buf(), to));
    }
    if let Some((occ, space)) = occurrences.iter().find_map(|o| {
        let space = space_of_file(ws, &o.path)?;
        (!space.is_writable()).then_some((o, space))
    }) {
        return Err(format!(
            "`{}` is mentioned in {} in the read-only `{space}` space, which kiwi never edits: renaming it would break that mention",
            target.id,
            occ.path.display()
        ));
    }
    let mut edits: Vec<(PathBuf, Vec<crate::diag::TextEdit>)> = Vec::new();
    let mut push = |path: PathBuf, range: TextRange| {
        let edit = crate::diag::TextEdit {
            range,
            new_text: new_name.to_string(),
        };
        match edits.iter_mut().find(|(p, _)| *p == path) {
            Some((_, v)) if v.iter().any(|e| e.range == range) => {}
            Some((_, v)) => v.push(edit),
            None => edits.push((path, vec![edit])),
        }
    };
    if let Some(r) = name_range(target) {
        push(target.path.clone(), r);
    }
    for occ in occurrences {
        push(occ.path, occ.range);
    }
    for (_, v) in &mut edits {
        v.sort_by_key(|e| e.range.start);
    }
    Ok(super::RenamePlan {
        edits,
        moves,
        moves_required: true,
    })
}

/// The edits of a skill's folder renamed (or moved) in the editor to `to`: its `name` and its
/// mentions follow the new folder name when `to` is in the same skills folder, as
/// [`plan_rename`] makes them, without the move (the editor moves the folder). `Ok(None)` for
/// a move elsewhere, or to a name the specification refuses (S803 then says so: the editor
/// moves the folder whatever the server answers).
pub(super) fn folder_renamed(
    ws: &Workspace,
    skill: &Arc<Item>,
    to: &Path,
    occurrences: Vec<Occurrence>,
) -> Result<Option<super::RenamePlan>, String> {
    super::read_only_refusal(skill)?;
    let from = skill.path.parent();
    if from.and_then(Path::parent) != to.parent() {
        return Ok(None);
    }
    let Some(new_name) = to.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    if !is_name(new_name) {
        return Ok(None);
    }
    let mut plan = plan_rename(ws, skill, new_name, true, occurrences)?;
    plan.moves.clear();
    plan.moves_required = false;
    Ok(Some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::context::Host;

    const DEPLOY: &str = "---\nname: deploy\ndescription: Deploy the app; run `review` first.\n---\n# Deploy\n\nRun `/deploy prod`, then $review. See [the guide](reference.md).\n";
    const REVIEW: &str = "---\nname: review\ndescription: Review code, then use `/deploy`.\n---\nUse the deploy skill, not superpowers:deploy. Read [it](../../../.agents/skills/deploy/SKILL.md).\n\n```text\n/deploy in a fence\n```\n";
    const SHIP: &str = "# Ship\n\n```xml\n<directive name=\"ship\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"skill\" id=\"deploy\"/>\n      <execute><skill>deploy</skill></execute>\n    </permissions>\n  </metadata>\n  <process>\n    <step name=\"s\"><description>x</description></step>\n  </process>\n</directive>\n```\n";

    /// A project: the skills `deploy` (`.agents/skills/`) and `review` (`.claude/skills/`),
    /// a directive granting `deploy`, `AGENTS.md` at the root and in `pkg/`.
    fn project() -> (tempfile::TempDir, Workspace, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().canonicalize().unwrap().join("p");
        let deploy = proj.join(".agents/skills/deploy");
        let review = proj.join(".claude/skills/review");
        for dir in [
            &deploy,
            &review,
            &proj.join("pkg"),
            &proj.join(".ai/directives"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(deploy.join("SKILL.md"), DEPLOY).unwrap();
        std::fs::write(deploy.join("reference.md"), "Call /deploy again.\n").unwrap();
        std::fs::write(review.join("SKILL.md"), REVIEW).unwrap();
        std::fs::write(
            proj.join("AGENTS.md"),
            "Skills: `deploy`, `review`; deploy is a word.\n",
        )
        .unwrap();
        std::fs::write(proj.join("pkg/AGENTS.md"), "Run /deploy here.\n").unwrap();
        std::fs::write(proj.join(".ai/directives/ship.md"), SHIP).unwrap();
        let host = Host::for_tests(&[
            ("HOME", d.path().join("home").to_str().unwrap()),
            ("PATH", "/usr/bin:/bin"),
        ]);
        let ws = Workspace::load(Some(proj.clone()), host);
        (d, ws, proj)
    }

    fn item(ws: &Workspace, path: &Path) -> Arc<Item> {
        ws.item(path).cloned().expect("an item")
    }

    /// (file relative to the project, text at the range, via).
    fn shown(ws: &Workspace, proj: &Path, occ: &[Occurrence]) -> Vec<(String, String, String)> {
        occ.iter()
            .map(|o| {
                let t = file_text(ws, &o.path).unwrap();
                (
                    o.path.strip_prefix(proj).unwrap().display().to_string(),
                    t[o.range.start..o.range.end].to_string(),
                    o.via.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn references_of_a_skill_from_its_name_and_from_a_mention() {
        let (_d, ws, proj) = project();
        let deploy = item(&ws, &proj.join(".agents/skills/deploy/SKILL.md"));
        let review = item(&ws, &proj.join(".claude/skills/review/SKILL.md"));
        let on_name = DEPLOY.find("name: deploy").unwrap() + "name: de".len();
        let refs = super::super::references(&ws, &deploy, on_name, true);
        let got = shown(&ws, &proj, &refs);
        let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        let expected = vec![
            s(".agents/skills/deploy/SKILL.md", "deploy", "declaration"),
            s(".agents/skills/deploy/SKILL.md", "deploy", "mention"),
            s(".agents/skills/deploy/reference.md", "deploy", "mention"),
            s(".ai/directives/ship.md", "deploy", "permission"),
            s(".ai/directives/ship.md", "deploy", "permission"),
            s(".claude/skills/review/SKILL.md", "deploy", "mention"),
            s(".claude/skills/review/SKILL.md", "deploy", "link"),
            s("AGENTS.md", "deploy", "mention"),
            s("pkg/AGENTS.md", "deploy", "mention"),
        ];
        assert_eq!(got, expected, "{refs:#?}");
        // The declaration is the `name` value.
        assert_eq!(refs[0].range.start, DEPLOY.find("deploy").unwrap());
        // From a mention in another skill: the same places.
        let on_mention = REVIEW.find("`/deploy`").unwrap() + 3;
        assert_eq!(
            super::super::references(&ws, &review, on_mention, true),
            refs
        );
        // From a directive's permission naming it: the same places (no call relies on it).
        let ship = item(&ws, &proj.join(".ai/directives/ship.md"));
        let on_grant = SHIP.find("<skill>deploy").unwrap() + "<skill>de".len();
        assert_eq!(super::super::references(&ws, &ship, on_grant, true), refs);
        let (range, id) = super::super::prepare_rename(&ws, &ship, on_grant).expect("renamable");
        assert_eq!(
            (&SHIP[range.start..range.end], id.as_str()),
            ("deploy", "deploy")
        );
        // Go to definition on a mention: the skill's `name`.
        let defs = super::super::definition(&ws, &review, on_mention);
        assert_eq!(defs.len(), 1, "{defs:?}");
        assert_eq!(defs[0].path, deploy.path);
        assert_eq!(defs[0].range, refs[0].range);
        // From the link through its folder too.
        let on_link = REVIEW.find("skills/deploy/").unwrap() + "skills/d".len();
        assert_eq!(super::super::references(&ws, &review, on_link, true), refs);
        // `review` is mentioned by `deploy` (frontmatter and body) and AGENTS.md.
        let on_review = DEPLOY.find("$review").unwrap() + 2;
        let refs = super::super::references(&ws, &deploy, on_review, false);
        let got: Vec<String> = shown(&ws, &proj, &refs).into_iter().map(|x| x.0).collect();
        assert_eq!(
            got,
            [
                ".agents/skills/deploy/SKILL.md",
                ".agents/skills/deploy/SKILL.md",
                "AGENTS.md"
            ]
        );
    }

    #[test]
    fn rename_a_skill_moves_its_folder_and_rewrites_every_mention() {
        let (_d, ws, proj) = project();
        let deploy = item(&ws, &proj.join(".agents/skills/deploy/SKILL.md"));
        let review = item(&ws, &proj.join(".claude/skills/review/SKILL.md"));
        let on_name = DEPLOY.find("name: deploy").unwrap() + "name: ".len();
        let (range, placeholder) = super::super::prepare_rename(&ws, &deploy, on_name).unwrap();
        assert_eq!(
            (&DEPLOY[range.start..range.end], placeholder.as_str()),
            ("deploy", "deploy")
        );
        let on_mention = REVIEW.find("`/deploy`").unwrap() + 3;
        let (range, placeholder) = super::super::prepare_rename(&ws, &review, on_mention).unwrap();
        assert_eq!(
            (&REVIEW[range.start..range.end], placeholder.as_str()),
            ("deploy", "deploy")
        );
        let plan = super::super::rename(&ws, &review, on_mention, "ship-it").unwrap();
        assert!(plan.moves_required);
        assert_eq!(
            plan.moves,
            [(
                proj.join(".agents/skills/deploy"),
                proj.join(".agents/skills/ship-it")
            )]
        );
        let apply = |path: &Path| {
            let mut t = file_text(&ws, path).unwrap();
            let mut edits = plan
                .edits
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, e)| e.clone())
                .unwrap_or_default();
            edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
            for e in edits {
                t.replace_range(e.range.start..e.range.end, &e.new_text);
            }
            t
        };
        assert_eq!(
            apply(&deploy.path),
            DEPLOY
                .replace("name: deploy", "name: ship-it")
                .replace("`/deploy prod`", "`/ship-it prod`")
        );
        assert_eq!(
            apply(&review.path),
            REVIEW
                .replace("`/deploy`", "`/ship-it`")
                .replace("skills/deploy/SKILL.md", "skills/ship-it/SKILL.md")
        );
        assert_eq!(
            apply(&proj.join("AGENTS.md")),
            "Skills: `ship-it`, `review`; deploy is a word.\n"
        );
        assert_eq!(apply(&proj.join("pkg/AGENTS.md")), "Run /ship-it here.\n");
        assert_eq!(
            apply(&proj.join(".agents/skills/deploy/reference.md")),
            "Call /ship-it again.\n"
        );
        let ship = apply(&proj.join(".ai/directives/ship.md"));
        assert!(
            ship.contains("item_type=\"skill\" id=\"ship-it\""),
            "{ship}"
        );
        assert!(ship.contains("<skill>ship-it</skill>"), "{ship}");
    }

    /// From a mention in an `AGENTS.md` (no item) or a skill's other Markdown: the same
    /// references and the same rename as from the skill's own file; not on a bare word, not
    /// in another Markdown file, not while the editor's text is not the file's on disk.
    #[test]
    fn references_and_rename_start_in_agents_md() {
        let (_d, ws, proj) = project();
        let deploy = item(&ws, &proj.join(".agents/skills/deploy/SKILL.md"));
        let on_name = DEPLOY.find("name: deploy").unwrap() + "name: ".len();
        let from_skill = super::super::references(&ws, &deploy, on_name, true);
        let agents = proj.join("AGENTS.md");
        let text = std::fs::read_to_string(&agents).unwrap();
        let on_mention = text.find("`deploy`").unwrap() + 2;
        assert_eq!(
            super::super::file_references(&ws, &agents, &text, on_mention, true),
            Some(from_skill.clone())
        );
        let nested = proj.join("pkg/AGENTS.md");
        let nested_text = std::fs::read_to_string(&nested).unwrap();
        let at = nested_text.find("/deploy").unwrap() + 2;
        assert_eq!(
            super::super::file_references(&ws, &nested, &nested_text, at, true),
            Some(from_skill.clone())
        );
        let reference = proj.join(".agents/skills/deploy/reference.md");
        let at = "Call /dep".len();
        assert_eq!(
            super::super::file_references(&ws, &reference, "Call /deploy again.\n", at, true),
            Some(from_skill)
        );
        // The bare word is no mention; another Markdown file is not searched.
        let on_word = text.find("deploy is").unwrap() + 1;
        assert_eq!(
            super::super::file_references(&ws, &agents, &text, on_word, true),
            None
        );
        std::fs::write(proj.join("NOTES.md"), "Run /deploy.\n").unwrap();
        assert_eq!(
            super::super::file_references(&ws, &proj.join("NOTES.md"), "Run /deploy.\n", 6, true),
            None
        );
        let (range, id) = super::super::file_prepare_rename(&ws, &agents, &text, on_mention)
            .unwrap()
            .expect("renamable");
        assert_eq!(
            (&text[range.start..range.end], id.as_str()),
            ("deploy", "deploy")
        );
        assert_eq!(
            super::super::file_prepare_rename(&ws, &agents, &text, on_word),
            Ok(None)
        );
        let plan = super::super::file_rename(&ws, &agents, &text, on_mention, "ship-it").unwrap();
        assert_eq!(
            plan,
            super::super::rename(&ws, &deploy, on_name, "ship-it").unwrap()
        );
        let unsaved = format!("{text}More.\n");
        let why =
            super::super::file_rename(&ws, &agents, &unsaved, on_mention, "ship-it").unwrap_err();
        assert!(why.contains("unsaved changes"), "{why}");
    }

    #[test]
    fn a_skill_folder_renamed_in_the_editor_renames_the_skill() {
        let (_d, ws, proj) = project();
        let from = proj.join(".agents/skills/deploy");
        let plan = super::super::rename_file(&ws, &from, &proj.join(".agents/skills/ship-it"))
            .unwrap()
            .expect("a skill rename");
        // The same edits as a rename from the name, without the move (the editor moves it).
        let deploy = item(&ws, &from.join("SKILL.md"));
        let on_name = DEPLOY.find("name: deploy").unwrap() + "name: ".len();
        let by_rename = super::super::rename(&ws, &deploy, on_name, "ship-it").unwrap();
        assert_eq!(plan.edits, by_rename.edits);
        assert!(plan.moves.is_empty() && !plan.moves_required, "{plan:?}");
        // Moved to another skills folder, or to a name skills refuse: nothing to rewrite.
        let elsewhere = proj.join(".claude/skills/deploy");
        assert_eq!(super::super::rename_file(&ws, &from, &elsewhere), Ok(None));
        let bad = proj.join(".agents/skills/Deploy_2");
        assert_eq!(super::super::rename_file(&ws, &from, &bad), Ok(None));
        // The SKILL.md file moved on its own renames nothing.
        let md = from.join("SKILL.md");
        let to = proj.join(".agents/skills/other/SKILL.md");
        assert_eq!(super::super::rename_file(&ws, &md, &to), Ok(None));
    }

    #[test]
    fn a_skill_rename_is_refused_with_the_reason() {
        let (_d, ws, proj) = project();
        let deploy = item(&ws, &proj.join(".agents/skills/deploy/SKILL.md"));
        let on_name = DEPLOY.find("name: deploy").unwrap() + "name: ".len();
        let why = |new: &str| super::super::rename(&ws, &deploy, on_name, new).unwrap_err();
        assert!(why("Ship").contains("must be lowercase"), "{}", why("Ship"));
        assert!(why("ship--it").contains("consecutive hyphens"));
        assert!(why("a/b").contains("only letters, digits and hyphens"));
        assert!(why("").contains("cannot be empty"));
        // Another skill of the same space holds the name (in another skills folder).
        assert!(
            why("review").contains("a skill `review` already exists in the project space"),
            "{}",
            why("review")
        );
        // A folder of that name exists (not a skill).
        std::fs::create_dir_all(proj.join(".agents/skills/taken")).unwrap();
        assert!(why("taken").contains("already exists"), "{}", why("taken"));
        // The same name: nothing to do.
        let plan = super::super::rename(&ws, &deploy, on_name, "deploy").unwrap();
        assert!(plan.edits.is_empty() && plan.moves.is_empty());
    }

    #[test]
    fn a_skill_of_a_read_only_space_is_not_renamed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let extra = root.join("extra");
        std::fs::create_dir_all(extra.join(".ai/skills/shared")).unwrap();
        std::fs::write(
            extra.join(".ai/skills/shared/SKILL.md"),
            "---\nname: shared\ndescription: d\n---\nThen `/mine`.\n",
        )
        .unwrap();
        let proj = root.join("p");
        let mine = proj.join(".agents/skills/mine");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(
            mine.join("SKILL.md"),
            "---\nname: mine\ndescription: d\n---\nUse `/shared`.\n",
        )
        .unwrap();
        let host = Host::for_tests(&[
            ("HOME", root.join("home").to_str().unwrap()),
            ("PATH", "/usr/bin:/bin"),
            ("KIWI_SPACES", extra.to_str().unwrap()),
        ]);
        let ws = Workspace::load(Some(proj.clone()), host);
        let shared = ws
            .items()
            .find(|i| i.id == "shared")
            .cloned()
            .expect("the extra space's skill");
        assert!(!shared.space.is_writable());
        let mine = item(&ws, &mine.join("SKILL.md"));
        let off = mine.text().find("/shared").unwrap() + 2;
        assert!(super::super::prepare_rename(&ws, &mine, off).is_none());
        let why = super::super::rename_refusal(&ws, &mine, off).expect("a refusal");
        assert!(why.contains("read-only"), "{why}");
        assert!(super::super::rename(&ws, &mine, off, "other")
            .unwrap_err()
            .contains("read-only"));
        // References still find it.
        let refs = super::super::references(&ws, &mine, off, false);
        assert_eq!(refs.len(), 1, "{refs:?}");
        // A writable skill mentioned from a read-only space: renaming it would break that
        // mention, which kiwi never edits.
        let off = mine.text().find("name: mine").unwrap() + "name: ".len();
        let why = super::super::rename(&ws, &mine, off, "other").unwrap_err();
        assert!(
            why.contains("is mentioned in") && why.contains("read-only"),
            "{why}"
        );
    }

    fn scan(line: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        scan_line(line, 0, line.len(), &mut out);
        out.into_iter()
            .map(|m| (m.name.clone(), line[m.range.start..m.range.end].to_string()))
            .collect()
    }

    fn names(line: &str) -> Vec<String> {
        scan(line).into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn code_spans_slash_and_dollar_forms_are_mentions() {
        assert_eq!(names("Use the `deploy` skill."), ["deploy"]);
        assert_eq!(
            names("Run `/deploy prod` or `$deploy`."),
            ["deploy", "deploy"]
        );
        assert_eq!(names("Type /deploy, then $review."), ["deploy", "review"]);
        assert_eq!(names("(/deploy) and \"/review\""), ["deploy", "review"]);
        assert_eq!(names("``a `deploy` b``"), Vec::<String>::new());
        // The range is the name only.
        assert_eq!(scan("x `/deploy` y")[0].1, "deploy");
    }

    #[test]
    fn words_paths_namespaces_and_links_are_not_mentions() {
        for line in [
            "Invoke the brainstorming skill first.",
            "Use superpowers:brainstorming first.",
            "Use `superpowers:brainstorming` first.",
            "See ~/.claude/skills/deploy/SKILL.md and /deploy/x and /deploy.md",
            "https://example.com/deploy and a/deploy",
            "`deploy prod` and `Deploy` and `deploy.md` and `--deploy`",
            "[x](/deploy) $HOME/deploy",
            "`/deploy/x` and `$deploy=1`",
        ] {
            assert_eq!(names(line), Vec::<String>::new(), "{line}");
        }
    }
}
