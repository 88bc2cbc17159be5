//! rye's `anchor:`: module search paths for a tool's helpers, as rye-os's executor applies
//! them (`rye/executor/primitive_executor.py`, `execute` steps 4.5-5.5):
//!
//! - the anchor is the first link of the chain, from the tool down, whose YAML declares an
//!   `anchor:` mapping (`_build_chain` keeps `anchor_config` from `_parse_yaml_metadata`;
//!   its Python reader has no `anchor`);
//! - it applies (`_anchor_applies`) unless `mode` is `never` or `enabled` is false or
//!   missing; with `mode: always` it does, otherwise (`auto`) when one of `markers_any` exists
//!   in the tool's folder;
//! - its template names (`_compute_anchor_context`): `tool_path`, `tool_dir`, `tool_parent`,
//!   `runtime_lib` (the folder of the first link whose anchor has `lib`, joined with it),
//!   `project_path`, `user_space`, `system_space`, and `anchor_path`: `root` is `tool_dir`
//!   (the default, and anything unknown), `tool_parent` or `project_path`
//!   (`_resolve_anchor_path`);
//! - each `env_paths` variable (`_apply_anchor_env`): its value split on `:` (empty parts
//!   dropped), each `prepend` template filled (`{name}` from the names above, anything else
//!   left as written) and put in front in the order listed, each `append` at the end, a
//!   path already there or empty skipped, joined with `:` again.
//!
//! Not followed: `cwd` (rye passes it as a `cwd` parameter, which its subprocess primitive
//! reads) and `verify_deps` (rye's integrity check of every file under the anchor).

use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Workspace};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One variable the anchor sets: its name and new value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorVar {
    pub name: String,
    pub value: String,
}

/// The anchor of a chain, applied to `vars` (the chain's environment): the variables it
/// sets and the index of the link (tool first) whose `anchor:` it is. `None` when no link
/// declares one or it does not apply.
pub fn apply(
    ws: &Workspace,
    links_tool_first: &[Arc<Item>],
    vars: &BTreeMap<String, String>,
) -> Option<(usize, Vec<AnchorVar>)> {
    let tool = links_tool_first.first()?;
    if tool.is_builtin() {
        return None;
    }
    let anchors: Vec<(usize, Value)> = links_tool_first
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_builtin() && is_yaml(&l.path))
        .filter_map(|(i, l)| Some((i, l.tool()?.anchor.as_deref()?.clone())))
        .collect();
    let (at, cfg) = anchors.first()?;
    let tool_dir = tool.path.parent()?;
    let mode = cfg.get("mode").and_then(Value::as_str).unwrap_or("auto");
    if mode == "never" || !cfg.get("enabled").is_some_and(truthy) {
        return None;
    }
    if mode != "always" {
        let markers = cfg
            .get("markers_any")
            .and_then(Value::as_list)
            .unwrap_or(&[]);
        if !markers
            .iter()
            .filter_map(Value::as_str)
            .any(|m| tool_dir.join(m).exists())
        {
            return None;
        }
    }
    let shown = |p: &Path| p.display().to_string();
    let mut ctx: BTreeMap<&str, String> = BTreeMap::new();
    ctx.insert("tool_path", shown(&tool.path));
    ctx.insert("tool_dir", shown(tool_dir));
    ctx.insert("tool_parent", shown(tool_dir.parent().unwrap_or(tool_dir)));
    let runtime_lib = anchors
        .iter()
        .find_map(|(i, a)| {
            let lib = a.get("lib").and_then(Value::as_str)?;
            Some(shown(&links_tool_first[*i].path.parent()?.join(lib)))
        })
        .unwrap_or_default();
    ctx.insert("runtime_lib", runtime_lib);
    if let Some(p) = ws.project.as_ref().or(ws.host.cwd.as_ref()) {
        ctx.insert("project_path", shown(p));
    }
    ctx.insert("user_space", shown(ws.user.parent().unwrap_or(&ws.user)));
    if let Some(x) = ws.extra.first() {
        // rye's system space is the folder that holds `.ai`.
        let root = if x.root.ends_with(".ai") {
            x.root.parent().unwrap_or(&x.root)
        } else {
            &x.root
        };
        ctx.insert("system_space", shown(root));
    }
    let anchor_path = match cfg.get("root").and_then(Value::as_str) {
        Some("tool_parent") => ctx["tool_parent"].clone(),
        Some("project_path") => ctx
            .get("project_path")
            .cloned()
            .unwrap_or_else(|| ctx["tool_dir"].clone()),
        _ => ctx["tool_dir"].clone(),
    };
    ctx.insert("anchor_path", anchor_path);
    let mut out = Vec::new();
    for e in cfg
        .get("env_paths")
        .and_then(Value::as_map)
        .unwrap_or_default()
    {
        let list = |key: &str| -> Vec<String> {
            e.value
                .get(key)
                .and_then(Value::as_list)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(|t| template(t, &ctx))
                .collect()
        };
        let existing = vars.get(&e.key).map(String::as_str).unwrap_or("");
        let mut parts: Vec<String> = existing
            .split(':')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        for p in list("prepend").into_iter().rev() {
            if !p.is_empty() && !parts.contains(&p) {
                parts.insert(0, p);
            }
        }
        for p in list("append") {
            if !p.is_empty() && !parts.contains(&p) {
                parts.push(p);
            }
        }
        out.push(AnchorVar {
            name: e.key.clone(),
            value: parts.join(":"),
        });
    }
    Some((*at, out))
}

fn is_yaml(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// Python's truth of a YAML value (`anchor_cfg.get("enabled", False)`).
fn truthy(v: &Value) -> bool {
    match &v.kind {
        ValueKind::Null => false,
        ValueKind::Bool(b) => *b,
        ValueKind::Int(i) => *i != 0,
        ValueKind::Float(f) => *f != 0.0,
        ValueKind::Str(s) => !s.value.is_empty(),
        ValueKind::List(l) => !l.is_empty(),
        ValueKind::Map(m) => !m.is_empty(),
        ValueKind::NonLiteral(_) => false,
    }
}

/// rye's `_template_string`: `re.sub(r"\{(\w+)\}", …)`, a known name replaced, any other
/// left as written.
fn template(t: &str, ctx: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(after.len(), |(i, _)| i);
        let name = &after[..name_len];
        if name_len > 0 && after[name_len..].starts_with('}') {
            match ctx.get(name) {
                Some(v) => out.push_str(v),
                None => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            }
            rest = &after[name_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_is_ryes() {
        let mut ctx = BTreeMap::new();
        ctx.insert("tool_dir", "/t".to_string());
        assert_eq!(template("{tool_dir}/x", &ctx), "/t/x");
        assert_eq!(template("{nope}:{tool_dir}", &ctx), "{nope}:/t");
        assert_eq!(template("{ tool_dir}{", &ctx), "{ tool_dir}{");
        assert_eq!(template("{}{tool_dir}", &ctx), "{}/t");
    }
}
