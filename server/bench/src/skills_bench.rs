//! `kiwi-bench skills`: Agent Skills at the scale of a large team (issue 28): 1,000 skills
//! made from the corpus's own (`shared/corpus/skills`: anthropics, obra/superpowers,
//! vercel-labs; their `SKILL.md`, scripts, references and assets as they are), each copy in its
//! own folder of a project's `.agents/skills/` with its `name` set to that folder (so the
//! copies are valid skills, as their authors ship them).
//!
//! Figures, each beside its floor measured in the same run:
//! - `kiwi check` of the project, a cold process (floor: reading every file once);
//! - `skills/list` through `kiwi mcp`, paged to the end: from the spawn of the server
//!   (the first listing hashes every file for the manifest's `sha256:` digests), and again
//!   on the same server (warm).

use crate::{measure, ms, percentile, Figure, Value};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The generator's version: a workload from an older generator is made again.
const GEN_VERSION: &str = "skills-1";

/// The corpus's skill folders (each holding a `SKILL.md`), sorted.
fn corpus_skills() -> Result<Vec<PathBuf>> {
    let corpus = kiwi_kernel::test_corpus::find(env!("CARGO_MANIFEST_DIR"))
        .context("the real corpus (shared/corpus, or KIWI_CORPUS) is needed for `skills`")?
        .join("skills");
    let mut out = Vec::new();
    let mut stack = vec![corpus.clone()];
    while let Some(d) = stack.pop() {
        if d.join("SKILL.md").is_file() {
            out.push(d);
            continue;
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    if out.is_empty() {
        bail!("no skill in {}", corpus.display());
    }
    Ok(out)
}

/// Copy a folder's files (not following links).
fn copy_tree(from: &Path, to: &Path) -> Result<u64> {
    let mut bytes = 0;
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)?.flatten() {
        let t = e.file_type()?;
        let dest = to.join(e.file_name());
        if t.is_dir() {
            bytes += copy_tree(&e.path(), &dest)?;
        } else if t.is_file() {
            bytes += crate::copy_writable(&e.path(), &dest)?;
        }
    }
    Ok(bytes)
}

/// `text` (a `SKILL.md`) with its frontmatter's `name:` line set to `name`.
fn renamed(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_frontmatter = false;
    let mut done = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end();
        if i == 0 && bare == "---" {
            in_frontmatter = true;
        } else if in_frontmatter && bare == "---" {
            in_frontmatter = false;
        } else if in_frontmatter && !done && line.starts_with("name:") {
            out.push_str(&format!("name: {name}\n"));
            done = true;
            continue;
        }
        out.push_str(line);
    }
    out
}

/// A project of `n` skills under the temporary folder (made once, reused).
pub fn workload(n: usize) -> Result<PathBuf> {
    let dir = crate::scratch(&format!("kiwi-bench-skills-{n}"))?;
    let stamp = dir.join(".kiwi-bench-gen");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(GEN_VERSION) {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let sources = corpus_skills()?;
    let root = dir.join("project/.agents/skills");
    for k in 0..n {
        let src = &sources[k % sources.len()];
        let base = src.file_name().and_then(|n| n.to_str()).unwrap_or("skill");
        let name = format!("{base}-{k}");
        let to = root.join(&name);
        copy_tree(src, &to)?;
        let skill_md = to.join("SKILL.md");
        let text = std::fs::read_to_string(&skill_md)?;
        std::fs::write(&skill_md, renamed(&text, &name))?;
    }
    std::fs::create_dir_all(dir.join("user"))?;
    std::fs::write(&stamp, GEN_VERSION)?;
    Ok(dir)
}

/// Every file of a folder, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out
}

fn kiwi(kiwi: &Path, dir: &Path) -> Command {
    let mut c = Command::new(kiwi);
    c.current_dir(dir.join("project"))
        .env("KIWI_USERSPACE_DIR", dir.join("user"))
        .env("HOME", dir.join("user"))
        .stdin(Stdio::null());
    c
}

/// Page `skills/list` to the end; the number of skills listed.
fn list_all(c: &mut crate::mcp_client::McpClient) -> Result<usize> {
    let mut cursor: Option<String> = None;
    let mut n = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = c.request("skills/list", params)?;
        let page = &r["result"];
        let Some(skills) = page["skills"].as_array() else {
            bail!("skills/list answered {r}");
        };
        n += skills.len();
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok(n),
        }
    }
}

fn median_p99(times: &[Duration]) -> (f64, f64) {
    (ms(percentile(times, 0.5)), ms(percentile(times, 0.99)))
}

/// The figures on `n` skills, `runs` of each.
pub fn run(kiwi_bin: &Path, n: usize, runs: usize) -> Result<Vec<Figure>> {
    let dir = workload(n)?;
    let all = files(&dir.join("project"));
    let mut bytes = 0u64;
    let read = measure(runs, || {
        bytes = 0;
        for f in &all {
            bytes += std::fs::read(f)?.len() as u64;
        }
        Ok(())
    })?;
    let read_ms = ms(percentile(&read, 0.5));
    let workload = format!("{n} skills");
    let mut rows = vec![Figure {
        name: "skills: floor, read every file".into(),
        workload: format!("{} files, {:.0} MB", all.len(), bytes as f64 / 1e6),
        median: Value::Ms(read_ms),
        p99: None,
        target: "-".into(),
        met: None,
    }];

    let project = dir.join("project");
    let check = measure(runs, || {
        crate::kiwi_check(&mut kiwi(kiwi_bin, &dir), &project)
    })?;
    let (m, p) = median_p99(&check);
    rows.push(Figure {
        name: "skills: check, cold process".into(),
        workload: workload.clone(),
        median: Value::Ms(m),
        p99: Some(Value::Ms(p)),
        target: format!("under 3x the read floor ({:.0} ms)", 3.0 * read_ms),
        met: Some(m < 3.0 * read_ms),
    });

    let mut first = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let mut cmd = kiwi(kiwi_bin, &dir);
        cmd.arg("mcp");
        let mut c = crate::mcp_client::McpClient::spawn(cmd)?;
        let listed = list_all(&mut c)?;
        first.push(t.elapsed());
        if listed != n {
            bail!("skills/list listed {listed} skills of {n}");
        }
        let t = Instant::now();
        list_all(&mut c)?;
        warm.push(t.elapsed());
    }
    first.sort();
    warm.sort();
    let (m, p) = median_p99(&first);
    rows.push(Figure {
        name: "skills: spawn to skills/list, all pages".into(),
        workload: workload.clone(),
        median: Value::Ms(m),
        p99: Some(Value::Ms(p)),
        target: format!("under 3x the read floor ({:.0} ms)", 3.0 * read_ms),
        met: Some(m < 3.0 * read_ms),
    });
    let (m, p) = median_p99(&warm);
    rows.push(Figure {
        name: "skills: skills/list again, all pages".into(),
        workload,
        median: Value::Ms(m),
        p99: Some(Value::Ms(p)),
        target: format!("under the read floor ({read_ms:.0} ms)"),
        met: Some(m < read_ms),
    });
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_name_line_of_the_frontmatter_only_is_set() {
        let t = "---\nname: pdf\ndescription: d\n---\nname: not this\n";
        assert_eq!(
            super::renamed(t, "pdf-3"),
            "---\nname: pdf-3\ndescription: d\n---\nname: not this\n"
        );
    }
}
