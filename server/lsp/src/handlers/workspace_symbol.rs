//! `workspace/symbol`: the items of every workspace whose id, type or description holds
//! the query.

use crate::convert::{self, to_uri};
use crate::server::Backend;
use crate::task::blocking;
use kiwi_kernel::ids::ItemType;
use std::collections::HashSet;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn symbol(
    b: &Backend,
    p: WorkspaceSymbolParams,
) -> Result<Option<WorkspaceSymbolResponse>> {
    b.wait_loaded(None).await;
    let (spaces, enc) = {
        let st = b.lock();
        (
            st.set.iter().map(|(_, ws)| ws.clone()).collect::<Vec<_>>(),
            st.enc,
        )
    };
    let query = p.query.to_lowercase();
    let out = blocking(move || {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for ws in &spaces {
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
                let Some(uri) = to_uri(&item.path) else {
                    continue;
                };
                let range = convert::range(&item.source, kiwi_kernel::check::first_line(item), enc);
                #[allow(deprecated)]
                out.push(SymbolInformation {
                    name: item.id.clone(),
                    kind: match item.item_type {
                        ItemType::Directive => SymbolKind::MODULE,
                        ItemType::Tool => SymbolKind::FUNCTION,
                        _ => SymbolKind::FILE,
                    },
                    tags: None,
                    deprecated: None,
                    location: Location::new(uri, range),
                    container_name: Some(format!(
                        "{} ({}){}",
                        item.item_type.as_str(),
                        item.space.as_str(),
                        if desc.is_empty() {
                            String::new()
                        } else {
                            format!(": {desc}")
                        }
                    )),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    })
    .await?;
    Ok(Some(WorkspaceSymbolResponse::Flat(out)))
}
