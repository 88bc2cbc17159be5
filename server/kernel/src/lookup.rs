//! Looking an item up by reference, and the one error every face shows when no single item
//! answers (issue 14): `kiwi env`/`kiwi run`, the LSP's commands and the MCP meta-tools give
//! the same message and the same did-you-mean suggestions.

use crate::chain::quote_list;
use crate::ids::{IdError, ItemType, Space};
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

/// The result of looking a reference up ([`Workspace::lookup`]).
#[derive(Debug, Clone)]
pub enum Lookup {
    Found(Arc<Item>),
    /// No item has this id; the closest ids, best first.
    Missing {
        suggestions: Vec<String>,
    },
    /// A bare name that several items end with.
    Ambiguous {
        candidates: Vec<String>,
    },
    /// The reference is not a valid id.
    Refused(IdError),
}

/// Why a reference names no single item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupErrorKind {
    /// No item has this id (in the spaces asked).
    NotFound,
    /// A bare name several items end with.
    Ambiguous,
    /// Not an id (empty, absolute, climbing out of its space, ...).
    InvalidId,
}

impl LookupErrorKind {
    /// The error code an agent sees (`not_found`, `ambiguous`, `invalid_id`).
    pub fn code(self) -> &'static str {
        match self {
            LookupErrorKind::NotFound => "not_found",
            LookupErrorKind::Ambiguous => "ambiguous",
            LookupErrorKind::InvalidId => "invalid_id",
        }
    }
}

/// A failed lookup: the message every face shows, and the ids to suggest (the closest ids,
/// or the candidates of an ambiguous name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub kind: LookupErrorKind,
    pub message: String,
    pub suggestions: Vec<String>,
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LookupError {}

impl LookupError {
    /// `reference` is not an id at all.
    pub fn invalid_id(item_type: ItemType, reference: &str, e: &IdError) -> LookupError {
        LookupError {
            kind: LookupErrorKind::InvalidId,
            message: format!("`{reference}` is not a valid {item_type} id: {e}"),
            suggestions: Vec::new(),
        }
    }

    /// No `item_type` `reference` in `only` (or in any of `ws`'s spaces).
    pub fn not_found(
        ws: &Workspace,
        item_type: ItemType,
        reference: &str,
        only: Option<Space>,
        suggestions: Vec<String>,
    ) -> LookupError {
        let message = match (suggestions.is_empty(), only) {
            (false, None) => format!(
                "no {item_type} `{reference}`; did you mean {}?",
                quote_list(&suggestions)
            ),
            (false, Some(s)) => format!(
                "no {item_type} `{reference}` in the {s} space; did you mean {}?",
                quote_list(&suggestions)
            ),
            (true, None) => format!(
                "no {item_type} `{reference}` in any space ({})",
                ws.space_names()
            ),
            (true, Some(s)) => format!("no {item_type} `{reference}` in the {s} space"),
        };
        LookupError {
            kind: LookupErrorKind::NotFound,
            message,
            suggestions,
        }
    }

    /// A bare name several items end with.
    pub fn ambiguous(reference: &str, candidates: Vec<String>) -> LookupError {
        LookupError {
            kind: LookupErrorKind::Ambiguous,
            message: format!(
                "`{reference}` is ambiguous: {}; give the full id",
                quote_list(&candidates)
            ),
            suggestions: candidates,
        }
    }
}

impl Workspace {
    /// The item `reference` names (an id, or a bare name only one item ends with), in `only`
    /// or by precedence; else the error every face shows, with suggestions.
    pub fn resolve(
        &self,
        item_type: ItemType,
        reference: &str,
        only: Option<Space>,
    ) -> Result<Arc<Item>, LookupError> {
        match self.lookup(item_type, reference, only) {
            Lookup::Found(item) => Ok(item),
            Lookup::Missing { suggestions } => Err(LookupError::not_found(
                self,
                item_type,
                reference,
                only,
                suggestions,
            )),
            Lookup::Ambiguous { candidates } => Err(LookupError::ambiguous(reference, candidates)),
            Lookup::Refused(e) => Err(LookupError::invalid_id(item_type, reference, &e)),
        }
    }
}

/// [`Workspace::resolve`] over several workspaces in order (an editor's projects): the index
/// and item of the first that has it. Else an invalid id at once, or the first error that
/// suggests something (else the first error): one message, whatever the number of
/// workspaces. No workspace at all: not found, with no space to name.
pub fn resolve_in<'a>(
    workspaces: impl IntoIterator<Item = &'a Workspace>,
    item_type: ItemType,
    reference: &str,
) -> Result<(usize, Arc<Item>), LookupError> {
    let mut first: Option<LookupError> = None;
    for (i, ws) in workspaces.into_iter().enumerate() {
        match ws.resolve(item_type, reference, None) {
            Ok(item) => return Ok((i, item)),
            Err(e) if e.kind == LookupErrorKind::InvalidId => return Err(e),
            Err(e) => {
                if first
                    .as_ref()
                    .is_none_or(|f| f.suggestions.is_empty() && !e.suggestions.is_empty())
                {
                    first = Some(e);
                }
            }
        }
    }
    Err(first.unwrap_or_else(|| LookupError {
        kind: LookupErrorKind::NotFound,
        message: format!("no {item_type} `{reference}`"),
        suggestions: Vec::new(),
    }))
}
