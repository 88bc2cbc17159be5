//! The one path every face takes to run a tool (CLI `kiwi run`, the LSP's `kiwi.runTool`,
//! MCP `execute tool run` / `dry_run`): look the tool up ([`find_tool`]: a clear error with
//! did-you-mean suggestions), refuse it when it or a link of its chain has error-level
//! diagnostics ([`refuse_invalid`]: the diagnostics listed, code, line and message), then
//! [`super::plan`], with the refusals of files that lead out of their space and of drifted
//! pins before the plan is placed on another machine (an ssh host is asked nothing before
//! every refusal has passed). [`prepare`] is all of it; the faces then call [`super::run`]
//! with their own sink and translate the result.
//!
//! Refusing is the point: a tool whose `CONFIG` the checker rejects (`"timeout": 1 * 1`, a
//! call, a `**` spread, an f-string, a `CONFIG` inside a block, a syntax error) would
//! otherwise run with other values than the ones written.

use super::planning::{place, plan_local};
use super::{ErrorKind, ExecError, Plan, Request};
use crate::chain;
use crate::check::check_item;
use crate::diag::view::{DiagnosticView, FileText};
use crate::diag::{Diagnostic, Severity};
use crate::ids::ItemType;
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use std::sync::Arc;

/// One error-level diagnostic of an item that a run refused: the item's id and the
/// diagnostic in the one view of `diag::view` (`{"item", "path", "line", "column", ...}`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ItemDiagnostic {
    /// The item's id (the tool, or the link of its chain that has the error).
    pub item: String,
    #[serde(flatten)]
    pub diagnostic: DiagnosticView,
}

impl ItemDiagnostic {
    pub fn new(item: &Item, d: &Diagnostic) -> Self {
        ItemDiagnostic {
            item: item.id.clone(),
            diagnostic: DiagnosticView::new(FileText::of_item(item), d, &|_| None),
        }
    }
}

impl std::fmt::Display for ItemDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.diagnostic;
        write!(
            f,
            "{}:{}:{}: {}[{}] {}",
            d.path, d.line, d.column, d.severity, d.code, d.message
        )
    }
}

/// The tool a reference names, searched in every space (project, user, the extra spaces, builtin).
/// Missing: the closest ids are suggested; ambiguous: the candidates are listed.
pub fn find_tool(ws: &Workspace, reference: &str) -> Result<Arc<Item>, ExecError> {
    ws.resolve(ItemType::Tool, reference, None).map_err(|e| {
        let mut x = ExecError::new(ErrorKind::NotFound, e.message);
        x.suggestions = e.suggestions;
        x
    })
}

/// The error-level diagnostics of the tool and of every link of its chain (as far as it
/// resolves: a broken chain is the tool's own T304).
pub fn error_diagnostics(ws: &Workspace, tool: &Arc<Item>) -> Vec<ItemDiagnostic> {
    let links = match chain::resolve(ws, tool) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    // The builtin links (the runtimes, the primitives) are checked once and for all by
    // tests/it/builtin_items.rs, as their file checks are at load (`workspace/discover.rs`).
    let mut items: Vec<&Arc<Item>> = vec![tool];
    items.extend(
        links
            .iter()
            .filter(|l| !Arc::ptr_eq(l, tool) && !l.is_builtin()),
    );
    let mut out = Vec::new();
    for item in items {
        for d in check_item(ws, item) {
            if d.severity == Severity::Error {
                out.push(ItemDiagnostic::new(item, &d));
            }
        }
    }
    out
}

/// Refuse a tool that has error-level diagnostics, or whose chain has: the error lists them.
pub fn refuse_invalid(ws: &Workspace, tool: &Arc<Item>) -> Result<(), ExecError> {
    let diagnostics = error_diagnostics(ws, tool);
    if diagnostics.is_empty() {
        return Ok(());
    }
    let own = diagnostics.iter().filter(|d| d.item == tool.id).count();
    let whose = if own == diagnostics.len() {
        format!("`{}` has", tool.id)
    } else if own == 0 {
        let mut names: Vec<&str> = diagnostics.iter().map(|d| d.item.as_str()).collect();
        names.dedup();
        format!(
            "the chain of `{}` has ({})",
            tool.id,
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        format!("`{}` and its chain have", tool.id)
    };
    let n = diagnostics.len();
    let mut e = ExecError::new(
        ErrorKind::Invalid,
        format!(
            "{whose} {n} error{}; fix {} (`kiwi check` shows {}); nothing was run",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        ),
    );
    e.diagnostics = diagnostics;
    Err(e)
}

/// Look the tool up, refuse it if it or its chain has errors, and plan the run.
pub fn prepare(ws: &Workspace, reference: &str, req: &Request) -> Result<Plan, ExecError> {
    let tool = find_tool(ws, reference)?;
    prepare_item(ws, &tool, req)
}

/// [`prepare`] for a tool already looked up (the LSP runs the item of an open file).
pub fn prepare_item(ws: &Workspace, tool: &Arc<Item>, req: &Request) -> Result<Plan, ExecError> {
    // `plan` redacts its own errors; the refusals name files and diagnostics, which can
    // quote a value too (`/nonexistent/${GITHUB_TOKEN}` in a diagnostic's message).
    let secrets = || super::host_secrets(ws);
    refuse_invalid(ws, tool).map_err(|e| e.redacted(&secrets()))?;
    // Every refusal before anything goes to another machine (an ssh host is asked at
    // `place`, and its paths replace the local ones `refuse_outside` checks).
    let mut plan = plan_local(ws, tool, req)?;
    refuse_outside(ws, &plan).map_err(|e| e.redacted(&secrets()))?;
    refuse_drifted(ws, &plan).map_err(|e| e.redacted(&secrets()))?;
    place(ws, &mut plan)?;
    Ok(plan)
}

/// A pulled item (the tool or a link of its chain) whose files no longer match the digest
/// `.ai/kiwi.lock` pins is not run until it is re-pinned (`kiwi sign`) or pulled again
/// (issue 17).
fn refuse_drifted(ws: &Workspace, plan: &Plan) -> Result<(), ExecError> {
    for link in plan.chain.links.iter().filter(|l| !l.is_builtin()) {
        crate::trust::audit::refuse_drift(ws, link)
            .map_err(|m| ExecError::new(ErrorKind::Invalid, m))?;
    }
    Ok(())
}

/// Every file the chain reads or runs (each link's file and a YAML tool's script) must
/// resolve inside its space, checked again right before the run (the checks ran on what
/// was on disk when the item was read).
fn refuse_outside(ws: &Workspace, plan: &Plan) -> Result<(), ExecError> {
    for link in &plan.chain.links {
        if link.is_builtin() {
            continue;
        }
        let Some(root) = ws.confinement_root(link) else {
            continue;
        };
        for file in [Some(link.path.as_path()), link.script.as_deref()]
            .into_iter()
            .flatten()
        {
            if let Err(e) = crate::ids::confine(&root, file) {
                return Err(ExecError::new(
                    ErrorKind::Invalid,
                    format!(
                        "refused: {} (a file of `{}`) cannot be run: {e}; a file an item reads or runs must lie inside its space (K006); nothing was run",
                        file.display(),
                        link.id
                    ),
                ));
            }
        }
    }
    // A file the command names inside a link's own folder (`{tool_dir}/evil.sh`) is one the
    // item runs too: it must not lead out of the space through a symlink.
    if let super::Action::Process(spec) = &plan.action {
        for link in plan.chain.links.iter().filter(|l| !l.is_builtin()) {
            let (Some(root), Some(dir)) = (ws.confinement_root(link), link.path.parent()) else {
                continue;
            };
            for arg in &spec.args {
                let file = std::path::Path::new(arg);
                if !file.is_absolute() || !file.starts_with(dir) || file.symlink_metadata().is_err()
                {
                    continue;
                }
                if let Err(e) = crate::ids::confine(&root, file) {
                    return Err(ExecError::new(
                        ErrorKind::Invalid,
                        format!(
                            "refused: {} (named by the command of `{}`, in its folder) cannot be run: {e}; a file an item reads or runs must lie inside its space (K006); nothing was run",
                            file.display(),
                            link.id
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
