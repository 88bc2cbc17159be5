//! A step's `<param>`s against the `CONFIG_SCHEMA` of the tool it calls (D113-D115): a
//! parameter the schema does not declare, a required one not passed, a value of the wrong
//! type or out of range. Values are XML attribute text: one is right when it is right as a
//! string, or as the JSON it spells (`true`, `8`, `["a"]`), as a run would read it. A value
//! holding a placeholder (`{input:x}`) is known only when the directive runs: not checked.

use super::{Call, CallKind};
use crate::diag::{self, Code, Diagnostic, Fix};
use crate::ids::ItemType;
use crate::tool::Field;
use crate::workspace::{Item, Lookup, Workspace};
use serde_json::Value as Json;
use std::sync::Arc;

/// The tool a call runs, when it is an `execute` of a tool that exists.
pub fn called_tool(ws: &Workspace, call: &Call) -> Option<Arc<Item>> {
    if call.kind != CallKind::Execute {
        return None;
    }
    let is_tool = call
        .item_type
        .as_ref()
        .is_none_or(|t| t.value.trim() == "tool");
    if !is_tool {
        return None;
    }
    match ws.find(ItemType::Tool, call.item_id.as_ref()?.value.trim(), None) {
        Lookup::Found(t) => Some(t),
        _ => None,
    }
}

/// A tool's parameters as its `CONFIG_SCHEMA` declares them, in the schema's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub schema: Json,
    pub required: bool,
}

impl ParamSpec {
    pub fn description(&self) -> Option<&str> {
        self.schema.get("description").and_then(Json::as_str)
    }
    /// `string`, `integer | null`, `one of "a", "b"`...
    pub fn type_label(&self) -> String {
        if let Some(e) = self.schema.get("enum").and_then(Json::as_array) {
            return format!(
                "one of {}",
                e.iter().map(Json::to_string).collect::<Vec<_>>().join(", ")
            );
        }
        match self.schema.get("type") {
            Some(Json::String(t)) => t.clone(),
            Some(Json::Array(ts)) => ts
                .iter()
                .filter_map(Json::as_str)
                .collect::<Vec<_>>()
                .join(" | "),
            _ => "any".into(),
        }
    }
    /// The values worth offering: the enum, `true`/`false`, the default.
    pub fn value_choices(&self) -> Vec<String> {
        let shown = |v: &Json| match v {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(e) = self.schema.get("enum").and_then(Json::as_array) {
            return e.iter().map(shown).collect();
        }
        let mut out = Vec::new();
        if self.type_label().split(" | ").any(|t| t == "boolean") {
            out.extend(["true".to_string(), "false".to_string()]);
        }
        if let Some(d) = self.schema.get("default") {
            let d = shown(d);
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }
}

/// The parameters a tool declares (`None` without a literal schema with `properties`).
pub fn tool_params(tool: &Item) -> Option<Vec<ParamSpec>> {
    let schema = tool.tool()?.value(Field::ConfigSchema)?;
    let props = schema.get("properties")?.as_map()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_list())
        .map(|l| l.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    Some(
        props
            .iter()
            .map(|e| ParamSpec {
                name: e.key.clone(),
                schema: e.value.to_json().unwrap_or(Json::Null),
                required: required.contains(&e.key.as_str()),
            })
            .collect(),
    )
}

/// D113-D115 for every tool call of a directive.
pub fn check_step_params(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(d) = item.directive() else { return };
    // The element tree, read only for a D114 (the tree of a file read from disk is let go of).
    let mut root = None;
    for call in &d.calls {
        let Some(tool) = called_tool(ws, call) else {
            continue;
        };
        let Some(specs) = tool_params(&tool) else {
            continue;
        };
        let before = out.len();
        check_call(call, &tool, &specs, out);
        if !out[before..].iter().any(|x| x.code == Code::D114) {
            continue;
        }
        let root = root.get_or_insert_with(|| item.directive_root());
        let element = root
            .as_deref()
            .map(|r| r.path_at(call.range.start))
            .and_then(|path| path.into_iter().rev().find(|e| e.range == call.range));
        // D114's fix: add the parameter, as the call's first child.
        if let Some(e) = element {
            for diag in &mut out[before..] {
                if diag.code == Code::D114 {
                    let spec = diag
                        .message
                        .split('`')
                        .nth(3)
                        .and_then(|n| specs.iter().find(|s| s.name == n));
                    if let Some(fix) = spec.and_then(|s| add_param_fix(item.text(), e, s)) {
                        diag.fixes.push(fix);
                    }
                }
            }
        }
    }
}

fn check_call(call: &Call, tool: &Item, specs: &[ParamSpec], out: &mut Vec<Diagnostic>) {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let passed: Vec<&str> = call.params.iter().map(|(n, _)| n.value.as_str()).collect();
    let listed = if names.is_empty() {
        "it declares none".to_string()
    } else {
        format!("it declares {}", quote_all(&names))
    };
    // D113: not declared (the rule the run refusal lists them by).
    let undeclared = crate::config_schema::undeclared(&names, &passed);
    for (name, _) in &call.params {
        let Some(&(_, sugg)) = undeclared.iter().find(|(u, _)| *u == name.value) else {
            continue;
        };
        let mut d = Diagnostic::new(
            Code::D113,
            name.range,
            format!(
                "`{}` is not a parameter of `{}` ({listed}){}",
                name.value,
                tool.id,
                diag::did_you_mean(sugg)
            ),
        );
        if let Some(s) = sugg {
            d = d.fix(Fix::replace(format!("Change to `{s}`"), name.range, s));
        }
        out.push(d);
    }
    // D114: required and not passed (a default makes it optional for a run).
    let at = call.item_id.as_ref().map(|i| i.range).unwrap_or(call.range);
    for s in specs {
        if s.required && s.schema.get("default").is_none() && !passed.contains(&s.name.as_str()) {
            out.push(Diagnostic::new(
                Code::D114,
                at,
                format!(
                    "`{}` requires the parameter `{}` ({}{}), and this step does not pass it",
                    tool.id,
                    s.name,
                    s.type_label(),
                    s.description()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                ),
            ));
        }
    }
    // D115: the value, against the parameter's schema.
    // Compiled once per version of the tool's file (shared with the T306 check).
    let mut validator = None;
    for (name, value) in &call.params {
        if !names.contains(&name.value.as_str()) || value.value.contains('{') {
            continue;
        }
        let validator = match &mut validator {
            Some(v) => v,
            None => match crate::config_schema::primitive_validator(tool) {
                Some(v) => validator.insert(v),
                None => return,
            },
        };
        if let Some(problem) = value_problem(validator, &name.value, &value.value) {
            let spec = specs.iter().find(|s| s.name == name.value);
            let mut d = Diagnostic::new(
                Code::D115,
                value.range,
                format!(
                    "`{}` of `{}` takes {}: {problem}",
                    name.value,
                    tool.id,
                    spec.map(|s| s.type_label()).unwrap_or_else(|| "any".into())
                ),
            );
            if let Some(s) = spec {
                let choices = s.value_choices();
                if let Some(c) = diag::closest(&value.value, choices.iter().map(String::as_str)) {
                    if s.schema.get("enum").is_some() || c != value.value {
                        d = d.fix(Fix::replace(format!("Change to `{c}`"), value.range, c));
                    }
                }
            }
            out.push(d);
        }
    }
}

fn quote_all(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What is wrong with `raw` as the value of parameter `name`, or `None` when it fits as a
/// string or as the JSON it spells.
fn value_problem(validator: &jsonschema::Validator, name: &str, raw: &str) -> Option<String> {
    let mut candidates = vec![Json::String(raw.to_string())];
    let parsed = serde_json::from_str::<Json>(raw.trim()).ok();
    if let Some(p) = &parsed {
        candidates.push(p.clone());
    }
    let mut first_problem: Option<String> = None;
    for c in candidates.iter().rev() {
        let instance = Json::Object([(name.to_string(), c.clone())].into_iter().collect());
        let prefix = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .filter(|e| {
                let p = e.instance_path().to_string();
                p == prefix || p.starts_with(&format!("{prefix}/"))
            })
            .map(|e| e.to_string())
            .collect();
        if errors.is_empty() {
            return None;
        }
        // The JSON reading's complaint first: `99` above a maximum says more than `"99"`
        // not being an integer.
        first_problem.get_or_insert_with(|| errors.join("; "));
    }
    first_problem
}

/// A fix adding `<param name="NAME" value=""/>` as the first child of a call element, on a
/// line of its own indented one step (two spaces) deeper than the element's line.
fn add_param_fix(text: &str, e: &super::Element, spec: &ParamSpec) -> Option<Fix> {
    let name = &spec.name;
    // A value of the right type to start from: the first choice, the minimum, or empty.
    let value = match spec.value_choices().into_iter().next() {
        Some(v) if spec.schema.get("enum").is_some() => v,
        _ => match spec.type_label().split(" | ").next().unwrap_or("") {
            "boolean" => "false".to_string(),
            "integer" | "number" => spec
                .schema
                .get("minimum")
                .map(|m| m.to_string())
                .unwrap_or_else(|| "0".into()),
            "array" => "[]".into(),
            _ => String::new(),
        },
    };
    let line_start = text[..e.range.start]
        .rfind('\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let indent: String = text[line_start..e.range.start]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let param = format!("{indent}  <param name=\"{name}\" value=\"{value}\"/>");
    let title = format!("Add the parameter `{name}`");
    if e.self_closing {
        // `<execute .../>` -> `<execute ...>` + the param + `</execute>`.
        let tag = text.get(e.start_tag.start..e.start_tag.end)?;
        let slash = tag.rfind("/>")?;
        let at = e.start_tag.start + slash;
        let close = format!(">\n{param}\n{indent}</{}>", e.name);
        return Some(Fix::replace(
            title,
            crate::text::TextRange::new(at, e.start_tag.end),
            close,
        ));
    }
    Some(Fix::insert(title, e.start_tag.end, format!("\n{param}")))
}
