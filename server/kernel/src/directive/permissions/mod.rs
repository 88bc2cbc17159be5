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

use super::{Capability, Directive, Element, Resource};
use crate::diag::{closest, did_you_mean, Code, Diagnostic, Fix};
use crate::text::TextRange;

mod attribute_form;
mod cap_string;
mod coverage;
mod hierarchical;
mod model;
use coverage::{coverage, grant_text, unused};
use model::{action_alias, cap_matches, is_all, resource_matches, Matcher};
pub use model::{
    grants, Need, ACTIONS, ACTION_ALIASES, ITEM_TYPE_NAMES, PERMISSION_ATTRS, PERMISSION_ELEMENTS,
    RESOURCES, RESOURCE_ALIASES, SYSTEM_ACTIONS,
};

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
