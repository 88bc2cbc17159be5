//! The four meta-tools as MCP lists them (`search`, `load`, `execute`, `help`: input and
//! output schemas, annotations) and the readers of their arguments.

use kiwi_kernel::service::{self, OpError};
use rmcp::model::*;
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

const ITEM_TYPES: [&str; 4] = ["directive", "tool", "knowledge", "system"];

fn obj(v: Json) -> Arc<JsonObject> {
    match v {
        Json::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn project_path_prop() -> Json {
    json!({"type": "string", "description": "The project root (a folder holding .ai/), when the server was not started in one"})
}

/// The `source` argument's schema: every value the server accepts (the spaces, the extra
/// spaces' names, registry, all, and registry:NAME).
fn source_prop(extra: &[String], description: &str, default: bool) -> Json {
    let mut names: Vec<String> = ["project", "user", "builtin"].map(String::from).to_vec();
    names.extend(extra.iter().cloned());
    names.extend(["registry", "all"].map(String::from));
    let mut p = json!({
        "type": "string",
        "anyOf": [{"enum": names}, {"pattern": "^registry:.+$"}],
        "description": description,
    });
    if default {
        p["default"] = json!("all");
    }
    p
}

/// The four tools with the spaces of a server without extra spaces (see [`tools_for`]).
pub fn tools() -> Vec<Tool> {
    tools_for(&[])
}

/// The argument names each tool takes (from its input schema).
pub(crate) fn arguments_of(tool: &str) -> Vec<String> {
    tools()
        .into_iter()
        .find(|t| t.name == tool)
        .and_then(|t| {
            t.input_schema
                .get("properties")
                .and_then(Json::as_object)
                .map(|p| p.keys().cloned().collect())
        })
        .unwrap_or_default()
}

/// A call's arguments that its tool does not take are an error that names the closest.
pub(crate) fn unknown_arguments(tool: &str, args: &JsonObject) -> Result<(), OpError> {
    let known = arguments_of(tool);
    if known.is_empty() {
        return Ok(());
    }
    for k in args.keys() {
        if !known.contains(k) {
            let near: Vec<String> =
                kiwi_kernel::diag::closest_n(k, known.iter().map(String::as_str), 1)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
            // A shortened name (`params`): the argument it begins most of.
            let near = if near.is_empty() {
                let common = |a: &str| a.chars().zip(k.chars()).take_while(|(x, y)| x == y).count();
                known
                    .iter()
                    .filter(|a| common(a) >= 4)
                    .max_by_key(|a| common(a))
                    .map(|a| vec![a.clone()])
                    .unwrap_or_default()
            } else {
                near
            };
            let mut e = OpError::new(
                "invalid_arguments",
                format!(
                    "`{k}` is not an argument of `{tool}` (its arguments: {}){}",
                    known.join(", "),
                    near.first()
                        .map(|n| format!("; did you mean `{n}`?"))
                        .unwrap_or_default()
                ),
            );
            e.suggestions = near;
            return Err(e);
        }
    }
    Ok(())
}

/// The four tools, with input and output schemas and annotations; `extra`: the names of the
/// server's extra spaces (its `source` values).
pub fn tools_for(extra: &[String]) -> Vec<Tool> {
    let search_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES, "description": "What to search"},
            "query": {"type": "string", "description": "Words to look for (typos tolerated); empty lists everything"},
            "source": source_prop(extra, "A space (an extra space by its name), or registry (every configured registry; registry:NAME for one)", true),
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10},
            "cursor": {"type": "string", "description": "The `cursor` of the previous answer: the results after it"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "query"],
    });
    let hit = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string"}, "id": {"type": "string"}, "name": {"type": "string"},
            "description": {"type": ["string", "null"]}, "category": {"type": ["string", "null"]},
            "version": {"type": ["string", "null"]}, "source": {"type": "string"},
            "path": {"type": ["string", "null"]}, "score": {"type": "number"},
            "shadowed_by": {"type": "string"}
        },
        "required": ["item_type", "id", "source", "score"]
    });
    let search_out = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string"}, "query": {"type": "string"},
            "total": {"type": "integer", "description": "How many items match (results holds at most limit of them)"},
            "results": {"type": "array", "items": hit},
            "cursor": {"type": "string", "description": "Pass it back as `cursor` for the next results; absent on the last page"}
        },
        "required": ["item_type", "results"]
    });
    let load_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES},
            "item_id": {"type": "string", "description": "The item id, such as core/init"},
            "source": source_prop(extra, "Load from this space only (an extra space by its name); registry (registry:NAME for one) reads or, with destination, pulls from the configured registries", false),
            "destination": {"type": "string", "enum": ["project", "user"], "description": "Copy the item into this space"},
            "force": {"type": "boolean", "default": false, "description": "Overwrite an existing file at the destination"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "item_id"],
    });
    let any_out = |props: Json| json!({"type": "object", "properties": props});
    let execute_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES},
            "action": {"type": "string", "enum": ["run", "done", "dry_run", "validate", "create", "update", "delete", "link", "publish"],
                       "description": "directive: run done validate create update delete publish; tool: run dry_run validate create update delete publish; knowledge: run validate create update delete link publish; system: run. publish needs a running directive that grants it"},
            "item_id": {"type": "string"},
            "parameters": {"type": "object", "description": "Inputs of a directive, parameters of a tool; content for create/update; reference for link; for publish: registry (a configured registry's name; may be left out when only one is configured) and version (semver, else the item's own)"},
            "dry_run": {"type": "boolean", "default": false, "description": "For a tool run: show what would run, run nothing"},
            "parent": {"type": "string", "description": "For a directive run: the running directive to run it inside (nested, narrowed by it). Without it, a directive runs inside the active one only when a step of that one calls it; otherwise the active one ends"},
            "raw": {"type": "boolean", "default": false, "description": "For a directive run: also return the filled file (body) and each step's XML (text)"},
            "environment": {"type": "string", "description": "For a tool run or dry_run: where it runs: local, sandbox, container, or ssh:HOST (a host of execution.hosts in the user's config.yaml); it cannot weaken what the tool requires"},
            "detail": {"type": "boolean", "default": false, "description": "For a tool run: also return the chain that ran, where it ran (execution) and the process id"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "action", "item_id"],
    });
    let help_in = json!({
        "type": "object",
        "properties": {"topic": {"type": "string", "enum": service::HELP_TOPICS}},
    });
    vec![
        Tool::new(
            "search",
            "Find directives, tools, knowledge or system items by relevance (BM25 over name, description, category, tags and body; word forms, joined words such as wordcount and typos tolerated). Results show the space of each item and what shadows it; total is how many match, and cursor (when present) gives the next results.",
            obj(search_in),
        )
        .with_title("Search kiwi items")
        .with_raw_output_schema(obj(search_out))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
        Tool::new(
            "load",
            "Read an item: content, parsed metadata, path, space and diagnostics. With destination (project|user), copy it there (atomic; never overwrites without force).",
            obj(load_in),
        )
        .with_title("Load a kiwi item")
        .with_raw_output_schema(obj(any_out(json!({
            "item_type": {"type": "string"}, "id": {"type": "string"}, "source": {"type": "string"},
            "path": {"type": "string"}, "content": {"type": "string"}, "metadata": {"type": "object"},
            "diagnostics": {"type": "array"}
        }))))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
        Tool::new(
            "execute",
            "Act on an item: run a directive (returns its parsed steps, each call ready to make; it becomes the session's active directive, end it with done; parent runs it inside another), run or dry_run a tool (progress notifications stream its output), read knowledge or a system item, validate, create/update (parameters.content), delete, link, publish (to a configured registry, signed with the user's key; needs a running directive that grants publish).",
            obj(execute_in),
        )
        .with_title("Execute an action on a kiwi item")
        .with_raw_output_schema(obj(any_out(json!({
            "item_type": {"type": "string"}, "id": {"type": "string"}
        }))))
        .with_annotations(
            ToolAnnotations::new().read_only(false).idempotent(false).destructive(true).open_world(true),
        ),
        Tool::new(
            "help",
            "Short help on a topic (overview search load execute directives tools knowledge system permissions environment), each with one real call.",
            obj(help_in),
        )
        .with_title("Kiwi help")
        .with_raw_output_schema(obj(any_out(json!({
            "topic": {"type": "string"}, "text": {"type": "string"}, "example": {"type": "object"}
        }))))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
    ]
}

pub(crate) fn s(args: &JsonObject, k: &str) -> Option<String> {
    match args.get(k) {
        Some(Json::String(v)) => Some(v.clone()),
        _ => None,
    }
}

pub(crate) fn b(args: &JsonObject, k: &str) -> bool {
    matches!(args.get(k), Some(Json::Bool(true)))
}

/// The search `limit`: absent, or a whole number (`"3"`, `2.5` and `-1` are errors; the range
/// is checked by the service).
pub(crate) fn limit_arg(args: &JsonObject) -> Result<Option<usize>, OpError> {
    match args.get("limit") {
        None | Some(Json::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Err(OpError::new(
                "invalid_arguments",
                format!(
                    "`limit` must be an integer from 1 to {}, not {v}",
                    service::MAX_SEARCH_LIMIT
                ),
            )),
        },
    }
}

/// An optional string argument: absent, or a string (anything else is an error).
pub(crate) fn opt_str(args: &JsonObject, k: &str) -> Result<Option<String>, OpError> {
    match args.get(k) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(v)) => Ok(Some(v.clone())),
        Some(other) => Err(OpError::new(
            "invalid_arguments",
            format!("`{k}` must be a string, not {other}"),
        )),
    }
}

/// A required string argument, or the error body that names it.
pub(crate) fn req(args: &JsonObject, k: &str, tool: &str) -> Result<String, OpError> {
    match args.get(k) {
        Some(Json::String(v)) => Ok(v.clone()),
        Some(other) => Err(OpError::new(
            "invalid_arguments",
            format!("`{k}` must be a string, not {other}"),
        )),
        None => {
            let mut e = OpError::new(
                "invalid_arguments",
                format!("`{tool}` needs the argument `{k}`"),
            );
            e.suggestions = vec![k.to_string()];
            Err(e)
        }
    }
}
