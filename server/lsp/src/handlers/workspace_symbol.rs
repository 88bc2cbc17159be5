//! `workspace/symbol`: the kernel's `ide::workspace_symbols` over the search index of every
//! workspace (built once per state of the set, kept in the session), in LSP terms.

use crate::convert::{self, to_uri};
use crate::session::Backend;
use crate::task::blocking;
use kiwi_kernel::ide;
use kiwi_kernel::ids::ItemType;
use std::sync::Arc;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn symbol(
    b: &Backend,
    p: WorkspaceSymbolParams,
) -> Result<Option<WorkspaceSymbolResponse>> {
    b.wait_loaded(None).await;
    let (spaces, enc, changes, cached) = {
        let st = b.lock();
        (
            st.set.iter().map(|(_, ws)| ws.clone()).collect::<Vec<_>>(),
            st.enc,
            st.set.changes(),
            st.symbols.clone(),
        )
    };
    // The index of the workspaces as they are now: kept while nothing changes.
    let index = match cached {
        Some((at, idx)) if at == changes => idx,
        _ => {
            let all = spaces.clone();
            let idx = Arc::new(blocking(move || ide::SymbolIndex::build(&all)).await?);
            let mut st = b.lock();
            if st.set.changes() == changes {
                st.symbols = Some((changes, idx.clone()));
            }
            idx
        }
    };
    let out = blocking(move || {
        ide::workspace_symbols(&spaces, &index, &p.query)
            .into_iter()
            .filter_map(|s| {
                let item = &s.item;
                #[allow(deprecated)]
                Some(SymbolInformation {
                    name: item.id.clone(),
                    kind: match item.item_type {
                        ItemType::Directive => SymbolKind::MODULE,
                        ItemType::Tool => SymbolKind::FUNCTION,
                        _ => SymbolKind::FILE,
                    },
                    tags: None,
                    deprecated: None,
                    location: Location::new(
                        to_uri(&item.path)?,
                        convert::range(&item.source, s.range, enc),
                    ),
                    container_name: Some(s.container),
                })
            })
            .collect()
    })
    .await?;
    Ok(Some(WorkspaceSymbolResponse::Flat(out)))
}
