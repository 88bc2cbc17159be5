//! Where skills live: the folders the clients read (Claude Code, VS Code's Copilot, Codex and
//! the other readers of `.agents/skills/`), in a project and in the user's home, and the
//! `SKILL.md` files in them (one skill per folder, as the clients find them).

use crate::context::Host;
use crate::ids::ItemType;
use crate::workspace::Found;
use std::path::{Path, PathBuf};

/// The skill folders of a project, in precedence order: kiwi's own `.ai/skills/` first,
/// then the clients' `.agents/skills/`, `.claude/skills/` and `.github/skills/`.
pub const PROJECT_FOLDERS: &[&str] = &[
    ".ai/skills",
    ".agents/skills",
    ".claude/skills",
    ".github/skills",
];

/// The skill folders of a user's home, in precedence order (the user space's `skills/`
/// comes first, see [`user_skill_roots`]).
pub const HOME_FOLDERS: &[&str] = &[".agents/skills", ".claude/skills", ".copilot/skills"];

/// The skill folders of a project (those that exist or not: a watch may wait for them).
pub fn project_skill_roots(project: &Path) -> Vec<PathBuf> {
    PROJECT_FOLDERS.iter().map(|f| project.join(f)).collect()
}

/// The skill folders of the user: the user space's `skills/` (`~/.ai/skills`, or below
/// `KIWI_USERSPACE_DIR`), then the clients' folders in the home directory; Claude Code's
/// `CLAUDE_CONFIG_DIR` replaces `~/.claude`. No home (none set): the user space's only.
pub fn user_skill_roots(host: &Host, user_space: &Path) -> Vec<PathBuf> {
    let mut v = vec![user_space.join("skills")];
    if let Some(home) = host.home.as_deref() {
        for f in HOME_FOLDERS {
            let dir = match host.get("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
                Some(c) if *f == ".claude/skills" => {
                    crate::context::expand_tilde(c, Some(home)).join("skills")
                }
                _ => home.join(f),
            };
            if !v.contains(&dir) {
                v.push(dir);
            }
        }
    }
    v
}

/// Whether a path is a skill's file: `<skills folder>/<name>/SKILL.md`.
pub fn is_skill_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == super::SKILL_FILE)
}

/// Every skill of a skills folder: each folder directly below it that holds a `SKILL.md`
/// (as Claude Code and VS Code find them). As for every item, discovery does not follow a
/// symlinked folder, and a `SKILL.md` that is a symlink is refused when it is read if it
/// resolves outside the skills folder. Sorted by name.
pub fn discover_skills(root: &Path) -> Vec<Found> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<Found> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if name.starts_with('.')
                || crate::ids::validate_id(&name).is_err()
                || !e.file_type().is_ok_and(|t| t.is_dir())
            {
                return None;
            }
            let path = e.path().join(super::SKILL_FILE);
            std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
                .then_some(Found {
                    item_type: ItemType::Skill,
                    id: name,
                    path: path.into(),
                    script: None,
                })
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The precedence of a skill's folder within its space (0 first): `.ai/skills/` (and the
/// user space's `skills/`), `.agents/skills/`, `.claude/skills/`, `.github/skills/` and
/// `.copilot/skills/`. 0 for any other file.
pub fn folder_rank(skill_md: &Path) -> usize {
    if !is_skill_file(skill_md) {
        return 0;
    }
    let Some(root) = skill_md.parent().and_then(Path::parent) else {
        return 0;
    };
    [
        ".agents/skills",
        ".claude/skills",
        ".github/skills",
        ".copilot/skills",
    ]
    .iter()
    .position(|f| root.ends_with(f))
    .map_or(0, |i| i.min(2) + 1)
}

/// A `SKILL.md` found outside any skills folder (`kiwi check` of a skills repository, as
/// `skills-ref validate` checks one skill): read as a skill of its folder, on its own.
pub fn load_loose(skill_md: &Path) -> Option<crate::workspace::Item> {
    let dir = skill_md.parent()?;
    let id = dir.file_name()?.to_str()?.to_string();
    let found = Found {
        item_type: ItemType::Skill,
        id,
        path: skill_md.into(),
        script: None,
    };
    crate::workspace::load_file(&found, crate::ids::Space::Project, &dir.into())
}

/// The latest modification time of a skill's folder and of every file and folder in it
/// (not through a symlink, `.git` left out): what changes when any file of the skill does.
pub fn tree_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut latest = std::fs::symlink_metadata(dir).ok()?.modified().ok();
    walk_folder(dir, &mut |_, e| {
        if let Some(t) = e.metadata().ok().and_then(|m| m.modified().ok()) {
            latest = latest.max(Some(t));
        }
    });
    latest
}

/// Visit every entry below a skill's folder, depth first, each folder's entries sorted by
/// name: its path relative to `dir` and its directory entry. Symlinks are visited, never
/// followed; `.git` is left out. The entry's type comes with the listing and its
/// `metadata()` is an `fstatat` beside the folder's descriptor (no path looked up again
/// from the root): on 1,000 skills' 10,703 files this walk and a stat of each took a third
/// of what the `ignore` crate's walker with an `lstat` per path took (`kiwi-bench skills`).
pub fn walk_folder(dir: &Path, visit: &mut dyn FnMut(&Path, &std::fs::DirEntry)) {
    fn go(dir: &Path, rel: &mut PathBuf, visit: &mut dyn FnMut(&Path, &std::fs::DirEntry)) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<std::fs::DirEntry> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            if name == ".git" {
                continue;
            }
            rel.push(&name);
            visit(rel, &e);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                go(&e.path(), rel, visit);
            }
            rel.pop();
        }
    }
    go(dir, &mut PathBuf::new(), visit);
}

/// Every folder directly below a skills folder (a skill, or one whose `SKILL.md` may come).
pub fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}
