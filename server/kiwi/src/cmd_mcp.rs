//! `kiwi mcp`, `kiwi search`, `kiwi init`.

use crate::cmd_env::project_for;
use anyhow::{bail, Context, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::service::{SearchArgs, Service, Session};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::term::out;

/// How long `kiwi mcp` waits at exit for the processes of cancelled runs to be gone.
const SHUTDOWN_BOUND: std::time::Duration = std::time::Duration::from_secs(15);

pub fn mcp(project: Option<PathBuf>) -> Result<ExitCode> {
    let level = match std::env::var("KIWI_LOG").ok().as_deref() {
        Some("debug") => tracing_subscriber::filter::LevelFilter::DEBUG,
        Some("info") => tracing_subscriber::filter::LevelFilter::INFO,
        Some("trace") => tracing_subscriber::filter::LevelFilter::TRACE,
        _ => tracing_subscriber::filter::LevelFilter::WARN,
    };
    // Logs go to stderr only: stdout carries the protocol.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(level)
        .try_init();
    let project = match project {
        Some(p) => project_for(Some(&p))?,
        // The folder the client started the server in, when it is a project's (a client
        // such as Claude Code starts `kiwi mcp` in the project; one with skills and no `.ai/`
        // is a project: its skills were not served).
        None => std::env::current_dir()
            .ok()
            .filter(|d| kiwi_kernel::context::is_project_folder(d)),
    };
    let service = Service::new(project, Host::from_process());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = rt.block_on(async {
        // SIGTERM, SIGINT or SIGHUP (the client stopping the server) end the session the
        // way a closed stdin does.
        let served = tokio::select! {
            r = kiwi_mcp::serve_stdio(service) => r.map_err(|e| e.to_string()),
            _ = crate::cmd_run::interrupted() => Ok(()),
        };
        // Every tool still running is cancelled, and its processes are gone before kiwi
        // exits (bounded: SIGTERM, SIGKILL after the grace period, a container's removal).
        kiwi_kernel::exec::process::stop_all(SHUTDOWN_BOUND).await;
        served
    });
    // The search index built in this session reaches the disk for the next server (bounded
    // well under the SDKs' shutdown grace: close stdin, wait 2 s, SIGTERM).
    kiwi_kernel::search::cache::wait_for_writes(std::time::Duration::from_millis(1500));
    // A read of stdin may still be under way on the blocking pool: do not wait for it.
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    served.map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `kiwi mcp --attach`: stdio bridged to the agent endpoint of the editor's language server
/// (`--socket`, else the one serving the project's folder); a clear error when none runs.
pub fn attach(project: Option<PathBuf>, socket: Option<PathBuf>) -> Result<ExitCode> {
    let socket = match socket {
        Some(s) => s,
        None => {
            let dir = match project {
                Some(p) => p,
                None => std::env::current_dir().context("no working directory")?,
            };
            kiwi_mcp::attach::find_socket(&dir).map_err(|e| anyhow::anyhow!(e))?
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let r = rt.block_on(kiwi_mcp::attach::bridge(&socket));
    // A read of stdin may still be under way on the blocking pool: do not wait for it.
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    r.map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}

pub struct SearchOptions<'a> {
    pub query: &'a str,
    pub item_type: Option<&'a str>,
    pub source: Option<&'a str>,
    pub limit: usize,
    pub project: Option<&'a Path>,
    pub json: bool,
}

pub fn search(o: &SearchOptions) -> Result<ExitCode> {
    let project = project_for(o.project)?;
    let service = Service::new(project.clone(), Host::from_process());
    let types: Vec<&str> = match o.item_type {
        Some(t) => {
            if ItemType::parse(t).is_none() {
                bail!("--type `{t}` is not an item type; use directive, tool, knowledge, system or skill");
            }
            vec![t]
        }
        None => vec!["directive", "tool", "knowledge", "system"],
    };
    let session = Session::default();
    let mut all = Vec::new();
    // Registries: `registry` (every configured one), `registry:NAME`, or `all` (local too).
    let registry = matches!(o.source, Some("registry" | "all"))
        || o.source.is_some_and(|s| s.starts_with("registry:"));
    if registry {
        let reg_types: Vec<ItemType> = types
            .iter()
            .filter_map(|t| ItemType::parse(t))
            .filter(|t| t.folder().is_some())
            .collect();
        all.extend(crate::cmd_registry::search_hits(
            project.as_deref(),
            o.source.unwrap_or("registry"),
            &reg_types,
            o.query,
            o.limit,
        )?);
    }
    let local: Vec<&str> = if registry && o.source != Some("all") {
        Vec::new()
    } else {
        types
    };
    let local_source = o.source.filter(|s| *s != "all");
    for t in local {
        let r = service
            .search(
                &session,
                &SearchArgs {
                    item_type: t.to_string(),
                    query: o.query.to_string(),
                    source: local_source.map(str::to_string),
                    limit: Some(o.limit),
                    project_path: None,
                    ..Default::default()
                },
            )
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        if let Some(results) = r.get("results").and_then(|v| v.as_array()) {
            all.extend(results.iter().cloned());
        }
    }
    all.sort_by(|a, b| {
        let s = |v: &serde_json::Value| v.get("score").and_then(|s| s.as_f64()).unwrap_or(0.0);
        s(b).total_cmp(&s(a))
    });
    all.truncate(o.limit);
    let code = print_hits(o, &all)?;
    // The index built for this run is written in the background: the next run reads it.
    kiwi_kernel::search::cache::wait_for_writes(CACHE_WRITE_BOUND);
    Ok(code)
}

/// How long a command waits at exit for the search index it built to reach the disk.
const CACHE_WRITE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

fn print_hits(o: &SearchOptions, all: &[serde_json::Value]) -> Result<ExitCode> {
    if o.json {
        out(&serde_json::to_string_pretty(
            &serde_json::json!({"query": o.query, "results": all}),
        )?);
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        out(&format!("no item matches `{}`", o.query));
        return Ok(ExitCode::from(1));
    }
    for h in all {
        let g = |k: &str| h.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let shadow = match h.get("shadowed_by").and_then(|v| v.as_str()) {
            Some(s) => format!(" (shadowed by {s})"),
            None => String::new(),
        };
        out(&format!(
            "{:>7.3}  {:<9} {:<40} [{}]{shadow}  {}",
            h.get("score").and_then(|v| v.as_f64()).unwrap_or(0.0),
            g("item_type"),
            g("id"),
            g("source"),
            g("description"),
        ));
        if !g("versions").is_empty() {
            out(&format!("{:>7}  versions: {}", "", g("versions")));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn init(force: bool, json: bool) -> Result<ExitCode> {
    let host = Host::from_process();
    let r = kiwi_kernel::init::init_userspace(&host, force)
        .with_context(|| format!("cannot initialise {}", host.user_space().display()))?;
    if json {
        out(&serde_json::to_string_pretty(&r)?);
    } else {
        out(&r.message);
        for f in &r.written {
            out(&format!("  wrote {f}"));
        }
        for f in &r.left_alone {
            out(&format!("  left alone (you changed it): {f}"));
        }
        for f in &r.missing {
            out(&format!("  missing (not re-created without --force): {f}"));
        }
        for f in &r.missing_folders {
            out(&format!(
                "  missing folder (not re-created without --force): {f}/"
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}
