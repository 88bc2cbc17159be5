//! Every file of `../shared/corpus/` loads with no panic and no hang, and its diagnostics
//! (checked as the workspaces they came from) are kept as a reviewed snapshot.

use crate::common;

use kiwi_kernel::check;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::workspace::{parse_item, Workspace};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    p.is_dir().then(|| p.canonicalize().unwrap())
}

/// Run `f` on another thread; fail if it takes longer than `secs` (a hang) or panics.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("the corpus check hung or panicked")
}

#[test]
fn corpus_workspaces() {
    let Some(corpus) = corpus() else {
        // CI runs with shared/ beside the clone: a missing corpus there is a broken set-up,
        // not a reason to pass.
        assert!(
            std::env::var_os("CI").is_none(),
            "shared/corpus not found (CI is set: the corpus tests must run)"
        );
        eprintln!("shared/corpus not found; skipped");
        return;
    };
    let out = within(120, move || {
        let mut out = String::new();
        let home = tempfile::tempdir().unwrap();
        let home_s = home.path().display().to_string();
        let host = Host::for_tests(&[("HOME", &home_s), ("PATH", "/nonexistent")]);
        // Every `.ai/` folder of the corpus is a project.
        let mut projects: Vec<PathBuf> = walk_dirs(&corpus)
            .into_iter()
            .filter(|d| d.join(".ai").is_dir())
            .collect();
        projects.sort();
        let mut checked: Vec<String> = Vec::new();
        for project in projects {
            let ws = Workspace::load(Some(project.clone()), host.clone());
            for item in ws.items_in(Space::Project) {
                checked.push(rel(&item.path, &corpus));
                let diags = check::check_item(&ws, item);
                out.push_str(&common::render(item, &diags, &corpus));
            }
        }
        // AGENTS.md lives outside any `.ai/`: parse it as a directive on its own.
        let agents = corpus.join("kiwi-mcp/AGENTS.md");
        let bytes = std::fs::read(&agents).unwrap();
        let item = parse_item(
            ItemType::Directive,
            "AGENTS".into(),
            Space::Project,
            agents.clone(),
            &bytes,
        )
        .unwrap();
        let ws = Workspace::new(None, host.clone());
        let item = std::sync::Arc::new(item);
        out.push_str(&common::render(
            &item,
            &check::check_item(&ws, &item),
            &corpus,
        ));
        checked.push(rel(&agents, &corpus));
        // Every file MANIFEST.tsv lists is either checked as an item or listed below as not
        // an item (a data file kiwi does not read as one): nothing is silently left out.
        let manifest = manifest(&corpus);
        let checked: std::collections::BTreeSet<String> = checked.into_iter().collect();
        let unlisted: Vec<&String> = checked.iter().filter(|p| !manifest.contains(*p)).collect();
        assert!(
            unlisted.is_empty(),
            "items not in MANIFEST.tsv: {unlisted:?}"
        );
        let not_items: Vec<&String> = manifest.iter().filter(|p| !checked.contains(*p)).collect();
        assert_eq!(manifest.len(), 164, "MANIFEST.tsv lists 164 files");
        assert_eq!(checked.len() + not_items.len(), manifest.len());
        let mut head = format!(
            "{} files: {} checked as items, {} not items:\n",
            manifest.len(),
            checked.len(),
            not_items.len()
        );
        for p in not_items {
            head.push_str(&format!("  {p}\n"));
        }
        head.push('\n');
        // The temporary home differs on every run.
        (head + &out).replace(&home_s, "$HOME")
    });
    insta::assert_snapshot!(out);
}

/// The path of a corpus file as MANIFEST.tsv spells it: `repo/path`.
fn rel(path: &Path, corpus: &Path) -> String {
    path.strip_prefix(corpus)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Every file MANIFEST.tsv lists, as `repo/path`.
fn manifest(corpus: &Path) -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut cols = l.split('\t');
            Some(format!("{}/{}", cols.next()?, cols.next()?))
        })
        .collect()
}

fn walk_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != ".ai" {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}
