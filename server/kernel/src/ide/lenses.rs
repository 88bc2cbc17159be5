//! Code lenses: Run / Run… / Environment on tools, Validate and per-step Run on directives
//! (with the arguments a step's run takes).

use super::{Lens, CMD_RUN_TOOL, CMD_SHOW_ENV, CMD_VALIDATE};
use crate::chain;
use crate::ids::ItemType;
use crate::tool::Field;
use crate::value::Value;
use crate::workspace::{Item, Lookup, Workspace};
use std::sync::Arc;

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
    if item.skill().is_some() {
        return super::skill::code_lenses(ws, item);
    }
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
        // `▶ Run on HOST`: each ssh host of the user's execution.hosts (issue 30).
        for host in ws.config.execution_hosts.keys() {
            out.push(Lens {
                range,
                title: format!("▶ Run on {host}"),
                command: CMD_RUN_TOOL.into(),
                args: vec![serde_json::json!({"id": item.id, "path": path, "environment": format!("ssh:{host}")})],
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
    let top = item
        .directive_root()
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
