//! Editor features computed in kernel terms: byte ranges in an item's text and plain data.
//! No protocol types here; the LSP face translates positions, URIs and shapes.
//!
//! Every function takes the workspace, the item (whose text is the editor's current text)
//! and, where it applies, a byte offset in that text. None of them panics on any input.

mod complete;
mod definition;
mod format;
mod hints;
mod hover;
mod interpreter_hover;
#[cfg(test)]
mod interpreter_tests;
mod lenses;
mod markdown;
mod refs;
mod ryeos;
mod skill;
mod skill_refs;
mod symbols;
mod syntax;
#[cfg(test)]
mod tests;
pub mod values;
mod workspace_symbols;

pub use complete::{completions, signature_help, CompletionEntry, CompletionKind, SignatureInfo};
pub use definition::definition;
pub use format::format;
pub use hints::inlay_hints;
pub use hover::hover;
pub use lenses::code_lenses;
pub use markdown::environment_markdown;
pub use refs::{
    file_prepare_rename, file_references, file_rename, occurrences, prepare_rename, references,
    rename, rename_file, rename_refusal, target_at, RenamePlan,
};
pub use skill::{key_limit, script_lenses, script_markdown};
pub use skill_refs::file_text;
pub use symbols::symbols;
pub use syntax::{
    document_links, folding_ranges, semantic_tokens, DocLink, Fold, FoldKind, SemanticToken,
    TokenKind,
};
pub use workspace_symbols::{workspace_symbols, SymbolIndex, WorkspaceSymbol};

use crate::chain;
use crate::check::build_env;
use crate::env::{self, Resolution, ResolveContext};
use crate::ids::{ItemType, Space};
use crate::text::TextRange;
use crate::tool::Field;
use crate::workspace::{Item, Lookup, Workspace};
use std::path::PathBuf;
use std::sync::Arc;

/// What hover shows: the range it is about, and markdown.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HoverInfo {
    pub range: TextRange,
    pub markdown: String,
}

/// A place in a file: a definition target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    pub path: PathBuf,
    /// Byte range in the target file (empty at 0 for "the file").
    pub range: TextRange,
    /// The target's text, when it is a builtin item (no file on disk).
    #[serde(skip)]
    pub builtin_text: Option<Arc<str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    Directive,
    Metadata,
    Inputs,
    Input,
    Process,
    Step,
    Permissions,
    Permission,
    Field,
    Key,
    Heading,
}

/// A document symbol, with its children.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Symbol {
    pub name: String,
    pub detail: Option<String>,
    pub kind: SymbolKind,
    pub range: TextRange,
    pub selection: TextRange,
    pub children: Vec<Symbol>,
}

/// An inlay hint: a label shown at an offset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hint {
    pub offset: usize,
    pub label: String,
    pub tooltip: Option<String>,
}

/// A code lens: a title over a range that runs a command with arguments.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Lens {
    pub range: TextRange,
    pub title: String,
    pub command: String,
    pub args: Vec<serde_json::Value>,
}

/// The commands the lenses use (the face executes them).
pub const CMD_RUN_TOOL: &str = "kiwi.runTool";
pub const CMD_SHOW_ENV: &str = "kiwi.showEnvironment";
pub const CMD_VALIDATE: &str = "kiwi.validate";
pub const CMD_INIT: &str = "kiwi.init";

// ---------------------------------------------------------------------------------------
// shared helpers

fn space_name(s: Space) -> String {
    match s {
        Space::Extra(e) => format!("{} space (extra, read-only)", e.name),
        _ => s.as_str().to_string(),
    }
}

fn shown_path(item: &Item) -> String {
    item.path.display().to_string()
}

/// The resolution of the interpreter that `item` itself declares (in the context of its chain).
pub fn own_resolution(ws: &Workspace, item: &Arc<Item>) -> Option<Resolution> {
    let ec = item.tool()?.value(Field::EnvConfig)?;
    ec.get("interpreter")?;
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    if !links.is_empty() {
        let built = build_env(ws, &links);
        let own = links.len() - 1;
        if let Some((_, r)) = built.resolutions.iter().find(|(l, _)| *l == own) {
            return Some(r.clone());
        }
    }
    env::resolve(ec, &resolve_context(ws))
}

/// How an interpreter is resolved from a workspace alone (its host's environment, which is
/// also the user's shell), as hover shows it outside any chain.
fn resolve_context(ws: &Workspace) -> ResolveContext<'_> {
    ResolveContext {
        project: ws.project.as_deref(),
        user: &ws.user,
        home: ws.host.home.as_deref(),
        vars: &ws.host.vars,
        shell: Some(&ws.host.vars),
    }
}

/// The item a reference of unknown type names: a tool, else a directive, else knowledge.
fn lookup_any(ws: &Workspace, item_type: Option<ItemType>, id: &str) -> (ItemType, Lookup) {
    if let Some(t) = item_type {
        return (t, ws.lookup(t, id, None));
    }
    for t in [ItemType::Tool, ItemType::Directive, ItemType::Knowledge] {
        if let Lookup::Found(i) = ws.find(t, id, None) {
            return (t, Lookup::Found(i));
        }
    }
    (
        ItemType::Directive,
        ws.lookup(ItemType::Directive, id, None),
    )
}

/// A place that names an item.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Occurrence {
    pub path: std::path::PathBuf,
    /// The id's text (inside any quotes).
    pub range: crate::text::TextRange,
    /// What names it: `execute`, `executor_id`, `requires`, `permission`...
    pub via: String,
}

/// A rename, edit or move of an item is refused outside the writable spaces (the project's
/// and the user's): an extra space (a system space, a bundle) and the builtin items are
/// read-only, whatever the file system would allow.
pub(super) fn read_only_refusal(target: &Item) -> Result<(), String> {
    if target.is_builtin() {
        return Err(format!(
            "`{}` is a builtin item: it cannot be renamed",
            target.id
        ));
    }
    if !target.space.is_writable() {
        return Err(format!(
            "`{}` is in the read-only `{}` space: kiwi never renames, edits or moves its files",
            target.id, target.space
        ));
    }
    Ok(())
}
