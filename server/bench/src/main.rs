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
    /// `kiwi run --env ssh:HOST` of a trivial tool over an open connection, beside plain
    /// `ssh host python3 tool.py`, against an sshd started on 127.0.0.1 (issue 30).
    Ssh {
        #[arg(long, default_value_t = 20)]
        runs: usize,
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
    /// A generated registry (a git repository of N items): the first `registry add`, warm
    /// MCP `search source: registry`, `registry update` with one new version, `pull` of one item.
    Registry {
        #[arg(long, default_value_t = 10_000)]
        items: usize,
        #[arg(long, default_value_t = 50)]
        runs: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
    },
    /// Workloads in the shapes of the real corpora (issue 25): `check`, the first MCP search
    /// with and without the kept index, RSS, LSP indexing and `kiwi run`, each beside its
    /// floor measured in the same run, with the growth per tenfold.
    Real {
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        sizes: Vec<usize>,
        /// Add the 100,000-item workload (minutes; not in CI).
        #[arg(long)]
        big: bool,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
        /// Another kiwi binary measured in the same run, on the same workloads (before/after).
        #[arg(long)]
        before: Option<PathBuf>,
        /// Write the docs page (docs/benchmarks.md) with the table of this run.
        #[arg(long)]
        write_docs: Option<PathBuf>,
    },
    /// Every figure of `09-quality.md` §3 in one run, with its target: `check` cold at
    /// 1,000 / 10,000 / 100,000 items, LSP didChange and hover latency and RSS, MCP search
    /// latency at several sizes, spawn to `tools/list` and RSS, `run` overhead as a ratio to
    /// the interpreter started directly, and memory during a 200 MB flood.
    All {
        /// Smaller workloads and fewer runs (a couple of minutes on 2 cores, for CI).
        #[arg(long)]
        quick: bool,
        /// Add the 100,000-item real-shaped workload (minutes; not in CI).
        #[arg(long)]
        big: bool,
        /// The kiwi binary (default: target/release/kiwi next to this benchmark).
        #[arg(long)]
        kiwi: Option<PathBuf>,
        /// Write the docs page (docs/benchmarks.md) with the real-shaped table of this run.
        #[arg(long)]
        write_docs: Option<PathBuf>,
    },
    /// Agent Skills (issue 28): `kiwi check` and `skills/list` (spawn to the last page, and
    /// warm) on N skills made from the corpus's, beside reading every file.
    Skills {
        #[arg(long, default_value_t = 1000)]
        skills: usize,
        #[arg(long, default_value_t = 5)]
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
            let kiwi = kiwi_binary(kiwi)?;
            let mut rows = Vec::new();
            for n in sizes {
                rows.push(check_cold(&kiwi, n, runs)?);
            }
            report(&rows);
        }
        Cmd::Run {
            runs,
            flood_mb,
            kiwi,
        } => {
            let kiwi = kiwi_binary(kiwi)?;
            report(&run_bench::run(&kiwi, runs, flood_mb)?);
        }
        Cmd::Ssh { runs, kiwi } => {
            let kiwi = kiwi_binary(kiwi)?;
            print_table(&ssh_bench::run(&kiwi, runs)?);
        }
        Cmd::Lsp { items, runs, kiwi } => {
            let kiwi = kiwi_binary(kiwi)?;
            report(&lsp_bench::run(&kiwi, items, runs)?);
        }
        Cmd::Mcp { sizes, runs, kiwi } => {
            let kiwi = kiwi_binary(kiwi)?;
            report(&mcp_bench::run(&kiwi, &sizes, runs)?);
        }
        Cmd::Skills { skills, runs, kiwi } => {
            let rows = skills_bench::run(&kiwi_binary(kiwi)?, skills, runs)?;
            report(&rows);
        }
        Cmd::Registry { items, runs, kiwi } => {
            let kiwi = kiwi_binary(kiwi)?;
            report(&registry_bench::run(&kiwi, items, runs)?);
        }
        Cmd::Real {
            sizes,
            big,
            runs,
            kiwi,
            before,
            write_docs,
        } => {
            let kiwi = kiwi_binary(kiwi)?;
            let before = before.map(|b| kiwi_binary(Some(b))).transpose()?;
            let mut sizes = sizes;
            if big && !sizes.contains(&100_000) {
                sizes.push(100_000);
            }
            real(
                &kiwi,
                before.as_deref(),
                &sizes,
                runs,
                write_docs.as_deref(),
            )?;
        }
        Cmd::All {
            quick,
            big,
            kiwi,
            write_docs,
        } => {
            let kiwi = kiwi_binary(kiwi)?;
            all(&kiwi, quick)?;
            let mut sizes = vec![1_000, 10_000];
            if big {
                sizes.push(100_000);
            }
            real(
                &kiwi,
                None,
                &sizes,
                if quick { 3 } else { 5 },
                write_docs.as_deref(),
            )?;
        }
    }
    Ok(())
}

/// The real-shaped figures ([`real_bench`]), the docs page written when asked.
fn real(
    kiwi: &Path,
    before: Option<&Path>,
    sizes: &[usize],
    runs: usize,
    docs: Option<&Path>,
) -> Result<()> {
    println!("\nreal-shaped workloads (issue 25), {sizes:?} item files:");
    let started = Instant::now();
    let (rows, spawn, interpreter) = real_bench::run(kiwi, before, sizes, runs)?;
    if let Some(docs) = docs {
        let table = real_bench::render(&rows, spawn, interpreter, started.elapsed());
        write(docs, &real_bench::docs_page(&table))?;
        println!("wrote {}", docs.display());
    }
    Ok(())
}

/// Every figure in one run, printed as one table at the end (and each part as it is done).
fn all(kiwi: &Path, quick: bool) -> Result<()> {
    let started = Instant::now();
    // (sizes of `check`, runs each), (sizes of MCP), (LSP items, runs), (run runs).
    let (check_sizes, check_runs): (&[usize], usize) = if quick {
        (&[1_000, 10_000], 3)
    } else {
        (&[1_000, 10_000, 100_000], 5)
    };
    let mcp_sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let (lsp_items, lsp_runs) = if quick { (10_000, 30) } else { (10_000, 100) };
    let (mcp_runs, run_runs) = if quick { (30, 15) } else { (100, 40) };
    println!(
        "kiwi-bench all{}: {} ({} cores)",
        if quick { " --quick" } else { "" },
        kiwi.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let mut rows = Vec::new();
    let mut part = |name: &str, r: Result<Vec<Figure>>| -> Result<()> {
        let r = r.with_context(|| format!("the {name} benchmark"))?;
        print_table(&r);
        rows.extend(r);
        Ok(())
    };
    let mut check = Vec::new();
    for &n in check_sizes {
        // 100,000 items: fewer runs (each takes seconds).
        let runs = if n >= 100_000 {
            check_runs.min(3)
        } else {
            check_runs
        };
        check.push(check_cold(kiwi, n, runs)?);
    }
    part("check", Ok(check))?;
    part("lsp", lsp_bench::run(kiwi, lsp_items, lsp_runs))?;
    part("mcp", mcp_bench::run(kiwi, mcp_sizes, mcp_runs))?;
    part("run", run_bench::run(kiwi, run_runs, 200))?;
    part("registry", registry_bench::run(kiwi, 10_000, mcp_runs))?;
    part(
        "skills",
        skills_bench::run(kiwi, 1_000, if quick { 3 } else { 5 }),
    )?;
    println!(
        "\nall figures ({:.0} s in all; medians and p99 of repeated runs, workload beside each):",
        started.elapsed().as_secs_f64()
    );
    report(&rows);
    Ok(())
}

/// One measured figure, with its workload and its target.
pub struct Figure {
    pub name: String,
    /// The workload (items, lines, megabytes).
    pub workload: String,
    pub median: Value,
    pub p99: Option<Value>,
    /// The target of `09-quality.md` §3, as text.
    pub target: String,
    /// Whether the median meets the target (and the p99 its own, when it has one).
    pub met: Option<bool>,
}

/// A measured value with its unit.
#[derive(Clone, Copy)]
pub enum Value {
    Ms(f64),
    Mb(f64),
    Kb(f64),
    Ratio(f64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Ms(ms) if *ms >= 1000.0 => write!(f, "{:.2} s", ms / 1000.0),
            Value::Ms(ms) if *ms >= 10.0 => write!(f, "{ms:.1} ms"),
            Value::Ms(ms) => write!(f, "{ms:.2} ms"),
            Value::Mb(mb) => write!(f, "{mb:.1} MB"),
            Value::Kb(kb) => write!(f, "{kb:.1} KB"),
            Value::Ratio(r) => write!(f, "{r:.3}x"),
        }
    }
}

/// Where the workloads are generated and kept between runs: `kiwi-bench-UID` in the
/// temporary folder, this user's alone (mode 0700). A machine's `/tmp` is shared: a workload
/// another user generated there is theirs to change (and git refuses a repository another
/// user owns: CI failed on a registry workload an unprivileged run had left), so a folder of
/// that name owned by someone else is refused, not used.
pub fn scratch(name: &str) -> Result<PathBuf> {
    scratch_in(&std::env::temp_dir(), name)
}

fn scratch_in(tmp: &Path, name: &str) -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let base = tmp.join(format!("kiwi-bench-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", base.display())),
    }
    let m = std::fs::symlink_metadata(&base)?;
    if !m.is_dir() || m.uid() != uid || m.permissions().mode() & 0o077 != 0 {
        bail!(
            "{} is not a folder of this user's alone (uid {uid}, mode 0700): remove it, or set TMPDIR to another folder",
            base.display()
        );
    }
    Ok(base.join(name))
}

/// Copy a file into a workload as a new file of this user's (mode from the umask), not
/// with the source's permissions as `std::fs::copy` does: the corpus's files are read-only
/// (0444), and a workload rewrites some of its copies (the skills bench renames each
/// `SKILL.md`), which only root could do to a read-only copy.
pub fn copy_writable(from: &Path, to: &Path) -> Result<u64> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    std::fs::write(to, &bytes).with_context(|| format!("writing {}", to.display()))?;
    Ok(bytes.len() as u64)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The table, then what it means: the figures stand beside their targets, a missed one does
/// not fail the run (kiwi-bench exits 0), and the missed ones are listed last, by name.
pub fn report(rows: &[Figure]) {
    print_table(rows);
    let missed: Vec<&Figure> = rows.iter().filter(|r| r.met == Some(false)).collect();
    println!("\nfigures beside targets; a missed target does not fail the run.");
    if missed.is_empty() {
        println!("missed targets: none");
    } else {
        println!("missed targets ({}):", missed.len());
        for r in missed {
            let p99 = r.p99.map(|v| format!(", p99 {v}")).unwrap_or_default();
            println!(
                "  {} ({}): median {}{p99}; target {}",
                r.name, r.workload, r.median, r.target
            );
        }
    }
}

pub fn print_table(rows: &[Figure]) {
    println!(
        "{:<40} {:>14} {:>11} {:>11}  {:<34} met",
        "figure", "workload", "median", "p99", "target"
    );
    for r in rows {
        println!(
            "{:<40} {:>14} {:>11} {:>11}  {:<34} {}",
            r.name,
            r.workload,
            r.median.to_string(),
            r.p99.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            r.target,
            match r.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    }
}

fn kiwi_binary(kiwi: Option<PathBuf>) -> Result<PathBuf> {
    let kiwi = kiwi.unwrap_or_else(default_kiwi);
    if !kiwi.exists() {
        bail!(
            "{} not found; build it with `cargo build --release -p kiwi`",
            kiwi.display()
        );
    }
    Ok(kiwi)
}

/// A generated workspace of `n` items under the temporary folder (made once, reused).
pub fn workload(n: usize) -> Result<PathBuf> {
    let dir = scratch(&format!("kiwi-bench-{n}"))?;
    // The generator's version: a workspace from an older generator is made again.
    let stamp = dir.join(".kiwi-bench-gen");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(GEN_VERSION) {
        generate(&dir, n)?;
        std::fs::write(&stamp, GEN_VERSION)?;
    }
    Ok(dir)
}

const GEN_VERSION: &str = "1";

/// `kiwi check` of a generated workspace of `n` items, a cold process each run.
/// One `kiwi check --format json PROJECT` (`cmd` is `kiwi` with any environment set): exit 1
/// means "errors found", which real and generated workloads have.
fn kiwi_check(cmd: &mut Command, project: &Path) -> Result<()> {
    let status = cmd
        .args(["check", "--format", "json"])
        .arg(project)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.code().is_none_or(|c| c > 1) {
        bail!("kiwi check failed: {status}");
    }
    Ok(())
}

fn check_cold(kiwi: &Path, n: usize, runs: usize) -> Result<Figure> {
    let dir = workload(n)?;
    let times = measure(runs, || kiwi_check(&mut Command::new(kiwi), &dir))?;
    let (median, p99) = (ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)));
    let (target, met) = match n {
        10_000 => ("under 1 s".to_string(), Some(median < 1000.0)),
        100_000 => ("under 10 s".to_string(), Some(median < 10_000.0)),
        _ => ("- (10,000: 1 s; 100,000: 10 s)".to_string(), None),
    };
    Ok(Figure {
        name: "kiwi check, cold".into(),
        workload: format!("{n} items"),
        median: Value::Ms(median),
        p99: Some(Value::Ms(p99)),
        target,
        met,
    })
}

mod lsp_bench;
mod mcp_bench;
mod mcp_client;
mod real_bench;
mod registry_bench;
mod run_bench;
mod skills_bench;
mod ssh_bench;

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
    let dir = scratch(&format!("kiwi-bench-parse-{items}"))?;
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
        kinds[slot].2.push((f.path.to_path_buf(), bytes));
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

#[cfg(test)]
mod scratch_tests {
    /// The scratch folder is this user's alone: made 0700, and one that others may write
    /// (or that another user owns) is refused rather than used.
    #[test]
    fn the_scratch_folder_is_this_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let p = super::scratch_in(tmp.path(), "kiwi-bench-7").unwrap();
        let base = p.parent().unwrap().to_path_buf();
        assert_eq!(
            std::fs::metadata(&base).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(super::scratch_in(tmp.path(), "x").unwrap(), base.join("x"));
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = super::scratch_in(tmp.path(), "x").unwrap_err().to_string();
        assert!(e.contains("this user's alone"), "{e}");
    }

    /// A workload's copy of a read-only corpus file is this user's to rewrite (the
    /// unprivileged run failed on the skills bench's rename of a copied 0444 `SKILL.md`).
    #[test]
    fn a_copy_of_a_read_only_file_can_be_rewritten() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        std::fs::write(&from, "x").unwrap();
        std::fs::set_permissions(&from, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert_eq!(super::copy_writable(&from, &to).unwrap(), 1);
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert!(mode & 0o200 != 0, "the copy is not writable: {mode:o}");
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "x");
    }
}
