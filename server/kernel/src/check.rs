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
use crate::text::TextRange;
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
        name: "execution environment preference",
        codes: &[Code::X501, Code::X502],
        check: crate::exec::preference::check_preference,
    },
];

/// Every diagnostic of one item, sorted by position.
pub fn check_item(ws: &Workspace, item: &Arc<Item>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = item.parse_diagnostics().to_vec();
    if !matches!(item.parsed, Parsed::Unreadable(_)) {
        for rule in RULES {
            (rule.check)(ws, item, &mut out);
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

/// The first line of an item's file, where a problem with no better place is reported.
pub fn first_line(item: &Item) -> TextRange {
    item.source
        .lines
        .line_content_range(item.text(), 0)
        .unwrap_or_default()
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
    if declared == stem || declared.is_empty() {
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
    let mut msg = format!("{via} names {what}, which exists in no space (project, user, builtin)");
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
// T304: the chain

fn check_chain(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if chain::is_primitive(item) {
        return;
    }
    if tool.str(Field::ToolType) == Some("primitive") {
        out.push(Diagnostic::new(
            Code::T304,
            tool.get(Field::ToolType).map(|e| e.value.range).unwrap_or_else(|| first_line(item)),
            format!(
                "`primitive` is reserved for the builtin primitives ({}); give this tool an executor instead",
                chain::PRIMITIVES.join(", ")
            ),
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

/// The compiled `CONFIG_SCHEMA` of a primitive, kept per version of its file: every tool
/// that ends in the primitive needs it, and serializing the schema to look it up cost more
/// than the check it serves. The key is the file's path and text (the schema is read from
/// that text alone); a server that sees many versions keeps the last few dozen.
pub(crate) fn primitive_validator(primitive: &Item) -> Option<Arc<jsonschema::Validator>> {
    use std::collections::HashMap;
    use std::hash::{BuildHasher, RandomState};
    use std::sync::Mutex;
    /// By a hash of the path and text; the entry keeps both to be sure.
    type Cache = HashMap<
        u64,
        (
            std::path::PathBuf,
            Box<str>,
            Option<Arc<jsonschema::Validator>>,
        ),
    >;
    static CACHE: std::sync::OnceLock<(RandomState, Mutex<Cache>)> = std::sync::OnceLock::new();
    const KEEP: usize = 64;
    let schema = primitive.tool()?.value(Field::ConfigSchema)?;
    let (state, cache) = CACHE.get_or_init(Default::default);
    let hash = state.hash_one((&primitive.path, primitive.text()));
    if let Some((path, text, v)) = cache.lock().ok()?.get(&hash) {
        if *path == primitive.path && **text == *primitive.text() {
            return v.clone();
        }
    }
    let v = jsonschema::validator_for(&schema.to_json()?)
        .ok()
        .map(Arc::new);
    let mut cache = cache.lock().ok()?;
    if cache.len() >= KEEP {
        cache.clear();
    }
    cache.insert(
        hash,
        (primitive.path.clone(), primitive.text().into(), v.clone()),
    );
    v
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
    let Some(validator) = primitive_validator(&primitive) else {
        return;
    };
    let mut merged = merge_config(&ch.links);
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
                    if template::KERNEL_NAMES.contains(&name.as_str()) || params.contains(&name) {
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
                            "`{{{name}}}` is neither a parameter declared in CONFIG_SCHEMA nor a name kiwi provides ({declared}; kiwi provides {}){}",
                            template::KERNEL_NAMES.join(", "),
                            diag::did_you_mean(suggestion)
                        ),
                    );
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
                    if default.is_some() || chain_defined.contains(&name) {
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
