//! Static resolution of a tool's executor chain: `tool -> runtime(s) -> primitive`.

use crate::ids::{ItemType, Space};
use crate::text::TextRange;
use crate::tool::Field;
use crate::workspace::{Item, Lookup, Workspace};
use std::sync::Arc;

/// The deepest chain allowed (links, the tool included).
pub const MAX_DEPTH: usize = 10;

/// The reserved ids of the primitives.
pub const PRIMITIVES: &[&str] = &["subprocess", "http_client"];

#[derive(Debug, Clone)]
pub struct Chain {
    /// From the tool (index 0) to the primitive (last).
    pub links: Vec<Arc<Item>>,
}

impl Chain {
    pub fn primitive(&self) -> &Arc<Item> {
        self.links.last().expect("a chain has at least one link")
    }
    /// `a -> b -> subprocess`.
    pub fn describe(&self) -> String {
        self.links
            .iter()
            .map(|l| l.id.as_str())
            .collect::<Vec<_>>()
            .join(" -> ")
    }
}

#[derive(Debug, Clone)]
pub enum ChainErrorKind {
    /// A link that is not a primitive declares no executor.
    NoExecutor,
    /// The item is a library module or data, not a tool (it is the tool asked for, or an
    /// executor named by a link).
    NotATool {
        kind: crate::tool::ToolKind,
    },
    /// `executor_id` names nothing.
    Missing {
        reference: String,
        suggestions: Vec<String>,
    },
    Ambiguous {
        reference: String,
        candidates: Vec<String>,
    },
    Refused {
        reference: String,
        reason: String,
    },
    /// The chain comes back to a link it already passed.
    Cycle {
        reference: String,
    },
    TooDeep,
    /// The executor is not a tool file that can be read.
    Unreadable {
        reference: String,
    },
    /// A ryeos `@alias`, or a `tool:` ref that names no item here, and no space holds ryeos's
    /// tool kind schema (its core bundle): kiwi cannot tell what it names.
    RyeosAlias {
        reference: String,
    },
}

#[derive(Debug, Clone)]
pub struct ChainError {
    /// The links resolved before the problem (the tool first).
    pub links: Vec<Arc<Item>>,
    pub kind: ChainErrorKind,
    /// The range, in the file of the last link, of the `executor_id` value at fault
    /// (`None` when it is missing).
    pub range: Option<TextRange>,
}

impl ChainError {
    pub fn message(&self) -> String {
        let path: Vec<&str> = self.links.iter().map(|l| l.id.as_str()).collect();
        let at = path.last().copied().unwrap_or("?");
        let so_far = path.join(" -> ");
        match &self.kind {
            ChainErrorKind::NoExecutor => {
                format!("`{at}` declares no executor_id, so the chain {so_far} never reaches a primitive (subprocess or http_client, or a space's `tool_type: primitive`)")
            }
            ChainErrorKind::NotATool { kind } => {
                let what = match kind {
                    crate::tool::ToolKind::Library => "a library module (tools import it)",
                    _ => "a data file (tools read it)",
                };
                format!(
                    "`{at}` is {what}, not a tool: it declares no executor_id, so it does not run"
                )
            }
            ChainErrorKind::Missing {
                reference,
                suggestions,
            } => {
                let mut m = format!("executor `{reference}` of `{at}` exists in no space");
                if !suggestions.is_empty() {
                    m.push_str(&format!("; did you mean {}?", quote_list(suggestions)));
                }
                m
            }
            ChainErrorKind::Ambiguous {
                reference,
                candidates,
            } => {
                format!("executor `{reference}` of `{at}` is ambiguous: it could be {}; use the full id", quote_list(candidates))
            }
            ChainErrorKind::Refused { reference, reason } => {
                format!("executor `{reference}` of `{at}` is refused: {reason}")
            }
            ChainErrorKind::Cycle { reference } => {
                format!("the chain {so_far} -> {reference} is a cycle")
            }
            ChainErrorKind::TooDeep => {
                format!("the chain {so_far} is deeper than {MAX_DEPTH} links")
            }
            ChainErrorKind::Unreadable { reference } => {
                format!("executor `{reference}` of `{at}` cannot be read")
            }
            ChainErrorKind::RyeosAlias { reference } => {
                if reference.starts_with('@') {
                    format!(
                        "executor `{reference}` of `{at}` is a ryeos alias, which ryeos resolves through the `execution.aliases` of its tool kind schema (`.ai/{}`, in its core bundle); no space of this workspace holds one: kiwi reads ryeos's installed bundles (`ryeos init`; RYEOS_APP_ROOT), or name them as spaces (KIWI_SPACES or `spaces:`), to follow it",
                        crate::ryeos::TOOL_KIND_SCHEMA
                    )
                } else {
                    format!(
                        "executor `{reference}` of `{at}` names no item of this workspace, which holds none of ryeos's bundles (no space has its tool kind schema, `.ai/{}`): ryeos may install it; kiwi reads ryeos's installed bundles (`ryeos init`; RYEOS_APP_ROOT), or name them as spaces (KIWI_SPACES or `spaces:`), to follow it",
                        crate::ryeos::TOOL_KIND_SCHEMA
                    )
                }
            }
        }
    }
}

pub fn quote_list(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("`{s}`")).collect();
    match q.len() {
        0 => String::new(),
        1 => q[0].clone(),
        n => format!("{} or {}", q[..n - 1].join(", "), q[n - 1]),
    }
}

/// Whether an item is a primitive, the end of a chain: a builtin tool with a reserved id and
/// type `primitive`, or a tool of any other space with `tool_type: primitive` and no
/// executor (rye's `rye/core/primitives/subprocess`).
pub fn is_primitive(item: &Item) -> bool {
    if item.item_type != ItemType::Tool {
        return false;
    }
    let Some(tool) = item.tool() else {
        return false;
    };
    if item.space == Space::Builtin {
        PRIMITIVES.contains(&item.id.as_str()) && tool.str(Field::ToolType) == Some("primitive")
    } else {
        tool.kind() == crate::tool::ToolKind::Primitive
    }
}

/// The kiwi runner that runs a primitive: `subprocess` (a process) or `http_client` (an
/// HTTP request). A primitive declared by a space is mapped by its name (the last segment
/// of its id): `subprocess` and `http_client` are the runners of the same names
/// (`rye/core/primitives/subprocess` is a subprocess). Any other primitive has no runner:
/// `None`, and running a chain that ends there is an error that says so.
pub fn runner(primitive: &Item) -> Option<&'static str> {
    // ryeos's terminal executors name their routine (`terminal_executor.kind`).
    let terminal = primitive.tool().and_then(|t| t.ryeos_terminal.as_deref());
    let name = terminal.unwrap_or_else(|| crate::ids::bare_name(&primitive.id));
    PRIMITIVES.iter().copied().find(|p| *p == name)
}

/// Follow `executor_id` from a tool to a primitive. A builtin item's chain uses builtin
/// items only.
pub fn resolve(ws: &Workspace, tool: &Arc<Item>) -> Result<Chain, ChainError> {
    let mut links = vec![tool.clone()];
    let only = (tool.space == Space::Builtin).then_some(Space::Builtin);
    loop {
        let cur = links.last().expect("non-empty").clone();
        if is_primitive(&cur) {
            return Ok(Chain { links });
        }
        let err = |links: Vec<Arc<Item>>, kind, range| Err(ChainError { links, kind, range });
        let Some(file) = cur.tool() else {
            return err(
                links.clone(),
                ChainErrorKind::Unreadable {
                    reference: cur.id.clone(),
                },
                None,
            );
        };
        let kind = file.kind();
        if !kind.is_runnable() {
            return err(links, ChainErrorKind::NotATool { kind }, None);
        }
        let Some(entry) = file.get(Field::ExecutorId) else {
            return err(links, ChainErrorKind::NoExecutor, None);
        };
        let range = Some(entry.value.range);
        let Some(reference) = entry.value.as_str() else {
            // Not a string: the tool module reports the value itself.
            return err(links, ChainErrorKind::NoExecutor, range);
        };
        if links.len() >= MAX_DEPTH {
            return err(links, ChainErrorKind::TooDeep, range);
        }
        // ryeos's references: `tool:<id>`, or an `@alias` of its tool kind schema.
        let target = match crate::ryeos::executor_target(ws, reference) {
            crate::ryeos::Target::Plain => None,
            crate::ryeos::Target::Id { id, .. } => Some(id),
            crate::ryeos::Target::NoAliasTable => {
                return err(
                    links,
                    ChainErrorKind::RyeosAlias {
                        reference: reference.to_string(),
                    },
                    range,
                )
            }
            crate::ryeos::Target::UnknownAlias { known, .. } => {
                let suggestions = crate::diag::closest(reference, known.iter().map(String::as_str))
                    .map(|s| vec![s.to_string()])
                    .unwrap_or(known);
                return err(
                    links,
                    ChainErrorKind::Missing {
                        reference: reference.to_string(),
                        suggestions,
                    },
                    range,
                );
            }
        };
        let ryeos_ref = target.is_some();
        let original = reference;
        let reference = target.as_deref().unwrap_or(reference);
        // The primitives are reserved ids: they always mean the builtin ones.
        let space = if target.is_none() && PRIMITIVES.contains(&reference) {
            Some(Space::Builtin)
        } else {
            only
        };
        match ws.lookup(ItemType::Tool, reference, space) {
            Lookup::Found(next) => {
                if links
                    .iter()
                    .any(|l| Arc::ptr_eq(l, &next) || l.path == next.path)
                {
                    return err(
                        links,
                        ChainErrorKind::Cycle {
                            reference: next.id.clone(),
                        },
                        range,
                    );
                }
                if next.tool().is_none() {
                    return err(
                        links,
                        ChainErrorKind::Unreadable {
                            reference: reference.to_string(),
                        },
                        range,
                    );
                }
                links.push(next);
            }
            Lookup::Missing { .. } if ryeos_ref && crate::ryeos::alias_table(ws).is_none() => {
                return err(
                    links,
                    ChainErrorKind::RyeosAlias {
                        reference: original.to_string(),
                    },
                    range,
                )
            }
            Lookup::Missing { suggestions } => {
                return err(
                    links,
                    ChainErrorKind::Missing {
                        reference: reference.to_string(),
                        suggestions,
                    },
                    range,
                )
            }
            Lookup::Ambiguous { candidates } => {
                return err(
                    links,
                    ChainErrorKind::Ambiguous {
                        reference: reference.to_string(),
                        candidates,
                    },
                    range,
                )
            }
            Lookup::Refused(e) => {
                return err(
                    links,
                    ChainErrorKind::Refused {
                        reference: reference.to_string(),
                        reason: e.to_string(),
                    },
                    range,
                )
            }
        }
    }
}

/// How ryeos reads a link's executor (`crate::ryeos`), for a resolution trail (`kiwi env`): the alias table
/// an `@alias` was followed through, the id a `tool:` ref names, or the routine a terminal
/// executor selects. `None` for a link that is not in ryeos's format.
pub fn ryeos_executor_note(
    ws: &crate::workspace::Workspace,
    link: &crate::workspace::Item,
) -> Option<String> {
    let tool = link.tool()?;
    if let Some(kind) = &tool.ryeos_terminal {
        let runner = match runner(link) {
            Some(r) => format!("runs on kiwi's `{r}` runner"),
            None => "kiwi has no runner for it".to_string(),
        };
        return Some(format!(
            "ryeos terminal executor `{kind}` (`terminal_executor.kind`): {runner}"
        ));
    }
    let reference = tool.str(crate::tool::Field::ExecutorId)?;
    use crate::ryeos::{executor_target, Target, TOOL_KIND_SCHEMA};
    match executor_target(ws, reference) {
        Target::Id { id, via: Some(table) } => Some(format!(
            "executor `{reference}` -> `{id}` (`execution.aliases` of {})",
            table.display()
        )),
        Target::Id { id, via: None } => Some(format!(
            "executor `{reference}` -> `{id}` (ryeos canonical ref)"
        )),
        Target::NoAliasTable => Some(format!(
            "executor `{reference}`: no space holds ryeos's tool kind schema (`.ai/{TOOL_KIND_SCHEMA}`), so the alias cannot be followed"
        )),
        Target::UnknownAlias { table, .. } => Some(format!(
            "executor `{reference}`: not an alias of {}",
            table.display()
        )),
        Target::Plain => None,
    }
}
