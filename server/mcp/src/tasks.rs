//! MCP 2026-07-28 for `execute` (issue 26): a long run as a task, and a directive's missing
//! inputs asked for with `input_required`.
//!
//! **Tasks** (the `io.modelcontextprotocol/tasks` extension, SEP-2663). Task creation is the
//! server's choice, per request, and only for a request that declares the extension in its
//! per-request capabilities: an `execute` still running after [`TASK_AFTER`] is answered
//! with a `CreateTaskResult` (`resultType: "task"`) and goes on in the background. The client
//! polls `tasks/get` (the final `CallToolResult`, sized as any answer, comes inline once
//! `completed`) and may `tasks/cancel`: the run's process group gets SIGTERM, then SIGKILL,
//! and the task is `cancelled` once it is reaped. The extension has no `tasks/list` and no
//! `tasks/result` (those were 2025-11-25's experimental tasks; rmcp 3.9 serves only the
//! extension), so there are none here. A task lives [`TASK_TTL_MS`] from its creation (past
//! it a run is stopped and the task `failed`), and is kept one more TTL for its poller
//! (rmcp's `TaskManager`). At most [`MAX_RUNNING`] runs are tasks at once, and at most
//! [`MAX_KEPT`] tasks are kept: past either a call waits for its run, as without the
//! extension; each result is an answer within `mcp.max_answer_bytes`. While a call is a task its output no longer
//! goes out as progress (the extension has no progress on tasks): its last line is the
//! task's `statusMessage`.
//!
//! Tasks belong to this server's [`Tasks`], one per [`KiwiServer`]: one per connection
//! (`kiwi mcp` on stdio is one client), so no other client can see, poll or cancel them.
//!
//! **input_required** (multi round-trip requests, SEP-2322): a directive run whose required
//! inputs are missing is answered with an `InputRequiredResult` carrying one form
//! elicitation of those inputs (their types, descriptions and enums as the form's schema),
//! when the request's client declares form elicitation and speaks 2026-07-28; the client
//! retries the call with the answer in `inputResponses`, which fills in the directive's
//! `parameters`. A client that cannot elicit, an older protocol, an input whose type a form
//! cannot hold (array, object), a declined form, or a retry still missing inputs: the
//! refusal as before (`invalid_parameters`, naming every missing input).

use crate::KiwiServer;
use kiwi_kernel::exec::CancellationToken;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an `execute` runs before its call becomes a task (when the client takes tasks).
pub const TASK_AFTER: Duration = Duration::from_millis(1000);
/// How long a task lives from its creation (`ttlMs`): a run still going then is stopped.
pub const TASK_TTL_MS: u64 = 30 * 60 * 1000;
/// The polling interval suggested to the client (`pollIntervalMs`).
pub const POLL_INTERVAL_MS: u64 = 250;
/// The most runs that are tasks at once (the rest are answered when they end).
pub const MAX_RUNNING: usize = 8;
/// The key of the one elicitation of a directive's missing inputs in `inputRequests`.
pub const INPUTS_KEY: &str = "kiwi/inputs";
/// The longest status message taken from a run's output.
const STATUS_CHARS: usize = 200;

/// The most tasks kept at once, running or finished: a task is kept at most two TTLs (rmcp
/// keeps a finished one one TTL more), so at most this many are made in two TTLs; past it a
/// call waits for its run. With each result within `mcp.max_answer_bytes`, the store is
/// bounded (256 × 16 KiB by default, twice with the text copy).
pub const MAX_KEPT: usize = 256;

/// This server's tasks (rmcp's task store), and when the ones it may still hold were made.
#[derive(Clone, Default)]
pub struct Tasks {
    manager: TaskManager,
    made: Arc<Mutex<Made>>,
}

/// When the tasks that may still be kept were made (oldest first).
#[derive(Default)]
struct Made(std::collections::VecDeque<std::time::Instant>);

impl Made {
    /// Whether one more task may be made at `now`, those made before `now - kept_for` being
    /// gone; recorded when it may.
    fn admit(&mut self, now: std::time::Instant, kept_for: Duration, max: usize) -> bool {
        while self
            .0
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= kept_for)
        {
            self.0.pop_front();
        }
        if self.0.len() >= max {
            return false;
        }
        self.0.push_back(now);
        true
    }
}

impl Tasks {
    /// Whether a call may become a task now (fewer than [`MAX_RUNNING`] running, fewer than
    /// [`MAX_KEPT`] kept); counted as made when it may.
    fn admit(&self) -> bool {
        if self.manager.running_task_count() >= MAX_RUNNING {
            return false;
        }
        self.made.lock().unwrap_or_else(|p| p.into_inner()).admit(
            std::time::Instant::now(),
            Duration::from_millis(2 * TASK_TTL_MS),
            MAX_KEPT,
        )
    }
}

/// Where a run's output goes once its call became a task: the task's status message instead
/// of progress notifications. Carried in the request context's extensions.
#[derive(Clone, Default)]
pub(crate) struct TaskLink(Arc<Mutex<Option<TaskContext>>>);

impl TaskLink {
    /// Show `text` as the status of the task, if the call became one (`false`: it did not,
    /// the text goes out as progress).
    pub(crate) fn status(&self, text: &str) -> bool {
        let link = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(task) = link.as_ref() else {
            return false;
        };
        let last = text.trim_end().rsplit('\n').next().unwrap_or("").trim();
        if !last.is_empty() {
            let short: String = last.chars().take(STATUS_CHARS).collect();
            task.set_status_message(short);
        }
        true
    }

    fn attach(&self, task: TaskContext) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
    }
}

/// Whether this request's client takes a task as an answer.
fn takes_tasks(c: &RequestContext<RoleServer>) -> bool {
    c.client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// Whether this request's client can be asked for input with a form (2026-07-28 and form
/// elicitation declared; an empty `elicitation` object is form, as in 2025-06-18).
fn elicits_forms(c: &RequestContext<RoleServer>) -> bool {
    let modern = c
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    modern
        && c.client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

impl KiwiServer {
    /// `tools/call`, for every tool: `execute` may become a task or ask for input; the rest
    /// (and clients without either) are answered when done.
    pub(crate) async fn call_tool_response(
        &self,
        name: String,
        mut args: JsonObject,
        input_responses: Option<InputResponses>,
        c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let answered = input_responses.is_some();
        if name == "execute" {
            if let Some(r) = input_responses {
                fill_inputs(&mut args, &r);
            }
        }
        if name != "execute" || !takes_tasks(&c) {
            let asks = name == "execute" && !answered && elicits_forms(&c);
            let r = self.finish_call(name, args, c).await?;
            return Ok(match asks.then(|| inputs_wanted(&r)).flatten() {
                Some(ask) => ask.into(),
                None => r.into(),
            });
        }

        // The run gets its own cancellation: the request's is cancelled once the request is
        // answered (rmcp), which for a task is right away.
        let run_ct = CancellationToken::new();
        let link = TaskLink::default();
        let mut rc = c.clone();
        rc.ct = run_ct.clone();
        rc.extensions.insert(link.clone());
        let asks = !answered && elicits_forms(&c);
        let this = self.clone();
        let mut run = tokio::spawn(async move { this.finish_call(name, args, rc).await });
        tokio::select! {
            r = &mut run => {
                let r = r.map_err(|e| McpError::internal_error(e.to_string(), None))??;
                return Ok(match asks.then(|| inputs_wanted(&r)).flatten() {
                    Some(ask) => ask.into(),
                    None => r.into(),
                });
            }
            _ = c.ct.cancelled() => {
                // notifications/cancelled before the call became a task: stop the run.
                run_ct.cancel();
                let _ = run.await;
                return Err(McpError::internal_error("the request was cancelled", None));
            }
            _ = tokio::time::sleep(TASK_AFTER) => {}
        }
        if !self.tasks.admit() {
            // Too many tasks: the call waits for its run, as without the extension.
            tokio::select! {
                r = &mut run => {
                    let r = r.map_err(|e| McpError::internal_error(e.to_string(), None))??;
                    return Ok(r.into());
                }
                _ = c.ct.cancelled() => {
                    run_ct.cancel();
                    let _ = run.await;
                    return Err(McpError::internal_error("the request was cancelled", None));
                }
            }
        }
        let options = TaskOptions::new()
            .with_ttl_ms(TASK_TTL_MS)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message("running");
        let task = self.tasks.manager.spawn(options, move |task| {
            link.attach(task.clone());
            Box::pin(async move {
                // The task's future dropped (its TTL passed, the server shut down): the run
                // is stopped, its processes with it.
                let _stop = run_ct.clone().drop_guard();
                tokio::select! {
                    r = &mut run => match r {
                        Ok(r) => r.map_err(TaskExit::Error),
                        Err(e) => Err(TaskExit::Error(McpError::internal_error(e.to_string(), None))),
                    },
                    _ = task.cancelled() => {
                        // tasks/cancel: the run stops (SIGTERM, then SIGKILL to its process
                        // group) and is waited for, so that the task is `cancelled` only
                        // once nothing of it is left.
                        run_ct.cancel();
                        let _ = run.await;
                        Err(TaskExit::Cancelled)
                    }
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    pub(crate) async fn get_task_result(&self, id: &str) -> Result<GetTaskResult, McpError> {
        self.tasks.manager.get_task(id).map(GetTaskResult::new)
    }

    pub(crate) async fn cancel_task_id(&self, id: &str) -> Result<(), McpError> {
        self.tasks.manager.cancel_task(id)
    }

    pub(crate) async fn update_task_id(
        &self,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), McpError> {
        self.tasks.manager.update_task(id, responses)
    }
}

/// The answer of a form elicitation of a directive's inputs, into the call's `parameters`
/// (only what the form asked for is taken; a declined form adds nothing).
fn fill_inputs(args: &mut JsonObject, responses: &InputResponses) {
    let Some(r) = responses.get(INPUTS_KEY) else {
        return;
    };
    if r.get("action").and_then(Json::as_str) != Some("accept") {
        return;
    }
    let Some(content) = r.get("content").and_then(Json::as_object) else {
        return;
    };
    let params = args
        .entry("parameters")
        .or_insert_with(|| Json::Object(Default::default()));
    if let Json::Object(p) = params {
        for (k, v) in content {
            p.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// The `InputRequiredResult` for a refusal that names a directive's missing inputs, when a
/// form can hold every one of them.
fn inputs_wanted(r: &CallToolResult) -> Option<InputRequiredResult> {
    if r.is_error != Some(true) {
        return None;
    }
    let body = r.structured_content.as_ref()?;
    let missing = body.get("missing_inputs")?.as_array()?;
    let directive = body.get("item_id").and_then(Json::as_str).unwrap_or("");
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for m in missing {
        let name = m.get("name")?.as_str()?;
        let ty = m.get("type").and_then(Json::as_str).unwrap_or("string");
        let mut p = match ty {
            "string" | "integer" | "number" | "boolean" => json!({"type": ty}),
            // A form holds only primitive values.
            _ => return None,
        };
        p["title"] = json!(name);
        if let Some(d) = m.get("description").and_then(Json::as_str) {
            p["description"] = json!(d);
        }
        if let Some(e) = m.get("enum").filter(|_| ty == "string") {
            p["enum"] = e.clone();
        }
        properties.insert(name.to_string(), p);
        required.push(name.to_string());
    }
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": format!(
                "The directive `{directive}` needs {}: {}",
                if required.len() == 1 { "an input" } else { "inputs" },
                required.join(", ")
            ),
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        }
    });
    let request: InputRequest = serde_json::from_value(request).ok()?;
    let mut requests = InputRequests::new();
    requests.insert(INPUTS_KEY.to_string(), request);
    Some(InputRequiredResult::from_input_requests(requests))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_made_are_bounded_within_the_time_they_are_kept() {
        let mut made = Made::default();
        let t0 = std::time::Instant::now();
        let kept = Duration::from_secs(60);
        assert!(made.admit(t0, kept, 2));
        assert!(made.admit(t0 + Duration::from_secs(10), kept, 2));
        assert!(!made.admit(t0 + Duration::from_secs(20), kept, 2));
        // The first one gone: room for one.
        assert!(made.admit(t0 + Duration::from_secs(60), kept, 2));
        assert!(!made.admit(t0 + Duration::from_secs(61), kept, 2));
    }

    #[test]
    fn missing_inputs_become_one_form() {
        let r = CallToolResult::structured_error(json!({
            "error": "invalid_parameters", "item_id": "e2e/ask",
            "missing_inputs": [
                {"name": "who", "type": "string", "description": "Who", "enum": ["a", "b"]},
                {"name": "n", "type": "integer"}
            ]
        }));
        let ask = serde_json::to_value(inputs_wanted(&r).unwrap()).unwrap();
        assert_eq!(ask["resultType"], "input_required");
        let form = &ask["inputRequests"][INPUTS_KEY]["params"];
        assert_eq!(form["requestedSchema"]["required"], json!(["who", "n"]));
        assert_eq!(
            form["requestedSchema"]["properties"]["who"]["enum"],
            json!(["a", "b"])
        );
        assert_eq!(
            form["requestedSchema"]["properties"]["n"]["type"],
            "integer"
        );
        // An input a form cannot hold: the refusal stays.
        let r = CallToolResult::structured_error(json!({
            "error": "invalid_parameters",
            "missing_inputs": [{"name": "xs", "type": "array"}]
        }));
        assert!(inputs_wanted(&r).is_none());
    }

    #[test]
    fn an_accepted_form_fills_the_parameters_a_declined_one_nothing() {
        let mut args = JsonObject::new();
        args.insert("parameters".into(), json!({"keep": 1}));
        let mut r = InputResponses::new();
        r.insert(
            INPUTS_KEY.into(),
            json!({"action": "accept", "content": {"who": "a", "keep": 2}}),
        );
        fill_inputs(&mut args, &r);
        assert_eq!(args["parameters"], json!({"keep": 1, "who": "a"}));
        let mut args = JsonObject::new();
        r.insert(INPUTS_KEY.into(), json!({"action": "decline"}));
        fill_inputs(&mut args, &r);
        assert!(args.get("parameters").is_none());
    }
}
