//! Sessions: the directives an agent session is following, and the capability check every
//! call passes (04, Enforcement).

use super::error::{OpError, Res};
use crate::directive::{grants, Capability, Resource};
use crate::ids::ItemType;
use serde_json::json;

/// A directive the session is following.
#[derive(Debug, Clone)]
pub struct Active {
    pub id: String,
    pub capabilities: Vec<Capability>,
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

fn cap_string(verb: &str, t: ItemType, id: Option<&str>) -> String {
    format!("kiwi.{verb}.{t}.{}", id.unwrap_or("*"))
}

impl Session {
    pub fn active(&self) -> Option<&Active> {
        self.stack.last()
    }

    /// Whether the session may do `verb` on the item (`id: None` for a search).
    pub fn check(&self, verb: &str, t: ItemType, id: Option<&str>) -> Res<()> {
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
                return Err(OpError::new(
                    "permission_denied",
                    format!(
                        "refused: the active directive `{}` does not grant `{verb}` on {target} \
                         (missing capability `{cap}`); end it with execute directive done, or \
                         add the grant to its <permissions>",
                        a.id
                    ),
                )
                .with("missing_capability", json!(cap))
                .with(
                    "grant",
                    json!(format!(
                        "<{} resource=\"kiwi\" action=\"{verb}\" item_type=\"{t}\" id=\"{}\"/>",
                        match verb {
                            "search" => "search",
                            "load" => "load",
                            _ => "execute",
                        },
                        id.unwrap_or("*")
                    )),
                )
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
