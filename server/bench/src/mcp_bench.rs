//! `kiwi-bench mcp`: spawn of `kiwi mcp` to the `tools/list` answer, and warm `search`
//! latency over a generated workspace (medians of repeated runs).

use crate::{generate, measure, report};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn spawn(kiwi: &Path, project: &Path) -> Result<Server> {
        let mut child = Command::new(kiwi)
            .args(["mcp", "--project"])
            .arg(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start kiwi mcp")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut s = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(s)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next += 1;
        let id = self.next;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        self.stdin.flush()?;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("kiwi mcp closed its output");
            }
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == json!(id) {
                return Ok(v);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(kiwi: &Path, sizes: &[usize], runs: usize) -> Result<()> {
    println!(
        "{:<28} {:>8} {:>12} {:>12}",
        "figure", "items", "median", "p99"
    );
    for &n in sizes {
        let dir = std::env::temp_dir().join(format!("kiwi-bench-{n}"));
        if !dir.join(".ai").is_dir() {
            generate(&dir, n)?;
        }
        let times = measure(runs.min(10), || {
            let mut s = Server::spawn(kiwi, &dir)?;
            let r = s.request("tools/list", json!({}))?;
            if r["result"]["tools"].as_array().map(Vec::len) != Some(4) {
                bail!("unexpected tools/list answer: {r}");
            }
            Ok(())
        })?;
        report("mcp spawn to tools/list", n, &times);
        let mut s = Server::spawn(kiwi, &dir)?;
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
        report("mcp search (warm)", n, &times);
    }
    Ok(())
}
