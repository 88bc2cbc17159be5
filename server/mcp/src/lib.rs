//! `kiwi mcp`: the MCP face. It only translates between MCP (rmcp 3.9) and the kernel's
//! [`Service`]: the four meta-tools `search`, `load`, `execute`, `help`; every directive as
//! a prompt; every item as a `kiwi://TYPE/ID` resource. One server process is one session:
//! the directive an agent runs limits what the session may do (04, Enforcement).

use futures::FutureExt;
use kiwi_kernel::exec::{OutputSink, Stream};
use kiwi_kernel::service::{self, ExecuteArgs, LoadArgs, OpError, SearchArgs, Service, Session};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex};

pub mod live;

/// The MCP server: a kernel service, this connection's session and what its client follows.
#[derive(Clone)]
pub struct KiwiServer {
    service: Arc<Service>,
    session: Arc<Mutex<Session>>,
    live: Arc<Mutex<live::Live>>,
}

const ITEM_TYPES: [&str; 4] = ["directive", "tool", "knowledge", "system"];

fn obj(v: Json) -> Arc<JsonObject> {
    match v {
        Json::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn project_path_prop() -> Json {
    json!({"type": "string", "description": "The project root (a folder holding .ai/), when the server was not started in one"})
}

/// The four tools, with input and output schemas and annotations.
pub fn tools() -> Vec<Tool> {
    let search_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES, "description": "What to search"},
            "query": {"type": "string", "description": "Words to look for (typos tolerated); empty lists everything"},
            "source": {"type": "string", "enum": ["project", "user", "builtin", "registry", "all"], "default": "all", "description": "A space, or registry (every configured registry; registry:NAME for one)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10},
            "cursor": {"type": "string", "description": "The `cursor` of the previous answer: the results after it"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "query"],
    });
    let hit = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string"}, "id": {"type": "string"}, "name": {"type": "string"},
            "description": {"type": ["string", "null"]}, "category": {"type": ["string", "null"]},
            "version": {"type": ["string", "null"]}, "source": {"type": "string"},
            "path": {"type": ["string", "null"]}, "score": {"type": "number"},
            "shadowed_by": {"type": "string"}
        },
        "required": ["item_type", "id", "source", "score"]
    });
    let search_out = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string"}, "query": {"type": "string"},
            "total": {"type": "integer", "description": "How many items match (results holds at most limit of them)"},
            "results": {"type": "array", "items": hit},
            "cursor": {"type": "string", "description": "Pass it back as `cursor` for the next results; absent on the last page"}
        },
        "required": ["item_type", "results"]
    });
    let load_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES},
            "item_id": {"type": "string", "description": "The item id, such as core/init"},
            "source": {"type": "string", "enum": ["project", "user", "builtin", "registry", "all"], "description": "Load from this space only; registry (registry:NAME for one) reads or, with destination, pulls from the configured registries"},
            "destination": {"type": "string", "enum": ["project", "user"], "description": "Copy the item into this space"},
            "force": {"type": "boolean", "default": false, "description": "Overwrite an existing file at the destination"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "item_id"],
    });
    let any_out = |props: Json| json!({"type": "object", "properties": props});
    let execute_in = json!({
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "enum": ITEM_TYPES},
            "action": {"type": "string", "enum": ["run", "done", "dry_run", "validate", "create", "update", "delete", "link", "publish"],
                       "description": "directive: run done validate create update delete publish; tool: run dry_run validate create update delete publish; knowledge: run validate create update delete link publish; system: run. publish needs a running directive that grants it"},
            "item_id": {"type": "string"},
            "parameters": {"type": "object", "description": "Inputs of a directive, parameters of a tool; content for create/update; reference for link; for publish: registry (a configured registry's name; may be left out when only one is configured) and version (semver, else the item's own)"},
            "dry_run": {"type": "boolean", "default": false, "description": "For a tool run: show what would run, run nothing"},
            "parent": {"type": "string", "description": "For a directive run: the running directive to run it inside (nested, narrowed by it). Without it, a directive runs inside the active one only when a step of that one calls it; otherwise the active one ends"},
            "raw": {"type": "boolean", "default": false, "description": "For a directive run: also return the filled file (body) and each step's XML (text)"},
            "project_path": project_path_prop(),
        },
        "required": ["item_type", "action", "item_id"],
    });
    let help_in = json!({
        "type": "object",
        "properties": {"topic": {"type": "string", "enum": service::HELP_TOPICS}},
    });
    vec![
        Tool::new(
            "search",
            "Find directives, tools, knowledge or system items by relevance (BM25 over name, description, category, tags and body; word forms, joined words such as wordcount and typos tolerated). Results show the space of each item and what shadows it; total is how many match, and cursor (when present) gives the next results.",
            obj(search_in),
        )
        .with_title("Search kiwi items")
        .with_raw_output_schema(obj(search_out))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
        Tool::new(
            "load",
            "Read an item: content, parsed metadata, path, space and diagnostics. With destination (project|user), copy it there (atomic; never overwrites without force).",
            obj(load_in),
        )
        .with_title("Load a kiwi item")
        .with_raw_output_schema(obj(any_out(json!({
            "item_type": {"type": "string"}, "id": {"type": "string"}, "source": {"type": "string"},
            "path": {"type": "string"}, "content": {"type": "string"}, "metadata": {"type": "object"},
            "diagnostics": {"type": "array"}
        }))))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
        Tool::new(
            "execute",
            "Act on an item: run a directive (returns its parsed steps, each call ready to make; it becomes the session's active directive, end it with done; parent runs it inside another), run or dry_run a tool (progress notifications stream its output), read knowledge or a system item, validate, create/update (parameters.content), delete, link, publish (to a configured registry, signed with the user's key; needs a running directive that grants publish).",
            obj(execute_in),
        )
        .with_title("Execute an action on a kiwi item")
        .with_raw_output_schema(obj(any_out(json!({
            "item_type": {"type": "string"}, "id": {"type": "string"}
        }))))
        .with_annotations(
            ToolAnnotations::new().read_only(false).idempotent(false).destructive(true).open_world(true),
        ),
        Tool::new(
            "help",
            "Short help on a topic (overview search load execute directives tools knowledge system permissions environment), each with one real call.",
            obj(help_in),
        )
        .with_title("Kiwi help")
        .with_raw_output_schema(obj(any_out(json!({
            "topic": {"type": "string"}, "text": {"type": "string"}, "example": {"type": "object"}
        }))))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false)),
    ]
}

fn s(args: &JsonObject, k: &str) -> Option<String> {
    match args.get(k) {
        Some(Json::String(v)) => Some(v.clone()),
        _ => None,
    }
}

fn b(args: &JsonObject, k: &str) -> bool {
    matches!(args.get(k), Some(Json::Bool(true)))
}

/// Items per page of `prompts/list` and `resources/list` (the rest come with `nextCursor`).
pub const LIST_PAGE: usize = 100;

/// The page of a list that a request's cursor asks for, and the cursor of the next page
/// (`None` on the last). A cursor this server did not give is invalid params.
fn page<T>(
    mut items: Vec<T>,
    r: &Option<PaginatedRequestParams>,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let start = match r.as_ref().and_then(|p| p.cursor.as_deref()) {
        None => 0,
        Some(c) => c
            .strip_prefix("page:")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "cursor `{}` is not one this server gave; pass the previous answer's nextCursor",
                        c.chars().take(80).collect::<String>()
                    ),
                    None,
                )
            })?,
    };
    let end = start.saturating_add(LIST_PAGE).min(items.len());
    let next = (end < items.len()).then(|| format!("page:{end}"));
    let page: Vec<T> = items.drain(start..end).collect();
    Ok((page, next))
}

/// The search `limit`: absent, or a whole number (`"3"`, `2.5` and `-1` are errors; the range
/// is checked by the service).
fn limit_arg(args: &JsonObject) -> Result<Option<usize>, OpError> {
    match args.get("limit") {
        None | Some(Json::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Err(OpError::new(
                "invalid_arguments",
                format!(
                    "`limit` must be an integer from 1 to {}, not {v}",
                    service::MAX_SEARCH_LIMIT
                ),
            )),
        },
    }
}

/// An optional string argument: absent, or a string (anything else is an error).
fn opt_str(args: &JsonObject, k: &str) -> Result<Option<String>, OpError> {
    match args.get(k) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(v)) => Ok(Some(v.clone())),
        Some(other) => Err(OpError::new(
            "invalid_arguments",
            format!("`{k}` must be a string, not {other}"),
        )),
    }
}

/// A required string argument, or the error body that names it.
fn req(args: &JsonObject, k: &str, tool: &str) -> Result<String, OpError> {
    match args.get(k) {
        Some(Json::String(v)) => Ok(v.clone()),
        Some(other) => Err(OpError::new(
            "invalid_arguments",
            format!("`{k}` must be a string, not {other}"),
        )),
        None => {
            let mut e = OpError::new(
                "invalid_arguments",
                format!("`{tool}` needs the argument `{k}`"),
            );
            e.suggestions = vec![k.to_string()];
            Err(e)
        }
    }
}

/// Sends a tool's output as progress notifications.
struct ProgressSink {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
}

impl OutputSink for ProgressSink {
    fn output(&self, stream: Stream, bytes: &[u8], _newline: bool) {
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
    /// and text.
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
        let r = match name {
            "search" => (|| {
                Ok::<_, OpError>(SearchArgs {
                    item_type: req(&args, "item_type", "search")?,
                    query: s(&args, "query").unwrap_or_default(),
                    source: s(&args, "source"),
                    limit: limit_arg(&args)?,
                    cursor: opt_str(&args, "cursor")?,
                    project_path: s(&args, "project_path"),
                })
            })()
            .map_err(bad_args)
            .and_then(|a| svc.search(&self.session(), &a)),
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
        Ok(self.answer(r))
    }

    async fn execute(
        &self,
        a: &ExecuteArgs,
        ctx: Option<RequestContext<RoleServer>>,
    ) -> Result<Json, OpError> {
        let cancel = ctx.as_ref().map(|c| c.ct.clone()).unwrap_or_default();
        let token = ctx.as_ref().and_then(|c| c.meta.get_progress_token());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let sink = ProgressSink { tx };
        let pump = match (token, ctx.as_ref().map(|c| c.peer.clone())) {
            (Some(token), Some(peer)) => {
                Some(tokio::spawn(async move {
                    let mut n = 0u64;
                    // The lines were redacted as they streamed (the kernel's run).
                    while let Some(msg) = rx.recv().await {
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
            _ => {
                drop(rx);
                None
            }
        };
        let r = self.service.execute(&self.session, a, &sink, &cancel).await;
        drop(sink);
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

#[allow(deprecated)] // logging and resources/subscribe: deprecated by 2026-07-28, still served
impl ServerHandler for KiwiServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // The tool list is the four meta-tools: it never changes (no tools.listChanged).
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            kiwi_kernel::system::SERVER_NAME,
            kiwi_kernel::system::KIWI_VERSION,
        ))
        .with_instructions(
            "Kiwi workspaces: directives (workflows), tools (things that run) and knowledge, in project, user and builtin spaces. \
             Use search to find items, load to read them, execute to run them (a directive's steps tell you what to do next), help for a topic.",
        )
    }

    async fn on_initialized(&self, c: NotificationContext<RoleServer>) {
        // A session begun with `initialize`: list changes and followed items go to it.
        live::guard(&self.live).set_peer(c.peer);
    }

    async fn set_level(
        &self,
        r: SetLevelRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        live::guard(&self.live).set_level(r.level);
        Ok(())
    }

    async fn subscribe(
        &self,
        r: SubscribeRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Only an item the session may read can be followed; what it holds now is what
        // later looks compare with.
        let (svc, session, uri) = (self.service.clone(), self.session(), r.uri.clone());
        let fp = tokio::task::spawn_blocking(move || {
            svc.read_resource_files(&session, &uri)
                .map(|_| live::fingerprint(&svc, &uri))
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
        .map_err(resource_error)?;
        live::guard(&self.live).subscribe(r.uri, fp);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        r: UnsubscribeRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        live::guard(&self.live).unsubscribe(&r.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Both lists, and any kiwi:// item (one that does not exist yet is followed too: its
        // appearing is an update).
        let mut b = SubscriptionFilter::builder();
        if requested.prompts_list_changed == Some(true) {
            b = b.prompts_list_changed();
        }
        if requested.resources_list_changed == Some(true) {
            b = b.resources_list_changed();
        }
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|u| u.starts_with("kiwi://"))
            .cloned()
            .collect();
        if !uris.is_empty() {
            b = b.resource_subscriptions(uris);
        }
        Some(b.build())
    }

    async fn listen(&self, c: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let uris = c
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        // Registered first: a change seen from now on reaches this stream.
        let id = live::guard(&self.live).listen(c.sink().clone(), uris.clone());
        let svc = self.service.clone();
        let fps = tokio::task::spawn_blocking(move || {
            uris.into_iter()
                .map(|u| {
                    let f = live::fingerprint(&svc, &u);
                    (u, f)
                })
                .collect()
        })
        .await
        .unwrap_or_default();
        live::guard(&self.live).listened(id, fps);
        c.cancelled().await;
        live::guard(&self.live).unlisten(id);
        Ok(())
    }

    async fn complete(
        &self,
        r: CompleteRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let svc = self.service.clone();
        let session = self.session();
        let values = tokio::task::spawn_blocking(move || complete_values(&svc, &session, &r))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))??;
        let total = values.len();
        let shown: Vec<String> = values
            .into_iter()
            .take(CompletionInfo::MAX_VALUES)
            .collect();
        let more = total > shown.len();
        let info = CompletionInfo::with_pagination(shown, Some(total as u32), more)
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = r.name.to_string();
        let args = r.arguments.unwrap_or_default();
        let started = std::time::Instant::now();
        let log_ctx = c.clone();
        self.log(
            Some(&log_ctx),
            LoggingLevel::Debug,
            &format!("call {name} {}", Json::Object(args.clone())),
        )
        .await;
        let before = self.session().stack.len();
        let r = guarded(&name, self.call(&name, args.clone(), Some(c))).await;
        let after = self.session();
        if after.stack.len() != before
            || (name == "execute"
                && args.get("item_type").and_then(Json::as_str) == Some("directive")
                && r.as_ref().is_ok_and(|x| x.is_error != Some(true)))
        {
            // The active directive changed: what the lists show changed with it.
            live::lists_changed(&self.live).await;
        }
        match &r {
            Ok(res) => {
                self.log_outcome(Some(&log_ctx), &name, &args, res, started.elapsed())
                    .await
            }
            Err(e) => {
                self.log(
                    Some(&log_ctx),
                    LoggingLevel::Error,
                    &format!("{name}: {}", e.message),
                )
                .await
            }
        }
        r.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        // Only what the session may read: while a directive runs, what it grants (9).
        let session = self.session();
        let ds = self.service.directives(None).unwrap_or_default();
        let prompts = ds
            .into_iter()
            .filter(|(id, _, _)| may_read(&session, &format!("kiwi://directive/{id}")))
            .map(|(id, desc, inputs)| {
                let args: Vec<PromptArgument> = inputs
                    .into_iter()
                    .map(|(n, d, required)| {
                        let a = PromptArgument::new(n).with_required(required);
                        if d.is_empty() {
                            a
                        } else {
                            a.with_description(d)
                        }
                    })
                    .collect();
                Prompt::new(id, desc, Some(args))
            })
            .collect();
        let (prompts, next) = page(prompts, &_r)?;
        let mut res = ListPromptsResult::with_all_items(prompts);
        res.next_cursor = next;
        Ok(res)
    }

    async fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = r.arguments.unwrap_or_default();
        let (desc, text) = self
            .service
            .prompt(&self.session(), &r.name, &args)
            .map_err(internal)?;
        let mut res = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        if let Some(d) = desc {
            res = res.with_description(d);
        }
        Ok(res.into())
    }

    async fn list_resources(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let session = self.session();
        let rs = self.service.resources(None).unwrap_or_default();
        let list = rs
            .into_iter()
            .filter(|(uri, ..)| may_read(&session, uri))
            .map(|(uri, name, desc, mime)| {
                let r = Resource::new(uri, name).with_mime_type(mime);
                match desc {
                    Some(d) => r.with_description(d),
                    None => r,
                }
            })
            .collect();
        let (list, next) = page(list, &_r)?;
        let mut res = ListResourcesResult::with_all_items(list);
        res.next_cursor = next;
        Ok(res)
    }

    async fn list_resource_templates(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(TEMPLATE, "kiwi item").with_description(
                "A kiwi item: type directive, tool, knowledge or system; id such as core/init",
            ),
        ]))
    }

    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.note_protocol(Some(&_c));
        match self.service.read_resource_files(&self.session(), &r.uri) {
            Ok(files) => Ok(ReadResourceResult::new(
                files
                    .into_iter()
                    .map(|(uri, text, mime)| ResourceContents::text(text, uri).with_mime_type(mime))
                    .collect(),
            )
            .into()),
            Err(e) => Err(resource_error(e)),
        }
    }
}

/// Whether the session may read the item of a `kiwi://TYPE/ID` uri (a script's uri is its
/// tool's): what `prompts/list` and `resources/list` show while a directive runs.
fn may_read(session: &Session, uri: &str) -> bool {
    let Some((t, id)) = uri.strip_prefix("kiwi://").and_then(|r| r.split_once('/')) else {
        return false;
    };
    let id = id.split_once('?').map_or(id, |(id, _)| id);
    kiwi_kernel::ids::ItemType::parse(t).is_some_and(|t| session.check("load", t, Some(id)).is_ok())
}

/// A resource that cannot be read: not found, or another error the body explains.
fn resource_error(e: OpError) -> McpError {
    if e.error == "not_found" {
        McpError::resource_not_found(e.message.clone(), Some(e.to_json()))
    } else {
        internal(e)
    }
}

/// The values `completion/complete` offers: a prompt's argument (a directive input), or a
/// variable of the `kiwi://{type}/{id}` template. Ids only of the types the session may
/// search. An unknown prompt, argument or template is invalid params.
fn complete_values(
    svc: &Service,
    session: &Session,
    r: &CompleteRequestParams,
) -> Result<Vec<String>, McpError> {
    use kiwi_kernel::ide::values;
    use kiwi_kernel::ids::ItemType;
    let context: std::collections::HashMap<String, String> = r
        .context
        .as_ref()
        .and_then(|c| c.arguments.clone())
        .unwrap_or_default();
    let visible = |t: ItemType| session.check("search", t, None).is_ok();
    let ws = svc.workspace(None).map_err(internal)?;
    let (name, value) = (&r.argument.name, &r.argument.value);
    match &r.r#ref {
        Reference::Prompt(p) => {
            let item = ws
                .peek_id(ItemType::Directive, &p.name)
                .filter(|_| {
                    session
                        .check("load", ItemType::Directive, Some(&p.name))
                        .is_ok()
                })
                .ok_or_else(|| McpError::invalid_params(format!("no prompt `{}`", p.name), None))?;
            let d = item.directive().ok_or_else(|| {
                McpError::invalid_params(format!("prompt `{}` cannot be read", p.name), None)
            })?;
            values::input_values(&ws, d, name, value, &context, visible).ok_or_else(|| {
                McpError::invalid_params(
                    format!("prompt `{}` has no argument `{name}`", p.name),
                    None,
                )
            })
        }
        Reference::Resource(t) if t.uri == TEMPLATE => {
            values::template_values(&ws, name, value, &context, visible).ok_or_else(|| {
                McpError::invalid_params(
                    format!("`{TEMPLATE}` has no variable `{name}` (it has type and id)"),
                    None,
                )
            })
        }
        Reference::Resource(t) => Err(McpError::invalid_params(
            format!(
                "no resource template `{}`; the template is {TEMPLATE}",
                t.uri
            ),
            None,
        )),
        _ => Ok(Vec::new()),
    }
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
    tokio::spawn(async move {
        let _ = guard::run(input, to_rmcp, answers).await;
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

    /// Issue 16, point 10: a request whose params have the wrong shape is answered
    /// -32602 (invalid params) with its id, a malformed request -32600; never -32601.
    #[tokio::test]
    async fn malformed_params_are_invalid_params() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let dir = tempfile::tempdir().unwrap();
        let host = kiwi_kernel::context::Host::for_tests(&[(
            "KIWI_USERSPACE_DIR",
            dir.path().join("u").to_str().unwrap(),
        )]);
        let server = KiwiServer::new(Service::new(None, host));
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

/// A guard in front of rmcp's stdio reader. rmcp 3.9 answers a line that is JSON but not a
/// message it knows (`params` of the wrong type, say) with "Invalid request" and *no* id,
/// so a client waiting for that id would wait forever. Such a line, when it carries a usable
/// id, is answered here with that id: -32600 (invalid request) when it is no JSON-RPC 2.0
/// request, -32602 (invalid params) when its params do not have the shape its method takes.
/// Every other line goes on unchanged (rmcp skips lines that are not JSON, as the other MCP
/// SDKs do).
pub mod guard {
    use serde_json::{json, Value as Json};
    use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

    /// The error response to send for `line` (without its newline) instead of handing it to
    /// rmcp, if it is one the guard answers.
    pub fn answer(line: &[u8]) -> Option<Vec<u8>> {
        if serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(line).is_ok() {
            return None;
        }
        let Ok(Json::Object(obj)) = serde_json::from_slice::<Json>(line) else {
            return None;
        };
        let id = obj.get("id")?;
        let usable = id.is_string() || id.as_i64().is_some();
        if !usable || obj.contains_key("result") || obj.contains_key("error") {
            return None;
        }
        let method = obj.get("method").and_then(Json::as_str).unwrap_or("");
        let (code, message) = if obj.get("jsonrpc") != Some(&json!("2.0")) {
            (
                -32600,
                "invalid request: `jsonrpc` must be \"2.0\"".to_string(),
            )
        } else if method.is_empty() {
            (
                -32600,
                "invalid request: `method` must be a non-empty string".to_string(),
            )
        } else {
            (
                -32602,
                format!(
                    "invalid request: the params of `{}` do not have the shape it takes (invalid params)",
                    method.chars().take(100).collect::<String>()
                ),
            )
        };
        let msg = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        Some(msg.to_string().into_bytes())
    }

    /// Copy lines from `input` to `out`, except those [`answer`] answers: their answers go
    /// to `answers`.
    pub async fn run<I, W>(
        input: I,
        mut out: W,
        answers: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    ) -> std::io::Result<()>
    where
        I: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut r = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line).await? == 0 {
                return Ok(());
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            match answer(body) {
                Some(reply) => {
                    let _ = answers.send(reply);
                }
                None => {
                    out.write_all(&line).await?;
                    out.flush().await?;
                }
            }
        }
    }

    /// Write rmcp's output lines and the guard's answers to `out`, each line whole, until
    /// both end.
    pub async fn write_out<R, W>(
        from_rmcp: R,
        mut answers: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
        mut out: W,
    ) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut r = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        let mut rmcp_open = true;
        let mut answers_open = true;
        while rmcp_open || answers_open {
            tokio::select! {
                n = r.read_until(b'\n', &mut line), if rmcp_open => {
                    if n? == 0 {
                        rmcp_open = false;
                    } else {
                        out.write_all(&line).await?;
                        out.flush().await?;
                        line.clear();
                    }
                }
                a = answers.recv(), if answers_open => match a {
                    Some(mut reply) => {
                        reply.push(b'\n');
                        out.write_all(&reply).await?;
                        out.flush().await?;
                    }
                    None => answers_open = false,
                },
            }
        }
        Ok(())
    }
}
