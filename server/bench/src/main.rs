//! `kiwi-bench`: generates workspaces in the shapes of the corpus and measures the release
//! `kiwi` binary on them. Figures are medians (and p99) of repeated runs, with the workload size.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "kiwi-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a project of N items (directives, tools, knowledge) under DIR.
    Gen {
        dir: PathBuf,
        #[arg(long, default_value_t = 10_000)]
        items: usize,
    },
    /// Time `kiwi check` (cold process each run) on generated workspaces.
    Check {
        /// Workload sizes to generate and measure.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
    },
    /// `kiwi run` of a trivial Python tool against running the interpreter directly (medians
    /// and ratio), and the peak memory of `kiwi run` while a tool prints 200 MB.
    Run {
        #[arg(long, default_value_t = 30)]
        runs: usize,
        /// Megabytes the flooding tool prints.
        #[arg(long, default_value_t = 200)]
        flood_mb: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
    },
    /// `kiwi lsp`: didChange -> publishDiagnostics on a 2,000-line directive and hover latency
    /// (median, p99), indexing time and RSS after indexing a generated project.
    Lsp {
        #[arg(long, default_value_t = 10_000)]
        items: usize,
        #[arg(long, default_value_t = 50)]
        runs: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
    },
    /// `kiwi mcp`: spawn to the `tools/list` answer, and warm `search` latency.
    Mcp {
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 50)]
        runs: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
    },
    /// Time the kernel's parsers per file kind, in process (directives, Python tools,
    /// YAML tools, knowledge), on the files of a generated workspace and the builtin space.
    Parse {
        #[arg(long, default_value_t = 1000)]
        items: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Parse { items, rounds } => parse_bench(items, rounds)?,
        Cmd::Gen { dir, items } => {
            generate(&dir, items)?;
            println!("wrote {items} items under {}", dir.display());
        }
        Cmd::Check { sizes, runs, kiwi } => {
            let kiwi = kiwi.unwrap_or_else(default_kiwi);
            if !kiwi.exists() {
                bail!(
                    "{} not found; build it with `cargo build --release -p kiwi`",
                    kiwi.display()
                );
            }
            println!(
                "{:<28} {:>8} {:>12} {:>12}",
                "figure", "items", "median", "p99"
            );
            for n in sizes {
                let dir = std::env::temp_dir().join(format!("kiwi-bench-{n}"));
                if !dir.join(".ai").is_dir() {
                    generate(&dir, n)?;
                }
                let times = measure(runs, || {
                    let status = Command::new(&kiwi)
                        .args(["check", "--format", "json"])
                        .arg(&dir)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()?;
                    // Exit 1 means "errors found", which the workload has on purpose.
                    if status.code().is_none_or(|c| c > 1) {
                        bail!("kiwi check failed: {status}");
                    }
                    Ok(())
                })?;
                report("check (cold)", n, &times);
            }
        }
        Cmd::Run {
            runs,
            flood_mb,
            kiwi,
        } => {
            let kiwi = kiwi.unwrap_or_else(default_kiwi);
            if !kiwi.exists() {
                bail!(
                    "{} not found; build it with `cargo build --release -p kiwi`",
                    kiwi.display()
                );
            }
            run_bench::run(&kiwi, runs, flood_mb)?;
        }
        Cmd::Lsp { items, runs, kiwi } => {
            let kiwi = kiwi.unwrap_or_else(default_kiwi);
            if !kiwi.exists() {
                bail!(
                    "{} not found; build it with `cargo build --release -p kiwi`",
                    kiwi.display()
                );
            }
            lsp_bench::run(&kiwi, items, runs)?;
        }
        Cmd::Mcp { sizes, runs, kiwi } => {
            let kiwi = kiwi.unwrap_or_else(default_kiwi);
            if !kiwi.exists() {
                bail!(
                    "{} not found; build it with `cargo build --release -p kiwi`",
                    kiwi.display()
                );
            }
            mcp_bench::run(&kiwi, &sizes, runs)?;
        }
    }
    Ok(())
}

mod lsp_bench;
mod mcp_bench;
mod run_bench;

fn default_kiwi() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .map(|d| d.join("kiwi"))
        .unwrap_or_else(|| PathBuf::from("kiwi"))
}

pub fn measure(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<Vec<Duration>> {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed());
    }
    v.sort();
    Ok(v)
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn report(figure: &str, items: usize, sorted: &[Duration]) {
    println!(
        "{figure:<28} {items:>8} {:>10.1}ms {:>10.1}ms",
        percentile(sorted, 0.5).as_secs_f64() * 1e3,
        percentile(sorted, 0.99).as_secs_f64() * 1e3
    );
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// A workspace of `n` items: 50% directives, 35% tools, 15% knowledge, spread over
/// categories, in the shapes of the corpus (a few mistakes included, as in real projects).
pub fn generate(dir: &Path, n: usize) -> Result<()> {
    let ai = dir.join(".ai");
    if ai.exists() {
        std::fs::remove_dir_all(&ai)?;
    }
    let n_dir = n / 2;
    let n_tool = n * 35 / 100;
    let n_know = n - n_dir - n_tool;
    for i in 0..n_tool {
        let cat = format!("cat{}", i % 50);
        write(
            &ai.join(format!("tools/{cat}/tool_{i}.py")),
            &format!(
                r#""""Tool {i}: processes files in category {cat}."""
import argparse
import json

__version__ = "1.{}.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "{cat}"
__tool_description__ = "Process the {cat} files, step {i}"

CONFIG_SCHEMA = {{
    "type": "object",
    "properties": {{
        "path": {{"type": "string", "description": "the file to process"}},
        "limit": {{"type": "integer", "minimum": 1}},
    }},
    "required": ["path"],
}}
CONFIG = {{"timeout": {}, "env": {{"TOOL_MODE": "batch"}}}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--params", default="{{}}")
    args = p.parse_args()
    print(json.dumps({{"ok": True, "params": json.loads(args.params)}}))


if __name__ == "__main__":
    main()
"#,
                i % 7,
                30 + i % 60
            ),
        )?;
    }
    for i in 0..n_dir {
        let cat = format!("cat{}", i % 50);
        let t1 = (i * 7) % n_tool.max(1);
        let t2 = (i * 13 + 1) % n_tool.max(1);
        // One directive in fifty names a tool that does not exist.
        let t2_id = if i % 50 == 0 {
            format!("cat{}/tool_missing_{i}", t2 % 50)
        } else {
            format!("cat{}/tool_{t2}", t2 % 50)
        };
        write(
            &ai.join(format!("directives/{cat}/directive_{i}.md")),
            &format!(
                r#"<!-- kiwi:validated:2026-02-10T02:00:00Z:placeholder -->
# Directive {i}

Runs the {cat} workflow over the given target.

```xml
<directive name="directive_{i}" version="1.0.{}">
  <metadata>
    <description>Process {cat} targets and report the outcome</description>
    <category>{cat}</category>
    <author>bench</author>
    <model tier="balanced" fallback="general"/>
    <limits turns="10" tokens="4096"/>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="cat*/*"/>
      <read resource="filesystem" path="docs/**"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="target" type="string" required="true">What to process</input>
    <input name="limit" type="integer" default="10">How many at most</input>
  </inputs>
  <process>
    <step name="prepare">
      <description>Prepare {{input:target}}</description>
      <execute item_type="tool" item_id="cat{}/tool_{t1}">
        <param name="path" value="{{input:target}}"/>
        <param name="limit" value="{{input:limit}}"/>
      </execute>
    </step>
    <step name="run">
      <execute item_type="tool" item_id="{t2_id}">
        <param name="path" value="{{input:target}}"/>
      </execute>
    </step>
    <step name="report">
      <action><![CDATA[Tell the user what happened to {{input:target}} & why.]]></action>
    </step>
  </process>
  <outputs>
    <success>Processed {{input:target}}</success>
    <failure>Nothing was processed</failure>
  </outputs>
</directive>
```
"#,
                i % 5,
                t1 % 50
            ),
        )?;
    }
    for i in 0..n_know {
        let cat = format!("cat{}", i % 50);
        write(
            &ai.join(format!("knowledge/{cat}/note-{i}.md")),
            &format!(
                "---\nid: note-{i}\ntitle: Note {i} about {cat}\nversion: '1.0.0'\nentry_type: {}\ncategory: {cat}\ntags:\n  - {cat}\n  - bench\nreferences:\n  - note-{}\n---\n\n# Note {i}\n\nSome learning about {cat}, with `code` and a [link](https://example.invalid).\n",
                ["pattern", "learning", "concept", "reference"][i % 4],
                (i + 1) % n_know.max(1)
            ),
        )?;
    }
    Ok(())
}

/// Per-file parse time of each kind: median over rounds of the mean per file.
fn parse_bench(items: usize, rounds: usize) -> Result<()> {
    use kiwi_kernel::ids::{ItemType, Space};
    let dir = std::env::temp_dir().join(format!("kiwi-bench-parse-{items}"));
    if !dir.join(".ai").is_dir() {
        generate(&dir, items)?;
    }
    type Files = Vec<(PathBuf, Vec<u8>)>;
    let mut kinds: Vec<(&str, ItemType, Files)> = vec![
        ("directive", ItemType::Directive, Vec::new()),
        ("python tool", ItemType::Tool, Vec::new()),
        ("yaml tool", ItemType::Tool, Vec::new()),
        ("knowledge", ItemType::Knowledge, Vec::new()),
    ];
    for f in kiwi_kernel::workspace::discover(&dir.join(".ai")) {
        let bytes = std::fs::read(&f.path)?;
        let slot = match (f.item_type, f.path.extension().and_then(|e| e.to_str())) {
            (ItemType::Directive, _) => 0,
            (ItemType::Tool, Some("py")) => 1,
            (ItemType::Tool, _) => 2,
            _ => 3,
        };
        kinds[slot].2.push((f.path, bytes));
    }
    for item in kiwi_kernel::workspace::builtin_items() {
        if item.path.extension().is_some_and(|e| e == "yaml") {
            kinds[2]
                .2
                .push((item.path.clone(), item.text().as_bytes().to_vec()));
        }
    }
    println!("{:<14} {:>7} {:>14}", "kind", "files", "per file");
    for (name, t, files) in &kinds {
        if files.is_empty() {
            continue;
        }
        let mut times = Vec::new();
        for _ in 0..rounds {
            let start = Instant::now();
            for (path, bytes) in files {
                std::hint::black_box(kiwi_kernel::workspace::parse_item(
                    *t,
                    "x".into(),
                    Space::Project,
                    path.clone(),
                    bytes,
                ));
            }
            times.push(start.elapsed() / files.len() as u32);
        }
        times.sort();
        println!(
            "{name:<14} {:>7} {:>12.1}µs",
            files.len(),
            percentile(&times, 0.5).as_secs_f64() * 1e6
        );
    }
    Ok(())
}
