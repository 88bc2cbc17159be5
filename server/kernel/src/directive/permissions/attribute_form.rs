//! The attribute form: `<read resource="filesystem" path="docs/**"/>`,
//! `<execute resource="kiwi" action="run" item_type="tool" id="docs/*"/>`, `<deny .../>`.

use super::{
    action_alias, is_all, spanned_attr, undot, Reader, Style, ACTIONS, ACTION_ALIASES,
    ITEM_TYPE_NAMES, RESOURCES, RESOURCE_ALIASES, SYSTEM_ACTIONS,
};
use crate::diag::{Code, Diagnostic};
use crate::directive::checks::whole_lines;
use crate::directive::{Attr, Element, Resource};
use crate::ids::ItemType;
use crate::text::TextRange;

impl<'a> Reader<'a> {
    pub(super) fn attribute_form(&mut self, el: &Element, deny: bool) {
        self.check_attr_names(el);
        let remove = whole_lines(self.text, el.range);
        let resource_attr = spanned_attr(el, "resource");
        // Where a wrong resource is shown: its value, else the element's name.
        let at_resource = resource_attr
            .map(|a| a.value_range)
            .unwrap_or(el.name_range);
        // Every rule of the element: allowed or denied, removed with its whole lines.
        let grant = |this: &mut Self, verb: &str, res, pattern, valid, target| {
            this.push(
                verb,
                res,
                pattern,
                deny,
                el.range,
                valid,
                Style::Attribute,
                remove,
                target,
            )
        };
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
                        self.diags.push(Diagnostic::new(
                            Code::P201,
                            at_resource,
                            format!("`<{elem}>` does not apply to `{resource}`: use `<read>` or `<write>`"),
                        ));
                        return;
                    }
                };
                let (pattern, target) = value_or(el, el.attr("path"), "**");
                self.path_checks(&pattern, target);
                if verb == "write" && !deny && res == Resource::Filesystem && is_all(&pattern) {
                    self.diags.push(Diagnostic::new(
                        Code::P204,
                        target,
                        format!("`write` on every file of the project (`{pattern}`) is far broader than a directive needs: name the folders it writes"),
                    ));
                }
                grant(self, &verb, res, pattern, true, target);
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
                grant(self, "run", Resource::Items(Some(t)), pattern, true, target);
            }
            "kiwi" | "kiwi-mcp" | "rye" => {
                if matches!(elem, "read" | "write") {
                    self.diags.push(Diagnostic::new(
                        Code::P201,
                        at_resource,
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
                let (pattern, target) = value_or(el, el.attr("id"), "*");
                self.id_checks(&pattern, target);
                for verb in &verbs {
                    let res = Resource::Items(item_type);
                    grant(self, verb, res, pattern.clone(), valid, target);
                }
            }
            "shell" => {
                let (pattern, target) = value_or(el, el.attr("command").or(el.attr("action")), "*");
                if !deny && is_all(&pattern) {
                    self.diags.push(Diagnostic::new(
                        Code::P204,
                        target,
                        "`execute shell *` lets the agent run any command: name the commands it needs (`command=\"git *\"`)",
                    ));
                }
                grant(self, "execute", Resource::Shell, pattern, true, target);
            }
            other => {
                let other = other.to_string();
                let known: Vec<&str> = RESOURCES.iter().chain(RESOURCE_ALIASES).copied().collect();
                self.unknown(at_resource, "resource", &other, &known);
            }
        }
    }
}

/// An attribute's trimmed value and its range; without the attribute, `default` at the
/// element's name.
fn value_or(el: &Element, attr: Option<&Attr>, default: &str) -> (String, TextRange) {
    match attr {
        Some(a) => (a.value.trim().to_string(), a.value_range),
        None => (default.to_string(), el.name_range),
    }
}
