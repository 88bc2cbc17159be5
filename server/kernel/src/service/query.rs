//! `search`: relevance over the project's search index, filtered by the session's
//! permissions, paged with cursors.

use super::error::{no_project, parse_source, parse_type, OpError, Res};
use super::{Service, Session};
use crate::ids::{ItemType, Space};
use serde_json::{json, Value as Json};

/// The longest search query accepted (a query is a few words; megabytes are refused).
pub const MAX_QUERY_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Default)]
pub struct SearchArgs {
    pub item_type: String,
    pub query: String,
    pub source: Option<String>,
    /// 1 to [`MAX_SEARCH_LIMIT`] (default 10); 0 is an error.
    pub limit: Option<usize>,
    /// Where the previous answer's list stopped (its `cursor`).
    pub cursor: Option<String>,
    pub project_path: Option<String>,
}

/// The most results one search answer holds (more come with its `cursor`).
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// The cursor that continues a search's list after `offset` results: the offset and a
/// fingerprint of the search, so that a cursor is not taken for another search's.
fn search_cursor(t: ItemType, query: &str, source: Option<Space>, offset: usize) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (t.as_str(), query.trim(), source.map(Space::as_str)).hash(&mut h);
    format!("{offset:x}.{:016x}", h.finish())
}

/// The offset a search cursor continues from, or the error that says why it is not one.
fn cursor_offset(t: ItemType, query: &str, source: Option<Space>, cursor: &str) -> Res<usize> {
    let bad = || {
        OpError::new(
            "invalid_arguments",
            format!(
                "`cursor` `{}` is not a cursor of this search; pass the `cursor` of the previous answer with the same item_type, query and source",
                cursor.chars().take(80).collect::<String>()
            ),
        )
    };
    let (off, _) = cursor.split_once('.').ok_or_else(bad)?;
    let offset = usize::from_str_radix(off, 16).map_err(|_| bad())?;
    if offset > 1 << 40 || search_cursor(t, query, source, offset) != cursor {
        return Err(bad());
    }
    Ok(offset)
}

impl Service {
    /// `search`: the items of a type that match the query (every item for `""` or `*`),
    /// best first, those the session may not search left out; `cursor` continues a list.
    pub(super) fn search_answer(&self, session: &Session, a: &SearchArgs) -> Res<Json> {
        let at = |e: OpError| e.at(Some(&a.item_type), Some("search"), None);
        let t = parse_type(&a.item_type).map_err(at)?;
        if let Some(only) = registry_source(a.source.as_deref()) {
            return self.search_registry(session, a, t, only).map_err(at);
        }
        let extra = self.extra_spaces(a.project_path.as_deref()).map_err(at)?;
        let source = parse_source(a.source.as_deref(), &extra).map_err(at)?;
        if t != ItemType::System
            && matches!(source, None | Some(Space::Project))
            && self
                .project_for(a.project_path.as_deref())
                .map_err(at)?
                .is_none()
        {
            return Err(at(no_project(&format!(
                "a search of {} needs the project",
                match source {
                    None => "every space",
                    _ => "the project space",
                }
            ))));
        }
        session.check("search", t, None).map_err(at)?;
        if a.query.len() > MAX_QUERY_BYTES {
            return Err(at(OpError::new(
                "invalid_arguments",
                format!(
                    "the query is {} bytes long; a search query is at most {MAX_QUERY_BYTES} bytes",
                    a.query.len()
                ),
            )));
        }
        let limit = match a.limit {
            None => 10,
            Some(n @ 1..=MAX_SEARCH_LIMIT) => n,
            Some(n) => {
                return Err(at(OpError::new(
                    "invalid_arguments",
                    format!("`limit` is {n}; it must be an integer from 1 to {MAX_SEARCH_LIMIT}"),
                )))
            }
        };
        let offset = match a.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => cursor_offset(t, &a.query, source, c).map_err(at)?,
        };
        let idx = self.search_index(a.project_path.as_deref()).map_err(at)?;
        let keep = |id: &str| session.visible("search", t, id);
        let want = offset.saturating_add(limit);
        let (hits, total) = if a.query.trim().is_empty() || a.query.trim() == "*" {
            idx.list_filtered(t, source, want, &keep)
        } else {
            idx.search_filtered(t, &a.query, source, want, &keep)
        };
        let hits: Vec<_> = hits.into_iter().skip(offset).collect();
        let mut out = json!({
            "item_type": t.as_str(),
            "query": a.query,
            "total": total,
            "results": hits,
        });
        if want < total {
            out["cursor"] = json!(search_cursor(t, &a.query, source, want));
        }
        Ok(out)
    }
}

/// `registry` (every configured registry) or `registry:NAME`: `Some(None)` / `Some(Some(NAME))`.
pub(super) fn registry_source(source: Option<&str>) -> Option<Option<&str>> {
    match source? {
        "registry" => Some(None),
        s => s.strip_prefix("registry:").map(Some),
    }
}
