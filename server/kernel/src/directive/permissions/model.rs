//! The capability model: the permission words kiwi knows, what a call needs ([`Need`]),
//! and which capabilities grant it.

use crate::directive::{Call, CallKind, Capability, Directive, Resource};
use crate::glob::Globs;
use crate::ids::ItemType;

/// The permission elements (children of `<permissions>`).
pub const PERMISSION_ELEMENTS: &[&str] =
    &["read", "write", "execute", "search", "load", "deny", "cap"];
/// The attributes of the attribute form.
pub const PERMISSION_ATTRS: &[&str] = &["resource", "path", "action", "item_type", "id", "command"];
/// The resources of the attribute form.
pub const RESOURCES: &[&str] = &["filesystem", "registry", "kiwi", "kiwi-mcp", "shell"];
/// The source systems' resources, read as aliases (`rye`: `kiwi`; kiwi-mcp's `tool` and
/// `spawn`).
pub const RESOURCE_ALIASES: &[&str] = &["rye", "tool", "spawn"];
/// The source systems' actions, read as aliases: rye's `sign` (`validate`) and `fetch`
/// (`search` + `load`), kiwi-mcp's `execute` (`run` + `search` + `load` + `help`) and `help`.
pub const ACTION_ALIASES: &[&str] = &["sign", "fetch", "execute", "help"];

/// What an aliased action means (the verbs it grants) and who spells it so.
pub(super) fn action_alias(action: &str) -> Option<(&'static [&'static str], &'static str)> {
    Some(match action {
        "sign" => (&["validate"], "rye's action `sign`, read as `validate`"),
        "fetch" => (&["search", "load"], "rye's action `fetch`, read as `search` and `load`"),
        "execute" => (
            &["run", "search", "load", "help"],
            "kiwi-mcp's action `execute` (its meta-tool), read as `run`, `search`, `load` and `help`",
        ),
        "help" => (&["help"], "kiwi-mcp's action `help`: the help meta-tool, which kiwi never restricts"),
        _ => return None,
    })
}
/// The actions on items.
pub const ACTIONS: &[&str] = &[
    "run", "search", "load", "create", "update", "delete", "publish", "validate", "*",
];
/// What `system` items allow: they are read-only.
pub const SYSTEM_ACTIONS: &[&str] = &["run", "search", "load"];
/// The item types, as written in permissions.
pub const ITEM_TYPE_NAMES: &[&str] = &["directive", "tool", "knowledge", "system"];

/// What a call needs: an action on an item type (when known) and an item id (when the call
/// names one; it may hold placeholders, which only a wildcard grants).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub verb: String,
    pub item_type: Option<ItemType>,
    pub id: Option<String>,
}

impl Need {
    /// What a call element needs; `None` when the call does not say (an unknown item type,
    /// a kiwi-mcp `tool_call` of a meta-tool that is not checked).
    pub fn of_call(call: &Call) -> Option<Need> {
        let item_type = match &call.item_type {
            Some(t) => Some(ItemType::parse(t.value.trim())?),
            None => None,
        };
        let id = call.item_id.as_ref().map(|i| i.value.trim().to_string());
        let verb = match call.kind {
            CallKind::Search => "search".to_string(),
            CallKind::Load => "load".to_string(),
            CallKind::Sign => "validate".to_string(),
            CallKind::Fetch if id.is_some() => "load".to_string(),
            CallKind::Fetch => "search".to_string(),
            CallKind::Execute => match &call.action {
                Some(a) if ACTIONS.contains(&a.value.trim()) && a.value.trim() != "*" => {
                    a.value.trim().to_string()
                }
                _ => "run".to_string(),
            },
            CallKind::ToolCall => match call.action.as_ref().map(|a| a.value.trim()) {
                Some("search") => "search".to_string(),
                Some("run") | Some("execute") => "run".to_string(),
                Some("load") | Some("get") => "load".to_string(),
                Some(a) if ACTIONS.contains(&a) && a != "*" => a.to_string(),
                Some(_) => return None,
                None if item_type.is_some() => "run".to_string(),
                None => return None,
            },
        };
        Some(Need {
            id: if verb == "search" { None } else { id },
            verb,
            item_type,
        })
    }

    pub(super) fn describe(&self) -> String {
        let t = self.item_type.map(ItemType::as_str).unwrap_or("any");
        match &self.id {
            Some(id) => format!("`{}` on {t} `{id}`", self.verb),
            None => format!("`{}` on {t} items", self.verb),
        }
    }
}

/// A compiled pattern over item ids (`crate::glob`: `*` also matches `/`).
pub(super) enum Matcher {
    Any,
    Glob(Globs),
}

impl Matcher {
    pub(super) fn new(pattern: &str) -> Result<Matcher, globset::Error> {
        if is_all(pattern) {
            Ok(Matcher::Any)
        } else {
            Globs::one(pattern, false).map(Matcher::Glob)
        }
    }

    pub(super) fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Glob(g) => g.is_match(s),
        }
    }
}

/// Whether a pattern matches every target (`*`, `**`, `**/*`, ...).
pub(super) fn is_all(pattern: &str) -> bool {
    !pattern.is_empty()
        && pattern.chars().all(|c| matches!(c, '*' | '/' | '.'))
        && pattern.contains('*')
}

pub(super) fn resource_matches(r: &Resource, t: Option<ItemType>) -> bool {
    match r {
        Resource::Any | Resource::Items(None) => true,
        Resource::Items(Some(x)) => t.is_none_or(|t| t == *x),
        _ => false,
    }
}

pub(super) fn cap_matches(
    c: &Capability,
    verb: &str,
    t: Option<ItemType>,
    id: Option<&str>,
) -> bool {
    if !c.valid || !(c.verb == "*" || c.verb == verb) || !resource_matches(&c.resource, t) {
        return false;
    }
    let Some(id) = id else { return true };
    c.pattern == id || Matcher::new(&c.pattern).is_ok_and(|m| m.is_match(id))
}

/// Whether `caps` grant `action` on the item `item_type`/`id`: the first capability that does,
/// unless a `deny` matches (deny wins, whatever grants). `system` items are read-only: only
/// `run`, `search` and `load` can ever be granted on them. An empty set grants nothing (a
/// directive without permissions). Capabilities with an unknown part (P201) grant nothing.
pub fn grants<'a>(
    caps: &'a [Capability],
    action: &str,
    item_type: ItemType,
    id: &str,
) -> Option<&'a Capability> {
    if item_type == ItemType::System && !SYSTEM_ACTIONS.contains(&action) {
        return None;
    }
    if caps
        .iter()
        .any(|c| c.deny && cap_matches(c, action, Some(item_type), Some(id)))
    {
        return None;
    }
    caps.iter()
        .find(|c| !c.deny && cap_matches(c, action, Some(item_type), Some(id)))
}

impl Capability {
    /// What it grants (or denies), in words, for hovers: "run tools `docs/*`".
    pub fn describe(&self) -> String {
        let what = match &self.resource {
            Resource::Any => {
                return if self.deny {
                    "denies everything".into()
                } else {
                    "grants everything".into()
                }
            }
            Resource::Filesystem => format!("{} files `{}`", self.verb, self.pattern),
            Resource::Registry => format!("{} registry entries `{}`", self.verb, self.pattern),
            Resource::Shell => format!("run shell commands `{}`", self.pattern),
            Resource::Items(t) => {
                let verb = if self.verb == "*" {
                    "any action on"
                } else {
                    self.verb.as_str()
                };
                let t = t.map(|t| format!("{t}s")).unwrap_or_else(|| "items".into());
                if self.pattern == "*" {
                    format!("{verb} all {t}")
                } else {
                    format!("{verb} {t} `{}`", self.pattern)
                }
            }
        };
        let mut s = if self.deny {
            format!("denies: {what}")
        } else {
            format!("grants: {what}")
        };
        if !self.valid {
            s.push_str(" (not understood: it grants nothing)");
        }
        if let Some(a) = &self.alias {
            s.push_str(&format!(" ({a})"));
        }
        s
    }
}

impl Directive {
    /// The calls (indices into `calls`) that the capability `cap` grants, for hovers
    /// ("which steps rely on it").
    pub fn calls_granted_by(&self, cap: usize) -> Vec<usize> {
        let Some(c) = self.capabilities.get(cap) else {
            return Vec::new();
        };
        if c.deny {
            return Vec::new();
        }
        self.calls
            .iter()
            .enumerate()
            .filter(|(_, call)| {
                Need::of_call(call)
                    .is_some_and(|n| cap_matches(c, &n.verb, n.item_type, n.id.as_deref()))
            })
            .map(|(i, _)| i)
            .collect()
    }
}
