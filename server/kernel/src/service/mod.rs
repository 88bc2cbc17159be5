//! The semantics of the four meta-tools (`search`, `load`, `execute`, `help`), free of any
//! protocol: a [`Service`] keeps one workspace per project true to the disk (re-validated on
//! every call; nothing unchanged is re-parsed), a [`Session`] holds the active directives
//! whose capabilities every call is checked against (04, Enforcement). Answers are JSON
//! values; refusals are [`OpError`]s the agent can act on.
//!
//! The rooms: `error` (refusals and argument parsing), `session` (capability checks),
//! `spaces` (the workspaces kept true to the disk, with [`crate::watch`]), `query`
//! (`search`), `resources` (prompts and `kiwi://` resources), `items` (`load`, copies,
//! create/update/delete/link), `directive_run` (run, bind inputs, fill), `tool_run` (a
//! tool's run and its failure), `help`; this file holds the [`Service`] and `execute`'s
//! dispatch.

mod directive_run;
mod error;
mod help;
mod items;
mod publish;
mod query;
mod registry;
mod resources;
mod session;
mod skills;
mod spaces;
mod tool_run;

pub use directive_run::{bind_inputs, fill};
pub use error::{OpError, OpErrorBody};
pub use help::{help, HELP_TOPICS};
pub use items::{add_reference, describe, diagnostics_json};
pub use query::{SearchArgs, MAX_QUERY_BYTES, MAX_SEARCH_LIMIT};
pub use resources::{DirectiveSummary, ResourceSummary, SCRIPT_QUERY};
pub use session::{Active, Session};
pub use tool_run::run_failure;

use crate::check::check_item;
use crate::context::Host;
use crate::diag::{closest_n, Severity};
use crate::exec::{CancellationToken, OutputSink};
use crate::ids::ItemType;
use directive_run::run_directive;
use error::{check_id, parse_type, Res};
use items::find_needing_project;
use serde_json::{json, Map, Value as Json};
use spaces::{CachedIndex, Projects};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

// ---------------------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, Default)]
pub struct LoadArgs {
    pub item_type: String,
    pub item_id: String,
    pub source: Option<String>,
    pub destination: Option<String>,
    pub force: bool,
    pub project_path: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ExecuteArgs {
    pub item_type: String,
    pub action: String,
    pub item_id: String,
    pub parameters: Option<Json>,
    pub dry_run: bool,
    pub project_path: Option<String>,
    /// A directive run: also the filled file (`body`) and each step's XML (`text`).
    pub raw: bool,
    /// A directive run: the running directive to nest it under (one the session runs).
    pub parent: Option<String>,
    /// A tool run: where (`local`, `sandbox`, `container`, `ssh:HOST`), as `kiwi run --env`.
    pub environment: Option<String>,
}

/// The actions of each item type (05, the `execute` table).
pub fn actions_of(t: ItemType) -> &'static [&'static str] {
    match t {
        ItemType::Directive => &[
            "run", "done", "validate", "create", "update", "delete", "publish",
        ],
        ItemType::Tool => &[
            "run", "dry_run", "validate", "create", "update", "delete", "publish",
        ],
        ItemType::Knowledge => &[
            "run", "validate", "create", "update", "delete", "link", "publish",
        ],
        ItemType::System => &["run"],
        ItemType::Skill => &["validate"],
    }
}

/// The kernel side of an agent server: workspaces kept true to the disk, and the four
/// meta-tools.
pub struct Service {
    project: Option<PathBuf>,
    host: Host,
    spaces: Mutex<Projects>,
    /// The projects whose workspace is being loaded (under the `spaces` lock).
    loading: Mutex<std::collections::HashSet<Option<PathBuf>>>,
    /// The search index kept on disk of a project not loaded yet, read by a search that comes
    /// before the workspace is loaded (or by `warm`); dropped once it is.
    cached: Mutex<HashMap<Option<PathBuf>, CachedIndex>>,
    /// The registries' search index (`source: registry`), kept while no registry moved.
    registry_index: Mutex<registry::RegistryIndex>,
    /// An editor's open documents, the truth for their items over the disk (a service
    /// attached to a language server: [`Service::with_open_documents`]).
    open_docs: Option<std::sync::Arc<dyn OpenDocuments>>,
    /// The entries of served skills, kept for the workspace's generation.
    skill_entries: Mutex<skills::KeptEntries>,
}

/// The open documents of an editor (a language server's overlays): for a workspace, each
/// open document's path and the item its unsaved text parses to (`None`: it declares no
/// item). A [`Service`] given them answers from them instead of the disk, as the editor does.
pub trait OpenDocuments: Send + Sync {
    fn open_items(
        &self,
        project: &Option<PathBuf>,
    ) -> Vec<(PathBuf, Option<std::sync::Arc<crate::workspace::Item>>)>;
}

/// The builtin tool whose primitive is the kernel's `init` (run in process by the server).
pub const INIT_TOOL: &str = "core/init_userspace";

impl Service {
    /// `project`: the fixed project root (`--project`, or the working directory when it holds
    /// `.ai/`); without one each call's `project_path` names it.
    pub fn new(project: Option<PathBuf>, host: Host) -> Self {
        Service {
            project,
            spaces: Mutex::new(Projects::new(host.clone())),
            host,
            loading: Mutex::new(Default::default()),
            cached: Mutex::new(HashMap::new()),
            registry_index: Mutex::new(Default::default()),
            open_docs: None,
            skill_entries: Mutex::new(Default::default()),
        }
    }

    /// This service answers from an editor's open documents (unsaved text) where it has
    /// them, and from the disk elsewhere.
    pub fn with_open_documents(mut self, docs: std::sync::Arc<dyn OpenDocuments>) -> Self {
        self.open_docs = Some(docs);
        self
    }

    pub fn project(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    /// The most bytes of JSON one agent answer carries: `mcp.max_answer_bytes` of the user's
    /// and the project's `config.yaml` (the smaller; a project only narrows), else
    /// [`crate::config::DEFAULT_ANSWER_BYTES`].
    pub fn max_answer_bytes(&self) -> usize {
        crate::config::Config::load(&self.host.user_space(), self.project.as_deref())
            .max_answer_bytes
            .unwrap_or(crate::config::DEFAULT_ANSWER_BYTES)
    }

    /// Values that must never appear in an answer: the server's variables that the
    /// environment filter blocks, when they look like secrets (the rule is in
    /// [`crate::redact`]).
    pub fn secrets(&self) -> crate::redact::Secrets {
        self.host.secrets()
    }

    /// An answer, or a refusal, with every secret redacted (strings and keys, in place): what
    /// the service gives a face. The one pass over an answer; a tool run's output is not in
    /// it (redacted once, as it streamed: [`crate::exec::run`]).
    fn redacted(&self, r: Res<Json>) -> Res<Json> {
        let secrets = self.secrets();
        match r {
            Ok(v) => Ok(secrets.redact_json(v)),
            Err(e) => Err(e.redacted(&secrets)),
        }
    }

    /// `search` (see [`SearchArgs`]); the answer redacted.
    pub fn search(&self, session: &Session, a: &SearchArgs) -> Res<Json> {
        self.redacted(self.search_answer(session, a))
    }

    /// `load` (see [`LoadArgs`]); the answer redacted.
    pub fn load(&self, session: &Session, a: &LoadArgs) -> Res<Json> {
        self.redacted(self.load_answer(session, a))
    }

    // ------------------------------------------------------------------ execute

    /// `execute`: every action of the table. A tool `run` streams its output to `sink` and
    /// stops when `cancel` fires. The answer redacted; a tool run's output (its `result`) was
    /// redacted as it streamed and is not gone over again.
    pub async fn execute(
        &self,
        session: &Mutex<Session>,
        a: &ExecuteArgs,
        sink: &dyn OutputSink,
        cancel: &CancellationToken,
    ) -> Res<Json> {
        let mut output = None;
        let r = self.dispatch(session, a, sink, cancel, &mut output).await;
        let mut r = self.redacted(r);
        if let (Ok(v), Some(output)) = (&mut r, output) {
            v["result"] = output;
        }
        r
    }

    /// `execute` without the redaction of its answer; a tool run leaves its output in
    /// `output` (the answer's `result`).
    async fn dispatch(
        &self,
        session: &Mutex<Session>,
        a: &ExecuteArgs,
        sink: &dyn OutputSink,
        cancel: &CancellationToken,
        output: &mut Option<Json>,
    ) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some(&a.action), Some(&a.item_id));
        let t = parse_type(&a.item_type).map_err(at)?;
        let allowed = actions_of(t);
        let action = if a.dry_run && a.action == "run" && t == ItemType::Tool {
            "dry_run"
        } else {
            a.action.as_str()
        };
        if !allowed.contains(&action) {
            let msg = if t == ItemType::System {
                format!("system items are read-only: only `run` is allowed, not `{action}`")
            } else {
                format!("`{action}` is not an action of {t} items")
            };
            let mut s: Vec<String> = closest_n(action, allowed.iter().copied(), 1)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = allowed.iter().map(|s| s.to_string()).collect();
            }
            return Err(at(OpError::new(
                if t == ItemType::System {
                    "read_only"
                } else {
                    "invalid_action"
                },
                msg,
            )
            .suggest(s)
            .with("allowed_actions", json!(allowed))));
        }
        check_id(t, &a.item_id).map_err(at)?;
        let params = match &a.parameters {
            None | Some(Json::Null) => Map::new(),
            Some(Json::Object(m)) => m.clone(),
            Some(_) => {
                return Err(at(OpError::new(
                    "invalid_parameters",
                    "parameters must be a JSON object",
                )))
            }
        };
        if action != "done" {
            let verb = match action {
                "dry_run" => "run",
                "link" => "update",
                v => v,
            };
            let mut s = session.lock().unwrap_or_else(|p| p.into_inner()).clone();
            // The active directive run again (a restart) is checked against what it runs
            // inside, not against itself: it never grants its own run. (A directive further
            // down is run again only if the active one grants it: nesting only narrows.)
            if t == ItemType::Directive
                && action == "run"
                && a.parent.as_deref().is_none_or(str::is_empty)
                && s.active().is_some_and(|x| x.id == a.item_id)
            {
                s.stack.pop();
            }
            // On every item the name can resolve to (a workspace that cannot be had runs
            // nothing: the call fails below with its reason).
            match self.workspace(a.project_path.as_deref()) {
                Ok(ws) => s.check_name(&ws, verb, t, &a.item_id),
                Err(_) => s.check(verb, t, Some(&a.item_id)),
            }
            .map_err(at)?;
        }
        let pp = a.project_path.as_deref();
        match (t, action) {
            (ItemType::System, _) => {
                let project = self.project_for(pp).map_err(at)?;
                let s = session.lock().unwrap_or_else(|p| p.into_inner()).clone();
                items::system_item(&a.item_id, &self.host, project.as_deref(), &s).map_err(at)
            }
            (_, "create") | (_, "update") => self.write_item(t, action, a, &params).map_err(at),
            (_, "delete") => self.delete_item(t, a).map_err(at),
            (_, "validate") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                let diags = check_item(&ws, &item);
                let errors = diags
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                Ok(json!({
                    "item_type": t.as_str(),
                    "id": item.id,
                    "path": item.path.to_string_lossy(),
                    "valid": errors == 0,
                    "diagnostics": diagnostics_json(&item, &diags),
                }))
            }
            (ItemType::Directive, "run") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
                // Where it goes before anything is run: a `parent` that is not running is
                // refused with the session unchanged.
                let place =
                    session::placement(&s, &ws, &item.id, a.parent.as_deref()).map_err(at)?;
                let mut out = run_directive(&ws, &item, &params, &self.host, a.raw).map_err(at)?;
                let caps = crate::directive::held_capabilities(&ws, &item);
                let ended: Vec<String> = s.stack.drain(place.keep..).map(|x| x.id).collect();
                s.stack.push(Active {
                    id: item.id.clone(),
                    capabilities: caps,
                    ryeos: item.directive().is_some_and(|d| d.ryeos.is_some()),
                });
                out["session"] = json!({
                    "active_directive": item.id,
                    "depth": s.stack.len(),
                    "nested": place.parent.is_some(),
                    "parent": place.parent,
                    "ended": ended,
                    "how": place.how,
                });
                Ok(out)
            }
            (ItemType::Directive, "done") => {
                let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
                let Some(pos) = s.stack.iter().rposition(|x| x.id == a.item_id) else {
                    let active: Vec<String> = s.stack.iter().map(|x| x.id.clone()).collect();
                    return Err(at(OpError::new(
                        "not_active",
                        format!("directive `{}` is not running in this session", a.item_id),
                    )
                    .suggest(active)));
                };
                s.stack.truncate(pos);
                Ok(json!({
                    "item_type": "directive",
                    "id": a.item_id,
                    "done": true,
                    "active_directive": s.active().map(|x| x.id.clone()),
                }))
            }
            (ItemType::Tool, "run") | (ItemType::Tool, "dry_run") => self
                .run_tool(action, a, params, sink, cancel, output)
                .await
                .map_err(at),
            (ItemType::Knowledge, "run") => {
                let ws = self.workspace(pp).map_err(at)?;
                let item = find_needing_project(&ws, t, &a.item_id, None).map_err(at)?;
                Ok(describe(&ws, &item))
            }
            (ItemType::Knowledge, "link") => self.link(a, &params).map_err(at),
            (_, "publish") => self.publish(t, a, &params).map_err(at),
            _ => Err(at(OpError::new(
                "invalid_action",
                format!("`{action}` is not an action of {t} items"),
            ))),
        }
    }
}
