//! The commands of `workspace/executeCommand`: `kiwi.runTool` (work-done progress,
//! cancellable), `kiwi.showEnvironment`, `kiwi.validate`, `kiwi.init`, and
//! `kiwi.checkParameters` (what a run prompt asks, checked as the run would check it).

use crate::convert::to_path;
use crate::progress::token_key;
use crate::session::Backend;
use crate::session::Key;
use crate::task::{blocking, panic_error};
use kiwi_kernel::check::check_item;
use kiwi_kernel::diag;
use kiwi_kernel::exec::{self, CancellationToken, OutputSink, Stream};
use kiwi_kernel::ide;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::workspace::{Item, Workspace};
use serde_json::{json, Value as Json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::{MessageType, ProgressToken, Uri};

/// Run the command `name` with its first argument (a bare string is an `{id}`).
pub(crate) async fn execute(
    b: &Backend,
    name: &str,
    arg: Json,
    token: Option<ProgressToken>,
) -> Result<Option<Json>> {
    let arg = match arg {
        Json::String(s) => json!({ "id": s }),
        other => other,
    };
    match name {
        ide::CMD_RUN_TOOL => run_tool(b, arg, token).await,
        ide::CMD_SHOW_ENV => show_environment(b, arg).await,
        ide::CMD_VALIDATE => validate(b, arg).await,
        ide::CMD_INIT => init_userspace(b, arg).await,
        CMD_CHECK_PARAMS => check_parameters(b, arg).await,
        CMD_READ_ONLY_OWNER => read_only_owner(b, arg),
        other => Err(jsonrpc::Error::invalid_params(format!(
            "unknown command `{other}`"
        ))),
    }
}

/// Parameters checked against a tool's `CONFIG_SCHEMA` before anything runs, by the run's own
/// check (`exec::validate_params`): an editor's prompt refuses what the run would refuse, in
/// the same words (minimum, maximum, enum, type...).
pub(crate) const CMD_CHECK_PARAMS: &str = "kiwi.checkParameters";

/// The project that reads a file of a read-only space (an extra or system space it uses), so
/// that an editor opening that file (go to definition) attaches it to this server, rooted at
/// that project, instead of starting another one on the space alone.
pub(crate) const CMD_READ_ONLY_OWNER: &str = "kiwi.readOnlyOwner";

/// Stop the run whose progress token this is (`window/workDoneProgress/cancel`).
pub(crate) fn cancel(b: &Backend, token: &ProgressToken) {
    if let Some(c) = b.shared.cancels().get(&token_key(token)) {
        c.cancel();
    }
}

/// Stop every run (`shutdown`).
pub(crate) fn cancel_all(b: &Backend) {
    for c in b.shared.cancels().values() {
        c.cancel();
    }
}

/// A refused or failed run as `kiwi.runTool` answers it: the message (with the diagnostics
/// that refused it, one per line) and the diagnostics as data.
fn run_error(e: &exec::ExecError) -> Json {
    let mut v = json!({"kind": e.kind, "message": e.to_string()});
    if !e.diagnostics.is_empty() {
        v["diagnostics"] = json!(e.diagnostics);
    }
    json!({ "error": v })
}

/// The workspace and tool a command's argument names: `{uri}`, `{path}` or `{id}`.
async fn command_target(
    b: &Backend,
    arg: &Json,
) -> std::result::Result<(Arc<Workspace>, Arc<Item>), String> {
    let path = arg
        .get("uri")
        .and_then(|u| u.as_str())
        .and_then(|u| u.parse::<Uri>().ok())
        .and_then(|u| to_path(&u))
        .or_else(|| arg.get("path").and_then(|p| p.as_str()).map(PathBuf::from));
    let id = arg.get("id").and_then(|i| i.as_str());
    b.wait_loaded(path.as_deref()).await;
    let st = b.lock();
    if let Some(path) = path {
        let key = st
            .set
            .project_of(&path)
            .ok_or_else(|| format!("{} is not under a .ai/ folder", path.display()))?;
        let ws = st
            .set
            .get(&key)
            .cloned()
            .ok_or_else(|| "the workspace is not loaded yet".to_string())?;
        if let Some(item) = ws.item(&path).cloned() {
            return Ok((ws, item));
        }
        // A skill's script runs as a tool (issue 28): the tool that runs it.
        if kiwi_kernel::skill::script::skill_of(&ws, &path).is_some() {
            let plan =
                kiwi_kernel::skill::script::plan_script(&ws, &path).map_err(|e| e.message)?;
            let item = plan.tool(&ws);
            return Ok((ws, item));
        }
        return Err(format!("{} is not a Kiwi item", path.display()));
    }
    let Some(id) = id else {
        return Err("give `uri`, `path` or `id`".into());
    };
    let spaces: Vec<(&Key, &Arc<Workspace>)> = {
        let mut v: Vec<_> = st.set.iter().collect();
        v.sort_by_key(|(k, _)| k.is_none());
        v
    };
    // The kernel's one lookup error (the wording of every face).
    let (i, tool) =
        kiwi_kernel::lookup::resolve_in(spaces.iter().map(|(_, ws)| &***ws), ItemType::Tool, id)
            .map_err(|e| e.message)?;
    Ok((spaces[i].1.clone(), tool))
}

/// A command's tool parameters: `parameters`, or `params` as older clients send them.
fn parameters_arg(arg: &Json) -> Json {
    arg.get("parameters")
        .or_else(|| arg.get("params"))
        .cloned()
        .unwrap_or(Json::Null)
}

async fn run_tool(b: &Backend, arg: Json, token: Option<ProgressToken>) -> Result<Option<Json>> {
    let (ws, tool) = command_target(b, &arg)
        .await
        .map_err(jsonrpc::Error::invalid_params)?;
    // A skill's script takes its arguments (`args`: a list of strings, or `argsLine`: the
    // line a user typed, split as a shell splits words), not parameters.
    let is_script = kiwi_kernel::skill::script::is_script_tool(&tool);
    let params = if is_script {
        let args: Vec<String> = match (arg.get("args"), arg.get("argsLine")) {
            (None | Some(Json::Null), Some(Json::String(line))) => {
                kiwi_kernel::skill::script::split_args(line)
                    .map_err(jsonrpc::Error::invalid_params)?
            }
            (None | Some(Json::Null), None | Some(Json::Null)) => {
                if arg.get("askArgs").and_then(Json::as_bool) == Some(true) {
                    return Err(jsonrpc::Error::invalid_params(format!(
                        "▶ Run… asks for the arguments of {} and this editor sent none (kiwi's VS Code and Neovim packages ask): use ▶ Run, or `kiwi run {} -- ARGS`",
                        tool.id,
                        tool.path.display()
                    )));
                }
                Vec::new()
            }
            (Some(Json::Array(a)), None | Some(Json::Null)) if a.iter().all(Json::is_string) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => {
                return Err(jsonrpc::Error::invalid_params(
                    "the arguments of a skill's script are `args`, a list of strings, or `argsLine`, one string",
                ))
            }
        };
        kiwi_kernel::skill::script::request(&args, None).params
    } else {
        parameters_arg(&arg)
    };
    let req = exec::Request {
        params,
        // `▶ Run on HOST` (issue 30): the environment asked for, as `kiwi run --env`.
        environment: arg
            .get("environment")
            .and_then(Json::as_str)
            .map(str::to_string),
        ..Default::default()
    };
    let t = tool.clone();
    // The kernel's one run path: a tool (or a link of its chain) with error-level
    // diagnostics is refused, the diagnostics listed. A skill's script goes the way
    // `kiwi run PATH` takes it: a pulled skill whose files drifted from the lock runs nothing,
    // a PEP 723 script without uv says so.
    let plan = blocking(move || {
        if is_script {
            let args = kiwi_kernel::skill::script::args_of(&req.params);
            kiwi_kernel::skill::script::prepare(&ws, &t.path, &args, req.environment.clone())
                .map(|(_, plan)| plan)
        } else {
            exec::prepare_item(&ws, &t, &req)
        }
    })
    .await?;
    let plan = match plan {
        Ok(p) => p,
        Err(e) => return Ok(Some(run_error(&e))),
    };
    let token = b.token(token, "run").await;
    let cancel = CancellationToken::new();
    let key = token.as_ref().map(token_key);
    if let (Some(t), Some(k)) = (&token, &key) {
        b.shared.cancels().insert(k.clone(), cancel.clone());
        b.progress_begin(t, &format!("Running {}", tool.id), true)
            .await;
    }
    // If this request is cancelled ($/cancelRequest drops the handler), the run stops too,
    // and its progress ends ("cancelled") instead of spinning for ever.
    let drop_guard = cancel.clone().drop_guard();
    let mut ended = RunEnd {
        backend: Some(b.clone()),
        token: token.clone(),
        key: key.clone(),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sink = ChannelSink {
        tx,
        partial: Mutex::new(Vec::new()),
    };
    let c = cancel.clone();
    let run = tokio::spawn(async move {
        let r = exec::run(&plan, &sink, &c).await;
        sink.flush();
        drop(sink);
        r
    });
    while let Some(line) = rx.recv().await {
        if let Some(t) = &token {
            b.progress_report(t, line.clone()).await;
        }
        b.client.log_message(MessageType::LOG, line).await;
    }
    let result = run.await;
    drop_guard.disarm();
    ended.backend = None;
    if let Some(k) = &key {
        b.shared.cancels().remove(k);
    }
    let value = match result {
        Ok(Ok(r)) => serde_json::to_value(&r).unwrap_or(Json::Null),
        Ok(Err(e)) => run_error(&e),
        Err(e) if e.is_panic() => return Err(panic_error(e.into_panic())),
        Err(_) => json!({"error": {"kind": "cancelled", "message": "the run was stopped"}}),
    };
    if let Some(t) = &token {
        let msg = if cancel.is_cancelled() {
            "cancelled"
        } else if value.get("error").is_some() {
            "failed"
        } else {
            "done"
        };
        b.progress_end(t, msg.into()).await;
    }
    Ok(Some(value))
}

/// `kiwi.checkParameters` `{uri|path|id, parameters, only?}`: `{valid, problems}`, the
/// problems by parameter name (`""` for the object as a whole). `only` keeps the problems of
/// those names: a prompt asking one parameter is not told the others are not given yet.
async fn check_parameters(b: &Backend, arg: Json) -> Result<Option<Json>> {
    let (_, tool) = command_target(b, &arg)
        .await
        .map_err(jsonrpc::Error::invalid_params)?;
    let params = parameters_arg(&arg);
    let only: Option<Vec<String>> = arg.get("only").and_then(Json::as_array).map(|a| {
        a.iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect()
    });
    let checked = blocking(move || exec::validate_params(&tool, &params)).await?;
    let mut problems = serde_json::Map::new();
    if let Err(e) = checked {
        let mut add = |name: &str, msg: &str| {
            if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
                return;
            }
            let entry = problems
                .entry(name.to_string())
                .or_insert_with(|| Json::String(String::new()));
            if let Json::String(s) = entry {
                if !s.is_empty() {
                    s.push_str("; ");
                }
                s.push_str(msg);
            }
        };
        if e.details.is_empty() {
            add("", &e.message);
        }
        for d in &e.details {
            match d.strip_prefix('`').and_then(|r| r.split_once("`: ")) {
                Some((name, msg)) => add(name, msg),
                None => add("", d),
            }
        }
    }
    Ok(Some(
        json!({ "valid": problems.is_empty(), "problems": problems }),
    ))
}

/// `kiwi.readOnlyOwner` `{uri|path}`: `{root}`, the project whose read-only space holds the
/// file, or `{root: null}`.
fn read_only_owner(b: &Backend, arg: Json) -> Result<Option<Json>> {
    let path = arg
        .get("uri")
        .and_then(|u| u.as_str())
        .and_then(|u| u.parse::<Uri>().ok())
        .and_then(|u| to_path(&u))
        .or_else(|| arg.get("path").and_then(|p| p.as_str()).map(PathBuf::from));
    let Some(path) = path else {
        return Err(jsonrpc::Error::invalid_params("give `uri` or `path`"));
    };
    let st = b.lock();
    let root = st.set.project_of(&path).flatten().filter(|root| {
        st.set
            .get(&Some(root.clone()))
            .and_then(|ws| ws.item(&path))
            .is_some_and(|i| !i.space.is_writable())
    });
    Ok(Some(json!({ "root": root })))
}

async fn show_environment(b: &Backend, arg: Json) -> Result<Option<Json>> {
    let (ws, tool) = command_target(b, &arg)
        .await
        .map_err(jsonrpc::Error::invalid_params)?;
    let md = blocking(move || ide::environment_markdown(&ws, &tool)).await?;
    b.client.log_message(MessageType::INFO, md.clone()).await;
    Ok(Some(json!({ "markdown": md })))
}

/// `kiwi.init {force?}`: create (or refresh) the user space, as `kiwi init` does, then
/// re-index every workspace (they all see the user space).
async fn init_userspace(b: &Backend, arg: Json) -> Result<Option<Json>> {
    let force = arg.get("force").and_then(Json::as_bool).unwrap_or(false);
    let host = b.lock().set.host().clone();
    let report = blocking(move || kiwi_kernel::init::init_userspace(&host, force))
        .await?
        .map_err(|e| jsonrpc::Error {
            code: jsonrpc::ErrorCode::InternalError,
            message: format!("kiwi init: {e}").into(),
            data: None,
        })?;
    let keys: Vec<Key> = b.lock().set.loaded_keys();
    for key in keys {
        b.load(key, None).await;
    }
    b.client
        .show_message(MessageType::INFO, report.message.clone())
        .await;
    Ok(Some(serde_json::to_value(&report).unwrap_or(Json::Null)))
}

async fn validate(b: &Backend, arg: Json) -> Result<Option<Json>> {
    let (ws, item) = command_target(b, &arg)
        .await
        .map_err(jsonrpc::Error::invalid_params)?;
    let path = item.path.clone();
    let it = item.clone();
    let w = ws.clone();
    let diags = blocking(move || check_item(&w, &it)).await?;
    let list = diag::view::DiagnosticView::json(diag::view::FileText::of_item(&item), &diags);
    if let Some(key) = b.key_for(&path) {
        b.publish(key, vec![path.clone()], None).await;
    }
    Ok(Some(json!({
        "path": path,
        "valid": !diags.iter().any(|d| d.severity == diag::Severity::Error),
        "diagnostics": list,
    })))
}

/// Ends a run's progress when its request is dropped before the run ended (the client sent
/// `$/cancelRequest`): the cancellation entry goes, and the progress ends "cancelled".
struct RunEnd {
    backend: Option<Backend>,
    token: Option<ProgressToken>,
    key: Option<String>,
}

impl Drop for RunEnd {
    fn drop(&mut self) {
        let Some(backend) = self.backend.take() else {
            return; // the run ended normally and reported
        };
        if let Some(k) = &self.key {
            backend.shared.cancels().remove(k);
        }
        if let Some(t) = self.token.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { backend.progress_end(&t, "cancelled".into()).await });
            }
        }
    }
}

/// Output lines of a run, sent to a channel.
struct ChannelSink {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    partial: Mutex<Vec<u8>>,
}

impl OutputSink for ChannelSink {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        partial.extend_from_slice(bytes);
        if newline {
            // A log line is text: bytes that are not UTF-8 are shown lossily.
            let line = String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned();
            let line = match stream {
                Stream::Stderr => format!("[stderr] {line}"),
                _ => line,
            };
            let _ = self.tx.send(line);
        }
    }
    fn flush(&self) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if !partial.is_empty() {
            let _ = self
                .tx
                .send(String::from_utf8_lossy(&std::mem::take(&mut *partial)).into_owned());
        }
    }
}
