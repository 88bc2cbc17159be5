//! `kiwi-bench run`: the overhead of `kiwi run` over spawning the interpreter directly, and
//! the peak memory of `kiwi run` while a tool floods its stdout.

use crate::{ms, percentile, Figure, Value as Fig};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TRIVIAL: &str = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__tool_description__ = "Print ok"

if __name__ == "__main__":
    print("ok")
"#;

const FLOOD: &str = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__tool_description__ = "Print many megabytes"
CONFIG_SCHEMA = {"type": "object", "properties": {"mb": {"type": "integer"}}}

import json, sys

if __name__ == "__main__":
    mb = json.loads(sys.argv[sys.argv.index("--params") + 1]).get("mb", 200)
    line = b"x" * 999 + b"\n"
    block = line * 1024
    out = sys.stdout.buffer
    total = mb * 1000 * 1000
    for _ in range(total // len(block)):
        out.write(block)
    out.write(block[: total % len(block)])
    out.flush()
"#;

/// Run a command to its end with stdout drained, and require success; (wall time, kiwi's
/// own peak RSS in KiB when `memory`, else 0, stdout bytes).
fn run_measured(cmd: &mut Command, memory: bool) -> Result<(Duration, u64, u64)> {
    let m = kiwi_bench::peak::run_drained(cmd, memory).context("spawning")?;
    if !m.status.success() {
        bail!("the command failed ({})", m.status);
    }
    Ok((m.elapsed, m.peak_kib.unwrap_or(0), m.stdout_bytes))
}

/// The interpreter `python3` resolves to, past shims (pyenv's start varies by tens of
/// milliseconds): its folder goes first on the PATH of both sides of the comparison.
fn real_python_dir() -> Option<std::path::PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let exe = String::from_utf8(out.stdout).ok()?;
    let exe = std::fs::canonicalize(exe.trim()).ok()?;
    Some(exe.parent()?.to_path_buf())
}

/// `kiwi run` of a trivial Python tool over running the same command directly (median of
/// interleaved runs, ms): what `real_bench` reports beside the bare interpreter.
pub fn overhead(kiwi: &Path, runs: usize) -> Result<f64> {
    let rows = run(kiwi, runs, 1)?;
    match rows.first().map(|r| r.median) {
        Some(Fig::Ms(over)) => Ok(over),
        _ => bail!("no run overhead measured"),
    }
}

pub fn run(kiwi: &Path, runs: usize, flood_mb: usize) -> Result<Vec<Figure>> {
    let dir = crate::scratch(&format!("kiwi-bench-run-{}", std::process::id()))?;
    let tools = dir.join(".ai/tools/bench");
    std::fs::create_dir_all(&tools)?;
    std::fs::create_dir_all(dir.join("user"))?;
    std::fs::write(tools.join("trivial.py"), TRIVIAL)?;
    std::fs::write(tools.join("flood.py"), FLOOD)?;
    let path = match (real_python_dir(), std::env::var_os("PATH")) {
        (Some(d), Some(p)) => {
            std::env::join_paths(std::iter::once(d).chain(std::env::split_paths(&p)))?
        }
        (_, p) => p.unwrap_or_default(),
    };
    let kiwi_cmd = |args: &[&str]| {
        let mut c = Command::new(kiwi);
        c.env("PATH", &path)
            .args(args)
            .arg("--project")
            .arg(&dir)
            .env("KIWI_USERSPACE_DIR", dir.join("user"));
        c
    };

    // What kiwi would run, to run the very same thing directly.
    let plan = kiwi_cmd(&["run", "bench/trivial", "--dry-run", "--json"])
        .output()
        .context("kiwi run --dry-run")?;
    if !plan.status.success() {
        bail!(
            "kiwi run --dry-run failed: {}",
            String::from_utf8_lossy(&plan.stderr)
        );
    }
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout)?;
    let argv: Vec<String> = plan["command"]
        .as_array()
        .context("the plan has no command")?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let Some((program, args)) = argv.split_first() else {
        bail!("empty command");
    };

    let mut via_kiwi = Vec::with_capacity(runs);
    let mut direct = Vec::with_capacity(runs);
    let mut planning = Vec::with_capacity(runs);
    let mut ratios = Vec::with_capacity(runs);
    let direct_cmd = || {
        let mut c = Command::new(program);
        c.args(args).current_dir(&dir).env("PATH", &path);
        c
    };
    // Warm up both (page cache, pyc files).
    run_measured(&mut kiwi_cmd(&["run", "bench/trivial"]), false)?;
    run_measured(&mut direct_cmd(), false)?;
    for i in 0..runs {
        // Interleaved, alternating which goes first: both see the same machine.
        let (tk, td) = if i % 2 == 0 {
            let tk = run_measured(&mut kiwi_cmd(&["run", "bench/trivial"]), false)?.0;
            (tk, run_measured(&mut direct_cmd(), false)?.0)
        } else {
            let td = run_measured(&mut direct_cmd(), false)?.0;
            let tk = run_measured(&mut kiwi_cmd(&["run", "bench/trivial"]), false)?.0;
            (tk, td)
        };
        via_kiwi.push(tk);
        direct.push(td);
        ratios.push(tk.as_secs_f64() / td.as_secs_f64());
        let (t, _, _) = run_measured(&mut kiwi_cmd(&["run", "bench/trivial", "--dry-run"]), false)?;
        planning.push(t);
    }
    via_kiwi.sort();
    direct.sort();
    planning.sort();
    ratios.sort_by(f64::total_cmp);
    let ratio = |p: f64| ratios[((ratios.len() - 1) as f64 * p).round() as usize];
    let p = ms(percentile(&planning, 0.5));
    let k = ms(percentile(&via_kiwi, 0.5));
    let d = ms(percentile(&direct, 0.5));
    println!("run of a trivial Python tool, {runs} runs each, interleaved (medians): interpreter directly {d:.2} ms ({program}); kiwi run {k:.2} ms; overhead {:.2} ms; kiwi run --dry-run (start, load, plan) {p:.2} ms", k - d);

    // Memory: kiwi's own peak (the tool's is not counted), idle then flooded.
    let mut idle_rss = 0;
    for _ in 0..3 {
        idle_rss = idle_rss.max(run_measured(&mut kiwi_cmd(&["run", "bench/trivial"]), true)?.1);
    }
    let mb = flood_mb.to_string();
    let (t, flood_rss, bytes) = run_measured(
        &mut kiwi_cmd(&["run", "bench/flood", "--param", &format!("mb={mb}")]),
        true,
    )?;
    println!(
        "tool printing {flood_mb} MB through kiwi run: {:.1} MB passed through in {:.2} s; peak RSS {:.1} MB (idle run {:.1} MB)",
        bytes as f64 / 1e6,
        t.as_secs_f64(),
        flood_rss as f64 / 1024.0,
        idle_rss as f64 / 1024.0,
    );
    // The same flood through `kiwi mcp`: the answer an agent gets (issue 26: capped at
    // mcp.max_answer_bytes, the whole kept as a resource), its size and time.
    let mut mcp = Command::new(kiwi);
    mcp.env("PATH", &path)
        .args(["mcp", "--project"])
        .arg(&dir)
        .env("KIWI_USERSPACE_DIR", dir.join("user"));
    let mut client = crate::mcp_client::McpClient::spawn(mcp)?;
    let t0 = std::time::Instant::now();
    let answer = client.request(
        "tools/call",
        serde_json::json!({"name": "execute", "arguments": {"item_type": "tool", "action": "run",
            "item_id": "bench/flood", "parameters": {"mb": flood_mb}}}),
    )?;
    let mcp_time = t0.elapsed();
    drop(client);
    let answer_bytes = serde_json::to_string(&answer)?.len();
    let written = answer["result"]["structuredContent"]["result"]["stdout_bytes"]
        .as_u64()
        .unwrap_or(0);
    println!(
        "tool printing {flood_mb} MB through kiwi mcp: {:.1} MB written, an answer of {answer_bytes} bytes (text and structuredContent) in {:.2} s",
        written as f64 / 1e6,
        mcp_time.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let answer_kb = answer_bytes as f64 / 1024.0;
    let above = flood_rss.saturating_sub(idle_rss) as f64 / 1024.0;
    let over = k - d;
    Ok(vec![
        Figure {
            name: "run overhead (kiwi run - direct)".into(),
            workload: format!("{runs} runs"),
            median: Fig::Ms(over),
            p99: None,
            target: format!("under 2 ms (direct: {d:.1} ms)"),
            met: Some(over < 2.0),
        },
        Figure {
            name: "run ratio (kiwi run / direct)".into(),
            workload: format!("{runs} pairs"),
            median: Fig::Ratio(ratio(0.5)),
            p99: Some(Fig::Ratio(ratio(0.99))),
            target: format!("under {:.3}x (2 ms over {d:.1} ms)", (d + 2.0) / d),
            met: Some(ratio(0.5) < (d + 2.0) / d),
        },
        Figure {
            name: "run --dry-run (start, load, plan)".into(),
            workload: format!("{runs} runs"),
            median: Fig::Ms(p),
            p99: Some(Fig::Ms(ms(percentile(&planning, 0.99)))),
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "MCP answer of a flooding run".into(),
            workload: format!("{flood_mb} MB"),
            median: Fig::Kb(answer_kb),
            p99: None,
            target: "under 34 KB (16 KB cap, sent as text and structuredContent)".into(),
            met: Some(answer_kb < 34.0),
        },
        Figure {
            name: "MCP run of a flooding tool".into(),
            workload: format!("{flood_mb} MB"),
            median: Fig::Ms(ms(mcp_time)),
            p99: None,
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "memory during a flood, above idle".into(),
            workload: format!("{flood_mb} MB"),
            median: Fig::Mb(above),
            p99: None,
            target: "under 50 MB above idle".into(),
            met: Some(above < 50.0),
        },
    ])
}
