//! The rules on a tool's executor chain (T304) and its CONFIG against the primitive's
//! config_schema (T306).

use super::{first_line, templated_names};
use crate::chain::{self, ChainErrorKind};
use crate::diag::{self, Code, Diagnostic, Fix, Severity};
use crate::ids::Space;
use crate::template::{self, Piece};
use crate::text::TextRange;
use crate::tool::Field;
use crate::value::Value;
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// T304: the chain

pub(super) fn check_chain(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
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
    if let ChainErrorKind::RyeosAlias { .. } = &err.kind {
        // kiwi cannot tell what the alias names (ryeos can, from its core bundle): a hint
        // that says how to let kiwi follow it, on the link that names it only.
        if own {
            let range = err.range.unwrap_or_else(|| first_line(item));
            out.push(Diagnostic::new(Code::K007, range, err.message()));
        }
        return;
    }
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

pub(super) fn check_config_types(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
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
