//! The Markdown that hover and `kiwi.showEnvironment` show: an item, a lookup, a tool's
//! chain, an interpreter resolution, a `${VAR}`'s value along the chain, a tool's environment.

use super::{shown_path, space_name};
use crate::chain;
use crate::check::build_env;
use crate::env::{self, Origin, Outcome, Resolution};
use crate::ids::ItemType;
use crate::workspace::{Item, Lookup, Workspace};
use std::sync::Arc;

/// How the interpreter `item` declares was resolved (see [`interpreter_hover`]).
pub(super) fn resolution_markdown(ws: &Workspace, r: &Resolution, item: Option<&Item>) -> String {
    super::interpreter_hover::markdown(ws, r, item)
}

pub(super) fn chain_markdown(ws: &Workspace, tool: &Arc<Item>, skip_first: bool) -> String {
    let (links, err) = match chain::resolve(ws, tool) {
        Ok(c) => (c.links, None),
        Err(e) => (e.links.clone(), Some(e.message())),
    };
    let mut md = format!(
        "**Chain** of `{}`: {}\n\n",
        tool.id,
        links
            .iter()
            .map(|l| format!("`{}`", l.id))
            .collect::<Vec<_>>()
            .join(" → ")
    );
    let built = build_env(ws, &links);
    let n = links.len();
    for (i, l) in links.iter().enumerate() {
        if skip_first && i == 0 {
            continue;
        }
        md.push_str(&format!(
            "{}. `{}` — {} — `{}`\n",
            i + 1,
            l.id,
            space_name(l.space),
            shown_path(l)
        ));
        // build() numbers links from the primitive up.
        if let Some((_, r)) = built.resolutions.iter().find(|(k, _)| *k + 1 + i == n) {
            let what = match (&r.outcome, &r.value) {
                (Outcome::Found { .. }, Some(v)) => format!("`{v}`"),
                (Outcome::Fallback, Some(v)) => format!("`{v}` (the fallback)"),
                _ => "unset (nothing found, no fallback)".to_string(),
            };
            md.push_str(&format!("   - interpreter `{}` = {what}\n", r.var));
        }
        if let Some(d) = crate::trust::audit::stale_rye_signature(l) {
            md.push_str(&format!("   - **{}** {}\n", d.code, d.message));
        }
        for s in ws.all_with_id(ItemType::Tool, &l.id).into_iter().skip(1) {
            md.push_str(&format!(
                "   - shadows `{}` ({}) — `{}`\n",
                s.id,
                space_name(s.space),
                shown_path(s)
            ));
        }
    }
    if let Some(e) = err {
        md.push_str(&format!("\n**Broken chain:** {e}\n"));
    }
    md
}

fn item_markdown(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut md = format!(
        "**{} `{}`** — {} — `{}`\n",
        item.item_type.as_str(),
        item.id,
        space_name(item.space),
        shown_path(item)
    );
    if let Some(d) = item.description() {
        md.push_str(&format!("\n{d}\n"));
    }
    if let Some(kind) = item.tool().map(|t| t.kind()).filter(|k| !k.is_runnable()) {
        md.push_str(&format!(
            "\nA {} file, not a tool: it declares no `executor_id`, so it does not run (tools {} it).\n",
            kind.as_str(),
            if kind == crate::tool::ToolKind::Library { "import" } else { "read" }
        ));
    }
    let shadowed: Vec<_> = ws
        .all_with_id(item.item_type, &item.id)
        .into_iter()
        .filter(|i| i.path != item.path)
        .collect();
    if !shadowed.is_empty() {
        md.push('\n');
        for s in shadowed {
            md.push_str(&format!(
                "- shadows `{}` ({}) — `{}`\n",
                s.id,
                space_name(s.space),
                shown_path(s)
            ));
        }
    }
    md
}

pub(super) fn lookup_markdown(ws: &Workspace, item_type: ItemType, reference: &str) -> String {
    match ws.lookup(item_type, reference, None) {
        Lookup::Found(target) => {
            if item_type == ItemType::Tool {
                let mut md = item_markdown(ws, &target);
                md.push('\n');
                md.push_str(&chain_markdown(ws, &target, false));
                md
            } else {
                item_markdown(ws, &target)
            }
        }
        Lookup::Missing { suggestions } => {
            let mut md = format!("No {} `{reference}`.", item_type.as_str());
            if !suggestions.is_empty() {
                md.push_str(&format!(
                    " Did you mean {}?",
                    chain::quote_list(&suggestions)
                ));
            }
            md
        }
        Lookup::Ambiguous { candidates } => format!(
            "`{reference}` is ambiguous: {}",
            chain::quote_list(&candidates)
        ),
        Lookup::Refused(e) => format!("`{reference}` is not a valid id: {e}"),
    }
}

pub(super) fn var_markdown(ws: &Workspace, item: &Arc<Item>, name: &str) -> String {
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    let n = links.len();
    let link_id = |l: usize| {
        links
            .get(n.wrapping_sub(1).wrapping_sub(l))
            .map(|i| i.id.clone())
            .unwrap_or_default()
    };
    let filter = env::Filter::new(&ws.config.filter);
    let mut md = format!("**`${{{name}}}`**\n\n");
    match built.origins.get(name) {
        None => md.push_str("Not defined: no link of the chain, dotenv file or the server's environment (after filtering) defines it.\n"),
        Some(origin) => {
            let (from, chain_defined) = match origin {
                Origin::Base => ("the server's environment".to_string(), false),
                Origin::Dotenv { path } => (format!("the dotenv file `{}`", path.display()), false),
                Origin::Interpreter { link } => (format!("the interpreter of `{}`", link_id(*link)), true),
                Origin::EnvConfig { link } => (format!("`ENV_CONFIG.env` of `{}`", link_id(*link)), true),
                Origin::ConfigEnv { link } => (format!("`CONFIG.env` of `{}`", link_id(*link)), true),
                Origin::Anchor { link } => (format!("the `anchor:` of `{}`", link_id(*link)), true),
                Origin::Kiwi => ("kiwi (no bytecode written into a space)".to_string(), true),
            };
            md.push_str(&format!("Defined by {from}"));
            match built.vars.get(name) {
                Some(v) if chain_defined && !filter.is_blocked(name) => {
                    md.push_str(&format!(": `{v}`\n"))
                }
                _ => md.push_str(" (value not shown)\n"),
            }
        }
    }
    for (l, r) in &built.resolutions {
        if r.var == name {
            md.push_str(&format!("\nResolved by `{}`:\n\n", link_id(*l)));
            let link = links.get(n.wrapping_sub(1).wrapping_sub(*l));
            md.push_str(&resolution_markdown(ws, r, link.map(|i| &**i)));
        }
    }
    md
}

/// The environment report of a tool, as markdown (for `kiwi.showEnvironment`).
pub fn environment_markdown(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut md = chain_markdown(ws, item, false);
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    for (l, r) in &built.resolutions {
        let link = links.get(links.len().wrapping_sub(1).wrapping_sub(*l));
        let id = link.map(|i| i.id.as_str()).unwrap_or("?");
        md.push_str(&format!("\n**Interpreter of `{id}`**\n\n"));
        md.push_str(&resolution_markdown(ws, r, link.map(|i| &**i)));
    }
    md.push_str("\n**Variables:** ");
    md.push_str(
        &built
            .vars
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    md.push('\n');
    for b in &built.dotenv_blocked {
        md.push_str(&format!("\n**Note:** {}\n", b.message()));
    }
    crate::exec::host_secrets(ws).redact(&md)
}
