//! The known elements of a directive as data: where each may appear, its attributes and what
//! its content is. D105 checks against it; the LSP completes from it.
//!
//! Besides the spec's shape (01-items-and-formats.md), the table accepts what the corpus's
//! real files use: metadata `<name>`/`<version>` and `<steps>` (rye's generated files),
//! `<limits>` attributes or children, `<model>`/`<model_class>`, `<hooks>`, `<relationships>`,
//! rye's `<context>` and `<cost>`, kiwi-mcp's `<context_budget>`, `<deviation_rules>`,
//! `<parallel_capable>`, `<subagent_strategy>` and `<tool_call><mcp><tool><params>`, and
//! `<success_criteria>`, rye's `<sign>` and `<fetch>` step calls (read as `validate`, and as
//! `load` or `search`). Still reported (D105): `<tool>`/`<parameters>` directly in a step (an
//! auto-generated shape), and anything else not listed here.

use super::xml::OPAQUE;
use super::Element;
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix, TextEdit};

/// What an element holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Child elements from this table.
    Elements,
    /// Text (child elements other than the opaque ones are unexpected).
    Text,
    /// Text and child elements from this table.
    Mixed,
    /// Free-form children, never checked (e.g. `<params>`, hook `<inputs>`, `<context>`).
    Any,
    /// Opaque text, never parsed nor checked (`template`, `example`, `raw`).
    Opaque,
    /// The permission spellings, checked by the permission rules (P201).
    Permissions,
}

/// One known element.
#[derive(Debug)]
pub struct ElementSpec {
    pub name: &'static str,
    /// Where it may appear; empty for the root, `["*"]` for anywhere.
    pub parents: &'static [&'static str],
    pub attrs: &'static [&'static str],
    pub content: Content,
    pub doc: &'static str,
}

const CALL_PARENTS: &[&str] = &["step"];
const LIMITS: &[&str] = &[
    "turns",
    "tokens",
    "spend",
    "spawns",
    "depth",
    "duration_seconds",
];
/// `provider` is rye's (the model provider: `anthropic`, ...).
const MODEL_ATTRS: &[&str] = &[
    "tier",
    "fallback",
    "fallback_id",
    "parallel",
    "id",
    "provider",
];
const RELATION_PARENTS: &[&str] = &["relationships", "context"];

macro_rules! el {
    ($name:literal, [$($p:literal),*], [$($a:literal),*], $content:ident, $doc:literal) => {
        ElementSpec { name: $name, parents: &[$($p),*], attrs: &[$($a),*], content: Content::$content, doc: $doc }
    };
    ($name:literal, $parents:expr, [$($a:literal),*], $content:ident, $doc:literal) => {
        ElementSpec { name: $name, parents: $parents, attrs: &[$($a),*], content: Content::$content, doc: $doc }
    };
    ($name:literal, $parents:expr, $attrs:expr, $content:ident, $doc:literal) => {
        ElementSpec { name: $name, parents: $parents, attrs: $attrs, content: Content::$content, doc: $doc }
    };
}

/// Every known element of a directive, by parent.
pub static SCHEMA: &[ElementSpec] = &[
    el!("directive", [], ["name", "version", "extends"], Elements, "The directive: `name` (the file stem), `version` (semver) and, in rye, `extends` (the directive it builds on)."),
    el!("metadata", ["directive"], [], Elements, "What the directive is, what it needs and what it may do."),
    el!("name", ["metadata"], [], Text, "The directive's name (older files; prefer the `name` attribute of `<directive>`)."),
    el!("version", ["metadata"], [], Text, "The directive's version (older files; prefer the `version` attribute of `<directive>`)."),
    el!("description", ["metadata", "step", "input"], [], Text, "What it does, in one sentence."),
    el!("category", ["metadata"], [], Text, "A category (usually the folder of the directive)."),
    el!("author", ["metadata"], [], Text, "Who wrote it."),
    el!("model", &["metadata"], MODEL_ATTRS, Text, "The model tier to run it with (`tier`, `fallback`, `parallel`, `id`)."),
    el!("model_class", &["metadata"], MODEL_ATTRS, Text, "The model tier to run it with (older spelling of `<model>`)."),
    el!("limits", &["metadata"], LIMITS, Elements, "Limits of a run: `turns`, `tokens`, `spend`, `spawns`, `depth`, `duration_seconds` (attributes or children)."),
    el!("turns", ["limits"], [], Text, "Maximum number of turns."),
    el!("tokens", ["limits"], [], Text, "Maximum number of tokens."),
    el!("spend", ["limits", "cost"], ["currency"], Text, "Maximum spend."),
    el!("spawns", ["limits"], [], Text, "Maximum number of spawned threads."),
    el!("depth", ["limits"], [], Text, "Maximum spawn depth."),
    el!("duration_seconds", ["limits"], [], Text, "Maximum duration in seconds."),
    el!("permissions", ["metadata"], [], Permissions, "What an agent following the directive may do (04-permissions.md)."),
    el!("hooks", ["metadata"], [], Elements, "Actions run by the harness on conditions."),
    el!("hook", ["hooks"], [], Elements, "One hook: `<when>` and what to `<execute>`."),
    el!("when", ["hook"], [], Text, "The condition of a hook."),
    el!("execute", ["hook"], ["item_type", "item_id"], Text, "What a hook runs: `item_type`, and the item id as text."),
    el!("inputs", ["hook"], [], Any, "The inputs a hook passes."),
    el!("relationships", ["metadata"], [], Elements, "Related items: `requires`, `suggests`, `extends`, `related`."),
    el!("requires", RELATION_PARENTS, ["item_type"], Text, "An item this directive requires."),
    el!("suggests", RELATION_PARENTS, ["item_type"], Text, "An item this directive suggests."),
    el!("extends", RELATION_PARENTS, ["item_type"], Text, "An item this directive extends."),
    el!("related", RELATION_PARENTS, ["item_type"], Text, "A related item."),
    el!("context", ["metadata", "directive"], [], Any, "Free-form context (related files, dependencies, relationships)."),
    el!("cost", ["metadata"], [], Elements, "Budget (rye): `<context>`, `<duration>`, `<spend>`."),
    el!("context", ["cost"], ["estimated_usage", "turns", "spawn_threshold"], Text, "Context budget (rye): estimated usage, turns, spawn threshold; the token budget as text."),
    el!("duration", ["cost"], [], Text, "Maximum duration in seconds (rye)."),
    el!("context_budget", ["metadata"], ["estimated_usage", "step_count", "spawn_threshold"], Text, "Context budget (kiwi-mcp)."),
    el!("deviation_rules", ["metadata"], ["auto_fix", "ask_first", "escalate"], Text, "How to handle deviations (kiwi-mcp)."),
    el!("parallel_capable", ["metadata"], [], Text, "Whether steps may run in parallel (kiwi-mcp)."),
    el!("subagent_strategy", ["metadata"], [], Text, "How to use subagents (kiwi-mcp)."),
    el!("inputs", ["directive"], [], Elements, "The directive's inputs."),
    el!("input", ["inputs"], ["name", "type", "required", "default", "enum"], Mixed, "An input: `name`, `type` (string integer number boolean array object path), `required`, `default`, `enum` (values separated by `|`); the text describes it."),
    el!("process", ["directive"], [], Elements, "The steps."),
    el!("steps", ["directive"], [], Elements, "The steps (older spelling of `<process>`)."),
    el!("step", ["process", "steps"], ["name"], Mixed, "A step: `name` (unique), `description`, `action`, and calls."),
    el!("action", ["step"], [], Text, "What to do, in words (often CDATA)."),
    el!("execute", CALL_PARENTS, ["item_type", "item_id"], Elements, "Run an item: `item_type`, `item_id`, `<param name value>` children."),
    el!("search", CALL_PARENTS, ["item_type", "query", "source", "limit"], Elements, "Search items: `item_type`, `query`."),
    el!("load", CALL_PARENTS, ["item_type", "item_id", "source"], Elements, "Load an item: `item_type`, `item_id`."),
    el!("sign", CALL_PARENTS, ["item_type", "item_id"], Elements, "Sign an item (rye's spelling of kiwi's `validate` action): `item_type`, `item_id`."),
    el!("fetch", CALL_PARENTS, ["item_type", "item_id", "query", "source", "limit", "destination"], Elements, "Fetch an item (rye's spelling): a `load` by `item_id`, a `search` by `query`."),
    el!("tool_call", CALL_PARENTS, ["item_type", "item_id", "query"], Elements, "A call (older spelling)."),
    el!("param", ["execute", "search", "load", "tool_call", "sign", "fetch"], ["name", "value"], Text, "A parameter of a call: `name`, `value` (or the value as text)."),
    el!("mcp", ["tool_call"], [], Text, "The MCP server of a call (kiwi-mcp)."),
    el!("tool", ["tool_call"], [], Text, "The meta-tool a call uses: `search`, `load`, `run`, ... (kiwi-mcp)."),
    el!("params", ["tool_call"], [], Any, "The parameters of a call, one element each (kiwi-mcp)."),
    el!("outputs", ["directive"], [], Elements, "What the directive produces: `success`, `failure`, `output`."),
    el!("success", ["outputs"], [], Text, "What success looks like."),
    el!("failure", ["outputs"], [], Text, "What failure looks like."),
    el!("output", ["outputs"], ["name", "type"], Text, "A named output."),
    el!("success_criteria", ["directive"], [], Elements, "Conditions of success."),
    el!("criterion", ["success_criteria"], [], Text, "One condition of success."),
    el!("template", ["*"], [], Opaque, "Opaque text (never checked)."),
    el!("example", ["*"], [], Opaque, "Opaque text (never checked)."),
    el!("raw", ["*"], [], Opaque, "Opaque text (never checked)."),
];

fn by_name(name: &str) -> &'static [&'static ElementSpec] {
    static INDEX: std::sync::OnceLock<
        std::collections::HashMap<&'static str, Vec<&'static ElementSpec>>,
    > = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m: std::collections::HashMap<&'static str, Vec<&'static ElementSpec>> =
            std::collections::HashMap::new();
        for s in SCHEMA {
            m.entry(s.name).or_default().push(s);
        }
        m
    });
    index.get(name).map(Vec::as_slice).unwrap_or(&[])
}

/// The spec of `name` inside `parent` (`None` for the root).
pub fn spec(name: &str, parent: Option<&str>) -> Option<&'static ElementSpec> {
    by_name(name).iter().copied().find(|s| match parent {
        None => s.parents.is_empty(),
        Some(p) => s.parents.iter().any(|x| *x == p || *x == "*"),
    })
}

/// Any spec with this name, wherever it appears.
pub fn spec_any(name: &str) -> Option<&'static ElementSpec> {
    by_name(name).first().copied()
}

/// The names allowed inside `parent`.
pub fn children_of(parent: &str) -> impl Iterator<Item = &'static str> + '_ {
    SCHEMA
        .iter()
        .filter(move |s| s.parents.contains(&parent))
        .map(|s| s.name)
}

/// A fix that renames an element (start and end tag).
pub(crate) fn rename_element(el: &Element, to: &str) -> Fix {
    let mut edits = vec![TextEdit {
        range: el.name_range,
        new_text: to.to_string(),
    }];
    if let Some(r) = el.end_name_range {
        edits.push(TextEdit {
            range: r,
            new_text: to.to_string(),
        });
    }
    Fix {
        title: format!("Change to `<{to}>`"),
        edits,
        rename_to: None,
    }
}

/// D105 over the whole tree (explicit stack; the tree is at most `MAX_DEPTH` deep anyway).
pub(crate) fn check(text: &str, root: &Element, diags: &mut Vec<Diagnostic>) {
    let Some(root_spec) = spec(&root.name, None) else {
        return;
    };
    check_attrs(root, root_spec, diags);
    let mut stack: Vec<(&Element, &'static ElementSpec)> = vec![(root, root_spec)];
    while let Some((el, el_spec)) = stack.pop() {
        if matches!(
            el_spec.content,
            Content::Any | Content::Opaque | Content::Permissions
        ) {
            continue;
        }
        for child in &el.children {
            if OPAQUE.contains(&child.name.as_str()) {
                continue;
            }
            if el_spec.content == Content::Text {
                diags.push(Diagnostic::new(
                    Code::D105,
                    child.name_range,
                    format!("`<{}>` holds text: the element `<{}>` is not expected in it (escape the `<` as `&lt;` if it is text)", el.name, child.name),
                ));
                continue;
            }
            match spec(&child.name, Some(&el.name)) {
                Some(s) => {
                    check_attrs(child, s, diags);
                    stack.push((child, s));
                }
                None => {
                    if el.name == "directive" && child.name == "permissions" {
                        diags.push(misplaced_permissions(text, root, child));
                        continue;
                    }
                    diags.push(unknown_element(child, &el.name));
                }
            }
        }
    }
}

fn unknown_element(child: &Element, parent: &str) -> Diagnostic {
    let allowed: Vec<&str> = children_of(parent).collect();
    let suggestion = closest(&child.name, allowed.iter().copied());
    let msg = if let Some(elsewhere) = spec_any(&child.name) {
        let places = if elsewhere.parents.is_empty() {
            "the root".to_string()
        } else {
            elsewhere
                .parents
                .iter()
                .map(|p| format!("`<{p}>`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "`<{}>` is not expected inside `<{parent}>` (it belongs in {places})",
            child.name
        )
    } else {
        format!(
            "unknown element `<{}>` in `<{parent}>`{}",
            child.name,
            did_you_mean(suggestion.map(|s| format!("<{s}>")).as_deref())
        )
    };
    let mut d = Diagnostic::new(Code::D105, child.name_range, msg);
    // Renaming a known element to another is a change of meaning, not a typo fix.
    if let (Some(s), None) = (suggestion, spec_any(&child.name)) {
        d = d.fix(rename_element(child, s));
    }
    d
}

fn check_attrs(el: &Element, s: &ElementSpec, diags: &mut Vec<Diagnostic>) {
    for a in &el.attrs {
        if s.attrs.contains(&a.name.as_str())
            || a.name.starts_with("xmlns")
            || a.name.starts_with("xml:")
        {
            continue;
        }
        let suggestion = closest(&a.name, s.attrs.iter().copied());
        let mut d = Diagnostic::new(
            Code::D105,
            a.name_range,
            format!(
                "unknown attribute `{}` on `<{}>`{}",
                a.name,
                el.name,
                did_you_mean(suggestion)
            ),
        );
        if let Some(sug) = suggestion {
            if el.attr(sug).is_none() {
                d = d.fix(Fix::replace(
                    format!("Change to `{sug}`"),
                    a.name_range,
                    sug,
                ));
            }
        }
        diags.push(d);
    }
}

/// `<permissions>` directly in `<directive>` (as in some rye tests): rye ignores it, and so
/// does the permission model (coverage is computed without it); a fix moves it into
/// `<metadata>`.
fn misplaced_permissions(text: &str, root: &Element, perms: &Element) -> Diagnostic {
    let mut d = Diagnostic::new(
        Code::D105,
        perms.name_range,
        "`<permissions>` belongs inside `<metadata>`: here rye ignores it (its agent gets none of these capabilities), so kiwi does too",
    );
    if let Some(meta) = root.child("metadata") {
        if meta.child("permissions").is_none() {
            if let (Some(content), true) = (meta.content, meta.closed) {
                let del = super::checks::whole_lines(text, perms.range);
                let moved = &text[perms.range.start..perms.range.end];
                let indent = super::checks::child_indent(text, meta);
                let moved = reindent(
                    moved,
                    &super::checks::line_indent(text, perms.range.start),
                    &indent,
                );
                let at = super::checks::line_start(text, content.end);
                let before_close = &text[at..content.end];
                let (at, prefix) = if before_close.trim().is_empty() {
                    (at, String::new())
                } else {
                    (content.end, "\n".to_string())
                };
                d = d.fix(Fix {
                    title: "Move `<permissions>` into `<metadata>`".into(),
                    edits: vec![
                        TextEdit {
                            range: TextRange::empty(at),
                            new_text: format!("{prefix}{indent}{moved}\n"),
                        },
                        TextEdit {
                            range: del,
                            new_text: String::new(),
                        },
                    ],
                    rename_to: None,
                });
            }
        }
    }
    d
}

use crate::text::TextRange;

/// Re-indent a multi-line block from one base indentation to another.
fn reindent(block: &str, from: &str, to: &str) -> String {
    let mut out = String::new();
    for (i, line) in block.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(to);
            out.push_str(line.strip_prefix(from).unwrap_or(line.trim_start()));
        } else {
            out.push_str(line);
        }
    }
    out
}
