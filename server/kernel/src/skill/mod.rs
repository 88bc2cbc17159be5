//! Agent Skills (`SKILL.md` folders, agentskills.io): the frontmatter read with byte ranges,
//! the keys the specification and the known clients read (as data: checks, hover and
//! completion use the same table), where skills are discovered, and the checks grounded in
//! the reference validator `skills-ref` (`shared/reference/agentskills/skills-ref/`).

mod checks;
pub mod convert;
mod discover;
pub mod registry;
pub mod script;
pub mod serve;
#[cfg(test)]
mod tests;

pub use checks::{body_links, body_scripts, check_skill, name_problems, prose_lines};
pub use discover::{
    discover_skills, folder_rank, is_skill_file, load_loose, project_skill_roots, skill_dirs,
    tree_mtime, user_skill_roots, walk_folder, HOME_FOLDERS, PROJECT_FOLDERS,
};

use crate::diag::{Code, Diagnostic};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};

/// The file name of a skill (skills-ref's `find_skill_md` also takes `skill.md`).
pub const SKILL_FILE: &str = "SKILL.md";
/// `MAX_SKILL_NAME_LENGTH` of skills-ref's `validator.py`.
pub const MAX_NAME: usize = 64;
/// `MAX_DESCRIPTION_LENGTH` of skills-ref's `validator.py`.
pub const MAX_DESCRIPTION: usize = 1024;
/// `MAX_COMPATIBILITY_LENGTH` of skills-ref's `validator.py`.
pub const MAX_COMPATIBILITY: usize = 500;

/// Who reads a frontmatter key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOwner {
    /// The Agent Skills specification (skills-ref's `ALLOWED_FIELDS`).
    Spec,
    /// Claude Code's documented skill frontmatter.
    ClaudeCode,
    /// GitHub Copilot in VS Code's documented skill frontmatter.
    Copilot,
}

/// One frontmatter key a skill may hold.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub owner: KeyOwner,
    pub required: bool,
    /// What it means, for hover.
    pub doc: &'static str,
    /// The values a client knows (completion); empty: free text.
    pub values: &'static [&'static str],
}

const fn key(
    name: &'static str,
    owner: KeyOwner,
    required: bool,
    doc: &'static str,
    values: &'static [&'static str],
) -> Key {
    Key {
        name,
        owner,
        required,
        doc,
        values,
    }
}

use KeyOwner::*;

/// Every key the specification or a known client reads.
pub const KEYS: &[Key] = &[
    key("name", Spec, true, "The skill's name: 1-64 lowercase letters, digits and hyphens, no leading, trailing or doubled hyphen; the same as the skill's folder.", &[]),
    key("description", Spec, true, "What the skill does and when to use it (1-1024 characters): agents read it at startup to decide when to load the skill.", &[]),
    key("license", Spec, false, "The license of the skill: a license name or a bundled license file.", &[]),
    key("compatibility", Spec, false, "Environment requirements (product, system packages, network access): at most 500 characters.", &[]),
    key("metadata", Spec, false, "A map from string keys to string values for properties the specification does not define.", &[]),
    key("allowed-tools", Spec, false, "Space-separated tools pre-approved while the skill runs, such as `Bash(git:*) Read` (experimental).", &[]),
    key("disable-model-invocation", ClaudeCode, false, "Claude Code: `true` keeps the model from loading the skill on its own; only the user invokes it.", &["true", "false"]),
    key("user-invocable", ClaudeCode, false, "Claude Code: `false` hides the skill from the `/` menu (the model may still load it).", &["true", "false"]),
    key("argument-hint", ClaudeCode, false, "Claude Code and VS Code: the arguments shown in the `/` menu, such as `[issue-number]`.", &[]),
    key("model", ClaudeCode, false, "Claude Code: the model used while the skill is active.", &["inherit", "sonnet", "opus", "haiku"]),
    key("context", ClaudeCode, false, "Claude Code: `fork` runs the skill in a forked sub-agent context.", &["fork"]),
    key("agent", ClaudeCode, false, "Claude Code: the sub-agent type that runs the skill when `context: fork`.", &[]),
    key("hooks", ClaudeCode, false, "Claude Code: hooks scoped to the skill's lifetime.", &[]),
    key("when_to_use", ClaudeCode, false, "Claude Code: when to use the skill, appended to the description the model sees.", &[]),
    key("user-invokable", Copilot, false, "VS Code (Copilot): `false` hides the skill from the `/` menu.", &["true", "false"]),
];

/// The key of this name, if the specification or a known client reads it.
pub fn known_key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The frontmatter mapping (`None` when missing or unreadable).
    pub frontmatter: Option<Value>,
    /// The frontmatter block, `---` lines included.
    pub frontmatter_range: Option<TextRange>,
    /// The YAML between the `---` lines, verbatim.
    pub frontmatter_text: TextRange,
    /// The Markdown body after the frontmatter.
    pub body: TextRange,
    pub diagnostics: Vec<Diagnostic>,
}

impl Skill {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.frontmatter.as_ref()?.get(key)
    }
    /// A frontmatter value read as skills-ref reads it (strictyaml: every scalar is its
    /// text); `None` for a list, a map or a missing key.
    pub fn scalar<'a>(&'a self, key: &str, text: &'a str) -> Option<&'a str> {
        scalar_text(self.get(key)?, text)
    }
    pub fn name<'a>(&'a self, text: &'a str) -> Option<&'a str> {
        self.scalar("name", text).map(str::trim)
    }
    pub fn description<'a>(&'a self, text: &'a str) -> Option<&'a str> {
        self.scalar("description", text).map(str::trim)
    }
}

/// A scalar as its text (strictyaml reads no types without a schema); null is empty.
pub fn scalar_text<'a>(v: &'a Value, text: &'a str) -> Option<&'a str> {
    match &v.kind {
        ValueKind::Str(s) => Some(&s.value),
        ValueKind::Null => Some(""),
        ValueKind::Bool(_) | ValueKind::Int(_) | ValueKind::Float(_) => {
            text.get(v.range.start..v.range.end)
        }
        _ => None,
    }
}

/// The lines of `text` from `pos`: (start, end without the line break, start of the next).
fn lines_from(text: &str, pos: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let mut at = pos;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let start = at;
        let (end, next) = match text[start..].find('\n') {
            Some(i) => (start + i, start + i + 1),
            None => (text.len(), text.len()),
        };
        at = next;
        let end = if text[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        Some((start, end, next))
    })
}

/// Read a `SKILL.md`: the frontmatter between `---` lines and the body. S801 when the file
/// does not start with `---`, the frontmatter is never closed, is not YAML or not a mapping
/// (skills-ref's `parse_frontmatter` raises `ParseError` on each).
pub fn parse(text: &str) -> Skill {
    parse_frontmatter(
        text,
        Code::S801,
        Some("a SKILL.md starts with YAML frontmatter: a `---` line, `name:` and `description:`, and a closing `---` line"),
    )
}

/// Read a Markdown file's YAML frontmatter between `---` lines, and its body: the parser a
/// `SKILL.md` and its neighbours (VS Code's `*.agent.md`, `*.instructions.md`,
/// `*.prompt.md`, see [`crate::copilot`]) share. Each problem is a `code` diagnostic; a file
/// that does not start with `---` is one only when `missing` gives the message (the
/// neighbours' header is optional).
pub fn parse_frontmatter(text: &str, code: Code, missing: Option<&str>) -> Skill {
    let mut s = Skill {
        frontmatter: None,
        frontmatter_range: None,
        frontmatter_text: TextRange::empty(0),
        body: TextRange::new(0, text.len()),
        diagnostics: Vec::new(),
    };
    let mut lines = lines_from(text, 0);
    let first = lines.next();
    let is_fence = |l: (usize, usize, usize)| text[l.0..l.1].trim_end() == "---";
    let Some(open) = first.filter(|l| is_fence(*l)) else {
        if let Some(message) = missing {
            let at = first.map_or(TextRange::empty(0), |l| TextRange::new(l.0, l.1));
            s.diagnostics.push(Diagnostic::new(code, at, message));
        }
        return s;
    };
    let Some(close) = lines.find(|l| is_fence(*l)) else {
        s.diagnostics.push(Diagnostic::new(
            code,
            TextRange::new(open.0, open.1),
            "the frontmatter is never closed: add a `---` line after its last field",
        ));
        s.body = TextRange::new(open.2, text.len());
        return s;
    };
    s.frontmatter_range = Some(TextRange::new(open.0, close.1));
    s.frontmatter_text = TextRange::new(open.2, close.0.max(open.2));
    s.body = TextRange::new(close.2, text.len());
    let doc = crate::yaml::parse(&text[open.2..close.0.max(open.2)], open.2);
    for (r, m) in &doc.errors {
        s.diagnostics.push(Diagnostic::new(
            code,
            *r,
            format!("the frontmatter is not valid YAML: {m}"),
        ));
    }
    let value = match doc.value {
        None => Value::new(ValueKind::Map(Vec::new()), TextRange::empty(open.2)),
        Some(v) if matches!(v.kind, ValueKind::Null) => {
            Value::new(ValueKind::Map(Vec::new()), v.range)
        }
        Some(v) => v,
    };
    if value.as_map().is_none() {
        if doc.errors.is_empty() {
            s.diagnostics.push(Diagnostic::new(
                code,
                value.range,
                format!(
                    "the frontmatter must be a mapping of `key: value` lines, not a {}",
                    value.type_name()
                ),
            ));
        }
        return s;
    }
    duplicate_keys(&value, code, &mut s.diagnostics);
    s.frontmatter = Some(value);
    s
}

/// A key written twice in one mapping: strictyaml (skills-ref's parser) refuses it
/// ("found duplicate key"), and so do the YAML readers of Claude Code and VS Code.
fn duplicate_keys(v: &Value, code: Code, out: &mut Vec<Diagnostic>) {
    match &v.kind {
        ValueKind::Map(entries) => {
            for (i, e) in entries.iter().enumerate() {
                if let Some(first) = entries[..i].iter().find(|x| x.key == e.key) {
                    // A merge key's entries (`<<`) share the alias's range: not written twice.
                    if first.key_range != e.key_range {
                        out.push(Diagnostic::new(
                            code,
                            e.key_range,
                            format!(
                                "the frontmatter is not valid YAML: the key `{}` is written twice",
                                e.key
                            ),
                        ));
                    }
                }
                duplicate_keys(&e.value, code, out);
            }
        }
        ValueKind::List(items) => items.iter().for_each(|x| duplicate_keys(x, code, out)),
        _ => {}
    }
}
