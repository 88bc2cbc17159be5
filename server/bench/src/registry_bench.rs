//! `kiwi-bench registry`: a generated registry of N items (a git repository written directly,
//! every line with its real digest), then: the first `registry add` (clone and check every
//! version), warm MCP `search source: registry`, `registry update` bringing one new version,
//! and `pull` of one item.

use crate::mcp_client::McpClient;
use crate::{measure, ms, percentile, Figure, Value as Fig};
use anyhow::{bail, Context, Result};
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::registry::format::{self, FileEntry, IndexLine, RegistryToml};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const WORDS: &[&str] = &[
    "parse", "files", "report", "summary", "csv", "json", "http", "status", "count", "words",
    "lines", "scan", "todo", "format", "deploy", "check", "lint", "test", "build", "docs",
];

fn tool_text(i: usize, version: &str) -> String {
    let w = |k: usize| WORDS[(i * 7 + k * 3) % WORDS.len()];
    format!(
        "\"\"\"Generated tool {i}.\"\"\"\n\n__version__ = \"{version}\"\n__tool_type__ = \"python\"\n\
         __executor_id__ = \"runtimes/python_runtime\"\n__category__ = \"{}\"\n\
         __tool_description__ = \"{} the {} and {} {}\"\n\nprint({i})\n",
        w(0),
        w(1),
        w(2),
        w(3),
        w(4)
    )
}

fn line(i: usize, version: &str) -> (IndexLine, String) {
    let id = format!("gen/t{i:05}");
    let text = tool_text(i, version);
    let name = format!("t{i:05}.py");
    let mut l = IndexLine {
        id,
        item_type: "tool".into(),
        version: version.into(),
        digest: String::new(),
        files: vec![FileEntry {
            path: name.clone(),
            sha256: kiwi_kernel::trust::sha256_hex(text.as_bytes()),
        }],
        description: Some(format!("Generated tool {i}")),
        category: Some(WORDS[i % WORDS.len()].into()),
        tags: vec![],
        chain: vec!["runtimes/python_runtime".into(), "subprocess".into()],
        permissions: vec![],
        signer: None,
        public_key: None,
        signature: None,
        signed_at: None,
        published_at: "2026-11-24T00:00:00Z".into(),
        yanked: false,
        yank_signer: None,
        yank_signature: None,
        yanked_at: None,
    };
    l.digest = format::line_digest(&l, &[(name, text.clone().into_bytes())]);
    (l, text)
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !st.success() {
        bail!("git {args:?} failed in {}", dir.display());
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// Publish version `version` of item `i` into the registry's working copy (no commit).
fn add_version(reg: &Path, i: usize, version: &str) -> Result<()> {
    let (l, text) = line(i, version);
    write(&reg.join(l.items_dir()).join(&l.files[0].path), &text)?;
    let idx = reg.join(format::index_path(ItemType::Tool, &l.id));
    if let Some(p) = idx.parent() {
        std::fs::create_dir_all(p)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(idx)?;
    f.write_all(l.to_json_line().as_bytes())?;
    Ok(())
}

/// A registry of `n` items under the temporary folder (made once, reused).
fn registry(n: usize) -> Result<PathBuf> {
    let dir = crate::scratch(&format!("kiwi-bench-registry-{n}"))?;
    let stamp = dir.join(".git/kiwi-bench-gen");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some("1") {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    write(
        &dir.join(format::REGISTRY_TOML),
        &RegistryToml::new("bench").render(),
    )?;
    let mut names = String::new();
    for i in 0..n {
        add_version(&dir, i, "1.0.0")?;
        names.push_str(&format!("tool/gen/t{i:05}\n"));
    }
    write(&dir.join("index/names.txt"), &names)?;
    git(&dir, &["init", "-q", "--initial-branch=main"])?;
    git(&dir, &["add", "-A"])?;
    git(&dir, &["commit", "-q", "-m", "generated"])?;
    git(
        &dir,
        &["config", "receive.denyCurrentBranch", "updateInstead"],
    )?;
    std::fs::write(&stamp, "1")?;
    Ok(dir)
}

pub fn run(kiwi: &Path, n: usize, runs: usize) -> Result<Vec<Figure>> {
    // Absolute: the commands below run in the generated project.
    let kiwi = &kiwi
        .canonicalize()
        .with_context(|| format!("{}", kiwi.display()))?;
    let reg = registry(n)?;
    let work = crate::scratch(&format!("kiwi-bench-registry-{n}-user"))?;
    let _ = std::fs::remove_dir_all(&work);
    let (us, project) = (work.join("userspace"), work.join("project"));
    std::fs::create_dir_all(project.join(".ai"))?;
    std::fs::create_dir_all(&us)?;
    let kiwi_cmd = |args: &[&str]| -> Result<()> {
        let out = Command::new(kiwi)
            .args(args)
            .current_dir(&project)
            .env("KIWI_USERSPACE_DIR", &us)
            .env_remove("AI_USER_SPACE")
            .env_remove("KIWI_SPACES")
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            bail!(
                "kiwi {args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    };
    let mut rows = Vec::new();
    let t = Instant::now();
    kiwi_cmd(&["registry", "add", "bench", reg.to_str().context("path")?])?;
    rows.push(Figure {
        name: "registry add (clone, check every version)".into(),
        workload: format!("{n} items"),
        median: Fig::Ms(ms(t.elapsed())),
        p99: None,
        target: "-".into(),
        met: None,
    });

    // Warm MCP search over the registry.
    let mut cmd = Command::new(kiwi);
    cmd.args(["mcp", "--project"])
        .arg(&project)
        .env("KIWI_USERSPACE_DIR", &us)
        .env_remove("AI_USER_SPACE");
    let mut m = McpClient::spawn(cmd)?;
    let search = |m: &mut McpClient, q: &str| -> Result<()> {
        let r = m.request(
            "tools/call",
            json!({"name": "search", "arguments": {"item_type": "tool", "query": q, "source": "registry"}}),
        )?;
        if r["result"]["structuredContent"]["results"]
            .as_array()
            .is_none_or(Vec::is_empty)
        {
            bail!("the registry search found nothing: {r}");
        }
        Ok(())
    };
    let t = Instant::now();
    search(&mut m, "parse files")?;
    rows.push(Figure {
        name: "MCP search source: registry, first".into(),
        workload: format!("{n} items"),
        median: Fig::Ms(ms(t.elapsed())),
        p99: None,
        target: "-".into(),
        met: None,
    });
    let queries = [
        "parse files",
        "csv report",
        "http status",
        "count words",
        "deploy docs",
    ];
    let mut k = 0;
    let times = measure(runs, || {
        k += 1;
        search(&mut m, queries[k % queries.len()])
    })?;
    let (median, p99) = (ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)));
    rows.push(Figure {
        name: "MCP search source: registry, warm".into(),
        workload: format!("{n} items"),
        median: Fig::Ms(median),
        p99: Some(Fig::Ms(p99)),
        target: "under 5 ms".into(),
        met: Some(median < 5.0),
    });
    drop(m);

    // `registry update` bringing one new version (a commit each round).
    let rounds = runs.clamp(1, 10);
    let mut times = Vec::new();
    for r in 0..rounds {
        add_version(&reg, r % n.max(1), &format!("1.0.{}", 1 + r + bump(&reg)?))?;
        git(&reg, &["add", "-A"])?;
        git(&reg, &["commit", "-q", "-m", "one more version"])?;
        let t = Instant::now();
        kiwi_cmd(&["registry", "update"])?;
        times.push(t.elapsed());
    }
    times.sort();
    rows.push(Figure {
        name: "registry update, one new version".into(),
        workload: format!("{n} items"),
        median: Fig::Ms(ms(percentile(&times, 0.5))),
        p99: Some(Fig::Ms(ms(percentile(&times, 0.99)))),
        target: "-".into(),
        met: None,
    });

    // `pull` of one item (the registry already fetched: pull fetches, nothing new).
    let times = measure(rounds, || kiwi_cmd(&["pull", "tool/gen/t00007", "--force"]))?;
    rows.push(Figure {
        name: "pull of one item".into(),
        workload: format!("{n} items"),
        median: Fig::Ms(ms(percentile(&times, 0.5))),
        p99: Some(Fig::Ms(ms(percentile(&times, 0.99)))),
        target: "-".into(),
        met: None,
    });
    Ok(rows)
}

/// How many versions earlier runs already added (the registry is reused between runs).
fn bump(reg: &Path) -> Result<usize> {
    let p = reg.join(".git/kiwi-bench-bumps");
    let n: usize = std::fs::read_to_string(&p)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    std::fs::write(&p, (n + 1).to_string())?;
    Ok(n * 100)
}
