//! `kiwi mcp`: the MCP face. It only translates between MCP (rmcp 3.9) and the kernel's
//! [`Service`]: the four meta-tools `search`, `load`, `execute`, `help`; every directive as
//! a prompt; every item as a `kiwi://TYPE/ID` resource. One server process is one session:
//! the directive an agent runs limits what the session may do (04, Enforcement).

use futures::FutureExt;
use kiwi_kernel::exec::{OutputSink, Stream};
use kiwi_kernel::service::{self, ExecuteArgs, LoadArgs, OpError, SearchArgs, Service, Session};
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServiceExt};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};

pub mod attach;
mod complete;
pub mod guard;
mod handler;
pub mod live;
mod meta_tools;
pub mod shape;
mod skills;
pub mod tasks;

pub use handler::LIST_PAGE;
pub use meta_tools::{tools, tools_for};

use meta_tools::{b, limit_arg, opt_str, req, s};

/// The MCP server: a kernel service, this connection's session and what its client follows.
#[derive(Clone)]
pub struct KiwiServer {
    service: Arc<Service>,
    session: Arc<Mutex<Session>>,
    live: Arc<Mutex<live::Live>>,
    /// The whole outputs of the runs whose answers were cut (`kiwi://run/<id>/output`).
    outputs: Arc<Mutex<shape::Outputs>>,
    /// This connection's tasks (long `execute` runs, MCP 2026-07-28): only it sees them.
    tasks: tasks::Tasks,
    /// The editor of a server attached to a language server ([`attach`]).
    editor: Option<Arc<dyn attach::Editor>>,
    /// Fired when this connection ends (an attached session's runs stop with it).
    ended: kiwi_kernel::exec::CancellationToken,
}

/// Sends a tool's output as progress notifications.
struct ProgressSink {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    /// The editor's view of the run (an attached server's).
    editor: Option<attach::LineSink>,
}

impl OutputSink for ProgressSink {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        if let Some(e) = &self.editor {
            e.output(stream, bytes, newline);
        }
        let prefix = match stream {
            Stream::Stdout => "",
            Stream::Stderr => "[stderr] ",
        };
        // A progress message is text: bytes that are not UTF-8 are shown lossily here (the
        // result carries them exactly, `stdout_base64`).
        let text = String::from_utf8_lossy(bytes);
        let _ = self.tx.send(format!("{prefix}{text}"));
    }
}

#[allow(deprecated)] // LoggingLevel: deprecated by 2026-07-28, still served
impl KiwiServer {
    pub fn new(service: Service) -> Self {
        KiwiServer {
            service: Arc::new(service),
            session: Arc::new(Mutex::new(Session::default())),
            live: Arc::new(Mutex::new(live::Live::default())),
            outputs: Arc::new(Mutex::new(shape::Outputs::default())),
            tasks: tasks::Tasks::default(),
            editor: None,
            ended: Default::default(),
        }
    }

    /// A session of the server attached to an editor (its language server's live
    /// workspace, [`attach`]): one per connection, the service shared.
    pub fn attached(service: Arc<Service>, editor: Arc<dyn attach::Editor>) -> Self {
        KiwiServer {
            service,
            session: Arc::new(Mutex::new(Session::default())),
            live: Arc::new(Mutex::new(live::Live::default())),
            outputs: Arc::new(Mutex::new(shape::Outputs::default())),
            tasks: tasks::Tasks::default(),
            editor: Some(editor),
            ended: Default::default(),
        }
    }

    /// Send a log message for a request at `level`, if its client asked for that level.
    async fn log(&self, ctx: Option<&RequestContext<RoleServer>>, level: LoggingLevel, text: &str) {
        live::log(&self.service, &self.live, ctx, level, text).await
    }

    /// A tool call's outcome as a log message: a refusal or a failed run is a warning, the
    /// rest is info.
    async fn log_outcome(
        &self,
        ctx: Option<&RequestContext<RoleServer>>,
        name: &str,
        args: &JsonObject,
        r: &CallToolResult,
        took: std::time::Duration,
    ) {
        let what = [
            Some(name),
            args.get("item_type").and_then(Json::as_str),
            args.get("action").and_then(Json::as_str),
            args.get("item_id").and_then(Json::as_str),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let body = r.structured_content.as_ref();
        if r.is_error == Some(true) {
            let field = |k: &str| {
                body.and_then(|b| b.get(k))
                    .and_then(Json::as_str)
                    .unwrap_or("")
            };
            let text = format!("{what}: {} ({})", field("message"), field("error"));
            self.log(ctx, LoggingLevel::Warning, &text).await;
        } else {
            let text = format!("{what}: done in {} ms", took.as_millis());
            self.log(ctx, LoggingLevel::Info, &text).await;
        }
    }

    /// Record the protocol version this request's session negotiated.
    fn note_protocol(&self, ctx: Option<&RequestContext<RoleServer>>) {
        if let Some(v) = ctx.and_then(|c| c.protocol_version()) {
            let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
            if s.protocol_version.as_deref() != Some(v.as_str()) {
                s.protocol_version = Some(v.as_str().to_string());
            }
        }
    }

    fn session(&self) -> Session {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The answer as MCP: the JSON (redacted by the kernel's service) as structured content
    /// and text. The text is the same JSON once more, on purpose: every revision of the spec
    /// (2025-06-18, 2025-11-25, 2026-07-28, Tools, Structured Content) says "for backwards
    /// compatibility, a tool that returns structured content SHOULD also return the serialized
    /// JSON in a TextContent block" — a client that reads only `content` would see nothing.
    /// The cap (`mcp.max_answer_bytes`) bounds the structured JSON; the text doubles it.
    fn answer(&self, r: Result<Json, OpError>) -> CallToolResult {
        match r {
            // A tool run that failed or timed out is an error result, its output and exit
            // status in the body (the kernel marks it `ok: false`).
            Ok(v) if v.get("ok") == Some(&Json::Bool(false)) => CallToolResult::structured_error(v),
            Ok(v) => CallToolResult::structured(v),
            Err(e) => CallToolResult::structured_error(e.to_json()),
        }
    }

    /// One tool call (no protocol errors: every failure is a tool result).
    pub async fn call(
        &self,
        name: &str,
        args: JsonObject,
        ctx: Option<RequestContext<RoleServer>>,
    ) -> Result<CallToolResult, McpError> {
        self.note_protocol(ctx.as_ref());
        let svc = self.service.clone();
        // The refusals of the arguments are built here: redacted here (an agent passing a
        // secret back never sees it); the service's answers come redacted.
        let bad_args = |e: OpError| e.redacted(&svc.secrets());
        // Unknown top-level arguments are errors, never ignored (issue 26, point 8).
        if let Err(e) = meta_tools::unknown_arguments(name, &args) {
            return Ok(self.answer(Err(bad_args(e))));
        }
        let r = match name {
            "search" => (|| {
                Ok::<_, OpError>(SearchArgs {
                    item_type: req(&args, "item_type", "search")?,
                    query: req(&args, "query", "search")?,
                    source: s(&args, "source"),
                    limit: limit_arg(&args)?,
                    cursor: opt_str(&args, "cursor")?,
                    project_path: s(&args, "project_path"),
                })
            })()
            .map_err(bad_args)
            .and_then(|a| self.search_fitted(a)),
            "load" => (|| {
                Ok::<_, OpError>(LoadArgs {
                    item_type: req(&args, "item_type", "load")?,
                    item_id: req(&args, "item_id", "load")?,
                    source: s(&args, "source"),
                    destination: s(&args, "destination"),
                    force: b(&args, "force"),
                    project_path: s(&args, "project_path"),
                })
            })()
            .map_err(bad_args)
            .and_then(|a| svc.load(&self.session(), &a)),
            "help" => service::help(s(&args, "topic").as_deref()),
            "execute" => {
                let a = (|| {
                    Ok::<_, OpError>(ExecuteArgs {
                        item_type: req(&args, "item_type", "execute")?,
                        action: req(&args, "action", "execute")?,
                        item_id: req(&args, "item_id", "execute")?,
                        parameters: args.get("parameters").cloned(),
                        dry_run: b(&args, "dry_run"),
                        project_path: s(&args, "project_path"),
                        raw: b(&args, "raw"),
                        parent: opt_str(&args, "parent")?,
                        environment: opt_str(&args, "environment")?,
                    })
                })();
                match a {
                    Err(e) => Err(bad_args(e)),
                    Ok(a) => self.execute(&a, ctx).await,
                }
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{other}`; the tools are search, load, execute, help"),
                    None,
                ))
            }
        };
        Ok(self.fitted(name, &args, r))
    }

    /// A search answer that fits the cap: asked again with fewer results when it does not,
    /// so that its `cursor` continues right after the last result shown.
    fn search_fitted(&self, mut a: SearchArgs) -> Result<Json, OpError> {
        let cap = self.service.max_answer_bytes();
        let session = self.session();
        let mut v = self.service.search(&session, &a)?;
        for _ in 0..12 {
            let n = v["results"].as_array().map_or(0, Vec::len);
            let size = serde_json::to_string(&v).map_or(0, |s| s.len());
            if size <= cap || n <= 1 {
                break;
            }
            // Scale the count by how far over the answer is (at least one fewer).
            let fewer = (n * cap / size).clamp(1, n - 1);
            a.limit = Some(fewer);
            v = self.service.search(&session, &a)?;
            v["limited_by_size"] = json!(format!(
                "{fewer} results fit in an answer of {cap} bytes (mcp.max_answer_bytes); the cursor gives the next"
            ));
        }
        Ok(v)
    }

    /// Every answer sized for the agent (issue 26): a tool run's output once, its chain
    /// detail on request, cut past `mcp.max_answer_bytes` with the whole kept as a
    /// resource; any other answer's largest parts cut to fit.
    fn fitted(&self, name: &str, args: &JsonObject, r: Result<Json, OpError>) -> CallToolResult {
        let cap = self.service.max_answer_bytes();
        let arg = |k: &str| args.get(k).and_then(Json::as_str).unwrap_or("");
        let whole = match (name, arg("item_type")) {
            ("load", t) | ("execute", t) if !t.is_empty() && !arg("item_id").is_empty() => {
                Some(format!("resources/read kiwi://{t}/{}", arg("item_id")))
            }
            _ => None,
        };
        let mut v = match r {
            Ok(v) => v,
            Err(e) => {
                let mut body = e.to_json();
                shape::fit(&mut body, cap, whole.as_deref());
                return CallToolResult::structured_error(body);
            }
        };
        if name == "execute" && arg("item_type") == "tool" {
            shape::shape_run(&mut v, b(args, "detail"), cap, &self.outputs);
        }
        shape::fit(&mut v, cap, whole.as_deref());
        self.answer(Ok(v))
    }

    async fn execute(
        &self,
        a: &ExecuteArgs,
        ctx: Option<RequestContext<RoleServer>>,
    ) -> Result<Json, OpError> {
        let cancel = ctx.as_ref().map(|c| c.ct.clone()).unwrap_or_default();
        let token = ctx.as_ref().and_then(|c| c.meta.get_progress_token());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        // Attached to an editor: a tool run is shown there too, and its Cancel stops it.
        let shown = match &self.editor {
            Some(e) if a.item_type == "tool" && a.action == "run" && !a.dry_run => {
                e.run_started(format!("Agent: running {}", a.item_id)).await
            }
            _ => None,
        };
        let cancel = match &shown {
            Some(run) => attach::either(&cancel, &run.cancel, &self.ended),
            None if self.editor.is_some() => attach::either(&cancel, &self.ended, &self.ended),
            None => cancel,
        };
        let sink = ProgressSink {
            tx,
            editor: shown
                .as_ref()
                .map(|r| attach::LineSink::new(r.events.clone())),
        };
        // Once the call became a task, the output is the task's status (crate::tasks).
        let link = ctx
            .as_ref()
            .and_then(|c| c.extensions.get::<tasks::TaskLink>().cloned());
        let pump = match (token, ctx.as_ref().map(|c| c.peer.clone())) {
            (Some(token), Some(peer)) => {
                Some(tokio::spawn(async move {
                    let mut n = 0u64;
                    // The lines were redacted as they streamed (the kernel's run).
                    while let Some(msg) = rx.recv().await {
                        if link.as_ref().is_some_and(|l| l.status(&msg)) {
                            continue;
                        }
                        n += 1;
                        let _ = peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), n as f64)
                                    .with_message(msg),
                            )
                            .await;
                    }
                }))
            }
            (None, _) if link.is_some() => Some(tokio::spawn(async move {
                while let Some(msg) = rx.recv().await {
                    if let Some(l) = &link {
                        l.status(&msg);
                    }
                }
            })),
            _ => {
                drop(rx);
                None
            }
        };
        let r = self.service.execute(&self.session, a, &sink, &cancel).await;
        if let Some(l) = &sink.editor {
            l.flush();
        }
        drop(sink);
        if let Some(run) = shown {
            let end = if run.cancel.is_cancelled() || cancel.is_cancelled() {
                "cancelled"
            } else if r
                .as_ref()
                .map_or(true, |v| v.get("ok") == Some(&Json::Bool(false)))
            {
                "failed"
            } else {
                "done"
            };
            let _ = run.events.send(attach::RunEvent::End(end.into()));
        }
        if self.editor.is_some() {
            // The run is over: the task joining its cancellations ends.
            cancel.cancel();
        }
        if let Some(p) = pump {
            let _ = p.await;
        }
        r
    }
}

/// Run a tool handler so that a panic in it becomes an error result (the server lives on,
/// and the client gets an answer instead of waiting for one that never comes).
pub async fn guarded<F>(name: &str, fut: F) -> Result<CallToolResult, McpError>
where
    F: std::future::Future<Output = Result<CallToolResult, McpError>>,
{
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(_) => {
            tracing::error!("the handler of tool `{name}` panicked");
            Ok(CallToolResult::structured_error(json!({
                "error": "internal_error",
                "item_type": null, "action": null, "item_id": null,
                "message": format!("kiwi hit a bug while running `{name}`; the server is still running"),
                "suggestions": []
            })))
        }
    }
}

fn internal(e: OpError) -> McpError {
    McpError::invalid_params(e.message.clone(), Some(e.to_json()))
}

/// The one resource template.
const TEMPLATE: &str = "kiwi://{type}/{id}";

/// Serve MCP on stdio until the client closes it.
pub async fn serve_stdio(service: Service) -> Result<(), Box<dyn std::error::Error>> {
    let server = KiwiServer::new(service);
    let svc = server.service.clone();
    // The watcher's first look waits for the warm-up: the first search has both cores.
    let (warmed, after) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        svc.warm();
        let _ = warmed.send(());
    });
    serve_with(server, tokio::io::stdin(), tokio::io::stdout(), Some(after)).await
}

/// Serve MCP over a byte stream pair (stdin and stdout; a test's pipes) until `input` ends.
pub async fn serve_io<I, O>(
    server: KiwiServer,
    input: I,
    output: O,
) -> Result<(), Box<dyn std::error::Error>>
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve_with(server, input, output, None).await
}

/// [`serve_io`], the disk watcher starting once `after` fires (when given).
async fn serve_with<I, O>(
    server: KiwiServer,
    input: I,
    output: O,
    after: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<(), Box<dyn std::error::Error>>
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // The input goes through `guard` (see there) on its way to rmcp; rmcp's output and the
    // guard's own answers go out through one writer, a whole line at a time.
    let (to_rmcp, from_guard) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (answers, answers_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(guard::write_out(from_rmcp, answers_rx, output));
    let attached = server.editor.is_some().then(|| server.ended.clone());
    tokio::spawn(async move {
        let _ = guard::run(input, to_rmcp, answers).await;
        if let Some(ended) = attached {
            // An attached session ended: its own runs stop, the editor's go on.
            ended.cancel();
            return;
        }
        // stdin closed: the client is gone (the MCP stdio shutdown). Running tools are
        // cancelled now; the caller waits for their clean-up before exiting.
        kiwi_kernel::exec::process::stop_all(std::time::Duration::ZERO).await;
    });
    let (svc, followers) = (server.service.clone(), server.live.clone());
    let watcher = tokio::spawn(async move {
        if let Some(after) = after {
            let _ = after.await;
        }
        live::watch(svc, followers, live::EVERY).await
    });
    let running = match server.serve((from_guard, rmcp_out)).await {
        Ok(r) => r,
        // The client went away before starting a session: nothing to serve.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            watcher.abort();
            return Ok(());
        }
        Err(e) => {
            watcher.abort();
            return Err(e.into());
        }
    };
    let done = running.waiting().await;
    watcher.abort();
    done?;
    // Everything rmcp wrote reaches the output before we return (bounded: the guard's side
    // stays open while the input does).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Lines =
        tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;

    /// `server` on an in-memory pipe, answered `initialize` (not sent `initialized`): the
    /// client's lines and its writer.
    async fn initialized_up_to(
        server: KiwiServer,
    ) -> (Lines, tokio::io::WriteHalf<tokio::io::DuplexStream>) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (client, server_end) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server_end);
        tokio::spawn(async move {
            let _ = serve_io(server, sr, sw).await.map_err(|e| e.to_string());
        });
        let (r, mut w) = tokio::io::split(client);
        let mut lines = BufReader::new(r).lines();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        w.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        let _ = lines.next_line().await.unwrap().unwrap();
        (lines, w)
    }

    /// Issue 16, point 10: a request whose params have the wrong shape is answered
    /// -32602 (invalid params) with its id, a malformed request -32600; never -32601.
    #[tokio::test]
    async fn malformed_params_are_invalid_params() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        let host = kiwi_kernel::context::Host::for_tests(&[(
            "KIWI_USERSPACE_DIR",
            dir.path().join("u").to_str().unwrap(),
        )]);
        let server = KiwiServer::new(Service::new(None, host));
        let (mut lines, mut w) = initialized_up_to(server).await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        w.write_all(format!("{note}\n").as_bytes()).await.unwrap();
        for (bad, code) in [
            (
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "search"}),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": [1]}),
                -32602,
            ),
            (
                json!({"jsonrpc": "1.0", "id": 8, "method": "tools/list"}),
                -32600,
            ),
            (json!({"jsonrpc": "2.0", "id": 9, "method": 7}), -32600),
        ] {
            w.write_all(format!("{bad}\n").as_bytes()).await.unwrap();
            let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let v: Json = serde_json::from_str(&line).unwrap();
            assert_eq!(v["id"], bad["id"], "{v}");
            assert_eq!(v["error"]["code"], code, "{bad}: {v}");
            assert!(
                v["error"]["message"].as_str().unwrap().contains("invalid"),
                "{v}"
            );
        }
    }

    /// A change the watcher sees before the session can hear of it (no `initialized` yet, no
    /// listener) is told once it can: it was consumed unheard, and a client that wrote an
    /// item right after `initialize` waited for a `list_changed` that never came (seen once
    /// in the MCP protocol suite under load).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_change_before_initialized_is_told_after_it() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("p");
        std::fs::create_dir_all(proj.join(".ai/directives")).unwrap();
        let host = kiwi_kernel::context::Host::for_tests(&[(
            "KIWI_USERSPACE_DIR",
            dir.path().join("u").to_str().unwrap(),
        )]);
        let server = KiwiServer::new(Service::new(Some(proj.clone()), host));
        // Loaded before the session, as `kiwi mcp` warms it up.
        let svc = server.service.clone();
        tokio::task::spawn_blocking(move || svc.warm())
            .await
            .unwrap();
        let (mut lines, mut w) = initialized_up_to(server).await;
        // The watcher looks (every 300 ms) while nobody can hear: a directive appears.
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        std::fs::write(
            proj.join(".ai/directives/fresh.md"),
            "# Fresh\n\n```xml\n<directive name=\"fresh\" version=\"1.0.0\">\n  <metadata>\n    <description>A fresh directive</description>\n  </metadata>\n  <process>\n    <step name=\"s\"><description>x</description></step>\n  </process>\n</directive>\n```\n",
        )
        .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        w.write_all(format!("{note}\n").as_bytes()).await.unwrap();
        let told = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while let Ok(Some(line)) = lines.next_line().await {
                let v: Json = serde_json::from_str(&line).unwrap();
                if v["method"] == "notifications/prompts/list_changed" {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(told, Ok(true), "no prompts/list_changed after initialized");
    }

    #[tokio::test]
    async fn a_panic_becomes_an_error_result() {
        let r = guarded("search", async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            Ok(CallToolResult::success(vec![]))
        })
        .await
        .unwrap();
        assert_eq!(r.is_error, Some(true));
        let v = r.structured_content.unwrap();
        assert_eq!(v["error"], "internal_error");
        let ok = guarded("help", async { Ok(CallToolResult::success(vec![])) })
            .await
            .unwrap();
        assert_ne!(ok.is_error, Some(true));
    }
}
