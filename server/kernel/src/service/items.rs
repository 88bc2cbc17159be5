//! Items: finding one (with did-you-mean suggestions), `load` (and its copy to another
//! space), `execute` create/update/delete/link, and an item as the agent sees it.

use super::error::{check_id, no_project, parse_source, parse_type, OpError, Res};
use super::{ExecuteArgs, LoadArgs, Service, Session};
use crate::check::check_item;
use crate::context::Host;
use crate::diag::{closest_n, Diagnostic, Severity};
use crate::fs::write_atomic;
use crate::ids::{self, ItemType, Space};
use crate::search;
use crate::system;
use crate::workspace::{self, Item, Workspace, BUILTIN_ROOT};
use serde_json::{json, Map, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn find(ws: &Workspace, t: ItemType, id: &str, only: Option<Space>) -> Res<Arc<Item>> {
    check_id(t, id)?;
    Ok(ws.resolve(t, id, only)?)
}

/// [`find`] for a call that names an item of the workspace: without a project, an
/// item that is in no other space is one the call needed a project for, and the error
/// says so (issue 16: never a silent "no such item").
pub(super) fn find_needing_project(
    ws: &Workspace,
    t: ItemType,
    id: &str,
    only: Option<Space>,
) -> Res<Arc<Item>> {
    match find(ws, t, id, only) {
        Err(e)
            if e.error == "not_found"
                && ws.project.is_none()
                && matches!(only, None | Some(Space::Project)) =>
        {
            let mut n = no_project(&format!(
                "no {t} `{id}` in the user or builtin space, and no project to look in"
            ));
            n.suggestions = e.suggestions.clone();
            Err(n)
        }
        r => r,
    }
}

pub(super) fn system_item(
    id: &str,
    host: &Host,
    project: Option<&Path>,
    session: &Session,
) -> Res<Json> {
    check_id(ItemType::System, id)?;
    let Some(mut v) = system::compute(id, host, project) else {
        let ids: Vec<&str> = system::CATALOGUE.iter().map(|s| s.id).collect();
        let mut s: Vec<String> = closest_n(id, ids.iter().copied(), 3)
            .into_iter()
            .map(str::to_string)
            .collect();
        if s.is_empty() {
            s = ids.iter().map(|s| s.to_string()).collect();
        }
        return Err(OpError::new("not_found", format!("no system item `{id}`")).suggest(s));
    };
    if let (Some(pv), Some(f)) = (&session.protocol_version, v.get_mut("protocol_version")) {
        *f = json!(pv);
    }
    let meta = system::item(id);
    Ok(json!({
        "item_type": "system",
        "id": id,
        "title": meta.map(|m| m.title),
        "description": meta.map(|m| m.description),
        "source": "system",
        "read_only": true,
        "fields": v,
    }))
}

impl Service {
    /// `load`: an item as the agent sees it, or its copy to another space.
    pub(super) fn load_answer(&self, session: &Session, a: &LoadArgs) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some("load"), Some(&a.item_id));
        let t = parse_type(&a.item_type).map_err(at)?;
        if let Some(only) = super::query::registry_source(a.source.as_deref()) {
            return self.load_registry(session, a, t, only).map_err(at);
        }
        let extra = self
            .with(a.project_path.as_deref(), |sp| sp.extra_spaces())
            .map_err(at)?;
        let source = parse_source(a.source.as_deref(), &extra).map_err(at)?;
        check_id(t, &a.item_id).map_err(at)?;
        let project = self.project_for(a.project_path.as_deref()).map_err(at)?;
        if t == ItemType::System {
            session.check("load", t, Some(&a.item_id)).map_err(at)?;
            if a.destination.is_some() {
                return Err(at(OpError::new(
                    "read_only",
                    "system items are computed and read-only; they cannot be copied",
                )
                .with("allowed_actions", json!(["run"]))));
            }
            return system_item(&a.item_id, &self.host, project.as_deref(), session).map_err(at);
        }
        let ws = self.workspace(a.project_path.as_deref()).map_err(at)?;
        session.check_name(&ws, "load", t, &a.item_id).map_err(at)?;
        let item = find_needing_project(&ws, t, &a.item_id, source).map_err(at)?;
        match &a.destination {
            None => Ok(describe(&ws, &item)),
            Some(dest) => {
                let dest = match dest.as_str() {
                    "project" => Space::Project,
                    "user" => Space::User,
                    other => {
                        return Err(at(OpError::new(
                            "invalid_destination",
                            format!("`{other}` is not a destination; use project or user"),
                        )
                        .suggest(vec!["project".into(), "user".into()])))
                    }
                };
                let root = ws
                    .space_root(dest)
                    .ok_or_else(|| at(no_project("destination project needs one")))?;
                // Without a source, the copy comes from the item's next space below the
                // destination (what `force` restores: a user copy from the builtin), else from
                // the other space that has it (a project item copied to the user space);
                // never from the destination itself.
                let item = if source.is_none() {
                    let all = ws.all_with_id(t, &item.id);
                    match all
                        .iter()
                        .find(|i| i.space > dest)
                        .or_else(|| all.iter().find(|i| i.space != dest))
                    {
                        Some(i) => Arc::clone(i),
                        None => {
                            return Err(at(OpError::new(
                                "nothing_to_copy",
                                format!(
                                    "{t} `{}` is only in the {dest} space ({}): there is nothing to copy onto it",
                                    item.id,
                                    item.path.display()
                                ),
                            )))
                        }
                    }
                } else {
                    item
                };
                // An item kiwi refused to read (a symlink out of its space, an unreadable
                // file) is not copied: its text is not the file's, and nothing is written.
                if let workspace::Parsed::Unreadable(d) = &item.parsed {
                    return Err(at(OpError::new(
                        "invalid_item",
                        format!(
                            "cannot copy {t} `{}`: {}; nothing was written",
                            item.id, d.message
                        ),
                    )
                    .with(
                        "diagnostics",
                        diagnostics_json(&item, std::slice::from_ref(d)),
                    )));
                }
                let rel = relative_in_space(&ws, &item);
                let target = root.join(&rel);
                // Under a running directive, the copy creates (or with force overwrites) the
                // destination item: that needs `create` (or `update`) on it, not only `load`.
                let exists = std::fs::symlink_metadata(&target).is_ok();
                let verb = if exists && a.force {
                    "update"
                } else {
                    "create"
                };
                session.check(verb, t, Some(&item.id)).map_err(at)?;
                // Every file is read (and confined to its space) before anything is written.
                let script = match &item.script {
                    None => None,
                    Some(script) => match read_item_file(&ws, &item, script) {
                        Some(text) => Some((root.join(script_rel(&ws, &item, script)), text)),
                        None => {
                            return Err(at(OpError::new(
                                "invalid_item",
                                format!(
                                    "cannot copy {t} `{}`: its script {} cannot be read inside its space (a symlink out of the space, or gone); nothing was written",
                                    item.id,
                                    script.display()
                                ),
                            )))
                        }
                    },
                };
                write_atomic(&root, &target, item.text(), a.force).map_err(|e| at(e.into()))?;
                let mut written = vec![target.to_string_lossy().into_owned()];
                if let Some((st, text)) = script {
                    write_atomic(&root, &st, &text, a.force).map_err(|e| at(e.into()))?;
                    written.push(st.to_string_lossy().into_owned());
                }
                Ok(json!({
                    "item_type": t.as_str(),
                    "id": item.id,
                    "from": item.space.as_str(),
                    "source_path": item.path.to_string_lossy(),
                    "destination": dest.as_str(),
                    "path": target.to_string_lossy(),
                    "overwrote": exists,
                    "written": written,
                    "message": format!(
                        "copied {t} `{}` from the {} space ({}) {} {}",
                        item.id,
                        item.space,
                        item.path.display(),
                        if exists { "onto" } else { "to" },
                        target.display()
                    ),
                }))
            }
        }
    }

    pub(super) fn writable_root(
        &self,
        a: &ExecuteArgs,
        params: &Map<String, Json>,
    ) -> Res<(Space, PathBuf)> {
        let ws = self.workspace(a.project_path.as_deref())?;
        let space = match params.get("space").and_then(Json::as_str) {
            Some("builtin") => {
                return Err(OpError::new(
                    "read_only",
                    "the builtin space is read-only; write to project or user",
                ))
            }
            Some(s) if ws.parse_space(s).is_some_and(|sp| !sp.is_writable()) => {
                return Err(OpError::new(
                    "read_only",
                    format!("`{s}` is an extra space, read-only; write to project or user"),
                ))
            }
            Some(s) => Space::parse(s).ok_or_else(|| {
                OpError::new("invalid_space", format!("`{s}` is not a space"))
                    .suggest(vec!["project".into(), "user".into()])
            })?,
            None => Space::Project,
        };
        let root = ws.space_root(space).ok_or_else(|| {
            no_project(&format!(
                "`{}` would write into the project space",
                a.action
            ))
        })?;
        Ok((space, root))
    }

    pub(super) fn write_item(
        &self,
        t: ItemType,
        action: &str,
        a: &ExecuteArgs,
        params: &Map<String, Json>,
    ) -> Res<Json> {
        let Some(content) = params.get("content").and_then(Json::as_str) else {
            return Err(OpError::new(
                "invalid_parameters",
                format!("{action} needs parameters.content: the whole file as a string"),
            )
            .suggest(vec!["content".into()]));
        };
        if content.trim().is_empty() {
            return Err(OpError::new(
                "invalid_content",
                format!("{action} needs the whole file in parameters.content; it is empty, and nothing was written"),
            )
            .suggest(vec!["content".into()]));
        }
        // An id never carries an extension: the file's follows its content (issue 26).
        if let Some(bare) = id_without_extension(t, &a.item_id) {
            return Err(OpError::new(
                "invalid_id",
                format!(
                    "an id never carries an extension: `{}` is `{bare}` (the file's extension follows its content); nothing was written",
                    a.item_id
                ),
            )
            .suggest(vec![bare]));
        }
        let ws = self.workspace(a.project_path.as_deref())?;
        let existing = ws.get(t, &a.item_id).cloned();
        let (space, root, target) = if action == "update" {
            let Some(item) = existing.clone() else {
                if ws.project.is_none() {
                    return Err(no_project(&format!(
                        "no {t} `{}` in the user space to update, and no project to look in",
                        a.item_id
                    )));
                }
                return Err(OpError::new(
                    "not_found",
                    format!("no {t} `{}` to update; use create", a.item_id),
                )
                .suggest(ws.suggest(t, &a.item_id, None)));
            };
            if item.is_builtin() {
                return Err(OpError::new(
                    "read_only",
                    format!(
                        "`{}` is a builtin item and the builtin space is read-only; copy it first with load (destination: project or user), then update the copy",
                        item.id
                    ),
                ));
            }
            let root = ws.space_root(item.space).unwrap_or_default();
            (item.space, root, item.path.clone())
        } else {
            let (space, root) = self.writable_root(a, params)?;
            let ext = match t {
                ItemType::Tool => tool_ext(params, content),
                _ => "md",
            };
            let folder = t.folder().unwrap_or("");
            let target = root.join(folder).join(format!("{}.{ext}", a.item_id));
            (space, root, target)
        };
        // An id is one file: a create next to another file of the same id in that space (a
        // YAML `X.yaml` beside `X.py`) is refused, force or not (force overwrites the same
        // file, it never adds a second).
        if action == "create" {
            if let Some(other) = ws
                .all_with_id(t, &a.item_id)
                .into_iter()
                .find(|i| i.space == space && i.path != target)
            {
                return Err(OpError::new(
                    "exists",
                    format!(
                        "{t} `{}` is already the file {} in the {space} space; an id is one file: update that file (execute update), or delete it first",
                        a.item_id,
                        other.path.display()
                    ),
                )
                .with("path", json!(other.path.to_string_lossy()))
                .suggest(vec!["update".into(), "delete".into()]));
            }
        }
        let force = action == "update" || params.get("force").and_then(Json::as_bool) == Some(true);
        if !force && std::fs::symlink_metadata(&target).is_ok() {
            return Err(OpError::new(
                "exists",
                format!(
                    "{} exists; use update, or pass parameters.force: true",
                    target.display()
                ),
            )
            .with("path", json!(target.to_string_lossy())));
        }
        // Refuse content that does not parse.
        let Some(parsed) = workspace::parse_item(
            t,
            a.item_id.clone(),
            space,
            target.clone(),
            content.as_bytes(),
        ) else {
            return Err(OpError::new(
                "invalid_content",
                "the content declares no tool metadata (__version__, __tool_type__, __executor_id__...)",
            ));
        };
        // One rule for every write, whatever the format (issue 26): the whole check of the
        // content, as `validate` and `kiwi check` run it; an error-level diagnostic left
        // refuses the write, the diagnostics listed.
        let parsed = Arc::new(parsed);
        let checked = check_item(&ws, &parsed);
        let errors: Vec<Diagnostic> = checked
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .cloned()
            .collect();
        if !errors.is_empty() {
            let codes: Vec<&str> = errors.iter().map(|d| d.code.as_str()).collect();
            let parse = parsed
                .parse_diagnostics()
                .iter()
                .any(|d| d.severity == Severity::Error);
            return Err(OpError::new(
                "invalid_content",
                format!(
                    "the content {} {} error{} ({}); nothing was written",
                    if parse { "does not parse:" } else { "has" },
                    errors.len(),
                    if errors.len() == 1 { "" } else { "s" },
                    codes.join(", ")
                ),
            )
            .with("diagnostics", diagnostics_json(&parsed, &errors)));
        }
        // A file under tools/ that is not a tool is written (tools import library modules,
        // read data files), and the agent is told it will not run.
        let mut warnings: Vec<String> = Vec::new();
        if let Some(kind) = parsed.tool().map(|f| f.kind()) {
            if !kind.is_runnable() {
                let what = match kind {
                    crate::tool::ToolKind::Library => "a library module (no __executor_id__): tools may import it, but it cannot be run; add __executor_id__ (and __version__, __tool_type__) to make it a tool",
                    _ => "a data file (no executor_id): tools may read it, but it cannot be run; add executor_id to make it a tool",
                };
                warnings.push(format!("`{}` was written as {what}", a.item_id));
            }
        }
        write_atomic(&root, &target, content, force)?;
        let ws = self.workspace(a.project_path.as_deref())?;
        let diags = ws
            .item(&target)
            .map(|i| diagnostics_json(i, &check_item(&ws, i)))
            .unwrap_or(json!([]));
        let mut out = json!({
            "item_type": t.as_str(),
            "id": a.item_id,
            "action": action,
            "space": space.as_str(),
            "path": target.to_string_lossy(),
            "diagnostics": diags,
        });
        if !warnings.is_empty() {
            out["warnings"] = json!(warnings);
        }
        Ok(out)
    }

    pub(super) fn delete_item(&self, t: ItemType, a: &ExecuteArgs) -> Res<Json> {
        let ws = self.workspace(a.project_path.as_deref())?;
        let item = find_needing_project(&ws, t, &a.item_id, None)?;
        if item.is_builtin() || item.id != a.item_id {
            if item.is_builtin() {
                return Err(OpError::new(
                    "read_only",
                    format!(
                        "`{}` is a builtin item; the builtin space cannot be changed",
                        item.id
                    ),
                ));
            }
            return Err(OpError::new(
                "not_found",
                format!("no {t} with the exact id `{}`", a.item_id),
            )
            .suggest(vec![item.id.clone()]));
        }
        let root = ws.space_root(item.space).unwrap_or_default();
        ids::confine(&root, &item.path).map_err(|e| OpError::new("invalid_id", e.to_string()))?;
        std::fs::remove_file(&item.path).map_err(|e| {
            OpError::new(
                "io_error",
                format!("cannot delete {}: {e}", item.path.display()),
            )
        })?;
        // What the id names now, read from the workspace after the deletion (another file
        // of the same space, a lower space's item, or nothing).
        let after = self.workspace(a.project_path.as_deref())?;
        let now = after.get(t, &item.id).map(|i| {
            json!({
                "space": i.space.as_str(),
                "path": i.path.to_string_lossy(),
            })
        });
        Ok(json!({
            "item_type": t.as_str(),
            "id": item.id,
            "deleted": item.path.to_string_lossy(),
            "space": item.space.as_str(),
            "now_resolves_to": now,
        }))
    }

    pub(super) fn link(&self, a: &ExecuteArgs, params: &Map<String, Json>) -> Res<Json> {
        let Some(reference) = params
            .get("reference")
            .or_else(|| params.get("target"))
            .or_else(|| params.get("id"))
            .and_then(Json::as_str)
        else {
            return Err(OpError::new(
                "invalid_parameters",
                "link needs parameters.reference: the id of the item to add to `references`",
            )
            .suggest(vec!["reference".into()]));
        };
        check_id(ItemType::Knowledge, reference)?;
        let ws = self.workspace(a.project_path.as_deref())?;
        let item = find_needing_project(&ws, ItemType::Knowledge, &a.item_id, None)?;
        if item.is_builtin() {
            return Err(OpError::new(
                "read_only",
                "builtin knowledge cannot be changed; copy it first with load (destination)",
            ));
        }
        let k = item.knowledge().cloned();
        if k.as_ref().is_some_and(|k| {
            k.references()
                .iter()
                .any(|(f, id, _)| *f == "references" && *id == reference)
        }) {
            return Ok(
                json!({"item_type": "knowledge", "id": item.id, "references_added": [], "already_linked": reference}),
            );
        }
        let new_text = add_reference(item.text(), reference);
        let root = ws.space_root(item.space).unwrap_or_default();
        write_atomic(&root, &item.path, &new_text, true)?;
        Ok(json!({
            "item_type": "knowledge",
            "id": item.id,
            "path": item.path.to_string_lossy(),
            "references_added": [reference],
        }))
    }
}

/// `id` without the file extension it ends with, when it ends with one of an item file of
/// type `t` (`agent/yecho2.yaml`: `agent/yecho2`).
fn id_without_extension(t: ItemType, id: &str) -> Option<String> {
    let exts: &[&str] = match t {
        ItemType::Tool => &[".yaml", ".yml", ".py", ".js", ".mjs", ".cjs", ".ts", ".sh"],
        ItemType::Directive | ItemType::Knowledge => &[".md", ".markdown"],
        ItemType::System | ItemType::Skill => &[],
    };
    let last = id.rsplit('/').next().unwrap_or(id);
    exts.iter().find_map(|e| {
        let stem = last.strip_suffix(e)?;
        (!stem.is_empty()).then(|| id[..id.len() - e.len()].to_string())
    })
}

fn tool_ext(params: &Map<String, Json>, content: &str) -> &'static str {
    match params.get("format").and_then(Json::as_str) {
        Some("yaml") | Some("yml") => return "yaml",
        Some("python") | Some("py") => return "py",
        _ => {}
    }
    if content.contains("__version__")
        || content.contains("__executor_id__")
        || content.contains("\ndef ")
        || content.starts_with("import ")
        || content.starts_with("\"\"\"")
        || content.starts_with("#!")
    {
        "py"
    } else {
        "yaml"
    }
}

/// An item's diagnostics in the one view of `diag::view` (as `kiwi check --format json`).
pub fn diagnostics_json(item: &Item, diags: &[Diagnostic]) -> Json {
    crate::diag::view::DiagnosticView::json(crate::diag::view::FileText::of_item(item), diags)
}

/// An item as `load` shows it.
pub fn describe(ws: &Workspace, item: &Arc<Item>) -> Json {
    let m = search::meta(item);
    let diags = check_item(ws, item);
    let shadows: Vec<&str> = ws
        .all_with_id(item.item_type, &item.id)
        .iter()
        .filter(|i| i.path != item.path)
        .map(|i| i.space.as_str())
        .collect();
    let winner = ws.get(item.item_type, &item.id);
    let mut v = json!({
        "item_type": item.item_type.as_str(),
        "id": item.id,
        "source": item.space.as_str(),
        "path": item.path.to_string_lossy(),
        "metadata": m,
        "content": item.text(),
        "diagnostics": diagnostics_json(item, &diags),
        "other_spaces": shadows,
    });
    if let Some(w) = winner {
        if w.path != item.path {
            v["shadowed_by"] = json!(w.space.as_str());
        }
    }
    if let Some(s) = &item.script {
        v["script"] = json!(s.to_string_lossy());
    }
    if let Some((schema, example)) = tool_parameters(item) {
        v["parameters"] = schema;
        v["example"] = example;
    }
    if let Some(k) = item.knowledge() {
        if let Some(fm) = k.frontmatter.as_ref().and_then(|f| f.to_json()) {
            v["frontmatter"] = fm;
        }
        // The body is in `content` (once): where it starts, not a second copy (issue 26).
        let start = k.body.start.min(item.text().len());
        let line = item.text().as_bytes()[..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        v["body_line"] = json!(line);
    }
    v
}

/// A runnable tool's parameters as JSON Schema (its `CONFIG_SCHEMA`; an object schema with
/// no properties when it declares none) and one call that runs it: the required parameters
/// (every one when none is required), each with its default, first enum value or examples'
/// first, else a value of its type (issue 26, B).
fn tool_parameters(item: &Item) -> Option<(Json, Json)> {
    let tool = item.tool()?;
    if !tool.kind().is_runnable() {
        return None;
    }
    let mut schema = tool
        .value(crate::tool::Field::ConfigSchema)
        .and_then(|v| v.to_json())
        .filter(Json::is_object)
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    let props = schema
        .get("properties")
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema
        .get("required")
        .and_then(Json::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Json::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut params = Map::new();
    for (name, p) in &props {
        if !required.is_empty() && !required.contains(name) {
            continue;
        }
        params.insert(name.clone(), example_value(name, p));
    }
    let example = json!({
        "tool": "execute",
        "arguments": {"item_type": "tool", "action": "run", "item_id": item.id, "parameters": params},
    });
    Some((schema, example))
}

/// A value a parameter with schema `p` takes, for an example call.
fn example_value(name: &str, p: &Json) -> Json {
    if let Some(d) = p.get("default") {
        return d.clone();
    }
    if let Some(e) = p
        .get("enum")
        .and_then(Json::as_array)
        .and_then(|e| e.first())
    {
        return e.clone();
    }
    if let Some(e) = p
        .get("examples")
        .and_then(Json::as_array)
        .and_then(|e| e.first())
    {
        return e.clone();
    }
    let ty = match p.get("type") {
        Some(Json::String(t)) => t.as_str(),
        Some(Json::Array(ts)) => ts
            .iter()
            .filter_map(Json::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!(format!("<{name}>")),
    }
}

fn relative_in_space(ws: &Workspace, item: &Item) -> PathBuf {
    if item.is_builtin() {
        item.path
            .strip_prefix(BUILTIN_ROOT)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| item.path.clone())
    } else {
        ws.space_root(item.space)
            .and_then(|r| item.path.strip_prefix(r).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| item.path.clone())
    }
}

fn script_rel(ws: &Workspace, item: &Item, script: &Path) -> PathBuf {
    if item.is_builtin() {
        script
            .strip_prefix(BUILTIN_ROOT)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| script.to_path_buf())
    } else {
        ws.space_root(item.space)
            .and_then(|r| script.strip_prefix(r).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| script.to_path_buf())
    }
}

pub(super) fn read_item_file(ws: &Workspace, item: &Item, file: &Path) -> Option<String> {
    if item.is_builtin() {
        let rel = file.strip_prefix(BUILTIN_ROOT).ok()?.to_str()?;
        return workspace::builtin_file(rel).map(str::to_string);
    }
    let root = ws.space_root(item.space)?;
    let real = ids::confine(&root, file).ok()?;
    String::from_utf8(ids::read_regular(&real).ok()?).ok()
}

/// Add an id to a knowledge entry's `references` (front matter), keeping the rest of the text.
pub fn add_reference(text: &str, reference: &str) -> String {
    let Some(rest) = text.strip_prefix("---\n") else {
        return format!("---\nreferences: [{reference}]\n---\n\n{text}");
    };
    let Some(end) = rest.find("\n---") else {
        return format!("---\nreferences: [{reference}]\n---\n\n{text}");
    };
    let fm = &rest[..end];
    let after = &rest[end..];
    let mut lines: Vec<String> = fm.lines().map(str::to_string).collect();
    if let Some(i) = lines.iter().position(|l| l.starts_with("references:")) {
        let value = lines[i]["references:".len()..].trim().to_string();
        if value.starts_with('[') && value.ends_with(']') {
            let inner = value[1..value.len() - 1].trim();
            lines[i] = if inner.is_empty() {
                format!("references: [{reference}]")
            } else {
                format!("references: [{inner}, {reference}]")
            };
        } else if value.is_empty() {
            let mut j = i + 1;
            while j < lines.len() && (lines[j].starts_with(' ') || lines[j].starts_with('-')) {
                j += 1;
            }
            let indent = lines
                .get(i + 1)
                .filter(|l| l.trim_start().starts_with('-'))
                .map(|l| l.len() - l.trim_start().len())
                .unwrap_or(2);
            lines.insert(j, format!("{}- {reference}", " ".repeat(indent)));
        } else {
            lines[i] = format!("references: [{value}, {reference}]");
        }
    } else {
        lines.push(format!("references: [{reference}]"));
    }
    format!("---\n{}{after}", lines.join("\n"))
}
