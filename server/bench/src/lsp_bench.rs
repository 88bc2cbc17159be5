//! `kiwi-bench lsp`: the language server under load. A generated project of N items is
//! indexed; then a 2,000-line directive is edited (didChange -> its publishDiagnostics) and
//! hovered, an exact id is asked of `workspace/symbol` (first, building its index, and warm),
//! and the server's RSS is read after indexing.

use crate::{generate, ms, percentile, write, Figure, Value as Fig};
use anyhow::{bail, Context, Result};
use kiwi_lsp::wire::client::{Client, Peer};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// A spawned `kiwi lsp` and the shared wire client (`kiwi_lsp::wire::client`) over its stdio.
struct Lsp {
    child: Child,
    client: Client<ChildStdin>,
}

/// A server left by an error (or by [`indexing`]) is ended, not left behind.
impl Drop for Lsp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bound of one wait.
const BOUND: Duration = Duration::from_secs(300);

impl Lsp {
    fn start(kiwi: &Path, user: &Path) -> Result<Lsp> {
        let mut child = Command::new(kiwi)
            .arg("lsp")
            .env("KIWI_USERSPACE_DIR", user)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting kiwi lsp")?;
        let stdout = child.stdout.take().context("stdout")?;
        let stdin = child.stdin.take().context("stdin")?;
        Ok(Lsp {
            child,
            client: Client::new(Peer::Lsp, stdout, stdin, 1),
        })
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<()> {
        self.client
            .notify(method, params)
            .map_err(anyhow::Error::msg)
    }

    /// Send a request and wait for its answer (server requests are answered on the way).
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.client
            .request(method, params, BOUND)
            .map_err(anyhow::Error::msg)
    }

    /// Wait for a notification that satisfies `pred`.
    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Result<Value> {
        let m = self
            .client
            .wait_note(BOUND, |m| {
                // The server's own account of the indexing.
                if m["method"] == "window/logMessage" {
                    if let Some(msg) = m["params"]["message"].as_str() {
                        if msg.starts_with("kiwi: indexed") {
                            println!("{msg}");
                        }
                    }
                }
                pred(m)
            })
            .map_err(anyhow::Error::msg)?;
        // Notifications not waited for are not kept.
        self.client.inbox.notes.clear();
        Ok(m)
    }

    fn rss_kb(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0)
    }
}

/// A directive of about `lines` lines: many steps, each calling a tool of the generated
/// project (`n_tool` tools, `tool_{t}` in `cat{t % 50}`).
fn big_directive(lines: usize, n_tool: usize) -> String {
    let mut s = String::from(
        "# Big\n\n```xml\n<directive name=\"big\" version=\"1.0.0\">\n  <metadata>\n    <description>A long directive</description>\n    <category>big</category>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"cat*/*\"/>\n    </permissions>\n  </metadata>\n  <inputs>\n    <input name=\"target\" type=\"string\" required=\"true\">What to process</input>\n  </inputs>\n  <process>\n",
    );
    let mut i = 0;
    while s.lines().count() + 8 < lines {
        s.push_str(&format!(
            "    <step name=\"s{i}\">\n      <description>Step {i} on {{input:target}}</description>\n      <execute item_type=\"tool\" item_id=\"cat{}/tool_{}\">\n        <param name=\"path\" value=\"{{input:target}}\"/>\n      </execute>\n    </step>\n",
            ((i * 7) % n_tool.max(1)) % 50,
            (i * 7) % n_tool.max(1)
        ));
        i += 1;
    }
    s.push_str("  </process>\n</directive>\n```\n");
    s
}

/// `kiwi lsp` on a project: `initialize` to the end of its indexing progress, and the RSS
/// (MB) then.
pub fn indexing(kiwi: &Path, project: &Path, user: &Path) -> Result<(Duration, f64)> {
    let mut lsp = Lsp::start(kiwi, user)?;
    let t0 = Instant::now();
    let root = format!("file://{}", project.display());
    lsp.request(
        "initialize",
        json!({"processId": null, "rootUri": root,
               "workspaceFolders": [{"uri": root, "name": "bench"}],
               "capabilities": {"window": {"workDoneProgress": true},
                                "general": {"positionEncodings": ["utf-8"]}}}),
    )?;
    lsp.notify("initialized", json!({}))?;
    lsp.wait(|m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["kind"] == "end"
            && m["params"]["token"]
                .as_str()
                .is_some_and(|t| t.starts_with("kiwi-index"))
    })?;
    let indexed = t0.elapsed();
    Ok((indexed, lsp.rss_kb() as f64 / 1024.0))
}

pub fn run(kiwi: &Path, items: usize, runs: usize) -> Result<Vec<Figure>> {
    let dir = crate::scratch(&format!("kiwi-bench-lsp-{items}"))?;
    if !dir.join(".ai").is_dir() {
        generate(&dir, items)?;
    }
    let big = dir.join(".ai/directives/big/big.md");
    let text = big_directive(2000, items * 35 / 100);
    write(&big, &text)?;
    let user = dir.join("user-space");
    std::fs::create_dir_all(&user)?;
    let uri = format!("file://{}", big.display());

    let mut lsp = Lsp::start(kiwi, &user)?;
    let t0 = Instant::now();
    lsp.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", dir.display()),
               "workspaceFolders": [{"uri": format!("file://{}", dir.display()), "name": "bench"}],
               "capabilities": {"window": {"workDoneProgress": true},
                                "general": {"positionEncodings": ["utf-8"]}}}),
    )?;
    lsp.notify("initialized", json!({}))?;
    lsp.wait(|m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["kind"] == "end"
            && m["params"]["token"]
                .as_str()
                .is_some_and(|t| t.starts_with("kiwi-index"))
    })?;
    let indexed = t0.elapsed();
    let rss = lsp.rss_kb();

    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    )?;
    let u = uri.clone();
    lsp.wait(move |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(u)
    })?;

    // didChange -> publishDiagnostics of that version.
    let mut change = Vec::with_capacity(runs);
    let line = text
        .lines()
        .position(|l| l.contains("Step 0 on"))
        .context("step line")?;
    for v in 2..(runs as i64 + 2) {
        let t = Instant::now();
        lsp.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": v},
                   "contentChanges": [{"range": {"start": {"line": line, "character": 19},
                                                  "end": {"line": line, "character": 20}},
                                       "text": format!("{}", v % 10)}]}),
        )?;
        let u = uri.clone();
        lsp.wait(move |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == json!(u)
                && m["params"]["version"] == json!(v)
        })?;
        change.push(t.elapsed());
    }
    change.sort();

    // Hover on `{input:target}` of the first step.
    let col = text
        .lines()
        .nth(line)
        .unwrap_or("")
        .find("{input")
        .unwrap_or(0)
        + 3;
    let mut hover = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = lsp.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}),
        )?;
        hover.push(t.elapsed());
        if r["result"].is_null() {
            bail!("hover returned nothing: {r}");
        }
    }
    hover.sort();

    // Workspace symbols of an exact id, tool 7's (`cat{t % 50}/tool_{t}`; it must come
    // first): the first request builds the index, the next ones use it.
    let want = "cat7/tool_7".to_string();
    let mut symbols = Vec::with_capacity(runs + 1);
    for _ in 0..=runs {
        let t = Instant::now();
        let r = lsp.request("workspace/symbol", json!({"query": want}))?;
        symbols.push(t.elapsed());
        if r["result"][0]["name"] != json!(want) {
            bail!("workspace/symbol {want}: not first in {}", r["result"]);
        }
    }
    let symbols_first = symbols.remove(0);
    symbols.sort();

    lsp.request("shutdown", Value::Null)?;
    lsp.notify("exit", Value::Null)?;
    let _ = lsp.child.wait();

    let lines = text.lines().count();
    let (c50, c99) = (ms(percentile(&change, 0.5)), ms(percentile(&change, 0.99)));
    let h50 = ms(percentile(&hover, 0.5));
    let rss = rss as f64 / 1024.0;
    Ok(vec![
        Figure {
            name: "LSP didChange -> diagnostics".into(),
            workload: format!("{lines} lines"),
            median: Fig::Ms(c50),
            p99: Some(Fig::Ms(c99)),
            target: "median 3 ms, p99 10 ms".into(),
            met: Some(c50 < 3.0 && c99 < 10.0),
        },
        Figure {
            name: "LSP hover, warm".into(),
            workload: format!("{lines} lines"),
            median: Fig::Ms(h50),
            p99: Some(Fig::Ms(ms(percentile(&hover, 0.99)))),
            target: "median 1 ms".into(),
            met: Some(h50 < 1.0),
        },
        Figure {
            name: "LSP workspace symbol, first (index built)".into(),
            workload: format!("{} items", items + 1),
            median: Fig::Ms(ms(symbols_first)),
            p99: None,
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "LSP workspace symbol, warm".into(),
            workload: format!("{} items", items + 1),
            median: Fig::Ms(ms(percentile(&symbols, 0.5))),
            p99: Some(Fig::Ms(ms(percentile(&symbols, 0.99)))),
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "LSP indexing (initialize -> done)".into(),
            workload: format!("{} items", items + 1),
            median: Fig::Ms(ms(indexed)),
            p99: None,
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "LSP RSS (indexed)".into(),
            workload: format!("{} items", items + 1),
            median: Fig::Mb(rss),
            p99: None,
            target: "under 150 MB".into(),
            met: Some(rss < 150.0),
        },
    ])
}
