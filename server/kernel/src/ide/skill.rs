//! Editor features of an Agent Skill's `SKILL.md` (issue 28, items 3-4): hover on a
//! frontmatter key (what it means, who reads it, its limit and the current count) and on a
//! script the body names (how it runs: the interpreter and its trail, as `kiwi env` shows
//! it), `▶ Run` lenses on the scripts the body names, document links to the files the body
//! references, completion of the keys and their known values, and document symbols.

use super::{CompletionEntry, CompletionKind, DocLink, HoverInfo, Lens, Symbol, SymbolKind};
use crate::skill::script::{plan_script, ScriptPlan};
use crate::skill::{
    known_key, KeyOwner, Skill, KEYS, MAX_COMPATIBILITY, MAX_DESCRIPTION, MAX_NAME,
};
use crate::text::TextRange;
use crate::workspace::{Item, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The limit of a key's value in characters (skills-ref's `validator.py`), if it has one.
pub fn key_limit(key: &str) -> Option<usize> {
    match key {
        "name" => Some(MAX_NAME),
        "description" => Some(MAX_DESCRIPTION),
        "compatibility" => Some(MAX_COMPATIBILITY),
        _ => None,
    }
}

fn owner_text(o: KeyOwner) -> &'static str {
    match o {
        KeyOwner::Spec => "the Agent Skills specification",
        KeyOwner::ClaudeCode => "Claude Code",
        KeyOwner::Copilot => "GitHub Copilot in VS Code",
    }
}

fn dir_of(item: &Item) -> PathBuf {
    item.path.parent().unwrap_or(Path::new("/")).to_path_buf()
}

/// The files of the skill the body references: its links (`[x](reference.md)`) and the
/// scripts it names (`python scripts/fill.py`) that exist, with their ranges, sorted.
pub fn referenced_files(item: &Item, skill: &Skill) -> Vec<(PathBuf, TextRange)> {
    let text = item.text();
    let dir = dir_of(item);
    let mut out: Vec<(PathBuf, TextRange)> = Vec::new();
    for (target, range) in crate::skill::body_links(text, skill.body) {
        let path = target.split(['#', '?']).next().unwrap_or("");
        if path.is_empty() || path.contains("://") || path.starts_with('/') {
            continue;
        }
        let file = dir.join(path);
        if file.exists() {
            out.push((file, TextRange::new(range.start, range.start + path.len())));
        }
    }
    for (path, range) in crate::skill::body_scripts(text, skill.body) {
        let file = dir.join(path);
        if file.is_file() && !out.iter().any(|(_, r)| r.start == range.start) {
            out.push((file, range));
        }
    }
    out.sort_by_key(|(_, r)| r.start);
    out
}

/// The scripts the body names that kiwi can run, with their ranges.
fn scripts(ws: &Workspace, item: &Item, skill: &Skill) -> Vec<(ScriptPlan, TextRange)> {
    referenced_files(item, skill)
        .into_iter()
        .filter(|(f, _)| f.is_file() && crate::skill::script::has_script_extension(f))
        .filter_map(|(f, r)| plan_script(ws, &f).ok().map(|p| (p, r)))
        .collect()
}

pub(super) fn hover(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<HoverInfo> {
    let skill = item.skill()?;
    let text = item.text();
    if let Some(map) = skill.frontmatter.as_ref().and_then(|f| f.as_map()) {
        for e in map {
            let on_key = e.key_range.touches(offset);
            let on_value = e.value.range.touches(offset) && !e.value.range.is_empty();
            if !on_key && !on_value {
                continue;
            }
            let range = if on_key { e.key_range } else { e.value.range };
            let mut md = format!("**`{}`**", e.key);
            match known_key(&e.key) {
                Some(k) => {
                    md.push_str(&format!(
                        " — read by {}{}\n\n{}",
                        owner_text(k.owner),
                        if k.required { " (required)" } else { "" },
                        k.doc
                    ));
                    if !k.values.is_empty() {
                        md.push_str(&format!(
                            "\n\nKnown values: {}",
                            k.values
                                .iter()
                                .map(|v| format!("`{v}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
                None => md.push_str(
                    " — not a key of the specification or of a known client: agents ignore it",
                ),
            }
            if let Some(limit) = key_limit(&e.key) {
                if let Some(v) = crate::skill::scalar_text(&e.value, text) {
                    let n = v.trim().chars().count();
                    md.push_str(&format!(
                        "\n\n{n} / {limit} characters{}",
                        if n > limit { " — over the limit" } else { "" }
                    ));
                }
            }
            return Some(HoverInfo {
                range,
                markdown: md,
            });
        }
    }
    let (plan, range) = scripts(ws, item, skill)
        .into_iter()
        .find(|(_, r)| r.touches(offset))?;
    Some(HoverInfo {
        range,
        markdown: script_markdown(ws, &plan),
    })
}

/// How a script runs: why this interpreter, then the chain and each interpreter's trail.
pub fn script_markdown(ws: &Workspace, plan: &ScriptPlan) -> String {
    let tool = plan.tool(ws);
    format!(
        "**`{}`** — a script of the skill `{}`\n\nRuns {}: {}.\n\n{}",
        plan.relative,
        plan.skill,
        match &plan.launcher {
            crate::skill::script::Launcher::Uv => "with `uv run --script`".to_string(),
            crate::skill::script::Launcher::Python => "with Python".to_string(),
            crate::skill::script::Launcher::Node => "with Node".to_string(),
            crate::skill::script::Launcher::Bash => "with bash".to_string(),
            crate::skill::script::Launcher::Shebang { program, .. } => format!("with `{program}`"),
        },
        plan.reason,
        super::environment_markdown(ws, &tool)
    )
}

pub(super) fn code_lenses(ws: &Workspace, item: &Arc<Item>) -> Vec<Lens> {
    let Some(skill) = item.skill() else {
        return Vec::new();
    };
    scripts(ws, item, skill)
        .into_iter()
        .flat_map(|(plan, range)| run_lenses(&plan, range, "▶ Run".into()))
        .collect()
}

/// The lenses of a skill's script at `range`: run it without arguments, run it with the
/// arguments the client asks for (`askArgs`: it sends them back as `argsLine`, split by the
/// server as a shell splits words), and its environment.
fn run_lenses(plan: &ScriptPlan, range: TextRange, run: String) -> Vec<Lens> {
    let arg = serde_json::json!({"path": plan.script.display().to_string()});
    let mut ask = arg.clone();
    ask["askArgs"] = serde_json::Value::Bool(true);
    vec![
        Lens {
            range,
            title: run,
            command: super::CMD_RUN_TOOL.into(),
            args: vec![arg.clone()],
        },
        Lens {
            range,
            title: "▶ Run…".into(),
            command: super::CMD_RUN_TOOL.into(),
            args: vec![ask],
        },
        Lens {
            range,
            title: "⚙ Environment".into(),
            command: super::CMD_SHOW_ENV.into(),
            args: vec![arg],
        },
    ]
}

/// `▶ Run` on a script file of a skill opened on its own (not an item: the face asks).
pub fn script_lenses(ws: &Workspace, path: &Path) -> Vec<Lens> {
    let Ok(plan) = plan_script(ws, path) else {
        return Vec::new();
    };
    let run = format!("▶ Run ({})", plan.id());
    run_lenses(&plan, TextRange::empty(0), run)
}

pub(super) fn document_links(item: &Item) -> Vec<DocLink> {
    let Some(skill) = item.skill() else {
        return Vec::new();
    };
    let dir = dir_of(item);
    referenced_files(item, skill)
        .into_iter()
        .map(|(target, range)| DocLink {
            range,
            tooltip: format!(
                "{} (in the skill's folder)",
                target.strip_prefix(&dir).unwrap_or(&target).display()
            ),
            target,
        })
        .collect()
}

/// Go to definition on a file the body references: that file.
pub(super) fn definition(item: &Item, offset: usize) -> Option<PathBuf> {
    let skill = item.skill()?;
    referenced_files(item, skill)
        .into_iter()
        .find(|(_, r)| r.touches(offset))
        .map(|(f, _)| f)
}

pub(super) fn symbols(item: &Item) -> Vec<Symbol> {
    let Some(skill) = item.skill() else {
        return Vec::new();
    };
    let text = item.text();
    let mut out = Vec::new();
    if let (Some(fm), Some(range)) = (skill.frontmatter.as_ref(), skill.frontmatter_range) {
        let children = fm
            .as_map()
            .map(|m| {
                m.iter()
                    .map(|e| Symbol {
                        name: e.key.clone(),
                        detail: crate::skill::scalar_text(&e.value, text)
                            .map(|v| v.trim().chars().take(60).collect()),
                        kind: SymbolKind::Key,
                        range: TextRange::new(
                            e.key_range.start,
                            e.value.range.end.max(e.key_range.end),
                        ),
                        selection: e.key_range,
                        children: Vec::new(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(Symbol {
            name: "frontmatter".into(),
            detail: skill.name(text).map(str::to_string),
            kind: SymbolKind::Metadata,
            range,
            selection: TextRange::new(range.start, range.start + 3.min(range.len())),
            children,
        });
    }
    // The body's ATX headings, outside fenced code, flat.
    let mut fence = false;
    let mut at = skill.body.start;
    for line in text[skill.body.start.min(text.len())..].split_inclusive('\n') {
        let start = at;
        at += line.len();
        let l = line.trim_end();
        if l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence || !l.starts_with('#') {
            continue;
        }
        let hashes = l.bytes().take_while(|b| *b == b'#').count();
        if hashes > 6 || !l[hashes..].starts_with(' ') {
            continue;
        }
        let r = TextRange::new(start, start + l.len());
        out.push(Symbol {
            name: l[hashes..].trim().to_string(),
            detail: None,
            kind: SymbolKind::Heading,
            range: r,
            selection: r,
            children: Vec::new(),
        });
    }
    out
}

/// Completion in the frontmatter: at the start of a line, the keys not yet written; after
/// `key: `, the key's known values.
pub(super) fn completions(item: &Item, offset: usize) -> Option<Vec<CompletionEntry>> {
    let skill = item.skill()?;
    let text = item.text();
    let fm = skill.frontmatter_text;
    if offset < fm.start || offset > fm.end {
        return None;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    let written: Vec<&str> = skill
        .frontmatter
        .as_ref()
        .and_then(|f| f.as_map())
        .map(|m| m.iter().map(|e| e.key.as_str()).collect())
        .unwrap_or_default();
    if let Some((key, value)) = before.split_once(':') {
        let k = known_key(key.trim())?;
        let typed = value.trim_start();
        return Some(
            k.values
                .iter()
                .filter(|v| v.starts_with(typed))
                .map(|v| CompletionEntry {
                    label: (*v).to_string(),
                    kind: CompletionKind::Value,
                    detail: Some(format!("{}: {}", k.name, k.doc)),
                    insert_text: None,
                    range: TextRange::new(offset - typed.len(), offset),
                    snippet: false,
                })
                .collect(),
        );
    }
    if before.starts_with([' ', '\t']) {
        return None;
    }
    Some(
        KEYS.iter()
            .filter(|k| !written.contains(&k.name) && k.name.starts_with(before.trim()))
            .map(|k| CompletionEntry {
                label: k.name.to_string(),
                kind: CompletionKind::Key,
                detail: Some(format!(
                    "{}{}: {}",
                    owner_text(k.owner),
                    if k.required { ", required" } else { "" },
                    k.doc
                )),
                insert_text: Some(format!("{}: ", k.name)),
                range: TextRange::new(line_start, offset),
                snippet: false,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;

    const SKILL: &str = "---\nname: report\ndescription: Build a report.\nmodel: \n---\n# Report\n\nRun `python scripts/build.py` and read [the guide](guide.md#top).\n\n```sh\n# not a heading\n```\n## Missing\nRun scripts/gone.py.\n";

    fn setup() -> (tempfile::TempDir, Workspace, Arc<Item>) {
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().join("p");
        let skill = proj.join(".agents/skills/report");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::create_dir_all(proj.join(".venv/bin")).unwrap();
        std::fs::write(proj.join(".venv/bin/python"), "").unwrap();
        std::fs::write(skill.join("SKILL.md"), SKILL).unwrap();
        std::fs::write(skill.join("guide.md"), "# Guide\n").unwrap();
        std::fs::write(skill.join("scripts/build.py"), "print(1)\n").unwrap();
        let host = Host::for_tests(&[
            ("HOME", d.path().join("home").to_str().unwrap()),
            ("PATH", "/usr/bin:/bin"),
        ]);
        let ws = Workspace::load(Some(proj), host);
        let item = ws
            .peek(&skill.join("SKILL.md").canonicalize().unwrap())
            .or_else(|| ws.peek(&skill.join("SKILL.md")))
            .expect("the skill is an item");
        (d, ws, item)
    }

    fn at(needle: &str) -> usize {
        SKILL.find(needle).unwrap() + 1
    }

    #[test]
    fn hover_on_a_key_says_who_reads_it_and_counts_against_the_limit() {
        let (_d, ws, item) = setup();
        let h = hover(&ws, &item, at("description")).unwrap();
        assert!(
            h.markdown
                .contains("the Agent Skills specification (required)"),
            "{}",
            h.markdown
        );
        assert!(
            h.markdown.contains("15 / 1024 characters"),
            "{}",
            h.markdown
        );
        let h = hover(&ws, &item, at("name:")).unwrap();
        assert!(h.markdown.contains("6 / 64 characters"), "{}", h.markdown);
        let h = hover(&ws, &item, at("model")).unwrap();
        assert!(
            h.markdown.contains("Claude Code") && h.markdown.contains("`opus`"),
            "{}",
            h.markdown
        );
    }

    #[test]
    fn hover_on_a_script_shows_the_interpreter_and_its_trail() {
        let (_d, ws, item) = setup();
        let h = hover(&ws, &item, at("scripts/build.py")).unwrap();
        assert_eq!(&SKILL[h.range.start..h.range.end], "scripts/build.py");
        assert!(
            h.markdown.contains("a script of the skill `report`"),
            "{}",
            h.markdown
        );
        assert!(h.markdown.contains("KIWI_PYTHON"), "{}", h.markdown);
        assert!(h.markdown.contains(".venv/bin/python"), "{}", h.markdown);
        // A missing script has no hover of its own (S811 says it is missing).
        assert!(hover(&ws, &item, at("scripts/gone.py")).is_none());
    }

    #[test]
    fn lenses_links_definition_symbols_and_completion() {
        let (_d, ws, item) = setup();
        let lenses = code_lenses(&ws, &item);
        let titles: Vec<&str> = lenses.iter().map(|l| l.title.as_str()).collect();
        assert_eq!(titles, ["▶ Run", "▶ Run…", "⚙ Environment"]);
        assert_eq!(lenses[1].args[0]["askArgs"], serde_json::json!(true));
        assert!(lenses[0].args[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("scripts/build.py"));
        let links = document_links(&item);
        let targets: Vec<String> = links
            .iter()
            .map(|l| l.target.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(targets, ["build.py", "guide.md"]);
        assert_eq!(&SKILL[links[1].range.start..links[1].range.end], "guide.md");
        assert!(definition(&item, at("guide.md")).is_some());
        let syms = symbols(&item);
        let names: Vec<&str> = syms.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["frontmatter", "Report", "Missing"]);
        assert_eq!(syms[0].children.len(), 3);
        // A new line in the frontmatter: the keys not written yet.
        let off = SKILL.find("model:").unwrap();
        let keys = completions(&item, off).unwrap();
        assert!(keys.iter().any(|c| c.label == "license"));
        assert!(!keys.iter().any(|c| c.label == "name"));
        // After `model: `: its known values.
        let vals = completions(&item, off + "model: ".len()).unwrap();
        let labels: Vec<&str> = vals.iter().map(|c| c.label.as_str()).collect();
        assert!(labels.contains(&"sonnet"), "{labels:?}");
        // The body: nothing.
        assert!(completions(&item, at("Run `")).is_none());
    }
}
