//! `execute action: publish` (`10-registry.md`): a workspace item published to a configured
//! registry, signed with the user's key, through the one path `kiwi publish` takes
//! ([`crate::registry::ops::publish_item`]). The session check (a running directive that
//! grants `publish`) is made before, with every other action's.

use super::error::{OpError, Res};
use super::items::{diagnostics_json, find_needing_project};
use super::{ExecuteArgs, Service};
use crate::check::check_item;
use crate::diag::{Diagnostic, Severity};
use crate::ids::ItemType;
use crate::registry::ops;
use serde_json::{json, Map, Value as Json};

impl Service {
    pub(super) fn publish(
        &self,
        t: ItemType,
        a: &ExecuteArgs,
        params: &Map<String, Json>,
    ) -> Res<Json> {
        let text = |k: &str| -> Res<Option<&str>> {
            match params.get(k) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim())),
                Some(_) => Err(OpError::new(
                    "invalid_parameters",
                    format!("parameters.{k} must be a non-empty string"),
                )),
            }
        };
        if let Some(k) = params
            .keys()
            .find(|k| !["registry", "version"].contains(&k.as_str()))
        {
            return Err(OpError::new(
                "invalid_parameters",
                format!("publish takes parameters registry and version, not `{k}`"),
            )
            .suggest(vec!["registry".into(), "version".into()]));
        }
        let registry = text("registry")?;
        let version = text("version")?;
        let ws = self.workspace(a.project_path.as_deref())?;
        let item = find_needing_project(&ws, t, &a.item_id, None)?;
        // Refused with its diagnostics, as a run is (the publish path refuses it too).
        let errors: Vec<Diagnostic> = check_item(&ws, &item)
            .into_iter()
            .filter(|x| x.severity == Severity::Error)
            .collect();
        if !errors.is_empty() {
            return Err(OpError::new(
                "invalid_item",
                format!(
                    "{t} `{}` has {} error diagnostic(s); fix them before publishing (execute validate shows them); nothing was published",
                    item.id,
                    errors.len()
                ),
            )
            .with("diagnostics", diagnostics_json(&item, &errors)));
        }
        let us = self.host.user_space();
        let published = ops::publish_item(&us, &ws, &item, registry, version, false)
            .map_err(super::registry::op_error)?;
        let mut v = serde_json::to_value(&published).unwrap_or(Json::Null);
        v["item_type"] = json!(t.as_str());
        v["id"] = json!(item.id);
        v["path"] = json!(item.path.to_string_lossy());
        Ok(v)
    }
}
