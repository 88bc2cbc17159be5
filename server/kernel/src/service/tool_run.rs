//! `execute tool run` and `dry_run`: the kernel's one run path ([`exec::prepare_item`],
//! [`exec::run`]) and how a finished run's failure reads to the agent.

use super::error::{OpError, Res};
use super::items::find_needing_project;
use super::{ExecuteArgs, Service, INIT_TOOL};
use crate::exec::{self, CancellationToken, OutputSink};
use crate::ids::ItemType;
use crate::workspace;
use serde_json::{json, Map, Value as Json};

impl Service {
    /// Run (or with `action` `dry_run`, plan) the tool `a.item_id`; the in-process `init` of
    /// the builtin [`INIT_TOOL`]. A run's output (the answer's `result`, already redacted by
    /// [`exec::run`]) goes to `output`, the answer's `result` left `null`.
    pub(super) async fn run_tool(
        &self,
        action: &str,
        a: &ExecuteArgs,
        params: Map<String, Json>,
        sink: &dyn OutputSink,
        cancel: &CancellationToken,
        output: &mut Option<Json>,
    ) -> Res<Json> {
        let ws = self.workspace(a.project_path.as_deref())?;
        let tool = find_needing_project(&ws, ItemType::Tool, &a.item_id, None)?;
        let builtin_init = tool.id == INIT_TOOL
            && (tool.is_builtin()
                || workspace::builtin_file("tools/core/init_userspace.yaml") == Some(tool.text()));
        let force = matches!(params.get("force"), Some(Json::Bool(true)))
            || params.get("force").and_then(Json::as_str) == Some("true");
        let req = exec::Request {
            params: Json::Object(params),
            overrides: None,
            environment: a.environment.clone(),
        };
        // The kernel's one run path: a tool (or a link of its chain) with
        // error-level diagnostics is refused, the diagnostics listed.
        let plan = exec::prepare_item(&ws, &tool, &req).map_err(|e| exec_error(&e))?;
        if action == "dry_run" {
            return Ok(json!({
                "item_type": "tool",
                "id": tool.id,
                "dry_run": true,
                "plan": plan.summary(),
            }));
        }
        if builtin_init {
            // (also the user space's unchanged copy that `init` wrote)
            // The kernel's own primitive, `init` of the user space, run in process on the
            // same path: prepared (refusals) above, its result redacted as any run's.
            drop(ws);
            let host = self.host.clone();
            let r = exec::run_in_process(&plan, |_| {
                crate::init::init_userspace(&host, force)
                    .map_err(|e| format!("init failed: {e}"))
                    .and_then(|r| serde_json::to_value(r).map_err(|e| e.to_string()))
            })
            .map_err(|e| OpError::new("io_error", e.message.clone()))?;
            let result = match r.output {
                exec::Output::Process(p) => p.json.unwrap_or(Json::Null),
                exec::Output::Http(_) => Json::Null,
            };
            return Ok(json!({"item_type": "tool", "id": tool.id, "result": result}));
        }
        drop(ws);
        let r = exec::run(&plan, sink, cancel)
            .await
            .map_err(|e| exec_error(&e))?;
        let mut v = serde_json::to_value(&r).unwrap_or(Json::Null);
        if let Json::Object(m) = &mut v {
            m.insert("exit_code_shell".into(), json!(r.exit_code()));
        }
        let mut out = json!({"item_type": "tool", "id": tool.id, "result": null});
        if let Some((error, message)) = run_failure(&tool.id, &r) {
            // A failed run is an error the agent sees as one (its output and exit
            // status stay in the body): `ok: false` and the error fields.
            out["ok"] = json!(false);
            out["error"] = json!(error);
            out["action"] = json!(action);
            out["item_id"] = json!(a.item_id);
            out["message"] = json!(message);
            out["suggestions"] = json!([]);
        } else {
            out["ok"] = json!(true);
        }
        *output = Some(v);
        Ok(out)
    }
}

/// Why a finished run failed, if it did: (error kind, message). A run fails when it timed
/// out, was cancelled, exited with a status other than 0, was ended by a signal, or (HTTP)
/// answered 400 or more.
pub fn run_failure(id: &str, r: &exec::RunResult) -> Option<(&'static str, String)> {
    match &r.output {
        exec::Output::Process(p) => {
            if p.timed_out {
                Some((
                    "timed_out",
                    format!(
                        "tool `{id}` timed out after {} ms and was stopped (exit status 124); its output so far is in result",
                        p.duration_ms
                    ),
                ))
            } else if p.cancelled {
                Some((
                    "cancelled",
                    format!("tool `{id}` was cancelled (exit status 130); its output so far is in result"),
                ))
            } else if let Some(code) = p.exit_code.filter(|c| *c != 0) {
                Some((
                    "tool_failed",
                    format!("tool `{id}` failed: exit status {code}; its output is in result (stdout, stderr)"),
                ))
            } else if let (None, Some(sig)) = (p.exit_code, p.signal) {
                Some((
                    "tool_failed",
                    format!(
                        "tool `{id}` was ended by signal {sig} (exit status {}); its output is in result",
                        128 + sig
                    ),
                ))
            } else {
                p.json.as_ref().and_then(|j| says_failed(id, j))
            }
        }
        exec::Output::Http(h) if h.status >= 400 => Some((
            "tool_failed",
            format!(
                "tool `{id}` failed: the server answered HTTP {}; the body is in result",
                h.status
            ),
        )),
        exec::Output::Http(_) => None,
    }
}

/// A tool that exits 0 may still say it failed, in its JSON answer: rye's tools answer
/// `{"success": false, "error": "…"}`, others `{"ok": false, …}`. Only the literal `false`
/// counts (a missing key, `null` or a string is no verdict).
fn says_failed(id: &str, answer: &Json) -> Option<(&'static str, String)> {
    let key = ["success", "ok"]
        .into_iter()
        .find(|k| answer.get(k) == Some(&Json::Bool(false)))?;
    let why = ["error", "message"]
        .into_iter()
        .find_map(|k| match answer.get(k)? {
            Json::String(s) => Some(s.clone()),
            Json::Null => None,
            other => Some(other.to_string()),
        });
    let why: String = why
        .map(|w| {
            let w: String = w.chars().take(500).collect();
            format!(": {w}")
        })
        .unwrap_or_default();
    Some((
        "tool_failed",
        format!("tool `{id}` exited 0 but answered `{key}: false`{why}; its output is in result"),
    ))
}

fn exec_error(e: &exec::ExecError) -> OpError {
    let kind = serde_json::to_value(e.kind).unwrap_or(Json::Null);
    let error = match e.kind {
        exec::ErrorKind::Invalid => "invalid_item",
        _ => "execution_error",
    };
    let mut o = OpError::new(error, e.message.clone())
        .with("kind", kind)
        .with("details", json!(e.details))
        .suggest(e.suggestions.clone());
    if !e.diagnostics.is_empty() {
        o = o.with("diagnostics", json!(e.diagnostics));
    }
    o
}
