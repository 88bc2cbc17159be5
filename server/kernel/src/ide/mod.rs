//! Editor features computed in kernel terms: byte ranges in an item's text and plain data.
//! No protocol types here; the LSP face translates positions, URIs and shapes.
//!
//! Every function takes the workspace, the item (whose text is the editor's current text)
//! and, where it applies, a byte offset in that text. None of them panics on any input.

mod complete;
mod format;
mod refs;
mod syntax;
#[cfg(test)]
mod tests;
pub mod values;
mod workspace_symbols;

pub use complete::{completions, signature_help, CompletionEntry, CompletionKind, SignatureInfo};
pub use format::format;
pub use refs::{
    occurrences, prepare_rename, references, rename, rename_file, target_at, Occurrence, RenamePlan,
};
pub use syntax::{
    document_links, folding_ranges, semantic_tokens, DocLink, Fold, FoldKind, SemanticToken,
    TokenKind,
};
pub use workspace_symbols::{workspace_symbols, SymbolIndex, WorkspaceSymbol};

use crate::chain;
use crate::check::build_env;
use crate::directive::{Capability, Directive, Need, PlaceholderKind, Resource};
use crate::env::{self, Origin, Outcome, Resolution, ResolveContext};
use crate::ids::{ItemType, Space};
use crate::text::TextRange;
use crate::tool::{Field, FIELDS};
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Lookup, Workspace};
use std::path::PathBuf;
use std::sync::Arc;

/// What hover shows: the range it is about, and markdown.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HoverInfo {
    pub range: TextRange,
    pub markdown: String,
}

/// A place in a file: a definition target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    pub path: PathBuf,
    /// Byte range in the target file (empty at 0 for "the file").
    pub range: TextRange,
    /// The target's text, when it is a builtin item (no file on disk).
    #[serde(skip)]
    pub builtin_text: Option<Arc<str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    Directive,
    Metadata,
    Inputs,
    Input,
    Process,
    Step,
    Permissions,
    Permission,
    Field,
    Key,
    Heading,
}

/// A document symbol, with its children.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Symbol {
    pub name: String,
    pub detail: Option<String>,
    pub kind: SymbolKind,
    pub range: TextRange,
    pub selection: TextRange,
    pub children: Vec<Symbol>,
}

/// An inlay hint: a label shown at an offset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hint {
    pub offset: usize,
    pub label: String,
    pub tooltip: Option<String>,
}

/// A code lens: a title over a range that runs a command with arguments.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Lens {
    pub range: TextRange,
    pub title: String,
    pub command: String,
    pub args: Vec<serde_json::Value>,
}

/// The commands the lenses use (the face executes them).
pub const CMD_RUN_TOOL: &str = "kiwi.runTool";
pub const CMD_SHOW_ENV: &str = "kiwi.showEnvironment";
pub const CMD_VALIDATE: &str = "kiwi.validate";
pub const CMD_INIT: &str = "kiwi.init";

// ---------------------------------------------------------------------------------------
// shared helpers

fn space_name(s: Space) -> String {
    match s {
        Space::Extra(e) => format!("{} space (extra, read-only)", e.name),
        _ => s.as_str().to_string(),
    }
}

fn shown_path(item: &Item) -> String {
    item.path.display().to_string()
}

/// The resolution of the interpreter that `item` itself declares (in the context of its chain).
pub fn own_resolution(ws: &Workspace, item: &Arc<Item>) -> Option<Resolution> {
    let ec = item.tool()?.value(Field::EnvConfig)?;
    ec.get("interpreter")?;
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    if !links.is_empty() {
        let built = build_env(ws, &links);
        let own = links.len() - 1;
        if let Some((_, r)) = built.resolutions.iter().find(|(l, _)| *l == own) {
            return Some(r.clone());
        }
    }
    let ctx = ResolveContext {
        project: ws.project.as_deref(),
        user: &ws.user,
        home: ws.host.home.as_deref(),
        vars: &ws.host.vars,
        shell: Some(&ws.host.vars),
    };
    env::resolve(ec, &ctx)
}

fn resolution_markdown(r: &Resolution) -> String {
    let mut md = String::new();
    match (&r.outcome, &r.value) {
        (Outcome::Found { .. }, Some(v)) => md.push_str(&format!(
            "**`{}`** = `{v}`  \n_{}_: found\n\n",
            r.var, r.resolver
        )),
        (Outcome::Fallback, Some(v)) => md.push_str(&format!(
            "**`{}`** = `{v}`  \n_{}_: nothing found, **the fallback** is used\n\n",
            r.var, r.resolver
        )),
        _ => md.push_str(&format!(
            "**`{}`** is not set  \n_{}_: nothing found and no fallback\n\n",
            r.var, r.resolver
        )),
    }
    let winner = match r.outcome {
        Outcome::Found { index } => Some(index),
        _ => None,
    };
    for (i, c) in r.trail.iter().enumerate() {
        let state = if c.found { "found" } else { "not found" };
        let win = if winner == Some(i) {
            " ← **winner**"
        } else {
            ""
        };
        let note = c
            .note
            .as_deref()
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        md.push_str(&format!(
            "{}. {}: `{}` ({state}{note}){win}\n",
            i + 1,
            c.location,
            c.path.display()
        ));
    }
    if matches!(r.outcome, Outcome::Fallback) {
        md.push_str("\nNo search location had it: the fallback was used.\n");
    }
    md
}

fn chain_markdown(ws: &Workspace, tool: &Arc<Item>, skip_first: bool) -> String {
    let (links, err) = match chain::resolve(ws, tool) {
        Ok(c) => (c.links, None),
        Err(e) => (e.links.clone(), Some(e.message())),
    };
    let mut md = format!(
        "**Chain** of `{}`: {}\n\n",
        tool.id,
        links
            .iter()
            .map(|l| format!("`{}`", l.id))
            .collect::<Vec<_>>()
            .join(" → ")
    );
    let built = build_env(ws, &links);
    let n = links.len();
    for (i, l) in links.iter().enumerate() {
        if skip_first && i == 0 {
            continue;
        }
        md.push_str(&format!(
            "{}. `{}` — {} — `{}`\n",
            i + 1,
            l.id,
            space_name(l.space),
            shown_path(l)
        ));
        // build() numbers links from the primitive up.
        if let Some((_, r)) = built.resolutions.iter().find(|(k, _)| *k + 1 + i == n) {
            let what = match (&r.outcome, &r.value) {
                (Outcome::Found { .. }, Some(v)) => format!("`{v}`"),
                (Outcome::Fallback, Some(v)) => format!("`{v}` (the fallback)"),
                _ => "unset (nothing found, no fallback)".to_string(),
            };
            md.push_str(&format!("   - interpreter `{}` = {what}\n", r.var));
        }
        for s in ws.all_with_id(ItemType::Tool, &l.id).into_iter().skip(1) {
            md.push_str(&format!(
                "   - shadows `{}` ({}) — `{}`\n",
                s.id,
                space_name(s.space),
                shown_path(s)
            ));
        }
    }
    if let Some(e) = err {
        md.push_str(&format!("\n**Broken chain:** {e}\n"));
    }
    md
}

fn item_markdown(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut md = format!(
        "**{} `{}`** — {} — `{}`\n",
        item.item_type.as_str(),
        item.id,
        space_name(item.space),
        shown_path(item)
    );
    if let Some(d) = item.description() {
        md.push_str(&format!("\n{d}\n"));
    }
    if let Some(kind) = item.tool().map(|t| t.kind()).filter(|k| !k.is_runnable()) {
        md.push_str(&format!(
            "\nA {} file, not a tool: it declares no `executor_id`, so it does not run (tools {} it).\n",
            kind.as_str(),
            if kind == crate::tool::ToolKind::Library { "import" } else { "read" }
        ));
    }
    let shadowed: Vec<_> = ws
        .all_with_id(item.item_type, &item.id)
        .into_iter()
        .filter(|i| i.path != item.path)
        .collect();
    if !shadowed.is_empty() {
        md.push('\n');
        for s in shadowed {
            md.push_str(&format!(
                "- shadows `{}` ({}) — `{}`\n",
                s.id,
                space_name(s.space),
                shown_path(s)
            ));
        }
    }
    md
}

fn lookup_markdown(ws: &Workspace, item_type: ItemType, reference: &str) -> String {
    match ws.lookup(item_type, reference, None) {
        Lookup::Found(target) => {
            if item_type == ItemType::Tool {
                let mut md = item_markdown(ws, &target);
                md.push('\n');
                md.push_str(&chain_markdown(ws, &target, false));
                md
            } else {
                item_markdown(ws, &target)
            }
        }
        Lookup::Missing { suggestions } => {
            let mut md = format!("No {} `{reference}`.", item_type.as_str());
            if !suggestions.is_empty() {
                md.push_str(&format!(
                    " Did you mean {}?",
                    chain::quote_list(&suggestions)
                ));
            }
            md
        }
        Lookup::Ambiguous { candidates } => format!(
            "`{reference}` is ambiguous: {}",
            chain::quote_list(&candidates)
        ),
        Lookup::Refused(e) => format!("`{reference}` is not a valid id: {e}"),
    }
}

/// The item a reference of unknown type names: a tool, else a directive, else knowledge.
fn lookup_any(ws: &Workspace, item_type: Option<ItemType>, id: &str) -> (ItemType, Lookup) {
    if let Some(t) = item_type {
        return (t, ws.lookup(t, id, None));
    }
    for t in [ItemType::Tool, ItemType::Directive, ItemType::Knowledge] {
        if let Lookup::Found(i) = ws.find(t, id, None) {
            return (t, Lookup::Found(i));
        }
    }
    (
        ItemType::Directive,
        ws.lookup(ItemType::Directive, id, None),
    )
}

/// The `${VAR}` reference of a string value at `offset`: (name, range in the file).
fn var_ref_at(v: &Value, offset: usize) -> Option<(String, TextRange)> {
    let s = v.as_string()?;
    for r in env::references(&s.value) {
        let range = if s.verbatim {
            TextRange::new(
                s.content.start + r.range.start,
                s.content.start + r.range.end,
            )
        } else {
            v.range
        };
        if range.touches(offset) {
            return Some((r.name, range));
        }
    }
    None
}

fn var_markdown(ws: &Workspace, item: &Arc<Item>, name: &str) -> String {
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    let n = links.len();
    let link_id = |l: usize| {
        links
            .get(n.wrapping_sub(1).wrapping_sub(l))
            .map(|i| i.id.clone())
            .unwrap_or_default()
    };
    let filter = env::Filter::new(&ws.config.filter);
    let mut md = format!("**`${{{name}}}`**\n\n");
    match built.origins.get(name) {
        None => md.push_str("Not defined: no link of the chain, dotenv file or the server's environment (after filtering) defines it.\n"),
        Some(origin) => {
            let (from, chain_defined) = match origin {
                Origin::Base => ("the server's environment".to_string(), false),
                Origin::Dotenv { path } => (format!("the dotenv file `{}`", path.display()), false),
                Origin::Interpreter { link } => (format!("the interpreter of `{}`", link_id(*link)), true),
                Origin::EnvConfig { link } => (format!("`ENV_CONFIG.env` of `{}`", link_id(*link)), true),
                Origin::ConfigEnv { link } => (format!("`CONFIG.env` of `{}`", link_id(*link)), true),
            };
            md.push_str(&format!("Defined by {from}"));
            match built.vars.get(name) {
                Some(v) if chain_defined && !filter.is_blocked(name) => {
                    md.push_str(&format!(": `{v}`\n"))
                }
                _ => md.push_str(" (value not shown)\n"),
            }
        }
    }
    for (l, r) in &built.resolutions {
        if r.var == name {
            md.push_str(&format!("\nResolved by `{}`:\n\n", link_id(*l)));
            md.push_str(&resolution_markdown(r));
        }
    }
    md
}

/// The range of the map key (at any depth) that `offset` is on.
fn key_range_at(v: &Value, offset: usize) -> Option<TextRange> {
    match &v.kind {
        ValueKind::Map(m) => m.iter().find_map(|e| {
            if e.key_range.touches(offset) {
                Some(e.key_range)
            } else {
                key_range_at(&e.value, offset)
            }
        }),
        ValueKind::List(l) => l.iter().find_map(|x| key_range_at(x, offset)),
        _ => None,
    }
}

fn env_key_doc(key: &str) -> Option<&'static str> {
    env::check::KEY_DOCS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d)
}

// ---------------------------------------------------------------------------------------
// hover

/// What to show when hovering `offset` in `item`.
/// A value the hover shows (one the chain builds from a passed-through secret included)
/// never holds a secret: the markdown is redacted.
pub fn hover(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<HoverInfo> {
    let h = if item.tool().is_some() {
        hover_tool(ws, item, offset)
    } else if let Some(d) = item.directive() {
        hover_directive(ws, item, d, offset)
    } else {
        None
    };
    // A pulled (or pinned) item's first line tells where it came from: registry, version,
    // signer, whether it verifies and whether its files still match the lock (issue 17).
    let first = crate::check::first_line(item);
    let provenance = if first.touches(offset) {
        crate::trust::audit::provenance(ws, item)
    } else {
        None
    };
    let mut h = match (h, provenance) {
        (Some(mut h), Some(p)) => {
            h.markdown.push_str("\n\n---\n\n");
            h.markdown.push_str(&p.markdown());
            h
        }
        (None, Some(p)) => HoverInfo {
            range: first,
            markdown: p.markdown(),
        },
        (h, None) => h?,
    };
    let secrets = crate::exec::host_secrets(ws);
    if secrets.found_in(h.markdown.as_bytes()) {
        h.markdown = secrets.redact(&h.markdown);
    }
    Some(h)
}

fn hover_tool(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Option<HoverInfo> {
    let t = item.tool()?;
    let f = t
        .fields
        .iter()
        .find(|f| f.key_range.touches(offset) || f.value.range.touches(offset))?;
    match f.field {
        Field::ExecutorId => {
            let range = if f.value.range.touches(offset) {
                f.value.range
            } else {
                f.key_range
            };
            Some(HoverInfo {
                range,
                markdown: chain_markdown(ws, item, false),
            })
        }
        Field::EnvConfig => {
            if f.key_range.touches(offset) {
                let res = own_resolution(ws, item)?;
                return Some(HoverInfo {
                    range: f.key_range,
                    markdown: resolution_markdown(&res),
                });
            }
            let (path, v) = f.value.value_at(offset)?;
            if let Some((name, range)) = var_ref_at(v, offset) {
                return Some(HoverInfo {
                    range,
                    markdown: var_markdown(ws, item, &name),
                });
            }
            if path.first() == Some(&"interpreter") {
                let mut md = String::new();
                if let Some(doc) = path.get(1).and_then(|k| env_key_doc(k)) {
                    md.push_str(&format!("`{}`: {doc}\n\n", path[1]));
                }
                let ty = f
                    .value
                    .get("interpreter")
                    .and_then(|i| i.get("type"))
                    .and_then(|t| t.as_str());
                match ty.map(|t| (t, env::registry::resolver_type(t))) {
                    Some((t, Some(rt))) => {
                        if path.get(1) == Some(&"type") {
                            md.push_str(&format!("`{t}`: {}\n\n", rt.summary));
                        }
                    }
                    Some((t, None)) => {
                        let names = env::RESOLVER_TYPES.iter().map(|r| r.name);
                        let sugg = crate::diag::closest(t, names.clone());
                        md.push_str(&format!(
                            "`{t}` is an unknown resolver type: nothing is resolved{}. Known types: {}.\n\n",
                            sugg.map(|s| format!(" (did you mean `{s}`?)"))
                                .unwrap_or_default(),
                            names.map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ));
                    }
                    None => md.push_str("No `type`: nothing is resolved.\n\n"),
                }
                if let Some(res) = own_resolution(ws, item) {
                    md.push_str("---\n\n");
                    md.push_str(&resolution_markdown(&res));
                }
                // The key under the cursor, else the value, else the interpreter.
                let range = key_range_at(&f.value, offset)
                    .or_else(|| v.range.touches(offset).then_some(v.range))
                    .unwrap_or(f.value.range);
                return Some(HoverInfo {
                    range,
                    markdown: md.trim_end().to_string() + "\n",
                });
            }
            None
        }
        Field::Config => {
            let (_, v) = f.value.value_at(offset)?;
            let (name, range) = var_ref_at(v, offset)?;
            Some(HoverInfo {
                range,
                markdown: var_markdown(ws, item, &name),
            })
        }
        _ => None,
    }
}

fn capability_words(c: &Capability) -> String {
    let what = match &c.resource {
        Resource::Filesystem => "files".to_string(),
        Resource::Registry => "the registry".to_string(),
        Resource::Shell => "shell commands".to_string(),
        Resource::Items(Some(t)) => format!("{} items", t.as_str()),
        Resource::Items(None) => "items of any type".to_string(),
        Resource::Any => "everything".to_string(),
    };
    let verb = if c.verb == "*" { "any action" } else { &c.verb };
    let mut s = if c.deny {
        format!("**Denies** `{verb}` on {what} matching `{}`", c.pattern)
    } else {
        format!("**Grants** `{verb}` on {what} matching `{}`", c.pattern)
    };
    if !c.valid {
        s.push_str(" — this spelling is not valid, so it grants nothing");
    }
    if let Some(a) = &c.alias {
        s.push_str(&format!("\n\nSpelled as {a}."));
    }
    s
}

fn hover_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    d: &Directive,
    offset: usize,
) -> Option<HoverInfo> {
    // Placeholders first: they are the innermost.
    if let Some(p) = d.placeholders.iter().find(|p| p.range.touches(offset)) {
        let md = match &p.kind {
            PlaceholderKind::Input { name, .. } | PlaceholderKind::Bare { name } => {
                match d.inputs.iter().find(|i| &i.name.value == name) {
                    Some(i) => {
                        let mut md = format!("**input `{name}`**");
                        if let Some(t) = &i.ty {
                            md.push_str(&format!(": `{}`", t.value));
                        }
                        md.push_str(if i.required {
                            " (required)"
                        } else {
                            " (optional)"
                        });
                        if let Some(def) = &i.default {
                            md.push_str(&format!("  \ndefault: `{}`", def.value));
                        }
                        if let Some(e) = &i.enum_values {
                            md.push_str(&format!("  \none of: {}", e.join(", ")));
                        }
                        if !i.description.trim().is_empty() {
                            md.push_str(&format!("\n\n{}", i.description.trim()));
                        }
                        md
                    }
                    None => format!("No input `{name}` is declared."),
                }
            }
            PlaceholderKind::System { item: sys, field } => {
                let mut md = format!("**`system.{sys}.{field}`**");
                if let Some(f) = crate::system::field(sys, field) {
                    md.push_str(&format!(": {}", f.description));
                }
                let value = crate::system::compute(sys, &ws.host, ws.project.as_deref())
                    .and_then(|v| v.get(field).cloned());
                match value {
                    Some(v) => md.push_str(&format!("\n\nCurrent value: `{v}`")),
                    None => md.push_str("\n\nNo such system field."),
                }
                md
            }
        };
        return Some(HoverInfo {
            range: p.range,
            markdown: md,
        });
    }
    if let Some(r) = d.references.iter().find(|r| r.range.touches(offset)) {
        let (t, _) = lookup_any(ws, r.item_type, &r.id);
        return Some(HoverInfo {
            range: r.range,
            markdown: lookup_markdown(ws, t, &r.id),
        });
    }
    if let Some(c) = d.capabilities.iter().find(|c| c.range.touches(offset)) {
        let mut md = capability_words(c);
        md.push_str("\n\n");
        let mut relying = Vec::new();
        for call in &d.calls {
            let Some(need) = Need::of_call(call) else {
                continue;
            };
            let (Some(t), Some(id)) = (need.item_type, need.id.as_deref()) else {
                continue;
            };
            if !c.deny
                && crate::directive::grants(std::slice::from_ref(c), &need.verb, t, id).is_some()
            {
                let step = call
                    .step
                    .and_then(|s| d.steps.get(s))
                    .and_then(|s| s.name.as_ref())
                    .map(|n| format!("step `{}`", n.value))
                    .unwrap_or_else(|| "a call outside the steps".to_string());
                relying.push(format!("- {step}: `{}` {} `{id}`", need.verb, t.as_str()));
            }
        }
        if relying.is_empty() {
            md.push_str("No step relies on it.");
        } else {
            md.push_str("Relied on by:\n");
            md.push_str(&relying.join("\n"));
        }
        return Some(HoverInfo {
            range: c.range,
            markdown: md,
        });
    }
    let _ = item;
    None
}

// ---------------------------------------------------------------------------------------
// definition

/// Where the thing at `offset` is defined.
pub fn definition(ws: &Workspace, item: &Arc<Item>, offset: usize) -> Vec<Target> {
    let target_of = |i: &Arc<Item>| Target {
        path: i.path.clone(),
        range: TextRange::empty(0),
        builtin_text: i.is_builtin().then(|| i.source.text.clone()),
    };
    if let Some(t) = item.tool() {
        if let Some(f) = t.get(Field::ExecutorId) {
            if f.value.range.touches(offset) {
                if let Some(reference) = f.value.as_str() {
                    if let Lookup::Found(i) = ws.lookup(ItemType::Tool, reference, None) {
                        return vec![target_of(&i)];
                    }
                }
            }
        }
        return Vec::new();
    }
    let Some(d) = item.directive() else {
        return Vec::new();
    };
    if let Some(p) = d.placeholders.iter().find(|p| p.range.touches(offset)) {
        if let PlaceholderKind::Input { name, .. } | PlaceholderKind::Bare { name } = &p.kind {
            if let Some(i) = d.inputs.iter().find(|i| &i.name.value == name) {
                return vec![Target {
                    path: item.path.clone(),
                    range: i.name.range,
                    builtin_text: None,
                }];
            }
        }
        return Vec::new();
    }
    if let Some(r) = d.references.iter().find(|r| r.range.touches(offset)) {
        if let (_, Lookup::Found(i)) = lookup_any(ws, r.item_type, &r.id) {
            return vec![target_of(&i)];
        }
    }
    Vec::new()
}

// ---------------------------------------------------------------------------------------
// symbols

/// The outline of an item.
pub fn symbols(item: &Item) -> Vec<Symbol> {
    if let Some(t) = item.tool() {
        return t
            .fields
            .iter()
            .map(|f| {
                let name = FIELDS
                    .iter()
                    .find(|s| s.field == f.field)
                    .map(|s| match t.format {
                        crate::tool::ToolFormat::Python => s.python,
                        crate::tool::ToolFormat::Yaml => s.yaml,
                    })
                    .unwrap_or("field")
                    .to_string();
                let children = match &f.value.kind {
                    ValueKind::Map(m) => m
                        .iter()
                        .map(|e| Symbol {
                            name: e.key.clone(),
                            detail: None,
                            kind: SymbolKind::Key,
                            range: e.key_range.cover(e.value.range),
                            selection: e.key_range,
                            children: Vec::new(),
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let detail = f.value.as_str().map(str::to_string);
                Symbol {
                    name,
                    detail,
                    kind: SymbolKind::Field,
                    range: f.key_range.cover(f.value.range),
                    selection: f.key_range,
                    children,
                }
            })
            .collect();
    }
    if let Some(d) = item.directive() {
        return directive_symbols(d);
    }
    if item.knowledge().is_some() {
        return heading_symbols(item.text());
    }
    Vec::new()
}

fn directive_symbols(d: &Directive) -> Vec<Symbol> {
    let Some(root) = &d.root else {
        return Vec::new();
    };
    let mut children = Vec::new();
    if let Some(meta) = root.child("metadata") {
        let mut perms = Vec::new();
        for c in &d.capabilities {
            perms.push(Symbol {
                name: format!(
                    "{}{} {}",
                    if c.deny { "deny " } else { "" },
                    c.verb,
                    c.pattern
                ),
                detail: None,
                kind: SymbolKind::Permission,
                range: c.range,
                selection: c.range,
                children: Vec::new(),
            });
        }
        let mut meta_children = Vec::new();
        if let Some(pr) = d.permissions_range {
            meta_children.push(Symbol {
                name: "permissions".into(),
                detail: None,
                kind: SymbolKind::Permissions,
                range: pr,
                selection: pr,
                children: perms,
            });
        }
        children.push(Symbol {
            name: "metadata".into(),
            detail: d.description.as_ref().map(|s| s.value.clone()),
            kind: SymbolKind::Metadata,
            range: meta.range,
            selection: meta.name_range,
            children: meta_children,
        });
    }
    if let Some(inputs) = root.child("inputs") {
        children.push(Symbol {
            name: "inputs".into(),
            detail: None,
            kind: SymbolKind::Inputs,
            range: inputs.range,
            selection: inputs.name_range,
            children: d
                .inputs
                .iter()
                .map(|i| Symbol {
                    name: i.name.value.clone(),
                    detail: i.ty.as_ref().map(|t| t.value.clone()),
                    kind: SymbolKind::Input,
                    range: i.range,
                    selection: i.name.range,
                    children: Vec::new(),
                })
                .collect(),
        });
    }
    if let Some(process) = root.child("process") {
        children.push(Symbol {
            name: "process".into(),
            detail: None,
            kind: SymbolKind::Process,
            range: process.range,
            selection: process.name_range,
            children: d
                .steps
                .iter()
                .enumerate()
                .map(|(n, s)| Symbol {
                    name: s
                        .name
                        .as_ref()
                        .map(|n| n.value.clone())
                        .unwrap_or_else(|| format!("step {}", n + 1)),
                    detail: s.description.clone(),
                    kind: SymbolKind::Step,
                    range: s.range,
                    selection: s.name.as_ref().map(|n| n.range).unwrap_or(s.range),
                    children: Vec::new(),
                })
                .collect(),
        });
    }
    vec![Symbol {
        name: d
            .name
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_else(|| "directive".into()),
        detail: d.version.as_ref().map(|v| v.value.clone()),
        kind: SymbolKind::Directive,
        range: root.range,
        selection: d.name.as_ref().map(|n| n.range).unwrap_or(root.name_range),
        children,
    }]
}

/// Markdown ATX headings, flat (outside code fences).
fn heading_symbols(text: &str) -> Vec<Symbol> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence && trimmed.starts_with('#') {
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            let title = trimmed[level..].trim();
            if level <= 6 && !title.is_empty() {
                let range = TextRange::new(offset, offset + content.len());
                out.push(Symbol {
                    name: title.to_string(),
                    detail: Some(format!("h{level}")),
                    kind: SymbolKind::Heading,
                    range,
                    selection: range,
                    children: Vec::new(),
                });
            }
        }
        offset += line.len();
    }
    out
}

// ---------------------------------------------------------------------------------------
// inlay hints

/// `→ /abs/path/python` (or `→ fallback python3`) after an interpreter's `type`.
pub fn inlay_hints(ws: &Workspace, item: &Arc<Item>) -> Vec<Hint> {
    let Some(t) = item.tool() else {
        return Vec::new();
    };
    let Some(ty) = t
        .value(Field::EnvConfig)
        .and_then(|ec| ec.get("interpreter"))
        .and_then(|i| i.get("type"))
    else {
        return Vec::new();
    };
    let Some(res) = own_resolution(ws, item) else {
        return Vec::new();
    };
    let label = match (&res.outcome, &res.value) {
        (Outcome::Found { .. }, Some(v)) => format!("→ {v}"),
        (Outcome::Fallback, Some(v)) => format!("→ fallback {v}"),
        _ => "→ unresolved".to_string(),
    };
    vec![Hint {
        offset: ty.range.end,
        label,
        tooltip: Some(res.explain()),
    }]
}

// ---------------------------------------------------------------------------------------
// code lenses

fn has_parameters(item: &Item) -> bool {
    item.tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_map())
        .is_some_and(|m| !m.is_empty())
}

/// The tool's `CONFIG_SCHEMA` as JSON, for a client that asks for the parameters itself
/// (`▶ Run…`); `None` when it is absent or not a literal.
fn config_schema_json(item: &Item) -> Option<serde_json::Value> {
    item.tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|s| s.to_json())
}

/// The lenses of an item: Run / Run… / Environment on tools, Validate and per-step Run on
/// directives.
pub fn code_lenses(ws: &Workspace, item: &Arc<Item>) -> Vec<Lens> {
    let path = item.path.display().to_string();
    if let Some(t) = item.tool() {
        // A primitive, a library module or a data file: nothing to run.
        if chain::is_primitive(item) || !t.kind().is_runnable() {
            return Vec::new();
        }
        let range = t
            .fields
            .iter()
            .map(|f| f.key_range)
            .min_by_key(|r| r.start)
            .unwrap_or_else(|| crate::check::first_line(item));
        let arg = serde_json::json!({"id": item.id, "path": path});
        if t.str(Field::ToolType) == Some("runtime") {
            // A runtime runs other tools: running its own file means nothing.
            return vec![Lens {
                range,
                title: "⚙ Environment".into(),
                command: CMD_SHOW_ENV.into(),
                args: vec![arg],
            }];
        }
        let mut out = vec![Lens {
            range,
            title: "▶ Run".into(),
            command: CMD_RUN_TOOL.into(),
            args: vec![arg.clone()],
        }];
        if has_parameters(item) {
            let mut ask = serde_json::json!({"id": item.id, "path": path, "ask": true});
            if let Some(schema) = config_schema_json(item) {
                ask["schema"] = schema;
            }
            // JSON objects lose the schema's order: the properties as written, to ask in.
            if let Some(props) = t
                .value(Field::ConfigSchema)
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_map)
            {
                ask["order"] = props.iter().map(|e| e.key.clone()).collect();
            }
            out.push(Lens {
                range,
                title: "▶ Run…".into(),
                command: CMD_RUN_TOOL.into(),
                args: vec![ask],
            });
        }
        out.push(Lens {
            range,
            title: "⚙ Environment".into(),
            command: CMD_SHOW_ENV.into(),
            args: vec![arg],
        });
        return out;
    }
    let Some(d) = item.directive() else {
        return Vec::new();
    };
    let top = d
        .root
        .as_ref()
        .map(|r| r.start_tag)
        .unwrap_or_else(|| crate::check::first_line(item));
    let mut out = vec![Lens {
        range: top,
        title: "✓ Validate".into(),
        command: CMD_VALIDATE.into(),
        args: vec![serde_json::json!({"id": item.id, "path": path})],
    }];
    for call in &d.calls {
        let Some(id) = &call.item_id else { continue };
        let is_tool = call
            .item_type
            .as_ref()
            .map(|t| t.value.trim() == "tool")
            .unwrap_or(false);
        if !is_tool || call.step.is_none() {
            continue;
        }
        let resolved = match ws.find(ItemType::Tool, &id.value, None) {
            Lookup::Found(t) => t.id.clone(),
            _ => continue,
        };
        let tool = crate::directive::params::called_tool(ws, call);
        out.push(Lens {
            range: call.range,
            title: format!("▶ Run step tool {resolved}"),
            command: CMD_RUN_TOOL.into(),
            args: vec![step_run_arg(d, call, tool.as_deref(), &resolved)],
        });
    }
    out
}

/// The argument of a step's `▶ Run step tool X`: the step's `<param>`s as `parameters`
/// (each value as the JSON it spells when the schema's type takes that, else the text, as a
/// run reads it). A value holding a placeholder (`{input:file}`, `{system.cwd}`) is known
/// only when the directive runs: those are asked for (`ask` with a `schema` of just them,
/// as `▶ Run…` asks), described by the template and the input it names, the input's
/// default offered; the client runs with `parameters` and what it asked merged.
fn step_run_arg(
    d: &crate::directive::Directive,
    call: &crate::directive::Call,
    tool: Option<&Item>,
    id: &str,
) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let specs = tool
        .and_then(crate::directive::params::tool_params)
        .unwrap_or_default();
    let mut fixed = Map::new();
    let mut asked = Map::new();
    let mut required = Vec::new();
    for (name, value) in &call.params {
        let (name, raw) = (name.value.trim(), value.value.as_str());
        if name.is_empty() {
            continue;
        }
        let spec = specs.iter().find(|s| s.name == name);
        let templated = raw.contains("{input:") || raw.contains("{system.");
        if !templated {
            fixed.insert(name.to_string(), step_value(spec, raw));
            continue;
        }
        let mut prop = spec
            .map(|s| s.schema.clone())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let input = raw
            .trim()
            .strip_prefix("{input:")
            .and_then(|r| r.strip_suffix('}'))
            .and_then(|n| d.inputs.iter().find(|i| i.name.value == n));
        let mut description = raw.trim().to_string();
        if let Some(i) = input {
            if !i.description.trim().is_empty() {
                description = format!("{description}: {}", i.description.trim());
            }
            if let Some(def) = &i.default {
                prop["default"] = step_value(spec, &def.value);
            }
        }
        prop["description"] = Value::String(description);
        if spec.is_some_and(|s| s.required) || input.is_some_and(|i| i.required) {
            required.push(Value::String(name.to_string()));
        }
        asked.insert(name.to_string(), prop);
    }
    let mut arg = json!({"id": id});
    if !fixed.is_empty() || !asked.is_empty() {
        arg["parameters"] = Value::Object(fixed);
    }
    if !asked.is_empty() {
        arg["ask"] = Value::Bool(true);
        arg["schema"] = json!({"type": "object", "properties": asked, "required": required});
    }
    arg
}

/// A `<param>` value as a run reads it: the JSON it spells when the parameter's schema
/// takes that type (`5` for an integer, `true` for a boolean), else the text.
fn step_value(spec: Option<&crate::directive::params::ParamSpec>, raw: &str) -> serde_json::Value {
    use serde_json::Value;
    let text = Value::String(raw.to_string());
    let Some(spec) = spec else { return text };
    let Ok(parsed) = serde_json::from_str::<Value>(raw.trim()) else {
        return text;
    };
    let ty = match &parsed {
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
        Value::String(_) => return text,
    };
    let label = spec.type_label();
    let takes = |t: &str| label.split(" | ").any(|l| l == t);
    if takes(ty) || (ty == "integer" && takes("number")) {
        parsed
    } else {
        text
    }
}

/// The environment report of a tool, as markdown (for `kiwi.showEnvironment`).
pub fn environment_markdown(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut md = chain_markdown(ws, item, false);
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    for (l, r) in &built.resolutions {
        let id = links
            .get(links.len().wrapping_sub(1).wrapping_sub(*l))
            .map(|i| i.id.as_str())
            .unwrap_or("?");
        md.push_str(&format!("\n**Interpreter of `{id}`**\n\n"));
        md.push_str(&resolution_markdown(r));
    }
    md.push_str("\n**Variables:** ");
    md.push_str(
        &built
            .vars
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    md.push('\n');
    for b in &built.dotenv_blocked {
        md.push_str(&format!("\n**Note:** {}\n", b.message()));
    }
    crate::exec::host_secrets(ws).redact(&md)
}
