//! Coverage: the calls no capability grants (P205, with a fix that adds the grant) and the
//! grants no call uses (P206).

use super::{cap_matches, replace_placeholders, resource_matches, Info, Need, Reader, Style};
use crate::diag::{Code, Diagnostic, Fix, Tag};
use crate::directive::checks::insert_last_child;
use crate::directive::{Call, Capability, Directive, Element, Resource};
use crate::ids::ItemType;
use crate::text::TextRange;

fn id_glob(id: &str) -> String {
    // Placeholders become wildcards: `{input:category}/{input:name}` -> `*/*`.
    replace_placeholders(id, "*")
}

/// The narrowest grant for a need, in the directive's own spelling.
pub(super) fn grant_text(n: &Need, style: &Style) -> String {
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

pub(super) fn coverage(
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
                        crate::directive::checks::line_indent(text, p.range.start),
                        crate::directive::checks::line_indent(text, p.range.start)
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
pub(super) fn unused(d: &mut Directive, r: &mut Reader, needs: &[(usize, Need)]) {
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
