//! Inlay hints: the interpreter a tool's `type` resolves to.

use super::{own_resolution, Hint};
use crate::env::Outcome;
use crate::tool::Field;
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

/// `→ /abs/path/python` (or `→ fallback python3`) after an interpreter's `type`.
pub fn inlay_hints(ws: &Workspace, item: &Arc<Item>) -> Vec<Hint> {
    let Some(t) = item.tool() else {
        return Vec::new();
    };
    let Some(ty) = t
        .value(Field::EnvConfig)
        .and_then(|ec| ec.get("interpreter"))
        .and_then(|i| i.get("type"))
    else {
        return Vec::new();
    };
    let Some(res) = own_resolution(ws, item) else {
        return Vec::new();
    };
    let label = match (&res.outcome, &res.value) {
        (Outcome::Found { .. }, Some(v)) => format!("→ {v}"),
        (Outcome::Fallback, Some(v)) => format!("→ fallback {v}"),
        _ => "→ unresolved".to_string(),
    };
    vec![Hint {
        offset: ty.range.end,
        label,
        tooltip: Some(res.explain()),
    }]
}
