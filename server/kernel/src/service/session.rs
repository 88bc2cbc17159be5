//! Sessions: the directives an agent session is following, and the capability check every
//! call passes (04, Enforcement).

use super::error::{OpError, Res};
use crate::directive::{grants, CallKind, Capability, Resource};
use crate::ids::ItemType;
use crate::workspace::{Lookup, Workspace};
use serde_json::json;

/// A directive the session is following.
#[derive(Debug, Clone)]
pub struct Active {
    pub id: String,
    pub capabilities: Vec<Capability>,
    /// Written in ryeos's format: a refusal names the capability string to declare
    /// (`ryeos.execute.tool.ID` under `requires.capabilities.declared`), not a rye element.
    pub ryeos: bool,
}

/// One agent session (one MCP connection): the stack of running directives. Each call is
/// checked against every level (a nested directive narrows, never widens).
#[derive(Debug, Clone, Default)]
pub struct Session {
    pub stack: Vec<Active>,
    /// The protocol version the face negotiated with its client (`system` item `mcp`
    /// shows it); `None`: the kernel's own [`crate::system::PROTOCOL_VERSION`].
    pub protocol_version: Option<String>,
}

/// Verbs a session may use only under a running directive that grants them: publishing
/// shares an item with everyone who reads the registry, so it is never the default of a
/// session that runs no directive (10-registry: "needs a `publish` capability").
pub const GRANTED_ONLY: &[&str] = &["publish"];

fn cap_string(verb: &str, t: ItemType, id: Option<&str>) -> String {
    format!("kiwi.{verb}.{t}.{}", id.unwrap_or("*"))
}

impl Session {
    pub fn active(&self) -> Option<&Active> {
        self.stack.last()
    }

    /// Whether the session may do `verb` on what an agent named `name`: on every item the
    /// name can resolve to in `ws` ([`Workspace::ids_named`]), and on the name itself (an
    /// item about to be created). The one check for a name that came from a call: a bare
    /// `deploy` is refused where `danger/deploy`, which it names, is denied (issue 24).
    pub fn check_name(&self, ws: &Workspace, verb: &str, t: ItemType, name: &str) -> Res<()> {
        for id in ws.ids_named(t, name) {
            self.check(verb, t, Some(&id))?;
        }
        Ok(())
    }

    /// Whether the session may do `verb` on the item with id `id` (`None` for a search).
    /// `id` is an item's own id; a name from a call goes through [`Session::check_name`].
    pub fn check(&self, verb: &str, t: ItemType, id: Option<&str>) -> Res<()> {
        if self.stack.is_empty() && GRANTED_ONLY.contains(&verb) {
            let cap = cap_string(verb, t, id);
            return Err(OpError::new(
                "permission_denied",
                format!(
                    "refused: `{verb}` needs a running directive that grants it (missing capability \
                     `{cap}`), and none is running; run one whose <permissions> grant it"
                ),
            )
            .with("missing_capability", json!(cap))
            .with(
                "grant",
                json!(format!(
                    "<execute resource=\"kiwi\" action=\"{verb}\" item_type=\"{t}\" id=\"{}\"/>",
                    id.unwrap_or("*")
                )),
            ));
        }
        for a in self.stack.iter().rev() {
            let ok = match id {
                Some(id) => grants(&a.capabilities, verb, t, id).is_some(),
                None => a.capabilities.iter().any(|c| {
                    c.valid
                        && !c.deny
                        && (c.verb == verb || c.verb == "*")
                        && match c.resource {
                            Resource::Any | Resource::Items(None) => true,
                            Resource::Items(Some(x)) => x == t,
                            _ => false,
                        }
                }),
            };
            if !ok {
                let cap = cap_string(verb, t, id);
                let target = match id {
                    Some(id) => format!("{t} `{id}`"),
                    None => format!("{t} items"),
                };
                // ryeos spells `run` as `execute` and `load` as `fetch`; other verbs only
                // its wildcard grants.
                let ryeos_verb = match verb {
                    "run" => "execute",
                    "load" => "fetch",
                    _ => "*",
                };
                let (grant, place) = if a.ryeos {
                    (
                        format!("ryeos.{ryeos_verb}.{t}.{}", id.unwrap_or("*")),
                        "its requires.capabilities.declared",
                    )
                } else {
                    (
                        format!(
                            "<{} resource=\"kiwi\" action=\"{verb}\" item_type=\"{t}\" id=\"{}\"/>",
                            match verb {
                                "search" => "search",
                                "load" => "load",
                                _ => "execute",
                            },
                            id.unwrap_or("*")
                        ),
                        "its <permissions>",
                    )
                };
                return Err(OpError::new(
                    "permission_denied",
                    format!(
                        "refused: the active directive `{}` does not grant `{verb}` on {target} \
                         (missing capability `{cap}`); end it with execute directive done, or \
                         add the grant to {place}",
                        a.id
                    ),
                )
                .with("missing_capability", json!(cap))
                .with("grant", json!(grant))
                .with("directive", json!(a.id)));
            }
        }
        Ok(())
    }

    pub(super) fn visible(&self, verb: &str, t: ItemType, id: &str) -> bool {
        self.stack
            .iter()
            .all(|a| grants(&a.capabilities, verb, t, id).is_some())
    }
}

/// Where a directive about to run goes in the session (04: running another directive ends
/// the first, unless it is called from inside it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Placement {
    /// How many running directives stay (the rest end).
    pub keep: usize,
    /// The directive it runs inside, if any.
    pub parent: Option<String>,
    /// Which happened, in words.
    pub how: String,
}

/// Where directive `id` goes: inside `parent` when the agent names one (a directive the
/// session runs; those above it end); inside the active directive when one of its steps
/// calls `id`; else in the active directive's place (it ends; its own parent, if any, stays
/// the parent).
pub(super) fn placement(
    s: &Session,
    ws: &Workspace,
    id: &str,
    parent: Option<&str>,
) -> Res<Placement> {
    if let Some(p) = parent.filter(|p| !p.is_empty()) {
        let Some(pos) = s.stack.iter().rposition(|x| x.id == p) else {
            let running: Vec<String> = s.stack.iter().map(|x| x.id.clone()).collect();
            return Err(OpError::new(
                "not_active",
                format!(
                    "parent `{p}` is not running in this session ({}); leave parent out, or name a running directive",
                    if running.is_empty() {
                        "no directive is".to_string()
                    } else {
                        format!("running: {}", running.join(", "))
                    }
                ),
            )
            .suggest(running));
        };
        let above = s.stack.len() - pos - 1;
        return Ok(Placement {
            keep: pos + 1,
            parent: Some(p.to_string()),
            how: if above == 0 {
                format!("nested in `{p}` (the parent you named)")
            } else {
                format!(
                    "nested in `{p}` (the parent you named); the {above} directive(s) running inside it ended"
                )
            },
        });
    }
    // The active directive run again: a restart, in its own place, under the parent it had
    // (issue 26, point 5). One further down runs again only where the active one grants it
    // (nesting only narrows), as any other directive.
    if let Some(pos) = s
        .stack
        .iter()
        .rposition(|x| x.id == id)
        .filter(|p| *p + 1 == s.stack.len())
    {
        let above = s.stack.len() - pos - 1;
        let parent = pos.checked_sub(1).map(|i| s.stack[i].id.clone());
        let mut how = format!("restarted `{id}`: it runs again from its first step");
        if above > 0 {
            how.push_str(&format!(
                "; the {above} directive(s) running inside it ended"
            ));
        }
        if let Some(p) = &parent {
            how.push_str(&format!("; still nested in `{p}`"));
        }
        return Ok(Placement {
            keep: pos,
            parent,
            how,
        });
    }
    let Some(active) = s.active() else {
        return Ok(Placement {
            keep: 0,
            parent: None,
            how: "started: no directive was running".into(),
        });
    };
    if calls_directive(ws, &active.id, id) {
        return Ok(Placement {
            keep: s.stack.len(),
            parent: Some(active.id.clone()),
            how: format!("nested in `{}`: one of its steps calls `{id}`", active.id),
        });
    }
    let keep = s.stack.len() - 1;
    let parent = keep.checked_sub(1).map(|i| s.stack[i].id.clone());
    let mut how = format!(
        "ended `{}` and started `{id}` in its place: none of its steps calls `{id}` (pass parent to run it inside)",
        active.id
    );
    if let Some(p) = &parent {
        how.push_str(&format!("; still nested in `{p}`"));
    }
    Ok(Placement { keep, parent, how })
}

/// Whether a step of directive `caller` runs directive `id`.
fn calls_directive(ws: &Workspace, caller: &str, id: &str) -> bool {
    let Some(item) = ws.peek_id(ItemType::Directive, caller) else {
        return false;
    };
    let Some(d) = item.directive() else {
        return false;
    };
    d.calls.iter().any(|c| {
        matches!(c.kind, CallKind::Execute | CallKind::ToolCall)
            && c.item_type
                .as_ref()
                .is_some_and(|t| t.value.trim() == "directive")
            && c.item_id.as_ref().is_some_and(|r| {
                let r = r.value.trim();
                r == id || matches!(ws.find(ItemType::Directive, r, None), Lookup::Found(t) if t.id == id)
            })
    })
}
