//! `kiwi-bench mcp`: spawn of `kiwi mcp` to the `tools/list` answer, spawn to the first
//! `search` answer (with and without the index kept on disk), and warm `search` latency over a
//! generated workspace (medians of repeated runs).

use crate::mcp_client::McpClient;
use crate::{measure, ms, percentile, workload, Figure, Value as Fig};
use anyhow::{bail, Result};
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// A `kiwi mcp` of a generated project, with the bench's own user space.
fn spawn(kiwi: &Path, project: &Path) -> Result<McpClient> {
    let mut cmd = Command::new(kiwi);
    cmd.args(["mcp", "--project"])
        .arg(project)
        // A user space of the bench's own: the same items (none) and the same index cache
        // in every run, whatever the machine's `~/.ai` holds.
        .env("KIWI_USERSPACE_DIR", userspace(project))
        .env_remove("AI_USER_SPACE");
    McpClient::spawn(cmd)
}

/// The bench's user space for a generated workspace (next to it).
pub(crate) fn userspace(project: &Path) -> std::path::PathBuf {
    let mut name = project.file_name().unwrap_or_default().to_os_string();
    name.push("-userspace");
    project.with_file_name(name)
}

/// Spawn a server and time its first `search` answer from the spawn (the index is built, or
/// read from the user space's cache, by then); with the RSS at that moment.
fn first_search(kiwi: &Path, dir: &Path) -> Result<(std::time::Duration, f64)> {
    first_search_then(kiwi, dir, std::time::Duration::ZERO)
}

/// What [`first_searches`] measures.
pub struct FirstSearches {
    /// Spawn to the first `search` answer, the kept index removed (median, ms).
    pub no_index: f64,
    /// The same, from the index the previous server kept (median, ms).
    pub kept_index: f64,
    /// RSS once a `load` has loaded the workspace (MB).
    pub rss_loaded: f64,
}

/// The first search of a fresh server over a real-shaped project (`real_bench`), without and
/// with the kept index, and the RSS of a loaded server.
pub fn first_searches(
    kiwi: &Path,
    dir: &Path,
    cold_runs: usize,
    kept_runs: usize,
) -> Result<FirstSearches> {
    let cache = userspace(dir).join("cache");
    let search = |linger: std::time::Duration| -> Result<(std::time::Duration, String)> {
        let t0 = std::time::Instant::now();
        let mut s = spawn(kiwi, dir)?;
        let r = s.request(
            "tools/call",
            json!({"name": "search", "arguments": {"item_type": "tool", "query": "read file"}}),
        )?;
        let took = t0.elapsed();
        let first = r["result"]["structuredContent"]["results"][0]["id"]
            .as_str()
            .map(str::to_string);
        let Some(first) = first else {
            bail!("the first search found nothing: {r}");
        };
        std::thread::sleep(linger);
        Ok((took, first))
    };
    let clear = || {
        for e in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    };
    let mut cold = Vec::new();
    for _ in 0..cold_runs.max(1) {
        clear();
        cold.push(search(std::time::Duration::ZERO)?.0);
    }
    let linger = std::time::Duration::from_millis(1000 + cold[0].as_millis() as u64 * 3);
    let mut id = String::new();
    for _ in 0..2 {
        id = search(linger)?.1;
    }
    let mut kept = Vec::new();
    for _ in 0..kept_runs.max(1) {
        kept.push(search(std::time::Duration::ZERO)?.0);
    }
    cold.sort();
    kept.sort();
    let mut s = spawn(kiwi, dir)?;
    let r = s.request(
        "tools/call",
        json!({"name": "load", "arguments": {"item_type": "tool", "item_id": id}}),
    )?;
    if r["result"]["isError"] != json!(false) {
        bail!("load failed: {r}");
    }
    Ok(FirstSearches {
        no_index: ms(percentile(&cold, 0.5)),
        kept_index: ms(percentile(&kept, 0.5)),
        rss_loaded: rss_mb(s.pid()),
    })
}

/// [`first_search`], keeping the server `linger` longer (to write what it keeps on disk).
fn first_search_then(
    kiwi: &Path,
    dir: &Path,
    linger: std::time::Duration,
) -> Result<(std::time::Duration, f64)> {
    let t0 = std::time::Instant::now();
    let mut s = spawn(kiwi, dir)?;
    let r = s.request(
        "tools/call",
        json!({"name": "search", "arguments": {"item_type": "tool", "query": "process files"}}),
    )?;
    let took = t0.elapsed();
    if r["result"]["isError"] != json!(false) {
        bail!("search failed: {r}");
    }
    if r["result"]["structuredContent"]["results"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        bail!("the first search found nothing: {r}");
    }
    let rss = rss_mb(s.pid());
    std::thread::sleep(linger);
    Ok((took, rss))
}

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// Per size: spawn to `tools/list`, warm `search` latency, RSS once the index is built;
/// then how search latency grows between sizes.
pub fn run(kiwi: &Path, sizes: &[usize], runs: usize) -> Result<Vec<Figure>> {
    let mut rows = Vec::new();
    let mut searches: Vec<(usize, f64)> = Vec::new();
    for &n in sizes {
        let dir = workload(n)?;
        let times = measure(runs.min(20), || {
            let mut s = spawn(kiwi, &dir)?;
            let r = s.request("tools/list", json!({}))?;
            if r["result"]["tools"].as_array().map(Vec::len) != Some(4) {
                bail!("unexpected tools/list answer: {r}");
            }
            Ok(())
        })?;
        let median = ms(percentile(&times, 0.5));
        rows.push(Figure {
            name: "MCP spawn to tools/list".into(),
            workload: format!("{n} items"),
            median: Fig::Ms(median),
            p99: Some(Fig::Ms(ms(percentile(&times, 0.99)))),
            target: "under 20 ms".into(),
            met: Some(median < 20.0),
        });
        // The first search of a fresh server: without the cache (removed before each run), then
        // with the cache the previous run left.
        let cache = userspace(&dir).join("cache");
        let cold_runs = if n >= 100_000 { 3 } else { 5 };
        let mut cold = Vec::new();
        let clear = || {
            for e in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        };
        for _ in 0..cold_runs {
            clear();
            cold.push(first_search(kiwi, &dir)?.0);
        }
        // Leave the cache written, if the server keeps one (twice: the first write may make
        // the cache folder, which changes the user space's time).
        for _ in 0..2 {
            let linger = std::time::Duration::from_millis(if n >= 100_000 { 5000 } else { 1000 });
            let _ = first_search_then(kiwi, &dir, linger)?;
        }
        let mut rss_first: Vec<f64> = Vec::new();
        let mut warm_first = Vec::new();
        for _ in 0..runs.clamp(5, 20) {
            let (t, rss) = first_search(kiwi, &dir)?;
            warm_first.push(t);
            rss_first.push(rss);
        }
        cold.sort();
        warm_first.sort();
        rss_first.sort_by(f64::total_cmp);
        for (name, times) in [
            ("MCP spawn to first search, no cache", &cold),
            ("MCP spawn to first search", &warm_first),
        ] {
            let median = ms(percentile(times, 0.5));
            rows.push(Figure {
                name: name.into(),
                workload: format!("{n} items"),
                median: Fig::Ms(median),
                p99: Some(Fig::Ms(ms(percentile(times, 0.99)))),
                target: if n == 10_000 && !name.ends_with("no cache") {
                    "under 50 ms".into()
                } else {
                    "- (10,000: 50 ms)".into()
                },
                met: (n == 10_000 && !name.ends_with("no cache")).then_some(median < 50.0),
            });
        }
        rows.push(Figure {
            name: "MCP RSS at the first search".into(),
            workload: format!("{n} items"),
            median: Fig::Mb(rss_first[rss_first.len() / 2]),
            p99: Some(Fig::Mb(rss_first[rss_first.len() - 1])),
            target: "- (10,000: 60 MB)".into(),
            met: None,
        });
        let mut s = spawn(kiwi, &dir)?;
        let queries = [
            "summarize csv",
            "deploy",
            "format json",
            "reviw code",
            "http status",
        ];
        // Warm up: the index is built by the first search.
        s.request(
            "tools/call",
            json!({"name": "search", "arguments": {"item_type": "directive", "query": "warm"}}),
        )?;
        let mut i = 0;
        let times = measure(runs, || {
            let q = queries[i % queries.len()];
            i += 1;
            let r = s.request(
                "tools/call",
                json!({"name": "search", "arguments": {"item_type": "tool", "query": q}}),
            )?;
            if r["result"]["isError"] != json!(false) {
                bail!("search failed: {r}");
            }
            Ok(())
        })?;
        let median = ms(percentile(&times, 0.5));
        searches.push((n, median));
        rows.push(Figure {
            name: "MCP search, warm".into(),
            workload: format!("{n} items"),
            median: Fig::Ms(median),
            p99: Some(Fig::Ms(ms(percentile(&times, 0.99)))),
            target: if n == 10_000 {
                "under 5 ms".into()
            } else {
                "- (10,000: 5 ms)".into()
            },
            met: (n == 10_000).then_some(median < 5.0),
        });
        // The first answers come from the index kept on disk while the workspace loads in the
        // background: a `load` waits for it, so that this is the memory of a loaded server.
        let r = s.request(
            "tools/call",
            json!({"name": "load", "arguments": {"item_type": "tool", "item_id": "cat0/tool_0"}}),
        )?;
        if r["result"]["isError"] != json!(false) {
            bail!("load failed: {r}");
        }
        let rss = rss_mb(s.pid());
        rows.push(Figure {
            name: "MCP RSS (workspace loaded)".into(),
            workload: format!("{n} items"),
            median: Fig::Mb(rss),
            p99: None,
            target: if n == 10_000 {
                "under 60 MB".into()
            } else {
                "- (10,000: 60 MB)".into()
            },
            met: (n == 10_000).then_some(rss < 60.0),
        });
    }
    for w in searches.windows(2) {
        let ((a, ta), (b, tb)) = (w[0], w[1]);
        let grow = tb / ta.max(1e-6);
        let size = b as f64 / a as f64;
        rows.push(Figure {
            name: "MCP search growth (latency ratio)".into(),
            workload: format!("{a} -> {b} items"),
            median: Fig::Ratio(grow),
            p99: None,
            target: format!("less than linear (< {size:.0}x)"),
            met: Some(grow < size),
        });
    }
    Ok(rows)
}
