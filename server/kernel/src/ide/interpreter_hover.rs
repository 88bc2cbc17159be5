//! The interpreter hover: how an `ENV_CONFIG` interpreter was resolved, as a person reads it.
//! A header with the value and where it came from; one ordered list of the candidates tried
//! (where, found or not, why), the one used marked once, the fallback as the last candidate (a
//! version manager's shim shown with the interpreter it runs, [`env::shim`]); then one line on
//! what the resolver type looks for (from the registry's data, so every face and every type
//! says it the same way).

use crate::env::registry::{
    self, Base, FileName, Manager, Probe, ResolverType, Strategy, MANAGERS,
};
use crate::env::{self, Outcome, Resolution};
use crate::tool::Field;
use crate::workspace::{Item, Workspace};

/// The interpreter's `fallback`, as `item` declares it.
pub(super) fn fallback_of(item: &Item) -> Option<String> {
    let ec = item.tool()?.value(Field::EnvConfig)?;
    Some(
        ec.get("interpreter")?
            .get("fallback")?
            .as_str()?
            .to_string(),
    )
}

/// The interpreter's `manager` (for `version_manager`), as `item` declares it.
fn manager_of(item: Option<&Item>) -> Option<&'static Manager> {
    let ec = item?.tool()?.value(Field::EnvConfig)?;
    registry::manager(ec.get("interpreter")?.get("manager")?.as_str()?)
}

/// The markdown of resolution `r` of the interpreter `item` declares.
pub(super) fn markdown(ws: &Workspace, r: &Resolution, item: Option<&Item>) -> String {
    let fallback = item.and_then(fallback_of);
    let mut md = String::new();
    match (&r.outcome, &r.value) {
        (Outcome::Found { index }, Some(v)) => md.push_str(&format!(
            "**`{}`** = `{v}`, from `{}` (candidate {} below)\n\n",
            r.var,
            r.trail
                .get(*index)
                .map(|c| c.location.as_str())
                .unwrap_or("?"),
            index + 1
        )),
        (Outcome::Fallback, Some(v)) => md.push_str(&format!(
            "**`{}`** = `{v}`, the fallback: no candidate was found\n\n",
            r.var
        )),
        _ => md.push_str(&format!(
            "**`{}`** is not set: no candidate was found and there is no fallback\n\n",
            r.var
        )),
    }
    md.push_str("Candidates, in the order tried:\n\n");
    let ctx = super::resolve_context(ws);
    let winner = match r.outcome {
        Outcome::Found { index } => Some(index),
        _ => None,
    };
    for (i, c) in r.trail.iter().enumerate() {
        let is_fallback = matches!(r.outcome, Outcome::Fallback) && i + 1 == r.trail.len();
        let mut state = if is_fallback {
            "**used**".to_string()
        } else if winner == Some(i) {
            "found, **used**".to_string()
        } else if c.found {
            "found".to_string()
        } else {
            "not found".to_string()
        };
        if let Some(n) = &c.note {
            state.push_str(&format!(" ({n})"));
        }
        if c.found && winner == Some(i) {
            if let Some(s) = env::shim::resolve(&c.path, &ctx) {
                state.push_str(&format!(" — {}", s.describe()));
            }
        }
        md.push_str(&format!(
            "{}. `{}` `{}`: {state}\n",
            i + 1,
            c.location,
            c.path.display()
        ));
    }
    if let (Some(index), Some(fb)) = (winner, &fallback) {
        md.push_str(&format!(
            "{}. `fallback` `{fb}`: not needed (candidate {} was found)\n",
            r.trail.len() + 1,
            index + 1
        ));
    } else if matches!(r.outcome, Outcome::Unresolved) {
        md.push_str("\nNo fallback: the variable stays unset.\n");
    }
    // Below the list (the list is what a person looks for first).
    if let Some(rt) = registry::resolver_type(&r.resolver) {
        md.push('\n');
        md.push_str(&looks_for(rt, manager_of(item)));
        md.push('\n');
    }
    md
}

/// One line on what resolver type `rt` looks for, from the registry: each location it can
/// search and what is probed there, and the default order.
pub(super) fn looks_for(rt: &ResolverType, manager: Option<&Manager>) -> String {
    let mut s = format!("`{}` looks for {}", rt.name, rt.summary);
    match &rt.strategy {
        Strategy::Search {
            locations,
            default_search,
        } => {
            let parts: Vec<String> = locations
                .iter()
                .map(|l| format!("`{}` {}", l.name, probe_text(&l.probe)))
                .collect();
            s.push_str(&format!(": {}", parts.join("; ")));
            if rt.optional.contains(&"search") {
                s.push_str(&format!(
                    ". Without `search`, it tries {}",
                    default_search
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            s.push('.');
        }
        Strategy::VersionManager => {
            let one = |m: &Manager| {
                format!(
                    "{}: `${}` (else `~/{}`)/{}/<version>/{} with the version from `version`, else `{}` in the project, else the global one; else {} on PATH",
                    m.name,
                    m.root_var,
                    m.default_root,
                    m.versions_dir,
                    m.bin,
                    m.version_file.name,
                    if m.path_names.is_empty() {
                        "the binary".to_string()
                    } else {
                        m.path_names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    }
                )
            };
            match manager {
                Some(m) => s.push_str(&format!(". {}.", one(m))),
                None => s.push_str(&format!(
                    " (managers: {}).",
                    MANAGERS
                        .iter()
                        .map(|m| format!("`{}`", m.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
    s
}

fn probe_text(p: &Probe) -> String {
    match p {
        Probe::File { base, unix, .. } => {
            let base = match base {
                Base::Project => "<project>",
                Base::User => "<user space>",
            };
            format!("`{base}/{unix}`")
        }
        Probe::OnPath(names) => format!(
            "{} on PATH",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        Probe::OnPathKey(key) => format!("the program `{key}` names, on PATH"),
        Probe::KeyDirs { key, default, file } => {
            let file = match file {
                FileName::Fixed { unix, .. } => format!("`{unix}`"),
                FileName::Key(k) => format!("the program `{k}` names"),
            };
            if default.is_empty() {
                format!("{file} in each folder `{key}` names")
            } else {
                format!(
                    "{file} in each folder `{key}` names (default {})",
                    default
                        .iter()
                        .map(|d| format!("`{d}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        }
    }
}
