//! `textDocument/semanticTokens/full`: `{input:…}`, `{system.…}`, `${VAR}` and item ids
//! inside a directive's fence (a tool's executor id and `${VAR}`s), as standard token types.

use crate::session::Backend;
use kiwi_kernel::ide::{self, TokenKind};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

/// The standard type each kernel token kind is shown as.
fn token_type(kind: TokenKind) -> SemanticTokenType {
    match kind {
        TokenKind::Input => SemanticTokenType::PARAMETER,
        TokenKind::System => SemanticTokenType::PROPERTY,
        TokenKind::EnvVar => SemanticTokenType::VARIABLE,
        TokenKind::ItemId => SemanticTokenType::NAMESPACE,
    }
}

/// Modifier bits: `defaultLibrary` (bit 0) for what kiwi itself defines (`{system.…}`);
/// `unresolved` (bit 1, kiwi's own) for an item id no space holds or an `{input:…}` the
/// directive does not declare. The latter depends on the workspace: the tokens move when
/// items appear or go (hence `workspace/semanticTokens/refresh`).
const MODIFIERS: [SemanticTokenModifier; 2] = [
    SemanticTokenModifier::DEFAULT_LIBRARY,
    SemanticTokenModifier::new("unresolved"),
];

/// The legend advertised in `initialize`: the kinds in [`TokenKind::ALL`]'s order.
pub(crate) fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TokenKind::ALL.iter().map(|k| token_type(*k)).collect(),
        token_modifiers: MODIFIERS.to_vec(),
    }
}

pub(crate) async fn semantic_tokens_full(
    b: &Backend,
    p: SemanticTokensParams,
) -> Result<Option<SemanticTokensResult>> {
    let Some((snap, tokens)) = b
        .query(&p.text_document.uri, None, |ws, item, _| {
            ide::semantic_tokens(ws, item)
        })
        .await?
    else {
        return Ok(None);
    };
    let mut data = Vec::with_capacity(tokens.len());
    let (mut line, mut start) = (0u32, 0u32);
    for t in tokens {
        let from = snap.position(t.range.start);
        let to = snap.position(t.range.end);
        if to.line != from.line || to.character <= from.character {
            continue; // the kernel gives one-line tokens; a client cannot show others
        }
        let Some(index) = TokenKind::ALL.iter().position(|k| *k == t.kind) else {
            continue;
        };
        let delta_line = from.line - line;
        let delta_start = if delta_line == 0 {
            from.character - start
        } else {
            from.character
        };
        data.push(SemanticToken {
            delta_line,
            delta_start,
            length: to.character - from.character,
            token_type: index as u32,
            token_modifiers_bitset: u32::from(t.kind == TokenKind::System)
                | (u32::from(t.unresolved) << 1),
        });
        (line, start) = (from.line, from.character);
    }
    Ok(Some(SemanticTokensResult::Tokens(SemanticTokens {
        result_id: None,
        data,
    })))
}
