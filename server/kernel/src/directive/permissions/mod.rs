//! Permissions: the three spellings parsed into one capability model, the static checks
//! P201-P204, and coverage P205/P206 (04-permissions.md).
//!
//! Spellings:
//! 1. attribute form: `<read resource="filesystem" path="docs/**"/>`,
//!    `<execute resource="kiwi" action="run" item_type="tool" id="docs/*"/>`,
//!    `<execute resource="shell" action="*"/>`, `<deny .../>`;
//! 2. hierarchical form: `<execute><tool>rye.file-system.*</tool></execute>`, `<search>*</search>`;
//! 3. capability strings: `<cap>kiwi.execute.tool.docs.*</cap>` (`rye.` too).
//!
//! The source systems' own spellings are aliases, read with their meaning (the capability's
//! `alias` says which system spells it so): rye's `<sign>` and `action="sign"` (`validate`),
//! `<fetch>` and `action="fetch"` (`search` and `load`), `resource="rye"` (`kiwi`);
//! kiwi-mcp's `action="execute"` (its `execute` meta-tool, which also allowed `search`,
//! `load` and `help`: all four), `action="help"` (the help meta-tool: nothing to check),
//! `resource="tool" id="X"` (run tool `X`), `resource="spawn"` (starting a thread runs a
//! directive: run directives) and `<execute resource="registry" action="read|write">`.
//!
//! Item patterns are globs over item ids in which `*` also matches `/` (rye matched its dotted
//! capability strings with `fnmatch`, where `*` matches anything; `rye.file-system.*` must keep
//! granting `rye/file-system/fs_write`). A hierarchical or capability-string pattern without a
//! `/` is rye's dotted spelling of an id and is read with `.` as the separator.
//!
//! A directive without `<permissions>` has no capabilities: when an agent runs it, every call
//! is refused (fail-closed, as rye's `perm_none` test expects and as 04 says a running
//! directive's set *becomes* the session's). So each call of such a directive gets P205, and
//! the fix adds a `<permissions>` element to `<metadata>` with the grant.

use super::checks::{insert_last_child, whole_lines};
use super::{Call, CallKind, Capability, Directive, Element, Resource};
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix, Tag};
use crate::glob::Globs;
use crate::ids::ItemType;
use crate::text::TextRange;

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
fn action_alias(action: &str) -> Option<(&'static [&'static str], &'static str)> {
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

    fn describe(&self) -> String {
        let t = self.item_type.map(ItemType::as_str).unwrap_or("any");
        match &self.id {
            Some(id) => format!("`{}` on {t} `{id}`", self.verb),
            None => format!("`{}` on {t} items", self.verb),
        }
    }
}

/// A compiled pattern over item ids (`crate::glob`: `*` also matches `/`).
enum Matcher {
    Any,
    Glob(Globs),
}

impl Matcher {
    fn new(pattern: &str) -> Result<Matcher, globset::Error> {
        if is_all(pattern) {
            Ok(Matcher::Any)
        } else {
            Globs::one(pattern, false).map(Matcher::Glob)
        }
    }

    fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Glob(g) => g.is_match(s),
        }
    }
}

/// Whether a pattern matches every target (`*`, `**`, `**/*`, ...).
fn is_all(pattern: &str) -> bool {
    !pattern.is_empty()
        && pattern.chars().all(|c| matches!(c, '*' | '/' | '.'))
        && pattern.contains('*')
}

fn resource_matches(r: &Resource, t: Option<ItemType>) -> bool {
    match r {
        Resource::Any | Resource::Items(None) => true,
        Resource::Items(Some(x)) => t.is_none_or(|t| t == *x),
        _ => false,
    }
}

fn cap_matches(c: &Capability, verb: &str, t: Option<ItemType>, id: Option<&str>) -> bool {
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

/// How the directive writes its permissions, so that a fix writes a grant the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Style {
    Attribute,
    Hierarchical { dotted: bool },
    Cap { prefix: String },
}

/// Extra facts about each capability, beside the public model.
struct Info {
    style: Style,
    /// What to delete to remove this grant (P206 fix).
    remove: TextRange,
    /// The range to report the grant's own problems on.
    target: TextRange,
    /// The pattern, compiled once (`None` for file system patterns and invalid ones).
    matcher: Option<Matcher>,
    /// The capabilities read from one spelling share a group (`<fetch>` is two): P206 is
    /// reported once for the group, when none of them is used.
    group: usize,
}

struct Reader<'a> {
    text: &'a str,
    caps: Vec<Capability>,
    info: Vec<Info>,
    diags: Vec<Diagnostic>,
    /// The alias the capabilities pushed now are read from (set around one spelling).
    alias: Option<String>,
    /// The group of the capabilities pushed now.
    group: usize,
}

fn spanned_attr<'e>(el: &'e Element, name: &str) -> Option<&'e super::Attr> {
    el.attr(name)
}

/// `rye.file-system.*` -> `rye/file-system/*`; ids with `/` stay as written.
fn undot(p: &str) -> (String, bool) {
    if p.contains('/') || !p.contains('.') {
        (p.to_string(), false)
    } else {
        (p.replace('.', "/"), true)
    }
}

/// Placeholders in a path, replaced by a literal so the glob compiles.
fn without_placeholders(p: &str) -> String {
    replace_placeholders(p, "PLACEHOLDER")
}

/// Every `{...}` of a pattern replaced by `with`.
fn replace_placeholders(p: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = p;
    while let Some(i) = rest.find('{') {
        match rest[i..].find('}') {
            Some(j) => {
                out.push_str(&rest[..i]);
                out.push_str(with);
                rest = &rest[i + j + 1..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

impl<'a> Reader<'a> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        verb: &str,
        resource: Resource,
        pattern: String,
        deny: bool,
        range: TextRange,
        valid: bool,
        style: Style,
        remove: TextRange,
        target: TextRange,
    ) {
        let fs = matches!(
            resource,
            Resource::Filesystem | Resource::Registry | Resource::Shell
        );
        let mut valid = valid;
        let compiled = if fs {
            // Only checked: file system and shell patterns are matched by the tools.
            crate::glob::check_path_pattern(&without_placeholders(&pattern)).map(|_| None)
        } else {
            Matcher::new(&pattern).map(Some)
        };
        let matcher = match compiled {
            Ok(m) => m,
            Err(e) => {
                valid = false;
                self.diags.push(Diagnostic::new(
                    Code::P203,
                    target,
                    format!("`{pattern}` is not a valid glob: {}", e.kind()),
                ));
                None
            }
        };
        self.caps.push(Capability {
            verb: verb.to_string(),
            resource,
            pattern,
            deny,
            range,
            valid,
            alias: self.alias.clone(),
        });
        self.info.push(Info {
            style,
            remove,
            target,
            matcher,
            group: self.group,
        });
    }

    fn unknown(&mut self, range: TextRange, what: &str, word: &str, known: &[&str]) {
        let sug = closest(word, known.iter().copied());
        let mut d = Diagnostic::new(
            Code::P201,
            range,
            format!(
                "unknown {what} `{word}` (one of {}){}",
                known.join(", "),
                did_you_mean(sug)
            ),
        );
        if let Some(s) = sug {
            d = d.fix(Fix::replace(format!("Change to `{s}`"), range, s));
        }
        self.diags.push(d);
    }

    fn element(&mut self, el: &Element, deny: bool) {
        self.group += 1;
        self.alias = None;
        match el.name.as_str() {
            "cap" => self.cap_string(el, deny),
            "read" | "write" => self.attribute_form(el, deny),
            "execute" | "search" | "load" | "sign" | "fetch" => {
                if el.attrs.is_empty() {
                    self.hierarchical(el, deny);
                } else {
                    self.attribute_form(el, deny);
                }
            }
            "deny" if !deny => {
                if el.attrs.is_empty() {
                    for c in &el.children {
                        self.element(c, true);
                    }
                } else {
                    self.attribute_form(el, true);
                }
            }
            _ => {
                let sug = closest(&el.name, PERMISSION_ELEMENTS.iter().copied());
                let mut d = Diagnostic::new(
                    Code::P201,
                    el.name_range,
                    format!(
                        "unknown permission element `<{}>`, which grants nothing (one of {}){}",
                        el.name,
                        PERMISSION_ELEMENTS.join(", "),
                        did_you_mean(sug)
                    ),
                );
                if let Some(s) = sug {
                    d = d.fix(super::schema::rename_element(el, s));
                }
                self.diags.push(d);
            }
        }
    }

    fn check_attr_names(&mut self, el: &Element) {
        for a in &el.attrs {
            if !PERMISSION_ATTRS.contains(&a.name.as_str()) {
                self.unknown(
                    a.name_range,
                    "permission attribute",
                    &a.name,
                    PERMISSION_ATTRS,
                );
            }
        }
    }

    fn attribute_form(&mut self, el: &Element, deny: bool) {
        self.check_attr_names(el);
        let remove = whole_lines(self.text, el.range);
        let resource_attr = spanned_attr(el, "resource");
        let resource = match resource_attr {
            Some(a) => a.value.trim().to_string(),
            None if el.attr("path").is_some() || matches!(el.name.as_str(), "read" | "write") => {
                "filesystem".to_string()
            }
            None if el.attr("command").is_some() => "shell".to_string(),
            None => "kiwi".to_string(),
        };
        if resource == "rye" {
            self.alias = Some("rye's resource `rye`, read as `kiwi`".into());
        }
        let elem = if deny && el.name == "deny" {
            "deny"
        } else {
            el.name.as_str()
        };
        match resource.as_str() {
            "filesystem" | "registry" => {
                let res = if resource == "filesystem" {
                    Resource::Filesystem
                } else {
                    Resource::Registry
                };
                let verb = match elem {
                    "read" | "write" => elem.to_string(),
                    // kiwi-mcp: `<execute resource="registry" action="write"/>`.
                    "execute" if resource == "registry" => {
                        self.alias = Some("kiwi-mcp's `<execute resource=\"registry\">`, read as `<read>`/`<write>` of the registry".into());
                        match el.attr("action") {
                            None => "read".to_string(),
                            Some(a) if matches!(a.value.trim(), "read" | "write") => {
                                a.value.trim().to_string()
                            }
                            Some(a) => {
                                self.unknown(
                                    a.value_range,
                                    "registry action",
                                    a.value.trim(),
                                    &["read", "write"],
                                );
                                return;
                            }
                        }
                    }
                    "deny" => el
                        .attr("action")
                        .map(|a| a.value.trim().to_string())
                        .unwrap_or_else(|| "*".to_string()),
                    _ => {
                        let r = resource_attr
                            .map(|a| a.value_range)
                            .unwrap_or(el.name_range);
                        self.diags.push(Diagnostic::new(
                            Code::P201,
                            r,
                            format!("`<{elem}>` does not apply to `{resource}`: use `<read>` or `<write>`"),
                        ));
                        return;
                    }
                };
                let (pattern, target) = match el.attr("path") {
                    Some(p) => (p.value.trim().to_string(), p.value_range),
                    None => ("**".to_string(), el.name_range),
                };
                self.path_checks(&pattern, target);
                if verb == "write" && !deny && res == Resource::Filesystem && is_all(&pattern) {
                    self.diags.push(Diagnostic::new(
                        Code::P204,
                        target,
                        format!("`write` on every file of the project (`{pattern}`) is far broader than a directive needs: name the folders it writes"),
                    ));
                }
                self.push(
                    &verb,
                    res,
                    pattern,
                    deny,
                    el.range,
                    true,
                    Style::Attribute,
                    remove,
                    target,
                );
            }
            "tool" | "spawn" => {
                // kiwi-mcp: `<execute resource="tool" id="bash"/>` runs that tool;
                // `<execute resource="spawn" action="thread"/>` starts threads, each running
                // a directive.
                let (t, alias) = if resource == "tool" {
                    (
                        ItemType::Tool,
                        "kiwi-mcp's `resource=\"tool\"`, read as `run` on tools",
                    )
                } else {
                    (
                        ItemType::Directive,
                        "kiwi-mcp's `resource=\"spawn\"`: a spawned thread runs a directive, read as `run` on directives",
                    )
                };
                self.alias = Some(alias.into());
                let (pattern, target) = match el.attr("id").filter(|_| resource == "tool") {
                    Some(p) => (undot(p.value.trim()).0, p.value_range),
                    None => ("*".to_string(), el.name_range),
                };
                self.id_checks(&pattern, target);
                self.push(
                    "run",
                    Resource::Items(Some(t)),
                    pattern,
                    deny,
                    el.range,
                    true,
                    Style::Attribute,
                    remove,
                    target,
                );
            }
            "kiwi" | "kiwi-mcp" | "rye" => {
                if matches!(elem, "read" | "write") {
                    let r = resource_attr
                        .map(|a| a.value_range)
                        .unwrap_or(el.name_range);
                    self.diags.push(Diagnostic::new(
                        Code::P201,
                        r,
                        format!("`<{elem}>` applies to `filesystem` or `registry`, not `{resource}`: use `<execute resource=\"{resource}\" action=...>`"),
                    ));
                    return;
                }
                let mut valid = true;
                let action = el.attr("action");
                let verbs: Vec<String> = match elem {
                    "search" | "load" => vec![elem.to_string()],
                    "fetch" if action.is_none() => {
                        self.alias = action_alias("fetch").map(|a| a.1.to_string());
                        vec!["search".into(), "load".into()]
                    }
                    "sign" if action.is_none() => {
                        self.alias = action_alias("sign").map(|a| a.1.to_string());
                        vec!["validate".into()]
                    }
                    _ => match action {
                        None => {
                            if deny {
                                vec!["*".to_string()]
                            } else {
                                vec!["run".to_string()]
                            }
                        }
                        Some(a) => {
                            let v = a.value.trim();
                            if ACTIONS.contains(&v) {
                                vec![v.to_string()]
                            } else if let Some((verbs, alias)) = action_alias(v) {
                                self.alias = Some(alias.to_string());
                                verbs.iter().map(|v| v.to_string()).collect()
                            } else {
                                let known: Vec<&str> =
                                    ACTIONS.iter().chain(ACTION_ALIASES).copied().collect();
                                self.unknown(a.value_range, "action", v, &known);
                                valid = false;
                                vec![v.to_string()]
                            }
                        }
                    },
                };
                let item_type = match el.attr("item_type") {
                    None => None,
                    Some(a) if a.value.trim() == "*" => None,
                    Some(a) => match ItemType::parse(a.value.trim()) {
                        Some(t) => Some(t),
                        None => {
                            self.unknown(
                                a.value_range,
                                "item type",
                                a.value.trim(),
                                ITEM_TYPE_NAMES,
                            );
                            valid = false;
                            None
                        }
                    },
                };
                if let Some(verb) = verbs.iter().find(|v| {
                    item_type == Some(ItemType::System)
                        && !SYSTEM_ACTIONS.contains(&v.as_str())
                        && *v != "*"
                        && *v != "help"
                }) {
                    let r = action.map(|a| a.value_range).unwrap_or(el.name_range);
                    self.diags.push(Diagnostic::new(
                        Code::P202,
                        r,
                        format!("`{verb}` is not allowed on `system` items: they are read-only (only run, search, load)"),
                    ));
                    valid = false;
                }
                let (pattern, target) = match el.attr("id") {
                    Some(p) => (p.value.trim().to_string(), p.value_range),
                    None => ("*".to_string(), el.name_range),
                };
                self.id_checks(&pattern, target);
                for verb in &verbs {
                    self.push(
                        verb,
                        Resource::Items(item_type),
                        pattern.clone(),
                        deny,
                        el.range,
                        valid,
                        Style::Attribute,
                        remove,
                        target,
                    );
                }
            }
            "shell" => {
                let (pattern, target) = match el.attr("command").or(el.attr("action")) {
                    Some(a) => (a.value.trim().to_string(), a.value_range),
                    None => ("*".to_string(), el.name_range),
                };
                if !deny && is_all(&pattern) {
                    self.diags.push(Diagnostic::new(
                        Code::P204,
                        target,
                        "`execute shell *` lets the agent run any command: name the commands it needs (`command=\"git *\"`)",
                    ));
                }
                self.push(
                    "execute",
                    Resource::Shell,
                    pattern,
                    deny,
                    el.range,
                    true,
                    Style::Attribute,
                    remove,
                    target,
                );
            }
            other => {
                let r = resource_attr
                    .map(|a| a.value_range)
                    .unwrap_or(el.name_range);
                let other = other.to_string();
                let known: Vec<&str> = RESOURCES.iter().chain(RESOURCE_ALIASES).copied().collect();
                self.unknown(r, "resource", &other, &known);
            }
        }
    }

    /// `<execute><tool>PATTERN</tool></execute>` and `<execute>*</execute>`.
    fn hierarchical(&mut self, el: &Element, deny: bool) {
        let verbs: Vec<String> = match el.name.as_str() {
            "execute" => vec!["run".into()],
            "sign" | "fetch" => {
                let (verbs, _) = action_alias(&el.name).expect("an alias");
                self.alias = Some(if el.name == "sign" {
                    "rye's `<sign>`, read as `validate`".to_string()
                } else {
                    "rye's `<fetch>`, read as `search` and `load`".to_string()
                });
                verbs.iter().map(|v| v.to_string()).collect()
            }
            other => vec![other.to_string()],
        };
        let valid_verb = true;
        let text = el.trimmed_text();
        if el.children.is_empty() {
            if text == "*" {
                let target = el.text_range.unwrap_or(el.name_range);
                for verb in &verbs {
                    self.push(
                        verb,
                        Resource::Items(None),
                        "*".into(),
                        deny,
                        el.range,
                        valid_verb,
                        Style::Hierarchical { dotted: false },
                        whole_lines(self.text, el.range),
                        target,
                    );
                }
            } else {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    el.text_range.unwrap_or(el.name_range),
                    format!("`<{}>` grants nothing: write `*`, or item type elements such as `<tool>docs/*</tool>`", el.name),
                ));
            }
            return;
        }
        if !text.is_empty() {
            if let Some(r) = el.text_range {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    r,
                    format!(
                        "text inside `<{}>` beside item type elements is ignored",
                        el.name
                    ),
                ));
            }
        }
        let only_child = el.children.len() == 1;
        for c in &el.children {
            let t = match ItemType::parse(&c.name) {
                Some(t) => t,
                None => {
                    let sug = closest(&c.name, ITEM_TYPE_NAMES.iter().copied());
                    let mut d = Diagnostic::new(
                        Code::P201,
                        c.name_range,
                        format!(
                            "unknown item type `<{}>` in `<{}>`, which grants nothing (one of directive, tool, knowledge, system){}",
                            c.name, el.name, did_you_mean(sug)
                        ),
                    );
                    if let Some(s) = sug {
                        d = d.fix(super::schema::rename_element(c, s));
                    }
                    self.diags.push(d);
                    continue;
                }
            };
            for a in &c.attrs {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    a.name_range,
                    format!(
                        "unknown attribute `{}` on `<{}>`: the pattern is the element's text",
                        a.name, c.name
                    ),
                ));
            }
            let Some(pat) = c.spanned_text() else {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    c.name_range,
                    format!("`<{}>` names no pattern (write `*` for any)", c.name),
                ));
                continue;
            };
            let (pattern, dotted) = undot(&pat.value);
            let mut valid = valid_verb;
            if let Some(verb) = verbs
                .iter()
                .find(|v| t == ItemType::System && !SYSTEM_ACTIONS.contains(&v.as_str()))
            {
                self.diags.push(Diagnostic::new(
                    Code::P202,
                    c.name_range,
                    format!("`{verb}` is not allowed on `system` items: they are read-only"),
                ));
                valid = false;
            }
            self.id_checks(&pattern, pat.range);
            let remove = if only_child {
                whole_lines(self.text, el.range)
            } else {
                whole_lines(self.text, c.range)
            };
            for verb in &verbs {
                self.push(
                    verb,
                    Resource::Items(Some(t)),
                    pattern.clone(),
                    deny,
                    c.range,
                    valid,
                    Style::Hierarchical { dotted },
                    remove,
                    c.range,
                );
            }
            self.group += 1;
        }
    }

    /// `<cap>kiwi.execute.tool.docs.*</cap>`.
    fn cap_string(&mut self, el: &Element, deny: bool) {
        let remove = whole_lines(self.text, el.range);
        let Some(t) = el.spanned_text() else {
            self.diags.push(Diagnostic::new(
                Code::P201,
                el.name_range,
                "empty `<cap>`: it grants nothing",
            ));
            return;
        };
        // Exact sub-ranges when the raw text is the value (no entity references).
        let exact = self.text.get(t.range.start..t.range.end) == Some(t.value.as_str());
        let mut segs: Vec<(&str, TextRange)> = Vec::new();
        let mut off = 0;
        for s in t.value.split('.') {
            let r = if exact {
                TextRange::new(t.range.start + off, t.range.start + off + s.len())
            } else {
                t.range
            };
            segs.push((s, r));
            off += s.len() + 1;
        }
        let (prefix, prefix_range) = segs[0];
        if !matches!(prefix, "kiwi" | "rye" | "kiwi-mcp") {
            self.diags.push(Diagnostic::new(
                Code::P201,
                prefix_range,
                format!("a capability string starts with `kiwi.` (or `rye.`), not `{prefix}.`; it grants nothing"),
            ));
            self.push(
                "",
                Resource::Items(None),
                t.value.clone(),
                deny,
                el.range,
                false,
                Style::Cap {
                    prefix: "kiwi".into(),
                },
                remove,
                t.range,
            );
            return;
        }
        let style = Style::Cap {
            prefix: prefix.to_string(),
        };
        let mut valid = true;
        let verbs: Vec<String> = match segs.get(1) {
            None => {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    t.range,
                    format!("`{}` names no action (`{prefix}.execute.tool.ID`)", t.value),
                ));
                return;
            }
            Some(&(v, r)) => match v {
                "execute" => vec!["run".to_string()],
                v if ACTIONS.contains(&v) => vec![v.to_string()],
                "sign" | "fetch" | "help" => {
                    let (verbs, alias) = action_alias(v).expect("an alias");
                    self.alias = Some(alias.to_string());
                    verbs.iter().map(|v| v.to_string()).collect()
                }
                _ => {
                    let known: Vec<&str> = ACTIONS
                        .iter()
                        .copied()
                        .chain(["execute", "sign", "fetch", "help"])
                        .collect();
                    self.unknown(r, "action", v, &known);
                    valid = false;
                    vec![v.to_string()]
                }
            },
        };
        let (resource, pattern, target) = match segs.get(2) {
            None => (Resource::Items(None), "*".to_string(), t.range),
            Some(&("*", r)) => (Resource::Items(None), "*".to_string(), r),
            Some(&(ty, r)) => match ItemType::parse(ty) {
                Some(it) => {
                    let rest: Vec<&str> = segs[3..].iter().map(|s| s.0).collect();
                    let pat = if rest.is_empty() {
                        "*".to_string()
                    } else {
                        rest.join("/")
                    };
                    let target = match (segs.get(3), segs.last()) {
                        (Some(a), Some(b)) => TextRange::new(a.1.start, b.1.end),
                        _ => r,
                    };
                    (Resource::Items(Some(it)), pat, target)
                }
                None => {
                    let known: Vec<&str> = ITEM_TYPE_NAMES.iter().copied().chain(["*"]).collect();
                    self.unknown(r, "item type", ty, &known);
                    valid = false;
                    (
                        Resource::Items(None),
                        segs[2..].iter().map(|s| s.0).collect::<Vec<_>>().join("/"),
                        r,
                    )
                }
            },
        };
        if let Some(verb) = verbs.iter().find(|verb| {
            resource == Resource::Items(Some(ItemType::System))
                && valid
                && !SYSTEM_ACTIONS.contains(&verb.as_str())
                && *verb != "*"
                && *verb != "help"
        }) {
            self.diags.push(Diagnostic::new(
                Code::P202,
                segs[1].1,
                format!("`{verb}` is not allowed on `system` items: they are read-only"),
            ));
            valid = false;
        }
        if valid {
            self.id_checks(&pattern, target);
        }
        for verb in &verbs {
            self.push(
                verb,
                resource.clone(),
                pattern.clone(),
                deny,
                el.range,
                valid,
                style.clone(),
                remove,
                t.range,
            );
        }
    }

    fn id_checks(&mut self, pattern: &str, range: TextRange) {
        if pattern.split('/').any(|s| s == ".." || s == ".") {
            self.diags.push(Diagnostic::new(
                Code::P203,
                range,
                format!("`{pattern}` climbs out with `..`: item ids are relative to their space"),
            ));
        } else if pattern.starts_with('/') {
            self.diags.push(Diagnostic::new(
                Code::P203,
                range,
                format!("`{pattern}` is absolute: item ids are relative to their type folder"),
            ));
        }
    }

    fn path_checks(&mut self, pattern: &str, range: TextRange) {
        if pattern.split(['/', '\\']).any(|s| s == "..") {
            self.diags.push(Diagnostic::new(
                Code::P203,
                range,
                format!("`{pattern}` climbs out of the project with `..`"),
            ));
            return;
        }
        let absolute = pattern.starts_with('/')
            || pattern.starts_with('~')
            || pattern.starts_with('\\')
            || (pattern.len() >= 2
                && pattern.as_bytes()[1] == b':'
                && pattern.as_bytes()[0].is_ascii_alphabetic());
        if absolute {
            self.diags.push(Diagnostic::new(
                Code::P203,
                range,
                format!("`{pattern}` is an absolute path: paths are relative to the project, or start with a `{{system.paths.*}}` placeholder"),
            ));
        } else if pattern.starts_with('{') && !pattern.starts_with("{system.paths.") {
            self.diags.push(Diagnostic::new(
                Code::P203,
                range,
                format!("`{pattern}` starts with a placeholder that is not a `{{system.paths.*}}` directory"),
            ));
        }
    }
}

/// The `<permissions>` element of `<metadata>`. One misplaced in the root is not read: rye
/// ignores it (its agent gets no capabilities from it), so kiwi computes coverage as rye
/// would, and D105 says so.
fn permissions_element(root: &Element) -> Option<&Element> {
    root.child("metadata").and_then(|m| m.child("permissions"))
}

/// More than this many (call, capability) pairs and coverage is not checked (a 10 MB file).
const MAX_PAIRS: usize = 2_000_000;

pub(crate) fn run(text: &str, root: &Element, d: &mut Directive) {
    let perms = permissions_element(root);
    let mut r = Reader {
        text,
        caps: Vec::new(),
        info: Vec::new(),
        diags: Vec::new(),
        alias: None,
        group: 0,
    };
    d.permissions_range = perms.map(|p| p.range);
    if let Some(p) = perms {
        let text_in = p.trimmed_text();
        if text_in == "*" {
            let target = p.text_range.unwrap_or(p.name_range);
            r.push(
                "*",
                Resource::Any,
                "*".into(),
                false,
                target,
                true,
                Style::Attribute,
                target,
                target,
            );
        } else if !text_in.is_empty() {
            if let Some(tr) = p.text_range {
                r.diags.push(Diagnostic::new(
                    Code::P201,
                    tr,
                    "text inside `<permissions>` is ignored: write `*` for everything, or permission elements",
                ));
            }
        }
        for c in &p.children {
            r.element(c, false);
        }
    }
    let style = r
        .info
        .iter()
        .zip(&r.caps)
        .find(|(_, c)| c.resource != Resource::Any)
        .map(|(i, _)| i.style.clone())
        .unwrap_or(Style::Attribute);
    let needs: Vec<(usize, Need)> = d
        .calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Need::of_call(c).map(|n| (i, n)))
        .collect();
    if needs.len().saturating_mul(r.caps.len().max(1)) <= MAX_PAIRS {
        coverage(text, root, perms, d, &r, &needs, &style);
        unused(d, &mut r, &needs);
    }
    // `<permissions>*</permissions>`
    if let Some(any) = r.caps.iter().position(|c| c.resource == Resource::Any) {
        let target = r.info[any].target;
        let mut diag = Diagnostic::new(
            Code::P204,
            target,
            "`<permissions>*</permissions>` grants everything: grant only what the steps use",
        );
        if !needs.is_empty() {
            let mut grants: Vec<String> = Vec::new();
            for (_, n) in &needs {
                let g = grant_text(n, &Style::Attribute);
                if !grants.contains(&g) {
                    grants.push(g);
                }
            }
            if let Some(p) = perms {
                let indent = super::checks::child_indent(text, p);
                let outer = super::checks::line_indent(text, p.range.start);
                let body: String = grants.iter().map(|g| format!("\n{indent}{g}")).collect();
                if let Some(content) = p.content {
                    diag = diag.fix(Fix::replace(
                        "Grant only what the steps use",
                        content,
                        format!("{body}\n{outer}"),
                    ));
                }
            }
        }
        r.diags.push(diag);
    }
    d.capabilities = r.caps;
    d.diagnostics.extend(r.diags);
}

fn id_glob(id: &str) -> String {
    // Placeholders become wildcards: `{input:category}/{input:name}` -> `*/*`.
    replace_placeholders(id, "*")
}

/// The narrowest grant for a need, in the directive's own spelling.
fn grant_text(n: &Need, style: &Style) -> String {
    let id = n.id.as_deref().map(id_glob);
    let t = n.item_type.map(ItemType::as_str);
    let hier_elem = match n.verb.as_str() {
        "run" => Some("execute"),
        "search" => Some("search"),
        "load" => Some("load"),
        // rye's hierarchical spelling of `validate`.
        "validate" => Some("sign"),
        _ => None,
    };
    match (style, hier_elem) {
        (Style::Hierarchical { dotted }, Some(elem)) => {
            let pat = id
                .map(|i| {
                    if *dotted && !i.contains('.') {
                        i.replace('/', ".")
                    } else {
                        i
                    }
                })
                .unwrap_or_else(|| "*".into());
            match t {
                Some(t) => format!("<{elem}><{t}>{pat}</{t}></{elem}>"),
                None => format!("<{elem}>*</{elem}>"),
            }
        }
        (Style::Cap { prefix }, _) => {
            let verb = if n.verb == "run" {
                "execute"
            } else {
                n.verb.as_str()
            };
            match t {
                Some(t) => {
                    let pat = id
                        .map(|i| i.replace('/', "."))
                        .unwrap_or_else(|| "*".into());
                    format!("<cap>{prefix}.{verb}.{t}.{pat}</cap>")
                }
                None => format!("<cap>{prefix}.{verb}.*</cap>"),
            }
        }
        _ => {
            let mut s = format!("<execute resource=\"kiwi\" action=\"{}\"", n.verb);
            if let Some(t) = t {
                s.push_str(&format!(" item_type=\"{t}\""));
            }
            if let Some(i) = id {
                s.push_str(&format!(" id=\"{i}\""));
            }
            s.push_str("/>");
            s
        }
    }
}

fn call_target(call: &Call, root: &Element) -> TextRange {
    if let Some(id) = &call.item_id {
        return id.range;
    }
    if let Some(t) = &call.item_type {
        return t.range;
    }
    // The call element's name.
    let mut stack = vec![root];
    while let Some(el) = stack.pop() {
        if el.range == call.range {
            return el.name_range;
        }
        stack.extend(
            el.children
                .iter()
                .filter(|c| c.range.start <= call.range.start && call.range.end <= c.range.end),
        );
    }
    call.range
}

fn coverage(
    text: &str,
    root: &Element,
    perms: Option<&Element>,
    d: &mut Directive,
    r: &Reader,
    needs: &[(usize, Need)],
    style: &Style,
) {
    for (ci, need) in needs {
        let call = &d.calls[*ci];
        let id = need.id.as_deref();
        let denied = r
            .caps
            .iter()
            .position(|c| c.deny && cap_matches(c, &need.verb, need.item_type, id));
        let granted = r
            .caps
            .iter()
            .enumerate()
            .any(|(i, c)| !c.deny && covers(c, &r.info[i], need));
        if granted && denied.is_none() {
            continue;
        }
        let target = call_target(call, root);
        let mut diag = match (denied, perms) {
            (Some(di), _) => Diagnostic::new(
                Code::P205,
                target,
                format!("this call needs {}, which a `deny` removes: the agent will be refused at run time", need.describe()),
            )
            .related(None, r.caps[di].range, "denied here"),
            (None, None) if root.child("permissions").is_some() => Diagnostic::new(
                Code::P205,
                target,
                format!("this call needs {}, but the directive's `<permissions>` is outside `<metadata>`, where rye ignores it: the call will be refused", need.describe()),
            ),
            (None, None) => Diagnostic::new(
                Code::P205,
                target,
                format!("this call needs {}, but the directive declares no `<permissions>`: an agent running it may do nothing, so the call will be refused", need.describe()),
            ),
            (None, Some(_)) => Diagnostic::new(
                Code::P205,
                target,
                format!("this call needs {}, which no permission grants: the agent will be refused at run time", need.describe()),
            ),
        };
        if denied.is_none() {
            let grant = grant_text(need, style);
            let fix = match perms {
                Some(p) if p.self_closing => Some(Fix::replace(
                    format!("Grant it: {grant}"),
                    p.range,
                    format!(
                        "<permissions>\n{}  {grant}\n{}</permissions>",
                        super::checks::line_indent(text, p.range.start),
                        super::checks::line_indent(text, p.range.start)
                    ),
                )),
                Some(p) => insert_last_child(text, p, &grant)
                    .map(|(at, s)| Fix::insert(format!("Grant it: {grant}"), at, s)),
                // The D105 fix moves the misplaced `<permissions>` into `<metadata>`.
                None if root.child("permissions").is_some() => None,
                None => root.child("metadata").and_then(|m| {
                    let block = format!("<permissions>\n  {grant}\n</permissions>");
                    insert_last_child(text, m, &block).map(|(at, s)| {
                        Fix::insert(format!("Add `<permissions>` granting it: {grant}"), at, s)
                    })
                }),
            };
            if let Some(f) = fix {
                diag = diag.fix(f);
            }
        }
        d.diagnostics.push(diag);
    }
}

fn covers(c: &Capability, info: &Info, need: &Need) -> bool {
    if !c.valid
        || !(c.verb == "*" || c.verb == need.verb)
        || !resource_matches(&c.resource, need.item_type)
    {
        return false;
    }
    let Some(id) = need.id.as_deref() else {
        return true;
    };
    c.pattern == id || info.matcher.as_ref().is_some_and(|m| m.is_match(id))
}

/// P206: item grants that no call uses. Not reported when there is no call at all (the steps
/// are prose; nothing to compare with) nor when the directive runs another directive (a
/// child's capabilities are intersected with the parent's, so the parent may hold grants only
/// its children use).
fn unused(d: &mut Directive, r: &mut Reader, needs: &[(usize, Need)]) {
    if needs.is_empty()
        || needs
            .iter()
            .any(|(_, n)| n.verb == "run" && n.item_type == Some(ItemType::Directive))
    {
        return;
    }
    let mut seen_groups = std::collections::HashSet::new();
    for (i, c) in r.caps.iter().enumerate() {
        if c.deny || !c.valid || !matches!(c.resource, Resource::Items(_)) || c.verb == "help" {
            continue;
        }
        // One spelling read as several capabilities (`<fetch>`, kiwi-mcp's `execute`) is
        // unused only when none of them is used, and is reported once.
        let group = r.info[i].group;
        if !seen_groups.insert(group) {
            continue;
        }
        if r.caps.iter().enumerate().any(|(j, cj)| {
            r.info[j].group == group && needs.iter().any(|(_, n)| covers(cj, &r.info[j], n))
        }) {
            continue;
        }
        let what = match &c.resource {
            Resource::Items(Some(t)) if c.pattern == "*" => format!("`{}` on any {t}", c.verb),
            Resource::Items(Some(t)) => format!("`{}` on {t} `{}`", c.verb, c.pattern),
            _ if c.pattern == "*" => format!("`{}` on any item", c.verb),
            _ => format!("`{}` on items `{}`", c.verb, c.pattern),
        };
        let what = match &c.alias {
            Some(a) => format!("{what}; {a}"),
            None => what,
        };
        d.diagnostics.push(
            Diagnostic::new(
                Code::P206,
                r.info[i].target,
                format!("no step uses this grant ({what})"),
            )
            .tag(Tag::Unnecessary)
            .fix(Fix::replace("Remove the grant", r.info[i].remove, "")),
        );
    }
}
