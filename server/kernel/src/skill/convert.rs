//! `kiwi convert`: a kiwi directive, or a VS Code `.prompt.md`, as an Agent Skill.
//!
//! A prompt file becomes a skill as VS Code's own migration makes one (prompt files are
//! retired in favour of skills): its `name` (else the file's name), sanitized to a skill
//! name; its `description` (else the name); `argument-hint`; `disable-model-invocation:
//! true` (a prompt file ran only when the user invoked it); the body as it is. Every other
//! key (`agent`, `model`, `tools`, `mode`) has no skill equivalent: it is reported, not kept.
//!
//! A directive becomes a skill whose body is its steps as instructions (each step's
//! description, its inputs listed), and whose `scripts/` holds the files of the tools its
//! steps run, each referenced from the step that runs it.

use crate::directive::CallKind;
use crate::ids::ItemType;
use crate::workspace::{Item, Lookup, Workspace};

/// A skill made by a conversion: its name (its folder) and its files (relative paths).
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub name: String,
    pub files: Vec<(String, Vec<u8>)>,
    /// What the source had that a skill cannot keep (reported to the user).
    pub dropped: Vec<String>,
}

/// A skill name from a friendly one, as VS Code's migration makes it: markup dropped, lower
/// case, every run of other characters one hyphen, none leading or trailing, at most 64
/// characters; `migrated-skill` when nothing is left.
pub fn sanitize_name(name: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in name.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_ascii_alphanumeric() => out.push(c.to_ascii_lowercase()),
            _ => {
                if !out.ends_with('-') {
                    out.push('-');
                }
            }
        }
    }
    let mut s: String = out
        .trim_matches('-')
        .chars()
        .take(super::MAX_NAME)
        .collect();
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() {
        "migrated-skill".to_string()
    } else {
        s
    }
}

/// A YAML scalar that reads back as exactly `s` (a JSON string is a YAML double-quoted one).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// One line of text (a description spans lines in a directive): whitespace collapsed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The description a skill may carry: at most [`super::MAX_DESCRIPTION`] characters.
fn description_of(s: &str) -> String {
    let s = one_line(s);
    if s.chars().count() <= super::MAX_DESCRIPTION {
        return s;
    }
    let mut t: String = s.chars().take(super::MAX_DESCRIPTION - 1).collect();
    t.push('…');
    t
}

/// A `.prompt.md` as a skill (`file_name`: the prompt file's name, for its default name).
pub fn from_prompt(file_name: &str, text: &str, name: Option<&str>) -> Converted {
    let parsed = super::parse(text);
    let has_fm = parsed.frontmatter_range.is_some();
    let fm = |k: &str| -> Option<String> {
        parsed
            .scalar(k, text)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let stem = file_name
        .strip_suffix(".prompt.md")
        .or_else(|| file_name.strip_suffix(".md"))
        .unwrap_or(file_name);
    let friendly = fm("name").unwrap_or_else(|| stem.to_string());
    let skill = name
        .map(str::to_string)
        .unwrap_or_else(|| sanitize_name(&friendly));
    let description = description_of(&fm("description").unwrap_or_else(|| friendly.clone()));
    let mut head = vec![
        "---".to_string(),
        format!("name: {}", quoted(&skill)),
        format!("description: {}", quoted(&description)),
        "disable-model-invocation: true".to_string(),
    ];
    if let Some(h) = fm("argument-hint") {
        head.push(format!("argument-hint: {}", quoted(&h)));
    }
    head.push("---".into());
    head.push(String::new());
    let dropped = parsed
        .frontmatter
        .as_ref()
        .and_then(|v| v.as_map())
        .map(|m| {
            m.iter()
                .map(|e| e.key.clone())
                .filter(|k| !["name", "description", "argument-hint"].contains(&k.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let body = if has_fm {
        text.get(parsed.body.start..).unwrap_or("")
    } else {
        text
    };
    let body = body
        .strip_prefix("\r\n")
        .or_else(|| body.strip_prefix('\n'))
        .unwrap_or(body);
    Converted {
        name: skill,
        files: vec![(
            super::SKILL_FILE.to_string(),
            format!("{}{body}", head.join("\n")).into_bytes(),
        )],
        dropped,
    }
}

/// A directive as a skill: its steps as instructions, the tools they run as its scripts.
pub fn from_directive(
    ws: &Workspace,
    item: &Item,
    name: Option<&str>,
) -> Result<Converted, String> {
    let d = item
        .directive()
        .ok_or_else(|| format!("{} is not a directive", item.path.display()))?;
    let base = item.id.rsplit('/').next().unwrap_or(&item.id);
    let skill = name
        .map(str::to_string)
        .unwrap_or_else(|| sanitize_name(base));
    let title = d
        .name
        .as_ref()
        .map_or(base, |n| n.value.as_str())
        .to_string();
    let desc = d
        .description
        .as_ref()
        .map(|x| description_of(&x.value))
        .filter(|x| !x.is_empty())
        .unwrap_or_else(|| format!("The steps of the kiwi directive {}.", item.id));
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut dropped = Vec::new();
    // The tools the steps run: (call index) -> the script's path in the skill.
    let mut scripts: Vec<(usize, String, String)> = Vec::new();
    for (i, c) in d.calls.iter().enumerate() {
        let is_tool = c.item_type.as_ref().is_some_and(|t| t.value == "tool");
        let runs = matches!(c.kind, CallKind::Execute | CallKind::ToolCall)
            && c.action.as_ref().is_none_or(|a| a.value == "run");
        let Some(id) = c.item_id.as_ref().map(|x| x.value.as_str()) else {
            continue;
        };
        if !is_tool || !runs {
            continue;
        }
        if id.contains('{') {
            dropped.push(format!(
                "tool `{id}` (its id is known only when the directive runs)"
            ));
            continue;
        }
        let tool = match ws.lookup(ItemType::Tool, id, None) {
            Lookup::Found(t) => t,
            _ => {
                dropped.push(format!("tool `{id}` (not found in this workspace)"));
                continue;
            }
        };
        let paths = crate::trust::item_file_paths(ws, &tool).map_err(|e| e.to_string())?;
        let mut main = None;
        for (_, abs) in paths {
            let Some(fname) = abs.file_name().and_then(|f| f.to_str()) else {
                continue;
            };
            let rel = format!("scripts/{fname}");
            if !files.iter().any(|(r, _)| *r == rel) {
                let bytes = crate::ids::read_regular(&abs)
                    .map_err(|e| format!("{}: {e}", abs.display()))?;
                files.push((rel.clone(), bytes));
            }
            // The file that runs: the script of a YAML tool, else the tool's own file.
            let is_yaml = fname.ends_with(".yaml") || fname.ends_with(".yml");
            if main.is_none() || !is_yaml {
                main = Some(rel);
            }
        }
        if let Some(m) = main {
            scripts.push((i, id.to_string(), m));
        }
    }
    let mut body = format!("# {title}\n\n{desc}\n");
    if !d.inputs.is_empty() {
        body.push_str("\n## Inputs\n\n");
        for input in &d.inputs {
            let mut line = format!("- `{}`", input.name.value);
            if input.required {
                line.push_str(" (required)");
            }
            let text = one_line(&input.description);
            if !text.is_empty() {
                line.push_str(&format!(": {text}"));
            }
            if let Some(v) = &input.enum_values {
                line.push_str(&format!(" One of: {}.", v.join(", ")));
            }
            if let Some(def) = &input.default {
                line.push_str(&format!(" Default: `{}`.", def.value));
            }
            body.push_str(&line);
            body.push('\n');
        }
    }
    if !d.steps.is_empty() {
        body.push_str("\n## Steps\n\n");
        for (n, step) in d.steps.iter().enumerate() {
            let name = step
                .name
                .as_ref()
                .map(|s| s.value.as_str())
                .unwrap_or("step");
            let text = step
                .description
                .as_deref()
                .map(one_line)
                .unwrap_or_default();
            body.push_str(&format!("{}. **{name}**", n + 1));
            if !text.is_empty() {
                body.push_str(&format!(": {text}"));
            }
            body.push('\n');
            for (_, id, script) in scripts.iter().filter(|(c, ..)| step.calls.contains(c)) {
                body.push_str(&format!(
                    "   - Run [`{script}`]({script}) (the kiwi tool `{id}`; `kiwi run {script}` runs it with the interpreter kiwi resolves).\n"
                ));
            }
        }
    }
    // Tools run outside any step.
    let loose: Vec<&(usize, String, String)> = scripts
        .iter()
        .filter(|(c, ..)| !d.steps.iter().any(|s| s.calls.contains(c)))
        .collect();
    if !loose.is_empty() {
        body.push_str("\n## Scripts\n\n");
        for (_, id, script) in loose {
            body.push_str(&format!(
                "- [`{script}`]({script}): the kiwi tool `{id}`.\n"
            ));
        }
    }
    if !d.capabilities.is_empty() {
        dropped.push("<permissions> (a skill has no permissions of its own)".into());
    }
    let mut head = vec![
        "---".to_string(),
        format!("name: {}", quoted(&skill)),
        format!("description: {}", quoted(&desc)),
        "metadata:".to_string(),
        format!(
            "  converted-from: {}",
            quoted(&format!("kiwi directive {}", item.id))
        ),
    ];
    if let Some(v) = &d.version {
        head.push(format!("  version: {}", quoted(v.value.trim())));
    }
    head.push("---".into());
    head.push(String::new());
    files.insert(
        0,
        (
            super::SKILL_FILE.to_string(),
            format!("{}{body}", head.join("\n")).into_bytes(),
        ),
    );
    Ok(Converted {
        name: skill,
        files,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sanitized_as_vs_code_does() {
        assert_eq!(sanitize_name("Review PR"), "review-pr");
        assert_eq!(sanitize_name("  <b>Fix</b> --- Tests!! "), "fix-tests");
        assert_eq!(sanitize_name("???"), "migrated-skill");
        assert_eq!(sanitize_name(&"a".repeat(100)).len(), 64);
    }

    #[test]
    fn prompt_keeps_name_description_and_argument_hint() {
        let text = "---\nname: Review PR\ndescription: Review a pull request\nargument-hint: '[pr-number]'\nagent: agent\nmodel: GPT-5\n---\n\nReview #${input:pr}.\n";
        let c = from_prompt("review.prompt.md", text, None);
        assert_eq!(c.name, "review-pr");
        let s = String::from_utf8(c.files[0].1.clone()).unwrap();
        assert_eq!(
            s,
            "---\nname: \"review-pr\"\ndescription: \"Review a pull request\"\ndisable-model-invocation: true\nargument-hint: \"[pr-number]\"\n---\nReview #${input:pr}.\n"
        );
        assert_eq!(c.dropped, ["agent", "model"]);
        let parsed = crate::skill::parse(&s);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        // No frontmatter: the file's name and the whole text.
        let c = from_prompt("fix_tests.prompt.md", "Fix the tests.\n", None);
        assert_eq!(c.name, "fix-tests");
        assert!(String::from_utf8_lossy(&c.files[0].1).ends_with("---\nFix the tests.\n"));
    }
}
