//! `execute directive run` (and a directive as a prompt): its inputs bound to the given
//! parameters, its placeholders filled, its steps, permissions and outputs listed.

use super::error::{OpError, Res};
use super::items::diagnostics_json;
use crate::check::check_item;
use crate::context::Host;
use crate::diag::{closest_n, Diagnostic, Severity};
use crate::directive::{params, Call, CallKind, Directive, PlaceholderKind};
use crate::ids::ItemType;
use crate::json::{as_text, json_type};
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
    // Every required input without a value or a default, named at once (and described, so
    // that a client can ask its user for them: MCP's input_required, kiwi-mcp).
    let missing: Vec<&crate::directive::Input> = d
        .inputs
        .iter()
        .filter(|i| {
            i.required && i.default.is_none() && params.get(&i.name.value).is_none_or(Json::is_null)
        })
        .collect();
    if let Some(first) = missing.first() {
        let names: Vec<String> = missing.iter().map(|i| i.name.value.clone()).collect();
        let message = if names.len() == 1 {
            format!("the required input `{}` is missing", first.name.value)
        } else {
            format!("the required inputs `{}` are missing", names.join("`, `"))
        };
        let described: Vec<Json> = missing
            .iter()
            .map(|i| {
                let mut m = Map::new();
                m.insert("name".into(), Json::String(i.name.value.clone()));
                let ty = i.ty.as_ref().map_or("string", |t| t.value.trim());
                m.insert("type".into(), Json::String(ty.to_string()));
                if !i.description.trim().is_empty() {
                    m.insert(
                        "description".into(),
                        Json::String(i.description.trim().into()),
                    );
                }
                if let Some(e) = &i.enum_values {
                    m.insert("enum".into(), Json::from(e.clone()));
                }
                Json::Object(m)
            })
            .collect();
        return Err(OpError::new("invalid_parameters", message)
            .suggest(names)
            .with("missing_inputs", Json::Array(described)));
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

/// `execute directive run`: the parsed directive an agent acts on (issue 16, point 7): each
/// step's description, action text and calls, each call as the meta-tool call to make
/// (`{tool, item_type, action, item_id, query, parameters}`, parameters typed by the called
/// tool's `CONFIG_SCHEMA`); the permissions in words; the outputs. The filled file (`body`) and
/// each step's XML (`text`) only with `raw`.
pub(super) fn run_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    params: &Map<String, Json>,
    host: &Host,
    raw: bool,
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
    if let Some(header) = d.ryeos {
        return run_ryeos_directive(ws, item, d, header, params);
    }
    if !d.has_root() {
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
                .filter_map(|c| Some((*c, fd.calls.get(*c)?)))
                .map(|(i, c)| step_call(ws, c, &input_params(d, &fd, i, &values)))
                .collect();
            let element = fd
                .root
                .as_ref()
                .map(|r| r.path_at(s.range.start))
                .and_then(|path| path.into_iter().rev().find(|e| e.range == s.range));
            let action = element
                .and_then(|e| e.child("action"))
                .map(|a| a.trimmed_text().to_string())
                .filter(|a| !a.is_empty());
            let mut step = json!({
                "number": i + 1,
                "name": s.name.as_ref().map(|n| n.value.clone()),
                "description": s.description,
                "action": action,
                "calls": calls,
            });
            if raw {
                let text = filled.get(s.range.start..s.range.end).unwrap_or("");
                step["text"] = json!(text.trim());
            }
            step
        })
        .collect();
    let permissions: Vec<String> = crate::directive::held_capabilities(ws, item)
        .iter()
        .map(|c| c.describe())
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
    let mut out = json!({
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
        "instructions": INSTRUCTIONS,
    });
    if raw {
        out["body"] = json!(filled);
    }
    Ok(out)
}

const RYEOS_INSTRUCTIONS: &str = "Follow the directive's body: it is the prompt ryeos runs. Load \
the knowledge its context names first (load with item_type \"knowledge\"). While this directive is \
active, every search, load and execute is checked against its permissions (its \
requires.capabilities.declared, narrowed by the directives it extends). When it is done, call \
execute {item_type: \"directive\", action: \"done\", item_id} to end it.";

/// A ryeos directive's text with each `${inputs.NAME}` of a bound input replaced by its value
/// (an input not given is left as written).
pub(super) fn fill_ryeos_inputs(text: &str, values: &Map<String, Json>) -> String {
    let mut out = text.to_string();
    for (name, value) in values {
        out = out.replace(&format!("${{inputs.{name}}}"), &as_text(value));
    }
    out
}

/// A ryeos directive run: its body is the prompt (ryeos's `root_verbatim`: the child's own
/// body), with `${inputs.NAME}` filled from the bound inputs; the knowledge of its
/// `context` by position; the capabilities it holds once its `extends` chain is composed.
fn run_ryeos_directive(
    ws: &Workspace,
    item: &Arc<Item>,
    d: &Directive,
    header: crate::directive::ryeos::YamlHeader,
    params: &Map<String, Json>,
) -> Res<Json> {
    refuse_directive_errors(ws, item)?;
    // Composed as ryeos's extends-chain composer does: inputs merged by name and context
    // appended, each root (farthest parent) first and the child last; the body the child's.
    let links = match crate::directive::ryeos::extends_chain(ws, item) {
        Some(Ok(links)) => links,
        Some(Err(why)) => {
            return Err(OpError::new(
                "invalid_item",
                format!("{why}: ryeos refuses to compose it, and kiwi does not run it"),
            ))
        }
        None => vec![item.clone()],
    };
    let mut composed = d.clone();
    composed.inputs.clear();
    let mut context_refs = Vec::new();
    for link in links.iter().rev() {
        let Some(ld) = link.directive() else { continue };
        for input in &ld.inputs {
            composed.inputs.retain(|i| i.name.value != input.name.value);
            composed.inputs.push(input.clone());
        }
        context_refs.extend(ld.references.iter().cloned());
    }
    let d = &composed;
    let values = bind_inputs(d, params)?;
    let text = item.text();
    let body_start = header.close.map_or(text.len(), |c| c.end);
    let body = fill_ryeos_inputs(text.get(body_start..).unwrap_or("").trim(), &values);
    let mut context: Map<String, Json> = Map::new();
    for r in &context_refs {
        if let Some(position) = r
            .via
            .strip_prefix("`context.")
            .and_then(|p| p.strip_suffix('`'))
        {
            let list = context
                .entry(position.to_string())
                .or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut() {
                a.push(json!(r.id));
            }
        }
    }
    let permissions: Vec<String> = crate::directive::held_capabilities(ws, item)
        .iter()
        .map(|c| c.describe())
        .collect();
    Ok(json!({
        "item_type": "directive",
        "id": item.id,
        "source": item.space.as_str(),
        "path": item.path.to_string_lossy(),
        "format": "ryeos",
        "description": d.description.as_ref().map(|n| n.value.clone()),
        "inputs": values,
        "body": body,
        "context": context,
        "extends": d.references.iter().find(|r| r.via == "`extends`").map(|r| r.id.clone()),
        "permissions": permissions,
        "instructions": RYEOS_INSTRUCTIONS,
    }))
}

/// A step's call as the meta-tool call the agent makes: which tool (`execute`, `search`,
/// `load`), the item type, the action (an `execute` without one runs), the id or the query,
/// and the parameters, typed by the called tool's `CONFIG_SCHEMA` when it declares them.
/// The parameters of call `i` whose value was exactly one input (`value="{input:force}"`),
/// with that input's typed value: a boolean input passes `false`, never the text "false",
/// whatever the callee declares (issue 26, point 7).
fn input_params(
    d: &crate::directive::Directive,
    filled: &crate::directive::Directive,
    i: usize,
    values: &Map<String, Json>,
) -> Map<String, Json> {
    let mut out = Map::new();
    if d.calls.len() != filled.calls.len() {
        return out;
    }
    let Some(c) = d.calls.get(i) else { return out };
    for (k, v) in &c.params {
        let raw = v.value.trim();
        let name = raw
            .strip_prefix("{input:")
            .and_then(|r| r.strip_suffix('}'))
            .map(|n| n.split_once(':').map_or(n, |(n, _)| n).trim());
        if let Some(value) = name.and_then(|n| values.get(n)) {
            if !value.is_string() {
                out.insert(k.value.clone(), value.clone());
            }
        }
    }
    out
}

fn step_call(ws: &Workspace, c: &Call, typed_inputs: &Map<String, Json>) -> Json {
    let text = |x: &Option<crate::directive::Spanned<String>>| {
        x.as_ref()
            .map(|v| v.value.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let item_id = text(&c.item_id);
    let said = text(&c.action);
    let (tool, action) = match c.kind {
        CallKind::Search => ("search", "search".to_string()),
        CallKind::Load => ("load", "load".to_string()),
        CallKind::Sign => ("execute", "validate".to_string()),
        CallKind::Fetch if item_id.is_some() => ("load", "load".to_string()),
        CallKind::Fetch => ("search", "search".to_string()),
        CallKind::Execute | CallKind::ToolCall => match said.as_deref() {
            Some("search") => ("search", "search".to_string()),
            Some("load") => ("load", "load".to_string()),
            Some("execute") | None => ("execute", "run".to_string()),
            Some(a) => ("execute", a.to_string()),
        },
    };
    let specs = params::called_tool(ws, c).and_then(|t| params::tool_params(&t));
    // A directive called by a step: its declared input types.
    let callee_inputs: Vec<(String, String)> = match (text(&c.item_type).as_deref(), &item_id) {
        (Some("directive"), Some(id)) => ws
            .get(ItemType::Directive, id)
            .and_then(|i| i.directive())
            .map(|d| {
                d.inputs
                    .iter()
                    .filter_map(|i| {
                        Some((
                            i.name.value.clone(),
                            i.ty.as_ref()?.value.trim().to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let parameters: Map<String, Json> = c
        .params
        .iter()
        .map(|(k, v)| {
            let spec = specs
                .as_ref()
                .and_then(|ss| ss.iter().find(|s| s.name == k.value));
            let declared = callee_inputs.iter().find(|(n, _)| *n == k.value);
            let value = match (spec, declared, typed_inputs.get(&k.value)) {
                (Some(s), ..) => typed_value(&s.schema, &v.value),
                (None, Some((_, ty)), _) => coerce(ty, json!(v.value)),
                (None, None, Some(typed)) => typed.clone(),
                (None, None, None) => json!(v.value),
            };
            (k.value.clone(), value)
        })
        .collect();
    let mut call = Map::new();
    call.insert("tool".into(), json!(tool));
    call.insert("item_type".into(), json!(text(&c.item_type)));
    call.insert("action".into(), json!(action));
    if let Some(id) = item_id {
        call.insert("item_id".into(), json!(id));
    }
    if let Some(q) = text(&c.query) {
        call.insert("query".into(), json!(q));
    }
    if tool == "execute" {
        call.insert("parameters".into(), Json::Object(parameters));
    } else {
        // search and load take no action and no parameters: what a step gives them are
        // their own arguments, so that the call is made as it is (unknown arguments are
        // errors).
        call.remove("action");
        for (k, v) in parameters {
            call.entry(k).or_insert(v);
        }
        if tool == "search" {
            call.entry("query").or_insert(json!(""));
        }
    }
    Json::Object(call)
}

/// A `<param>` value (attribute text) as the value a run passes: the JSON it spells when
/// that is of a type the parameter's schema takes (`false`, `8`, `["a"]`), else the text
/// (a `string` parameter keeps `"42"`).
fn typed_value(schema: &Json, raw: &str) -> Json {
    let types: Vec<&str> = match schema.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() || types == ["string"] {
        return json!(raw);
    }
    match serde_json::from_str::<Json>(raw.trim()) {
        Ok(v)
            if types
                .iter()
                .any(|t| *t != "string" && type_ok(t, &v) || (*t == "null" && v.is_null())) =>
        {
            v
        }
        _ => json!(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::typed_value;
    use serde_json::json;

    #[test]
    fn param_values_are_typed_by_the_schema() {
        let t = |ty: serde_json::Value, raw: &str| typed_value(&json!({"type": ty}), raw);
        assert_eq!(t(json!("boolean"), "false"), json!(false));
        assert_eq!(t(json!("integer"), "8"), json!(8));
        assert_eq!(t(json!("integer"), "8.5"), json!("8.5"));
        assert_eq!(t(json!("number"), "0.5"), json!(0.5));
        assert_eq!(t(json!("array"), "[1, 2]"), json!([1, 2]));
        assert_eq!(t(json!("string"), "42"), json!("42"));
        assert_eq!(t(json!(["integer", "null"]), "null"), json!(null));
        assert_eq!(t(json!(["string", "integer"]), "3"), json!(3));
        assert_eq!(t(json!("boolean"), "yes"), json!("yes"));
        assert_eq!(typed_value(&json!({}), "true"), json!("true"));
    }
}
