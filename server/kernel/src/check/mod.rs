//! Checks: every diagnostic of an item, those of its own file (from the parsers) and those
//! that need the rest of the workspace (references, shadowing, chains, environments).
//!
//! The cross-item rules are a registry: each [`Rule`] is one function that appends the
//! diagnostics of one concern; adding a rule adds one entry to [`RULES`].

use crate::chain::{self, ChainErrorKind};
use crate::diag::{self, Code, Diagnostic, Fix, Severity};
use crate::env::{self, LinkEnv, Origin};
use crate::ids::{self, ItemType, Space};
use crate::template::{self, Piece};
use crate::text::{self, TextRange};
use crate::tool::Field;
use crate::value::Value;
use crate::workspace::{Item, Lookup, Parsed, Workspace};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

/// One cross-item rule: which codes it may produce, and the function that checks.
pub struct Rule {
    pub name: &'static str,
    pub codes: &'static [Code],
    pub check: fn(&Workspace, &Arc<Item>, &mut Vec<Diagnostic>),
}

/// The cross-item rules, in the order they run.
pub const RULES: &[Rule] = &[
    Rule {
        name: "declared name matches the file",
        codes: &[Code::K002],
        check: check_declared_name,
    },
    Rule {
        name: "shadowing",
        codes: &[Code::K005],
        check: check_shadowing,
    },
    Rule {
        name: "directive references",
        codes: &[Code::K003, Code::K004, Code::K006],
        check: check_directive_references,
    },
    Rule {
        name: "grants that match nothing",
        codes: &[Code::P207],
        check: check_grants_match_something,
    },
    Rule {
        name: "step parameters against the called tool's schema",
        codes: &[Code::D113, Code::D114, Code::D115],
        check: crate::directive::params::check_step_params,
    },
    Rule {
        name: "knowledge references",
        codes: &[Code::N604, Code::K006],
        check: check_knowledge_references,
    },
    Rule {
        name: "files an item runs lie inside its space",
        codes: &[Code::K006],
        check: check_script_confined,
    },
    Rule {
        name: "executor chain",
        codes: &[Code::T304],
        check: check_chain,
    },
    Rule {
        name: "configuration against the primitive",
        codes: &[Code::T306],
        check: check_config_types,
    },
    Rule {
        name: "environment",
        codes: &[
            Code::E401,
            Code::E402,
            Code::E403,
            Code::E404,
            Code::E405,
            Code::E406,
            Code::E407,
            Code::E408,
            Code::E409,
            Code::E410,
            Code::T307,
            Code::T308,
        ],
        check: check_environment,
    },
    Rule {
        name: "paths in the configuration",
        codes: &[Code::T309, Code::E412],
        check: check_paths,
    },
    Rule {
        name: "execution environment preference",
        codes: &[Code::X501, Code::X502],
        check: crate::exec::preference::check_preference,
    },
    Rule {
        name: "lockfile and signatures",
        codes: &[Code::R701, Code::R702, Code::R703],
        check: crate::trust::audit::check_item,
    },
];

/// Every diagnostic of one item, sorted by position.
pub fn check_item(ws: &Workspace, item: &Arc<Item>) -> Vec<Diagnostic> {
    if ryeos_format(item).is_some() {
        return ryeos_hint(ws, item).into_iter().collect();
    }
    let mut out: Vec<Diagnostic> = item.parse_diagnostics().to_vec();
    if !matches!(item.parsed, Parsed::Unreadable(_)) {
        for rule in RULES {
            let before = out.len();
            (rule.check)(ws, item, &mut out);
            debug_assert!(
                out[before..].iter().all(|d| rule.codes.contains(&d.code)),
                "the rule `{}` emitted {:?}, which it does not declare",
                rule.name,
                out[before..].iter().map(|d| d.code).collect::<Vec<_>>()
            );
        }
    }
    diag::normalize(&mut out);
    out
}

/// Check many items in parallel; results in the order given.
pub fn check_items(ws: &Workspace, items: &[Arc<Item>]) -> Vec<Vec<Diagnostic>> {
    let out = items.par_iter().map(|i| check_item(ws, i)).collect();
    if items.len() >= 1024 {
        // A server checks the whole workspace once after indexing, then keeps running.
        crate::workspace::release_free_memory();
    }
    out
}

/// Where to report what is missing from an item: its first line, or, in a signed file, the
/// first line after the signature comment.
pub fn first_line(item: &Item) -> TextRange {
    crate::text::first_line_after_header(item.text())
}

// ---------------------------------------------------------------------------------------
// K007: ryeos's newer format

/// Whether the item is written in ryeos's newer format where kiwi cannot read it (what marks
/// it, for the hint): a tool with a `# ryeos-tool:` header (its metadata is YAML in comments)
/// or a `tool:` executor reference, a directive with YAML frontmatter and no XML fence.
/// Knowledge in that format is read (its frontmatter maps), so it is not listed.
pub fn ryeos_format(item: &Item) -> Option<&'static str> {
    let text = item.text();
    let head: &str = text
        .char_indices()
        .nth(4096)
        .map_or(text, |(i, _)| &text[..i]);
    match &item.parsed {
        // A `# ryeos-tool:` header is read (its fields are the tool's); what kiwi cannot
        // follow is a `tool:` executor reference (ryeos's runtimes are not kiwi items).
        Parsed::Tool(t) => t
            .str(Field::ExecutorId)
            .is_some_and(|e| e.starts_with("tool:"))
            .then_some(if crate::tool::has_ryeos_tool_header(head) {
                "a `# ryeos-tool:` header naming a `tool:` executor"
            } else {
                "a `tool:` executor reference"
            }),
        Parsed::Directive(d) => {
            let after_header = text::first_line_after_header(text);
            (d.root.is_none() && text.get(after_header.start..after_header.end) == Some("---"))
                .then_some("YAML frontmatter instead of an XML `<directive>`")
        }
        _ => None,
    }
}

/// K007, once per project: on the first (by path) item of the project's space that is in
/// ryeos's format, a hint that says how many there are; nothing on the others.
fn ryeos_hint(ws: &Workspace, item: &Arc<Item>) -> Option<Diagnostic> {
    let mut same: Vec<&Arc<Item>> = ws
        .items()
        .filter(|i| i.space == item.space && ryeos_format(i).is_some())
        .collect();
    same.sort_by(|a, b| crate::workspace::path_order(&a.path, &b.path));
    if same.first().is_some_and(|f| f.path != item.path) {
        return None;
    }
    let what = ryeos_format(item)?;
    let n = same.len().max(1);
    Some(
        Diagnostic::new(
            Code::K007,
            first_line(item),
            format!(
                "this file is in ryeos's newer format ({what}), which kiwi recognises but does not read yet; {} of this space {} in that format and {} not checked",
                if n == 1 { "1 file".to_string() } else { format!("{n} files") },
                if n == 1 { "is" } else { "are" },
                if n == 1 { "is" } else { "are" },
            ),
        ),
    )
}

// ---------------------------------------------------------------------------------------
// K006: a YAML tool's script (its sidecar) resolving outside the space

/// The item's file is confined to its space when it is read (`workspace::load_file`); the
/// script a YAML tool runs (`x/evil.sh` beside `x/evil.yaml`) must be too: a symlink out of
/// the project would otherwise be run.
fn check_script_confined(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    if let Some(why) = script_refusal(ws, item) {
        out.push(Diagnostic::new(Code::K006, first_line(item), why));
    }
}

/// Why the sidecar script of a tool is refused (it resolves outside the tool's space, or
/// cannot be resolved), or `None` when it is fine or there is none.
pub fn script_refusal(ws: &Workspace, item: &Item) -> Option<String> {
    let script = item.script.as_deref()?;
    if item.is_builtin() {
        return None;
    }
    let root = ws.space_root(item.space)?;
    match ids::confine(&root, script) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "refused: the script of this tool, {}, {}; a file an item runs must lie inside its space, so kiwi will not run it",
            script.display(),
            match e.kind() {
                std::io::ErrorKind::PermissionDenied => format!("resolves outside its space ({})", root.display()),
                _ => format!("cannot be resolved ({e})"),
            }
        )),
    }
}

// ---------------------------------------------------------------------------------------
// K002: declared name vs file stem

fn check_declared_name(_ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let stem = ids::bare_name(&item.id);
    let (what, declared, range) = match &item.parsed {
        Parsed::Directive(d) => match &d.name {
            Some(n) => ("directive name", n.value.as_str(), n.range),
            None => return,
        },
        Parsed::Knowledge(k) => match k.declared_id() {
            Some(v) => match v.as_string() {
                Some(s) => ("knowledge id", s.value.as_str(), v.range),
                None => return,
            },
            None => return,
        },
        _ => return,
    };
    // rye writes a knowledge entry's `id:` as the full item id (`rye/core/some-entry`).
    if declared == stem || declared == item.id || declared.is_empty() {
        return;
    }
    // The directive's name is an XML attribute value (no quotes in its range); a knowledge
    // id is a YAML scalar whose range includes any quotes.
    let (edit_range, new_text) = match &item.parsed {
        Parsed::Knowledge(k) => match k.declared_id().and_then(|v| v.as_string()) {
            Some(s) if s.verbatim => (s.content, stem.to_string()),
            _ => (range, stem.to_string()),
        },
        _ => (range, stem.to_string()),
    };
    let ext = item
        .path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("md");
    let renamed = item.path.with_file_name(format!("{declared}.{ext}"));
    let mut d = Diagnostic::new(
        Code::K002,
        range,
        format!("{what} `{declared}` differs from the file's stem `{stem}`; items are found by their file name"),
    )
    .fix(Fix::replace(format!("Change the name to `{stem}`"), edit_range, new_text));
    if ids::validate_id(declared).is_ok() && !declared.contains('/') {
        d = d.fix(Fix {
            title: format!(
                "Rename the file to `{}`",
                renamed.file_name().unwrap_or_default().to_string_lossy()
            ),
            edits: Vec::new(),
            rename_to: Some(renamed),
        });
    }
    out.push(d);
}

// ---------------------------------------------------------------------------------------
// K005: shadowing

fn check_shadowing(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    if item.space == Space::Builtin {
        return;
    }
    let lower: Vec<&Arc<Item>> = ws
        .all_with_id(item.item_type, &item.id)
        .into_iter()
        .filter(|o| o.space > item.space)
        .collect();
    let Some(first) = lower.first() else { return };
    let range = match &item.parsed {
        Parsed::Directive(d) => d.name.as_ref().map(|n| n.range),
        Parsed::Knowledge(k) => k.declared_id().map(|v| v.range),
        _ => None,
    }
    .unwrap_or_else(|| first_line(item));
    let mut d = Diagnostic::new(
        Code::K005,
        range,
        format!(
            "this {} shadows `{}` of the {} space; the {} one is used wherever `{}` is named",
            item.item_type, item.id, first.space, item.space, item.id
        ),
    );
    for other in lower {
        d = d.related(
            Some(other.path.clone()),
            first_line(other),
            format!(
                "the shadowed {} `{}` ({} space)",
                other.item_type, other.id, other.space
            ),
        );
    }
    out.push(d);
}

// ---------------------------------------------------------------------------------------
// K003 / K004 / K006 on directive references

fn reference_diagnostic(
    ws: &Workspace,
    item_type: Option<ItemType>,
    id: &str,
    range: TextRange,
    via: &str,
    missing_code: Code,
) -> Option<Diagnostic> {
    // A reference built from a placeholder is resolved at run time.
    if id.contains('{') || id.contains('$') || id.trim().is_empty() {
        return None;
    }
    // System items are virtual: they exist when the catalogue has them.
    if item_type == Some(ItemType::System) && crate::system::item(id.trim()).is_some() {
        return None;
    }
    let types: Vec<ItemType> = match item_type {
        Some(t) => vec![t],
        None => ItemType::FILE_TYPES.to_vec(),
    };
    let mut ambiguous = None;
    for t in &types {
        match ws.find(*t, id, None) {
            Lookup::Found(_) => return None,
            Lookup::Refused(e) => {
                return Some(Diagnostic::new(
                    Code::K006,
                    range,
                    format!("`{id}` is refused as an item id: {e}"),
                ));
            }
            Lookup::Ambiguous { candidates } => ambiguous = Some((*t, candidates)),
            Lookup::Missing { .. } => {}
        }
    }
    if let Some((t, candidates)) = ambiguous {
        let mut d = Diagnostic::new(
            Code::K004,
            range,
            format!(
                "`{id}` is ambiguous: {} {t}s end with it ({}); use the full id",
                candidates.len(),
                chain::quote_list(&candidates)
            ),
        );
        for c in &candidates {
            d = d.fix(Fix::replace(format!("Use `{c}`"), range, c.clone()));
        }
        return Some(d);
    }
    // Only now, with nothing found anywhere, is it worth scanning every id for suggestions.
    let suggestions: Vec<String> = types
        .iter()
        .flat_map(|t| ws.suggest(*t, id, None))
        .collect();
    let what = match item_type {
        Some(t) => format!("{t} `{id}`"),
        None => format!("item `{id}`"),
    };
    let mut msg = format!(
        "{via} names {what}, which exists in no space ({})",
        ws.space_names()
    );
    if !suggestions.is_empty() {
        msg.push_str(&format!(
            "; did you mean {}?",
            chain::quote_list(&suggestions)
        ));
    }
    let mut d = Diagnostic::new(missing_code, range, msg);
    for s in suggestions.iter().take(3) {
        d = d.fix(Fix::replace(format!("Change to `{s}`"), range, s.clone()));
    }
    Some(d)
}

fn check_directive_references(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(d) = item.directive() else { return };
    for r in &d.references {
        out.extend(reference_diagnostic(
            ws,
            r.item_type,
            &r.id,
            r.range,
            &format!("`{}`", r.via),
            Code::K003,
        ));
    }
}

fn check_knowledge_references(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(k) = item.knowledge() else { return };
    for (field, id, range) in k.references() {
        // Reference values may be written `type:id`.
        let (t, id) = match id.split_once(':') {
            Some((t, rest)) if ItemType::parse(t).is_some() => (ItemType::parse(t), rest),
            _ => (None, id),
        };
        out.extend(reference_diagnostic(
            ws,
            t,
            id,
            range,
            &format!("`{field}`"),
            Code::N604,
        ));
    }
}

// ---------------------------------------------------------------------------------------
// P207: a grant that can match no item

/// A directive's item grant whose pattern names a specific part of an id (not `*`, no
/// placeholder) and matches no item of its type in any space, though items of its namespace
/// exist: it grants nothing today (a renamed folder, a typo), as rye's `rye.primary-tools.*`
/// after the folder became `rye/primary`.
fn check_grants_match_something(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(d) = item.directive() else { return };
    // The sorted ids of each type, built only when a grant is not matched by one of the
    // directive's own references (the common case costs no scan of the workspace).
    let mut ids_of: std::collections::HashMap<ItemType, Vec<&str>> = Default::default();
    for c in &d.capabilities {
        let crate::directive::Resource::Items(Some(t)) = c.resource else {
            continue;
        };
        if c.deny
            || !c.valid
            || c.pattern.contains('{')
            || c.pattern.chars().all(|ch| matches!(ch, '*' | '/' | '.'))
        {
            continue;
        }
        let verb = if c.verb == "*" {
            "run"
        } else {
            c.verb.as_str()
        };
        // Only the ids that start with the pattern's fixed part can match (`ids` is sorted).
        let prefix: String = c
            .pattern
            .chars()
            .take_while(|ch| !matches!(ch, '*' | '?' | '[' | '{' | '\\'))
            .collect();
        let grants_id =
            |id: &str| crate::directive::grants(std::slice::from_ref(c), verb, t, id).is_some();
        if d.references
            .iter()
            .any(|r| r.item_type == Some(t) && grants_id(&r.id) && ws.get(t, &r.id).is_some())
        {
            continue;
        }
        let ids = ids_of.entry(t).or_insert_with(|| ws.ids(t));
        let from = ids.partition_point(|id| *id < prefix.as_str());
        let matches = ids[from..]
            .iter()
            .take_while(|id| id.starts_with(&prefix))
            .any(|id| grants_id(id));
        if matches {
            continue;
        }
        // Only when the workspace knows the pattern's namespace (its first segment): when no
        // item at all lives under `rye/`, the space that holds them is missing (the system
        // space of a project that uses rye's tools), which P207 cannot tell from a typo.
        let Some((ns, _)) = c.pattern.split_once('/') else {
            continue;
        };
        let ns = format!("{ns}/");
        let from = ids.partition_point(|id| *id < ns.as_str());
        if ns.contains(['*', '?', '[', '{']) || !ids.get(from).is_some_and(|id| id.starts_with(&ns))
        {
            continue;
        }
        let range = d
            .root
            .as_ref()
            .and_then(|r| element_text_range(r, c.range))
            .unwrap_or(c.range);
        out.push(Diagnostic::new(
            Code::P207,
            range,
            format!(
                "`{}` matches no {t} in any space{}: this grant allows nothing",
                c.pattern,
                if prefix.is_empty() || prefix == c.pattern {
                    String::new()
                } else {
                    format!(" (no {t} id starts with `{prefix}`)")
                }
            ),
        ));
    }
}

/// The text range of the element whose range is `r` (the pattern of `<tool>PATTERN</tool>`).
fn element_text_range(root: &crate::directive::Element, r: TextRange) -> Option<TextRange> {
    let mut stack = vec![root];
    while let Some(el) = stack.pop() {
        if el.range == r {
            return el.text_range;
        }
        stack.extend(
            el.children
                .iter()
                .filter(|c| c.range.start <= r.start && r.end <= c.range.end),
        );
    }
    None
}

// ---------------------------------------------------------------------------------------
// T304: the chain

fn check_chain(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if chain::is_primitive(item) {
        return;
    }
    if !tool.kind().is_runnable() {
        return; // a library module or data: it does not run, so it has no chain
    }
    if tool.str(Field::ToolType) == Some("primitive") {
        let msg = if item.space == Space::Builtin {
            format!(
                "`primitive` is reserved for the builtin primitives ({}); give this tool an executor instead",
                chain::PRIMITIVES.join(", ")
            )
        } else {
            "a primitive ends a chain and declares no executor_id; remove `executor_id`, or give this tool another tool_type".to_string()
        };
        out.push(Diagnostic::new(
            Code::T304,
            tool.get(Field::ToolType)
                .map(|e| e.value.range)
                .unwrap_or_else(|| first_line(item)),
            msg,
        ));
        return;
    }
    let err = match chain::resolve(ws, item) {
        Ok(_) => return,
        Err(e) => e,
    };
    // Report on this file only the problem that starts here; a problem further down is the
    // other link's own diagnostic, shown here once, at this file's executor_id.
    let own = err.links.len() == 1;
    let range = if own {
        err.range.unwrap_or_else(|| first_line(item))
    } else {
        match tool.get(Field::ExecutorId) {
            Some(e) => e.value.range,
            None => return,
        }
    };
    let mut msg = err.message();
    if !own {
        msg = format!("the executor chain is broken further down: {msg}");
    }
    let mut d = Diagnostic::new(Code::T304, range, msg);
    for link in &err.links {
        d = d.related(
            Some(link.path.clone()),
            link.tool()
                .and_then(|t| t.get(Field::ExecutorId))
                .map(|e| e.value.range)
                .unwrap_or_else(|| first_line(link)),
            format!("link `{}` ({} space)", link.id, link.space),
        );
    }
    if own {
        match &err.kind {
            ChainErrorKind::Missing { suggestions, .. } => {
                for s in suggestions.iter().take(3) {
                    d = d.fix(Fix::replace(
                        format!("Change to `{s}`"),
                        range,
                        quoted_like(item, range, s),
                    ));
                }
            }
            ChainErrorKind::Ambiguous { candidates, .. } => {
                for c in candidates {
                    d = d.fix(Fix::replace(
                        format!("Use `{c}`"),
                        range,
                        quoted_like(item, range, c),
                    ));
                }
            }
            _ => {}
        }
    }
    out.push(d);
}

/// A replacement for a string value that keeps the quotes of the original.
fn quoted_like(item: &Item, range: TextRange, new: &str) -> String {
    let src = item.text().get(range.start..range.end).unwrap_or("");
    match src.chars().next() {
        Some(q @ ('"' | '\'')) if src.len() >= 2 && src.ends_with(q) => format!("{q}{new}{q}"),
        _ => new.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// T306: CONFIG against the primitive's config_schema

/// The deep merge of the `CONFIG` of every link, from the primitive up to the tool: maps
/// merge, a later value replaces an earlier one, lists are replaced.
pub fn merge_config(links_tool_first: &[Arc<Item>]) -> serde_json::Value {
    let mut merged = serde_json::Value::Object(Default::default());
    for link in links_tool_first.iter().rev() {
        if let Some(cfg) = link
            .tool()
            .and_then(|t| t.value(Field::Config))
            .and_then(|v| v.to_json())
        {
            deep_merge(&mut merged, cfg);
        }
    }
    merged
}

pub fn deep_merge(base: &mut serde_json::Value, over: serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => deep_merge(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

fn contains_placeholder(v: &Value) -> bool {
    let mut found = false;
    v.walk(&mut |x| {
        if let Some(s) = x.as_str() {
            found |= template::scan(s)
                .iter()
                .any(|p| !matches!(p, Piece::Text(_)));
        }
    });
    found
}

fn check_config_types(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if chain::is_primitive(item) {
        return;
    }
    let Some(config) = tool.value(Field::Config) else {
        return;
    };
    if config.as_map().is_none() || !config.non_literals().is_empty() {
        return;
    }
    let Ok(ch) = chain::resolve(ws, item) else {
        return;
    };
    let primitive = ch.primitive().clone();
    let Some(validator) = crate::config_schema::primitive_validator(&primitive) else {
        return;
    };
    let mut merged = merge_config(&ch.links);
    // A key that a link's config templates as `{key}` is a value for the chain (rye merges the
    // configs and templates from the merged map), not a key of the primitive.
    let templated = templated_names(&ch.links);
    // Kiwi applies `CONFIG.env` of every link to the environment (02-environment.md) and
    // hands the primitive the rest: unless the primitive's schema describes `env` itself,
    // it is checked here, not against that schema.
    let declares_env = primitive
        .tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get("env"))
        .is_some();
    if !declares_env {
        if let Some(m) = merged.as_object_mut() {
            m.remove("env");
        }
        if let Some(v) = config.get("env") {
            if !matches!(
                v.kind,
                crate::value::ValueKind::Map(_)
                    | crate::value::ValueKind::Null
                    | crate::value::ValueKind::NonLiteral(_)
            ) {
                out.push(Diagnostic::new(
                    Code::T306,
                    v.range,
                    "`env` must be a dict of variable names to values (kiwi applies it to the tool's environment)",
                ));
            }
        }
    }
    for err in validator.iter_errors(&merged) {
        let pointer = err.instance_path().to_string();
        use jsonschema::error::ValidationErrorKind as K;
        match err.kind() {
            K::AdditionalProperties { unexpected } => {
                let Some(parent) = config.at_pointer(&pointer) else {
                    continue;
                };
                for key in unexpected {
                    if pointer.is_empty() && templated.contains(key.as_str()) {
                        continue;
                    }
                    let Some(entry) = parent.entry(key) else {
                        continue;
                    };
                    let known: Vec<String> = primitive_keys(&primitive, &pointer);
                    let suggestion = diag::closest(key, known.iter().map(String::as_str));
                    let mut d = Diagnostic::new(
                        Code::T306,
                        entry.key_range,
                        format!(
                            "`{key}` is not a configuration key of the `{}` primitive at the end of this chain{}",
                            primitive.id,
                            diag::did_you_mean(suggestion)
                        ),
                    )
                    .severity(Severity::Warning);
                    if let Some(s) = suggestion {
                        d = d.fix(Fix::replace(
                            format!("Change to `{s}`"),
                            entry.key_range,
                            quoted_like(item, entry.key_range, s),
                        ));
                    }
                    out.push(d);
                }
            }
            K::Required { .. } => {
                // A runtime only provides defaults: a missing required key (an http_runtime
                // has no `url`) is the problem of the tool that runs, reported there.
                if tool.str(Field::ToolType) != Some("runtime") {
                    let range = tool
                        .get(Field::Config)
                        .map(|e| e.key_range)
                        .unwrap_or_else(|| first_line(item));
                    out.push(Diagnostic::new(
                        Code::T306,
                        range,
                        format!(
                            "the `{}` primitive needs {err}, and no link of the chain sets it",
                            primitive.id
                        ),
                    ));
                }
            }
            _ => {
                let Some(v) = config.at_pointer(&pointer) else {
                    continue;
                };
                if contains_placeholder(v) {
                    continue;
                }
                let key = readable_pointer(&pointer);
                out.push(Diagnostic::new(
                    Code::T306,
                    v.range,
                    format!(
                        "`{key}` is wrong for the `{}` primitive: {err}",
                        primitive.id
                    ),
                ));
            }
        }
    }
}

/// `/args/1` -> `args[1]`, `/retry/max_attempts` -> `retry.max_attempts`.
fn readable_pointer(pointer: &str) -> String {
    let mut out = String::new();
    for seg in crate::value::pointer_segments(pointer) {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// The property names the primitive's schema declares at a pointer (for suggestions).
fn primitive_keys(primitive: &Item, pointer: &str) -> Vec<String> {
    let Some(schema) = primitive
        .tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|v| v.to_json())
    else {
        return Vec::new();
    };
    let mut cur = &schema;
    for seg in crate::value::pointer_segments(pointer) {
        match cur.get("properties").and_then(|p| p.get(&seg)) {
            Some(next) => cur = next,
            None => return Vec::new(),
        }
    }
    cur.get("properties")
        .and_then(|p| p.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// E401-E410, T307, T308: the environment

/// The environment a tool's chain would get, built from the workspace.
pub fn build_env(ws: &Workspace, links_tool_first: &[Arc<Item>]) -> env::BuiltEnv {
    let links: Vec<LinkEnv> = links_tool_first
        .iter()
        .rev()
        .map(|l| {
            let t = l.tool();
            LinkEnv {
                id: &l.id,
                env_config: t.and_then(|t| t.value(Field::EnvConfig)),
                config_env: t
                    .and_then(|t| t.value(Field::Config))
                    .and_then(|c| c.get("env")),
            }
        })
        .collect();
    env::build(
        &ws.host.vars,
        ws.host.home.as_deref(),
        ws.project.as_deref(),
        &ws.user,
        &ws.config.filter,
        &links,
    )
}

/// The top-level CONFIG keys of every link of the chain, and, when other tools run through
/// this one (a runtime), of those tools and the tools above them: rye merges the configs of a
/// chain (primitive first, the tool last) and templates `{NAME}` from the merged map.
fn chain_config_keys(ws: &Workspace, item: &Arc<Item>, links: &[Arc<Item>]) -> BTreeSet<String> {
    fn keys_of(i: &Item, out: &mut BTreeSet<String>) {
        if let Some(m) = i
            .tool()
            .and_then(|t| t.value(Field::Config))
            .and_then(|c| c.as_map())
        {
            out.extend(m.iter().map(|e| e.key.clone()));
        }
    }
    let mut keys = BTreeSet::new();
    for l in links {
        keys_of(l, &mut keys);
    }
    // The tools above: those whose executor is this item, then theirs (bounded).
    let mut frontier = vec![item.clone()];
    let mut seen: BTreeSet<std::path::PathBuf> = BTreeSet::new();
    for _ in 0..8 {
        let mut next = Vec::new();
        for cur in &frontier {
            for i in ws.items() {
                let Some(exec) = i.tool().and_then(|t| t.str(Field::ExecutorId)) else {
                    continue;
                };
                if exec != cur.id || !seen.insert(i.path.clone()) {
                    continue;
                }
                keys_of(i, &mut keys);
                next.push(i.clone());
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    keys
}

/// How many tools name this item as their executor.
fn direct_callers(ws: &Workspace, item: &Arc<Item>) -> usize {
    ws.items()
        .filter(|i| {
            i.tool()
                .and_then(|t| t.str(Field::ExecutorId))
                .is_some_and(|e| e == item.id)
        })
        .count()
}

/// Every `{NAME}` used in the config strings of the links.
fn templated_names(links: &[Arc<Item>]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in links {
        let Some(c) = l.tool().and_then(|t| t.value(Field::Config)) else {
            continue;
        };
        c.walk(&mut |v| {
            if let Some(s) = v.as_str() {
                for p in template::scan(s) {
                    if let Piece::Param { name, .. } = p {
                        out.insert(name);
                    }
                }
            }
        });
    }
    out
}

/// rye drops a value of an HTTP `body` that is a single unresolved `{NAME}` (optional provider
/// fields), so such a value is no T307.
fn optional_body_value(config: &Value, v: &Value, s: &str) -> bool {
    let t = s.trim();
    let single = t.starts_with('{')
        && t.ends_with('}')
        && t[1..t.len() - 1]
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_');
    single
        && config
            .get("body")
            .is_some_and(|b| b.range.start <= v.range.start && v.range.end <= b.range.end)
}

fn check_environment(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if let Some(ec) = tool.value(Field::EnvConfig) {
        out.extend(env::check_env_config_in(ec, item.text()));
    }
    if chain::is_primitive(item) {
        return;
    }
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    let own = links.len() - 1; // build() numbers links from the primitive up.
    out.extend(
        built
            .diagnostics
            .iter()
            .filter(|(l, _)| *l == own)
            .map(|(_, d)| d.clone()),
    );

    let Some(config) = tool.value(Field::Config) else {
        return;
    };
    // Names the chain defines: every link's interpreter var (resolved or not), its env and
    // CONFIG.env keys, and what the dotenv files define.
    let mut chain_defined: BTreeSet<String> = BTreeSet::new();
    for l in &links {
        let Some(t) = l.tool() else { continue };
        if let Some(var) = t
            .value(Field::EnvConfig)
            .and_then(|e| e.get("interpreter"))
            .and_then(|i| i.get("var"))
        {
            chain_defined.extend(var.as_str().map(str::to_string));
        }
        for v in [
            t.value(Field::EnvConfig).and_then(|e| e.get("env")),
            t.value(Field::Config).and_then(|c| c.get("env")),
        ]
        .into_iter()
        .flatten()
        {
            chain_defined.extend(v.as_map().unwrap_or_default().iter().map(|e| e.key.clone()));
        }
    }
    for (name, origin) in &built.origins {
        if !matches!(origin, Origin::Base) {
            chain_defined.insert(name.clone());
        }
    }
    let params: BTreeSet<String> = tool
        .value(Field::ConfigSchema)
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_map())
        .map(|m| m.iter().map(|e| e.key.clone()).collect())
        .unwrap_or_default();
    // rye templates `{NAME}` from the configs merged along the chain: every link's config
    // keys, and (for a runtime) the config keys of the tools that run through it.
    // Computed only when a name is otherwise unknown (it walks the workspace).
    let chain_keys: std::cell::OnceCell<BTreeSet<String>> = std::cell::OnceCell::new();
    // `CONFIG.env` values are environment entries: E409 reports their undefined references.
    let env_range = config.get("env").map(|v| v.range);
    let mut strings: Vec<&Value> = Vec::new();
    config.walk(&mut |v| {
        if v.as_str().is_some()
            && !env_range.is_some_and(|r| r.start <= v.range.start && v.range.end <= r.end)
        {
            strings.push(v);
        }
    });
    let filter = env::Filter::new(&ws.config.filter);
    for v in strings {
        let Some(s) = v.as_string() else { continue };
        for piece in template::scan(&s.value) {
            let range_of = |r: TextRange| {
                if s.verbatim {
                    r.shift(s.content.start)
                } else {
                    v.range
                }
            };
            match piece {
                Piece::Text(_) => {}
                Piece::Param { name, range } => {
                    if template::is_host_name(&name)
                        || params.contains(&name)
                        || optional_body_value(config, v, &s.value)
                        || chain_keys
                            .get_or_init(|| chain_config_keys(ws, item, &links))
                            .contains(&name)
                    {
                        continue;
                    }
                    // A runtime is templated with the merged config of the tool that runs
                    // through it: with no such tool here, the name is the callers' to give
                    // (rye's system-space runtimes); with some, none of them gives it.
                    let runtime_callers = (tool.str(Field::ToolType) == Some("runtime"))
                        .then(|| direct_callers(ws, item));
                    if runtime_callers == Some(0) {
                        continue;
                    }
                    let known: Vec<&str> = template::KERNEL_NAMES
                        .iter()
                        .copied()
                        .chain(params.iter().map(String::as_str))
                        .collect();
                    // Among a tool's few parameters a shared start is a good hint too
                    // (`{outfile}` for `output`).
                    let suggestion = diag::closest(&name, known).or_else(|| {
                        params
                            .iter()
                            .map(|p| {
                                let shared = p
                                    .chars()
                                    .zip(name.chars())
                                    .take_while(|(a, b)| a == b)
                                    .count();
                                (shared, p)
                            })
                            .filter(|(shared, _)| *shared >= 3)
                            .max_by_key(|(shared, _)| *shared)
                            .map(|(_, p)| p.as_str())
                    });
                    let r = range_of(range);
                    let declared = if params.is_empty() {
                        "CONFIG_SCHEMA declares no parameter".to_string()
                    } else {
                        format!(
                            "CONFIG_SCHEMA declares {}",
                            params
                                .iter()
                                .map(|p| format!("`{p}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    let mut d = Diagnostic::new(
                        Code::T307,
                        r,
                        format!(
                            "`{{{name}}}` is neither a parameter declared in CONFIG_SCHEMA, nor a config key of the chain, nor a name the host provides ({declared}; the host provides {}){}",
                            template::KERNEL_NAMES
                                .iter()
                                .copied()
                                .chain(template::HOST_NAMES.iter().map(|(n, _)| *n))
                                .collect::<Vec<_>>()
                                .join(", "),
                            diag::did_you_mean(suggestion)
                        ),
                    );
                    if let Some(n) = runtime_callers {
                        d = Diagnostic::new(
                            Code::T307,
                            r,
                            format!(
                                "`{{{name}}}` is given by {} that {} through this runtime (rye templates it from the caller's merged config), nor declared in CONFIG_SCHEMA, nor a name the host provides{}",
                                if n == 1 { "neither the tool".to_string() } else { format!("none of the {n} tools") },
                                if n == 1 { "runs" } else { "run" },
                                diag::did_you_mean(suggestion)
                            ),
                        )
                        .severity(Severity::Warning);
                    }
                    if let (Some(sug), true) = (suggestion, s.verbatim) {
                        d = d.fix(Fix::replace(
                            format!("Change to `{{{sug}}}`"),
                            r,
                            format!("{{{sug}}}"),
                        ));
                    }
                    out.push(d);
                }
                Piece::Env {
                    name,
                    default,
                    range,
                } => {
                    // ryeos spells the host's names `${params_json}`.
                    if default.is_some()
                        || chain_defined.contains(&name)
                        || template::is_host_name(&name)
                    {
                        continue;
                    }
                    let r = range_of(range);
                    if ws.host.vars.contains_key(&name) && filter.passes(&name) {
                        out.push(
                            Diagnostic::new(
                                Code::T308,
                                r,
                                format!(
                                    "`${{{name}}}` is defined only by the environment kiwi was started from; define it in the chain or a .env file, or give it a default with `${{{name}:-...}}`"
                                ),
                            )
                            .severity(Severity::Warning),
                        );
                    } else {
                        let why = if ws.host.vars.contains_key(&name) {
                            "the environment filter blocks it from the server's environment"
                        } else {
                            "it is not set anywhere"
                        };
                        out.push(Diagnostic::new(
                            Code::T308,
                            r,
                            format!(
                                "`${{{name}}}` is defined by no link of the chain and no .env file, and {why}; set it in ENV_CONFIG.env or CONFIG.env, or give a default with `${{{name}:-...}}`"
                            ),
                        ));
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// T309 / E412: paths in a tool's configuration

/// The folder a template name stands for at check time, when it is one the kernel fills
/// with a folder: `{system_space}` (the first extra space's `.ai`, else the project's own
/// `.ai`: rye's repository is its own system space), `{project_path}`, `{user_space}`,
/// `{tool_dir}`.
pub fn folder_of(ws: &Workspace, item: &Item, name: &str) -> Option<std::path::PathBuf> {
    match name {
        "system_space" => ws
            .extra
            .first()
            .map(|x| x.root.clone())
            .or_else(|| ws.project.as_ref().map(|p| p.join(".ai"))),
        "project_path" => ws.project.clone(),
        "user_space" => Some(ws.user.clone()),
        "tool_dir" if !item.is_builtin() => item.tool_path().parent().map(|p| p.to_path_buf()),
        _ => None,
    }
}

/// `/home/NAME/...`, `/Users/NAME/...` or `C:\Users\NAME\...`: a path that exists on one
/// person's machine.
fn home_path(s: &str) -> bool {
    let s = s.trim();
    let unix = ["/home/", "/Users/"]
        .iter()
        .any(|p| s.strip_prefix(p).is_some_and(|rest| rest.contains('/')));
    let windows = s.len() > 9
        && s.as_bytes()[1] == b':'
        && s[2..]
            .replace('/', "\\")
            .to_ascii_lowercase()
            .starts_with("\\users\\")
        && s[9..].contains(['\\', '/']);
    unix || windows
}

fn check_paths(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if item.is_builtin() {
        return;
    }
    // E412: every string of the file's values (a YAML file whole, else the fields).
    let whole;
    let values: Vec<&Value> = match tool.format {
        crate::tool::ToolFormat::Yaml => {
            whole = crate::yaml::parse(item.text(), 0).value;
            whole.iter().collect()
        }
        crate::tool::ToolFormat::Python => tool.fields.iter().map(|f| &f.value).collect(),
    };
    for v in values {
        v.walk(&mut |x| {
            if let Some(s) = x.as_str() {
                if home_path(s) {
                    out.push(Diagnostic::new(
                        Code::E412,
                        x.range,
                        format!(
                            "`{}` is a path into one person's home directory: it works on one machine only; use `~`, `${{HOME}}`, a path relative to the project, or an interpreter resolver (venv_python, local_binary, ...)",
                            s.trim()
                        ),
                    ));
                }
            }
        });
    }
    // T309: `{folder}/relative/file` in CONFIG that does not exist.
    let Some(config) = tool.value(Field::Config) else {
        return;
    };
    config.walk(&mut |x| {
        let Some(s) = x.as_str() else { return };
        let pieces = template::scan(s);
        let [Piece::Param { name, .. }, Piece::Text(rest)] = pieces.as_slice() else {
            return;
        };
        let Some(rel) = rest.strip_prefix('/') else {
            return;
        };
        // A file (with an extension), written plainly.
        let is_file = std::path::Path::new(rel)
            .extension()
            .is_some_and(|e| !e.is_empty());
        if !is_file || rel.contains(['{', '$', '*']) {
            return;
        }
        let Some(base) = folder_of(ws, item, name) else {
            return;
        };
        let path = base.join(rel);
        if path.exists() {
            return;
        }
        out.push(Diagnostic::new(
            Code::T309,
            x.range,
            format!(
                "`{s}` does not exist: `{{{name}}}` is `{}` here, and it holds no `{rel}`; the tool will fail when it starts",
                base.display()
            ),
        ));
    });
}
