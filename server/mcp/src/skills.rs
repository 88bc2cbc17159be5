//! The MCP Skills extension (`io.modelcontextprotocol/skills`, with `directoryRead`):
//! `skills/list`, `skills/get`, `resources/directory/read` and the `skill://<name>/<file>`
//! resources read with `resources/read`. The kernel's [`kiwi_kernel::skill::serve`] says
//! what is served; this maps it to MCP. A session reads a skill only where the running
//! directive's permissions let it load items of type `skill`.

use crate::KiwiServer;
use base64::Engine;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::skill::serve;
use kiwi_kernel::workspace::{Item, Workspace};
use rmcp::model::*;
use rmcp::ErrorData as McpError;
use std::sync::Arc;

/// How long a listing or entry may be taken as current (a skill folder changes when its
/// author edits it; the digests say whether a read is still the listed content).
const TTL_MS: u64 = 60_000;

fn not_served(uri: &str) -> McpError {
    McpError::invalid_params(format!("No skill is served at {uri}"), None)
}

impl KiwiServer {
    fn skills_ws(&self) -> Result<Workspace, McpError> {
        self.service
            .workspace(None)
            .map_err(|e| McpError::internal_error(e.message.clone(), None))
    }

    /// The served skill of a URI's first segment, and the file's path in it. `Err(None)`:
    /// no skill is served there; `Err(Some(e))`: the running directive does not let this
    /// session load it (the missing capability named, as for every item).
    fn skill_of(&self, ws: &Workspace, uri: &str) -> Result<(Arc<Item>, String), Option<McpError>> {
        let (name, rel) = serve::split_uri(uri).ok_or(None)?;
        let item = serve::find(ws, name).ok_or(None)?;
        self.session()
            .check("load", ItemType::Skill, Some(&item.id))
            .map_err(|e| {
                Some(McpError::invalid_params(
                    e.message.clone(),
                    Some(e.to_json()),
                ))
            })?;
        Ok((item, rel.to_string()))
    }

    fn entry(&self, item: &Item) -> Option<Skill> {
        to_skill(serve::entry(item, &self.service.secrets())?)
    }

    /// `skills/list`: every skill served, a page at a time.
    pub(crate) async fn skills_list(
        &self,
        r: Option<PaginatedRequestParams>,
    ) -> Result<ListSkillsResult, McpError> {
        let this = self.clone();
        let all = tokio::task::spawn_blocking(move || -> Result<Vec<Arc<Item>>, McpError> {
            let ws = this.skills_ws()?;
            let session = this.session();
            Ok(serve::served(&ws)
                .into_iter()
                .filter(|i| session.check("load", ItemType::Skill, Some(&i.id)).is_ok())
                .collect())
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))??;
        // The page first, then the digests of its skills only.
        let (page, next) = crate::handler::page(all, &r)?;
        let this = self.clone();
        let skills = tokio::task::spawn_blocking(move || {
            this.service.skill_entries(None, &page).map(|entries| {
                entries
                    .into_iter()
                    .flatten()
                    .filter_map(to_skill)
                    .collect::<Vec<Skill>>()
            })
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
        .map_err(|e| McpError::internal_error(e.message.clone(), None))?;
        let mut res = ListSkillsResult::with_all_items(skills)
            .with_ttl_ms(TTL_MS)
            .with_cache_scope(CacheScope::Private);
        res.next_cursor = next;
        Ok(res)
    }

    /// `skills/get`: the entry of one skill by the URI of its SKILL.md.
    pub(crate) async fn skills_get(&self, uri: String) -> Result<GetSkillResult, McpError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let ws = this.skills_ws()?;
            let (item, rel) = this
                .skill_of(&ws, &uri)
                .map_err(|e| e.unwrap_or_else(|| not_served(&uri)))?;
            if rel != "SKILL.md" {
                return Err(not_served(&uri));
            }
            let skill = this.entry(&item).ok_or_else(|| not_served(&uri))?;
            let mut res = GetSkillResult::new(skill);
            res.ttl_ms = Some(TTL_MS);
            res.cache_scope = Some(CacheScope::Private);
            Ok(res)
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
    }

    /// `resources/directory/read`: the direct children of a directory of a skill.
    pub(crate) async fn skills_directory(
        &self,
        r: ReadResourceDirectoryRequestParams,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let this = self.clone();
        let uri = r.uri.clone();
        let children = tokio::task::spawn_blocking(move || {
            let ws = this.skills_ws()?;
            let (item, rel) = this.skill_of(&ws, &uri).map_err(|e| {
                e.unwrap_or_else(|| {
                    McpError::invalid_params(format!("{uri} is not a directory resource"), None)
                })
            })?;
            serve::directory(&item, &rel).ok_or_else(|| {
                McpError::invalid_params(format!("{uri} is not a directory resource"), None)
            })
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))??;
        let list: Vec<Resource> = children
            .into_iter()
            .map(|c| {
                let mime = if c.is_dir {
                    "inode/directory"
                } else {
                    serve::mime(&c.name)
                };
                Resource::new(c.uri, c.name).with_mime_type(mime)
            })
            .collect();
        let pr = r
            .cursor
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (list, next) = crate::handler::page(list, &pr)?;
        let mut res = ReadResourceDirectoryResult::with_all_items(list);
        res.next_cursor = next;
        Ok(res)
    }

    /// `resources/read` of a `skill://` URI: the file's bytes as served (text, or base64).
    pub(crate) fn skills_read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let ws = self.skills_ws()?;
        let (item, rel) = self
            .skill_of(&ws, uri)
            .map_err(|e| e.unwrap_or_else(|| not_served(uri)))?;
        let dir = item.path.parent().ok_or_else(|| not_served(uri))?;
        if rel.is_empty() || !serve::files(dir).contains(&rel) {
            return Err(McpError::invalid_params(
                format!("{uri} is not a file of the skill `{}`", item.id),
                None,
            ));
        }
        let bytes =
            serve::bytes(dir, &rel, &self.service.secrets()).ok_or_else(|| not_served(uri))?;
        let mime = serve::mime(&rel);
        let content = match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(text, uri).with_mime_type(mime),
            Err(e) => ResourceContents::blob(
                base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
                uri,
            )
            .with_mime_type(mime),
        };
        Ok(ReadResourceResult::new(vec![content]))
    }
}

/// A served skill's entry as the extension's type.
fn to_skill(e: serve::Entry) -> Option<Skill> {
    let mut extra = e.frontmatter;
    let name = extra.remove("name")?;
    let description = extra.remove("description")?;
    let mut fm = SkillFrontmatter::new(name.as_str()?, description.as_str()?);
    fm.extra = extra;
    let files = e
        .files
        .into_iter()
        .map(|f| SkillResource::new(f.uri, f.digest, f.size))
        .collect();
    Some(Skill::new(e.uri, fm, SkillResources::Files(files)))
}
