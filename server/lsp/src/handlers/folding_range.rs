//! `textDocument/foldingRange`: each element of a directive spanning lines (each step,
//! shown by its name when folded), comments, a tool's maps and lists.

use crate::session::Backend;
use kiwi_kernel::ide::{self, FoldKind};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn folding_range(
    b: &Backend,
    p: FoldingRangeParams,
) -> Result<Option<Vec<FoldingRange>>> {
    let Some((snap, folds)) = b
        .query(&p.text_document.uri, None, |_, item, _| {
            ide::folding_ranges(item)
        })
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(
        folds
            .into_iter()
            .filter_map(|f| {
                let start = snap.position(f.range.start).line;
                // The closing line (`</step>`, `}`) stays visible.
                let end = snap.position(f.range.end).line.checked_sub(1)?;
                (end > start).then_some(FoldingRange {
                    start_line: start,
                    start_character: None,
                    end_line: end,
                    end_character: None,
                    kind: Some(match f.kind {
                        FoldKind::Region => FoldingRangeKind::Region,
                        FoldKind::Comment => FoldingRangeKind::Comment,
                    }),
                    collapsed_text: f.label,
                })
            })
            .collect(),
    ))
}
