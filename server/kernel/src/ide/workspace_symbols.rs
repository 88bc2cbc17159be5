//! Workspace symbols: the items of every workspace (each file once, builtin items left out)
//! whose id, type or description holds the query (case-insensitive; an empty query matches
//! every item), sorted by id.

use crate::text::TextRange;
use crate::workspace::{Item, Workspace};
use std::collections::HashSet;
use std::sync::Arc;

/// One item found: where to show it and what holds it ("tool (project): its description").
#[derive(Debug, Clone)]
pub struct WorkspaceSymbol {
    pub item: Arc<Item>,
    /// The item's first line after its header, in its text.
    pub range: TextRange,
    pub container: String,
}

pub fn workspace_symbols(spaces: &[Arc<Workspace>], query: &str) -> Vec<WorkspaceSymbol> {
    let query = query.to_lowercase();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for ws in spaces {
        for item in ws.items() {
            if item.is_builtin() || !seen.insert(item.path.clone()) {
                continue;
            }
            let desc = item.description().unwrap_or("");
            let hay = format!(
                "{} {} {}",
                item.id.to_lowercase(),
                item.item_type.as_str(),
                desc.to_lowercase()
            );
            if !query.is_empty() && !hay.contains(&query) {
                continue;
            }
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
            out.push(WorkspaceSymbol {
                range: crate::check::first_line(item),
                item: item.clone(),
                container,
            });
        }
    }
    out.sort_by(|a, b| a.item.id.cmp(&b.item.id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;
    use crate::ids::{ItemType, Space};
    use crate::workspace::parse_item;
    use std::path::PathBuf;

    #[test]
    fn matches_id_type_and_description_each_file_once() {
        let mut ws = Workspace::new(
            Some(PathBuf::from("/nonexistent/proj")),
            Host::for_tests(&[("HOME", "/nonexistent/home")]),
        );
        for (rel, id, desc) in [
            ("tools/text/echo.py", "text/echo", "Echo a message"),
            ("tools/text/count.py", "text/count", "Count words"),
        ] {
            let text = format!(
                "__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"{desc}\"\n"
            );
            let item = parse_item(
                ItemType::Tool,
                id.into(),
                Space::Project,
                PathBuf::from("/nonexistent/proj/.ai").join(rel),
                text.as_bytes(),
            )
            .expect("an item");
            ws.insert(Arc::new(item));
        }
        let ws = Arc::new(ws);
        let both = [ws.clone(), ws.clone()];
        let ids = |q: &str| -> Vec<String> {
            workspace_symbols(&both, q)
                .into_iter()
                .map(|s| s.item.id.clone())
                .collect()
        };
        assert_eq!(ids(""), ["text/count", "text/echo"]);
        assert_eq!(ids("ECHO"), ["text/echo"]);
        assert_eq!(ids("words"), ["text/count"]);
        assert_eq!(ids("tool"), ["text/count", "text/echo"]);
        assert!(ids("nothing like it").is_empty());
        let s = &workspace_symbols(&both, "echo")[0];
        assert_eq!(s.container, "tool (project): Echo a message");
    }
}
