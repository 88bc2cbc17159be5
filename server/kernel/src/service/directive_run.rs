//! `execute directive run` (and a directive as a prompt): its inputs bound to the given
//! parameters, its placeholders filled, its steps, permissions and outputs listed.

use super::error::{OpError, Res};
use super::items::diagnostics_json;
use crate::check::check_item;
use crate::context::Host;
use crate::diag::{closest_n, Diagnostic, Severity};
use crate::directive::{Directive, PlaceholderKind};
use crate::system;
use crate::workspace::{Item, Workspace};
use serde_json::{json, Map, Value as Json};
use std::path::Path;
use std::sync::Arc;

/// What the agent is told to do with a running directive.
const INSTRUCTIONS: &str = "Follow the directive's steps in order. Each step's calls name the \
kiwi meta-tool to use (execute/search/load with item_type and item_id). While this directive is \
active, every search, load and execute is checked against its permissions. When the outputs are \
produced, call execute {item_type: \"directive\", action: \"done\", item_id} to end it.";

fn type_ok(ty: &str, v: &Json) -> bool {
    match ty {
        "string" | "path" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

/// A string parameter coerced to the input's type where it reads as one ("5" for an integer).
fn coerce(ty: &str, v: Json) -> Json {
    if let Json::String(s) = &v {
        match ty {
            "integer" | "number" | "boolean" | "array" | "object" => {
                if let Ok(p) = serde_json::from_str::<Json>(s) {
                    if type_ok(ty, &p) {
                        return p;
                    }
                }
            }
            _ => {}
        }
    }
    v
}

fn as_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

/// Validate parameters against a directive's inputs: unknown names, required, types, enums;
/// defaults filled in.
pub fn bind_inputs(d: &Directive, params: &Map<String, Json>) -> Res<Map<String, Json>> {
    let names: Vec<&str> = d.inputs.iter().map(|i| i.name.value.as_str()).collect();
    for k in params.keys() {
        if !names.contains(&k.as_str()) {
            let mut s: Vec<String> = closest_n(k, names.iter().copied(), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = names.iter().map(|s| s.to_string()).collect();
            }
            return Err(OpError::new(
                "invalid_parameters",
                format!(
                    "`{k}` is not an input of this directive (inputs: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            )
            .suggest(s));
        }
    }
    let mut out = Map::new();
    for input in &d.inputs {
        let name = &input.name.value;
        let ty = input
            .ty
            .as_ref()
            .map(|t| t.value.trim())
            .unwrap_or("string");
        let v = match params.get(name) {
            Some(v) if !v.is_null() => coerce(ty, v.clone()),
            _ => match &input.default {
                Some(def) => coerce(ty, Json::String(def.value.clone())),
                None if input.required => {
                    return Err(OpError::new(
                        "invalid_parameters",
                        format!("the required input `{name}` is missing"),
                    )
                    .suggest(vec![name.clone()]))
                }
                None => continue,
            },
        };
        if !type_ok(ty, &v) {
            return Err(OpError::new(
                "invalid_parameters",
                format!("input `{name}` must be of type {ty}, not {}", json_type(&v)),
            ));
        }
        if let Some(allowed) = &input.enum_values {
            let s = as_text(&v);
            if !allowed.contains(&s) {
                return Err(OpError::new(
                    "invalid_parameters",
                    format!(
                        "input `{name}` must be one of {}, not `{s}`",
                        allowed.join(", ")
                    ),
                )
                .suggest(allowed.clone()));
            }
        }
        out.insert(name.clone(), v);
    }
    Ok(out)
}

fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// Fill a directive's placeholders.
pub fn fill(
    text: &str,
    d: &Directive,
    values: &Map<String, Json>,
    host: &Host,
    project: Option<&Path>,
) -> String {
    let mut ps: Vec<_> = d.placeholders.iter().collect();
    ps.sort_by_key(|p| std::cmp::Reverse(p.range.start));
    let mut out = text.to_string();
    let mut last = usize::MAX;
    for p in ps {
        if p.range.end > last || p.range.end > out.len() {
            continue;
        }
        let value = match &p.kind {
            PlaceholderKind::Input { name, default, .. } => values
                .get(name)
                .map(as_text)
                .or_else(|| default.clone())
                .unwrap_or_default(),
            PlaceholderKind::Bare { name } => values.get(name).map(as_text).unwrap_or_default(),
            PlaceholderKind::System { item, field } => system::compute(item, host, project)
                .and_then(|v| v.get(field).map(as_text))
                .unwrap_or_default(),
        };
        out.replace_range(p.range.start..p.range.end, &value);
        last = p.range.start;
    }
    out
}

/// As for tools: a directive with error-level diagnostics (a placeholder naming no input,
/// `{input:targte}`, would silently become "") is neither run nor given as a prompt; the
/// refusal lists the diagnostics.
pub(super) fn refuse_directive_errors(ws: &Workspace, item: &Arc<Item>) -> Res<()> {
    let errors: Vec<Diagnostic> = check_item(ws, item)
        .into_iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let n = errors.len();
    Err(OpError::new(
        "invalid_item",
        format!(
            "directive `{}` has {n} error{}; fix {} (execute validate shows {}); it was not run",
            item.id,
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        ),
    )
    .with("diagnostics", diagnostics_json(item, &errors)))
}

pub(super) fn run_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    params: &Map<String, Json>,
    host: &Host,
) -> Res<Json> {
    let Some(d) = item.directive() else {
        return Err(OpError::new(
            "invalid_content",
            "this directive could not be read",
        ));
    };
    let parse_errors: Vec<Diagnostic> = d
        .diagnostics
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .cloned()
        .collect();
    if d.root.is_none() {
        return Err(OpError::new(
            "invalid_content",
            "this directive has no <directive> element; fix it (execute validate shows why)",
        )
        .with("diagnostics", diagnostics_json(item, &parse_errors)));
    }
    refuse_directive_errors(ws, item)?;
    let values = bind_inputs(d, params)?;
    let filled = fill(item.text(), d, &values, host, ws.project.as_deref());
    let fd = crate::directive::parse(&filled);
    let steps: Vec<Json> = fd
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let calls: Vec<Json> = s
                .calls
                .iter()
                .filter_map(|c| fd.calls.get(*c))
                .map(|c| {
                    let params: Map<String, Json> = c
                        .params
                        .iter()
                        .map(|(k, v)| (k.value.clone(), json!(v.value)))
                        .collect();
                    json!({
                        "kind": format!("{:?}", c.kind).to_lowercase(),
                        "item_type": c.item_type.as_ref().map(|x| x.value.clone()),
                        "item_id": c.item_id.as_ref().map(|x| x.value.clone()),
                        "action": c.action.as_ref().map(|x| x.value.clone()),
                        "query": c.query.as_ref().map(|x| x.value.clone()),
                        "parameters": params,
                    })
                })
                .collect();
            let text = filled.get(s.range.start..s.range.end).unwrap_or("");
            json!({
                "number": i + 1,
                "name": s.name.as_ref().map(|n| n.value.clone()),
                "description": s.description,
                "calls": calls,
                "text": text.trim(),
            })
        })
        .collect();
    let permissions: Vec<Json> = d
        .capabilities
        .iter()
        .map(|c| json!({"capability": c.describe(), "deny": c.deny, "valid": c.valid}))
        .collect();
    let outputs: Vec<Json> = fd
        .root
        .as_ref()
        .and_then(|r| r.child("outputs"))
        .map(|o| {
            o.children
                .iter()
                .map(|c| json!({"name": c.attr("name").map(|a| a.value.clone()).unwrap_or_else(|| c.name.clone()), "description": c.trimmed_text()}))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "item_type": "directive",
        "id": item.id,
        "source": item.space.as_str(),
        "path": item.path.to_string_lossy(),
        "name": fd.name.as_ref().map(|n| n.value.clone()),
        "description": fd.description.as_ref().map(|n| n.value.clone()),
        "inputs": values,
        "steps": steps,
        "permissions": permissions,
        "outputs": outputs,
        "body": filled,
        "instructions": INSTRUCTIONS,
    }))
}
