//! Workspace symbols: the items of every workspace (each file once, builtin items left out)
//! found by id, type and description (06, the LSP table) through the search index
//! ([`crate::search::Index`]: its ranking, typo-tolerant and joined-word matching, an exact
//! id first), then those whose id, type or description merely holds the query
//! (case-insensitive) in id order. An empty query lists every item, sorted by id.
//!
//! The index is built once per state of the workspaces ([`SymbolIndex::build`]) and kept by
//! the caller while nothing changes.

use crate::ids::ItemType;
use crate::search::{self, ExternalDoc, Index, Meta};
use crate::text::TextRange;
use crate::workspace::{Item, Workspace};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One item found: where to show it and what holds it ("tool (project): its description").
#[derive(Debug, Clone)]
pub struct WorkspaceSymbol {
    pub item: Arc<Item>,
    /// The item's first line after its header, in its text.
    pub range: TextRange,
    pub container: String,
}

/// A search index over the ids, names, types and descriptions of the items of some
/// workspaces (each file once, builtin items left out; not their bodies: a symbol is found
/// by what it is called and says it does, not by every text that mentions it), and their
/// paths in id order. It keeps no item: asked with the workspaces it was built from, it
/// holds no memory of an older state.
pub struct SymbolIndex {
    index: Index,
    paths: Vec<PathBuf>,
}

impl SymbolIndex {
    pub fn build(spaces: &[Arc<Workspace>]) -> SymbolIndex {
        let mut seen = HashSet::new();
        let mut items: Vec<Arc<Item>> = Vec::new();
        for ws in spaces {
            for item in ws.items() {
                if !item.is_builtin() && seen.insert(item.path.clone()) {
                    items.push(item.clone());
                }
            }
        }
        items.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.path.cmp(&b.path)));
        let docs = items
            .iter()
            .map(|item| {
                let m = search::meta(item);
                ExternalDoc {
                    item_type: item.item_type,
                    id: item.id.clone(),
                    source: item.space.as_str().to_string(),
                    path: Some(item.path.clone()),
                    meta: Meta {
                        name: m.name,
                        description: m.description,
                        ..Meta::default()
                    },
                    body: item.item_type.as_str().to_string(),
                    shadowed_by: None,
                }
            })
            .collect();
        SymbolIndex {
            index: Index::from_external(docs),
            paths: items.iter().map(|i| i.path.clone()).collect(),
        }
    }
}

/// The item at `path` in the first workspace that has it.
fn item_at<'a>(spaces: &'a [Arc<Workspace>], path: &Path) -> Option<&'a Arc<Item>> {
    spaces.iter().find_map(|ws| ws.item(path))
}

/// The most items a query answers (an empty query lists them all): a short word matches
/// thousands of items, and an editor shows the best few (rust-analyzer stops at 128).
pub const MAX_SYMBOLS: usize = 256;

/// The items for a query, of `spaces` as `idx` was built from them: the index's hits, best
/// first; then the items whose id, type or description holds the query, by id. Every item
/// once, at most [`MAX_SYMBOLS`].
pub fn workspace_symbols(
    spaces: &[Arc<Workspace>],
    idx: &SymbolIndex,
    query: &str,
) -> Vec<WorkspaceSymbol> {
    let items = || idx.paths.iter().filter_map(|p| item_at(spaces, p));
    let query = query.trim();
    if query.is_empty() {
        return items().map(symbol).collect();
    }
    let mut hits: Vec<(f64, &Arc<Item>)> = Vec::new();
    for t in ItemType::FILE_TYPES {
        for h in idx.index.search(t, query, None, MAX_SYMBOLS) {
            if let Some(item) = h
                .path
                .as_deref()
                .and_then(|p| item_at(spaces, Path::new(p)))
            {
                hits.push((h.score, item));
            }
        }
    }
    // Best first; equal scores by id (as the index orders them within a type).
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let mut listed: HashSet<&Path> = HashSet::new();
    let mut out = Vec::new();
    for (_, item) in hits {
        if listed.insert(&item.path) {
            out.push(symbol(item));
        }
    }
    let q = query.to_lowercase();
    out.truncate(MAX_SYMBOLS);
    for item in items() {
        if out.len() >= MAX_SYMBOLS {
            break;
        }
        if listed.contains(item.path.as_path()) {
            continue;
        }
        let hay = format!(
            "{} {} {}",
            item.id.to_lowercase(),
            item.item_type.as_str(),
            item.description().unwrap_or("").to_lowercase()
        );
        if hay.contains(&q) {
            out.push(symbol(item));
        }
    }
    out
}

fn symbol(item: &Arc<Item>) -> WorkspaceSymbol {
    let desc = item.description().unwrap_or("");
    let container = format!(
        "{} ({}){}",
        item.item_type.as_str(),
        item.space.as_str(),
        if desc.is_empty() {
            String::new()
        } else {
            format!(": {desc}")
        }
    );
    WorkspaceSymbol {
        range: crate::check::first_line(item),
        item: item.clone(),
        container,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;
    use crate::ids::{ItemType, Space};
    use crate::workspace::parse_item;
    use std::path::PathBuf;

    /// A project workspace of tools: (id, description) each, under `tools/{id}.py`.
    fn tools(list: &[(&str, &str)]) -> Arc<Workspace> {
        let mut ws = Workspace::new(
            Some(PathBuf::from("/nonexistent/proj")),
            Host::for_tests(&[("HOME", "/nonexistent/home")]),
        );
        for (id, desc) in list {
            let text = format!(
                "__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"{desc}\"\n"
            );
            let item = parse_item(
                ItemType::Tool,
                id.to_string(),
                Space::Project,
                PathBuf::from(format!("/nonexistent/proj/.ai/tools/{id}.py")),
                text.as_bytes(),
            )
            .expect("an item");
            ws.insert(Arc::new(item));
        }
        Arc::new(ws)
    }

    /// The ids found for `q` in `spaces`.
    fn ids(spaces: &[Arc<Workspace>], q: &str) -> Vec<String> {
        workspace_symbols(spaces, &SymbolIndex::build(spaces), q)
            .into_iter()
            .map(|s| s.item.id.clone())
            .collect()
    }

    #[test]
    fn matches_id_type_and_description_each_file_once() {
        let ws = tools(&[
            ("text/echo", "Echo a message"),
            ("text/count", "Count words"),
        ]);
        let both = [ws.clone(), ws.clone()];
        let ids = |q: &str| ids(&both, q);
        assert_eq!(ids(""), ["text/count", "text/echo"]);
        assert_eq!(ids("ECHO"), ["text/echo"]);
        assert_eq!(ids("words"), ["text/count"]);
        assert_eq!(ids("tool"), ["text/count", "text/echo"]);
        assert!(ids("nothing like it").is_empty());
        let s = &workspace_symbols(&both, &SymbolIndex::build(&both), "echo")[0];
        assert_eq!(s.container, "tool (project): Echo a message");
    }

    /// Issue 14: workspace symbols through the search index: the exact id first, a typo and
    /// other word forms found, the description's words in any order.
    #[test]
    fn ranked_by_the_search_index() {
        let spaces = [tools(&[
            ("text/echo", "Echo a message"),
            ("text/count", "Count words and echo the total"),
            ("web/fetch_page", "Download a page"),
        ])];
        let ids = |q: &str| ids(&spaces, q);
        assert_eq!(ids("text/echo")[0], "text/echo");
        assert_eq!(ids("echo")[0], "text/echo");
        assert!(ids("echo").contains(&"text/count".to_string()));
        assert_eq!(ids("ecko"), ["text/echo", "text/count"]);
        assert_eq!(ids("fetch pages"), ["web/fetch_page"]);
        assert_eq!(ids("page downlod"), ["web/fetch_page"]);
    }

    /// A word every item has answers the best [`MAX_SYMBOLS`], the exact id first; an empty
    /// query lists them all.
    #[test]
    fn a_common_word_answers_a_bounded_list() {
        let list: Vec<(String, String)> = (0..MAX_SYMBOLS + 50)
            .map(|i| (format!("cat/tool_{i}"), format!("Tool {i} processes files")))
            .collect();
        let refs: Vec<(&str, &str)> = list.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let spaces = [tools(&refs)];
        let found = ids(&spaces, "cat/tool_7");
        assert_eq!(found[0], "cat/tool_7");
        assert_eq!(found.len(), MAX_SYMBOLS);
        assert_eq!(ids(&spaces, "").len(), MAX_SYMBOLS + 50);
    }
}
