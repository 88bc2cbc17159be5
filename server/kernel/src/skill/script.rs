//! A skill's scripts run like tools (issue 28, item 3): `scripts/fill.py` of a skill is read
//! into a tool item kept in memory (never written), whose chain is a builtin runtime or the
//! `subprocess` primitive, so the interpreter is resolved by the same resolver registry with
//! the same trail, and the run takes the one path of every tool ([`crate::exec::prepare_item`]):
//! the filtered environment, redaction, the process guarantees and the execution environments.
//!
//! How a script is run, first match wins (what the script itself says before its extension):
//! 1. PEP 723 inline metadata (a `# /// script` block) or a `uv run --script` shebang:
//!    `uv run --script SCRIPT ARGS…` (uv installs what the block asks for; uv is the
//!    `system_binary` `uv`, and a clear error names it when it is missing);
//! 2. a Python script (`.py`, or a shebang naming `python…`): the builtin Python runtime
//!    (`venv_python`: the project's `.venv`, `.ai/scripts/.venv`, the user's, `python3`);
//! 3. a JavaScript or TypeScript file (`.js`, `.mjs`, `.cjs`, `.ts`, `.mts`, `.cts`, or a shebang
//!    naming `node`) without another shebang: the builtin Node runtime (`node_modules`);
//! 4. a shebang naming another program (`#!/bin/sh`, `#!/usr/bin/env -S npx tsx`): that
//!    program on PATH (`system_binary`), with the shebang's arguments;
//! 5. a shell script (`.sh`, `.bash`) without one: the builtin bash runtime.
//!
//! The script gets its own arguments (`kiwi run SCRIPT -- ARGS…`), never `--params JSON`.

use super::SKILL_FILE;
use crate::exec::{ErrorKind, ExecError};
use crate::ids::ItemType;
use crate::text::SourceText;
use crate::workspace::{Item, Parsed, Workspace};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The extensions of the scripts a skill may hold that kiwi runs.
pub const SCRIPT_EXTENSIONS: &[&str] =
    &["py", "sh", "bash", "js", "mjs", "cjs", "ts", "mts", "cts"];

/// The parameter that holds the script's arguments (spliced into `args`).
pub const ARGV: &str = "argv";

/// How a script is started, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Launcher {
    /// `uv run --script`: PEP 723 inline metadata or a uv shebang.
    Uv,
    /// The builtin Python runtime.
    Python,
    /// The builtin Node runtime.
    Node,
    /// The builtin bash runtime.
    Bash,
    /// The program a shebang names, on PATH, with the shebang's arguments.
    Shebang { program: String, args: Vec<String> },
}

/// A script of a skill and how it runs.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptPlan {
    /// The skill's name (its folder).
    pub skill: String,
    /// The skill's `SKILL.md`.
    pub skill_file: PathBuf,
    pub script: PathBuf,
    /// The script's path inside the skill, with `/`.
    pub relative: String,
    pub launcher: Launcher,
    /// Why this launcher, one sentence (`PEP 723 inline metadata (line 2)`).
    pub reason: String,
}

/// Whether a file name looks like a script kiwi runs (by its extension).
pub fn has_script_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The line of a PEP 723 `# /// script` block (1-based), if the text has one that is closed
/// (`# ///`), as `uv` reads it: the regex of PEP 723's reference implementation.
pub fn pep723_line(text: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end_matches('\r') == "# /// script")?;
    let closed = lines[start + 1..].iter().any(|l| {
        let l = l.trim_end_matches('\r');
        l == "# ///"
    });
    let body_ok = lines[start + 1..]
        .iter()
        .map(|l| l.trim_end_matches('\r'))
        .take_while(|l| *l != "# ///")
        .all(|l| l == "#" || l.starts_with("# "));
    (closed && body_ok).then_some(start + 1)
}

/// A shebang's program (its file name, or the program `env` runs) and its arguments.
pub fn shebang(text: &str) -> Option<(String, Vec<String>)> {
    let line = text.lines().next()?.strip_prefix("#!")?.trim();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let name = Path::new(first).file_name()?.to_str()?.to_string();
    let mut rest: Vec<String> = words.map(str::to_string).collect();
    if name == "env" {
        // `#!/usr/bin/env -S prog args` and `#!/usr/bin/env prog`.
        if rest
            .first()
            .is_some_and(|w| w == "-S" || w == "--split-string")
        {
            rest.remove(0);
        }
        rest.retain(|w| !(w.starts_with('-') && w.len() > 1 && rest_is_env_option(w)));
        if rest.is_empty() {
            return None;
        }
        let program = rest.remove(0);
        return Some((program, rest));
    }
    Some((name, rest))
}

fn rest_is_env_option(w: &str) -> bool {
    matches!(w, "-i" | "--ignore-environment" | "-0" | "--null")
}

/// How a script with this path and text is run.
pub fn launcher(path: &Path, text: &str) -> Option<(Launcher, String)> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let bang = shebang(text);
    let bang_is = |f: &dyn Fn(&str) -> bool| bang.as_ref().is_some_and(|(p, _)| f(p));
    let python = ext == "py" || bang_is(&|p| p.starts_with("python"));
    let uv_bang = bang
        .as_ref()
        .is_some_and(|(p, a)| p == "uv" && a.iter().any(|x| x == "--script"));
    if uv_bang {
        return Some((
            Launcher::Uv,
            "its shebang runs it with `uv run --script`".to_string(),
        ));
    }
    if python {
        if let Some(line) = pep723_line(text) {
            return Some((
                Launcher::Uv,
                format!("it declares PEP 723 inline metadata (`# /// script`, line {line}): `uv run --script` installs what it asks for"),
            ));
        }
        return Some((
            Launcher::Python,
            if ext == "py" {
                "a Python script: the Python runtime's interpreter (the project's virtual environment first)".to_string()
            } else {
                "its shebang names Python: the Python runtime's interpreter (the project's virtual environment first)".to_string()
            },
        ));
    }
    let js = matches!(ext.as_str(), "js" | "mjs" | "cjs" | "ts" | "mts" | "cts");
    match &bang {
        Some((p, _)) if p == "node" => {
            return Some((
                Launcher::Node,
                "its shebang names node: the Node runtime's interpreter (the project's node_modules first)".to_string(),
            ))
        }
        Some((p, _)) if p == "bash" => {
            return Some((Launcher::Bash, "its shebang names bash".to_string()))
        }
        Some((p, a)) => {
            return Some((
                Launcher::Shebang {
                    program: p.clone(),
                    args: a.clone(),
                },
                format!("its shebang names `{p}`: `{p}` on PATH"),
            ))
        }
        None => {}
    }
    if js {
        let why = if matches!(ext.as_str(), "ts" | "mts" | "cts") {
            // Node runs TypeScript by stripping its types from 22.18 and 23.6 on (on by
            // default); an older Node stops at the first annotation with a SyntaxError.
            "a TypeScript file: the Node runtime's interpreter (the project's node_modules first); Node 22.18 or later runs it by stripping its types, an older Node refuses it (a `#!/usr/bin/env -S npx tsx` shebang runs it with tsx instead)"
        } else {
            "a JavaScript file: the Node runtime's interpreter (the project's node_modules first)"
        };
        return Some((Launcher::Node, why.to_string()));
    }
    if matches!(ext.as_str(), "sh" | "bash") {
        return Some((
            Launcher::Bash,
            "a shell script without a shebang: bash".to_string(),
        ));
    }
    None
}

/// The skill whose folder holds `path` (strictly below its `SKILL.md`'s folder), in this
/// workspace's skills folders.
pub fn skill_of(ws: &Workspace, path: &Path) -> Option<Arc<Item>> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        let md = d.join(SKILL_FILE);
        if md.is_file() {
            if let Some((_, ItemType::Skill, _)) = ws.classify(&md) {
                return ws.peek(&md);
            }
            return None;
        }
        dir = d.parent();
    }
    None
}

/// An absolute path as the user wrote it (relative to the working directory).
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// `reference` names a file (a path that exists, or one with a script's extension) rather
/// than a tool id: `kiwi run` and `kiwi env` then take it as a skill's script.
pub fn names_a_file(reference: &str) -> bool {
    let p = Path::new(reference);
    p.is_file() || (has_script_extension(p) && reference.contains(['/', '\\']))
}

/// The plan of a script: the skill that holds it and how it runs. The error says what is
/// wrong: no such file, not inside a skill, not a script kiwi knows how to run.
pub fn plan_script(ws: &Workspace, path: &Path) -> Result<ScriptPlan, ExecError> {
    let not_found = |m: String| ExecError::new(ErrorKind::NotFound, m);
    let abs = absolute(path);
    if !abs.is_file() {
        return Err(not_found(format!(
            "{} is not a file; give the path of a script inside a skill (such as .agents/skills/NAME/scripts/run.py)",
            path.display()
        )));
    }
    // The path as written may hold `..`: resolved, without following the file itself out.
    let abs = abs
        .parent()
        .and_then(|d| d.canonicalize().ok())
        .and_then(|d| abs.file_name().map(|n| d.join(n)))
        .unwrap_or(abs);
    let skill = skill_of(ws, &abs).ok_or_else(|| {
        let roots: Vec<String> = ws
            .skill_roots()
            .iter()
            .filter(|(_, r)| r.is_dir())
            .map(|(_, r)| r.display().to_string())
            .collect();
        not_found(format!(
            "{} is not inside a skill of this workspace (a folder with a SKILL.md in a skills folder{}); kiwi runs the scripts of skills and tools by their id",
            path.display(),
            if roots.is_empty() {
                String::new()
            } else {
                format!(": {}", roots.join(", "))
            }
        ))
    })?;
    let dir = skill.path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let relative = abs
        .strip_prefix(&dir)
        .map(|r| {
            r.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_else(|_| abs.display().to_string());
    let bytes = std::fs::read(&abs).map_err(|e| {
        ExecError::new(ErrorKind::Io, format!("cannot read {}: {e}", abs.display()))
    })?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]);
    let (launcher, reason) = launcher(&abs, &text).ok_or_else(|| {
        ExecError::new(
            ErrorKind::Interpreter,
            format!(
                "kiwi does not know how to run {}: give it a shebang (`#!/usr/bin/env python3`) or one of the extensions {}",
                abs.display(),
                SCRIPT_EXTENSIONS
                    .iter()
                    .map(|e| format!(".{e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    Ok(ScriptPlan {
        skill: skill.id.clone(),
        skill_file: skill.path.clone(),
        script: abs,
        relative,
        launcher,
        reason,
    })
}

impl ScriptPlan {
    /// The id the script runs under: `SKILL/PATH` (`pdf/scripts/fill.py`).
    pub fn id(&self) -> String {
        format!("{}/{}", self.skill, self.relative)
    }

    /// The tool file (a YAML tool, written as JSON) that runs the script.
    pub fn tool_text(&self) -> String {
        let argv = format!("{{{ARGV}}}");
        let mut tool = json!({
            "version": "1.0.0",
            "category": "skills",
            "description": format!("The script {} of the skill {}", self.relative, self.skill),
            "config_schema": {
                "type": "object",
                "properties": {
                    ARGV: {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The script's arguments",
                    }
                },
                "additionalProperties": false,
            },
        });
        let m = tool.as_object_mut().expect("an object");
        let (executor, tool_type, config, env_config): (&str, &str, Json, Option<Json>) =
            match &self.launcher {
                Launcher::Python => (
                    "runtimes/python_runtime",
                    "python",
                    json!({"args": ["{tool_path}", argv]}),
                    None,
                ),
                Launcher::Node => (
                    "runtimes/node_runtime",
                    "javascript",
                    json!({"args": ["{tool_path}", argv]}),
                    None,
                ),
                Launcher::Bash => (
                    "runtimes/bash_runtime",
                    "bash",
                    json!({"args": ["{tool_path}", argv]}),
                    None,
                ),
                Launcher::Uv => (
                    "subprocess",
                    "python",
                    json!({"command": "${KIWI_UV}", "args": ["run", "--script", "{tool_path}", argv], "timeout": 300}),
                    Some(
                        json!({"interpreter": {"type": "system_binary", "binary": "uv", "var": "KIWI_UV"}}),
                    ),
                ),
                Launcher::Shebang { program, args } => {
                    let stem = crate::env::check::var_stem_of(program)
                        .unwrap_or_else(|| "INTERPRETER".to_string());
                    let var = format!("KIWI_{stem}");
                    let mut a: Vec<Json> = args.iter().map(|x| json!(x)).collect();
                    a.push(json!("{tool_path}"));
                    a.push(json!(argv));
                    (
                        "subprocess",
                        "shell",
                        json!({"command": format!("${{{var}}}"), "args": a, "timeout": 300}),
                        Some(
                            json!({"interpreter": {"type": "system_binary", "binary": program, "var": var}}),
                        ),
                    )
                }
            };
        m.insert("tool_type".into(), json!(tool_type));
        m.insert("executor_id".into(), json!(executor));
        m.insert("config".into(), config);
        if let Some(e) = env_config {
            m.insert("env_config".into(), e);
        }
        serde_json::to_string_pretty(&tool).unwrap_or_default()
    }

    /// The tool item that runs the script (kept in memory: never written, never indexed).
    pub fn tool(&self, ws: &Workspace) -> Arc<Item> {
        let text = self.tool_text();
        let space = ws
            .classify(&self.skill_file)
            .map_or(crate::ids::Space::Project, |c| c.0);
        Arc::new(Item {
            item_type: ItemType::Tool,
            id: self.id(),
            space,
            path: self.script.clone(),
            script: Some(self.script.clone()),
            parsed: Parsed::Tool(Box::new(crate::tool::parse_yaml(&text))),
            source: SourceText::new(text),
        })
    }
}

/// Whether a tool item is one that runs a skill's script ([`ScriptPlan::tool`]): its file
/// is the script itself.
pub fn is_script_tool(item: &Item) -> bool {
    item.item_type == ItemType::Tool && item.script.as_deref() == Some(item.path.as_path())
}

/// The arguments a [`request`] carries (`[]` when none).
pub fn args_of(params: &serde_json::Value) -> Vec<String> {
    params[ARGV]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A script's arguments typed as one line (what an editor asks for): split as a POSIX shell
/// splits words (quotes and backslashes), nothing expanded, nothing run by a shell.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    shlex::split(line).ok_or_else(|| {
        format!("the arguments `{line}` have a quote that is not closed (they are split as a shell splits words)")
    })
}

/// The request of a script's run: its arguments.
pub fn request(args: &[String], environment: Option<String>) -> crate::exec::Request {
    crate::exec::Request {
        params: json!({ ARGV: args }),
        overrides: None,
        environment,
    }
}

/// Plan the run of a skill's script, as every tool's run is planned. A missing `uv` for a
/// PEP 723 script is named with what to do.
pub fn prepare(
    ws: &Workspace,
    path: &Path,
    args: &[String],
    environment: Option<String>,
) -> Result<(ScriptPlan, crate::exec::Plan), ExecError> {
    let sp = plan_script(ws, path)?;
    // A pulled skill whose files changed since it was pinned runs nothing, as a tool.
    if let Some(skill) = ws.peek(&sp.skill_file) {
        crate::trust::audit::refuse_drift(ws, &skill)
            .map_err(|m| ExecError::new(ErrorKind::Invalid, m))?;
    }
    let tool = sp.tool(ws);
    let plan = crate::exec::prepare_item(ws, &tool, &request(args, environment)).map_err(|mut e| {
        if e.kind == ErrorKind::Interpreter && sp.launcher == Launcher::Uv {
            e.message = format!(
                "{} declares PEP 723 inline metadata and runs with `uv run --script`, but `uv` is not on PATH; install uv (https://docs.astral.sh/uv/getting-started/installation/) or remove the `# /// script` block to run it with the project's Python; nothing was run",
                sp.relative
            );
        }
        e
    })?;
    Ok((sp, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(name: &str, text: &str) -> Option<Launcher> {
        launcher(Path::new(name), text).map(|(l, _)| l)
    }

    #[test]
    fn what_a_script_says_before_its_extension() {
        let pep =
            "#!/usr/bin/env python3\n# /// script\n# dependencies = [\"rich\"]\n# ///\nprint(1)\n";
        assert_eq!(how("a.py", pep), Some(Launcher::Uv));
        assert_eq!(pep723_line(pep), Some(2));
        // An unclosed block is not PEP 723 metadata (uv would refuse it too).
        assert_eq!(
            how("a.py", "# /// script\n# x = 1\nprint(1)\n"),
            Some(Launcher::Python)
        );
        assert_eq!(how("a.py", "print(1)\n"), Some(Launcher::Python));
        assert_eq!(
            how("run", "#!/usr/bin/env -S uv run --script\nprint(1)\n"),
            Some(Launcher::Uv)
        );
        assert_eq!(how("run", "#!/usr/bin/python3\n"), Some(Launcher::Python));
        assert_eq!(how("a.mjs", "console.log(1)\n"), Some(Launcher::Node));
        assert_eq!(how("a.ts", "#!/usr/bin/env node\n"), Some(Launcher::Node));
        assert_eq!(
            how("a.ts", "#!/usr/bin/env -S npx tsx\n"),
            Some(Launcher::Shebang {
                program: "npx".into(),
                args: vec!["tsx".into()]
            })
        );
        assert_eq!(how("a.sh", "echo\n"), Some(Launcher::Bash));
        assert_eq!(how("a.sh", "#!/bin/bash -e\n"), Some(Launcher::Bash));
        assert_eq!(
            how("a.sh", "#!/bin/sh\n"),
            Some(Launcher::Shebang {
                program: "sh".into(),
                args: vec![]
            })
        );
        assert_eq!(how("notes.txt", "hello\n"), None);
        assert_eq!(how("x", "#!\n"), None);
    }

    #[test]
    fn the_tool_text_parses_as_a_yaml_tool() {
        for l in [
            Launcher::Uv,
            Launcher::Python,
            Launcher::Node,
            Launcher::Bash,
            Launcher::Shebang {
                program: "deno".into(),
                args: vec!["run".into()],
            },
        ] {
            let sp = ScriptPlan {
                skill: "s".into(),
                skill_file: "/p/.agents/skills/s/SKILL.md".into(),
                script: "/p/.agents/skills/s/scripts/a".into(),
                relative: "scripts/a".into(),
                launcher: l,
                reason: String::new(),
            };
            let t = crate::tool::parse_yaml(&sp.tool_text());
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
            assert!(t.str(crate::tool::Field::ExecutorId).is_some());
        }
    }
}
