//! The neighbours of Agent Skills (issue 28, item 8): VS Code's and GitHub Copilot's
//! customization files, `*.agent.md` (custom agents, formerly chat modes: `*.chatmode.md`),
//! `*.instructions.md` and `*.prompt.md`. They are not kiwi items (nothing here runs them):
//! kiwi checks their frontmatter and explains each key on hover.
//!
//! The keys of each kind are data (one table per kind, [`Kind::keys`]): checks and hover
//! read the same table. Each key's source:
//! - custom agents: code.visualstudio.com/docs/agent-customization/custom-agents ("Header")
//!   and docs.github.com/copilot/reference/custom-agents-configuration ("YAML frontmatter
//!   properties");
//! - instructions: code.visualstudio.com/docs/agent-customization/custom-instructions
//!   ("Instructions file format"), and GitHub's custom instructions page for `excludeAgent`
//!   (`data/reusables/copilot/custom-instructions-path.md` of github/docs);
//! - prompt files: code.visualstudio.com/docs/agent-customization/prompt-files ("Prompt file
//!   format");
//! - what VS Code marks in its own editor: `promptValidator.ts` of microsoft/vscode
//!   (`src/vs/workbench/contrib/chat/common/promptSyntax/languageProviders/`).
//!
//! The frontmatter is read by the parser `SKILL.md` uses ([`crate::skill::parse_frontmatter`]).

use crate::diag::{Code, Diagnostic, Fix};
use crate::ide::HoverInfo;
use crate::skill::{parse_frontmatter, Skill};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};
use std::path::{Path, PathBuf};

/// The kind of a customization file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `*.agent.md` (and the legacy `*.chatmode.md`): a custom agent.
    Agent,
    /// `*.instructions.md`: file-based instructions.
    Instructions,
    /// `*.prompt.md`: a prompt file (a slash command).
    Prompt,
}

/// The file name endings of each kind. VS Code still reads a `*.chatmode.md` as an agent
/// (`promptValidator.ts` `validateFileName`: "Chat modes have been renamed to agents").
pub const SUFFIXES: &[(&str, Kind)] = &[
    (".agent.md", Kind::Agent),
    (".chatmode.md", Kind::Agent),
    (".instructions.md", Kind::Instructions),
    (".prompt.md", Kind::Prompt),
];

/// The legacy ending of an agent file.
pub const CHATMODE_SUFFIX: &str = ".chatmode.md";

/// The folders of a project where VS Code and GitHub Copilot read these files (custom
/// agents: `.github/agents`; instructions: `.github/instructions`, searched recursively;
/// prompt files: `.github/prompts`; the chat modes' old `.github/chatmodes`).
pub const FOLDERS: &[&str] = &[
    ".github/agents",
    ".github/chatmodes",
    ".github/instructions",
    ".github/prompts",
];

impl Kind {
    /// The kind of a file, by its name's ending; any other `*.md` directly in
    /// `.github/agents/` is an agent too (custom-agents: "VS Code detects any `.md` files in
    /// the `.github/agents` folder of your workspace as custom agents").
    pub fn of(path: &Path) -> Option<Kind> {
        let name = path.file_name()?.to_str()?;
        if let Some((_, k)) = SUFFIXES
            .iter()
            .find(|(s, _)| name.len() > s.len() && name.ends_with(s))
        {
            return Some(*k);
        }
        (name.len() > 3
            && name.ends_with(".md")
            && path.parent().is_some_and(|d| d.ends_with(".github/agents")))
        .then_some(Kind::Agent)
    }

    /// What such a file is called, with its article, for messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Agent => "a custom agent file",
            Kind::Instructions => "an instructions file",
            Kind::Prompt => "a prompt file",
        }
    }

    /// The frontmatter keys of this kind.
    pub fn keys(self) -> &'static [Key] {
        match self {
            Kind::Agent => AGENT_KEYS,
            Kind::Instructions => INSTRUCTIONS_KEYS,
            Kind::Prompt => PROMPT_KEYS,
        }
    }

    /// The key of this name in this kind's table.
    pub fn key(self, name: &str) -> Option<&'static Key> {
        self.keys().iter().find(|k| k.name == name)
    }
}

/// Who reads a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    VsCode,
    Copilot,
    Both,
}

impl Reader {
    pub fn text(self) -> &'static str {
        match self {
            Reader::VsCode => "VS Code",
            Reader::Copilot => "GitHub Copilot (cloud agent, CLI); not VS Code",
            Reader::Both => "VS Code and GitHub Copilot",
        }
    }
}

/// The value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A non-empty string.
    Text,
    Bool,
    /// A list of tool names; for agents also a comma-separated string (GitHub's reference).
    Tools,
    /// A model name, or a prioritized list of them.
    Model,
    /// A list of names, or one string (`agents: ['*']` or `'*'`).
    Names,
    /// `handoffs`: a list of maps of [`HANDOFF_KEYS`].
    Handoffs,
    /// A mapping (or, for `mcp-servers`, a list of server configurations).
    Map,
    /// `applyTo`: comma-separated globs.
    Globs,
    /// `target`: `vscode` or `github-copilot`.
    Target,
    /// `excludeAgent`: `code-review` or `coding-agent`, one or a list.
    ExcludeAgent,
}

/// One frontmatter key.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub reader: Reader,
    pub ty: Type,
    /// What it means, for hover.
    pub doc: &'static str,
    /// Where it is documented.
    pub source: &'static str,
}

const fn key(
    name: &'static str,
    reader: Reader,
    ty: Type,
    doc: &'static str,
    source: &'static str,
) -> Key {
    Key {
        name,
        reader,
        ty,
        doc,
        source,
    }
}

const VSC_AGENTS: &str = "code.visualstudio.com/docs/agent-customization/custom-agents";
const GH_AGENTS: &str = "docs.github.com/copilot/reference/custom-agents-configuration";
const VSC_INSTRUCTIONS: &str = "code.visualstudio.com/docs/agent-customization/custom-instructions";
const GH_INSTRUCTIONS: &str =
    "docs.github.com/copilot (custom instructions: path-specific instructions)";
const VSC_PROMPTS: &str = "code.visualstudio.com/docs/agent-customization/prompt-files";

use Reader::*;
use Type::*;

/// The keys of a custom agent file (`*.agent.md`).
#[rustfmt::skip]
pub const AGENT_KEYS: &[Key] = &[
    key("name", Both, Text, "The agent's name (the file's name when omitted).", VSC_AGENTS),
    key("description", Both, Text, "What the agent does: shown as the chat input's placeholder; GitHub Copilot requires it to pick the agent.", GH_AGENTS),
    key("argument-hint", VsCode, Text, "A hint shown in the chat input on how to use the agent.", VSC_AGENTS),
    key("tools", Both, Tools, "The tools and tool sets the agent may use (`<server>/*` for all of an MCP server's). A tool that is not available is ignored; omitted: all tools; `[]`: none.", VSC_AGENTS),
    key("agents", VsCode, Names, "The agents this one may run as subagents (`*` all, `[]` none); the `agent` tool must be in `tools`.", VSC_AGENTS),
    key("model", Both, Model, "The model to run with: a name, or a list tried in order until one is available (the model picker's when omitted).", VSC_AGENTS),
    key("user-invocable", Both, Bool, "`false` hides the agent from the agents dropdown: it runs only as a subagent or programmatically (default `true`).", VSC_AGENTS),
    key("disable-model-invocation", Both, Bool, "`true` keeps other agents from invoking this one as a subagent (default `false`).", VSC_AGENTS),
    key("infer", Both, Bool, "Deprecated: use `user-invocable` and `disable-model-invocation`. `false` hid the agent from both the picker and subagent use.", VSC_AGENTS),
    key("target", Both, Target, "Where the agent runs: `vscode` or `github-copilot` (both when omitted).", GH_AGENTS),
    key("mcp-servers", Copilot, Map, "MCP servers for the agent on GitHub Copilot's cloud agent (target `github-copilot`); not used in VS Code.", GH_AGENTS),
    key("metadata", Copilot, Map, "Name and value pairs (strings) annotating the agent on GitHub; not used in VS Code.", GH_AGENTS),
    key("handoffs", VsCode, Handoffs, "Suggested next steps: buttons after a response that switch to another agent with a prompt (`label`, `agent`, `prompt`, `send`, `model`).", VSC_AGENTS),
    key("hooks", VsCode, Map, "Hook commands that run only while this agent is active (Preview; `chat.useCustomAgentHooks`).", VSC_AGENTS),
];

/// The keys of one handoff of `handoffs`.
#[rustfmt::skip]
pub const HANDOFF_KEYS: &[Key] = &[
    key("label", VsCode, Text, "The text of the handoff button (required).", VSC_AGENTS),
    key("agent", VsCode, Text, "The agent to switch to (required).", VSC_AGENTS),
    key("prompt", VsCode, Text, "The prompt the target agent gets, pre-filled.", VSC_AGENTS),
    key("send", VsCode, Bool, "`true` submits the prompt at once (default `false`).", VSC_AGENTS),
    key("showContinueOn", VsCode, Bool, "A boolean VS Code's validator accepts on a handoff; its documentation does not describe it.", "VS Code's promptValidator.ts (validateHandoffs)"),
    key("model", VsCode, Text, "The model the handoff runs with, qualified: `GPT-5 (copilot)`.", VSC_AGENTS),
];

/// The keys of an instructions file (`*.instructions.md`).
pub const INSTRUCTIONS_KEYS: &[Key] = &[
    key("name", VsCode, Text, "The name shown in the UI (the file's name when omitted).", VSC_INSTRUCTIONS),
    key("description", VsCode, Text, "A short description, shown on hover in the Chat view; the agent also matches it against the task.", VSC_INSTRUCTIONS),
    key("applyTo", Both, Globs, "The files the instructions apply to automatically: a glob, or several separated by commas, relative to the workspace root (`**` for all). Omitted: applied only when attached by hand.", VSC_INSTRUCTIONS),
    key("excludeAgent", Copilot, ExcludeAgent, "Keeps the file from `code-review` (Copilot code review) or `coding-agent` (Copilot cloud agent).", GH_INSTRUCTIONS),
];

/// The keys of a prompt file (`*.prompt.md`).
pub const PROMPT_KEYS: &[Key] = &[
    key("name", VsCode, Text, "The name typed after `/` in chat (the file's name when omitted).", VSC_PROMPTS),
    key("description", VsCode, Text, "A short description of the prompt.", VSC_PROMPTS),
    key("argument-hint", VsCode, Text, "A hint shown in the chat input on how to use the prompt.", VSC_PROMPTS),
    key("agent", VsCode, Text, "The agent that runs the prompt: `ask`, `agent`, `plan` or a custom agent's name (the current one when omitted; `agent` when `tools` is given).", VSC_PROMPTS),
    key("mode", VsCode, Text, "Deprecated: the old name of `agent`.", VSC_PROMPTS),
    key("model", VsCode, Model, "The model to run the prompt with (the model picker's when omitted).", VSC_PROMPTS),
    key("tools", VsCode, Tools, "The tools and tool sets available to the prompt (`<server>/*` for all of an MCP server's).", VSC_PROMPTS),
];

/// Read a customization file: its optional frontmatter (S820 on a header that does not
/// parse) and its body.
pub fn parse(text: &str) -> Skill {
    parse_frontmatter(text, Code::S820, None)
}

/// Every diagnostic of a customization file at `path` (`None`-kind paths have none).
pub fn check(path: &Path, text: &str) -> Vec<Diagnostic> {
    let Some(kind) = Kind::of(path) else {
        return Vec::new();
    };
    let doc = parse(text);
    let mut out = doc.diagnostics.clone();
    let first_line = first_line(text, &doc);
    if kind == Kind::Prompt {
        // The command as run from the project's folder (where the skill goes).
        let root = project_root(path);
        let shown = path.strip_prefix(&root).unwrap_or(path);
        out.push(Diagnostic::new(
            Code::S824,
            first_line,
            format!(
                "VS Code is retiring prompt files in favour of skills: Copilot sessions do not load `*.prompt.md` (only Local sessions do); `kiwi convert {}` makes it a skill",
                shown.display()
            ),
        ));
    }
    if kind == Kind::Agent
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(CHATMODE_SUFFIX))
    {
        let mut d = Diagnostic::new(
            Code::S825,
            first_line,
            "chat modes are renamed custom agents: rename the file to `*.agent.md` (in `.github/agents/`)",
        );
        if let Some(to) = agent_path_of_chatmode(path) {
            d = d.fix(Fix {
                title: format!(
                    "Rename to {}",
                    to.file_name().and_then(|n| n.to_str()).unwrap_or("")
                ),
                edits: Vec::new(),
                rename_to: Some(to),
            });
        }
        out.push(d);
    }
    let Some(entries) = doc.frontmatter.as_ref().and_then(|f| f.as_map()) else {
        return out;
    };
    for e in entries {
        let Some(k) = kind.key(&e.key) else {
            out.push(Diagnostic::new(
                Code::S823,
                e.key_range,
                format!(
                    "`{}` is read by neither VS Code nor GitHub Copilot in {}: it is ignored{}",
                    e.key,
                    kind.noun(),
                    suggest(kind, &e.key)
                ),
            ));
            continue;
        };
        check_value(kind, k, &e.value, &mut out);
        if let Some(why) = ignored_by_target(kind, k, entries) {
            out.push(Diagnostic::new(Code::S823, e.key_range, why));
        }
        // GitHub reads a comma-separated string of tools; VS Code only a list
        // (`validateTools`: "must be an array"): with `target: vscode` the string is lost.
        if kind == Kind::Agent
            && k.name == "tools"
            && matches!(e.value.kind, ValueKind::Str(_))
            && target_of(entries) == Some("vscode")
        {
            s821(
                &mut out,
                e.value.range,
                "VS Code reads `tools` as a list only (`['read', 'search']`); a comma-separated string is GitHub Copilot's form, and this agent's target is `vscode`".to_string(),
            );
        }
        match (kind, k.name) {
            (Kind::Agent, "infer") => out.push(Diagnostic::new(
                Code::S825,
                e.key_range,
                "`infer` is deprecated: use `user-invocable` (shown in the agents dropdown) and `disable-model-invocation` (usable as a subagent)",
            )),
            (Kind::Prompt, "mode") => {
                let mut d = Diagnostic::new(
                    Code::S825,
                    e.key_range,
                    "`mode` is deprecated in prompt files: it is now `agent`",
                );
                if !entries.iter().any(|x| x.key == "agent") {
                    d = d.fix(Fix::replace("Rename `mode` to `agent`", e.key_range, "agent"));
                }
                out.push(d);
            }
            _ => {}
        }
    }
    out
}

/// An agent key the agent's `target` does not read: VS Code's keys with `target:
/// github-copilot`, GitHub Copilot's with `target: vscode` (VS Code's validator:
/// "not supported in custom GitHub Copilot agent files", "ignored when running locally in VS
/// Code").
fn ignored_by_target(kind: Kind, k: &Key, entries: &[crate::value::Entry]) -> Option<String> {
    if kind != Kind::Agent {
        return None;
    }
    let target = target_of(entries)?;
    let reader = match (target, k.reader) {
        ("github-copilot", Reader::VsCode) => "VS Code",
        ("vscode", Reader::Copilot) => "GitHub Copilot",
        _ => return None,
    };
    Some(format!(
        "`{}` is read by {reader} only: with `target: {target}` it is ignored",
        k.name
    ))
}

/// An agent's `target`, trimmed.
fn target_of(entries: &[crate::value::Entry]) -> Option<&str> {
    entries
        .iter()
        .find(|e| e.key == "target")
        .and_then(|e| e.value.as_str())
        .map(str::trim)
}

/// Where a diagnostic about the whole file goes: the frontmatter's opening `---`, else the
/// file's first line.
fn first_line(text: &str, doc: &Skill) -> TextRange {
    if let Some(r) = doc.frontmatter_range {
        return TextRange::new(r.start, r.start + 3.min(r.len()));
    }
    let end = text.find('\n').unwrap_or(text.len());
    TextRange::new(0, text[..end].trim_end_matches('\r').len())
}

/// The agent file a `*.chatmode.md` becomes: `<name>.agent.md` in `.github/agents/` when it
/// lies in `.github/chatmodes/`, else beside it.
pub fn agent_path_of_chatmode(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(CHATMODE_SUFFIX)?;
    let dir = path.parent()?;
    let dir = if dir.ends_with(".github/chatmodes") {
        dir.parent()?.join("agents")
    } else {
        dir.to_path_buf()
    };
    Some(dir.join(format!("{stem}.agent.md")))
}

/// "; did you mean `x`?", or where else the key is read, or nothing.
fn suggest(kind: Kind, k: &str) -> String {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', ' '], "-");
    let kn = norm(k);
    if let Some(x) = kind
        .keys()
        .iter()
        .find(|x| norm(x.name) == kn || strsim::osa_distance(&norm(x.name), &kn) <= 2)
    {
        return format!("; did you mean `{}`?", x.name);
    }
    for other in [Kind::Agent, Kind::Instructions, Kind::Prompt] {
        if other != kind && other.key(k).is_some() {
            return format!(" (it is a key of {})", other.noun());
        }
    }
    String::new()
}

fn s821(out: &mut Vec<Diagnostic>, range: TextRange, message: String) {
    out.push(Diagnostic::new(Code::S821, range, message));
}

/// A non-empty string, else why not.
fn text_problem(v: &Value) -> Option<String> {
    match &v.kind {
        ValueKind::Str(s) if !s.value.trim().is_empty() => None,
        ValueKind::Str(_) | ValueKind::Null => Some("is empty".to_string()),
        _ => Some(format!("is a {}, not a string", v.type_name())),
    }
}

/// The strings of a list (each not a string: S821).
fn string_items<'a>(name: &str, items: &'a [Value], out: &mut Vec<Diagnostic>) -> Vec<&'a Value> {
    let mut v = Vec::new();
    for i in items {
        match &i.kind {
            ValueKind::Str(_) => v.push(i),
            _ => s821(
                out,
                i.range,
                format!(
                    "each entry of `{name}` is a string, not a {}",
                    i.type_name()
                ),
            ),
        }
    }
    v
}

fn check_value(kind: Kind, k: &Key, v: &Value, out: &mut Vec<Diagnostic>) {
    let name = k.name;
    match k.ty {
        Text => {
            if let Some(why) = text_problem(v) {
                s821(out, v.range, format!("`{name}` {why}: VS Code ignores it"));
            }
        }
        Bool => {
            if !matches!(v.kind, ValueKind::Bool(_)) {
                s821(
                    out,
                    v.range,
                    format!("`{name}` is `true` or `false`, not a {}", v.type_name()),
                );
            }
        }
        Tools => match &v.kind {
            ValueKind::List(items) => {
                string_items(name, items, out);
            }
            // GitHub's reference: "a comma separated string and yaml string array".
            ValueKind::Str(_) if kind == Kind::Agent => {}
            _ => s821(
                out,
                v.range,
                format!(
                    "`tools` is a list of tool names, such as `['search', 'web/fetch']`, not a {}: VS Code ignores it",
                    v.type_name()
                ),
            ),
        },
        Model => match &v.kind {
            ValueKind::List(items) if !items.is_empty() => {
                for i in string_items(name, items, out) {
                    if let Some(why) = text_problem(i) {
                        s821(out, i.range, format!("a model of `model` {why}"));
                    }
                }
            }
            _ => {
                if let Some(why) = text_problem(v) {
                    s821(
                        out,
                        v.range,
                        format!("`model` is a model name or a list of them; this one {why}"),
                    );
                }
            }
        },
        Names => match &v.kind {
            ValueKind::List(items) => {
                string_items(name, items, out);
            }
            ValueKind::Str(_) => {}
            _ => s821(
                out,
                v.range,
                format!(
                    "`{name}` is a list of agent names (`*` for all), not a {}",
                    v.type_name()
                ),
            ),
        },
        Map => match &v.kind {
            ValueKind::Map(entries) if name == "metadata" => {
                for e in entries {
                    if matches!(e.value.kind, ValueKind::List(_) | ValueKind::Map(_)) {
                        s821(
                            out,
                            e.value.range,
                            format!(
                                "`metadata` holds name and value pairs of strings; `{}` is a {}",
                                e.key,
                                e.value.type_name()
                            ),
                        );
                    }
                }
            }
            ValueKind::Map(_) => {}
            ValueKind::List(_) if name == "mcp-servers" => {}
            _ => s821(
                out,
                v.range,
                format!("`{name}` is a mapping, not a {}", v.type_name()),
            ),
        },
        Handoffs => check_handoffs(v, out),
        Globs => match &v.kind {
            ValueKind::Str(s) => check_globs(v, s, out),
            _ => s821(
                out,
                v.range,
                format!(
                    "`applyTo` is a string of comma-separated globs, such as `'**/*.ts,**/*.tsx'`, not a {}: the instructions apply to no file",
                    v.type_name()
                ),
            ),
        },
        Target => match v.as_str().map(str::trim) {
            Some("vscode" | "github-copilot") => {}
            Some(t) => s821(
                out,
                v.range,
                format!("`target` is `vscode` or `github-copilot`, not `{t}`"),
            ),
            None => s821(
                out,
                v.range,
                format!(
                    "`target` is `vscode` or `github-copilot`, not a {}",
                    v.type_name()
                ),
            ),
        },
        ExcludeAgent => {
            let one = |i: &Value, out: &mut Vec<Diagnostic>| match i.as_str().map(str::trim) {
                Some("code-review" | "coding-agent") => {}
                Some(x) => s821(
                    out,
                    i.range,
                    format!("`excludeAgent` names `code-review` or `coding-agent`, not `{x}`"),
                ),
                None => s821(
                    out,
                    i.range,
                    format!(
                        "`excludeAgent` names `code-review` or `coding-agent`, not a {}",
                        i.type_name()
                    ),
                ),
            };
            match &v.kind {
                ValueKind::List(items) => items.iter().for_each(|i| one(i, out)),
                _ => one(v, out),
            }
        }
    }
}

/// `handoffs`: a list of maps, each with a non-empty `label` and `agent` (VS Code's
/// `validateHandoffs`), the other properties typed as the table says.
fn check_handoffs(v: &Value, out: &mut Vec<Diagnostic>) {
    let Some(items) = v.as_list() else {
        s821(
            out,
            v.range,
            format!(
                "`handoffs` is a list of handoffs (`- label: ...`, `agent: ...`, `prompt: ...`), not a {}",
                v.type_name()
            ),
        );
        return;
    };
    for item in items {
        let Some(entries) = item.as_map() else {
            s821(
                out,
                item.range,
                format!(
                    "a handoff is a mapping with `label`, `agent` and `prompt`, not a {}",
                    item.type_name()
                ),
            );
            continue;
        };
        for e in entries {
            match HANDOFF_KEYS.iter().find(|k| k.name == e.key) {
                Some(k) => check_value(Kind::Agent, k, &e.value, out),
                None => out.push(Diagnostic::new(
                    Code::S823,
                    e.key_range,
                    format!(
                        "`{}` is not a property of a handoff (`label`, `agent`, `prompt`, `send`, `showContinueOn`, `model`): it is ignored",
                        e.key
                    ),
                )),
            }
        }
        let missing: Vec<&str> = ["label", "agent"]
            .into_iter()
            .filter(|k| !entries.iter().any(|e| e.key == *k))
            .collect();
        if !missing.is_empty() {
            s821(
                out,
                item.range,
                format!(
                    "a handoff needs {}: VS Code shows no button for it",
                    missing
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            );
        }
    }
}

/// Split `applyTo` at the commas outside braces and brackets (VS Code's `splitGlobAware`):
/// each glob with its byte offset in `s`, untrimmed.
pub fn split_globs(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut braces, mut brackets, mut start) = (0usize, 0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '{' => braces += 1,
            '}' => braces = braces.saturating_sub(1),
            '[' => brackets += 1,
            ']' => brackets = brackets.saturating_sub(1),
            ',' if braces == 0 && brackets == 0 => {
                out.push((start, &s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((start, &s[start..]));
    out
}

/// Each glob of `applyTo` must parse (globset, as kiwi reads globs); S822 with the parser's
/// error on the glob (its own range when the string is written verbatim).
fn check_globs(v: &Value, s: &crate::value::Str, out: &mut Vec<Diagnostic>) {
    let pieces = split_globs(&s.value);
    for (at, piece) in &pieces {
        let glob = piece.trim();
        let range = if s.verbatim {
            let lead = piece.len() - piece.trim_start().len();
            let start = s.content.start + at + lead;
            TextRange::new(start, start + glob.len())
        } else {
            v.range
        };
        if glob.is_empty() {
            out.push(Diagnostic::new(
                Code::S822,
                v.range,
                if pieces.len() > 1 {
                    "an empty glob in `applyTo` (VS Code: \"must be a valid glob pattern\"): remove the extra comma"
                } else {
                    "`applyTo` is empty (VS Code: \"must be a valid glob pattern\"): the instructions apply to no file; `**` applies them to all"
                },
            ));
            continue;
        }
        if let Err(e) = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
        {
            out.push(Diagnostic::new(
                Code::S822,
                range,
                format!(
                    "`{glob}` is not a glob ({}): the instructions apply to no file it was meant for",
                    e.kind()
                ),
            ));
        }
    }
}

/// Hover on a frontmatter key (or a handoff's property): what it means, who reads it, where
/// it is documented.
pub fn hover(path: &Path, text: &str, offset: usize) -> Option<HoverInfo> {
    let kind = Kind::of(path)?;
    let doc = parse(text);
    let entries = doc.frontmatter.as_ref()?.as_map()?;
    for e in entries {
        if e.key == "handoffs" && kind == Kind::Agent {
            for item in e.value.as_list().unwrap_or_default() {
                for h in item.as_map().unwrap_or_default() {
                    if h.key_range.touches(offset) {
                        return Some(HoverInfo {
                            range: h.key_range,
                            markdown: key_markdown(
                                &h.key,
                                HANDOFF_KEYS.iter().find(|k| k.name == h.key),
                                "a handoff",
                            ),
                        });
                    }
                }
            }
        }
        if e.key_range.touches(offset) {
            return Some(HoverInfo {
                range: e.key_range,
                markdown: key_markdown(&e.key, kind.key(&e.key), kind.noun()),
            });
        }
    }
    None
}

fn key_markdown(name: &str, k: Option<&Key>, noun: &str) -> String {
    match k {
        Some(k) => format!(
            "**`{name}`** — read by {} in {noun}\n\n{}\n\nDocumented in {}",
            k.reader.text(),
            k.doc,
            k.source
        ),
        None => format!(
            "**`{name}`** — neither VS Code nor GitHub Copilot reads it in {noun}: it is ignored"
        ),
    }
}

/// The project a customization file belongs to: the folder holding the nearest `.github`
/// above it, else the nearest holding `.ai/` (a kiwi project), else the file's folder.
pub fn project_root(path: &Path) -> PathBuf {
    github_project(path)
        .or_else(|| crate::workspace_set::WorkspaceSet::project_root(path))
        .unwrap_or_else(|| path.parent().unwrap_or(Path::new("/")).to_path_buf())
}

/// The folder holding the nearest `.github` folder above `path` (give it absolute).
pub fn github_project(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|a| a.file_name().is_some_and(|n| n == ".github"))?
        .parent()
        .map(Path::to_path_buf)
}

/// Where `kiwi convert` puts a converted prompt file's skill, below its project.
pub const SKILLS_FOLDER: &str = ".agents/skills";

/// A prompt file as the skill `kiwi convert` makes of it: the skill's folder (in the
/// project's `.agents/skills/`) and its files. `None` when that folder exists already
/// (`kiwi convert --force` replaces it; a quick fix does not), or when it lies through a link.
pub fn prompt_as_skill(
    path: &Path,
    text: &str,
) -> Option<(PathBuf, crate::skill::convert::Converted)> {
    let name = path.file_name()?.to_str()?;
    if Kind::of(path)? != Kind::Prompt {
        return None;
    }
    let converted = crate::skill::convert::from_prompt(name, text, None);
    let root = project_root(path);
    let dir = root.join(SKILLS_FOLDER).join(&converted.name);
    // Never through a link (`.agents` pointing out of the project): the editor would create
    // the files there; `kiwi convert` refuses the same (`fs::check_unlinked`).
    if dir.symlink_metadata().is_ok() || crate::fs::check_unlinked(&root, &dir).is_err() {
        return None;
    }
    Some((dir, converted))
}

/// The customization files of a project, in the folders VS Code reads them from
/// ([`FOLDERS`], recursively, links not followed), sorted. Cheap: only those folders.
pub fn project_files(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = FOLDERS
        .iter()
        .flat_map(|f| files_below(&root.join(f)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What `kiwi check PATH` reads of these files for a path it is given: the file itself when
/// it is one; for a folder inside one of [`FOLDERS`], the files below it; for any other
/// folder, its own project's ([`project_files`]). Files below `.ai/` are kiwi's items, not
/// these.
pub fn files_for(path: &Path) -> Vec<PathBuf> {
    if path.components().any(|c| c.as_os_str() == ".ai") {
        return Vec::new();
    }
    if path.is_file() {
        return if Kind::of(path).is_some() {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    if path
        .ancestors()
        .any(|a| FOLDERS.iter().any(|f| a.ends_with(f)))
    {
        let mut v = files_below(path);
        v.sort();
        return v;
    }
    project_files(path)
}

/// The files of a known kind at or below `dir` (at most 6 folders deep, links not followed).
fn files_below(dir: &Path) -> Vec<PathBuf> {
    if !dir.is_dir() {
        return Vec::new();
    }
    ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(Some(6))
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && Kind::of(e.path()).is_some())
        .map(|e| e.path().to_path_buf())
        .collect()
}

#[cfg(test)]
mod tests;
