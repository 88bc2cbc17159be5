//! The checks of a `SKILL.md`, each grounded in skills-ref's `validator.py` (the
//! specification's reference validator) or, for what it does not read, in what a client does
//! with the file (see `diag/provenance.rs`).

use super::{known_key, scalar_text, Skill, MAX_COMPATIBILITY, MAX_DESCRIPTION, MAX_NAME};
use crate::diag::{Code, Diagnostic};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Parsed, Workspace};
use std::path::Path;
use std::sync::Arc;

/// The check rule of a skill item (every S8xx code past parsing), and shadowing between
/// the skill folders of one space (K005; between spaces it is the shadowing rule's).
pub fn check_skill(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Parsed::Skill(skill) = &item.parsed else {
        return;
    };
    let same_space: Vec<&Arc<Item>> = ws
        .all_with_id(ItemType::Skill, &item.id)
        .into_iter()
        .filter(|o| o.space == item.space)
        .collect();
    if let Some(me) = same_space.iter().position(|o| o.path == item.path) {
        let lower = &same_space[me + 1..];
        if let Some(first) = lower.first() {
            let range = skill
                .get("name")
                .map(|v| v.range)
                .unwrap_or_else(|| crate::check::first_line(item));
            let folder = |p: &Path| {
                p.parent()
                    .and_then(Path::parent)
                    .map(|r| r.display().to_string())
                    .unwrap_or_default()
            };
            let mut d = Diagnostic::new(
                Code::K005,
                range,
                format!(
                    "this skill shadows `{}` of {} (same {} space): kiwi uses this one; each client reads only its own folder",
                    item.id,
                    folder(&first.path),
                    item.space
                ),
            );
            for o in lower {
                d = d.related(
                    Some(o.path.clone()),
                    crate::check::first_line(o),
                    format!("the shadowed skill `{}` ({})", o.id, folder(&o.path)),
                );
            }
            out.push(d);
        }
    }
    let dir = item.path.parent();
    out.extend(check_frontmatter(skill, item.text(), dir));
    if let Some(dir) = dir {
        out.extend(check_body_files(skill, item.text(), dir));
    }
}

/// The frontmatter's rules: skills-ref's `validate_metadata` (S802-S806, S809's keys) and
/// the specification's types for `metadata` and `allowed-tools` (S807, S808). `dir`: the
/// skill's folder (its name must be the skill's).
pub fn check_frontmatter(skill: &Skill, text: &str, dir: Option<&Path>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(fm) = &skill.frontmatter else {
        return out;
    };
    let whole = skill.frontmatter_range.unwrap_or(TextRange::empty(0));
    let open_line = TextRange::new(whole.start, whole.start + 3.min(whole.len()));
    for e in fm.as_map().unwrap_or_default() {
        if known_key(&e.key).is_none() {
            out.push(Diagnostic::new(
                Code::S809,
                e.key_range,
                format!(
                    "`{}` is read by neither the Agent Skills specification nor a known client (Claude Code, VS Code): it is ignored{}",
                    e.key,
                    suggest_key(&e.key).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default()
                ),
            ));
        }
    }
    // name: _validate_name
    match fm.entry("name") {
        None => out.push(Diagnostic::new(
            Code::S802,
            open_line,
            "the required field `name` is missing (skills-ref: \"Missing required field in frontmatter: name\")",
        )),
        Some(e) => match scalar_text(&e.value, text).map(str::trim).filter(|s| !s.is_empty()) {
            None => out.push(Diagnostic::new(
                Code::S802,
                e.value.range.cover(e.key_range),
                "`name` must be a non-empty string",
            )),
            Some(name) => {
                let problems = name_problems(name);
                if !problems.is_empty() {
                    out.push(Diagnostic::new(
                        Code::S803,
                        e.value.range,
                        format!("the skill name `{name}` {}", problems.join("; ")),
                    ));
                }
                if let Some(folder) = dir.and_then(|d| d.file_name()).and_then(|n| n.to_str()) {
                    if folder != name {
                        let mut d = Diagnostic::new(
                            Code::S804,
                            e.value.range,
                            format!(
                                "the skill name `{name}` differs from its folder `{folder}`: a skill's name is its folder's name (rename one of them)"
                            ),
                        );
                        // The folder's name is a certain fix only when it is a valid name.
                        if name_problems(folder).is_empty() {
                            d = d.fix(crate::diag::Fix::replace(
                                format!("Change the name to `{folder}`, the folder's name"),
                                e.value.range,
                                folder,
                            ));
                        }
                        out.push(d);
                    }
                }
            }
        },
    }
    // description: _validate_description
    match fm.entry("description") {
        None => out.push(Diagnostic::new(
            Code::S802,
            open_line,
            "the required field `description` is missing: agents choose a skill by what it does and when to use it",
        )),
        Some(e) => match scalar_text(&e.value, text) {
            Some(d) if !d.trim().is_empty() => {
                let n = d.chars().count();
                if n > MAX_DESCRIPTION {
                    out.push(Diagnostic::new(
                        Code::S805,
                        e.value.range,
                        format!("the description is {n} characters long; the limit is {MAX_DESCRIPTION}"),
                    ));
                }
            }
            _ => out.push(Diagnostic::new(
                Code::S802,
                e.value.range.cover(e.key_range),
                "`description` must be a non-empty string",
            )),
        },
    }
    // compatibility: _validate_compatibility
    if let Some(e) = fm.entry("compatibility") {
        match scalar_text(&e.value, text) {
            Some(c) => {
                let n = c.chars().count();
                if n > MAX_COMPATIBILITY {
                    out.push(Diagnostic::new(
                        Code::S806,
                        e.value.range,
                        format!("`compatibility` is {n} characters long; the limit is {MAX_COMPATIBILITY}"),
                    ));
                }
            }
            None => out.push(Diagnostic::new(
                Code::S806,
                e.value.range,
                format!(
                    "`compatibility` must be a string, not a {}",
                    e.value.type_name()
                ),
            )),
        }
    }
    if let Some(e) = fm.entry("metadata") {
        check_metadata(&e.value, &mut out);
    }
    if let Some(e) = fm.entry("allowed-tools") {
        check_allowed_tools(&e.value, text, &mut out);
    }
    out
}

/// What is wrong with a (trimmed, non-empty) skill name, as skills-ref's `_validate_name`
/// says it: each rule that fails.
pub fn name_problems(name: &str) -> Vec<String> {
    let mut v = Vec::new();
    let n = name.chars().count();
    if n > MAX_NAME {
        v.push(format!("is {n} characters long (at most {MAX_NAME})"));
    }
    if name != name.to_lowercase() {
        v.push("must be lowercase".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        v.push("cannot start or end with a hyphen".to_string());
    }
    if name.contains("--") {
        v.push("cannot contain consecutive hyphens".to_string());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_alphanumeric() || *c == '-')) {
        v.push(format!(
            "contains `{c}`: only letters, digits and hyphens are allowed"
        ));
    }
    v
}

fn suggest_key(k: &str) -> Option<&'static str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', ' '], "-");
    let kn = norm(k);
    super::KEYS
        .iter()
        .map(|x| x.name)
        .find(|x| norm(x) == kn || strsim::osa_distance(&norm(x), &kn) <= 2)
}

/// `metadata`: a map from string keys to string values (the specification).
fn check_metadata(v: &Value, out: &mut Vec<Diagnostic>) {
    match &v.kind {
        ValueKind::Map(entries) => {
            for e in entries {
                if matches!(e.value.kind, ValueKind::List(_) | ValueKind::Map(_)) {
                    out.push(Diagnostic::new(
                        Code::S807,
                        e.value.range,
                        format!(
                            "`metadata` maps strings to strings; `{}` is a {} (skills-ref turns it into its Python text)",
                            e.key,
                            e.value.type_name()
                        ),
                    ));
                }
            }
        }
        ValueKind::Null => {}
        _ => out.push(Diagnostic::new(
            Code::S807,
            v.range,
            format!(
                "`metadata` is a map of `key: value` lines, not a {}",
                v.type_name()
            ),
        )),
    }
}

/// `allowed-tools`: a space-separated string of tools, each `Name` or `Name(specifier)`
/// (Claude Code also takes a YAML list of them).
fn check_allowed_tools(v: &Value, text: &str, out: &mut Vec<Diagnostic>) {
    let one = |s: &str, range: TextRange, out: &mut Vec<Diagnostic>| {
        if let Err(why) = allowed_tools(s) {
            out.push(Diagnostic::new(Code::S808, range, why));
        }
    };
    match &v.kind {
        ValueKind::List(items) => {
            for i in items {
                match scalar_text(i, text) {
                    Some(s) => one(s, i.range, out),
                    None => out.push(Diagnostic::new(
                        Code::S808,
                        i.range,
                        format!(
                            "a tool of `allowed-tools` is a string, not a {}",
                            i.type_name()
                        ),
                    )),
                }
            }
        }
        ValueKind::Map(_) => out.push(Diagnostic::new(
            Code::S808,
            v.range,
            "`allowed-tools` is a space-separated string of tools, such as `Bash(git:*) Read`",
        )),
        _ => {
            if let Some(s) = scalar_text(v, text) {
                one(s, v.range, out)
            }
        }
    }
}

/// The tools of an `allowed-tools` string (`Bash(git add:*) Read`): a name, optionally
/// followed by a parenthesised specifier, which may hold spaces.
pub fn allowed_tools(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() || b[i] == b',' {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'(' && b[i] != b',' {
            if b[i] == b')' {
                return Err(format!(
                    "`)` without its `(` in `allowed-tools` at `{}`",
                    &s[start..]
                ));
            }
            i += 1;
        }
        let name = &s[start..i];
        if name.is_empty() {
            return Err("a `(` specifier with no tool name before it in `allowed-tools`".into());
        }
        if !name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | ':'))
        {
            return Err(format!("`{name}` is not a tool name"));
        }
        if i < b.len() && b[i] == b'(' {
            let Some(close) = s[i..].find(')') else {
                return Err(format!(
                    "`{}` opens a `(` that is never closed",
                    &s[start..]
                ));
            };
            i += close + 1;
        }
        out.push(&s[start..i]);
    }
    Ok(out)
}

/// Links in the body to files that do not exist (S810) and scripts the body names that the
/// skill does not hold (S811); fenced code is not read for links.
pub fn check_body_files(skill: &Skill, text: &str, dir: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (target, range) in body_links(text, skill.body) {
        let path = target.split(['#', '?']).next().unwrap_or("");
        if path.is_empty() || !is_local(path) {
            continue;
        }
        let path = percent_decode(path);
        if !dir.join(&path).exists() {
            out.push(Diagnostic::new(
                Code::S810,
                range,
                format!("`{path}` does not exist (relative to the skill's folder)"),
            ));
        }
    }
    for (path, range) in body_scripts(text, skill.body) {
        if !dir.join(path).exists() {
            out.push(Diagnostic::new(
                Code::S811,
                range,
                format!("the skill has no script `{path}`: an agent that follows this runs a file that is not there"),
            ));
        }
    }
    out
}

fn is_local(p: &str) -> bool {
    !(p.contains("://")
        || p.starts_with("mailto:")
        || p.starts_with('/')
        || p.starts_with('<')
        || p.starts_with("data:")
        || p.starts_with("tel:"))
}

fn percent_decode(p: &str) -> String {
    let b = p.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(x) = p
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The body's lines outside fenced code blocks, as (start, end) byte ranges.
pub fn prose_lines(text: &str, body: TextRange) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    for (s, e, _) in super::lines_from(text, body.start) {
        if s >= body.end {
            break;
        }
        let line = &text[s..e];
        let t = line.trim_start();
        let marker = t.bytes().next().filter(|c| *c == b'`' || *c == b'~');
        if let Some(c) = marker {
            let n = t.bytes().take_while(|x| *x == c).count();
            if n >= 3 {
                match fence {
                    None => {
                        fence = Some((c, n));
                        continue;
                    }
                    Some((fc, fnn)) if fc == c && n >= fnn && t[n..].trim().is_empty() => {
                        fence = None;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        if fence.is_none() {
            v.push((s, e));
        }
    }
    v
}

/// Markdown links and images of the body outside code (`[text](target)`), with the
/// target's range.
pub fn body_links(text: &str, body: TextRange) -> Vec<(String, TextRange)> {
    let mut out = Vec::new();
    for (s, e) in prose_lines(text, body) {
        let line = &text[s..e];
        let mut in_code = false;
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'`' => in_code = !in_code,
                b']' if !in_code && b.get(i + 1) == Some(&b'(') => {
                    let start = i + 2;
                    if let Some(len) = line[start..].find(')') {
                        let raw = &line[start..start + len];
                        // `[x](path "title")`
                        let target = raw.split_whitespace().next().unwrap_or("");
                        let target = target.trim_start_matches('<').trim_end_matches('>');
                        if !target.is_empty() {
                            let off = raw.find(target).unwrap_or(0);
                            out.push((
                                target.to_string(),
                                TextRange::new(s + start + off, s + start + off + target.len()),
                            ));
                        }
                        i = start + len;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The extensions of the scripts a skill runs (`kiwi run` runs them): one list.
use super::script::SCRIPT_EXTENSIONS;

/// Paths of the body starting with `scripts/` and ending in a script extension, in prose
/// and code alike (`python scripts/fill.py`), not part of a longer path.
pub fn body_scripts(text: &str, body: TextRange) -> Vec<(&str, TextRange)> {
    let mut out = Vec::new();
    let region = &text[body.start..body.end.min(text.len())];
    let mut from = 0;
    while let Some(i) = region[from..].find("scripts/") {
        let at = from + i;
        from = at + "scripts/".len();
        let before = region[..at].chars().next_back();
        if before.is_some_and(|c| {
            c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '$' | '{' | '}')
        }) {
            continue;
        }
        let len = region[at..]
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')))
            .unwrap_or(region.len() - at);
        let path = region[at..at + len].trim_end_matches('.');
        let Some(ext) = Path::new(path).extension().and_then(|e| e.to_str()) else {
            continue;
        };
        if !SCRIPT_EXTENSIONS.contains(&ext) || path.contains('*') {
            continue;
        }
        let start = body.start + at;
        out.push((path, TextRange::new(start, start + path.len())));
    }
    out
}
