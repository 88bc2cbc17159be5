//! `search source: registry` and `load source: registry` (`10-registry.md`): the configured
//! registries through the same calls as the spaces. The registries' search index is kept
//! between calls and rebuilt only when a registry's clone moved (its branch's commit, read
//! from the clone's files without running git) or the configuration changed.

use super::error::{OpError, Res};
use super::query::{SearchArgs, MAX_QUERY_BYTES};
use super::{LoadArgs, Service, Session};
use crate::ids::ItemType;
use crate::registry::{self, config, format, ops, store, ErrorKind, RegistryError};
use crate::search::Index;
use serde_json::{json, Value as Json};
use std::sync::Arc;

/// The registries' index, and what it was built from.
#[derive(Default)]
pub(super) struct RegistryIndex {
    key: String,
    index: Option<Arc<Index>>,
}

pub(super) fn op_error(e: RegistryError) -> OpError {
    let kind = match e.kind {
        ErrorKind::Invalid => "invalid_arguments",
        ErrorKind::NotFound => "not_found",
        ErrorKind::Hostile => "registry_refused",
        ErrorKind::Conflict => "exists",
        ErrorKind::Untrusted => "untrusted",
        ErrorKind::Git => "registry_unavailable",
        ErrorKind::Io => "io_error",
    };
    OpError::new(kind, e.message)
}

impl Service {
    /// What the registries' index depends on: the configuration and each clone's state.
    fn registry_key(&self) -> String {
        let us = self.host.user_space();
        let mut key = std::fs::read_to_string(config::config_file(&us)).unwrap_or_default();
        if let Ok(cfg) = config::load(&us) {
            for e in &cfg.entries {
                key.push('\0');
                key.push_str(
                    &store::fetched_state(&store::clone_dir(&us, &e.name)).unwrap_or_default(),
                );
            }
        }
        key
    }

    fn registry_index(&self, only: Option<&str>) -> Res<Arc<Index>> {
        let us = self.host.user_space();
        if only.is_some() {
            let (idx, _) = registry::search::build(&us, None, only).map_err(op_error)?;
            return Ok(Arc::new(idx));
        }
        let key = self.registry_key();
        let mut cache = self
            .registry_index
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(idx) = cache.index.as_ref().filter(|_| cache.key == key) {
            return Ok(Arc::clone(idx));
        }
        let (idx, _) = registry::search::build(&us, None, None).map_err(op_error)?;
        let idx = Arc::new(idx);
        *cache = RegistryIndex {
            key,
            index: Some(Arc::clone(&idx)),
        };
        Ok(idx)
    }

    /// `search` with `source: registry` or `registry:NAME`.
    pub(super) fn search_registry(
        &self,
        session: &Session,
        a: &SearchArgs,
        t: ItemType,
        only: Option<&str>,
    ) -> Res<Json> {
        session.check("search", t, None)?;
        if a.query.len() > MAX_QUERY_BYTES {
            return Err(OpError::new(
                "invalid_arguments",
                format!("a search query is at most {MAX_QUERY_BYTES} bytes"),
            ));
        }
        let limit = a
            .limit
            .unwrap_or(10)
            .clamp(1, super::query::MAX_SEARCH_LIMIT);
        let idx = self.registry_index(only)?;
        let keep = |id: &str| session.visible("search", t, id);
        let (mut hits, total) = if a.query.trim().is_empty() || a.query.trim() == "*" {
            idx.list_filtered(t, None, limit, &keep)
        } else {
            idx.search_filtered(t, &a.query, None, limit, &keep)
        };
        // Shadowing against the workspace's items, as they are now.
        if let Ok(local) = self.search_index(a.project_path.as_deref()) {
            for h in &mut hits {
                h.shadowed_by = local.winner(t, &h.id).map(|s| s.as_str().to_string());
            }
        }
        // Every version beside the latest (a yanked one named as such).
        let us = self.host.user_space();
        let results: Vec<Json> = hits
            .iter()
            .map(|h| {
                let mut v = serde_json::to_value(h).unwrap_or(Json::Null);
                if let Some(list) = registry::search::versions_of(&us, &h.source, t, &h.id) {
                    v["versions"] = json!(list);
                }
                v
            })
            .collect();
        Ok(json!({
            "item_type": t.as_str(),
            "query": a.query,
            "total": total,
            "results": results,
        }))
    }

    /// `load` with `source: registry` or `registry:NAME`: without a destination, the item's
    /// versions and latest index line; with one, a pull (checked before anything is written,
    /// pinned in the project's `.ai/kiwi.lock`).
    pub(super) fn load_registry(
        &self,
        session: &Session,
        a: &LoadArgs,
        t: ItemType,
        only: Option<&str>,
    ) -> Res<Json> {
        if t == ItemType::System {
            return Err(OpError::new(
                "invalid_source",
                "system items are computed by kiwi; registries hold directives, tools and knowledge",
            ));
        }
        let (_, id, version) =
            format::parse_reference(&format!("{}/{}", t.as_str(), a.item_id)).map_err(op_error)?;
        session.check("load", t, Some(&id))?;
        let us = self.host.user_space();
        let Some(dest) = a.destination.as_deref() else {
            let cfg = config::load(&us).map_err(op_error)?;
            let entries: Vec<&config::RegistryEntry> = match only {
                Some(n) => vec![cfg.find(n).map_err(op_error)?],
                None => cfg.entries.iter().collect(),
            };
            for e in entries {
                let clone = store::open_or_fetch(&us, e).map_err(op_error)?;
                if let Some(v) = store::item_versions(&clone.dir, t, &id).map_err(op_error)? {
                    let label = format!("{t}/{id}");
                    let chosen = v.resolve(&label, version.as_deref()).map_err(op_error)?;
                    return Ok(json!({
                        "item_type": t.as_str(),
                        "id": id,
                        "source": registry::search::source_name(&e.name),
                        "registry": crate::redact::urls(&e.url),
                        "commit": clone.commit,
                        "versions": v.list(),
                        "version": chosen.line.version,
                        "line": chosen.line,
                    }));
                }
            }
            return Err(OpError::new(
                "not_found",
                format!("no registry has {t}/{id} ({})", cfg.names()),
            ));
        };
        let to = match dest {
            "project" => ops::Destination::Project,
            "user" => ops::Destination::User,
            other => {
                return Err(OpError::new(
                    "invalid_destination",
                    format!("`{other}` is not a destination; use project or user"),
                )
                .suggest(vec!["project".into(), "user".into()]))
            }
        };
        let ws = self.workspace(a.project_path.as_deref())?;
        // Every item the pull writes (the chain's too) is checked, before anything is
        // written: `create`, or `update` for one it replaces.
        let refused: std::cell::RefCell<Option<OpError>> = std::cell::RefCell::new(None);
        let permit = |t: ItemType, id: &str, replaces: bool| {
            let verb = if replaces && a.force {
                "update"
            } else {
                "create"
            };
            session.check(verb, t, Some(id)).map_err(|e| {
                let why = e.message.clone();
                *refused.borrow_mut() = Some(e);
                why
            })
        };
        if let Err(why) = permit(t, &id, ws.get(t, &id).is_some()) {
            return Err(refused
                .take()
                .unwrap_or_else(|| OpError::new("permission_denied", why)));
        }
        let project = self.project_for(a.project_path.as_deref())?;
        if to == ops::Destination::Project && project.is_none() {
            return Err(super::error::no_project(
                "a pull into the project needs one",
            ));
        }
        let cfg = crate::config::Config::load(&us, project.as_deref());
        let policy = cfg.require_signed;
        let pulled = ops::pull(&ops::PullArgs {
            user_space: &us,
            project: project.as_deref(),
            ws: Some(&ws),
            items: vec![ops::Request {
                item_type: t,
                id: id.clone(),
                version: version.clone(),
            }],
            mode: ops::Mode::Requested,
            to,
            force: a.force,
            overwrite_local: false,
            registry: only,
            require_signed: &policy,
            trust_on_first_use: cfg.trust_on_first_use == Some(true),
            permit: Some(&permit),
        })
        .map_err(|e| match refused.take() {
            Some(denied) => denied.with("nothing_written", json!(true)),
            None => op_error(e),
        })?;
        Ok(json!({"pulled": pulled}))
    }
}
