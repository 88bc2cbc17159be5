//! `kiwi env`: how a tool or runtime resolves — its chain, each link's interpreter trail,
//! and the environment it would get (names; values only for what the chain defines).

use anyhow::{bail, Context, Result};
use kiwi_kernel::chain;
use kiwi_kernel::check::build_env;
use kiwi_kernel::context::Host;
use kiwi_kernel::env::{Origin, Outcome, Resolution};
use kiwi_kernel::workspace::{Item, Workspace};
use kiwi_kernel::workspace_set::WorkspaceSet;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub fn project_for(project: Option<&Path>) -> Result<Option<std::path::PathBuf>> {
    match project {
        Some(p) => {
            let p = p
                .canonicalize()
                .with_context(|| format!("project {} does not exist", p.display()))?;
            // A project with Agent Skills and no `.ai/` is a project (issue 28).
            let skills = kiwi_kernel::skill::PROJECT_FOLDERS
                .iter()
                .any(|f| p.join(f).is_dir());
            if !p.join(".ai").is_dir() && !skills {
                bail!(
                    "{} holds no .ai/ folder (nor .agents/skills/, .claude/skills/, .github/skills/); give the folder that contains .ai/",
                    p.display()
                );
            }
            Ok(Some(p))
        }
        None => Ok(std::env::current_dir()
            .ok()
            .and_then(|d| WorkspaceSet::project_root(&d))),
    }
}

/// The problems with the configured spaces (a listed directory that does not exist, ...),
/// on stderr: never a reason to stop.
pub fn warn_spaces(ws: &Workspace) {
    for p in &ws.space_problems {
        eprintln!("warning: {p}");
    }
}

/// What the project's `config.yaml` changed of the user's settings, or was refused.
pub fn note_project_settings(ws: &Workspace) {
    for p in &ws.config.project_settings {
        eprintln!("note: {}: {}", p.file.display(), p.message);
    }
}

pub fn find_tool(ws: &Workspace, reference: &str) -> Result<Arc<Item>> {
    kiwi_kernel::exec::find_tool(ws, reference).map_err(|e| anyhow::anyhow!(e.message))
}

fn trail_json(r: &Resolution) -> serde_json::Value {
    serde_json::to_value(r).unwrap_or(serde_json::Value::Null)
}

pub fn run(reference: &str, project: Option<&Path>, as_json: bool) -> Result<ExitCode> {
    let project = project_for(project)?;
    let ws = Workspace::load(project, Host::from_process());
    warn_spaces(&ws);
    note_project_settings(&ws);
    // A skill's script (`kiwi env .agents/skills/pdf/scripts/fill.py`): the tool that runs it.
    let (tool, script) = if kiwi_kernel::skill::script::names_a_file(reference) {
        let sp = kiwi_kernel::skill::script::plan_script(&ws, Path::new(reference))
            .map_err(|e| anyhow::anyhow!(e.message))?;
        (sp.tool(&ws), Some(sp))
    } else {
        (find_tool(&ws, reference)?, None)
    };
    let (links, broken) = match chain::resolve(&ws, &tool) {
        Ok(c) => (c.links, None),
        Err(e) => (e.links.clone(), Some(e.message())),
    };
    let built = build_env(&ws, &links);
    let n = links.len();
    // Where a run would go, and why (may probe bwrap/podman once, cached).
    let execution = if chain::is_primitive(&tool) || tool.tool().is_none() {
        None
    } else if links.last().is_some_and(|l| l.id == "http_client") {
        Some(Ok(json!({
            "environment": "local",
            "description": "the kiwi process",
            "reason": "http_client runs in the kiwi process",
        })))
    } else {
        Some(
            kiwi_kernel::exec::preference::choose(&ws, &tool, None)
                .map(|c| serde_json::to_value(&c).unwrap_or_default()),
        )
    };
    // build() numbers links from the primitive up; links are listed from the tool down.
    let resolution_of = |i: usize| {
        built
            .resolutions
            .iter()
            .find(|(l, _)| *l == n - 1 - i)
            .map(|(_, r)| r)
    };
    // A blocked name the chain passes on purpose (GITHUB_TOKEN: ${GITHUB_TOKEN}) holds a
    // secret from the server's environment: its value is never shown.
    let filter = kiwi_kernel::env::Filter::new(&ws.config.filter);
    // A value the chain builds from a passed-through secret (`ALIAS=prefix-${TOKEN}`) is
    // shown with the secret redacted.
    let secrets = kiwi_kernel::exec::host_secrets(&ws);
    let chain_defined = |name: &str| {
        matches!(
            built.origins.get(name),
            Some(
                Origin::Interpreter { .. }
                    | Origin::EnvConfig { .. }
                    | Origin::ConfigEnv { .. }
                    | Origin::Anchor { .. }
                    | Origin::Kiwi
            )
        ) && !filter.is_blocked(name)
    };
    // A link rye refuses for its content (R706): shown on the link, as `kiwi run` refuses it.
    let stale = |l: &Arc<Item>| {
        kiwi_kernel::trust::audit::stale_rye_signature(l)
            .map(|d| format!("{}: {}", d.code, d.message))
    };
    if as_json {
        let links_json: Vec<_> = links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                json!({
                    "id": l.id, "space": l.space, "path": l.path,
                    "resolution": resolution_of(i).map(trail_json),
                    "stale_signature": stale(l),
                    "executor_note": kiwi_kernel::chain::ryeos_executor_note(&ws, l),
                })
            })
            .collect();
        let vars: serde_json::Map<String, serde_json::Value> = built
            .vars
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if chain_defined(k) {
                        json!(secrets.redact(v))
                    } else {
                        serde_json::Value::Null
                    },
                )
            })
            .collect();
        let out = json!({
            "tool": tool.id,
            "script": script,
            "chain": links_json,
            "broken": broken,
            "environment": vars,
            "origins": built.origins,
            "passed_blocked": built.passed_blocked,
            "dotenv_blocked": built.dotenv_blocked.iter().map(|b| json!({
                "path": b.path, "name": b.name, "references": b.references, "code": "E411",
                "message": b.message(),
            })).collect::<Vec<_>>(),
            "execution": match &execution {
                None => serde_json::Value::Null,
                Some(Ok(c)) => c.clone(),
                Some(Err(e)) => json!({ "error": e }),
            },
        });
        let out = secrets.redact_json(out);
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("{} ({} space)", tool.id, tool.space);
        println!("  {}", tool.path.display());
        if let Some(sp) = &script {
            println!(
                "  a script of the skill {} ({}): {}",
                sp.skill,
                sp.skill_file.display(),
                sp.reason
            );
        }
        println!(
            "\nchain: {}",
            links
                .iter()
                .map(|l| l.id.as_str())
                .collect::<Vec<_>>()
                .join(" -> ")
        );
        if let Some(b) = &broken {
            println!("  broken: {}", secrets.redact(b));
        }
        for (i, l) in links.iter().enumerate() {
            println!(
                "\n[{}] {} ({} space) {}",
                i + 1,
                l.id,
                l.space,
                l.path.display()
            );
            if let Some(note) = stale(l) {
                println!("    {note}");
            }
            if let Some(note) = kiwi_kernel::chain::ryeos_executor_note(&ws, l) {
                println!("    {note}");
            }
            if let Some(r) = resolution_of(i) {
                println!("    interpreter {} ({}):", r.var, r.resolver);
                for (k, c) in r.trail.iter().enumerate() {
                    let mark = match (&r.outcome, c.found) {
                        (Outcome::Found { index }, _) if *index == k => "✓ used",
                        (_, true) => "✓ found",
                        _ => "✗ not found",
                    };
                    let note = c
                        .note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default();
                    println!("      {:<8} {}  {mark}{note}", c.location, c.path.display());
                }
                match &r.outcome {
                    Outcome::Found { .. } => println!("    → {}", r.value.as_deref().unwrap_or("")),
                    Outcome::Fallback => {
                        println!("    → fallback {}", r.value.as_deref().unwrap_or(""))
                    }
                    Outcome::Unresolved => println!("    → unresolved: {} stays unset", r.var),
                }
            }
        }
        println!("\nenvironment ({} variables):", built.vars.len());
        for (k, v) in &built.vars {
            let origin = match built.origins.get(k) {
                Some(Origin::Base) => "from the filtered environment".to_string(),
                Some(Origin::Dotenv { path }) => format!("from {}", path.display()),
                Some(Origin::Interpreter { link }) => {
                    format!("interpreter of {}", links[n - 1 - link].id)
                }
                Some(Origin::EnvConfig { link }) => {
                    format!("ENV_CONFIG.env of {}", links[n - 1 - link].id)
                }
                Some(Origin::ConfigEnv { link }) => {
                    format!("CONFIG.env of {}", links[n - 1 - link].id)
                }
                Some(Origin::Anchor { link }) => {
                    format!("anchor of {}", links[n - 1 - link].id)
                }
                Some(Origin::Kiwi) => "kiwi: no bytecode written into a space".to_string(),
                None => String::new(),
            };
            if chain_defined(k) {
                println!("  {k}={}  ({origin})", secrets.redact(v));
            } else {
                println!("  {k}  ({origin})");
            }
        }
        for name in &built.passed_blocked {
            println!("  note: this tool receives {name}, which the filter blocks by default");
        }
        for b in &built.dotenv_blocked {
            println!("  note: {}", b.message());
        }
        match &execution {
            None => {}
            Some(Ok(c)) => {
                println!(
                    "\nexecution: {} — {} ({})",
                    c["environment"].as_str().unwrap_or("?"),
                    c["description"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                );
                // The mount plan: what the tool can read, write and reach.
                if let Ok(mounts) = serde_json::from_value::<
                    Vec<kiwi_kernel::exec::environments::mounts::Mount>,
                >(c["mounts"].clone())
                {
                    if !mounts.is_empty() {
                        println!("mounts:");
                        for line in kiwi_kernel::exec::environments::mounts::describe(&mounts) {
                            println!("  {line}");
                        }
                    }
                }
            }
            Some(Err(e)) => println!(
                "\nexecution: cannot run here: {}",
                secrets.redact(&e.message)
            ),
        }
    }
    Ok(if broken.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
