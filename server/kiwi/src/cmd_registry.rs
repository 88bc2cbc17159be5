//! `kiwi registry new|add|list|remove|update`, `kiwi publish`, `kiwi pull`, `kiwi yank`:
//! translation only; the registry itself is `kiwi_kernel::registry`.

use crate::cmd_env::project_for;
use anyhow::{anyhow, bail, Context, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::registry::{config, format, ops, store, RegistryError};
use kiwi_kernel::workspace::{Item, Lookup, Workspace};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use crate::term::out;

fn json_out(v: &serde_json::Value) -> Result<ExitCode> {
    out(&serde_json::to_string_pretty(v)?);
    Ok(ExitCode::SUCCESS)
}

/// A registry URL as shown: without its credentials ([`kiwi_kernel::redact::urls`]).
fn shown(url: &str) -> String {
    kiwi_kernel::redact::urls(url).into_owned()
}

fn err(e: RegistryError) -> anyhow::Error {
    anyhow!("{}", e.message)
}

fn user_space() -> PathBuf {
    Host::from_process().user_space()
}

pub fn new(dir: &Path, bare: bool, name: Option<&str>, json: bool) -> Result<ExitCode> {
    let name = match name {
        Some(n) => n.to_string(),
        None => dir
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".git").to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "registry".into()),
    };
    store::create(dir, &name, bare).map_err(err)?;
    let abs = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if json {
        return json_out(&json!({"created": abs, "name": name, "bare": bare}));
    }
    out(&format!(
        "created registry `{name}` in {}{}",
        abs.display(),
        if bare { " (bare)" } else { "" }
    ));
    out(&format!(
        "  use it: kiwi registry add {name} {}",
        abs.display()
    ));
    Ok(ExitCode::SUCCESS)
}

pub fn add(name: &str, url: &str, json: bool) -> Result<ExitCode> {
    let us = user_space();
    config::check_name(name).map_err(err)?;
    let url = store::normalize_url(url).map_err(err)?;
    let mut cfg = config::load(&us).map_err(err)?;
    if let Some(e) = cfg.get(name) {
        if e.url != url {
            bail!(
                "a registry named `{name}` exists ({}); `kiwi registry remove {name}` first",
                shown(&e.url)
            );
        }
    }
    let entry = config::RegistryEntry {
        name: name.to_string(),
        url: url.clone(),
    };
    // Fetched and checked before it is configured: a registry kiwi refuses is not added.
    let updated = store::update(&us, &entry).map_err(err)?;
    cfg.entries.retain(|e| e.name != name);
    cfg.entries.push(entry);
    config::save(&us, &cfg.entries).map_err(err)?;
    if json {
        return json_out(&json!({
            "added": name, "url": shown(&url), "commit": updated.clone.commit,
            "versions": updated.new_versions.len(),
        }));
    }
    out(&format!(
        "added registry `{name}` ({}) at {}: {} version(s)",
        shown(&url),
        store::short(&updated.clone.commit),
        updated.new_versions.len()
    ));
    Ok(ExitCode::SUCCESS)
}

pub fn list(json: bool) -> Result<ExitCode> {
    let us = user_space();
    let cfg = config::load(&us).map_err(err)?;
    let project = project_for(None).ok().flatten();
    let policy = kiwi_kernel::config::Config::load(&us, project.as_deref()).require_signed;
    let rows: Vec<serde_json::Value> = cfg
        .entries
        .iter()
        .map(|e| {
            let clone = store::open(&us, e).ok();
            json!({
                "name": e.name,
                "url": shown(&e.url),
                "require_signed": policy.for_registry(&e.name),
                "commit": clone.as_ref().map(|c| c.commit.clone()),
                "fetched": clone.is_some(),
            })
        })
        .collect();
    if json {
        return json_out(&json!({"registries": rows}));
    }
    if rows.is_empty() {
        out("no registry is configured: add one with `kiwi registry add NAME URL`");
    }
    for (e, r) in cfg.entries.iter().zip(&rows) {
        let at = r["commit"]
            .as_str()
            .map(|c| format!("at {}", store::short(c)))
            .unwrap_or_else(|| "not fetched".into());
        out(&format!(
            "{:<16} {}  ({at}{})",
            e.name,
            shown(&e.url),
            if policy.for_registry(&e.name) {
                ", signed items only"
            } else {
                ""
            }
        ));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn remove(name: &str, json: bool) -> Result<ExitCode> {
    let us = user_space();
    let mut cfg = config::load(&us).map_err(err)?;
    cfg.find(name).map_err(err)?;
    cfg.entries.retain(|e| e.name != name);
    config::save(&us, &cfg.entries).map_err(err)?;
    let dir = store::clone_dir(&us, name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the clone {}", dir.display()))?;
    }
    if json {
        return json_out(&json!({"removed": name}));
    }
    out(&format!("removed registry `{name}` (and its clone)"));
    Ok(ExitCode::SUCCESS)
}

pub fn update(names: &[String], json: bool) -> Result<ExitCode> {
    let us = user_space();
    let cfg = config::load(&us).map_err(err)?;
    let entries: Vec<&config::RegistryEntry> = if names.is_empty() {
        cfg.entries.iter().collect()
    } else {
        names
            .iter()
            .map(|n| cfg.find(n))
            .collect::<Result<_, _>>()
            .map_err(err)?
    };
    if entries.is_empty() {
        bail!("no registry is configured: add one with `kiwi registry add NAME URL`");
    }
    let mut rows = Vec::new();
    let mut failed = false;
    for e in entries {
        match store::update(&us, e) {
            Ok(u) => {
                if !json {
                    let what = match &u.previous {
                        Some(p) if *p == u.clone.commit => "up to date".to_string(),
                        Some(p) => {
                            format!("{} -> {}", store::short(p), store::short(&u.clone.commit))
                        }
                        None => format!("cloned at {}", store::short(&u.clone.commit)),
                    };
                    out(&format!(
                        "{}: {what}, {} new version(s)",
                        e.name,
                        u.new_versions.len()
                    ));
                    for v in &u.new_versions {
                        out(&format!("  + {v}"));
                    }
                }
                rows.push(json!({"name": e.name, "commit": u.clone.commit, "previous": u.previous, "new_versions": u.new_versions}));
            }
            Err(er) => {
                failed = true;
                if !json {
                    eprintln!("kiwi: {}: {}", e.name, er.message);
                }
                rows.push(json!({"name": e.name, "error": er.message}));
            }
        }
    }
    if json {
        out(&serde_json::to_string_pretty(&json!({"registries": rows}))?);
    }
    warn_yanked_pins(&us, &cfg, project_for(None).ok().flatten().as_deref());
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// An item named by its file, `TYPE/ID`, or an id of one type only.
fn find_item(ws: &Workspace, item: &str) -> Result<Arc<Item>> {
    let p = Path::new(item);
    if p.is_file() {
        let abs = p.canonicalize()?;
        let (space, t, id) = ws.classify(&abs).ok_or_else(|| {
            anyhow!("{item} is not an item file of the project or the user space")
        })?;
        return ws
            .all_with_id(t, &id)
            .into_iter()
            .find(|i| i.space == space)
            .cloned()
            .ok_or_else(|| anyhow!("{item} is not an item file"));
    }
    let typed = item
        .split_once('/')
        .and_then(|(t, rest)| ItemType::parse(t).map(|t| (t, rest)));
    let candidates: Vec<(ItemType, &str)> = match typed {
        Some((t, rest)) => vec![(t, rest)],
        None => ItemType::FILE_TYPES.iter().map(|t| (*t, item)).collect(),
    };
    let mut found = Vec::new();
    for (t, id) in candidates {
        match ws.lookup(t, id, None) {
            Lookup::Found(i) => found.push(i),
            Lookup::Ambiguous { candidates } => {
                bail!("`{id}` names several {t}s: {}", candidates.join(", "))
            }
            Lookup::Refused(e) => bail!("`{id}`: {e}"),
            Lookup::Missing { .. } => {}
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!("no item `{item}` (give its file, or TYPE/ID: tool/text/word_count)"),
        _ => bail!(
            "`{item}` names items of several types: {}; say which (TYPE/ID)",
            found
                .iter()
                .map(|i| format!("{}/{}", i.item_type, i.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub struct PublishOptions<'a> {
    pub items: &'a [String],
    pub registry: &'a str,
    pub version: Option<&'a str>,
    pub unsigned: bool,
    pub project: Option<&'a Path>,
    pub json: bool,
}

/// The items an argument names: one item, or every item of the workspace below a folder.
fn items_named(ws: &Workspace, arg: &str) -> Result<Vec<Arc<Item>>> {
    let p = Path::new(arg);
    if p.is_dir() {
        let dir = p.canonicalize()?;
        let mut found: Vec<Arc<Item>> = ws
            .items()
            .filter(|i| i.path.starts_with(&dir) && ItemType::FILE_TYPES.contains(&i.item_type))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        if found.is_empty() {
            bail!("{arg} holds no item of the project or the user space");
        }
        return Ok(found);
    }
    Ok(vec![find_item(ws, arg)?])
}

pub fn publish(o: &PublishOptions) -> Result<ExitCode> {
    let project = project_for(o.project)?;
    let host = Host::from_process();
    let us = host.user_space();
    let ws = Workspace::load(project, host);
    let mut items: Vec<Arc<Item>> = Vec::new();
    for arg in o.items {
        for i in items_named(&ws, arg)? {
            if !items.iter().any(|x| x.path == i.path) {
                items.push(i);
            }
        }
    }
    let published = ops::publish_items(&us, &ws, &items, Some(o.registry), o.version, o.unsigned)
        .map_err(err)?;
    if o.json {
        if let [one] = published.as_slice() {
            return json_out(&serde_json::to_value(one)?);
        }
        return json_out(&json!({"published": published}));
    }
    let entry = &published[0].committed;
    for p in &published {
        out(&format!(
            "published {} to `{}` ({}) at {}{}",
            p.line.label(),
            entry.registry,
            shown(&entry.url),
            store::short(&entry.commit),
            if entry.attempts > 1 {
                format!(
                    " (after {} attempts: others published meanwhile)",
                    entry.attempts
                )
            } else {
                String::new()
            }
        ));
        out(&format!("  digest {}", p.line.digest));
        out(&format!(
            "  signer {}",
            p.line
                .signer
                .as_deref()
                .unwrap_or("none (published --unsigned)")
        ));
    }
    if published.len() > 1 {
        out(&format!("{} items in one commit", published.len()));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn yank(reference: &str, registry: Option<&str>, json: bool) -> Result<ExitCode> {
    let (t, id, version) = format::parse_reference(reference).map_err(err)?;
    let Some(version) = version else {
        bail!("say which version to yank: {t}/{id}@VERSION");
    };
    let us = user_space();
    let c = ops::yank(&us, registry, t, &id, &version).map_err(err)?;
    if json {
        return json_out(
            &json!({"yanked": format!("{t}/{id}@{version}"), "registry": c.registry, "commit": c.commit}),
        );
    }
    out(&format!(
        "yanked {t}/{id}@{version} in `{}` at {} (its files stay for those who pinned it; pulls no longer choose it)",
        c.registry,
        store::short(&c.commit)
    ));
    Ok(ExitCode::SUCCESS)
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum To {
    Project,
    User,
}

pub struct PullOptions<'a> {
    pub reference: Option<&'a str>,
    pub to: To,
    pub force: bool,
    pub locked: bool,
    pub update: bool,
    pub overwrite_local: bool,
    pub trust_on_first_use: bool,
    pub registry: Option<&'a str>,
    pub project: Option<&'a Path>,
    pub json: bool,
}

pub fn pull(o: &PullOptions) -> Result<ExitCode> {
    let items = match o.reference {
        Some(r) => {
            let (t, id, version) = format::parse_reference(r).map_err(err)?;
            vec![ops::Request {
                item_type: t,
                id,
                version,
            }]
        }
        None if o.locked || o.update => Vec::new(),
        None => bail!(
            "say which item to pull (TYPE/ID[@VERSION]), or --locked (restore every item kiwi.lock pins) or --update (move every pinned item to its newest compatible version)"
        ),
    };
    let project = project_for(o.project)?;
    let host = Host::from_process();
    let us = host.user_space();
    let cfg = kiwi_kernel::config::Config::load(&us, project.as_deref());
    for s in cfg
        .project_settings
        .iter()
        .filter(|s| s.key == "trust.tofu")
    {
        eprintln!("warning: {}: {}", s.file.display(), s.message);
    }
    let policy = cfg.require_signed;
    let ws = Workspace::load(project.clone(), host);
    let pulled = ops::pull(&ops::PullArgs {
        user_space: &us,
        project: project.as_deref(),
        ws: Some(&ws),
        items,
        mode: if o.locked {
            ops::Mode::Locked
        } else if o.update {
            ops::Mode::Update
        } else {
            ops::Mode::Requested
        },
        to: match o.to {
            To::Project => ops::Destination::Project,
            To::User => ops::Destination::User,
        },
        force: o.force,
        overwrite_local: o.overwrite_local,
        registry: o.registry,
        require_signed: &policy,
        trust_on_first_use: o.trust_on_first_use || cfg.trust_on_first_use == Some(true),
        permit: None,
    })
    .map_err(err)?;
    if o.json {
        return json_out(&json!({"pulled": pulled}));
    }
    let lockfile = match o.to {
        To::Project => ".ai/kiwi.lock",
        To::User => "the user space's kiwi.lock",
    };
    for p in &pulled {
        if p.unchanged {
            out(&format!(
                "{}/{}@{}: {} (nothing written)",
                p.item_type,
                p.id,
                p.version,
                p.note.as_deref().unwrap_or("unchanged")
            ));
            continue;
        }
        out(&format!(
            "pulled {}/{}@{} from `{}` ({}, commit {}){}",
            p.item_type,
            p.id,
            p.version,
            p.registry,
            p.url,
            store::short(&p.commit),
            if p.reason == "requested" {
                String::new()
            } else {
                format!(" — {}", p.reason)
            }
        ));
        out(&format!("  digest {} verified; {}", p.digest, p.signature));
        if let Some(r) = &p.replaced {
            out(&format!("  replaced {r}"));
        }
        if let Some(n) = &p.note {
            out(&format!("  note: {n}"));
        }
        for f in &p.files {
            out(&format!("  wrote {}", f.display()));
        }
        if p.locked {
            out(&format!("  pinned in {lockfile}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The lockfiles a user works with: the project's `.ai/kiwi.lock` and the user space's.
fn lockfiles(
    project: Option<&Path>,
    us: &Path,
) -> Vec<(&'static str, kiwi_kernel::lock::Lockfile)> {
    let mut out = Vec::new();
    let mut roots = Vec::new();
    if let Some(p) = project {
        roots.push(("project", p.join(".ai")));
    }
    roots.push(("user", us.to_path_buf()));
    for (space, root) in roots {
        match kiwi_kernel::lock::Lockfile::load(&root) {
            Ok(l) => out.push((space, l)),
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    out
}

/// Warn about every pin of these lockfiles whose version has been yanked (after `kiwi
/// registry update`): the item, the version, what to do.
fn warn_yanked_pins(us: &Path, cfg: &config::RegistriesConfig, project: Option<&Path>) {
    for (_, lock) in lockfiles(project, us) {
        for s in kiwi_kernel::registry::pins::status(us, cfg, &lock) {
            if let Some(w) = s.yank_warning() {
                eprintln!("warning: {w}");
            }
        }
    }
}

pub fn outdated(offline: bool, project: Option<&Path>, json: bool) -> Result<ExitCode> {
    let project = project_for(project)?;
    let us = user_space();
    let cfg = config::load(&us).map_err(err)?;
    let locks = lockfiles(project.as_deref(), &us);
    if !offline {
        // Fetch each registry a pin comes from, once; one that cannot be fetched is read
        // as it was last fetched, and the user is told.
        let mut fetched = std::collections::HashSet::new();
        for (_, lock) in &locks {
            for pin in &lock.entries {
                if let Some(e) = kiwi_kernel::registry::pins::registry_of(&cfg, pin) {
                    if fetched.insert(e.name.clone()) {
                        if let Err(er) = store::update(&us, e) {
                            eprintln!(
                                "warning: {}: {} (showing what it held when last fetched)",
                                e.name, er.message
                            );
                        }
                    }
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (space, lock) in &locks {
        for s in kiwi_kernel::registry::pins::status(&us, &cfg, lock) {
            rows.push((*space, s));
        }
    }
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(space, s)| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["space"] = json!(space);
                v["outdated"] = json!(s.is_outdated());
                v
            })
            .collect();
        return json_out(&json!({"pins": v}));
    }
    let outdated: Vec<&(&str, kiwi_kernel::registry::pins::PinStatus)> =
        rows.iter().filter(|(_, s)| s.is_outdated()).collect();
    for (_, s) in rows.iter().filter(|(_, s)| s.problem.is_some()) {
        eprintln!(
            "warning: {}/{}@{}: {}",
            s.item_type,
            s.id,
            s.pinned,
            s.problem.as_deref().unwrap_or("")
        );
    }
    if outdated.is_empty() {
        out(&format!(
            "every pinned item is up to date ({} pinned)",
            rows.len()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<[String; 5]> = outdated
        .iter()
        .map(|(space, s)| {
            [
                format!(
                    "{}{}/{}",
                    if *space == "user" { "(user) " } else { "" },
                    s.item_type,
                    s.id
                ),
                format!(
                    "{}{}",
                    s.pinned,
                    if s.pinned_yanked { " (yanked)" } else { "" }
                ),
                s.latest_compatible.clone().unwrap_or_else(|| "-".into()),
                s.latest.clone().unwrap_or_else(|| "-".into()),
                s.registry.clone(),
            ]
        })
        .collect();
    let head = ["Item", "Pinned", "Compatible", "Latest", "Registry"];
    let mut width = head.map(str::len);
    for r in &table {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  "));
            }
        }
        l
    };
    out(&line(head));
    for r in &table {
        out(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    out("  kiwi pull --update moves pinned items to their newest compatible version; kiwi pull --force TYPE/ID@VERSION to any other");
    Ok(ExitCode::SUCCESS)
}

/// `kiwi search --source registry|registry:NAME|all`: the registries' hits, as JSON values
/// shaped like local search's.
pub fn search_hits(
    project: Option<&Path>,
    source: &str,
    item_types: &[ItemType],
    query: &str,
    limit: usize,
) -> Result<Vec<serde_json::Value>> {
    let host = Host::from_process();
    let us = host.user_space();
    let ws = Workspace::load(project.map(Path::to_path_buf), host);
    let only = source.strip_prefix("registry:");
    let (index, problems) =
        kiwi_kernel::registry::search::build(&us, Some(&ws), only).map_err(err)?;
    for p in problems {
        eprintln!("warning: {p}");
    }
    let mut hits = Vec::new();
    for t in item_types {
        let found = if query.trim().is_empty() {
            index.list(*t, None, limit)
        } else {
            index.search(*t, query, None, limit)
        };
        for h in found {
            let mut v = serde_json::to_value(&h)?;
            if let Some(list) =
                kiwi_kernel::registry::search::versions_of(&us, &h.source, *t, &h.id)
            {
                v["versions"] = serde_json::json!(list);
            }
            hits.push(v);
        }
    }
    Ok(hits)
}
