//! The MCP requests and notifications: `ServerHandler` for [`KiwiServer`] (tools, prompts,
//! resources, subscriptions, logging, completion), with list paging and the resource
//! checks it uses.

use crate::complete::complete_values;
use crate::{guarded, internal, live, KiwiServer, TEMPLATE};
use kiwi_kernel::service::{OpError, Session};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value as Json;

/// Items per page of `prompts/list` and `resources/list` (the rest come with `nextCursor`).
pub const LIST_PAGE: usize = 100;

/// The page of a list that a request's cursor asks for, and the cursor of the next page
/// (`None` on the last). A cursor this server did not give is invalid params.
pub(crate) fn page<T>(
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

/// The cache hints of a list whose content follows the session (the running directive) and
/// the disk (SEP-2549): fresh for no time, for this client only.
fn cache_hints<T: CacheHinted>(r: T) -> T {
    r.hinted()
}

trait CacheHinted {
    fn hinted(self) -> Self;
}

macro_rules! cache_hinted {
    ($($t:ty),*) => {$(
        impl CacheHinted for $t {
            fn hinted(self) -> Self {
                self.with_ttl_ms(0).with_cache_scope(CacheScope::Private)
            }
        }
    )*};
}
cache_hinted!(
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult
);

#[allow(deprecated)] // LoggingLevel: deprecated by 2026-07-28, still served
impl KiwiServer {
    /// When the running directive hides items from a list: a notice in the list's `_meta`
    /// (`kiwi/notice`) and a log message, so that an empty list is never silent.
    async fn hidden_notice(
        &self,
        ctx: &RequestContext<RoleServer>,
        session: &Session,
        what: &str,
        hidden: usize,
    ) -> Option<MetaObject> {
        let active = session.active()?;
        if hidden == 0 {
            return None;
        }
        let text = format!(
            "{hidden} {what} are hidden while directive `{}` runs: it grants loading only what it names (its permissions); end it with execute done, or run what it grants",
            active.id
        );
        self.log(Some(ctx), LoggingLevel::Notice, &text).await;
        let mut m = MetaObject::new();
        m.insert("kiwi/notice".into(), serde_json::json!(text));
        m.insert("kiwi/hidden".into(), serde_json::json!(hidden));
        m.insert("kiwi/active_directive".into(), serde_json::json!(active.id));
        Some(m)
    }
}

#[allow(deprecated)] // LoggingLevel: deprecated by 2026-07-28, still served
impl KiwiServer {
    /// One tool call to its end, logged, the lists' change announced when the active
    /// directive changed (answered to the request, or kept as a task's result).
    pub(crate) async fn finish_call(
        &self,
        name: String,
        args: JsonObject,
        c: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let started = std::time::Instant::now();
        let log_ctx = c.clone();
        self.log(
            Some(&log_ctx),
            LoggingLevel::Debug,
            &format!("call {name} {}", Json::Object(args.clone())),
        )
        .await;
        let before = self.session().stack.len();
        if let Some(r) = self.editor_call(&name, &args).await {
            return r;
        }
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
        r
    }
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
                // Long `execute` runs as tasks (crate::tasks).
                .enable_tasks()
                // Agent Skills as `skill://` resources (crate::skills).
                .enable_skills_with_directory_read()
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
        Ok(cache_hints(ListToolsResult::with_all_items(
            self.tool_list(),
        )))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // An `execute` may become a task or ask for input (crate::tasks).
        let name = r.name.to_string();
        let args = r.arguments.unwrap_or_default();
        self.call_tool_response(name, args, r.input_responses, c)
            .await
    }

    async fn get_task(
        &self,
        r: GetTaskParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.get_task_result(&r.task_id).await
    }

    async fn update_task(
        &self,
        r: UpdateTaskParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.update_task_id(&r.task_id, r.input_responses).await
    }

    async fn cancel_task(
        &self,
        r: CancelTaskParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.cancel_task_id(&r.task_id).await
    }

    async fn list_prompts(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        // Only what the session may read: while a directive runs, what it grants (9).
        let session = self.session();
        let ds = self.service.directives(None).unwrap_or_default();
        let total = ds.len();
        let prompts: Vec<Prompt> = ds
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
        let hidden = total - prompts.len();
        let (prompts, next) = page(prompts, &_r)?;
        let mut res = ListPromptsResult::with_all_items(prompts);
        res.next_cursor = next;
        res.meta = self.hidden_notice(&_c, &session, "prompts", hidden).await;
        Ok(cache_hints(res))
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
        let total = rs.len();
        let list: Vec<Resource> = rs
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
        let hidden = total - list.len();
        let list = self.editor_resources(list);
        let (list, next) = page(list, &_r)?;
        let mut res = ListResourcesResult::with_all_items(list);
        res.next_cursor = next;
        res.meta = self.hidden_notice(&_c, &session, "resources", hidden).await;
        Ok(cache_hints(res))
    }

    async fn list_skills(
        &self,
        r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        self.skills_list(r).await
    }

    async fn get_skill(
        &self,
        r: GetSkillRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        self.skills_get(r.uri).await
    }

    async fn read_resource_directory(
        &self,
        r: ReadResourceDirectoryRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        self.skills_directory(r).await
    }

    async fn list_resource_templates(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(cache_hints(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(TEMPLATE, "kiwi item").with_description(
                "A kiwi item: type directive, tool, knowledge or system; id such as core/init",
            ),
            ResourceTemplate::new("kiwi://run/{run}/output", "a run's whole output")
                .with_description(
                    "The whole stdout of a tool run whose answer showed only its head and tail (kiwi://run/{run}/stderr: its stderr; ?lines=A-B: a range of lines). A session keeps the last 16.",
                )
                .with_mime_type("text/plain"),
        ])))
    }

    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.note_protocol(Some(&_c));
        if r.uri.starts_with(kiwi_kernel::skill::serve::SCHEME) {
            let this = self.clone();
            return tokio::task::spawn_blocking(move || this.skills_read(&r.uri))
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?
                .map(Into::into);
        }
        if let Some(r) = self.editor_read(&r.uri).await {
            return r.map(Into::into);
        }
        if r.uri.starts_with(crate::shape::RUN_PREFIX) {
            // A run's whole output, kept when its answer was cut (issue 26).
            let text = self
                .outputs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .read(&r.uri)
                .map_err(|m| McpError::resource_not_found(m, None))?;
            return Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, r.uri).with_mime_type("text/plain")
            ])
            .into());
        }
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
