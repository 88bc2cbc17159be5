//! Directives as prompts and items as `kiwi://TYPE/ID` resources.

use super::directive_run::{bind_inputs, fill, refuse_directive_errors};
use super::error::{check_id, parse_type, OpError, Res};
use super::items::{find, read_item_file, system_item};
use super::{Service, Session};
use crate::ids::ItemType;
use crate::system;
use crate::workspace::{self, Item};
use serde_json::{json, Map, Value as Json};
use std::path::Path;

/// A directive as a prompt: (id, description, inputs as (name, description, required)).
pub type DirectiveSummary = (String, Option<String>, Vec<(String, String, bool)>);
/// An item as a resource: (uri, name, description, mime type).
pub type ResourceSummary = (String, String, Option<String>, &'static str);

/// The query that names a YAML tool's script as a resource: `kiwi://tool/ID?file=script`.
pub const SCRIPT_QUERY: &str = "?file=script";

pub(super) fn mime_of(item: &Item) -> &'static str {
    mime_of_path(&item.path)
}

fn mime_of_path(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("yaml") | Some("yml") => "application/yaml",
        _ => "text/plain",
    }
}

impl Service {
    /// The directives (winners by precedence), for prompts: (id, description, inputs as
    /// (name, description, required)).
    pub fn directives(&self, project_path: Option<&str>) -> Res<Vec<DirectiveSummary>> {
        let ws = self.workspace(project_path)?;
        let mut out = Vec::new();
        for id in ws.ids(ItemType::Directive).iter() {
            // Kept from the parse that read the file (the search index's, at start-up).
            let Some(p) = ws.prompt_summary(id) else {
                continue;
            };
            out.push((id.to_string(), p.description.clone(), p.inputs.clone()));
        }
        Ok(out)
    }

    /// A directive as a prompt: its inputs bound and placeholders filled, with how to run it
    /// (every secret redacted from the text, and from a refusal).
    pub fn prompt(
        &self,
        session: &Session,
        id: &str,
        args: &Map<String, Json>,
    ) -> Res<(Option<String>, String)> {
        let secrets = self.secrets();
        let at = |e: OpError| {
            e.at(Some("directive"), Some("run"), Some(id))
                .redacted(&secrets)
        };
        let ws = self.workspace(None).map_err(at)?;
        session
            .check_name(&ws, "load", ItemType::Directive, id)
            .map_err(at)?;
        let item = find(&ws, ItemType::Directive, id, None).map_err(at)?;
        let Some(d) = item.directive() else {
            return Err(at(OpError::new(
                "invalid_content",
                "this directive could not be read",
            )));
        };
        refuse_directive_errors(&ws, &item).map_err(at)?;
        let values = bind_inputs(d, args).map_err(at)?;
        let filled = if d.ryeos.is_some() {
            super::directive_run::fill_ryeos_inputs(item.text(), &values)
        } else {
            fill(item.text(), d, &values, &self.host, ws.project.as_deref())
        };
        let call = json!({"item_type": "directive", "action": "run", "item_id": item.id, "parameters": values});
        let text = format!(
            "Follow the kiwi directive `{}`. Start it with the kiwi `execute` tool: {call}, then follow what it returns (its steps, or a ryeos directive's body) and call done at the end.\n\n{filled}",
            item.id
        );
        Ok((
            item.description().map(str::to_string),
            secrets.redact(&text),
        ))
    }

    /// Every item as a resource: (uri, name, description, mime type).
    pub fn resources(&self, project_path: Option<&str>) -> Res<Vec<ResourceSummary>> {
        let ws = self.workspace(project_path)?;
        let mut out = Vec::new();
        for t in ItemType::FILE_TYPES {
            for id in ws.ids(t).iter() {
                let Some(item) = ws.peek_id(t, id) else {
                    continue;
                };
                out.push((
                    format!("kiwi://{t}/{id}"),
                    format!("{t} {id}"),
                    item.description().map(str::to_string),
                    mime_of(&item),
                ));
                // A YAML tool's script is a file of the tool too: its own resource.
                if let Some(script) = &item.script {
                    out.push((
                        format!("kiwi://{t}/{id}{SCRIPT_QUERY}"),
                        format!("{t} {id} (script)"),
                        Some(format!(
                            "The script of tool {id}: {}",
                            script
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        )),
                        mime_of_path(script),
                    ));
                }
            }
        }
        for s in system::CATALOGUE {
            out.push((
                format!("kiwi://system/{}", s.id),
                format!("system {}", s.id),
                Some(s.description.to_string()),
                "application/json",
            ));
        }
        Ok(out)
    }

    /// Read `kiwi://TYPE/ID`: (uri, text, mime type) of each file: the item's, then for a
    /// YAML tool with a script the script's (`kiwi://tool/ID?file=script`, also readable
    /// alone). The texts (and a refusal) with every secret redacted.
    pub fn read_resource_files(
        &self,
        session: &Session,
        uri: &str,
    ) -> Res<Vec<(String, String, &'static str)>> {
        let secrets = self.secrets();
        Ok(self
            .resource_files(session, uri)
            .map_err(|e| e.redacted(&secrets))?
            .into_iter()
            .map(|(uri, text, mime)| (uri, secrets.redact(&text), mime))
            .collect())
    }

    fn resource_files(
        &self,
        session: &Session,
        uri: &str,
    ) -> Res<Vec<(String, String, &'static str)>> {
        let (base, script_only) = match uri.strip_suffix(SCRIPT_QUERY) {
            Some(b) => (b, true),
            None => (uri, false),
        };
        let (text, mime) = self.read_resource(session, base)?;
        let script = match base.strip_prefix("kiwi://tool/") {
            Some(id) => {
                let ws = self.workspace(None)?;
                let item = find(&ws, ItemType::Tool, id, None)?;
                match &item.script {
                    Some(sc) => Some((
                        read_item_file(&ws, &item, sc).ok_or_else(|| {
                            OpError::new(
                                "invalid_item",
                                format!(
                                    "the script of tool `{}` cannot be read inside its space",
                                    item.id
                                ),
                            )
                        })?,
                        mime_of_path(sc),
                    )),
                    None => None,
                }
            }
            None => None,
        };
        if script_only {
            let Some((st, sm)) = script else {
                return Err(OpError::new(
                    "not_found",
                    format!("`{base}` has no script (only a YAML tool with a same-stem script file has one)"),
                ));
            };
            return Ok(vec![(uri.to_string(), st, sm)]);
        }
        let mut out = vec![(uri.to_string(), text, mime)];
        if let Some((st, sm)) = script {
            out.push((format!("{uri}{SCRIPT_QUERY}"), st, sm));
        }
        Ok(out)
    }

    /// Read `kiwi://TYPE/ID`: (text, mime type).
    pub fn read_resource(&self, session: &Session, uri: &str) -> Res<(String, &'static str)> {
        let Some(rest) = uri.strip_prefix("kiwi://") else {
            return Err(OpError::new(
                "invalid_uri",
                format!("`{uri}` is not a kiwi:// uri; use kiwi://TYPE/ID"),
            ));
        };
        let Some((t, id)) = rest.split_once('/') else {
            return Err(OpError::new(
                "invalid_uri",
                format!("`{uri}` has no id; use kiwi://TYPE/ID"),
            ));
        };
        let t = parse_type(t)?;
        check_id(t, id)?;
        if t == ItemType::System {
            session.check("load", t, Some(id))?;
            let project = self.project_for(None)?;
            let v = system_item(id, &self.host, project.as_deref(), session)?;
            return Ok((
                serde_json::to_string_pretty(&v).unwrap_or_default(),
                "application/json",
            ));
        }
        let ws = self.workspace(None)?;
        session.check_name(&ws, "load", t, id)?;
        let item = find(&ws, t, id, None)?;
        if let workspace::Parsed::Unreadable(d) = &item.parsed {
            return Err(OpError::new(
                "invalid_item",
                format!("{t} `{}` cannot be read: {}", item.id, d.message),
            ));
        }
        Ok((item.text().to_string(), mime_of(&item)))
    }
}
